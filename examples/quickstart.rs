//! tensor-reduce in a page: the torch reductions people write (sum, mean,
//! prod, amax, amin, nansum, any, all, max and argmax, aminmax, var and std,
//! vector norms, logsumexp), printed the way a Python session with torch
//! prints them.
//!
//! Run: `cargo run --release --example quickstart`. Uses the GPU when one is
//! present, the CPU otherwise. `scripts/quickstart_torch.py` is its twin: it
//! runs the same expressions with torch and prints the same text, so the two
//! outputs diff clean (all but the first line, the device). To add a case,
//! add one `show(...)` line here and the same expression there; pick inputs
//! whose results are exact whatever the summation order (quarters here), so
//! that both print the same digits.

use tensor_reduce::{DType, Device, Result, Tensor};

/// One session step: the torch expression, then its value as torch prints it.
fn show(expr: &str, value: Result<Tensor>) -> Result<()> {
    println!(">>> {expr}\n{}", value?);
    Ok(())
}

/// A setup statement, echoed as typed.
fn setup(statement: &str) {
    println!(">>> {statement}");
}

fn main() -> Result<()> {
    let device = Device::cuda_if_available();
    println!("device: {}", if device.is_cuda() { "cuda" } else { "cpu" });

    setup("x = torch.arange(120, dtype=torch.float32).reshape(2, 3, 4, 5) / 4");
    let x = Tensor::arange(0.0, 30.0, 0.25, DType::F32, device)?.reshape(&[2, 3, 4, 5])?;
    show(
        "x[0, 0]",
        x.narrow(0, 0, 1)?
            .squeeze_dim(0)?
            .narrow(0, 0, 1)?
            .squeeze_dim(0),
    )?;
    show("x.sum(1, keepdim=True)", x.sum(&[1], true))?;
    show("x.sum()", x.sum_all())?;
    show("x.sum(-1)", x.sum(&[-1], false))?;
    show("x.sum((0, 2))", x.sum(&[0, 2], false))?;
    show("x.sum((-1, 1), keepdim=True)", x.sum(&[-1, 1], true))?;
    show(
        "x.transpose(1, 3).sum(1)",
        x.transpose(1, 3)?.sum(&[1], false),
    )?;
    // The rest of the family takes the same dims.
    show("x.mean((0, 2))", x.mean(&[0, 2], false))?;
    show("x.amax(1)", x.amax(&[1], false))?;
    show("x.amin((0, -1), keepdim=True)", x.amin(&[0, -1], true))?;

    // Half precision accumulates in f32: 4096 ones sum to 4096, not 2048.
    setup("h = torch.ones(4096, dtype=torch.float16)");
    let h = Tensor::ones(&[4096], DType::F16, device)?;
    show("h.sum()", h.sum_all())?;
    show(
        "h.sum(dtype=torch.float32)",
        h.sum_dtype(&[], false, DType::F32),
    )?;

    // Integers sum to int64.
    setup("i = torch.arange(12, dtype=torch.int32).reshape(3, 4)");
    let i = Tensor::arange(0.0, 12.0, 1.0, DType::I32, device)?.reshape(&[3, 4])?;
    show("i", Ok(i.clone()))?;
    show("i.sum(0)", i.sum(&[0], false))?;
    show("i.prod(1)", i.prod(&[1], false))?;
    show(
        "i.prod(1, dtype=torch.float64)",
        i.prod_dtype(&[1], false, DType::F64),
    )?;
    show("i.amax(0)", i.amax(&[0], false))?;
    show("i.any(1)", i.any(&[1], false))?;
    show("i.all(1)", i.all(&[1], false))?;
    show("h.mean()", h.mean(&[], false))?;

    // NaN propagates through sum and amax; nansum skips it.
    setup("n = torch.tensor([1.0, float('nan'), 2.5])");
    let n = Tensor::from_vec(vec![1.0f32, f32::NAN, 2.5], &[3])?.to_device(device)?;
    show("n.sum()", n.sum_all())?;
    show("n.nansum()", n.nansum(&[], false))?;
    show("n.amax()", n.amax(&[], false))?;

    // Values with their indices: ties go to the first index, and NaN counts
    // as the largest value.
    setup("m = torch.tensor([[1.0, 3.0, 3.0], [float('nan'), 0.5, 2.0]])");
    let m =
        Tensor::from_vec(vec![1.0f32, 3.0, 3.0, f32::NAN, 0.5, 2.0], &[2, 3])?.to_device(device)?;
    show("m.max(1).values", m.max_dim(1, false).map(|r| r.0))?;
    show("m.max(1).indices", m.max_dim(1, false).map(|r| r.1))?;
    show("m.argmin(1)", m.argmin(Some(1), false))?;
    show("m.argmax()", m.argmax(None, false))?;
    show("m.aminmax(dim=0).max", m.aminmax(&[0], false).map(|r| r.1))?;

    // Welford's variance, norms and a one-pass logsumexp.
    show("x.var(2)", x.var(&[2], 1.0, false))?;
    show(
        "torch.var_mean(x, (0, 2), correction=0)[1]",
        x.var_mean(&[0, 2], 0.0, false).map(|r| r.1),
    )?;
    show("x.std(1)", x.std(&[1], 1.0, false))?;
    show(
        "torch.linalg.vector_norm(x, 1, (0, 2))",
        x.norm(1.0, &[0, 2], false),
    )?;
    show(
        "torch.linalg.vector_norm(x, float('inf'))",
        x.norm(f64::INFINITY, &[], false),
    )?;
    show(
        "torch.linalg.vector_norm(x, 2, -1)",
        x.norm(2.0, &[-1], false),
    )?;
    show("x.logsumexp((1, 3))", x.logsumexp(&[1, 3], false))?;

    // A seeded random input, the way tests and benchmarks make them (our
    // generator is not torch's, so only the shape is compared).
    setup("r = torch.randn(2, 3, 4, 5)");
    let r = Tensor::randn(&[2, 3, 4, 5], DType::F32, device, 0)?;
    println!(">>> r.sum(1, keepdim=True).shape");
    println!("torch.Size({:?})", r.sum(&[1], true)?.shape());
    Ok(())
}
