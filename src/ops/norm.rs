//! `norm` (`torch.linalg.vector_norm`) and `logsumexp`.

use super::run_with;
use crate::reduce::{NormKind, ReduceDims, ReduceOp};
use crate::tensor::view::wrap_dim;
use crate::{Error, Result, Tensor};

/// torch's refusal of an inf or negative-order norm over an empty dim (the
/// others are sums, 0 when empty), worded as torch words it: the dim as the
/// caller wrote it, and no space before "because".
fn check_norm_identity(x: &Tensor, p: f64, dims: &[isize], keepdim: bool) -> Result<()> {
    if x.numel() > 0 || !(p < 0.0 || p == f64::INFINITY) {
        return Ok(());
    }
    let rd = ReduceDims::resolve(x, dims, keepdim)?;
    let place = if dims.is_empty() {
        "on an empty tensor because".to_string()
    } else {
        let empty = |&d: &isize| {
            wrap_dim(d, x.dim()).is_ok_and(|w| rd.mask[w] && x.shape().get(w) == Some(&0))
        };
        match dims.iter().find(|d| empty(d)) {
            Some(d) => format!("on the dimension {d}because this dimension is empty and"),
            // Every reduced dim has elements: the result is empty, not an error.
            None => return Ok(()),
        }
    };
    Err(Error::EmptyReduction {
        op: "linalg.vector_norm",
        message: format!(
            "linalg.vector_norm cannot compute the {p} norm {place} the operation does not have an identity"
        ),
    })
}

/// Whether reducing `x` over `dims` leaves one element for each output
/// (every reduced dim has size 1), on a non-empty `x`.
fn one_element_each(x: &Tensor, dims: &[isize], keepdim: bool) -> Result<bool> {
    let rd = ReduceDims::resolve(x, dims, keepdim)?;
    Ok(x.numel() > 0
        && rd
            .mask
            .iter()
            .zip(x.shape())
            .all(|(&reduced, &n)| !reduced || n == 1))
}

impl Tensor {
    /// The `p`-norm over `dims` (`&[]`: every dim), as
    /// `torch.linalg.vector_norm(x, p, dims, keepdim)`: p = 0 counts the
    /// non-zero elements, 1 is `Σ|x|`, 2 is `sqrt(Σx²)`, `f64::INFINITY` is
    /// `max|x|`, `f64::NEG_INFINITY` is `min|x|`, any other p is
    /// `(Σ|x|^p)^(1/p)`. Floating inputs only; f16 and bf16 compute in f32.
    /// An empty reduction gives 0, except for p = inf and p < 0, which have
    /// no identity and are an [`Error::EmptyReduction`](crate::Error) as in
    /// torch.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![3.0f32, -4.0, 0.0], &[3])?;
    /// assert_eq!(x.norm(2.0, &[], false)?.to_vec::<f32>()?, vec![5.0]);
    /// assert_eq!(x.norm(f64::INFINITY, &[], false)?.to_vec::<f32>()?, vec![4.0]);
    /// assert_eq!(x.norm(0.0, &[], false)?.to_vec::<f32>()?, vec![2.0]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn norm(&self, p: f64, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let op = ReduceOp::Norm(NormKind::of(p));
        op.output_dtype(self.dtype(), None)?;
        check_norm_identity(self, p, dims, keepdim)?;
        // torch gives |x| where each output has one element, whatever the
        // order (but 0): (|x|^p)^(1/p) would overflow, underflow or round
        // on the way (x = 3.9e29, p = 3 is inf; x = 1e-30, p = 2 is 0),
        // and a sum of one |x| is |x| exactly.
        let (op, p) = if p != 0.0 && !p.is_nan() && one_element_each(self, dims, keepdim)? {
            (ReduceOp::Norm(NormKind::One), 1.0)
        } else {
            (op, p)
        };
        Ok(run_with(self, op, dims, keepdim, None, p)?.0)
    }

    /// `log Σ exp(x)` over `dims` (`&[]`: every dim), as `torch.logsumexp`,
    /// in one pass over the input: NaN gives NaN, a slice of -inf gives
    /// -inf, any +inf gives +inf, an empty slice gives -inf. Integer and
    /// bool inputs give f32 (torch's default float); f16 and bf16 compute
    /// in f32.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec(vec![1000.0f64, 1000.0], &[2])?;
    /// let y = x.logsumexp(&[], false)?.to_vec::<f64>()?[0];
    /// assert!((y - (1000.0 + 2f64.ln())).abs() < 1e-12);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn logsumexp(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        Ok(run_with(self, ReduceOp::LogSumExp, dims, keepdim, None, 0.0)?.0)
    }
}
