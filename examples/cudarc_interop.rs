//! A cudarc buffer summed where it lies: wrapped as a tensor without a copy,
//! reduced on the caller's own stream, the result handed back as a cudarc
//! buffer. Nothing goes through the host except the check at the end.
//!
//! Run: `cargo run --release --example cudarc_interop` (on a machine with an
//! NVIDIA GPU; elsewhere it says so and exits cleanly).

use cudarc::driver::{CudaContext, CudaSlice};
use std::process::ExitCode;
use tensor_reduce::{Device, Tensor};

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

fn run() -> AnyResult<bool> {
    // The caller's own stream (not the context's default one).
    let stream = CudaContext::new(0)?.new_stream()?;
    let host: Vec<f32> = (0..12).map(|v| v as f32 / 4.0).collect();
    let buf: CudaSlice<f32> = stream.clone_htod(&host)?;

    let x = Tensor::from_cuda_slice(buf, &[3, 4])?; // takes the buffer, no copy
    println!("x = {x}");
    // Enqueued on `stream`; the result lives there too.
    let rows = x.sum(&[1], false)?;
    let cols = x.t()?.sum(&[1], false)?; // a transposed view, no copy either
    let rows: CudaSlice<f32> = rows.to_cuda_slice()?;
    let cols: CudaSlice<f32> = cols.to_cuda_slice()?;

    // Only now, to check, copy back (clone_dtoh waits for the stream).
    let (rows, cols) = (stream.clone_dtoh(&rows)?, stream.clone_dtoh(&cols)?);
    let want_rows: Vec<f32> = host.chunks(4).map(|r| r.iter().sum()).collect();
    let want_cols: Vec<f32> = (0..4)
        .map(|c| (0..3).map(|r| host[r * 4 + c]).sum())
        .collect();
    println!("x.sum(1) = {rows:?} (expected {want_rows:?})");
    println!("x.t().sum(1) = {cols:?} (expected {want_cols:?})");
    Ok(rows == want_rows && cols == want_cols)
}

fn main() -> ExitCode {
    if let Err(e) = Device::cuda(0) {
        println!("cudarc_interop: no CUDA device here ({e}); nothing to show");
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(true) => {
            println!("cudarc_interop: ok");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("cudarc_interop: results differ from the host's sums");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("cudarc_interop: {e}");
            ExitCode::FAILURE
        }
    }
}
