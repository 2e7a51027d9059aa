//! Random reduction cases over strided views (permuted, stepped,
//! broadcast, offset, 0-size and 0-d) with random dim sets and keepdim, and
//! the reference folds over ndarray's view of the same data that the
//! property tests of every op compare against.

use super::{Rng, ViewOp};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use tensor_reduce::{DType, Device, Tensor};

/// One random case: a base shape, views applied to it, and a reduction.
#[derive(Debug, Clone)]
pub struct Case {
    pub dtype: DType,
    pub base_shape: Vec<usize>,
    pub views: Vec<ViewOp>,
    /// Dims as the caller passes them: possibly negative, any order.
    pub dims: Vec<isize>,
    pub keepdim: bool,
    pub seed: u64,
}

/// How big a random case may be.
#[derive(Debug, Clone, Copy)]
pub struct CaseLimits {
    /// Dims of the base tensor.
    pub max_rank: usize,
    /// Elements of the base tensor, counted by [`nonempty`].
    pub max_elements: usize,
    /// Elements of each view, counted by [`nonempty`] (a broadcast makes a
    /// view larger than its base).
    pub max_view_elements: usize,
}

impl CaseLimits {
    /// The family's property tests, whose references fold every output's
    /// slice in f64 or exactly.
    pub const FAMILY: CaseLimits = CaseLimits {
        max_rank: 5,
        max_elements: 20_000,
        max_view_elements: 30_000,
    };
}

/// Elements counting size-0 dims as 1: an empty dim makes numel 0, but
/// partial sums over the other dims (the reference's, and the result) can
/// still be huge.
pub fn nonempty(shape: &[usize]) -> usize {
    shape.iter().map(|&d| d.max(1)).product()
}

/// A property test's config: `default_cases` cases, or where
/// `TENSOR_REDUCE_PROPTEST_CASES` is set, that number over `share` (the
/// family's tests run a body per op, each a share of what `sum`'s runs).
pub fn proptest_config(default_cases: u32, share: u32) -> ProptestConfig {
    let cases = std::env::var("TENSOR_REDUCE_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(default_cases, |n| n / share);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Random cases of `dtype` within [`CaseLimits::FAMILY`].
pub fn case_strategy(dtype: DType) -> impl Strategy<Value = Case> {
    case_strategy_within(dtype, CaseLimits::FAMILY)
}

/// Random cases of `dtype` within `limits`.
pub fn case_strategy_within(dtype: DType, limits: CaseLimits) -> impl Strategy<Value = Case> {
    // Sizes mostly small (0 and 1 included), sometimes long enough to reach
    // the multi-accumulator, vectorised and split paths.
    let dim_size = prop_oneof![6 => 0usize..6, 2 => 6usize..40, 1 => 40usize..700];
    (
        proptest::collection::vec(dim_size, 0..=limits.max_rank),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_filter_map(
            format!("at most {} elements", limits.max_elements),
            move |(base_shape, seed, keepdim)| {
                if nonempty(&base_shape) > limits.max_elements {
                    return None;
                }
                let mut rng = Rng(seed);
                let mut shape = base_shape.clone();
                let mut views = Vec::new();
                for _ in 0..rng.below(4) {
                    if let Some(op) = ViewOp::random(&shape, &mut rng) {
                        let probe =
                            op.apply(&Tensor::zeros(&shape, DType::U8, Device::Cpu).unwrap());
                        if nonempty(probe.shape()) > limits.max_view_elements {
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

/// The dims `case` reduces on a tensor of `rank` dims, wrapped and sorted
/// (`&[]`: every dim).
pub fn wrapped_dims(dims: &[isize], rank: usize) -> Vec<usize> {
    if dims.is_empty() {
        return (0..rank).collect();
    }
    let mut w: Vec<usize> = dims
        .iter()
        .map(|&d| {
            if d < 0 {
                (d + rank as isize) as usize
            } else {
                d as usize
            }
        })
        .collect();
    w.sort_unstable();
    w
}

/// Applies `fold` to the values of each output's reduced slice, in the
/// input's logical order, and shapes the result as torch does.
pub fn reference<F: Fn(&[f64]) -> f64>(
    a: &ArrayD<f64>,
    dims: &[usize],
    keepdim: bool,
    fold: F,
) -> (Vec<usize>, Vec<f64>) {
    let rank = a.ndim();
    let kept: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
    let order: Vec<usize> = kept.iter().chain(dims.iter()).copied().collect();
    let p = a.view().permuted_axes(IxDyn(&order));
    let n_out: usize = kept.iter().map(|&d| a.shape()[d]).product();
    let n_red: usize = dims.iter().map(|&d| a.shape()[d]).product();
    let flat: Vec<f64> = p.iter().copied().collect();
    let out: Vec<f64> = (0..n_out)
        .map(|o| fold(&flat[o * n_red..(o + 1) * n_red]))
        .collect();
    let shape = (0..rank)
        .filter_map(|d| match (dims.contains(&d), keepdim) {
            (false, _) => Some(a.shape()[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    (shape, out)
}

/// Neumaier's compensated sum: close to exact, so the reference's own
/// rounding does not eat into the tolerance even for f64 inputs. With an
/// infinity or NaN among the terms it is the plain sum (the compensation
/// would turn `inf - inf` into NaN).
pub fn exact_sum<'a>(v: impl IntoIterator<Item = &'a f64>) -> f64 {
    let (mut sum, mut comp, mut plain) = (0.0f64, 0.0f64, 0.0f64);
    for &x in v {
        plain += x;
        let t = sum + x;
        comp += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    if plain.is_finite() {
        sum + comp
    } else {
        plain
    }
}
