//! Our planner branches beside the port: where PyTorch's `setReduceConfig`
//! leaves bandwidth on the table, a [`Strategy`] other than
//! [`Strategy::PyTorch`] replaces its [`ReduceConfig`] for the same
//! kernels (`short_rows_kernel` is `reduce_kernel`'s entry with its own
//! register budget). Every branch runs any op's functor (the kernel only ever
//! calls `reduce`, `combine`, `warp_shfl_down` and `project`) and combines in
//! an order fixed by the plan, so results stay bitwise reproducible.

use super::config::{
    div_up, set_reduce_config_ragged_columns, set_reduce_config_vectorizing_dims,
    set_reduce_config_with_output_vec, BLOCK_Y, CTA, MIN_VALUES_PER_THREAD,
    PYTORCH_MAX_OUTPUT_VEC_SIZE,
};
use super::residency::{wave_ctas, KernelRegisters};
use super::{DeviceProps, ReduceConfig};
use crate::iter::TensorIterator;
use crate::reduce::{Signature, WiderLoads};

/// Threads per block under [`Strategy::ShortRows`] (at most the op's
/// `max_num_threads`): a warp per block row, several rows per warp, two
/// warps a block. Also `short_rows_kernel`'s launch bound
/// (`kShortRowsThreads`, checked equal in the generated source).
///
/// Two warps rather than eight: a warp's life is mostly one wait on its
/// loads, and an SM frees a block's registers only when its last warp
/// ends, so in a block of eight the warps done early held their slots,
/// with nothing in flight, while the slowest waited. At the same registers
/// a thread, on an H200 (docs/PERFORMANCE.md), blocks of 64 threads
/// against 256 ran f16 and bf16 rows of 16 1.09x and 1.10x faster, i64 rows
/// of 16 and 37 1.08x and 1.12x, f32 rows of 100 1.06x and the 4 MB rows
/// of 128 1.14x, no case measured slower, and blocks of 128 threads fell
/// between.
pub const SHORT_ROWS_THREADS: u32 = 64;

/// The most rows one thread takes under [`Strategy::ShortRows`], that is
/// the most loads it keeps in flight. The kernel sizes its register arrays
/// by it (`kMaxRowsPerThread`); the generated source checks the two agree.
pub const SHORT_ROWS_MAX_ROWS_PER_THREAD: u32 = 8;

/// The most rows one thread of `short_rows_kernel<one_dim=false>` takes:
/// rows looked up one by one (kept dims that do not coalesce), whose input
/// offsets the thread holds beside its loads (`kMaxLookedUpRowsPerThread`,
/// checked equal in the generated source). With eight, ptxas (sm_90, NVRTC
/// 13.0) spilled 168 bytes a thread of f64 sum's registers (1020 while the
/// output offsets were held too); with four, none, for sums of f16, f32,
/// f64 and i64. On an H200 (`benches/nd_rows.json`, rows `[R, 2048, L]` permuted
/// to `[2048, R, L]`) f64 and i64 rows of 16 then ran at 2.60-2.62x
/// torch's speed and rows of 64 at 1.49-1.50x, where eight rows holding
/// both offsets had run at 1.64-1.71x and 0.98-0.99x (an earlier run); f32
/// rows of 16 at 5.61x (4.19x). Rows found by one stride take as few
/// where the op's state is wider than
/// [`SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES`].
pub const SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD: u32 = 4;

/// The widest accumulator, in bytes, whose rows found by one stride take
/// [`SHORT_ROWS_MAX_ROWS_PER_THREAD`] a thread in `short_rows_kernel`
/// (f32 and narrower sums, max, min, norms); wider state (8-byte sums,
/// max and min, logsumexp's pairs, index pairs, Welford's) takes
/// [`SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD`] (`kEightRowsMaxStateBytes`,
/// checked equal). With eight rows ptxas (sm_90, NVRTC 13.0) spilled 2916
/// bytes a thread of var of f64's one-dim kernel, 312 of argmax of f32's,
/// 172 of var of f32's, 136 of logsumexp of f32's, 104 of amax of f64's,
/// 36-92 of the sums of f64, i64, i32, u8 and bool (into i64) and of
/// amin of i64; with four, 100 for var of f64 and none for the others.
/// Logsumexp of f16 and bf16, whose 8-byte pairs did not spill at eight
/// (64 registers; 48 at four), take four by the same rule, untimed.
///
/// On an H100 (the sweep's rows of 2 to 16384, two alternating rounds of
/// four rows against eight), argmax ran 1.18x faster in the geometric
/// mean and var 1.19x: f64 and i64 rows of 2 to 128 1.59-1.99x (argmax)
/// and f64 rows 2.99-3.65x (var), f32 rows of 4 to 16 1.18-1.45x
/// (argmax), 16-bit rows of 16 1.12-1.14x; rows spread over 16 lanes or
/// more (f32 rows of 64 and 128, 16-bit rows of 128), where each lane has
/// one load a row and so four loads in flight instead of eight,
/// 0.87-0.97x; rows of 4096 and longer level (PyTorch's plan). Then for
/// 8-byte state (the same protocol, f64 and i64 rows of 2, 16 and 128):
/// amax 1.07-1.24x faster (f64 rows of 128 63.8 -> 52.4 µs, where torch
/// took 56.2 in the sweep), sums level (0.99-1.07x).
pub const SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES: u32 = 4;

/// The blocks per SM that `short_rows_kernel`'s and `packed_rows_kernel`'s
/// register budget is set for (their `__launch_bounds__`,
/// `kShortRowsMinBlocksPerSm`, checked equal in the generated source): 64
/// registers a thread at [`SHORT_ROWS_THREADS`] (1024 threads an SM), room for
/// [`SHORT_ROWS_MAX_ROWS_PER_THREAD`] 16-byte loads without spilling. A
/// full wave is this many blocks on every SM (fewer for the `wide_loads`
/// kernel, [`SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM`]).
pub const SHORT_ROWS_MIN_BLOCKS_PER_SM: u32 = 16;

/// ShortRows launches whose rows are read in whole vectors of this many
/// inputs or more (sums, means and index ops of 16-bit inputs: 8 f32
/// values out of each 16-byte load) run `short_rows_kernel`'s `wide_loads`
/// instantiation, budgeted for [`SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM`] blocks
/// (`kShortRowsWideVecSize`, checked equal; [`ReduceConfig::wide_loads`]).
pub const SHORT_ROWS_WIDE_VEC_SIZE: u32 = 8;

/// The shortest row that [`Strategy::ShortRows`] reads with the index ops'
/// 16-byte loads of 16-bit inputs (argmax, argmin, `max(dim)` and
/// `min(dim)`: [`Signature::wider_loads_reason`]); shorter rows keep
/// PyTorch's 8-byte loads. On an H100 (argmax, 268 MB, against the 8-byte
/// loads, alternating builds), f16 and bf16 rows of 32 ran 1.42-1.44x
/// faster with them, rows of 64 1.47-1.52x and rows of 128 1.54-1.57x (a
/// warp's lanes over 16-32 loads of 8 bytes, then a level of shuffles of
/// 16-byte pairs more), rows of 256 0.97x and rows of 4096 and longer
/// (PyTorch's plan) 1.02-1.05x. Rows of 16 ran 0.85-0.89x (two lanes of 8
/// picks each, where the 8-byte loads stage the row through shared memory,
/// a lane each), and rows of 2 packed four a load 0.58x (`max(dim)`).
pub const SHORT_ROWS_WIDE_PICKS_MIN_ROW: u64 = 32;

/// The most inputs a lane of [`Strategy::ShortRows`] loads at once from a
/// row of `row_len` inputs: the op's `input_vec_size`, but PyTorch's for
/// the index ops' wider loads of rows shorter than
/// [`SHORT_ROWS_WIDE_PICKS_MIN_ROW`].
pub(super) fn short_row_load_inputs(signature: &Signature, row_len: u64) -> u32 {
    if signature.wider_loads() == Some(WiderLoads::SixteenBitPicks)
        && row_len < SHORT_ROWS_WIDE_PICKS_MIN_ROW
    {
        signature.pytorch_input_vec_size()
    } else {
        signature.input_vec_size
    }
}

