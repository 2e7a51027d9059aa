//! The innermost loops of the CPU backend: how each element type is loaded
//! into the compute type and folded into accumulators by a functor.

use super::ops::{Compute, ReduceOps, ROWS_SIDE_BY_SIDE as SIDE_BY_SIDE};
use super::prefetch::Prefetch;
use super::simd::f16_to_f32;
use crate::{bf16, f16, Element};
use smallvec::SmallVec;
use std::mem::MaybeUninit;

/// Elements at most this many are converted per block on the stack.
const BLOCK: usize = 1024;

/// How an element type feeds accumulators. The defaults convert element by
/// element, which the compiler vectorises for every type but f16: its
/// conversion is a branchy software routine on the baseline target, so f16
/// converts whole blocks to f32 first ([`super::simd::f16_to_f32`], F16C
/// when the CPU has it). bf16 is the top half of an f32: its element-wise
/// conversion is a shift (see [`bf16_to_f32`]) that vectorises inside every
/// default loop, which ran 1.1-3.6x faster than converting blocks first.
pub(crate) trait CpuElement: Element {
    /// Converts one element to the compute type.
    #[inline(always)]
    fn widen<W: Compute>(self) -> W {
        W::from_elem(self)
    }

    /// `x`'s bytes where `R` sums integers and the element is a byte (u8,
    /// bool): such a sum may add bytes among themselves before it widens
    /// them ([`byte_sum`], the tree's byte column leaf), since integer adds
    /// wrap and give the same bits in any order
    /// ([`ReduceOps::SUMS_INTEGERS`]). Widening every byte to an i64
    /// accumulator costs an add of 8 bytes (and, down columns, a load and a
    /// store of the accumulator) for each input byte.
    #[inline(always)]
    fn summed_bytes<W: Compute, R: ReduceOps<W>>(_x: &[Self]) -> Option<&[u8]> {
        None
    }

    /// Folds `x[i]` (reduce index `first + i`) into the 8 lanes, in
    /// [`accumulate_lanes`]' order, or, for a sum of bytes, their total
    /// into the first lane.
    #[inline(always)]
    fn accumulate_contiguous<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        first: usize,
        op: &R,
        lanes: &mut [R::Acc; 8],
    ) {
        match Self::summed_bytes::<W, R>(x) {
            Some(bytes) => {
                lanes[0] = op.reduce(lanes[0], W::from_elem(byte_sum(bytes) as i64), first);
            }
            None => accumulate_lanes(x, first, op, lanes, Self::widen),
        }
    }

    /// Folds `data[start + i * stride]` (reduce index `first + i`) for
    /// `i < n` into lane `i % 8`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn accumulate_strided<W: Compute, R: ReduceOps<W>>(
        data: &[Self],
        start: usize,
        stride: usize,
        n: usize,
        first: usize,
        op: &R,
        lanes: &mut [R::Acc; 8],
    ) {
        for i in 0..n {
            lanes[i % 8] = op.reduce(lanes[i % 8], data[start + i * stride].widen(), first + i);
        }
    }

    /// Folds row `i` of `out.len()` rows of `n` contiguous elements, which
    /// starts at `x[i * stride]`, into `out[i]`: each row as one leaf of
    /// the pairwise tree ([`fold_leaf`]).
    #[inline(always)]
    fn fold_rows<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        stride: usize,
        n: usize,
        op: &R,
        out: &mut [R::Acc],
    ) {
        fold_rows_by_leaf(x, stride, n, op, out);
    }

    /// Folds `x[j]` into `acc[j]`: one input row of a column reduction, at
    /// reduce index `idx` (a pass of one row over accumulators in memory,
    /// for tiles whose accumulators fit L1).
    #[inline(always)]
    fn accumulate_row<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        idx: usize,
        op: &R,
        acc: &mut [R::Acc],
    ) {
        for (a, &v) in acc.iter_mut().zip(x) {
            *a = op.reduce(*a, v.widen(), idx);
        }
    }

    /// Converts 8 elements to the compute type: [`widen`](Self::widen)
    /// each, or one vector conversion where the type has one.
    #[inline(always)]
    fn widen8<W: Compute>(x: &[Self; 8]) -> [W; 8] {
        x.map(Self::widen)
    }

    /// Folds `rows[r][j]` (reduce index `first + r`) into `acc[j]`, rows
    /// in order: one pass of a column leaf over its accumulators
    /// ([`fold_columns`]). Every row holds at least `acc.len()` elements.
    #[inline(always)]
    fn fold_columns<W: Compute, R: ReduceOps<W>>(
        rows: &[&[Self]],
        first: usize,
        op: &R,
        acc: &mut [R::Acc],
    ) {
        fold_columns(rows, first, op, acc, Self::widen);
    }

    /// Whether [`fold_strips`](Self::fold_strips) widens in registers: a
    /// strip loads a few elements of each row, too few for a conversion
    /// through a buffer to pay.
    #[inline(always)]
    fn strips_in_registers() -> bool {
        true
    }

    /// Sets `acc[j]` to the fold of column `j` of the `n` rows
    /// `span[r * stride..][..acc.len()]` (reduce index `first + r`), each
    /// column's rows in order, a strip of columns at a time down every row
    /// ([`fold_strips_by8`]).
    #[inline(always)]
    fn fold_strips<W: Compute, R: ReduceOps<W>>(
        span: &[Self],
        stride: usize,
        n: usize,
        first: usize,
        op: &R,
        acc: &mut [R::Acc],
    ) {
        fold_strips_by8(
            span,
            stride,
            n,
            first,
            op,
            acc,
            |c| c.map(Self::widen),
            Self::widen,
        );
    }
}

/// Accumulator bytes a strip of [`fold_strips_by8`] keeps in registers:
/// four AVX2 registers of f32, four chains of dependent adds, enough to
/// hide an add's latency. On the 2-core machine, two threads, 6.5 MB
/// inputs in cache, strips of 32 f32 columns took a middle dim of 32
/// outputs a row (`[512, 100, 32]` over 1) from 120 to 51 µs, of 64 from
/// 75 to 51, and columns of 1024 of a longer row (`[333, 6432]` over 0)
/// from 80-89 to 53-71 (torch: 43, 46, 57).
pub(super) const STRIP_BYTES: usize = 128;

/// Whether the CPU's folds of `sig` add bytes among themselves
/// ([`CpuElement::summed_bytes`]): the functors that sum integers (sum and
/// nansum computing in i64) over an element type that sums its bytes.
pub(super) fn sums_bytes(sig: &crate::reduce::Signature) -> bool {
    use crate::reduce::ReduceOp;
    let sums =
        matches!(sig.op, ReduceOp::Sum | ReduceOp::NanSum) && sig.compute == crate::DType::I64;
    sums && sig.cast.is_none()
        && crate::with_dtype!(sig.input, T => {
            <T as CpuElement>::summed_bytes::<i64, super::ops::SumOps>(&[]).is_some()
        })
}

