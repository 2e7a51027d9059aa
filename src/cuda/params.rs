//! The kernel's by-value parameter: `#[repr(C)]` mirrors of the structs in
//! `kernels/reduce.cuh` and `kernels/offset_calculator.cuh`, built from a
//! [`LaunchPlan`]. The generated kernel source `static_assert`s the sizes computed
//! here, so a layout drift fails at compile time.

use crate::cuda::plan::{LaunchPlan, ReduceConfig};
use crate::iter::TensorIterator;
use crate::reduce::OpParams;
use crate::{Error, Result};

/// `TR_MAX_DIMS`: dims an offset calculator holds (PyTorch's `MAX_DIMS`).
pub(crate) const MAX_DIMS: usize = 25;

/// Errors when an iterator keeps more dims after coalescing than the
/// kernel's offset calculator holds. Checked when a plan is made, so
/// `explain` reports it and no launch is attempted.
pub(crate) fn check_kernel_dims(ndim: usize) -> Result<()> {
    if ndim > MAX_DIMS {
        return Err(Error::Unsupported(format!(
            "a reduction whose iterator keeps {ndim} dims after coalescing (the CUDA kernel handles at most {MAX_DIMS})"
        )));
    }
    Ok(())
}

/// `tr::ReduceConfig`: PyTorch's `ReduceConfig`, the fields the kernel reads.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReduceConfigC {
    pub element_size_bytes: u32,
    pub num_inputs: u32,
    pub num_outputs: u32,
    pub step_input: u32,
    pub step_output: u32,
    pub ctas_per_output: u32,
    pub input_mult: [u32; 3],
    pub output_mult: [u32; 2],
    pub block_width: u32,
    pub block_height: u32,
    pub num_threads: u32,
    pub vectorize_input: u32,
    pub output_vec_size: u32,
    pub input_vec_size: u32,
    pub vt0: u32,
    pub lanes_per_row: u32,
    pub row_vec_size: u32,
    pub rows_per_thread: u32,
    pub stage_rows: u32,
    pub ragged_rows: u32,
}

impl From<&ReduceConfig> for ReduceConfigC {
    fn from(c: &ReduceConfig) -> Self {
        ReduceConfigC {
            element_size_bytes: c.element_size_bytes,
            num_inputs: c.num_inputs,
            num_outputs: c.num_outputs,
            step_input: c.step_input,
            step_output: c.step_output,
            ctas_per_output: c.ctas_per_output,
            input_mult: c.input_mult,
            output_mult: c.output_mult,
            block_width: c.block_width,
            block_height: c.block_height,
            num_threads: c.num_threads,
            vectorize_input: c.vectorize_input as u32,
            output_vec_size: c.output_vec_size,
            input_vec_size: c.input_vec_size,
            vt0: c.vt0,
            lanes_per_row: c.lanes_per_row,
            row_vec_size: c.row_vec_size,
            rows_per_thread: c.rows_per_thread,
            stage_rows: c.stage_rows as u32,
            ragged_rows: c.ragged_rows as u32,
        }
    }
}

/// `tr::IntDivider<uint32_t>`: division by a launch-time constant as a
/// multiply-high, add and shift.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IntDivider {
    pub divisor: u32,
    pub m1: u32,
    pub shift: u32,
}

impl IntDivider {
    /// PyTorch's magic numbers: `shift = ceil(log2(d))`,
    /// `m1 = 2^32 * (2^shift - d) / d + 1`. Exact for every `n < 2^31`.
    pub(crate) fn new(divisor: u32) -> IntDivider {
        assert!(
            (1..=i32::MAX as u32).contains(&divisor),
            "internal: IntDivider of {divisor}"
        );
        let mut shift = 0u32;
        while shift < 32 && (1u64 << shift) < divisor as u64 {
            shift += 1;
        }
        let magic = ((1u64 << 32) * ((1u64 << shift) - divisor as u64)) / divisor as u64 + 1;
        IntDivider {
            divisor,
            m1: magic as u32,
            shift,
        }
    }

    /// What the device computes, for tests.
    #[cfg(test)]
    fn divmod(&self, n: u32) -> (u32, u32) {
        let t = ((n as u64 * self.m1 as u64) >> 32) as u32;
        let q = (t + n) >> self.shift;
        (q, n - q * self.divisor)
    }
}

/// `tr::OffsetCalculator<N, uint32_t>`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct OffsetCalculator<const N: usize> {
    pub dims: i32,
    pub sizes: [IntDivider; MAX_DIMS],
    /// Byte strides, `[dim][operand]`.
    pub strides: [[u32; N]; MAX_DIMS],
}

