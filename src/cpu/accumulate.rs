//! The innermost loops of the CPU backend: accumulator types and how each
//! element type is loaded into them.

use crate::{bf16, f16, Element};
use half::slice::HalfFloatSliceExt;

/// An accumulator type (PyTorch's `acc_type`): f32, f64 or i64.
pub(crate) trait Acc: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const ZERO: Self;
    /// The sum's `+`: IEEE addition for floats, wrapping for integers (as C++ int64 in practice).
    fn add(self, other: Self) -> Self;
    /// Converts an input element (torch's cast to the accumulator type).
    fn from_elem<T: Element>(x: T) -> Self;
    /// Converts to the output type (torch's `project` of a sum).
    fn cast<O: Element>(self) -> O;

    /// Combines 8 lanes pairwise: ((0+1)+(2+3))+((4+5)+(6+7)).
    #[inline(always)]
    fn combine_lanes(l: &[Self; 8]) -> Self {
        (l[0].add(l[1]).add(l[2].add(l[3]))).add(l[4].add(l[5]).add(l[6].add(l[7])))
    }
}

impl Acc for f32 {
    const ZERO: f32 = 0.0;
    #[inline(always)]
    fn add(self, o: f32) -> f32 {
        self + o
    }
    #[inline(always)]
    fn from_elem<T: Element>(x: T) -> f32 {
        x.to_f32()
    }
    fn cast<O: Element>(self) -> O {
        O::from_f32(self)
    }
}

impl Acc for f64 {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn add(self, o: f64) -> f64 {
        self + o
    }
    #[inline(always)]
    fn from_elem<T: Element>(x: T) -> f64 {
        x.to_f64()
    }
    fn cast<O: Element>(self) -> O {
        O::from_f64(self)
    }
}

impl Acc for i64 {
    const ZERO: i64 = 0;
    #[inline(always)]
    fn add(self, o: i64) -> i64 {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn from_elem<T: Element>(x: T) -> i64 {
        x.to_i64()
    }
    fn cast<O: Element>(self) -> O {
        O::from_i64(self)
    }
}

/// Elements at most this many are converted per block on the stack.
const BLOCK: usize = 1024;

/// How an element type feeds accumulators. The defaults convert element by
/// element, which the compiler vectorises for every type but the 16-bit
/// floats: f16's conversion is a branchy software routine without F16C, so
/// f16 converts whole blocks to f32 first with `half`'s SIMD slice
/// conversion (one feature check per block); bf16 is the top half of an f32,
/// so it converts with a shift (see [`bf16_to_f32`]).
pub(crate) trait CpuElement: Element {
    /// Converts one element to the accumulator type.
    #[inline(always)]
    fn widen<A: Acc>(self) -> A {
        A::from_elem(self)
    }

    /// Adds `x[i]` into lane `i % 8`.
    #[inline(always)]
    fn accumulate_contiguous<A: Acc>(x: &[Self], lanes: &mut [A; 8]) {
        accumulate_lanes(x, lanes, Self::widen);
    }

    /// Adds `data[start + i * stride]` for `i < n` into lane `i % 8`.
    #[inline(always)]
    fn accumulate_strided<A: Acc>(
        data: &[Self],
        start: usize,
        stride: usize,
        n: usize,
        lanes: &mut [A; 8],
    ) {
        for i in 0..n {
            lanes[i % 8] = lanes[i % 8].add(data[start + i * stride].widen());
        }
    }

    /// Adds `x[j]` into `acc[j]` (a row of a column sum).
    #[inline(always)]
    fn accumulate_row<A: Acc>(x: &[Self], acc: &mut [A]) {
        for (a, &v) in acc.iter_mut().zip(x) {
            *a = a.add(v.widen());
        }
    }
}

#[inline(always)]
fn accumulate_lanes<T: Copy, A: Acc>(x: &[T], lanes: &mut [A; 8], conv: impl Fn(T) -> A) {
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for j in 0..8 {
            lanes[j] = lanes[j].add(conv(c[j]));
        }
    }
    for (j, &v) in chunks.remainder().iter().enumerate() {
        lanes[j] = lanes[j].add(conv(v));
    }
}

