//! Launch planning for the GPU: a port of PyTorch's `ReduceConfig` and
//! `setReduceConfig` (`aten/src/ATen/native/cuda/Reduce.cuh`, PyTorch 2.11),
//! plus the host driver decisions of `gpu_reduce_kernel` and the dtype
//! dispatch of the ops' kernels (`ReduceSumProdKernel.cu` and its siblings).
//!
//! CONTRACT (shared by the plan and CUDA work):
//! - [`DeviceProps`]: the GPU properties the heuristic reads, with presets.
//! - [`ReduceConfig`]: PyTorch's struct, field for field (plus the warp size
//!   and thread cap it reads from the device and the op).
//! - [`LaunchPlan`]: one `reduce_kernel` launch (one 32-bit sub-iterator).
//! - [`ReducePlan`]: the whole reduction: iterator, launches, dtypes.
//!
//! Everything is a pure function of the iterator, the dtypes, the device
//! properties and, where known, the registers its compiled kernels take
//! ([`KernelRegisters`]); no GPU is touched. Printing a [`ReducePlan`] explains it like
//! a database `EXPLAIN`.

mod config;
mod explain;
mod residency;
pub mod simulate;
mod strategy;
#[cfg(test)]
mod tests;

pub use config::{
    div_up, get_output_vec_size, last_pow2, set_reduce_config, Decisions, BLOCK_X, BLOCK_Y, CTA,
    MAX_VALUES_PER_THREAD, MIN_VALUES_PER_THREAD, PYTORCH_MAX_OUTPUT_VEC_SIZE,
};
pub use residency::{
    ctas_per_sm, wave_ctas, KernelRegisters, REGISTER_ALLOCATION_UNIT, SM_SUB_PARTITIONS,
};
pub use strategy::{
    choose_strategy, configure, has_wide_loads, max_output_vec_size, ragged_row_vectors, ShortRows,
    Strategy, LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE,
    LOOKED_UP_8_BYTE_WIDE_STATE_MAX_VECTORS_PER_LANE, PACKED_ROWS_MAX_RESULT_BYTES,
    RAGGED_MIN_LOADS_USED_PERCENT, ROW_PER_WARP_MIN_SLOTS_PERCENT, SCALAR_ROW_MAX_BYTES,
    SHORT_COLUMNS_OUTPUT_VEC_SIZE, SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES,
    SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD, SHORT_ROWS_MAX_ROWS_PER_THREAD,
    SHORT_ROWS_MAX_VECTORS_PER_LANE, SHORT_ROWS_MIN_BLOCKS_PER_SM, SHORT_ROWS_STAGE_ALIGN,
    SHORT_ROWS_STAGE_BYTES, SHORT_ROWS_THREADS, SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM,
    SHORT_ROWS_WIDE_PICKS_MIN_ROW, SHORT_ROWS_WIDE_VEC_SIZE, STAGED_ROW_MAX_BYTES,
    TALL_COLUMNS_MAX_STAGED_PER_THREAD, TALL_COLUMNS_MIN_LOAD_BYTES,
};

use crate::iter::TensorIterator;
use crate::reduce::Signature;
use crate::{DType, Error, Result};

/// More launches than this means a pathological layout (e.g. a stride so
/// large that each 32-bit piece holds a handful of elements); planning it
/// would only exhaust memory, so it is refused.
pub const MAX_LAUNCHES: usize = 1 << 16;

/// The properties of a GPU that launch planning depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceProps {
    /// Marketing name, for display.
    pub name: String,
    /// Streaming multiprocessors (`multiProcessorCount`).
    pub sm_count: u32,
    /// `maxThreadsPerMultiProcessor`.
    pub max_threads_per_sm: u32,
    /// Threads per warp (32 on every NVIDIA GPU).
    pub warp_size: u32,
    /// `maxThreadsPerBlock`.
    pub max_threads_per_block: u32,
    /// Shared memory a block may use without opting in, in bytes.
    pub shared_mem_per_block: u32,
    /// Compute capability `(major, minor)`, for `--gpu-architecture=sm_XY`.
    pub compute_capability: (u32, u32),
    /// 32-bit registers an SM shares among its resident threads
    /// (`maxRegistersPerMultiprocessor`): with a kernel's registers a thread
    /// (a [`KernelRegisters`]), how many of its CTAs an SM holds.
    pub registers_per_sm: u32,
    /// The most CTAs an SM holds at once, whatever their size
    /// (`maxBlocksPerMultiProcessor`).
    pub max_blocks_per_sm: u32,
}

