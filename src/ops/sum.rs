//! `sum`, `sum_all` and `sum_dtype`.

use super::run;
use crate::reduce::ReduceOp;
use crate::{DType, Result, Tensor};

impl Tensor {
    /// Sums over `dims`, as `torch.sum(x, dims, keepdim)`.
    ///
    /// Dims may be negative and in any order; an empty slice reduces every
    /// dim. Floating inputs keep their dtype (f16 and bf16 accumulate in f32
    /// inside); integer and bool inputs sum to `I64`. A sum over no elements
    /// is 0; NaN and Inf propagate.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec((1..=6).map(|v| v as f32).collect(), &[2, 3])?;
    /// assert_eq!(x.sum(&[-1], false)?.to_vec::<f32>()?, vec![6.0, 15.0]);
    /// assert_eq!(x.sum(&[0], true)?.shape(), &[1, 3]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn sum(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::Sum, dims, keepdim, None)
    }

    /// Sums every element into a 0-d tensor, as `torch.sum(x)`.
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }

    /// Like [`Tensor::sum`] with the result in `dtype`, as
    /// `torch.sum(x, dims, keepdim, dtype=dtype)`: each element is cast to
    /// `dtype` first (so f32 `70000` summed as f16 is `inf`), then
    /// accumulated in `dtype`'s accumulator (f32 for 16-bit floats, i64 for
    /// integers). Widening casts cost nothing: `sum_dtype(.., DType::F32)` of
    /// an f16 tensor is one pass with no f16 rounding of the total.
    ///
    /// One exception, torch's own: on the CPU, a sum into f16 or bf16 whose
    /// two fastest reduced dims do not merge (a permuted view, or channel
    /// statistics of a row-major tensor) casts each element to f32 instead
    /// and rounds only the result, as torch's CPU does on those layouts.
    ///
    /// ```
    /// use tensor_reduce::{f16, DType, Tensor};
    /// let x = Tensor::from_vec(vec![f16::from_f32(60000.0); 4], &[4])?;
    /// let total = x.sum_dtype(&[0], false, DType::F32)?;
    /// assert_eq!(total.to_vec::<f32>()?, vec![240000.0]); // would overflow f16
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn sum_dtype(&self, dims: &[isize], keepdim: bool, dtype: DType) -> Result<Tensor> {
        run(self, ReduceOp::Sum, dims, keepdim, Some(dtype))
    }
}
