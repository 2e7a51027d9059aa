//! The CPU's index and pair reductions, mirroring `kernels/ops/index.cuh`:
//! `max(dim)`/`min(dim)` (value and index), `argmax`/`argmin` (the index)
//! and `aminmax` (min and max). PyTorch's `ArgMaxOps`, `ArgMinOps`,
//! `MinMaxReductionOps` and `MinMaxOps`.

use super::element::lane_tree;
use super::ops::{fold_column_leaf_by_rows, Both, Compute, Index, ReduceOps, ROWS_SIDE_BY_SIDE};

/// A value and its index in the reduced range (`tr::ValueIndex`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ValueIndex<W> {
    pub value: W,
    pub index: i64,
}

/// PyTorch's `GreaterOrNan` (`better` is `>`) and `LessOrNan` (`<`):
/// whether `(a, ia)` beats `(b, ib)`. NaN beats every number; among equal
/// values and among NaNs the lower index wins, so the result does not
/// depend on the combine order.
#[inline(always)]
fn beats<W: Compute>(a: W, b: W, ia: i64, ib: i64, better: impl Fn(W, W) -> bool) -> bool {
    if a.is_nan() {
        return !b.is_nan() || ia < ib;
    }
    if a == b {
        ia < ib
    } else {
        better(a, b)
    }
}

#[inline(always)]
fn pick<W: Compute>(
    a: ValueIndex<W>,
    b: ValueIndex<W>,
    better: impl Fn(W, W) -> bool,
) -> ValueIndex<W> {
    if beats(a.value, b.value, a.index, b.index, better) {
        a
    } else {
        b
    }
}

/// The fold of a contiguous run by an index op, in two passes: the run's
/// best value first (a NaN best of all), then the first position that
/// holds it, which is the pick's answer, as a pair wins by value and then
/// by the lower index. Both passes are compares over 8 lanes, which the
/// compiler turns into vector compares and blends, where a pick at a time
/// is a compare and a branch on a pair of 16 bytes. On the 2-core machine,
/// beside torch's CPU argmax in the same runs, f32 rows of 16 to 16384
/// went from 0.47-0.65x torch's speed to 2.1-3.2x, f64 rows of 16 and 128
/// from 0.54-0.56x to 1.5-1.9x and i64 rows of 16 from 0.38x to
/// 0.73-0.87x. `better(a, b)` is the strict order of the op (`>` for
/// max); `identity` its identity's value, which no value is worse than,
/// so the best value is always found in the run. `None` where the run is
/// empty.
#[inline(always)]
fn pick_run<T: Copy, W: Compute>(
    x: &[T],
    first: usize,
    identity: W,
    better: impl Fn(W, W) -> bool + Copy,
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) -> Option<ValueIndex<W>> {
    // A NaN, once kept, stays: nothing is better than it, and a NaN
    // replaces it by another NaN.
    let keep = |m: W, v: W| if better(v, m) || v.is_nan() { v } else { m };
    let keep8 = |m: [W; 8], v: [W; 8]| -> [W; 8] { std::array::from_fn(|j| keep(m[j], v[j])) };
    // Four sets of lanes, four independent chains of compares and blends.
    let (mut s0, mut s1, mut s2, mut s3) =
        ([identity; 8], [identity; 8], [identity; 8], [identity; 8]);
    let mut blocks = x.chunks_exact(32);
    for b in &mut blocks {
        let chunk = |k: usize| widen8(b[k * 8..k * 8 + 8].try_into().expect("chunks of 8"));
        s0 = keep8(s0, chunk(0));
        s1 = keep8(s1, chunk(1));
        s2 = keep8(s2, chunk(2));
        s3 = keep8(s3, chunk(3));
    }
    // The sets meet before the remainder's chunks, into a new local: a
    // second loop updating `s0` kept the sets in memory through the main
    // loop (5x slower an element, a standalone copy reading f32 from L1).
    // On the 2-core machine (three rounds, old and new build interleaved)
    // argmax of f32 rows of 128 to 16384 ran 1.21-1.39x faster and 16-bit
    // ones 1.26-1.84x; 8-byte rows (4 lanes a vector, at the memory's
    // speed before) stayed level.
    let mut lanes = keep8(keep8(s0, s1), keep8(s2, s3));
    let mut chunks = blocks.remainder().chunks_exact(8);
    for c in &mut chunks {
        lanes = keep8(lanes, widen8(c.try_into().expect("chunks of 8")));
    }
    let best = chunks
        .remainder()
        .iter()
        .fold(lane_tree(lanes, keep), |m, &v| keep(m, widen(v)));
    let at = if best.is_nan() {
        first_where(x, &widen8, &widen, |v: W| v.is_nan())
    } else {
        first_where(x, &widen8, &widen, |v: W| v == best)
    }?;
    Some(ValueIndex {
        value: widen(x[at]),
        index: (first + at) as i64,
    })
}

