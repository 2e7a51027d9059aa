//! `Display` against what PyTorch prints. The expected text lives in
//! `tests/fixtures/display.txt`, one `### name: torch expression` section per
//! case; `scripts/display_torch_check.py` evaluates the same expressions with
//! torch and prints them in the same layout, so the fixture can be checked
//! against torch itself with a plain `diff`.

mod common;

use tensor_reduce::{bf16, f16, DType, Device, Tensor};

/// Our side of each fixture case.
fn case(name: &str) -> Option<Tensor> {
    let cpu = Device::Cpu;
    let v = |data: &[f32]| Tensor::from_slice(data, &[data.len()]).unwrap();
    let arange = |n: f64, dtype| Tensor::arange(0.0, n, 1.0, dtype, cpu).unwrap();
    let t = match name {
        "float_mixed" => v(&[1.5, 2.0]),
        "float_integral" => v(&[1.0, 2.0]),
        "int_matrix" => arange(6.0, DType::I64).reshape(&[2, 3]).unwrap(),
        "f16" => Tensor::from_vec(vec![f16::from_f32(1.0), f16::from_f32(2.0)], &[2]).unwrap(),
        "bf16_fraction" => {
            Tensor::from_vec(vec![bf16::from_f32(0.5), bf16::from_f32(-2.25)], &[2]).unwrap()
        }
        "f64" => Tensor::from_vec(vec![1.5f64], &[1]).unwrap(),
        "i32" => Tensor::from_vec(vec![1i32, 2], &[2]).unwrap(),
        "u8" => Tensor::from_vec(vec![0u8, 255], &[2]).unwrap(),
        "scalar_float" => Tensor::scalar(3.0f32),
        "scalar_int" => Tensor::scalar(5i64),
        "scalar_f16" => Tensor::scalar(f16::from_f32(0.25)),
        "empty" => v(&[]),
        "empty_2d" => Tensor::zeros(&[0, 3], DType::F32, cpu).unwrap(),
        "empty_i64" => Tensor::zeros(&[0], DType::I64, cpu).unwrap(),
        "empty_bool_3d" => Tensor::zeros(&[2, 0, 1], DType::Bool, cpu).unwrap(),
        "nonfinite_integral" => v(&[1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY]),
        "nonfinite_fraction" => v(&[1.5, f32::NAN]),
        "all_nan" => v(&[f32::NAN, f32::NAN]),
        "zeros" => Tensor::zeros(&[3], DType::F32, cpu).unwrap(),
        "negative_zero" => v(&[-0.0]),
        "bool" => Tensor::from_vec(vec![true, false], &[2]).unwrap(),
        "int_widths" => Tensor::from_vec(vec![1i64, -20, 300, 4], &[2, 2]).unwrap(),
        "integral_widths" => Tensor::from_vec(vec![1f32, -10.0, 100.0, 2.0], &[2, 2]).unwrap(),
        "fraction_f32" => v(&[0.1, 0.25]),
        "sci_small" => v(&[1e-5, 1.0]),
        "sci_integral_range" => v(&[1.0, 1e5]),
        "sci_large" => v(&[1e9, 2e9]),
        "sci_widths" => Tensor::from_vec(vec![1e-5f64, -1e10], &[2]).unwrap(),
        "rank3" => arange(8.0, DType::I64).reshape(&[2, 2, 2]).unwrap(),
        "transposed_view" => arange(6.0, DType::I64)
            .reshape(&[2, 3])
            .unwrap()
            .t()
            .unwrap(),
        "wrapped_row" => arange(30.0, DType::I64),
        "wrapped_suffix" => Tensor::ones(&[16], DType::F16, cpu).unwrap(),
        "summarized_vector" => arange(2000.0, DType::I64),
        "summarized_matrix" => arange(2000.0, DType::I64).reshape(&[40, 50]).unwrap(),
        "summarized_floats" => Tensor::arange(0.0, 1501.5, 1.5, DType::F32, cpu).unwrap(),
        _ => return None,
    };
    Some(t)
}

/// (name, expected text) for every section of the fixture.
fn fixture() -> Vec<(String, String)> {
    let text = include_str!("fixtures/display.txt");
    text.split("### ")
        .skip(1)
        .map(|section| {
            let (header, body) = section.split_once('\n').expect("a header line");
            let name = header.split(':').next().unwrap().trim().to_string();
            (name, body.trim_end_matches('\n').to_string())
        })
        .collect()
}

#[test]
fn prints_as_torch_does() {
    let cases = fixture();
    assert!(
        cases.len() >= 30,
        "fixture parsed into {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for (name, expected) in &cases {
        let t = case(name).unwrap_or_else(|| panic!("no Rust case for fixture {name:?}"));
        let got = t.to_string();
        if &got != expected {
            failures.push(format!(
                "{name}:\n  got:      {got:?}\n  expected: {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn summarized_floats_case_is_torch_arange_times_one_and_a_half() {
    // The fixture's expression is arange(1001) * 1.5; ours is an arange with
    // step 1.5. Same 1001 values, exactly.
    let t = case("summarized_floats").unwrap();
    let expected: Vec<f32> = (0..1001).map(|i| i as f32 * 1.5).collect();
    assert_eq!(t.to_vec::<f32>().unwrap(), expected);
}

fn on_device(device: Device) {
    let suffix = match device {
        Device::Cpu => String::new(),
        Device::Cuda(i) => format!(", device='cuda:{i}'"),
    };
    let x = Tensor::from_vec(vec![1f32, 2.0], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(x.to_string(), format!("tensor([1., 2.]{suffix})"));
    let h = Tensor::ones(&[2], DType::F16, device).unwrap();
    assert_eq!(
        h.to_string(),
        format!("tensor([1., 1.]{suffix}, dtype=torch.float16)")
    );
    // A strided view of a larger storage prints its own elements only.
    let m = Tensor::arange(0.0, 12.0, 1.0, DType::I32, device)
        .unwrap()
        .reshape(&[3, 4])
        .unwrap()
        .slice(1, 1, 4, 2)
        .unwrap();
    assert_eq!(
        m.to_string(),
        format!(
            "tensor([[ 1,  3],\n        [ 5,  7],\n        [ 9, 11]]{suffix}, dtype=torch.int32)"
        )
    );
    let e = Tensor::zeros(&[0, 2], DType::F32, device).unwrap();
    assert_eq!(e.to_string(), format!("tensor([]{suffix}, size=(0, 2))"));
}

backend_tests! {
    device_suffix => on_device;
}