/// Whether a module whose loads hold `input_vec_size` inputs has
/// `short_rows_kernel`'s `wide_loads` instantiation: the one rule that both
/// the module's kernel list and [`ReduceConfig::wide_loads`] read.
pub fn has_wide_loads(input_vec_size: u32) -> bool {
    input_vec_size >= SHORT_ROWS_WIDE_VEC_SIZE
}

/// The blocks per SM of `short_rows_kernel`'s `wide_loads` instantiation
/// (`kShortRowsWideMinBlocksPerSm`, checked equal): 80 registers a thread
/// (768 threads an SM), where eight loads widened into 64 f32 values and
/// the rows' bookkeeping did not fit 64 (f16 sum spilled 348 bytes a
/// thread in the N-d variant). On an H200 (docs/performance-history.md, measured
/// in blocks of 256 threads), f16 rows of 16-256 read in 16-byte vectors
/// ran 1.06-1.16x faster at 80 registers than at 64, bf16 rows of 16 and
/// 128 1.05x and 1.11x, and N-d f16 rows of 16 1.29x; with every ShortRows
/// kernel at 80, f16 rows read a scalar a lane, staged or ragged (3, 5, 7,
/// 12, 33, 100) ran 0.84-0.93x as fast: those keep the 64-register
/// kernel, as do 4- and 8-byte inputs (level to 1.45x slower at 80).
pub const SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM: u32 = 12;

/// Rows of at most this many bytes that no vector load fits (an odd length,
/// or starts off a vector boundary) take a lane each under
/// [`Strategy::ShortRows`], read one scalar after another, instead of a
/// lane per scalar: a lane per scalar left most of a warp's lanes with one
/// 4-byte load per row (rows of 3, 5 and 7 f32 at under a quarter of the
/// read). A lane per row keeps `rows_per_thread` rows' loads in flight,
/// the warp's first loads fetch every sector of its rows and the rest hit
/// L1 (32 bytes: a warp's 8 rows a lane are 8 KiB).
pub const SCALAR_ROW_MAX_BYTES: u64 = 32;

/// Packed rows of at most this many bytes that no 16-byte load fits (an
/// odd length, or one that only narrower vectors divide) and that take
/// more than one load are staged a lane each ([`ShortRows::staged`]): a
/// warp's rows are one span, copied 16 bytes at a time whatever their
/// length. Lanes sharing a row through narrower loads left those rows
/// short of the read: on an H200, rows of 9 f32 (9 lanes of 4-byte loads)
/// ran at 31% of the read ceiling and 0.47x CUB, rows of 6 f32 and 12 f16
/// (lanes of 8-byte loads) at 62-63%; staged, 80%, 78% and 69% (1.36x,
/// 1.38x and 0.89x CUB). A row of one load keeps it, a lane each: staged,
/// rows of 2 f32, f16 and bf16 ran 1.3-1.7x slower than in an earlier
/// H200 sweep (CuPy's times level across the two); rows that divide a
/// load are packed several a load instead ([`ShortRows::rows_per_vector`]).
/// 64 bytes keeps two rows a thread in a block's stage
/// ([`SHORT_ROWS_STAGE_BYTES`]).
pub const STAGED_ROW_MAX_BYTES: u64 = 64;

/// The most output bytes one lane of [`ShortRows::rows_per_vector`] packed
/// rows produces from its load: the rows a load holds are capped so that
/// their results are one 16-byte store. Sums of u8 and bool load 16 bytes
/// a lane, and rows of 2 packed eight a 16-byte load were summed into
/// eight 8-byte results, which spilled 540 bytes a thread. Two rows a
/// load (of 4, 8 or 16 bytes), each row's bytes added by a masked `dp4a`
/// (the kernel's `add_bytes_in`), on an H200: u8 rows of 2, 4 and 8 ran
/// 2.05x, 1.37x and 1.51x faster, bool rows of 4 and 8 2.63x and 3.58x,
/// and rows of 2 reached 96-97% of the read-write ceiling.
pub const PACKED_ROWS_MAX_RESULT_BYTES: u64 = 16;

/// Shared memory a block of [`Strategy::ShortRows`] may stage packed
/// scalar rows in ([`ShortRows::staged`]); rows per thread are capped so a
/// block's spans fit. The [`SHORT_ROWS_MIN_BLOCKS_PER_SM`] blocks the
/// register budget allows then take 192 KiB of Hopper's 227 (13 fit in
/// sm_80's 164). More rows a thread keep more copies in flight: packed
/// f32 rows of 5 ran 8% faster at 8 rows a thread than at 4 (measured at
/// four times these blocks' threads and stage).
pub const SHORT_ROWS_STAGE_BYTES: u32 = 12 * 1024;

/// The most vectors a lane loads from a row under [`Strategy::ShortRows`]
/// when the rows are looked up one by one (kept dims that do not coalesce,
/// [`LaunchPlan::rows_by_one_stride`](super::LaunchPlan::rows_by_one_stride)
/// false), the inputs are 8 bytes (f64, i64) and the op's state is at most
/// 8 bytes too (sums, products, max, min); longer such rows are left to the
/// strategies after ShortRows (`left_to_pytorch`). Wider state keeps
/// [`LOOKED_UP_8_BYTE_WIDE_STATE_MAX_VECTORS_PER_LANE`].
///
/// With the kernel of four rows a thread, which does not spill, an H100
/// (`benches/nd_rows.json`, two alternating rounds of this bound at 4
/// against 1) ran sums of f64 and i64 rows of 128 (2 vectors a lane)
/// 1.09x faster under ShortRows and rows of 256 (4) 0.97x as fast.
///
/// The measurements before that kernel:
/// On an H200 (128 MiB, rows `[R, 2048, L]` permuted to `[2048, R, L]`),
/// rows of 128 (2 vectors a lane) and 256 (4) ran faster without
/// ShortRows: sums of f64 and i64 1.14x and 1.39-1.53x, amax of f64 1.04x
/// and 1.36x, var of f64 rows of 128 1.68x; rows of 64 (1) level or slower
/// (0.51-1.00x). Narrower inputs lost or stayed level whatever their
/// accumulator: var of f32 rows of 128 0.80x, argmax of f32 and f16 rows
/// of 256 0.74x and 0.57x, sums of f32, f16 and u8 0.99-1.00x or slower,
/// of i32 (an i64 accumulator) level at rows of 256 (an unexplained 1.14x
/// at 512). These were measured while `short_rows_kernel<one_dim=false>`
/// held eight rows' output offsets beside its loads and spilled at its 64
/// registers whatever the dtype (`kernel_ptx --ptxas-info`, NVRTC 13.0:
/// 1140 bytes of spill stores a thread for f32 sums, 1508 for f64); with
/// [`SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD`] it no longer spills.
pub const LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE: u32 = 2;

/// [`LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE`] for ops whose state is wider
/// than 8 bytes (Welford's, index pairs): the bound measured before the
/// four-row kernel (var of f64 rows of 128 ran 1.68x faster on PyTorch's
/// plan then), kept until they are measured again; var of f64's looked-up
/// kernel still spills 112 bytes a thread.
pub const LOOKED_UP_8_BYTE_WIDE_STATE_MAX_VECTORS_PER_LANE: u32 = 1;

/// Alignment of a warp's span of packed rows: the width of one copy
/// (`cp.async` of 16 bytes) into shared memory.
pub const SHORT_ROWS_STAGE_ALIGN: u64 = 16;

/// The most vectors one lane loads from its row under
/// [`Strategy::ShortRows`], so rows of up to this many warps of loads (2
/// KiB of 16-byte loads) take the strategy. PyTorch's plan gives such a
/// row a warp and nothing else, so a lane has its row's one to four loads
/// in flight and its block ends after one row a warp (f32 rows of 256 ran
/// at two thirds of the read, rows of 512 at 82%), where several rows a
/// thread keep up to [`SHORT_ROWS_MAX_ROWS_PER_THREAD`] loads in flight
/// for each of the lane's vectors.
pub const SHORT_ROWS_MAX_VECTORS_PER_LANE: u64 = 4;

