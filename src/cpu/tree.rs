//! The CPU's reduction trees: how the reduced index range of each output is
//! cut up, ordered and spread over threads, for any functor.
//!
//! Two loop shapes cover every iterator:
//! - **inner**: each output reduces its own slice of the input; used when the
//!   reduced dims include the fastest-moving one (or no output dim is
//!   contiguous). Outputs run in parallel. Where each output's slice is
//!   short runs far apart (channel statistics), [`super::runs`] reads a
//!   block of outputs run by run and combines each output's leaves in this
//!   tree's shape.
//! - **outer** (column reductions): the fastest output dim is contiguous in
//!   the input, so a tile of neighbouring outputs folds whole input rows at a
//!   time and the loads stay contiguous and vectorised.
//!
//! Both are pairwise: the reduced index range is halved recursively down to
//! leaves of at most [`LEAF`] elements, which are folded into several
//! independent accumulators. The tree depends only on the shape, so the
//! result is bitwise the same whatever the number of threads (rayon only
//! decides which thread computes which subtree), and f32 rounding error of a
//! sum grows like `log n` rather than `n`.

use super::element::{combine_lanes, CpuElement, ROWS_PER_PASS};
use super::isa::dispatch;
use super::ops::{Compute, ReduceOps};
use super::outputs::{par_blocks, Outputs, Written};
use super::prefetch::Prefetch;
use super::runs::{outputs_per_block, reduce_by_runs};
use super::team;
use crate::iter::TensorIterator;

/// Elements summed sequentially (over 8 lanes) at the bottom of the pairwise tree.
pub(super) const LEAF: usize = 1024;
/// Outputs a column tile accumulates at most: 64 KiB of f32 accumulators, so
/// each input row of a tile is a long contiguous read. Narrower tiles walk
/// the input in short pieces one row stride apart, and each piece costs a
/// TLB miss and a prefetcher restart: on the 2-core machine 16384 against
/// 1024 outputs made sums over 2, 16 and 256 rows 1.1-1.5x faster, f64
/// columns 1.4x and var's columns 1.5-2x (64 against 1024 had made
/// outer_8k_8k 3x slower before).
pub(super) const TILE: usize = 16384;
/// The narrowest column tile [`tile_width`] makes.
pub(super) const MIN_TILE: usize = 1024;
/// Accumulator bytes a column tile keeps in L1 (about the smallest L1 data
/// cache of current x86-64 and aarch64 cores).
pub(super) const L1_ACCUMULATOR_BYTES: usize = 32 << 10;
/// Rows a column tile adds sequentially at the bottom of its pairwise tree.
pub(super) const OUTER_LEAF_ROWS: usize = 128;
/// Work (elements) below which a subtree is not split across threads.
pub(super) const PARALLEL_GRAIN: usize = 1 << 16;

/// The iterator in element units, split into its reduced and output parts.
pub(super) struct Layout {
    /// (size, input stride in elements) of the reduced dims, fastest first.
    pub(super) reduce: Vec<(usize, usize)>,
    /// (size, input stride in elements) of the output dims, fastest first.
    pub(super) output: Vec<(usize, usize)>,
    /// The input's first element.
    pub(super) base: usize,
    /// Outputs.
    pub(super) num_outputs: usize,
    /// Inputs per output.
    pub(super) num_inputs: usize,
}

impl Layout {
    pub(super) fn new(iter: &TensorIterator) -> Layout {
        let esize = iter.element_size(TensorIterator::INPUT) as i64;
        let nr = iter.num_reduce_dims();
        let dims: Vec<(usize, usize)> = iter
            .shape()
            .iter()
            .zip(iter.strides(TensorIterator::INPUT))
            .map(|(&n, &s)| (n, (s / esize) as usize))
            .collect();
        // Output index o is the o-th output in the iterator's order of its
        // kept dims: the result's, or a scratch result's ([`super::order`]).
        Layout {
            reduce: dims[..nr].to_vec(),
            output: dims[nr..].to_vec(),
            base: (iter.data_offset(TensorIterator::INPUT) / esize as u64) as usize,
            num_outputs: iter.num_output_elements(),
            num_inputs: dims[..nr].iter().map(|d| d.0).product(),
        }
    }

    /// Input elements read, in bytes of `elem_bytes` each (saturating: the
    /// thresholds it is compared with are far below).
    pub(super) fn input_bytes(&self, elem_bytes: usize) -> usize {
        self.num_inputs
            .saturating_mul(self.num_outputs)
            .saturating_mul(elem_bytes)
    }

    /// Input offset of the `k`-th element of a dim list's index space.
    fn offset(dims: &[(usize, usize)], mut k: usize) -> usize {
        let mut off = 0;
        for &(n, s) in dims {
            off += (k % n) * s;
            k /= n;
        }
        off
    }

    /// `(row length, row stride)` when every output reduces one contiguous
    /// row of at most [`LEAF`] elements and the rows are one output dim
    /// apart: the layout of row reductions over short rows, where the cost
    /// per row, not the reading, is what limits the inner loop.
    pub(super) fn short_rows(&self) -> Option<(usize, usize)> {
        match (self.reduce.as_slice(), self.output.as_slice()) {
            ([(n, 1)], [(_, stride)]) if (1..=LEAF).contains(n) && stride >= n => {
                Some((*n, *stride))
            }
            _ => None,
        }
    }

    /// The output dim's input stride when each output has exactly one
    /// input (nothing, or only size-1 dims, reduced) along one output dim:
    /// a cast-copy through the functor.
    pub(super) fn single_inputs(&self) -> Option<usize> {
        match (self.reduce.as_slice(), self.output.as_slice()) {
            ([], [(_, stride)]) => Some(*stride),
            _ => None,
        }
    }

    /// Column tiles apply when the fastest output dim is contiguous in the
    /// input while the fastest reduced dim is not.
    pub(super) fn is_outer(&self) -> bool {
        matches!(self.output.first(), Some(&(n, 1)) if n > 1)
            && self.reduce.first().is_some_and(|&(_, s)| s != 1)
    }
}

/// Reduces `data` as `iter` describes with `op`, projecting each output's
/// accumulator into `out`; returns what was written (every output).
pub(super) fn reduce<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    iter: &TensorIterator,
    op: &R,
    out: Outputs<'_>,
) -> Written {
    let layout = Layout::new(iter);
    assert_eq!(
        out.len(),
        layout.num_outputs,
        "internal: one result element per output"
    );
    let run = || {
        if layout.is_outer() {
            reduce_outer(data, &layout, op, out)
        } else {
            reduce_inner(data, &layout, op, out)
        }
    };
    // Work that the trees split across threads enters the team (or, for
    // large inputs, rayon's pool) once, here ([`team::enter`]); the rest
    // stays on the calling thread.
    if splits(layout.num_inputs.saturating_mul(layout.num_outputs)) {
        team::enter(layout.input_bytes(size_of::<T>()), run)
    } else {
        run()
    }
}

