//! Non-temporal stores for results larger than the caches.
//!
//! A result written with ordinary stores is read before it is written: each
//! cache line it touches is first fetched from memory (a read for
//! ownership), then written back. Where the result is as large as the input
//! (rows and columns of 1, 2 or 4 elements), that is a third or more of the
//! call's memory traffic, spent on bytes that are about to be overwritten.
//! A streaming store writes whole lines to memory without fetching them.
//!
//! Measured with one build, `TENSOR_REDUCE_CPU_STREAM=off` as the base
//! (`scripts/ab_cpu.py`, three rounds beside torch):
//! - on the GPU machine's 16-core host (Intel Xeon, 105 MiB of L3), rows
//!   and columns of 1 and 2 of f32, f64 and i64 ran 1.23-1.52× faster,
//!   of 4 1.11-1.15×, f32 rows of 8 and 16 (results under the threshold)
//!   within the noise; rows of 3 ran 0.86×, their stages starting
//!   mid-line, which stages no longer do (`outputs`, `Column::lead`; not
//!   yet timed on that host);
//! - on the 2-core AMD EPYC guest, with stages on lines, every row and
//!   column of 1 to 7 of 4 and 8 bytes ran 1.00-1.45× faster (five
//!   rounds; rows of 3 1.14×, rows and columns of 1 1.21-1.45×, of 2
//!   1.06-1.25×);
//! - 16-bit results gained little on the Xeon host (rows and columns of 2,
//!   1.02-1.06×) and lost on the AMD guest (0.66-0.73×; with stages on
//!   lines too, 0.74-0.88× over five rounds), so results narrower than 4
//!   bytes are stored as usual. Why they lose is not known: on the guest
//!   those calls already ran at its plain read of the input.
//!
//! The trade: a streamed result leaves the caches, so a consumer that reads
//! it next finds it in memory rather than in the last-level cache. Results
//! of at least [`STREAMED_RESULT_BYTES`] are streamed: the 2-core guest's
//! 32 MiB of L3 could not have kept one; the Xeon host's 105 MiB could
//! keep part of one, a trade not measured. A streaming store never changes
//! a value, only where it lands first, so results are the same bits either
//! way.
//!
//! Streaming stores are weakly ordered: [`fence`] makes a block's stores
//! visible before the block is handed back to another thread
//! (`outputs::par_blocks` calls it at the end of every block that
//! streamed). Other targets than x86-64 store as usual.

use crate::DType;
use std::mem::MaybeUninit;

/// Result bytes (both results of a call together) from which the results
/// are written with streaming stores.
const STREAMED_RESULT_BYTES: usize = 32 << 20;

/// Bytes of a cache line: the unit a streaming store writes to memory
/// whole when its stores fill it.
pub(super) const LINE: usize = 64;

/// Whether a call of `outputs` outputs, its results of dtypes `first`
/// and `second`, writes them with streaming stores (the one rule, for the
/// trees and for the plan `explain_cpu` prints);
/// `TENSOR_REDUCE_CPU_STREAM=off` in the environment switches them off for
/// the process (so that one build can be timed both ways, as
/// `TENSOR_REDUCE_CPU_PREFETCH` does for the prefetch).
pub(super) fn streams(outputs: usize, first: DType, second: Option<DType>) -> bool {
    let elem_bytes = first.size_in_bytes() + second.map_or(0, DType::size_in_bytes);
    cfg!(target_arch = "x86_64")
        && outputs.saturating_mul(elem_bytes) >= STREAMED_RESULT_BYTES
        && first.size_in_bytes() >= 4
        && !switched_off()
}

/// Whether the environment switches streaming off, read once (the value
/// that does is the prefetch switch's).
pub(super) fn switched_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::prefetch::switched_off_by_env(&OFF, "TENSOR_REDUCE_CPU_STREAM")
}

/// Copies `src` into `dst` (of the same length), the 16-byte-aligned part
/// with streaming stores and the ends, if any, with ordinary ones. The
/// caller calls [`fence`] before another thread reads `dst`.
pub(super) fn copy_streaming(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "internal: a streamed copy of equal lengths"
    );
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        const VECTOR: usize = 16;
        let head = dst.as_ptr().align_offset(VECTOR).min(dst.len());
        let (dst_head, dst) = dst.split_at_mut(head);
        let (src_head, src) = src.split_at(head);
        copy_plain(dst_head, src_head);
        let body = dst.len() / VECTOR * VECTOR;
        let (dst_body, dst_tail) = dst.split_at_mut(body);
        let (src_body, src_tail) = src.split_at(body);
        for (d, s) in dst_body
            .chunks_exact_mut(VECTOR)
            .zip(src_body.chunks_exact(VECTOR))
        {
            // SAFETY: `d` is 16 writable bytes aligned to 16 (the body starts
            // aligned and is whole vectors), `s` 16 readable ones (an
            // unaligned load), and SSE2 is part of the x86-64 baseline.
            #[allow(unused_unsafe)]
            unsafe {
                let v = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
                _mm_stream_si128(d.as_mut_ptr().cast::<__m128i>(), v);
            }
        }
        copy_plain(dst_tail, src_tail);
    }
    #[cfg(not(target_arch = "x86_64"))]
    copy_plain(dst, src);
}

fn copy_plain(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        d.write(s);
    }
}

/// Orders this thread's streaming stores before its later stores: called
/// once a block of results is written, before another thread may read
/// them. A no-op other than on x86-64.
#[inline]
pub(super) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline; a fence has no operands.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_copies_hold_every_byte_at_any_alignment() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut buf = vec![MaybeUninit::new(0u8); 340];
        for start in 0..20 {
            for len in [0, 1, 15, 16, 17, 31, 33, 64, 255, 300] {
                let dst = &mut buf[start..start + len];
                copy_streaming(dst, &src[..len]);
                fence();
                // SAFETY: every byte of `buf` was initialised above.
                let got: Vec<u8> = dst.iter().map(|b| unsafe { b.assume_init() }).collect();
                assert_eq!(got, &src[..len], "start {start}, len {len}");
            }
        }
    }

    #[test]
    fn only_large_results_of_wide_elements_stream() {
        let f32s = STREAMED_RESULT_BYTES / 4;
        assert!(!streams(0, DType::F32, None));
        assert!(!streams(f32s - 1, DType::F32, None));
        assert!(!streams(2 * f32s, DType::F16, None));
        let on = cfg!(target_arch = "x86_64") && !switched_off();
        assert_eq!(streams(f32s, DType::F32, None), on);
        assert_eq!(streams(f32s / 2, DType::F64, None), on);
        // Both results count: f32 values and their i64 indices.
        let pairs = STREAMED_RESULT_BYTES.div_ceil(4 + 8);
        assert_eq!(streams(pairs, DType::F32, Some(DType::I64)), on);
        assert!(!streams(pairs - 1, DType::F32, Some(DType::I64)));
    }
}
