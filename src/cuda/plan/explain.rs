//! `Display` for [`ReducePlan`]: an `EXPLAIN` of the launches, with the
//! numbers behind each of `setReduceConfig`'s choices.

use super::{config, Decisions, LaunchPlan, ReduceConfig, ReducePlan, ShortRows, Strategy};
use crate::cuda::params::contiguous_output_vectors;
use crate::iter::TensorIterator;
use std::fmt::{self, Display, Formatter, Write as _};

impl Display for ReducePlan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let p = &self.props;
        let sig = &self.signature;
        let cast = sig
            .cast
            .map(|c| format!(", each element cast to {c} first"))
            .unwrap_or_default();
        writeln!(
            f,
            "{} {} -> {} on {} ({} SMs, {} threads/SM, warp {})",
            sig.op, sig.input, sig.output, p.name, p.sm_count, p.max_threads_per_sm, p.warp_size
        )?;
        writeln!(
            f,
            "functor {} (computing in {}{cast}), accumulator {}, identity {}",
            sig.op.functor(),
            sig.compute,
            sig.acc,
            sig.op.identity_text()
        )?;
        let it = &self.iter;
        writeln!(
            f,
            "iterator: {} dims, dim 0 moves fastest, reduced dims first",
            it.ndim()
        )?;
        write_iter_table(f, self)?;
        let outputs = it.num_output_elements();
        let inputs = it.numel().checked_div(outputs).unwrap_or(0);
        writeln!(
            f,
            "  {outputs} outputs x {inputs} inputs each = {} elements",
            it.numel()
        )?;
        if sig.op.fills_index_zero(it.numel(), outputs) {
            return writeln!(
                f,
                "no launch: every output reduces one input, so every index is 0 (a zero fill)"
            );
        }
        if self.launches.is_empty() {
            return writeln!(
                f,
                "no launch: the input has no elements ({})",
                match sig.op.empty_rule() {
                    crate::reduce::EmptyRule::Fill(v) => format!("every output is {v}"),
                    crate::reduce::EmptyRule::NoIdentity =>
                        "an error: the op has no identity".to_string(),
                }
            );
        }
        if self.launches.len() > 1 {
            writeln!(
                f,
                "32-bit indexing: byte offsets exceed i32::MAX, so the iterator is split into {} launches",
                self.launches.len()
            )?;
        }
        if self.needs_acc_buffer {
            writeln!(
                f,
                "accumulation buffer: {} B of {} partials, since a {} output cannot accumulate across launches",
                self.acc_buffer_bytes, sig.acc, sig.output
            )?;
        }
        for (i, launch) in self.launches.iter().enumerate() {
            write_launch(f, self, i, launch)?;
        }
        Ok(())
    }
}

fn write_iter_table(f: &mut Formatter<'_>, plan: &ReducePlan) -> fmt::Result {
    let it = &plan.iter;
    writeln!(
        f,
        "  {:>3}  {:>10}  {:>14}  {:>14}  {:<12}  role",
        "dim", "size", "input stride", "output stride", "tensor dims"
    )?;
    for d in 0..it.ndim() {
        let role = if it.strides(TensorIterator::OUTPUT)[d] == 0 {
            "reduced"
        } else {
            "kept"
        };
        let dims = format!("{:?}", plan.iter.source_dims(d));
        writeln!(
            f,
            "  {:>3}  {:>10}  {:>12} B  {:>12} B  {:<12}  {role}",
            d,
            it.shape()[d],
            it.strides(TensorIterator::INPUT)[d],
            it.strides(TensorIterator::OUTPUT)[d],
            dims
        )?;
    }
    Ok(())
}

