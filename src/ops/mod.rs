//! The public reductions, with torch's names and semantics. Every entry
//! point is one call of [`run`] with its [`ReduceOp`]: resolve the dims,
//! describe the op on the input's dtype, apply the empty-input rule and
//! the one-input rule of the index ops, and hand the rest to the backend
//! of the tensor's device.

mod index;
mod moments;
mod norm;
mod sum;
mod value;

use crate::cuda::plan::{DeviceProps, ReducePlan};
use crate::iter::TensorIterator;
use crate::reduce::{EmptyRule, ReduceDims, ReduceOp};
use crate::tensor::checked_numel;
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
    Ok(run_with(input, op, dims, keepdim, dtype, 0.0)?.0)
}

/// [`run`] for the ops with a scalar argument `arg` (var's correction, a
/// norm's `p`, see [`crate::reduce::Signature::params`]), returning both
/// outputs of the ops that have two (see
/// [`crate::reduce::Signature::second_output`]).
pub(crate) fn run_with(
    input: &Tensor,
    op: ReduceOp,
    dims: &[isize],
    keepdim: bool,
    dtype: Option<DType>,
    arg: f64,
) -> Result<(Tensor, Option<Tensor>)> {
    let sig = op
        .signature(input.dtype(), dtype)?
        .for_device(input.device());
    let rd = ReduceDims::resolve(input, dims, keepdim)?;
    rd.check_identity(op, input, dims)?;
    let second = sig.second_output();
    if input.numel() == 0 {
        let fill = |dtype: DType| match op.empty_rule() {
            EmptyRule::Fill(value) => Tensor::full(&rd.out_shape, value, dtype, input.device()),
            // check_identity let it through: the output is empty too.
            EmptyRule::NoIdentity => Tensor::zeros(&rd.out_shape, dtype, input.device()),
        };
        return Ok((fill(sig.output)?, second.map(fill).transpose()?));
    }
    let num_outputs = checked_numel(&rd.out_shape)?;
    if op.fills_index_zero(input.numel(), num_outputs) {
        return Ok((
            Tensor::zeros(&rd.out_shape, sig.output, input.device())?,
            None,
        ));
    }
    sig.dispatch()?;
    let params = sig.params(num_outputs, input.numel(), arg);
    let (a, b) = match input.device() {
        Device::Cpu => cpu::reduce(input, &rd.mask, &sig, params)?,
        Device::Cuda(_) => cuda::reduce(input, &rd.mask, &sig, params)?,
    };
    Ok((
        a.reshape(&rd.out_shape)?,
        b.map(|b| b.reshape(&rd.out_shape)).transpose()?,
    ))
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

    /// The GPU launch plan `op` over `dims` runs on this tensor's device:
    /// [`Tensor::explain`] with that device's properties and the registers
    /// of the kernels it compiled (loading them if no call has yet), by
    /// which our strategies count how many CTAs an SM holds. The same plan
    /// the reduction itself takes from the plan cache. A tensor on the CPU
    /// is [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// ```no_run
    /// use tensor_reduce::{reduce::ReduceOp, DType, Device, Tensor};
    /// let x = Tensor::zeros(&[16384, 1024], DType::F64, Device::cuda(0)?)?;
    /// println!("{}", x.device_plan(ReduceOp::Sum, &[0], false)?);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn device_plan(&self, op: ReduceOp, dims: &[isize], keepdim: bool) -> Result<ReducePlan> {
        let sig = op.signature(self.dtype(), None)?;
        let rd = ReduceDims::resolve(self, dims, keepdim)?;
        Ok((*cuda::device_plan(self, &rd.mask, &sig)?).clone())
    }
}