/// Whether [`CpuElement::fold_rows`] folds rows of `n` elements of
/// `dtype`, `stride` apart, computed in `compute`,
/// [`ROWS_SIDE_BY_SIDE`](SIDE_BY_SIDE) at a time by
/// [`ReduceOps::fold_row_group`] where the op has one
/// ([`ReduceOps::FOLDS_ROW_GROUPS`]): rows end to end of 2 elements to
/// [`SIDE_BY_SIDE_BYTES`] of compute values ([`side_by_side`]). f16's
/// rows shorter than [`F16_REGISTER_ROW`] are converted end to end
/// first, so any stride will do.
pub(super) fn rows_side_by_side(
    dtype: crate::DType,
    compute: crate::DType,
    n: usize,
    stride: usize,
) -> bool {
    let converted = dtype == crate::DType::F16 && n < F16_REGISTER_ROW;
    (stride == n || converted) && side_by_side(n, compute.size_in_bytes())
}

/// Whether rows of `n` compute values of `bytes` each fold side by side
/// ([`SIDE_BY_SIDE_BYTES`]).
const fn side_by_side(n: usize, bytes: usize) -> bool {
    n >= 2 && n * bytes <= SIDE_BY_SIDE_BYTES
}

/// [`CpuElement::strips_in_registers`] of the element type `dtype`.
pub(super) fn strips_in_registers(dtype: crate::DType) -> bool {
    crate::with_dtype!(dtype, T => <T as CpuElement>::strips_in_registers())
}

/// [`CpuElement::fold_strips`] for a type that widens 8 elements at a time
/// with `widen8` and the rest with `widen`. Each strip walks the rows once
/// with its accumulators in registers: strips of [`STRIP_BYTES`] of
/// accumulators, then of 8 columns, then the last few columns as a tile
/// of registers of their own width. Every column folds its rows in order
/// from the identity, as a row at a time does, so the bits are the same.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn fold_strips_by8<T: Copy, W: Compute, R: ReduceOps<W>>(
    span: &[T],
    stride: usize,
    n: usize,
    first: usize,
    op: &R,
    acc: &mut [R::Acc],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) {
    let strip = Strip {
        span,
        stride,
        n,
        first,
    };
    let w = acc.len();
    let mut at = 0;
    // Vectors of 8 a strip holds, by accumulator size (a const, so the
    // strip is arrays the compiler keeps in registers).
    macro_rules! strips_of {
        ($v:expr) => {
            while at + 8 * $v <= w {
                strip.fold::<{ $v }, _, _>(at, op, &mut acc[at..at + 8 * $v], &widen8);
                at += 8 * $v;
            }
        };
    }
    match std::mem::size_of::<R::Acc>() {
        0..=4 => strips_of!(STRIP_BYTES / 32),
        5..=8 => strips_of!(STRIP_BYTES / 64),
        _ => {}
    }
    strips_of!(1);
    macro_rules! ragged {
        ($($k:literal)*) => {
            match w - at {
                $($k => strip.fold_ragged::<$k, _, _>(at, op, &mut acc[at..], &widen),)*
                _ => {}
            }
        };
    }
    ragged!(1 2 3 4 5 6 7);
}

/// The rows a strip walks: `n` rows, `stride` elements apart from the
/// start of `span`, reduce indices from `first`.
struct Strip<'a, T> {
    span: &'a [T],
    stride: usize,
    n: usize,
    first: usize,
}

impl<T: Copy> Strip<'_, T> {
    /// Folds columns `at..at + 8 * V` into `acc`, 8 at a time.
    #[inline(always)]
    fn fold<const V: usize, W: Compute, R: ReduceOps<W>>(
        &self,
        at: usize,
        op: &R,
        acc: &mut [R::Acc],
        widen8: impl Fn(&[T; 8]) -> [W; 8],
    ) {
        let mut v = [[op.identity(); 8]; V];
        for r in 0..self.n {
            let x = &self.span[r * self.stride + at..][..8 * V];
            for (q, v) in v.iter_mut().enumerate() {
                let x8 = widen8(x[8 * q..8 * q + 8].try_into().expect("8 columns"));
                for j in 0..8 {
                    v[j] = op.reduce(v[j], x8[j], self.first + r);
                }
            }
        }
        for (a, v) in acc.chunks_exact_mut(8).zip(&v) {
            a.copy_from_slice(v);
        }
    }

    /// Folds the last `N` columns, from `at`, into `acc`.
    #[inline(always)]
    fn fold_ragged<const N: usize, W: Compute, R: ReduceOps<W>>(
        &self,
        at: usize,
        op: &R,
        acc: &mut [R::Acc],
        widen: impl Fn(T) -> W,
    ) {
        let mut v = [op.identity(); N];
        for r in 0..self.n {
            let x = &self.span[r * self.stride + at..][..N];
            for j in 0..N {
                v[j] = op.reduce(v[j], widen(x[j]), self.first + r);
            }
        }
        acc.copy_from_slice(&v);
    }
}

/// [`CpuElement::accumulate_row`] for a type that widens 8 elements at a
/// time with a vector conversion (`widen8`) and the rest with `widen`: the
/// same fold of each output, so the same bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn accumulate_row_by8<T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    idx: usize,
    op: &R,
    acc: &mut [R::Acc],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) {
    let n = acc.len().min(x.len());
    let mut xs = x[..n].chunks_exact(8);
    let mut accs = acc[..n].chunks_exact_mut(8);
    for (x8, a8) in (&mut xs).zip(&mut accs) {
        let w = widen8(x8.try_into().expect("chunks of 8"));
        for j in 0..8 {
            a8[j] = op.reduce(a8[j], w[j], idx);
        }
    }
    for (a, &v) in accs.into_remainder().iter_mut().zip(xs.remainder()) {
        *a = op.reduce(*a, widen(v), idx);
    }
}

/// Input rows a column leaf folds per pass over its accumulators. A pass
/// keeps a block of accumulators in registers while it folds each of its
/// rows into them, so the accumulators are loaded and stored once a pass
/// rather than once a row; its rows are as many input streams at once.
/// Single-threaded on the 2-core machine (f32 and f64 columns of 16 and
/// 128 rows), passes of 4 rows with their accumulators in registers read
/// 1.2-1.3x faster than the same passes through memory, and passes of 8
/// or 16 rows slower than 4.
pub(super) const ROWS_PER_PASS: usize = 4;

/// Accumulator bytes a block of [`fold_columns`] holds: a cache line of
/// each row per block, which measured faster than two lines and level
/// with half a line.
const COLUMN_BLOCK_BYTES: usize = 64;

/// Folds `rows[r][j]` (reduce index `first + r`) into `acc[j]`, rows in
/// order, for each output the same steps as one row at a time. Outputs
/// go in blocks sized so that a block's accumulators stay in registers
/// while every row of the pass is folded into them: one row per pass over
/// accumulators in memory cost a load and a store of an accumulator per
/// input, which, not the input, limited columns of few rows.
#[inline(always)]
fn fold_columns<T: Copy, W: Compute, R: ReduceOps<W>>(
    rows: &[&[T]],
    first: usize,
    op: &R,
    acc: &mut [R::Acc],
    widen: impl Fn(T) -> W,
) {
    fold_columns_by8(rows, first, op, acc, |c| c.map(&widen), &widen)
}

