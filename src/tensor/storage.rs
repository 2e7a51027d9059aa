//! Where a tensor's elements live. Views share one storage through an `Arc`.

use super::host_cache;
use crate::{DType, Device, Element, Error, Result};
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Host memory for one dtype, kept as 8-byte words so that a slice of any
/// element type (f64 and i64 included) is aligned.
pub(crate) struct CpuStorage {
    words: Vec<u64>,
    len: usize,
    dtype: DType,
}

/// `n` copies of `value`, or [`Error::OutOfMemory`] when the allocator
/// refuses: shapes can ask for any size, and `vec!` would abort the process.
pub(crate) fn try_vec<T: Clone>(value: T, n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
    })?;
    v.resize(n, value);
    Ok(v)
}

/// `n` zero words, or [`Error::OutOfMemory`]. The allocator's zeroed
/// allocation hands the largest buffers over as fresh pages the kernel
/// zeroes on first touch; smaller ones (up to glibc's 32 MiB mmap
/// threshold, once freed buffers have raised it) come back from the heap
/// and are cleared by a memset on the calling thread. Results that are
/// about to be overwritten whole are made as [`UninitStorage`] instead.
fn try_zeroed_words(n: usize) -> Result<Vec<u64>> {
    let oom = || Error::OutOfMemory {
        bytes: n.saturating_mul(8),
    };
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(n).map_err(|_| oom())?;
    // SAFETY: the layout has a non-zero size (n > 0).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut u64;
    if ptr.is_null() {
        return Err(oom());
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `n`
    // u64s (what `Vec<u64>` frees with for capacity `n`), and all-zero bytes
    // are `n` valid u64s.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// An empty `Vec` with room for `n` elements, or [`Error::OutOfMemory`].
pub(crate) fn try_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
        bytes: n.saturating_mul(std::mem::size_of::<T>()),
    })?;
    Ok(v)
}

/// Bytes taken by `len` elements of `dtype`, or [`Error::ShapeOverflow`]
/// when that exceeds `isize::MAX` (the most any allocation can hold).
pub(crate) fn byte_len(dtype: DType, len: usize) -> Result<usize> {
    len.checked_mul(dtype.size_in_bytes())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| Error::ShapeOverflow { shape: vec![len] })
}

impl Drop for CpuStorage {
    /// A large buffer goes to the host cache, for the next result of its
    /// size ([`host_cache`]).
    fn drop(&mut self) {
        host_cache::offer(std::mem::take(&mut self.words));
    }
}

impl CpuStorage {
    pub(crate) fn from_vec<T: Element>(data: Vec<T>) -> Result<Self> {
        let mut s = Self::zeroed(T::DTYPE, data.len())?;
        s.as_mut_slice::<T>().copy_from_slice(&data);
        Ok(s)
    }