fn reduce_inner<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    l: &Layout,
    op: &R,
    out: Outputs<'_>,
) -> Written {
    let grain = (PARALLEL_GRAIN / l.num_inputs.max(1)).max(1);
    if let Some(stride) = l.single_inputs() {
        // The general loop's one-element case, with neither a cursor nor a
        // match per output, so that it vectorises.
        return par_blocks(out, grain, l.num_inputs, &|first, out| {
            out.fill_staged(op, |k, accs| {
                let start = l.base + (first + k) * stride;
                dispatch!(fold_single_inputs(data, start, stride, op, accs))
            })
        });
    }
    if let Some((n, stride)) = l.short_rows() {
        // Rows of at most one leaf, one output dim apart: each stage of a
        // block folds its rows in one loop (the same lanes and combine
        // order as the leaf below, so the same bits), without a call, a
        // cursor or a 16-bit conversion per row.
        return par_blocks(out, grain, l.num_inputs, &|first, out| {
            out.fill_staged(op, |k, accs| {
                let start = l.base + (first + k) * stride;
                let span = (accs.len() - 1) * stride + n;
                dispatch!(T::fold_rows(
                    &data[start..start + span],
                    stride,
                    n,
                    op,
                    accs
                ));
            })
        });
    }
    let threads = rayon::current_num_threads();
    if let Some(block) = outputs_per_block(l, size_of::<T>(), threads) {
        return reduce_by_runs(data, l, op, out, block);
    }
    // Outputs in blocks of `grain`, each block walking its outputs with a
    // running offset: with many short rows, a division per output dim per
    // output would cost more than the row itself.
    par_blocks(out, grain, l.num_inputs, &|first, out| {
        let mut cursor = Cursor::new(&l.output, first);
        out.fill_staged(op, |_, accs| {
            for o in accs {
                let base = l.base + cursor.offset;
                *o = match l.reduce.as_slice() {
                    // Nothing reduced (e.g. only size-1 dims): one element,
                    // still folded into the identity, so a sum of -0.0 is +0.0.
                    [] => op.reduce(op.identity(), data[base].widen(), 0),
                    // One contiguous run: the common row reduction, without index arithmetic.
                    [(n, 1)] => contiguous_tree(&data[base..base + n], 0, op),
                    _ => inner_tree(data, base, &l.reduce, 0, l.num_inputs, op),
                };
                cursor.advance();
            }
        })
    })
}

/// A position in a dim list's index space and its input offset, advanced
/// one element at a time (fastest dim first) without dividing.
pub(super) struct Cursor<'a> {
    dims: &'a [(usize, usize)],
    index: smallvec::SmallVec<[usize; 6]>,
    /// The current position's offset.
    pub(super) offset: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(dims: &'a [(usize, usize)], mut k: usize) -> Cursor<'a> {
        let offset = Layout::offset(dims, k);
        let index = dims
            .iter()
            .map(|&(n, _)| {
                let i = k % n;
                k /= n;
                i
            })
            .collect();
        Cursor {
            dims,
            index,
            offset,
        }
    }

    pub(super) fn advance(&mut self) {
        for (i, &(n, s)) in self.index.iter_mut().zip(self.dims) {
            *i += 1;
            self.offset += s;
            if *i < n {
                return;
            }
            self.offset -= n * s;
            *i = 0;
        }
    }
}

/// Pairwise reduction of a contiguous slice whose first element has reduce
/// index `first`.
fn contiguous_tree<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    first: usize,
    op: &R,
) -> R::Acc {
    if x.len() <= LEAF {
        return combine_lanes(op, &leaf_lanes(x, first, op));
    }
    let mid = split_point(x.len());
    let (lo, hi) = x.split_at(mid);
    let (a, b) = maybe_join(
        mid,
        x.len() - mid,
        || contiguous_tree(lo, first, op),
        || contiguous_tree(hi, first + mid, op),
    );
    op.combine(a, b)
}

/// A contiguous leaf's lanes, folded in a function of their own
/// ([`dispatch!`]'s) into lanes held here. Inlined into the tree, the
/// compiler laid the lanes out in registers for the combine that follows
/// (even and odd lanes apart) and shuffled them on every step of the loop;
/// returned by value from the dispatched function, they were still split
/// into 128- and 64-bit pieces, the f32 loop a mix of 4-lane adds and
/// 2-lane loads. Filled through a reference, each set of 8 f32 lanes is one
/// 256-bit add with AVX2: single-threaded on the 2-core machine, a sum of
/// 64 f32 rows of 4096 (1 MB, from cache) went from 43-53 to 57-59 GB/s a
/// call, the call's fixed costs included.
#[inline(always)]
fn leaf_lanes<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    first: usize,
    op: &R,
) -> [R::Acc; 8] {
    let mut lanes = [op.identity(); 8];
    dispatch!(T::accumulate_contiguous(x, first, op, &mut lanes));
    lanes
}

/// Pairwise reduction of reduce indices `lo..hi` of a (possibly multi-dim,
/// strided) reduce space.
pub(super) fn inner_tree<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    base: usize,
    dims: &[(usize, usize)],
    lo: usize,
    hi: usize,
    op: &R,
) -> R::Acc {
    if hi - lo <= LEAF {
        return leaf_value(data, base, dims, lo, hi, op);
    }
    let mid = lo + split_point(hi - lo);
    let (a, b) = maybe_join(
        mid - lo,
        hi - mid,
        || inner_tree(data, base, dims, lo, mid, op),
        || inner_tree(data, base, dims, mid, hi, op),
    );
    op.combine(a, b)
}

/// The value of the leaf of reduce indices `lo..hi` (at most [`LEAF`]) of
/// a (possibly multi-dim, strided) reduce space.
#[inline(always)]
pub(super) fn leaf_value<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    base: usize,
    dims: &[(usize, usize)],
    lo: usize,
    hi: usize,
    op: &R,
) -> R::Acc {
    let (n0, s0) = dims[0];
    let lanes = if s0 == 1 && lo / n0 == (hi - 1) / n0 {
        // The leaf lies within one contiguous run (channel statistics'
        // planes, split into leaves): the contiguous leaf, whose lanes
        // are the same as one run of the strided leaf's.
        let start = base + Layout::offset(dims, lo);
        leaf_lanes(&data[start..start + (hi - lo)], lo, op)
    } else {
        // Not dispatched: with AVX2, channel statistics (runs of a
        // leaf through this loop) ran 1.5-1.8x slower on the 16-core
        // host.
        strided_leaf(data, base, dims, lo, hi, op)
    };
    combine_lanes(op, &lanes)
}

/// The lanes of reduce indices `lo..hi` (at most a leaf) of a multi-dim
/// or strided reduce space, walked as runs along the fastest reduced dim.
#[inline(always)]
fn strided_leaf<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    base: usize,
    dims: &[(usize, usize)],
    lo: usize,
    hi: usize,
    op: &R,
) -> [R::Acc; 8] {
    let mut lanes = [op.identity(); 8];
    let (n0, s0) = dims[0];
    let mut k = lo;
    while k < hi {
        let i0 = k % n0;
        let run = (n0 - i0).min(hi - k);
        let start = base + Layout::offset(dims, k);
        if s0 == 1 {
            T::accumulate_contiguous(&data[start..start + run], k, op, &mut lanes);
        } else {
            T::accumulate_strided(data, start, s0, run, k, op, &mut lanes);
        }
        k += run;
    }
    lanes
}

/// One input per output: `accs[i]` is the element at `start + i * stride`
/// (any stride, 0 for a broadcast) folded into the identity, so that a
/// sum of -0.0 is +0.0 as in the general loop.
#[inline(always)]
fn fold_single_inputs<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    start: usize,
    stride: usize,
    op: &R,
    accs: &mut [R::Acc],
) {
    let fold = |x: T| op.reduce(op.identity(), x.widen(), 0);
    if stride == 1 {
        let x = &data[start..start + accs.len()];
        for (o, &v) in accs.iter_mut().zip(x) {
            *o = fold(v);
        }
    } else {
        for (i, o) in accs.iter_mut().enumerate() {
            *o = fold(data[start + i * stride]);
        }
    }
}

/// Column tiles per thread where a tile for each thread would be narrower
/// than [`TILE`]. With one tile each, a thread that starts late or runs
/// slow holds up the call with nothing left for the others to take. On the
/// 16-core host, in two runs interleaving the rules, four a thread made f64
/// and i64 columns of 128 rows 1.1-1.2x faster, f32 columns of 512 rows
/// 1.2x and the 32 MB columns of 128 rows 1.2-1.9x; splitting tiles the
/// TILE cap had already made two a thread (f32 columns of 128 rows) was
/// 0.6-0.8x, so those are left whole.
pub(super) const TILES_PER_THREAD: usize = 4;
/// Input bytes a tile's piece of a row keeps at least, so each row's read
/// stays a stream: tiles of 1024 f16 (2 KiB pieces) ran 0.8-0.9x as fast as
/// tiles of 2048 on the 16-core host.
pub(super) const MIN_TILE_BYTES: usize = 4096;

