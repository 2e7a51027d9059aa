//! The op layer: what each reduction is ([`ReduceOp`], [`Signature`]) and
//! how a call's dims are resolved against its input. Every layer below, the
//! planner, both backends and `explain`, reads these; the entry points in
//! `src/ops` build them.

mod dims;
mod op;

pub use dims::ReduceDims;
pub(crate) use op::WiderLoads;
pub use op::{
    Accumulator, EmptyRule, NormKind, OpParams, ReduceOp, Signature, BYTE_SUM_INPUT_VEC_SIZE,
    SIXTEEN_BIT_WIDE_VEC_SIZE,
};
