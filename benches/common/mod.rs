//! Code shared by the CPU and GPU benchmarks: the case lists (suite and
//! sweep), command-line arguments, the per-op reference and result checking,
//! and statistics.

// Each bench binary compiles this module on its own and uses a different part
// of it; what one of them leaves unused is not dead code.
#![allow(dead_code)]

pub mod ops;
pub mod reference;

use rayon::prelude::*;
use reference::OpSpec;
use serde_json::Value;
use tensor_reduce::{DType, Element, Tensor};

/// The suite and the sweep, compiled in so that a benchmark binary copied to
/// another machine (the GPU bundle) needs no file beside it.
pub const SUITE_JSON: &str = include_str!("../suite.json");
pub const SWEEP_JSON: &str = include_str!("../sweep.json");

/// Inputs of at least this many bytes are read from DRAM even when the same
/// buffer is reduced again and again (more than twice the H200's 60 MB L2).
pub const DRAM_BYTES: u64 = 128 << 20;

/// The half-open range integer inputs of `dtype` are drawn from: every
/// value of the narrow types (so their sums carry and wrap as real data
/// would), and [-1000, 1000) for the wide ones, whose rows' sums then stay
/// exact in f64. `scripts/bench_common.py` draws the peers' from the same.
pub fn int_range(dtype: DType) -> (i64, i64) {
    match dtype {
        DType::Bool => (0, 2),
        DType::U8 => (0, 256),
        _ => (-1000, 1000),
    }
}

/// Seed of every input tensor: fixed, so that every run and every machine
/// sums the same numbers.
pub const SEED: u64 = 0x5eed;

/// A view applied to the contiguous base tensor before summing.
#[derive(Clone, Debug, PartialEq)]
pub enum View {
    None,
    Transpose(isize, isize),
    Permute(Vec<isize>),
}

impl View {
    fn parse(s: &str) -> View {
        let args = |body: &str| -> Vec<isize> {
            body.trim_end_matches(')')
                .split(',')
                .map(|v| {
                    v.trim()
                        .parse()
                        .expect("suite.json: view argument is an integer")
                })
                .collect()
        };
        if s == "none" {
            View::None
        } else if let Some(body) = s.strip_prefix("transpose(") {
            let a = args(body);
            assert_eq!(a.len(), 2, "suite.json: transpose takes two dims");
            View::Transpose(a[0], a[1])
        } else if let Some(body) = s.strip_prefix("permute(") {
            View::Permute(args(body))
        } else {
            panic!("suite.json: unknown view {s:?}")
        }
    }

    pub fn apply(&self, t: &Tensor) -> tensor_reduce::Result<Tensor> {
        match self {
            View::None => Ok(t.clone()),
            View::Transpose(a, b) => t.transpose(*a, *b),
            View::Permute(p) => t.permute(p),
        }
    }

    /// The axis order of the view, as indices into the base shape.
    pub fn axes(&self, rank: usize) -> Vec<usize> {
        let wrap = |d: isize| {
            if d < 0 {
                (d + rank as isize) as usize
            } else {
                d as usize
            }
        };
        match self {
            View::None => (0..rank).collect(),
            View::Transpose(a, b) => {
                let mut axes: Vec<usize> = (0..rank).collect();
                axes.swap(wrap(*a), wrap(*b));
                axes
            }
            View::Permute(p) => p.iter().map(|&d| wrap(d)).collect(),
        }
    }
}

/// One benchmark case of `benches/suite.json`.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub base_shape: Vec<usize>,
    pub view_name: String,
    pub view: View,
    pub dims: Vec<isize>,
    pub dtype: DType,
    pub input_bytes: u64,
    /// Copies of the input cycled through, call after call, so that inputs
    /// under [`DRAM_BYTES`] are read from DRAM (1: the same buffer each call).
    pub rotate: usize,
    /// The peers' H200 numbers recorded in the suite: reference only.
    pub ref_torch_us: Option<f64>,
    pub ref_cub_us: Option<f64>,
    pub ref_best_peer_us: Option<f64>,
}

