//! Launch planning for the GPU: a port of PyTorch's `ReduceConfig` and
//! `setReduceConfig` (`aten/src/ATen/native/cuda/Reduce.cuh`).
//!
//! CONTRACT (shared by the plan and CUDA work in progress; the planner fills
//! in the logic behind these types):
//! - [`DeviceProps`]: the GPU properties the heuristic reads, with presets.
//! - [`ReduceConfig`]: PyTorch's struct, field for field.
//! - [`LaunchPlan`]: one `reduce_kernel` launch (one 32-bit sub-iterator).
//! - [`ReducePlan`]: the whole reduction: iterator, launches, dtypes.

use crate::iter::TensorIterator;
use crate::DType;

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
}

/// PyTorch's `ReduceConfig`, with its names: how block.x, block.y and
/// grid.y split the inputs of each output, the outputs, and the CTAs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceConfig {
    /// `sizeof(arg_t)`: the accumulator's size.
    pub element_size_bytes: u32,
    /// Inputs reduced into each output (`inputs_per_output`).
    pub num_inputs: u32,
    /// Number of outputs.
    pub num_outputs: u32,
    pub step_input: u32,
    pub step_output: u32,
    pub ctas_per_output: u32,
    /// Input index multipliers for `[BLOCK_X, BLOCK_Y, CTA]`.
    pub input_mult: [u32; 3],
    /// Output index multipliers for `[BLOCK_X, BLOCK_Y]`.
    pub output_mult: [u32; 2],
    pub block_width: u32,
    pub block_height: u32,
    pub num_threads: u32,
    /// Lanes load `input_vec_size` contiguous inputs at once.
    pub vectorize_input: bool,
    /// Outputs each thread produces (4, 2 or 1).
    pub output_vec_size: u32,
    /// Width of an input vector load when `vectorize_input`.
    pub input_vec_size: u32,
    /// Independent accumulators per thread.
    pub vt0: u32,
}

/// One `reduce_kernel<nt, output_vec_size>` launch.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The (sub-)iterator this launch covers.
    pub iter: TensorIterator,
    pub config: ReduceConfig,
    /// Launch bound: `512 / output_vec_size`.
    pub nt: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_memory_bytes: u32,
    /// Staging buffer for the CTA-split global reduce, bytes (0 if none).
    pub staging_bytes: u64,
    /// Semaphores for the global reduce, bytes (0 if none).
    pub semaphore_bytes: u64,
    /// `sub_iter.view_offsets()[0]`, for index-returning ops.
    pub base_idx: u64,
}

/// Everything the GPU backend needs to run one reduction, and what
/// `explain_sum` shows.
#[derive(Clone, Debug, PartialEq)]
pub struct ReducePlan {
    /// The whole iterator, after reorder and coalesce.
    pub iter: TensorIterator,
    pub input_dtype: DType,
    pub output_dtype: DType,
    /// The accumulator (`arg_t`).
    pub acc_dtype: DType,
    pub props: DeviceProps,
    /// One launch per 32-bit sub-iterator.
    pub launches: Vec<LaunchPlan>,
    /// Whether an `arg_t` accumulation buffer the size of the output is
    /// needed (split iterator and an output that cannot accumulate, e.g. f16).
    pub needs_acc_buffer: bool,
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
        }
    }
}

impl ReducePlan {
    /// Plans the launches for `iter` (PLACEHOLDER until the port lands).
    pub fn new(
        iter: &TensorIterator,
        input_dtype: DType,
        output_dtype: DType,
        props: &DeviceProps,
    ) -> crate::Result<ReducePlan> {
        let _ = (iter, input_dtype, output_dtype, props);
        Err(crate::Error::Unsupported(
            "ReduceConfig port in progress (issue 3)".into(),
        ))
    }
}

impl std::fmt::Display for ReducePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self)
    }
}
