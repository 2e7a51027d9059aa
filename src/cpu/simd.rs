//! Explicit SIMD where the compiler cannot vectorise on the baseline
//! target, chosen at run time: the crate builds for the plain x86-64 and
//! aarch64 targets, and a CPU without the feature takes the portable path,
//! with the same results bit for bit (each conversion here is exact).

#[cfg(target_arch = "x86_64")]
use super::element::CpuElement;
#[cfg(target_arch = "x86_64")]
use super::element::{
    accumulate_lanes_by8, accumulate_row_by8, fold_columns_by8, fold_strips_by8, ROWS_PER_PASS,
};
#[cfg(target_arch = "x86_64")]
use super::ops::{Compute, ReduceOps};
#[cfg(target_arch = "x86_64")]
use super::prefetch::Prefetch;
use crate::f16;
use std::mem::MaybeUninit;

/// Whether the CPU converts f16 in hardware (F16C and the AVX it needs).
/// The detection is cached by std, so this is a load and a test.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn has_f16c() -> bool {
    std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
}

/// Converts `src` to f32 into `dst` (of the same length), which need not
/// be initialised, and returns `dst` as the converted values: the
/// conversion buffers on the stack are never zeroed first (zeroing a
/// buffer of 1024 f32 for every 256 f16 rows of 2 was a quarter of their
/// time).
///
/// On x86-64 with F16C this is one `vcvtph2ps` per 8 elements in a single
/// loop; `half`'s slice conversion detects F16C too, but calls a function
/// per 8 elements, which made f16 rows 3x slower than f32 rows. Elsewhere
/// it is `half`'s element-wise conversion (NEON on aarch64 with FP16, else
/// a software routine).
#[inline]
pub(super) fn f16_to_f32<'a>(src: &[f16], dst: &'a mut [MaybeUninit<f32>]) -> &'a mut [f32] {
    assert_eq!(src.len(), dst.len(), "internal: conversion lengths");
    #[cfg(target_arch = "x86_64")]
    let in_hardware = has_f16c() && {
        // SAFETY: both features the function enables were detected.
        unsafe { f16_to_f32_f16c(src, dst) };
        true
    };
    #[cfg(not(target_arch = "x86_64"))]
    let in_hardware = false;
    if !in_hardware {
        for (d, s) in dst.iter_mut().zip(src) {
            d.write(s.to_f32());
        }
    }
    // SAFETY: every element of `dst` was written above, and
    // `MaybeUninit<f32>` has the layout of `f32`.
    unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<f32>(), dst.len()) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
fn f16_to_f32_f16c(src: &[f16], dst: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let mut s = src.chunks_exact(8);
    let mut d = dst.chunks_exact_mut(8);
    let prefetch = super::prefetch::Prefetch::here();
    for (k, (s8, d8)) in (&mut s).zip(&mut d).enumerate() {
        if k % 4 == 0 {
            // One prefetch a cache line (4 chunks of 16 bytes).
            prefetch.ahead(s8);
        }
        // SAFETY: `s8` holds 8 f16 (16 bytes) and `d8` room for 8 f32 (32
        // bytes); both accesses are unaligned-tolerant.
        unsafe {
            let h = _mm_loadu_si128(s8.as_ptr() as *const __m128i);
            _mm256_storeu_ps(d8.as_mut_ptr().cast::<f32>(), _mm256_cvtph_ps(h));
        }
    }
    for (a, b) in s.remainder().iter().zip(d.into_remainder()) {
        b.write(a.to_f32());
    }
}

/// Rounds `src` to f16 (to nearest, ties to even, as `f16::from_f32`)
/// into `dst` (of the same length): one `vcvtps2ph` per 8 elements on
/// x86-64 with F16C. `half`'s element-wise conversion tests for F16C and
/// calls a function per element, which made f16 column sums, one output
/// per few inputs, twice as slow as bf16's.
#[inline]
pub(super) fn f32_to_f16(src: &[f32], dst: &mut [MaybeUninit<f16>]) {
    assert_eq!(src.len(), dst.len(), "internal: conversion lengths");
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: both features the function enables were detected.
        unsafe { f32_to_f16_f16c(src, dst) };
        return;
    }
    for (d, &s) in dst.iter_mut().zip(src) {
        d.write(f16::from_f32(s));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
fn f32_to_f16_f16c(src: &[f32], dst: &mut [MaybeUninit<f16>]) {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };
    let mut s = src.chunks_exact(8);
    let mut d = dst.chunks_exact_mut(8);
    for (s8, d8) in (&mut s).zip(&mut d) {
        // SAFETY: `s8` holds 8 f32 (32 bytes) and `d8` room for 8 f16 (16
        // bytes); both accesses are unaligned-tolerant.
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(s8.as_ptr()));
            _mm_storeu_si128(d8.as_mut_ptr() as *mut __m128i, h);
        }
    }
    for (d, &v) in d.into_remainder().iter_mut().zip(s.remainder()) {
        d.write(f16::from_f32(v));
    }
}