/// PyTorch's `ReduceConfig`, with its names: how block.x, block.y and
/// grid.y split the inputs of each output, the outputs, and the CTAs.
///
/// A thread `(threadIdx, blockIdx)` starts at input index
/// [`input_idx`](ReduceConfig::input_idx) and output index
/// [`output_idx`](ReduceConfig::output_idx); a multiplier of 0 in
/// `input_mult` means that level splits outputs instead (and vice versa).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceConfig {
    /// `sizeof(arg_t)`: the accumulator's size.
    pub element_size_bytes: u32,
    /// Inputs reduced into each output (`inputs_per_output`).
    pub num_inputs: u32,
    /// Number of outputs.
    pub num_outputs: u32,
    /// Distance between successive input indices a thread reads: the
    /// product of every `split_input` parallelism.
    pub step_input: u32,
    /// Outputs (in units of `output_vec_size`) one CTA column covers: the
    /// product of every `split_output` parallelism.
    pub step_output: u32,
    /// CTAs along grid.y that share each output (1: no global reduce).
    pub ctas_per_output: u32,
    /// Input index multipliers for `[BLOCK_X, BLOCK_Y, CTA]`.
    pub input_mult: [u32; 3],
    /// Output index multipliers for `[BLOCK_X, BLOCK_Y]`.
    pub output_mult: [u32; 2],
    /// block.x.
    pub block_width: u32,
    /// block.y.
    pub block_height: u32,
    /// `block_width * block_height`.
    pub num_threads: u32,
    /// Lanes load `input_vec_size` contiguous inputs at once.
    pub vectorize_input: bool,
    /// Outputs each thread produces (4, 2 or 1; 8 under
    /// [`Strategy::ShortColumns`]).
    pub output_vec_size: u32,
    /// Width of an input vector load when `vectorize_input`.
    pub input_vec_size: u32,
    /// Independent accumulators per thread.
    pub vt0: u32,
    /// `at::cuda::warp_size()`, which `set_block_dimension` and
    /// `shared_memory_size` read.
    pub warp_size: u32,
    /// `mnt_wrapper<scalar_t>::MAX_NUM_THREADS` (512; 256 for complex double).
    pub max_num_threads: u32,
    /// Lanes that share one row under [`Strategy::ShortRows`]; 0 for
    /// PyTorch's index maps above.
    pub lanes_per_row: u32,
    /// Inputs each lane loads at once under [`Strategy::ShortRows`] (0 otherwise).
    pub row_vec_size: u32,
    /// Rows each thread reduces under [`Strategy::ShortRows`]; 1 otherwise,
    /// where a CTA column's outputs are one `step_output`.
    pub rows_per_thread: u32,
    /// Under [`Strategy::ShortRows`] with a lane per row, each warp copies
    /// its rows (one packed span, [`ShortRows::staged`]) into shared memory
    /// and reduces them from there.
    pub stage_rows: bool,
    /// Under [`Strategy::ShortRows`], rows that the widest load does not
    /// fit are read as the aligned vectors around each row, keeping only
    /// the row's inputs ([`ShortRows::ragged`]).
    pub ragged_rows: bool,
    /// Under [`Strategy::RaggedColumns`], a lane's `output_vec_size`
    /// inputs of a row may start anywhere: the kernel reads them as the
    /// aligned vectors around them, and stores only the outputs below
    /// `num_outputs` (the last vector may run past them). The host picks
    /// the kernel's ragged instantiation by it; the kernel's own
    /// `ReduceConfig` has no such field.
    pub ragged_columns: bool,
}