    /// All-zero bytes, which is the value 0 (or `false`) for every dtype.
    pub(crate) fn zeroed(dtype: DType, len: usize) -> Result<Self> {
        let bytes = byte_len(dtype, len)?;
        Ok(CpuStorage {
            words: try_zeroed_words(bytes.div_ceil(8))?,
            len,
            dtype,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes the elements take: checked by `zeroed` when the storage was
    /// made, so this cannot fail.
    fn byte_count(&self) -> usize {
        byte_len(self.dtype, self.len).expect("internal: checked when the storage was made")
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: u64 words reinterpreted as bytes; the length is within the allocation.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.byte_count()) }
    }

    pub(crate) fn as_mut_bytes(&mut self) -> &mut [u8] {
        let len = self.byte_count();
        // SAFETY: u64 words reinterpreted as bytes; the length is within the
        // allocation, and `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, len) }
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
        let mut s = Self::zeroed(dtype, bytes.len() / size)?;
        let dst = s.as_mut_bytes();
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

/// Host memory for `len` elements of one dtype whose bytes are not yet
/// written: a reduction's results, which its producer writes in full
/// before anyone reads them. Zeroing them first cost a memset of the whole
/// result on one thread (the allocator recycles freed buffers of up to
/// 32 MiB from its heap, and `calloc` must clear those), as much as the
/// reduction itself for millions of short rows on 16 cores.
pub(crate) struct UninitStorage {
    words: Vec<MaybeUninit<u64>>,
    len: usize,
    dtype: DType,
}

impl UninitStorage {
    /// Room for `len` elements of `dtype`, or [`Error::ShapeOverflow`] /
    /// [`Error::OutOfMemory`].
    pub(crate) fn new(dtype: DType, len: usize) -> Result<Self> {
        let bytes = byte_len(dtype, len)?;
        let n = bytes.div_ceil(8);
        let mut words = match host_cache::take(n) {
            Some(kept) => uninit_words(kept),
            None => {
                let mut words = try_with_capacity::<MaybeUninit<u64>>(n).or_else(|_| {
                    host_cache::release_cached_memory();
                    try_with_capacity::<MaybeUninit<u64>>(n)
                })?;
                words.resize(n, MaybeUninit::uninit());
                advise_huge_pages(&mut words);
                words
            }
        };
        // A kept buffer's length is its last owner's.
        // SAFETY: `n` is within the capacity (`take` keeps to that), and
        // `MaybeUninit` words need no initialisation.
        unsafe { words.set_len(n) };
        // The last word's bytes past the elements belong to no element and
        // are never written: zero them, so that every word is initialised.
        if let Some(last) = words.last_mut() {
            last.write(0);
        }
        Ok(UninitStorage { words, len, dtype })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn dtype(&self) -> DType {
        self.dtype
    }

    /// The elements' bytes, to be written.
    pub(crate) fn as_mut_bytes(&mut self) -> &mut [MaybeUninit<u8>] {
        let len = byte_len(self.dtype, self.len).expect("internal: checked by new");
        // SAFETY: u64 words reinterpreted as bytes (both possibly
        // uninitialised); the length is within the allocation, and
        // `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), len) }
    }

    /// The storage, its elements written.
    ///
    /// # Safety
    /// Every byte of [`as_mut_bytes`](Self::as_mut_bytes) has been written
    /// with a valid value of the dtype.
    pub(crate) unsafe fn assume_init(self) -> CpuStorage {
        let mut words = std::mem::ManuallyDrop::new(self.words);
        let (ptr, len, cap) = (words.as_mut_ptr(), words.len(), words.capacity());
        CpuStorage {
            // SAFETY: `MaybeUninit<u64>` has the layout of `u64`, the
            // allocation is handed over whole (pointer, length and
            // capacity), and every word is initialised: the elements' bytes
            // by the caller's promise, the last word's tail by `new`.
            words: unsafe { Vec::from_raw_parts(ptr.cast::<u64>(), len, cap) },
            len: self.len,
            dtype: self.dtype,
        }
    }
}

/// `words` as words whose values nobody may read: a kept buffer about to
/// be written by a new result.
fn uninit_words(words: Vec<u64>) -> Vec<MaybeUninit<u64>> {
    let mut words = std::mem::ManuallyDrop::new(words);
    let (ptr, len, cap) = (words.as_mut_ptr(), words.len(), words.capacity());
    // SAFETY: `MaybeUninit<u64>` has the layout of `u64`, and the
    // allocation is handed over whole (pointer, length and capacity).
    unsafe { Vec::from_raw_parts(ptr.cast::<MaybeUninit<u64>>(), len, cap) }
}

/// Results at least this large ask for transparent huge pages
/// ([`advise_huge_pages`]): those the host cache keeps, for the same
/// reason. Smaller ones are mostly recycled from the allocator's heap,
/// whose pages are already mapped.
const HUGE_PAGE_RESULT_BYTES: usize = host_cache::MIN_KEPT_BYTES;

/// Asks Linux to back the whole 2 MiB pages inside `buf` with transparent
/// huge pages, where the system allows it (`madvise` mode, the common
/// default; a system set to `never` ignores the advice). A large result
/// is fresh memory: each 4 KiB page of it cost a fault on first touch,
/// and with millions of outputs those faults, not the reduction, took most
/// of the time. A sum over rows of 2 into a 32 MiB f32 result (one thread,
/// the 2-core machine) took 14.3 ms with 4 KiB pages and 6.0 ms advised;
/// the same call into recycled pages took 4.2. PyTorch's CPU allocator
/// does the same behind `THP_MEM_ALLOC_ENABLE`.
fn advise_huge_pages(buf: &mut [MaybeUninit<u64>]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE: usize = 2 << 20;
        let bytes = std::mem::size_of_val(buf);
        if bytes < HUGE_PAGE_RESULT_BYTES {
            return;
        }
        let start = buf.as_mut_ptr() as usize;
        let lo = start.next_multiple_of(HUGE_PAGE);
        let hi = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
        if hi > lo {
            // SAFETY: `lo..hi` lies inside `buf`, which this storage owns;
            // the advice changes how its pages are backed, never their
            // contents. A refusal (no THP in the kernel) leaves 4 KiB pages.
            unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
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
