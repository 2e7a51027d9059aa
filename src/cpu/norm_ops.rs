//! The CPU's vector norms and logsumexp, mirroring `kernels/ops/norm.cuh`
//! and `kernels/ops/logsumexp.cuh`: PyTorch's `NormZeroOps`, `NormOneOps`,
//! `NormTwoOps`, `AbsMaxOps`, `AbsMinOps`, `NormOps`, and a one-pass
//! logsumexp.

use super::element::lane_tree;
use super::ops::{Float, ReduceOps};
use super::prefetch::Prefetch;
use crate::reduce::OpParams;

/// A sum of `term(|x|)` projected by `finish`: the shape every finite-order
/// norm shares.
macro_rules! sum_norm {
    ($(#[$doc:meta])* $name:ident, |$x:ident| $term:expr, |$s:ident, $ops:ident| $finish:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<F> {
            #[allow(dead_code)]
            p: F,
        }

        impl<F: Float> $name<F> {
            pub(crate) fn new(params: OpParams) -> Self {
                $name { p: F::from_param(params.values[0]) }
            }
        }

        impl<F: Float> ReduceOps<F> for $name<F> {
            type Acc = F;
            type Out = F;
            #[inline(always)]
            fn identity(&self) -> F {
                F::ZERO
            }
            #[inline(always)]
            fn reduce(&self, acc: F, $x: F, _idx: usize) -> F {
                #[allow(unused_variables)]
                let $ops = self;
                acc + $term
            }
            #[inline(always)]
            fn combine(&self, a: F, b: F) -> F {
                a + b
            }
            #[inline(always)]
            fn project(&self, $s: F) -> F {
                #[allow(unused_variables)]
                let $ops = self;
                $finish
            }
        }
    };
}

sum_norm!(
    /// `tr::NormZeroOps`: the number of non-zero elements (NaN counts).
    NormZeroOps, |x| if x == F::ZERO { F::ZERO } else { F::ONE }, |s, o| s
);
sum_norm!(
    /// `tr::NormOneOps`: `Σ|x|`.
    NormOneOps, |x| x.abs(), |s, o| s
);
sum_norm!(
    /// `tr::NormTwoOps`: `sqrt(Σx²)`.
    NormTwoOps, |x| x * x, |s, o| s.sqrt()
);
sum_norm!(
    /// `tr::NormOps`: `(Σ|x|^p)^(1/p)` for a general `p`.
    NormOps, |x| x.abs().powf(o.p), |s, o| s.powf(F::ONE / o.p)
);

/// `max` or `min` of `a` and `b` with NaN winning from either side
/// (PyTorch's `max_propagate_nan` / `min_propagate_nan`).
#[inline(always)]
fn propagate_nan<F: Float>(a: F, b: F, a_wins: bool) -> F {
    if a.is_nan() || a_wins {
        a
    } else {
        b
    }
}

/// `tr::AbsMaxOps`: the inf-norm `max|x|`, identity 0.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AbsMaxOps;

impl<F: Float> ReduceOps<F> for AbsMaxOps {
    type Acc = F;
    type Out = F;
    #[inline(always)]
    fn identity(&self) -> F {
        F::ZERO
    }
    #[inline(always)]
    fn reduce(&self, acc: F, x: F, _idx: usize) -> F {
        ReduceOps::<F>::combine(self, acc, x.abs())
    }
    #[inline(always)]
    fn combine(&self, a: F, b: F) -> F {
        propagate_nan(a, b, a > b)
    }
    #[inline(always)]
    fn project(&self, a: F) -> F {
        a
    }
}

/// `tr::AbsMinOps`: the -inf-norm `min|x|`, identity +inf.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AbsMinOps;