/// One `reduce_kernel<nt, output_vec_size>` launch.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The (sub-)iterator this launch covers, in the dim order it runs.
    pub iter: TensorIterator,
    /// The configuration that runs: `setReduceConfig`'s result for this
    /// sub-iterator, or a [`Strategy`]'s.
    pub config: ReduceConfig,
    /// Launch bound: `max_num_threads / output_vec_size`.
    pub nt: u32,
    /// `config.grid()`.
    pub grid: [u32; 3],
    /// `config.block()`.
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_memory_bytes: u32,
    /// Staging buffer for the CTA-split global reduce, bytes (0 if none):
    /// exactly the slots `staging_memory_offset` can address
    /// ([`ReduceConfig::staging_size`]), not PyTorch's larger
    /// `global_memory_size`, which counts every output times every CTA.
    pub staging_bytes: u64,
    /// Semaphores for the global reduce, bytes (0 if none). Our kernel
    /// leaves them at zero, so unlike PyTorch no memset precedes a launch.
    pub semaphore_bytes: u64,
    /// `sub_iter.view_offsets()[0]`, for index-returning ops.
    pub base_idx: u64,
    /// Why `setReduceConfig` chose the config that `explain` explains:
    /// PyTorch's own (`pytorch_config`) where a strategy of ours replaced
    /// it, else the one that runs.
    pub decisions: Decisions,
    /// Which configuration runs: PyTorch's, or one of our strategies.
    pub strategy: Strategy,
    /// `setReduceConfig`'s result for `iter` with PyTorch's own loads
    /// ([`Signature::pytorch_input_vec_size`]) where the launch differs
    /// from it: `strategy` replaced it, or ours loads wider (byte sums),
    /// for `explain` to show beside ours.
    pub pytorch_config: Option<ReduceConfig>,
    /// PyTorch's `setReduceConfig` result on PyTorch's own dim order, when
    /// `iter` runs in ours instead: its kept dims sorted by the input's
    /// strides rather than the output's, so that lanes walking outputs read
    /// neighbouring inputs. `decisions` and `pytorch_config` are then the
    /// port's on our order.
    pub pytorch_order_config: Option<ReduceConfig>,
}

impl LaunchPlan {
    /// The config PyTorch itself launches for this sub-iterator: on its own
    /// dim order, before any of our strategies.
    pub fn pytorch_own_config(&self) -> ReduceConfig {
        self.pytorch_order_config
            .or(self.pytorch_config)
            .unwrap_or(self.config)
    }

    /// Whether a ShortRows launch finds its rows by one stride: its kept
    /// dims coalesced into at most one, so a row's offsets are a multiply.
    /// Otherwise its `short_rows_kernel` looks each row up through the
    /// output `OffsetCalculator`, once per row.
    pub fn rows_by_one_stride(&self) -> bool {
        strategy::rows_by_one_stride(&self.iter)
    }

    /// The most rows one thread of a ShortRows launch takes: the size of
    /// its kernel's register arrays, fewer
    /// ([`SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD`]) where the rows are
    /// looked up one by one or the op's state is wider than
    /// [`SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES`].
    pub fn short_rows_max_rows_per_thread(&self) -> u32 {
        strategy::short_rows_max_rows_per_thread(&self.iter, &self.config)
    }
}

/// Everything the GPU backend needs to run one reduction, and what
/// `explain` shows.
#[derive(Clone, Debug, PartialEq)]
pub struct ReducePlan {
    /// The whole iterator, after reorder and coalesce, as the caller built it.
    pub iter: TensorIterator,
    /// The op, its types and its kernel settings: everything the kernel is
    /// instantiated on.
    pub signature: Signature,
    /// The device planned for.
    pub props: DeviceProps,
    /// The registers of the signature's kernels the plan counted its waves
    /// by: those of the loaded module on a device, none when planned
    /// without one (every kernel then counts as filling its SMs).
    pub kernel_registers: KernelRegisters,
    /// One launch per 32-bit sub-iterator of [`ReducePlan::iter`].
    pub launches: Vec<LaunchPlan>,
    /// Whether an `arg_t` accumulation buffer the size of the output is
    /// needed: the iterator is split and the output cannot hold a partial
    /// sum (its type is not the accumulator's, e.g. an f16 output).
    pub needs_acc_buffer: bool,
    /// Bytes of that accumulation buffer (0 when not needed): PyTorch's
    /// `output_memory_size * sizeof(arg_t)`.
    pub acc_buffer_bytes: u64,
}

