//! The f64 reference of every reduction the benches time, written as plain
//! functions over the elements that reduce into one output, and the
//! tolerance each output is checked with. Independent of the library: a
//! result is only timed once it agrees with these.

use tensor_reduce::DType;

/// What the benches need to know about one op, apart from how to call it
/// (`super::ops::call`).
pub struct OpSpec {
    pub name: &'static str,
    /// The reference value of one output, from the elements reduced into it
    /// (in the view's row-major order over the reduced dims).
    pub reference: fn(&[f64]) -> f64,
    /// Largest accepted |ours - reference| for one output: (elements,
    /// reference value, output dtype).
    pub tolerance: fn(&[f64], f64, DType) -> f64,
    /// The dtype of the result for an input dtype, as torch gives it; `None`
    /// where torch refuses the dtype (the case is skipped, not failed).
    pub out_dtype: fn(DType) -> Option<DType>,
    /// The op takes exactly one dim (argmax, max_dim): cases reducing more
    /// are skipped.
    pub single_dim: bool,
    /// For ops that also return indices (max_dim): the reference index.
    pub indices: Option<fn(&[f64]) -> f64>,
}

/// Every op the benches know, wired into the library or not yet.
pub const OPS: &[OpSpec] = &[
    spec("sum", sum, sum_tol, sum_out),
    spec("mean", mean, mean_tol, float_only),
    spec("prod", prod, prod_tol, sum_out),
    spec("nansum", nansum, sum_tol, sum_out),
    spec("amax", amax, exact, same),
    spec("amin", amin, exact, same),
    spec("any", any, exact, bool_out),
    spec("all", all, exact, bool_out),
    OpSpec {
        single_dim: true,
        ..spec("argmax", argmax, exact, index_out)
    },
    OpSpec {
        single_dim: true,
        ..spec("argmin", argmin, exact, index_out)
    },
    OpSpec {
        single_dim: true,
        indices: Some(argmax),
        ..spec("max_dim", amax, exact, same)
    },
    spec("var", var, var_tol, float_only),
    spec("std", std, std_tol, float_only),
    spec("norm", norm2, norm_tol, float_only),
    spec("logsumexp", logsumexp, logsumexp_tol, float_out),
];

const fn spec(
    name: &'static str,
    reference: fn(&[f64]) -> f64,
    tolerance: fn(&[f64], f64, DType) -> f64,
    out_dtype: fn(DType) -> Option<DType>,
) -> OpSpec {
    OpSpec {
        name,
        reference,
        tolerance,
        out_dtype,
        single_dim: false,
        indices: None,
    }
}

/// The spec of `name`, if the benches know the op.
pub fn find(name: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|s| s.name == name)
}

// ---- result dtypes, as torch gives them ----

fn sum_out(d: DType) -> Option<DType> {
    tensor_reduce::reduce::ReduceOp::Sum
        .output_dtype(d, None)
        .ok()
}
fn same(d: DType) -> Option<DType> {
    Some(d)
}
fn float_only(d: DType) -> Option<DType> {
    d.is_floating_point().then_some(d)
}
/// torch promotes integer inputs of logsumexp to the default float dtype.
fn float_out(d: DType) -> Option<DType> {
    Some(if d.is_floating_point() { d } else { DType::F32 })
}
/// torch.any/all return uint8 for uint8 input, bool otherwise.
fn bool_out(d: DType) -> Option<DType> {
    Some(if d == DType::U8 {
        DType::U8
    } else {
        DType::Bool
    })
}
fn index_out(_: DType) -> Option<DType> {
    Some(DType::I64)
}

// ---- references ----

/// Neumaier's compensated sum: the reference must be more accurate than the
/// f64 sums it checks.
pub fn sum(x: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &v in x {
        let t = s + v;
        c += if s.abs() >= v.abs() {
            (s - t) + v
        } else {
            (v - t) + s
        };
        s = t;
    }
    s + c
}

pub fn mean(x: &[f64]) -> f64 {
    sum(x) / x.len() as f64
}

pub fn prod(x: &[f64]) -> f64 {
    x.iter().product()
}

pub fn nansum(x: &[f64]) -> f64 {
    let kept: Vec<f64> = x.iter().copied().filter(|v| !v.is_nan()).collect();
    sum(&kept)
}

/// NaN propagates, as in torch.amax.
pub fn amax(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::NEG_INFINITY, |m, v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    })
}

