//! The CPU backend: multithreaded (rayon), deterministic reductions over a
//! [`TensorIterator`], with functors that mirror the GPU's.
//!
//! `reduce` picks the element type, the compute type (`compute_type`)
//! and the functor of a [`Signature`] and runs the generic trees of
//! `tree`, which hand each block of accumulators to `outputs`: torch's
//! `project`, then the cast to the result's dtype (and to the second
//! output's, for the ops that have one), straight into the result (or,
//! where the trees visit the outputs in the input's order, into a scratch
//! result that `order` gathers).
//! The trees' innermost loops run in the widest instruction set the CPU
//! has ([`isa`]), with the same results in every one.

mod element;
mod exp;
mod explain;
mod index_ops;
mod isa;
mod norm_ops;
mod ops;
mod order;
mod outputs;
mod pool;
mod prefetch;
mod runs;
mod simd;
mod stream;
mod sum_cast;
mod team;
mod tree;
mod welford;

pub use crate::tensor::host_cache::release_cached_memory;
pub use explain::{CpuColumnLeaf, CpuPlan, CpuStrategy, CpuThreads};
pub use isa::{isa, limit_isa, CpuIsa};

use crate::iter::TensorIterator;
use crate::reduce::{NormKind, OpParams, ReduceOp, Signature};
use crate::tensor::storage::{CpuStorage, Storage, UninitStorage};
use crate::{with_dtype, DType, Error, Result, Tensor};
use element::CpuElement;
use ops::{Compute, Float, ReduceOps};
use std::sync::Arc;

/// Runs `sig` over `input`, reducing the dims where `mask` is true, into a
/// flat, contiguous tensor of `sig.output` holding the outputs in order
/// (and a second of [`Signature::second_output`] for the ops that have one).
///
/// A signature with a value-changing cast (`sum(dtype=f16)` of an f32
/// tensor) reads a cast copy of the input: torch's own order, which the CPU
/// pays for only on those narrowing requests. Which dtype a sum casts to
/// depends on the layout on torch's CPU ([`sum_cast::as_torch_cpu`]).
pub(crate) fn reduce(
    input: &Tensor,
    mask: &[bool],
    sig: &Signature,
    params: OpParams,
) -> Result<(Tensor, Option<Tensor>)> {
    let sig = &sum_cast::as_torch_cpu(input, mask, sig)?;
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
    let (out, second) = match sig.op {
        ReduceOp::MaxDim
        | ReduceOp::MinDim
        | ReduceOp::ArgMax
        | ReduceOp::ArgMin
        | ReduceOp::AMinMax => with_dtype!(input.dtype(), T => {
            index_op::<T, <T as Widened>::Acc>(storage.as_slice::<T>(), &iter, sig)?
        }),
        ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean => {
            // Only floating inputs reach var and std (`output_dtype` refuses
            // the others).
            match input.dtype() {
                DType::F16 => welford_op::<crate::f16>(storage.as_slice(), &iter, sig, params)?,
                DType::BF16 => welford_op::<crate::bf16>(storage.as_slice(), &iter, sig, params)?,
                DType::F32 => welford_op::<f32>(storage.as_slice(), &iter, sig, params)?,
                DType::F64 => welford_op::<f64>(storage.as_slice(), &iter, sig, params)?,
                _ => return Err(not_dispatched(sig.op)),
            }
        }
        ReduceOp::Norm(_) | ReduceOp::LogSumExp => {
            // Each element type has one float compute type (its signature's),
            // so only those pairs are instantiated.
            match input.dtype() {
                DType::F16 => float_op::<crate::f16, f32>(storage.as_slice(), &iter, sig, params)?,
                DType::BF16 => {
                    float_op::<crate::bf16, f32>(storage.as_slice(), &iter, sig, params)?
                }
                DType::F32 => float_op::<f32, f32>(storage.as_slice(), &iter, sig, params)?,
                DType::F64 => float_op::<f64, f64>(storage.as_slice(), &iter, sig, params)?,
                // Integers reach only logsumexp (in f32).
                DType::I32 => int_float_op::<i32>(storage.as_slice(), &iter, sig)?,
                DType::I64 => int_float_op::<i64>(storage.as_slice(), &iter, sig)?,
                DType::U8 => int_float_op::<u8>(storage.as_slice(), &iter, sig)?,
                DType::Bool => int_float_op::<bool>(storage.as_slice(), &iter, sig)?,
            }
        }
        // Comparisons and truth tests compute in the input's own type
        // (the signature's rule), so only that pair is instantiated.
        ReduceOp::AMax | ReduceOp::AMin | ReduceOp::Any | ReduceOp::All => {
            with_dtype!(input.dtype(), T => {
                compare_op::<T, <T as Widened>::Acc>(storage.as_slice::<T>(), &iter, sig)?
            })
        }
        _ => with_dtype!(input.dtype(), T => {
            let data = storage.as_slice::<T>();
            match sig.compute {
                DType::F32 => run_op::<T, f32>(data, &iter, sig, params)?,
                DType::F64 => run_op::<T, f64>(data, &iter, sig, params)?,
                _ => run_op::<T, i64>(data, &iter, sig, params)?,
            }
        }),
    };
    let flat = |storage: CpuStorage, dtype| {
        let n = storage.len();
        Tensor::from_storage(Storage::Cpu(Arc::new(storage)), &[n], dtype)
    };
    Ok((
        flat(out, sig.output),
        second
            .zip(sig.second_output())
            .map(|(s, dtype)| flat(s, dtype)),
    ))
}

