//! Small device buffers kept after their tensor is dropped, for the next
//! allocation of the same size on the same stream: PyTorch's caching
//! allocator, reduced to what a reduction's outputs need.
//!
//! Why: on the H100 machine an allocation and a free through the driver's
//! stream-ordered pool (`cuMemAllocAsync` + `cuMemFreeAsync`, cudarc's
//! `alloc` and drop) took 2.2 µs of host time, and a whole small reduction
//! 7.3 µs, of which the launch itself is 3.7. A block taken from here costs
//! a lock and a pop.
//!
//! Why it is safe: a block is only ever handed out again on the stream it
//! was allocated and freed on, and every use of a tensor's buffer is
//! enqueued on that stream (see `interop` for the contract with callers who
//! use other streams). So the work of the next owner is ordered after all
//! the work of the last, as it is after `cuMemFreeAsync` on that stream.
//!
//! What it costs: at most [`MAX_CACHED_BYTES`] a stream stays allocated
//! after use, in blocks of at most [`MAX_BLOCK_BYTES`]; larger buffers go
//! straight to the driver, whose time is small next to their kernels'. A
//! driver allocation that runs out of memory empties the device's cache and
//! is tried once more.

use super::driver_error;
use crate::Result;
use cudarc::driver::{CudaSlice, CudaStream, DriverError};
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, OnceLock};

/// The smallest block: requests are rounded up to a power of two from here,
/// so a stream's cache has a few size classes and a block serves any
/// request of its class (at most twice the bytes asked for).
pub(crate) const MIN_BLOCK_BYTES: usize = 512;

/// The largest block kept. Above it a reduction reads enough that the
/// driver's microseconds do not show.
pub(crate) const MAX_BLOCK_BYTES: usize = 1 << 20;

/// Bytes of free blocks kept per stream; a block freed past it goes back to
/// the driver.
pub(crate) const MAX_CACHED_BYTES: usize = 64 << 20;

/// The size class of a request of `bytes`: the block size that serves it,
/// or `None` for requests the cache does not keep.
pub(crate) fn block_bytes(bytes: usize) -> Option<usize> {
    (bytes <= MAX_BLOCK_BYTES).then(|| bytes.max(MIN_BLOCK_BYTES).next_power_of_two())
}

/// Free blocks of one stream by size class, and their total bytes: the
/// bookkeeping, generic over the block so it is tested without a GPU.
#[derive(Debug)]
pub(crate) struct FreeBlocks<B> {
    by_size: HashMap<usize, Vec<B>>,
    bytes: usize,
}

impl<B> Default for FreeBlocks<B> {
    fn default() -> Self {
        FreeBlocks {
            by_size: HashMap::new(),
            bytes: 0,
        }
    }
}

impl<B> FreeBlocks<B> {
    /// A free block of `size` bytes (a size class), if one is kept.
    pub(crate) fn take(&mut self, size: usize) -> Option<B> {
        let b = self.by_size.get_mut(&size)?.pop()?;
        self.bytes -= size;
        Some(b)
    }

    /// Keeps `block` of `size` bytes, or gives it back when keeping it
    /// would pass [`MAX_CACHED_BYTES`].
    pub(crate) fn put(&mut self, size: usize, block: B) -> Option<B> {
        if self.bytes + size > MAX_CACHED_BYTES {
            return Some(block);
        }
        self.bytes += size;
        self.by_size.entry(size).or_default().push(block);
        None
    }