/// The share of a warp's loads that [`ShortRows::ragged`] rows must put on
/// their rows before fewer lanes a row (more loads a lane) are tried.
/// Fewer lanes fill a warp's lanes better, but spread each of its load
/// instructions over more rows, hence more cache lines; the most lanes
/// that waste at most a quarter of the loads keep each instruction's
/// lines few. Rows of whole vectors whose lanes put less than this share
/// on their rows are read ragged instead, where that puts more.
pub const RAGGED_MIN_LOADS_USED_PERCENT: u64 = 75;

/// The most staged partials one thread of a global reduce's last CTA may
/// fold before [`Strategy::TallColumns`] narrows the output vectors: two
/// rounds of `combine_staged`'s batch of f32 sums' partials (four loads in
/// flight; wider partials take fewer a batch). Each round is an L2
/// round trip that no other work hides, since every other CTA of the column
/// has finished. (`[4096, 4096]` f64 over dim 0 folds 16 a thread in
/// PyTorch's plan and ran 4% faster at 3.)
pub const TALL_COLUMNS_MAX_STAGED_PER_THREAD: u32 = 8;

/// The narrowest load [`Strategy::TallColumns`] leaves a lane
/// (`output_vec_size` inputs): the kernel keeps `vt0` (4) of them in
/// flight, and at 4 bytes a lane the SMs hold too few bytes in flight for
/// HBM. Rows of 2048 f16 summed over 65536 ran 10% slower at 2 outputs a
/// lane than at PyTorch's 4, despite the shorter fold.
pub const TALL_COLUMNS_MIN_LOAD_BYTES: u32 = 8;

/// The widest output vector [`Strategy::ShortColumns`] gives a lane: 16
/// bytes of 16-bit inputs, as PyTorch's 4 are of 4-byte ones.
pub const SHORT_COLUMNS_OUTPUT_VEC_SIZE: u32 = 8;

/// The most outputs a lane may take for `signature`, which is also the
/// widest `reduce_kernel` its compiled module holds: PyTorch's 4, or
/// [`SHORT_COLUMNS_OUTPUT_VEC_SIZE`] for inputs of at most 2 bytes whose
/// accumulator is at most 4 bytes. A lane holds an accumulator for each of
/// its outputs (one set in the 8-output kernel, not `vt0`), so wider ones
/// (index pairs, Welford state, 8-byte sums) would spend on them the
/// registers that keep its loads in flight.
pub fn max_output_vec_size(signature: &Signature) -> u32 {
    if signature.input.size_in_bytes() <= 2 && signature.acc.size_in_bytes() <= 4 {
        SHORT_COLUMNS_OUTPUT_VEC_SIZE
    } else {
        PYTORCH_MAX_OUTPUT_VEC_SIZE
    }
}

/// How a launch is configured: PyTorch's heuristic as it is, or one of our
/// branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `setReduceConfig`, ported as it is.
    PyTorch,
    /// Short contiguous rows, as CUB's and OneFlow's short-segment kernels
    /// read them. PyTorch gives a row of `L < 128` inputs `min(pow2(L), 32)`
    /// lanes issuing one scalar load each, and a block's threads then have
    /// nothing left to load: a row of 16 f32 keeps 64 bytes in flight per
    /// 16 threads. Here a few lanes share a row with one vector load each, a
    /// warp covers several neighbouring rows per load (one contiguous span
    /// when the rows are packed), and each thread takes several rows with
    /// every load issued before any is reduced. Rows that no vector
    /// divides, or that start off a vector boundary, are staged, read a
    /// lane each, or read as the aligned vectors around them
    /// ([`ShortRows::staged`], [`ShortRows::ragged`]).
    ShortRows(ShortRows),
    /// PyTorch's plan with its CTA split where PyTorch's rule leaves SMs
    /// idle. PyTorch splits an output's inputs across CTAs only when a
    /// thread has at least `MAX_VALUES_PER_THREAD` (256) of them; channel
    /// statistics of a small batch (`[32, 64, 56, 56]` over `(0, 2, 3)`:
    /// 196 values a thread) then run 64 CTAs on 132 SMs. Here the same
    /// split runs whenever PyTorch's grid leaves SMs without a CTA, as long
    /// as every thread keeps `MIN_VALUES_PER_THREAD` (16) inputs, in whole
    /// waves where a last partial one would leave SMs idle (`whole_waves`):
    /// the kernel, its global reduce and its fixed fold order are PyTorch's.
    CtaSplit {
        /// CTAs that share each output (`ctas_per_output`).
        ctas_per_output: u32,
    },
    /// PyTorch's plan without its warp split, where rows are many: each
    /// warp reads a whole row and the block's warps take separate rows.
    /// PyTorch lets a block's warps share a row once a lane would have 256
    /// of its values (rows of 8192), whatever the number of rows: every
    /// row then costs a block, a `block_y_reduce` and a barrier, and a lane
    /// of a 16-bit row of 8192 has two 16-byte loads, so the tail is most
    /// of the work (`[8192, 8192]` f16 at 63% of the read, where rows of
    /// 4096 in its own unsplit plan ran at 88%). With rows for at least
    /// [`ROW_PER_WARP_MIN_SLOTS_PERCENT`] of the device's warp slots there
    /// is work enough without the split.
    RowPerWarp,
    /// PyTorch's plan with its vector loads along the fastest reduced dim
    /// although several dims are reduced (PyTorch vectorises a single
    /// reduced dim only). Channel statistics (`(N, C, H, W)` over `(0, 2,
    /// 3)`) reduce `H·W` contiguous inputs, then `N`: PyTorch's lanes load
    /// them one scalar at a time. Here each lane loads `input_vec_size` of
    /// them at once, found through the input `OffsetCalculator` by the
    /// index of the vector's first input, which needs every vector inside
    /// one run of the fastest dim and aligned (`vectorizable_dims`); the
    /// rest of the plan is what the port makes of vector loads, with
    /// [`Strategy::CtaSplit`]'s rule on top where that grid leaves SMs idle.
    VectorizedDims {
        /// CTAs that share each output where ours sets them:
        /// [`Strategy::CtaSplit`]'s rule where the vectorised plan leaves
        /// SMs idle, or the port's own split in whole waves where it would
        /// end in a partial one (`None`: the vectorised plan as the port
        /// makes it).
        cta_split: Option<u32>,
    },
    /// PyTorch's plan with fewer outputs a lane, where its lanes walk few
    /// and long columns. PyTorch gives a lane 4 consecutive outputs, so a
    /// block of 128 threads covers 128 columns, a grid of few CTA columns
    /// splits each across up to a wave of CTAs, and the last CTA of each
    /// column folds all their partials from the staging buffer while the
    /// rest of the GPU idles: `[65536, 256]` f64 over dim 0 had 1024 CTAs a
    /// column, 256 partials (1 MiB) for each of the last CTA's threads,
    /// and read at 42% of the read ceiling. Halving the outputs a lane
    /// doubles the CTA columns, doubles the block's warps (PyTorch's block
    /// holds `512 / output_vec_size` threads) and so halves the CTAs a
    /// column: a quarter of the partials per column, shared by twice the
    /// threads. The vector is halved while a thread of the last CTA folds
    /// more than [`TALL_COLUMNS_MAX_STAGED_PER_THREAD`] partials and a
    /// lane's load stays at least [`TALL_COLUMNS_MIN_LOAD_BYTES`]; the
    /// rest of the config is the port's on the narrower vectors, its CTA
    /// split in whole waves of the CTAs the kernel holds (`whole_waves`,
    /// `wave_ctas`: f64 lanes of one output took 40 registers, 3 CTAs of
    /// 512 threads an SM, so a split counted on 4 ran as 1.29 waves).
    /// Lanes of two outputs of 4-byte accumulators run on a full SM's
    /// register budget (the kernel's `pair_lanes_fill_sm`), so that as
    /// many CTAs as the threads allow are resident.
    TallColumns {
        /// Outputs a lane (`output_vec_size`), less than PyTorch's.
        output_vec_size: u32,
    },
    /// PyTorch's plan with more outputs a lane, where each lane reduces
    /// whole short columns of narrow inputs alone. PyTorch gives a lane 4
    /// consecutive outputs whatever their size, so a lane of 16-bit inputs
    /// loads 8 bytes a row; a column of a few rows is then a few 8-byte
    /// loads and a thread's whole life (`[2, 67108864]` f16 over dim 0 ran
    /// at half the speed of a plain kernel with 16-byte loads). Here a lane
    /// takes [`max_output_vec_size`] outputs, 16 bytes of 16-bit inputs
    /// a load, where the layout allows it and the wider plan still leaves
    /// each lane its columns whole (no split across lanes, warps or CTAs);
    /// the rest of the config is the port's on the wider vectors.
    ShortColumns {
        /// Outputs a lane (`output_vec_size`), more than PyTorch's.
        output_vec_size: u32,
    },
    /// Lanes of [`max_output_vec_size`] outputs where the layout leaves
    /// PyTorch's narrower: columns whose rows start off a vector boundary
    /// (an odd width, a row pitch or a start that no vector divides).
    /// PyTorch's `get_output_vec_size` halves the vector until it divides
    /// the first kept dim's size, the base and every other stride, so a
    /// width of 22369621 f32 or 44739243 f16 leaves a lane one output and
    /// one 4- or 2-byte load a row: `[3, 44739243]` f16 over dim 0 read at
    /// 31% of the read ceiling, `[3, 22369621]` f32 at 57%, while the same
    /// bytes in aligned columns read at 64-75% (their writes are a third
    /// of the traffic). Here each lane reads its row's inputs as the two
    /// aligned vectors around them and shifts them into place
    /// (`load_ragged_columns` in the kernel), and the last lane of a row,
    /// whose vector runs past the width, stores only the outputs that
    /// exist. The kept dims must coalesce into one contiguous dim, so that
    /// a lane's outputs are consecutive inputs of every row, and the
    /// reduced dims into one, whose stride the kernel steps by; the rest of
    /// the config is the port's on the wider vectors, taken where its lanes
    /// fill a warp and each lane reduces its columns alone (long columns,
    /// whose warps would split the rows, keep PyTorch's plan). The kernel
    /// is an instantiation of its own (`reduce_kernel<..., true>`).
    RaggedColumns {
        /// Outputs a lane (`output_vec_size`), more than PyTorch's.
        output_vec_size: u32,
    },
}