/// Input bytes of a tile's piece of a row, at most, where the threads split
/// the columns ([`tile_width`]).
pub(super) const COLUMN_SPLIT_PIECE_BYTES: usize = 64 << 10;

/// The widest column tile where the threads split the columns: [`TILE`],
/// or fewer outputs where their pieces of a row would pass
/// [`COLUMN_SPLIT_PIECE_BYTES`] (8-byte inputs: 8192). On the 16-core host,
/// f64 and i64 columns of 16 rows over a million outputs (tiles of 8192,
/// eight a thread, against 16384, four) ran 1.01-1.09x and 1.05-1.17x
/// faster in three measurements over two runs; columns of 2 rows
/// 0.98-1.05x.
pub(super) fn column_split_tile_cap(elem_bytes: usize) -> usize {
    TILE.min(COLUMN_SPLIT_PIECE_BYTES / elem_bytes.max(1))
}

/// Whether the threads of a column reduction of `reduced` input rows split
/// the rows (the pairwise tree over them has [`TILES_PER_THREAD`] leaves a
/// thread) rather than the columns ([`tile_width`]).
pub(super) fn threads_split_rows(reduced: usize, threads: usize) -> bool {
    reduced / OUTER_LEAF_ROWS >= TILES_PER_THREAD.saturating_mul(threads)
}

/// Outputs per column tile, for `rows` rows of `width` contiguous outputs,
/// each the reduction of `reduced` input rows, of `elem_bytes`-byte inputs
/// on `threads` threads.
///
/// Where the pairwise tree over the input rows has [`TILES_PER_THREAD`]
/// leaves a thread, the threads split the input rows and every tile is as
/// wide as it may be ([`TILE`]): each thread then reads whole rows, one
/// contiguous stream. Column tiles narrower than the row split every row
/// into pieces one row stride apart, each a prefetcher restart. On the
/// 2-core machine, two threads, 65536 rows of 2048 f16 took 14.5 ms in
/// two tiles of 1024 and 6.8 with the rows split; 4096 rows of 16384 f32
/// 8.0 ms in tiles of 2048 and 5.8 with the rows split.
///
/// Otherwise the columns are what the threads split: tiles as wide as
/// [`column_split_tile_cap`] where a tile for each thread would be wider,
/// else [`TILES_PER_THREAD`] times as many narrower ones (no narrower than
/// [`MIN_TILE`] and [`MIN_TILE_BYTES`]). On the 16-core host, f64 columns
/// of 128 rows over 131072 outputs once made 8 tiles for 16 threads and
/// ran at a third of the read; f32 columns of 256 rows over 262144
/// outputs, a tile of exactly [`TILE`] for each thread, ran 1.38-1.48x
/// faster (three measurements over two runs) in four narrower tiles a
/// thread. A tile's width never changes a result: every output folds its
/// rows in the same order in any tile.
pub(super) fn tile_width(
    width: usize,
    rows: usize,
    reduced: usize,
    elem_bytes: usize,
    threads: usize,
) -> usize {
    let tile = if threads_split_rows(reduced, threads) {
        TILE
    } else {
        let one_each = width.div_ceil(threads.div_ceil(rows.max(1)).max(1));
        let cap = column_split_tile_cap(elem_bytes);
        if one_each > cap {
            cap
        } else {
            one_each
                .div_ceil(TILES_PER_THREAD)
                .max(MIN_TILE_BYTES.div_ceil(elem_bytes.max(1)))
                .min(one_each)
        }
    };
    tile.next_multiple_of(64).max(MIN_TILE).min(width)
}

fn reduce_outer<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    l: &Layout,
    op: &R,
    out: Outputs<'_>,
) -> Written {
    let width = l.output[0].0;
    let threads = rayon::current_num_threads();
    let rows = l.num_outputs / width;
    let tile = tile_width(width, rows, l.num_inputs, size_of::<T>(), threads);
    par_blocks(out, width, l.num_inputs, &|first, row_out| {
        let base = l.base + Layout::offset(&l.output[1..], first / width);
        par_blocks(row_out, tile, l.num_inputs, &|t, tile_out| {
            let mut acc = vec![op.identity(); tile_out.len()];
            let walk = column_walk(
                l,
                tile_out.len(),
                size_of::<T>(),
                size_of::<R::Acc>(),
                T::strips_in_registers(),
            );
            outer_tree(
                data,
                base + t,
                &l.reduce,
                0,
                l.num_inputs,
                op,
                walk,
                &mut acc,
            );
            tile_out.write(op, &acc)
        })
    })
}

/// Pairwise reduction, over reduce indices `lo..hi`, of input rows of
/// `acc.len()` contiguous outputs, written to `acc`, each leaf walking its
/// rows as `walk` says.
#[allow(clippy::too_many_arguments)]
fn outer_tree<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    start: usize,
    dims: &[(usize, usize)],
    lo: usize,
    hi: usize,
    op: &R,
    walk: ColumnWalk,
    acc: &mut [R::Acc],
) {
    let w = acc.len();
    if hi - lo <= OUTER_LEAF_ROWS {
        // One reduced dim (rows a stride apart) needs no divisions a row.
        let at = |k| match dims {
            &[(_, stride)] => start + k * stride,
            _ => start + Layout::offset(dims, k),
        };
        let row = |k| {
            let at = at(k);
            &data[at..at + w]
        };
        if let (true, Some(bytes)) = (w >= BYTE_LEAF_MIN_TILE, T::summed_bytes::<W, R>(data)) {
            let row = |k| {
                let at = at(k);
                &bytes[at..at + w]
            };
            dispatch!(byte_column_leaf(row, lo, hi, op, acc));
            return;
        }
        if R::FOLDS_COLUMN_LEAVES {
            dispatch!(op.fold_column_leaf(row, lo, hi, T::widen8, T::widen, acc));
            return;
        }
        match walk {
            ColumnWalk::Strips { stride } => {
                let first = start + lo * stride;
                let span = &data[first..first + (hi - lo - 1) * stride + w];
                dispatch!(T::fold_strips(span, stride, hi - lo, lo, op, acc));
            }
            ColumnWalk::Rows => dispatch!(column_leaf(row, lo, hi, false, op, acc)),
            ColumnWalk::Passes => dispatch!(column_leaf(row, lo, hi, true, op, acc)),
        }
        return;
    }
    let mid = lo + (hi - lo) / 2;
    // One buffer per tree node, at most a tile wide; a leaf below it reads
    // far more than this.
    let mut right = vec![op.identity(); w];
    maybe_join(
        (mid - lo) * w,
        (hi - mid) * w,
        || outer_tree(data, start, dims, lo, mid, op, walk, acc),
        || outer_tree(data, start, dims, mid, hi, op, walk, &mut right),
    );
    for (x, &y) in acc.iter_mut().zip(&right) {
        *x = op.combine(*x, y);
    }
}

/// How the leaves of a column tile walk their rows ([`column_walk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ColumnWalk {
    /// A row at a time, over accumulators in memory ([`column_leaf`]).
    Rows,
    /// [`ROWS_PER_PASS`] rows a pass along the whole tile, over
    /// accumulators in memory ([`column_leaf`], [`CpuElement::fold_columns`]).
    Passes,
    /// A strip of columns at a time down every row, the strip's
    /// accumulators in registers ([`CpuElement::fold_strips`]); the rows are
    /// `stride` elements apart.
    Strips { stride: usize },
}

