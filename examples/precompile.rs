//! Compiles every kernel the entry points can ask for into the on-disk
//! kernel cache, several NVRTC compiles at once, so that no first call of a
//! process pays for one (a module takes seconds to compile). Run it once on
//! a machine before a service or a test run starts:
//!
//! ```text
//! cargo run --release --example precompile                 # GPU 0's architecture
//! cargo run --release --example precompile -- --threads 16 --device 1
//! ```
//!
//! The cache is the one the library reads (`TENSOR_REDUCE_CACHE_DIR`, else
//! the user's cache directory). An entry's key includes the CUDA driver's
//! version, so compile on the machine that will use it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use tensor_reduce::cuda::{self, kernel};
use tensor_reduce::reduce::{ReduceOp, Signature};

const USAGE: &str = "usage: precompile [--device N] [--threads N]";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("precompile: {e}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    let mut device = 0usize;
    let mut threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match flag.as_str() {
            "--device" => device = value("--device")?,
            "--threads" => threads = value("--threads")?.max(1),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let props = cuda::device_props(device).map_err(|e| e.to_string())?;
    let arch = props.compute_capability;
    if cuda::disk_cache::dir().is_none() {
        return Err("the disk cache is disabled (TENSOR_REDUCE_CACHE_DIR is empty)".into());
    }
    let jobs: Vec<Signature> = ReduceOp::ALL
        .iter()
        .flat_map(|op| op.all_signatures())
        .collect();
    let start = Instant::now();
    cuda::compile_copy_kernel(arch).map_err(|e| e.to_string())?;
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(sig) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(e) = kernel::compile(sig, arch) {
                        let mut failures = failures.lock().unwrap_or_else(|e| e.into_inner());
                        failures.push(format!("{}: {e}", kernel::label(sig)));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    if !failures.is_empty() {
        return Err(format!(
            "{} of {} modules failed:\n{}",
            failures.len(),
            jobs.len(),
            failures.join("\n")
        ));
    }
    println!(
        "precompile: {} reduction modules and the copy kernels for sm_{}{} ({}) in {:.1} s with {threads} threads",
        jobs.len(),
        arch.0,
        arch.1,
        props.name,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