/// The first position of `x` whose widened element is a `hit`: 8 compares
/// a step, gathered into one word, so that the loop branches once a
/// chunk.
#[inline(always)]
fn first_where<T: Copy, W: Compute>(
    x: &[T],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
    hit: impl Fn(W) -> bool,
) -> Option<usize> {
    let mut chunks = x.chunks_exact(8);
    for (k, c) in (&mut chunks).enumerate() {
        let v = widen8(c.try_into().expect("chunks of 8"));
        // The hits as the bytes of one word, packed from the vector
        // compare; gathered as bits, they compiled to a compare, a shift
        // and an `or` a lane, and long f32 rows took 1.2-1.4x longer
        // (single-threaded, from cache).
        let bytes = u64::from_le_bytes(v.map(|x| hit(x) as u8));
        if bytes != 0 {
            return Some(k * 8 + bytes.trailing_zeros() as usize / 8);
        }
    }
    let tail = x.len() / 8 * 8;
    chunks
        .remainder()
        .iter()
        .position(|&v| hit(widen(v)))
        .map(|p| tail + p)
}

/// Reduce indices up to which [`pick_columns`] keeps its rows' indices in
/// the compute type: whole numbers are exact in f32 up to 2^24.
const EXACT_ROWS: usize = 1 << 24;

/// Columns [`pick_columns`] takes at a time, their best values and rows
/// on the stack.
const PICK_COLUMNS: usize = 256;

/// Rows [`pick_columns`] takes at a time down a chunk of columns. Strips
/// down all of a leaf's 128 rows, 16 KiB apart, read 1.4x slower than the
/// walk a row at a time, presumably because the hardware prefetcher
/// follows short pieces of many rows better than one line of each.
const PICK_ROWS: usize = 16;

/// The fold of a column leaf by an index op (rows `lo..hi`, `row(k)` row
/// `k`'s piece of the tile): chunks of [`PICK_COLUMNS`] columns, each
/// taken [`PICK_ROWS`] rows at a time in strips of 8 to 16 columns
/// ([`pick_strip`]), whose best values and the rows that gave them are
/// selects in registers. The row index is held in the compute type
/// beside the value, so that both select on one mask. Rows come in
/// increasing order and a row replaces the best only where it beats it (a
/// NaN only a number), so a tie keeps the lower index: the pair `reduce`
/// would give. Walked row by row through `pick`, each element's pair cost
/// compares and branches that random columns mispredict: on the 2-core
/// machine (`scripts/ab_cpu.py`, 3 rounds, argmax of 268 MB, columns of 16
/// and 16384 rows) f32, bf16 and f64 columns ran 2.4-6.5x faster this
/// way, f16 1.5-2.6x and i64 (no NaN to test) 1.07-1.34x. `None` where the
/// leaf's indices would not be exact in `W` (the caller then folds row by
/// row).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pick_columns<'a, T: Copy + 'a, W: Compute>(
    row: impl Fn(usize) -> &'a [T],
    lo: usize,
    hi: usize,
    identity: W,
    better: impl Fn(W, W) -> bool + Copy,
    widen8: impl Fn(&[T; 8]) -> [W; 8] + Copy,
    widen: impl Fn(T) -> W + Copy,
    acc: &mut [ValueIndex<W>],
) -> Option<()> {
    if hi > EXACT_ROWS {
        return None;
    }
    // Two sets of 8 lanes a strip where the element is 4 bytes or less:
    // 16 columns of f32 are a cache line, and four sets (a line of 16-bit
    // elements) ran 3-5x slower, out of registers.
    let sets = if std::mem::size_of::<T>() <= 4 && std::mem::size_of::<W>() == 4 {
        2
    } else {
        1
    };
    let mut best = [identity; PICK_COLUMNS];
    let mut from = [W::ZERO; PICK_COLUMNS];
    for c0 in (0..acc.len()).step_by(PICK_COLUMNS) {
        let n = PICK_COLUMNS.min(acc.len() - c0);
        let (best, from) = (&mut best[..n], &mut from[..n]);
        // The identity's index is 0, as `identity()`'s.
        best.fill(identity);
        from.fill(W::ZERO);
        for k0 in (lo..hi).step_by(PICK_ROWS) {
            let rows = k0..hi.min(k0 + PICK_ROWS);
            let mut c = 0;
            if sets == 2 {
                while c + 16 <= n {
                    let (m, p) = (&mut best[c..c + 16], &mut from[c..c + 16]);
                    pick_strip::<2, T, W>(&row, c0 + c, rows.clone(), better, widen8, m, p);
                    c += 16;
                }
            }
            while c + 8 <= n {
                let (m, p) = (&mut best[c..c + 8], &mut from[c..c + 8]);
                pick_strip::<1, T, W>(&row, c0 + c, rows.clone(), better, widen8, m, p);
                c += 8;
            }
            // The last columns, fewer than 8, one at a time by the same rule.
            for j in c..n {
                let mut kw = W::from_param(rows.start as f64);
                for k in rows.clone() {
                    let v = widen(row(k)[c0 + j]);
                    let take = takes(best[j], v, better);
                    best[j] = if take { v } else { best[j] };
                    from[j] = if take { kw } else { from[j] };
                    kw = kw.add(W::ONE);
                }
            }
        }
        for ((a, &value), &k) in acc[c0..c0 + n].iter_mut().zip(&*best).zip(&*from) {
            *a = ValueIndex {
                value,
                index: k.cast::<i64>(),
            };
        }
    }
    Some(())
}

