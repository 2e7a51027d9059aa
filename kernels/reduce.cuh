// PyTorch's reduction kernel (aten/src/ATen/native/cuda/Reduce.cuh):
// ReduceConfig's device side, ReduceOp::run and reduce_kernel.
//
// One launch reduces `num_inputs` inputs into each of `num_outputs` outputs.
// block.x, block.y and grid.y each either split the inputs of one output
// (input_mult != 0) or take different outputs (output_mult != 0); the host's
// setReduceConfig decides. Partial results then meet in three stages:
// block_y_reduce (shared memory), block_x_reduce (shared memory down to a
// warp, then shuffles) and global_reduce (a staging buffer in global memory
// and a per-output semaphore; the last CTA to arrive combines the partials).
//
// Every stage combines in an order fixed by the launch shape alone, and no
// float is ever added atomically, so a run is bitwise reproducible.
#pragma once

namespace tr {

// The most outputs a lane takes in PyTorch's plan (get_output_vec_size's
// 4); wider lanes are the ShortColumns strategy's.
constexpr int kPyTorchMaxOutputVecSize = 4;

// PyTorch's ReduceConfig, the fields the kernel reads. The host mirrors this
// struct (#[repr(C)]) and passes it inside ReduceArgs.
struct ReduceConfig {
  static constexpr int BLOCK_X = 0;
  static constexpr int BLOCK_Y = 1;
  static constexpr int CTA = 2;

  uint32_t element_size_bytes;
  uint32_t num_inputs;
  uint32_t num_outputs;
  uint32_t step_input;
  uint32_t step_output;
  uint32_t ctas_per_output;
  uint32_t input_mult[3];
  uint32_t output_mult[2];
  uint32_t block_width;
  uint32_t block_height;
  uint32_t num_threads;
  uint32_t vectorize_input;
  uint32_t output_vec_size;
  uint32_t input_vec_size;
  uint32_t vt0;
  // The ShortRows strategy (0 lanes_per_row: PyTorch's paths above): see
  // ReduceOp::short_rows.
  uint32_t lanes_per_row;
  uint32_t row_vec_size;
  uint32_t rows_per_thread;
  uint32_t stage_rows;
  uint32_t ragged_rows;

  __device__ __forceinline__ bool should_block_x_reduce() const { return input_mult[BLOCK_X] != 0; }
  __device__ __forceinline__ bool should_block_y_reduce() const { return input_mult[BLOCK_Y] != 0; }
  __device__ __forceinline__ bool should_global_reduce() const { return input_mult[CTA] != 0; }

  __device__ __forceinline__ bool should_store(uint32_t output_idx) const {
    return output_idx < num_outputs && (!should_block_x_reduce() || threadIdx.x == 0) &&
           (!should_block_y_reduce() || threadIdx.y == 0);
  }

  // How many of the output_vec_size outputs from output_idx (which
  // should_store found below num_outputs) exist: all of them in PyTorch's
  // plan, whose vectors divide the outputs; fewer in a RaggedColumns
  // plan's last vector. A constant in every other kernel, so their stores
  // compile as if the question were never asked.
  template <int output_vec_size, bool ragged_columns>
  __device__ __forceinline__ uint32_t live_outputs(uint32_t output_idx) const {
    if constexpr (ragged_columns) {
      return min((uint32_t)output_vec_size, num_outputs - output_idx);
    } else {
      return output_vec_size;
    }
  }

  // Elements outside the vectorised main loop (misaligned head, tail) are
  // read once per output: by one row of the block and by one CTA.
  __device__ __forceinline__ bool should_reduce_tail() const {
    return (!should_block_y_reduce() || threadIdx.y == 0) && (!should_global_reduce() || blockIdx.y == 0);
  }

  __device__ __forceinline__ uint32_t input_idx() const {
    return threadIdx.x * input_mult[BLOCK_X] + threadIdx.y * input_mult[BLOCK_Y] + blockIdx.y * input_mult[CTA];
  }

  template <int output_vec_size>
  __device__ __forceinline__ uint32_t output_idx() const {
    return (threadIdx.x * output_mult[BLOCK_X] + threadIdx.y * output_mult[BLOCK_Y] + blockIdx.x * step_output) *
           output_vec_size;
  }

  __device__ __forceinline__ uint32_t shared_memory_offset(uint32_t offset) const {
    return threadIdx.x + (threadIdx.y + offset) * blockDim.x;
  }

  __device__ __forceinline__ uint32_t staging_memory_offset(uint32_t cta2) const {
    uint32_t offset = cta2 + blockIdx.x * gridDim.y;
    if (!should_block_x_reduce()) {
      offset = threadIdx.x + offset * blockDim.x;
    }
    return offset;
  }
};

// Everything one launch needs, passed by value as the kernel's only
// parameter: no per-call upload of shapes or strides. Pointers are 64-bit
// integers so the host's #[repr(C)] mirror has no pointer types to guess at.
template <typename index_t>
struct ReduceArgs {
  ReduceConfig config;
  OffsetCalculator<1, index_t> input_calc;   // reduced dims, input strides
  OffsetCalculator<2, index_t> output_calc;  // output dims, [output, input] strides
  uint64_t src;
  uint64_t src_end;  // one past the input allocation's last byte
  uint64_t dst[2];
  uint64_t acc_buf;     // arg_t per output, when the output cannot accumulate
  uint64_t cta_buf;     // staging for global_reduce
  uint64_t semaphores;  // one uint32 per grid.x, 0 between launches
  int64_t base_idx;
  OpParams op_params;
  uint32_t accumulate;
  uint32_t final_output;
  uint32_t noutputs;
  // Whether each lane's output_vec_size outputs lie end to end from an
  // address aligned to all of them (the host's contiguous_output_vectors):
  // then one offset is looked up instead of output_vec_size, and a final
  // result is stored as one vector.
  uint32_t contiguous_outputs;
};

// The ShortRows strategy's launch shape, each the host's constant of the
// same meaning (SHORT_ROWS_MAX_ROWS_PER_THREAD,
// SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD, SHORT_ROWS_THREADS,
// SHORT_ROWS_MIN_BLOCKS_PER_SM, SHORT_ROWS_STAGE_ALIGN), checked equal
// below: the most rows one thread takes (its loads in flight), the same for
// rows looked up one by one (short_rows_kernel<one_dim=false>), the most
// threads per block, the blocks per SM its register budget is set for, and
// the bytes of one copy of staged rows (and their spans' alignment).
constexpr int kMaxRowsPerThread = 8;
constexpr int kMaxLookedUpRowsPerThread = 4;
// The widest accumulator (sizeof(arg_t)) whose one-dim rows take
// kMaxRowsPerThread a thread; wider ones (8-byte sums, max and min,
// logsumexp's pairs, index pairs, Welford state), whose eight rows'
// state beside eight loads spilled, take kMaxLookedUpRowsPerThread:
// SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES.
constexpr int kEightRowsMaxStateBytes = 4;
constexpr int kShortRowsThreads = 64;
constexpr int kShortRowsMinBlocksPerSm = 16;
constexpr int kShortRowsStageAlign = 16;
// short_rows_kernel's wide_loads instantiation, for rows read in whole
// vectors of kShortRowsWideVecSize inputs or more (sums and means of 16-bit
// inputs: 8 f32 values out of each 16-byte load), has the budget of
// kShortRowsWideMinBlocksPerSm blocks: the host's SHORT_ROWS_WIDE_VEC_SIZE
// and SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM (see there for the measurements).
constexpr int kShortRowsWideVecSize = 8;
constexpr int kShortRowsWideMinBlocksPerSm = 12;
// The most output bytes a packed_rows_kernel lane's rows produce from one
// load: the host's PACKED_ROWS_MAX_RESULT_BYTES, which caps the rows it
// packs a load (see there for why). Only such groups are compiled.
constexpr int kPackedRowsMaxResultBytes = 16;

// reduce_kernel's register budget. PyTorch budgets 4 resident blocks per SM
// (C10_LAUNCH_BOUNDS_2(nt, 4)), which leaves 32 registers a thread at 512
// threads. Two cases get fewer blocks and more registers:
//
// - Where the accumulators the vectorized path holds (input_vec_size of
//   them) take 64 bytes or more (index pairs, and f64 Welford, logsumexp or
//   aminmax state), they and one vector load do not fit in 32: argmax of
//   f32 spilled a 72-byte stack frame, of f64 200 bytes, and ran at 37% and
//   15% of the read ceiling. Such kernels get half the resident blocks and
//   twice the registers (argmax then reaches 85%). Smaller spills cost less
//   than half the occupancy: f32 Welford (two 16-byte accumulators, a
//   48-byte frame) ran 17% slower on 64 registers, so it keeps PyTorch's
//   budget.
// - Where 32 registers hold fewer than kMinLoadsInFlight vector loads
//   beside the accumulators (8-byte inputs into 8-byte accumulators: sum
//   or amax of f64 and i64, whose 32 bytes of accumulators and one
//   32-byte load fill the budget), the kernel gets the most blocks that
//   hold two. With one load in flight a thread, f64 and i64 rows of 4096
//   to 65536 read at 79-83% of the read ceiling on an H100; at 3 blocks
//   (40 registers, two loads) they ran 4-11% faster, as fast as at 2 blocks
//   (56 registers, four loads), and spilled nothing (12 bytes before).
constexpr int kRegistersPerSm = 65536;
constexpr int kWideAccumulatorBytes = 64;
constexpr int kWideAccumulatorRegisters = 64;
constexpr int kMinLoadsInFlight = 2;
// Registers a thread keeps for indices, addresses and the functor's
// temporaries, beside its loads and accumulators.
constexpr int kReservedRegisters = 12;

// Lanes of two outputs (output_vec_size 2: columns, mostly the TallColumns
// strategy's) of 4-byte accumulators and inputs of at most 4 bytes are
// budgeted for a full SM: kFullSmRegisters, what each of 2048 resident
// threads has. PyTorch's plan counts its waves (target_grid_size) in CTAs
// of a full SM; at PyTorch's budget the f32 kernel took 40 registers, 6
// blocks of 256 threads an SM, and a grid planned as one wave ran as 1.33
// (our planner now counts a wave by the kernel's registers, but a wave of
// 6 blocks keeps fewer bytes in flight than one of 8): f32 columns of 16384
// and 65536 rows and NHWC channel statistics read at 75-83% of an H200's
// read ceiling (docs/performance-history.md has them on a full SM). To fit, such a
// lane folds its loads into one set of accumulators rather than vt0 (its
// loads are still all in flight before any is reduced): with vt0 sets f32
// sum spilled 12 bytes a thread, and columns short enough that each lane
// reads them alone ran 7% slower than at PyTorch's budget; with two sets
// bf16 amax still spilled 24. Wider accumulators or inputs (f64, i64, index
// pairs, Welford state, integer sums into i64) spilled 4 to 400 bytes even
// with one set, and keep PyTorch's budget.
constexpr int kFullSmRegisters = 32;

// Lanes of PyTorch's 4 outputs (columns) of an op whose result is the same
// in any order (AnyOrder: the index ops) and of inputs of at most 4 bytes
// fold their loads into one set of accumulators and are budgeted
// kAnyOrderColumnsRegisters, 6 blocks of 128 threads an SM. On PyTorch's
// budget (4 blocks) argmax's reduce_kernel<128, 4> took 87 registers of
// f32 and f16, 5 blocks an SM, and read 16-bit columns at 32-36% of the
// read ceiling: their four loads in flight a lane are 8 bytes each. On an
// H100 (two alternating rounds, argmax): f16 columns of 16 and 4096 rows
// ran 1.69x and 1.59x faster (266 and 251 us to 158), f32 columns of 128
// and 4096 rows 1.09x and 1.10x. At 64 registers (8 blocks, 96 bytes of
// spill stores a thread) f16 ran 1.65-1.79x faster but f32 columns of
// 4096 rows 0.97x. 8-byte inputs spill at 80 registers (168 bytes of
// stores for f64) and keep PyTorch's budget.
constexpr int kAnyOrderColumnsRegisters = 80;

// The vector loads of `load_bytes` that fit beside `accumulator_bytes` in
// the registers a thread of an `nt`-thread block has at `blocks` per SM.
__device__ constexpr int loads_that_fit(int nt, int blocks, int load_bytes, int accumulator_bytes) {
  return ((kRegistersPerSm / (nt * blocks) - kReservedRegisters) * 4 - accumulator_bytes) / load_bytes;
}

template <int nt, int load_bytes, int accumulator_bytes>
__device__ constexpr int reduce_min_blocks_per_sm() {
  constexpr int registers_at_4 = kRegistersPerSm / (nt * 4);
  if (accumulator_bytes >= kWideAccumulatorBytes && registers_at_4 < kWideAccumulatorRegisters) {
    return kRegistersPerSm / (nt * kWideAccumulatorRegisters);
  }
  int blocks = 4;
  while (blocks > 2 && loads_that_fit(nt, blocks, load_bytes, accumulator_bytes) < kMinLoadsInFlight) {
    blocks--;
  }
  return blocks;
}

// The loads a batched loop issues before reducing any, given how many fit
// its budget (`fit`): at least one, at most four. Both batched loops,
// input_vectorized_thread_reduce_impl's vector loads and combine_staged's
// staged partials, take this one rule.
__device__ constexpr int batch_of_loads(int fit) {
  return fit < 1 ? 1 : fit > 4 ? 4 : fit;
}

// The bytes of staged partials the last CTA of a global reduce loads before
// combining any (combine_staged): four of sum's 4-output f32 lanes, from
// one to four partials. ptxas gives a kernel the registers its hungriest
// path needs, so this fold, which only the last CTA of an output runs, set
// the occupancy of the whole kernel, main loop included, while it batched
// four partials of any size. Four 4-output lanes of f32 Welford state are
// 256 bytes: var's reduce_kernel<128, 4> took 114 registers where
// PyTorch's takes 59, and on an H100 ncu counted 0.53 eligible warps a
// scheduler against PyTorch's 1.33 on an f16 column (197.5 us against
// 183.3). The byte budget takes it to 64 registers, f64 Welford's from 128
// with 296 bytes of spill stores to 104 with none, argmax's from 80 (8
// bytes of spill stores) to 50.
constexpr int kStagedBatchBytes = 64;

// How many vector loads input_vectorized_thread_reduce_impl issues before
// reducing any: up to four, as many as fit beside the input_vec_size
// accumulators in the registers a thread has, and at least one. Spilling
// the batch to local memory costs far more than a shorter batch: at 32
// registers sum of f32 (16 bytes of accumulators, 16-byte loads) keeps
// four loads; at 40 registers f64 sum (32 and 32) keeps two; at 64
// registers argmax of f32 (64 bytes of index pairs) keeps four.
template <int nt, int min_blocks_per_sm, int load_bytes, int accumulator_bytes>
__device__ constexpr int vectorized_loads_in_flight() {
  return batch_of_loads(loads_that_fit(nt, min_blocks_per_sm, load_bytes, accumulator_bytes));
}

// A 16-byte copy from global into shared memory that holds no register
// while in flight (cp.async, from sm_80); older GPUs copy through registers.
// Both addresses are 16-byte aligned.
__device__ __forceinline__ void copy_16_bytes_async(void* shared, const void* global) {
#if __CUDA_ARCH__ >= 800
  const uint32_t address = (uint32_t)__cvta_generic_to_shared(shared);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global));