fn write_launch(
    f: &mut Formatter<'_>,
    plan: &ReducePlan,
    i: usize,
    launch: &LaunchPlan,
) -> fmt::Result {
    let c = &launch.config;
    let [gx, gy, gz] = launch.grid;
    let [bx, by, bz] = launch.block;
    let kernel = match launch.strategy {
        Strategy::ShortRows(rows) if rows.rows_per_vector > 1 => "packed_rows_kernel".to_string(),
        Strategy::ShortRows(_) => {
            format!(
                "short_rows_kernel<one_dim={}{}>",
                launch.rows_by_one_stride(),
                if c.wide_loads() { ", wide_loads" } else { "" }
            )
        }
        Strategy::PyTorch
        | Strategy::CtaSplit { .. }
        | Strategy::RowPerWarp
        | Strategy::TallColumns { .. }
        | Strategy::ShortColumns { .. }
        | Strategy::RaggedColumns { .. }
        | Strategy::VectorizedDims { .. } => format!(
            "reduce_kernel<nt={}, output_vec_size={}>",
            launch.nt, c.output_vec_size
        ),
    };
    writeln!(
        f,
        "launch {} of {}: {kernel}  grid ({gx}, {gy}, {gz})  block ({bx}, {by}, {bz})  dynamic shared memory {} B",
        i + 1,
        plan.launches.len(),
        launch.shared_memory_bytes
    )?;
    if let Some(own) = &launch.pytorch_order_config {
        let it = &launch.iter;
        let kept: Vec<String> = (it.num_reduce_dims()..it.ndim())
            .map(|d| {
                format!(
                    "{:?} ({} B)",
                    it.source_dims(d),
                    it.strides(TensorIterator::INPUT)[d]
                )
            })
            .collect();
        let [ogx, ogy, ogz] = own.grid();
        let [obx, oby, obz] = own.block();
        writeln!(
            f,
            "  dim order (ours): kept dims by input stride, tensor dims {}; PyTorch orders them by the output's, and there its lanes each load a sector of their own: grid ({ogx}, {ogy}, {ogz}) block ({obx}, {oby}, {obz}) output_vec_size={}",
            kept.join(", "),
            own.output_vec_size
        )?;
    }
    if let Some(pt) = &launch.pytorch_config {
        let [pgx, pgy, pgz] = pt.grid();
        let [pbx, pby, pbz] = pt.block();
        let sig = &plan.signature;
        let loads = match sig.wider_loads_reason() {
            Some(why) => format!(
                " input_vec_size={} (ours loads {}: {why})",
                sig.pytorch_input_vec_size(),
                sig.input_vec_size
            ),
            None => String::new(),
        };
        writeln!(
            f,
            "  strategy {:?} (ours); PyTorch's setReduceConfig would launch grid ({pgx}, {pgy}, {pgz}) block ({pbx}, {pby}, {pbz}) with vectorize_input={} output_vec_size={}{loads}",
            launch.strategy, pt.vectorize_input, pt.output_vec_size
        )?;
    }
    if let Strategy::ShortRows(rows) = launch.strategy {
        return write_short_rows(f, plan, launch, rows);
    }
    if plan.launches.len() > 1 {
        writeln!(
            f,
            "  covers shape {:?} from view offsets {:?}; accumulate={} final_output={} base_idx={}",
            launch.iter.shape(),
            launch.iter.view_offsets(),
            launch.iter.accumulate(),
            launch.iter.final_output(),
            launch.base_idx
        )?;
    }
    let dims_of = |d: usize| {
        format!(
            "iterator dim {d} = tensor dims {:?}",
            launch.iter.source_dims(d)
        )
    };
    let nrd = launch.iter.num_reduce_dims();
    let lanes_walk = if c.should_block_x_reduce() {
        format!(
            "the reduced dim ({}), input_mult[x] = {}",
            dims_of(0),
            c.input_mult[config::BLOCK_X]
        )
    } else {
        format!(
            "the outputs ({}), output_mult[x] = {}",
            dims_of(nrd),
            c.output_mult[config::BLOCK_X]
        )
    };
    writeln!(
        f,
        "  lanes (block.x = {}): walk {lanes_walk}",
        c.block_width
    )?;
    if c.should_block_y_reduce() {
        writeln!(
            f,
            "  warps (block.y = {}): split each output's inputs (block_y_reduce in shared memory), input_mult[y] = {}",
            c.block_height,
            c.input_mult[config::BLOCK_Y]
        )?;
    } else {
        writeln!(
            f,
            "  warps (block.y = {}): take separate outputs, output_mult[y] = {}",
            c.block_height,
            c.output_mult[config::BLOCK_Y]
        )?;
    }
    if c.should_global_reduce() {
        writeln!(
            f,
            "  CTAs: {} per output along grid.y (global reduce: {} B staging + {} B semaphores, which the last CTA resets to zero: no memset launch)",
            c.ctas_per_output, launch.staging_bytes, launch.semaphore_bytes
        )?;
    } else {
        writeln!(
            f,
            "  CTAs: 1 per output (no global reduce); grid.x = {} CTAs",
            gx
        )?;
    }
    writeln!(
        f,
        "  vectorization: input vec {} / output vec {}; {} values per thread, step_input {}, step_output {}",
        if c.vectorize_input { c.input_vec_size } else { 1 },
        c.output_vec_size,
        c.values_per_thread(),
        c.step_input,
        c.step_output
    )?;
    write_stores(f, launch)?;
    if launch.pytorch_config.is_some() && launch.strategy != Strategy::PyTorch {
        writeln!(f, "  why (PyTorch's decisions, then ours):")?;
    } else {
        writeln!(f, "  why:")?;
    }
    for line in why_lines(plan, launch) {
        writeln!(f, "    - {line}")?;
    }
    if let (Strategy::CtaSplit { ctas_per_output }, Some(pt)) =
        (launch.strategy, &launch.pytorch_config)
    {
        let wave = wave_of(plan, pt);
        writeln!(
            f,
            "    - ours: PyTorch's grid of {} CTAs leaves SMs of the {} without one → the same split, {} CTAs per output: min(⌈{wave}/{}⌉, ⌊{} values per thread / {}⌋), or fewer that fill whole waves of {wave} CTAs ({})",
            pt.grid()[0],
            plan.props.sm_count,
            ctas_per_output,
            pt.grid()[0],
            pt.values_per_thread(),
            config::MIN_VALUES_PER_THREAD,
            wave_reason(plan, pt)
        )?;
    }
    if let (Strategy::VectorizedDims { cta_split }, Some(pt)) =
        (launch.strategy, &launch.pytorch_config)
    {
        let it = &launch.iter;
        writeln!(
            f,
            "    - ours: PyTorch vectorises loads over one reduced dim only, and {} are reduced; the fastest ({} inputs, contiguous) holds whole vectors of {} and every other stride keeps them aligned → each lane loads {} inputs at once through the input OffsetCalculator ({} values a thread, PyTorch's {})",
            it.num_reduce_dims(),
            it.shape()[0],
            c.input_vec_size,
            c.input_vec_size,
            c.values_per_thread(),
            pt.values_per_thread()
        )?;
        if let Some(ctas) = cta_split {
            writeln!(
                f,
                "    - ours: {ctas} CTAs per output, {} CTAs for {} resident at once ({}): {}",
                ctas * launch.grid[0],
                wave_of(plan, c),
                wave_reason(plan, c),
                if config::set_reduce_config_vectorizing_dims(it, &plan.signature, &plan.props)
                    .should_global_reduce()
                {
                    "the port's own split, of the count that fills the largest share of its waves"
                } else {
                    "CtaSplit's rule on the vectorised plan, whose grid leaves SMs without a CTA"
                }
            )?;
        }
    }
    if let (Strategy::TallColumns { output_vec_size }, Some(pt)) =
        (launch.strategy, &launch.pytorch_config)
    {
        writeln!(
            f,
            "    - ours: PyTorch's {} outputs a lane give grid.x = {} of {} threads and split each output across {} CTAs, whose last CTA's threads fold {} staged partials each → {output_vec_size} a lane (halved while over {} partials a thread and a lane's load stays at least {} B): grid.x = {} of {} threads, {} CTAs per output in whole waves of {} ({}), {} partials a thread",
            pt.output_vec_size,
            pt.grid()[0],
            pt.num_threads,
            pt.ctas_per_output,
            super::strategy::staged_per_thread(pt),
            super::TALL_COLUMNS_MAX_STAGED_PER_THREAD,
            super::TALL_COLUMNS_MIN_LOAD_BYTES,
            launch.grid[0],
            c.num_threads,
            c.ctas_per_output,
            wave_of(plan, c),
            wave_reason(plan, c),
            super::strategy::staged_per_thread(c)
        )?;
    }
    // Bytes a lane loads a row for `outputs` outputs, for the column
    // strategies below. In usize, as ShortRows' load bytes further down:
    // a lane takes at most 8 outputs of at most 8 bytes.
    let load_bytes = |outputs: u32| outputs as usize * plan.signature.input.size_in_bytes();
    if let (Strategy::ShortColumns { output_vec_size }, Some(pt)) =
        (launch.strategy, &launch.pytorch_config)
    {
        writeln!(
            f,
            "    - ours: PyTorch's {} outputs a lane load {} B a row, and each lane reduces its columns of {} alone → {output_vec_size} a lane ({} B loads): block ({}, {}), grid.x = {}",
            pt.output_vec_size,
            load_bytes(pt.output_vec_size),
            c.num_inputs,
            load_bytes(output_vec_size),
            c.block_width,
            c.block_height,
            launch.grid[0],
        )?;
    }
    if let (Strategy::RaggedColumns { output_vec_size }, Some(pt)) =
        (launch.strategy, &launch.pytorch_config)
    {
        writeln!(
            f,
            "    - ours: the columns start off a {} B vector boundary, so PyTorch's lanes take {} output(s) and load {} B a row → {output_vec_size} a lane, each row's {} B read as the two aligned vectors around them; the last lane stores the {} of its {output_vec_size} outputs that exist: block ({}, {}), grid.x = {}",
            load_bytes(output_vec_size),
            pt.output_vec_size,
            load_bytes(pt.output_vec_size),
            load_bytes(output_vec_size),
            match c.num_outputs % output_vec_size {
                0 => output_vec_size,
                n => n,
            },
            c.block_width,
            c.block_height,
            launch.grid[0],
        )?;
    }
    if let (Strategy::RowPerWarp, Some(pt)) = (launch.strategy, &launch.pytorch_config) {
        let props = &plan.props;
        writeln!(
            f,
            "    - ours: PyTorch's warps would split each row ({} values a thread), a block and a block_y_reduce per row; {} rows are at least {}% of the {} warp slots of {} SMs → a warp per row, the block's {} warps on separate rows, no shared memory",
            pt.values_per_thread(),
            c.num_outputs,
            super::ROW_PER_WARP_MIN_SLOTS_PERCENT,
            super::strategy::warp_slots(props),
            props.sm_count,
            c.block_height
        )?;
    }
    let it = &launch.iter;
    let sig = &plan.signature;
    if let Some(rows) = super::strategy::short_rows(it, sig, plan.props.warp_size)
        .filter(|r| super::strategy::left_to_pytorch(it, sig, r))
    {
        writeln!(
            f,
            "    - ours: not ShortRows: its rows of {} are looked up one by one ({} kept dims), and of {} B inputs each lane would load {} vectors of a row, more than the {} that short_rows_kernel<one_dim=false> reads faster than the strategies after it",
            rows.row_len,
            it.ndim() - it.num_reduce_dims(),
            sig.input.size_in_bytes(),
            rows.vectors_per_lane(),
            super::strategy::looked_up_8_byte_max_vectors_per_lane(sig)
        )?;
    }
    Ok(())
}