/// [`fold_columns`] for a type that widens 8 elements at a time with a
/// vector conversion (`widen8`) and the rest with `widen`: the same folds
/// in the same order, so the same bits. Blocks of 8 or more accumulators
/// take `widen8` (every block of a state of 8 bytes or less).
#[inline(always)]
pub(super) fn fold_columns_by8<T: Copy, W: Compute, R: ReduceOps<W>>(
    rows: &[&[T]],
    first: usize,
    op: &R,
    acc: &mut [R::Acc],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) {
    // A const block width per accumulator size, so the block is an array
    // the compiler keeps in registers (wide states take narrow blocks).
    macro_rules! blocks_of {
        ($c:expr) => {
            fold_column_blocks::<{ $c }, _, _, _>(rows, first, op, acc, widen8, widen)
        };
    }
    match std::mem::size_of::<R::Acc>() {
        0..=4 => blocks_of!(COLUMN_BLOCK_BYTES / 4),
        5..=8 => blocks_of!(COLUMN_BLOCK_BYTES / 8),
        9..=16 => blocks_of!(COLUMN_BLOCK_BYTES / 16),
        _ => blocks_of!(2),
    }
}

#[inline(always)]
fn fold_column_blocks<const C: usize, T: Copy, W: Compute, R: ReduceOps<W>>(
    rows: &[&[T]],
    first: usize,
    op: &R,
    acc: &mut [R::Acc],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) {
    let mut blocks = acc.chunks_exact_mut(C);
    let mut at = 0;
    for block in &mut blocks {
        let block: &mut [R::Acc; C] = block.try_into().expect("blocks of C");
        let mut v = *block;
        for (r, row) in rows.iter().enumerate() {
            let x = &row[at..at + C];
            if C % 8 == 0 {
                for (k, x8) in x.chunks_exact(8).enumerate() {
                    let w = widen8(x8.try_into().expect("chunks of 8"));
                    for j in 0..8 {
                        v[8 * k + j] = op.reduce(v[8 * k + j], w[j], first + r);
                    }
                }
            } else {
                for j in 0..C {
                    v[j] = op.reduce(v[j], widen(x[j]), first + r);
                }
            }
        }
        *block = v;
        at += C;
    }
    let ragged = blocks.into_remainder();
    for (r, row) in rows.iter().enumerate() {
        for (a, &x) in ragged.iter_mut().zip(&row[at..]) {
            *a = op.reduce(*a, widen(x), first + r);
        }
    }
}

/// Sets of 8 lanes a leaf folds its 8-element chunks into in turn, by the
/// accumulator's size. With one set, each chunk's adds wait on the last
/// chunk's: 8 f32 lanes are one AVX2 register, one chain of dependent adds
/// (4 cycles each), which limited rows of 128 and longer to about 8 bytes
/// a cycle on a core. Several sets are as many independent chains:
/// single-threaded on 4 MB inputs (the 2-core machine, AVX2), f32 rows of
/// 512 and 4096 ran 1.25-1.45x faster with 4 sets and f16 rows of 4096
/// 1.6x, rows of 32 and 128 level. (An array of sets indexed in the loop
/// ran slower than one set: each set must be a local of its own.) Wide
/// states (Welford's, value-index pairs) keep one set: their folds are
/// long already, and more sets would not fit the registers.
const fn lane_sets<A>() -> usize {
    match std::mem::size_of::<A>() {
        0..=4 => 4,
        5..=8 => 2,
        _ => 1,
    }
}

/// Folds `x[i]` (reduce index `first + i`) into 8 lanes: inputs of fewer
/// than `8 * lane_sets` elements fold element `i` into lane `i % 8`;
/// longer ones fold their whole blocks of `8 * lane_sets` elements chunk
/// `c` into set `c % lane_sets` (set 0 starting from `lanes`, the others
/// from the identity), combine the sets lane by lane in a fixed tree, and
/// fold the rest into lane `i % 8`. The order depends only on the length,
/// so every caller that folds the same slice gets the same bits.
#[inline(always)]
fn accumulate_lanes<T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    first: usize,
    op: &R,
    lanes: &mut [R::Acc; 8],
    conv: impl Fn(T) -> W,
) {
    accumulate_chunks(x, first, op, lanes, |c: &[T; 8]| c.map(&conv), &conv);
}

/// [`accumulate_lanes`] for a type that widens 8 elements at a time with a
/// vector conversion (`widen8`, to f32) and the rest with `widen`: the same
/// lanes in the same order, so the same bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn accumulate_lanes_by8<T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    first: usize,
    op: &R,
    lanes: &mut [R::Acc; 8],
    widen8: impl Fn(&[T; 8]) -> [f32; 8],
    widen: impl Fn(T) -> f32,
) {
    accumulate_chunks(
        x,
        first,
        op,
        lanes,
        |c| widen8(c).map(W::from_elem),
        |v| W::from_elem(widen(v)),
    );
}

/// [`accumulate_lanes`]' loops, each 8 elements widened by `widen8` and
/// the remainder by `widen`; or, for an op that folds a whole run in one
/// step ([`ReduceOps::fold_run`]), that fold combined into the first lane.
#[inline(always)]
fn accumulate_chunks<T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    first: usize,
    op: &R,
    lanes: &mut [R::Acc; 8],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    widen: impl Fn(T) -> W,
) {
    if let Some(run) = op.fold_run(x, first, &widen8, &widen) {
        lanes[0] = op.combine(lanes[0], run);
        return;
    }
    let sets = const { lane_sets::<R::Acc>() };
    let prefetch = Prefetch::for_run::<T>(x.len());
    let fold8 = |lanes: &mut [R::Acc; 8], c: &[T], i: usize| {
        let v = widen8(c.try_into().expect("chunks of 8"));
        for j in 0..8 {
            lanes[j] = op.reduce(lanes[j], v[j], i + j);
        }
    };
    let mut i = first;
    let mut rest = x;
    let c = |a, b| op.combine(a, b);
    if sets == 4 && x.len() >= 32 {
        // The sets as separate locals, so that each stays in registers.
        let id = [op.identity(); 8];
        let (mut s0, mut s1, mut s2, mut s3) = (*lanes, id, id, id);
        let mut blocks = x.chunks_exact(32);
        for b in &mut blocks {
            prefetch.ahead(b);
            fold8(&mut s0, &b[..8], i);
            fold8(&mut s1, &b[8..16], i + 8);
            fold8(&mut s2, &b[16..24], i + 16);
            fold8(&mut s3, &b[24..], i + 24);
            i += 32;
        }
        for j in 0..8 {
            lanes[j] = c(c(s0[j], s1[j]), c(s2[j], s3[j]));
        }
        rest = blocks.remainder();
    } else if sets == 2 && x.len() >= 16 {
        let (mut s0, mut s1) = (*lanes, [op.identity(); 8]);
        let mut blocks = x.chunks_exact(16);
        for b in &mut blocks {
            prefetch.ahead(b);
            fold8(&mut s0, &b[..8], i);
            fold8(&mut s1, &b[8..], i + 8);
            i += 16;
        }
        for j in 0..8 {
            lanes[j] = c(s0[j], s1[j]);
        }
        rest = blocks.remainder();
    }
    let mut chunks = rest.chunks_exact(8);
    for c in &mut chunks {
        prefetch.ahead(c);
        fold8(lanes, c, i);
        i += 8;
    }
    for (j, &v) in chunks.remainder().iter().enumerate() {
        lanes[j] = op.reduce(lanes[j], widen(v), i + j);
    }
}