/// Whether `v`, from a later row, replaces `m` as a column's best: it
/// beats it by value, or is a NaN where `m` is not.
#[inline(always)]
fn takes<W: Compute>(m: W, v: W, better: impl Fn(W, W) -> bool) -> bool {
    better(v, m) | (v.is_nan() & !m.is_nan())
}

/// Folds rows `rows` of columns `c..c + 8 * G` into their best values `m`
/// and the rows that gave them `p` ([`pick_columns`]), in registers.
#[inline(always)]
fn pick_strip<'a, const G: usize, T: Copy + 'a, W: Compute>(
    row: &impl Fn(usize) -> &'a [T],
    c: usize,
    rows: std::ops::Range<usize>,
    better: impl Fn(W, W) -> bool + Copy,
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    m: &mut [W],
    p: &mut [W],
) {
    let lanes = |s: &[W]| -> [[W; 8]; G] {
        std::array::from_fn(|g| s[8 * g..8 * g + 8].try_into().expect("8 lanes"))
    };
    let (mut best, mut from) = (lanes(m), lanes(p));
    let mut kw = W::from_param(rows.start as f64);
    for k in rows {
        let x = &row(k)[c..c + 8 * G];
        for g in 0..G {
            let v = widen8(x[8 * g..8 * g + 8].try_into().expect("chunks of 8"));
            for j in 0..8 {
                let take = takes(best[g][j], v[j], better);
                best[g][j] = if take { v[j] } else { best[g][j] };
                from[g][j] = if take { kw } else { from[g][j] };
            }
        }
        kw = kw.add(W::ONE);
    }
    m.copy_from_slice(best.as_flattened());
    p.copy_from_slice(from.as_flattened());
}

