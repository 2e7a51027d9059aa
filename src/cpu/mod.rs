//! The CPU backend: multithreaded (rayon), deterministic, cascade-summed
//! reductions over a [`TensorIterator`].
//!
//! Two loop shapes cover every iterator:
//! - **inner**: each output reduces its own slice of the input; used when the
//!   reduced dims include the fastest-moving one (or no output dim is
//!   contiguous). Outputs run in parallel.
//! - **outer** (column sums): the fastest output dim is contiguous in the
//!   input, so a tile of neighbouring outputs adds whole input rows at a time
//!   and the loads stay contiguous and vectorised.
//!
//! Both sum pairwise: the reduced index range is halved recursively down to
//! leaves of at most [`LEAF`] elements, which are summed with several
//! independent accumulators. The tree depends only on the shape, so the
//! result is bitwise the same whatever the number of threads (rayon only
//! decides which thread computes which subtree), and f32 rounding error grows
//! like `log n` rather than `n`.

mod accumulate;

use crate::iter::TensorIterator;
use crate::tensor::storage::{try_vec, CpuStorage, Storage};
use crate::{with_dtype, DType, Error, Result, Tensor};
use accumulate::{Acc, CpuElement};
use rayon::prelude::*;
use std::sync::Arc;

/// Elements summed sequentially (over 8 lanes) at the bottom of the pairwise tree.
const LEAF: usize = 1024;
/// Outputs one column tile accumulates: 4 KiB of f32 accumulators, so each
/// input row of a tile is a page-sized contiguous read. Narrower tiles walk
/// the input in short pieces one row stride apart, and each piece then costs
/// a TLB miss and a prefetcher restart (64 outputs made outer_8k_8k 3x slower).
const TILE: usize = 1024;
/// Rows a column tile adds sequentially at the bottom of its pairwise tree.
const OUTER_LEAF_ROWS: usize = 128;
/// Work (elements) below which a subtree is not split across threads.
const PARALLEL_GRAIN: usize = 1 << 16;

/// Sums `input` as `iter` describes (built from `input` by
/// [`TensorIterator::reduce_op`]) into a flat, contiguous tensor of
/// `iter.num_output_elements()` elements of `out_dtype`, in output order.
pub(crate) fn sum(input: &Tensor, iter: &TensorIterator, out_dtype: DType) -> Result<Tensor> {
    let Storage::Cpu(storage) = &input.storage else {
        return Err(Error::DeviceMismatch {
            expected: crate::Device::Cpu,
            actual: input.device(),
        });
    };
    let out = with_dtype!(input.dtype(), T => match out_dtype.accumulator() {
        DType::F32 => finish::<f32>(reduce::<T, f32>(storage.as_slice::<T>(), iter)?, out_dtype)?,
        DType::F64 => finish::<f64>(reduce::<T, f64>(storage.as_slice::<T>(), iter)?, out_dtype)?,
        _ => finish::<i64>(reduce::<T, i64>(storage.as_slice::<T>(), iter)?, out_dtype)?,
    });
    let n = out.len();
    Ok(Tensor::from_storage(
        Storage::Cpu(Arc::new(out)),
        &[n],
        out_dtype,
    ))
}

/// Casts accumulated values to the output dtype (torch's `project`).
fn finish<A: Acc>(acc: Vec<A>, out_dtype: DType) -> Result<CpuStorage> {
    with_dtype!(out_dtype, O => {
        let mut out = CpuStorage::zeroed(out_dtype, acc.len())?;
        out.as_mut_slice::<O>()
            .par_iter_mut()
            .with_min_len(4096)
            .zip(acc.par_iter())
            .for_each(|(o, &a)| *o = A::cast::<O>(a));
        Ok(out)
    })
}

/// The iterator in element units, split into its reduced and output parts.
struct Layout {
    /// (size, input stride in elements) of the reduced dims, fastest first.
    reduce: Vec<(usize, usize)>,
    /// (size, input stride in elements) of the output dims, fastest first.
    output: Vec<(usize, usize)>,
    base: usize,
    num_outputs: usize,
    num_inputs: usize,
}