impl<const N: usize> OffsetCalculator<N> {
    /// `shape` and, per operand, byte strides of the same dims.
    fn new(shape: &[usize], strides: [&[i64]; N]) -> Result<Self> {
        check_kernel_dims(shape.len())?;
        let mut calc = OffsetCalculator {
            dims: shape.len() as i32,
            sizes: [IntDivider::default(); MAX_DIMS],
            strides: [[0; N]; MAX_DIMS],
        };
        for (d, &size) in shape.iter().enumerate() {
            let size32 = u32::try_from(size)
                .ok()
                .filter(|&s| s >= 1 && s <= i32::MAX as u32);
            let Some(size32) = size32 else {
                return Err(Error::Unsupported(format!(
                    "iterator dim of size {size} in a 32-bit launch"
                )));
            };
            calc.sizes[d] = IntDivider::new(size32);
            for (slot, operand) in calc.strides[d].iter_mut().zip(&strides) {
                // A dim of size 1 only ever contributes index 0: its stride is unused.
                let stride = if size == 1 { 0 } else { operand[d] };
                *slot = u32::try_from(stride).map_err(|_| {
                    Error::Unsupported(format!("byte stride {stride} in a 32-bit launch"))
                })?;
            }
        }
        Ok(calc)
    }
}

/// `tr::ReduceArgs<uint32_t>`: the kernel's only parameter.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReduceArgs {
    pub config: ReduceConfigC,
    pub input_calc: OffsetCalculator<1>,
    pub output_calc: OffsetCalculator<2>,
    pub src: u64,
    /// One past the input allocation's last byte (`Buffers::input_end`).
    pub src_end: u64,
    pub dst: [u64; 2],
    pub acc_buf: u64,
    pub cta_buf: u64,
    pub semaphores: u64,
    pub base_idx: i64,
    pub op_params: [f64; 2],
    pub accumulate: u32,
    pub final_output: u32,
    pub noutputs: u32,
    /// [`contiguous_output_vectors`] of this launch, as 0 or 1.
    pub contiguous_outputs: u32,
}

// SAFETY: plain old data, #[repr(C)], and the kernel source asserts it has
// the same size as the C struct it is passed as (and the same field order).
unsafe impl cudarc::driver::DeviceRepr for ReduceArgs {}

/// Device addresses a launch needs besides the iterator.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Buffers {
    /// Input storage base (the iterator's data offsets are added here).
    pub input_base: u64,
    /// One past the last byte of the input's allocation: ragged short rows
    /// read whole aligned vectors around a row only where they end before
    /// it.
    pub input_end: u64,
    /// Output base (likewise).
    pub output_base: u64,
    /// Second output's base (indices, max, mean), or 0 for one output.
    pub output2_base: u64,
    /// Accumulation buffer base (arg_t per output element), or 0.
    pub acc_base: u64,
    pub staging: u64,
    pub semaphores: u64,
}

impl ReduceArgs {
    /// PyTorch's `make_input_calculator` / `make_output_calculator` and the
    /// `ReduceOp` constructor for one launch.
    pub(crate) fn new(
        launch: &LaunchPlan,
        out_elem_size: usize,
        out2_elem_size: usize,
        acc_elem_size: usize,
        bufs: &Buffers,
        params: OpParams,
    ) -> Result<ReduceArgs> {
        let it = &launch.iter;
        let nr = it.num_reduce_dims();
        let shape = it.shape();
        let input_strides = it.strides(TensorIterator::INPUT);
        let output_strides = it.strides(TensorIterator::OUTPUT);
        let input_calc = OffsetCalculator::<1>::new(&shape[..nr], [&input_strides[..nr]])?;
        let output_calc = OffsetCalculator::<2>::new(
            &shape[nr..],
            [&output_strides[nr..], &input_strides[nr..]],
        )?;
        let out_offset = it.data_offset(TensorIterator::OUTPUT);
        // The second output mirrors the first's layout in its element size.
        let dst2 = if bufs.output2_base == 0 {
            0
        } else {
            bufs.output2_base + out_offset / out_elem_size as u64 * out2_elem_size as u64
        };
        let acc_buf = if bufs.acc_base == 0 {
            0
        } else {
            bufs.acc_base + out_offset / out_elem_size as u64 * acc_elem_size as u64
        };
        let dst = bufs.output_base + out_offset;
        Ok(ReduceArgs {
            contiguous_outputs: contiguous_output_vectors(
                it,
                launch.config.output_vec_size,
                out_elem_size,
                dst,
            ) as u32,
            config: ReduceConfigC::from(&launch.config),
            input_calc,
            output_calc,
            src: bufs.input_base + it.data_offset(TensorIterator::INPUT),
            src_end: bufs.input_end,
            dst: [dst, dst2],
            acc_buf,
            cta_buf: bufs.staging,
            semaphores: bufs.semaphores,
            base_idx: launch.base_idx as i64,
            op_params: params.values,
            accumulate: it.accumulate() as u32,
            final_output: it.final_output() as u32,
            noutputs: if dst2 == 0 { 1 } else { 2 },
        })
    }
}