/// Both outputs' storage (the second only for ops that have one).
type Outputs = (CpuStorage, Option<CpuStorage>);

/// The compute type the comparisons of an element type run in, so that the
/// index ops, the comparisons and the truth tests are instantiated once per
/// element type. It is the signature's compute type
/// ([`DType::accumulator`]); a test holds the two together. (With every
/// compute type instantiated for the comparisons too, the library took
/// 1.7x as long to build.)
trait Widened {
    type Acc: Compute + crate::Element;
}

macro_rules! widened {
    ($($t:ty => $w:ty),*) => { $(impl Widened for $t { type Acc = $w; })* };
}
widened!(crate::f16 => f32, crate::bf16 => f32, f32 => f32, f64 => f64, i32 => i64, i64 => i64, u8 => i64, bool => i64);

/// The index ops and aminmax, on elements `T` compared in `W`.
fn index_op<T: CpuElement, W: Compute>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
) -> Result<Outputs> {
    match sig.op {
        ReduceOp::MaxDim => run::<T, W, _>(data, iter, sig, &index_ops::MaxDimOps),
        ReduceOp::MinDim => run::<T, W, _>(data, iter, sig, &index_ops::MinDimOps),
        ReduceOp::ArgMax => run::<T, W, _>(data, iter, sig, &index_ops::ArgMaxOps),
        ReduceOp::ArgMin => run::<T, W, _>(data, iter, sig, &index_ops::ArgMinOps),
        ReduceOp::AMinMax => run::<T, W, _>(data, iter, sig, &index_ops::MinMaxOps),
        op => Err(not_dispatched(op)),
    }
}

/// The type the CPU computes `sig` in: the signature's compute type, except
/// for var and std, whose state is [`welford::Acc`] on the CPU whatever the
/// signature (which describes the GPU's kernel) says.
pub(crate) fn compute_type(sig: &Signature) -> DType {
    match sig.op {
        ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean => {
            <welford::Acc as crate::Element>::DTYPE
        }
        _ => sig.compute,
    }
}

/// The leaf fold of its own that `sig`'s column leaves take, as the
/// functor it runs on says ([`ReduceOps::FOLDS_COLUMN_LEAVES`]), for
/// `explain`; `None` where they walk their rows with `reduce`.
pub(super) fn column_leaf_fold(sig: &Signature) -> Option<CpuColumnLeaf> {
    match sig.op {
        ReduceOp::LogSumExp
            if <norm_ops::LogSumExpOps as ReduceOps<f32>>::FOLDS_COLUMN_LEAVES =>
        {
            Some(CpuColumnLeaf::Blocks)
        }
        ReduceOp::MaxDim | ReduceOp::MinDim | ReduceOp::ArgMax | ReduceOp::ArgMin
            if <index_ops::ArgMaxOps as ReduceOps<f32>>::FOLDS_COLUMN_LEAVES =>
        {
            Some(CpuColumnLeaf::IndexStrips)
        }
        ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean
            if <welford::WelfordOps<welford::Acc> as ReduceOps<welford::Acc>>::FOLDS_COLUMN_LEAVES =>
        {
            Some(CpuColumnLeaf::WelfordChunks)
        }
        _ => None,
    }
}