impl CpuElement for f32 {}
impl CpuElement for f64 {}
impl CpuElement for i32 {}
impl CpuElement for i64 {}
impl CpuElement for u8 {}
impl CpuElement for bool {}

/// Calls `f(start, block)` for `x` converted to f32 a block at a time with
/// `convert`. The stack buffer is sized to the input (up to [`BLOCK`]) so
/// that a short row does not pay for zeroing a large one. Blocks start at
/// multiples of 8, so lane assignment does not depend on the block size.
#[inline(always)]
fn for_each_f32_block<T>(
    x: &[T],
    convert: impl Fn(&[T], &mut [f32]),
    f: impl FnMut(usize, &[f32]),
) {
    fn run<T, const N: usize>(
        x: &[T],
        convert: impl Fn(&[T], &mut [f32]),
        mut f: impl FnMut(usize, &[f32]),
    ) {
        let mut buf = [0f32; N];
        for (i, chunk) in x.chunks(N).enumerate() {
            let b = &mut buf[..chunk.len()];
            convert(chunk, b);
            f(i * N, b);
        }
    }
    if x.len() <= 128 {
        run::<T, 128>(x, convert, f)
    } else {
        run::<T, BLOCK>(x, convert, f)
    }
}

/// 16-bit floats convert a block at a time into an f32 buffer with
/// `$convert(src, dst)`, then take the f32 paths: a plain slice-to-slice loop
/// is what the compiler vectorises reliably.
macro_rules! half_blocks {
    ($t:ty, $convert:expr $(, $widen:item)?) => {
        impl CpuElement for $t {
            $($widen)?

            fn accumulate_contiguous<A: Acc>(x: &[Self], lanes: &mut [A; 8]) {
                for_each_f32_block(x, $convert, |_, b| accumulate_lanes(b, lanes, A::from_elem::<f32>));
            }

            fn accumulate_row<A: Acc>(x: &[Self], acc: &mut [A]) {
                for_each_f32_block(x, $convert, |start, b| {
                    for (a, &v) in acc[start..start + b.len()].iter_mut().zip(b) {
                        *a = a.add(A::from_elem(v));
                    }
                });
            }
        }
    };
}

half_blocks!(f16, |src: &[f16], dst: &mut [f32]| src
    .convert_to_f32_slice(dst));

/// bf16 to f32 as a 16-bit shift: exact for every value (NaN and Inf
/// included) and vectorisable, unlike `half`'s element-wise routine, which
/// tests for NaN first.
#[inline(always)]
fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits(u32::from(x.to_bits()) << 16)
}

half_blocks!(
    bf16,
    |src: &[bf16], dst: &mut [f32]| {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = bf16_to_f32(s);
        }
    },
    #[inline(always)]
    fn widen<A: Acc>(self) -> A {
        A::from_elem(bf16_to_f32(self))
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_block_path_matches_elementwise() {
        let x: Vec<f16> = (0..1000)
            .map(|i| f16::from_f32((i % 17) as f32 * 0.25 - 2.0))
            .collect();
        let mut a = [0f32; 8];
        f16::accumulate_contiguous(&x, &mut a);
        let mut b = [0f32; 8];
        accumulate_lanes(&x, &mut b, |v: f16| v.to_f32());
        assert_eq!(a, b);
    }

    #[test]
    fn bf16_shift_conversion_is_exact() {
        for bits in (0..=u16::MAX)
            .step_by(7)
            .chain([0x7f80, 0xff80, 0x7fc1, 0x0001])
        {
            let x = bf16::from_bits(bits);
            let (a, b) = (bf16_to_f32(x), x.to_f32());
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{bits:#x}"
            );
        }
    }

    #[test]
    fn integer_sums_wrap() {
        assert_eq!(i64::MAX.add(1), i64::MIN);
    }
}
