//! Shared test machinery: one test body for every backend, random strided
//! cases, and an independent f64 reference computed with ndarray.
#![allow(dead_code)]

pub mod cases;

use ndarray::{ArrayD, Axis, IxDyn, Slice};
use tensor_reduce::{bf16, f16, DType, Device, Element, Tensor};

/// Generates `$name_cpu` and `$name_cuda` from one body `fn(Device)`. The
/// CUDA variant is ignored by default (no GPU in CI) and run on a GPU
/// machine with `--include-ignored`; there it fails if no device works.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident => $body:ident;)*) => {
        mod cpu_backend {
            $( #[test] fn $name() { super::$body(tensor_reduce::Device::Cpu) } )*
        }
        mod cuda_backend {
            $(
                #[test]
                #[ignore = "needs a CUDA device"]
                fn $name() { super::$body($crate::common::cuda_device()) }
            )*
        }
    };
}

/// CUDA device 0, or a panic that says why (the CUDA tests run only when asked for).
pub fn cuda_device() -> Device {
    match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => panic!("a CUDA test was requested but no device works: {e}"),
    }
}

/// A small deterministic generator for test data (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 > 1.0 - p
    }
}

/// Values for `dtype`, as f64, each exactly representable in `dtype`.
pub fn random_values(dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u = rng.next_u64();
            match dtype {
                DType::Bool => (u & 1) as f64,
                DType::U8 => (u % 256) as f64,
                DType::I32 | DType::I64 => (u % 2001) as f64 - 1000.0,
                // Floats: a wide spread of magnitudes and both signs.
                _ => {
                    let m = ((u >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0;
                    let scaled = m * [1.0, 4.0, 0.01, 100.0][(u % 4) as usize];
                    round_to(dtype, scaled)
                }
            }
        })
        .collect()
}

/// Rounds an f64 to the nearest value of `dtype`, returned as f64.
pub fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F16 => f16::from_f64(v).to_f64(),
        DType::BF16 => bf16::from_f64(v).to_f64(),
        DType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// A contiguous tensor of `dtype` holding `values` (exact in `dtype`).
pub fn tensor_of(dtype: DType, values: &[f64], shape: &[usize]) -> Tensor {
    fn make<T: Element>(values: &[f64], shape: &[usize]) -> Tensor {
        Tensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect(), shape).unwrap()
    }
    match dtype {
        DType::F16 => make::<f16>(values, shape),
        DType::BF16 => make::<bf16>(values, shape),
        DType::F32 => make::<f32>(values, shape),
        DType::F64 => make::<f64>(values, shape),
        DType::I32 => make::<i32>(values, shape),
        DType::I64 => make::<i64>(values, shape),
        DType::U8 => make::<u8>(values, shape),
        DType::Bool => make::<bool>(values, shape),
    }
}

/// Reads any tensor back as f64, in row-major order.
pub fn to_f64(t: &Tensor) -> Vec<f64> {
    fn read<T: Element>(t: &Tensor) -> Vec<f64> {
        t.to_vec::<T>()
            .unwrap()
            .into_iter()
            .map(T::to_f64)
            .collect()
    }
    match t.dtype() {
        DType::F16 => read::<f16>(t),
        DType::BF16 => read::<bf16>(t),
        DType::F32 => read::<f32>(t),
        DType::F64 => read::<f64>(t),
        DType::I32 => read::<i32>(t),
        DType::I64 => read::<i64>(t),
        DType::U8 => read::<u8>(t),
        DType::Bool => read::<bool>(t),
    }
}

/// A view applied both to our tensor and to the ndarray reference.
#[derive(Clone, Debug)]
pub enum ViewOp {
    Permute(Vec<usize>),
    /// dim, start, end, step
    Slice(usize, usize, usize, usize),
    /// Insert a size-1 dim at `dim`, then broadcast it to `size` (stride 0).
    Broadcast(usize, usize),
}

impl ViewOp {
    pub fn apply(&self, t: &Tensor) -> Tensor {
        match self {
            ViewOp::Permute(p) => t
                .permute(&p.iter().map(|&d| d as isize).collect::<Vec<_>>())
                .unwrap(),
            ViewOp::Slice(d, s, e, step) => t
                .slice(*d as isize, *s as isize, *e as isize, *step)
                .unwrap(),
            ViewOp::Broadcast(d, n) => {
                let u = t.unsqueeze(*d as isize).unwrap();
                let mut shape = u.shape().to_vec();
                shape[*d] = *n;
                u.expand(&shape).unwrap()
            }
        }
    }

    pub fn apply_ref(&self, a: ArrayD<f64>) -> ArrayD<f64> {
        match self {
            ViewOp::Permute(p) => a.permuted_axes(IxDyn(p)),
            ViewOp::Slice(d, s, e, step) => a
                .slice_axis(
                    Axis(*d),
                    Slice::new(*s as isize, Some(*e as isize), *step as isize),
                )
                .to_owned(),
            ViewOp::Broadcast(d, n) => {
                let u = a.insert_axis(Axis(*d));
                let mut shape = u.shape().to_vec();
                shape[*d] = *n;
                u.broadcast(IxDyn(&shape)).unwrap().to_owned()
            }
        }
    }

