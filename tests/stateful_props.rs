//! Property tests of the reductions that carry more than one value through
//! the engine: the index reductions (`max_dim`, `min_dim`, `argmax`,
//! `argmin`), `aminmax`, Welford's `var`/`std`/`var_mean`/`std_mean`, the
//! vector norms and `logsumexp`. Random strided views, dim sets and keepdim
//! on every dtype, against folds written here in f64 over ndarray's view of
//! the same data (two-pass variance, first-index arg-extremes, a shifted
//! logsumexp). One body per op, run on the CPU here and on CUDA on a GPU
//! machine.

mod common;

use common::cases::{case_strategy, exact_sum, proptest_config, reference, wrapped_dims, Case};
use common::{random_values, round_to, tensor_of, to_f64, Rng, ViewOp};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Error, Result, Tensor};

/// What a case runs: an op and, for the norms, var and std, its argument.
#[derive(Clone, Copy, Debug)]
enum Call {
    MaxDim,
    MinDim,
    ArgMax,
    ArgMin,
    AMinMax,
    Var(f64),
    Std(f64),
    VarMean(f64),
    StdMean(f64),
    Norm(f64),
    LogSumExp,
}

impl Call {
    fn op(self) -> ReduceOp {
        match self {
            Call::MaxDim => ReduceOp::MaxDim,
            Call::MinDim => ReduceOp::MinDim,
            Call::ArgMax => ReduceOp::ArgMax,
            Call::ArgMin => ReduceOp::ArgMin,
            Call::AMinMax => ReduceOp::AMinMax,
            Call::Var(_) => ReduceOp::Var,
            Call::Std(_) => ReduceOp::Std,
            Call::VarMean(_) => ReduceOp::VarMean,
            Call::StdMean(_) => ReduceOp::StdMean,
            Call::Norm(p) => ReduceOp::Norm(tensor_reduce::reduce::NormKind::of(p)),
            Call::LogSumExp => ReduceOp::LogSumExp,
        }
    }

    fn index_op(self) -> bool {
        matches!(
            self,
            Call::MaxDim | Call::MinDim | Call::ArgMax | Call::ArgMin
        )
    }

    /// The single dim an index op reduces (`None`: argmax's flattened
    /// tensor), from the case's dims.
    fn index_dim(self, case: &Case, rank: usize) -> Option<isize> {
        match (self, case.dims.first()) {
            (_, Some(&d)) => Some(d),
            (Call::ArgMax | Call::ArgMin, None) => None,
            (_, None) => Some(if rank == 0 { 0 } else { -1 }),
        }
    }

    /// Runs the call through the public entry point: every output.
    fn apply(self, x: &Tensor, case: &Case) -> Result<Vec<Tensor>> {
        let (dims, k) = (&case.dims[..], case.keepdim);
        let dim = self.index_dim(case, x.dim());
        let pair = |r: Result<(Tensor, Tensor)>| r.map(|(a, b)| vec![a, b]);
        match self {
            Call::MaxDim => pair(x.max_dim(dim.unwrap(), k)),
            Call::MinDim => pair(x.min_dim(dim.unwrap(), k)),
            Call::ArgMax => x.argmax(dim, k).map(|t| vec![t]),
            Call::ArgMin => x.argmin(dim, k).map(|t| vec![t]),
            Call::AMinMax => pair(x.aminmax(dims, k)),
            Call::Var(c) => x.var(dims, c, k).map(|t| vec![t]),
            Call::Std(c) => x.std(dims, c, k).map(|t| vec![t]),
            Call::VarMean(c) => pair(x.var_mean(dims, c, k)),
            Call::StdMean(c) => pair(x.std_mean(dims, c, k)),
            Call::Norm(p) => x.norm(p, dims, k).map(|t| vec![t]),
            Call::LogSumExp => x.logsumexp(dims, k).map(|t| vec![t]),
        }
    }
}

/// Input values suited to the call: few distinct values for the index ops
/// (so ties are common), NaN and ±inf now and then for the floats.
fn values_for(call: Call, dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    let mut v = random_values(dtype, n, rng);
    let float = dtype.is_floating_point();
    for x in v.iter_mut() {
        if call.index_op() || matches!(call, Call::AMinMax) {
            let u = rng.below(7) as f64;
            *x = match dtype {
                DType::Bool => (u as u64 & 1) as f64,
                DType::U8 => u,
                _ => u - 3.0,
            };
        }
        if float && rng.chance(0.01) {
            *x = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][rng.below(3)];
        }
    }
    v
}