impl<F: Float> ReduceOps<F> for AbsMinOps {
    type Acc = F;
    type Out = F;
    #[inline(always)]
    fn identity(&self) -> F {
        F::HIGHEST
    }
    #[inline(always)]
    fn reduce(&self, acc: F, x: F, _idx: usize) -> F {
        ReduceOps::<F>::combine(self, acc, x.abs())
    }
    #[inline(always)]
    fn combine(&self, a: F, b: F) -> F {
        propagate_nan(a, b, a < b)
    }
    #[inline(always)]
    fn project(&self, a: F) -> F {
        a
    }
}

/// `tr::LogSumExpOps`: an online `(m, s)` with `Σ exp(x) = exp(m)·s`, `m`
/// the largest element so far (never NaN: a NaN element makes `s` NaN).
/// Equal maxima add their sums directly, so two infinities of the same sign
/// never meet in `m - m` (which would be NaN).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LogSumExpOps;

impl<F: Float> ReduceOps<F> for LogSumExpOps {
    type Acc = (F, F);
    type Out = F;
    #[inline(always)]
    fn identity(&self) -> (F, F) {
        (F::LOWEST, F::ZERO)
    }
    #[inline(always)]
    fn reduce(&self, (m, s): (F, F), x: F, _idx: usize) -> (F, F) {
        if x > m {
            (x, s * (m - x).exp() + F::ONE)
        } else if x == m {
            (m, s + F::ONE)
        } else {
            // x < m, or x is NaN (which then reaches s).
            (m, s + (x - m).exp())
        }
    }
    #[inline(always)]
    fn combine(&self, (ma, sa): (F, F), (mb, sb): (F, F)) -> (F, F) {
        if ma == mb {
            (ma, sa + sb)
        } else if ma > mb {
            (ma, sa + sb * (mb - ma).exp())
        } else {
            (mb, sb + sa * (ma - mb).exp())
        }
    }
    /// A contiguous run goes in blocks of [`LSE_BLOCK`] elements, each in
    /// two passes from L1: the block's maximum `b` over 8 lanes, then its
    /// terms `exp(x - b)` by [`ExpNonPositive`](super::exp::ExpNonPositive),
    /// a polynomial `exp` the compiler vectorizes; the blocks meet through
    /// `combine`. Folded element by element, with a libm `exp` call and a
    /// branch each, runs trailed torch's CPU (a maximum pass, then a
    /// vectorized `exp` pass over the whole input) 1.1-4x on the 2-core
    /// machine's suite; in blocks they run 2-6.7x faster than that and
    /// lead it 1.7-5.4x. An element equal to its block's maximum adds
    /// exactly 1, as `reduce` does where it equals the running maximum (so
    /// that two infinities never meet in `inf - inf`); a NaN never wins
    /// the maximum and makes the sum NaN. The run's last elements, fewer
    /// than a chunk, fold one by one. Columns keep `reduce`.
    #[inline(always)]
    fn fold_run<T: Copy>(
        &self,
        x: &[T],
        first: usize,
        widen8: impl Fn(&[T; 8]) -> [F; 8],
        widen: impl Fn(T) -> F,
    ) -> Option<(F, F)> {
        let prefetch = Prefetch::for_run::<T>(x.len());
        let mut acc = ReduceOps::<F>::identity(self);
        let whole = x.len() / 8 * 8;
        // The block widened, then its terms: the terms are one plain loop
        // over it, which the compiler vectorizes whole (the same terms
        // computed 8 lanes a chunk came out as a mix of vector and scalar
        // code, 1.5x slower).
        let mut terms = [F::ZERO; LSE_BLOCK];
        for block in x[..whole].chunks(LSE_BLOCK) {
            prefetch.ahead(block);
            let terms = &mut terms[..block.len()];
            let mut top = [F::LOWEST; 8];
            for (c, t) in block.chunks_exact(8).zip(terms.chunks_exact_mut(8)) {
                let v = widen8(c.try_into().expect("chunks of 8"));
                for j in 0..8 {
                    top[j] = if v[j] > top[j] { v[j] } else { top[j] };
                }
                t.copy_from_slice(&v);
            }
            let b = lane_tree(top, |p, q| if q > p { q } else { p });
            for t in terms.iter_mut() {
                *t = if *t == b {
                    F::ONE
                } else {
                    (*t - b).exp_nonpositive()
                };
            }
            let mut sum = [F::ZERO; 8];
            for t in terms.chunks_exact(8) {
                for j in 0..8 {
                    sum[j] = sum[j] + t[j];
                }
            }
            acc = self.combine(acc, (b, lane_tree(sum, |p, q| p + q)));
        }
        let start = first + whole;
        for (j, &v) in x[whole..].iter().enumerate() {
            acc = self.reduce(acc, widen(v), start + j);
        }
        Some(acc)
    }
    #[inline(always)]
    fn project(&self, (m, s): (F, F)) -> F {
        m + s.ln()
    }
}

