//! Where a tiny reduction's host time goes: our `sum` of a [2, 3, 4, 5]
//! tensor next to the driver operations it is made of, each timed alone on
//! the same machine in the same run.
//!
//! `cargo bench --bench gpu_host_cost` (on the GPU machine:
//! `.gpu/bin/bench-gpu_host_cost-*`)
//!
//! Each line is measured three ways: `pipelined`, the mean host time of
//! 20000 calls issued back to back; `idle wall`, the median host time of
//! one call made after the stream is synchronised; `events`, the median
//! time between CUDA events recorded around one call from idle (host time
//! up to the launch plus the GPU's own time for the work). The driver
//! lines bound what any library can reach on this machine: a reduction
//! needs at least a launch, and an output.

mod common;

use common::median;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use std::process::ExitCode;
use std::time::Instant;
use tensor_reduce::{DType, Device, Tensor};

type BoxError = Box<dyn std::error::Error>;

/// A kernel parameter the size of `reduce_kernel`'s (about 1 KiB).
#[repr(C)]
#[derive(Clone, Copy)]
struct KiB([u64; 128]);
// SAFETY: plain old data, passed by value to a kernel taking the same struct.
unsafe impl cudarc::driver::DeviceRepr for KiB {}

const KERNELS: &str = r#"
struct KiB { unsigned long long a[128]; };
extern "C" __global__ void empty() {}
extern "C" __global__ void with_kib(KiB p) { if (p.a[0] == 12345) p.a[1] = 0; }
"#;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu_host_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), BoxError> {
    if Device::cuda(0).is_err() {
        eprintln!("gpu_host_cost: no usable CUDA device; nothing to time");
        return Ok(());
    }
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let x = Tensor::randn(&[2, 3, 4, 5], DType::F32, Device::Cuda(0), 1)?;
    let (start, end, other) = (
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
    );
    const PIPELINED: usize = 20_000;
    const FROM_IDLE: usize = 2_000;
    let time = |name: &str, f: &mut dyn FnMut() -> Result<(), BoxError>| -> Result<(), BoxError> {
        for _ in 0..200 {
            f()?;
        }
        stream.synchronize()?;
        let t = Instant::now();
        for _ in 0..PIPELINED {
            f()?;
        }
        let pipelined = t.elapsed().as_secs_f64() * 1e6 / PIPELINED as f64;
        stream.synchronize()?;
        let (mut idle, mut events) = (Vec::new(), Vec::new());
        for _ in 0..FROM_IDLE {
            stream.synchronize()?;
            let t = Instant::now();
            f()?;
            idle.push(t.elapsed().as_secs_f64() * 1e6);
            stream.synchronize()?;
            start.record(&stream)?;
            f()?;
            end.record(&stream)?;
            events.push(f64::from(start.elapsed_ms(&end)?) * 1e3);
        }
        println!(
            "| {name} | {pipelined:.2} | {:.2} | {:.2} |",
            median(&idle),
            median(&events)
        );
        Ok(())
    };
    println!("| µs per call | pipelined | idle wall | events |");
    println!("|---|---:|---:|---:|");
    time("`sum` over dim 1, result dropped", &mut || {
        drop(x.sum(&[1], false)?);
        Ok(())
    })?;
    time("`sum` of every element, result dropped", &mut || {
        drop(x.sum(&[], false)?);
        Ok(())
    })?;
    let mut kept = Vec::with_capacity(PIPELINED + 2 * FROM_IDLE + 200);
    time("`sum` over dim 1, results kept", &mut || {
        kept.push(x.sum(&[1], false)?);
        Ok(())
    })?;
    drop(kept);
    time("cudarc `alloc` of 160 B and its drop", &mut || {
        // SAFETY: never read.
        drop(unsafe { stream.alloc::<u8>(160) }?);
        Ok(())
    })?;
    let module = ctx.load_module(cudarc::nvrtc::compile_ptx(KERNELS)?)?;
    let (empty, with_kib) = (
        module.load_function("empty")?,
        module.load_function("with_kib")?,
    );
    let one_warp = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    time("empty kernel launch", &mut || {
        // SAFETY: the kernel takes no arguments and touches no memory.
        unsafe { stream.launch_builder(&empty).launch(one_warp) }?;
        Ok(())
    })?;
    let kib = KiB([0; 128]);
    time("launch with a 1 KiB parameter", &mut || {
        let mut b = stream.launch_builder(&with_kib);
        b.arg(&kib);
        // SAFETY: the kernel takes one KiB by value and writes only its copy.
        unsafe { b.launch(one_warp) }?;
        Ok(())
    })?;
    time("alloc + 1 KiB launch + free", &mut || {
        // SAFETY: the buffer is never read; the kernel as above.
        let buf = unsafe { stream.alloc::<u8>(160) }?;
        let mut b = stream.launch_builder(&with_kib);
        b.arg(&kib);
        unsafe { b.launch(one_warp) }?;
        drop(buf);
        Ok(())
    })?;
    time("event record", &mut || {
        other.record(&stream)?;
        Ok(())
    })?;
    Ok(())
}
