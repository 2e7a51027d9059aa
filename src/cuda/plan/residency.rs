//! How many CTAs of a kernel an SM holds at once, from the registers the
//! compiled kernel takes.
//!
//! PyTorch's `target_grid_size` counts a wave as a full SM's worth of CTAs
//! (`max_threads_per_sm / num_threads` an SM) whatever the kernel. Its
//! launch bounds budget registers for 4 CTAs an SM whatever the block size,
//! so a kernel of 128 or 256 threads may take more registers than a full SM
//! leaves it: on an H200, f16 column sums (`reduce_kernel<128, 4>`, 49
//! registers) held 9 CTAs an SM where the count says 16, and f64 columns
//! (`<512, 1>`, 40 registers) 3 where it says 4, so a grid planned as one
//! wave ran as 1.3 to 1.9 and ended in a partial one. Our branches that
//! split outputs across CTAs in whole waves ([`Strategy::CtaSplit`],
//! [`Strategy::VectorizedDims`], [`Strategy::TallColumns`]) count a wave in
//! the CTAs the kernel they launch actually holds. PyTorch's own config is
//! ported as it is, on its own count.
//!
//! [`Strategy::CtaSplit`]: super::Strategy::CtaSplit
//! [`Strategy::VectorizedDims`]: super::Strategy::VectorizedDims
//! [`Strategy::TallColumns`]: super::Strategy::TallColumns

use super::config::{div_up, target_grid_size};
use super::DeviceProps;

/// Registers are given to a warp in units of this many (every NVIDIA GPU
/// from sm_50 to sm_90): a thread of 49 registers takes 56 of the SM's.
pub const REGISTER_ALLOCATION_UNIT: u32 = 256;

/// An SM's register file is split evenly among this many sub-partitions
/// (one per warp scheduler, from sm_70 to sm_90), and a warp's registers
/// come from one: a partition of 16384 holds 12 warps of 40 registers, so
/// an SM holds 48, not the 51 that 65536 would.
pub const SM_SUB_PARTITIONS: u32 = 4;

/// Registers a thread of each of a signature's `reduce_kernel`s takes, by
/// the kernel's output vector size, as the loaded module reports them
/// (`CU_FUNC_ATTRIBUTE_NUM_REGS`). Empty (the default) where they are not
/// known, planning without a device: every kernel then counts as filling
/// its SMs, as PyTorch's `target_grid_size` counts it.
///
/// ```
/// use tensor_reduce::cuda::plan::{ctas_per_sm, DeviceProps, KernelRegisters};
/// let h200 = DeviceProps::h200();
/// // f16 column sums' reduce_kernel<128, 4> took 49 registers on an H200.
/// let registers = KernelRegisters::new([(1, 32), (2, 32), (4, 49)]);
/// assert_eq!(ctas_per_sm(&h200, registers.of(4), 128), 9);
/// assert_eq!(ctas_per_sm(&h200, None, 128), 16); // a full SM's
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelRegisters {
    /// `(output_vec_size, registers a thread)`, one pair per kernel.
    by_output_vec_size: Vec<(u32, u32)>,
}

impl KernelRegisters {
    /// The registers of each `reduce_kernel`, as `(output_vec_size,
    /// registers a thread)` pairs.
    pub fn new(pairs: impl IntoIterator<Item = (u32, u32)>) -> KernelRegisters {
        KernelRegisters {
            by_output_vec_size: pairs.into_iter().collect(),
        }
    }

    /// Registers a thread of the `reduce_kernel` of `output_vec_size`
    /// outputs a lane, where known.
    pub fn of(&self, output_vec_size: u32) -> Option<u32> {
        self.by_output_vec_size
            .iter()
            .find(|&&(v, _)| v == output_vec_size)
            .map(|&(_, registers)| registers)
    }
}

/// CTAs of `num_threads` threads an SM holds at once: PyTorch's count by
/// the SM's threads, fewer where the kernel's registers a thread
/// (`registers`, `None` when not known) or the SM's CTA slots run out
/// first, counted as the driver's occupancy calculator counts them (a GPU
/// test checks the two agree). Shared memory is left out: no
/// `reduce_kernel` block uses more than a few KiB. At least 1.
pub fn ctas_per_sm(props: &DeviceProps, registers: Option<u32>, num_threads: u32) -> u32 {
    let by_threads = props.max_threads_per_sm / num_threads.max(1);
    let by_registers = registers.map_or(u32::MAX, |registers| {
        let warps = div_up(u64::from(num_threads), u64::from(props.warp_size.max(1)));
        let per_warp = div_up(
            u64::from(registers) * u64::from(props.warp_size),
            u64::from(REGISTER_ALLOCATION_UNIT),
        ) * u64::from(REGISTER_ALLOCATION_UNIT);
        let per_partition = u64::from(props.registers_per_sm / SM_SUB_PARTITIONS);
        let warps_by_registers = per_partition / per_warp.max(1) * u64::from(SM_SUB_PARTITIONS);
        u32::try_from(warps_by_registers / warps.max(1)).unwrap_or(u32::MAX)
    });
    by_threads
        .min(by_registers)
        .min(props.max_blocks_per_sm)
        .max(1)
}

/// A wave: the CTAs of `num_threads` threads of the kernel with
/// `registers` a thread that the device holds at once. With the registers
/// unknown, PyTorch's `target_grid_size`.
pub fn wave_ctas(props: &DeviceProps, registers: Option<u32>, num_threads: u32) -> u64 {
    match registers {
        None => u64::from(target_grid_size(props, num_threads)),
        Some(_) => {
            u64::from(props.sm_count) * u64::from(ctas_per_sm(props, registers, num_threads))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident CTAs that `ncu` reported on an H200 for the kernels of the
    /// sweep's column cases (docs/performance-history.md): (registers, threads a
    /// CTA, CTAs an SM).
    #[test]
    fn registers_limit_ctas_as_ncu_measured_them() {
        let h200 = DeviceProps::h200();
        for (registers, threads, ctas) in [
            (32, 512, 4),
            (40, 512, 3),
            (54, 256, 4),
            (40, 256, 6),
            (49, 128, 9),
            (32, 256, 8),
            (32, 128, 16),
            // The driver's occupancy calculator on an H200: 48 warps of
            // 40 registers (12 a partition), 24 CTAs of 64 threads.
            (40, 64, 24),
        ] {
            assert_eq!(
                ctas_per_sm(&h200, Some(registers), threads),
                ctas,
                "{registers} registers, {threads} threads"
            );
        }
    }

    #[test]
    fn without_registers_a_wave_is_pytorchs() {
        let h200 = DeviceProps::h200();
        for threads in [32, 64, 128, 256, 512, 1024] {
            assert_eq!(
                wave_ctas(&h200, None, threads),
                u64::from(target_grid_size(&h200, threads))
            );
            // A kernel that takes few registers fills the SM as well.
            assert_eq!(
                wave_ctas(&h200, Some(16), threads),
                u64::from(target_grid_size(&h200, threads)).min(132 * 32)
            );
        }
    }

    #[test]
    fn slots_and_huge_register_counts_bound_the_count() {
        let h200 = DeviceProps::h200();
        // 64 CTAs of 32 threads fit the SM's threads, not its 32 slots.
        assert_eq!(ctas_per_sm(&h200, Some(16), 32), 32);
        // More registers than an SM has still leave one CTA to count.
        assert_eq!(ctas_per_sm(&h200, Some(u32::MAX), 1024), 1);
    }
}