impl Layout {
    fn new(iter: &TensorIterator) -> Layout {
        let esize = iter.element_size(TensorIterator::INPUT) as i64;
        let nr = iter.num_reduce_dims();
        let dims: Vec<(usize, usize)> = iter
            .shape()
            .iter()
            .zip(iter.strides(TensorIterator::INPUT))
            .map(|(&n, &s)| (n, (s / esize) as usize))
            .collect();
        // The output is contiguous and its dims are ordered by ascending
        // output stride, so output index o lives at element o. Checked once
        // here rather than recomputed per element.
        let mut expected = iter.element_size(TensorIterator::OUTPUT) as i64;
        for (&n, &s) in iter.shape()[nr..]
            .iter()
            .zip(&iter.strides(TensorIterator::OUTPUT)[nr..])
        {
            assert!(
                n == 1 || s == expected,
                "internal: the iterator's output dims are contiguous in order"
            );
            expected *= n as i64;
        }
        Layout {
            reduce: dims[..nr].to_vec(),
            output: dims[nr..].to_vec(),
            base: (iter.data_offset(TensorIterator::INPUT) / esize as u64) as usize,
            num_outputs: iter.num_output_elements(),
            num_inputs: dims[..nr].iter().map(|d| d.0).product(),
        }
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

    /// Column tiles apply when the fastest output dim is contiguous in the
    /// input while the fastest reduced dim is not.
    fn is_outer(&self) -> bool {
        matches!(self.output.first(), Some(&(n, 1)) if n > 1)
            && self.reduce.first().is_some_and(|&(_, s)| s != 1)
    }
}

fn reduce<T: CpuElement, A: Acc>(data: &[T], iter: &TensorIterator) -> Result<Vec<A>> {
    let layout = Layout::new(iter);
    if layout.is_outer() {
        reduce_outer(data, &layout)
    } else {
        reduce_inner(data, &layout)
    }
}

fn reduce_inner<T: CpuElement, A: Acc>(data: &[T], l: &Layout) -> Result<Vec<A>> {
    let grain = (PARALLEL_GRAIN / l.num_inputs.max(1)).max(1);
    let mut out = try_vec(A::ZERO, l.num_outputs)?;
    // Outputs in blocks of `grain`, each block walking its outputs with a
    // running offset: with many short rows, a division per output dim per
    // output would cost more than the row itself.
    out.par_chunks_mut(grain)
        .enumerate()
        .for_each(|(block, out)| {
            let mut cursor = Cursor::new(&l.output, block * grain);
            for o in out {
                let base = l.base + cursor.offset;
                *o = match l.reduce.as_slice() {
                    // Nothing reduced (e.g. only size-1 dims): the sum is the element itself.
                    [] => A::from_elem(data[base]),
                    // One contiguous run: the common row sum, without index arithmetic.
                    [(n, 1)] => contiguous_tree(&data[base..base + n]),
                    _ => inner_tree(data, base, &l.reduce, 0, l.num_inputs),
                };
                cursor.advance();
            }
        });
    Ok(out)
}

/// A position in a dim list's index space and its input offset, advanced
/// one element at a time (fastest dim first) without dividing.
struct Cursor<'a> {
    dims: &'a [(usize, usize)],
    index: smallvec::SmallVec<[usize; 6]>,
    offset: usize,
}