/// How the lanes of a ShortRows row combine and who stores it: the kernel
/// spreads a thread's rows over the row's lanes when it holds a full set
/// of them (`spread_rows` in kernels/reduce.cuh), else folds them into the
/// row's first lane. `full`: the most rows a thread of its kernel takes.
fn lane_combine(lanes: u32, rows_per_thread: u32, full: u32) -> String {
    if lanes == 1 {
        "a row is one lane's, no shuffles".to_string()
    } else if rows_per_thread == full {
        // The most lanes, as a power of two, that split the rows evenly.
        let storing = 1 << lanes.min(full).ilog2();
        format!(
            "lanes of a row combine by shuffles that spread its thread's {full} rows over its first {storing} lanes, each storing {}",
            if full / storing == 1 { "one".to_string() } else { format!("{}", full / storing) }
        )
    } else {
        "lanes of a row combine by shuffles into its first lane, which stores it".to_string()
    }
}

/// How a lane of `launch` stores its output vector: as one vector where
/// the host's rule finds the outputs end to end (for a storage base
/// aligned to 256 bytes), else one output at a time.
fn write_stores(f: &mut Formatter<'_>, launch: &LaunchPlan) -> fmt::Result {
    let c = &launch.config;
    if c.output_vec_size <= 1 {
        return Ok(());
    }
    let it = &launch.iter;
    let out_size = it.element_size(TensorIterator::OUTPUT);
    let one_store = contiguous_output_vectors(
        it,
        c.output_vec_size,
        out_size,
        it.data_offset(TensorIterator::OUTPUT),
    );
    if one_store {
        writeln!(
            f,
            "  stores: a lane's {} outputs lie end to end: one {}-byte store",
            c.output_vec_size,
            c.output_vec_size as usize * out_size
        )
    } else {
        writeln!(
            f,
            "  stores: a lane's {} outputs do not lie end to end from an aligned address: one store each",
            c.output_vec_size
        )
    }
}