#else
  *reinterpret_cast<aligned_vector<uint32_t, 4>*>(shared) = *reinterpret_cast<const aligned_vector<uint32_t, 4>*>(global);
#endif
}

// Waits for this thread's copy_16_bytes_async copies.
__device__ __forceinline__ void wait_async_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::);
#endif
}

// host_sums_bytes is the host's Signature::sums_bytes for this module: the
// host sizes byte sums' loads by that rule (BYTE_SUM_INPUT_VEC_SIZE) and the
// kernel adds their bytes by its ByteSum trait, so the two must agree.
template <typename scalar_t, typename ops_t, typename index_t, typename out_scalar_t, int vt0, int input_vec_size,
          bool host_sums_bytes>
struct ReduceOp {
  static_assert(host_sums_bytes == ByteSum<ops_t, scalar_t>::value,
                "ByteSum (kernels/ops.cuh) differs from Signature::sums_bytes (src/reduce/op.rs)");
  using arg_t = typename ops_t::arg_t;
  template <int nt>
  static constexpr int min_blocks_per_sm() {
    return reduce_min_blocks_per_sm<nt, input_vec_size * sizeof(scalar_t), vectorized_accumulator_bytes()>();
  }
  // The bytes of the accumulators input_vectorized_thread_reduce_impl
  // holds: one a vector lane, or one in all where the op adds a load's
  // bytes as one partial sum (sums_bytes, below).
  static constexpr int vectorized_accumulator_bytes() {
    return (sums_bytes(input_vec_size) ? 1 : input_vec_size) * (int)sizeof(arg_t);
  }
  // Whether lanes of output_vec_size outputs take a full SM's budget
  // (kFullSmRegisters, above) and fold into one set of accumulators.
  template <int output_vec_size>
  static constexpr bool pair_lanes_fill_sm() {
    return output_vec_size == 2 && sizeof(scalar_t) <= 4 && sizeof(arg_t) <= 4;
  }
  // Whether lanes of output_vec_size outputs fold into one set of
  // accumulators and take kAnyOrderColumnsRegisters (see there).
  template <int output_vec_size>
  static constexpr bool any_order_lanes() {
    return output_vec_size == kPyTorchMaxOutputVecSize && sizeof(scalar_t) <= 4 && AnyOrder<ops_t>::value;
  }
  // How many staged partials combine_staged loads before combining any:
  // as many as fit in kStagedBatchBytes, from one to four.
  template <int output_vec_size>
  static constexpr uint32_t staged_loads_in_flight() {
    return batch_of_loads(kStagedBatchBytes / (int)sizeof(Array<arg_t, output_vec_size>));
  }
  using InputCalculator = OffsetCalculator<1, index_t>;
  using OutputCalculator = OffsetCalculator<2, index_t>;

  // The only data member: ReduceOp has ReduceArgs' exact layout, so the host
  // fills ReduceArgs and the kernel receives it as a ReduceOp.
  ReduceArgs<index_t> args;

  __device__ __forceinline__ const ReduceConfig& config() const { return args.config; }
  __device__ __forceinline__ ops_t ops() const { return ops_t(args.op_params); }
  __device__ __forceinline__ arg_t ident() const { return ops_t::identity(); }


  // ragged_columns: the RaggedColumns strategy's instantiation
  // (load_ragged_columns), a kernel of its own so that the aligned kernels'
  // code does not change with it.
  template <int nt, int output_vec_size, bool ragged_columns>
  __device__ void run() const {
    // 8-byte aligned: holds Array<arg_t, output_vec_size> values.
    extern __shared__ uint64_t shared_memory_words[];
    char* shared_memory = reinterpret_cast<char*>(shared_memory_words);
    const ReduceConfig& config = this->config();
    index_t output_idx = config.template output_idx<output_vec_size>();
    index_t input_idx = config.input_idx();
    const Array<index_t, 2> base_offsets = args.output_calc.get(output_idx);
    index_t base_offsets1 = base_offsets[1];

    using arg_vec_t = Array<arg_t, output_vec_size>;
    arg_vec_t value;
#pragma unroll
    for (int i = 0; i < output_vec_size; i++) {
      value[i] = ident();
    }

    if (output_idx < config.num_outputs && input_idx < config.num_inputs) {
      const scalar_t* input_slice = reinterpret_cast<const scalar_t*>(args.src + base_offsets1);
      value = thread_reduce<nt, output_vec_size, ragged_columns>(input_slice);
    }

    // Lanes wider than PyTorch's (ShortColumns, RaggedColumns) reduce
    // their columns alone, which the host checks before launching
    // (LoadedKernel::function). Compiling the block and global reduces out
    // of them frees the registers those paths' shared-memory staging of
    // eight accumulators held: 64 a thread fell to 44-56 for most.
    constexpr bool shares_outputs = output_vec_size <= kPyTorchMaxOutputVecSize;
    if constexpr (shares_outputs) {
      if (config.should_block_y_reduce()) {
        value = block_y_reduce<output_vec_size>(value, shared_memory);
      }
      if (config.should_block_x_reduce()) {
        value = block_x_reduce<output_vec_size>(value, shared_memory);
      }
    }

    Array<out_scalar_t*, output_vec_size> out;
    Array<index_t, output_vec_size> out_elem;
    // Lanes of several outputs keep the output offset from the first
    // lookup: their threads are short, and a second lookup (a divmod chain
    // per kept dim) after the loads is latency their life is made of. Lanes
    // of one output look it up again: holding it through the loads made
    // the 512-thread kernel (32 registers) spill.
    index_t first_output;
    if constexpr (output_vec_size > 1) {
      first_output = base_offsets[0];
    } else {
      first_output = args.output_calc.get(output_idx)[0];
    }
    arg_vec_t* acc = output_slots<output_vec_size>(output_idx, first_output, out, out_elem);

    const uint32_t live = config.template live_outputs<output_vec_size, ragged_columns>(output_idx);
    if constexpr (shares_outputs) {
      if (config.should_global_reduce()) {
        global_reduce<output_vec_size>(value, acc, out, out_elem, output_idx, live, shared_memory);
        return;
      }
    }
    if (config.should_store(output_idx)) {
      store_output<output_vec_size>(value, acc, out, out_elem, live);
    }
  }