fn eps(d: DType) -> f64 {
    match d {
        DType::F16 => 2f64.powi(-11),
        DType::BF16 => 2f64.powi(-8),
        DType::F32 => 2f64.powi(-24),
        DType::F64 => 2f64.powi(-53),
        _ => 0.0,
    }
}

/// The first index of the extreme of `v` (NaN counting as the extreme), as
/// `(value, index)`.
fn arg_extreme(v: &[f64], larger: bool) -> (f64, f64) {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        let b = v[best];
        if b.is_nan() {
            break;
        }
        if x.is_nan() || (larger && x > b) || (!larger && x < b) {
            best = i;
        }
    }
    (v[best], best as f64)
}

/// NaN-propagating extreme.
fn extreme(v: &[f64], larger: bool) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let init = if larger {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    v.iter()
        .fold(init, |a, &b| if larger { a.max(b) } else { a.min(b) })
}

/// `(var, mean)` by two passes in f64 with compensated sums.
fn two_pass(v: &[f64], correction: f64) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = exact_sum(v) / n;
    let dev: Vec<f64> = v.iter().map(|x| (x - mean) * (x - mean)).collect();
    (exact_sum(&dev) / (n - correction).max(0.0), mean)
}

fn norm(v: &[f64], p: f64) -> f64 {
    let a: Vec<f64> = v.iter().map(|x| x.abs()).collect();
    if p == 0.0 {
        a.iter().filter(|&&x| x != 0.0).count() as f64
    } else if p == f64::INFINITY {
        extreme(&a, true)
    } else if p == f64::NEG_INFINITY {
        extreme(&a, false)
    } else {
        let terms: Vec<f64> = a.iter().map(|x| x.powf(p)).collect();
        exact_sum(&terms).powf(1.0 / p)
    }
}

fn logsumexp(v: &[f64]) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let m = extreme(v, true);
    if m.is_infinite() {
        return m;
    }
    let terms: Vec<f64> = v.iter().map(|x| (x - m).exp()).collect();
    m + exact_sum(&terms).ln()
}

/// How many roundings one result can stack up: a sequential chain per
/// accumulator (at most a CPU leaf lane or a GPU thread's share) and a
/// pairwise tree above.
fn depth(n: usize) -> f64 {
    (n.min(1024) / 4) as f64 + (n.max(2) as f64).log2().ceil() + 4.0
}

/// Whether `g`, a result of `dtype`, is what rounding some value within
/// `tol` of `r` to `dtype` gives. Rounding is monotonic, so that is the
/// range between the roundings of `r ± tol`: a relative `tol` alone would
/// miss the absolute steps of f16's subnormals. An infinite `tol` marks a
/// result the reference cannot pin down (see the Welford mean), and
/// accepts NaN.
fn close(dtype: DType, g: f64, r: f64, tol: f64) -> bool {
    if g.is_nan() {
        return r.is_nan() || tol == f64::INFINITY;
    }
    g == r
        || (g - r).abs() <= tol
        || (round_to(dtype, r - tol) <= g && g <= round_to(dtype, r + tol))
}