/// Whether `sig`'s short rows fold side by side where their layout lets
/// them, as the functor it runs on says ([`ReduceOps::FOLDS_ROW_GROUPS`]),
/// for `explain`.
pub(super) fn folds_row_groups(sig: &Signature) -> bool {
    match sig.op {
        ReduceOp::MaxDim | ReduceOp::MinDim | ReduceOp::ArgMax | ReduceOp::ArgMin => {
            <index_ops::ArgMaxOps as ReduceOps<f32>>::FOLDS_ROW_GROUPS
        }
        _ => false,
    }
}

/// var, std, var_mean and std_mean on floating elements `T`, in
/// [`welford::Acc`].
fn welford_op<T: CpuElement>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
    params: OpParams,
) -> Result<Outputs> {
    type F = welford::Acc;
    run::<T, F, _>(data, iter, sig, &welford::WelfordOps::<F>::new(params))
}

/// The norms and logsumexp, on floating elements `T` computed in `F`.
fn float_op<T: CpuElement, F: Float>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
    params: OpParams,
) -> Result<Outputs> {
    match sig.op {
        ReduceOp::Norm(kind) => {
            let p = params;
            match kind {
                NormKind::Zero => {
                    run::<T, F, _>(data, iter, sig, &norm_ops::NormZeroOps::<F>::new(p))
                }
                NormKind::One => {
                    run::<T, F, _>(data, iter, sig, &norm_ops::NormOneOps::<F>::new(p))
                }
                NormKind::Two => {
                    run::<T, F, _>(data, iter, sig, &norm_ops::NormTwoOps::<F>::new(p))
                }
                NormKind::Inf => run::<T, F, _>(data, iter, sig, &norm_ops::AbsMaxOps),
                NormKind::NegInf => run::<T, F, _>(data, iter, sig, &norm_ops::AbsMinOps),
                NormKind::P => run::<T, F, _>(data, iter, sig, &norm_ops::NormOps::<F>::new(p)),
            }
        }
        ReduceOp::LogSumExp => run::<T, F, _>(data, iter, sig, &norm_ops::LogSumExpOps),
        op => Err(not_dispatched(op)),
    }
}

/// logsumexp of integer or bool elements, in f32 (torch's default float).
fn int_float_op<T: CpuElement>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
) -> Result<Outputs> {
    match sig.op {
        ReduceOp::LogSumExp => run::<T, f32, _>(data, iter, sig, &norm_ops::LogSumExpOps),
        op => Err(not_dispatched(op)),
    }
}

/// A signature that reached a dispatch it cannot come from.
fn not_dispatched(op: ReduceOp) -> Error {
    Error::Unsupported(format!(
        "internal: {op} dispatched to the wrong CPU kernel family"
    ))
}

/// The sums, products and means, on elements `T` computed in `W` (the
/// accumulator of the dtype a call asks for).
///
/// The signature's rules leave out two families, which the constant guards
/// keep from being compiled at all (a guard that is a constant after
/// monomorphisation prunes its arm): nansum of integers is their sum, and
/// mean computes only in a floating type (its output is one).
fn run_op<T: CpuElement, W: Compute + crate::Element>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
    params: OpParams,
) -> Result<Outputs> {
    match sig.op {
        ReduceOp::Sum => run::<T, W, _>(data, iter, sig, &ops::SumOps),
        ReduceOp::NanSum if const { T::DTYPE.is_floating_point() } => {
            run::<T, W, _>(data, iter, sig, &ops::NanSumOps)
        }
        ReduceOp::Prod => run::<T, W, _>(data, iter, sig, &ops::ProdOps),
        ReduceOp::Mean if const { W::DTYPE.is_floating_point() } => {
            run::<T, W, _>(data, iter, sig, &ops::MeanOps::<W>::new(params))
        }
        op => Err(not_dispatched(op)),
    }
}

