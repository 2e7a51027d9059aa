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

/// The elements [`pick_rows_avx2`] (`lanes` = 8, a compute type of 4
/// bytes) and [`pick_rows_avx2_wide`] (`lanes` = 4, of 8 bytes) read from
/// the start of their input for 8 rows of `n`: the group's own `8 * n`
/// where `n` divides a register's `lanes` or `lanes` divides `n`; else
/// the first 7 rows and the last rounded up to whole registers, as each
/// row is read `lanes` elements at a time from its start.
#[cfg(target_arch = "x86_64")]
pub(super) const fn pick_rows_reads(n: usize, lanes: usize) -> usize {
    if lanes % n == 0 || n % lanes == 0 {
        8 * n
    } else {
        7 * n + n.next_multiple_of(lanes)
    }
}

/// The picks of 8 rows of `n` f32 end to end from the start of `x`
/// (widened 8 at a time by `widen8`), side by side: the rows'
/// elements transposed so that a step takes element `i` of every row, and
/// each row's best value (from `identity`) and the position that gave it
/// as blends ([`pick_step`]). Returns the best values and their
/// positions.
///
/// Rows of 2 and 4 come from the group's elements read end to end, two or
/// four rows a register, sorted into columns by the shuffles of
/// [`columns_of_pairs`] and [`columns_of_quads`]; other rows from 8
/// elements of each ([`transpose_8x8`], 24 shuffles).
///
/// # Safety
/// The CPU must have AVX2 and F16C, and `x` must hold
/// [`pick_rows_reads`]`(n, 8)` elements. `N` is `n` where the caller
/// knows it at compile time (the loops then unroll), else 0.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,f16c")]
#[inline]
pub(super) unsafe fn pick_rows_avx2<const N: usize, T: Copy>(
    x: &[T],
    n: usize,
    identity: f32,
    larger: bool,
    widen8: impl Fn(&[T; 8]) -> [f32; 8],
) -> ([f32; 8], [i32; 8]) {
    use std::arch::x86_64::*;
    let n = if N == 0 { n } else { N };
    let mut pick = Pick {
        best: _mm256_set1_ps(identity),
        from: _mm256_setzero_ps(),
        larger,
    };
    // The row each lane holds.
    let order: [usize; 8] = match n {
        2 => {
            let [a, b] = columns_of_pairs(widened8(x, 0, &widen8), widened8(x, 8, &widen8));
            pick_step(&mut pick, a, 0);
            pick_step(&mut pick, b, 1);
            [0, 1, 4, 5, 2, 3, 6, 7]
        }
        4 => {
            let quads = columns_of_quads([
                widened8(x, 0, &widen8),
                widened8(x, 8, &widen8),
                widened8(x, 16, &widen8),
                widened8(x, 24, &widen8),
            ]);
            for (i, c) in quads.into_iter().enumerate() {
                pick_step(&mut pick, c, i);
            }
            [0, 2, 4, 6, 1, 3, 5, 7]
        }
        _ => {
            for k in (0..n).step_by(8) {
                // A loop, not `from_fn`: its closure stayed a call.
                let mut rows = [_mm256_setzero_ps(); 8];
                for (r, row) in rows.iter_mut().enumerate() {
                    *row = widened8(x, r * n + k, &widen8);
                }
                for (j, c) in transpose_8x8(rows).into_iter().take(n - k).enumerate() {
                    pick_step(&mut pick, c, k + j);
                }
            }
            [0, 1, 2, 3, 4, 5, 6, 7]
        }
    };
    let b: [f32; 8] = std::mem::transmute(pick.best);
    let f: [i32; 8] = std::mem::transmute(pick.from);
    let (mut best, mut from) = ([0.0; 8], [0; 8]);
    for (lane, &row) in order.iter().enumerate() {
        best[row] = b[lane];
        from[row] = f[lane];
    }
    (best, from)
}

/// `x[at..at + 8]` widened to f32, as a register. (A function, where a
/// closure stayed a call from the loops: a closure inside a function
/// built for AVX2 is built for the baseline.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn widened8<T: Copy>(
    x: &[T],
    at: usize,
    widen8: &impl Fn(&[T; 8]) -> [f32; 8],
) -> std::arch::x86_64::__m256 {
    // SAFETY: 8 f32 are a register's 32 bytes.
    std::mem::transmute(widen8(x[at..at + 8].try_into().expect("8 elements")))
}

/// `x[at..at + 4]` widened to a compute type of 8 bytes, as a register
/// ([`widened8`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn widened4<T: Copy, W: Copy>(
    x: &[T],
    at: usize,
    widen: &impl Fn(T) -> W,
) -> std::arch::x86_64::__m256d {
    assert_eq!(size_of::<W>(), 8, "internal: a compute type of 8 bytes");
    let c: &[T; 4] = x[at..at + 4].try_into().expect("4 elements");
    // SAFETY: 4 lanes of 8 bytes are a register's 32 bytes.
    std::mem::transmute_copy(&c.map(widen))
}