impl<'a> Cursor<'a> {
    fn new(dims: &'a [(usize, usize)], mut k: usize) -> Cursor<'a> {
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

    fn advance(&mut self) {
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

/// Pairwise sum of a contiguous slice.
fn contiguous_tree<T: CpuElement, A: Acc>(x: &[T]) -> A {
    if x.len() <= LEAF {
        let mut lanes = [A::ZERO; 8];
        T::accumulate_contiguous(x, &mut lanes);
        return A::combine_lanes(&lanes);
    }
    let (lo, hi) = x.split_at(split_point(x.len()));
    let (a, b) = maybe_join(
        x.len(),
        || contiguous_tree::<T, A>(lo),
        || contiguous_tree::<T, A>(hi),
    );
    a.add(b)
}

/// Pairwise sum of reduce indices `lo..hi` of a (possibly multi-dim, strided) reduce space.
fn inner_tree<T: CpuElement, A: Acc>(
    data: &[T],
    base: usize,
    dims: &[(usize, usize)],
    lo: usize,
    hi: usize,
) -> A {
    if hi - lo <= LEAF {
        let mut lanes = [A::ZERO; 8];
        let (n0, s0) = dims[0];
        let mut k = lo;
        while k < hi {
            // Walk the leaf as runs along the fastest reduced dim.
            let i0 = k % n0;
            let run = (n0 - i0).min(hi - k);
            let start = base + Layout::offset(dims, k);
            if s0 == 1 {
                T::accumulate_contiguous(&data[start..start + run], &mut lanes);
            } else {
                T::accumulate_strided(data, start, s0, run, &mut lanes);
            }
            k += run;
        }
        return A::combine_lanes(&lanes);
    }
    let mid = lo + split_point(hi - lo);
    let (a, b) = maybe_join(
        hi - lo,
        || inner_tree::<T, A>(data, base, dims, lo, mid),
        || inner_tree::<T, A>(data, base, dims, mid, hi),
    );
    a.add(b)
}

fn reduce_outer<T: CpuElement, A: Acc>(data: &[T], l: &Layout) -> Result<Vec<A>> {
    let width = l.output[0].0;
    let mut out = try_vec(A::ZERO, l.num_outputs)?;
    out.par_chunks_mut(width)
        .enumerate()
        .for_each(|(row, out_row)| {
            let base = l.base + Layout::offset(&l.output[1..], row);
            out_row
                .par_chunks_mut(TILE)
                .enumerate()
                .for_each(|(t, out_tile)| {
                    outer_tree::<T, A>(data, base + t * TILE, &l.reduce, 0, l.num_inputs, out_tile);
                });
        });
    Ok(out)
}

/// Pairwise sum, over reduce indices `lo..hi`, of input rows of `acc.len()`
/// contiguous outputs, written to `acc`.
fn outer_tree<T: CpuElement, A: Acc>(
    data: &[T],
    start: usize,
    dims: &[(usize, usize)],
    lo: usize,
    hi: usize,
    acc: &mut [A],
) {
    let w = acc.len();
    if hi - lo <= OUTER_LEAF_ROWS {
        acc.fill(A::ZERO);
        for k in lo..hi {
            let row = start + Layout::offset(dims, k);
            T::accumulate_row(&data[row..row + w], acc);
        }
        return;
    }
    let mid = lo + (hi - lo) / 2;
    // One buffer per tree node; a leaf below it reads far more than this.
    let mut right = vec![A::ZERO; w];
    maybe_join(
        (hi - lo) * w,
        || outer_tree::<T, A>(data, start, dims, lo, mid, acc),
        || outer_tree::<T, A>(data, start, dims, mid, hi, &mut right),
    );
    for (x, &y) in acc.iter_mut().zip(&right) {
        *x = x.add(y);
    }
}

/// Where the pairwise tree splits `n` elements: the half, rounded to a
/// multiple of 8 lanes so leaves stay aligned with one another.
fn split_point(n: usize) -> usize {
    ((n / 2) & !7).max(1)
}

/// Runs two subtrees, in parallel when they are big enough to pay for it.
/// The association (and so the result) is the same either way.
fn maybe_join<R: Send>(
    work: usize,
    a: impl FnOnce() -> R + Send,
    b: impl FnOnce() -> R + Send,
) -> (R, R) {
    if work >= 2 * PARALLEL_GRAIN {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}
