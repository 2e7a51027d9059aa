//! The crate's one error type.
//!
//! Every failure a caller can cause (a bad dim, a wrong length, a dtype
//! mismatch, a shape or stride too large to address) or meet (no GPU, out of
//! host or device memory, a kernel that fails to compile) is a variant here
//! whose message names what was wrong. Nothing on a user-reachable path
//! panics or aborts: sizes are computed with checked arithmetic, and host
//! allocations a shape can make large are fallible.

use crate::{DType, Device};

/// Everything that can go wrong in tensor-reduce.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A dim index outside `-rank..rank` (a rank-0 tensor takes -1 and 0,
    /// as torch); worded as torch's message.
    #[error("Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})", lo = -(*rank.max(&1) as isize), hi = (*rank.max(&1) as isize) - 1)]
    DimOutOfRange { dim: isize, rank: usize },

    /// The same dim named twice in one reduction or permutation: `dim` is
    /// the wrapped (non-negative) dim, `dims` the list as given; worded as
    /// torch's message.
    #[error("dim {dim} appears multiple times in the list of dims")]
    RepeatedDim { dim: usize, dims: Vec<isize> },

    /// A buffer whose length does not match the shape it is given.
    #[error("data has {given} elements but shape {shape:?} needs {expected}")]
    LengthMismatch {
        shape: Vec<usize>,
        expected: usize,
        given: usize,
    },

    /// A shape whose element or byte count (empty dims counted as 1, as
    /// their strides still are) does not fit in memory addressing
    /// (`isize::MAX` bytes).
    #[error("shape {shape:?} has more elements or bytes than memory can address")]
    ShapeOverflow { shape: Vec<usize> },

    /// A view whose strides or byte extent do not fit in memory addressing:
    /// some stride in bytes, or the offset of its last element in bytes,
    /// exceeds `isize::MAX`.
    #[error("view with shape {shape:?}, strides {strides:?} and offset {offset} reaches beyond the addressable range of {element_size}-byte elements")]
    LayoutOverflow {
        shape: Vec<usize>,
        strides: Vec<isize>,
        offset: usize,
        element_size: usize,
    },

    /// The host allocator refused an allocation (a result or copy too
    /// large for this machine's memory).
    #[error("out of host memory while allocating {bytes} bytes")]
    OutOfMemory { bytes: usize },

    /// Read back or wrote a tensor as the wrong element type.
    #[error("tensor has dtype {actual:?} but {requested:?} was requested")]
    DTypeMismatch { actual: DType, requested: DType },

    /// A view operation whose arguments do not fit the tensor.
    #[error("invalid view: {0}")]
    InvalidView(String),

    /// `reshape` to a shape with a different number of elements.
    #[error("cannot reshape a tensor of shape {from:?} ({from_numel} elements) to {to:?} ({to_numel} elements)")]
    ReshapeMismatch {
        from: Vec<usize>,
        from_numel: usize,
        to: Vec<usize>,
        to_numel: usize,
    },

    /// `expand` to a shape the tensor cannot broadcast to.
    #[error("cannot expand shape {from:?} to {to:?}: {why}")]
    InvalidExpand {
        from: Vec<usize>,
        to: Vec<usize>,
        why: String,
    },

    /// Strides and offset that would read outside the storage.
    #[error("view with shape {shape:?}, strides {strides:?} and offset {offset} reaches element {max_index} of a storage of {storage_len}")]
    OutOfBounds {
        shape: Vec<usize>,
        strides: Vec<isize>,
        offset: usize,
        max_index: usize,
        storage_len: usize,
    },

    /// Two tensors (or a tensor and a request) on different devices.
    #[error("tensor is on {actual}, but {expected} was required")]
    DeviceMismatch { expected: Device, actual: Device },

    /// No usable CUDA driver or device.
    #[error("CUDA is not available: {0}")]
    CudaUnavailable(String),

    /// The CUDA device ran out of memory.
    #[error("CUDA out of memory on device {ordinal} while allocating {bytes} bytes")]
    CudaOutOfMemory { ordinal: usize, bytes: usize },

    /// Any other CUDA driver error, with the call that failed.
    #[error("CUDA driver error in {context}: {message}")]
    Cuda { context: String, message: String },

    /// NVRTC failed to compile a kernel; the log says why.
    #[error("NVRTC could not compile {kernel}: {log}")]
    Compile { kernel: String, log: String },

    /// An op that does not accept this dtype (as input or as `dtype=`);
    /// `message` is torch's, word for word.
    #[error("{message}")]
    UnsupportedDType {
        op: &'static str,
        dtype: DType,
        message: String,
    },

    /// A reduction with no identity (amax, amin, argmax, ...) over an empty
    /// dim; `message` is torch's, word for word (its punctuation differs
    /// from op to op).
    #[error("{message}")]
    EmptyReduction { op: &'static str, message: String },

    /// A fill value that the dtype cannot hold (torch: "value cannot be
    /// converted to type ... without overflow").
    #[error("value {value} cannot be converted to {dtype} without overflow")]
    ValueOutOfRange { value: f64, dtype: DType },

    /// An argument outside what the function accepts, e.g. an `arange` step of 0.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A request the library does not support (yet), named precisely.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