/// Whether every group of `output_vec_size` outputs a `reduce_kernel` lane
/// holds (outputs `k * output_vec_size ..`, in the iterator's order of the
/// kept dims) lies end to end in memory from an address aligned to the
/// whole group, `dst` being the address of output 0. The kernel then finds
/// one output's offset instead of each one's and stores a final result as
/// one vector: outputs written one at a time are as many store instructions,
/// each touching every sector of the group's span, which for 2-byte outputs
/// cost f16 columns of 2 half of a copy's speed on an H200.
///
/// The fastest kept dim must be the output's contiguous dim and hold whole
/// groups (or be the only kept dim, whose last group the kernel stores one
/// output at a time when it is short), and every other kept dim must step
/// by whole aligned groups.
pub(crate) fn contiguous_output_vectors(
    iter: &TensorIterator,
    output_vec_size: u32,
    out_elem_size: usize,
    dst: u64,
) -> bool {
    let nr = iter.num_reduce_dims();
    let shape = &iter.shape()[nr..];
    let strides = &iter.strides(TensorIterator::OUTPUT)[nr..];
    let vec = output_vec_size as usize;
    let Some(group_bytes) = vec.checked_mul(out_elem_size) else {
        return false;
    };
    vec > 1
        && !shape.is_empty()
        && strides[0] == out_elem_size as i64
        && (shape.len() == 1 || shape[0] % vec == 0)
        && dst % group_bytes as u64 == 0
        && strides[1..]
            .iter()
            .all(|&s| s.unsigned_abs() % group_bytes as u64 == 0)
}