/// The picks of [`ROWS_SIDE_BY_SIDE`] rows of `n` elements end to end
/// from the start of `x` (`N`: `n` where known at compile time, else 0),
/// side by side: a step along the rows takes element `i` of every row,
/// and each row's best value and the position that gave it are selects,
/// one vector across the rows, by [`takes`]. Positions come in increasing
/// order, so a tie keeps the lower one, and a row of identities gives
/// index 0: the pair `reduce` would give.
///
/// With AVX2 the rows are sorted into steps by shuffles in registers
/// ([`super::simd::pick_rows_avx2`] and, for 8-byte compute types,
/// `pick_rows_avx2_wide`); the portable loop below, which the compiler
/// left as scalar compares and branches, runs on other CPUs and for a
/// group at the input's end too short for the kernels' reads.
#[inline(always)]
fn pick_rows<const N: usize, T: Copy, W: Compute>(
    x: &[T],
    n: usize,
    identity: W,
    better: impl Fn(W, W) -> bool + Copy,
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) -> [ValueIndex<W>; ROWS_SIDE_BY_SIDE] {
    const G: usize = ROWS_SIDE_BY_SIDE;
    let n = if N == 0 { n } else { N };
    // The kernels' compare: whether the op's order is `>` (max) or `<`.
    #[cfg(target_arch = "x86_64")]
    let larger = better(W::ONE, W::ZERO);
    #[cfg(target_arch = "x86_64")]
    if size_of::<W>() == 4 && super::isa::avx2() && x.len() >= super::simd::pick_rows_reads(n, 8) {
        // SAFETY: W is f32, the one compute type of 4 bytes, AVX2 was
        // detected, and `x` is long enough.
        let (best, from) = unsafe {
            super::simd::pick_rows_avx2::<N, T>(
                x,
                n,
                std::mem::transmute_copy::<W, f32>(&identity),
                larger,
                |c| std::mem::transmute_copy::<[W; 8], [f32; 8]>(&widen8(c)),
            )
        };
        return std::array::from_fn(|r| ValueIndex {
            // SAFETY: as above, W is f32.
            value: unsafe { std::mem::transmute_copy::<f32, W>(&best[r]) },
            index: from[r] as i64,
        });
    }
    #[cfg(target_arch = "x86_64")]
    if size_of::<W>() == 8 && super::isa::avx2() && x.len() >= super::simd::pick_rows_reads(n, 4) {
        // SAFETY: W is f64 or i64, the compute types of 8 bytes, AVX2 was
        // detected, and `x` is long enough.
        let (best, from) = unsafe {
            super::simd::pick_rows_avx2_wide::<N, T, W>(
                x,
                n,
                identity,
                larger,
                W::IS_INTEGER,
                widen,
            )
        };
        return std::array::from_fn(|r| ValueIndex {
            value: best[r],
            index: from[r],
        });
    }
    let _ = widen8;
    let mut best = [identity; G];
    let mut from = [0; G];
    for i in 0..n {
        for r in 0..G {
            let v = widen(x[r * n + i]);
            let take = takes(best[r], v, better);
            best[r] = if take { v } else { best[r] };
            from[r] = if take { i } else { from[r] };
        }
    }
    std::array::from_fn(|r| ValueIndex {
        value: best[r],
        index: from[r] as i64,
    })
}

/// One index functor: `$ident` is the identity's value, `$better` the
/// strict order of values ([`beats`] breaks its ties and places NaN),
/// `$project` what the result is made of.
macro_rules! index_ops {
    ($(#[$doc:meta])* $name:ident, $ident:ident, $better:tt, $out:ty, |$a:ident| $project:expr) => {
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
                pick(acc, ValueIndex { value: x, index: idx as i64 }, |a: W, b: W| a $better b)
            }
            #[inline(always)]
            fn combine(&self, a: ValueIndex<W>, b: ValueIndex<W>) -> ValueIndex<W> {
                pick(a, b, |a: W, b: W| a $better b)
            }
            #[inline(always)]
            fn project(&self, $a: ValueIndex<W>) -> $out {
                $project
            }
            #[inline(always)]
            fn fold_run<T: Copy>(
                &self,
                x: &[T],
                first: usize,
                widen8: impl Fn(&[T; 8]) -> [W; 8],
                widen: impl Fn(T) -> W,
            ) -> Option<ValueIndex<W>> {
                pick_run(x, first, W::$ident, |a: W, b: W| a $better b, widen8, widen)
            }
            #[inline(always)]
            fn fold_row_group<const N: usize, T: Copy>(
                &self,
                x: &[T],
                n: usize,
                widen8: impl Fn(&[T; 8]) -> [W; 8],
                widen: impl Fn(T) -> W,
                out: &mut [ValueIndex<W>; ROWS_SIDE_BY_SIDE],
            ) {
                let better = |a: W, b: W| a $better b;
                *out = pick_rows::<N, T, W>(x, n, W::$ident, better, widen8, widen);
            }
            const FOLDS_ROW_GROUPS: bool = true;
            const FOLDS_COLUMN_LEAVES: bool = true;
            #[inline(always)]
            fn fold_column_leaf<'a, T: Copy + 'a>(
                &self,
                row: impl Fn(usize) -> &'a [T],
                lo: usize,
                hi: usize,
                widen8: impl Fn(&[T; 8]) -> [W; 8],
                widen: impl Fn(T) -> W,
                acc: &mut [ValueIndex<W>],
            ) {
                let better = |a: W, b: W| a $better b;
                if pick_columns(&row, lo, hi, W::$ident, better, &widen8, &widen, acc).is_none() {
                    fold_column_leaf_by_rows(self, row, lo, hi, widen, acc);
                }
            }
        }
    };
}

