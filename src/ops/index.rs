//! The index reductions and their fused pairs: `max_dim`, `min_dim`,
//! `argmax`, `argmin` and `aminmax`. Indices are logical positions along the
//! reduced dim (whatever the view's strides), i64; among equal values, and
//! among NaNs (which count as the largest), the lowest index wins.

use super::run_with;
use crate::reduce::{ReduceDims, ReduceOp};
use crate::{Error, Result, Tensor};

/// Both outputs of an op that has two.
fn both(op: ReduceOp, r: (Tensor, Option<Tensor>)) -> Result<(Tensor, Tensor)> {
    match r {
        (a, Some(b)) => Ok((a, b)),
        (_, None) => Err(Error::Unsupported(format!(
            "internal: {op} returned one output"
        ))),
    }
}

impl Tensor {
    /// The largest value along `dim` and its index, as `torch.max(x, dim,
    /// keepdim)`: both from one kernel. Values keep the dtype, indices are
    /// i64. NaN counts as the largest; among ties the lowest index wins. An
    /// empty `dim` is an [`Error::EmptyReduction`](crate::Error).
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, 5.0, 5.0, 3.0, f32::NAN, 0.0], &[2, 3])?;
    /// let (values, indices) = x.max_dim(1, false)?;
    /// assert_eq!(indices.to_vec::<i64>()?, vec![1, 1]);
    /// assert!(values.to_vec::<f32>()?[1].is_nan());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let op = ReduceOp::MaxDim;
        both(op, run_with(self, op, &[dim], keepdim, None, 0.0)?)
    }

    /// The smallest value along `dim` and its index, as `torch.min(x, dim,
    /// keepdim)`; NaN still wins. See [`Tensor::max_dim`].
    pub fn min_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let op = ReduceOp::MinDim;
        both(op, run_with(self, op, &[dim], keepdim, None, 0.0)?)
    }

    /// The index of the largest value along `dim`, or of the flattened
    /// tensor for `None`, as `torch.argmax`: i64, the first NaN if there is
    /// one, the lowest index among ties; f16 and bf16 compare as f32. With
    /// `None` and `keepdim` the result has every dim as 1. Bool inputs and
    /// empty reductions are errors, as in torch.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![3i32, 9, 9, 4, 1, 0], &[2, 3])?;
    /// assert_eq!(x.argmax(None, false)?.to_vec::<i64>()?, vec![1]);
    /// assert_eq!(x.argmax(Some(0), false)?.to_vec::<i64>()?, vec![1, 0, 0]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn argmax(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        self.arg(ReduceOp::ArgMax, dim, keepdim)
    }

    /// The index of the smallest value, as `torch.argmin` (NaN still
    /// wins). See [`Tensor::argmax`].
    pub fn argmin(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        self.arg(ReduceOp::ArgMin, dim, keepdim)
    }

    fn arg(&self, op: ReduceOp, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
        let Some(dim) = dim else {
            op.output_dtype(self.dtype(), None)?;
            ReduceDims::resolve(self, &[], keepdim)?.check_identity(op, self, &[])?;
            // The flat index is the row-major position: reduce a flat view
            // (a copy only when the tensor is not contiguous).
            let flat = self.reshape(&[self.numel()])?;
            let r = run_with(&flat, op, &[0], false, None, 0.0)?.0;
            return if keepdim {
                r.reshape(&vec![1; self.dim()])
            } else {
                Ok(r)
            };
        };
        Ok(run_with(self, op, &[dim], keepdim, None, 0.0)?.0)
    }

    /// The smallest and the largest value over `dims` (`&[]`: every dim),
    /// as `torch.aminmax`: `(min, max)` from one kernel, in the input's
    /// dtype; NaN propagates to both. Empty reductions are errors.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![4i64, -2, 7, 0], &[2, 2])?;
    /// let (lo, hi) = x.aminmax(&[], false)?;
    /// assert_eq!((lo.to_vec::<i64>()?, hi.to_vec::<i64>()?), (vec![-2], vec![7]));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn aminmax(&self, dims: &[isize], keepdim: bool) -> Result<(Tensor, Tensor)> {
        let op = ReduceOp::AMinMax;
        both(op, run_with(self, op, dims, keepdim, None, 0.0)?)
    }
}