/// Row strides that are a multiple of a larger power of two than this (in
/// bytes) put a strip's rows in too few L1 sets: a strip reads the same
/// columns of each row, and rows a multiple of 4 KiB apart land in one
/// set. On the 2-core machine, in cache, strips down rows 4 and 24 KiB
/// apart ran 2.7-3.4x slower than a row at a time, 1.5 and 24 KB apart
/// level to faster.
const STRIP_STRIDE_ALIGN: usize = 512;

/// A leaf's span (its rows times their stride) up to which the strips of
/// an input read from the caches find their pages in the TLB: a strip
/// touches every row's page. Rows 256 KiB apart (a leaf over 32 MiB) ran
/// 1.6-1.8x slower in strips on the 2-core machine, in cache; 25 KB apart
/// (3.2 MiB) 1.4x faster.
const STRIP_LEAF_SPAN: usize = 4 << 20;

/// How a column tile of `tile` outputs walks its rows: strips where they
/// pay ([`strip_stride`]), else several rows a pass where that pays
/// ([`takes_passes`]), else a row at a time. Every output folds its rows in
/// the same order whichever it is: the walk never changes a result.
pub(super) fn column_walk(
    l: &Layout,
    tile: usize,
    elem_bytes: usize,
    acc_bytes: usize,
    strips_in_registers: bool,
) -> ColumnWalk {
    if let Some(stride) = strip_stride(l, tile, elem_bytes, acc_bytes, strips_in_registers) {
        ColumnWalk::Strips { stride }
    } else if takes_passes(l, tile, elem_bytes, acc_bytes) {
        ColumnWalk::Passes
    } else {
        ColumnWalk::Rows
    }
}

/// The row stride of a column tile's strips, where it takes strips.
///
/// A row at a time, the accumulators are loaded and stored for each input
/// vector, and a narrow tile pays a loop's setup for each row: in cache,
/// on the 2-core machine, a middle dim of 32 to 96 outputs a row ran
/// 1.6-2.8x slower than torch's strips. Strips keep their accumulators in
/// registers, and read each row's piece in as many passes as there are
/// strips. So strips, for accumulators of up to 8 bytes (`acc_bytes`:
/// Welford's state and value-index pairs, whose folds are the work, ran
/// 1.2-1.3x slower in strips), one reduced dim (rows one stride apart),
/// tiles wider than the register tile ([`REGISTER_TILE`]), element types
/// that widen in registers ([`CpuElement::strips_in_registers`]) and
///
/// - a leaf's rows that fit half of L1 ([`L1_ACCUMULATOR_BYTES`]), so
///   that every strip after the first reads them from there wherever the
///   input is: from DRAM, `[8388608, 20]` over 0 went from 19.6-21.5 to
///   16.2-16.9 ms over three runs, a middle dim of 32 outputs a row (1 GB)
///   level to 1.2x faster, where one of 64 (leaves of 32 KiB) ran 1.3x
///   slower; or
/// - an input read from the caches ([`team::TEAM_MAX_BYTES`]) whose rows
///   spread over L1's sets ([`STRIP_STRIDE_ALIGN`]) and stay within the
///   TLB's reach ([`STRIP_LEAF_SPAN`]), where the tile is a piece of a
///   longer row (a row at a time restarts the hardware's prefetch at each
///   piece anyway) or its leaf's rows fit L1. Longer rows end to end,
///   which the hardware streams, keep a row at a time (`[2048, 1000]` over
///   0 ran level either way); or
/// - columns of fewer rows than a pass ([`ROWS_PER_PASS`]), where a row
///   at a time loads and stores every accumulator for each row and no pass
///   takes the rows together: a strip reads all of them and stores each
///   output once. On the 16-core host (16 threads, 134-268 MB, three
///   rounds rotating the variants, medians), f32 columns of 2 and 3 rows
///   ran 1.18x and 1.40x faster in strips, f16, f64 and i64 columns of 2
///   rows 1.25x, 1.26x and 1.33x, and f32 columns of 4 rows, one pass,
///   0.71x; on the 2-core machine (two threads) 1.12x, 1.21x, 1.24x, 1.13x,
///   1.09x and 0.91x.
///
/// Strips down leaves of more rows that fit none of these, from DRAM, ran
/// 0.3-0.7x as fast as the leaves' rows on the 16-core host (columns of
/// 128 to 16384 rows).
fn strip_stride(
    l: &Layout,
    tile: usize,
    elem_bytes: usize,
    acc_bytes: usize,
    strips_in_registers: bool,
) -> Option<usize> {
    let &[(_, stride)] = l.reduce.as_slice() else {
        return None;
    };
    if tile <= REGISTER_TILE || acc_bytes > 8 || !strips_in_registers {
        return None;
    }
    let stride_bytes = stride.saturating_mul(elem_bytes);
    let leaf_bytes = stride_bytes.saturating_mul(l.num_inputs.min(OUTER_LEAF_ROWS));
    let in_half_of_l1 = leaf_bytes <= L1_ACCUMULATOR_BYTES / 2;
    let cached = l.input_bytes(elem_bytes) <= team::TEAM_MAX_BYTES;
    let spread =
        stride_bytes != 0 && stride_bytes.trailing_zeros() <= STRIP_STRIDE_ALIGN.trailing_zeros();
    let near = leaf_bytes <= STRIP_LEAF_SPAN;
    let piece_or_in_l1 = stride > tile || leaf_bytes <= L1_ACCUMULATOR_BYTES;
    let fewer_than_a_pass = l.num_inputs < ROWS_PER_PASS;
    (fewer_than_a_pass || in_half_of_l1 || (cached && spread && near && piece_or_in_l1))
        .then_some(stride)
}

/// Whether the leaves of a column tile of `tile` outputs that takes no
/// strips fold [`ROWS_PER_PASS`] rows a pass along the whole tile
/// ([`CpuElement::fold_columns`]) rather than a row at a time:
///
/// - where the tile's accumulators outgrow L1 ([`L1_ACCUMULATOR_BYTES`]):
///   a pass loads and stores each accumulator once for several rows; or
/// - where the input streams from DRAM ([`team::TEAM_MAX_BYTES`]) in
///   pieces of at least [`MIN_TILE`] columns and more than a page
///   ([`PREFETCH_PIECE_BYTES`]): four rows read at once keep more requests
///   in flight than one row that the hardware alone prefetches, piece by
///   piece. On the 16-core host (16 threads, 134-268 MB inputs, three
///   rounds rotating the variants case by case, medians), f64 and i64
///   columns of 128 rows (tiles of 2048, pieces of 16 KiB) ran 1.12x and
///   1.14x faster in passes, f64 columns of 4096 rows (tiles of 1024)
///   1.14x, f16 and bf16 columns of 16384 rows (rows of 8192 end to end)
///   1.37x and 1.20x, f64 ones (rows of 1024) 1.12x.
///
/// Pieces of a page or less keep a row at a time, which prefetches the
/// rows ahead ([`column_prefetch`]); narrow tiles (128-256 outputs, one
/// contiguous stream) ran 1.4-2.3x slower in passes than a row a pass on
/// the 2-core machine.
fn takes_passes(l: &Layout, tile: usize, elem_bytes: usize, acc_bytes: usize) -> bool {
    let outgrow_l1 = tile.saturating_mul(acc_bytes) > L1_ACCUMULATOR_BYTES;
    let streamed = l.input_bytes(elem_bytes) > team::TEAM_MAX_BYTES;
    let long_pieces = tile >= MIN_TILE && tile.saturating_mul(elem_bytes) > PREFETCH_PIECE_BYTES;
    outgrow_l1 || (streamed && long_pieces)
}

