//! The CPU's reduction functors: the same names and the same rules as the
//! GPU's in `kernels/ops/*.cuh` (PyTorch's `SharedReduceOps.h` interface,
//! shared by both of its backends): `identity`, `reduce(acc, x, idx)`,
//! `combine(a, b)` and `project(acc)`.
//!
//! Each functor is generic over the compute type `W` (f32, f64 or i64), the
//! type every element is converted to before `reduce` (see
//! [`crate::reduce::Signature::compute`]).

use crate::reduce::OpParams;
use crate::Element;

/// A type the CPU computes in: f32, f64 or i64.
pub(crate) trait Compute:
    Copy + Send + Sync + PartialEq + PartialOrd + std::fmt::Debug + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// Whether this is an integer type, whose [`add`](Compute::add) wraps
    /// and so is associative: sums in it are the same bits in any order.
    const IS_INTEGER: bool;
    /// The identity of max: -inf for floats, the minimum for integers.
    const LOWEST: Self;
    /// The identity of min.
    const HIGHEST: Self;
    /// Converts an input element (torch's cast to the compute type).
    fn from_elem<T: Element>(x: T) -> Self;
    /// A per-call parameter, already rounded to this type's precision.
    fn from_param(v: f64) -> Self;
    /// Converts to an output element.
    fn cast<O: Element>(self) -> O;
    /// `+`: IEEE for floats, wrapping for integers (as the GPU's unsigned add).
    fn add(self, o: Self) -> Self;
    /// `*`: IEEE for floats, wrapping for integers.
    fn mul(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
}

