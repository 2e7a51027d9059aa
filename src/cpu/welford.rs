//! The CPU's `WelfordOps` (var, std, var_mean, std_mean), mirroring
//! `kernels/ops/welford.cuh`: PyTorch's Welford update per element and
//! Chan's combine of two partial states, in one pass; contiguous runs take
//! the update 8 lanes a step ([`ReduceOps::fold_run`]), and column leaves
//! a chunk of columns a row at a time ([`ReduceOps::fold_column_leaf`]).

use super::element::combine_lanes;
use super::ops::{Both, Compute, Float, Projected, ReduceOps};
use super::prefetch::Prefetch;
use crate::reduce::OpParams;
use crate::Element;

/// The type the CPU keeps Welford's state in, for every floating input:
/// f64, as torch's CPU kernel (`WelfordOps<scalar_t, double, ...>` in
/// `std_var_kernel_impl`). The GPU keeps torch CUDA's f32 for 16- and 32-bit
/// inputs ([`crate::reduce::Signature::acc`]); here an f32 state would
/// overflow in `delta * delta` for values near 1e20 and up, whose variance
/// torch's CPU computes finitely.
pub(crate) type Acc = f64;

/// A Welford result on its way to the output dtype. torch converts its
/// double results to `scalar_t`, and a 16-bit `scalar_t` is built from a
/// float, so they round to f32 first (which can differ from one rounding
/// when the value is within an f32 rounding of a 16-bit tie).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rounded<F>(pub F);

impl<F: Compute> Projected for Rounded<F> {
    #[inline(always)]
    fn cast<O: Element>(self) -> O {
        if O::DTYPE.is_floating_point() && O::DTYPE.size_in_bytes() == 2 {
            O::from_f32(self.0.cast::<f32>())
        } else {
            self.0.cast()
        }
    }
}

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