/// The comparisons and truth tests, on elements `T` compared in `W`.
fn compare_op<T: CpuElement, W: Compute>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
) -> Result<Outputs> {
    match sig.op {
        ReduceOp::AMax => run::<T, W, _>(data, iter, sig, &ops::MaxOps),
        ReduceOp::AMin => run::<T, W, _>(data, iter, sig, &ops::MinOps),
        ReduceOp::Any => run::<T, W, _>(data, iter, sig, &ops::AnyOps),
        ReduceOp::All => run::<T, W, _>(data, iter, sig, &ops::AllOps),
        op => Err(not_dispatched(op)),
    }
}

/// Runs the trees over `iter`, in the input's order of its kept dims where
/// PyTorch's scatters the reads ([`order`]).
fn run<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
    op: &R,
) -> Result<Outputs> {
    let Some(ours) = order::trees_order(iter) else {
        assert!(
            order::is_result_order(iter),
            "internal: PyTorch's order of the kept dims is the result's"
        );
        return run_in_order(data, iter, sig, op);
    };
    let dims = order::result_dims(&ours);
    let (first, second) = run_in_order(data, &ours, sig, op)?;
    let second = match second.zip(sig.second_output()) {
        Some((s, dtype)) => Some(order::gather(&s, dtype, &dims)?),
        None => None,
    };
    Ok((order::gather(&first, sig.output, &dims)?, second))
}

/// Runs the trees over `iter`, its outputs stored in its order.
fn run_in_order<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    iter: &TensorIterator,
    sig: &Signature,
    op: &R,
) -> Result<Outputs> {
    let n = iter.num_output_elements();
    let mut first = UninitStorage::new(sig.output, n)?;
    let mut second = match sig.second_output() {
        Some(dtype) => Some(UninitStorage::new(dtype, n)?),
        None => None,
    };
    let written = tree::reduce(
        data,
        iter,
        op,
        outputs::Outputs::new(&mut first, second.as_mut()),
    );
    assert_eq!(written.count(), n, "internal: the trees write every output");
    // SAFETY: the trees wrote `n` outputs, each of a run of both results
    // that writing consumed, and the runs are disjoint: every element of
    // both results holds a value of its dtype.
    Ok(unsafe { (first.assume_init(), second.map(|s| s.assume_init())) })
}

/// The sum of `input` over the dims where `mask` is true, through the
/// trees of elements `T` computed in `W`, as [`reduce`] runs it (its
/// outputs flat): for the unit tests, which call this rather than the
/// public sum, so that the library's test build compiles the trees only
/// for what they test. Through the public sum, every op of every dtype
/// was reachable, and that build took as long as the library's own.
#[cfg(test)]
pub(super) fn sum_for_tests<T: CpuElement, W: Compute + crate::Element>(
    input: &Tensor,
    mask: &[bool],
) -> Tensor
where
    ops::SumOps: ReduceOps<W>,
{
    let sig = ReduceOp::Sum.signature(input.dtype(), None).unwrap();
    assert_eq!(compute_type(&sig), W::DTYPE, "the signature's compute type");
    let Storage::Cpu(storage) = &input.storage else {
        panic!("a CPU tensor");
    };
    let iter = TensorIterator::reduce_op(input, mask, sig.output).unwrap();
    let (out, _) = run::<T, W, _>(storage.as_slice::<T>(), &iter, &sig, &ops::SumOps).unwrap();
    let n = out.len();
    Tensor::from_storage(Storage::Cpu(Arc::new(out)), &[n], sig.output)
}

#[cfg(test)]
mod tests {
    use super::Widened;
    use crate::{with_dtype, DType, Element};

    #[test]
    fn widened_is_the_signatures_compute_type() {
        for d in DType::ALL {
            with_dtype!(d, T => assert_eq!(<<T as Widened>::Acc as Element>::DTYPE, d.accumulator(), "{d}"));
        }
    }
}
