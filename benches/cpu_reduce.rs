//! CPU benchmark (issue 2 §8): every case of `benches/suite.json` summed by
//! our CPU backend and by ndarray's `sum_axis`, side by side.
//!
//! `cargo bench --bench cpu_reduce [-- [--quick] [--json PATH] [CASE-SUBSTRING ...]]`
//!
//! Each result is checked against an f64 reference (ndarray, in f64) before
//! it is timed: a fast wrong answer fails the run. Times are wall clock, the
//! median of several runs after warm-up, allocation of the result included
//! for both sides.

mod common;

use common::{check, gbs, median, values_f64, Args, Case};
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};
use num_traits::Zero;
use rayon::prelude::*;
use serde_json::json;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tensor_reduce::DType;

/// The goal of issue 2 §8, in input bytes per second, for cases this large or larger.
const GOAL_GBS: f64 = 28.0;
const GOAL_MIN_BYTES: u64 = 64 << 20;

/// How many times to run a measured call.
struct Plan {
    warmup: usize,
    min_runs: usize,
    max_runs: usize,
    budget: Duration,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                warmup: 1,
                min_runs: 3,
                max_runs: 3,
                budget: Duration::ZERO,
            }
        } else {
            Plan {
                warmup: 2,
                min_runs: 5,
                max_runs: 201,
                budget: Duration::from_millis(1000),
            }
        }
    }

    /// Microseconds of each timed run of `f`.
    fn time(&self, mut f: impl FnMut()) -> Vec<f64> {
        for _ in 0..self.warmup {
            f();
        }
        let start = Instant::now();
        let mut times = Vec::new();
        while times.len() < self.min_runs
            || (times.len() < self.max_runs && start.elapsed() < self.budget)
        {
            let t = Instant::now();
            f();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times
    }
}

/// What this machine reads at the moment: a plain multithreaded sum of
/// contiguous f32 (16 independent lanes, no tree), over the same number of
/// bytes as a case, in the same run. The machine is shared and its memory
/// speed varies; this column says how much of a miss is the machine's.
fn plain_read(x: &[f32]) -> f32 {
    x.par_chunks(1 << 16)
        .map(|c| {
            let mut acc = [0f32; 16];
            for v in c.chunks_exact(16) {
                for j in 0..16 {
                    acc[j] += v[j];
                }
            }
            acc.iter().sum::<f32>()
        })
        .sum()
}

/// ndarray's multi-dim sum: `sum_axis` chained from the highest dim down, so
/// that the remaining dims keep their indices.
fn nd_sum<A: Clone + Zero + std::ops::Add<Output = A>>(
    x: ArrayViewD<'_, A>,
    dims: &[usize],
) -> ArrayD<A> {
    let mut dims = dims.to_vec();
    dims.sort_unstable_by(|a, b| b.cmp(a));
    let mut acc = x.sum_axis(Axis(dims[0]));
    for &d in &dims[1..] {
        acc = acc.sum_axis(Axis(d));
    }
    acc
}

/// The case's view of a contiguous ndarray of the base shape.
fn nd_view<'a, A>(base: &'a ArrayD<A>, case: &Case) -> ArrayViewD<'a, A> {
    base.view()
        .permuted_axes(IxDyn(&case.view.axes(case.base_shape.len())))
}

struct Row {
    case: Case,
    ours_us: f64,
    plain_gbs: Option<f64>,
    nd_us: Option<f64>,
    ok: bool,
    worst_err_over_tol: f64,
    detail: String,
}

fn run_case(case: &Case, plan: &Plan) -> tensor_reduce::Result<Row> {
    let (base, x) = case.make_input()?;
    let dims = &case.dims;
    let wrapped = case.dims_wrapped();

    // Reference and tolerance inputs, in f64 by an independent implementation.
    let base_f64 = ArrayD::from_shape_vec(IxDyn(&case.base_shape), values_f64(&base)?)
        .expect("shape matches the data");
    let reference: Vec<f64> = nd_sum(nd_view(&base_f64, case), &wrapped)
        .iter()
        .copied()
        .collect();
    let abs_f64 = base_f64.mapv(f64::abs);
    drop(base_f64);
    let abs_sums: Vec<f64> = nd_sum(nd_view(&abs_f64, case), &wrapped)
        .iter()
        .copied()
        .collect();
    drop(abs_f64);

    let ours = values_f64(&x.sum(dims, false)?)?;
    let c = check(
        &ours,
        &reference,
        &abs_sums,
        case.reduced_len(),
        case.dtype.sum_result(),
    );
    drop((reference, abs_sums, ours));
    if !c.ok {
        return Ok(Row {
            case: case.clone(),
            ours_us: f64::NAN,
            plain_gbs: None,
            nd_us: None,
            ok: false,
            worst_err_over_tol: c.worst_err_over_tol,
            detail: c.detail,
        });
    }

    let ours_us = median(&plan.time(|| {
        black_box(x.sum(dims, false).expect("checked above"));
    }));

    // ndarray sums 16-bit floats in 16 bits through a software conversion per
    // add: neither a fair nor an accurate baseline, so it is not timed.
    let nd_us = match case.dtype {
        DType::F32 => {
            let a = ArrayD::from_shape_vec(IxDyn(&case.base_shape), base.to_vec::<f32>()?)
                .expect("shape matches the data");
            let v = nd_view(&a, case);
            Some(median(&plan.time(|| {
                black_box(nd_sum(v.clone(), &wrapped));
            })))
        }
        DType::F64 => {
            let a = ArrayD::from_shape_vec(IxDyn(&case.base_shape), base.to_vec::<f64>()?)
                .expect("shape matches the data");
            let v = nd_view(&a, case);
            Some(median(&plan.time(|| {
                black_box(nd_sum(v.clone(), &wrapped));
            })))
        }
        _ => None,
    };
    Ok(Row {
        case: case.clone(),
        ours_us,
        plain_gbs: None,
        nd_us,
        ok: true,
        worst_err_over_tol: c.worst_err_over_tol,
        detail: String::new(),
    })
}