macro_rules! float_compute {
    ($t:ty, $to:ident, $from:ident) => {
        impl Compute for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const IS_INTEGER: bool = false;
            const LOWEST: $t = <$t>::NEG_INFINITY;
            const HIGHEST: $t = <$t>::INFINITY;
            #[inline(always)]
            fn from_elem<T: Element>(x: T) -> $t {
                x.$to()
            }
            #[inline(always)]
            fn from_param(v: f64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn cast<O: Element>(self) -> O {
                O::$from(self)
            }
            #[inline(always)]
            fn add(self, o: $t) -> $t {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: $t) -> $t {
                self * o
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
float_compute!(f32, to_f32, from_f32);
float_compute!(f64, to_f64, from_f64);

impl Compute for i64 {
    const ZERO: i64 = 0;
    const ONE: i64 = 1;
    const IS_INTEGER: bool = true;
    const LOWEST: i64 = i64::MIN;
    const HIGHEST: i64 = i64::MAX;
    #[inline(always)]
    fn from_elem<T: Element>(x: T) -> i64 {
        x.to_i64()
    }
    #[inline(always)]
    fn from_param(v: f64) -> i64 {
        v as i64
    }
    #[inline(always)]
    fn cast<O: Element>(self) -> O {
        O::from_i64(self)
    }
    #[inline(always)]
    fn add(self, o: i64) -> i64 {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn mul(self, o: i64) -> i64 {
        self.wrapping_mul(o)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
}

/// The compute types var, the norms and logsumexp run in: f32 and f64.
pub(crate) trait Float:
    Compute
    + super::exp::ExpNonPositive
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    fn from_i32(n: i32) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
}

macro_rules! float_ops {
    ($t:ty) => {
        impl Float for $t {
            #[inline(always)]
            fn from_i32(n: i32) -> $t {
                n as $t
            }
            #[inline(always)]
            fn exp(self) -> $t {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> $t {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn powf(self, p: $t) -> $t {
                <$t>::powf(self, p)
            }
        }
    };
}
float_ops!(f32);
float_ops!(f64);

/// What `project` produces for one output position, written to the
/// result's dtype (and, for the ops with two outputs, to the second's).
pub(crate) trait Projected: Copy + Send + Sync + 'static {
    /// The value, converted to the output dtype.
    fn cast<O: Element>(self) -> O;
    /// The second output's value, converted to its dtype. Only the ops with
    /// a second output ([`crate::reduce::Signature::second_output`]) are
    /// asked for it; for the others it is the first.
    #[inline(always)]
    fn cast_second<O: Element>(self) -> O {
        self.cast()
    }
}

/// An index (argmax, argmin): an i64 output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Index(pub i64);

impl Projected for Index {
    #[inline(always)]
    fn cast<O: Element>(self) -> O {
        O::from_i64(self.0)
    }
}

/// Two results of one accumulator, one per output: (value, index),
/// (min, max), (var, mean).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Both<A, B>(pub A, pub B);

impl<A: Projected, B: Projected> Projected for Both<A, B> {
    #[inline(always)]
    fn cast<O: Element>(self) -> O {
        self.0.cast()
    }
    #[inline(always)]
    fn cast_second<O: Element>(self) -> O {
        self.1.cast()
    }
}

impl<W: Compute> Projected for W {
    #[inline(always)]
    fn cast<O: Element>(self) -> O {
        Compute::cast(self)
    }
}

/// A truth value (any, all): 0 or 1 in the output dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Truth(pub bool);

impl Projected for Truth {
    #[inline(always)]
    fn cast<O: Element>(self) -> O {
        O::from_i64(self.0 as i64)
    }
}

/// PyTorch's `ops_t` on the CPU. `Acc` is `arg_t`.
pub(crate) trait ReduceOps<W: Compute>: Copy + Send + Sync {
    type Acc: Copy + Send + Sync;
    type Out: Projected;
    /// Whether `reduce` is a wrapping integer add of the input to an
    /// accumulator of the compute type (`Acc` is `W`): then inputs may be
    /// added among themselves first, in any order, and the total folded
    /// once, with the same bits (the GPU's `ByteSum` rule, here for any
    /// integer input).
    const SUMS_INTEGERS: bool = false;
    fn identity(&self) -> Self::Acc;
    /// Folds `x`, the element at index `idx` of the reduced range.
    fn reduce(&self, acc: Self::Acc, x: W, idx: usize) -> Self::Acc;
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn project(&self, a: Self::Acc) -> Self::Out;
    /// The fold of the contiguous run `x` (reduce indices from `first`,
    /// widened 8 at a time by `widen8` and one by one by `widen`) in one
    /// step, for an op with a faster way through a run than element by
    /// element: the index ops (whose pair is the same in any order, the
    /// GPU's `kAnyOrder`), Welford's (one reciprocal for 8 lanes) and
    /// logsumexp's (blocks: the maximum, then the terms by a vectorized
    /// `exp`). The caller combines it into its first lane. Its bits may
    /// differ from the element-by-element fold's but depend on the run
    /// alone, so the result stays the same whatever the thread count. `None`, every
    /// other op's default, folds the run element by element.
    #[inline(always)]
    fn fold_run<T: Copy>(
        &self,
        x: &[T],
        first: usize,
        widen8: impl Fn(&[T; 8]) -> [W; 8],
        widen: impl Fn(T) -> W,
    ) -> Option<Self::Acc> {
        let _ = (x, first, widen8, widen);
        None
    }
    /// Whether the column leaves of the pairwise tree over rows fold
    /// through [`fold_column_leaf`](Self::fold_column_leaf) rather than
    /// walking their rows with `reduce`.
    const FOLDS_COLUMN_LEAVES: bool = false;
    /// Sets `acc[j]` to the fold of column `j` of rows `lo..hi` (`row(k)`
    /// is row `k`'s piece of a column tile, at least `acc.len()` elements,
    /// widened 8 at a time by `widen8` and one by one by `widen`), for an
    /// op with a faster way down a leaf than row by row: logsumexp's
    /// (blocks of rows: the columns' maxima, then their terms by a
    /// vectorized `exp`). Its bits may differ from the row-by-row fold's
    /// but depend on the column's elements and `lo..hi` alone, never on
    /// the tile's width or the column's place in it, so the result stays
    /// the same whatever the thread count. The default is the row-by-row
    /// fold.
    #[inline(always)]
    fn fold_column_leaf<'a, T: Copy + 'a>(
        &self,
        row: impl Fn(usize) -> &'a [T],
        lo: usize,
        hi: usize,
        widen8: impl Fn(&[T; 8]) -> [W; 8],
        widen: impl Fn(T) -> W,
        acc: &mut [Self::Acc],
    ) {
        let _ = widen8;
        fold_column_leaf_by_rows(self, row, lo, hi, widen, acc);
    }
    /// Whether short rows end to end fold [`ROWS_SIDE_BY_SIDE`] at a time
    /// through [`fold_row_group`](Self::fold_row_group) rather than
    /// through each row's lanes.
    const FOLDS_ROW_GROUPS: bool = false;
    /// Sets `out[r]` to the fold of row `r` of the [`ROWS_SIDE_BY_SIDE`]
    /// rows of `n` elements end to end from the start of `x` (which may
    /// hold more; reduce indices from 0), for an op with a faster way
    /// across rows side by side than through each row's lanes: the index
    /// ops' (each row's best value and its position as selects, a vector
    /// across the rows). `N` is `n` where the caller knows it at compile
    /// time, else 0. The default folds each row by `reduce`, element by
    /// element.
    #[inline(always)]
    fn fold_row_group<const N: usize, T: Copy>(
        &self,
        x: &[T],
        n: usize,
        widen8: impl Fn(&[T; 8]) -> [W; 8],
        widen: impl Fn(T) -> W,
        out: &mut [Self::Acc; ROWS_SIDE_BY_SIDE],
    ) {
        let _ = widen8;
        for (o, row) in out.iter_mut().zip(x.chunks_exact(n)) {
            *o = row
                .iter()
                .enumerate()
                .fold(self.identity(), |a, (i, &v)| self.reduce(a, widen(v), i));
        }
    }
}

/// Rows [`ReduceOps::fold_row_group`] folds side by side: 8 rows of f32
/// are one AVX2 register a step along them.
pub(crate) const ROWS_SIDE_BY_SIDE: usize = 8;

/// The row-by-row fold of a column leaf, [`ReduceOps::fold_column_leaf`]'s
/// default: `acc[j]` from the identity, through `reduce` of each row's
/// element `j` in order.
#[inline(always)]
pub(crate) fn fold_column_leaf_by_rows<'a, T: Copy + 'a, W: Compute, R: ReduceOps<W>>(
    op: &R,
    row: impl Fn(usize) -> &'a [T],
    lo: usize,
    hi: usize,
    widen: impl Fn(T) -> W,
    acc: &mut [R::Acc],
) {
    acc.fill(op.identity());
    for k in lo..hi {
        for (a, &x) in acc.iter_mut().zip(row(k)) {
            *a = op.reduce(*a, widen(x), k);
        }
    }
}

/// `tr::SumOps`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SumOps;

impl<W: Compute> ReduceOps<W> for SumOps {
    type Acc = W;
    type Out = W;
    const SUMS_INTEGERS: bool = W::IS_INTEGER;
    #[inline(always)]
    fn identity(&self) -> W {
        W::ZERO
    }
    #[inline(always)]
    fn reduce(&self, acc: W, x: W, _idx: usize) -> W {
        acc.add(x)
    }
    #[inline(always)]
    fn combine(&self, a: W, b: W) -> W {
        a.add(b)
    }
    #[inline(always)]
    fn project(&self, a: W) -> W {
        a
    }
}

/// `tr::NanSumOps`: NaN counts as 0.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NanSumOps;

impl<W: Compute> ReduceOps<W> for NanSumOps {
    type Acc = W;
    type Out = W;
    // An integer is never NaN: its nansum is its sum.
    const SUMS_INTEGERS: bool = W::IS_INTEGER;
    #[inline(always)]
    fn identity(&self) -> W {
        W::ZERO
    }
    #[inline(always)]
    fn reduce(&self, acc: W, x: W, _idx: usize) -> W {
        if x.is_nan() {
            acc
        } else {
            acc.add(x)
        }
    }
    #[inline(always)]
    fn combine(&self, a: W, b: W) -> W {
        a.add(b)
    }
    #[inline(always)]
    fn project(&self, a: W) -> W {
        a
    }
}

/// `tr::MeanOps`: a sum times `factor = outputs / inputs`, the factor
/// rounded to the compute type as PyTorch's `factor_t`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MeanOps<W> {
    pub factor: W,
}

impl<W: Compute> MeanOps<W> {
    pub(crate) fn new(params: OpParams) -> Self {
        MeanOps {
            factor: W::from_param(params.values[0]),
        }
    }
}

impl<W: Compute> ReduceOps<W> for MeanOps<W> {
    type Acc = W;
    type Out = W;
    #[inline(always)]
    fn identity(&self) -> W {
        W::ZERO
    }
    #[inline(always)]
    fn reduce(&self, acc: W, x: W, _idx: usize) -> W {
        acc.add(x)
    }
    #[inline(always)]
    fn combine(&self, a: W, b: W) -> W {
        a.add(b)
    }
    #[inline(always)]
    fn project(&self, a: W) -> W {
        a.mul(self.factor)
    }
}

/// `tr::ProdOps`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProdOps;

impl<W: Compute> ReduceOps<W> for ProdOps {
    type Acc = W;
    type Out = W;
    #[inline(always)]
    fn identity(&self) -> W {
        W::ONE
    }
    #[inline(always)]
    fn reduce(&self, acc: W, x: W, _idx: usize) -> W {
        acc.mul(x)
    }
    #[inline(always)]
    fn combine(&self, a: W, b: W) -> W {
        a.mul(b)
    }
    #[inline(always)]
    fn project(&self, a: W) -> W {
        a
    }
}

/// `tr::MaxOps`: a NaN on either side wins (PyTorch's `MaxNanFunctor`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MaxOps;

impl<W: Compute> ReduceOps<W> for MaxOps {
    type Acc = W;
    type Out = W;
    #[inline(always)]
    fn identity(&self) -> W {
        W::LOWEST
    }
    #[inline(always)]
    fn reduce(&self, acc: W, x: W, _idx: usize) -> W {
        ReduceOps::<W>::combine(self, acc, x)
    }
    #[inline(always)]
    fn combine(&self, a: W, b: W) -> W {
        if a.is_nan() || a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn project(&self, a: W) -> W {
        a
    }
}

/// `tr::MinOps`: a NaN on either side wins.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MinOps;

impl<W: Compute> ReduceOps<W> for MinOps {
    type Acc = W;
    type Out = W;
    #[inline(always)]
    fn identity(&self) -> W {
        W::HIGHEST
    }
    #[inline(always)]
    fn reduce(&self, acc: W, x: W, _idx: usize) -> W {
        ReduceOps::<W>::combine(self, acc, x)
    }
    #[inline(always)]
    fn combine(&self, a: W, b: W) -> W {
        if a.is_nan() || a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn project(&self, a: W) -> W {
        a
    }
}

/// `tr::AnyOps`: an element is true when it is not zero (NaN included).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AnyOps;

impl<W: Compute> ReduceOps<W> for AnyOps {
    type Acc = bool;
    type Out = Truth;
    #[inline(always)]
    fn identity(&self) -> bool {
        false
    }
    #[inline(always)]
    fn reduce(&self, acc: bool, x: W, _idx: usize) -> bool {
        acc | (x != W::ZERO)
    }
    #[inline(always)]
    fn combine(&self, a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn project(&self, a: bool) -> Truth {
        Truth(a)
    }
}

/// `tr::AllOps`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AllOps;

impl<W: Compute> ReduceOps<W> for AllOps {
    type Acc = bool;
    type Out = Truth;
    #[inline(always)]
    fn identity(&self) -> bool {
        true
    }
    #[inline(always)]
    fn reduce(&self, acc: bool, x: W, _idx: usize) -> bool {
        acc & (x != W::ZERO)
    }
    #[inline(always)]
    fn combine(&self, a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn project(&self, a: bool) -> Truth {
        Truth(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_and_min_propagate_nan_from_either_side() {
        let n = f32::NAN;
        assert!(ReduceOps::<f32>::combine(&MaxOps, n, 1.0).is_nan());
        assert!(ReduceOps::<f32>::combine(&MaxOps, 1.0, n).is_nan());
        assert!(ReduceOps::<f32>::combine(&MinOps, 1.0, n).is_nan());
        assert_eq!(ReduceOps::<f32>::combine(&MaxOps, -1.0, 2.0), 2.0);
        assert_eq!(ReduceOps::<i64>::identity(&MinOps), i64::MAX);
    }

    #[test]
    fn truth_tests_count_nan_and_fractions_as_true() {
        assert!(ReduceOps::<f32>::reduce(&AnyOps, false, f32::NAN, 0));
        assert!(ReduceOps::<f32>::reduce(&AnyOps, false, 0.5, 0));
        assert!(!ReduceOps::<f32>::reduce(&AllOps, true, -0.0, 0));
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(ReduceOps::<i64>::combine(&SumOps, i64::MAX, 1), i64::MIN);
        assert_eq!(ReduceOps::<i64>::combine(&ProdOps, 1 << 62, 4), 0);
    }

    #[test]
    fn nansum_skips_nan_and_sum_starts_at_positive_zero() {
        assert_eq!(ReduceOps::<f64>::reduce(&NanSumOps, 1.0, f64::NAN, 0), 1.0);
        let z = ReduceOps::<f32>::reduce(&SumOps, ReduceOps::<f32>::identity(&SumOps), -0.0, 0);
        assert!(z == 0.0 && z.is_sign_positive());
    }
}