/// The leaf of a column tile: rows `lo..hi` (`row(k)` is row `k`'s piece
/// of the tile) folded in order into `acc`, starting from the identity,
/// [`ROWS_PER_PASS`] rows a pass where `passes` ([`ColumnWalk::Passes`]).
/// Compiled in [`dispatch!`]'s function of its own, so that its loops are
/// compiled the same way whichever tree calls it.
#[inline(always)]
fn column_leaf<'a, T: CpuElement, W: Compute, R: ReduceOps<W>>(
    row: impl Fn(usize) -> &'a [T],
    lo: usize,
    hi: usize,
    passes: bool,
    op: &R,
    acc: &mut [R::Acc],
) {
    acc.fill(op.identity());
    // Tiles of up to a vector keep their accumulators in registers, a
    // width the compiler knows (through memory, each row's adds waited on
    // the last row's stores).
    macro_rules! narrow {
        ($($n:literal)*) => {
            const { assert!([$($n),*].len() == REGISTER_TILE) };
            match acc.len() {
                $($n => return narrow_column_leaf::<$n, _, _, _>(&row, lo, hi, op, acc),)*
                _ => {}
            }
        };
    }
    narrow!(1 2 3 4 5 6 7 8);
    let mut k = lo;
    if passes {
        while k + ROWS_PER_PASS <= hi {
            let rows: [&[T]; ROWS_PER_PASS] = std::array::from_fn(|r| row(k + r));
            T::fold_columns(&rows, k, op, acc);
            k += ROWS_PER_PASS;
        }
    }
    let (how, prefetch) = (column_prefetch(&row, lo, hi), Prefetch::here());
    for k in k..hi {
        let x = row(k);
        match how {
            ColumnPrefetch::RowsAhead if k + ROWS_AHEAD < hi => {
                let next = row(k + ROWS_AHEAD);
                for (cols, acc) in column_segments(acc) {
                    prefetch.to_l2(&next[cols.clone()]);
                    T::accumulate_row(&x[cols], k, op, acc);
                }
            }
            ColumnPrefetch::Along => {
                for (cols, acc) in column_segments(acc) {
                    prefetch.ahead(&x[cols.clone()]);
                    T::accumulate_row(&x[cols], k, op, acc);
                }
            }
            _ => T::accumulate_row(x, k, op, acc),
        }
    }
}

/// The narrowest column tile that takes [`byte_column_leaf`]. Its cost a
/// row (a pass's setup, the slices' checks) is paid for few columns in a
/// narrower tile, which the strips or a row at a time fold faster:
/// single-threaded on the 2-core machine (8.4 MB of u8, three rounds
/// alternating the builds, medians), sums over dim 0 of rows of 16, 64
/// and 96 ran 0.2x, 0.5x and 0.8x as fast as before the byte leaf, of
/// 128, 192 and 256 1.25x, 1.9x and 2.5x as fast, of 512 and 1000 level,
/// and tiles of 16384 (columns of 128 and 4096 rows) 1.7-2.5x.
pub(super) const BYTE_LEAF_MIN_TILE: usize = 128;

/// Rows of bytes a 16-bit sum takes at most in [`byte_column_leaf`]: 256
/// bytes of 255 make 65280, and 256 is a whole number of passes.
const BYTE_ROWS_PER_SUM: usize = 256;
const _: () = assert!(BYTE_ROWS_PER_SUM * 255 <= u16::MAX as usize);
const _: () = assert!(BYTE_ROWS_PER_SUM % ROWS_PER_PASS == 0);

/// The column leaf of an integer sum of bytes ([`CpuElement::summed_bytes`]):
/// each pass adds [`ROWS_PER_PASS`] rows into 16-bit sums of the tile's
/// columns, a vector of bytes an add, and each column's total is widened
/// and folded into its accumulator once at the end, where the other leaves
/// widen every byte into an i64 accumulator. The passes read several rows
/// at once along the whole tile, as [`CpuElement::fold_columns`] does, so
/// the rows stay long streams. Integer adds wrap, so any order gives the
/// same bits.
#[inline(always)]
fn byte_column_leaf<'a, W: Compute, R: ReduceOps<W>>(
    row: impl Fn(usize) -> &'a [u8],
    lo: usize,
    hi: usize,
    op: &R,
    acc: &mut [R::Acc],
) {
    acc.fill(op.identity());
    // Sums on the stack about as wide as the tile, so that a tile of a
    // row narrower than the minimum tile clears 2 KiB of them a leaf, not
    // 32.
    if acc.len() <= MIN_TILE {
        byte_column_sums::<MIN_TILE, W, R>(row, lo, hi, op, acc);
    } else {
        byte_column_sums::<TILE, W, R>(row, lo, hi, op, acc);
    }
}

/// [`byte_column_leaf`] with `C` 16-bit sums, `C` columns at a time.
#[inline(always)]
fn byte_column_sums<'a, const C: usize, W: Compute, R: ReduceOps<W>>(
    row: impl Fn(usize) -> &'a [u8],
    lo: usize,
    hi: usize,
    op: &R,
    acc: &mut [R::Acc],
) {
    let mut sums = [0u16; C];
    for (c, acc) in acc.chunks_mut(C).enumerate() {
        let cols = c * C..c * C + acc.len();
        let sums = &mut sums[..acc.len()];
        for block in (lo..hi).step_by(BYTE_ROWS_PER_SUM) {
            let end = hi.min(block + BYTE_ROWS_PER_SUM);
            sums.fill(0);
            let mut k = block;
            while k + ROWS_PER_PASS <= end {
                let rows: [&[u8]; ROWS_PER_PASS] =
                    std::array::from_fn(|r| &row(k + r)[cols.clone()]);
                add_byte_rows(&rows, sums);
                k += ROWS_PER_PASS;
            }
            for k in k..end {
                add_byte_rows(&[&row(k)[cols.clone()]], sums);
            }
            for (a, &s) in acc.iter_mut().zip(&*sums) {
                *a = op.reduce(*a, W::from_elem(i64::from(s)), block);
            }
        }
    }
}

/// Adds column `j` of `rows` into `sums[j]`; every row holds `sums.len()`
/// bytes.
#[inline(always)]
fn add_byte_rows<const N: usize>(rows: &[&[u8]; N], sums: &mut [u16]) {
    let rows = rows.map(|r| &r[..sums.len()]);
    for (j, s) in sums.iter_mut().enumerate() {
        *s += rows.iter().map(|r| u16::from(r[j])).sum::<u16>();
    }
}

/// How a column leaf's row-at-a-time loop asks the memory for its next
/// input ([`column_prefetch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnPrefetch {
    /// Rows end to end, one stream: along it, as far ahead as the row loops
    /// ask ([`Prefetch::ahead`]).
    Along,
    /// Short pieces a row stride apart: the pieces [`ROWS_AHEAD`] rows on.
    RowsAhead,
    /// The hardware's prefetch alone.
    Hardware,
}

/// Bytes of a row a column tile's piece holds at most for [`column_leaf`]
/// to prefetch the rows ahead: a page. The hardware prefetchers follow a
/// stream within a page and start over on the next, so pieces of a page,
/// a row stride apart, each begin with misses no prefetcher saw coming.
/// On the 16-core host, at 16 threads (one call alternating the builds,
/// two rounds each), the columns of 4096 rows in pieces of 4 KiB went
/// from 2.0-2.1 to 1.5-1.6 ms in f32, 3.3-3.4 to 2.0-2.3 in f16 and
/// 2.9-3.1 to 1.9-2.2 in bf16 (1024 rows of f32, the same pieces, 1.8-2.2
/// to 1.6). Pieces of 8 KiB (f64) measured level, of 16 KiB (i64) level
/// to 1.4x slower, and the passes over longer pieces (32 KiB and more,
/// the next pass's rows asked for) level to 1.3x slower: there the
/// hardware keeps up, and the extra requests compete with its own.
const PREFETCH_PIECE_BYTES: usize = 4096;

