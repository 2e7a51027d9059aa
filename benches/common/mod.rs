//! Code shared by the CPU and GPU benchmarks: the suite, command-line
//! arguments, result checking and statistics.

// Each bench binary compiles this module on its own and uses a different part
// of it; what one of them leaves unused is not dead code.
#![allow(dead_code)]

use serde_json::Value;
use tensor_reduce::{bf16, f16, DType, Tensor};

/// The suite, compiled in so that a benchmark binary copied to another
/// machine (the GPU bundle) needs no file beside it.
pub const SUITE_JSON: &str = include_str!("../suite.json");

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

    /// The input tensor of this case, on the host: seeded randn of the base
    /// shape, then the view.
    pub fn make_input(&self) -> tensor_reduce::Result<(Tensor, Tensor)> {
        let base = Tensor::randn(
            &self.base_shape,
            self.dtype,
            tensor_reduce::Device::Cpu,
            SEED,
        )?;
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

/// The cases of `benches/suite.json`, compiled into the binary.
pub fn load_suite() -> Vec<Case> {
    let suite: Value = serde_json::from_str(SUITE_JSON).expect("benches/suite.json is valid JSON");
    let usizes = |v: &Value| -> Vec<usize> {
        v.as_array()
            .expect("an array")
            .iter()
            .map(|x| x.as_u64().expect("an integer") as usize)
            .collect()
    };
    suite["cases"]
        .as_array()
        .expect("suite.json has a case list")
        .iter()
        .map(|c| {
            let r = &c["reference_h200"];
            let view_name = c["view"].as_str().expect("view is a string").to_string();
            Case {
                name: c["name"].as_str().expect("name is a string").to_string(),
                base_shape: usizes(&c["base_shape"]),
                view: View::parse(&view_name),
                view_name,
                dims: c["dims"]
                    .as_array()
                    .expect("dims is an array")
                    .iter()
                    .map(|d| d.as_i64().expect("a dim") as isize)
                    .collect(),
                dtype: DType::from_name(c["dtype"].as_str().expect("dtype is a string"))
                    .expect("suite.json: a known dtype"),
                input_bytes: c["input_bytes"]
                    .as_u64()
                    .expect("input_bytes is an integer"),
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
}

impl Args {
    pub fn parse() -> Args {
        let mut args = Args::default();
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            match a.as_str() {
                // `cargo bench` passes `--bench` to every bench binary.
                "--bench" => {}
                "--quick" => args.quick = true,
                "--list" => args.list = true,
                "--json" => args.json = Some(it.next().expect("--json needs a path")),
                "-h" | "--help" => {
                    eprintln!("usage: [--quick] [--list] [--json PATH] [CASE-SUBSTRING ...]");
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

    pub fn selects(&self, case: &Case) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| case.name.contains(f.as_str()))
    }
}

/// The elements of a floating tensor in logical row-major order, as f64.
pub fn values_f64(t: &Tensor) -> tensor_reduce::Result<Vec<f64>> {
    Ok(match t.dtype() {
        DType::F16 => t.to_vec::<f16>()?.iter().map(|v| v.to_f64()).collect(),
        DType::BF16 => t.to_vec::<bf16>()?.iter().map(|v| v.to_f64()).collect(),
        DType::F32 => t.to_vec::<f32>()?.iter().map(|&v| v as f64).collect(),
        DType::F64 => t.to_vec::<f64>()?,
        other => panic!("the suite only has floating dtypes, got {other}"),
    })
}

/// Largest accepted |ours - reference| for an output summing `n` elements
/// whose absolute values add up to `abs_sum`, returned in dtype `out`.
///
/// Pairwise summation in the accumulator type errs by at most about
/// `eps * log2(n) * abs_sum`; backends that add runs sequentially at the
/// leaves stay within a small multiple of that on randn data (the partial
/// sums random-walk), hence the factor 4. Rounding the result to `out` adds
/// half an ulp of the result, and for 16-bit outputs one subnormal step.
pub fn tolerance(n: usize, abs_sum: f64, reference: f64, out: DType) -> f64 {
    let acc_eps = match out.accumulator() {
        DType::F64 => f64::EPSILON / 2.0,
        _ => f32::EPSILON as f64 / 2.0,
    };
    let (out_eps, out_tiny) = match out {
        DType::F16 => (2f64.powi(-11), 2f64.powi(-24)),
        DType::BF16 => (2f64.powi(-8), 2f64.powi(-133)),
        DType::F32 => (2f64.powi(-24), 0.0),
        _ => (2f64.powi(-53), 0.0),
    };
    let depth = (n.max(2) as f64).log2().ceil() + 1.0;
    let acc = 4.0 * acc_eps * depth * abs_sum;
    acc + out_eps * (reference.abs() + acc) * 1.001 + out_tiny
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

/// Compares every output with the f64 reference, with [`tolerance`].
pub fn check(ours: &[f64], reference: &[f64], abs_sums: &[f64], n: usize, out: DType) -> Check {
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
    for (i, ((&g, &r), &a)) in ours.iter().zip(reference).zip(abs_sums).enumerate() {
        let err = (g - r).abs();
        let tol = tolerance(n, a, r, out);
        // `!(err <= tol)` also catches a NaN in our result.
        let ratio = if err <= tol {
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

/// Input bytes per microsecond, in GB/s (10^9 bytes per second).
pub fn gbs(bytes: u64, us: f64) -> f64 {
    bytes as f64 / us / 1e3
}

/// The commit the benchmark was built from, when it runs inside a git checkout.
pub fn git_commit() -> Option<String> {
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