impl Case {
    /// The shape of the view that is summed.
    pub fn view_shape(&self) -> Vec<usize> {
        self.view
            .axes(self.base_shape.len())
            .iter()
            .map(|&a| self.base_shape[a])
            .collect()
    }

    /// The summed dims as non-negative indices of the view.
    pub fn dims_wrapped(&self) -> Vec<usize> {
        let rank = self.base_shape.len() as isize;
        self.dims
            .iter()
            .map(|&d| {
                if d < 0 {
                    (d + rank) as usize
                } else {
                    d as usize
                }
            })
            .collect()
    }

    /// Elements summed into each output.
    pub fn reduced_len(&self) -> usize {
        let shape = self.view_shape();
        self.dims_wrapped().iter().map(|&d| shape[d]).product()
    }

    pub fn numel(&self) -> usize {
        self.base_shape.iter().product()
    }

    /// Where a repeated call reads its input from, for the tables.
    pub fn reads_from(&self) -> String {
        if self.rotate > 1 {
            format!("DRAM ({} copies)", self.rotate)
        } else if self.input_bytes >= DRAM_BYTES {
            "DRAM".into()
        } else {
            "L2-warm".into()
        }
    }

    /// The input tensor of this case, on the host: seeded randn of the base
    /// shape (integers in [`int_range`] for integer dtypes), then the view.
    pub fn make_input(&self) -> tensor_reduce::Result<(Tensor, Tensor)> {
        let cpu = tensor_reduce::Device::Cpu;
        let base = if self.dtype.is_floating_point() {
            Tensor::randn(&self.base_shape, self.dtype, cpu, SEED)?
        } else {
            let (low, high) = int_range(self.dtype);
            Tensor::randint(low, high, &self.base_shape, self.dtype, cpu, SEED)?
        };
        let view = self.view.apply(&base)?;
        Ok((base, view))
    }
}

/// Prints one line per case (`--list`).
pub fn print_case_list(cases: &[Case]) {
    for c in cases {
        println!(
            "{:<24} {:>5} {:>14} {:<18} dims {:?}",
            c.name,
            c.dtype.name(),
            c.input_bytes,
            c.view_name,
            c.dims
        );
    }
}

/// Which case list to run.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum CaseSet {
    #[default]
    Suite,
    Sweep,
    /// A JSON file of the same form as `benches/sweep.json`, read at run
    /// time: any layouts one wants timed beside the two lists.
    File(String),
}

impl CaseSet {
    /// The list's name, as the tables and the JSON report it.
    pub fn name(&self) -> &str {
        match self {
            CaseSet::Suite => "suite",
            CaseSet::Sweep => "sweep",
            CaseSet::File(path) => path,
        }
    }
}

/// The cases of `benches/suite.json`, compiled into the binary.
pub fn load_suite() -> Vec<Case> {
    parse_cases(SUITE_JSON, "suite.json", false)
}

/// The cases of `set`; `quick` takes the sweep's small shapes
/// (`quick_base_shape`) and leaves the suite as it is.
pub fn load_cases(set: &CaseSet, quick: bool) -> Vec<Case> {
    match set {
        CaseSet::Suite => load_suite(),
        CaseSet::Sweep => parse_cases(SWEEP_JSON, "sweep.json", quick),
        CaseSet::File(path) => {
            let json = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read the case list {path}: {e}"));
            parse_cases(&json, path, quick)
        }
    }
}

