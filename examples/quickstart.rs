//! tensor-reduce in a page: the torch.sum calls people write, side by side.
//!
//! Run: `cargo run --release --example quickstart`. Every line prints the
//! torch expression it mirrors; `scripts/quickstart_torch.py` prints the same
//! lines from PyTorch, so the two outputs can be diffed.
//! Uses the GPU when one is present, the CPU otherwise.

use tensor_reduce::{f16, DType, Device, Element, Result, Tensor};

/// Prints `label: shape [..] dtype values [..]` with 4 decimals, as the
/// Python twin does.
fn show<T: Element>(label: &str, t: &Tensor) -> Result<()> {
    let values: Vec<String> = t
        .to_vec::<T>()?
        .into_iter()
        .map(|v| format!("{:.4}", v.to_f64()))
        .collect();
    println!(
        "{label}: shape {:?} dtype {} values [{}]",
        t.shape(),
        t.dtype(),
        values.join(", ")
    );
    Ok(())
}

fn main() -> Result<()> {
    let device = Device::cuda_if_available();
    println!("device: {}", if device.is_cuda() { "cuda" } else { "cpu" });

    // x = torch.arange(120, dtype=torch.float32).reshape(2, 3, 4, 5) / 10
    let data: Vec<f32> = (0..120).map(|v| v as f32 / 10.0).collect();
    let x = Tensor::from_vec(data, &[2, 3, 4, 5])?.to_device(device)?;

    // The seed document's example: torch.randn(2,3,4,5).sum(1, keepdim=True).
    show::<f32>("x.sum(1, keepdim=True)", &x.sum(&[1], true)?)?;
    show::<f32>("x.sum()", &x.sum_all()?)?;
    show::<f32>("x.sum(-1)", &x.sum(&[-1], false)?)?;
    show::<f32>("x.sum((0, 2))", &x.sum(&[0, 2], false)?)?;
    show::<f32>("x.sum((-1, 1), keepdim=True)", &x.sum(&[-1, 1], true)?)?;
    show::<f32>(
        "x.transpose(1, 3).sum(1)",
        &x.transpose(1, 3)?.sum(&[1], false)?,
    )?;

    // Half precision accumulates in f32: 4096 ones sum to 4096, not 2048.
    let h = Tensor::from_vec(vec![f16::ONE; 4096], &[4096])?.to_device(device)?;
    show::<f16>("torch.ones(4096, dtype=torch.float16).sum()", &h.sum_all()?)?;
    show::<f32>(
        "torch.ones(4096, dtype=torch.float16).sum(dtype=torch.float32)",
        &h.sum_dtype(&[], false, DType::F32)?,
    )?;

    // Integers sum to int64.
    let i = Tensor::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4])?.to_device(device)?;
    show::<i64>(
        "torch.arange(12, dtype=torch.int32).reshape(3, 4).sum(0)",
        &i.sum(&[0], false)?,
    )?;

    // A seeded random input, the way tests and benchmarks make them.
    let r = Tensor::randn(&[2, 3, 4, 5], DType::F32, device, 0)?;
    println!(
        "randn(2,3,4,5, seed 0).sum(1, keepdim=True) has shape {:?}",
        r.sum(&[1], true)?.shape()
    );
    Ok(())
}
