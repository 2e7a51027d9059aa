//! The order the trees visit outputs in.
//!
//! An iterator's kept dims come in PyTorch's order, the result's, so the
//! trees write each block of outputs as one run of the result. For a
//! permuted view that order can walk the input far apart from one output
//! to the next: `[256, 256, 1024].permute(2, 0, 1)` reduced over its last
//! dim visits outputs 256 KiB apart in the input, each reading its own
//! cache lines 4 KiB apart, and ran at 3% of a plain read on the 16-core
//! host (torch's CPU as slowly). Where that happens ([`trees_order`]) the
//! trees run on the kept dims in the input's order instead, where the same
//! case is a column sum, into a scratch result in that order, which
//! [`gather`] then puts in the result's order: one more pass over the
//! outputs, of which there are fewer than inputs.

use super::team;
use super::tree::{maybe_join, Cursor, PARALLEL_GRAIN};
use crate::iter::TensorIterator;
use crate::tensor::storage::{CpuStorage, UninitStorage};
use crate::{DType, Result};
use std::mem::MaybeUninit;

/// A cache line, the unit the CPU's loads move: outputs whose inputs lie
/// this far apart share none.
const CACHE_LINE_BYTES: u64 = 64;

/// The iterator the trees run on in place of `iter` (PyTorch's order), or
/// `None` to keep PyTorch's: [`TensorIterator::kept_dims_by_input`] with a
/// cache line as the scattering distance.
pub(super) fn trees_order(iter: &TensorIterator) -> Option<TensorIterator> {
    iter.kept_dims_by_input(CACHE_LINE_BYTES)
}

/// Where the result's elements lie in a scratch result written in the
/// order of `ours`' kept dims: (size, scratch stride) of each kept dim
/// larger than 1, fastest first in the result (by the output strides of
/// `ours`, which are the contiguous result's).
pub(super) fn result_dims(ours: &TensorIterator) -> Vec<(usize, usize)> {
    let nrd = ours.num_reduce_dims();
    let esize = ours.element_size(TensorIterator::OUTPUT) as i64;
    let mut scratch_stride = 1;
    let mut dims: Vec<(usize, i64, usize)> = Vec::new();
    for (&n, &s) in ours.shape()[nrd..]
        .iter()
        .zip(&ours.strides(TensorIterator::OUTPUT)[nrd..])
    {
        if n > 1 {
            dims.push((n, s / esize, scratch_stride));
        }
        scratch_stride *= n;
    }
    dims.sort_by_key(|&(_, result_stride, _)| result_stride);
    let mut expected = 1;
    for &(n, result_stride, _) in &dims {
        assert_eq!(
            result_stride, expected,
            "internal: a reduction's result is contiguous"
        );
        expected *= n as i64;
    }
    dims.into_iter().map(|(n, _, s)| (n, s)).collect()
}

/// Whether the trees' order over `iter` is the result's, which writing each
/// block of outputs as one run of the result relies on: its kept dims'
/// output strides are contiguous in their order. Checked on every call, so
/// without allocating.
pub(super) fn is_result_order(iter: &TensorIterator) -> bool {
    let nrd = iter.num_reduce_dims();
    let mut expected = iter.element_size(TensorIterator::OUTPUT) as i64;
    iter.shape()[nrd..]
        .iter()
        .zip(&iter.strides(TensorIterator::OUTPUT)[nrd..])
        .all(|(&n, &s)| {
            let in_order = n == 1 || s == expected;
            expected *= n as i64;
            in_order
        })
}

/// Result elements one task of [`gather`] writes.
const GATHER_BLOCK: usize = 1 << 14;

/// `scratch` (written in the trees' order) in the result's order, `dims`
/// being [`result_dims`].
pub(super) fn gather(
    scratch: &CpuStorage,
    dtype: DType,
    dims: &[(usize, usize)],
) -> Result<CpuStorage> {
    let mut result = UninitStorage::new(dtype, scratch.len())?;
    let (src, dst) = (scratch.as_bytes(), result.as_mut_bytes());
    match dtype.size_in_bytes() {
        1 => gather_elements::<1>(src, dst, dims),
        2 => gather_elements::<2>(src, dst, dims),
        4 => gather_elements::<4>(src, dst, dims),
        8 => gather_elements::<8>(src, dst, dims),
        size => unreachable!("internal: no dtype is {size} bytes"),
    }
    // SAFETY: `gather_elements` wrote every element of `dst` (all of
    // `result`'s bytes) with one of `scratch`'s, a value of the same dtype.
    Ok(unsafe { result.assume_init() })
}

