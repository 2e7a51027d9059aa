//! `var`, `std`, `var_mean` and `std_mean`: Welford's algorithm in one
//! pass (PyTorch's `WelfordOps`), the same update and combine on both
//! backends.

use super::run_with;
use crate::reduce::ReduceOp;
use crate::{Error, Result, Tensor};

fn moments(
    x: &Tensor,
    op: ReduceOp,
    dims: &[isize],
    correction: f64,
    keepdim: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    run_with(x, op, dims, keepdim, None, correction)
}

fn with_mean(op: ReduceOp, r: (Tensor, Option<Tensor>)) -> Result<(Tensor, Tensor)> {
    match r {
        (a, Some(b)) => Ok((a, b)),
        (_, None) => Err(Error::Unsupported(format!(
            "internal: {op} returned no mean"
        ))),
    }
}

impl Tensor {
    /// The variance over `dims` (`&[]`: every dim), as `torch.var(x, dims,
    /// correction=correction, keepdim)`: `Σ(x - mean)² / max(n -
    /// correction, 0)`, so with no degrees of freedom left it is inf (or NaN
    /// when every deviation is 0, and for one element with correction 1).
    /// Floating inputs only (an integer tensor is an
    /// [`Error::UnsupportedDType`](crate::Error)); f16 and bf16 compute in
    /// f32. Empty reductions give NaN.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// let all = x.var(&[], 1.0, false)?.to_vec::<f32>()?[0];
    /// assert!((all - 3.5).abs() < 1e-6);
    /// let rows = x.var(&[1], 0.0, false)?.to_vec::<f32>()?;
    /// assert!(rows.iter().all(|v| (v - 2.0 / 3.0).abs() < 1e-6));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn var(&self, dims: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        Ok(moments(self, ReduceOp::Var, dims, correction, keepdim)?.0)
    }

    /// The standard deviation, `sqrt` of [`Tensor::var`], as `torch.std`.
    pub fn std(&self, dims: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        Ok(moments(self, ReduceOp::Std, dims, correction, keepdim)?.0)
    }

    /// `(var, mean)` from one kernel, as `torch.var_mean`.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![2.0f64, 4.0, 6.0], &[3])?;
    /// let (var, mean) = x.var_mean(&[], 1.0, false)?;
    /// assert_eq!((var.to_vec::<f64>()?, mean.to_vec::<f64>()?), (vec![4.0], vec![4.0]));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn var_mean(
        &self,
        dims: &[isize],
        correction: f64,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let op = ReduceOp::VarMean;
        with_mean(op, moments(self, op, dims, correction, keepdim)?)
    }

    /// `(std, mean)` from one kernel, as `torch.std_mean`.
    pub fn std_mean(
        &self,
        dims: &[isize],
        correction: f64,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let op = ReduceOp::StdMean;
        with_mean(op, moments(self, op, dims, correction, keepdim)?)
    }
}