/// [`CpuElement::fold_rows`], each row through the element's own leaf
/// ([`CpuElement::accumulate_contiguous`]). Rows of a few elements cost
/// per row, not per element: lengths 2 to 8 and 16 take a loop with the
/// length a constant, which the compiler unrolls (lanes, combine and all)
/// with no remainder loop; other lengths go through the leaf with a
/// run-time length ([`fold_leaves`]). Same lanes, same order. (Through the
/// run-time leaf, 256 MiB of f32 rows of 5 took 23 ms on the 2-core
/// machine, against 9 ms with the length a constant and 12 ms for rows of
/// 8; rows of 9 and more run near the plain read either way.)
#[inline(always)]
fn fold_rows_by_leaf<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    stride: usize,
    n: usize,
    op: &R,
    out: &mut [R::Acc],
) {
    let conv = T::widen::<W>;
    #[inline(always)]
    fn rows_of<const N: usize, T: CpuElement, W: Compute, R: ReduceOps<W>>(
        x: &[T],
        stride: usize,
        op: &R,
        out: &mut [R::Acc],
        conv: impl Fn(T) -> W + Copy,
    ) {
        let one_value = size_of::<R::Acc>() <= size_of::<W>();
        let prefetch = Prefetch::here();
        let mut done = fold_vector_rows(x, stride, N, op, out, |c| c.map(conv));
        if done == 0 && stride == N && R::FOLDS_ROW_GROUPS {
            done = fold_row_groups::<N, T, W, R>(x, N, op, out, conv);
        }
        // After the AVX2 loop only the rows past its whole groups are left,
        // for the row-by-row loop at the end.
        if done == 0 && stride == N && N <= 8 && one_value {
            // Rows of at most one value a lane, end to end, whose state is
            // one compute value: SIDE_BY_SIDE rows at a time, the lanes of
            // every row side by side, so that each step of the leaf is one
            // vector operation across rows. Single-threaded on the 2-core
            // machine (8 MiB, from cache), f32 sums of rows of 2 went from
            // 590 to 190 µs, of 8 from 295 to 230, bf16 and f16 rows of 2
            // from 760-1000 to 360-480, and amax and norm alike. Rows of 16
            // ran 1.8x slower so, and pairs of state (argmax, Welford's,
            // logsumexp's) 1.3-7x slower: they fold row by row below. On
            // two threads over 256 MiB, where the memory is the limit,
            // f16 rows of 2 went from 60 to 27 ms, bf16 from 30-47 to 16,
            // f32 from 15.7 to 13-14.5, and rows of 3-8 moved within the
            // noise; on the 16-core host f32 rows of 3 and 5 and 16-bit
            // rows of 2 ran 1.3-1.6x faster, rows of 8 level.
            done = out.len() / SIDE_BY_SIDE * SIDE_BY_SIDE;
            for (g, o) in out[..done].chunks_exact_mut(SIDE_BY_SIDE).enumerate() {
                let xg = &x[g * SIDE_BY_SIDE * N..(g + 1) * SIDE_BY_SIDE * N];
                prefetch.ahead(xg);
                let mut lanes = [[op.identity(); SIDE_BY_SIDE]; 8];
                for i in 0..N {
                    for r in 0..SIDE_BY_SIDE {
                        lanes[i % 8][r] = op.reduce(lanes[i % 8][r], conv(xg[r * N + i]), i);
                    }
                }
                o.copy_from_slice(&combine_lanes_across(op, lanes));
            }
        } else if done == 0 && stride == N && one_value {
            // Longer rows end to end (16): each row folds into its lanes
            // along the row, as a leaf does, and then SIDE_BY_SIDE rows'
            // lanes combine side by side, one vector operation across rows
            // a step, where a row alone combined its 8 lanes inside one
            // register (1.7x faster from cache in f32). The same lanes and
            // the same tree as `fold_leaf`, so the same bits.
            done = out.len() / SIDE_BY_SIDE * SIDE_BY_SIDE;
            for (g, o) in out[..done].chunks_exact_mut(SIDE_BY_SIDE).enumerate() {
                let xg = &x[g * SIDE_BY_SIDE * N..(g + 1) * SIDE_BY_SIDE * N];
                prefetch.ahead(xg);
                let mut by_row = [[op.identity(); 8]; SIDE_BY_SIDE];
                for (r, lanes) in by_row.iter_mut().enumerate() {
                    accumulate_lanes(&xg[r * N..(r + 1) * N], 0, op, lanes, conv);
                }
                let lanes: [[R::Acc; SIDE_BY_SIDE]; 8] =
                    std::array::from_fn(|j| std::array::from_fn(|r| by_row[r][j]));
                o.copy_from_slice(&combine_lanes_across(op, lanes));
            }
        }
        for (i, o) in out.iter_mut().enumerate().skip(done) {
            let row: &[T; N] = x[i * stride..i * stride + N].try_into().expect("rows of N");
            prefetch.ahead(row);
            *o = fold_leaf(row, op, conv);
        }
    }
    match n {
        2 => rows_of::<2, T, W, R>(x, stride, op, out, conv),
        3 => rows_of::<3, T, W, R>(x, stride, op, out, conv),
        4 => rows_of::<4, T, W, R>(x, stride, op, out, conv),
        5 => rows_of::<5, T, W, R>(x, stride, op, out, conv),
        6 => rows_of::<6, T, W, R>(x, stride, op, out, conv),
        7 => rows_of::<7, T, W, R>(x, stride, op, out, conv),
        8 => rows_of::<8, T, W, R>(x, stride, op, out, conv),
        16 => rows_of::<16, T, W, R>(x, stride, op, out, conv),
        _ if R::FOLDS_ROW_GROUPS && stride == n && side_by_side(n, size_of::<W>()) => {
            let done = fold_row_groups::<0, T, W, R>(x, n, op, out, conv);
            for (i, o) in out.iter_mut().enumerate().skip(done) {
                *o = fold_leaf(&x[i * n..(i + 1) * n], op, conv);
            }
        }
        _ => fold_leaves(
            op,
            n,
            out,
            #[inline(always)]
            |i, lanes| T::accumulate_contiguous(&x[i * stride..i * stride + n], 0, op, lanes),
        ),
    }
}

/// The longest rows, in bytes of compute values, that an op with
/// [`ReduceOps::FOLDS_ROW_GROUPS`] folds side by side; longer rows fold one
/// at a time, by the index ops' two passes over a row (`fold_run`). On
/// the 2-core machine (`scripts/ab_cpu.py`, 3 rounds, argmax of 128-268
/// MB, two threads), side by side against row by row: f32 rows of 32, 64
/// and 128 (512 bytes) ran 3.6x, 2.2x and 1.14x faster, and of 256 (1
/// KiB) 0.85x; f16 and bf16 rows of 128 1.6-1.9x; f64 and i64 rows of
/// 128 (1 KiB) 0.78x and 0.59x.
const SIDE_BY_SIDE_BYTES: usize = 512;

