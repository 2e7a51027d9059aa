//! Tensors over `cudarc` buffers, both ways, without a trip through the host.
//!
//! # Streams and ordering
//!
//! A CUDA tensor's storage carries the stream its work is enqueued on: the
//! context's default stream for tensors this crate allocates, the buffer's
//! own stream for one wrapped by [`Tensor::from_cuda_slice`]. Reductions and
//! copies of a tensor are enqueued on its stream and their results live on
//! that same stream, so work on one stream needs no synchronisation at all.
//!
//! This crate turns cudarc's event tracking off (see `configure` in
//! `src/cuda/mod.rs`), so nothing orders work across streams for you: a
//! caller who writes a buffer on stream A and reduces a tensor over it on
//! stream B must make B wait for A (e.g. `B.join(&A)`) first, and must not
//! free or overwrite a buffer before the work reading it has finished
//! (synchronise the tensor's stream, [`Tensor::cuda_stream`]). That includes
//! dropping a result another stream still reads: a small result's buffer is
//! handed to the next result made on its stream, as a stream-ordered free
//! would let the driver do.
//!
//! # Contexts
//!
//! Kernels are loaded into each device's primary context (the one
//! `CudaContext::new(ordinal)` retains), so a wrapped buffer must belong to
//! it. A `CudaContext::new` of your own is the same primary context and is
//! accepted; a buffer from a non-primary context (`new_non_primary`,
//! `from_raw_context` of another context) is refused with
//! [`Error::Unsupported`], since this crate's kernels cannot run there.

use super::{context, driver_error, CudaStorage};
use crate::tensor::checked_numel;
use crate::tensor::storage::Storage;
use crate::{Element, Error, Result, Tensor};
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use std::sync::Arc;

/// Reinterprets a device buffer of `len` elements of `T` as its bytes (or the
/// reverse) without copying: the allocation changes owner, not place.
fn retype<T, U>(slice: CudaSlice<T>, len: usize) -> CudaSlice<U> {
    let stream = slice.stream().clone();
    let ptr = slice.leak();
    // SAFETY: `ptr` is a live allocation of the same byte size that `leak`
    // just released to us; the new slice takes over freeing it, on the same
    // stream. Callers pass the length in `U`s of that same byte count.
    unsafe { stream.upgrade_device_ptr::<U>(ptr, len) }
}

impl Tensor {
    /// Wraps a cudarc device buffer as a contiguous tensor of `shape`,
    /// without copying: the tensor takes ownership of the buffer, and the
    /// buffer's stream becomes the tensor's stream (see the module docs on
    /// ordering).
    ///
    /// Errors: [`Error::LengthMismatch`] when `slice.len()` is not the
    /// product of `shape`; [`Error::Unsupported`] when the buffer belongs to
    /// a context other than its device's primary context. A `Bool` buffer
    /// must hold only 0 and 1 (reading any other byte back is an error).
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// use tensor_reduce::Tensor;
    /// let stream = CudaContext::new(0).unwrap().default_stream();
    /// let buf = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    /// let x = Tensor::from_cuda_slice(buf, &[2, 2])?;
    /// let column_sums = x.sum(&[0], false)?.to_cuda_slice::<f32>()?; // stays on the GPU
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn from_cuda_slice<T: Element + DeviceRepr>(
        slice: CudaSlice<T>,
        shape: &[usize],
    ) -> Result<Tensor> {
        let expected = checked_numel(shape)?;
        if slice.len() != expected {
            return Err(Error::LengthMismatch {
                shape: shape.to_vec(),
                expected,
                given: slice.len(),
            });
        }
        let ordinal = slice.ordinal();
        let ours = context(ordinal)?;
        if **slice.context() != *ours {
            return Err(Error::Unsupported(format!(
                "a buffer from a CUDA context other than device {ordinal}'s primary context"
            )));
        }
        let stream = slice.stream().clone();
        let bytes = slice.num_bytes();
        // Storage always holds at least one byte (the driver refuses empty
        // allocations), so an empty buffer is replaced by one.
        let buf = if bytes == 0 {
            drop(slice);
            stream
                .alloc_zeros::<u8>(1)
                .map_err(|e| driver_error(ordinal, 1, "allocate", e))?
        } else {
            retype::<T, u8>(slice, bytes)
        };
        let storage = CudaStorage {
            buf: super::block_cache::Block::from_slice(buf),
            len: expected,
            dtype: T::DTYPE,
            ordinal,
            stream,
        };
        Ok(Tensor::from_storage(
            Storage::Cuda(Arc::new(storage)),
            shape,
            T::DTYPE,
        ))
    }

    /// The elements, in row-major order, as a new cudarc buffer on the
    /// tensor's device and stream: a device-to-device copy of a contiguous
    /// tensor, a gather on the device for any other view. Nothing passes
    /// through the host.
    ///
    /// Errors: [`Error::DTypeMismatch`] when `T` is not the dtype;
    /// [`Error::DeviceMismatch`] for a tensor on the CPU.
    pub fn to_cuda_slice<T: Element + DeviceRepr>(&self) -> Result<CudaSlice<T>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DTypeMismatch {
                actual: self.dtype,
                requested: T::DTYPE,
            });
        }
        let storage = CudaStorage::of(self)?;
        let copy = super::contiguous_copy(self, storage)?;
        Ok(retype::<u8, T>(copy.buf.into_slice(), self.numel()))
    }

    /// The stream a CUDA tensor's work is enqueued on (`None` on the CPU).
    /// Synchronise it before reading a result through another API.
    pub fn cuda_stream(&self) -> Option<Arc<CudaStream>> {
        match &self.storage {
            Storage::Cuda(s) => Some(s.stream.clone()),
            Storage::Cpu(_) => None,
        }
    }
}