fn goal_cell(r: &Row) -> &'static str {
    if r.case.input_bytes < GOAL_MIN_BYTES || r.case.dtype == DType::F64 {
        "–"
    } else if !r.ok {
        "FAILED"
    } else if gbs(r.case.input_bytes, r.ours_us) >= GOAL_GBS {
        "yes"
    } else {
        "**miss**"
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let plan = Plan::new(args.quick);
    let cases: Vec<Case> = common::load_suite()
        .into_iter()
        .filter(|c| args.selects(c))
        .collect();
    if args.list {
        common::print_case_list(&cases);
        return ExitCode::SUCCESS;
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    eprintln!(
        "cpu_reduce: {} cases, {threads} hardware threads, {}",
        cases.len(),
        if args.quick { "quick" } else { "full" }
    );

    let started = Instant::now();
    let max_bytes = cases
        .iter()
        .map(|c| c.input_bytes as usize)
        .max()
        .unwrap_or(0);
    let plain_buf: Vec<f32> = (0..max_bytes.div_ceil(4).max(16))
        .into_par_iter()
        .map(|i| (i % 7) as f32 - 3.0)
        .collect();
    let mut rows = Vec::new();
    for case in &cases {
        let t = Instant::now();
        let row = match run_case(case, &plan) {
            Ok(mut row) => {
                let n = (case.input_bytes as usize / 4).clamp(16, plain_buf.len());
                let us = median(&plan.time(|| {
                    black_box(plain_read(black_box(&plain_buf[..n])));
                }));
                row.plain_gbs = Some(gbs(4 * n as u64, us));
                row
            }
            Err(e) => Row {
                case: case.clone(),
                ours_us: f64::NAN,
                plain_gbs: None,
                nd_us: None,
                ok: false,
                worst_err_over_tol: f64::NAN,
                detail: e.to_string(),
            },
        };
        eprintln!(
            "  {:<24} {}  ours {:>10.1} µs  ndarray {:>10}  ({:.1} s)",
            case.name,
            if row.ok { "ok    " } else { "FAILED" },
            row.ours_us,
            row.nd_us.map_or("–".into(), |u| format!("{u:.1} µs")),
            t.elapsed().as_secs_f64()
        );
        if !row.ok {
            eprintln!("    {}", row.detail);
        }
        rows.push(row);
    }

    println!();
    println!("| case | dtype | input MB | ours µs | ours GB/s | plain read GB/s | ndarray µs | ndarray GB/s | ours/ndarray (speed) | ≥ {GOAL_GBS} GB/s goal |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &rows {
        let b = r.case.input_bytes;
        let (ours_us, ours_gbs) = if r.ok {
            (
                format!("{:.1}", r.ours_us),
                format!("{:.1}", gbs(b, r.ours_us)),
            )
        } else {
            ("FAILED".into(), "–".into())
        };
        let (nd_us, nd_gbs, ratio) = match r.nd_us {
            Some(u) if r.ok => (
                format!("{u:.1}"),
                format!("{:.1}", gbs(b, u)),
                format!("{:.2}×", u / r.ours_us),
            ),
            _ => ("–".into(), "–".into(), "–".into()),
        };
        println!(
            "| {} | {} | {:.1} | {ours_us} | {ours_gbs} | {} | {nd_us} | {nd_gbs} | {ratio} | {} |",
            r.case.name,
            r.case.dtype.name(),
            b as f64 / 1e6,
            r.plain_gbs.map_or("–".into(), |g| format!("{g:.1}")),
            goal_cell(r)
        );
    }
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.case.name.as_str())
        .collect();
    let misses: Vec<&str> = rows
        .iter()
        .filter(|r| goal_cell(r) == "**miss**")
        .map(|r| r.case.name.as_str())
        .collect();
    println!();
    println!(
        "threads: {threads}; total {:.1} s; goal misses: {misses:?}; failed: {failed:?}",
        started.elapsed().as_secs_f64()
    );

    if let Some(path) = &args.json {
        let doc = json!({
            "benchmark": "cpu_reduce",
            "commit": common::git_commit(),
            "threads": threads,
            "date_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            "quick": args.quick,
            "goal_gbs": GOAL_GBS,
            "cases": rows.iter().map(|r| json!({
                "name": r.case.name,
                "dtype": r.case.dtype.name(),
                "input_bytes": r.case.input_bytes,
                "our_us": if r.ok { Some(r.ours_us) } else { None },
                "gbs": if r.ok { Some(gbs(r.case.input_bytes, r.ours_us)) } else { None },
                "plain_read_gbs": r.plain_gbs,
                "ndarray_us": r.nd_us,
                "ok": r.ok,
                "worst_err_over_tol": r.worst_err_over_tol,
                "detail": r.detail,
            })).collect::<Vec<_>>(),
        });
        if let Err(e) = std::fs::write(
            path,
            serde_json::to_string_pretty(&doc).expect("plain JSON values serialise"),
        ) {
            eprintln!("cannot write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