/// Welford's update of one (mean, m2) by `x`, with `delta_over_n` the
/// division of `x - mean` by the new count: the one place the update is
/// spelled, for the element-by-element fold and the 8-lane one.
#[inline(always)]
fn welford_step<F: Float>(mean: F, m2: F, x: F, delta_over_n: impl Fn(F) -> F) -> (F, F) {
    let delta = x - mean;
    let mean = mean + delta_over_n(delta);
    (mean, m2 + delta * (x - mean))
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
    type Out = Both<Rounded<F>, Rounded<F>>;
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
        let (mean, m2) = welford_step(acc.mean, acc.m2, x, |delta| delta / nf);
        WelfordData { mean, m2, n, nf }
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
    /// A contiguous run folds in the lanes `accumulate_chunks` gives a
    /// state this wide (lane j takes elements j, j + 8, ...) by Welford's
    /// update, but 8 lanes a step with one count: after k whole chunks
    /// every lane holds k elements, so one reciprocal 1/k serves the 8
    /// means (`delta * (1/k)`, within an f64 rounding of `delta / k`). The
    /// element-by-element fold divided for each element: var ran at 5 GB/s
    /// on the 2-core machine wherever its rows were long, a seventh of the
    /// plain read, and full reductions trailed torch's CPU (0.65-0.72x),
    /// which takes them in two passes without a division. The run's last
    /// elements, fewer than a chunk, fold one by one.
    #[inline(always)]
    fn fold_run<T: Copy>(
        &self,
        x: &[T],
        first: usize,
        widen8: impl Fn(&[T; 8]) -> [F; 8],
        widen: impl Fn(T) -> F,
    ) -> Option<WelfordData<F>> {
        let prefetch = Prefetch::for_run::<T>(x.len());
        let (mut mean, mut m2) = ([F::ZERO; 8], [F::ZERO; 8]);
        let mut n = 0i32;
        let mut chunks = x.chunks_exact(8);
        for c in &mut chunks {
            prefetch.ahead(c);
            let v = widen8(c.try_into().expect("chunks of 8"));
            n = n.wrapping_add(1);
            let r = F::ONE / F::from_i32(n);
            for j in 0..8 {
                (mean[j], m2[j]) = welford_step(mean[j], m2[j], v[j], |delta| delta * r);
            }
        }
        let nf = F::from_i32(n);
        let mut lanes = std::array::from_fn(|j| WelfordData {
            mean: mean[j],
            m2: m2[j],
            n,
            nf,
        });
        let start = first + x.len() - chunks.remainder().len();
        for (j, &v) in chunks.remainder().iter().enumerate() {
            lanes[j] = self.reduce(lanes[j], widen(v), start + j);
        }
        Some(combine_lanes(self, &lanes))
    }
    const FOLDS_COLUMN_LEAVES: bool = true;
    /// A leaf's columns go in chunks of [`WELFORD_COLUMN_CHUNK`], their
    /// means and `m2` in arrays on the stack, and a chunk takes the leaf's
    /// rows in order: each row's piece is widened into a buffer, then
    /// Welford's update runs along the columns. Every column of a leaf has
    /// seen the same rows, so the count is the same across the chunk, and
    /// one reciprocal a row serves it (`delta * (1/n)`, as in
    /// [`fold_run`](Self::fold_run)). Every column takes the same
    /// operations wherever it lies in a chunk, so its bits depend on its
    /// elements and `lo..hi` alone. The piece two rows ahead is asked into
    /// L2: the hardware's prefetch does not follow the jump of a row
    /// stride, and without it f32 `[8192, 8192]` over dim 0 took 1.4x as
    /// long.
    ///
    /// Row by row through `reduce`, a state of four fields a column and a
    /// division an element, columns ran at about 9 cycles an element on
    /// the 2-core machine; in chunks the update is 11 instructions for 4
    /// columns with no division, and var's columns are still limited by
    /// them rather than by the memory (4-5x sum's time).
    #[inline(always)]
    fn fold_column_leaf<'a, T: Copy + 'a>(
        &self,
        row: impl Fn(usize) -> &'a [T],
        lo: usize,
        hi: usize,
        widen8: impl Fn(&[T; 8]) -> [F; 8],
        widen: impl Fn(T) -> F,
        acc: &mut [WelfordData<F>],
    ) {
        const ROWS_AHEAD: usize = 2;
        let prefetch = Prefetch::here();
        let mut mean = [F::ZERO; WELFORD_COLUMN_CHUNK];
        let mut m2 = [F::ZERO; WELFORD_COLUMN_CHUNK];
        let mut widened = [F::ZERO; WELFORD_COLUMN_CHUNK];
        for c0 in (0..acc.len()).step_by(WELFORD_COLUMN_CHUNK) {
            let w = WELFORD_COLUMN_CHUNK.min(acc.len() - c0);
            let (mean, m2, widened) = (&mut mean[..w], &mut m2[..w], &mut widened[..w]);
            mean.fill(F::ZERO);
            m2.fill(F::ZERO);
            // The count as `reduce` keeps it, so that the leaf's state has
            // the count its rows folded one by one would give.
            let mut n = 0i32;
            for k in lo..hi {
                n = n.wrapping_add(1);
                let r = F::ONE / F::from_i32(n);
                if k + ROWS_AHEAD < hi {
                    prefetch.to_l2(&row(k + ROWS_AHEAD)[c0..c0 + w]);
                }
                // The row widened first, so that the update is one loop
                // over three arrays side by side, which the compiler
                // vectorizes along the columns (over the 8-column groups'
                // own lanes, it gathered a lane from each of 4 groups).
                let x = &row(k)[c0..c0 + w];
                let mut xs = x.chunks_exact(8);
                let mut ws = widened.chunks_exact_mut(8);
                for (x8, w8) in (&mut xs).zip(&mut ws) {
                    w8.copy_from_slice(&widen8(x8.try_into().expect("chunks of 8")));
                }
                for (w1, &v) in ws.into_remainder().iter_mut().zip(xs.remainder()) {
                    *w1 = widen(v);
                }
                for ((m, q), &v) in mean.iter_mut().zip(m2.iter_mut()).zip(widened.iter()) {
                    (*m, *q) = welford_step(*m, *q, v, |d| d * r);
                }
            }
            let nf = F::from_i32(n);
            for ((a, &mean), &m2) in acc[c0..c0 + w].iter_mut().zip(mean.iter()).zip(m2.iter()) {
                *a = WelfordData { mean, m2, n, nf };
            }
        }
    }
    /// (var or std, mean): `var = m2 / max(nf - correction, 0)`, so no
    /// degrees of freedom left gives inf (or NaN for `0 / 0`), as torch.
    #[inline(always)]
    fn project(&self, a: WelfordData<F>) -> Both<Rounded<F>, Rounded<F>> {
        let divisor = if a.nf > self.correction {
            a.nf - self.correction
        } else {
            F::ZERO
        };
        let var = a.m2 / divisor;
        Both(
            Rounded(if self.take_sqrt { var.sqrt() } else { var }),
            Rounded(a.mean),
        )
    }
}

