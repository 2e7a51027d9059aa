//! The strided [`Tensor`]: shared storage, a shape, element strides and a
//! storage offset. Views (permute, narrow, expand, ...) never copy.

mod cast;
mod create;
mod display;
pub(crate) mod host_cache;
mod layout;
pub(crate) mod memory_format;
#[cfg(feature = "ndarray")]
mod ndarray_interop;
pub(crate) use layout::checked_numel;
mod random;
pub(crate) mod storage;
pub(crate) mod view;

use crate::{DType, Device, Element, Error, Result};
pub(crate) use layout::{checked_shape, checked_span, contiguous_strides};
use smallvec::SmallVec;
use std::sync::Arc;
use storage::{CpuStorage, Storage};

/// Dims stored inline up to this rank; higher ranks spill to the heap.
pub(crate) const INLINE_RANK: usize = 6;
pub(crate) type Shape = SmallVec<[usize; INLINE_RANK]>;
pub(crate) type Strides = SmallVec<[isize; INLINE_RANK]>;

/// An n-dimensional strided view of elements of one [`DType`] on one [`Device`].
///
/// Cloning a tensor is cheap: the storage is shared, as are the storages of
/// all views made from it.
///
/// ```
/// use tensor_reduce::Tensor;
/// let x = Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[2, 3])?;
/// let xt = x.t()?;                       // a view: shape [3, 2], strides [1, 3]
/// assert_eq!(xt.strides(), &[1, 3]);
/// assert_eq!(xt.to_vec::<f32>()?, vec![0., 3., 1., 4., 2., 5.]);
/// # Ok::<(), tensor_reduce::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    pub(crate) storage: Storage,
    pub(crate) shape: Shape,
    pub(crate) strides: Strides,
    pub(crate) offset: usize,
    pub(crate) dtype: DType,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape.as_slice())
            .field("strides", &self.strides.as_slice())
            .field("offset", &self.offset)
            .field("dtype", &self.dtype)
            .field("device", &self.device())
            .finish()
    }
}