/// Copies `B`-byte elements: result element `k` is the scratch element at
/// the offset of index `k` of `dims`.
fn gather_elements<const B: usize>(
    src: &[u8],
    dst: &mut [MaybeUninit<u8>],
    dims: &[(usize, usize)],
) {
    let fill = |first: usize, block: &mut [MaybeUninit<u8>]| {
        let mut cursor = Cursor::new(dims, first);
        for element in block.chunks_exact_mut(B) {
            let from = &src[cursor.offset * B..][..B];
            for (d, &s) in element.iter_mut().zip(from) {
                d.write(s);
            }
            cursor.advance();
        }
    };
    // Halves of whole blocks, split across the team down to a block.
    fn split<F: Fn(usize, &mut [MaybeUninit<u8>]) + Sync>(
        first: usize,
        dst: &mut [MaybeUninit<u8>],
        elem: usize,
        fill: &F,
    ) {
        let n = dst.len() / elem;
        let blocks = n.div_ceil(GATHER_BLOCK);
        if blocks <= 1 {
            return fill(first, dst);
        }
        let mid = blocks / 2 * GATHER_BLOCK;
        let (a, b) = dst.split_at_mut(mid * elem);
        maybe_join(
            mid,
            n - mid,
            || split(first, a, elem, fill),
            || split(first + mid, b, elem, fill),
        );
    }
    if dst.len() / B >= 2 * PARALLEL_GRAIN {
        team::enter(dst.len(), || split(0, dst, B, &fill))
    } else {
        fill(0, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Device, Tensor};

    fn iter_of(x: &Tensor, dims: &[usize]) -> TensorIterator {
        let mask: Vec<bool> = (0..x.dim()).map(|d| dims.contains(&d)).collect();
        TensorIterator::reduce_op(x, &mask, x.dtype()).unwrap()
    }

    #[test]
    fn permuted_views_run_in_the_input_order_and_gather_back() {
        // [3, 4, 5].permute(2, 0, 1) over its last dim (f32): kept dims of
        // input strides 1 and 20 elements (4 and 80 B), reduced stride 5
        // (20 B). PyTorch's order is the result's, [5, 3] contiguous:
        // the dim of stride 20 first. The input's: stride 1 first.
        let base = Tensor::zeros(&[3, 4, 5], DType::F32, Device::Cpu).unwrap();
        let x = base.permute(&[2, 0, 1]).unwrap();
        let pytorch = iter_of(&x, &[2]);
        assert_eq!(pytorch.shape(), &[4, 3, 5]);
        assert!(is_result_order(&pytorch));
        let ours = trees_order(&pytorch).expect("reordered");
        assert!(!is_result_order(&ours));
        assert_eq!(ours.shape(), &[4, 5, 3]);
        assert_eq!(ours.strides(TensorIterator::INPUT), &[20, 4, 80]);
        // Scratch element (i5 + 5 * i3) holds result element (i5 * 3 + i3):
        // in the result's order, the dim of 3 (scratch stride 5) is fastest.
        let dims = result_dims(&ours);
        assert_eq!(dims, vec![(3, 5), (5, 1)]);
        let scratch = CpuStorage::from_vec::<i32>((0..15).collect()).unwrap();
        let result = gather(&scratch, DType::I32, &dims).unwrap();
        assert_eq!(
            result.as_slice::<i32>(),
            &[0, 5, 10, 1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14]
        );
    }

    #[test]
    fn contiguous_inputs_keep_pytorchs_order() {
        let x = Tensor::zeros(&[16, 32, 64], DType::F32, Device::Cpu).unwrap();
        for dims in [&[0][..], &[1], &[2], &[0, 2]] {
            assert!(trees_order(&iter_of(&x, dims)).is_none(), "{dims:?}");
        }
        // A transposed matrix's column sum reads rows in either order.
        let t = Tensor::zeros(&[64, 32], DType::F32, Device::Cpu)
            .unwrap()
            .t()
            .unwrap();
        assert!(trees_order(&iter_of(&t, &[0])).is_none());
        // The result's fastest dim strides the input by 8 B, less than a
        // cache line: [50, 3, 2].permute(0, 2, 1) over dim 0. The input's
        // order would differ, but PyTorch's loads already share lines.
        let base = Tensor::zeros(&[50, 3, 2], DType::F32, Device::Cpu).unwrap();
        let it = iter_of(&base.permute(&[0, 2, 1]).unwrap(), &[0]);
        assert_eq!(it.strides(TensorIterator::INPUT), &[24, 8, 4]);
        assert_ne!(
            it.with_kept_dims_by_input_stride()
                .strides(TensorIterator::INPUT),
            it.strides(TensorIterator::INPUT)
        );
        assert!(trees_order(&it).is_none());
        assert!(is_result_order(&it));
    }

    #[test]
    fn large_gathers_split_into_blocks() {
        // Past the parallel threshold, each block starting mid-dim: a
        // transpose of [3 * GATHER_BLOCK + 7, 3] of every element size.
        let (rows, cols) = (3 * GATHER_BLOCK + 7, 3);
        let n = rows * cols;
        let dims = [(rows, cols), (cols, 1)];
        let want: Vec<usize> = (0..n).map(|k| (k % rows) * cols + k / rows).collect();
        for dtype in [DType::U8, DType::F16, DType::I32, DType::I64] {
            let scratch = CpuStorage::from_vec::<i64>((0..n as i64).collect())
                .unwrap()
                .as_bytes()
                .chunks(8)
                .flat_map(|c| c[..dtype.size_in_bytes()].to_vec())
                .collect::<Vec<u8>>();
            let scratch = CpuStorage::from_bytes(dtype, &scratch).unwrap();
            let got = gather(&scratch, dtype, &dims).unwrap();
            let size = dtype.size_in_bytes();
            for (k, &w) in want.iter().enumerate() {
                let bytes = &got.as_bytes()[k * size..(k + 1) * size];
                let expected = &(w as u64).to_le_bytes()[..size];
                assert_eq!(bytes, expected, "{dtype} element {k}");
            }
        }
    }
}