/// Rows ahead of a column leaf's current row whose pieces it asks the
/// memory for ([`Prefetch::to_l2`]) where its pieces are short.
const ROWS_AHEAD: usize = 4;

/// How the column leaf over rows `lo..hi` prefetches.
///
/// - Rows end to end (the tile is the whole row, and each row follows the
///   last) are one stream, but a row at a time the loop loads and stores
///   the accumulators as well, fewer loads of the input are in flight, and
///   the hardware's prefetch alone left the memory idle: on the 16-core
///   host, at 16 threads over 268 MB (one call alternating the builds, four
///   rounds), prefetching along the stream took f16 and bf16 columns of
///   16384 and 65536 rows from 2.4-3.1 to 1.5-2.0 ms, f32 ones from
///   1.5-2.1 to 1.1-1.5, a middle dim (`[64, 4096, 256]` over 1) from 1.7
///   to 1.2. Columns of f64 and i64, whose loop does the least work a byte,
///   measured level to 8% slower there (at about 90% of the plain read
///   either way), and 1.15-1.2x faster on the 2-core machine (two
///   threads, three rounds: 1.84-1.92 to 1.51-1.63 ms).
/// - Pieces of at most [`PREFETCH_PIECE_BYTES`] with gaps between them:
///   the rows ahead.
/// - Longer pieces with gaps between them: the hardware's alone.
fn column_prefetch<'a, T: 'a>(
    row: &impl Fn(usize) -> &'a [T],
    lo: usize,
    hi: usize,
) -> ColumnPrefetch {
    if lo + 1 >= hi {
        return ColumnPrefetch::Hardware;
    }
    let first = row(lo);
    if row(lo + 1).as_ptr() == first.as_ptr_range().end {
        ColumnPrefetch::Along
    } else if std::mem::size_of_val(first) <= PREFETCH_PIECE_BYTES {
        ColumnPrefetch::RowsAhead
    } else {
        ColumnPrefetch::Hardware
    }
}

/// Columns a column leaf folds between its prefetches, so that the rows
/// ahead are asked for a segment at a time, interleaved with the folds,
/// rather than a whole piece at once.
const COLUMN_SEGMENT: usize = 128;

/// `acc` in segments of [`COLUMN_SEGMENT`], each with its columns' range.
/// Each column folds on its own, so folding a tile a segment at a time
/// gives every output the same steps in the same order.
#[inline(always)]
fn column_segments<A>(acc: &mut [A]) -> impl Iterator<Item = (std::ops::Range<usize>, &mut [A])> {
    acc.chunks_mut(COLUMN_SEGMENT)
        .enumerate()
        .map(|(s, a)| (s * COLUMN_SEGMENT..s * COLUMN_SEGMENT + a.len(), a))
}

/// The widest column tile whose accumulators [`column_leaf`] keeps in
/// registers: a vector of f32. Single-threaded on the 2-core machine, sums
/// over dim 0 into 2-8 columns ran 1.5-2.1x faster than with the
/// accumulators in memory.
pub(super) const REGISTER_TILE: usize = 8;

/// [`column_leaf`] over a tile of `N` outputs: the same folds in the same
/// order, each output's accumulator a register.
#[inline(always)]
fn narrow_column_leaf<'a, const N: usize, T: CpuElement, W: Compute, R: ReduceOps<W>>(
    row: &impl Fn(usize) -> &'a [T],
    lo: usize,
    hi: usize,
    op: &R,
    acc: &mut [R::Acc],
) {
    let mut v = [op.identity(); N];
    for k in lo..hi {
        let x = &row(k)[..N];
        if N == 8 {
            let x = T::widen8::<W>(x.try_into().expect("rows of 8"));
            for j in 0..N {
                v[j] = op.reduce(v[j], x[j], k);
            }
        } else {
            for j in 0..N {
                v[j] = op.reduce(v[j], x[j].widen(), k);
            }
        }
    }
    acc.copy_from_slice(&v);
}

/// Where the pairwise tree splits `n` elements: the half, rounded to a
/// multiple of 8 lanes so leaves stay aligned with one another.
pub(super) fn split_point(n: usize) -> usize {
    ((n / 2) & !7).max(1)
}

/// Whether `work` elements are enough to split across two threads.
pub(super) fn splits(work: usize) -> bool {
    work >= 2 * PARALLEL_GRAIN
}

/// Runs two subtrees of `wa` and `wb` elements, on two threads
/// ([`team::join`]: the team's or rayon's) when together they are big
/// enough to pay for it ([`splits`]). The association (and so the
/// result) is the same either way.
pub(super) fn maybe_join<R: Send>(
    wa: usize,
    wb: usize,
    a: impl FnOnce() -> R + Send,
    b: impl FnOnce() -> R + Send,
) -> (R, R) {
    if splits(wa.saturating_add(wb)) {
        team::join(wa, wb, a, b)
    } else {
        (a(), b())
    }
}

#[cfg(test)]
mod tests {
    use super::super::index_ops::ArgMaxOps;
    use super::super::ops::{MaxOps, SumOps};
    use super::*;
    use crate::{bf16, f16};

    #[test]
    fn column_tiles_are_full_or_several_a_thread() {
        // Few input rows (one leaf of the tree over rows): the threads
        // split the columns.
        let few = OUTER_LEAF_ROWS;
        // Wide enough for more than a full tile each: full tiles, of
        // 16384 outputs, or 8192 of 8-byte inputs (64 KiB of each row).
        assert_eq!(tile_width(1 << 20, 1, few, 4, 16), TILE);
        assert_eq!(tile_width(1 << 20, 1, few, 8, 16), 8192);
        assert_eq!(tile_width(1 << 20, 1, few, 2, 16), TILE);
        assert_eq!(tile_width(40000, 1, few, 4, 1), TILE);
        assert_eq!(tile_width(20000, 64, few, 4, 16), TILE);
        // Narrower, or exactly one full tile each: four a thread.
        assert_eq!(tile_width(262144, 1, few, 4, 16), 4096);
        assert_eq!(tile_width(131072, 1, few, 8, 16), 2048);
        assert_eq!(tile_width(65536, 1, few, 4, 16), 1024);
        assert_eq!(tile_width(20000, 4, few, 4, 16), 1280);
        // No narrower than MIN_TILE_BYTES (16-bit inputs), nor than one
        // tile a thread would be.
        assert_eq!(tile_width(32768, 1, few, 2, 16), 2048);
        assert_eq!(tile_width(24576, 1, few, 2, 16), 1536);
        // Nor than MIN_TILE, nor wider than the row.
        assert_eq!(tile_width(3000, 1, few, 4, 16), MIN_TILE);
        assert_eq!(tile_width(500, 1, few, 4, 16), 500);
        // Leaves enough for TILES_PER_THREAD a thread: the threads split
        // the rows, and tiles take whole input rows up to TILE.
        let many = OUTER_LEAF_ROWS * TILES_PER_THREAD * 16;
        assert_eq!(tile_width(2048, 1, many, 2, 16), 2048);
        assert_eq!(tile_width(8192, 1, many, 2, 16), 8192);
        assert_eq!(tile_width(65536, 1, many, 4, 16), TILE);
        assert_eq!(tile_width(2048, 1, many - 1, 2, 16), MIN_TILE);
        assert_eq!(tile_width(2048, 1, many / 8, 2, 2), 2048);
    }

