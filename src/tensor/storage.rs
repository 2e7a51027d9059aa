//! Where a tensor's elements live. Views share one storage through an `Arc`.

use crate::{DType, Device, Element, Error, Result};
use std::sync::Arc;

/// Host memory for one dtype, kept as 8-byte words so that a slice of any
/// element type (f64 and i64 included) is aligned.
pub(crate) struct CpuStorage {
    words: Vec<u64>,
    len: usize,
    dtype: DType,
}

impl CpuStorage {
    pub(crate) fn from_vec<T: Element>(data: Vec<T>) -> Self {
        let mut s = Self::zeroed(T::DTYPE, data.len());
        s.as_mut_slice::<T>().copy_from_slice(&data);
        s
    }

    /// All-zero bytes, which is the value 0 (or `false`) for every dtype.
    pub(crate) fn zeroed(dtype: DType, len: usize) -> Self {
        let bytes = len * dtype.size_in_bytes();
        CpuStorage {
            words: vec![0u64; bytes.div_ceil(8)],
            len,
            dtype,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: u64 words reinterpreted as bytes; the length is within the allocation.
        unsafe {
            std::slice::from_raw_parts(
                self.words.as_ptr() as *const u8,
                self.len * self.dtype.size_in_bytes(),
            )
        }
    }

    pub(crate) fn as_slice<T: Element>(&self) -> &[T] {
        assert_eq!(
            T::DTYPE,
            self.dtype,
            "internal: typed access with the storage's own dtype"
        );
        // SAFETY: the buffer is 8-byte aligned, holds `len` elements of
        // `T::DTYPE`, and only valid values of T were ever written (Element's contract).
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const T, self.len) }
    }

    pub(crate) fn as_mut_slice<T: Element>(&mut self) -> &mut [T] {
        assert_eq!(
            T::DTYPE,
            self.dtype,
            "internal: typed access with the storage's own dtype"
        );
        // SAFETY: as in `as_slice`, and `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut T, self.len) }
    }

    /// Reinterprets bytes copied back from a device buffer of this dtype.
    pub(crate) fn from_bytes(dtype: DType, bytes: &[u8]) -> Result<Self> {
        let size = dtype.size_in_bytes();
        if bytes.len() % size != 0 {
            return Err(Error::Cuda {
                context: "copy to host".into(),
                message: format!(
                    "{} bytes is not a whole number of {dtype} elements",
                    bytes.len()
                ),
            });
        }
        let mut s = Self::zeroed(dtype, bytes.len() / size);
        // SAFETY: same allocation reinterpreted as bytes, length checked above.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(s.words.as_mut_ptr() as *mut u8, bytes.len()) };
        dst.copy_from_slice(bytes);
        if dtype == DType::Bool && dst.iter().any(|&b| b > 1) {
            return Err(Error::Cuda {
                context: "copy to host".into(),
                message: "bool buffer holds a byte other than 0 or 1".into(),
            });
        }
        Ok(s)
    }
}

/// A tensor's storage on one device.
#[derive(Clone)]
pub(crate) enum Storage {
    Cpu(Arc<CpuStorage>),
    Cuda(Arc<crate::cuda::CudaStorage>),
}

impl Storage {
    pub(crate) fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(s) => Device::Cuda(s.ordinal()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            Storage::Cuda(s) => s.len(),
        }
    }
}