index_ops!(
    /// `tr::MaxDimOps`: `torch.max(x, dim)`, (value, index).
    MaxDimOps, LOWEST, >, Both<W, Index>, |a| Both(a.value, Index(a.index))
);
index_ops!(
    /// `tr::MinDimOps`: `torch.min(x, dim)`, (value, index).
    MinDimOps, HIGHEST, <, Both<W, Index>, |a| Both(a.value, Index(a.index))
);
index_ops!(
    /// `tr::ArgMaxOps`.
    ArgMaxOps, LOWEST, >, Index, |a| Index(a.index)
);
index_ops!(
    /// `tr::ArgMinOps`.
    ArgMinOps, HIGHEST, <, Index, |a| Index(a.index)
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
    use crate::cpu::element::CpuElement;
    use crate::cpu::isa::dispatch;

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

    /// The first index of the largest (or smallest) of `v`, a NaN the
    /// largest of all, by a plain scan: the tests' reference.
    fn scan_extreme<W: Compute>(v: &[W], larger: bool) -> (W, usize) {
        let mut best = (v[0], 0);
        for (i, &x) in v.iter().enumerate().skip(1) {
            let b = best.0;
            if !b.is_nan() && (x.is_nan() || (larger && x > b) || (!larger && x < b)) {
                best = (x, i);
            }
        }
        best
    }

    /// A seeded stream of pseudo-random numbers (a linear congruential
    /// generator's high bits), for the tests' values.
    fn lcg(seed: u64) -> impl FnMut() -> usize {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        }
    }

    #[test]
    fn run_fold_finds_the_first_extreme() {
        // Lengths around the fold's blocks of 32 and chunks of 8; values
        // with many ties, a NaN, ±0 and the identities themselves.
        let mut next = lcg(7);
        let specials = [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY];
        for n in 0..100 {
            for trial in 0..12 {
                let mut v: Vec<f32> = (0..n).map(|_| (next() % 5) as f32 - 2.0).collect();
                match trial % 4 {
                    0 => {}
                    1 => v.iter_mut().for_each(|x| *x = f32::NEG_INFINITY),
                    2 => v.iter_mut().for_each(|x| *x = f32::INFINITY),
                    _ => {
                        for _ in 0..1 + trial % 3 {
                            if n > 0 {
                                v[next() % n] = specials[next() % specials.len()];
                            }
                        }
                    }
                }
                let first = next() % 3;
                for larger in [true, false] {
                    let got = if larger {
                        ReduceOps::<f32>::fold_run(&MaxDimOps, &v, first, |c| *c, |x| x)
                    } else {
                        ReduceOps::<f32>::fold_run(&MinDimOps, &v, first, |c| *c, |x| x)
                    };
                    let want = (!v.is_empty()).then(|| scan_extreme(&v, larger));
                    match (got, want) {
                        (None, None) => {}
                        (Some(g), Some((value, at))) => {
                            assert_eq!(g.index, (first + at) as i64, "{v:?} larger {larger}");
                            assert_eq!(g.value.to_bits(), value.to_bits(), "{v:?}");
                        }
                        _ => panic!("{v:?}: run fold {got:?}, scan {want:?}"),
                    }
                }
            }
        }
    }

    /// Column leaves of `W` values drawn from `make` (with many ties, NaNs,
    /// ±0 and the identities), folded by the index ops' leaf fold and row
    /// by row through `reduce`, and, for leaves from row 0, by a plain
    /// scan of each column.
    fn column_leaves_match<W: Compute>(make: impl Fn(f64) -> W, bits: impl Fn(W) -> u64) {
        let mut next = lcg(11);
        let specials = [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY];
        // Widths around the strips of 8 and 16 columns and past a chunk of
        // 256; rows past a block of 16; leaves from row 0 and past it.
        for width in [1, 5, 8, 9, 16, 23, 40, 71, 300] {
            for rows in [1, 2, 7, 19, 40] {
                let lo = next() % 3;
                let v: Vec<W> = (0..(lo + rows) * width)
                    .map(|_| match next() % 8 {
                        0 => make(specials[next() % specials.len()]),
                        _ => make((next() % 4) as f64 - 1.5),
                    })
                    .collect();
                let row = |k: usize| &v[k * width..(k + 1) * width];
                let hi = lo + rows;
                let empty = ValueIndex {
                    value: make(0.0),
                    index: -1,
                };
                let (mut got, mut want) = (vec![empty; width], vec![empty; width]);
                for larger in [true, false] {
                    if larger {
                        ArgMaxOps.fold_column_leaf(row, lo, hi, |c| *c, |x| x, &mut got);
                        fold_column_leaf_by_rows(&ArgMaxOps, row, lo, hi, |x| x, &mut want);
                    } else {
                        MinDimOps.fold_column_leaf(row, lo, hi, |c| *c, |x| x, &mut got);
                        fold_column_leaf_by_rows(&MinDimOps, row, lo, hi, |x| x, &mut want);
                    }
                    for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                        let at = format!("width {width} rows {lo}..{hi} column {j}");
                        assert_eq!(g.index, w.index, "{at}");
                        assert_eq!(bits(g.value), bits(w.value), "{at}");
                        if lo == 0 {
                            let column: Vec<W> = (0..hi).map(|k| row(k)[j]).collect();
                            let (value, first) = scan_extreme(&column, larger);
                            assert_eq!(g.index, first as i64, "{at}");
                            assert_eq!(bits(g.value), bits(value), "{at}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn column_leaves_give_the_row_by_row_pairs() {
        column_leaves_match(|x| x as f32, |x: f32| u64::from(x.to_bits()));
        column_leaves_match(|x| x, |x: f64| x.to_bits());
        column_leaves_match(|x| x as i64, |x: i64| x as u64);
    }

    /// Rows of the lengths the row loops fold side by side (2-8 and 16
    /// known at compile time, others up to 512 bytes of compute values)
    /// and just past them, end to end, `T` widened to `W`, with many ties,
    /// NaNs, ±0 and the identities: each row's pair from `fold_rows` (in
    /// the ISA in use: the explicit AVX2 where the CPU has it, and the
    /// portable loop for groups at the input's end too short for its
    /// reads) against a plain scan of the row.
    fn short_rows_match<T: CpuElement, W: Compute>(
        make: impl Fn(f64) -> T,
        bits: impl Fn(W) -> u64,
    ) {
        let mut next = lcg(13);
        let specials = [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY];
        for n in [
            2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 32, 33, 63, 64, 65, 100, 128, 129,
        ] {
            for rows in [1, 7, 8, 9, 16, 17, 45] {
                let v: Vec<T> = (0..rows * n)
                    .map(|i| match (i / n) % 9 {
                        // A row of the max's identity and one of min's.
                        3 => make(f64::NEG_INFINITY),
                        5 => make(f64::INFINITY),
                        _ if next() % 8 == 0 => make(specials[next() % specials.len()]),
                        _ => make((next() % 4) as f64 - 1.5),
                    })
                    .collect();
                let empty = ValueIndex {
                    value: W::ZERO,
                    index: -1,
                };
                for larger in [true, false] {
                    let mut got = vec![empty; rows];
                    if larger {
                        dispatch!(T::fold_rows::<W, _>(&v, n, n, &MaxDimOps, &mut got));
                    } else {
                        dispatch!(T::fold_rows::<W, _>(&v, n, n, &MinDimOps, &mut got));
                    }
                    for (r, g) in got.iter().enumerate() {
                        let row: Vec<W> =
                            v[r * n..(r + 1) * n].iter().map(|&x| x.widen()).collect();
                        let (value, first) = scan_extreme(&row, larger);
                        let at =
                            format!("rows of {n}, row {r} of {rows}, larger {larger}: {row:?}");
                        assert_eq!(g.index, first as i64, "{at}");
                        assert_eq!(bits(g.value), bits(value), "{at}");
                    }
                }
            }
        }
    }

    #[test]
    fn short_rows_give_each_rows_first_extreme() {
        short_rows_match::<f32, f32>(|x| x as f32, |x| u64::from(x.to_bits()));
        short_rows_match::<f64, f64>(|x| x, f64::to_bits);
        short_rows_match::<i64, i64>(|x| x as i64, |x| x as u64);
        short_rows_match::<crate::bf16, f32>(crate::bf16::from_f64, |x| u64::from(x.to_bits()));
        short_rows_match::<crate::f16, f32>(crate::f16::from_f64, |x| u64::from(x.to_bits()));
    }

    #[test]
    fn aminmax_propagates_nan_to_both() {
        let r = ReduceOps::<f64>::reduce(&MinMaxOps, (1.0, 2.0), f64::NAN, 0);
        assert!(r.0.is_nan() && r.1.is_nan());
        let r = ReduceOps::<f64>::combine(&MinMaxOps, (1.0, 2.0), (-1.0, 1.5));
        assert_eq!(r, (-1.0, 2.0));
    }
}