/// Rows, as a percentage of the device's resident warp slots (`sm_count *
/// max_threads_per_sm / warp_size`), from which [`Strategy::RowPerWarp`]
/// replaces PyTorch's warp split. Half the slots, each lane with four
/// 16-byte loads in flight, are 64 KiB in flight per SM, enough for HBM;
/// fewer rows leave it short. On an H200 (8448 slots) 8192 rows of 16384
/// f16 ran 13% faster a warp a row, and 4096 rows of 16384 f32 3% slower.
pub const ROW_PER_WARP_MIN_SLOTS_PERCENT: u64 = 50;

/// The row layout [`Strategy::ShortRows`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShortRows {
    /// Inputs in a row (the reduced dim's size).
    pub row_len: u32,
    /// Inputs per load: the widest power of two that fits 16 bytes and the
    /// op's loads (its `input_vec_size`, or PyTorch's for the index ops'
    /// 16-bit rows shorter than [`SHORT_ROWS_WIDE_PICKS_MIN_ROW`]), divides
    /// the row, and every row start is aligned to; under
    /// [`ShortRows::ragged`], the widest of all, which does neither; for
    /// packed rows ([`ShortRows::rows_per_vector`]), the rows a load holds
    /// times their length.
    pub row_vec_size: u32,
    /// Lanes that share a row, at most a warp: `row_len / row_vec_size`
    /// (one vector each) or a fraction of it (up to
    /// [`SHORT_ROWS_MAX_VECTORS_PER_LANE`] vectors each), 1 for rows of up
    /// to [`SCALAR_ROW_MAX_BYTES`] that take scalar loads, or for
    /// [`ShortRows::ragged`] rows the count that uses the warp's loads
    /// well ([`RAGGED_MIN_LOADS_USED_PERCENT`]).
    pub lanes_per_row: u32,
    /// Rows (a lane each) that are packed, each row starting where the one
    /// before ends from a 16-byte aligned base, of at most
    /// [`STAGED_ROW_MAX_BYTES`], that no 16-byte load fits and that take
    /// more than one load: a warp's rows are then one aligned span, which
    /// the warp copies into shared memory with 16-byte copies before each
    /// lane reduces its own row from there. Read
    /// scalar by scalar from global memory, neighbouring lanes' loads are a
    /// row apart and every load instruction touches all of the warp's
    /// sectors; rows of 7 f32 then ran at 36% of the read.
    pub staged: bool,
    /// Rows of more than [`SCALAR_ROW_MAX_BYTES`] that the widest load
    /// (`row_vec_size`) does not fit, by their length or their start, and
    /// that are not staged, or whose whole vectors no lane count shares
    /// across a warp as well (under [`RAGGED_MIN_LOADS_USED_PERCENT`] of
    /// its load slots on the rows): each row is read as the widest aligned
    /// vectors that cover it ([`ragged_row_vectors`] at most), and an input is
    /// reduced only where it falls inside the row. Narrower loads that
    /// divide such a row, or PyTorch's warp of scalar loads where none do
    /// (prime lengths), left it short of the read: i64 rows of 37 ran at
    /// 27% of the read ceiling on an H200, 0.59x CUB.
    pub ragged: bool,
    /// Whole rows a lane reads with one `row_vec_size` load, 1 but for
    /// packed rows: rows of fewer inputs than the widest load, end to end
    /// from an aligned base, each a divisor of it (rows of 2 and 4 f16, of
    /// 2 f32, of 2 to 8 bytes; at most [`PACKED_ROWS_MAX_RESULT_BYTES`] of
    /// results a load): the lane reduces its load's rows in
    /// registers and stores their results together (the launch's
    /// `output_vec_size`, one vector where they lie end to end). A lane per
    /// row with one 4-byte load each left f16 rows of 2 at 41% of the read
    /// ceiling on an H200; packed four a load they ran 1.54x faster (bf16
    /// 1.66x, amax of f16 2.08x, argmax 1.33x, f32 rows of 2 1.07x).
    pub rows_per_vector: u32,
}

impl ShortRows {
    /// Vectors each lane loads from its row: at most that many under
    /// [`ShortRows::ragged`], where a row's vectors depend on its start;
    /// one for packed rows, whose one load holds several.
    pub fn vectors_per_lane(&self) -> u32 {
        if self.rows_per_vector > 1 {
            1
        } else if self.ragged {
            ragged_row_vectors(self.row_len, self.row_vec_size).div_ceil(self.lanes_per_row)
        } else {
            self.row_len / (self.row_vec_size * self.lanes_per_row)
        }
    }
}

/// The most aligned vectors of `width` inputs that cover a row of
/// `row_len` inputs starting anywhere: up to `width - 1` inputs before the
/// row share its first vector. In u64, so that no row length wraps; the
/// count is at most `row_len` (`width` ≥ 1), so it fits a u32.
pub fn ragged_row_vectors(row_len: u32, width: u32) -> u32 {
    let width = u64::from(width.max(1));
    let vectors = (u64::from(row_len) + 2 * width - 2) / width;
    u32::try_from(vectors).unwrap_or(u32::MAX)
}