impl DeviceProps {
    /// NVIDIA H200 (132 SMs, 2048 threads per SM).
    pub fn h200() -> DeviceProps {
        DeviceProps {
            name: "NVIDIA H200".into(),
            sm_count: 132,
            max_threads_per_sm: 2048,
            warp_size: 32,
            max_threads_per_block: 1024,
            shared_mem_per_block: 48 * 1024,
            compute_capability: (9, 0),
            registers_per_sm: 65536,
            max_blocks_per_sm: 32,
        }
    }

    /// NVIDIA H100 SXM (132 SMs, 2048 threads per SM).
    pub fn h100() -> DeviceProps {
        DeviceProps {
            name: "NVIDIA H100".into(),
            ..DeviceProps::h200()
        }
    }

    /// NVIDIA A100 (108 SMs, 2048 threads per SM).
    pub fn a100() -> DeviceProps {
        DeviceProps {
            name: "NVIDIA A100".into(),
            sm_count: 108,
            compute_capability: (8, 0),
            ..DeviceProps::h200()
        }
    }

    /// A preset by short name (`h200`, `h100`, `a100`), case-insensitive.
    pub fn preset(name: &str) -> Option<DeviceProps> {
        match name.to_ascii_lowercase().as_str() {
            "h200" => Some(DeviceProps::h200()),
            "h100" => Some(DeviceProps::h100()),
            "a100" => Some(DeviceProps::a100()),
            _ => None,
        }
    }

    /// Checks that the heuristic can run on these properties: at least one
    /// SM, a power-of-two warp no wider than the block cap, room for a
    /// block on an SM, and registers and CTA slots in bounds.
    pub fn validate(&self) -> Result<()> {
        let bad = |why: String| {
            Err(Error::Unsupported(format!(
                "device properties of {:?}: {why}",
                self.name
            )))
        };
        if self.sm_count == 0 || self.sm_count > 1 << 16 {
            return bad(format!("sm_count {} is outside 1..=65536", self.sm_count));
        }
        if !self.warp_size.is_power_of_two() || self.warp_size > 512 {
            return bad(format!(
                "warp_size {} is not a power of two in 1..=512",
                self.warp_size
            ));
        }
        if self.max_threads_per_sm == 0 || self.max_threads_per_sm > 1 << 16 {
            return bad(format!(
                "max_threads_per_sm {} is outside 1..=65536",
                self.max_threads_per_sm
            ));
        }
        if self.registers_per_sm == 0 || self.registers_per_sm > 1 << 24 {
            return bad(format!(
                "registers_per_sm {} is outside 1..=16777216",
                self.registers_per_sm
            ));
        }
        if self.max_blocks_per_sm == 0 || self.max_blocks_per_sm > 1 << 16 {
            return bad(format!(
                "max_blocks_per_sm {} is outside 1..=65536",
                self.max_blocks_per_sm
            ));
        }
        Ok(())
    }
}