/// A [`Strategy::ShortRows`] launch: who reads what, and why not PyTorch's
/// plan.
fn write_short_rows(
    f: &mut Formatter<'_>,
    plan: &ReducePlan,
    launch: &LaunchPlan,
    rows: ShortRows,
) -> fmt::Result {
    let c = &launch.config;
    let scalar = plan.signature.input;
    let load_bytes = rows.row_vec_size as usize * scalar.size_in_bytes();
    let rows_per_warp = c.block_width / rows.lanes_per_row;
    let vectors = rows.vectors_per_lane();
    let packed = rows.rows_per_vector;
    let row_loads = super::strategy::short_row_load_inputs(&plan.signature, rows.row_len.into());
    if packed > 1 {
        writeln!(
            f,
            "  lanes (block.x = {}): {packed} whole rows of {} inputs per {}-input load ({load_bytes} B), reduced in registers, their results stored together; {} neighbouring rows per warp",
            c.block_width,
            rows.row_len,
            rows.row_vec_size,
            c.block_width * packed
        )?;
    } else if c.stage_rows {
        writeln!(
            f,
            "  lanes (block.x = {}): 1 per row, reducing its {} inputs from shared memory; {rows_per_warp} neighbouring rows per warp",
            c.block_width, rows.row_len
        )?;
    } else if rows.ragged {
        writeln!(
            f,
            "  lanes (block.x = {}): {} per row, each loading up to {vectors} aligned vector(s) of {} inputs ({load_bytes} B) around it and keeping the row's inputs; {rows_per_warp} neighbouring row(s) per warp",
            c.block_width, rows.lanes_per_row, rows.row_vec_size,
        )?;
    } else {
        writeln!(
            f,
            "  lanes (block.x = {}): {} per row, each loading {} input(s) ({load_bytes} B) of it {}; {rows_per_warp} neighbouring row(s) per warp",
            c.block_width,
            rows.lanes_per_row,
            rows.row_vec_size,
            if vectors == 1 { "once".to_string() } else { format!("{vectors} times") }
        )?;
    }
    let rows_word = if packed > 1 {
        format!("groups of {packed} rows")
    } else {
        "rows".to_string()
    };
    writeln!(
        f,
        "  warps (block.y = {}): take separate rows, {} {rows_word} per CTA pass; each thread takes {} {rows_word} a pass apart, all loads issued before any is reduced",
        c.block_height, c.step_output, c.rows_per_thread
    )?;
    writeln!(
        f,
        "  CTAs: 1 per output (no global reduce); grid.x = {} CTAs; {}; {}",
        launch.grid[0],
        lane_combine(
            rows.lanes_per_row,
            c.rows_per_thread,
            launch.short_rows_max_rows_per_thread()
        ),
        if c.stage_rows {
            format!(
                "{} B of shared memory: each warp copies its {} rows ({} B, one span) 16 B a lane at a time, every span of a thread's rows before any is reduced, and each lane reduces its row from there",
                launch.shared_memory_bytes,
                c.block_width,
                super::strategy::short_rows_span_bytes(c, c.block_width, scalar.size_in_bytes() as u32)
            )
        } else {
            "no shared memory".to_string()
        }
    )?;
    write_stores(f, launch)?;
    writeln!(f, "  why:")?;
    if launch.rows_by_one_stride() {
        writeln!(
            f,
            "    - the kept dims are one: a row's offsets are its index times one stride"
        )?;
        let most = launch.short_rows_max_rows_per_thread();
        if most < super::SHORT_ROWS_MAX_ROWS_PER_THREAD {
            writeln!(
                f,
                "    - the op's state is {} B, wider than {} B: a thread takes at most {most} rows, whose states then fit its registers",
                c.element_size_bytes,
                super::SHORT_ROWS_EIGHT_ROWS_MAX_STATE_BYTES
            )?;
        }
    } else {
        writeln!(
            f,
            "    - the kept dims do not coalesce into one: each of a thread's rows is looked up through the output OffsetCalculator, for its input before the loads and again for its output at the store, and a thread takes at most {} rows",
            super::SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD
        )?;
    }
    if packed > 1 {
        writeln!(
            f,
            "    - the only reduced dim is contiguous with {} inputs, which divide the widest load ({} inputs: 16 B or the op's {}), and the rows lie end to end from a base aligned to it in one kept dim whose outputs lie end to end too: a lane reads {packed} rows with one load and stores their {packed} results together (a lane per row took {packed} times the load and store instructions for the same bytes); the last group of rows, if short, is read input by input",
            rows.row_len, rows.row_vec_size, row_loads
        )?;
    } else if rows.ragged {
        writeln!(
            f,
            "    - the only reduced dim is contiguous with {} inputs ({} B, over {} B) that no {}-input load fits (the row's length or its start) or whose whole loads no lane count shares as well across a warp, and the rows are not staged: each row is read as the aligned {}-input vectors around it, at most {}, its inputs picked out by index (a row ending within a vector of the input allocation's end is read input by input); {} lanes x {vectors} loads, the lane count (of those with at most {} loads each) that uses the most of a warp's loads",
            rows.row_len,
            // A u32 count times at most 16 bytes: no u64 wraps.
            u64::from(rows.row_len) * scalar.size_in_bytes() as u64,
            super::SCALAR_ROW_MAX_BYTES,
            rows.row_vec_size,
            rows.row_vec_size,
            super::strategy::ragged_row_vectors(rows.row_len, rows.row_vec_size),
            rows.lanes_per_row,
            super::SHORT_ROWS_MAX_VECTORS_PER_LANE
        )?;
    } else if rows.lanes_per_row > 1 || rows.row_vec_size > 1 {
        writeln!(
            f,
            "    - the only reduced dim is contiguous with {} inputs: {} lanes x {vectors} x {}-input loads, the widest load (of at most 16 B and the op's {} inputs) that divides the row and that every row start is aligned to, the most lanes (at most a warp) that share the row's loads equally, at most {} each",
            rows.row_len,
            rows.lanes_per_row,
            rows.row_vec_size,
            row_loads,
            super::SHORT_ROWS_MAX_VECTORS_PER_LANE
        )?;
    } else if rows.staged {
        writeln!(
            f,
            "    - the only reduced dim is contiguous with {} inputs, no 16-byte load fits a row (its length or its start) nor does one narrower load, and a row is at most {} B, packed from a {}-byte aligned base: a warp's rows are one aligned span, staged through shared memory with 16-byte copies, and each lane reduces its own row from there (lanes sharing a row through narrower loads, or scalar loads that touch every sector of the warp's rows, read less)",
            rows.row_len,
            super::STAGED_ROW_MAX_BYTES,
            super::SHORT_ROWS_STAGE_ALIGN
        )?;
    } else {
        writeln!(
            f,
            "    - the only reduced dim is contiguous with {} inputs that no vector load fits (a length or row start off a vector boundary), and a row is at most {} B: a lane per row, loading it scalar by scalar, keeps a load of each of its rows in flight; the warp's first loads fetch its rows' sectors and the rest hit L1",
            rows.row_len,
            super::SCALAR_ROW_MAX_BYTES
        )?;
    }
    if row_loads < c.input_vec_size {
        writeln!(
            f,
            "    - a row of fewer than {} inputs keeps PyTorch's {row_loads}-input loads, not the op's {} ({}): on rows this short the wider loads leave fewer lanes a row, each with more picks in a row, and measured slower (SHORT_ROWS_WIDE_PICKS_MIN_ROW)",
            super::SHORT_ROWS_WIDE_PICKS_MIN_ROW,
            c.input_vec_size,
            plan.signature.wider_loads_reason().unwrap_or("its wider loads")
        )?;
    }
    if let Some(pt) = &launch.pytorch_config {
        let per_load = if pt.vectorize_input {
            pt.input_vec_size
        } else {
            1
        };
        let loads = config::div_up(
            u64::from(rows.row_len),
            u64::from(pt.block_width) * u64::from(per_load),
        );
        writeln!(
            f,
            "    - PyTorch's plan gives each row {} lanes loading {per_load} input(s) at a time, {loads} load(s) per lane and then done",
            pt.block_width
        )?;
    }
    writeln!(
        f,
        "    - {} {rows_word} per thread: the most (≤ {}) that still leaves a full wave of {} blocks on {} SMs{}",
        c.rows_per_thread,
        launch.short_rows_max_rows_per_thread(),
        super::strategy::short_rows_full_wave(&plan.props, c),
        plan.props.sm_count,
        if c.stage_rows {
            format!(
                " and whose spans fit {} B of shared memory a block",
                super::SHORT_ROWS_STAGE_BYTES
            )
        } else {
            String::new()
        }
    )
}

