//! The CPU backend: multithreaded (rayon), deterministic reductions over a
//! [`TensorIterator`], with functors that mirror the GPU's.
//!
//! [`reduce`] picks the element type, the compute type and the functor of a
//! [`Signature`] and runs the generic trees of [`tree`]; `project` then
//! writes each accumulator to the result's dtype.

mod element;
mod explain;
mod ops;
mod tree;

pub use explain::{CpuPlan, CpuStrategy};

use crate::iter::TensorIterator;
use crate::reduce::{OpParams, ReduceOp, Signature};
use crate::tensor::storage::{CpuStorage, Storage};
use crate::{with_dtype, DType, Error, Result, Tensor};
use element::CpuElement;
use ops::{Compute, Projected, ReduceOps};
use rayon::prelude::*;
use std::sync::Arc;

/// Runs `sig` over `input`, reducing the dims where `mask` is true, into a
/// flat, contiguous tensor of `sig.output` holding the outputs in order.
///
/// A signature with a value-changing cast (`sum(dtype=f16)` of an f32
/// tensor) reads a cast copy of the input: torch's own order, which the CPU
/// pays for only on those narrowing requests.
pub(crate) fn reduce(
    input: &Tensor,
    mask: &[bool],
    sig: &Signature,
    params: OpParams,
) -> Result<Tensor> {
    if let Some(cast) = sig.cast {
        let direct = Signature {
            input: cast,
            cast: None,
            ..*sig
        };
        return reduce(&input.to_dtype(cast)?, mask, &direct, params);
    }
    let Storage::Cpu(storage) = &input.storage else {
        return Err(Error::DeviceMismatch {
            expected: crate::Device::Cpu,
            actual: input.device(),
        });
    };
    let iter = TensorIterator::reduce_op(input, mask, sig.output)?;
    let out = with_dtype!(input.dtype(), T => {
        let data = storage.as_slice::<T>();
        match sig.compute {
            DType::F32 => run_op::<T, f32>(data, &iter, sig, params)?,
            DType::F64 => run_op::<T, f64>(data, &iter, sig, params)?,
            _ => run_op::<T, i64>(data, &iter, sig, params)?,
        }
    });
    let n = out.len();
    Ok(Tensor::from_storage(
        Storage::Cpu(Arc::new(out)),
        &[n],
        sig.output,
    ))
}

/// The functor of `sig.op`, on elements `T` computed in `W`.
fn run_op<T: CpuElement, W: Compute>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
    params: OpParams,
) -> Result<CpuStorage> {
    match sig.op {
        ReduceOp::Sum => run::<T, W, _>(data, iter, sig.output, &ops::SumOps),
        ReduceOp::NanSum => run::<T, W, _>(data, iter, sig.output, &ops::NanSumOps),
        ReduceOp::Prod => run::<T, W, _>(data, iter, sig.output, &ops::ProdOps),
        ReduceOp::Mean => run::<T, W, _>(data, iter, sig.output, &ops::MeanOps::<W>::new(params)),
        ReduceOp::AMax => run::<T, W, _>(data, iter, sig.output, &ops::MaxOps),
        ReduceOp::AMin => run::<T, W, _>(data, iter, sig.output, &ops::MinOps),
        ReduceOp::Any => run::<T, W, _>(data, iter, sig.output, &ops::AnyOps),
        ReduceOp::All => run::<T, W, _>(data, iter, sig.output, &ops::AllOps),
    }
}

fn run<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    iter: &TensorIterator,
    out_dtype: DType,
    op: &R,
) -> Result<CpuStorage> {
    let accs = tree::reduce(data, iter, op)?;
    project(op, accs, out_dtype)
}

/// torch's `project`, then the cast to the output dtype, into a fallibly
/// allocated storage.
fn project<W: Compute, R: ReduceOps<W>>(
    op: &R,
    accs: Vec<R::Acc>,
    out_dtype: DType,
) -> Result<CpuStorage> {
    with_dtype!(out_dtype, O => {
        let mut out = CpuStorage::zeroed(out_dtype, accs.len())?;
        out.as_mut_slice::<O>()
            .par_iter_mut()
            .with_min_len(4096)
            .zip(accs.par_iter())
            .for_each(|(o, &a)| *o = op.project(a).cast::<O>());
        Ok(out)
    })
}