/// Elements logsumexp's run fold takes in a block ([`LogSumExpOps`]): a
/// block is read twice, so it stays in L1 (1 KiB of f32, 2 KiB of f64).
const LSE_BLOCK: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    fn lse(xs: &[f64]) -> f64 {
        let o = LogSumExpOps;
        let acc = xs
            .iter()
            .fold(ReduceOps::<f64>::identity(&o), |a, &x| o.reduce(a, x, 0));
        o.project(acc)
    }

    #[test]
    fn logsumexp_edges() {
        let inf = f64::INFINITY;
        assert_eq!(lse(&[]), -inf);
        assert_eq!(lse(&[-inf, -inf]), -inf);
        assert_eq!(lse(&[inf, inf, 1.0]), inf);
        assert_eq!(lse(&[-inf, inf]), inf);
        assert!(lse(&[1.0, f64::NAN, inf]).is_nan());
        assert!((lse(&[0.0, 0.0]) - 2f64.ln()).abs() < 1e-15);
        assert!((lse(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
    }

    /// logsumexp of finite values by its definition, with libm's exp.
    fn by_definition(xs: &[f64]) -> f64 {
        let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
    }

    fn run(xs: &[f64]) -> f64 {
        let o = LogSumExpOps;
        o.project(ReduceOps::<f64>::fold_run(&o, xs, 0, |c| *c, |x| x).expect("a run fold"))
    }

    #[test]
    fn run_and_element_folds_agree_with_the_definition() {
        // Lengths on both sides of a chunk and of a block; values over 60
        // units, so that most terms are far below the maximum's.
        for n in [1, 7, 8, 9, 255, 256, 257, 1000, 4099] {
            let xs: Vec<f64> = (0..n)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) * 0.6)
                .collect();
            let want = by_definition(&xs);
            for got in [run(&xs), lse(&xs)] {
                assert!(
                    (got - want).abs() <= 1e-14 * want.abs(),
                    "{n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn run_fold_edges() {
        let inf = f64::INFINITY;
        assert_eq!(run(&[]), -inf);
        let mut xs = vec![-inf; 300];
        assert_eq!(run(&xs), -inf);
        xs[260] = 2.0;
        assert_eq!(run(&xs), 2.0);
        // Two infinite maxima, in different blocks and chunks.
        xs[9] = inf;
        xs[270] = inf;
        assert_eq!(run(&xs), inf);
        xs[3] = f64::NAN;
        assert!(run(&xs).is_nan());
        // Equal maxima in every lane add exactly: 300 terms of 1.
        assert_eq!(run(&[7.5; 300]), 7.5 + 300f64.ln());
    }

    #[test]
    fn inf_norms_propagate_nan() {
        assert!(ReduceOps::<f32>::reduce(&AbsMaxOps, 1.0, f32::NAN, 0).is_nan());
        assert!(ReduceOps::<f32>::combine(&AbsMinOps, f32::NAN, 0.0).is_nan());
        assert_eq!(
            ReduceOps::<f32>::reduce(&AbsMinOps, f32::INFINITY, -3.0, 0),
            3.0
        );
    }
}