/// The reasons, in the order `setReduceConfig` decides, for PyTorch's
/// config (where a strategy of ours replaced it, the caller says why).
pub(super) fn why_lines(plan: &ReducePlan, launch: &LaunchPlan) -> Vec<String> {
    let c = match (launch.strategy, &launch.pytorch_config) {
        (Strategy::PyTorch, _) | (_, None) => &launch.config,
        (_, Some(pt)) => pt,
    };
    let d = &launch.decisions;
    let scalar = plan.signature.input;
    let scalar_size = scalar.size_in_bytes() as i64;
    let mut out = Vec::new();

    out.push(match d.output_dim_stride {
        None => "every dim is reduced → lanes walk the reduced dim".to_string(),
        Some(kept) if d.reduction_on_fastest_striding_dimension => format!(
            "reduction is on the fastest-striding dim (input stride {} B < {kept} B of the first kept dim) → lanes walk the reduced dim",
            d.reduced_stride
        ),
        Some(kept) => format!(
            "reduction is not on the fastest-striding dim (input stride {} B of the reduced dim ≥ {kept} B of the first kept dim) → lanes walk the outputs",
            d.reduced_stride
        ),
    });

    out.push(vectorization_reason(c, d, launch, scalar, scalar_size));

    let lane_extent = d.dim0
        / u64::from(if c.vectorize_input {
            c.input_vec_size
        } else {
            c.output_vec_size
        });
    out.push(format!(
        "set_block_dimension(dim0 {lane_extent}, dim1 {}) with at most {} threads → block ({}, {})",
        d.dim1,
        c.max_num_threads / c.output_vec_size,
        c.block_width,
        c.block_height
    ));

    out.push(if c.should_block_y_reduce() {
        format!(
            "values_per_thread {} ≥ warp_split_threshold min({}·16, 256) = {} → warps split the input",
            d.values_per_thread_at_warp_split, c.block_height, d.warp_split_threshold
        )
    } else {
        format!(
            "values_per_thread {} < warp_split_threshold min({}·16, 256) = {} → each warp takes its own outputs",
            d.values_per_thread_at_warp_split, c.block_height, d.warp_split_threshold
        )
    });

    out.push(cta_reason(c, d, &plan.props));

    out.push(if c.shared_memory_size() > 0 {
        let who = if c.should_block_y_reduce() { "block_y_reduce" } else { "a block_x_reduce wider than a warp" };
        format!(
            "{who} needs shared memory: {} B (arg_t) x {} threads x {} outputs = {} B",
            c.element_size_bytes,
            c.num_threads,
            c.output_vec_size,
            c.shared_memory_size()
        )
    } else {
        "no dynamic shared memory: warps do not share outputs and lanes reduce within one warp by shuffles".to_string()
    });
    out
}