/// The strategy this crate runs for `iter`, given PyTorch's own config for
/// it: [`Strategy::ShortRows`] where a row fits a few loads per lane of a
/// warp (one, for rows of 8-byte inputs looked up one by one:
/// `left_to_pytorch`), [`Strategy::VectorizedDims`] where several reduced
/// dims take vector loads PyTorch leaves scalar, [`Strategy::RowPerWarp`] where
/// PyTorch's warps split long rows that are many, [`Strategy::TallColumns`]
/// where a column reduction's global reduce leaves each thread of a last
/// CTA many partials, [`Strategy::ShortColumns`] where lanes of narrow
/// inputs reduce short columns alone, [`Strategy::RaggedColumns`] where
/// columns start off a vector boundary, [`Strategy::CtaSplit`] where
/// PyTorch's grid leaves SMs without a CTA, else PyTorch's.
///
/// `registers` are those of the signature's kernels where known: waves are
/// counted in the CTAs they let an SM hold (`wave_ctas`).
pub fn choose_strategy(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    registers: &KernelRegisters,
    pytorch: &ReduceConfig,
) -> Strategy {
    if let Some(rows) = short_rows(iter, signature, props.warp_size)
        .filter(|r| !left_to_pytorch(iter, signature, r))
    {
        return Strategy::ShortRows(rows);
    }
    if vectorizable_dims(iter, signature) {
        let vectorized = set_reduce_config_vectorizing_dims(iter, signature, props);
        if vectorized.vectorize_input {
            let cta_split = if vectorized.should_global_reduce() {
                // The port's own split, kept unless it ends in a partial wave.
                let port = vectorized.ctas_per_output;
                let ours = whole_waves(
                    port,
                    vectorized.grid()[0],
                    wave(&vectorized, props, registers),
                );
                (ours != port).then_some(ours)
            } else {
                cta_split(&vectorized, props, registers)
            };
            return Strategy::VectorizedDims { cta_split };
        }
    }
    if row_per_warp(pytorch, props) {
        return Strategy::RowPerWarp;
    }
    if let Some(output_vec_size) = tall_columns(iter, signature, props, pytorch) {
        return Strategy::TallColumns { output_vec_size };
    }
    if let Some(output_vec_size) = short_columns(iter, signature, props, pytorch) {
        return Strategy::ShortColumns { output_vec_size };
    }
    if let Some(output_vec_size) = ragged_columns(iter, signature, props, pytorch) {
        return Strategy::RaggedColumns { output_vec_size };
    }
    cta_split(pytorch, props, registers).map_or(Strategy::PyTorch, |ctas_per_output| {
        Strategy::CtaSplit { ctas_per_output }
    })
}

/// CTAs per output for [`Strategy::CtaSplit`]: PyTorch's own count
/// (enough CTAs for a full wave, no fewer than 16 inputs a thread) in
/// whole waves of the CTAs the kernel holds ([`whole_waves`]), when
/// its warps already split each output's inputs, it split nothing across
/// CTAs, and its grid is smaller than the SM count. (A grid that reaches
/// every SM keeps PyTorch's plan: whether a second CTA per SM is worth a
/// global reduce then depends on more than the count of CTAs.)
fn cta_split(
    pytorch: &ReduceConfig,
    props: &DeviceProps,
    registers: &KernelRegisters,
) -> Option<u32> {
    if !pytorch.should_block_y_reduce() || pytorch.should_global_reduce() {
        return None;
    }
    let grid_x = u64::from(pytorch.grid()[0]).max(1);
    if grid_x >= u64::from(props.sm_count) {
        return None;
    }
    let wave = wave(pytorch, props, registers);
    let fill = div_up(wave, grid_x);
    let keep_busy = u64::from(pytorch.values_per_thread()) / u64::from(MIN_VALUES_PER_THREAD);
    let ctas = whole_waves(fill.min(keep_busy) as u32, grid_x as u32, wave);
    (ctas > 1).then_some(ctas)
}

/// The CTAs of `config`'s kernel the device holds at once (`wave_ctas`).
fn wave(config: &ReduceConfig, props: &DeviceProps, registers: &KernelRegisters) -> u64 {
    wave_ctas(
        props,
        registers.of(config.output_vec_size),
        config.num_threads,
    )
}

/// CTAs per output, at most `ctas_per_output`, for `grid_x` columns of
/// CTAs: the count whose grid fills the largest share of the waves it
/// takes (a wave is the `wave` CTAs the device holds at once, `wave_ctas`),
/// the larger count on a tie. PyTorch's rule
/// rounds up (`⌈target / grid_x⌉`): 64 channels on an H200 got 9 CTAs
/// each, 576 CTAs for 528 slots, and the last 48 ran as a second wave with
/// most SMs idle (SMs active 72% of the kernel's cycles under `ncu`, DRAM
/// at 62% of its peak); 8 fill one wave. The CTAs' partials are folded in
/// an order the plan fixes either way: the count only shares out the
/// inputs.
pub(super) fn whole_waves(ctas_per_output: u32, grid_x: u32, wave: u64) -> u32 {
    let slots = wave.max(1);
    let grid_x = u64::from(grid_x.max(1));
    let waves = |ctas: u64| div_up(ctas * grid_x, slots);
    // A share ctas·grid_x / (waves·slots) beats another when ctas·waves'
    // exceeds ctas'·waves.
    let mut best = u64::from(ctas_per_output.max(1));
    for ctas in (1..best).rev() {
        if ctas * waves(best) > best * waves(ctas) {
            best = ctas;
        }
    }
    best as u32
}

/// `config` with its inputs split across `ctas_per_output` CTAs, as
/// `set_reduce_config` splits them.
fn with_cta_split(mut config: ReduceConfig, ctas_per_output: u32) -> ReduceConfig {
    config.ctas_per_output = ctas_per_output;
    config.input_mult[CTA] = config.split_input(ctas_per_output);
    config
}

/// `config` before `set_reduce_config` split its inputs across CTAs (as
/// it is, if it did not): the CTAs' input multiplier is the step it found.
fn without_cta_split(config: ReduceConfig) -> ReduceConfig {
    if config.ctas_per_output <= 1 {
        return config;
    }
    let mut unsplit = config;
    unsplit.step_input = config.input_mult[CTA];
    unsplit.input_mult[CTA] = 0;
    unsplit.ctas_per_output = 1;
    unsplit
}

/// Whether vector loads of `input_vec_size` inputs can run along the
/// fastest of several reduced dims of `iter`: that dim is contiguous and a
/// whole number of vectors long, and the base offset and every other
/// stride that moves (reduced or kept) are multiples of a vector's bytes.
/// Each vector then lies inside one run of the fastest dim, starting
/// aligned, wherever the `OffsetCalculator` puts it: the kernel has no
/// misaligned head or ragged tail to read here, unlike PyTorch's single
/// reduced dim. (One reduced dim is the port's own case.)
fn vectorizable_dims(iter: &TensorIterator, signature: &Signature) -> bool {
    if iter.num_reduce_dims() < 2 {
        return false;
    }
    let scalar = signature.input.size_in_bytes() as u64;
    let width = u64::from(signature.input_vec_size);
    let vector_bytes = width * scalar;
    let strides = iter.strides(TensorIterator::INPUT);
    let shape = iter.shape();
    width > 1
        && strides[0] == scalar as i64
        && shape[0] as u64 % width == 0
        && iter.data_offset(TensorIterator::INPUT) % vector_bytes == 0
        && shape[1..]
            .iter()
            .zip(&strides[1..])
            .all(|(&n, &st)| n == 1 || st.unsigned_abs() % vector_bytes == 0)
}

/// Whether [`Strategy::RowPerWarp`] applies: PyTorch's lanes walk a
/// warp's worth of a row, its warps split the row and no CTA split follows,
/// and there are rows for at least [`ROW_PER_WARP_MIN_SLOTS_PERCENT`] of
/// the device's warp slots.
fn row_per_warp(pytorch: &ReduceConfig, props: &DeviceProps) -> bool {
    pytorch.should_block_x_reduce()
        && pytorch.block_width == props.warp_size
        && pytorch.should_block_y_reduce()
        && !pytorch.should_global_reduce()
        && u64::from(pytorch.num_outputs) * 100
            >= warp_slots(props) * ROW_PER_WARP_MIN_SLOTS_PERCENT
}

/// A DRAM sector, the unit global loads and stores move: lanes whose
/// addresses are this far apart each cost one.
const SECTOR_BYTES: u64 = 32;