/// The state of [`pick_rows_avx2`]: each lane's best value and the
/// position that gave it (an i32 in the register's bits).
#[cfg(target_arch = "x86_64")]
struct Pick {
    best: std::arch::x86_64::__m256,
    from: std::arch::x86_64::__m256,
    /// The op's order is `>` (max), else `<`.
    larger: bool,
}

/// One step of [`pick_rows_avx2`]: element `i` of each lane's row, `v`,
/// replaces the lane's best where it beats it by value, or is a NaN
/// where the best is not (the index ops' `takes`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pick_step(p: &mut Pick, v: std::arch::x86_64::__m256, i: usize) {
    use std::arch::x86_64::*;
    let beats = if p.larger {
        _mm256_cmp_ps::<_CMP_GT_OQ>(v, p.best)
    } else {
        _mm256_cmp_ps::<_CMP_LT_OQ>(v, p.best)
    };
    let nan_over_number = _mm256_andnot_ps(
        _mm256_cmp_ps::<_CMP_UNORD_Q>(p.best, p.best),
        _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v),
    );
    let take = _mm256_or_ps(beats, nan_over_number);
    p.best = _mm256_blendv_ps(p.best, v, take);
    let at = _mm256_castsi256_ps(_mm256_set1_epi32(i as i32));
    p.from = _mm256_blendv_ps(p.from, at, take);
}

/// Element 0 and element 1 of 8 rows of 2, from the rows end to end
/// (`lo`: rows 0-3, `hi`: rows 4-7), the rows in lanes in the order 0, 1,
/// 4, 5, 2, 3, 6, 7.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn columns_of_pairs(
    lo: std::arch::x86_64::__m256,
    hi: std::arch::x86_64::__m256,
) -> [std::arch::x86_64::__m256; 2] {
    use std::arch::x86_64::*;
    [
        _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi),
        _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi),
    ]
}

/// Elements 0-3 of 8 rows of 4, from the rows end to end (two rows a
/// register), the rows in lanes in the order 0, 2, 4, 6, 1, 3, 5, 7: the
/// first two steps of [`transpose_8x8`], which leave each 128-bit half's
/// rows apart.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn columns_of_quads(v: [std::arch::x86_64::__m256; 4]) -> [std::arch::x86_64::__m256; 4] {
    use std::arch::x86_64::*;
    let t = [
        _mm256_unpacklo_ps(v[0], v[1]),
        _mm256_unpackhi_ps(v[0], v[1]),
        _mm256_unpacklo_ps(v[2], v[3]),
        _mm256_unpackhi_ps(v[2], v[3]),
    ];
    [
        _mm256_shuffle_ps::<0b01_00_01_00>(t[0], t[2]),
        _mm256_shuffle_ps::<0b11_10_11_10>(t[0], t[2]),
        _mm256_shuffle_ps::<0b01_00_01_00>(t[1], t[3]),
        _mm256_shuffle_ps::<0b11_10_11_10>(t[1], t[3]),
    ]
}

/// The transpose of 8 registers of 8 lanes of 4 bytes: lane `i` of
/// register `j` of the result is lane `j` of register `i`, in 24
/// shuffles (pairs of rows interleaved, then pairs of pairs, then the
/// 128-bit halves exchanged).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose_8x8(r: [std::arch::x86_64::__m256; 8]) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    let [q0, q1, q2, q3] = columns_of_quads([r[0], r[1], r[2], r[3]]);
    let [q4, q5, q6, q7] = columns_of_quads([r[4], r[5], r[6], r[7]]);
    // `q0..q4` hold lanes (j, j + 4) of rows 0-3, `q4..q8` of rows 4-7.
    [
        _mm256_permute2f128_ps::<0x20>(q0, q4),
        _mm256_permute2f128_ps::<0x20>(q1, q5),
        _mm256_permute2f128_ps::<0x20>(q2, q6),
        _mm256_permute2f128_ps::<0x20>(q3, q7),
        _mm256_permute2f128_ps::<0x31>(q0, q4),
        _mm256_permute2f128_ps::<0x31>(q1, q5),
        _mm256_permute2f128_ps::<0x31>(q2, q6),
        _mm256_permute2f128_ps::<0x31>(q3, q7),
    ]
}