fn vectorization_reason(
    c: &ReduceConfig,
    d: &Decisions,
    launch: &LaunchPlan,
    scalar: crate::DType,
    scalar_size: i64,
) -> String {
    let nrd = launch.iter.num_reduce_dims();
    if d.fastest_moving_stride != scalar_size {
        return format!(
            "fastest-moving stride {} B ≠ sizeof({scalar}) = {scalar_size} B → no vectorized loads",
            d.fastest_moving_stride
        );
    }
    if c.vectorize_input {
        return format!(
            "the reduced dim is contiguous (stride {scalar_size} B), has dim0 {} ≥ 128 inputs and is the only reduced dim → vectorize along input: lanes load {} contiguous inputs ({} B)",
            d.dim0,
            c.input_vec_size,
            i64::from(c.input_vec_size) * scalar_size
        );
    }
    if d.reduction_on_fastest_striding_dimension {
        let why = if d.dim0 < 128 {
            format!("only {} inputs per output (< 128)", d.dim0)
        } else {
            format!("{nrd} reduced dims (needs 1)")
        };
        return format!("the reduced dim is contiguous but {why} → no input vectorization");
    }
    let mut s = format!(
        "the first kept dim is contiguous (stride {scalar_size} B) → vectorize along output: output_vec_size {}",
        c.output_vec_size
    );
    if c.output_vec_size < 4 {
        let offset_el = launch.iter.data_offset(TensorIterator::INPUT) / scalar_size as u64;
        let size = launch.iter.shape()[nrd];
        let _ = write!(
            s,
            " (the largest of 4, 2, 1 dividing the input offset {offset_el} elements, the kept dim's size {size} and every other input stride)"
        );
    }
    s
}