    #[test]
    fn column_tiles_walk_strips_where_their_rows_are_in_cache() {
        use ColumnWalk::*;
        // `rows` input rows of `width` f32 outputs `stride` apart (one
        // reduced dim), or over two reduced dims.
        let layout = |rows: usize, stride: usize, width: usize, dims: usize| Layout {
            reduce: if dims == 1 {
                vec![(rows, stride)]
            } else {
                vec![(2, stride), (rows / 2, 2 * stride)]
            },
            output: vec![(width, 1)],
            base: 0,
            num_outputs: width,
            num_inputs: rows,
        };
        let walk = |rows, stride, width, tile| {
            column_walk(&layout(rows, stride, width, 1), tile, 4, 4, true)
        };
        // Leaves in half of L1 (128 rows of 32 f32): strips, from DRAM too.
        assert_eq!(walk(1 << 22, 32, 32, 32), Strips { stride: 32 });
        // Leaves of 32 KiB from DRAM: a row at a time; read from the
        // caches: strips.
        assert_eq!(walk(1 << 20, 64, 64, 64), Rows);
        assert_eq!(walk(1 << 10, 64, 64, 64), Strips { stride: 64 });
        // Longer rows end to end, in cache: a row at a time.
        assert_eq!(walk(2048, 1000, 1000, 1000), Rows);
        // A piece of a longer row in cache: strips, unless the stride is a
        // multiple of 1 KiB or more (few L1 sets) or the leaf spans more
        // than the TLB holds.
        assert_eq!(walk(333, 6432, 6432, 1024), Strips { stride: 6432 });
        assert_eq!(walk(128, 65536, 65536, 1024), Rows);
        assert_eq!(walk(1024, 6144, 6144, 1024), Rows);
        assert_eq!(walk(128, 65600, 65600, 1024), Rows);
        // The same piece of a row from DRAM: a row at a time.
        assert_eq!(walk(1 << 16, 6432, 6432, 1024), Rows);
        // The register tile, several reduced dims, wide accumulators, an
        // element type that does not widen in registers: never strips.
        assert_eq!(walk(1 << 10, 8, 8, 8), Rows);
        let one_leaf = layout(1 << 10, 32, 32, 1);
        assert_eq!(
            column_walk(&layout(1 << 10, 32, 32, 2), 32, 4, 4, true),
            Rows
        );
        assert_eq!(column_walk(&one_leaf, 32, 4, 16, true), Rows);
        assert_eq!(column_walk(&one_leaf, 32, 2, 4, false), Rows);
        assert_eq!(
            column_walk(&one_leaf, 32, 8, 8, true),
            Strips { stride: 32 }
        );
        // A broadcast reduced dim (stride 0) reads one row again and again.
        assert_eq!(walk(1 << 10, 0, 32, 32), Strips { stride: 0 });
        // Rows from DRAM in pieces longer than a page, of 1024 columns or
        // more: several rows a pass (f64 columns of 128 rows in tiles of
        // 2048; f32 rows of 2048 end to end). Pieces of a page, narrower
        // tiles and inputs read from the caches: a row at a time, unless
        // the accumulators outgrow L1 (16384 f32 outputs).
        let f64_walk =
            |rows, width, tile| column_walk(&layout(rows, width, width, 1), tile, 8, 8, true);
        assert_eq!(f64_walk(128, 131072, 2048), Passes);
        assert_eq!(f64_walk(128, 2048, 2048), Rows);
        assert_eq!(f64_walk(1 << 16, 1000, 1000), Rows);
        assert_eq!(walk(1 << 16, 2048, 2048, 2048), Passes);
        assert_eq!(walk(1 << 16, 1 << 20, 1 << 20, 1024), Rows);
        assert_eq!(walk(1 << 10, 2048, 2048, 2048), Rows);
        assert_eq!(walk(256, 16384, 16384, 16384), Passes);
        // Fewer rows than a pass, from DRAM: strips; a pass's rows: passes.
        assert_eq!(walk(3, 1 << 24, 1 << 24, 16384), Strips { stride: 1 << 24 });
        assert_eq!(walk(4, 1 << 24, 1 << 24, 16384), Passes);
    }

    /// The strips and passes of a column tile against a row at a time, bit
    /// for bit, through the whole tree: ragged strips and passes, rows end
    /// to end and with gaps, one leaf and several.
    #[test]
    fn column_strips_and_passes_fold_as_rows_do() {
        let x: Vec<f32> = (0..300 * 200).map(value).collect();
        for (rows, w, gap) in [
            (300, 13, 0),
            (300, 37, 5),
            (130, 50, 0),
            (129, 64, 3),
            (7, 9, 1),
        ] {
            let stride = w + gap;
            let dims = [(rows, stride)];
            let fold = |walk| {
                let mut acc = vec![0f32; w];
                outer_tree(&x, 3, &dims, 0, rows, &SumOps, walk, &mut acc);
                acc.iter().map(|a| a.to_bits()).collect::<Vec<_>>()
            };
            let by_row = fold(ColumnWalk::Rows);
            for walk in [ColumnWalk::Strips { stride }, ColumnWalk::Passes] {
                assert_eq!(
                    fold(walk),
                    by_row,
                    "{walk:?}: {rows} rows of {w}, gap {gap}"
                );
            }
        }
    }