impl ReducePlan {
    /// Plans the launches of `signature` (an op on an input dtype) over
    /// `iter` on a device with `props`, as PyTorch's `gpu_reduce_kernel`
    /// does: the 32-bit split, the accumulation buffer, and one
    /// `setReduceConfig` per sub-iterator. This is exactly what the CUDA
    /// backend launches.
    ///
    /// An iterator with no elements plans zero launches.
    ///
    /// ```
    /// use tensor_reduce::{cuda::plan::{DeviceProps, ReducePlan}, iter::TensorIterator};
    /// use tensor_reduce::{reduce::ReduceOp, DType};
    /// // x = [2^25] f32, x.sum(): one launch, 528 CTAs sharing the output.
    /// let it = TensorIterator::reduction(&[1 << 25], &[1], 0, 4, 4, &[true])?;
    /// let sum = ReduceOp::Sum.signature(DType::F32, None)?;
    /// let plan = ReducePlan::new(&it, &sum, &DeviceProps::h200())?;
    /// let launch = &plan.launches[0];
    /// assert_eq!((launch.grid, launch.block), ([1, 528, 1], [512, 1, 1]));
    /// assert!(launch.config.should_global_reduce());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn new(
        iter: &TensorIterator,
        signature: &Signature,
        props: &DeviceProps,
    ) -> Result<ReducePlan> {
        ReducePlan::for_kernels(iter, signature, props, &KernelRegisters::default())
    }

    /// [`ReducePlan::new`] for kernels that take `registers`: our branches
    /// count their waves in the CTAs those let an SM hold
    /// ([`ctas_per_sm`]), where `new` counts a full SM's. The CUDA backend
    /// plans with the registers of the module it loaded.
    ///
    /// ```
    /// use tensor_reduce::cuda::plan::{DeviceProps, KernelRegisters, ReducePlan, Strategy};
    /// use tensor_reduce::{iter::TensorIterator, reduce::ReduceOp, DType};
    /// // [16384, 1024] f64 summed over dim 0: columns, lanes of one output.
    /// let it = TensorIterator::reduction(&[16384, 1024], &[1024, 1], 0, 8, 8, &[true, false])?;
    /// let sum = ReduceOp::Sum.signature(DType::F64, None)?;
    /// let h200 = DeviceProps::h200();
    /// let full_sm = ReducePlan::new(&it, &sum, &h200)?;
    /// // reduce_kernel<512, 1> of f64 took 40 registers: 3 CTAs an SM, not 4.
    /// let loaded = KernelRegisters::new([(1, 40), (2, 54), (4, 72)]);
    /// let held = ReducePlan::for_kernels(&it, &sum, &h200, &loaded)?;
    /// assert!(matches!(held.launches[0].strategy, Strategy::TallColumns { .. }));
    /// assert_eq!(full_sm.launches[0].grid, [32, 16, 1]); // 512 CTAs, 1.29 waves of 396
    /// assert_eq!(held.launches[0].grid, [32, 12, 1]); // 384 CTAs, one wave
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn for_kernels(
        iter: &TensorIterator,
        signature: &Signature,
        props: &DeviceProps,
        registers: &KernelRegisters,
    ) -> Result<ReducePlan> {
        props.validate()?;
        check_element_size(iter, TensorIterator::INPUT, "input", signature.input)?;
        check_element_size(iter, TensorIterator::OUTPUT, "output", signature.output)?;
        crate::cuda::params::check_kernel_dims(iter.ndim())?;
        let mut plan = ReducePlan {
            iter: iter.clone(),
            signature: *signature,
            props: props.clone(),
            kernel_registers: registers.clone(),
            launches: Vec::new(),
            needs_acc_buffer: false,
            acc_buffer_bytes: 0,
        };
        // No launch where the input is empty (the entry point fills the
        // empty rule's value) or the op's result is a fill of index 0.
        let fill = signature
            .op
            .fills_index_zero(iter.numel(), iter.num_output_elements());
        if iter.numel() == 0 || fill {
            return Ok(plan);
        }
        let sub_iters = split_32bit(iter, MAX_LAUNCHES)?;
        plan.needs_acc_buffer = !signature.can_accumulate_in_output() && sub_iters.len() > 1;
        if plan.needs_acc_buffer {
            plan.acc_buffer_bytes = acc_buffer_bytes(iter, signature.acc.size_in_bytes());
        }
        plan.launches = sub_iters
            .into_iter()
            .map(|sub| plan_launch(sub, signature, props, registers))
            .collect();
        Ok(plan)
    }
}

fn check_element_size(iter: &TensorIterator, arg: usize, what: &str, dtype: DType) -> Result<()> {
    let size = iter.element_size(arg);
    if size != dtype.size_in_bytes() {
        return Err(Error::Unsupported(format!(
            "the iterator was built for {size}-byte {what} elements but the {what} dtype is {dtype} ({} bytes)",
            dtype.size_in_bytes()
        )));
    }
    Ok(())
}