fn check_case(call: Call, case: &Case, device: Device) -> std::result::Result<(), TestCaseError> {
    let mut rng = Rng(case.seed ^ 0x57A7E);
    let n: usize = case.base_shape.iter().product();
    let values = values_for(call, case.dtype, n, &mut rng);
    let mut x = tensor_of(case.dtype, &values, &case.base_shape)
        .to_device(device)
        .unwrap();
    let mut a = ArrayD::from_shape_vec(IxDyn(&case.base_shape), values).unwrap();
    for v in &case.views {
        x = v.apply(&x);
        a = v.apply_ref(a);
    }
    let rank = x.dim();
    let op = call.op();
    let result = call.apply(&x, case);

    // The dims the reference folds over, and the output shape's keepdim.
    let (wrapped, keepdim, flat) = if call.index_op() {
        match call.index_dim(case, rank) {
            None => ((0..rank).collect::<Vec<_>>(), false, true),
            Some(d) if rank == 0 => {
                prop_assert!(d == 0 || d == -1);
                (vec![], case.keepdim, false)
            }
            Some(d) => (wrapped_dims(&[d], rank), case.keepdim, false),
        }
    } else {
        (wrapped_dims(&case.dims, rank), case.keepdim, false)
    };
    let n_red: usize = wrapped.iter().map(|&d| x.shape()[d]).product();

    let Ok(out_dtype) = op.output_dtype(case.dtype, None) else {
        prop_assert!(
            matches!(result, Err(Error::UnsupportedDType { .. })),
            "{case:?} {call:?}: {result:?}"
        );
        return Ok(());
    };
    let no_identity = match call {
        Call::Norm(p) => p < 0.0 || p == f64::INFINITY,
        _ => call.index_op() || matches!(call, Call::AMinMax),
    };
    if no_identity && n_red == 0 && (x.numel() == 0 || flat) {
        prop_assert!(
            matches!(result, Err(Error::EmptyReduction { .. })),
            "{case:?} {call:?}: {result:?}"
        );
        return Ok(());
    }
    let outs = result.map_err(|e| TestCaseError::fail(format!("{call:?} failed: {e}")))?;

    // The expected outputs (first, and second where there is one) and each
    // one's tolerance, from the reduced slice's values.
    type Fold = Box<dyn Fn(&[f64]) -> (f64, f64)>;
    let acc = eps(if case.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    });
    let out_eps = eps(out_dtype);
    let (first, second): (Fold, Fold) = match call {
        Call::MaxDim | Call::MinDim => {
            let larger = matches!(call, Call::MaxDim);
            (
                Box::new(move |v| (arg_extreme(v, larger).0, 0.0)),
                Box::new(move |v| (arg_extreme(v, larger).1, 0.0)),
            )
        }
        Call::ArgMax | Call::ArgMin => {
            let larger = matches!(call, Call::ArgMax);
            (
                Box::new(move |v| (arg_extreme(v, larger).1, 0.0)),
                Box::new(|_| (0.0, 0.0)),
            )
        }
        Call::AMinMax => (
            Box::new(|v| (extreme(v, false), 0.0)),
            Box::new(|v| (extreme(v, true), 0.0)),
        ),
        Call::Var(c) | Call::Std(c) | Call::VarMean(c) | Call::StdMean(c) => {
            let sqrt = matches!(call, Call::Std(_) | Call::StdMean(_));
            // The bound of a naive sum of squares: Welford does better, and
            // its stability is tested on its own (`var_is_stable`).
            let var_tol = move |v: &[f64]| {
                let sq: Vec<f64> = v.iter().map(|x| x * x).collect();
                let dof = (v.len() as f64 - c).max(0.0);
                4.0 * depth(v.len()) * acc * exact_sum(&sq) / dof
            };
            (
                Box::new(move |v| {
                    let (var, _) = two_pass(v, c);
                    let tol = var_tol(v) + 2.0 * out_eps * var.abs();
                    if sqrt {
                        // |sqrt(a) - sqrt(b)| <= sqrt(|a - b|).
                        (var.sqrt(), tol.sqrt() + out_eps * var.sqrt())
                    } else {
                        (var, tol)
                    }
                }),
                Box::new(move |v| {
                    let abs: Vec<f64> = v.iter().map(|x| x.abs()).collect();
                    let (_, mean) = two_pass(v, c);
                    // Welford's mean of a slice holding an infinity is NaN
                    // or that infinity, depending on which partial holds it
                    // (inf + (finite - inf)·k); torch's kernel does the same.
                    if v.iter().any(|x| x.is_infinite()) && !mean.is_nan() {
                        return (mean, f64::INFINITY);
                    }
                    let tol = 2.0 * depth(v.len()) * acc * exact_sum(&abs) / v.len() as f64;
                    (mean, tol + 2.0 * out_eps * mean.abs())
                }),
            )
        }
        Call::Norm(p) => (
            Box::new(move |v| {
                let r = norm(v, p);
                let rel = if p == 0.0 || p.is_infinite() {
                    0.0
                } else {
                    (depth(v.len()) + 8.0) * acc * p.abs().max(1.0 / p.abs()) + 2.0 * out_eps
                };
                (r, rel * r.abs())
            }),
            Box::new(|_| (0.0, 0.0)),
        ),
        Call::LogSumExp => (
            Box::new(move |v| {
                let r = logsumexp(v);
                (
                    r,
                    (depth(v.len()) + 8.0) * acc * (1.0 + r.abs()) + 2.0 * out_eps * r.abs(),
                )
            }),
            Box::new(|_| (0.0, 0.0)),
        ),
    };
    let second_dtype = match call {
        Call::MaxDim | Call::MinDim => Some(DType::I64),
        Call::AMinMax | Call::VarMean(_) | Call::StdMean(_) => Some(out_dtype),
        _ => None,
    };
    prop_assert_eq!(outs.len(), 1 + second_dtype.is_some() as usize);
    for (k, (got, fold)) in outs.iter().zip([&first, &second]).enumerate() {
        let dtype = if k == 0 {
            out_dtype
        } else {
            second_dtype.unwrap()
        };
        prop_assert_eq!(got.dtype(), dtype);
        prop_assert_eq!(got.device(), device);
        let (mut shape, expected) = reference(&a, &wrapped, keepdim, |v| fold(v).0);
        let (_, tols) = reference(&a, &wrapped, keepdim, |v| fold(v).1);
        if flat && case.keepdim {
            shape = vec![1; rank];
        }
        prop_assert_eq!(
            got.shape(),
            &shape[..],
            "{:?} {:?} output {}",
            case,
            call,
            k
        );
        for (i, ((g, &r), &tol)) in to_f64(got)
            .into_iter()
            .zip(&expected)
            .zip(&tols)
            .enumerate()
        {
            let r_out = round_to(dtype, r);
            prop_assert!(
                close(dtype, g, r, tol),
                "{:?} {:?} output {}: element {}: got {}, expected {} (tolerance {}, n {})",
                case,
                call,
                k,
                i,
                g,
                r_out,
                tol,
                n_red
            );
        }
    }
    Ok(())
}