/// The iterator a launch runs on in place of `iter` (PyTorch's order), or
/// `None` to keep PyTorch's ([`TensorIterator::kept_dims_by_input`] with
/// a sector as the scattering distance). PyTorch's lanes walk the first
/// kept dim when no reduced dim is faster:
/// `[256, 256, 1024].permute(2, 0, 1)` reduced over its last dim puts the
/// dim of input stride 262144 first, and every lane's load is a sector of
/// its own (14% of the read). By the input, lanes read contiguous inputs
/// and write outputs far apart instead, a sector per output at worst,
/// which is never more than the reads save: each output has at least one
/// input, and each input's load cost a sector before.
///
/// Rows (a reduced dim faster than every kept one) keep PyTorch's order:
/// sorted by the input, sums of looked-up rows of 16 to 1024 elements
/// ran 0.94-1.04x as fast on an H100 and rows of 2 to 8 1.3-2.2x slower,
/// their results written far apart (docs/PERFORMANCE.md).
pub(super) fn kept_dims_by_input(iter: &TensorIterator) -> Option<TensorIterator> {
    iter.kept_dims_by_input(SECTOR_BYTES)
}

/// The output vector size of [`Strategy::TallColumns`] for `pytorch`'s
/// column reduction: PyTorch's halved while its last CTAs' threads fold
/// more than [`TALL_COLUMNS_MAX_STAGED_PER_THREAD`] partials each and a
/// lane's load stays at least [`TALL_COLUMNS_MIN_LOAD_BYTES`]; `None`
/// where that leaves PyTorch's.
fn tall_columns(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    pytorch: &ReduceConfig,
) -> Option<u32> {
    if pytorch.should_block_x_reduce() {
        return None;
    }
    let scalar_bytes = signature.input.size_in_bytes() as u32;
    let mut config = *pytorch;
    while staged_per_thread(&config) > TALL_COLUMNS_MAX_STAGED_PER_THREAD
        && config.output_vec_size / 2 * scalar_bytes >= TALL_COLUMNS_MIN_LOAD_BYTES
    {
        config =
            set_reduce_config_with_output_vec(iter, signature, props, config.output_vec_size / 2);
    }
    (config.output_vec_size != pytorch.output_vec_size).then_some(config.output_vec_size)
}

/// The output vector size of [`Strategy::ShortColumns`] for `pytorch`'s
/// column reduction: [`max_output_vec_size`] (or the widest the layout
/// allows below it) where PyTorch's lanes and the wider plan's each reduce
/// whole columns alone; `None` where that leaves PyTorch's.
fn short_columns(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    pytorch: &ReduceConfig,
) -> Option<u32> {
    let alone = |c: &ReduceConfig| {
        !c.vectorize_input
            && !c.should_block_x_reduce()
            && !c.should_block_y_reduce()
            && !c.should_global_reduce()
    };
    let max = max_output_vec_size(signature);
    if !alone(pytorch) || pytorch.output_vec_size >= max {
        return None;
    }
    let wide = set_reduce_config_with_output_vec(iter, signature, props, max);
    (alone(&wide) && wide.output_vec_size > pytorch.output_vec_size).then_some(wide.output_vec_size)
}

/// The output vector size of [`Strategy::RaggedColumns`] for `pytorch`'s
/// column reduction: [`max_output_vec_size`] where one reduced dim and one
/// contiguous kept dim left PyTorch's lanes fewer outputs, and the wider
/// plan's lanes fill a warp and reduce their columns alone; `None` where
/// that leaves PyTorch's.
fn ragged_columns(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    pytorch: &ReduceConfig,
) -> Option<u32> {
    // One reduced dim (the kernel steps through rows by one stride) and
    // one kept dim, contiguous.
    let nrd = iter.num_reduce_dims();
    let contiguous_columns = nrd == 1
        && iter.ndim() == 2
        && iter.strides(TensorIterator::INPUT)[nrd] == signature.input.size_in_bytes() as i64;
    if !contiguous_columns
        || pytorch.vectorize_input
        || pytorch.should_block_x_reduce()
        || pytorch.output_vec_size >= max_output_vec_size(signature)
    {
        return None;
    }
    // Long columns, whose warps (or CTAs) would split each lane's rows,
    // already keep many narrow loads in flight a lane: there the second
    // vector and the shifts cost more than the wider loads gain ([64,
    // 1048577] f32 ran 6% slower on an H100, columns of 3 to 16 rows
    // 1.07-1.75x faster).
    let ragged = set_reduce_config_ragged_columns(iter, signature, props);
    let alone = !ragged.should_block_x_reduce()
        && !ragged.should_block_y_reduce()
        && !ragged.should_global_reduce();
    (ragged.block_width >= props.warp_size && alone).then_some(ragged.output_vec_size)
}

/// Staged partials each thread of a global reduce's last CTA folds
/// (`combine_staged`): the CTAs of its column, shared by the block's rows,
/// or by all its threads where the lanes share outputs too. 0 without a
/// global reduce.
pub(super) fn staged_per_thread(config: &ReduceConfig) -> u32 {
    if !config.should_global_reduce() {
        return 0;
    }
    let sharing = if config.should_block_x_reduce() {
        config.num_threads
    } else {
        config.block_height
    };
    div_up(u64::from(config.ctas_per_output), u64::from(sharing.max(1))) as u32
}

/// Warps the device keeps resident at once: `sm_count * max_threads_per_sm
/// / warp_size`.
pub(super) fn warp_slots(props: &DeviceProps) -> u64 {
    u64::from(props.sm_count) * u64::from(props.max_threads_per_sm / props.warp_size.max(1))
}

/// The launch configuration of `strategy`: `pytorch` (the port's own
/// result) unless a branch replaces it.
pub fn configure(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    registers: &KernelRegisters,
    strategy: Strategy,
    pytorch: &ReduceConfig,
) -> ReduceConfig {
    match strategy {
        Strategy::PyTorch => *pytorch,
        Strategy::ShortRows(rows) => short_rows_config(iter, signature, props, rows),
        Strategy::CtaSplit { ctas_per_output } => with_cta_split(*pytorch, ctas_per_output),
        Strategy::VectorizedDims { cta_split } => {
            let config = set_reduce_config_vectorizing_dims(iter, signature, props);
            match cta_split {
                Some(ctas_per_output) => with_cta_split(without_cta_split(config), ctas_per_output),
                None => config,
            }
        }
        Strategy::TallColumns { output_vec_size } => {
            let config = set_reduce_config_with_output_vec(iter, signature, props, output_vec_size);
            if !config.should_global_reduce() {
                return config;
            }
            // PyTorch's ⌈target / grid.x⌉ can end in a partial wave.
            let port = config.ctas_per_output;
            let ours = whole_waves(port, config.grid()[0], wave(&config, props, registers));
            if ours == port {
                config
            } else {
                with_cta_split(without_cta_split(config), ours)
            }
        }
        Strategy::ShortColumns { output_vec_size } => {
            set_reduce_config_with_output_vec(iter, signature, props, output_vec_size)
        }
        Strategy::RaggedColumns { .. } => set_reduce_config_ragged_columns(iter, signature, props),
        Strategy::RowPerWarp => {
            // set_reduce_config's other branch: the warps' input multiplier
            // is the step they found, and they split the outputs instead.
            let mut config = *pytorch;
            config.step_input = config.input_mult[BLOCK_Y];
            config.input_mult[BLOCK_Y] = 0;
            config.output_mult[BLOCK_Y] = config.split_output(config.block_height);
            config
        }
    }
}

