//! Explicit SIMD where the compiler cannot vectorise on the baseline
//! target, chosen at run time: the crate builds for the plain x86-64 and
//! aarch64 targets, and a CPU without the feature takes the portable path,
//! with the same results bit for bit (each conversion here is exact).

#[cfg(target_arch = "x86_64")]
use super::element::accumulate_lanes_by8;
#[cfg(target_arch = "x86_64")]
use super::ops::{Compute, ReduceOps};
use crate::f16;
use half::slice::HalfFloatSliceExt;

/// Whether the CPU converts f16 in hardware (F16C and the AVX it needs).
/// The detection is cached by std, so this is a load and a test.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn has_f16c() -> bool {
    std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
}

/// Converts `src` to f32 into `dst` (of the same length).
///
/// On x86-64 with F16C this is one `vcvtph2ps` per 8 elements in a single
/// loop; `half`'s slice conversion detects F16C too, but calls a function
/// per 8 elements, which made f16 rows 3x slower than f32 rows. Elsewhere
/// it is `half`'s (NEON on aarch64 with FP16, else a software routine).
#[inline]
pub(super) fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "internal: conversion lengths");
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: both features the function enables were detected.
        unsafe { f16_to_f32_f16c(src, dst) };
        return;
    }
    src.convert_to_f32_slice(dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
fn f16_to_f32_f16c(src: &[f16], dst: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let mut s = src.chunks_exact(8);
    let mut d = dst.chunks_exact_mut(8);
    for (s8, d8) in (&mut s).zip(&mut d) {
        // SAFETY: `s8` holds 8 f16 (16 bytes) and `d8` 8 f32 (32 bytes);
        // both accesses are unaligned-tolerant.
        unsafe {
            let h = _mm_loadu_si128(s8.as_ptr() as *const __m128i);
            _mm256_storeu_ps(d8.as_mut_ptr(), _mm256_cvtph_ps(h));
        }
    }
    for (a, b) in s.remainder().iter().zip(d.into_remainder()) {
        *b = a.to_f32();
    }
}

/// Widens 8 f16 to f32 with one `vcvtph2ps`.
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
#[inline]
unsafe fn f16x8_to_f32_f16c(c: &[f16; 8]) -> [f32; 8] {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm_loadu_si128};
    // `c` is 16 readable bytes, loaded unaligned.
    let h = _mm_loadu_si128(c.as_ptr() as *const __m128i);
    std::mem::transmute(_mm256_cvtph_ps(h))
}

/// The f16 lane loop ([`super::element::CpuElement::accumulate_contiguous`]) with
/// each 8 elements widened in registers.
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
pub(super) unsafe fn accumulate_lanes_f16c<W: Compute, R: ReduceOps<W>>(
    x: &[f16],
    first: usize,
    op: &R,
    lanes: &mut [R::Acc; 8],
) {
    // SAFETY (of the conversion): this function's features are the ones
    // it needs.
    accumulate_lanes_by8(
        x,
        first,
        op,
        lanes,
        |c| unsafe { f16x8_to_f32_f16c(c) },
        f16::to_f32,
    );
}

/// Widens 8 bf16 to f32 with two SSE2 unpacks (each bf16 becomes the top
/// half of its f32): the same bits as `bf16_to_f32` element by element,
/// which the compiler vectorised with shuffles and two lanes a register.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn bf16x8_to_f32(c: &[crate::bf16; 8]) -> [f32; 8] {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; `c` is 16 readable
    // bytes, loaded unaligned.
    unsafe {
        let h = _mm_loadu_si128(c.as_ptr() as *const __m128i);
        let z = _mm_setzero_si128();
        std::mem::transmute::<[__m128i; 2], [f32; 8]>([
            _mm_unpacklo_epi16(z, h),
            _mm_unpackhi_epi16(z, h),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_is_exact_for_every_value() {
        // Every bit pattern, at every offset into an 8-wide chunk.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for skip in 0..9 {
            let src = &all[skip..];
            let mut dst = vec![0f32; src.len()];
            f16_to_f32(src, &mut dst);
            for (a, b) in src.iter().zip(&dst) {
                let want = a.to_f32();
                assert!(
                    want.to_bits() == b.to_bits() || (want.is_nan() && b.is_nan()),
                    "{:#06x}: {want} vs {b}",
                    a.to_bits()
                );
            }
        }
    }
}