  // Where outputs output_idx .. output_idx + output_vec_size go (the
  // first at byte offset `first`): their pointers, their element positions
  // (where a second output, same layout in its own element size, is
  // written too), and their accumulation-buffer slot when the host passed
  // one (nullptr otherwise). The contiguous test is outside the loop: inside
  // it, ptxas kept a branch per output (8 in a row for lanes of 8, about a
  // tenth of the stall samples of f16 columns of 2 under ncu).
  template <int output_vec_size>
  __device__ __forceinline__ Array<arg_t, output_vec_size>* output_slots(
      index_t output_idx, index_t first, Array<out_scalar_t*, output_vec_size>& out,
      Array<index_t, output_vec_size>& out_elem) const {
    Array<index_t, output_vec_size> offsets;
    offsets[0] = first;
    if (args.contiguous_outputs) {
#pragma unroll
      for (int i = 1; i < output_vec_size; i++) {
        offsets[i] = first + (index_t)(i * sizeof(out_scalar_t));
      }
    } else {
#pragma unroll
      for (int i = 1; i < output_vec_size; i++) {
        offsets[i] = args.output_calc.get(output_idx + i)[0];
      }
    }
    return output_slots_at<output_vec_size>(offsets, out, out_elem);
  }

  // output_slots for outputs whose byte offsets are already known.
  template <int output_vec_size>
  __device__ __forceinline__ Array<arg_t, output_vec_size>* output_slots_at(
      const Array<index_t, output_vec_size>& offsets, Array<out_scalar_t*, output_vec_size>& out,
      Array<index_t, output_vec_size>& out_elem) const {
#pragma unroll
    for (int i = 0; i < output_vec_size; i++) {
      out[i] = reinterpret_cast<out_scalar_t*>(args.dst[0] + offsets[i]);
      out_elem[i] = offsets[i] / (index_t)sizeof(out_scalar_t);
    }
    if (args.acc_buf == 0) {
      return nullptr;
    }
    // The accumulation buffer mirrors the output's layout in arg_t units.
    return reinterpret_cast<Array<arg_t, output_vec_size>*>(
        args.acc_buf + (uint64_t)offsets[0] / sizeof(out_scalar_t) * sizeof(arg_t));
  }

  // The ShortRows strategy, for rows too short to keep PyTorch's lanes busy:
  // `lanes_per_row` lanes of a warp own one contiguous row, each loading one
  // `row_vec_size`-wide vector of it, so a warp covers 32 / lanes_per_row
  // neighbouring rows per load and reads them as one contiguous span when
  // the rows are. (Rows that no vector fits take a lane each and read it
  // scalar by scalar: a warp's first loads then fetch all of its rows'
  // sectors, and the rest hit L1; longer ones are staged, or read as the
  // aligned vectors around them.) A thread takes `rows_per_thread` rows, one CTA pass
  // (`step_output` rows) apart, and issues all their loads before reducing
  // any: with a single load per row, loads in flight per thread are what
  // keeps HBM busy. The lanes of a row then combine by shuffles in a fixed
  // order (combine_row_lanes), so the result depends on the plan alone, as
  // everywhere else.
  //
  // The load paths differ only in how they read: a thread's rows are found
  // before the paths split and stored after they join, once. Where the
  // kept dims coalesced into one (`one_dim`, the common case, a kernel of
  // its own) a row's offsets are its index times a stride; otherwise each
  // row is looked up through the OffsetCalculator, once for its input and
  // once more for its output when it is stored. Each lookup
  // inlines a walk over every possible dim: with a lookup in every path's
  // loads and stores they were most of a module's NVRTC time. The one store
  // is also faster: on an H200, vector rows of 4-256 elements ran 1.1-1.3x
  // faster than with a store in each path.

  // A thread's ShortRows rows, one CTA pass (`step_output`) apart from
  // `first_row`: which exist, and each one's input byte offset. Looked-up
  // rows are at most kMaxLookedUpRowsPerThread, hold only their input
  // offsets while the loads are in flight, and look their outputs up again
  // to store them. Holding both offsets of eight rows, ptxas (sm_90, 64
  // registers) spilled 1000-1020 bytes a thread of f64 and i64 sums;
  // holding the input offsets of eight, 168; of four, none. On an H200 the
  // looked-up rows of 16 and 64 of f64 and i64 then read at 60-62% of the
  // read ceiling instead of 38-41%, f32 and f16 ones at 61-70% instead of
  // 54-70% (docs/PERFORMANCE.md).
  template <bool one_dim>
  struct ShortRowsSlice {
    static constexpr int kRows =
        one_dim && sizeof(arg_t) <= kEightRowsMaxStateBytes ? kMaxRowsPerThread : kMaxLookedUpRowsPerThread;
    index_t first_row;
    uint32_t lane;  // of the row's lanes_per_row
    bool live[kRows];
    index_t input_offset[one_dim ? 1 : kRows];

    __device__ __forceinline__ index_t row(const ReduceConfig& config, int r) const {
      return first_row + r * config.step_output;
    }
    __device__ __forceinline__ index_t offset(const ReduceArgs<index_t>& args, int r, int operand) const {
      if constexpr (one_dim) {
        return row(args.config, r) * args.output_calc.strides_[0][operand];
      } else if (operand == 1) {
        return input_offset[r];
      } else {
        return args.output_calc.get(row(args.config, r))[0];
      }
    }
    // The address of row r's first input (a byte address, as args.src).
    __device__ __forceinline__ uint64_t input_address(const ReduceArgs<index_t>& args, int r) const {
      return args.src + offset(args, r, 1);
    }
    // live[slot] and offset(.., slot, 0) for a slot known only at run time
    // (it depends on the lane): a select over the unrolled slots keeps the
    // array in registers, where indexing it would move it to local memory;
    // the output offset is found from the slot's row, not held.
    __device__ __forceinline__ bool live_at(uint32_t slot) const {
      bool is_live = false;
#pragma unroll
      for (int r = 0; r < kRows; r++) {
        is_live = slot == (uint32_t)r ? live[r] : is_live;
      }
      return is_live;
    }
    __device__ __forceinline__ index_t output_offset_at(const ReduceArgs<index_t>& args, uint32_t slot) const {
      return offset(args, (int)slot, 0);
    }
  };

  // Which of a thread's rows it stores once its row group has combined:
  // `value[j]` holds the result of row slot `first + j`, for j < count.
  struct StoredRows {
    uint32_t first;
    uint32_t count;
  };

