//! Large host buffers kept after their tensor is dropped, for the next
//! result of about their size: the host's counterpart of the device's
//! block cache (`cuda::block_cache`), reduced to what large results need.
//!
//! Why: glibc hands every allocation of 32 MiB or more out as fresh pages
//! and gives them back to the kernel when freed, so a reduction whose
//! result is that large paid, on every call, a page fault and the kernel's
//! zeroing for each page its trees wrote. A sum over rows of 8 of a 268 MB
//! f32 tensor (a 34 MB result) took 2.2 times as long as the same input
//! in rows of 16 on the 16-core host, whose 17 MB result the allocator
//! recycled from its heap. PyTorch keeps its device results the same way.
//!
//! Why it is safe: a kept buffer is handed out only as an
//! [`UninitStorage`](super::storage::UninitStorage), whose producer writes
//! every element before anyone reads one; no tensor ever sees the bytes of
//! the one that held the buffer before.
//!
//! What it costs: at most [`MAX_KEPT_BYTES`] stay allocated after their
//! tensors are dropped, in at most [`MAX_KEPT_BUFFERS`] buffers of at least
//! [`MIN_KEPT_BYTES`]; the oldest go back to the allocator first. An
//! allocation the allocator refuses frees them all and is tried once more,
//! and [`release_cached_memory`] frees them on request.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// The smallest buffer kept. Smaller ones come back from glibc's heap with
/// their pages mapped (it raises its mmap threshold up to 32 MiB as mapped
/// buffers are freed), so keeping them would only hold memory twice.
pub(crate) const MIN_KEPT_BYTES: usize = 16 << 20;

/// Bytes kept in all: room for the result of a reduction of a 512 MB
/// input over rows of 1 or 2, the largest a repeated call is likely to
/// make, without holding more than a small machine can spare.
pub(crate) const MAX_KEPT_BYTES: usize = 512 << 20;

/// Buffers kept in all: a few results of different sizes (a training
/// step's reductions) come back each step.
pub(crate) const MAX_KEPT_BUFFERS: usize = 4;

/// A request of `bytes` takes a kept buffer of up to `bytes + bytes /
/// SLACK`: the same shape asks for the same bytes, and a larger buffer
/// would hold memory the result never uses.
const SLACK: usize = 8;

/// Kept buffers with their sizes, oldest first: the bookkeeping, generic
/// over the buffer so it is tested without allocating.
#[derive(Debug)]
pub(crate) struct KeptBuffers<B> {
    buffers: VecDeque<(usize, B)>,
    bytes: usize,
}

