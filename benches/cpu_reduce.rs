//! CPU benchmark: one op (`--op`, default sum) over every case of
//! `benches/suite.json` or `benches/sweep.json` (`--cases`), by our CPU
//! backend and, where it has the op, by ndarray, next to a plain
//! multithreaded read of the same number of bytes.
//!
//! `cargo bench --bench cpu_reduce [-- [--op NAME] [--cases suite|sweep|FILE.json] [--quick] [--json PATH] [--serve] [--copies N] [CASE-SUBSTRING ...]]`
//!
//! `--serve` takes commands on stdin instead (see [`serve`]), for the
//! interleaved comparison of `scripts/compare_cpu.py`.
//!
//! Each result is checked against the op's f64 reference
//! (`common::reference`) before it is timed: a fast wrong answer fails the
//! run. Times are wall clock, the median of several runs after warm-up,
//! allocation of the result included for both sides. `--quick` takes fewer
//! runs and, for the sweep, each case's small shape (about 8 MiB).
//! `scripts/compare_cpu.py` times torch on the same cases with the same
//! protocol (it reads the protocol from this bench's JSON). `--copies N`
//! gives each case N inputs in allocations of their own, which the timed
//! calls take in turn (torch's side the same): on a virtual machine two
//! buffers of one size can read at speeds far apart ([`Plan::copies`]).

mod common;

use common::reference::OpSpec;
use common::{check_output, expected, gbs, geomean, median, ops, Args, Case};
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};
use num_traits::{Float, FromPrimitive};
use rayon::prelude::*;
use serde_json::json;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tensor_reduce::DType;

/// The goal for the CPU backend, in input bytes per second, for cases this
/// large or larger.
const GOAL_GBS: f64 = 28.0;
const GOAL_MIN_BYTES: u64 = 64 << 20;

/// How many times to run a measured call, and over how many inputs.
struct Plan {
    warmup: usize,
    min_runs: usize,
    max_runs: usize,
    budget: Duration,
    /// Separate inputs a case (`--copies`), taken in turn by the timed
    /// calls. On a virtual machine the same loop read one 134 MB buffer
    /// up to 1.6x as fast as another of the same process (the 2-core
    /// machine: 5.6-8.9 ms for each of nine, each stable from call to
    /// call), so one input a side compares two buffers as much as two
    /// loops; several a side average that out.
    copies: usize,
}

impl Plan {
    /// The sweep has four times the suite's cases: a shorter budget keeps a
    /// full run within minutes on a 16-core host.
    fn new(quick: bool, sweep: bool, copies: usize) -> Plan {
        let plan = if quick {
            Plan {
                warmup: 1,
                min_runs: 3,
                max_runs: 3,
                budget: Duration::ZERO,
                copies,
            }
        } else if sweep {
            Plan {
                warmup: 1,
                min_runs: 3,
                max_runs: 101,
                budget: Duration::from_millis(300),
                copies,
            }
        } else {
            Plan {
                warmup: 2,
                min_runs: 5,
                max_runs: 201,
                budget: Duration::from_millis(1000),
                copies,
            }
        };
        // Every input gets at least one timed call.
        Plan {
            min_runs: plan.min_runs.max(copies),
            max_runs: plan.max_runs.max(copies),
            ..plan
        }
    }
    /// The protocol as the JSON both the batch and the serve modes report.
    fn json(&self) -> serde_json::Value {
        json!({
            "warmup": self.warmup,
            "min_runs": self.min_runs,
            "max_runs": self.max_runs,
            "budget_ms": self.budget.as_millis() as u64,
            "copies": self.copies,
        })
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

/// ndarray's version of `op` over several dims, where ndarray has the op:
/// `*_axis` chained from the highest dim down, so that the remaining dims keep
/// their indices (exact for every op below: each reduces one dim after the
/// other to the same result). `None` where ndarray has no such reduction.
fn nd_reduce<A: Float + FromPrimitive>(
    op: &str,
    x: ArrayViewD<'_, A>,
    dims: &[usize],
) -> Option<ArrayD<A>> {
    let mut dims = dims.to_vec();
    dims.sort_unstable_by(|a, b| b.cmp(a));
    let one = |x: ArrayViewD<'_, A>, d: usize| -> Option<ArrayD<A>> {
        let ax = Axis(d);
        Some(match op {
            "sum" => x.sum_axis(ax),
            "mean" => x.mean_axis(ax)?,
            "prod" => x.product_axis(ax),
            "amax" => x.fold_axis(ax, A::neg_infinity(), |&m, &v| m.max(v)),
            "amin" => x.fold_axis(ax, A::infinity(), |&m, &v| m.min(v)),
            _ => return None,
        })
    };
    let single = |f: fn(ArrayViewD<'_, A>, Axis) -> ArrayD<A>| {
        (dims.len() == 1).then(|| f(x.view(), Axis(dims[0])))
    };
    match op {
        // ndarray's var/std take one axis.
        "var" => single(|x, ax| x.var_axis(ax, A::one())),
        "std" => single(|x, ax| x.std_axis(ax, A::one())),
        _ => {
            let mut acc = one(x.view(), dims[0])?;
            for &d in &dims[1..] {
                acc = one(acc.view(), d)?;
            }
            Some(acc)
        }
    }
}

/// The case's view of a contiguous ndarray of the base shape.
fn nd_view<'a, A>(base: &'a ArrayD<A>, case: &Case) -> ArrayViewD<'a, A> {
    base.view()
        .permuted_axes(IxDyn(&case.view.axes(case.base_shape.len())))
}

