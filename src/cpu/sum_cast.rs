//! Which dtype torch's CPU casts a sum's input to before it reduces.
//!
//! `sum(dtype=float16 | bfloat16)` casts every element to that dtype first
//! (`self.to(dtype)`), on both of torch's devices, except where torch's CPU
//! would lose precision between two reduced dims: when the iterator over
//! that cast copy has its two fastest dims both reduced (they did not
//! coalesce), its `sum_out` sums `self.to(float32)` into a float32 buffer
//! and rounds the result once (`should_use_acc_buffer` in its `sum_out`).
//! Whether that happens is a property of the copy's layout, so the same
//! values give `inf + -inf = NaN` laid out one way and their float32 sum
//! another: torch 2.11's CPU gives 10.5 for `[1e5, -1e5 + 3, 0.25, 0.25]`
//! repeated as `[3, 9, 1, 4]`, transposed (1, 3) and summed over dims
//! (1, 3) in float16, and NaN for the same tensor made contiguous first.
//! The CPU backend follows it; torch's CUDA casts first on every layout,
//! and so does ours.

use crate::iter::TensorIterator;
use crate::reduce::{ReduceOp, Signature};
use crate::tensor::memory_format::preserve_format_strides;
use crate::{DType, Result, Tensor};

/// `sig` as torch's CPU runs it on `input` reduced over `mask`: a value-
/// changing cast to f16 or bf16 of a sum becomes one to f32 (or none,
/// where the input converts to f32 exactly) where torch's CPU sums through
/// its float32 buffer. An integer nansum is a sum (its signature is the
/// sum's), as in torch; a floating one casts first on every layout.
pub(super) fn as_torch_cpu(input: &Tensor, mask: &[bool], sig: &Signature) -> Result<Signature> {
    if sig.op != ReduceOp::Sum || !matches!(sig.cast, Some(DType::F16 | DType::BF16)) {
        return Ok(*sig);
    }
    if !two_fastest_dims_reduced(input, mask, sig.output)? {
        return Ok(*sig);
    }
    Ok(Signature {
        cast: (!sig.input.casts_exactly_to(DType::F32)).then_some(DType::F32),
        ..*sig
    })
}

/// Whether torch's iterator over its copy of `input` in `dtype` (laid out
/// as `Tensor.to` lays it out) has two or more dims and the two fastest
/// reduced.
fn two_fastest_dims_reduced(input: &Tensor, mask: &[bool], dtype: DType) -> Result<bool> {
    let shape = input.shape();
    let size = dtype.size_in_bytes();
    let strides = preserve_format_strides(shape, input.strides());
    let copy = TensorIterator::reduction(shape, &strides, 0, size, size, mask)?;
    Ok(copy.ndim() >= 2 && copy.is_dim_reduced(0) && copy.is_dim_reduced(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zeros(shape: &[usize]) -> Tensor {
        zeros_of(shape, DType::F32)
    }

    fn zeros_of(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::zeros(shape, dtype, crate::Device::Cpu).unwrap()
    }

    fn cast_of(op: ReduceOp, input: &Tensor, mask: &[bool], dtype: DType) -> Option<DType> {
        let sig = op.signature(input.dtype(), Some(dtype)).unwrap();
        as_torch_cpu(input, mask, &sig).unwrap().cast
    }

    #[test]
    fn two_unmerged_reduced_dims_sum_in_f32() {
        // [3, 9, 1, 4] transposed (1, 3), dims (1, 3) reduced: the fastest
        // reduced dims (4 apart by 1, 3 apart by 36) do not merge.
        let transposed = |dtype| zeros_of(&[3, 9, 1, 4], dtype).transpose(1, -4).unwrap();
        let x = transposed(DType::F32);
        let mask = [false, true, false, true];
        assert_eq!(cast_of(ReduceOp::Sum, &x, &mask, DType::F16), None);
        assert_eq!(cast_of(ReduceOp::Sum, &x, &mask, DType::BF16), None);
        // Made contiguous, the same dims merge into one: cast first.
        let c = x.contiguous().unwrap();
        assert_eq!(
            cast_of(ReduceOp::Sum, &c, &mask, DType::F16),
            Some(DType::F16)
        );
        // An f64 or i64 input is cast to f32, then summed; a product and a
        // floating nansum cast first whatever the layout.
        let (d, i) = (transposed(DType::F64), transposed(DType::I64));
        let cases = [
            (ReduceOp::Sum, &d, DType::F16, Some(DType::F32)),
            (ReduceOp::Sum, &i, DType::BF16, Some(DType::F32)),
            (ReduceOp::NanSum, &i, DType::F16, Some(DType::F32)),
            (ReduceOp::Prod, &d, DType::F16, Some(DType::F16)),
            (ReduceOp::NanSum, &d, DType::F16, Some(DType::F16)),
        ];
        for (op, input, dtype, cast) in cases {
            let what = (op, input.dtype(), dtype);
            assert_eq!(cast_of(op, input, &mask, dtype), cast, "{what:?}");
        }
    }

    #[test]
    fn merged_reduced_dims_cast_first() {
        // Channel statistics of a channels-last layout: the reduced dims,
        // spatial and batch, merge into one.
        let x = zeros(&[2, 5, 4, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let mask = [true, false, true, true];
        assert_eq!(
            cast_of(ReduceOp::Sum, &x, &mask, DType::F16),
            Some(DType::F16)
        );
        // Row-major, the spatial dims merge, but not with the batch, which
        // the kept channels separate from them.
        let r = zeros(&[2, 3, 4, 5]);
        assert_eq!(cast_of(ReduceOp::Sum, &r, &mask, DType::F16), None);
        // Every dim reduced: a dense view merges into one dim.
        assert_eq!(
            cast_of(ReduceOp::Sum, &x, &[true; 4], DType::F16),
            Some(DType::F16)
        );
    }

    #[test]
    fn views_with_gaps_are_judged_by_the_copy_torch_makes() {
        // Every other column of a [6, 8] matrix, summed over both dims: the
        // view's own dims would not merge, torch's row-major copy's do.
        let x = zeros(&[6, 8]).slice(1, 0, 8, 2).unwrap();
        assert_eq!(
            cast_of(ReduceOp::Sum, &x, &[true, true], DType::F16),
            Some(DType::F16)
        );
        // A channels-last view with every other row: its copy is channels
        // last, where the reduced dims merge (a row-major copy's would not).
        let cl = zeros(&[2, 4, 5, 3]).permute(&[0, 3, 1, 2]).unwrap();
        let rows = cl.slice(2, 0, 4, 2).unwrap();
        assert_eq!(
            cast_of(ReduceOp::Sum, &rows, &[true, false, true, true], DType::F16),
            Some(DType::F16)
        );
    }
}