/// One launch: `setReduceConfig` on a 32-bit sub-iterator and the sizes
/// `gpu_reduce_kernel` / `launch_reduce_kernel` derive from it.
fn plan_launch(
    iter: TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    registers: &KernelRegisters,
) -> LaunchPlan {
    // Our dim order, where it differs, is planned by the port as if it
    // were PyTorch's; PyTorch's config on its own order stays beside it.
    // What PyTorch itself launches has its own loads (byte sums: vt0 wide,
    // ours 16): the port runs on our signature, and again on PyTorch's
    // where they differ, for explain and the fixtures.
    let pytorch_signature = signature.as_pytorch();
    let (iter, pytorch_order_config) = match strategy::kept_dims_by_input(&iter) {
        Some(reordered) => (
            reordered,
            Some(set_reduce_config(&iter, &pytorch_signature, props).0),
        ),
        None => (iter, None),
    };
    let (pytorch, decisions) = set_reduce_config(&iter, signature, props);
    let strategy = choose_strategy(&iter, signature, props, registers, &pytorch);
    let config = configure(&iter, signature, props, registers, strategy, &pytorch);
    let (pytorch_own, pytorch_own_decisions) = if pytorch_signature == *signature {
        (pytorch, decisions)
    } else {
        set_reduce_config(&iter, &pytorch_signature, props)
    };
    // `decisions` explain the config whose "why" explain prints: PyTorch's
    // own where a strategy replaced it, else the one that runs.
    let (pytorch_config, decisions) = if strategy != Strategy::PyTorch {
        (Some(pytorch_own), pytorch_own_decisions)
    } else {
        // Loads that neither vectorises leave the same launch.
        let same_launch = pytorch_own == config
            || (!pytorch_own.vectorize_input
                && !config.vectorize_input
                && ReduceConfig {
                    input_vec_size: config.input_vec_size,
                    ..pytorch_own
                } == config);
        ((!same_launch).then_some(pytorch_own), decisions)
    };
    let base_idx = iter.view_offsets().first().copied().unwrap_or(0) as u64;
    LaunchPlan {
        config,
        nt: config.nt(),
        grid: config.grid(),
        block: config.block(),
        shared_memory_bytes: if config.stage_rows {
            // The planner keeps a stage within SHORT_ROWS_STAGE_BYTES; were
            // it not, u32::MAX makes the launch fail, never run short.
            let bytes = strategy::short_rows_stage_bytes(
                &config,
                props.warp_size,
                signature.input.size_in_bytes() as u32,
            );
            u32::try_from(bytes).unwrap_or(u32::MAX)
        } else {
            config.shared_memory_size()
        },
        staging_bytes: config.staging_size(),
        semaphore_bytes: config.semaphore_size(),
        base_idx,
        decisions,
        strategy,
        pytorch_config,
        pytorch_order_config,
        iter,
    }
}

/// `iter.with_32bit_indexing()`, refusing to produce more than `limit`
/// pieces.
pub fn split_32bit(iter: &TensorIterator, limit: usize) -> Result<Vec<TensorIterator>> {
    iter.with_32bit_indexing_at_most(limit).ok_or_else(|| {
        Error::Unsupported(format!(
            "splitting an iterator of shape {:?} for 32-bit indexing needs more than {limit} launches",
            iter.shape()
        ))
    })
}

/// The `AccumulationBuffer` size of `gpu_reduce_kernel`: the output's byte
/// footprint in elements, times `sizeof(arg_t)`.
fn acc_buffer_bytes(iter: &TensorIterator, acc_size: usize) -> u64 {
    let out_elt = iter.element_size(TensorIterator::OUTPUT) as u64;
    let footprint = iter
        .shape()
        .iter()
        .zip(iter.strides(TensorIterator::OUTPUT))
        .map(|(&n, &s)| n as u64 * s.unsigned_abs())
        .fold(out_elt, u64::max);
    footprint / out_elt * acc_size as u64
}
