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
    /// than a chunk, fold one by one. Columns have a leaf fold of their
    /// own ([`fold_column_leaf`](Self::fold_column_leaf)).
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
                *t = term(*t, b);
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
    const FOLDS_COLUMN_LEAVES: bool = true;
    /// A leaf's rows go in blocks of [`LSE_COLUMN_ROWS`] from `lo`, as a
    /// run's elements do in its blocks: each block's column maxima `b`,
    /// then its terms `exp(x - b)` by
    /// [`ExpNonPositive`](super::exp::ExpNonPositive) summed down each
    /// column, in the block's row order; a column's blocks meet through
    /// [`merge_blocks`] (`combine`'s cases with the polynomial `exp`). A
    /// block is widened and read twice in chunks of
    /// [`LSE_COLUMN_CHUNK_BYTES`] a row, so its second pass reads from
    /// L1. Every column's steps are the same wherever it lies in a chunk
    /// (the vector loops' last few columns take the same operations one
    /// at a time), so the bits depend on the column and `lo..hi` alone.
    ///
    /// Row by row, with a libm `exp` call and a branch an element, columns
    /// trailed torch's CPU (a maximum pass, then a vectorized `exp` pass)
    /// by up to 1.4x on the 2-core machine's suite; in blocks they run
    /// 2.9-3.6x faster than that and lead it 2.6-3.5x. Merged through
    /// `combine` (a libm `exp` a column a block), the blocks ran 1.26x
    /// slower.
    #[inline(always)]
    fn fold_column_leaf<'a, T: Copy + 'a>(
        &self,
        row: impl Fn(usize) -> &'a [T],
        lo: usize,
        hi: usize,
        widen8: impl Fn(&[T; 8]) -> [F; 8],
        widen: impl Fn(T) -> F,
        acc: &mut [(F, F)],
    ) {
        // A leaf of no rows (none reaches here) leaves the identity.
        acc.fill(ReduceOps::<F>::identity(self));
        // The buffers hold a chunk of f32; one of f64 is half as many columns.
        const WIDEST: usize = LSE_COLUMN_CHUNK_BYTES / 4;
        let chunk = LSE_COLUMN_CHUNK_BYTES / std::mem::size_of::<F>();
        let mut block = [[F::ZERO; WIDEST]; LSE_COLUMN_ROWS];
        let mut top = [F::ZERO; WIDEST];
        let mut sum = [F::ZERO; WIDEST];
        for k0 in (lo..hi).step_by(LSE_COLUMN_ROWS) {
            let rows = k0..hi.min(k0 + LSE_COLUMN_ROWS);
            let block = &mut block[..rows.len()];
            for c0 in (0..acc.len()).step_by(chunk) {
                let n = chunk.min(acc.len() - c0);
                let (top, sum) = (&mut top[..n], &mut sum[..n]);
                // 8 columns at a time down the block, their maxima in a
                // register (through memory, each row's maxima were stored
                // under a mask).
                let whole = n / 8 * 8;
                for c in (0..whole).step_by(8) {
                    let mut t = [F::LOWEST; 8];
                    for (k, b) in rows.clone().zip(block.iter_mut()) {
                        let x = &row(k)[c0 + c..c0 + c + 8];
                        let v = widen8(x.try_into().expect("8 columns"));
                        for j in 0..8 {
                            t[j] = if v[j] > t[j] { v[j] } else { t[j] };
                        }
                        b[c..c + 8].copy_from_slice(&v);
                    }
                    top[c..c + 8].copy_from_slice(&t);
                }
                for c in whole..n {
                    let mut t = F::LOWEST;
                    for (k, b) in rows.clone().zip(block.iter_mut()) {
                        let v = widen(row(k)[c0 + c]);
                        t = if v > t { v } else { t };
                        b[c] = v;
                    }
                    top[c] = t;
                }
                sum.fill(F::ZERO);
                for b in block.iter() {
                    for ((s, &t), &v) in sum.iter_mut().zip(top.iter()).zip(&b[..n]) {
                        *s = *s + term(v, t);
                    }
                }
                let acc = &mut acc[c0..c0 + n];
                if k0 == lo {
                    // What `combine` of the identity and the block gives,
                    // without its `exp` call.
                    for ((a, &t), &s) in acc.iter_mut().zip(top.iter()).zip(sum.iter()) {
                        *a = (t, s);
                    }
                } else {
                    for ((a, &t), &s) in acc.iter_mut().zip(top.iter()).zip(sum.iter()) {
                        *a = merge_blocks(*a, (t, s));
                    }
                }
            }
        }
    }
    #[inline(always)]
    fn project(&self, (m, s): (F, F)) -> F {
        m + s.ln()
    }
}

/// A block's term `exp(x - max)` in logsumexp's run and column folds:
/// exactly 1 where `x` is the maximum, so that two infinities never meet
/// in `inf - inf`, else the polynomial `exp` (NaN stays NaN).
#[inline(always)]
fn term<F: Float>(x: F, max: F) -> F {
    if x == max {
        F::ONE
    } else {
        (x - max).exp_nonpositive()
    }
}