pub fn amin(x: &[f64]) -> f64 {
    -amax(&x.iter().map(|v| -v).collect::<Vec<_>>())
}

/// 1 when any element is non-zero (NaN counts as non-zero), else 0.
pub fn any(x: &[f64]) -> f64 {
    f64::from(u8::from(x.iter().any(|&v| v != 0.0)))
}

pub fn all(x: &[f64]) -> f64 {
    f64::from(u8::from(x.iter().all(|&v| v != 0.0)))
}

/// The first index of the largest element; a NaN counts as largest (torch).
pub fn argmax(x: &[f64]) -> f64 {
    first_index(x, |v, best| v > best)
}

/// The first index of the smallest element; a NaN counts as smallest (torch).
pub fn argmin(x: &[f64]) -> f64 {
    first_index(x, |v, best| v < best)
}

fn first_index(x: &[f64], better: fn(f64, f64) -> bool) -> f64 {
    if let Some(i) = x.iter().position(|v| v.is_nan()) {
        return i as f64;
    }
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if better(v, x[best]) {
            best = i;
        }
    }
    best as f64
}

/// Variance with Bessel's correction (correction = 1), two-pass; NaN where
/// there are fewer than two elements, as torch gives.
pub fn var(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    if n <= 1.0 {
        return f64::NAN;
    }
    let m = mean(x);
    sum(&x.iter().map(|v| (v - m) * (v - m)).collect::<Vec<_>>()) / (n - 1.0)
}

pub fn std(x: &[f64]) -> f64 {
    var(x).sqrt()
}

/// The 2-norm.
pub fn norm2(x: &[f64]) -> f64 {
    sum(&x.iter().map(|v| v * v).collect::<Vec<_>>()).sqrt()
}

pub fn logsumexp(x: &[f64]) -> f64 {
    let m = amax(x);
    if !m.is_finite() {
        return m;
    }
    m + sum(&x.iter().map(|v| (v - m).exp()).collect::<Vec<_>>()).ln()
}

// ---- tolerances ----

/// Largest accepted |ours - reference| for an output summing `n` elements
/// whose absolute values add up to `abs_sum`, returned in dtype `out`.
///
/// Pairwise summation in the accumulator type errs by at most about
/// `eps * log2(n) * abs_sum`; backends that add runs sequentially at the
/// leaves stay within a small multiple of that on randn data (the partial
/// sums random-walk), hence the factor 4. Rounding the result to `out` adds
/// half an ulp of the result, and for 16-bit outputs one subnormal step.
pub fn tolerance(n: usize, abs_sum: f64, reference: f64, out: DType) -> f64 {
    let depth = (n.max(2) as f64).log2().ceil() + 1.0;
    let acc = 4.0 * acc_eps(out) * depth * abs_sum;
    rounded(acc, reference, out)
}

/// Half an ulp of the accumulator type of `out`.
fn acc_eps(out: DType) -> f64 {
    match out.accumulator() {
        DType::F64 => f64::EPSILON / 2.0,
        DType::F32 => f32::EPSILON as f64 / 2.0,
        // Integer accumulation is exact.
        _ => 0.0,
    }
}

/// `acc` plus the rounding of the result to `out`.
fn rounded(acc: f64, reference: f64, out: DType) -> f64 {
    let (out_eps, out_tiny) = match out {
        DType::F16 => (2f64.powi(-11), 2f64.powi(-24)),
        DType::BF16 => (2f64.powi(-8), 2f64.powi(-133)),
        DType::F32 => (2f64.powi(-24), 0.0),
        DType::F64 => (2f64.powi(-53), 0.0),
        _ => (0.0, 0.0),
    };
    acc + out_eps * (reference.abs() + acc) * 1.001 + out_tiny
}

fn abs_sum(x: &[f64]) -> f64 {
    x.iter().map(|v| v.abs()).sum()
}

fn sum_tol(x: &[f64], r: f64, out: DType) -> f64 {
    tolerance(x.len(), abs_sum(x), r, out)
}

/// The sum's error scaled by 1/n, plus the division's rounding.
fn mean_tol(x: &[f64], r: f64, out: DType) -> f64 {
    let n = x.len().max(1) as f64;
    tolerance(x.len(), abs_sum(x) / n, r, out) + acc_eps(out) * r.abs()
}