impl<B> Default for KeptBuffers<B> {
    fn default() -> Self {
        KeptBuffers {
            buffers: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<B> KeptBuffers<B> {
    /// The smallest kept buffer that holds `bytes` with little to spare.
    pub(crate) fn take(&mut self, bytes: usize) -> Option<B> {
        let most = bytes.saturating_add(bytes / SLACK);
        let (at, _) = self
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, (size, _))| (bytes..=most).contains(size))
            .min_by_key(|(_, (size, _))| *size)?;
        let (size, buffer) = self.buffers.remove(at)?;
        self.bytes -= size;
        Some(buffer)
    }

    /// Keeps `buffer` of `size` bytes, handing back what is not kept: the
    /// buffer itself if its size is out of the kept range, or the oldest
    /// buffers that no longer fit under the caps.
    pub(crate) fn put(&mut self, size: usize, buffer: B) -> Vec<B> {
        if !(MIN_KEPT_BYTES..=MAX_KEPT_BYTES).contains(&size) {
            return vec![buffer];
        }
        self.buffers.push_back((size, buffer));
        self.bytes += size;
        let mut evicted = Vec::new();
        while self.bytes > MAX_KEPT_BYTES || self.buffers.len() > MAX_KEPT_BUFFERS {
            let (size, oldest) = self
                .buffers
                .pop_front()
                .expect("internal: over the caps means a buffer is kept");
            self.bytes -= size;
            evicted.push(oldest);
        }
        evicted
    }

    /// Every buffer kept, leaving none.
    pub(crate) fn drain(&mut self) -> Vec<B> {
        self.bytes = 0;
        self.buffers.drain(..).map(|(_, b)| b).collect()
    }

    /// Bytes kept.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Host buffers are whole 8-byte words (see `CpuStorage`).
pub(crate) type Words = Vec<u64>;

fn kept() -> MutexGuard<'static, KeptBuffers<Words>> {
    static KEPT: Mutex<KeptBuffers<Words>> = Mutex::new(KeptBuffers {
        buffers: VecDeque::new(),
        bytes: 0,
    });
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

fn size_of_words(words: &Words) -> usize {
    words.capacity() * std::mem::size_of::<u64>()
}

/// A kept buffer with room for at least `words` words (its length is
/// unspecified), if one of about that size is kept.
pub(crate) fn take(words: usize) -> Option<Words> {
    let bytes = words.checked_mul(std::mem::size_of::<u64>())?;
    if bytes < MIN_KEPT_BYTES {
        return None;
    }
    kept().take(bytes)
}

/// Offers the buffer of a dropped storage to the cache; one not kept is
/// freed here, outside the lock (a large free is a system call).
pub(crate) fn offer(words: Words) {
    let size = size_of_words(&words);
    if size < MIN_KEPT_BYTES {
        return;
    }
    let refused = kept().put(size, words);
    drop(refused);
}

/// Frees every host buffer the library keeps for the results of later
/// calls, and returns how many bytes that was.
///
/// Results of 16 MiB or more are kept after their tensors are dropped (at
/// most 512 MiB in all) so that the next result of their size is written
/// into pages already mapped; fresh pages cost a fault and a zeroing each,
/// as much as the reduction itself for short rows. Call this to give that
/// memory back before a phase that needs it elsewhere; the library also
/// frees it by itself when an allocation fails.
///
/// ```
/// use tensor_reduce::{cpu, DType, Device, Tensor};
/// let x = Tensor::zeros(&[1 << 22, 2], DType::F32, Device::Cpu)?;
/// drop(x.sum(&[1], false)?); // a 16 MiB result, kept when dropped
/// assert!(cpu::release_cached_memory() >= 16 << 20);
/// assert_eq!(cpu::release_cached_memory(), 0); // nothing left to free
/// # Ok::<(), tensor_reduce::Error>(())
/// ```
pub fn release_cached_memory() -> usize {
    let (bytes, buffers) = {
        let mut kept = kept();
        (kept.bytes(), kept.drain())
    };
    drop(buffers);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn a_request_takes_the_smallest_buffer_that_fits_with_little_to_spare() {
        let mut k = KeptBuffers::default();
        assert!(k.put(64 * MIB, "64").is_empty());
        assert!(k.put(40 * MIB, "40").is_empty());
        assert!(k.put(36 * MIB, "36").is_empty());
        assert_eq!(k.bytes(), 140 * MIB);
        // 36 MiB is too small for 37; 40 is within an eighth of it.
        assert_eq!(k.take(37 * MIB), Some("40"));
        // Nothing within an eighth above 50 MiB (64 would waste 14).
        assert_eq!(k.take(50 * MIB), None);
        assert_eq!(k.take(32 * MIB), Some("36"));
        assert_eq!(k.take(64 * MIB), Some("64"));
        assert_eq!(k.take(64 * MIB), None);
        assert_eq!(k.bytes(), 0);
    }

    #[test]
    fn buffers_out_of_range_are_refused_and_the_caps_evict_the_oldest() {
        let mut k = KeptBuffers::default();
        assert_eq!(k.put(MIN_KEPT_BYTES - 1, "small"), vec!["small"]);
        assert_eq!(k.put(MAX_KEPT_BYTES + 1, "huge"), vec!["huge"]);
        assert_eq!(k.bytes(), 0);
        // The count cap: a fifth buffer evicts the first.
        for name in ["a", "b", "c", "d"] {
            assert!(k.put(MIN_KEPT_BYTES, name).is_empty());
        }
        assert_eq!(k.put(MIN_KEPT_BYTES, "e"), vec!["a"]);
        // The byte cap: a buffer of all the bytes evicts every other.
        assert_eq!(k.put(MAX_KEPT_BYTES, "all"), vec!["b", "c", "d", "e"]);
        assert_eq!(k.bytes(), MAX_KEPT_BYTES);
        assert_eq!(k.drain(), vec!["all"]);
        assert_eq!(k.bytes(), 0);
        assert_eq!(k.take(MAX_KEPT_BYTES), None);
    }
}
