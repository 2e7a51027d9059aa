//! A CPU model of which inputs `reduce_kernel` reads and where each ends up,
//! walking the same index maps as PyTorch's `ReduceOp::run`: the executable
//! spec of a [`LaunchPlan`] for the CUDA kernel, and what the coverage tests
//! check against the iterator.
//!
//! Modelled exactly:
//! - `output_idx` / `input_idx` per (threadIdx, blockIdx), the
//!   `output_idx < num_outputs && input_idx < num_inputs` gate;
//! - `thread_reduce_impl`: indices `input_idx + k * step_input`, each mapped
//!   through the input offset calculator (reduced dims) and loaded as
//!   `output_vec_size` consecutive elements at `offset / output_vec_size`
//!   (under `ragged_columns`, at `offset` itself, and only those of outputs
//!   below `num_outputs`);
//! - `input_vectorized_thread_reduce_impl`: the misaligned head (`shift`,
//!   read by lanes `shift <= x < input_vec_size` that `should_reduce_tail`),
//!   the aligned `input_vec_size`-wide main loop, and the scalar tail; over
//!   several reduced dims, each vector found through the input offset
//!   calculator, which must leave it aligned and inside one run;
//! - where values go: a value joins the output of the group's storing thread
//!   (lane 0 under block_x_reduce, warp 0 under block_y_reduce), element `j`
//!   of an output vector to output `output_idx + j`;
//! - the ShortRows strategy's map (`short_rows`): row groups of lanes,
//!   rows a CTA pass apart, one aligned vector per lane and row (ragged
//!   rows: the aligned vectors around each row, only its inputs counted;
//!   packed rows: one aligned vector per lane and group of rows);
//! - that lanes wider than PyTorch's widest reduce their outputs alone,
//!   as their kernels have no block or global reduce;
//! - where outputs are stored: where the host's `contiguous_output_vectors`
//!   lets a lane store its outputs as one vector, each group must lie end to
//!   end from an address aligned to the whole vector;
//! - the global reduce's staging buffer: every storing thread of every CTA
//!   writes `staging_memory_offset(blockIdx.y)`, and the last CTA of each
//!   column reads the slots its threads stride over; each slot must be
//!   inside `global_memory_size()`, written once, read once, by the same
//!   output group.
//!
//! Not modelled: the order of the combines (which decides rounding, not
//! coverage), the accumulate/final_output passes between split launches, and
//! the storage base address, which is taken as 256-byte aligned.

use super::LaunchPlan;
use crate::cuda::params::contiguous_output_vectors;
use crate::iter::TensorIterator;
use std::collections::HashMap;

/// Byte offsets of the output element written and the input element read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Visit {
    /// From the output's storage base (includes its data offset).
    pub output: u64,
    /// From the input's storage base (includes its data offset).
    pub input: u64,
}

/// PyTorch's `OffsetCalculator` over `dims` of `iter`, for `args`: the byte
/// offsets of linear index `idx`, dim `dims.start` fastest.
pub(crate) fn offsets(
    iter: &TensorIterator,
    dims: std::ops::Range<usize>,
    idx: u64,
    arg: usize,
) -> u64 {
    let mut rem = idx;
    let mut off = 0u64;
    for d in dims {
        let n = iter.shape()[d] as u64;
        off += (rem % n) * iter.strides(arg)[d].unsigned_abs();
        rem /= n;
    }
    off
}