/// [`ShortRows`] for `iter` when its one reduced dim is contiguous and a
/// row is at most [`SHORT_ROWS_MAX_VECTORS_PER_LANE`] warps of loads (or a
/// short row of scalars).
pub(super) fn short_rows(
    iter: &TensorIterator,
    signature: &Signature,
    warp_size: u32,
) -> Option<ShortRows> {
    let nrd = iter.num_reduce_dims();
    if nrd != 1 || iter.ndim() <= nrd {
        return None;
    }
    let scalar = signature.input.size_in_bytes() as u64;
    let strides = iter.strides(TensorIterator::INPUT);
    if strides[0] != scalar as i64 {
        return None;
    }
    let row_len = iter.shape()[0] as u64;
    // Every row starts at the base plus multiples of the kept dims' strides
    // (those that move), from a storage base that is 256-byte aligned.
    let row_starts_aligned = |bytes: u64| {
        iter.data_offset(TensorIterator::INPUT) % bytes == 0
            && iter.shape()[nrd..]
                .iter()
                .zip(&strides[nrd..])
                .all(|(&n, &st)| n == 1 || st.unsigned_abs() % bytes == 0)
    };
    let widest = u64::from(short_row_load_inputs(signature, row_len)).min(16 / scalar);
    let mut row_vec_size = widest;
    while row_vec_size > 1
        && !(row_len % row_vec_size == 0 && row_starts_aligned(row_vec_size * scalar))
    {
        row_vec_size /= 2;
    }
    let row_bytes = row_len * scalar;
    if let Some(rows_per_vector) = rows_per_vector(iter, signature, row_len, widest) {
        return Some(ShortRows {
            row_len: row_len as u32,
            row_vec_size: rows_per_vector * row_len as u32,
            lanes_per_row: 1,
            staged: false,
            ragged: false,
            rows_per_vector,
        });
    }
    let staged = row_vec_size * scalar < 16
        && row_len > row_vec_size
        && row_bytes <= STAGED_ROW_MAX_BYTES
        && rows_packed(iter, row_bytes)
        && iter.data_offset(TensorIterator::INPUT) % SHORT_ROWS_STAGE_ALIGN == 0;
    let scalar_rows = staged || (row_vec_size == 1 && row_bytes <= SCALAR_ROW_MAX_BYTES);
    let ragged = || {
        let vectors = ragged_row_vectors(row_len as u32, widest as u32);
        Some(ShortRows {
            row_len: row_len as u32,
            row_vec_size: widest as u32,
            lanes_per_row: ragged_lanes(vectors, warp_size)?,
            staged: false,
            ragged: true,
            rows_per_vector: 1,
        })
    };
    if !scalar_rows && row_vec_size < widest && row_bytes > SCALAR_ROW_MAX_BYTES {
        return ragged();
    }
    if scalar_rows {
        return Some(ShortRows {
            row_len: row_len as u32,
            row_vec_size: 1,
            lanes_per_row: 1,
            staged,
            ragged: false,
            rows_per_vector: 1,
        });
    }
    let whole =
        lanes_for_vectors(row_len / row_vec_size, u64::from(warp_size)).map(|lanes| ShortRows {
            row_len: row_len as u32,
            row_vec_size: row_vec_size as u32,
            lanes_per_row: lanes as u32,
            staged: false,
            ragged: false,
            rows_per_vector: 1,
        });
    // Whole vectors that no lane count shares well (a prime count over a
    // warp, or one row a warp with half its lanes idle) read fewer bytes a
    // load instruction than the same row read ragged. On an H200 (256 MiB,
    // against whole vectors): f32 rows of 148 (37 vectors, PyTorch's warp
    // a row) ran 1.77x faster ragged, f16 rows of 296 1.74x, i64 rows of
    // 74 1.40x; rows of 17 vectors (a warp of 17 lanes) 1.23x (f32 of 68)
    // and 1.29x (bf16 of 136); f32 rows of 132 (69% as whole vectors) and
    // f64 rows of 40 (62%) level.
    let whole_used = whole.map(|w| loads_used_per_mille(&w, warp_size));
    if row_bytes > SCALAR_ROW_MAX_BYTES
        && whole_used.is_none_or(|used| used < RAGGED_MIN_LOADS_USED_PERCENT * 10)
    {
        let uses_more =
            |r: &ShortRows| whole_used.is_none_or(|used| loads_used_per_mille(r, warp_size) > used);
        if let Some(r) = ragged().filter(uses_more) {
            return Some(r);
        }
    }
    whole
}

/// Whether `rows`, which [`short_rows`] found, are left to the strategies
/// after [`Strategy::ShortRows`]: rows looked up one by one, of 8-byte
/// inputs, read in whole vectors of several inputs of which a lane takes
/// more than [`LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE`]. Rows read a scalar
/// at a time (a lane each), staged or ragged were not measured and keep
/// ShortRows.
pub(super) fn left_to_pytorch(
    iter: &TensorIterator,
    signature: &Signature,
    rows: &ShortRows,
) -> bool {
    let whole_vectors = rows.row_vec_size > 1 && !rows.ragged && rows.rows_per_vector == 1;
    whole_vectors
        && !rows_by_one_stride(iter)
        && signature.input.size_in_bytes() == 8
        && rows.vectors_per_lane() > looked_up_8_byte_max_vectors_per_lane(signature)
}

/// The bound of [`left_to_pytorch`] for `signature`'s state:
/// [`LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE`] or, for state wider than 8
/// bytes, [`LOOKED_UP_8_BYTE_WIDE_STATE_MAX_VECTORS_PER_LANE`].
pub(super) fn looked_up_8_byte_max_vectors_per_lane(signature: &Signature) -> u32 {
    if is_wide_state(signature.acc.size_in_bytes() as u32) {
        LOOKED_UP_8_BYTE_WIDE_STATE_MAX_VECTORS_PER_LANE
    } else {
        LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE
    }
}

/// The widest state (accumulator) of the sums, products, max and min, in
/// bytes (an f64 or i64): wider state is an index pair or Welford's.
const NARROW_STATE_MAX_BYTES: u32 = 8;

/// Whether an op's state (its accumulator) of `state_bytes` is wider than
/// [`NARROW_STATE_MAX_BYTES`]: index pairs and Welford's, not the sums,
/// products, max and min. The one rule behind every bound that treats
/// wide state apart.
fn is_wide_state(state_bytes: u32) -> bool {
    state_bytes > NARROW_STATE_MAX_BYTES
}

/// Whether the rows of a single reduced dim are found by one stride: the
/// kept dims coalesced into at most one, so a row's offsets are a
/// multiply. Otherwise `short_rows_kernel` looks each row up through the
/// output `OffsetCalculator`, once per row.
pub(super) fn rows_by_one_stride(iter: &TensorIterator) -> bool {
    iter.shape().len() - iter.num_reduce_dims() <= 1
}

/// The most rows one thread of a ShortRows launch of `config` over `iter`
/// takes (the register arrays of the kernel it runs): fewer where the rows
/// are looked up one by one or the accumulator is wider than
/// [`SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES`]. Packed rows (always in one
/// kept dim) run a kernel of their own with eight.
pub(super) fn short_rows_max_rows_per_thread(iter: &TensorIterator, config: &ReduceConfig) -> u32 {
    if config.packed_rows()
        || (rows_by_one_stride(iter)
            && config.element_size_bytes <= SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES)
    {
        SHORT_ROWS_MAX_ROWS_PER_THREAD
    } else {
        SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD
    }
}

/// Per mille of a warp's load slots that fall on its rows' inputs under
/// `rows`, where a row needs `⌈row_len / row_vec_size⌉` loads (a ragged
/// row's extra vector at its start or end counts as waste).
fn loads_used_per_mille(rows: &ShortRows, warp_size: u32) -> u64 {
    warp_loads_used_per_mille(
        rows.row_len.div_ceil(rows.row_vec_size.max(1)),
        rows.lanes_per_row,
        rows.vectors_per_lane(),
        warp_size,
    )
}

/// Per mille of a warp's load slots that carry one of a row's `needed`
/// loads, when `lanes` lanes share each row and each issues `per_lane`
/// loads: the warp holds `warp / lanes` rows, and its lanes issue `warp x
/// per_lane` loads.
fn warp_loads_used_per_mille(needed: u32, lanes: u32, per_lane: u32, warp_size: u32) -> u64 {
    (u64::from(warp_size / lanes.max(1)) * u64::from(needed) * 1000)
        .checked_div(u64::from(warp_size) * u64::from(per_lane))
        .unwrap_or(0)
}