/// Rounds `src` to bf16 into `dst` (of the same length), with the bits of
/// `bf16::from_f32` (to nearest, ties to even; a NaN keeps its sign and
/// high payload, made quiet) in a loop without branches, which the
/// compiler vectorises: inline it into a loop compiled for the ISA in use
/// ([`super::isa::dispatch`]). `half`'s element-wise conversion branches on
/// NaN and on the rounding bit: bf16 results of rows of 2 spent more than
/// half their time there.
#[inline(always)]
pub(super) fn f32_to_bf16(src: &[f32], dst: &mut [MaybeUninit<crate::bf16>]) {
    assert_eq!(src.len(), dst.len(), "internal: conversion lengths");
    for (d, &v) in dst.iter_mut().zip(src) {
        let x = v.to_bits();
        // Adding just under half the dropped range, plus the kept last
        // bit, carries into the kept bits exactly when the dropped half is
        // over the tie, or at it with an odd last bit. (Only NaNs, taken
        // by the select, can wrap.)
        let rounded = x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16;
        let is_nan = x & 0x7fff_ffff > 0x7f80_0000;
        let bits = if is_nan { (x >> 16) | 0x40 } else { rounded };
        d.write(crate::bf16::from_bits(bits as u16));
    }
}

/// Widens 8 f16 to f32 with one `vcvtph2ps`.
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
#[inline]
pub(super) unsafe fn f16x8_to_f32_f16c(c: &[f16; 8]) -> [f32; 8] {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm_loadu_si128};
    // `c` is 16 readable bytes, loaded unaligned.
    let h = _mm_loadu_si128(c.as_ptr() as *const __m128i);
    std::mem::transmute(_mm256_cvtph_ps(h))
}

