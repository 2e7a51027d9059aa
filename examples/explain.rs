//! Explains the GPU launches of a reduction (`x.sum(dims)`, `x.amax(dims)`,
//! ...) for a described input view, without a GPU and without allocating
//! the input; with `--cpu`, the CPU backend's loops instead.
//!
//! ```text
//! cargo run --release --example explain -- --shape 16,128,64,128 --dims 1 --dtype f32
//! cargo run --release --example explain -- --op mean --shape 4096,4096 --dims 1 --dtype bf16
//! cargo run --release --example explain -- --shape 8192,8192 --strides 1,8192 --dims 0 --device a100 --json
//! cargo run --release --example explain -- --shape 8192,8192 --dims 0 --cpu
//! ```

use std::process::ExitCode;
use tensor_reduce::cpu::CpuPlan;
use tensor_reduce::cuda::plan::{DeviceProps, ReducePlan};
use tensor_reduce::iter::TensorIterator;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::DType;

const USAGE: &str = "\
usage: explain --shape N,N,... [--op sum] [--strides S,S,...] [--offset N] [--dims D,D,...]
               [--keepdim] [--dtype f32] [--out-dtype DTYPE] [--device h200|h100|a100]
               [--sms N] [--max-threads-per-sm N] [--json] [--cpu]

Shows the GPU launch plan (PyTorch's ReduceConfig, grid, block, memory) of
the reduction for the described view, or with --cpu the CPU backend's plan
(threads, inner rows or outer column tiles, leaf/tile/block sizes).

  --shape      sizes of the input view
  --op         the reduction, by name (default sum; the names are listed below)
  --strides    element strides of the view (default: contiguous)
  --offset     storage offset of the view, in elements (default 0)
  --dims       dims to reduce, negative allowed (default: all)
  --keepdim    keep reduced dims as size 1 in the result shape
  --dtype      input dtype: f16 bf16 f32 f64 i32 i64 u8 bool (default f32)
  --out-dtype  result dtype, as sum(dtype=...) (default: torch's result dtype for the op)
  --device     GPU preset (default h200); --sms / --max-threads-per-sm override it
  --json       print one JSON object instead of the explanation (GPU plan only)
  --cpu        explain the CPU backend's plan instead of the GPU's";

/// The names `--op` takes, from the op list itself.
fn op_names() -> String {
    let names: Vec<&str> = ReduceOp::ALL.iter().map(|op| op.name()).collect();
    format!(
        "ops: {} (and max_dim, min_dim, norm = norm2)",
        names.join(" ")
    )
}

struct Args {
    op: ReduceOp,
    shape: Vec<usize>,
    strides: Option<Vec<isize>>,
    offset: usize,
    dims: Option<Vec<isize>>,
    keepdim: bool,
    dtype: DType,
    out_dtype: Option<DType>,
    props: DeviceProps,
    json: bool,
    cpu: bool,
}

fn parse_list<T: std::str::FromStr>(flag: &str, text: &str) -> Result<Vec<T>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|t| {
            t.trim()
                .parse::<T>()
                .map_err(|_| format!("{flag}: {t:?} is not a valid number"))
        })
        .collect()
}