/// [`pick_rows_avx2`] for a compute type of 8 bytes (f64, or i64 where
/// `integer`), each half of the 8 rows 4 lanes of a register: rows of 2
/// sorted into columns by [`columns_of_pairs_wide`], longer rows 4
/// elements at a time of each, transposed ([`transpose_4x4`]).
///
/// # Safety
/// The CPU must have AVX2, `W` must be f64 or i64, and `x` must hold
/// [`pick_rows_reads`]`(n, 4)` elements. `N` as for [`pick_rows_avx2`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,f16c")]
#[inline]
pub(super) unsafe fn pick_rows_avx2_wide<const N: usize, T: Copy, W: Copy>(
    x: &[T],
    n: usize,
    identity: W,
    larger: bool,
    integer: bool,
    widen: impl Fn(T) -> W,
) -> ([W; 8], [i64; 8]) {
    use std::arch::x86_64::*;
    assert_eq!(size_of::<W>(), 8, "internal: a compute type of 8 bytes");
    let n = if N == 0 { n } else { N };
    let (mut best, mut from) = ([identity; 8], [0i64; 8]);
    for h in 0..2 {
        let mut pick = PickWide {
            best: std::mem::transmute_copy(&[identity; 4]),
            from: _mm256_setzero_pd(),
            larger,
            integer,
        };
        let first = 4 * h * n;
        // The row each lane holds, within the half.
        let order: [usize; 4] = if n == 2 {
            let [a, b] =
                columns_of_pairs_wide(widened4(x, first, &widen), widened4(x, first + 4, &widen));
            pick_step_wide(&mut pick, a, 0);
            pick_step_wide(&mut pick, b, 1);
            [0, 2, 1, 3]
        } else {
            for k in (0..n).step_by(4) {
                let rows = std::array::from_fn(|r| widened4(x, first + r * n + k, &widen));
                for (j, c) in transpose_4x4(rows).into_iter().take(n - k).enumerate() {
                    pick_step_wide(&mut pick, c, k + j);
                }
            }
            [0, 1, 2, 3]
        };
        let m: [W; 4] = std::mem::transmute_copy(&pick.best);
        let p: [i64; 4] = std::mem::transmute(pick.from);
        for (lane, &row) in order.iter().enumerate() {
            best[4 * h + row] = m[lane];
            from[4 * h + row] = p[lane];
        }
    }
    (best, from)
}

/// The state of [`pick_rows_avx2_wide`], as [`Pick`]'s: the positions
/// are i64 in the register's bits.
#[cfg(target_arch = "x86_64")]
struct PickWide {
    best: std::arch::x86_64::__m256d,
    from: std::arch::x86_64::__m256d,
    larger: bool,
    /// The values are i64 (no NaN), else f64.
    integer: bool,
}

/// One step of [`pick_rows_avx2_wide`], by [`pick_step`]'s rule.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pick_step_wide(p: &mut PickWide, v: std::arch::x86_64::__m256d, i: usize) {
    use std::arch::x86_64::*;
    let take = if p.integer {
        let (v, m) = (_mm256_castpd_si256(v), _mm256_castpd_si256(p.best));
        _mm256_castsi256_pd(if p.larger {
            _mm256_cmpgt_epi64(v, m)
        } else {
            _mm256_cmpgt_epi64(m, v)
        })
    } else {
        let beats = if p.larger {
            _mm256_cmp_pd::<_CMP_GT_OQ>(v, p.best)
        } else {
            _mm256_cmp_pd::<_CMP_LT_OQ>(v, p.best)
        };
        let nan_over_number = _mm256_andnot_pd(
            _mm256_cmp_pd::<_CMP_UNORD_Q>(p.best, p.best),
            _mm256_cmp_pd::<_CMP_UNORD_Q>(v, v),
        );
        _mm256_or_pd(beats, nan_over_number)
    };
    p.best = _mm256_blendv_pd(p.best, v, take);
    let at = _mm256_castsi256_pd(_mm256_set1_epi64x(i as i64));
    p.from = _mm256_blendv_pd(p.from, at, take);
}

/// Element 0 and element 1 of 4 rows of 2 of 8 bytes, from the rows end
/// to end (`lo`: rows 0-1, `hi`: rows 2-3), the rows in lanes in the order
/// 0, 2, 1, 3.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn columns_of_pairs_wide(
    lo: std::arch::x86_64::__m256d,
    hi: std::arch::x86_64::__m256d,
) -> [std::arch::x86_64::__m256d; 2] {
    use std::arch::x86_64::*;
    [_mm256_unpacklo_pd(lo, hi), _mm256_unpackhi_pd(lo, hi)]
}

/// The transpose of 4 registers of 4 lanes of 8 bytes: lane `i` of
/// register `j` of the result is lane `j` of register `i`, in 8
/// shuffles.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose_4x4(r: [std::arch::x86_64::__m256d; 4]) -> [std::arch::x86_64::__m256d; 4] {
    use std::arch::x86_64::*;
    // Lanes (j, j + 2) of rows 0 and 1, then of rows 2 and 3.
    let t = [
        _mm256_unpacklo_pd(r[0], r[1]),
        _mm256_unpackhi_pd(r[0], r[1]),
        _mm256_unpacklo_pd(r[2], r[3]),
        _mm256_unpackhi_pd(r[2], r[3]),
    ];
    [
        _mm256_permute2f128_pd::<0x20>(t[0], t[2]),
        _mm256_permute2f128_pd::<0x20>(t[1], t[3]),
        _mm256_permute2f128_pd::<0x31>(t[0], t[2]),
        _mm256_permute2f128_pd::<0x31>(t[1], t[3]),
    ]
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