    /// The short-rows loop against a row at a time through the tree, bit
    /// for bit: rows end to end and with gaps, lengths around the 8 lanes
    /// and the 16-bit conversion block.
    fn short_rows_match_the_tree<T: CpuElement, W: Compute, R: ReduceOps<W>>(
        make: impl Fn(usize) -> T,
        op: R,
        same: impl Fn(&R::Acc, &R::Acc) -> bool,
    ) {
        for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 100, 1000, 1024] {
            for gap in [0, 5] {
                let stride = n + gap;
                let rows = 3000 / n + 2;
                let x: Vec<T> = (0..rows * stride).map(&make).collect();
                let mut fast = vec![op.identity(); rows];
                T::fold_rows(&x, stride, n, &op, &mut fast);
                for (i, f) in fast.iter().enumerate() {
                    let slow = contiguous_tree(&x[i * stride..i * stride + n], 0, &op);
                    assert!(same(f, &slow), "row {i} of {rows}, n {n}, stride {stride}");
                }
            }
        }
    }

    fn value(i: usize) -> f32 {
        // Values of mixed magnitude, so that the association shows in the bits.
        ((i * 7919) % 1013) as f32 * 0.37 - 150.0 + if i % 11 == 0 { 1e6 } else { 0.0 }
    }

    #[test]
    fn column_tiles_cover_rows_wider_than_a_tile() {
        // Two full tiles and a ragged one in each of three output rows
        // (dim 0), over five reduced rows (one pass of four and one more):
        // small integers, so every sum is exact.
        let (a, b, w) = (3, 5, 2 * TILE + 5);
        let v: Vec<f32> = (0..a * b * w).map(|i| (i % 13) as f32).collect();
        let x = crate::Tensor::from_vec(v.clone(), &[a, b, w]).unwrap();
        let got = super::super::sum_for_tests::<f32, f32>(&x, &[false, true, false])
            .to_vec::<f32>()
            .unwrap();
        let want: Vec<f32> = (0..a * w)
            .map(|o| (0..b).map(|k| v[(o / w) * b * w + k * w + o % w]).sum())
            .collect();
        assert_eq!(got, want);
    }

    /// The tree over a multi-dim reduce space with every leaf walked as
    /// runs (the strided leaf): what the contiguous leaves inside a run
    /// must reproduce bit for bit.
    fn strided_only_tree(data: &[f32], dims: &[(usize, usize)], lo: usize, hi: usize) -> f32 {
        if hi - lo <= LEAF {
            let lanes: [f32; 8] = strided_leaf(data, 0, dims, lo, hi, &SumOps);
            return combine_lanes(&SumOps, &lanes);
        }
        let mid = lo + split_point(hi - lo);
        strided_only_tree(data, dims, lo, mid) + strided_only_tree(data, dims, mid, hi)
    }

    #[test]
    fn leaves_inside_a_run_are_the_strided_leaves() {
        // Planes (runs) shorter than, equal to, longer than and not a
        // multiple of a leaf, a plane apart and with a gap between them.
        for (run, count, gap) in [(100, 30, 0), (1024, 5, 0), (3136, 6, 0), (2100, 3, 7)] {
            let dims = [(run, 1), (count, run + gap)];
            let x: Vec<f32> = (0..count * (run + gap)).map(value).collect();
            let n = run * count;
            let got: f32 = inner_tree(&x, 0, &dims, 0, n, &SumOps);
            let want = strided_only_tree(&x, &dims, 0, n);
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "runs of {run}, {count} of them"
            );
        }
    }

    /// A column leaf against each output's column folded in row order,
    /// bit for bit: the narrow tiles in registers, the wider ones through
    /// memory a row at a time (in segments, prefetching the rows ahead
    /// where the rows have gaps between them and along them where they lie
    /// end to end), and tiles whose accumulators outgrow L1 in passes; a
    /// leaf's worth of rows, with a gap after each and without.
    fn column_leaves_fold_rows_in_order<T: CpuElement, W: Compute, R: ReduceOps<W>>(
        make: impl Fn(usize) -> T,
        op: R,
        same: impl Fn(&R::Acc, &R::Acc) -> bool,
    ) {
        let wide = L1_ACCUMULATOR_BYTES / std::mem::size_of::<R::Acc>() + 45;
        let x: Vec<T> = (0..(wide + 3) * 14).map(make).collect();
        // Rows with gaps between them, and end to end (prefetched along).
        for (gap, passes) in [(3, false), (0, false), (3, true), (0, true)] {
            for w in (1..=17).chain([200, wide]) {
                let stride = w + gap;
                let (lo, hi) = (5, OUTER_LEAF_ROWS.min(x.len() / stride));
                let row = |k: usize| &x[k * stride..k * stride + w];
                let mut got = vec![op.identity(); w];
                column_leaf(row, lo, hi, passes, &op, &mut got);
                for (j, g) in got.iter().enumerate() {
                    let want =
                        (lo..hi).fold(op.identity(), |a, k| op.reduce(a, row(k)[j].widen(), k));
                    assert!(
                        same(g, &want),
                        "output {j} of a tile of {w}, gap {gap}, passes {passes}"
                    );
                }
            }
        }
    }

    #[test]
    fn column_leaves_of_every_width_fold_rows_in_order() {
        let bits = |a: &f32, b: &f32| a.to_bits() == b.to_bits();
        column_leaves_fold_rows_in_order::<f32, f32, _>(value, SumOps, bits);
        column_leaves_fold_rows_in_order::<f16, f32, _>(|i| f16::from_f32(value(i)), SumOps, bits);
        column_leaves_fold_rows_in_order::<bf16, f32, _>(
            |i| bf16::from_f32(value(i)),
            SumOps,
            bits,
        );
        column_leaves_fold_rows_in_order::<f32, f64, _>(value, SumOps, |a, b| {
            a.to_bits() == b.to_bits()
        });
        column_leaves_fold_rows_in_order::<f32, f32, _>(
            |i| {
                if i % 13 == 0 {
                    f32::NAN
                } else {
                    (i % 4) as f32
                }
            },
            ArgMaxOps,
            |a, b| a.index == b.index,
        );
    }

    /// The byte column leaf against a plain column sum in i64: a leaf
    /// taller than a 16-bit sum takes ([`BYTE_ROWS_PER_SUM`]), wider than
    /// either size of its sums ([`MIN_TILE`], [`TILE`]), ragged passes,
    /// 255s and every value; and only u8 and bool integer sums take it.
    #[test]
    fn byte_column_leaves_add_every_row() {
        let (rows, width) = (2 * BYTE_ROWS_PER_SUM + 7, TILE + 37);
        let random: Vec<u8> = (0..rows * width).map(|i| (i * 7 + i / 13) as u8).collect();
        let full = vec![255u8; rows * width];
        for x in [&random, &full] {
            for (lo, hi, w) in [
                (0, rows, width),
                (3, 3 + BYTE_ROWS_PER_SUM, 100),
                (1, 3, 9),
                (2, rows, MIN_TILE + 1),
            ] {
                let row = |k: usize| &x[k * width..k * width + w];
                let mut got = vec![-1i64; w];
                byte_column_leaf(row, lo, hi, &SumOps, &mut got);
                let want: Vec<i64> = (0..w)
                    .map(|j| (lo..hi).map(|k| i64::from(row(k)[j])).sum())
                    .collect();
                assert_eq!(got, want, "rows {lo}..{hi} of {w}");
            }
        }
        assert!(<u8 as CpuElement>::summed_bytes::<i64, SumOps>(&random).is_some());
        assert!(<bool as CpuElement>::summed_bytes::<i64, SumOps>(&[true]).is_some());
        assert!(<u8 as CpuElement>::summed_bytes::<f32, SumOps>(&random).is_none());
        assert!(<u8 as CpuElement>::summed_bytes::<i64, MaxOps>(&random).is_none());
        assert!(<i32 as CpuElement>::summed_bytes::<i64, SumOps>(&[1]).is_none());
    }

    #[test]
    fn column_leaves_prefetch_by_how_their_rows_lie() {
        use ColumnPrefetch::*;
        let x = vec![0f32; 1 << 16];
        let y = vec![0f64; 1 << 16];
        // Rows of `w` a stride `s` apart, over rows 0..n.
        let f32s = |w: usize, s: usize, n: usize| column_prefetch(&|k| &x[k * s..k * s + w], 0, n);
        let f64s = |w: usize, s: usize, n: usize| column_prefetch(&|k| &y[k * s..k * s + w], 0, n);
        assert_eq!(f32s(256, 256, 8), Along);
        assert_eq!(f64s(256, 256, 8), Along);
        // Pieces of a page or less with gaps between them: the rows ahead;
        // longer ones, the hardware's.
        assert_eq!(f32s(1024, 2048, 8), RowsAhead);
        assert_eq!(f64s(512, 2048, 8), RowsAhead);
        assert_eq!(f32s(1025, 2048, 8), Hardware);
        // One row: nothing ahead.
        assert_eq!(f32s(256, 256, 1), Hardware);
    }

    #[test]
    fn short_rows_are_the_trees_leaves() {
        let bits = |a: &f32, b: &f32| a.to_bits() == b.to_bits();
        short_rows_match_the_tree::<f32, f32, _>(value, SumOps, bits);
        short_rows_match_the_tree::<f16, f32, _>(|i| f16::from_f32(value(i)), SumOps, bits);
        short_rows_match_the_tree::<bf16, f32, _>(|i| bf16::from_f32(value(i)), SumOps, bits);
        short_rows_match_the_tree::<f64, f64, _>(
            |i| value(i) as f64,
            SumOps,
            |a, b| a.to_bits() == b.to_bits(),
        );
        // Signed zeros, and NaNs through a comparison: short rows end to
        // end fold several rows at once, which must not change either.
        let zeros_and_nans = |i: usize| match i % 9 {
            0 => -0.0,
            4 if i % 7 == 0 => f32::NAN,
            _ => value(i),
        };
        short_rows_match_the_tree::<f32, f32, _>(zeros_and_nans, SumOps, bits);
        short_rows_match_the_tree::<f32, f32, _>(zeros_and_nans, MaxOps, bits);
        short_rows_match_the_tree::<f32, f32, _>(|i| -0.0 * value(i), MaxOps, bits);
        // Ties and NaNs: the index must come from the same comparisons.
        short_rows_match_the_tree::<f32, f32, _>(
            |i| {
                if i % 13 == 0 {
                    f32::NAN
                } else {
                    (i % 4) as f32
                }
            },
            ArgMaxOps,
            |a, b| a.index == b.index,
        );
    }
}