/// `combine` of two blocks of a column leaf ([`LogSumExpOps::fold_column_leaf`]):
/// the same three cases as selects, with the polynomial `exp`, so that a
/// chunk's columns merge in vector instructions.
#[inline(always)]
fn merge_blocks<F: Float>((ma, sa): (F, F), (mb, sb): (F, F)) -> (F, F) {
    let (m, big, small, d) = if ma > mb {
        (ma, sa, sb, mb - ma)
    } else {
        (mb, sb, sa, ma - mb)
    };
    let e = if ma == mb {
        F::ONE
    } else {
        d.exp_nonpositive()
    };
    (m, big + small * e)
}

/// Elements logsumexp's run fold takes in a block ([`LogSumExpOps`]): a
/// block is read twice, so it stays in L1 (1 KiB of f32, 2 KiB of f64).
const LSE_BLOCK: usize = 256;

/// Rows a block of logsumexp's column leaves takes
/// ([`LogSumExpOps::fold_column_leaf`]): each column pays one
/// [`merge_blocks`] a block. Blocks of 32 rows of 512 bytes ran level.
const LSE_COLUMN_ROWS: usize = 16;

/// Bytes of each row a block of logsumexp's column leaves widens at a
/// time: [`LSE_COLUMN_ROWS`] of them, 16 KiB, are read again from L1.
const LSE_COLUMN_CHUNK_BYTES: usize = 1024;

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

    /// logsumexp of each column of `rows` (`rows[k][j]`, rows `lo..`)
    /// through the column leaf fold.
    fn column_leaf(rows: &[Vec<f64>], lo: usize, width: usize) -> Vec<f64> {
        let o = LogSumExpOps;
        let mut acc = vec![(0.0, 0.0); width];
        let row = |k: usize| &rows[k][..];
        ReduceOps::<f64>::fold_column_leaf(&o, row, lo, rows.len(), |c| *c, |x| x, &mut acc);
        acc.into_iter().map(|a| o.project(a)).collect()
    }

    #[test]
    fn column_leaf_fold_agrees_with_the_definition() {
        // Row counts on both sides of a block, widths on both sides of a
        // vector and of a chunk (128 f64), values over 60 units.
        for (lo, hi) in [(0, 1), (3, 18), (0, 16), (0, 17), (5, 128)] {
            for width in [1, 7, 8, 9, 130, 300] {
                let rows: Vec<Vec<f64>> = (0..hi)
                    .map(|k| {
                        (0..width)
                            .map(|j| (((k * 31 + j * 17) % 101) as f64 - 50.0) * 0.6)
                            .collect()
                    })
                    .collect();
                let got = column_leaf(&rows, lo, width);
                for (j, g) in got.iter().enumerate() {
                    let col: Vec<f64> = rows[lo..].iter().map(|r| r[j]).collect();
                    let want = by_definition(&col);
                    assert!(
                        (g - want).abs() <= 1e-14 * want.abs().max(1.0),
                        "rows {lo}..{hi}, width {width}, column {j}: {g} vs {want}"
                    );
                }
            }
        }
    }

    /// A column's bits depend on its own elements and the leaf's rows
    /// alone: the same whatever the tile's width and wherever the column
    /// lies in it (in a vector, in the last few columns, in a later chunk),
    /// as the thread count changes the tiles.
    #[test]
    fn column_leaf_bits_do_not_depend_on_the_tile() {
        let (width, hi) = (300, 40);
        let rows: Vec<Vec<f32>> = (0..hi)
            .map(|k| {
                (0..width)
                    .map(|j| ((k * 7919 + j * 104729) % 1000) as f32 * 0.037 - 18.0)
                    .collect()
            })
            .collect();
        let fold = |from: usize, to: usize| {
            let o = LogSumExpOps;
            let mut acc = vec![(0.0f32, 0.0f32); to - from];
            let row = |k: usize| &rows[k][from..to];
            ReduceOps::<f32>::fold_column_leaf(&o, row, 0, hi, |c| *c, |x| x, &mut acc);
            acc
        };
        let whole = fold(0, width);
        for (from, to) in [(0, 1), (5, 6), (3, 20), (250, 300), (7, 299), (1, 260)] {
            for (j, got) in fold(from, to).iter().enumerate() {
                let want = whole[from + j];
                assert_eq!(
                    (got.0.to_bits(), got.1.to_bits()),
                    (want.0.to_bits(), want.1.to_bits()),
                    "column {} in a tile of {from}..{to}",
                    from + j
                );
            }
        }
    }

    #[test]
    fn column_leaf_fold_edges() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        // Columns: all -inf; -inf but one finite element in a later block;
        // two +inf in different blocks; a NaN; equal maxima.
        let rows: Vec<Vec<f64>> = (0..40)
            .map(|k| {
                vec![
                    -inf,
                    if k == 33 { 2.0 } else { -inf },
                    if k == 3 || k == 36 { inf } else { 1.0 },
                    if k == 20 { nan } else { 0.5 },
                    7.5,
                ]
            })
            .collect();
        let got = column_leaf(&rows, 0, 5);
        assert_eq!(got[0], -inf);
        assert_eq!(got[1], 2.0);
        assert_eq!(got[2], inf);
        assert!(got[3].is_nan());
        assert_eq!(got[4], 7.5 + 40f64.ln());
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
