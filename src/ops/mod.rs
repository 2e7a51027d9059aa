//! The public reductions, with torch's names and semantics. Every entry
//! point is one call of [`run`] with its [`ReduceOp`]: resolve the dims,
//! describe the op on the input's dtype, apply the empty-input rule, and
//! hand the rest to the backend of the tensor's device.

mod sum;
mod value;

use crate::cuda::plan::{DeviceProps, ReducePlan};
use crate::iter::TensorIterator;
use crate::reduce::{EmptyRule, ReduceDims, ReduceOp};
use crate::{cpu, cuda, DType, Device, Result, Tensor};

/// Runs `op` over `dims` of `input` (torch's dims rules, see
/// [`ReduceDims::resolve`]), with an optional `dtype=`.
pub(crate) fn run(
    input: &Tensor,
    op: ReduceOp,
    dims: &[isize],
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let sig = op.signature(input.dtype(), dtype)?;
    let rd = ReduceDims::resolve(input, dims, keepdim)?;
    rd.check_identity(op, input, dims)?;
    if input.numel() == 0 {
        let EmptyRule::Fill(value) = op.empty_rule() else {
            // check_identity let it through: the output is empty too.
            return Tensor::zeros(&rd.out_shape, sig.output, input.device());
        };
        return Tensor::full(&rd.out_shape, value, sig.output, input.device());
    }
    let num_outputs = rd.out_shape.iter().product();
    let params = sig.params(num_outputs, input.numel());
    let flat = match input.device() {
        Device::Cpu => cpu::reduce(input, &rd.mask, &sig, params)?,
        Device::Cuda(_) => cuda::reduce(input, &rd.mask, &sig, params)?,
    };
    flat.reshape(&rd.out_shape)
}

impl Tensor {
    /// The GPU launch plan `op` over `dims` would run on a device with
    /// `props`, without running it (no GPU needed): the op's functor and
    /// types, the iterator after reorder and coalesce, and for each launch
    /// PyTorch's `ReduceConfig`, grid, block and memory, with the reasons.
    /// Printing the plan explains it.
    ///
    /// ```
    /// use tensor_reduce::{cuda::plan::DeviceProps, reduce::ReduceOp, DType, Device, Tensor};
    /// let x = Tensor::zeros(&[2, 3, 4, 5], DType::F32, Device::Cpu)?;
    /// let plan = x.explain(ReduceOp::Mean, &[1], true, &DeviceProps::h200())?;
    /// assert_eq!(plan.launches.len(), 1);
    /// assert!(plan.to_string().starts_with("mean f32 -> f32"));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn explain(
        &self,
        op: ReduceOp,
        dims: &[isize],
        keepdim: bool,
        props: &DeviceProps,
    ) -> Result<ReducePlan> {
        let sig = op.signature(self.dtype(), None)?;
        let rd = ReduceDims::resolve(self, dims, keepdim)?;
        let iter = TensorIterator::reduce_op(self, &rd.mask, sig.output)?;
        ReducePlan::new(&iter, &sig, props)
    }
}