  // wide_loads: the rows are read in whole vectors of input_vec_size (the
  // host's ReduceConfig::wide_loads), the only path that instantiation
  // compiles.
  template <bool one_dim, bool wide_loads>
  __device__ __forceinline__ void run_short_rows() const {
    const ReduceConfig& config = this->config();
    const uint32_t rows_per_warp = warpSize / config.lanes_per_row;
    const uint32_t group = threadIdx.x / config.lanes_per_row;
    ShortRowsSlice<one_dim> rows;
    constexpr int R = ShortRowsSlice<one_dim>::kRows;
    rows.lane = threadIdx.x - group * config.lanes_per_row;
    rows.first_row =
        blockIdx.x * config.step_output * config.rows_per_thread + threadIdx.y * rows_per_warp + group;
    arg_t value[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      rows.live[r] = r < (int)config.rows_per_thread && group < rows_per_warp && rows.row(config, r) < config.num_outputs;
      value[r] = ident();
      if constexpr (!one_dim) {
        rows.input_offset[r] = rows.live[r] ? args.output_calc.get(rows.row(config, r))[1] : 0;
      }
    }
    // Each path leaves every row's result in its first lane, or spreads the
    // rows over the row's lanes (StoredRows).
    StoredRows spread{0, 0};
    if constexpr (wide_loads) {
      short_rows<input_vec_size>(rows, value);
      spread = combine_row_lanes<true>(rows.lane, value);
    } else if (config.stage_rows) {
      short_rows_staged(rows, value);
    } else {
      if (config.ragged_rows) {
        short_rows_ragged(rows, value);
      } else {
        switch (config.row_vec_size) {
          case 1:
            short_rows<1>(rows, value);
            break;
          case 2:
            short_rows<2>(rows, value);
            break;
          case 4:
            short_rows<4>(rows, value);
            break;
          case 8:
            short_rows<8>(rows, value);
            break;
          case 16:
            short_rows<16>(rows, value);
            break;
        }
      }
      spread = combine_row_lanes(rows.lane, value);
    }
    if (spread.count != 0) {
#pragma unroll
      for (int j = 0; j < R; j++) {
        const uint32_t slot = spread.first + j;
        if (j < (int)spread.count && rows.live_at(slot)) {
          store_row(rows.output_offset_at(args, slot), value[j]);
        }
      }
    } else if (rows.lane == 0) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        if (rows.live[r]) {
          store_row(rows.offset(args, r, 0), value[r]);
        }
      }
    }
  }

  // One row's result, at its output's byte offset.
  __device__ __forceinline__ void store_row(index_t output_offset, arg_t value) const {
    Array<out_scalar_t*, 1> out;
    Array<index_t, 1> out_elem;
    Array<index_t, 1> offset;
    offset[0] = output_offset;
    Array<arg_t, 1>* acc = output_slots_at<1>(offset, out, out_elem);
    Array<arg_t, 1> result;
    result[0] = value;
    store_output<1>(result, acc, out, out_elem);
  }

  template <int W, typename Rows, int R>
  __device__ __forceinline__ void short_rows(const Rows& rows, arg_t (&value)[R]) const {
    // Only widths a 16-byte load holds and the planner can pick (it never
    // exceeds the op's input_vec_size).
    if constexpr (W <= input_vec_size && W * sizeof(scalar_t) <= 16) {
      const ReduceConfig& config = this->config();
      const ops_t op = ops();
      using load_t = aligned_vector<scalar_t, W>;
      const uint32_t lanes = config.lanes_per_row;

      // A lane's vectors of its row, `lanes` vectors apart (one each when a
      // row is a warp's loads or fewer; a row of its own, read vector by
      // vector, when no vector fits it): every row's k-th load is issued
      // before any is reduced.
      const uint32_t vectors = config.num_inputs / (lanes * W);
      for (uint32_t k = 0; k < vectors; k++) {
        const uint32_t vector = k * lanes + rows.lane;
        load_t values[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (rows.live[r]) {
            values[r] = reinterpret_cast<const load_t*>(rows.input_address(args, r))[vector];
          }
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (rows.live[r]) {
            value[r] = reduce_vector(op, value[r], values[r], (int64_t)(vector * W));
          }
        }
      }
    }
  }

  // Whether a load of W inputs of one output may be added as bytes
  // (ByteSum, kernels/ops.cuh): whole words of them.
  static constexpr bool sums_bytes(int w) { return ByteSum<ops_t, scalar_t>::value && w % 4 == 0; }

  // One load of W inputs of a single output, the first of them input
  // `first`, folded into `acc`: in index order, or as the load's byte sum
  // where the op allows it.
  template <int W>
  __device__ __forceinline__ arg_t reduce_vector(const ops_t& op, arg_t acc, const aligned_vector<scalar_t, W>& v,
                                                 int64_t first) const {
    if constexpr (sums_bytes(W)) {
      return op.combine(acc, (arg_t)add_bytes(v, 0u));
    } else {
#pragma unroll
      for (int i = 0; i < W; i++) {
        acc = op.reduce(acc, v.val[i], first + i);
      }
      return acc;
    }
  }

  // The widest load a ShortRows lane issues: 16 bytes, or the op's
  // input_vec_size inputs where that is narrower. The planner's widest
  // row_vec_size, by the same rule.
  static constexpr int kWidestRowVector =
      input_vec_size < (int)(16 / sizeof(scalar_t)) ? input_vec_size : (int)(16 / sizeof(scalar_t));

  // ShortRows' packed rows (ShortRows::rows_per_vector on the host): rows
  // shorter than the widest load, end to end from a base aligned to a load
  // of V inputs (the launch's row_vec_size), P rows of V / P inputs to it.
  // A lane takes groups of P consecutive rows (the launch's
  // output vector), rows_per_thread of them a CTA pass apart, issues every
  // group's load before reducing any, reduces each row from registers in
  // index order, and stores the group's results together: one vector store
  // where the host found them end to end (contiguous_outputs). A lane per
  // row with one narrow load each issued four times the load and store
  // instructions for the same bytes. A group cut short by the last row
  // reads its rows input by input, so no load runs past the rows.
  __device__ __forceinline__ void run_packed_rows() const {
    switch (config().output_vec_size) {
      case 2:
        return packed_rows_of<2>();
      case 4:
        return packed_rows_of<4>();
      case 8:
        return packed_rows_of<8>();
    }
  }

  template <int P>
  __device__ __forceinline__ void packed_rows_of() const {
    switch (config().row_vec_size) {
      case 4:
        return packed_rows<P, 4>();
      case 8:
        return packed_rows<P, 8>();
      case 16:
        return packed_rows<P, 16>();
    }
  }

  // (The planner's loads are at most the widest, hold rows of two inputs
  // or more and at most kPackedRowsMaxResultBytes of their outputs, so no
  // other group reaches a launch.)
  template <int P, int V>
  __device__ __forceinline__ void packed_rows() const {
    if constexpr (V <= kWidestRowVector && V % P == 0 && V / P >= 2 &&
                  P * sizeof(out_scalar_t) <= kPackedRowsMaxResultBytes) {
      using load_t = aligned_vector<scalar_t, V>;
      const ReduceConfig& config = this->config();
      const index_t in_stride = args.output_calc.strides_[0][1];  // a row's bytes
      const uint32_t first_group = blockIdx.x * config.step_output * config.rows_per_thread + threadIdx.y * warpSize + threadIdx.x;
      load_t values[kMaxRowsPerThread];
      bool whole[kMaxRowsPerThread];
      // The one group of the launch that the last row cuts short, if it
      // is this thread's: its first row, else num_outputs.
      index_t cut_short = config.num_outputs;
#pragma unroll
      for (int r = 0; r < kMaxRowsPerThread; r++) {
        // In 64 bits: the groups of a last, partial pass may run past
        // num_outputs by more than a 32-bit count holds.
        const uint64_t first = (uint64_t)(first_group + r * config.step_output) * P;
        const bool live = r < (int)config.rows_per_thread && first < config.num_outputs;
        whole[r] = live && first + P <= config.num_outputs;
        if (whole[r]) {
          values[r] = *reinterpret_cast<const load_t*>(args.src + (index_t)first * in_stride);
        } else if (live) {
          cut_short = (index_t)first;
        }
      }
      if constexpr (P * sizeof(arg_t) <= 16) {
        // Every group reduced before any is stored: the stores' addresses
        // and branches then hold no register that a load in flight needs.
        Array<arg_t, P> results[kMaxRowsPerThread];
#pragma unroll
        for (int r = 0; r < kMaxRowsPerThread; r++) {
          if (whole[r]) {
            results[r] = reduce_packed_rows<P, V>(values[r]);
          }
        }
#pragma unroll
        for (int r = 0; r < kMaxRowsPerThread; r++) {
          if (whole[r]) {
            store_packed_rows<P>(results[r], (first_group + r * config.step_output) * P, P);
          }
        }
      } else {
        // Wider results (index pairs, Welford state) are stored group by
        // group: all of them at once (eight bytes summed into int64, when
        // a load held 8 rows) took 128 registers and spilled 2 KB a thread.
#pragma unroll
        for (int r = 0; r < kMaxRowsPerThread; r++) {
          if (whole[r]) {
            store_packed_rows<P>(reduce_packed_rows<P, V>(values[r]), (first_group + r * config.step_output) * P, P);
          }
        }
      }
      if (cut_short < config.num_outputs) {
        // Kept out of the unrolled slots above, whose registers the rows'
        // scalar reads would otherwise share (they spilled).
        const uint32_t live = config.num_outputs - cut_short;
        load_t rows;
#pragma unroll
        for (int j = 0; j < P; j++) {
          // Rows past the last repeat it: reduced, never stored.
          const scalar_t* row = reinterpret_cast<const scalar_t*>(
              args.src + (cut_short + min((uint32_t)j, live - 1)) * in_stride);
#pragma unroll
          for (int i = 0; i < V / P; i++) {
            rows.val[j * (V / P) + i] = row[i];
          }
        }
        store_packed_rows<P>(reduce_packed_rows<P, V>(rows), cut_short, live);
      }
    }
  }

  // The results of the P rows of `rows`, each V / P inputs reduced in
  // index order.
  template <int P, int V>
  __device__ __forceinline__ Array<arg_t, P> reduce_packed_rows(const aligned_vector<scalar_t, V>& rows) const {
    constexpr int L = V / P;
    const ops_t op = ops();
    Array<arg_t, P> results;
#pragma unroll
    for (int j = 0; j < P; j++) {
      arg_t acc = ident();
      if constexpr (sums_bytes(V)) {
        // Each row's bytes by dp4a, masked to the row: widening them one
        // by one took the registers of the loads in flight (rows of 8
        // bytes, two a load, spilled).
        acc = op.combine(acc, (arg_t)add_bytes_in(rows, j * L, (j + 1) * L, 0u));
      } else {
#pragma unroll
        for (int i = 0; i < L; i++) {
          acc = op.reduce(acc, rows.val[j * L + i], (int64_t)i);
        }
      }
      results[j] = acc;
    }
    return results;
  }

  // Stores the first `live` of `results`, rows `first` on.
  template <int P>
  __device__ __forceinline__ void store_packed_rows(const Array<arg_t, P>& results, index_t first,
                                                    uint32_t live) const {
    const index_t out_stride = args.output_calc.strides_[0][0];
    Array<index_t, P> offsets;
#pragma unroll
    for (int j = 0; j < P; j++) {
      offsets[j] = (first + j) * out_stride;
    }
    Array<out_scalar_t*, P> out;
    Array<index_t, P> out_elem;
    Array<arg_t, P>* acc = output_slots_at<P>(offsets, out, out_elem);
    store_output<P>(results, acc, out, out_elem, live);
  }

  // The inputs before row `r` in the first of the widest aligned vectors
  // that hold it: from the address's low bits alone (32-bit arithmetic
  // keeps the loads' registers free).
  template <typename Rows>
  __device__ __forceinline__ uint32_t row_head(const Rows& rows, int r) const {
    constexpr uint32_t kLoadBytes = kWidestRowVector * sizeof(scalar_t);
    return (uint32_t)rows.input_address(args, r) % kLoadBytes / (uint32_t)sizeof(scalar_t);
  }

  // ShortRows' ragged rows (ShortRows::ragged on the host): rows that the
  // widest load does not fit, by their length or their start, read as the
  // widest aligned vectors that cover each row. A row's first and last
  // vectors may hold inputs of its neighbours (or bytes between rows);
  // each input is reduced only where its index in the row, `vector * W + i
  // - head`, falls inside it. So every lane's load stays the widest where
  // narrower loads that divide the row (or one scalar a lane) would leave
  // the loads short of the read: prime lengths took PyTorch's plan, a warp
  // a row of scalar loads (i64 rows of 37 at 27% of the read ceiling on an
  // H200). A thread with a row whose last vector would run past the
  // input's allocation (a row that ends in its last 16 bytes) reads its
  // rows input by input instead, by the same lanes.
  template <typename Rows, int R>
  __device__ __forceinline__ void short_rows_ragged(const Rows& rows, arg_t (&value)[R]) const {
    constexpr int W = kWidestRowVector;
    if constexpr (W > 1) {
      const ReduceConfig& config = this->config();
      const ops_t op = ops();
      using load_t = aligned_vector<scalar_t, W>;
      constexpr uint64_t kLoadBytes = sizeof(load_t);
      const uint32_t lanes = config.lanes_per_row;
      const uint32_t row_len = config.num_inputs;
      // A row spans at most this many vectors (W - 1 inputs before it in
      // its first); each lane takes every `lanes`-th.
      const uint32_t vectors = ((row_len + 2 * W - 2) / W + lanes - 1) / lanes;
      // Whether every vector of the thread's rows ends inside the
      // allocation: one flag for all of them (not one a row), so the flags
      // take no registers from the loads in flight.
      const uint64_t row_bytes = (uint64_t)row_len * sizeof(scalar_t);
      bool in_bounds = true;
#pragma unroll
      for (int r = 0; r < R; r++) {
        const uint64_t end = rows.input_address(args, r) + row_bytes;
        in_bounds = in_bounds && (!rows.live[r] || ((end + kLoadBytes - 1) & ~(kLoadBytes - 1)) <= args.src_end);
      }
      if (in_bounds) {
        for (uint32_t k = 0; k < vectors; k++) {
          const uint32_t vector = k * lanes + rows.lane;
          load_t values[R];
#pragma unroll
          for (int r = 0; r < R; r++) {
            const uint32_t head = row_head(rows, r);
            if (rows.live[r] && vector * W < head + row_len) {
              const uint64_t start = rows.input_address(args, r) - head * sizeof(scalar_t);
              values[r] = reinterpret_cast<const load_t*>(start)[vector];
            }
          }
#pragma unroll
          for (int r = 0; r < R; r++) {
            const uint32_t head = row_head(rows, r);
            if (rows.live[r]) {
#pragma unroll
              for (int i = 0; i < W; i++) {
                // Wraps past row_len for inputs before the row.
                const uint32_t input = vector * W + i - head;
                if (input < row_len) {
                  value[r] = op.reduce(value[r], values[r].val[i], (int64_t)input);
                }
              }
            }
          }
        }
      } else {
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (rows.live[r]) {
            const scalar_t* row = reinterpret_cast<const scalar_t*>(rows.input_address(args, r));
            for (uint32_t input = rows.lane; input < row_len; input += lanes) {
              value[r] = op.reduce(value[r], row[input], (int64_t)input);
            }
          }
        }
      }
    }
  }

  // The lanes of each row combine their partial results: spread over the
  // lanes (spread_rows) when a thread holds a full set of rows, else down
  // a tree into the row's first lane (the returned StoredRows is empty).
  // hide_lane_test: see fold_row_lanes.
  template <bool hide_lane_test = false, int R>
  __device__ __forceinline__ StoredRows combine_row_lanes(uint32_t lane, arg_t (&value)[R]) const {
    const ReduceConfig& config = this->config();
    const uint32_t lanes = config.lanes_per_row;
    if (lanes > 1 && config.rows_per_thread == R) {
      return spread_rows<hide_lane_test>(lane, lanes, value);
    }
    fold_row_lanes<hide_lane_test>(lane, lanes, 1, value);
    return StoredRows{0, 0};
  }

  // Lane l adds lane l + offset of its own row, for offsets `first`,
  // 2 * first, ... below `lanes`: from 1, lane 0 of each row ends with the
  // whole row, for any lanes_per_row; from a power of two `width`, each of
  // the first `width` lanes with its block of lanes. Every lane shuffles
  // (the mask is the full warp).
  //
  // hide_lane_test hides the lane's test from the optimizer afresh for
  // each slot. Seen as one lane-dependent condition, NVVM may hoist it over
  // all eight slots into one branch with a copy of the shuffles on each
  // side, and every shuffle then runs diverged, through the slow collective
  // fallback (BRA.DIV and WARPSYNC.COLLECTIVE in the SASS). It did so in
  // short_rows_kernel's wide_loads instantiation (its one-dim rows ran up
  // to 1.75x slower); no other kernel of any module does (checked in the
  // SASS of them all), and hiding the test there too moved their register
  // allocation, costing f64 rows of 16 9% (docs/performance-history.md), so only
  // that instantiation hides it. The two forms are spelled apart so that
  // every other kernel keeps its machine code exactly.
  template <bool hide_lane_test, int R>
  __device__ __forceinline__ void fold_row_lanes(uint32_t lane, uint32_t lanes, uint32_t first,
                                                 arg_t (&value)[R]) const {
    const ops_t op = ops();
    for (uint32_t offset = first; offset < lanes; offset <<= 1) {
      if constexpr (hide_lane_test) {
        uint32_t take = lane + offset < lanes;
#pragma unroll
        for (int r = 0; r < R; r++) {
          asm volatile("" : "+r"(take));
          const arg_t mine = value[r];
          const arg_t other = op.warp_shfl_down(mine, offset);
          if (take) {
            value[r] = op.combine(mine, other);
          }
        }
      } else {
#pragma unroll
        for (int r = 0; r < R; r++) {
          arg_t other = op.warp_shfl_down(value[r], offset);
          if (lane + offset < lanes) {
            value[r] = op.combine(value[r], other);
          }
        }
      }
    }
  }

  // The lanes of a row group combine a full set of rows (every slot of
  // `value`) so that each of its first `width` lanes (a power of two, at
  // most R) ends with whole rows of its own, and stores
  // them: a reduce-scatter. The other lanes first fold into those down a
  // tree; then each step halves the slots a lane holds: lanes whose `bit`
  // is set keep the upper half and send the lower one to their partner
  // (lane ^ bit), which keeps the lower half. With 8 lanes a row, 8 rows a
  // thread take 7 shuffles instead of the tree's 24, and each lane stores
  // one row instead of lane 0 storing 8 (its store path ran with 1 lane in
  // 8 active): 8-byte rows of 16 and 128 elements were issue-bound on the
  // tree (ncu: 69% of issue slots busy at 64% of DRAM bandwidth), and ran
  // 1-5% faster spread on an H100 (f64 the most). The order of every combine is fixed by
  // the lane and slot numbers, so results stay bitwise reproducible.
  template <bool hide_lane_test, int R>
  __device__ __forceinline__ StoredRows spread_rows(uint32_t lane, uint32_t lanes,
                                                    arg_t (&value)[R]) const {
    // The lanes that end with rows: the most, as a power of two, of at most
    // R (a power of two). Lane l + k * width folds into lane l down a tree,
    // which takes any lanes_per_row.
    uint32_t width = 1;
    while (width * 2 <= lanes && width * 2 <= (uint32_t)R) {
      width *= 2;
    }
    fold_row_lanes<hide_lane_test>(lane, lanes, width, value);
    // A row group starts at any lane of the warp (lanes_per_row need not
    // divide it), so partners are named by their lane in the warp.
    const uint32_t group_start = warp_lane() - lane;
    static_assert(R > 1 && (R & (R - 1)) == 0, "spread_rows halves the slots down to one");
    exchange_halves<R / 2>(lane, width >> 1, group_start, value);
    const uint32_t slots = R / width;
    return lane < width ? StoredRows{lane * slots, slots} : StoredRows{0, 0};
  }

  // This thread's lane in its warp (threads are numbered x fastest).
  __device__ __forceinline__ static uint32_t warp_lane() {
    return (threadIdx.x + threadIdx.y * blockDim.x) % warpSize;
  }

  // spread_rows' steps, from `half` slots a side down to one, each on the
  // next lower bit of the lane.
  template <int half, int R>
  __device__ __forceinline__ void exchange_halves(uint32_t lane, uint32_t bit, uint32_t group_start,
                                                  arg_t (&value)[R]) const {
    exchange_half<half>(lane, bit, group_start, value);
    if constexpr (half > 1) {
      exchange_halves<half / 2>(lane, bit >> 1, group_start, value);
    }
  }

  // One step of spread_rows: slots [0, 2 * half) become [0, half), the lower
  // or the upper half combined with the partner's (lane ^ bit of the same
  // row group), by lane `bit` (none: nothing to do). The halves are
  // template constants so that `value` stays in registers.
  template <int half, int R>
  __device__ __forceinline__ void exchange_half(uint32_t lane, uint32_t bit, uint32_t group_start,
                                                arg_t (&value)[R]) const {
    if (bit == 0) {
      return;
    }
    const ops_t op = ops();
    const bool upper = (lane & bit) != 0;
    const uint32_t partner = group_start + (lane ^ bit);
#pragma unroll
    for (int i = 0; i < half; i++) {
      // Copies, not `upper ? value[a] : value[b]`: a conditional of two
      // elements is an lvalue, whose address choice moves `value` to local
      // memory.
      const arg_t lower_half = value[i];
      const arg_t upper_half = value[i + half];
      const arg_t keep = upper ? upper_half : lower_half;
      const arg_t got = shfl_bits(upper ? lower_half : upper_half, partner);
      value[i] = upper ? op.combine(got, keep) : op.combine(keep, got);
    }
  }

  // ShortRows' packed scalar rows (a lane each, ShortRows::staged on the
  // host), kept apart from short_rows: the vector paths ran 4-7% slower
  // when they shared this path's combine and a store in each path (the
  // store is now the one after the join). Row i starts
  // i * row_bytes past the base, so a warp's 32 rows are one span starting
  // 16-byte aligned and no OffsetCalculator is needed to find them. The
  // warp copies its spans into its slice of shared memory 16 bytes a lane
  // at a time, every span of every row a thread takes before any is
  // reduced (cp.async needs no registers for them); each lane then folds
  // its own rows from there, all of a thread's rows a step at a time, each
  // in the order the global path reads it. A thread whose last row's span
  // runs past the last row (the tail) reads its rows from global memory
  // instead.
  template <typename Rows, int R>
  __device__ __forceinline__ void short_rows_staged(const Rows& live_rows,
                                                    arg_t (&value)[R]) const {
    extern __shared__ __align__(16) unsigned char short_rows_stage[];
    const ReduceConfig& config = this->config();
    const ops_t op = ops();
    const uint32_t row_len = config.num_inputs;
    const uint32_t row_bytes = row_len * (uint32_t)sizeof(scalar_t);
    const uint32_t span_bytes = warpSize * row_bytes;
    const uint32_t rows = config.rows_per_thread;
    const uint32_t lane = threadIdx.x;
    const index_t first_row = live_rows.first_row;
    const index_t warp_row = first_row - lane;
    const bool whole = warp_row + (rows - 1) * config.step_output + warpSize <= config.num_outputs;
    if (whole) {
      unsigned char* stage = short_rows_stage + threadIdx.y * rows * span_bytes;
#pragma unroll
      for (int r = 0; r < R; r++) {
        if (r < (int)rows) {
          const char* span =
              reinterpret_cast<const char*>(args.src + (warp_row + r * config.step_output) * row_bytes);
          for (uint32_t chunk = lane; chunk < span_bytes / kShortRowsStageAlign; chunk += warpSize) {
            copy_16_bytes_async(stage + r * span_bytes + chunk * kShortRowsStageAlign,
                                span + chunk * kShortRowsStageAlign);
          }
        }
      }
      wait_async_copies();
      __syncwarp();
      const scalar_t* mine = reinterpret_cast<const scalar_t*>(stage) + lane * row_len;
      const uint32_t span_len = warpSize * row_len;
      for (uint32_t i = 0; i < row_len; i++) {
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (r < (int)rows) {
            value[r] = op.reduce(value[r], mine[r * span_len + i], (int64_t)i);
          }
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < R; r++) {
        if (live_rows.live[r]) {
          const scalar_t* row =
              reinterpret_cast<const scalar_t*>(args.src + (first_row + r * config.step_output) * row_bytes);
          for (uint32_t i = 0; i < row_len; i++) {
            value[r] = op.reduce(value[r], row[i], (int64_t)i);
          }
        }
      }
    }
    // A row is one lane's: no combine.
  }

  // PyTorch's tail of run()/global_reduce(): where a 32-bit split iterator
  // accumulates into what an earlier launch left, and whether it finalizes.
  // A partial can wait in the output only when the output type is the
  // accumulator (the planner's can_accumulate_in_output); otherwise the host
  // passes an accumulation buffer, so the output is only ever written with a
  // projected result and any accumulator (pairs, Welford state) compiles.
  // Only the first `live` outputs exist (live_outputs): the rest of a
  // RaggedColumns lane's last vector is neither read nor written.
  template <int output_vec_size>
  __device__ __forceinline__ void store_output(Array<arg_t, output_vec_size> value,
                                               Array<arg_t, output_vec_size>* acc,
                                               const Array<out_scalar_t*, output_vec_size>& out,
                                               const Array<index_t, output_vec_size>& out_elem,
                                               uint32_t live = output_vec_size) const {
    const ops_t op = ops();
    if (args.accumulate) {
#pragma unroll
      for (int i = 0; i < output_vec_size; i++) {
        value[i] = op.translate_idx(value[i], args.base_idx);
      }
    }
    if (acc != nullptr) {
      if (args.accumulate) {
#pragma unroll
        for (int i = 0; i < output_vec_size; i++) {
          if ((uint32_t)i < live) {
            value[i] = op.combine((*acc)[i], value[i]);
          }
        }
      }
      if (!args.final_output) {
        if (live == output_vec_size) {
          *acc = value;
        } else {
#pragma unroll
          for (int i = 0; i < output_vec_size; i++) {
            if ((uint32_t)i < live) {
              (*acc)[i] = value[i];
            }
          }
        }
        return;
      }
    } else if constexpr (is_same<arg_t, out_scalar_t>::value) {
      // accumulate_in_output: the output holds a partial of an earlier launch.
      if (args.accumulate) {
#pragma unroll
        for (int i = 0; i < output_vec_size; i++) {
          if ((uint32_t)i < live) {
            value[i] = op.combine(*out[i], value[i]);
          }
        }
      }
      if (!args.final_output) {
#pragma unroll
        for (int i = 0; i < output_vec_size; i++) {
          if ((uint32_t)i < live) {
            *out[i] = value[i];
          }
        }
        return;
      }
    }
    if (output_vec_size > 1 && args.contiguous_outputs && live == output_vec_size) {
      // One store, not output_vec_size: 2-byte outputs stored one by one
      // 16 bytes apart left f16 columns of 2 at half the speed of a copy of
      // the same bytes on an H200 (docs/performance-history.md).
      aligned_vector<out_scalar_t, output_vec_size> results;
#pragma unroll
      for (int i = 0; i < output_vec_size; i++) {
        results.val[i] = op.template project<out_scalar_t>(value[i]);
      }
      *reinterpret_cast<aligned_vector<out_scalar_t, output_vec_size>*>(out[0]) = results;
    } else {
#pragma unroll
      for (int i = 0; i < output_vec_size; i++) {
        if ((uint32_t)i < live) {
          *out[i] = op.template project<out_scalar_t>(value[i]);
        }
      }
    }
    if constexpr (ops_t::noutputs == 2) {
      // var and std share var_mean's functor but ask for one output.
      if (args.noutputs == 2) {
        using second_t = typename ops_t::template second_t<out_scalar_t>;
        second_t* out2 = reinterpret_cast<second_t*>(args.dst[1]);
#pragma unroll
        for (int i = 0; i < output_vec_size; i++) {
          if ((uint32_t)i < live) {
            out2[out_elem[i]] = op.template project_second<out_scalar_t>(value[i]);
          }
        }
      }
    }
  }

  template <int nt, int output_vec_size, bool ragged_columns>
  __device__ __forceinline__ Array<arg_t, output_vec_size> thread_reduce(const scalar_t* data) const {
    const ReduceConfig& config = this->config();
    if constexpr (ragged_columns) {
      // One reduced dim, as the planner takes it, of any row pitch.
      const index_t row_stride = args.input_calc.strides_[0][0] / sizeof(scalar_t);
      return thread_reduce_impl<output_vec_size, true>(data, [&](index_t idx) { return idx * row_stride; });
    }
    // The planner only vectorises the input with output_vec_size == 1, so
    // the other kernels do not carry the vector paths.
    if constexpr (output_vec_size == 1) {
      if (config.vectorize_input) {
        Array<arg_t, 1> result;
        if (args.input_calc.dims == 1) {
          result[0] = input_vectorized_thread_reduce_impl<nt, true>(data, [](index_t idx) { return idx; });
        } else {
          // Strategy::VectorizedDims: vector `idx` starts at input
          // `idx * input_vec_size` of the reduced dims, which the planner
          // made aligned and inside one run of the fastest dim.
          result[0] = input_vectorized_thread_reduce_impl<nt, false>(data, [&](index_t idx) {
            return args.input_calc.get(idx * input_vec_size)[0] / (index_t)(sizeof(scalar_t) * input_vec_size);
          });
        }
        return result;
      }
    }
    const index_t element_stride = args.input_calc.strides_[0][0] / sizeof(scalar_t);
    const bool is_contiguous = args.input_calc.dims == 1 && element_stride == 1;
    if (is_contiguous) {
      return thread_reduce_impl<output_vec_size>(data, [](index_t idx) { return idx; });
    } else if (args.input_calc.dims == 1) {
      return thread_reduce_impl<output_vec_size>(data, [&](index_t idx) { return idx * element_stride; });
    } else {
      // Lanes of several outputs (columns) make a few loads each, so their
      // prologue is much of their life: their lookups are get_rolled, whose
      // divisors ptxas does not hoist onto every thread's path. Lanes of one
      // output keep PyTorch's unrolled get: their prologue is spread over a
      // row's many loads, and each lookup is cheaper with its divisors held
      // in registers than in a loop that loads them again.
      return thread_reduce_impl<output_vec_size>(data, [&](index_t idx) {
        if constexpr (output_vec_size > 1) {
          return args.input_calc.get_rolled(idx)[0] / (index_t)sizeof(scalar_t);
        } else {
          return args.input_calc.get(idx)[0] / (index_t)sizeof(scalar_t);
        }
      });
    }
  }

  // The inputs of one output, read input_vec_size at a time; `vector_at`
  // maps a vector's index to its position in vectors from `data`. One
  // contiguous reduced dim (`contiguous`, PyTorch's case): the vector
  // loads need an aligned start, so the elements before the first aligned
  // address (the head) are read one by one by the lanes that own them in
  // the aligned grid, and the elements after the last whole vector (the
  // tail) by the first lanes; only one row/CTA (should_reduce_tail) reads
  // either, so nothing is counted twice. Several reduced dims come aligned
  // and in whole vectors (Strategy::VectorizedDims), with neither.
  template <int nt, bool contiguous, typename vector_calc_t>
  __device__ __forceinline__ arg_t input_vectorized_thread_reduce_impl(const scalar_t* data,
                                                                       vector_calc_t vector_at) const {
    const ReduceConfig& config = this->config();
    const ops_t op = ops();
    index_t end = config.num_inputs;

    arg_t value = ident();
    constexpr int align_bytes = alignof(aligned_vector<scalar_t, input_vec_size>);
    constexpr int align_elements = align_bytes / sizeof(scalar_t);
    int shift = contiguous ? (int)(((uint64_t)data) % align_bytes / sizeof(scalar_t)) : 0;
    if (shift > 0) {
      data -= shift;
      end += shift;
      if (threadIdx.x >= (uint32_t)shift && threadIdx.x < (uint32_t)align_elements && config.should_reduce_tail()) {
        value = op.reduce(value, data[threadIdx.x], (int64_t)threadIdx.x - shift);
      }
      end -= align_elements;
      data += align_elements;
      shift = align_elements - shift;
    }

    using load_t = aligned_vector<scalar_t, input_vec_size>;
    const load_t* vectors = reinterpret_cast<const load_t*>(data);
    index_t idx = config.input_idx();
    const index_t stride = config.step_input;

    // One accumulator per vector lane: independent add chains. Lane i's
    // inputs are its loads' first inputs shifted by i, so each is folded
    // with its load's first index and the lane's stored indices are
    // shifted by i once at the end (translate_idx, as a split iterator's
    // piece is): one index a load rather than one an input, whose 64-bit
    // add was two of the eight instructions an index op's element took.
    // Inputs folded with their own index (the head and the tail) go to
    // lane 0, shifted by 0.
    arg_t value_list[input_vec_size];
    value_list[0] = value;
#pragma unroll
    for (int i = 1; i < input_vec_size; i++) {
      value_list[i] = ident();
    }

    // Issue several vector loads before adding any of them: HBM3e needs
    // more than one 16-byte load in flight per thread to reach its
    // bandwidth, and the loop below alone keeps one. Each accumulator still
    // receives its values in the same order, so the result is bitwise the
    // one the plain loop (and PyTorch) computes, whatever the batch size.
    constexpr int kLoadsInFlight =
        vectorized_loads_in_flight<nt, min_blocks_per_sm<nt>(), sizeof(load_t), vectorized_accumulator_bytes()>();
    while (((uint64_t)idx + (uint64_t)(kLoadsInFlight - 1) * stride) * input_vec_size + input_vec_size - 1 <
           (uint64_t)end) {
      load_t batch[kLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; u++) {
        batch[u] = vectors[vector_at(idx + u * stride)];
      }
      if constexpr (sums_bytes(input_vec_size)) {
        // The batch's bytes in one partial sum (exact in any order).
        uint32_t bytes = 0;
#pragma unroll
        for (int u = 0; u < kLoadsInFlight; u++) {
          bytes = add_bytes(batch[u], bytes);
        }
        value_list[0] = op.combine(value_list[0], (arg_t)bytes);
      } else {
#pragma unroll
        for (int u = 0; u < kLoadsInFlight; u++) {
          const int64_t first = (int64_t)shift + (int64_t)(idx + u * stride) * input_vec_size;
#pragma unroll
          for (int i = 0; i < input_vec_size; i++) {
            value_list[i] = op.reduce(value_list[i], batch[u].val[i], first);
          }
        }
      }
      idx += kLoadsInFlight * stride;
    }

    while ((uint64_t)idx * input_vec_size + input_vec_size - 1 < (uint64_t)end) {
      const load_t values_vec = vectors[vector_at(idx)];
      const int64_t first = (int64_t)shift + (int64_t)idx * input_vec_size;
      if constexpr (sums_bytes(input_vec_size)) {
        value_list[0] = reduce_vector(op, value_list[0], values_vec, first);
      } else {
#pragma unroll
        for (int i = 0; i < input_vec_size; i++) {
          value_list[i] = op.reduce(value_list[i], values_vec.val[i], first);
        }
      }
      idx += stride;
    }

    index_t tail_start = end - end % input_vec_size;
    if (contiguous && config.should_reduce_tail()) {
      index_t tail_idx = tail_start + threadIdx.x;
      if (tail_idx < end) {
        value_list[0] = op.reduce(value_list[0], data[tail_idx], (int64_t)tail_idx + shift);
      }
    }

#pragma unroll
    for (int i = 1; i < input_vec_size; i++) {
      value_list[0] = op.combine(value_list[0], op.translate_idx(value_list[i], i));
    }
    return value_list[0];
  }

  // The scalar paths: `calc` maps an input index to an element offset
  // (identity, one stride, or the N-d OffsetCalculator). With output
  // vectorisation each load brings output_vec_size neighbouring outputs'
  // inputs, which the planner made contiguous and aligned, or under
  // RaggedColumns (`ragged_columns`) contiguous only (load_ragged_columns).
  template <int output_vec_size, bool ragged_columns = false, typename offset_calc_t>
  __device__ __forceinline__ Array<arg_t, output_vec_size> thread_reduce_impl(const scalar_t* data_,
                                                                               offset_calc_t calc) const {
    const ReduceConfig& config = this->config();
    const ops_t op = ops();
    index_t idx = config.input_idx();
    const index_t end = config.num_inputs;
    const index_t stride = config.step_input;

    using arg_vec_t = Array<arg_t, output_vec_size>;
    using load_t = aligned_vector<scalar_t, output_vec_size>;
    const auto load = [&](index_t i) -> load_t {
      if constexpr (ragged_columns) {
        return load_ragged_columns<output_vec_size>(data_ + calc(i));
      } else {
        return reinterpret_cast<const load_t*>(data_)[calc(i) / output_vec_size];
      }
    };

    // vt0 independent accumulators remove the dependency between unrolled
    // loads. Lanes of more than PyTorch's 4 outputs (the ShortColumns
    // strategy: short columns, few loads a lane) fold into one set instead:
    // the loads are in flight either way, and under that kernel's register
    // budget (kShortColumnsRegisters) vt0 sets of 8 spilled 24 to 120
    // bytes a thread to local memory, where one set spills nothing. Lanes
    // of two outputs on a full SM's budget (pair_lanes_fill_sm) fold into
    // one set for the same reason, and so do lanes of ops whose result is
    // the same in any order (any_order_lanes, kAnyOrderColumnsRegisters).
    constexpr bool one_set = output_vec_size > kPyTorchMaxOutputVecSize ||
                             pair_lanes_fill_sm<output_vec_size>() || any_order_lanes<output_vec_size>();
    constexpr int accumulators = one_set ? 1 : vt0;
    arg_vec_t value_list[accumulators];
#pragma unroll
    for (int i = 0; i < accumulators; i++) {
#pragma unroll
      for (int j = 0; j < output_vec_size; j++) {
        value_list[i][j] = ident();
      }
    }

    // Loads issued before any is reduced: vt0, or half as many ragged
    // ones (two vectors each) in the widest lanes, whose registers
    // (kShortColumnsRegisters) held vt0 pairs only by spilling.
    constexpr int kLoads =
        ragged_columns && output_vec_size > kPyTorchMaxOutputVecSize ? (vt0 + 1) / 2 : vt0;
    load_t values[kLoads];

    while ((uint64_t)idx + (uint64_t)(kLoads - 1) * stride < (uint64_t)end) {
#pragma unroll
      for (int i = 0; i < kLoads; i++) {
        values[i] = load(idx + i * stride);
      }
#pragma unroll
      for (int i = 0; i < kLoads; i++) {
#pragma unroll
        for (int j = 0; j < output_vec_size; j++) {
          value_list[i % accumulators][j] =
              op.reduce(value_list[i % accumulators][j], values[i].val[j], (int64_t)(idx + i * stride));
        }
      }
      idx += stride * kLoads;
    }

    // Tail: fewer than kLoads strides left; all loads first, then the adds.
    const index_t idx_ = idx;
#pragma unroll
    for (int i = 0; i < kLoads; i++) {
      if (idx >= end) {
        break;
      }
      values[i] = load(idx);
      idx += stride;
    }
    idx = idx_;
#pragma unroll
    for (int i = 0; i < kLoads; i++) {
      if (idx >= end) {
        break;
      }
#pragma unroll
      for (int j = 0; j < output_vec_size; j++) {
        value_list[i % accumulators][j] = op.reduce(value_list[i % accumulators][j], values[i].val[j], (int64_t)idx);
      }
      idx += stride;
    }

#pragma unroll
    for (int i = 1; i < accumulators; i++) {
#pragma unroll
      for (int j = 0; j < output_vec_size; j++) {
        value_list[0][j] = op.combine(value_list[0][j], value_list[i][j]);
      }
    }
    return value_list[0];
  }

  // RaggedColumns (the ragged_columns kernel; ReduceConfig::ragged_columns on
  // the host): a lane's output_vec_size inputs of one row, from `p`, which may
  // sit anywhere in its aligned vector. They are read as the two aligned vectors
  // around them, shifted down by p's place in the first: whole 32-bit words (or
  // scalars, for 8-byte ones) in steps of 1, 2, 4..., then the bytes left within
  // a word. The lanes of a warp walk consecutive vectors of one row, so a lane's
  // second vector is its neighbour's first (an L1 hit, not DRAM traffic), and
  // the shift is the same for every lane of the row, so no lane diverges. A
  // vector that would run past the input's allocation (only the last row's last
  // lanes) is read input by input up to its end instead. Inputs past the row's
  // end (the last lane's) only feed outputs that store_output never writes.
  template <int output_vec_size>
  __device__ __forceinline__ aligned_vector<scalar_t, output_vec_size> load_ragged_columns(const scalar_t* p) const {
    using load_t = aligned_vector<scalar_t, output_vec_size>;
    constexpr uint32_t kBytes = sizeof(load_t);
    constexpr int kWords = (int)(kBytes / 4);
    static_assert(kBytes % 4 == 0, "ragged columns move whole 32-bit words");
    // An 8-byte scalar's shift is a whole number of scalars, so of pairs of words.
    constexpr int kFirstStep = sizeof(scalar_t) > 4 ? (int)(sizeof(scalar_t) / 4) : 1;
    const uint64_t address = reinterpret_cast<uint64_t>(p);
    const uint32_t shift = (uint32_t)(address % kBytes);
    const uint64_t first = address - shift;
    load_t result;
    if (first + (shift == 0 ? kBytes : 2 * kBytes) <= args.src_end) {
      const load_t* vectors = reinterpret_cast<const load_t*>(first);
      if (shift == 0) {
        return vectors[0];
      }
      const load_t low = vectors[0];
      const load_t high = vectors[1];
      uint32_t words[2 * kWords];
      memcpy(words, &low, kBytes);
      memcpy(words + kWords, &high, kBytes);
      const uint32_t word_shift = shift / 4;
#pragma unroll
      for (int step = kFirstStep; step < kWords; step *= 2) {
        const bool take = (word_shift & (uint32_t)step) != 0;
#pragma unroll
        for (int k = 0; k + step < 2 * kWords; k++) {
          words[k] = take ? words[k + step] : words[k];
        }
      }
      if constexpr (sizeof(scalar_t) < 4) {
        const uint32_t bits = (shift % 4) * 8;
#pragma unroll
        for (int k = 0; k < kWords; k++) {
          words[k] = __funnelshift_r(words[k], words[k + 1], bits);
        }
      }
      memcpy(&result, words, kBytes);
      return result;
    }
#pragma unroll
    for (int i = 0; i < output_vec_size; i++) {
      result.val[i] = address + (uint64_t)(i + 1) * sizeof(scalar_t) <= args.src_end ? p[i] : scalar_t{};
    }
    return result;
  }

  // Lanes of one row hold partials of one output: halve through shared
  // memory while the row is wider than a warp, then shuffle with offsets
  // 1, 2, 4, ... (neighbouring lanes pair first). Lane 0 ends with the total.
  template <int output_vec_size>
  __device__ __forceinline__ Array<arg_t, output_vec_size> block_x_reduce(Array<arg_t, output_vec_size> value,
                                                                          char* shared_memory) const {
    using args_vec_t = Array<arg_t, output_vec_size>;
    const ops_t op = ops();
    uint32_t dim_x = blockDim.x;
    args_vec_t* shared = reinterpret_cast<args_vec_t*>(shared_memory);
    if (dim_x > 32) {
      // block_y_reduce may still be reading these slots.
      __syncthreads();
      uint32_t address_base = threadIdx.x + threadIdx.y * blockDim.x;
      shared[address_base] = value;
      for (uint32_t offset = dim_x / 2; offset >= 32; offset >>= 1) {
        __syncthreads();
        if (threadIdx.x < offset && threadIdx.x + offset < blockDim.x) {
          args_vec_t other = shared[address_base + offset];
#pragma unroll
          for (int i = 0; i < output_vec_size; i++) {
            value[i] = op.combine(value[i], other[i]);
          }
          shared[address_base] = value;
        }
      }
      dim_x = 32;
    }

    __syncthreads();

    for (uint32_t offset = 1; offset < dim_x; offset <<= 1) {
#pragma unroll
      for (int i = 0; i < output_vec_size; i++) {
        arg_t other = op.warp_shfl_down(value[i], offset);
        value[i] = op.combine(value[i], other);
      }
    }
    return value;
  }

  // Rows of the block hold partials of the same outputs: halve blockDim.y
  // through shared memory. Row 0 ends with the totals.
  template <int output_vec_size>
  __device__ __forceinline__ Array<arg_t, output_vec_size> block_y_reduce(Array<arg_t, output_vec_size> value,
                                                                          char* shared_memory) const {
    using args_vec_t = Array<arg_t, output_vec_size>;
    const ReduceConfig& config = this->config();
    const ops_t op = ops();
    args_vec_t* shared = reinterpret_cast<args_vec_t*>(shared_memory);
    shared[config.shared_memory_offset(0)] = value;
    for (uint32_t offset = blockDim.y / 2; offset > 0; offset >>= 1) {
      __syncthreads();
      if (threadIdx.y < offset && threadIdx.y + offset < blockDim.y) {
        args_vec_t other = shared[config.shared_memory_offset(offset)];
#pragma unroll
        for (int i = 0; i < output_vec_size; i++) {
          value[i] = op.combine(value[i], other[i]);
        }
        shared[config.shared_memory_offset(0)] = value;
      }
    }
    return value;
  }

  // True in exactly one CTA per grid column: the last of gridDim.y to
  // arrive. That CTA also resets the semaphore to 0 (every other CTA of the
  // column has already incremented it), so the next launch needs no memset.
  __device__ __forceinline__ bool mark_block_finished() const {
    __shared__ bool is_last_block_done_shared;
    uint32_t* semaphores = reinterpret_cast<uint32_t*>(args.semaphores);

    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      uint32_t prev_blocks_finished = atomicAdd(&semaphores[blockIdx.x], 1u);
      bool last = prev_blocks_finished == gridDim.y - 1;
      if (last) {
        semaphores[blockIdx.x] = 0;
      }
      is_last_block_done_shared = last;
    }
    __syncthreads();
    return is_last_block_done_shared;
  }

  // CTAs along grid.y hold partials of the same outputs. Each stores its
  // partial in the staging buffer; the last CTA reads all of them back in
  // CTA index order (not arrival order, which would make the sum depend on
  // scheduling), then reduces them within the block as in run().
  // The last CTA's fold of the staged partials: slots first, first + step,
  // ... below ctas_per_output, in that order. With many CTAs (a column sum
  // over few outputs has thousands) each thread folds hundreds of slots, and
  // a loop that waits for each load before issuing the next is a chain of
  // L2 round trips; issuing kLoadsInFlight loads before combining keeps the
  // order, so the result is bitwise the plain loop's.
  template <int output_vec_size>
  __device__ __forceinline__ Array<arg_t, output_vec_size> combine_staged(Array<arg_t, output_vec_size> value,
                                                                         const Array<arg_t, output_vec_size>* buf,
                                                                         uint32_t first, uint32_t step) const {
    using arg_vec_t = Array<arg_t, output_vec_size>;
    const ReduceConfig& config = this->config();
    const ops_t op = ops();
    constexpr uint32_t kLoadsInFlight = staged_loads_in_flight<output_vec_size>();
    uint32_t offset = first;
    for (; (uint64_t)offset + (kLoadsInFlight - 1) * (uint64_t)step < config.ctas_per_output;
         offset += kLoadsInFlight * step) {
      arg_vec_t batch[kLoadsInFlight];
#pragma unroll
      for (uint32_t u = 0; u < kLoadsInFlight; u++) {
        batch[u] = buf[config.staging_memory_offset(offset + u * step)];
      }
#pragma unroll
      for (uint32_t u = 0; u < kLoadsInFlight; u++) {
#pragma unroll
        for (int i = 0; i < output_vec_size; i++) {
          value[i] = op.combine(value[i], batch[u][i]);
        }
      }
    }
    for (; offset < config.ctas_per_output; offset += step) {
      arg_vec_t next = buf[config.staging_memory_offset(offset)];
#pragma unroll
      for (int i = 0; i < output_vec_size; i++) {
        value[i] = op.combine(value[i], next[i]);
      }
    }
    return value;
  }

  template <int output_vec_size>
  __device__ __forceinline__ void global_reduce(Array<arg_t, output_vec_size> value,
                                                Array<arg_t, output_vec_size>* acc,
                                                const Array<out_scalar_t*, output_vec_size>& out,
                                                const Array<index_t, output_vec_size>& out_elem,
                                                index_t output_idx, uint32_t live, char* shared_memory) const {
    using arg_vec_t = Array<arg_t, output_vec_size>;
    const ReduceConfig& config = this->config();
    const ops_t op = ops();
    arg_vec_t* reduce_buffer = reinterpret_cast<arg_vec_t*>(args.cta_buf);

    const bool should_store = config.should_store(output_idx);
    if (should_store) {
      reduce_buffer[config.staging_memory_offset(blockIdx.y)] = value;
    }

    __threadfence();  // release: the partial is visible before the semaphore moves
    __syncthreads();
    const bool is_last_block_done = mark_block_finished();

    if (is_last_block_done) {
      __threadfence();  // acquire: see every other CTA's partial
#pragma unroll
      for (int i = 0; i < output_vec_size; i++) {
        value[i] = ident();
      }
      if (config.should_block_x_reduce()) {
        value = combine_staged<output_vec_size>(value, reduce_buffer, threadIdx.x + threadIdx.y * blockDim.x,
                                                blockDim.x * blockDim.y);
      } else {
        value = combine_staged<output_vec_size>(value, reduce_buffer, threadIdx.y, blockDim.y);
      }
      value = block_y_reduce<output_vec_size>(value, shared_memory);
      if (config.should_block_x_reduce()) {
        value = block_x_reduce<output_vec_size>(value, shared_memory);
      }
      if (should_store) {
        store_output<output_vec_size>(value, acc, out, out_elem, live);
      }
    }
  }
};