fn parse_cases(json: &str, file: &str, quick: bool) -> Vec<Case> {
    let doc: Value = serde_json::from_str(json).expect("the case list is valid JSON");
    let usizes = |v: &Value| -> Vec<usize> {
        v.as_array()
            .expect("an array")
            .iter()
            .map(|x| x.as_u64().expect("an integer") as usize)
            .collect()
    };
    doc["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{file} has a case list"))
        .iter()
        .map(|c| {
            let r = &c["reference_h200"];
            let view_name = c["view"].as_str().expect("view is a string").to_string();
            let dtype = DType::from_name(c["dtype"].as_str().expect("dtype is a string"))
                .unwrap_or_else(|| panic!("{file}: a known dtype"));
            let quick_shape = c.get("quick_base_shape").filter(|_| quick);
            let base_shape = usizes(quick_shape.unwrap_or(&c["base_shape"]));
            let input_bytes = if quick_shape.is_some() {
                (base_shape.iter().product::<usize>() * dtype.size_in_bytes()) as u64
            } else {
                c["input_bytes"]
                    .as_u64()
                    .expect("input_bytes is an integer")
            };
            Case {
                name: c["name"].as_str().expect("name is a string").to_string(),
                base_shape,
                view: View::parse(&view_name),
                view_name,
                dims: c["dims"]
                    .as_array()
                    .expect("dims is an array")
                    .iter()
                    .map(|d| d.as_i64().expect("a dim") as isize)
                    .collect(),
                dtype,
                input_bytes,
                rotate: c["rotate"].as_u64().map_or(1, |r| r.max(1) as usize),
                ref_torch_us: r["torch_us"].as_f64(),
                ref_cub_us: r["cupy_cub_us"].as_f64(),
                ref_best_peer_us: r["best_peer_us"].as_f64(),
            }
        })
        .collect()
}

/// Command-line arguments common to both benchmarks.
#[derive(Debug, Default)]
pub struct Args {
    /// Fewer timed runs, for a quick look.
    pub quick: bool,
    /// Where to write the results as JSON.
    pub json: Option<String>,
    /// Substrings of case names to run (all cases when empty).
    pub filters: Vec<String>,
    /// Only print the case list.
    pub list: bool,
    /// The op to time (`--op`, default sum).
    pub op: String,
    /// The case list (`--cases suite|sweep`, default suite).
    pub cases: CaseSet,
    /// cpu_reduce only: take commands on stdin instead of running the cases
    /// in turn, so that a peer can be timed between our rounds.
    pub serve: bool,
    /// cpu_reduce only (`--copies N`, default 1): separate inputs a case,
    /// the timed calls taking them in turn (see cpu_reduce's `Prepared`).
    pub copies: usize,
}

impl Args {
    pub fn parse() -> Args {
        let mut args = Args {
            op: "sum".into(),
            copies: 1,
            ..Args::default()
        };
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            match a.as_str() {
                // `cargo bench` passes `--bench` to every bench binary.
                "--bench" => {}
                "--quick" => args.quick = true,
                "--list" => args.list = true,
                "--serve" => args.serve = true,
                "--json" => args.json = Some(it.next().expect("--json needs a path")),
                "--op" => args.op = it.next().expect("--op needs a name"),
                "--copies" => match it.next().and_then(|n| n.parse().ok()) {
                    Some(n) if n >= 1 => args.copies = n,
                    _ => {
                        eprintln!("--copies takes a count of at least 1");
                        std::process::exit(2);
                    }
                },
                "--cases" => {
                    args.cases = match it.next().as_deref() {
                        Some("suite") => CaseSet::Suite,
                        Some("sweep") => CaseSet::Sweep,
                        Some(path) if path.ends_with(".json") => CaseSet::File(path.to_string()),
                        other => {
                            eprintln!(
                                "--cases takes suite, sweep or a .json case list, got {other:?}"
                            );
                            std::process::exit(2);
                        }
                    }
                }
                "-h" | "--help" => {
                    eprintln!(
                        "usage: [--op NAME] [--cases suite|sweep|FILE.json] [--quick] [--list] [--json PATH] [--serve] [--copies N] [CASE-SUBSTRING ...]\n\
                         ops: {}",
                        ops::wired().join(", ")
                    );
                    std::process::exit(0);
                }
                other if other.starts_with("--") => {
                    eprintln!("unknown option {other}; try --help");
                    std::process::exit(2);
                }
                other => args.filters.push(other.to_string()),
            }
        }
        args
    }

    /// The selected cases of the chosen list.
    pub fn selected_cases(&self) -> Vec<Case> {
        load_cases(&self.cases, self.quick)
            .into_iter()
            .filter(|c| self.selects(c))
            .collect()
    }

    pub fn selects(&self, case: &Case) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| case.name.contains(f.as_str()))
    }
}

