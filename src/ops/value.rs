//! The value reductions beside `sum`: `prod`, `nansum`, `mean`, `amax`,
//! `amin`, `any` and `all`. Each takes any set of dims (negative, any order;
//! `&[]` means every dim) and `keepdim`, as its torch namesake.

use super::run;
use crate::reduce::ReduceOp;
use crate::{DType, Result, Tensor};

impl Tensor {
    /// The product over `dims`, as `torch.prod`. Integer and bool inputs
    /// give `I64` (products wrap, as in torch); an empty product is 1.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2])?;
    /// assert_eq!(x.prod(&[1], false)?.to_vec::<i64>()?, vec![2, 12]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn prod(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::Prod, dims, keepdim, None)
    }

    /// [`Tensor::prod`] with the result in `dtype`, as `torch.prod(x, dims,
    /// dtype=dtype)`: each element is cast to `dtype` first.
    pub fn prod_dtype(&self, dims: &[isize], keepdim: bool, dtype: DType) -> Result<Tensor> {
        run(self, ReduceOp::Prod, dims, keepdim, Some(dtype))
    }

    /// The sum over `dims` with NaN counted as 0, as `torch.nansum`.
    /// Integer inputs have no NaN: their nansum is their sum.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, f32::NAN, 2.0], &[3])?;
    /// assert_eq!(x.nansum(&[], false)?.to_vec::<f32>()?, vec![3.0]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn nansum(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::NanSum, dims, keepdim, None)
    }

    /// [`Tensor::nansum`] with the result in `dtype`, as `torch.nansum(x,
    /// dims, dtype=dtype)`: each element is cast to `dtype` first. A
    /// floating input takes a floating `dtype` only (an integer one is an
    /// [`Error::UnsupportedDType`](crate::Error), as torch has no such
    /// kernel, unless the input is empty: then, as in torch, the result is
    /// 0); an integer input's nansum is [`Tensor::sum_dtype`].
    ///
    /// ```
    /// use tensor_reduce::{bf16, DType, Tensor};
    /// let x = Tensor::from_vec(vec![1.5f32, f32::NAN, 2.0], &[3])?;
    /// let s = x.nansum_dtype(&[], false, DType::BF16)?;
    /// assert_eq!(s.to_vec::<bf16>()?, vec![bf16::from_f32(3.5)]);
    /// assert!(x.nansum_dtype(&[], false, DType::I64).is_err());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn nansum_dtype(&self, dims: &[isize], keepdim: bool, dtype: DType) -> Result<Tensor> {
        run(self, ReduceOp::NanSum, dims, keepdim, Some(dtype))
    }

    /// The mean over `dims`, as `torch.mean`: floating inputs only (an
    /// integer tensor is an [`Error::UnsupportedDType`](crate::Error)
    /// naming its dtype, as torch refuses it); f16 and bf16 accumulate in
    /// f32. The mean of no elements is NaN.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 6.0], &[2, 2])?;
    /// assert_eq!(x.mean(&[0], false)?.to_vec::<f32>()?, vec![2.0, 4.0]);
    /// assert!(Tensor::from_vec(vec![1i64, 2], &[2])?.mean(&[], false).is_err());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn mean(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::Mean, dims, keepdim, None)
    }

    /// [`Tensor::mean`] with the result in the floating `dtype`, as
    /// `torch.mean(x, dims, dtype=dtype)`; the input, integer or not, is
    /// cast to `dtype` first, except on the CPU for a 16-bit `dtype`, where
    /// torch's CPU (and so this one) sums in f32 and rounds the mean
    /// ([`Signature::for_device`](crate::reduce::Signature::for_device)).
    pub fn mean_dtype(&self, dims: &[isize], keepdim: bool, dtype: DType) -> Result<Tensor> {
        run(self, ReduceOp::Mean, dims, keepdim, Some(dtype))
    }

    /// The largest value over `dims`, as `torch.amax`: NaN propagates, the
    /// dtype is kept. An empty reduced dim is an
    /// [`Error::EmptyReduction`](crate::Error) (max has no identity).
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, 5.0, -2.0, 3.0], &[2, 2])?;
    /// assert_eq!(x.amax(&[1], false)?.to_vec::<f32>()?, vec![5.0, 3.0]);
    /// assert_eq!(x.amax(&[], false)?.to_vec::<f32>()?, vec![5.0]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn amax(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::AMax, dims, keepdim, None)
    }

    /// The smallest value over `dims`, as `torch.amin`; see [`Tensor::amax`].
    pub fn amin(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::AMin, dims, keepdim, None)
    }

    /// Whether any element over `dims` is non-zero (NaN counts), as
    /// `torch.any`: a `Bool` result (`U8` for a `U8` input); false when
    /// empty. `&[]` reduces every dim (torch's `dim=()` would reduce none).
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![0.0f32, 0.5, 0.0, 0.0], &[2, 2])?;
    /// assert_eq!(x.any(&[1], false)?.to_vec::<bool>()?, vec![true, false]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn any(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::Any, dims, keepdim, None)
    }

    /// Whether every element over `dims` is non-zero, as `torch.all`; true
    /// when empty. See [`Tensor::any`].
    pub fn all(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        run(self, ReduceOp::All, dims, keepdim, None)
    }
}