fn parse_dtype(flag: &str, text: &str) -> Result<DType, String> {
    DType::from_name(text).ok_or_else(|| {
        let names: Vec<_> = DType::ALL.iter().map(|d| d.name()).collect();
        format!(
            "{flag}: unknown dtype {text:?} (expected one of {})",
            names.join(", ")
        )
    })
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut args = Args {
        op: ReduceOp::Sum,
        shape: Vec::new(),
        strides: None,
        offset: 0,
        dims: None,
        keepdim: false,
        dtype: DType::F32,
        out_dtype: None,
        props: DeviceProps::h200(),
        json: false,
        cpu: false,
    };
    let (mut shape, mut sms, mut threads) = (None, None, None);
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--shape" => shape = Some(parse_list::<usize>(flag, value()?)?),
            "--strides" => args.strides = Some(parse_list::<isize>(flag, value()?)?),
            "--offset" => {
                args.offset = value()?
                    .parse()
                    .map_err(|_| "--offset: not a non-negative integer".to_string())?
            }
            "--dims" => args.dims = Some(parse_list::<isize>(flag, value()?)?),
            "--keepdim" => args.keepdim = true,
            "--op" => {
                let name = value()?;
                args.op = ReduceOp::from_name(name).ok_or_else(|| {
                    let names: Vec<_> = ReduceOp::ALL.iter().map(|o| o.name()).collect();
                    format!(
                        "--op: unknown op {name:?} (expected one of {})",
                        names.join(", ")
                    )
                })?;
            }
            "--dtype" => args.dtype = parse_dtype(flag, value()?)?,
            "--out-dtype" => args.out_dtype = Some(parse_dtype(flag, value()?)?),
            "--device" => {
                let name = value()?;
                args.props = DeviceProps::preset(name).ok_or_else(|| {
                    format!("--device: unknown device {name:?} (h200, h100, a100)")
                })?;
            }
            "--sms" => {
                sms = Some(
                    value()?
                        .parse::<u32>()
                        .map_err(|_| "--sms: not a positive integer".to_string())?,
                )
            }
            "--max-threads-per-sm" => {
                threads = Some(
                    value()?
                        .parse::<u32>()
                        .map_err(|_| "--max-threads-per-sm: not a positive integer".to_string())?,
                )
            }
            "--json" => args.json = true,
            "--cpu" => args.cpu = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    args.shape = shape.ok_or("--shape is required")?;
    if let Some(n) = sms {
        args.props.sm_count = n;
        args.props.name = format!("{} with {n} SMs", args.props.name);
    }
    if let Some(n) = threads {
        args.props.max_threads_per_sm = n;
    }
    Ok(args)
}

/// The reduce mask, with `Tensor::sum`'s rules: dims wrap, no repeats, none
/// means all.
fn reduce_mask(rank: usize, dims: Option<&[isize]>) -> Result<Vec<bool>, String> {
    let dims = match dims {
        None | Some([]) => return Ok(vec![true; rank]),
        Some(d) => d,
    };
    let r = rank.max(1) as isize;
    let mut mask = vec![false; rank];
    let mut seen = vec![false; rank.max(1)];
    for &d in dims {
        if d < -r || d >= r {
            return Err(format!(
                "--dims: dim {d} is out of range for a rank-{rank} input (expected {}..={})",
                -r,
                r - 1
            ));
        }
        let w = if d < 0 { d + r } else { d } as usize;
        if std::mem::replace(&mut seen[w], true) {
            return Err(format!("--dims: dim {w} appears more than once"));
        }
        if rank > 0 {
            mask[w] = true;
        }
    }
    Ok(mask)
}

/// Element strides, checked so that every byte offset fits an `i64`.
fn checked_strides(args: &Args) -> Result<Vec<isize>, String> {
    let rank = args.shape.len();
    let strides = match &args.strides {
        Some(s) if s.len() != rank => {
            return Err(format!(
                "--strides has {} entries but --shape has {rank}",
                s.len()
            ))
        }
        Some(s) => s.clone(),
        None => {
            let mut s = vec![0isize; rank];
            let mut acc: isize = 1;
            for d in (0..rank).rev() {
                s[d] = acc;
                acc = acc
                    .checked_mul(args.shape[d].max(1) as isize)
                    .ok_or("--shape: too many elements")?;
            }
            s
        }
    };
    if let Some(s) = strides.iter().find(|&&s| s < 0) {
        return Err(format!("--strides: negative stride {s} is not supported"));
    }
    let out = args
        .op
        .output_dtype(args.dtype, args.out_dtype)
        .map_err(|e| e.to_string())?;
    let elt = args.dtype.size_in_bytes().max(out.size_in_bytes()) as i64;
    let overflow = || "the view's byte offsets overflow 64-bit integers".to_string();
    let mut numel: i64 = 1;
    let mut last = args.offset as i64;
    for (&n, &s) in args.shape.iter().zip(&strides) {
        (s as i64).checked_mul(elt).ok_or_else(overflow)?;
        numel = numel.checked_mul(n as i64).ok_or_else(overflow)?;
        last = last
            .checked_add(
                (n as i64)
                    .saturating_sub(1)
                    .checked_mul(s as i64)
                    .ok_or_else(overflow)?,
            )
            .ok_or_else(overflow)?;
    }
    last.checked_add(1)
        .and_then(|l| l.checked_mul(elt))
        .ok_or_else(overflow)?;
    numel.checked_mul(elt).ok_or_else(overflow)?;
    Ok(strides)
}