// The register budget of the ShortColumns strategy's kernels (more than
// PyTorch's 4 outputs a lane): a thread's life is a few 16-byte loads, so
// resident threads are what keeps bytes in flight. Unbounded, the 8-output
// kernel of f16 sum took 73 registers, 12 blocks of 64 threads an SM.
constexpr int kShortColumnsRegisters = 64;
template <int nt, int output_vec_size, typename R>
__device__ constexpr int reduce_kernel_min_blocks_per_sm() {
  return output_vec_size > kPyTorchMaxOutputVecSize ? kRegistersPerSm / (nt * kShortColumnsRegisters)
         : R::template pair_lanes_fill_sm<output_vec_size>() ? kRegistersPerSm / (nt * kFullSmRegisters)
         : R::template any_order_lanes<output_vec_size>()    ? kRegistersPerSm / (nt * kAnyOrderColumnsRegisters)
                                                             : R::template min_blocks_per_sm<nt>();
}

// PyTorch's C10_LAUNCH_BOUNDS_2(nt, 4): at most nt threads per block, and
// registers budgeted for 4 resident blocks per SM, or fewer for a wide
// accumulator (reduce_min_blocks_per_sm), or more for ShortColumns, for
// lanes of two outputs that fit a full SM (pair_lanes_fill_sm) and for
// column lanes of the index ops (any_order_lanes).
// ragged_columns instantiates the RaggedColumns strategy's variant.
template <int nt, int output_vec_size, typename R, bool ragged_columns = false>
__global__ void __launch_bounds__(nt, (reduce_kernel_min_blocks_per_sm<nt, output_vec_size, R>())) reduce_kernel(R reduction) {
  reduction.template run<nt, output_vec_size, ragged_columns>();
}