    /// A random view op valid for `shape`.
    pub fn random(shape: &[usize], rng: &mut Rng) -> Option<ViewOp> {
        let rank = shape.len();
        match rng.below(3) {
            0 if rank >= 2 => {
                let mut p: Vec<usize> = (0..rank).collect();
                for i in (1..rank).rev() {
                    p.swap(i, rng.below(i + 1));
                }
                Some(ViewOp::Permute(p))
            }
            1 if rank >= 1 => {
                let d = rng.below(rank);
                let n = shape[d];
                let s = rng.below(n + 1);
                let e = s + rng.below(n - s + 1);
                Some(ViewOp::Slice(d, s, e, 1 + rng.below(3)))
            }
            2 if rank < 6 => Some(ViewOp::Broadcast(rng.below(rank + 1), 1 + rng.below(4))),
            _ => None,
        }
    }
}

/// The reference sum in f64: reduce `dims` (already wrapped, any order).
pub fn reference_sum(a: &ArrayD<f64>, dims: &[usize], keepdim: bool) -> ArrayD<f64> {
    let mut sorted = dims.to_vec();
    sorted.sort_unstable_by(|x, y| y.cmp(x));
    sorted.dedup();
    let mut r = a.clone();
    for &d in &sorted {
        r = r.sum_axis(Axis(d));
    }
    if keepdim {
        for &d in sorted.iter().rev() {
            r = r.insert_axis(Axis(d));
        }
    }
    r
}

/// Machine epsilon of the type a sum producing `out` accumulates in.
pub fn acc_eps(out: DType) -> f64 {
    match out.accumulator() {
        DType::F32 => f32::EPSILON as f64,
        DType::F64 => f64::EPSILON,
        _ => 0.0,
    }
}

/// Relative rounding of the final cast to `out`.
pub fn out_eps(out: DType) -> f64 {
    match out {
        DType::F16 => 2f64.powi(-11),
        DType::BF16 => 2f64.powi(-8),
        DType::F32 => 2f64.powi(-24),
        _ => 0.0,
    }
}

/// Levels of summation a pairwise (cascade) sum of `n` terms adds beyond
/// the tree: the leaves' multi-lane runs and combining their lanes.
pub const LEAF_LEVELS: u32 = 8;

/// The error bound of a pairwise (cascade) sum of `n` terms whose absolute
/// values sum to `abs_sum`, giving `reference`: each of the tree's
/// `ceil(log2 n)` levels (plus [`LEAF_LEVELS`]) rounds by at most one `eps`
/// of the accumulator, then the result is rounded once to `out`. A naive
/// left-to-right sum has a bound growing with `n` instead, which long
/// same-sign inputs exceed (`tolerance_rejects_a_sequential_sum` shows it).
pub fn tolerance(reference: f64, abs_sum: f64, n: usize, out: DType) -> f64 {
    let levels = n.max(2).next_power_of_two().trailing_zeros() + LEAF_LEVELS;
    acc_eps(out) * levels as f64 * abs_sum * (1.0 + 1e-6) * (1.0 + out_eps(out))
        + out_eps(out) * reference.abs() * 1.0001
        // f16's subnormals are spaced 2^-24 apart: a result that small
        // rounds by that much in absolute terms.
        + if out == DType::F16 {
            2f64.powi(-24)
        } else {
            0.0
        }
}

/// The smallest magnitude the final cast to `out` rounds to infinity: the
/// largest finite value plus half its ulp (round to nearest even), or
/// `None` for a dtype this check does not round.
pub fn overflow_threshold(out: DType) -> Option<f64> {
    match out {
        DType::F16 => Some(65504.0 + 16.0),
        DType::BF16 => Some((2.0 - 2f64.powi(-7)) * 2f64.powi(127) + 2f64.powi(119)),
        DType::F32 => Some(f64::from(f32::MAX) + 2f64.powi(103)),
        _ => None,
    }
}

/// Checks `got` against `reference` element by element within
/// [`tolerance`]; a reference that may round past `out`'s largest finite
/// value (within the tolerance) may come back as the infinity of its
/// sign, as torch's does. Integers must match exactly.
pub fn assert_close(
    got: &[f64],
    reference: &[f64],
    abs_sums: &[f64],
    n: usize,
    out: DType,
    what: &str,
) {
    assert_eq!(got.len(), reference.len(), "{what}: length");
    for (i, ((&g, &r), &s)) in got.iter().zip(reference).zip(abs_sums).enumerate() {
        if r.is_nan() {
            assert!(g.is_nan(), "{what}: element {i}: expected NaN, got {g}");
            continue;
        }
        let tol = tolerance(r, s, n, out);
        let may_overflow = overflow_threshold(out).is_some_and(|t| r.abs() + tol >= t);
        if g.is_infinite() && g.signum() == r.signum() && may_overflow {
            continue;
        }
        assert!(
            (g - r).abs() <= tol,
            "{what}: element {i}: got {g}, expected {r} (tolerance {tol}, n {n})"
        );
    }
}
