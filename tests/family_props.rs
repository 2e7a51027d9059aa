//! Property tests of the value reductions (`prod`, `nansum`, `mean`,
//! `amax`, `amin`, `any`, `all`) over random strided views (permuted,
//! stepped, broadcast, offset, 0-size and 0-d), random dim sets and keepdim,
//! on every dtype each op accepts, against an f64 (or exact integer) fold
//! written here over ndarray's view of the same data. One body per op and
//! dtype, run on the CPU here and on CUDA on a GPU machine.

mod common;

use common::cases::{case_strategy, exact_sum, proptest_config, reference, wrapped_dims, Case};
use common::{random_values, round_to, tensor_of, to_f64, Rng};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Error};

/// Input values suited to the op: exact in the dtype, with NaN where it
/// matters, zeros for the truth tests, and for `prod` mostly ±1 with rare
/// powers of two, so that every product is exact in the accumulator and the
/// comparison can be exact too.
fn values_for(op: ReduceOp, dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    let mut v = random_values(dtype, n, rng);
    let float = dtype.is_floating_point();
    for x in v.iter_mut() {
        match op {
            ReduceOp::Prod => {
                let u = rng.next_u64();
                let sign = if dtype == DType::U8 || dtype == DType::Bool || u & 1 == 0 {
                    1.0
                } else {
                    -1.0
                };
                *x = match (u >> 1) % 512 {
                    0 => 0.0,
                    1 | 2 => sign * 2.0,
                    3 | 4 if float => sign * 0.5,
                    _ => sign,
                };
                if dtype == DType::Bool {
                    *x = (*x != 0.0) as u8 as f64;
                }
            }
            ReduceOp::NanSum | ReduceOp::AMax | ReduceOp::AMin | ReduceOp::Any | ReduceOp::All
                if float && rng.chance(0.02) =>
            {
                *x = f64::NAN
            }
            ReduceOp::Any if rng.chance(0.9) => *x = 0.0,
            ReduceOp::All if rng.chance(0.02) => *x = 0.0,
            ReduceOp::Mean if float && rng.chance(0.002) => *x = f64::NAN,
            _ => {}
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

fn nan_max(v: &[f64], larger: bool) -> f64 {
    v.iter().fold(
        if larger {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        },
        |a, &b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if larger {
                a.max(b)
            } else {
                a.min(b)
            }
        },
    )
}

/// Wrapping i64 product, as torch's integer prod.
fn int_prod(v: &[f64]) -> f64 {
    v.iter().fold(1i64, |a, &b| a.wrapping_mul(b as i64)) as f64
}

fn check_case(op: ReduceOp, case: &Case, device: Device) -> Result<(), TestCaseError> {
    let mut rng = Rng(case.seed ^ 0xFA11);
    let n: usize = case.base_shape.iter().product();
    let values = values_for(op, case.dtype, n, &mut rng);
    let base = tensor_of(case.dtype, &values, &case.base_shape)
        .to_device(device)
        .unwrap();
    let mut a = ArrayD::from_shape_vec(IxDyn(&case.base_shape), values).unwrap();
    let mut x = base;
    for v in &case.views {
        x = v.apply(&x);
        a = v.apply_ref(a);
    }
    let rank = x.dim();
    let wrapped = wrapped_dims(&case.dims, rank);
    let result = match op {
        ReduceOp::Prod => x.prod(&case.dims, case.keepdim),
        ReduceOp::NanSum => x.nansum(&case.dims, case.keepdim),
        ReduceOp::Mean => x.mean(&case.dims, case.keepdim),
        ReduceOp::AMax => x.amax(&case.dims, case.keepdim),
        ReduceOp::AMin => x.amin(&case.dims, case.keepdim),
        ReduceOp::Any => x.any(&case.dims, case.keepdim),
        ReduceOp::All => x.all(&case.dims, case.keepdim),
        ReduceOp::Sum => x.sum(&case.dims, case.keepdim),
        op => unreachable!("{op} has its own property tests"),
    };
    let n_red: usize = wrapped.iter().map(|&d| x.shape()[d]).product();
    let expected_dtype = op.output_dtype(case.dtype, None);
    if matches!(op, ReduceOp::AMax | ReduceOp::AMin) && x.numel() == 0 {
        let empty_dim = case.dims.is_empty() || wrapped.iter().any(|&d| x.shape()[d] == 0);
        if empty_dim {
            prop_assert!(
                matches!(result, Err(Error::EmptyReduction { .. })),
                "{case:?}: {result:?}"
            );
            return Ok(());
        }
    }
    let Ok(out_dtype) = expected_dtype else {
        prop_assert!(
            matches!(result, Err(Error::UnsupportedDType { .. })),
            "{case:?}: {result:?}"
        );
        return Ok(());
    };
    let got = result.map_err(|e| TestCaseError::fail(format!("{op} failed: {e}")))?;
    prop_assert_eq!(got.dtype(), out_dtype);
    prop_assert_eq!(got.device(), device);
    let float_out = out_dtype.is_floating_point();
    let (shape, expected) = reference(&a, &wrapped, case.keepdim, |v| match op {
        ReduceOp::Prod if float_out => v.iter().product(),
        ReduceOp::Prod => int_prod(v),
        ReduceOp::NanSum => exact_sum(v.iter().filter(|x| !x.is_nan())),
        ReduceOp::Mean if v.iter().any(|x| x.is_nan()) => f64::NAN,
        ReduceOp::Mean => exact_sum(v) / v.len() as f64,
        ReduceOp::AMax => nan_max(v, true),
        ReduceOp::AMin => nan_max(v, false),
        ReduceOp::Any => v.iter().any(|&x| x != 0.0) as u8 as f64,
        ReduceOp::All => v.iter().all(|&x| x != 0.0) as u8 as f64,
        ReduceOp::Sum => exact_sum(v),
        op => unreachable!("{op} has its own property tests"),
    });
    let (_, abs) = reference(&a, &wrapped, case.keepdim, |v| {
        v.iter().filter(|x| !x.is_nan()).map(|x| x.abs()).sum()
    });
    prop_assert_eq!(got.shape(), &shape[..]);
    let got = to_f64(&got);
    // The compute type's epsilon, and how many roundings one result can
    // stack up: a sequential chain per accumulator (at most a CPU leaf lane,
    // 1024 / 8, or a GPU thread's share of a row) and a pairwise tree above.
    let acc = eps(if case.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    });
    let depth = (n_red.min(1024) / 4) as f64 + (n_red.max(2) as f64).log2().ceil() + 2.0;
    for (i, ((&g, &r), &s)) in got.iter().zip(&expected).zip(&abs).enumerate() {
        let r_out = round_to(out_dtype, r);
        let ok = match op {
            // Exact: comparisons, truth values, and products of powers of two.
            ReduceOp::AMax | ReduceOp::AMin | ReduceOp::Any | ReduceOp::All | ReduceOp::Prod => {
                (g.is_nan() && r_out.is_nan()) || g == r_out
            }
            _ if r.is_nan() => g.is_nan(),
            _ => {
                let scale = if op == ReduceOp::Mean {
                    1.0 / n_red.max(1) as f64
                } else {
                    1.0
                };
                let tol = depth * acc * s * scale
                    + (2.0 * acc + eps(out_dtype)) * r.abs()
                    + if out_dtype == DType::F16 {
                        2f64.powi(-24)
                    } else {
                        0.0
                    };
                (g - r).abs() <= tol || g == r_out
            }
        };
        prop_assert!(
            ok,
            "{:?} {}: element {}: got {}, expected {} (n {})",
            case,
            op,
            i,
            g,
            r_out,
            n_red
        );
    }
    Ok(())
}

fn run(op: ReduceOp, dtype: DType, device: Device) {
    let config = proptest_config(400, 4);
    proptest!(config, |(case in case_strategy(dtype))| {
        check_case(op, &case, device)?;
    });
}

/// One body per op, walking every dtype: torch's refusals (an integer
/// `mean`) are checked as typed errors.
macro_rules! op_bodies {
    ($($name:ident => $op:ident;)*) => {
        $(fn $name(device: Device) {
            for dtype in DType::ALL {
                run(ReduceOp::$op, dtype, device)
            }
        })*
    };
}

op_bodies! {
    prod_body => Prod;
    nansum_body => NanSum;
    mean_body => Mean;
    amax_body => AMax;
    amin_body => AMin;
    any_body => Any;
    all_body => All;
}

backend_tests! {
    prod_matches_reference => prod_body;
    nansum_matches_reference => nansum_body;
    mean_matches_reference => mean_body;
    amax_matches_reference => amax_body;
    amin_matches_reference => amin_body;
    any_matches_reference => any_body;
    all_matches_reference => all_body;
}

#[test]
fn reference_folds_follow_the_reduced_slices() {
    // The harness itself: [[1, 2, 3], [4, 5, 6]] over dim 1 and over dim 0.
    let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1., 2., 3., 4., 5., 6.]).unwrap();
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    assert_eq!(reference(&a, &[1], false, sum), (vec![2], vec![6.0, 15.0]));
    assert_eq!(
        reference(&a, &[0], true, sum),
        (vec![1, 3], vec![5.0, 7.0, 9.0])
    );
}