fn run(call: Call, dtype: DType, device: Device) {
    let config = proptest_config(240, 4);
    proptest!(config, |(case in case_strategy(dtype))| {
        check_case(call, &case, device)?;
    });
}

/// One body per call, walking every dtype: torch's refusals (an integer
/// `var`, a bool `argmax`) are checked as typed errors.
macro_rules! call_bodies {
    ($($name:ident => [$($call:expr),*];)*) => {
        $(fn $name(device: Device) {
            for call in [$($call),*] {
                for dtype in DType::ALL {
                    run(call, dtype, device)
                }
            }
        })*
    };
}

call_bodies! {
    max_dim_body => [Call::MaxDim, Call::MinDim];
    argmax_body => [Call::ArgMax, Call::ArgMin];
    aminmax_body => [Call::AMinMax];
    var_body => [Call::Var(1.0), Call::Std(0.0), Call::VarMean(2.0), Call::StdMean(0.5)];
    norm_body => [
        Call::Norm(0.0),
        Call::Norm(1.0),
        Call::Norm(2.0),
        Call::Norm(f64::INFINITY),
        Call::Norm(f64::NEG_INFINITY),
        Call::Norm(3.0),
        Call::Norm(0.5),
        Call::Norm(-1.5)
    ];
    logsumexp_body => [Call::LogSumExp];
}

backend_tests! {
    max_dim_and_min_dim_match_reference => max_dim_body;
    argmax_and_argmin_match_reference => argmax_body;
    aminmax_matches_reference => aminmax_body;
    var_std_and_means_match_reference => var_body;
    norms_match_reference => norm_body;
    logsumexp_matches_reference => logsumexp_body;
}

#[test]
fn reference_folds_pick_the_first_extreme() {
    // The harness itself: NaN wins and stops the search; ties keep the
    // first index.
    assert_eq!(arg_extreme(&[1.0, 3.0, 3.0, 2.0], true), (3.0, 1.0));
    assert_eq!(arg_extreme(&[1.0, -3.0, -3.0], false), (-3.0, 1.0));
    let (v, i) = arg_extreme(&[1.0, f64::NAN, 5.0, f64::NAN], true);
    assert!(v.is_nan() && i == 1.0);
    assert_eq!(two_pass(&[1.0, 2.0, 3.0, 4.0], 1.0), (5.0 / 3.0, 2.5));
    assert_eq!(logsumexp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
    assert!((logsumexp(&[0.0, 0.0]) - 2f64.ln()).abs() < 1e-15);
    assert_eq!(norm(&[3.0, -4.0], 2.0), 5.0);
}

#[test]
fn f16_norms_may_round_either_way_among_subnormals() {
    // A p = -1.5 norm of f16 broadcast rows lands near 1.52e-6, a
    // midpoint between two f16 subnormals: f32 accumulation may round it
    // to either, a step far larger than any relative tolerance of it.
    let case = Case {
        dtype: DType::F16,
        base_shape: vec![2, 149],
        views: vec![
            ViewOp::Slice(0, 1, 2, 1),
            ViewOp::Broadcast(0, 2),
            ViewOp::Broadcast(1, 4),
        ],
        dims: vec![-3, 0],
        keepdim: false,
        seed: 13929191866164600099,
    };
    check_case(Call::Norm(-1.5), &case, Device::Cpu).unwrap();
    let one_step = 2f64.powi(-24);
    assert!(close(
        DType::F16,
        25.0 * one_step,
        25.5 * one_step + 1e-9,
        1e-8
    ));
    assert!(!close(
        DType::F16,
        24.0 * one_step,
        25.5 * one_step + 1e-9,
        1e-8
    ));
}