/// The CTAs of `c`'s kernel the device holds at once, as the planner
/// counted them.
fn wave_of(plan: &ReducePlan, c: &ReduceConfig) -> u64 {
    super::wave_ctas(
        &plan.props,
        plan.kernel_registers.of(c.output_vec_size),
        c.num_threads,
    )
}

/// Where [`wave_of`]'s count comes from: the kernel's registers, or a
/// full SM's worth of CTAs.
fn wave_reason(plan: &ReducePlan, c: &ReduceConfig) -> String {
    let per_sm = |registers| super::ctas_per_sm(&plan.props, registers, c.num_threads);
    match plan.kernel_registers.of(c.output_vec_size) {
        Some(registers) => format!(
            "{} SMs x {} CTAs of {} threads at the kernel's {registers} registers a thread",
            plan.props.sm_count,
            per_sm(Some(registers)),
            c.num_threads
        ),
        None => format!(
            "{} SMs x {} CTAs of {} threads, a full SM's: the kernel's registers are not known",
            plan.props.sm_count,
            per_sm(None),
            c.num_threads
        ),
    }
}

fn cta_reason(c: &ReduceConfig, d: &Decisions, props: &super::DeviceProps) -> String {
    if c.input_mult[config::BLOCK_Y] == 0 {
        return "no CTA split: warps do not split the input".to_string();
    }
    let vpt = d.values_per_thread_at_cta_split;
    if vpt < config::MAX_VALUES_PER_THREAD {
        return format!("values_per_thread {vpt} < 256 → no CTA split");
    }
    let target = format!(
        "target {} (= {} SMs x {} blocks/SM of {} threads)",
        d.target_grid_size,
        props.sm_count,
        props.max_threads_per_sm / c.num_threads,
        c.num_threads
    );
    if d.grid_x > d.target_grid_size {
        return format!(
            "grid.x {} > {target} → the outputs already fill the GPU, no CTA split",
            d.grid_x
        );
    }
    let [c1, c2, c3] = d.ctas_candidates.unwrap_or([1, 1, 1]);
    let mut s = format!(
        "values_per_thread {vpt} ≥ 256 and grid.x {} ≤ {target} → ctas_per_output = max(min(⌈{}/{}⌉ = {c1}, ⌈{vpt}/16⌉ = {c2}), ⌈{vpt}/256⌉ = {c3}) = {}",
        d.grid_x, d.target_grid_size, d.grid_x, c.ctas_per_output
    );
    if c.ctas_per_output > 1 {
        let _ = write!(s, " → split across {} CTAs per output", c.ctas_per_output);
    } else {
        s.push_str(" → no CTA split");
    }
    s
}
