//! The CPU's vector norms and logsumexp, mirroring `kernels/ops/norm.cuh`
//! and `kernels/ops/logsumexp.cuh`: PyTorch's `NormZeroOps`, `NormOneOps`,
//! `NormTwoOps`, `AbsMaxOps`, `AbsMinOps`, `NormOps`, and a one-pass
//! logsumexp.

use super::ops::{Float, ReduceOps};
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
    #[inline(always)]
    fn project(&self, (m, s): (F, F)) -> F {
        m + s.ln()
    }
}

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