/// The elements of a tensor in logical row-major order, as f64 (exact but
/// for i64 beyond 2^53, which the benches' integer inputs never reach).
pub fn values_f64(t: &Tensor) -> tensor_reduce::Result<Vec<f64>> {
    tensor_reduce::with_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(Element::to_f64).collect()))
}

/// The elements of `case`'s view grouped by output: output after output in
/// row-major order of the kept dims, each output's elements in row-major
/// order of the reduced dims. `base` holds the base tensor's values.
pub fn gather_rows(case: &Case, base: &[f64]) -> Vec<f64> {
    const MAX_RANK: usize = 8;
    let rank = case.base_shape.len();
    assert!(rank <= MAX_RANK, "{}: rank {rank} > {MAX_RANK}", case.name);
    let mut base_strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        base_strides[d] = base_strides[d + 1] * case.base_shape[d + 1];
    }
    let axes = case.view.axes(rank);
    let reduced = case.dims_wrapped();
    let pick = |keep: bool| -> (Vec<usize>, Vec<usize>) {
        (0..rank)
            .filter(|d| reduced.contains(d) != keep)
            .map(|d| (case.base_shape[axes[d]], base_strides[axes[d]]))
            .unzip()
    };
    let (kept_shape, kept_strides) = pick(true);
    let (red_shape, red_strides) = pick(false);
    let n: usize = red_shape.iter().product();
    let mut out = vec![0.0; base.len()];
    if n == 0 {
        return out;
    }
    out.par_chunks_mut(n).enumerate().for_each(|(o, row)| {
        let offset = unravel(o, &kept_shape, &kept_strides);
        // No allocation per output: outer reductions have tens of millions.
        let mut idx = [0usize; MAX_RANK];
        let mut roff = 0usize;
        for slot in row.iter_mut() {
            *slot = base[offset + roff];
            // An odometer over the reduced dims, last dim fastest.
            for d in (0..red_shape.len()).rev() {
                idx[d] += 1;
                roff += red_strides[d];
                if idx[d] < red_shape[d] {
                    break;
                }
                roff -= red_strides[d] * red_shape[d];
                idx[d] = 0;
            }
        }
    });
    out
}

/// The offset of row-major index `i` of `shape` under `strides`.
fn unravel(mut i: usize, shape: &[usize], strides: &[usize]) -> usize {
    let mut off = 0;
    for d in (0..shape.len()).rev() {
        off += (i % shape[d]) * strides[d];
        i /= shape[d];
    }
    off
}

/// What one case's outputs must be, from the op's f64 reference.
pub struct Expected {
    pub values: Vec<f64>,
    pub tolerances: Vec<f64>,
    /// The reference indices of ops with a second output (max_dim).
    pub indices: Option<Vec<f64>>,
    /// Elements reduced into each output.
    pub n: usize,
}

/// The reference of `spec` on `case`, whose base tensor is `base` (on the host).
pub fn expected(case: &Case, base: &Tensor, spec: &OpSpec) -> tensor_reduce::Result<Expected> {
    let out = (spec.out_dtype)(case.dtype).expect("the caller checked that the op applies");
    let rows = gather_rows(case, &values_f64(base)?);
    let n = case.reduced_len();
    let (values, tolerances): (Vec<f64>, Vec<f64>) = rows
        .par_chunks(n.max(1))
        .map(|row| {
            let r = (spec.reference)(row);
            (r, (spec.tolerance)(row, r, out))
        })
        .unzip();
    let indices = spec
        .indices
        .map(|f| rows.par_chunks(n.max(1)).map(f).collect());
    Ok(Expected {
        values,
        tolerances,
        indices,
        n,
    })
}