/// [`ShortRows::rows_per_vector`] for rows of `row_len` inputs, where a
/// load of at most the `widest` inputs holds whole rows: the rows divide it
/// and lie end to end from a base aligned to the load, in one kept dim (the
/// kernel finds them by one stride), whose outputs lie end to end too: a
/// split launch's accumulation buffer, which mirrors the output's layout,
/// holds a lane's results as one vector only where they are consecutive.
/// A load holds as many rows as fit it and [`PACKED_ROWS_MAX_RESULT_BYTES`]
/// of their outputs. `None` for every other row.
fn rows_per_vector(
    iter: &TensorIterator,
    signature: &Signature,
    row_len: u64,
    widest: u64,
) -> Option<u32> {
    let nrd = iter.num_reduce_dims();
    let scalar = signature.input.size_in_bytes() as u64;
    let out_size = iter.element_size(TensorIterator::OUTPUT) as u64;
    let rows = (widest / row_len.max(1)).min(PACKED_ROWS_MAX_RESULT_BYTES / out_size);
    let packs = row_len >= 2
        && rows >= 2
        && widest % row_len == 0
        && iter.ndim() == nrd + 1
        && iter.strides(TensorIterator::OUTPUT)[nrd] == out_size as i64
        && rows_packed(iter, row_len * scalar)
        && iter.data_offset(TensorIterator::INPUT) % (rows * row_len * scalar) == 0;
    packs.then_some(rows as u32)
}

/// Whether output `i`'s row starts `i * row_bytes` past the first: the kept
/// dims, fastest first, are laid out one after another with nothing between
/// rows. A warp's 32 rows are then one span of `32 * row_bytes` bytes,
/// aligned wherever the base is (`32 * row_bytes` is a multiple of 16).
fn rows_packed(iter: &TensorIterator, row_bytes: u64) -> bool {
    let nrd = iter.num_reduce_dims();
    let strides = iter.strides(TensorIterator::INPUT);
    let mut expected = row_bytes;
    for (&n, &stride) in iter.shape()[nrd..].iter().zip(&strides[nrd..]) {
        if n == 1 {
            continue;
        }
        if stride != expected as i64 {
            return false;
        }
        expected *= n as u64;
    }
    true
}

/// Bytes of one warp's span of [`ShortRows::staged`] rows, a row a lane.
pub fn short_rows_span_bytes(config: &ReduceConfig, warp_size: u32, scalar_bytes: u32) -> u64 {
    u64::from(warp_size) * u64::from(config.num_inputs) * u64::from(scalar_bytes)
}

/// Bytes of shared memory a [`ShortRows::staged`] block needs: a span per
/// warp and per row a thread takes.
pub fn short_rows_stage_bytes(config: &ReduceConfig, warp_size: u32, scalar_bytes: u32) -> u64 {
    u64::from(config.block_height)
        * u64::from(config.rows_per_thread)
        * short_rows_span_bytes(config, warp_size, scalar_bytes)
}

/// Lanes for a row of `vectors` loads: the most lanes, at most a warp,
/// that split the row into equal shares of at most
/// [`SHORT_ROWS_MAX_VECTORS_PER_LANE`] vectors (every lane then loads as
/// many, so the kernel needs no per-lane bound).
fn lanes_for_vectors(vectors: u64, warp_size: u64) -> Option<u64> {
    (1..=SHORT_ROWS_MAX_VECTORS_PER_LANE)
        .find(|&per_lane| vectors % per_lane == 0 && vectors / per_lane <= warp_size)
        .map(|per_lane| vectors / per_lane)
}

/// Lanes for a [`ShortRows::ragged`] row of at most `vectors` loads: the
/// most lanes (the fewest loads a lane, at most
/// [`SHORT_ROWS_MAX_VECTORS_PER_LANE`]) whose warp puts at least
/// [`RAGGED_MIN_LOADS_USED_PERCENT`] of its lanes' loads on its rows, else
/// the count that puts the most. A warp of `lanes` a row holds `warp /
/// lanes` rows, and each lane issues `⌈vectors / lanes⌉` loads: lanes left
/// over, and lanes whose last load falls past the row, issue nothing
/// useful. Unlike a row of whole vectors, the lanes need not divide the
/// vectors: rows of 37 i64 (19 vectors at most) take 10 lanes of 2 loads,
/// 3 rows a warp (89% used), where 19 lanes of one load hold 1 (59%).
fn ragged_lanes(vectors: u32, warp_size: u32) -> Option<u32> {
    let mut best: Option<(u32, u64)> = None; // (lanes, loads used per mille)
    for per_lane in 1..=SHORT_ROWS_MAX_VECTORS_PER_LANE as u32 {
        let lanes = vectors.div_ceil(per_lane);
        if lanes > warp_size {
            continue;
        }
        let used = warp_loads_used_per_mille(vectors, lanes, per_lane, warp_size);
        if used >= RAGGED_MIN_LOADS_USED_PERCENT * 10 {
            return Some(lanes);
        }
        if best.is_none_or(|(_, best_used)| used > best_used) {
            best = Some((lanes, used));
        }
    }
    best.map(|(lanes, _)| lanes)
}

/// The blocks of a ShortRows launch (`config`) that its kernel keeps
/// resident on the whole device at once: its register budget allows
/// [`SHORT_ROWS_MIN_BLOCKS_PER_SM`] per SM, or
/// [`SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM`] for the `wide_loads` kernel, fewer
/// where the SM's thread limit says so.
pub(super) fn short_rows_full_wave(props: &DeviceProps, config: &ReduceConfig) -> u64 {
    let budget = if config.wide_loads() {
        SHORT_ROWS_WIDE_MIN_BLOCKS_PER_SM
    } else {
        SHORT_ROWS_MIN_BLOCKS_PER_SM
    };
    let per_sm = (props.max_threads_per_sm / config.num_threads.max(1)).clamp(1, budget);
    u64::from(props.sm_count) * u64::from(per_sm)
}

/// A warp per block row, `warp / lanes_per_row` rows per warp; each thread
/// takes as many rows (up to [`short_rows_max_rows_per_thread`]) as leave a
/// full wave of blocks on the device, so that small inputs still spread
/// over every SM.
fn short_rows_config(
    iter: &TensorIterator,
    signature: &Signature,
    props: &DeviceProps,
    rows: ShortRows,
) -> ReduceConfig {
    let num_outputs = iter.num_output_elements() as u32;
    let scalar_bytes = signature.input.size_in_bytes() as u32;
    let mut config = ReduceConfig::new(
        signature.acc.size_in_bytes() as u32,
        num_outputs,
        rows.row_len,
        signature,
        props.warp_size,
    );
    config.block_width = props.warp_size;
    config.block_height =
        (SHORT_ROWS_THREADS.min(signature.max_num_threads) / props.warp_size).max(1);
    config.num_threads = config.block_width * config.block_height;
    config.lanes_per_row = rows.lanes_per_row;
    config.row_vec_size = rows.row_vec_size;
    config.ragged_rows = rows.ragged;
    // A lane's packed rows are its output vector, and a "row" of the
    // launch's index maps (step_output, rows_per_thread) is one such group.
    config.output_vec_size = rows.rows_per_vector;
    config.step_output = config.block_height * (props.warp_size / rows.lanes_per_row);
    let full_wave = short_rows_full_wave(props, &config);
    let groups = div_up(u64::from(num_outputs), u64::from(rows.rows_per_vector));
    config.rows_per_thread = short_rows_max_rows_per_thread(iter, &config);
    while config.rows_per_thread > 1
        && div_up(
            groups,
            u64::from(config.step_output) * u64::from(config.rows_per_thread),
        ) < full_wave
    {
        config.rows_per_thread /= 2;
    }
    if rows.staged {
        // Fewer rows a thread until the block's spans fit its stage: the
        // copies hold no registers, so shared memory alone bounds them.
        config.stage_rows = true;
        while config.rows_per_thread > 1
            && short_rows_stage_bytes(&config, props.warp_size, scalar_bytes)
                > u64::from(SHORT_ROWS_STAGE_BYTES)
        {
            config.rows_per_thread /= 2;
        }
    }
    config
}