/// `static_assert`s that pin the C structs to this file's layout. NVRTC has
/// no `offsetof`, so the sizes of every member struct and of the whole are
/// checked; both sides lay the same field sequence out by the same C rules.
pub(crate) fn layout_asserts() -> String {
    use std::mem::size_of;
    let mut s = String::from("namespace tr {\n");
    let mut check = |what: &str, value: usize| {
        s.push_str(&format!(
            "static_assert({what} == {value}, \"{what} differs from src/cuda/params.rs\");\n"
        ));
    };
    check("sizeof(ReduceConfig)", size_of::<ReduceConfigC>());
    check("sizeof(IntDivider<uint32_t>)", size_of::<IntDivider>());
    check(
        "sizeof(OffsetCalculator<1, uint32_t>)",
        size_of::<OffsetCalculator<1>>(),
    );
    check(
        "sizeof(OffsetCalculator<2, uint32_t>)",
        size_of::<OffsetCalculator<2>>(),
    );
    check("sizeof(OpParams)", size_of::<[f64; 2]>());
    check("sizeof(ReduceArgs<uint32_t>)", size_of::<ReduceArgs>());
    check(
        "kMaxRowsPerThread",
        crate::cuda::plan::SHORT_ROWS_MAX_ROWS_PER_THREAD as usize,
    );
    check(
        "kEightRowsMaxStateBytes",
        crate::cuda::plan::SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES as usize,
    );
    check(
        "kMaxLookedUpRowsPerThread",
        crate::cuda::plan::SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD as usize,
    );
    check(
        "kShortRowsThreads",
        crate::cuda::plan::SHORT_ROWS_THREADS as usize,
    );
    check(
        "kShortRowsMinBlocksPerSm",
        crate::cuda::plan::SHORT_ROWS_MIN_BLOCKS_PER_SM as usize,
    );
    check(
        "kShortRowsWideVecSize",
        crate::cuda::plan::SHORT_ROWS_WIDE_VEC_SIZE as usize,
    );
    check(
        "kShortRowsWideMinBlocksPerSm",
        crate::cuda::plan::SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM as usize,
    );
    check(
        "kPackedRowsMaxResultBytes",
        crate::cuda::plan::PACKED_ROWS_MAX_RESULT_BYTES as usize,
    );
    check(
        "kPyTorchMaxOutputVecSize",
        crate::cuda::plan::PYTORCH_MAX_OUTPUT_VEC_SIZE as usize,
    );
    check(
        "kShortRowsStageAlign",
        crate::cuda::plan::SHORT_ROWS_STAGE_ALIGN as usize,
    );
    s.push_str("}  // namespace tr\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::plan::simulate::offsets;

    #[test]
    fn int_divider_matches_division() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let divisors = [
            1u32,
            2,
            3,
            5,
            7,
            8,
            10,
            127,
            128,
            1000,
            65_535,
            65_536,
            1 << 20,
            3 << 20,
            i32::MAX as u32,
        ];
        for &d in &divisors {
            let div = IntDivider::new(d);
            let edges = [
                0u32,
                1,
                d - 1,
                d,
                d.saturating_add(1),
                i32::MAX as u32,
                (i32::MAX as u32) - 1,
            ];
            for n in edges
                .into_iter()
                .chain((0..2000).map(|_| (next() % (1u64 << 31)) as u32))
            {
                assert_eq!(div.divmod(n), (n / d, n % d), "n = {n}, d = {d}");
            }
        }
    }

    /// Whether every lane's group of `vec` outputs lies end to end from an
    /// address aligned to the group: what the kernel's vector store needs.
    fn groups_lie_end_to_end(it: &TensorIterator, vec: usize, size: usize, dst: u64) -> bool {
        let kept = it.num_reduce_dims()..it.ndim();
        let output_offset = |o: usize| offsets(it, kept.clone(), o as u64, TensorIterator::OUTPUT);
        let outputs = it.num_output_elements();
        (0..outputs).step_by(vec).all(|first| {
            let start = dst + output_offset(first);
            start % (vec * size) as u64 == 0
                && (first..outputs.min(first + vec))
                    .all(|o| dst + output_offset(o) == start + ((o - first) * size) as u64)
        })
    }

    fn iter(shape: &[usize], strides: &[isize], mask: &[bool], out_size: usize) -> TensorIterator {
        TensorIterator::reduction(shape, strides, 0, 4, out_size, mask).unwrap()
    }

    #[test]
    fn contiguous_output_vectors_where_outputs_lie_end_to_end() {
        // Columns of 2: one kept dim, the output's own.
        let columns = iter(&[2, 64], &[64, 1], &[true, false], 2);
        assert!(contiguous_output_vectors(&columns, 8, 2, 0));
        assert!(
            !contiguous_output_vectors(&columns, 8, 2, 2),
            "a misaligned output"
        );
        assert!(
            !contiguous_output_vectors(&columns, 1, 2, 0),
            "one output a lane"
        );
        // A middle dim: kept dims of 12 (fastest) and 3 that do not coalesce.
        let middle = iter(&[3, 2, 12], &[24, 12, 1], &[false, true, false], 2);
        assert_eq!(middle.ndim() - middle.num_reduce_dims(), 2);
        assert!(contiguous_output_vectors(&middle, 4, 2, 0));
        assert!(
            !contiguous_output_vectors(&middle, 8, 2, 0),
            "groups of 8 straddle rows of 12"
        );
        // A permuted view: the iterator walks the kept dims in the output's
        // order, so whole groups of its fastest dim (4 outputs) lie end to end.
        let permuted = iter(&[8, 4, 2], &[1, 8, 32], &[false, false, true], 4);
        assert!(contiguous_output_vectors(&permuted, 4, 4, 0));
        assert!(!contiguous_output_vectors(&permuted, 8, 4, 0));
    }

    #[test]
    fn contiguous_output_vectors_never_claims_groups_that_do_not_lie_end_to_end() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut claimed = 0;
        for _ in 0..3000 {
            let ndim = 1 + next(4);
            let shape: Vec<usize> = (0..ndim).map(|_| 1 + next(12)).collect();
            // A permutation of a contiguous base.
            let mut order: Vec<usize> = (0..ndim).collect();
            for i in (1..ndim).rev() {
                order.swap(i, next(i + 1));
            }
            let mut strides = vec![0isize; ndim];
            let mut step = 1;
            for &d in order.iter().rev() {
                strides[d] = step;
                step *= shape[d] as isize;
            }
            let mask: Vec<bool> = (0..ndim).map(|_| next(2) == 0).collect();
            let size = [1, 2, 4, 8][next(4)];
            let it = iter(&shape, &strides, &mask, size);
            let vec = [2, 4, 8][next(3)];
            let dst = [0u64, 256, size as u64, 4 * size as u64][next(4)];
            if contiguous_output_vectors(&it, vec as u32, size, dst) {
                claimed += 1;
                assert!(
                    groups_lie_end_to_end(&it, vec, size, dst),
                    "{shape:?} strides {strides:?} mask {mask:?}, {vec} outputs of {size} B from {dst}"
                );
            }
        }
        assert!(claimed > 300, "only {claimed} layouts claimed");
    }

    #[test]
    fn args_fit_a_kernel_parameter() {
        // CUDA's classic limit on kernel parameters is 4 KiB.
        assert!(std::mem::size_of::<ReduceArgs>() <= 4096);
    }
}