    /// Every block kept, leaving none.
    pub(crate) fn drain(&mut self) -> Vec<B> {
        self.bytes = 0;
        self.by_size.drain().flat_map(|(_, v)| v).collect()
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// (device ordinal, stream handle): a cached block holds its stream alive,
/// so a handle in the map is never reused by another stream.
type StreamKey = (usize, usize);

fn cache() -> std::sync::MutexGuard<'static, HashMap<StreamKey, FreeBlocks<CudaSlice<u8>>>> {
    static CACHE: OnceLock<Mutex<HashMap<StreamKey, FreeBlocks<CudaSlice<u8>>>>> = OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn key(stream: &CudaStream) -> StreamKey {
    (stream.context().ordinal(), stream.cu_stream() as usize)
}

/// A device buffer of at least the bytes asked for. One from the cache (of
/// its size class) goes back to it when dropped; any other is freed by the
/// driver, as a plain `CudaSlice` is.
pub(crate) struct Block {
    slice: Option<CudaSlice<u8>>,
    cached: bool,
}

impl Block {
    /// At least `bytes` (≥ 1) of uninitialised device memory on `stream`.
    pub(crate) fn alloc(stream: &Arc<CudaStream>, bytes: usize) -> Result<Block> {
        let (bytes, cached) = match block_bytes(bytes) {
            Some(size) => (size, true),
            None => (bytes, false),
        };
        let kept = cached
            .then(|| cache().get_mut(&key(stream)).and_then(|f| f.take(bytes)))
            .flatten();
        let slice = match kept {
            Some(slice) => slice,
            None => driver_alloc(stream, bytes)
                .map_err(|e| driver_error(stream.context().ordinal(), bytes, "allocate", e))?,
        };
        Ok(Block {
            slice: Some(slice),
            cached,
        })
    }

    /// A block over a buffer allocated elsewhere (a caller's, or a copy
    /// from the host); the driver frees it.
    pub(crate) fn from_slice(slice: CudaSlice<u8>) -> Block {
        Block {
            slice: Some(slice),
            cached: false,
        }
    }

    /// The buffer, no longer the cache's: whoever holds it frees it.
    pub(crate) fn into_slice(mut self) -> CudaSlice<u8> {
        self.slice
            .take()
            .expect("internal: a live block holds its slice")
    }
}

impl Deref for Block {
    type Target = CudaSlice<u8>;
    fn deref(&self) -> &CudaSlice<u8> {
        self.slice
            .as_ref()
            .expect("internal: a live block holds its slice")
    }
}

impl DerefMut for Block {
    fn deref_mut(&mut self) -> &mut CudaSlice<u8> {
        self.slice
            .as_mut()
            .expect("internal: a live block holds its slice")
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let Some(slice) = self.slice.take() else {
            return;
        };
        if !self.cached {
            return;
        }
        let size = slice.len();
        let k = key(slice.stream());
        // Dropped outside the lock: a free is a driver call.
        let refused = cache().entry(k).or_default().put(size, slice);
        drop(refused);
    }
}

/// `bytes` from the driver's pool on `stream`; out of memory, the device's
/// cached blocks are freed and the allocation tried once more.
fn driver_alloc(
    stream: &Arc<CudaStream>,
    bytes: usize,
) -> std::result::Result<CudaSlice<u8>, DriverError> {
    // SAFETY: u8 has no invalid bit patterns; every caller writes what it
    // reads (outputs are written whole by their kernels, copies fill theirs).
    match unsafe { stream.alloc::<u8>(bytes) } {
        Err(e) if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
            release_device(stream.context().ordinal());
            unsafe { stream.alloc::<u8>(bytes) }
        }
        r => r,
    }
}

/// Frees every block cached for device `ordinal`, on any stream.
fn release_device(ordinal: usize) {
    let blocks: Vec<CudaSlice<u8>> = cache()
        .iter_mut()
        .filter(|((o, _), _)| *o == ordinal)
        .flat_map(|(_, f)| f.drain())
        .collect();
    drop(blocks);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_up_to_power_of_two_classes_within_the_cached_range() {
        assert_eq!(block_bytes(1), Some(512));
        assert_eq!(block_bytes(512), Some(512));
        assert_eq!(block_bytes(513), Some(1024));
        assert_eq!(block_bytes(160), Some(512));
        assert_eq!(block_bytes(3 << 18), Some(1 << 20));
        assert_eq!(block_bytes(1 << 20), Some(1 << 20));
        assert_eq!(block_bytes((1 << 20) + 1), None);
        assert_eq!(block_bytes(usize::MAX), None);
    }

    #[test]
    fn a_freed_block_serves_its_class_only_and_the_cap_holds() {
        let mut f = FreeBlocks::default();
        assert!(f.put(512, "a").is_none());
        assert!(f.put(1024, "b").is_none());
        assert_eq!(f.bytes(), 1536);
        assert_eq!(f.take(2048), None);
        assert_eq!(f.take(1024), Some("b"));
        assert_eq!(f.take(1024), None);
        assert_eq!(f.bytes(), 512);
        // Filling up to the cap keeps every block; one more is given back.
        let mut g = FreeBlocks::default();
        let n = MAX_CACHED_BYTES / MAX_BLOCK_BYTES;
        for i in 0..n {
            assert!(g.put(MAX_BLOCK_BYTES, i).is_none());
        }
        assert_eq!(g.bytes(), MAX_CACHED_BYTES);
        assert_eq!(g.put(512, n), Some(n));
        assert_eq!(g.drain().len(), n);
        assert_eq!(g.bytes(), 0);
        assert_eq!(g.take(MAX_BLOCK_BYTES), None);
    }

    #[test]
    #[ignore = "needs a CUDA device"]
    fn freed_blocks_come_back_on_their_stream_only() {
        use cudarc::driver::DevicePtr;
        let ctx = match crate::cuda::context(0) {
            Ok(c) => c,
            Err(e) => {
                let required = std::env::var("TENSOR_REDUCE_REQUIRE_CUDA").is_ok_and(|v| v == "1");
                assert!(
                    !required,
                    "TENSOR_REDUCE_REQUIRE_CUDA=1 but no usable CUDA device: {e}"
                );
                eprintln!("SKIPPED freed_blocks_come_back_on_their_stream_only: {e}");
                return;
            }
        };
        // Streams of its own: no other test frees or takes blocks on them.
        let (s, t) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let ptr = |b: &Block, on: &CudaStream| b.device_ptr(on).0;
        let a = Block::alloc(&s, 100).unwrap();
        assert_eq!(a.len(), 512);
        let pa = ptr(&a, &s);
        drop(a);
        // Another stream never gets it; the same stream does, for any
        // request of its class, and only once.
        let other = Block::alloc(&t, 100).unwrap();
        assert_ne!(ptr(&other, &t), pa);
        let again = Block::alloc(&s, 300).unwrap();
        assert_eq!(ptr(&again, &s), pa);
        let second = Block::alloc(&s, 300).unwrap();
        assert_ne!(ptr(&second, &s), pa);
        // A block handed out of the cache for good is freed by its holder.
        let kept = again.into_slice();
        let next = Block::alloc(&s, 300).unwrap();
        assert_ne!(next.device_ptr(&s).0, kept.device_ptr(&s).0);
        // Large buffers are the driver's: exactly the bytes asked for.
        let big = Block::alloc(&s, MAX_BLOCK_BYTES + 1).unwrap();
        assert_eq!(big.len(), MAX_BLOCK_BYTES + 1);
        s.synchronize().unwrap();
    }
}
