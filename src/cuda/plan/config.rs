//! The port of PyTorch's `ReduceConfig` methods and `setReduceConfig`
//! (`aten/src/ATen/native/cuda/Reduce.cuh`), kept name for name so the two
//! can be read side by side.
//!
//! Everything here is a pure function of the iterator, the kernel's types
//! and the device properties.

use super::{DeviceProps, ReduceConfig};
use crate::iter::TensorIterator;
use crate::reduce::Signature;

/// `ReduceConfig::BLOCK_X`: index of the lane (threadIdx.x) multiplier.
pub const BLOCK_X: usize = 0;
/// `ReduceConfig::BLOCK_Y`: index of the warp (threadIdx.y) multiplier.
pub const BLOCK_Y: usize = 1;
/// `ReduceConfig::CTA`: index of the blockIdx.y multiplier.
pub const CTA: usize = 2;

/// `min_values_per_thread` of `setReduceConfig` (CUDA; ROCm uses 128).
pub const MIN_VALUES_PER_THREAD: u32 = 16;
/// `max_values_per_thread` of `setReduceConfig`.
pub const MAX_VALUES_PER_THREAD: u32 = 256;

/// PyTorch's `div_up`.
pub fn div_up(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// PyTorch's `last_pow2`: the largest power of two `<= n`, and 1 for 0.
pub fn last_pow2(n: u64) -> u64 {
    if n == 0 {
        1
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// Every choice `setReduceConfig` made for one launch, with the numbers it
/// compared, so that [`super::ReducePlan`]'s `Display` can say *why*.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decisions {
    /// `reduction_on_fastest_striding_dimension`: lanes walk the reduced dim.
    pub reduction_on_fastest_striding_dimension: bool,
    /// Input byte stride of dim 0 (the fastest reduced dim).
    pub reduced_stride: i64,
    /// Input byte stride of the first output dim (`None` for a full reduction).
    pub output_dim_stride: Option<i64>,
    /// `fastest_moving_stride`, in bytes.
    pub fastest_moving_stride: i64,
    /// `dim0` before vectorization divided it (the lane dim's extent).
    pub dim0: u64,
    /// `dim1` (the warp dim's extent bound).
    pub dim1: u64,
    /// `values_per_thread()` when the warp split was decided.
    pub values_per_thread_at_warp_split: u32,
    /// `warp_split_threshold = min(block_height * 16, 256)`.
    pub warp_split_threshold: u32,
    /// `values_per_thread()` when the CTA split was decided.
    pub values_per_thread_at_cta_split: u32,
    /// `grid().x` before any CTA split.
    pub grid_x: u32,
    /// `target_grid_size = sm_count * (max_threads_per_sm / num_threads)`.
    pub target_grid_size: u32,
    /// `ctas_per_output1..3` when a CTA split was considered.
    pub ctas_candidates: Option<[u32; 3]>,
}

impl ReduceConfig {
    /// `ReduceConfig(element_size_bytes, num_outputs, num_inputs)`: one
    /// thread per output doing all its inputs, before any split.
    pub fn new(
        element_size_bytes: u32,
        num_outputs: u32,
        num_inputs: u32,
        signature: &Signature,
        warp_size: u32,
    ) -> ReduceConfig {
        ReduceConfig {
            element_size_bytes,
            num_inputs,
            num_outputs,
            step_input: 1,
            step_output: 1,
            ctas_per_output: 1,
            input_mult: [0; 3],
            output_mult: [0; 2],
            block_width: 1,
            block_height: 1,
            num_threads: 1,
            vectorize_input: false,
            output_vec_size: 1,
            input_vec_size: signature.input_vec_size,
            vt0: signature.vt0,
            warp_size,
            max_num_threads: signature.max_num_threads,
            lanes_per_row: 0,
            row_vec_size: 0,
            rows_per_thread: 1,
            stage_rows: false,
            ragged_rows: false,
            ragged_columns: false,
        }
    }

    /// `set_block_dimension<T>(dim0, dim1)`: a power-of-two block of at most
    /// `max_num_threads / output_vec_size` threads. Width first takes up to a
    /// warp, height then takes what dim1 can use, and width finally grows
    /// into whatever height left over (so a full reduction gets 512 x 1).
    pub fn set_block_dimension(&mut self, dim0: u64, dim1: u64) {
        let max_num_threads = u64::from(self.max_num_threads / self.output_vec_size);
        let dim0_pow2 = if dim0 < max_num_threads {
            last_pow2(dim0)
        } else {
            max_num_threads
        };
        let dim1_pow2 = if dim1 < max_num_threads {
            last_pow2(dim1)
        } else {
            max_num_threads
        };
        let block_width = dim0_pow2.min(u64::from(self.warp_size));
        let block_height = dim1_pow2.min(max_num_threads / block_width);
        let block_width = dim0_pow2.min(max_num_threads / block_height);
        self.block_width = block_width as u32;
        self.block_height = block_height as u32;
        self.num_threads = self.block_width * self.block_height;
    }

    /// `split_input(parallelism)`: the next `parallelism` threads (or CTAs)
    /// take interleaved inputs; returns their index multiplier.
    pub fn split_input(&mut self, parallelism: u32) -> u32 {
        let step = self.step_input;
        self.step_input *= parallelism;
        step
    }

    /// `split_output(parallelism)`: the next `parallelism` threads take
    /// separate outputs; returns their index multiplier.
    pub fn split_output(&mut self, parallelism: u32) -> u32 {
        let step = self.step_output;
        self.step_output *= parallelism;
        step
    }

    /// `block()`: `(block_width, block_height, 1)`.
    pub fn block(&self) -> [u32; 3] {
        [self.block_width, self.block_height, 1]
    }

    /// `grid()`: one CTA column per `step_output` output vectors (times
    /// `rows_per_thread`, 1 in PyTorch's config), and `ctas_per_output` CTAs
    /// along y sharing each. The vectors are rounded up: PyTorch's divide
    /// the outputs, a [`ragged_columns`](Self::ragged_columns) plan's last
    /// one may run past them.
    pub fn grid(&self) -> [u32; 3] {
        let x = div_up(
            div_up(
                u64::from(self.num_outputs),
                u64::from(self.output_vec_size.max(1)),
            ),
            u64::from(self.step_output) * u64::from(self.rows_per_thread),
        );
        [x as u32, self.ctas_per_output, 1]
    }

    /// `should_block_x_reduce()`: lanes of a warp share outputs.
    pub fn should_block_x_reduce(&self) -> bool {
        self.input_mult[BLOCK_X] != 0
    }

    /// `should_block_y_reduce()`: warps of a block share outputs.
    pub fn should_block_y_reduce(&self) -> bool {
        self.input_mult[BLOCK_Y] != 0
    }

    /// `should_global_reduce()`: CTAs share outputs (staging + semaphores).
    pub fn should_global_reduce(&self) -> bool {
        self.input_mult[CTA] != 0
    }

    /// Whether `reduce_kernel` lanes wider than PyTorch's
    /// ([`PYTORCH_MAX_OUTPUT_VEC_SIZE`]) would share their outputs with
    /// other threads or CTAs. Their kernels have no block or global reduce
    /// compiled in (the registers those paths hold are what their loads
    /// need), so such a plan is refused before it launches.
    pub fn wide_lanes_share_outputs(&self) -> bool {
        self.lanes_per_row == 0
            && self.output_vec_size > PYTORCH_MAX_OUTPUT_VEC_SIZE
            && (self.should_block_x_reduce()
                || self.should_block_y_reduce()
                || self.should_global_reduce())
    }

    /// Whether [`Strategy::ShortRows`] reads several whole rows with a
    /// lane's one load ([`ShortRows::rows_per_vector`] > 1): the lane's
    /// `output_vec_size` outputs are those rows' results, and
    /// `packed_rows_kernel` runs the launch.
    ///
    /// [`Strategy::ShortRows`]: super::Strategy::ShortRows
    /// [`ShortRows::rows_per_vector`]: super::ShortRows::rows_per_vector
    pub fn packed_rows(&self) -> bool {
        self.lanes_per_row != 0 && self.output_vec_size > 1
    }

    /// Whether a ShortRows launch runs `short_rows_kernel`'s `wide_loads`
    /// instantiation: its rows are read in whole vectors of the module's
    /// `input_vec_size`, at least [`SHORT_ROWS_WIDE_VEC_SIZE`] inputs each
    /// (neither packed, staged nor ragged), and it has the register budget
    /// of [`SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM`] blocks.
    ///
    /// [`SHORT_ROWS_WIDE_VEC_SIZE`]: super::SHORT_ROWS_WIDE_VEC_SIZE
    /// [`SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM`]: super::SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM
    pub fn wide_loads(&self) -> bool {
        self.lanes_per_row != 0
            && !self.packed_rows()
            && !self.stage_rows
            && !self.ragged_rows
            && super::has_wide_loads(self.input_vec_size)
            && self.row_vec_size == self.input_vec_size
    }

    /// `should_store(output_idx)`: the one thread of each reduction group
    /// that writes the result.
    pub fn should_store(&self, output_idx: u32, thread_idx: [u32; 3]) -> bool {
        output_idx < self.num_outputs
            && (!self.should_block_x_reduce() || thread_idx[0] == 0)
            && (!self.should_block_y_reduce() || thread_idx[1] == 0)
    }

    /// `should_reduce_tail()`: whether this thread reduces the unaligned head
    /// and the tail of a vectorized input row. Only one warp row of one CTA
    /// per output does, or they would be counted several times.
    pub fn should_reduce_tail(&self, thread_idx: [u32; 3], block_idx: [u32; 3]) -> bool {
        (!self.should_block_y_reduce() || thread_idx[1] == 0)
            && (!self.should_global_reduce() || block_idx[1] == 0)
    }

    /// `input_idx()`: the first reduction index this thread reads; it then
    /// advances by `step_input` (scaled by `input_vec_size` on the
    /// vectorized path).
    pub fn input_idx(&self, thread_idx: [u32; 3], block_idx: [u32; 3]) -> u32 {
        thread_idx[0] * self.input_mult[BLOCK_X]
            + thread_idx[1] * self.input_mult[BLOCK_Y]
            + block_idx[1] * self.input_mult[CTA]
    }

    /// `output_idx<output_vec_size>()`: the first of the `output_vec_size`
    /// consecutive outputs this thread produces.
    pub fn output_idx(&self, thread_idx: [u32; 3], block_idx: [u32; 3]) -> u32 {
        (thread_idx[0] * self.output_mult[BLOCK_X]
            + thread_idx[1] * self.output_mult[BLOCK_Y]
            + block_idx[0] * self.step_output)
            * self.output_vec_size
    }

    /// `shared_memory_offset(offset)`: the slot (in `arg_t x output_vec_size`
    /// units) of the thread `offset` rows below this one.
    pub fn shared_memory_offset(&self, offset: u32, thread_idx: [u32; 3]) -> u32 {
        thread_idx[0] + (thread_idx[1] + offset) * self.block_width
    }

    /// `staging_memory_offset(cta2)`: the staging slot (in `arg_t x
    /// output_vec_size` units) of CTA row `cta2` for this thread's column.
    /// Slots of one output group are contiguous, `ctas_per_output` of them,
    /// times `block.x` lanes when the lanes hold separate outputs.
    pub fn staging_memory_offset(
        &self,
        cta2: u32,
        thread_idx: [u32; 3],
        block_idx: [u32; 3],
    ) -> u32 {
        let offset = cta2 + block_idx[0] * self.grid()[1];
        if self.should_block_x_reduce() {
            offset
        } else {
            thread_idx[0] + offset * self.block_width
        }
    }

    /// `shared_memory_size()`: dynamic shared memory in bytes, needed only
    /// for the block_y reduction or a block_x reduction wider than a warp.
    pub fn shared_memory_size(&self) -> u32 {
        if !self.should_block_y_reduce()
            && (!self.should_block_x_reduce() || self.block_width <= self.warp_size)
        {
            return 0;
        }
        self.element_size_bytes * self.num_threads * self.output_vec_size
    }

    /// `global_memory_size()`: bytes of the staging buffer for the CTA split.
    pub fn global_memory_size(&self) -> u64 {
        if !self.should_global_reduce() {
            return 0;
        }
        let mut size = u64::from(self.element_size_bytes)
            * u64::from(self.num_outputs)
            * u64::from(self.ctas_per_output);
        if !self.should_block_x_reduce() {
            size *= u64::from(self.block_width) * u64::from(self.output_vec_size);
        }
        size
    }

    /// Bytes of staging the kernel actually addresses: one slot of
    /// `output_vec_size` accumulators per `staging_memory_offset`, that is
    /// grid.x × grid.y CTAs, times block.x when lanes keep separate outputs.
    /// PyTorch allocates [`Self::global_memory_size`] instead, which counts
    /// every output times every CTA and can be far larger (128 MiB where
    /// this needs kilobytes); it comes from a caching allocator there, but
    /// here it is device memory held by the workspace.
    pub fn staging_size(&self) -> u64 {
        if !self.should_global_reduce() {
            return 0;
        }
        let [gx, gy, _] = self.grid();
        let lanes = if self.should_block_x_reduce() {
            1
        } else {
            self.block_width
        };
        u64::from(self.element_size_bytes)
            * u64::from(self.output_vec_size)
            * u64::from(gx)
            * u64::from(gy)
            * u64::from(lanes)
    }

    /// `semaphore_size()`: one `int` per CTA column (the count of CTAs done).
    pub fn semaphore_size(&self) -> u64 {
        if !self.should_global_reduce() {
            return 0;
        }
        4 * u64::from(self.grid()[0])
    }

    /// `values_per_thread()`: inputs each thread reduces (rounded up).
    pub fn values_per_thread(&self) -> u32 {
        div_up(u64::from(self.num_inputs), u64::from(self.step_input)) as u32
    }

    /// The `nt` template argument of `reduce_kernel` (its launch bound):
    /// `max_num_threads / output_vec_size`.
    pub fn nt(&self) -> u32 {
        self.max_num_threads / self.output_vec_size
    }
}

/// `target_grid_size`: the CTAs of `num_threads` threads the device holds
/// at once by its thread limit, `sm_count * (max_threads_per_sm /
/// num_threads)`.
pub fn target_grid_size(props: &DeviceProps, num_threads: u32) -> u32 {
    props.sm_count * (props.max_threads_per_sm / num_threads.max(1))
}

/// `get_output_vec_size<scalar_t>(iter)`: 4, halved until it divides the
/// input's address in elements, the first output dim's size and every other
/// input stride in elements. The address is taken as the iterator's input
/// byte offset from a 256-byte-aligned storage base, so a view that starts
/// mid-vector (e.g. `narrow` by one element) loses output vectorization.
pub fn get_output_vec_size(iter: &TensorIterator, scalar_size: u64) -> u32 {
    output_vec_size_up_to(iter, scalar_size, PYTORCH_MAX_OUTPUT_VEC_SIZE)
}

/// The most outputs a lane takes in PyTorch's plan: where
/// `get_output_vec_size` starts, and the widest `reduce_kernel` its host
/// switches over (`kPyTorchMaxOutputVecSize` in the kernels, checked equal
/// in the generated source).
pub const PYTORCH_MAX_OUTPUT_VEC_SIZE: u32 = 4;

/// [`get_output_vec_size`] starting from `max_vec_size` (a power of two)
/// instead of PyTorch's 4: the widest output vector that divides the same
/// address, size and strides.
pub(super) fn output_vec_size_up_to(
    iter: &TensorIterator,
    scalar_size: u64,
    max_vec_size: u32,
) -> u32 {
    let mut vec_size = u64::from(max_vec_size.max(1));
    let mut update_vec_size = |n: u64| {
        while n % vec_size != 0 {
            vec_size /= 2;
        }
    };
    update_vec_size(iter.data_offset(TensorIterator::INPUT) / scalar_size);
    let output_index = iter.num_reduce_dims();
    update_vec_size(iter.shape()[output_index] as u64);
    for (j, &stride) in iter.strides(TensorIterator::INPUT).iter().enumerate() {
        if j != output_index {
            update_vec_size(stride.unsigned_abs() / scalar_size);
        }
    }
    vec_size as u32
}

/// `setReduceConfig<arg_t, scalar_t, vt0, input_vec_size>(iter)`, for an
/// iterator that is 32-bit indexable and not empty.
pub fn set_reduce_config(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
) -> (ReduceConfig, Decisions) {
    reduce_config(iter, signature, props, Loads::PYTORCH)
}

/// `setReduceConfig` with its vectorised loads open to several reduced
/// dims (PyTorch takes them with one reduced dim only): the config of
/// [`super::Strategy::VectorizedDims`], for an iterator that
/// `vectorizable_dims` accepted. Every other decision is the port's.
pub(super) fn set_reduce_config_vectorizing_dims(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
) -> ReduceConfig {
    let loads = Loads {
        several_reduced_dims: true,
        ..Loads::PYTORCH
    };
    reduce_config(iter, signature, props, loads).0
}

/// `setReduceConfig` with at most `max_output_vec_size` outputs a lane
/// where it vectorises along the output: the config of
/// [`super::Strategy::TallColumns`] (fewer than PyTorch's 4) and of
/// [`super::Strategy::ShortColumns`] (more). Every other decision is the
/// port's, made on those vectors (so the block, the grid and the CTA split
/// follow from them).
pub(super) fn set_reduce_config_with_output_vec(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    max_output_vec_size: u32,
) -> ReduceConfig {
    let loads = Loads {
        max_output_vec_size,
        ..Loads::PYTORCH
    };
    reduce_config(iter, signature, props, loads).0
}

/// `setReduceConfig` with [`max_output_vec_size`](super::max_output_vec_size)
/// outputs a lane whatever the layout's alignment, read as the aligned
/// vectors around them: the config of [`super::Strategy::RaggedColumns`],
/// for an iterator of one contiguous kept dim. Every other decision is the
/// port's on the wider vectors.
pub(super) fn set_reduce_config_ragged_columns(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
) -> ReduceConfig {
    let loads = Loads {
        max_output_vec_size: super::max_output_vec_size(signature),
        ragged_columns: true,
        ..Loads::PYTORCH
    };
    reduce_config(iter, signature, props, loads).0
}

/// What `setReduceConfig` may vectorise: PyTorch's rules, or a strategy's
/// variation on them.
#[derive(Clone, Copy)]
struct Loads {
    /// Vector loads along the fastest reduced dim even when several dims
    /// are reduced.
    several_reduced_dims: bool,
    /// Where `get_output_vec_size` starts (a power of two: PyTorch's 4, or
    /// a strategy's narrower or wider vectors).
    max_output_vec_size: u32,
    /// Output vectors of `max_output_vec_size` whatever the alignment, the
    /// last one rounded up past the outputs.
    ragged_columns: bool,
}

impl Loads {
    const PYTORCH: Loads = Loads {
        several_reduced_dims: false,
        max_output_vec_size: PYTORCH_MAX_OUTPUT_VEC_SIZE,
        ragged_columns: false,
    };
}

fn reduce_config(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    loads: Loads,
) -> (ReduceConfig, Decisions) {
    let num_outputs = iter.num_output_elements() as u64;
    let inputs_per_output = iter.numel() as u64 / num_outputs;
    let scalar_size = signature.input.size_in_bytes() as i64;
    let mut config = ReduceConfig::new(
        signature.acc.size_in_bytes() as u32,
        num_outputs as u32,
        inputs_per_output as u32,
        signature,
        props.warp_size,
    );
    let in_strides = iter.strides(TensorIterator::INPUT);
    let nrd = iter.num_reduce_dims();

    // block.x goes to the input's fastest-moving dim for the best coalescing
    // a strided tensor allows; dim0/dim1 only bound the block, the mults
    // below decide what each thread does.
    let (reduction_on_fastest_striding_dimension, mut dim0, dim1, fastest_moving_stride) =
        if iter.ndim() > 0 {
            let on_fastest = nrd == iter.ndim() || in_strides[0] < in_strides[nrd];
            if on_fastest {
                (true, inputs_per_output, num_outputs, in_strides[0])
            } else {
                (false, num_outputs, inputs_per_output, in_strides[nrd])
            }
        } else {
            (true, 1, 1, scalar_size)
        };
    let decided_dim0 = dim0;

    // Loads only: a lane's vector holds inputs of one output ("along
    // input") or one input of consecutive outputs ("along output").
    if fastest_moving_stride == scalar_size {
        // PyTorch vectorises rows of 128 inputs or more. A row must also
        // hold input_vec_size vectors: a lane each reads the up to
        // input_vec_size - 1 inputs of an unaligned head and of the tail, so
        // the block must be that wide. PyTorch's widths (at most 8) always
        // are at 128 inputs; the 16-wide loads of byte sums need 256.
        let vec = u64::from(config.input_vec_size);
        if reduction_on_fastest_striding_dimension
            && dim0 >= 128.max(vec * vec)
            && (nrd == 1 || loads.several_reduced_dims)
        {
            config.vectorize_input = true;
            dim0 /= u64::from(config.input_vec_size);
        } else if !reduction_on_fastest_striding_dimension && loads.ragged_columns {
            config.output_vec_size = loads.max_output_vec_size;
            config.ragged_columns = true;
            dim0 = div_up(dim0, u64::from(config.output_vec_size));
        } else if !reduction_on_fastest_striding_dimension {
            config.output_vec_size =
                output_vec_size_up_to(iter, scalar_size as u64, loads.max_output_vec_size);
            dim0 /= u64::from(config.output_vec_size);
        }
    }

    config.set_block_dimension(dim0, dim1);
    let (block_width, block_height) = (config.block_width, config.block_height);

    if iter.ndim() == 0 || reduction_on_fastest_striding_dimension {
        // Lanes share an output: warp shuffles (and shared memory past a warp).
        config.input_mult[BLOCK_X] = config.split_input(block_width);
    } else {
        config.output_mult[BLOCK_X] = config.split_output(block_width);
    }

    let warp_split_threshold = (block_height * 16).min(MAX_VALUES_PER_THREAD);
    let values_per_thread_at_warp_split = config.values_per_thread();
    if values_per_thread_at_warp_split >= warp_split_threshold {
        // Enough work left for >= 16 values per thread: warps share outputs
        // through shared memory.
        config.input_mult[BLOCK_Y] = config.split_input(block_height);
    } else {
        config.output_mult[BLOCK_Y] = config.split_output(block_height);
    }

    let target_grid_size = target_grid_size(props, config.num_threads);
    let grid_x = config.grid()[0];
    let values_per_thread_at_cta_split = config.values_per_thread();
    let mut ctas_candidates = None;
    if config.input_mult[BLOCK_Y] != 0
        && values_per_thread_at_cta_split >= MAX_VALUES_PER_THREAD
        && grid_x <= target_grid_size
    {
        // Few outputs, much work each: CTAs share outputs through global
        // memory. Enough CTAs to fill the GPU, but keep each thread busy.
        let vpt = u64::from(values_per_thread_at_cta_split);
        let ctas_per_output1 = div_up(u64::from(target_grid_size), u64::from(grid_x)) as u32;
        let ctas_per_output2 = div_up(vpt, u64::from(MIN_VALUES_PER_THREAD)) as u32;
        let ctas_per_output3 = div_up(vpt, u64::from(MAX_VALUES_PER_THREAD)) as u32;
        ctas_candidates = Some([ctas_per_output1, ctas_per_output2, ctas_per_output3]);
        config.ctas_per_output = ctas_per_output1.min(ctas_per_output2).max(ctas_per_output3);
        if config.ctas_per_output > 1 {
            config.input_mult[CTA] = config.split_input(config.ctas_per_output);
        }
    }

    let decisions = Decisions {
        reduction_on_fastest_striding_dimension,
        reduced_stride: in_strides.first().copied().unwrap_or(scalar_size),
        output_dim_stride: (nrd < iter.ndim()).then(|| in_strides[nrd]),
        fastest_moving_stride,
        dim0: decided_dim0,
        dim1,
        values_per_thread_at_warp_split,
        warp_split_threshold,
        values_per_thread_at_cta_split,
        grid_x,
        target_grid_size,
        ctas_candidates,
    };
    (config, decisions)
}