/// Calls `visit` once for every (output, input) pair the launch reduces.
/// `scalar_size` is `sizeof(scalar_t)`. Errors describe a broken invariant
/// of the launch (a value that is never stored, a staging slot clash).
pub fn simulate_launch(
    launch: &LaunchPlan,
    scalar_size: u64,
    mut visit: impl FnMut(Visit),
) -> Result<(), String> {
    let c = &launch.config;
    let it = &launch.iter;
    let nrd = it.num_reduce_dims();
    let ndim = it.ndim();
    let ovs = c.output_vec_size;
    let (out_base, in_base) = (
        it.data_offset(TensorIterator::OUTPUT),
        it.data_offset(TensorIterator::INPUT),
    );
    let output_at =
        |o: u32| out_base + offsets(it, nrd..ndim, u64::from(o), TensorIterator::OUTPUT);
    if c.vectorize_input
        && (ovs != 1 || nrd == 0 || it.strides(TensorIterator::INPUT)[0] as u64 != scalar_size)
    {
        return Err(
            "vectorize_input needs output_vec_size 1 and a contiguous fastest reduced dim".into(),
        );
    }
    // The kernel's ragged path steps through rows by one stride, and only
    // a module's widest reduce_kernel carries it, never narrower than
    // PyTorch's widest (the host refuses any other width).
    if c.ragged_columns
        && (nrd != 1 || ndim != 2 || ovs < super::config::PYTORCH_MAX_OUTPUT_VEC_SIZE)
    {
        return Err(
            "ragged_columns needs one reduced and one kept dim, and PyTorch's widest output vector or wider"
                .into(),
        );
    }
    if c.wide_lanes_share_outputs() {
        return Err(format!(
            "lanes of {ovs} outputs have no block or global reduce, but the plan shares them"
        ));
    }
    if c.lanes_per_row != 0 {
        return short_rows_reads(launch, scalar_size, &mut visit);
    }
    // The kernel's vector stores: the host's rule, with the storage base
    // 256-byte aligned, must give groups that really lie end to end.
    let out_size = it.element_size(TensorIterator::OUTPUT) as u64;
    let contiguous_outputs = contiguous_output_vectors(it, ovs, out_size as usize, out_base);
    let check_output_vector = |first: u32, output_at: &dyn Fn(u32) -> u64| {
        let live = if c.ragged_columns {
            ovs.min(c.num_outputs - first)
        } else {
            ovs
        };
        let start = output_at(first);
        let linear = (0..live).all(|j| output_at(first + j) == start + u64::from(j) * out_size);
        if linear && start % (u64::from(ovs) * out_size) == 0 {
            Ok(())
        } else {
            Err(format!(
                "outputs {first}.. are stored as one vector but do not lie end to end from an aligned address"
            ))
        }
    };
    let [gx, gy, _] = launch.grid;
    let [bw, bh, _] = launch.block;
    for by in 0..gy {
        for bx in 0..gx {
            let block = [bx, by, 0];
            for ty in 0..bh {
                for tx in 0..bw {
                    let thread = [tx, ty, 0];
                    let output_idx = c.output_idx(thread, block);
                    let input_idx = c.input_idx(thread, block);
                    if output_idx >= c.num_outputs || input_idx >= c.num_inputs {
                        continue;
                    }
                    let storer = [
                        if c.should_block_x_reduce() { 0 } else { tx },
                        if c.should_block_y_reduce() { 0 } else { ty },
                        0,
                    ];
                    let store_idx = c.output_idx(storer, block);
                    if store_idx >= c.num_outputs {
                        return Err(format!("thread {thread:?} of block {block:?} reads for an output group nobody stores"));
                    }
                    if contiguous_outputs {
                        check_output_vector(store_idx, &output_at)?;
                    }
                    let slice = in_base
                        + offsets(it, nrd..ndim, u64::from(output_idx), TensorIterator::INPUT);
                    let mut read = |j: u32, input: u64| {
                        visit(Visit {
                            output: output_at(store_idx + j),
                            input,
                        })
                    };
                    if c.vectorize_input && nrd > 1 {
                        vectorized_dims_reads(
                            launch,
                            scalar_size,
                            slice,
                            thread,
                            block,
                            &mut |a| read(0, a),
                        )?;
                    } else if c.vectorize_input {
                        vectorized_reads(launch, scalar_size, slice, thread, block, &mut |a| {
                            read(0, a)
                        });
                    } else {
                        let mut idx = u64::from(input_idx);
                        while idx < u64::from(c.num_inputs) {
                            let elems =
                                offsets(it, 0..nrd, idx, TensorIterator::INPUT) / scalar_size;
                            // A ragged lane's vector starts where its row
                            // does, and its outputs past the last are not
                            // stored.
                            let (vec_start, live) = if c.ragged_columns {
                                (elems, ovs.min(c.num_outputs - store_idx))
                            } else {
                                (elems / u64::from(ovs) * u64::from(ovs), ovs)
                            };
                            for j in 0..live {
                                read(j, slice + (vec_start + u64::from(j)) * scalar_size);
                            }
                            idx += u64::from(c.step_input);
                        }
                    }
                }
            }
        }
    }
    if c.should_global_reduce() {
        check_staging(launch)?;
    }
    Ok(())
}