// The ShortRows strategy's entry, with its own register budget: a thread
// holds kMaxRowsPerThread vector loads at once (kMaxLookedUpRowsPerThread
// where one_dim is false), which reduce_kernel's
// budget (32 registers at 512 threads and 4 blocks per SM) spilled to local
// memory, costing about half the bandwidth. With 64 registers a thread
// (16 blocks of two warps an SM) they stay in registers; 12 blocks (80
// registers) for wide_loads, rows read in vectors that each widen into
// kShortRowsWideVecSize values or more. Blocks of two warps, so a warp
// that ends early frees its block's slots soon (SHORT_ROWS_THREADS).
template <typename R, bool one_dim, bool wide_loads>
__global__ void __launch_bounds__(kShortRowsThreads,
                                  wide_loads ? kShortRowsWideMinBlocksPerSm : kShortRowsMinBlocksPerSm)
    short_rows_kernel(R reduction) {
  reduction.template run_short_rows<one_dim, wide_loads>();
}

// The ShortRows strategy's packed rows (ReduceOp::run_packed_rows), under
// short_rows_kernel's budget but an entry of their own: in the same
// kernel their paths made ptxas spill more of every path's registers (f32
// sum's short_rows_kernel went from 4 to 52 bytes of spill stores).
template <typename R>
__global__ void __launch_bounds__(kShortRowsThreads, kShortRowsMinBlocksPerSm) packed_rows_kernel(R reduction) {
  reduction.run_packed_rows();
}

}  // namespace tr