/// ndarray's time for `op` on `case`; `None` where it has no such op or the
/// dtype has no fair ndarray baseline (16-bit floats are added in 16 bits
/// with a software conversion per add: neither fair nor accurate).
fn nd_time(
    op: &str,
    case: &Case,
    base: &tensor_reduce::Tensor,
    plan: &Plan,
) -> tensor_reduce::Result<Option<f64>> {
    fn time<A: Float + FromPrimitive + tensor_reduce::Element>(
        op: &str,
        case: &Case,
        base: &tensor_reduce::Tensor,
        plan: &Plan,
    ) -> tensor_reduce::Result<Option<f64>> {
        let a = ArrayD::from_shape_vec(IxDyn(&case.base_shape), base.to_vec::<A>()?)
            .expect("shape matches the data");
        let v = nd_view(&a, case);
        let dims = case.dims_wrapped();
        if nd_reduce(op, v.view(), &dims).is_none() {
            return Ok(None);
        }
        Ok(Some(median(&plan.time(|| {
            black_box(nd_reduce(op, v.view(), &dims));
        }))))
    }
    match case.dtype {
        DType::F32 => time::<f32>(op, case, base, plan),
        DType::F64 => time::<f64>(op, case, base, plan),
        _ => Ok(None),
    }
}

struct Row {
    case: Case,
    /// Median µs, when the op applied and the result was right.
    ours_us: Option<f64>,
    plain_gbs: Option<f64>,
    nd_us: Option<f64>,
    ok: bool,
    /// Why the op does not apply to this case (torch would refuse it too).
    skipped: Option<String>,
    worst_err_over_tol: f64,
    detail: String,
}

impl Row {
    fn new(case: &Case) -> Row {
        Row {
            case: case.clone(),
            ours_us: None,
            plain_gbs: None,
            nd_us: None,
            ok: false,
            skipped: None,
            worst_err_over_tol: f64::NAN,
            detail: String::new(),
        }
    }
}

/// A case whose input is made and whose result was checked: what the timed
/// calls need.
struct Prepared {
    row: Row,
    /// The base tensor, the case's view of it and of each further copy
    /// ([`Plan::copies`], the first the checked one), and the call; `None`
    /// when the op does not apply or the result was wrong (nothing to time).
    ready: Option<(tensor_reduce::Tensor, Vec<tensor_reduce::Tensor>, ops::Call)>,
}

impl Prepared {
    fn new(spec: &OpSpec, case: &Case, copies: usize) -> tensor_reduce::Result<Prepared> {
        let mut row = Row::new(case);
        if let Some(why) = ops::not_applicable(spec, case.dims.len(), case.dtype) {
            row.skipped = Some(why);
            row.ok = true;
            return Ok(Prepared { row, ready: None });
        }
        let call = ops::call(spec.name, &case.dims).expect("main checked the op is wired");
        let (base, x) = case.make_input()?;
        let want = expected(case, &base, spec)?;
        let c = check_output(&want, &call(&x)?)?;
        drop(want);
        row.worst_err_over_tol = c.worst_err_over_tol;
        row.ok = c.ok;
        if !c.ok {
            row.detail = c.detail;
            return Ok(Prepared { row, ready: None });
        }
        let mut views = vec![x];
        for _ in 1..copies {
            // The same values in an allocation of its own.
            views.push(case.make_input()?.1);
        }
        Ok(Prepared {
            row,
            ready: Some((base, views, call)),
        })
    }

    /// The median µs of our call under `plan`, if there is one to time.
    fn time_ours(&self, plan: &Plan) -> Option<f64> {
        let (_, views, call) = self.ready.as_ref()?;
        let mut next = views.iter().cycle();
        Some(median(&plan.time(|| {
            let x = next.next().expect("at least one input");
            black_box(call(x).expect("checked when prepared"));
        })))
    }