/// Each multiplication rounds relatively; products that leave the
/// accumulator's normal range lose that guarantee, hence the absolute floor
/// a few binades above its smallest normal.
fn prod_tol(x: &[f64], r: f64, out: DType) -> f64 {
    if out.accumulator() == DType::I64 {
        return 0.0;
    }
    let floor = match out.accumulator() {
        DType::F64 => f64::MIN_POSITIVE * 2f64.powi(24),
        _ => f32::MIN_POSITIVE as f64 * 2f64.powi(24),
    };
    rounded(
        2.0 * acc_eps(out) * x.len() as f64 * r.abs() + floor,
        r,
        out,
    )
}

/// The result is one of the inputs (or a count or index): no rounding at all.
fn exact(_: &[f64], _: f64, _: DType) -> f64 {
    0.0
}

/// Sums of squares err like sums of their absolute values; the variance's
/// own mean adds the same again.
fn var_tol(x: &[f64], r: f64, out: DType) -> f64 {
    let n = x.len() as f64;
    let sq: f64 = x.iter().map(|v| v * v).sum();
    tolerance(x.len(), 2.0 * sq / (n - 1.0).max(1.0), r, out)
}

/// d sqrt(v) = dv / (2 sqrt(v)).
fn std_tol(x: &[f64], r: f64, out: DType) -> f64 {
    let v = r * r;
    let dv = var_tol(x, v, out.accumulator());
    rounded(dv / (2.0 * r).max(f64::MIN_POSITIVE).max(dv.sqrt()), r, out)
}

fn norm_tol(x: &[f64], r: f64, out: DType) -> f64 {
    let sq: f64 = x.iter().map(|v| v * v).sum();
    let dsq = tolerance(x.len(), sq, sq, out.accumulator());
    rounded(
        dsq / (2.0 * r).max(f64::MIN_POSITIVE).max(dsq.sqrt()),
        r,
        out,
    )
}

/// The sum of exp(x - max) is at least 1, so its relative error becomes an
/// absolute one through the log; exp itself adds a few ulps per term.
fn logsumexp_tol(x: &[f64], r: f64, out: DType) -> f64 {
    let depth = (x.len().max(2) as f64).log2().ceil() + 1.0;
    rounded(4.0 * acc_eps(out) * (depth + 4.0) * (1.0 + r.abs()), r, out)
}

/// Checks every reference on hand-computed values; the benches run it before
/// anything else, so that a broken reference cannot pass or fail a result.
pub fn self_check() -> Result<(), String> {
    let nan = f64::NAN;
    let cases: [(&str, f64, f64); 20] = [
        ("sum", sum(&[1.0, 2.0, 3.5]), 6.5),
        // Compensation keeps the 1.0 that a plain f64 sum loses.
        ("sum", sum(&[1e16, 1.0, -1e16]), 1.0),
        ("mean", mean(&[1.0, 2.0, 6.0]), 3.0),
        ("prod", prod(&[2.0, -3.0, 0.5]), -3.0),
        ("nansum", nansum(&[1.0, nan, 2.0]), 3.0),
        ("amax", amax(&[1.0, 5.0, -3.0]), 5.0),
        ("amax", amax(&[1.0, nan, 3.0]), nan),
        ("amin", amin(&[1.0, 5.0, -3.0]), -3.0),
        ("any", any(&[0.0, 0.0, -2.0]), 1.0),
        ("any", any(&[0.0, 0.0]), 0.0),
        ("all", all(&[1.0, 0.0, 2.0]), 0.0),
        ("all", all(&[1.0, nan]), 1.0),
        ("argmax", argmax(&[1.0, 5.0, 5.0]), 1.0),
        ("argmax", argmax(&[9.0, nan, 5.0]), 1.0),
        ("argmin", argmin(&[3.0, 1.0, 1.0]), 1.0),
        ("var", var(&[1.0, 2.0, 3.0, 4.0]), 5.0 / 3.0),
        ("var", var(&[7.0]), nan),
        ("std", std(&[2.0, 4.0]), 2f64.sqrt()),
        ("norm", norm2(&[3.0, 4.0]), 5.0),
        ("logsumexp", logsumexp(&[0.0, 0.0]), 2f64.ln()),
    ];
    for (name, got, want) in cases {
        let same = (got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-15 * want.abs();
        if !same {
            return Err(format!("reference {name}: got {got}, expected {want}"));
        }
    }
    if logsumexp(&[f64::NEG_INFINITY; 2]) != f64::NEG_INFINITY {
        return Err("reference logsumexp of -inf rows is not -inf".into());
    }
    Ok(())
}