/// Folds the whole groups of [`SIDE_BY_SIDE`] rows of `n` elements end to
/// end in `x` into `out` by [`ReduceOps::fold_row_group`] (`N`: `n` where
/// known at compile time, else 0) and returns the number of rows folded;
/// the caller folds the rest.
#[inline(always)]
fn fold_row_groups<const N: usize, T: CpuElement, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    n: usize,
    op: &R,
    out: &mut [R::Acc],
    conv: impl Fn(T) -> W + Copy,
) -> usize {
    // The index ops: 8 rows side by side, each row's best value and its
    // position by selects. Row by row through `fold_leaf`, a short row's
    // pick was compares and a branch random rows mispredict: on the 2-core
    // machine (`scripts/ab_cpu.py`, 3 rounds, argmax of 268 MB), rows of
    // 2-16 ran 2.1-5x faster this way in f32, f16, bf16 and f64, i64 rows
    // of 16 1.3x and of 2 level.
    let prefetch = Prefetch::here();
    let done = out.len() / SIDE_BY_SIDE * SIDE_BY_SIDE;
    for (g, o) in out[..done].chunks_exact_mut(SIDE_BY_SIDE).enumerate() {
        let xg = &x[g * SIDE_BY_SIDE * n..];
        prefetch.ahead(&xg[..SIDE_BY_SIDE * n]);
        op.fold_row_group::<N, T>(
            xg,
            n,
            T::widen8,
            conv,
            o.try_into().expect("a group of rows"),
        );
    }
    done
}

/// Rows of 8 or 16 elements end to end with a state of 4 bytes, folded by
/// [`super::simd::fold_short_rows_avx2`] where the loops run with AVX2:
/// their lanes combine 8 rows at a time in registers, the same tree with
/// fewer shuffles than the portable loops compile to. Returns the number
/// of rows folded, whole groups of 8 (0 where this does not apply); the
/// caller folds the rest.
#[inline(always)]
fn fold_vector_rows<T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    stride: usize,
    n: usize,
    op: &R,
    out: &mut [R::Acc],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if stride == n
        && size_of::<R::Acc>() == 4
        && size_of::<R::Acc>() <= size_of::<W>()
        && super::isa::avx2()
    {
        use super::simd::fold_short_rows_avx2;
        let prefetch = Prefetch::here();
        // SAFETY: the loops run with AVX2.
        return unsafe {
            match n {
                8 => fold_short_rows_avx2::<8, T, W, R>(x, op, out, widen8, prefetch),
                16 => fold_short_rows_avx2::<16, T, W, R>(x, op, out, widen8, prefetch),
                _ => 0,
            }
        };
    }
    let _ = (x, stride, n, op, out, widen8);
    0
}

/// Rows [`fold_leaves`] folds into lanes before it combines them.
const ROW_GROUP: usize = 16;

/// `out[i]` = the leaf of row `i` (of `n` elements), whose lanes
/// `lanes_of(i, lanes)` folds. Rows of 4-byte accumulators with a whole
/// block of lane sets fold the lanes of a group of rows first, then
/// combine them: folded and combined row by row, the compiler laid each
/// row's 8 lanes out for the combine and split them into 128- and 64-bit
/// pieces in the loop, where stored a row at a time into the group they
/// are one register. Single-threaded on the 2-core machine (rows from
/// cache, the two builds alternated), f32 rows of 64-512 went from 15-47
/// to 33-73 GB/s, bf16 rows of 128-512 from 7-12 to 20-55 and f16 from
/// 8-14 to 16-41. Wider accumulators (f64: two registers of lanes) and
/// shorter rows measured level or slower grouped, so they fold and
/// combine row by row.
#[inline(always)]
fn fold_leaves<W: Compute, R: ReduceOps<W>>(
    op: &R,
    n: usize,
    out: &mut [R::Acc],
    mut lanes_of: impl FnMut(usize, &mut [R::Acc; 8]),
) {
    let sets = const { lane_sets::<R::Acc>() };
    if sets < 4 || n < 8 * sets {
        for (i, o) in out.iter_mut().enumerate() {
            let mut lanes = [op.identity(); 8];
            lanes_of(i, &mut lanes);
            *o = combine_lanes(op, &lanes);
        }
        return;
    }
    let mut group = [[op.identity(); 8]; ROW_GROUP];
    for (g, out) in out.chunks_mut(ROW_GROUP).enumerate() {
        for (r, lanes) in group[..out.len()].iter_mut().enumerate() {
            *lanes = [op.identity(); 8];
            lanes_of(g * ROW_GROUP + r, lanes);
        }
        for (o, lanes) in out.iter_mut().zip(&group) {
            *o = combine_lanes(op, lanes);
        }
    }
}

/// The pairwise tree over 8 lanes, ((0+1)+(2+3))+((4+5)+(6+7)), with `c`
/// combining two of whatever a lane holds: one row's state, or a state of
/// each of several rows side by side.
#[inline(always)]
pub(super) fn lane_tree<L>(l: [L; 8], c: impl Fn(L, L) -> L) -> L {
    let [l0, l1, l2, l3, l4, l5, l6, l7] = l;
    c(c(c(l0, l1), c(l2, l3)), c(c(l4, l5), c(l6, l7)))
}

/// Combines one row's 8 lanes ([`lane_tree`]).
#[inline(always)]
pub(super) fn combine_lanes<W: Compute, R: ReduceOps<W>>(op: &R, l: &[R::Acc; 8]) -> R::Acc {
    lane_tree(*l, |a, b| op.combine(a, b))
}

/// [`combine_lanes`] for `S` rows side by side: `l[j][r]` is lane `j` of
/// row `r`, and each step of the tree is one operation across the rows.
#[inline(always)]
fn combine_lanes_across<W: Compute, R: ReduceOps<W>, const S: usize>(
    op: &R,
    l: [[R::Acc; S]; 8],
) -> [R::Acc; S] {
    lane_tree(l, |a: [R::Acc; S], b: [R::Acc; S]| {
        std::array::from_fn(|r| op.combine(a[r], b[r]))
    })
}

/// One leaf of the pairwise tree over a whole row (reduce indices from 0):
/// the row folded into 8 lanes ([`accumulate_lanes`]), then the lanes
/// combined.
#[inline(always)]
fn fold_leaf<T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    op: &R,
    conv: impl Fn(T) -> W,
) -> R::Acc {
    // An op that folds a run in one step needs no lanes to combine.
    if let Some(run) = op.fold_run(x, 0, |c: &[T; 8]| c.map(&conv), &conv) {
        return run;
    }
    let mut lanes = [op.identity(); 8];
    accumulate_lanes(x, 0, op, &mut lanes, conv);
    combine_lanes(op, &lanes)
}

impl CpuElement for f32 {}
impl CpuElement for f64 {}
impl CpuElement for i32 {}
impl CpuElement for i64 {}

/// u8 and bool integer sums add bytes among themselves first
/// ([`CpuElement::summed_bytes`]).
impl CpuElement for u8 {
    #[inline(always)]
    fn summed_bytes<W: Compute, R: ReduceOps<W>>(x: &[u8]) -> Option<&[u8]> {
        R::SUMS_INTEGERS.then_some(x)
    }
}