/// [`f16x8_to_f32_f16c`], then to the compute type: the `widen8` of the
/// f16 loops below and of [`super::element::CpuElement::widen8`].
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
#[inline]
pub(super) unsafe fn f16x8_widen_f16c<W: Compute>(c: &[f16; 8]) -> [W; 8] {
    f16x8_to_f32_f16c(c).map(W::from_elem)
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

/// The f16 column pass ([`super::element::CpuElement::fold_columns`]) with
/// each 8 elements of a row's block widened in registers rather than
/// stored to an f32 buffer and loaded again.
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
pub(super) unsafe fn fold_columns_f16c<W: Compute, R: ReduceOps<W>>(
    rows: &[&[f16]],
    first: usize,
    op: &R,
    acc: &mut [R::Acc],
) {
    // SAFETY: this function's features are the ones it needs.
    let widen8 = |c: &[f16; 8]| unsafe { f16x8_widen_f16c(c) };
    // A pass's rows as an array: with their number known, the row loop
    // unrolls into one straight run of loads (as in the other types'
    // passes, compiled inline where the rows are an array). Through a loop
    // over a slice, 4096 rows of 32768 f16 read from memory took 22 ms
    // against 12.5 on one thread of the 2-core machine (bf16: 12.5).
    match <&[&[f16]; ROWS_PER_PASS]>::try_from(rows) {
        Ok(rows) => fold_columns_by8(rows, first, op, acc, widen8, f16::widen),
        Err(_) => fold_columns_by8(rows, first, op, acc, widen8, f16::widen),
    }
}

/// The f16 strips of a column leaf
/// ([`super::element::CpuElement::fold_strips`]), each 8 elements of a
/// row widened in registers.
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
pub(super) unsafe fn fold_strips_f16c<W: Compute, R: ReduceOps<W>>(
    span: &[f16],
    stride: usize,
    n: usize,
    first: usize,
    op: &R,
    acc: &mut [R::Acc],
) {
    fold_strips_by8(
        span,
        stride,
        n,
        first,
        op,
        acc,
        // SAFETY: this function's features are the ones it needs.
        |c| unsafe { f16x8_widen_f16c(c) },
        f16::widen,
    );
}

/// One f16 input row folded into a column tile's accumulators
/// ([`super::element::CpuElement::accumulate_row`]), each 8 elements
/// widened in registers.
///
/// # Safety
/// The CPU must have AVX and F16C ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
pub(super) unsafe fn accumulate_row_f16c<W: Compute, R: ReduceOps<W>>(
    x: &[f16],
    idx: usize,
    op: &R,
    acc: &mut [R::Acc],
) {
    accumulate_row_by8(
        x,
        idx,
        op,
        acc,
        // SAFETY: this function's features are the ones it needs.
        |c| unsafe { f16x8_widen_f16c(c) },
        f16::widen,
    );
}

/// Rows of `N` = 8 or 16 end to end, 8 rows at a time, each row's lanes
/// in one AVX register and the 8 rows' lane trees combined together
/// ([`combine_lanes_of_8_rows`]): the same lanes and the same tree as
/// [`super::element`]'s row loops, so the same bits. Folds the whole
/// groups of 8 rows and returns how many rows that is; the caller folds
/// the rest.
///
/// The portable loop leaves the lanes side by side for the compiler to
/// transpose, which it did with four to six shuffles an output.
/// Single-threaded on the 2-core machine (8 MiB from cache, the best of 200
/// calls), f32 rows of 8 went from 350 to 297 µs this way, of 16 from 218
/// to 166, bf16 rows of 8 from 890 to 696 and of 16 from 555 to 450; f16
/// rows (widened here with F16C, before through a buffer) of 8 from 1084
/// to 711 and of 16 from 698 to 397. Rows of 2-7, read as 8 elements from
/// each row's start with the lanes past the row set to the identity, ran
/// level or slower (rows of 2 1.2x slower): with most lanes the identity,
/// the compiler's combine is cheap.
///
/// # Safety
/// The CPU must have AVX2 ([`super::isa::CpuIsa::Avx2`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,f16c")]
#[inline]
pub(super) unsafe fn fold_short_rows_avx2<const N: usize, T: Copy, W: Compute, R: ReduceOps<W>>(
    x: &[T],
    op: &R,
    out: &mut [R::Acc],
    widen8: impl Fn(&[T; 8]) -> [W; 8],
    prefetch: Prefetch,
) -> usize {
    // A constant test, as the callers only come here with these lengths.
    assert!(N == 8 || N == 16, "internal: rows of 8 or 16");
    let done = out.len() / 8 * 8;
    for (g, o) in out[..done].chunks_exact_mut(8).enumerate() {
        let xg = &x[g * 8 * N..(g + 1) * 8 * N];
        prefetch.ahead(xg);
        let mut rows = [std::arch::x86_64::_mm256_setzero_ps(); 8];
        for (r, reg) in rows.iter_mut().enumerate() {
            *reg = row_lanes(&xg[r * N..(r + 1) * N], op, &widen8);
        }
        o.copy_from_slice(&combine_lanes_of_8_rows(rows, |a, b| op.combine(a, b)));
    }
    done
}

/// One row's lanes of [`fold_short_rows_avx2`], in a register as soon as
/// they are folded: built as arrays of lanes for all 8 rows first, the
/// compiler vectorised across the rows instead, gathering each element of
/// 8 rows into a register.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn row_lanes<T: Copy, W: Compute, R: ReduceOps<W>>(
    row: &[T],
    op: &R,
    widen8: &impl Fn(&[T; 8]) -> [W; 8],
) -> std::arch::x86_64::__m256 {
    let mut l = [op.identity(); 8];
    for (k, chunk) in row.chunks_exact(8).enumerate() {
        let v = widen8(&load8(chunk));
        for j in 0..8 {
            l[j] = op.reduce(l[j], v[j], 8 * k + j);
        }
    }
    lanes_to_reg(l)
}

/// 8 elements from the start of `x` as one vector load, whatever their
/// type (4 or 2 bytes), so that the row's lanes start in a register.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn load8<T: Copy>(x: &[T]) -> [T; 8] {
    use std::arch::x86_64::*;
    let x: &[T; 8] = x[..8].try_into().expect("8 elements");
    // SAFETY: `x` is 8 elements, read unaligned; the sizes match.
    match size_of::<T>() {
        4 => std::mem::transmute_copy(&_mm256_loadu_si256(x.as_ptr().cast())),
        2 => std::mem::transmute_copy(&_mm_loadu_si128(x.as_ptr().cast())),
        _ => *x,
    }
}

/// 8 lanes of 4 bytes as a register.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn lanes_to_reg<A: Copy>(l: [A; 8]) -> std::arch::x86_64::__m256 {
    // A constant test: the callers' states of other sizes never get here.
    assert_eq!(size_of::<A>(), 4, "internal: lanes of 4 bytes");
    // SAFETY: 8 lanes of 4 bytes are the register's 32.
    std::mem::transmute_copy(&l)
}

