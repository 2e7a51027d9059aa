//! The CPU's `WelfordOps` (var, std, var_mean, std_mean), mirroring
//! `kernels/ops/welford.cuh`: PyTorch's Welford update per element and
//! Chan's combine of two partial states, in one pass.

use super::ops::{Both, Float, ReduceOps};
use crate::reduce::OpParams;

/// `tr::WelfordData`: the mean and the sum of squared deviations `m2` of
/// `nf` elements. `n` counts exactly (as an i32) while one accumulator
/// folds elements; a combined state has `n = -1` and only `nf` is used, as
/// in PyTorch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct WelfordData<F> {
    pub mean: F,
    pub m2: F,
    pub n: i32,
    pub nf: F,
}

/// `tr::WelfordOps`: `correction` and `take_sqrt` come from the call's
/// [`OpParams`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct WelfordOps<F> {
    correction: F,
    take_sqrt: bool,
}

impl<F: Float> WelfordOps<F> {
    pub(crate) fn new(params: OpParams) -> Self {
        WelfordOps {
            correction: F::from_param(params.values[0]),
            take_sqrt: params.values[1] != 0.0,
        }
    }
}

impl<F: Float> ReduceOps<F> for WelfordOps<F> {
    type Acc = WelfordData<F>;
    type Out = Both<F, F>;
    #[inline(always)]
    fn identity(&self) -> WelfordData<F> {
        WelfordData {
            mean: F::ZERO,
            m2: F::ZERO,
            n: 0,
            nf: F::ZERO,
        }
    }
    #[inline(always)]
    fn reduce(&self, acc: WelfordData<F>, x: F, _idx: usize) -> WelfordData<F> {
        let n = acc.n.wrapping_add(1);
        let nf = F::from_i32(n);
        let delta = x - acc.mean;
        let mean = acc.mean + delta / nf;
        WelfordData {
            mean,
            m2: acc.m2 + delta * (x - mean),
            n,
            nf,
        }
    }
    #[inline(always)]
    fn combine(&self, a: WelfordData<F>, b: WelfordData<F>) -> WelfordData<F> {
        if a.nf == F::ZERO {
            return b;
        }
        if b.nf == F::ZERO {
            return a;
        }
        let delta = b.mean - a.mean;
        let nf = a.nf + b.nf;
        let nb_over_n = b.nf / nf;
        WelfordData {
            mean: a.mean + delta * nb_over_n,
            m2: a.m2 + b.m2 + delta * delta * a.nf * nb_over_n,
            n: -1,
            nf,
        }
    }
    /// (var or std, mean): `var = m2 / max(nf - correction, 0)`, so no
    /// degrees of freedom left gives inf (or NaN for `0 / 0`), as torch.
    #[inline(always)]
    fn project(&self, a: WelfordData<F>) -> Both<F, F> {
        let divisor = if a.nf > self.correction {
            a.nf - self.correction
        } else {
            F::ZERO
        };
        let var = a.m2 / divisor;
        Both(if self.take_sqrt { var.sqrt() } else { var }, a.mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_matches_one_pass() {
        let ops = WelfordOps::<f64>::new(OpParams { values: [1.0, 0.0] });
        let fold = |xs: &[f64]| {
            xs.iter()
                .enumerate()
                .fold(ops.identity(), |a, (i, &x)| ops.reduce(a, x, i))
        };
        let x = [1.0, 2.0, 4.0, 7.0, 11.0];
        let whole = fold(&x);
        let split = ops.combine(fold(&x[..2]), fold(&x[2..]));
        assert!((whole.m2 - split.m2).abs() < 1e-12);
        assert_eq!(ops.project(whole).1, 5.0);
        // Sample variance of 1, 2, 4, 7, 11: squared deviations from 5 sum
        // to 16 + 9 + 1 + 4 + 36 = 66, over 4 degrees of freedom.
        assert!((ops.project(split).0 - 16.5).abs() < 1e-12);
        assert_eq!(ops.combine(ops.identity(), whole), whole);
    }
}
