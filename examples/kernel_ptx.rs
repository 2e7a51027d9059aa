//! Writes the PTX of every kernel of the modules a reduction compiles, one
//! file per kernel, so that two commits' kernels can be compared without a
//! GPU: a change meant for one kernel should leave the others' files as
//! they were.
//!
//! ```text
//! cargo run --release --example kernel_ptx -- --out /tmp/ptx-old --op sum --dtype bf16   # at the old commit
//! cargo run --release --example kernel_ptx -- --out /tmp/ptx-new --op sum --dtype bf16   # at the new one
//! diff -r /tmp/ptx-old /tmp/ptx-new
//! ```
//!
//! Needs libnvrtc (`scripts/install-nvrtc.sh`), not a GPU. Each module
//! (one signature: op, dtypes, `vt0`, `input_vec_size`) is a folder named by
//! its label, each kernel a file named by its mangled name. NVRTC numbers
//! branch labels across a module, so they are renumbered within each
//! kernel: a kernel's file does not change when another kernel is added.
//! (A change to a kernel's template parameters renames its file.) A module
//! takes a few seconds to compile, so name the ops and dtypes you need.
//!
//! With `--module` each module is instead one file, `LABEL.ptx`, its PTX
//! whole, as `ptxas` takes it: `ptxas -arch=sm_90 LABEL.ptx -o m.cubin &&
//! nvdisasm -c m.cubin` shows the machine code of every kernel (the CUDA
//! toolkit's tools, not needed otherwise).
//!
//! With `--ptxas-info` it writes nothing and prints instead what ptxas
//! reports for each kernel's machine code (registers, stack frame, spill
//! stores and loads), the first thing to look at when a kernel change
//! slows paths it did not touch:
//!
//! ```text
//! cargo run --release --example kernel_ptx -- --ptxas-info --op argmax --dtype f16
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tensor_reduce::cuda::kernel;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::DType;

const USAGE: &str = "\
usage: kernel_ptx (--out DIR [--module] | --ptxas-info) [--op NAME]... [--dtype NAME]... [--arch MAJOR.MINOR]

  --out    folder to write into (created)
  --module  write each module's PTX whole, one file a module
  --ptxas-info  print ptxas's registers and spills per kernel (sm_MAJOR.MINOR) instead
  --op     an op by name, as the explain example takes it (default: every op)
  --dtype  input dtype: f16 bf16 f32 f64 i32 i64 u8 bool (default: every dtype)
  --arch   virtual architecture of the PTX (default 9.0, the GPU machine's)";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kernel_ptx: {e}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    let mut out: Option<PathBuf> = None;
    let mut ops: Vec<ReduceOp> = Vec::new();
    let mut dtypes: Vec<DType> = Vec::new();
    let mut arch = (9, 0);
    let mut ptxas_info = false;
    let mut whole_modules = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--ptxas-info" {
            ptxas_info = true;
            continue;
        }
        if flag == "--module" {
            whole_modules = true;
            continue;
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .as_str();
        match flag.as_str() {
            "--out" => out = Some(PathBuf::from(value)),
            "--op" => ops.push(
                ReduceOp::from_name(value).ok_or_else(|| format!("--op: unknown op {value:?}"))?,
            ),
            "--dtype" => dtypes.push(
                DType::from_name(value)
                    .ok_or_else(|| format!("--dtype: unknown dtype {value:?}"))?,
            ),
            "--arch" => arch = parse_arch(value)?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let out = match (out, ptxas_info) {
        (Some(out), false) => Some(out),
        (None, true) => None,
        _ => return Err("give one of --out and --ptxas-info".into()),
    };
    if whole_modules && out.is_none() {
        return Err("--module goes with --out".into());
    }
    if ops.is_empty() {
        ops = ReduceOp::ALL.to_vec();
    }
    let mut modules = 0;
    for op in ops {
        for sig in op.all_signatures() {
            if !dtypes.is_empty() && !dtypes.contains(&sig.input) {
                continue;
            }
            let label = kernel::label(&sig);
            modules += 1;
            let Some(out) = &out else {
                println!("{label}");
                for (kernel, info) in
                    kernel::ptxas_info(&sig, arch).map_err(|e| format!("{label}: {e}"))?
                {
                    println!("  {kernel}");
                    for line in info.lines() {
                        println!("    {line}");
                    }
                }
                continue;
            };
            let compiled = kernel::compile_ptx(&sig, arch, kernel::PtxOptimization::Full)
                .map_err(|e| format!("{label}: {e}"))?;
            if whole_modules {
                std::fs::create_dir_all(out)
                    .and_then(|()| std::fs::write(out.join(format!("{label}.ptx")), &compiled.ptx))
            } else {
                write_module(&out.join(&label), &compiled.ptx)
            }
            .map_err(|e| format!("{label}: {e}"))?;
            eprintln!("{label}: {} kernels", compiled.lowered_names.len());
        }
    }
    if modules == 0 {
        return Err("no module matches those ops and dtypes".into());
    }
    Ok(())
}

fn parse_arch(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--arch: expected MAJOR.MINOR, got {text:?}");
    let (major, minor) = text.split_once('.').ok_or_else(bad)?;
    Ok((
        major.parse().map_err(|_| bad())?,
        minor.parse().map_err(|_| bad())?,
    ))
}

/// One file per `.entry` of the module's PTX, its branch labels renumbered.
fn write_module(dir: &Path, ptx: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, body) in entries(ptx) {
        std::fs::write(dir.join(format!("{name}.ptx")), renumber_labels(body))?;
    }
    Ok(())
}

/// The module's kernels: (mangled name, text from its `.entry` line to the
/// next kernel's).
fn entries(ptx: &str) -> Vec<(&str, &str)> {
    let starts: Vec<usize> = ptx
        .match_indices(".entry ")
        .map(|(i, _)| ptx[..i].rfind('\n').map_or(0, |n| n + 1))
        .collect();
    starts
        .iter()
        .enumerate()
        .filter_map(|(k, &start)| {
            let end = starts.get(k + 1).copied().unwrap_or(ptx.len());
            let body = &ptx[start..end];
            let name = body.split(".entry ").nth(1)?.split('(').next()?.trim();
            // The next kernel's `// .globl` comment precedes its line.
            let body = body
                .rfind("\n\t// .globl")
                .map_or(body, |cut| &body[..cut + 1]);
            Some((name, body))
        })
        .collect()
}

/// `$L__BB<module's kernel>_<block>` → `$L__BB_<block>`.
fn renumber_labels(body: &str) -> String {
    const LABEL: &str = "$L__BB";
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find(LABEL) {
        let after = &rest[at + LABEL.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..at + LABEL.len()]);
        rest = if after[digits..].starts_with('_') {
            &after[digits..]
        } else {
            after
        };
    }
    out.push_str(rest);
    out
}
