//! Property tests: `sum` over random strided views and random dim sets, on
//! every dtype, against an f64 reference computed with ndarray. One body,
//! run on the CPU here and on CUDA on a GPU machine.

mod common;

use common::{assert_close, random_values, reference_sum, tensor_of, to_f64, Rng, ViewOp};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device};

/// One random case: a base shape, views applied to it, and a reduction.
#[derive(Debug, Clone)]
struct Case {
    dtype: DType,
    base_shape: Vec<usize>,
    views: Vec<ViewOp>,
    /// Dims as the caller passes them: possibly negative, any order.
    dims: Vec<isize>,
    keepdim: bool,
    seed: u64,
}

/// Elements counting size-0 dims as 1: an empty dim makes numel 0, but
/// partial sums over the other dims (the reference's, and the result) can
/// still be huge.
fn nonempty(shape: &[usize]) -> usize {
    shape.iter().map(|&d| d.max(1)).product()
}

fn case_strategy(dtype: DType) -> impl Strategy<Value = Case> {
    // Sizes mostly small (0 and 1 included), sometimes long enough to reach
    // the multi-accumulator, vectorised and split paths.
    let dim_size = prop_oneof![6 => 0usize..6, 2 => 6usize..40, 1 => 40usize..700];
    (
        proptest::collection::vec(dim_size, 0..=6),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_filter_map(
            "at most 40k elements",
            move |(base_shape, seed, keepdim)| {
                if nonempty(&base_shape) > 40_000 {
                    return None;
                }
                let mut rng = Rng(seed);
                let mut shape = base_shape.clone();
                let mut views = Vec::new();
                for _ in 0..rng.below(4) {
                    if let Some(op) = ViewOp::random(&shape, &mut rng) {
                        let probe = op.apply(
                            &tensor_reduce::Tensor::zeros(&shape, DType::U8, Device::Cpu).unwrap(),
                        );
                        if nonempty(probe.shape()) > 60_000 {
                            continue;
                        }
                        shape = probe.shape().to_vec();
                        views.push(op);
                    }
                }
                let rank = shape.len();
                let mut dims: Vec<isize> = (0..rank as isize).filter(|_| rng.chance(0.5)).collect();
                if rank > 0 && dims.is_empty() && rng.chance(0.5) {
                    dims.push(rng.below(rank) as isize);
                }
                for d in dims.iter_mut() {
                    if rng.chance(0.5) {
                        *d -= rank as isize; // the negative spelling of the same dim
                    }
                }
                for i in (1..dims.len()).rev() {
                    dims.swap(i, rng.below(i + 1));
                }
                Some(Case {
                    dtype,
                    base_shape,
                    views,
                    dims,
                    keepdim,
                    seed,
                })
            },
        )
}

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
    let cases = std::env::var("TENSOR_REDUCE_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(case in case_strategy(dtype))| {
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
