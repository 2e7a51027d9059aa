//! Which instruction set the CPU backend's inner loops run in, chosen at
//! run time.
//!
//! The crate builds for the baseline target (SSE2 on x86-64), so that it
//! runs on any CPU of its architecture. The hot loops (the trees' leaves)
//! are compiled twice: for the baseline and, on x86-64, with AVX2 (and
//! F16C), and each call takes the widest version the CPU has. On the
//! 16-core Xeon host of the GPU machine a core ran the baseline loops at
//! about 10 GB/s, below what the memory gives one core, while torch's
//! AVX2 kernels read 14-16 GB/s there.
//!
//! Every version computes the same bits: each is the same sequence of IEEE
//! operations on the same lanes in the same order (Rust never fuses a
//! multiply and an add on its own), only more of them at once. So a result
//! does not depend on the CPU it ran on, and [`limit_isa`] (or the
//! environment variable `TENSOR_REDUCE_CPU_ISA=baseline`) can cap the
//! instruction set to compare.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction set the CPU backend's inner loops are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuIsa {
    /// The target's baseline (SSE2 on x86-64; NEON on aarch64).
    Baseline,
    /// x86-64 with AVX2 and F16C: 256-bit vectors, and f16 converted in
    /// hardware.
    Avx2,
}

impl CpuIsa {
    /// The widest instruction set this CPU has.
    pub fn detected() -> CpuIsa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return CpuIsa::Avx2;
        }
        CpuIsa::Baseline
    }

    fn code(self) -> u8 {
        match self {
            CpuIsa::Baseline => 1,
            CpuIsa::Avx2 => 2,
        }
    }

    fn from_code(code: u8) -> Option<CpuIsa> {
        match code {
            1 => Some(CpuIsa::Baseline),
            2 => Some(CpuIsa::Avx2),
            _ => None,
        }
    }
}

/// The instruction set in use; 0 until the first call decides it.
static ISA: AtomicU8 = AtomicU8::new(0);

/// The instruction set the CPU backend's loops run in: the widest the CPU
/// has, capped by [`limit_isa`] or, before any limit is set, by
/// `TENSOR_REDUCE_CPU_ISA=baseline` in the environment.
///
/// ```
/// use tensor_reduce::cpu::{isa, CpuIsa};
/// assert!(isa() <= CpuIsa::detected());
/// ```
#[inline]
pub fn isa() -> CpuIsa {
    // Inline, as the explicit SIMD tests it a group of rows at a time;
    // the first call's detection is out of line.
    match CpuIsa::from_code(ISA.load(Ordering::Relaxed)) {
        Some(isa) => isa,
        None => first_isa(),
    }
}

#[cold]
#[inline(never)]
fn first_isa() -> CpuIsa {
    let capped = std::env::var("TENSOR_REDUCE_CPU_ISA").is_ok_and(|v| v == "baseline");
    let isa = if capped {
        CpuIsa::Baseline
    } else {
        CpuIsa::detected()
    };
    // A concurrent first call decides the same; a limit set meanwhile wins.
    let _ = ISA.compare_exchange(0, isa.code(), Ordering::Relaxed, Ordering::Relaxed);
    CpuIsa::from_code(ISA.load(Ordering::Relaxed)).unwrap_or(isa)
}

/// Whether the loops run with AVX2 ([`isa`]): the test before a call of
/// explicit AVX2 code, so that [`limit_isa`] caps it too.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn avx2() -> bool {
    isa() == CpuIsa::Avx2
}

/// Caps the instruction set of the CPU backend's loops at `max` for the
/// rest of the process (a cap above what the CPU has means what it has)
/// and returns the one now in use. Results are the same bits at every
/// instruction set; this is for comparing them, and their speed.
///
/// ```
/// use tensor_reduce::cpu::{limit_isa, CpuIsa};
/// use tensor_reduce::{DType, Device, Tensor};
/// let x = Tensor::randn(&[64, 1000], DType::F32, Device::Cpu, 0)?;
/// let wide = x.sum(&[1], false)?.to_vec::<f32>()?;
/// assert_eq!(limit_isa(CpuIsa::Baseline), CpuIsa::Baseline);
/// let narrow = x.sum(&[1], false)?.to_vec::<f32>()?;
/// limit_isa(CpuIsa::detected());
/// assert!(wide.iter().zip(&narrow).all(|(a, b)| a.to_bits() == b.to_bits()));
/// # Ok::<(), tensor_reduce::Error>(())
/// ```
pub fn limit_isa(max: CpuIsa) -> CpuIsa {
    let isa = max.min(CpuIsa::detected());
    ISA.store(isa.code(), Ordering::Relaxed);
    isa
}

/// Runs `f`, a hot loop, compiled for [`isa`]: `f` is inlined into a
/// function built for that instruction set, so it must be an
/// `#[inline(always)]` closure that calls only `#[inline(always)]` code
/// ([`dispatch!`] makes one; without the attribute most closures stayed
/// calls, compiled for the baseline). The baseline version is a function
/// of its own too, so that both are compiled alike whatever calls them.
#[inline(always)]
pub(super) fn run_for_isa<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if isa() == CpuIsa::Avx2 {
        // SAFETY: `isa` is Avx2 only where the CPU has AVX2 and F16C.
        return unsafe { with_avx2(f) };
    }
    baseline(f)
}

/// `dispatch!(expr)`: evaluates `expr`, a call of `#[inline(always)]`
/// code, compiled for [`isa`] ([`run_for_isa`]).
macro_rules! dispatch {
    ($e:expr) => {
        $crate::cpu::isa::run_for_isa(
            #[inline(always)]
            || $e,
        )
    };
}
pub(super) use dispatch;

#[inline(never)]
fn baseline<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// # Safety
/// The CPU must have AVX2 and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,f16c")]
#[inline(never)]
unsafe fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}
