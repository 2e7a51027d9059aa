//! Property tests: `sum` over random strided views and random dim sets, on
//! every dtype, against an f64 reference computed with ndarray. One body,
//! run on the CPU here and on CUDA on a GPU machine.

mod common;

use common::cases::{case_strategy_within, proptest_config, Case, CaseLimits};
use common::{assert_close, random_values, reference_sum, tensor_of, to_f64, Rng};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device};

/// Larger cases than the family's: sum's reference is cheap, and longer
/// rows reach more of the kernels' paths.
const SUM_LIMITS: CaseLimits = CaseLimits {
    max_rank: 6,
    max_elements: 40_000,
    max_view_elements: 60_000,
};

fn check_case(case: &Case, device: Device) -> Result<(), TestCaseError> {
    let mut rng = Rng(case.seed ^ 0x5EED);
    let n: usize = case.base_shape.iter().product();
    let values = random_values(case.dtype, n, &mut rng);
    let base = tensor_of(case.dtype, &values, &case.base_shape)
        .to_device(device)
        .unwrap();
    let mut reference = ArrayD::from_shape_vec(IxDyn(&case.base_shape), values).unwrap();
    let mut x = base;
    for op in &case.views {
        x = op.apply(&x);
        reference = op.apply_ref(reference);
    }
    // The view itself must read back exactly as ndarray sees it.
    prop_assert_eq!(to_f64(&x), reference.iter().copied().collect::<Vec<_>>());

    let rank = x.dim();
    let wrapped: Vec<usize> = if case.dims.is_empty() {
        (0..rank).collect()
    } else {
        case.dims
            .iter()
            .map(|&d| {
                if d < 0 {
                    (d + rank.max(1) as isize) as usize
                } else {
                    d as usize
                }
            })
            .filter(|&d| d < rank)
            .collect()
    };
    let got = x
        .sum(&case.dims, case.keepdim)
        .map_err(|e| TestCaseError::fail(format!("sum failed: {e}")))?;
    let expected = reference_sum(&reference, &wrapped, case.keepdim);
    let abs = reference_sum(&reference.mapv(f64::abs), &wrapped, case.keepdim);
    prop_assert_eq!(got.shape(), expected.shape());
    prop_assert_eq!(
        got.dtype(),
        ReduceOp::Sum.output_dtype(case.dtype, None).unwrap()
    );
    prop_assert_eq!(got.device(), device);
    let n_red: usize = wrapped.iter().map(|&d| x.shape()[d]).product();
    assert_close(
        &to_f64(&got),
        &expected.iter().copied().collect::<Vec<_>>(),
        &abs.iter().copied().collect::<Vec<_>>(),
        n_red,
        got.dtype(),
        &format!("{case:?}"),
    );
    Ok(())
}

fn run(dtype: DType, device: Device) {
    let config = proptest_config(5000, 1);
    proptest!(config, |(case in case_strategy_within(dtype, SUM_LIMITS))| {
        check_case(&case, device)?;
    });
}

/// One `fn(Device)` per dtype, for `backend_tests!`.
macro_rules! dtype_bodies {
    ($($name:ident => $dtype:ident;)*) => {
        $(fn $name(device: Device) {
            run(DType::$dtype, device)
        })*
    };
}

dtype_bodies! {
    case_f16 => F16;
    case_bf16 => BF16;
    case_f32 => F32;
    case_f64 => F64;
    case_i32 => I32;
    case_i64 => I64;
    case_u8 => U8;
    case_bool => Bool;
}

backend_tests! {
    sum_matches_reference_f16 => case_f16;
    sum_matches_reference_bf16 => case_bf16;
    sum_matches_reference_f32 => case_f32;
    sum_matches_reference_f64 => case_f64;
    sum_matches_reference_i32 => case_i32;
    sum_matches_reference_i64 => case_i64;
    sum_matches_reference_u8 => case_u8;
    sum_matches_reference_bool => case_bool;
}
