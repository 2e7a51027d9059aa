//! Which dims a call reduces, resolved against its input as torch resolves
//! them.

use super::{EmptyRule, ReduceOp};
use crate::tensor::view::wrap_dim;
use crate::{Error, Result, Tensor};

/// A call's `dims` and `keepdim`, resolved against the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReduceDims {
    /// One entry per input dim: whether it is reduced.
    pub mask: Vec<bool>,
    /// The result's shape (with the reduced dims as 1 or dropped, per
    /// `keepdim`).
    pub out_shape: Vec<usize>,
}

impl ReduceDims {
    /// Negative dims wrap, a repeated dim is an error, and an empty list
    /// means every dim (for every op in this crate: torch's `any`/`all`
    /// would reduce nothing for `dim=()`, one rule is easier to hold).
    pub fn resolve(input: &Tensor, dims: &[isize], keepdim: bool) -> Result<ReduceDims> {
        let rank = input.dim();
        let mut mask = vec![dims.is_empty(); rank];
        let mut seen = vec![false; rank.max(1)];
        for &d in dims {
            let w = wrap_dim(d, rank)?;
            if std::mem::replace(&mut seen[w], true) {
                return Err(Error::RepeatedDim {
                    dim: w,
                    dims: dims.to_vec(),
                });
            }
            if rank > 0 {
                mask[w] = true;
            }
        }
        let out_shape = input
            .shape()
            .iter()
            .zip(&mask)
            .filter_map(|(&n, &m)| match (m, keepdim) {
                (false, _) => Some(n),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Ok(ReduceDims { mask, out_shape })
    }

    /// torch's `zero_numel_check_dims` for ops without an identity: every
    /// reduced dim must be non-empty, and a full reduction of an empty tensor
    /// must name its dims.
    pub fn check_identity(&self, op: ReduceOp, input: &Tensor, dims: &[isize]) -> Result<()> {
        if op.empty_rule() != EmptyRule::NoIdentity || input.numel() > 0 {
            return Ok(());
        }
        let name = op.name();
        let message = if dims.is_empty() {
            match op {
                ReduceOp::AMinMax => format!(
                    "{name}(): cannot compute aminmax over an empty dimension as the operation has no identity."
                ),
                ReduceOp::ArgMax | ReduceOp::ArgMin => format!(
                    "{name}(): Expected reduction dim to be specified for input.numel() == 0."
                ),
                _ => format!(
                    "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
                ),
            }
        } else {
            // torch checks the dims in the order given and names the first
            // empty one as the caller wrote it (-1 stays -1).
            let Some(&d) = dims.iter().find(|&&d| {
                wrap_dim(d, input.dim()).is_ok_and(|w| input.shape().get(w) == Some(&0))
            }) else {
                return Ok(());
            };
            // torch's aminmax words it without the parentheses.
            let sep = if op == ReduceOp::AMinMax { ":" } else { "():" };
            format!("{name}{sep} Expected reduction dim {d} to have non-zero size.")
        };
        Err(Error::EmptyReduction { op: name, message })
    }
}