/// `out[r]` = the pairwise tree ((0+1)+(2+3))+((4+5)+(6+7)) over the 8
/// lanes of `rows[r]` (4 bytes each, [`lanes_to_reg`]), for 8 rows at
/// once: adjacent lanes paired by two shuffles a pair of rows, twice, then
/// the halves of two registers, each step one `c` across the lanes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn combine_lanes_of_8_rows<A: Copy>(
    rows: [std::arch::x86_64::__m256; 8],
    c: impl Fn(A, A) -> A + Copy,
) -> [A; 8] {
    use std::arch::x86_64::*;
    assert_eq!(size_of::<A>(), 4, "internal: lanes of 4 bytes");
    // SAFETY (of each transmute_copy): 8 lanes of 4 bytes are 32 bytes,
    // and the shuffles only move lanes, whatever their type.
    let lanewise = |a: __m256, b: __m256| -> __m256 {
        let (a, b): ([A; 8], [A; 8]) = (std::mem::transmute_copy(&a), std::mem::transmute_copy(&b));
        lanes_to_reg(std::array::from_fn(|i| c(a[i], b[i])))
    };
    // In each 128-bit half: [a0 a2 b0 b2] and [a1 a3 b1 b3], so row a's
    // pairs (01) (23) then row b's, low lanes in the low half.
    let pair = |a: __m256, b: __m256| {
        lanewise(
            _mm256_shuffle_ps::<0b10_00_10_00>(a, b),
            _mm256_shuffle_ps::<0b11_01_11_01>(a, b),
        )
    };
    let r = &rows;
    // Rows 0-3: (0123) of each in the low half, (4567) in the high.
    let low = pair(pair(r[0], r[1]), pair(r[2], r[3]));
    let high = pair(pair(r[4], r[5]), pair(r[6], r[7]));
    let trees = lanewise(
        _mm256_permute2f128_ps::<0x20>(low, high),
        _mm256_permute2f128_ps::<0x31>(low, high),
    );
    std::mem::transmute_copy(&trees)
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
    fn bf16_rounding_matches_half_bit_for_bit() {
        // Every high half (sign, exponent, the bits kept) with the dropped
        // halves that decide the rounding: none, the lowest, just under,
        // at and just over the tie, the tie's neighbours, all; NaN payloads
        // in both halves come with them.
        let lows = [0u32, 1, 0x4000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff];
        let src: Vec<f32> = (0..=0xffffu32)
            .flat_map(|h| lows.map(|l| f32::from_bits(h << 16 | l)))
            .collect();
        let mut dst = vec![MaybeUninit::uninit(); src.len()];
        f32_to_bf16(&src, &mut dst);
        for (v, d) in src.iter().zip(&dst) {
            // SAFETY: the conversion wrote every element.
            let got = unsafe { d.assume_init() }.to_bits();
            let want = crate::bf16::from_f32(*v).to_bits();
            assert_eq!(got, want, "{:#010x}", v.to_bits());
        }
    }

    #[test]
    fn f16_conversion_is_exact_for_every_value() {
        // Every bit pattern, at every offset into an 8-wide chunk.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for skip in 0..9 {
            let src = &all[skip..];
            let mut dst = vec![MaybeUninit::uninit(); src.len()];
            let dst = f16_to_f32(src, &mut dst);
            for (a, b) in src.iter().zip(dst.iter()) {
                let want = a.to_f32();
                assert!(
                    want.to_bits() == b.to_bits() || (want.is_nan() && b.is_nan()),
                    "{:#06x}: {want} vs {b}",
                    a.to_bits()
                );
            }
        }
    }

    #[test]
    fn f32_to_f16_rounds_as_half_does() {
        // Every f16 value, the midpoints between neighbours (ties to even)
        // and a hair either side of them, overflow, subnormals, NaNs with
        // payloads, and a sweep of bit patterns, at every offset into an
        // 8-wide chunk.
        let mut src: Vec<f32> = Vec::new();
        for bits in 0..=u16::MAX {
            let a = f16::from_bits(bits).to_f32();
            let b = f16::from_bits(bits.wrapping_add(1)).to_f32();
            let mid = ((a as f64 + b as f64) / 2.0) as f32;
            src.extend([a, mid, f32::from_bits(mid.to_bits() + 1)]);
            src.push(f32::from_bits(mid.to_bits().wrapping_sub(1)));
        }
        src.extend([
            65504.0,
            65520.0,
            65519.99,
            1e-8,
            -1e-8,
            5.9e-8,
            f32::MIN_POSITIVE,
        ]);
        src.extend([f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234)]);
        src.extend((0..200_000u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761))));
        for skip in 0..9 {
            let src = &src[skip..];
            let mut dst = vec![MaybeUninit::uninit(); src.len()];
            f32_to_f16(src, &mut dst);
            for (a, b) in src.iter().zip(dst.iter()) {
                // SAFETY: `f32_to_f16` wrote every element.
                let b = unsafe { b.assume_init() };
                let want = f16::from_f32(*a);
                assert_eq!(want.to_bits(), b.to_bits(), "{a:e} ({:#010x})", a.to_bits());
            }
        }
    }
}