/// As u8: a bool is one byte, 0 or 1, so its sum is its bytes' sum.
impl CpuElement for bool {
    #[inline(always)]
    fn summed_bytes<W: Compute, R: ReduceOps<W>>(x: &[bool]) -> Option<&[u8]> {
        // SAFETY: a bool is one byte holding 0 or 1, a valid u8, and the
        // bytes borrow `x`.
        R::SUMS_INTEGERS
            .then(|| unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<u8>(), x.len()) })
    }
}

/// The sum of `x`'s bytes. On x86-64, `psadbw` (SSE2, in every x86-64
/// CPU) adds 16 bytes into two 64-bit lanes an instruction, in four
/// independent chains; elsewhere [`byte_sum_by_lanes`].
#[inline(always)]
fn byte_sum(x: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_add_epi64, _mm_loadl_epi64, _mm_loadu_si128, _mm_sad_epu8,
            _mm_setzero_si128, _mm_storeu_si128,
        };
        let mut blocks = x.chunks_exact(64);
        // Rows shorter than a block (and each row's last bytes) take
        // 16-byte and then 8-byte loads, so that at most 7 bytes are added
        // one by one.
        let mut sixteens = blocks.remainder().chunks_exact(16);
        let (eight, tail) = match sixteens.remainder() {
            r if r.len() >= 8 => r.split_at(8),
            r => (&r[..0], r),
        };
        // SAFETY: SSE2 is in the x86-64 baseline; each 16-byte load reads
        // a 16-byte piece of `x` (unaligned loads), the 8-byte load the 8
        // bytes of `eight` when it has them, and the store writes the 16
        // bytes of `lanes`.
        let vector_total = unsafe {
            let zero = _mm_setzero_si128();
            let mut acc = [zero; 4];
            for block in &mut blocks {
                let p = block.as_ptr().cast::<__m128i>();
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = _mm_add_epi64(*a, _mm_sad_epu8(_mm_loadu_si128(p.add(k)), zero));
                }
            }
            for sixteen in &mut sixteens {
                let v = _mm_loadu_si128(sixteen.as_ptr().cast::<__m128i>());
                acc[0] = _mm_add_epi64(acc[0], _mm_sad_epu8(v, zero));
            }
            if !eight.is_empty() {
                let v = _mm_loadl_epi64(eight.as_ptr().cast::<__m128i>());
                acc[1] = _mm_add_epi64(acc[1], _mm_sad_epu8(v, zero));
            }
            let sum = _mm_add_epi64(_mm_add_epi64(acc[0], acc[1]), _mm_add_epi64(acc[2], acc[3]));
            let mut lanes = [0u64; 2];
            _mm_storeu_si128(lanes.as_mut_ptr().cast::<__m128i>(), sum);
            lanes[0] + lanes[1]
        };
        vector_total + tail.iter().map(|&b| u64::from(b)).sum::<u64>()
    }
    #[cfg(not(target_arch = "x86_64"))]
    byte_sum_by_lanes(x)
}

/// The sum of `x`'s bytes without x86-64's `psadbw`: [`BYTE_SUM_LANES`]
/// 16-bit lanes take a byte each a step (a widening and an add of a vector
/// of bytes), emptied into the total before they can overflow.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn byte_sum_by_lanes(x: &[u8]) -> u64 {
    // 257 bytes of 255 fill a 16-bit lane (257 * 255 = 65535).
    const STEPS: usize = 256;
    let mut total = 0u64;
    for block in x.chunks(BYTE_SUM_LANES * STEPS) {
        let mut lanes = [0u16; BYTE_SUM_LANES];
        let mut steps = block.chunks_exact(BYTE_SUM_LANES);
        for step in &mut steps {
            let step: &[u8; BYTE_SUM_LANES] = step.try_into().expect("whole steps");
            for (lane, &b) in lanes.iter_mut().zip(step) {
                *lane += u16::from(b);
            }
        }
        total += lanes.iter().map(|&l| u64::from(l)).sum::<u64>();
        total += steps.remainder().iter().map(|&b| u64::from(b)).sum::<u64>();
    }
    total
}

/// Lanes of [`byte_sum_by_lanes`]: two 128-bit vectors of 16-bit lanes.
const BYTE_SUM_LANES: usize = 32;

/// Calls `f(start, block)` for `x` converted to f32 a [`BLOCK`] at a time
/// with `convert`, into a stack buffer it writes before anyone reads it
/// (so never zeroed). Blocks start at multiples of 8, so lane assignment
/// does not depend on the block size.
#[inline(always)]
fn for_each_f32_block<T>(
    x: &[T],
    convert: impl for<'b> Fn(&[T], &'b mut [MaybeUninit<f32>]) -> &'b mut [f32],
    mut f: impl FnMut(usize, &[f32]),
) {
    let mut buf = [MaybeUninit::uninit(); BLOCK];
    for (i, chunk) in x.chunks(BLOCK).enumerate() {
        f(i * BLOCK, convert(chunk, &mut buf[..chunk.len()]));
    }
}

/// f16 converts a block at a time into an f32 buffer with
/// [`f16_to_f32`], then takes the f32 paths. Long rows widen in
/// registers instead where the CPU converts 8 at a time (F16C, detected at
/// run time), which saves the buffer's store and load: 1.5x faster, the
/// same lanes, so the same bits. (Short rows keep the blocks: rows of 4
/// converted row by row in registers ran 3x slower than as one slice.)
impl CpuElement for f16 {
    #[inline(always)]
    fn widen8<W: Compute>(x: &[Self; 8]) -> [W; 8] {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_f16c() {
            // SAFETY: the features the function needs were detected.
            return unsafe { super::simd::f16x8_widen_f16c(x) };
        }
        x.map(Self::widen)
    }