/// `short_rows`' reads: lane `tx % lanes_per_row` of row group
/// `tx / lanes_per_row` loads vectors `lane`, `lane + lanes_per_row`, ...
/// of `row_vec_size` inputs of each of its `rows_per_thread` rows,
/// `step_output` rows apart (which lane then stores a row is the kernel's
/// combine, not the plan's map, so it is not modelled here). Every
/// load must be aligned to its width. Under `stage_rows` a lane reads its
/// row where the kernel finds it in shared memory: `lane * row_len` inputs
/// into its warp's span, copied 16 bytes at a time from the warp's first
/// row, so the visits are right only if the rows really are packed. Under
/// `ragged_rows` a lane loads vectors `lane`, `lane + lanes_per_row`, ...
/// of those aligned to `row_vec_size` inputs from the one holding the
/// row's first input, and visits the inputs that fall inside the row (the
/// kernel's fallback for rows that end within a vector of the allocation's
/// end reads the same inputs, a lane's every `lanes_per_row`-th).
fn short_rows_reads(
    launch: &LaunchPlan,
    scalar_size: u64,
    visit: &mut impl FnMut(Visit),
) -> Result<(), String> {
    let c = &launch.config;
    let it = &launch.iter;
    let nrd = it.num_reduce_dims();
    if nrd != 1 || it.strides(TensorIterator::INPUT)[0] as u64 != scalar_size {
        return Err("short rows need one contiguous reduced dim".into());
    }
    let threads: u32 = launch.block.iter().map(|&b| b.max(1)).product();
    if threads > super::SHORT_ROWS_THREADS {
        // short_rows_kernel's launch bound: a larger block would not launch.
        return Err(format!(
            "short rows in a block of {threads} threads, over short_rows_kernel's {}",
            super::SHORT_ROWS_THREADS
        ));
    }
    let most = launch.short_rows_max_rows_per_thread();
    if c.rows_per_thread == 0 || c.rows_per_thread > most {
        return Err(format!(
            "{} rows per thread, outside its kernel's 1..={most}",
            c.rows_per_thread
        ));
    }
    if c.packed_rows() {
        return packed_rows_reads(launch, scalar_size, visit);
    }
    let (lanes, width) = (c.lanes_per_row, u64::from(c.row_vec_size));
    let vectors = if c.ragged_rows {
        super::strategy::ragged_row_vectors(c.num_inputs, c.row_vec_size).div_ceil(lanes.max(1))
    } else {
        c.num_inputs / (lanes.max(1) * c.row_vec_size)
    };
    if c.ragged_rows && (c.stage_rows || width < 2) {
        return Err(format!(
            "ragged rows of {width}-input loads{}",
            if c.stage_rows { ", staged" } else { "" }
        ));
    }
    let covered = u64::from(vectors) * u64::from(lanes) * width;
    let needed = if c.ragged_rows {
        u64::from(c.num_inputs) + width - 1
    } else {
        u64::from(c.num_inputs)
    };
    if lanes == 0
        || covered < needed
        || (!c.ragged_rows && c.num_inputs % (lanes * c.row_vec_size) != 0)
        || lanes > launch.block[0]
    {
        return Err(format!(
            "{lanes} lanes x {width} inputs do not cover a row of {} within a warp of {}",
            c.num_inputs, launch.block[0]
        ));
    }
    if c.stage_rows {
        let need = u64::from(launch.block[1])
            * u64::from(c.rows_per_thread)
            * u64::from(launch.block[0])
            * u64::from(c.num_inputs)
            * scalar_size;
        if lanes != 1 || width != 1 {
            return Err(format!(
                "staged rows with {lanes} lanes x {width} inputs, not a lane per row"
            ));
        }
        if need > u64::from(launch.shared_memory_bytes)
            || launch.shared_memory_bytes > super::SHORT_ROWS_STAGE_BYTES
        {
            return Err(format!(
                "staged rows need {need} B of shared memory, the launch has {} (at most {})",
                launch.shared_memory_bytes,
                super::SHORT_ROWS_STAGE_BYTES
            ));
        }
    }
    let rows_per_warp = launch.block[0] / lanes;
    let in_base = it.data_offset(TensorIterator::INPUT);
    let out_base = it.data_offset(TensorIterator::OUTPUT);
    let ndim = it.ndim();
    for bx in 0..launch.grid[0] {
        for ty in 0..launch.block[1] {
            for tx in 0..launch.block[0] {
                let (group, lane) = (tx / lanes, tx % lanes);
                if group >= rows_per_warp {
                    continue;
                }
                for r in 0..c.rows_per_thread {
                    let row = (bx * c.step_output * c.rows_per_thread
                        + ty * rows_per_warp
                        + group
                        + r * c.step_output) as u64;
                    if row >= u64::from(c.num_outputs) {
                        continue;
                    }
                    let output = out_base + offsets(it, nrd..ndim, row, TensorIterator::OUTPUT);
                    if c.stage_rows {
                        // The kernel finds packed rows by arithmetic, not by
                        // the OffsetCalculator: row i at i * row_bytes, a
                        // warp's rows from shared memory when every row the
                        // thread takes lies in a whole span, else from
                        // global memory. Visits land where the rows really
                        // are only if the planner was right to stage them.
                        let row_bytes = u64::from(c.num_inputs) * scalar_size;
                        let warp_row = row - u64::from(tx);
                        let first_warp_row = warp_row - u64::from(r * c.step_output);
                        let whole = first_warp_row
                            + u64::from((c.rows_per_thread - 1) * c.step_output)
                            + u64::from(launch.block[0])
                            <= u64::from(c.num_outputs);
                        let span = in_base + warp_row * row_bytes;
                        if whole && span % super::SHORT_ROWS_STAGE_ALIGN != 0 {
                            return Err(format!(
                                "row {warp_row}: a span of rows staged from misaligned byte {span}"
                            ));
                        }
                        let row_start = in_base + row * row_bytes;
                        for i in 0..u64::from(c.num_inputs) {
                            visit(Visit {
                                output,
                                input: row_start + i * scalar_size,
                            });
                        }
                        continue;
                    }
                    let row_start = in_base + offsets(it, nrd..ndim, row, TensorIterator::INPUT);
                    if c.ragged_rows {
                        let load_bytes = width * scalar_size;
                        let head = row_start % load_bytes / scalar_size;
                        let first_vector = row_start - head * scalar_size;
                        for k in 0..vectors {
                            let vector = u64::from(k * lanes + lane);
                            for i in 0..width {
                                let input = (vector * width + i).wrapping_sub(head);
                                if input < u64::from(c.num_inputs) {
                                    visit(Visit {
                                        output,
                                        input: first_vector + (vector * width + i) * scalar_size,
                                    });
                                }
                            }
                        }
                        continue;
                    }
                    for k in 0..vectors {
                        let vector = u64::from(k * lanes + lane);
                        let load = row_start + vector * width * scalar_size;
                        if load % (width * scalar_size) != 0 {
                            return Err(format!(
                                "row {row}: a {width}-input load at byte {load} is misaligned"
                            ));
                        }
                        for i in 0..width {
                            visit(Visit {
                                output,
                                input: load + i * scalar_size,
                            });
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `packed_rows`' reads (`packed_rows_kernel`): lane `tx` of warp `ty` takes groups of
/// `output_vec_size` consecutive rows, `rows_per_thread` of them a CTA pass
/// (`step_output` groups) apart, and reads a whole group as one
/// `row_vec_size`-input load from its first row's start, which must be
/// aligned to it: input `k` of the load feeds row `k / num_inputs` of the
/// group, so the visits land on the rows' inputs only if the rows really
/// lie end to end. A group cut short by the last row reads each of its rows
/// input by input. Where the host's `contiguous_output_vectors` lets the
/// lane store its group as one vector, the group's outputs must lie end to
/// end from an address aligned to all of them.
fn packed_rows_reads(
    launch: &LaunchPlan,
    scalar_size: u64,
    visit: &mut impl FnMut(Visit),
) -> Result<(), String> {
    let c = &launch.config;
    let it = &launch.iter;
    let (rows, width) = (c.output_vec_size, c.row_vec_size);
    if c.lanes_per_row != 1
        || c.stage_rows
        || c.ragged_rows
        || it.ndim() != 2
        || c.num_inputs.checked_mul(rows) != Some(width)
    {
        return Err(format!(
            "packed rows of {} inputs, {rows} a {width}-input load, need one kept dim and a lane per load",
            c.num_inputs
        ));
    }
    let in_base = it.data_offset(TensorIterator::INPUT);
    let out_base = it.data_offset(TensorIterator::OUTPUT);
    let out_size = it.element_size(TensorIterator::OUTPUT) as u64;
    let one_store = contiguous_output_vectors(it, rows, out_size as usize, out_base);
    let row_at = |row: u64, arg| offsets(it, 1..2, row, arg);
    let load_bytes = u64::from(width) * scalar_size;
    for bx in 0..launch.grid[0] {
        for ty in 0..launch.block[1] {
            for tx in 0..launch.block[0] {
                for r in 0..c.rows_per_thread {
                    let group = u64::from(
                        bx * c.step_output * c.rows_per_thread
                            + ty * launch.block[0]
                            + tx
                            + r * c.step_output,
                    );
                    let first = group * u64::from(rows);
                    if first >= u64::from(c.num_outputs) {
                        continue;
                    }
                    let live = (u64::from(c.num_outputs) - first).min(u64::from(rows));
                    let output = |j: u64| out_base + row_at(first + j, TensorIterator::OUTPUT);
                    if one_store
                        && live == u64::from(rows)
                        && ((0..live).any(|j| output(j) != output(0) + j * out_size)
                            || output(0) % (u64::from(rows) * out_size) != 0)
                    {
                        return Err(format!(
                            "rows {first}.. are stored as one vector but their outputs do not lie end to end from an aligned address"
                        ));
                    }
                    let start = in_base + row_at(first, TensorIterator::INPUT);
                    if live == u64::from(rows) {
                        if start % load_bytes != 0 {
                            return Err(format!(
                                "rows {first}..: a {width}-input load at byte {start} is misaligned"
                            ));
                        }
                        for k in 0..u64::from(width) {
                            visit(Visit {
                                output: output(k / u64::from(c.num_inputs)),
                                input: start + k * scalar_size,
                            });
                        }
                    } else {
                        for j in 0..live {
                            let row_start = in_base + row_at(first + j, TensorIterator::INPUT);
                            for i in 0..u64::from(c.num_inputs) {
                                visit(Visit {
                                    output: output(j),
                                    input: row_start + i * scalar_size,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `input_vectorized_thread_reduce_impl`'s reads for one thread whose row
/// starts at byte `slice`.
fn vectorized_reads(
    launch: &LaunchPlan,
    s: u64,
    slice: u64,
    thread: [u32; 3],
    block: [u32; 3],
    read: &mut dyn FnMut(u64),
) {
    let c = &launch.config;
    let v = u64::from(c.input_vec_size);
    let tx = u64::from(thread[0]);
    let tail_owner = c.should_reduce_tail(thread, block);
    let mut data = slice;
    let mut end = u64::from(c.num_inputs);
    let shift = (slice % (v * s)) / s;
    if shift > 0 {
        data -= shift * s;
        end += shift;
        if tx >= shift && tx < v && tail_owner {
            read(data + tx * s);
        }
        end -= v;
        data += v * s;
    }
    let mut idx = u64::from(c.input_idx(thread, block));
    while idx * v + v - 1 < end {
        for i in 0..v {
            read(data + (idx * v + i) * s);
        }
        idx += u64::from(c.step_input);
    }
    let tail_start = end - end % v;
    if tail_owner && tail_start + tx < end {
        read(data + (tail_start + tx) * s);
    }
}

/// `input_vectorized_thread_reduce_impl`'s reads over several reduced dims
/// (`Strategy::VectorizedDims`) for one thread whose inputs start at byte
/// `slice`: vector `idx` is the `input_vec_size` bytes-wide load at the
/// offset of input `idx * input_vec_size`, with no head and no tail. The
/// kernel loads it whole, so it must be aligned, the reduced inputs must be
/// whole vectors, and the vector's inputs must be where the iterator puts
/// inputs `idx * input_vec_size + i`; anything else is an error.
fn vectorized_dims_reads(
    launch: &LaunchPlan,
    s: u64,
    slice: u64,
    thread: [u32; 3],
    block: [u32; 3],
    read: &mut dyn FnMut(u64),
) -> Result<(), String> {
    let c = &launch.config;
    let it = &launch.iter;
    let nrd = it.num_reduce_dims();
    let v = u64::from(c.input_vec_size);
    let end = u64::from(c.num_inputs);
    if end % v != 0 {
        return Err(format!(
            "{end} reduced inputs are not whole vectors of {v}: the tail would go unread"
        ));
    }
    let mut idx = u64::from(c.input_idx(thread, block));
    while idx * v + v - 1 < end {
        let load = slice + offsets(it, 0..nrd, idx * v, TensorIterator::INPUT);
        if load % (v * s) != 0 {
            return Err(format!("a {v}-input load at byte {load} is misaligned"));
        }
        for i in 0..v {
            let input = slice + offsets(it, 0..nrd, idx * v + i, TensorIterator::INPUT);
            if input != load + i * s {
                return Err(format!(
                    "the vector at byte {load} crosses a reduced dim: its input {i} is at byte {input}"
                ));
            }
            read(input);
        }
        idx += u64::from(c.step_input);
    }
    Ok(())
}

/// The staging-buffer handshake of `global_reduce`.
fn check_staging(launch: &LaunchPlan) -> Result<(), String> {
    let c = &launch.config;
    let slot_bytes = u64::from(c.element_size_bytes) * u64::from(c.output_vec_size);
    let capacity = c.global_memory_size() / slot_bytes;
    let [gx, gy, _] = launch.grid;
    let [bw, bh, _] = launch.block;
    // slot -> (output group it holds, times read)
    let mut slots: HashMap<u32, (u32, u32)> = HashMap::new();
    for by in 0..gy {
        for bx in 0..gx {
            for ty in 0..bh {
                for tx in 0..bw {
                    let (thread, block) = ([tx, ty, 0], [bx, by, 0]);
                    let output_idx = c.output_idx(thread, block);
                    if !c.should_store(output_idx, thread) {
                        continue;
                    }
                    let slot = c.staging_memory_offset(by, thread, block);
                    if u64::from(slot) >= capacity {
                        return Err(format!(
                            "staging slot {slot} is outside the {capacity} slots"
                        ));
                    }
                    if slots.insert(slot, (output_idx, 0)).is_some() {
                        return Err(format!("staging slot {slot} written twice"));
                    }
                }
            }
        }
    }
    // The last CTA of each column (any blockIdx.y: the reads do not depend on it).
    for bx in 0..gx {
        let block = [bx, gy - 1, 0];
        for ty in 0..bh {
            for tx in 0..bw {
                let thread = [tx, ty, 0];
                let (mut offset, step, storer) = if c.should_block_x_reduce() {
                    (tx + ty * bw, bw * bh, [0, 0, 0])
                } else {
                    (ty, bh, [tx, 0, 0])
                };
                let store_idx = c.output_idx(storer, block);
                while offset < c.ctas_per_output {
                    let slot = c.staging_memory_offset(offset, thread, block);
                    offset += step;
                    if u64::from(slot) >= capacity {
                        return Err(format!(
                            "staging slot {slot} read outside the {capacity} slots"
                        ));
                    }
                    if store_idx >= c.num_outputs {
                        // Past the last output: read, but never stored.
                        continue;
                    }
                    match slots.get_mut(&slot) {
                        Some((owner, reads)) if *owner == store_idx => *reads += 1,
                        Some((owner, _)) => {
                            return Err(format!("slot {slot} holds output {owner} but is folded into output {store_idx}"))
                        }
                        None => return Err(format!("slot {slot} is read but never written")),
                    }
                }
            }
        }
    }
    match slots.iter().find(|(_, &(_, reads))| reads != 1) {
        Some((slot, (_, reads))) => Err(format!("staging slot {slot} read {reads} times")),
        None => Ok(()),
    }
}

/// Every (output, input) pair of `iter`, as the CPU would visit them.
pub fn iterator_visits(iter: &TensorIterator, mut visit: impl FnMut(Visit)) {
    let n = iter.numel() as u64;
    let all = 0..iter.ndim();
    let (out_base, in_base) = (
        iter.data_offset(TensorIterator::OUTPUT),
        iter.data_offset(TensorIterator::INPUT),
    );
    for i in 0..n {
        visit(Visit {
            output: out_base + offsets(iter, all.clone(), i, TensorIterator::OUTPUT),
            input: in_base + offsets(iter, all.clone(), i, TensorIterator::INPUT),
        });
    }
}
