//! The CPU's index and pair reductions, mirroring `kernels/ops/index.cuh`:
//! `max(dim)`/`min(dim)` (value and index), `argmax`/`argmin` (the index)
//! and `aminmax` (min and max). PyTorch's `ArgMaxOps`, `ArgMinOps`,
//! `MinMaxReductionOps` and `MinMaxOps`.

use super::ops::{Both, Compute, Index, ReduceOps};

/// A value and its index in the reduced range (`tr::ValueIndex`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ValueIndex<W> {
    pub value: W,
    pub index: i64,
}

/// PyTorch's `GreaterOrNan`: whether `(a, ia)` beats `(b, ib)` for max.
/// NaN beats every number; among equal values and among NaNs the lower
/// index wins, so the result does not depend on the combine order.
#[inline(always)]
fn greater_or_nan<W: Compute>(a: W, b: W, ia: i64, ib: i64) -> bool {
    if a.is_nan() {
        return !b.is_nan() || ia < ib;
    }
    if a == b {
        ia < ib
    } else {
        a > b
    }
}

/// PyTorch's `LessOrNan`: [`greater_or_nan`] for min (NaN still wins).
#[inline(always)]
fn less_or_nan<W: Compute>(a: W, b: W, ia: i64, ib: i64) -> bool {
    if a.is_nan() {
        return !b.is_nan() || ia < ib;
    }
    if a == b {
        ia < ib
    } else {
        a < b
    }
}

#[inline(always)]
fn pick<W: Compute>(
    a: ValueIndex<W>,
    b: ValueIndex<W>,
    beats: fn(W, W, i64, i64) -> bool,
) -> ValueIndex<W> {
    if beats(a.value, b.value, a.index, b.index) {
        a
    } else {
        b
    }
}

/// One index functor: `$ident` is the identity's value, `$beats` the
/// comparison, `$project` what the result is made of.
macro_rules! index_ops {
    ($(#[$doc:meta])* $name:ident, $ident:ident, $beats:ident, $out:ty, |$a:ident| $project:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub(crate) struct $name;

        impl<W: Compute> ReduceOps<W> for $name {
            type Acc = ValueIndex<W>;
            type Out = $out;
            #[inline(always)]
            fn identity(&self) -> ValueIndex<W> {
                // Index 0 can only win a tie with the identity's value, which
                // means every element is that value and 0 is the answer.
                ValueIndex { value: W::$ident, index: 0 }
            }
            #[inline(always)]
            fn reduce(&self, acc: ValueIndex<W>, x: W, idx: usize) -> ValueIndex<W> {
                pick(acc, ValueIndex { value: x, index: idx as i64 }, $beats::<W>)
            }
            #[inline(always)]
            fn combine(&self, a: ValueIndex<W>, b: ValueIndex<W>) -> ValueIndex<W> {
                pick(a, b, $beats::<W>)
            }
            #[inline(always)]
            fn project(&self, $a: ValueIndex<W>) -> $out {
                $project
            }
        }
    };
}

index_ops!(
    /// `tr::MaxDimOps`: `torch.max(x, dim)`, (value, index).
    MaxDimOps, LOWEST, greater_or_nan, Both<W, Index>, |a| Both(a.value, Index(a.index))
);
index_ops!(
    /// `tr::MinDimOps`: `torch.min(x, dim)`, (value, index).
    MinDimOps, HIGHEST, less_or_nan, Both<W, Index>, |a| Both(a.value, Index(a.index))
);
index_ops!(
    /// `tr::ArgMaxOps`.
    ArgMaxOps, LOWEST, greater_or_nan, Index, |a| Index(a.index)
);
index_ops!(
    /// `tr::ArgMinOps`.
    ArgMinOps, HIGHEST, less_or_nan, Index, |a| Index(a.index)
);

/// `tr::MinMaxOps`: `torch.aminmax`, (min, max) with NaN propagating to
/// both (PyTorch's `MinMaxOps`, the min and max of `MinNanFunctor` and
/// `MaxNanFunctor`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MinMaxOps;

#[inline(always)]
fn nan_or<W: Compute>(a: W, b: W, a_wins: bool) -> W {
    if a.is_nan() || a_wins {
        a
    } else {
        b
    }
}

impl<W: Compute> ReduceOps<W> for MinMaxOps {
    type Acc = (W, W);
    type Out = Both<W, W>;
    #[inline(always)]
    fn identity(&self) -> (W, W) {
        (W::HIGHEST, W::LOWEST)
    }
    #[inline(always)]
    fn reduce(&self, acc: (W, W), x: W, _idx: usize) -> (W, W) {
        ReduceOps::<W>::combine(self, acc, (x, x))
    }
    #[inline(always)]
    fn combine(&self, a: (W, W), b: (W, W)) -> (W, W) {
        (nan_or(a.0, b.0, a.0 < b.0), nan_or(a.1, b.1, a.1 > b.1))
    }
    #[inline(always)]
    fn project(&self, a: (W, W)) -> Both<W, W> {
        Both(a.0, a.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vi(value: f32, index: i64) -> ValueIndex<f32> {
        ValueIndex { value, index }
    }

    #[test]
    fn nan_is_largest_and_the_lowest_index_wins_ties() {
        let c = |a, b| ReduceOps::<f32>::combine(&ArgMaxOps, a, b);
        assert_eq!(c(vi(1.0, 3), vi(1.0, 2)).index, 2);
        assert_eq!(c(vi(1.0, 2), vi(1.0, 3)).index, 2);
        assert_eq!(c(vi(f32::NAN, 5), vi(f32::INFINITY, 1)).index, 5);
        assert_eq!(c(vi(f32::NAN, 5), vi(f32::NAN, 4)).index, 4);
        let m = |a, b| ReduceOps::<f32>::combine(&ArgMinOps, a, b);
        assert_eq!(m(vi(-1.0, 9), vi(f32::NAN, 7)).index, 7);
        assert_eq!(m(vi(-1.0, 9), vi(-2.0, 10)).index, 10);
    }

    #[test]
    fn aminmax_propagates_nan_to_both() {
        let r = ReduceOps::<f64>::reduce(&MinMaxOps, (1.0, 2.0), f64::NAN, 0);
        assert!(r.0.is_nan() && r.1.is_nan());
        let r = ReduceOps::<f64>::combine(&MinMaxOps, (1.0, 2.0), (-1.0, 1.5));
        assert_eq!(r, (-1.0, 2.0));
    }
}