    #[inline(always)]
    fn accumulate_contiguous<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        first: usize,
        op: &R,
        lanes: &mut [R::Acc; 8],
    ) {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_f16c() {
            // SAFETY: the features the function enables were detected.
            unsafe { super::simd::accumulate_lanes_f16c(x, first, op, lanes) };
            return;
        }
        for_each_f32_block(x, f16_to_f32, |start, b| {
            accumulate_lanes(b, first + start, op, lanes, W::from_elem::<f32>)
        });
    }

    #[inline(always)]
    fn fold_rows<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        stride: usize,
        n: usize,
        op: &R,
        out: &mut [R::Acc],
    ) {
        if n >= F16_REGISTER_ROW {
            // Each row widened in registers, as a long row is.
            return fold_rows_by_leaf(x, stride, n, op, out);
        }
        // Rows of 8 and 16 widen in registers too, F16C coming with AVX2.
        // Through the buffer below, rows of 16 took 1.8x f32's time an
        // element (single-threaded, from cache); this way 1.2x.
        #[cfg(target_arch = "x86_64")]
        let (x, out) = {
            // SAFETY: `fold_vector_rows` only widens where AVX2 is in use,
            // and F16C comes with it.
            let done = fold_vector_rows(x, stride, n, op, out, |c| unsafe {
                super::simd::f16x8_widen_f16c(c)
            });
            (&x[done * stride..], &mut out[done..])
        };
        // Whole rows a block: end-to-end rows convert as one slice,
        // rows with gaps one row at a time.
        let rows = (BLOCK / n).max(1);
        let mut buf = [MaybeUninit::uninit(); BLOCK];
        for (c, out) in out.chunks_mut(rows).enumerate() {
            let (first, len) = (c * rows * stride, out.len() * n);
            let widened: &[f32] = if stride == n {
                f16_to_f32(&x[first..first + len], &mut buf[..len])
            } else {
                for (i, b) in buf[..len].chunks_exact_mut(n).enumerate() {
                    let row = first + i * stride;
                    f16_to_f32(&x[row..row + n], b);
                }
                // SAFETY: the loop wrote each of the `len / n` rows' `n`
                // values, and `MaybeUninit<f32>` has the layout of `f32`.
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<f32>(), len) }
            };
            // The widened rows take f32's row loops, whose rows of 2-16
            // have a length known at compile time: through the run-time
            // length of `fold_leaves`, f16 rows of 2 took twice bf16's time.
            // (Their prefetches land past the buffer, to no effect: the
            // conversion's are the ones that reach ahead in the input.)
            fold_rows_by_leaf(widened, n, n, op, out);
        }
    }

    #[inline(always)]
    fn accumulate_row<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        idx: usize,
        op: &R,
        acc: &mut [R::Acc],
    ) {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_f16c() {
            // SAFETY: the features the function enables were detected.
            unsafe { super::simd::accumulate_row_f16c(x, idx, op, acc) };
            return;
        }
        for_each_f32_block(x, f16_to_f32, |start, b| {
            for (a, &v) in acc[start..start + b.len()].iter_mut().zip(b) {
                *a = op.reduce(*a, W::from_elem(v), idx);
            }
        });
    }

    #[inline(always)]
    fn fold_columns<W: Compute, R: ReduceOps<W>>(
        rows: &[&[Self]],
        first: usize,
        op: &R,
        acc: &mut [R::Acc],
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::mem::size_of::<R::Acc>() <= 8 && super::simd::has_f16c() {
            // SAFETY: the features the function enables were detected.
            unsafe { super::simd::fold_columns_f16c(rows, first, op, acc) };
            return;
        }
        // Each row's piece of a column block converted into its own f32
        // buffer (a pass's buffers together stay in L1), then the f32 fold.
        let mut buf = [[MaybeUninit::uninit(); F16_COLUMN_BLOCK]; ROWS_PER_PASS];
        for (c, acc) in acc.chunks_mut(F16_COLUMN_BLOCK).enumerate() {
            let (lo, n) = (c * F16_COLUMN_BLOCK, acc.len());
            let converted: SmallVec<[&[f32]; ROWS_PER_PASS]> = buf
                .iter_mut()
                .zip(rows)
                .map(|(b, x)| &*f16_to_f32(&x[lo..lo + n], &mut b[..n]))
                .collect();
            fold_columns(&converted, first, op, acc, W::from_elem::<f32>);
        }
    }

    /// Only with F16C: without it each f16 converts through a software
    /// routine, which the row loop avoids by converting blocks through a
    /// buffer.
    #[inline(always)]
    fn strips_in_registers() -> bool {
        #[cfg(target_arch = "x86_64")]
        return super::simd::has_f16c();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    #[inline(always)]
    fn fold_strips<W: Compute, R: ReduceOps<W>>(
        span: &[Self],
        stride: usize,
        n: usize,
        first: usize,
        op: &R,
        acc: &mut [R::Acc],
    ) {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_f16c() {
            // SAFETY: the features the function enables were detected.
            unsafe { super::simd::fold_strips_f16c(span, stride, n, first, op, acc) };
            return;
        }
        fold_strips_by8(
            span,
            stride,
            n,
            first,
            op,
            acc,
            |c| c.map(f16::widen),
            f16::widen,
        );
    }
}

/// f16 rows at least this long widen row by row in registers (F16C, as a
/// long row does) rather than a block of rows at a time into a buffer:
/// single-threaded on the 2-core machine, rows of 64-512 ran 1.5-2.5x
/// faster in registers.
const F16_REGISTER_ROW: usize = 32;

/// Columns an f16 column pass converts at a time: [`ROWS_PER_PASS`]
/// buffers of this many f32 are 4 KiB.
const F16_COLUMN_BLOCK: usize = 256;

/// bf16 to f32 as a 16-bit shift: exact for every value (NaN and Inf
/// included) and vectorisable, unlike `half`'s element-wise routine, which
/// tests for NaN first.
#[inline(always)]
fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits(u32::from(x.to_bits()) << 16)
}

impl CpuElement for bf16 {
    #[inline(always)]
    fn widen<W: Compute>(self) -> W {
        W::from_elem(bf16_to_f32(self))
    }

    /// Long rows widen 8 at a time with SSE2 (the x86-64 baseline): the
    /// element-wise shift vectorised into shuffles with two lanes per
    /// register there, 2.3x slower.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn accumulate_contiguous<W: Compute, R: ReduceOps<W>>(
        x: &[Self],
        first: usize,
        op: &R,
        lanes: &mut [R::Acc; 8],
    ) {
        accumulate_lanes_by8(x, first, op, lanes, super::simd::bf16x8_to_f32, bf16_to_f32);
    }
}

#[cfg(test)]
mod tests {
    use super::super::ops::SumOps;
    use super::*;