fn run(args: &Args) -> Result<(), String> {
    let strides = checked_strides(args)?;
    let mask = reduce_mask(args.shape.len(), args.dims.as_deref())?;
    let sig = args
        .op
        .signature(args.dtype, args.out_dtype)
        .map_err(|e| e.to_string())?;
    let out = sig.output;
    let it = TensorIterator::reduction(
        &args.shape,
        &strides,
        args.offset,
        args.dtype.size_in_bytes(),
        out.size_in_bytes(),
        &mask,
    )
    .map_err(|e| e.to_string())?;
    if args.cpu {
        if args.json {
            return Err("--json describes the GPU plan; drop it or --cpu".into());
        }
        println!(
            "input {:?} strides {strides:?} offset {}",
            args.shape, args.offset
        );
        print!("{}", CpuPlan::new(&it, &sig, rayon::current_num_threads()));
        return Ok(());
    }
    let plan = ReducePlan::new(&it, &sig, &args.props).map_err(|e| e.to_string())?;
    let result_shape: Vec<usize> = args
        .shape
        .iter()
        .zip(&mask)
        .filter_map(|(&n, &m)| match (m, args.keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    if args.json {
        println!("{}", to_json(&plan, &result_shape));
    } else {
        println!(
            "input {:?} strides {strides:?} offset {} -> result {result_shape:?}",
            args.shape, args.offset
        );
        print!("{plan}");
    }
    Ok(())
}

fn to_json(plan: &ReducePlan, result_shape: &[usize]) -> serde_json::Value {
    use serde_json::json;
    let it = &plan.iter;
    let launches: Vec<_> = plan
        .launches
        .iter()
        .map(|l| {
            let c = &l.config;
            json!({
                "nt": l.nt,
                "output_vec_size": c.output_vec_size,
                "grid": l.grid,
                "block": l.block,
                "shared_memory_bytes": l.shared_memory_bytes,
                "global_reduce": c.should_global_reduce(),
                "staging_bytes": l.staging_bytes,
                "semaphore_bytes": l.semaphore_bytes,
                "base_idx": l.base_idx,
                "strategy": format!("{:?}", l.strategy),
                "kept_dims_by_input": l.pytorch_order_config.is_some(),
                "iter_shape": l.iter.shape(),
                "iter_input_strides_bytes": l.iter.strides(TensorIterator::INPUT),
                "iter_output_strides_bytes": l.iter.strides(TensorIterator::OUTPUT),
                "view_offsets": l.iter.view_offsets(),
                "accumulate": l.iter.accumulate(),
                "final_output": l.iter.final_output(),
                "config": {
                    "element_size_bytes": c.element_size_bytes,
                    "num_inputs": c.num_inputs,
                    "num_outputs": c.num_outputs,
                    "step_input": c.step_input,
                    "step_output": c.step_output,
                    "ctas_per_output": c.ctas_per_output,
                    "input_mult": c.input_mult,
                    "output_mult": c.output_mult,
                    "block_width": c.block_width,
                    "block_height": c.block_height,
                    "num_threads": c.num_threads,
                    "vectorize_input": c.vectorize_input,
                    "output_vec_size": c.output_vec_size,
                    "input_vec_size": c.input_vec_size,
                    "vt0": c.vt0,
                },
            })
        })
        .collect();
    json!({
        "device": plan.props.name,
        "op": plan.signature.op.name(),
        "functor": plan.signature.op.functor(),
        "identity": plan.signature.op.identity_text(),
        "input_dtype": plan.signature.input.name(),
        "output_dtype": plan.signature.output.name(),
        "compute_dtype": plan.signature.compute.name(),
        "cast_dtype": plan.signature.cast.map(|c| c.name()),
        "acc": plan.signature.acc.to_string(),
        "result_shape": result_shape,
        "iter_shape": it.shape(),
        "iter_input_strides_bytes": it.strides(TensorIterator::INPUT),
        "iter_output_strides_bytes": it.strides(TensorIterator::OUTPUT),
        "iter_tensor_dims": (0..it.ndim()).map(|d| plan.iter.source_dims(d)).collect::<Vec<_>>(),
        "num_reduce_dims": it.num_reduce_dims(),
        "needs_acc_buffer": plan.needs_acc_buffer,
        "acc_buffer_bytes": plan.acc_buffer_bytes,
        "launches": launches,
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = parse_args(&argv).and_then(|args| run(&args));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            println!("{USAGE}\n\n{}", op_names());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}\n\n{}", op_names());
            ExitCode::from(2)
        }
    }
}