/// Columns a chunk of Welford's column leaves holds
/// ([`WelfordOps::fold_column_leaf`]): their means, `m2` and widened
/// elements, 24 KiB of f64, stay in L1 while the chunk takes every row of
/// the leaf. Chunks of 512 and 2048 measured level with it, within the
/// 2-core machine's noise.
const WELFORD_COLUMN_CHUNK: usize = 1024;

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
        assert_eq!(ops.project(whole).1 .0, 5.0);
        // Sample variance of 1, 2, 4, 7, 11: squared deviations from 5 sum
        // to 16 + 9 + 1 + 4 + 36 = 66, over 4 degrees of freedom.
        assert!((ops.project(split).0 .0 - 16.5).abs() < 1e-12);
        assert_eq!(ops.combine(ops.identity(), whole), whole);
    }

    /// The state of each column of `rows[k][from..to]`, rows `lo..`,
    /// through the column leaf fold.
    fn column_leaf(rows: &[Vec<f64>], lo: usize, from: usize, to: usize) -> Vec<WelfordData<f64>> {
        let ops = WelfordOps::<f64>::new(OpParams { values: [0.0, 0.0] });
        let mut acc = vec![ops.identity(); to - from];
        let row = |k: usize| &rows[k][from..to];
        ops.fold_column_leaf(row, lo, rows.len(), |c| *c, |x| x, &mut acc);
        acc
    }

    /// `rows` rows of `width` columns, each column with its own offset,
    /// so that means and deviations differ column to column.
    fn columns(rows: usize, width: usize) -> Vec<Vec<f64>> {
        (0..rows)
            .map(|k| {
                (0..width)
                    .map(|j| ((k * 7919 + j * 104_729) % 1000) as f64 * 0.013 + j as f64)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn column_leaf_fold_agrees_with_the_definition() {
        // Row counts from one to a leaf's; widths on both sides of a
        // vector and of a chunk.
        for (lo, hi) in [(0, 1), (0, 2), (3, 17), (5, 128)] {
            for width in [1, 7, 8, 9, 1023, 1024, 1025, 2100] {
                let rows = columns(hi, width);
                for (j, s) in column_leaf(&rows, lo, 0, width).iter().enumerate() {
                    let col: Vec<f64> = rows[lo..].iter().map(|r| r[j]).collect();
                    let n = col.len() as f64;
                    let mean = col.iter().sum::<f64>() / n;
                    let m2: f64 = col.iter().map(|x| (x - mean) * (x - mean)).sum();
                    let at = format!("rows {lo}..{hi}, width {width}, column {j}");
                    assert_eq!((s.n, s.nf), ((hi - lo) as i32, n), "{at}");
                    assert!((s.mean - mean).abs() <= 1e-13 * mean.abs().max(1.0), "{at}");
                    assert!(
                        (s.m2 - m2).abs() <= 1e-11 * m2.max(1e-3),
                        "{at}: {} vs {m2}",
                        s.m2
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
        let (width, hi) = (2100, 40);
        let rows = columns(hi, width);
        let whole = column_leaf(&rows, 0, 0, width);
        for (from, to) in [(0, 1), (5, 6), (3, 20), (1020, 1030), (7, 2099), (1, 1500)] {
            for (j, got) in column_leaf(&rows, 0, from, to).iter().enumerate() {
                let want = whole[from + j];
                assert_eq!(
                    (got.mean.to_bits(), got.m2.to_bits()),
                    (want.mean.to_bits(), want.m2.to_bits()),
                    "column {} in a tile of {from}..{to}",
                    from + j
                );
            }
        }
    }

    #[test]
    fn column_leaf_fold_edges() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        // Columns: a constant (m2 exactly 0); an infinity; a NaN.
        let rows: Vec<Vec<f64>> = (0..20)
            .map(|k| {
                vec![
                    3.25,
                    if k == 11 { inf } else { 1.0 },
                    if k == 4 { nan } else { 2.0 },
                ]
            })
            .collect();
        let s = column_leaf(&rows, 0, 0, 3);
        assert_eq!((s[0].mean, s[0].m2), (3.25, 0.0));
        assert!(s[1].m2.is_nan() || s[1].m2.is_infinite(), "{:?}", s[1]);
        assert!(s[2].mean.is_nan() && s[2].m2.is_nan(), "{:?}", s[2]);
    }

    #[test]
    fn results_reach_16_bit_outputs_through_f32() {
        use crate::{bf16, f16};
        // Just below the midpoint between two 16-bit values whose lower one
        // is odd: one rounding goes down, but the f32 rounding lands on the
        // midpoint, which ties to the even value above, as torch's
        // `BFloat16(float(double))` and `Half(float(double))` do.
        let below_mid = |ulp: i32| 1.0 + 2f64.powi(-ulp) + 2f64.powi(-ulp - 1) - 2f64.powi(-40);
        assert_eq!(
            Rounded(below_mid(7)).cast::<bf16>(),
            bf16::from_f32(1.0 + 2f32.powi(-6))
        );
        assert_eq!(
            Rounded(below_mid(10)).cast::<f16>(),
            f16::from_f32(1.0 + 2f32.powi(-9))
        );
        // Wider outputs round once.
        let v = below_mid(7);
        assert_eq!(Rounded(v).cast::<f64>(), v);
        assert_eq!(Rounded(v).cast::<f32>(), v as f32);
    }
}