    fn time_ndarray(&self, spec: &OpSpec, plan: &Plan) -> tensor_reduce::Result<Option<f64>> {
        match &self.ready {
            Some((base, _, _)) => nd_time(spec.name, &self.row.case, base, plan),
            None => Ok(None),
        }
    }
}

/// The plain read's GB/s over as many bytes as `case` reads.
fn time_plain(case: &Case, plain_buf: &[f32], plan: &Plan) -> f64 {
    let n = (case.input_bytes as usize / 4).clamp(16, plain_buf.len());
    let us = median(&plan.time(|| {
        black_box(plain_read(black_box(&plain_buf[..n])));
    }));
    gbs(4 * n as u64, us)
}

fn run_case(spec: &OpSpec, case: &Case, plan: &Plan) -> tensor_reduce::Result<Row> {
    let p = Prepared::new(spec, case, plan.copies)?;
    let ours_us = p.time_ours(plan);
    let nd_us = p.time_ndarray(spec, plan)?;
    Ok(Row {
        ours_us,
        nd_us,
        ..p.row
    })
}

/// `--serve`: one command a line on stdin, one JSON reply a line on stdout,
/// so that `scripts/compare_cpu.py` can time torch between our rounds of the
/// same case: the two sides' calls are then seconds apart, not a whole run,
/// on a host whose memory speed drifts within minutes.
///
/// - `case NAME`: make, check and keep the case's input; replies `ok`,
///   `skipped`, `detail` and `worst_err_over_tol`.
/// - `time`: our median µs under the plan (`us`, null when nothing to time).
/// - `plain`: the plain read's GB/s over the case's bytes (`gbs`).
/// - `ndarray`: ndarray's median µs (`us`, null where it has no such op).
/// - `quit`.
///
/// The first line out describes the run (commit, threads, protocol).
fn serve(spec: &OpSpec, cases: &[Case], plan: &Plan, plain_buf: &[f32]) -> ExitCode {
    use std::io::{BufRead, Write};
    let mut out = std::io::stdout().lock();
    let mut reply =
        |v: serde_json::Value| -> bool { writeln!(out, "{v}").and_then(|_| out.flush()).is_ok() };
    if !reply(json!({
        "commit": common::git_commit(),
        "threads": rayon::current_num_threads(),
        "protocol": plan.json(),
    })) {
        return ExitCode::FAILURE;
    }
    let mut current: Option<Prepared> = None;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let (cmd, arg) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        let v = match (cmd, current.as_ref()) {
            ("quit", _) => break,
            ("case", _) => {
                current = None; // frees the previous input first
                match cases.iter().find(|c| c.name == arg) {
                    None => json!({"ok": false, "detail": format!("no case named {arg:?}")}),
                    Some(case) => match Prepared::new(spec, case, plan.copies) {
                        Ok(p) => {
                            let r = &p.row;
                            let v = json!({
                                "ok": r.ok,
                                "skipped": r.skipped,
                                "detail": r.detail,
                                "worst_err_over_tol": r.worst_err_over_tol.is_finite().then_some(r.worst_err_over_tol),
                            });
                            current = Some(p);
                            v
                        }
                        Err(e) => json!({"ok": false, "detail": e.to_string()}),
                    },
                }
            }
            (_, None) => json!({"error": format!("{cmd}: no case prepared")}),
            ("time", Some(p)) => json!({"us": p.time_ours(plan)}),
            ("plain", Some(p)) => json!({"gbs": time_plain(&p.row.case, plain_buf, plan)}),
            ("ndarray", Some(p)) => match p.time_ndarray(spec, plan) {
                Ok(us) => json!({"us": us}),
                Err(e) => json!({"error": e.to_string()}),
            },
            _ => json!({"error": format!("unknown command {line:?}")}),
        };
        if !reply(v) {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn goal_cell(r: &Row) -> &'static str {
    let small = r.case.input_bytes < GOAL_MIN_BYTES || r.case.dtype.size_in_bytes() == 8;
    match r.ours_us {
        _ if small || r.skipped.is_some() => "–",
        None => "FAILED",
        Some(us) if gbs(r.case.input_bytes, us) >= GOAL_GBS => "yes",
        Some(_) => "**miss**",
    }
}

fn cell(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or("–".into(), f)
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = common::reference::self_check() {
        eprintln!("cpu_reduce: {e}");
        return ExitCode::FAILURE;
    }
    let spec = match ops::lookup(&args.op) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cpu_reduce: {e}");
            return ExitCode::from(2);
        }
    };
    // A case file is timed as the sweep is: many large inputs.
    let sweep = args.cases != common::CaseSet::Suite;
    let plan = Plan::new(args.quick, sweep, args.copies);
    let cases = args.selected_cases();
    if args.list {
        common::print_case_list(&cases);
        return ExitCode::SUCCESS;
    }
    let threads = rayon::current_num_threads();
    eprintln!(
        "cpu_reduce: {} over {} {} cases, {threads} threads, {}",
        spec.name,
        cases.len(),
        args.cases.name(),
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
    if args.serve {
        return serve(spec, &cases, &plan, &plain_buf);
    }
    let mut rows = Vec::new();
    for case in &cases {
        let t = Instant::now();
        let mut row = run_case(spec, case, &plan).unwrap_or_else(|e| Row {
            detail: e.to_string(),
            ..Row::new(case)
        });
        if row.ours_us.is_some() {
            row.plain_gbs = Some(time_plain(case, &plain_buf, &plan));
        }
        let status = match (&row.skipped, row.ok) {
            (Some(_), _) => "n/a   ",
            (None, true) => "ok    ",
            (None, false) => "FAILED",
        };
        eprintln!(
            "  {:<30} {status}  ours {:>10}  ndarray {:>10}  ({:.1} s)",
            case.name,
            cell(row.ours_us, |u| format!("{u:.1} µs")),
            cell(row.nd_us, |u| format!("{u:.1} µs")),
            t.elapsed().as_secs_f64()
        );
        if !row.ok {
            eprintln!("    {}", row.detail);
        }
        rows.push(row);
    }

    println!();
    println!(
        "op `{}`, {} cases; plain read: a multithreaded read of the same number of bytes in the same run \
         (small inputs are read from cache by both, so compare a case with it, not with DRAM speed)",
        spec.name,
        args.cases.name()
    );
    println!();
    println!("| case | dtype | input MB | ours µs | ours GB/s | plain read GB/s | % of plain read | ndarray µs | ours/ndarray (speed) | ≥ {GOAL_GBS} GB/s goal |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut speedups = Vec::new();
    let mut pcts = Vec::new();
    for r in &rows {
        let b = r.case.input_bytes;
        let ours = match (&r.skipped, r.ours_us) {
            (Some(_), _) => "n/a".to_string(),
            (None, Some(u)) => format!("{u:.1}"),
            (None, None) => "FAILED".to_string(),
        };
        let pct = r
            .ours_us
            .zip(r.plain_gbs)
            .map(|(u, p)| 100.0 * gbs(b, u) / p);
        let speedup = r.ours_us.zip(r.nd_us).map(|(o, n)| n / o);
        speedups.extend(speedup);
        pcts.extend(pct);
        println!(
            "| {} | {} | {:.1} | {ours} | {} | {} | {} | {} | {} | {} |",
            r.case.name,
            r.case.dtype.name(),
            b as f64 / 1e6,
            cell(r.ours_us, |u| format!("{:.1}", gbs(b, u))),
            cell(r.plain_gbs, |g| format!("{g:.1}")),
            cell(pct, |p| format!("{p:.0}%")),
            cell(r.nd_us, |u| format!("{u:.1}")),
            cell(speedup, |s| format!("{s:.2}×")),
            goal_cell(r)
        );
    }
    println!(
        "| **geometric mean** | | | | | | {} | | {} | |",
        cell(geomean(&pcts), |p| format!("{p:.0}%")),
        cell(geomean(&speedups), |s| format!(
            "{s:.2}× ({} cases)",
            speedups.len()
        )),
    );
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
            "op": spec.name,
            "case_set": args.cases.name(),
            "commit": common::git_commit(),
            "threads": threads,
            "date_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            "quick": args.quick,
            "protocol": plan.json(),
            "goal_gbs": GOAL_GBS,
            "cases": rows.iter().map(|r| json!({
                "name": r.case.name,
                "dtype": r.case.dtype.name(),
                "base_shape": r.case.base_shape,
                "view": r.case.view_name,
                "dims": r.case.dims,
                "input_bytes": r.case.input_bytes,
                "our_us": r.ours_us,
                "gbs": r.ours_us.map(|u| gbs(r.case.input_bytes, u)),
                "plain_read_gbs": r.plain_gbs,
                "ndarray_us": r.nd_us,
                "ok": r.ok,
                "skipped": r.skipped,
                "worst_err_over_tol": r.worst_err_over_tol.is_finite().then_some(r.worst_err_over_tol),
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