impl Tensor {
    /// A contiguous tensor of `shape` holding `data` in row-major order.
    ///
    /// Errors with [`Error::LengthMismatch`] when `data.len()` is not the
    /// product of `shape`, and [`Error::ShapeOverflow`] when the shape is not
    /// addressable. An empty `shape` makes a 0-d tensor of one element.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let expected = checked_shape(shape, T::DTYPE.size_in_bytes())?;
        if data.len() != expected {
            return Err(Error::LengthMismatch {
                shape: shape.to_vec(),
                expected,
                given: data.len(),
            });
        }
        Ok(Tensor::from_storage(
            Storage::Cpu(Arc::new(CpuStorage::from_vec(data)?)),
            shape,
            T::DTYPE,
        ))
    }

    /// Like [`Tensor::from_vec`], copying from a slice.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape)
    }

    /// A 0-d tensor holding `value`.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        // Eight bytes at most, and the one-element `Vec` passed in was just
        // allocated: this cannot run out of memory in any way that matters.
        let storage = CpuStorage::from_vec(vec![value]).expect("a one-element allocation");
        Tensor::from_storage(Storage::Cpu(Arc::new(storage)), &[], T::DTYPE)
    }

    /// A contiguous tensor of zeros (`false` for `Bool`).
    ///
    /// Errors with [`Error::ShapeOverflow`] when the shape's byte size is not
    /// addressable, and [`Error::OutOfMemory`] (or
    /// [`Error::CudaOutOfMemory`]) when the memory cannot be had.
    ///
    /// ```
    /// use tensor_reduce::{DType, Device, Error, Tensor};
    /// let z = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu)?;
    /// assert_eq!(z.to_vec::<f32>()?, vec![0.0; 6]);
    /// let huge = Tensor::zeros(&[1 << 62], DType::F32, Device::Cpu);
    /// assert!(matches!(huge, Err(Error::ShapeOverflow { .. })));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        let numel = checked_shape(shape, dtype.size_in_bytes())?;
        let storage = match device {
            Device::Cpu => Storage::Cpu(Arc::new(CpuStorage::zeroed(dtype, numel)?)),
            Device::Cuda(i) => {
                Storage::Cuda(Arc::new(crate::cuda::CudaStorage::zeros(i, dtype, numel)?))
            }
        };
        Ok(Tensor::from_storage(storage, shape, dtype))
    }

    pub(crate) fn from_storage(storage: Storage, shape: &[usize], dtype: DType) -> Tensor {
        Tensor {
            storage,
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
            dtype,
        }
    }

    /// The size of each dim.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The stride of each dim, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Offset of element `[0, 0, ...]` in the storage, in elements.
    pub fn storage_offset(&self) -> usize {
        self.offset
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Where the storage lives.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The number of elements (1 for a 0-d tensor, 0 when any dim is 0).
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The number of dims (the rank).
    pub fn dim(&self) -> usize {
        self.shape.len()
    }

    /// Whether the elements are laid out row-major with no gaps, as
    /// `torch.Tensor.is_contiguous` decides it: dims of size 1 may have any
    /// stride, and an empty tensor is contiguous.
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected *= d as isize;
            }
        }
        true
    }

    /// The range of storage elements this view can touch: `[lo, hi)`.
    /// Empty (lo == hi) when the tensor has no elements. Errors when the
    /// layout is not addressable (views check this as they are made).
    pub(crate) fn storage_span(&self) -> Result<(usize, usize)> {
        checked_span(
            &self.shape,
            &self.strides,
            self.offset,
            self.dtype.size_in_bytes(),
        )
    }

    /// Copies the elements to a `Vec` in logical row-major order, whatever
    /// the layout or device. Errors when `T` is not the tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DTypeMismatch {
                actual: self.dtype,
                requested: T::DTYPE,
            });
        }
        // A broadcast view can name more elements than memory can hold.
        if self
            .numel()
            .checked_mul(self.dtype.size_in_bytes())
            .is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(Error::ShapeOverflow {
                shape: self.shape.to_vec(),
            });
        }
        let host = self.to_device(Device::Cpu)?;
        let Storage::Cpu(storage) = &host.storage else {
            unreachable!("to_device(Cpu) returns host storage")
        };
        let data = storage.as_slice::<T>();
        let mut out = storage::try_with_capacity(host.numel())?;
        host.for_each_offset(|off| out.push(data[off]));
        Ok(out)
    }

    /// Calls `f` with the storage offset of every element, in row-major order.
    pub(crate) fn for_each_offset(&self, mut f: impl FnMut(usize)) {
        if self.numel() == 0 {
            return;
        }
        let rank = self.dim();
        let mut index: SmallVec<[usize; INLINE_RANK]> = SmallVec::from_elem(0, rank);
        let mut off = self.offset as isize;
        loop {
            f(off as usize);
            let mut d = rank;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                index[d] += 1;
                off += self.strides[d];
                if index[d] < self.shape[d] {
                    break;
                }
                off -= self.strides[d] * self.shape[d] as isize;
                index[d] = 0;
            }
        }
    }

    /// A copy of this tensor on `device`, keeping the view's layout: only the
    /// span of storage the view reaches is copied, and strides are kept, with
    /// the offset moved so that the data pointer keeps its alignment modulo
    /// 16 bytes (the GPU plan's vectorisation depends on it).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        if self.numel() == 0 {
            // Nothing to copy; an empty view's offset may lie past its storage.
            return Tensor::zeros(&self.shape, self.dtype, device);
        }
        let (lo, hi) = self.storage_span()?;
        let esize = self.dtype.size_in_bytes();
        let lo_aligned = lo - (lo * esize % 16) / esize;
        // Only the span moves: a device-to-host copy downloads just it, a
        // move between GPUs stages just it on the host.
        let host = match &self.storage {
            Storage::Cpu(s) => s.clone(),
            Storage::Cuda(s) => Arc::new(s.download(lo_aligned, hi)?),
        };
        let storage = match (device, &self.storage) {
            (Device::Cpu, Storage::Cuda(_)) => Storage::Cpu(host),
            (Device::Cpu, Storage::Cpu(_)) => unreachable!("same device returned above"),
            (Device::Cuda(i), Storage::Cpu(_)) => {
                Storage::Cuda(Arc::new(crate::cuda::CudaStorage::upload(
                    i,
                    self.dtype,
                    &host.as_bytes()[lo_aligned * esize..hi * esize],
                )?))
            }
            (Device::Cuda(i), Storage::Cuda(_)) => Storage::Cuda(Arc::new(
                crate::cuda::CudaStorage::upload(i, self.dtype, host.as_bytes())?,
            )),
        };
        Ok(Tensor {
            storage,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: self.offset - lo_aligned,
            dtype: self.dtype,
        })
    }

    /// A contiguous copy, or this tensor itself when it already is contiguous.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        match &self.storage {
            Storage::Cpu(_) => {
                crate::with_dtype!(self.dtype, T => Tensor::from_vec(self.to_vec::<T>()?, &self.shape))
            }
            // Gathered on the device, on the tensor's stream.
            Storage::Cuda(s) => Ok(Tensor::from_storage(
                Storage::Cuda(Arc::new(crate::cuda::contiguous_copy(self, s)?)),
                &self.shape,
                self.dtype,
            )),
        }
    }
}
