//! Every field of every launch PyTorch 2.11 recorded on an H200
//! (`tests/fixtures/pytorch-launch-configs.json`) must come out of the
//! planner with the H200 preset.

use serde_json::Value;
use tensor_reduce::cuda::plan::{DeviceProps, ReducePlan};
use tensor_reduce::iter::TensorIterator;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Tensor};

/// The profiler's shared memory figure includes the kernel's static
/// `__shared__ bool is_last_block_done_shared` (padded to 16 bytes).
const STATIC_SHARED_BYTES: u64 = 16;

fn fixture() -> Value {
    let text = include_str!("fixtures/pytorch-launch-configs.json");
    serde_json::from_str(text).expect("fixture parses")
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn u32x3(v: &Value) -> [u32; 3] {
    let a = usizes(v);
    [a[0] as u32, a[1] as u32, a[2] as u32]
}

/// The plan for one recorded case, built from its layout without
/// allocating the (up to 256 MiB) input.
fn plan_for(case: &Value) -> ReducePlan {
    let shape = usizes(&case["shape"]);
    let strides: Vec<isize> = usizes(&case["strides"])
        .into_iter()
        .map(|s| s as isize)
        .collect();
    let offset = case.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let dims = usizes(&case["dims"]);
    let dtype = DType::from_name(case["dtype"].as_str().unwrap()).unwrap();
    let out = ReduceOp::Sum.output_dtype(dtype, None).unwrap();
    let mask: Vec<bool> = (0..shape.len()).map(|d| dims.contains(&d)).collect();
    let it = TensorIterator::reduction(
        &shape,
        &strides,
        offset,
        dtype.size_in_bytes(),
        out.size_in_bytes(),
        &mask,
    )
    .unwrap();
    ReducePlan::new(
        &it,
        &ReduceOp::Sum.signature(dtype, Some(out)).unwrap(),
        &DeviceProps::h200(),
    )
    .expect("plans")
}

#[test]
fn every_recorded_launch_matches() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 19);
    let mut failures = Vec::new();
    for case in cases {
        let plan = plan_for(case);
        let recorded = case["launches"].as_array().unwrap();
        let name = format!(
            "{} {} dims {} {}",
            case["shape"], case["strides"], case["dims"], case["dtype"]
        );
        if plan.launches.len() != recorded.len() {
            failures.push(format!(
                "{name}: {} launches, recorded {}",
                plan.launches.len(),
                recorded.len()
            ));
            continue;
        }
        for (launch, want) in plan.launches.iter().zip(recorded) {
            assert_eq!(want["kernel"], "reduce_kernel");
            // The port's own choice: where one of our strategies replaced it,
            // the plan keeps PyTorch's config beside ours.
            let c = launch.pytorch_own_config();
            let got = (
                c.nt(),
                c.output_vec_size,
                c.grid(),
                c.block(),
                u64::from(c.shared_memory_size()) + STATIC_SHARED_BYTES,
                c.should_global_reduce(),
            );
            let expected = (
                want["nt"].as_u64().unwrap() as u32,
                want["output_vec_size"].as_u64().unwrap() as u32,
                u32x3(&want["grid"]),
                u32x3(&want["block"]),
                want["shared_memory_bytes_incl_static"].as_u64().unwrap(),
                case["semaphore_memset"].as_bool().unwrap(),
            );
            if got != expected {
                failures.push(format!("{name}: got {got:?}, recorded {expected:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn explain_agrees_with_the_raw_layout_path() {
    // The seed's small example through the public tensor API.
    let x = Tensor::zeros(&[2, 3, 4, 5], DType::F32, Device::Cpu).unwrap();
    let plan = x
        .explain(ReduceOp::Sum, &[1], true, &DeviceProps::h200())
        .unwrap();
    let case = &fixture()["cases"][2];
    assert_eq!(plan, plan_for(case));
    assert_eq!(plan.launches[0].block, [8, 2, 1]);
}