    /// Both ways of adding bytes against a plain fold: every value, ragged
    /// ends around the 64-byte blocks and the 16-bit lanes' steps, and 255s
    /// past the point where a lane is emptied (8192 bytes).
    #[test]
    fn byte_sums_match_a_plain_fold() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut random: Vec<u8> = (0..70_001)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        random[..256].copy_from_slice(&std::array::from_fn::<u8, 256, _>(|i| i as u8));
        let full = vec![255u8; 70_001];
        for x in [&random, &full] {
            for (lo, len) in [
                (0, 0),
                (0, 1),
                (3, 63),
                (5, 64),
                (1, 65),
                (7, 1000),
                (0, 8193),
                (9, 69_990),
                (2, 8),
                (1, 15),
                (0, 16),
                (3, 24),
                (5, 31),
                (6, 47),
                (4, 100),
            ] {
                let x = &x[lo..lo + len];
                let plain: u64 = x.iter().map(|&b| u64::from(b)).sum();
                assert_eq!(byte_sum(x), plain, "byte_sum of {len} bytes from {lo}");
                assert_eq!(
                    byte_sum_by_lanes(x),
                    plain,
                    "byte_sum_by_lanes of {len} bytes from {lo}"
                );
            }
        }
    }

    /// The 16-bit long-row leaves (vector conversions, F16C where the CPU
    /// has it) against element-wise widening, bit for bit: every bit
    /// pattern (NaN, Inf, subnormals) and ragged ends.
    fn vector_leaf_matches_elementwise<T: CpuElement>(from_bits: impl Fn(u16) -> T) {
        use super::super::index_ops::ArgMaxOps;
        let all: Vec<T> = (0..=u16::MAX).map(from_bits).collect();
        for (lo, len) in [(0, 1 << 16), (3, 1000), (9, 13), (1, 7)] {
            let x = &all[lo..lo + len.min(all.len() - lo)];
            let mut a = [0f32; 8];
            T::accumulate_contiguous(x, 0, &SumOps, &mut a);
            let mut b = [0f32; 8];
            accumulate_lanes(x, 0, &SumOps, &mut b, T::widen::<f32>);
            assert!(
                a.iter()
                    .zip(&b)
                    .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())),
                "{lo} {len}: {a:?} vs {b:?}"
            );
            let op = ArgMaxOps;
            let mut a = [op.identity(); 8];
            T::accumulate_contiguous::<f32, _>(x, 5, &op, &mut a);
            let mut b = [op.identity(); 8];
            accumulate_lanes(x, 5, &op, &mut b, T::widen::<f32>);
            assert!(
                a.iter().zip(&b).all(|(a, b)| a.index == b.index),
                "{lo} {len}"
            );
        }
    }

    /// The lanes of [`accumulate_lanes`] against its documented order,
    /// written out: lanes carried in, inputs shorter than a block of sets,
    /// whole blocks, and a ragged rest, for 4 sets (f32) and 2 (f64).
    fn lanes_follow_the_documented_order<W: Compute + std::ops::Add<Output = W>>(
        sets: usize,
        make: impl Fn(usize) -> W,
        bits: impl Fn(W) -> u64,
    ) {
        for n in [0, 7, 8 * sets - 1, 8 * sets, 8 * sets + 1, 100, 1000] {
            let x: Vec<W> = (0..n).map(&make).collect();
            let carried: [W; 8] = std::array::from_fn(|j| make(5000 + j));
            let mut got = carried;
            accumulate_lanes(&x, 0, &SumOps, &mut got, |v| v);
            let mut want = carried;
            let whole = if n >= 8 * sets {
                n / (8 * sets) * 8 * sets
            } else {
                0
            };
            if whole > 0 {
                let mut set = vec![[W::ZERO; 8]; sets];
                set[0] = carried;
                for (i, &v) in x[..whole].iter().enumerate() {
                    set[(i / 8) % sets][i % 8] = set[(i / 8) % sets][i % 8] + v;
                }
                for j in 0..8 {
                    want[j] = match sets {
                        4 => (set[0][j] + set[1][j]) + (set[2][j] + set[3][j]),
                        _ => set[0][j] + set[1][j],
                    };
                }
            }
            for (i, &v) in x.iter().enumerate().skip(whole) {
                want[i % 8] = want[i % 8] + v;
            }
            for j in 0..8 {
                assert_eq!(bits(got[j]), bits(want[j]), "{n} inputs, lane {j}");
            }
        }
    }

    #[test]
    fn long_inputs_fold_into_sets_of_lanes() {
        let v =
            |i: usize| ((i * 7919) % 1013) as f64 * 0.37 - 150.0 + (i % 11 == 0) as u8 as f64 * 1e6;
        lanes_follow_the_documented_order::<f32>(4, |i| v(i) as f32, |w| w.to_bits() as u64);
        lanes_follow_the_documented_order::<f64>(2, v, f64::to_bits);
    }

    #[test]
    fn vector_leaves_match_elementwise() {
        vector_leaf_matches_elementwise(f16::from_bits);
        vector_leaf_matches_elementwise(bf16::from_bits);
    }

    /// A column pass, the same rows folded a row at a time and in strips, against
    /// folding each output's column element by element, bit for bit:
    /// every accumulator width's register block (sum in 4 and 8 bytes,
    /// argmax's value-index pairs, Welford's state), ragged ends, a pass
    /// of one row and a full pass, and f16's conversions (in registers,
    /// 8 at a time, where the CPU has F16C; through a buffer otherwise).
    fn column_passes_match_elementwise<T: CpuElement>(make: impl Fn(usize) -> T) {
        use super::super::index_ops::ArgMaxOps;
        use super::super::welford::WelfordOps;
        fn check<T: CpuElement, W: Compute, R: ReduceOps<W>>(
            x: &[T],
            w: usize,
            n: usize,
            op: &R,
            same: impl Fn(&R::Acc, &R::Acc) -> bool,
        ) {
            // Rows `w + 3` apart and longer than the pass, as tiles are.
            let rows: Vec<&[T]> = (0..n).map(|r| &x[r * (w + 3)..]).collect();
            // A pass holds at most ROWS_PER_PASS rows (the f16 buffers).
            let mut fast = vec![op.identity(); w];
            if n <= ROWS_PER_PASS {
                T::fold_columns(&rows, 7, op, &mut fast);
            }
            // The same rows as strips, the first row at `x[0]`.
            let mut strips = vec![op.identity(); w];
            let span = &x[..(n - 1) * (w + 3) + w];
            T::fold_strips(span, w + 3, n, 7, op, &mut strips);
            // The same rows a row at a time.
            let mut by_row = vec![op.identity(); w];
            for (r, row) in rows.iter().enumerate() {
                T::accumulate_row(&row[..w], 7 + r, op, &mut by_row);
            }
            for (j, ((f, b), s)) in fast.iter().zip(&by_row).zip(&strips).enumerate() {
                let mut slow = op.identity();
                for (r, row) in rows.iter().enumerate() {
                    slow = op.reduce(slow, row[j].widen(), 7 + r);
                }
                assert!(
                    n > ROWS_PER_PASS || same(f, &slow),
                    "output {j} of {w}, {n} rows"
                );
                assert!(
                    same(b, &slow),
                    "output {j} of {w}, {n} rows, a row at a time"
                );
                assert!(same(s, &slow), "output {j} of {w}, {n} rows, in strips");
            }
        }
        let x: Vec<T> = (0..40 * (BLOCK + 40)).map(make).collect();
        for w in [1, 2, 7, 31, 32, 33, 255, 256, 257, BLOCK + 37] {
            for n in [1, 3, ROWS_PER_PASS, 37] {
                check::<T, f32, _>(&x, w, n, &SumOps, |a, b| a.to_bits() == b.to_bits());
                check::<T, f64, _>(&x, w, n, &SumOps, |a, b| a.to_bits() == b.to_bits());
                check::<T, f32, _>(&x, w, n, &ArgMaxOps, |a, b| a.index == b.index);
                let welford =
                    WelfordOps::<f64>::new(crate::reduce::OpParams { values: [1.0, 0.0] });
                check::<T, f64, _>(&x, w, n, &welford, |a, b| {
                    format!("{a:?}") == format!("{b:?}")
                });
            }
        }
    }

    #[test]
    fn column_passes_fold_each_output_in_row_order() {
        // Mixed magnitudes (so association shows in the bits) and ties.
        let v =
            |i: usize| ((i * 7919) % 1013) as f32 * 0.37 - 150.0 + (i % 11 == 0) as u8 as f32 * 1e6;
        column_passes_match_elementwise::<f32>(v);
        column_passes_match_elementwise::<f64>(|i| v(i) as f64);
        column_passes_match_elementwise::<f16>(|i| f16::from_f32(v(i)));
        column_passes_match_elementwise::<bf16>(|i| bf16::from_f32(v(i)));
        column_passes_match_elementwise::<i64>(|i| (i * 7919 % 1013) as i64 - 500);
    }

    #[test]
    fn bf16_shift_conversion_is_exact() {
        for bits in (0..=u16::MAX)
            .step_by(7)
            .chain([0x7f80, 0xff80, 0x7fc1, 0x0001])
        {
            let x = bf16::from_bits(bits);
            let (a, b) = (bf16_to_f32(x), x.to_f32());
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{bits:#x}"
            );
        }
    }
}
