//! Device memory behind a CUDA tensor.

use super::block_cache::Block;
use super::{context, driver_error};
use crate::tensor::storage::{byte_len, try_vec, CpuStorage, Storage};
use crate::{DType, Device, Error, Result, Tensor};
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// A device buffer of `len` elements of `dtype`, kept as bytes so one type
/// serves every dtype. The kernels reinterpret it through the byte strides
/// the plan computes. The buffer may be longer than the elements (a
/// cached block of a size class).
pub(crate) struct CudaStorage {
    pub(crate) buf: Block,
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    pub(crate) ordinal: usize,
    pub(crate) stream: Arc<CudaStream>,
}

impl CudaStorage {
    /// The device memory behind `t`, or [`Error::DeviceMismatch`] for a
    /// tensor on the CPU.
    pub(crate) fn of(t: &Tensor) -> Result<&CudaStorage> {
        match &t.storage {
            Storage::Cuda(storage) => Ok(storage),
            _ => Err(Error::DeviceMismatch {
                expected: Device::Cuda(0),
                actual: t.device(),
            }),
        }
    }

    pub(crate) fn ordinal(&self) -> usize {
        self.ordinal
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `bytes` (a whole number of `dtype` elements) to device `ordinal`.
    pub(crate) fn upload(ordinal: usize, dtype: DType, bytes: &[u8]) -> Result<Self> {
        let ctx = context(ordinal)?;
        let stream = ctx.default_stream();
        // A zero-length allocation is not allowed by the driver; keep one byte.
        let buf = if bytes.is_empty() {
            stream.alloc_zeros::<u8>(1)
        } else {
            stream.clone_htod(bytes)
        }
        .map_err(|e| driver_error(ordinal, bytes.len(), "copy to device", e))?;
        Ok(CudaStorage {
            buf: Block::from_slice(buf),
            len: bytes.len() / dtype.size_in_bytes(),
            dtype,
            ordinal,
            stream,
        })
    }

    /// A zero-filled buffer of `len` elements.
    pub(crate) fn zeros(ordinal: usize, dtype: DType, len: usize) -> Result<Self> {
        Self::alloc(ordinal, dtype, len, true)
    }

    fn alloc(ordinal: usize, dtype: DType, len: usize, zeroed: bool) -> Result<Self> {
        Self::alloc_on(&context(ordinal)?.default_stream(), dtype, len, zeroed)
    }

    /// An uninitialised buffer of `len` elements allocated on (and owned by)
    /// `stream`, for outputs a kernel enqueued on that stream writes in full
    /// (no memset launch).
    pub(crate) fn uninit_on(stream: &Arc<CudaStream>, dtype: DType, len: usize) -> Result<Self> {
        Self::alloc_on(stream, dtype, len, false)
    }

    fn alloc_on(stream: &Arc<CudaStream>, dtype: DType, len: usize, zeroed: bool) -> Result<Self> {
        let stream = stream.clone();
        let ordinal = stream.context().ordinal();
        let bytes = byte_len(dtype, len)?.max(1);
        let mut buf = Block::alloc(&stream, bytes)?;
        if zeroed {
            stream
                .memset_zeros(&mut *buf)
                .map_err(|e| driver_error(ordinal, bytes, "zero-fill", e))?;
        }
        Ok(CudaStorage {
            buf,
            len,
            dtype,
            ordinal,
            stream,
        })
    }

    /// Copies elements `lo..hi` back to host memory, into a host buffer
    /// allocated fallibly (a device buffer can be larger than host memory).
    pub(crate) fn download(&self, lo: usize, hi: usize) -> Result<CpuStorage> {
        let (lo, hi) = (byte_len(self.dtype, lo)?, byte_len(self.dtype, hi)?);
        let mut host = try_vec(0u8, hi - lo)?;
        self.stream
            .memcpy_dtoh(&self.buf.slice(lo..hi), &mut host)
            .map_err(|e| driver_error(self.ordinal, hi - lo, "copy to host", e))?;
        CpuStorage::from_bytes(self.dtype, &host)
    }
}