/// Checks an op's outputs against [`expected`].
pub fn check_output(e: &Expected, out: &ops::Output) -> tensor_reduce::Result<Check> {
    let mut c = check(&values_f64(&out.first)?, &e.values, &e.tolerances, e.n);
    if let (Some(want), Some(got), true) = (&e.indices, &out.second, c.ok) {
        let exact = vec![0.0; want.len()];
        let ci = check(&values_f64(got)?, want, &exact, e.n);
        if !ci.ok {
            c = Check {
                detail: format!("indices: {}", ci.detail),
                ..ci
            };
        }
    }
    Ok(c)
}

/// The outcome of checking one result against a reference.
#[derive(Clone, Debug)]
pub struct Check {
    pub ok: bool,
    /// Largest |ours - reference| over the outputs.
    pub max_abs_err: f64,
    /// Largest error as a fraction of its tolerance (ok when <= 1).
    pub worst_err_over_tol: f64,
    /// What went wrong, empty when ok.
    pub detail: String,
}

/// Compares every output with its reference and tolerance; NaN matches NaN
/// (amax of a row with a NaN, var of one element).
pub fn check(ours: &[f64], reference: &[f64], tolerances: &[f64], n: usize) -> Check {
    if ours.len() != reference.len() {
        return Check {
            ok: false,
            max_abs_err: f64::INFINITY,
            worst_err_over_tol: f64::INFINITY,
            detail: format!("{} outputs, expected {}", ours.len(), reference.len()),
        };
    }
    let mut c = Check {
        ok: true,
        max_abs_err: 0.0,
        worst_err_over_tol: 0.0,
        detail: String::new(),
    };
    for (i, ((&g, &r), &tol)) in ours.iter().zip(reference).zip(tolerances).enumerate() {
        let same = g == r || (g.is_nan() && r.is_nan());
        let err = if same { 0.0 } else { (g - r).abs() };
        // A match needs no tolerance: a NaN reference (var of one element)
        // has a NaN one. Otherwise `!(err <= tol)` also catches a NaN in
        // our result.
        let ratio = if same {
            0.0
        } else if err <= tol {
            err / tol.max(f64::MIN_POSITIVE)
        } else {
            f64::INFINITY
        };
        c.max_abs_err = c
            .max_abs_err
            .max(if err.is_nan() { f64::INFINITY } else { err });
        if ratio.is_infinite() && c.ok {
            c.ok = false;
            c.detail = format!("output {i}: got {g}, expected {r} (tolerance {tol:.3e}, n {n})");
        }
        c.worst_err_over_tol = c.worst_err_over_tol.max(ratio);
    }
    c
}

/// The median of `xs` (the mean of the two middle values for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.is_empty() {
        f64::NAN
    } else if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The geometric mean of the positive values; `None` when there are none.
pub fn geomean(xs: &[f64]) -> Option<f64> {
    let v: Vec<f64> = xs
        .iter()
        .copied()
        .filter(|&x| x > 0.0 && x.is_finite())
        .collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Input bytes per microsecond, in GB/s (10^9 bytes per second).
pub fn gbs(bytes: u64, us: f64) -> f64 {
    bytes as f64 / us / 1e3
}

/// The commit the benchmark was built from: `TENSOR_REDUCE_BUILD_COMMIT` at
/// build time (scripts/gpu-bundle.sh sets it, since the GPU machine's copy of
/// the checkout need not carry the same git metadata), else the checkout the
/// benchmark runs in.
pub fn git_commit() -> Option<String> {
    if let Some(commit) = option_env!("TENSOR_REDUCE_BUILD_COMMIT").filter(|c| !c.is_empty()) {
        return Some(commit.to_string());
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()?;
    let hash = String::from_utf8(out.stdout).ok()?.trim().to_string();
    if hash.is_empty() {
        return None;
    }
    Some(if dirty.stdout.is_empty() {
        hash
    } else {
        format!("{hash}+dirty")
    })
}
