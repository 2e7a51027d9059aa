//! What the CPU backend will do for a reduction, without doing it: the
//! counterpart of the GPU's [`crate::cuda::plan::ReducePlan`] for
//! `explain`.
//!
//! [`CpuPlan::new`] is a pure function of the iterator, the op and a thread
//! count, and asks the trees' own `Layout` which loop shape runs, so the
//! explanation cannot drift from the backend.

use super::element::{rows_side_by_side, strips_in_registers, sums_bytes};
use super::tree::{
    column_walk, splits, threads_split_rows, tile_width, ColumnWalk, Layout, BYTE_LEAF_MIN_TILE,
    LEAF, OUTER_LEAF_ROWS, PARALLEL_GRAIN, REGISTER_TILE,
};
use super::{column_leaf_fold, compute_type, folds_row_groups, runs, team};
use crate::iter::TensorIterator;
use crate::reduce::{ReduceDims, ReduceOp, Signature};
use crate::{Result, Tensor};
use std::fmt;

/// The loop shape the CPU backend runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuStrategy {
    /// Nothing to reduce: the input is empty and the result is zeros.
    Empty,
    /// Nothing to read: every output reduces one input and the op's result
    /// is then index 0 ([`ReduceOp::fills_index_zero`]), a zero fill.
    IndexZeroFill,
    /// Each output reduces its own slice of the input (the reduced dims
    /// include the fastest-moving one, or no output dim is contiguous).
    /// Outputs are split across threads in blocks of `outputs_per_block`.
    Inner {
        /// Outputs one parallel task computes.
        outputs_per_block: usize,
        /// Whether each output's slice is one contiguous run (a row sum).
        contiguous_rows: bool,
    },
    /// Inner reductions whose inputs are several contiguous runs far apart
    /// (channel statistics): each task reads a block of outputs run by
    /// run, every output's piece of one run before the next run, then
    /// combines each output's leaves in its tree's shape.
    Runs {
        /// Outputs one parallel task computes.
        outputs_per_block: usize,
    },
    /// One input per output (nothing but size-1 dims reduced), along one
    /// output dim: each task casts a block of inputs through the functor.
    SingleInputs {
        /// Elements from one output's input to the next's (0: a broadcast).
        input_stride: usize,
        /// Outputs one parallel task computes.
        outputs_per_block: usize,
    },
    /// Short rows: each output reduces one contiguous row of at most a
    /// leaf, rows one output stride apart; a task folds a block of rows in
    /// one loop, each row as one leaf (16-bit rows converted a block of
    /// whole rows at a time).
    ShortRows {
        /// Elements per row.
        row_len: usize,
        /// Elements from one row's start to the next's.
        row_stride: usize,
        /// Rows (outputs) one parallel task computes.
        outputs_per_block: usize,
        /// Whether a task folds 8 rows at a time side by side, a step
        /// taking element `i` of every row, each row's best value and its
        /// position kept by selects (the index ops, on rows end to end of
        /// 2 elements to 512 bytes of compute values); else each row as
        /// one leaf.
        picks_side_by_side: bool,
    },
    /// Column sums: the fastest output dim is contiguous in the input, so
    /// tiles of neighbouring outputs add whole input rows at a time.
    Outer {
        /// Outputs per tile (the last tile of a row may be narrower).
        tile: usize,
        /// Tiles across the fastest output dim.
        tiles_per_row: usize,
        /// Output rows (the product of the other output dims).
        rows: usize,
        /// Input rows a tile adds sequentially at the bottom of its tree.
        leaf_rows: usize,
        /// Whether the threads split the input rows (each tile as wide as
        /// it may be) rather than the columns.
        threads_split_rows: bool,
        /// How a full tile's leaves walk their rows.
        leaf: CpuColumnLeaf,
    },
}

/// How the leaves of a column tile ([`CpuStrategy::Outer`]) walk their
/// input rows. Every output folds its rows in the same order whichever it
/// is, so the walk never changes a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuColumnLeaf {
    /// Tiles of a vector's width or less: the tile's accumulators in
    /// registers, a row at a time.
    Registers,
    /// A row at a time, the accumulators in memory.
    Rows,
    /// Four rows a pass along the whole tile, the accumulators in memory.
    Passes,
    /// Strips of columns down the rows, a strip's accumulators in
    /// registers.
    Strips,
    /// The rows' bytes added into 16-bit sums, each column's total widened
    /// once (integer sums of u8 and bool).
    ByteSums,
    /// Blocks of rows, each block's column maxima, then its terms
    /// `exp(x - max)` by a vectorized `exp` (logsumexp).
    Blocks,
    /// Chunks of columns, each taking the leaf's rows in order by
    /// Welford's update, with one reciprocal of the count a row (var and
    /// std).
    WelfordChunks,
    /// Strips of columns down the rows, each column's best value and its
    /// first row kept by selects in registers (max and min with their
    /// indices, argmax and argmin).
    IndexStrips,
}

/// Which threads a reduction runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuThreads {
    /// Too little work to split: the calling thread alone.
    Caller,
    /// The team: each split's second half goes to a fixed thread, so each
    /// thread reads the same part of the input call after call (inputs
    /// that can stay in the cores' caches). With one thread, the calling
    /// thread alone, running the halves in turn.
    Team,
    /// Rayon's pool, whose threads steal the halves (larger inputs).
    Rayon,
}

/// The CPU backend's plan for one reduction. Printing it explains it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPlan {
    /// Threads available to the reduction (rayon's count, which the team
    /// shares).
    pub threads: usize,
    /// Which of them run it.
    pub runs_on: CpuThreads,
    /// The instruction set the loops run in ([`super::isa`]).
    pub isa: super::CpuIsa,
    /// The op, its dtypes and its accumulator.
    pub signature: Signature,
    /// Reduced dims after reorder and coalesce, as (size, input stride in
    /// elements), fastest first.
    pub reduce_dims: Vec<(usize, usize)>,
    /// Output dims likewise, in the order the trees visit them.
    pub output_dims: Vec<(usize, usize)>,
    /// Whether the trees visit the kept dims in the input's order (where
    /// PyTorch's, the result's, scatters the reads) into a scratch result,
    /// gathered into the result's order afterwards.
    pub kept_dims_by_input: bool,
    /// Elements reduced into each output.
    pub inputs_per_output: usize,
    /// Number of outputs.
    pub num_outputs: usize,
    /// Elements summed sequentially (over 8 lanes) at the bottom of the pairwise tree.
    pub leaf: usize,
    /// Work (elements) below which a subtree is not split across threads.
    pub parallel_grain: usize,
    /// The loop shape.
    pub strategy: CpuStrategy,
    /// Whether the results are written with streaming stores, which skip
    /// reading each cache line before it is written (results of 32 MiB
    /// or more, of 4- or 8-byte elements, on x86-64).
    pub streamed_results: bool,
}

impl CpuPlan {
    /// The plan for `signature` over `iter` (built by
    /// [`TensorIterator::reduce_op`]) with `threads` rayon threads.
    pub fn new(iter: &TensorIterator, signature: &Signature, threads: usize) -> CpuPlan {
        let ours = super::order::trees_order(iter);
        let kept_dims_by_input = ours.is_some();
        let iter = ours.as_ref().unwrap_or(iter);
        let esize = iter.element_size(TensorIterator::INPUT) as i64;
        let nr = iter.num_reduce_dims();
        let dims: Vec<(usize, usize)> = iter
            .shape()
            .iter()
            .zip(iter.strides(TensorIterator::INPUT))
            .map(|(&n, &s)| (n, (s / esize) as usize))
            .collect();
        let (reduce_dims, output_dims) = (dims[..nr].to_vec(), dims[nr..].to_vec());
        let inputs_per_output: usize = reduce_dims.iter().map(|d| d.0).product();
        let num_outputs = iter.num_output_elements();
        let layout = Layout::new(iter);
        let work = inputs_per_output.saturating_mul(num_outputs);
        // As `tree::reduce` enters the team.
        let runs_on = if !splits(work) {
            CpuThreads::Caller
        } else if team::takes(layout.input_bytes(esize as usize)) {
            CpuThreads::Team
        } else {
            CpuThreads::Rayon
        };
        // As `reduce_inner` chunks its outputs.
        let outputs_per_block = (PARALLEL_GRAIN / inputs_per_output.max(1)).max(1);
        let strategy = if iter.numel() == 0 {
            CpuStrategy::Empty
        } else if signature.op.fills_index_zero(iter.numel(), num_outputs) {
            CpuStrategy::IndexZeroFill
        } else if let Some(input_stride) = layout.single_inputs() {
            CpuStrategy::SingleInputs {
                input_stride,
                outputs_per_block,
            }
        } else if let Some((row_len, row_stride)) = layout.short_rows() {
            CpuStrategy::ShortRows {
                row_len,
                row_stride,
                outputs_per_block,
                picks_side_by_side: folds_row_groups(signature)
                    && rows_side_by_side(
                        signature.input,
                        compute_type(signature),
                        row_len,
                        row_stride,
                    ),
            }
        } else if layout.is_outer() {
            let width = output_dims[0].0;
            let rows = num_outputs / width;
            let tile = tile_width(width, rows, inputs_per_output, esize as usize, threads);
            // As `tree::outer_tree` and `tree::column_leaf` take them.
            let leaf = if tile >= BYTE_LEAF_MIN_TILE && sums_bytes(signature) {
                CpuColumnLeaf::ByteSums
            } else if let Some(leaf) = column_leaf_fold(signature) {
                leaf
            } else if tile <= REGISTER_TILE {
                CpuColumnLeaf::Registers
            } else {
                let elem_bytes = esize as usize;
                let acc_bytes = signature.acc.size_in_bytes();
                let in_registers = strips_in_registers(signature.input);
                match column_walk(&layout, tile, elem_bytes, acc_bytes, in_registers) {
                    ColumnWalk::Rows => CpuColumnLeaf::Rows,
                    ColumnWalk::Passes => CpuColumnLeaf::Passes,
                    ColumnWalk::Strips { .. } => CpuColumnLeaf::Strips,
                }
            };
            CpuStrategy::Outer {
                tile,
                tiles_per_row: width.div_ceil(tile),
                rows,
                leaf_rows: OUTER_LEAF_ROWS,
                threads_split_rows: threads_split_rows(inputs_per_output, threads),
                leaf,
            }
        } else if let Some(outputs_per_block) =
            runs::outputs_per_block(&layout, esize as usize, threads)
        {
            CpuStrategy::Runs { outputs_per_block }
        } else {
            CpuStrategy::Inner {
                outputs_per_block,
                contiguous_rows: matches!(reduce_dims.as_slice(), [(_, 1)]),
            }
        };
        CpuPlan {
            threads,
            runs_on,
            isa: super::isa(),
            signature: *signature,
            reduce_dims,
            output_dims,
            kept_dims_by_input,
            inputs_per_output,
            num_outputs,
            leaf: LEAF,
            parallel_grain: PARALLEL_GRAIN,
            strategy,
            streamed_results: super::stream::streams(
                num_outputs,
                signature.output,
                signature.second_output(),
            ),
        }
    }
}

impl fmt::Display for CpuPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "CPU: {} {} -> {}: {} outputs of {} elements each, functor {} computing in {}, {}, loops in {:?}",
            self.signature.op,
            self.signature.input,
            self.signature.output,
            self.num_outputs,
            self.inputs_per_output,
            self.signature.op.functor(),
            compute_type(&self.signature),
            match self.runs_on {
                CpuThreads::Caller => "on the calling thread".to_string(),
                CpuThreads::Team if self.threads == 1 => {
                    "on the calling thread, a team of one (halves in turn)".to_string()
                }
                CpuThreads::Team => format!("on the team of {} threads (fixed halves)", self.threads),
                CpuThreads::Rayon => format!("on {} rayon threads (stolen halves)", self.threads),
            },
            self.isa
        )?;
        writeln!(
            f,
            "  iterator (size, input stride in elements), fastest first: reduced {:?}, outputs {:?}",
            self.reduce_dims, self.output_dims
        )?;
        if self.kept_dims_by_input {
            writeln!(
                f,
                "  outputs visited in the input's order of the kept dims (the result's scatters the reads), then gathered into the result's order"
            )?;
        }
        match &self.strategy {
            CpuStrategy::Empty => writeln!(
                f,
                "  empty input: nothing runs (the op's empty rule gives the result)"
            ),
            CpuStrategy::IndexZeroFill => writeln!(
                f,
                "  no loop: every output reduces one input, so every index is 0 (a zero fill)"
            ),
            CpuStrategy::Runs { outputs_per_block } => writeln!(
                f,
                "  strategy: strided runs; blocks of {outputs_per_block} outputs read run by run (each output's piece of a run, then the next run), each output's leaves then combined in its tree's shape"
            ),
            CpuStrategy::Inner {
                outputs_per_block,
                contiguous_rows,
            } => {
                writeln!(
                    f,
                    "  strategy: inner rows; each output sums its own {}; outputs in parallel blocks of {outputs_per_block}",
                    if *contiguous_rows { "contiguous run" } else { "strided slice" }
                )?;
                writeln!(
                    f,
                    "  pairwise tree: leaves of {} elements over 8 lanes; subtrees under {} elements stay on one thread",
                    self.leaf,
                    2 * self.parallel_grain
                )
            }
            CpuStrategy::SingleInputs {
                input_stride,
                outputs_per_block,
            } => writeln!(
                f,
                "  strategy: one input per output, {input_stride} apart; each task passes {outputs_per_block} inputs through the functor"
            ),
            CpuStrategy::ShortRows {
                row_len,
                row_stride,
                outputs_per_block,
                picks_side_by_side,
            } => writeln!(
                f,
                "  strategy: short rows of {row_len} contiguous elements, {row_stride} apart; each task folds {outputs_per_block} rows in one loop, {}",
                if *picks_side_by_side {
                    "8 rows side by side, each row's best and its position by selects"
                } else {
                    "a row as one leaf over 8 lanes"
                }
            ),
            CpuStrategy::Outer {
                tile,
                tiles_per_row,
                rows,
                leaf_rows,
                threads_split_rows,
                leaf,
            } => {
                writeln!(
                    f,
                    "  strategy: outer column tiles of {tile} outputs ({tiles_per_row} per row x {rows} rows); {}",
                    match leaf {
                        CpuColumnLeaf::Registers =>
                            "each tile adds whole input rows, its accumulators in registers",
                        CpuColumnLeaf::Rows => "each tile adds whole input rows, a row at a time",
                        CpuColumnLeaf::Passes =>
                            "each tile adds whole input rows, 4 rows a pass along the tile",
                        CpuColumnLeaf::ByteSums =>
                            "each leaf adds its rows' bytes into 16-bit sums, 4 rows a pass, and widens each column's total once",
                        CpuColumnLeaf::Strips =>
                            "each leaf folds strips of columns down its rows, a strip's accumulators in registers",
                        CpuColumnLeaf::Blocks =>
                            "each leaf takes its rows in blocks: a block's column maxima, then its terms exp(x - max) by a vectorized exp",
                        CpuColumnLeaf::WelfordChunks =>
                            "each leaf takes chunks of columns down its rows by Welford's update, one reciprocal of the count a row",
                        CpuColumnLeaf::IndexStrips =>
                            "each leaf takes strips of columns down its rows, each column's best value and its first row kept by selects",
                    }
                )?;
                writeln!(
                    f,
                    "  pairwise tree over rows: leaves of {leaf_rows} rows; subtrees under {} elements stay on one thread",
                    2 * self.parallel_grain
                )?;
                writeln!(
                    f,
                    "  the threads split {}",
                    if *threads_split_rows {
                        "the input rows (enough leaves for each), so each reads whole rows"
                    } else {
                        "the columns (too few input rows for each to take leaves of its own)"
                    }
                )
            }
        }?;
        if self.streamed_results {
            writeln!(
                f,
                "  results written with streaming stores: no read of each cache line before its write"
            )?;
        }
        Ok(())
    }
}

impl Tensor {
    /// The CPU backend's plan for `op` over `dims` of this tensor's layout,
    /// with the current rayon pool's thread count; nothing runs and the
    /// tensor may live on any device. Printing the plan explains it.
    ///
    /// ```
    /// use tensor_reduce::{cpu::CpuStrategy, reduce::ReduceOp, DType, Device, Tensor};
    /// let x = Tensor::zeros(&[64, 4096], DType::F32, Device::Cpu)?;
    /// let rows = x.explain_cpu(ReduceOp::Sum, &[1], false)?;
    /// assert!(matches!(rows.strategy, CpuStrategy::Inner { contiguous_rows: true, .. }));
    /// let y = Tensor::zeros(&[64, 1000], DType::F32, Device::Cpu)?;
    /// let columns = y.explain_cpu(ReduceOp::AMax, &[0], false)?;
    /// assert!(matches!(columns.strategy, CpuStrategy::Outer { tile: 1000, tiles_per_row: 1, .. }));
    /// println!("{columns}");
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn explain_cpu(&self, op: ReduceOp, dims: &[isize], keepdim: bool) -> Result<CpuPlan> {
        let sig = op.signature(self.dtype(), None)?;
        let rd = ReduceDims::resolve(self, dims, keepdim)?;
        let iter = TensorIterator::reduce_op(self, &rd.mask, sig.output)?;
        Ok(CpuPlan::new(&iter, &sig, rayon::current_num_threads()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Device, Error, Tensor};

    #[test]
    fn large_results_of_wide_elements_are_streamed() {
        // Expanded (stride 0): a 64 MiB f32 result, without the memory.
        let wide = |dtype| {
            Tensor::zeros(&[1, 2], dtype, Device::Cpu)
                .unwrap()
                .expand(&[1 << 24, 2])
                .unwrap()
        };
        let on = cfg!(target_arch = "x86_64") && !crate::cpu::stream::switched_off();
        let rows = wide(DType::F32)
            .explain_cpu(ReduceOp::Sum, &[1], false)
            .unwrap();
        assert_eq!(rows.streamed_results, on);
        assert_eq!(rows.to_string().contains("streaming stores"), on);
        // A 32 MiB f16 result, and a result of two outputs.
        let f16 = wide(DType::F16)
            .explain_cpu(ReduceOp::Sum, &[1], false)
            .unwrap();
        assert!(!f16.streamed_results);
        let columns = wide(DType::F32)
            .explain_cpu(ReduceOp::Sum, &[0], false)
            .unwrap();
        assert!(!columns.streamed_results);
    }

    fn plan(shape: &[usize], dims: &[isize], transpose: bool) -> CpuPlan {
        let mut x = Tensor::zeros(shape, DType::F32, Device::Cpu).unwrap();
        if transpose {
            x = x.t().unwrap();
        }
        // One thread, so that the column tiles are TILE wide wherever the
        // tests run.
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| x.explain_cpu(ReduceOp::Sum, dims, false).unwrap())
    }

    #[test]
    fn inputs_up_to_32_mib_run_on_the_team_and_larger_ones_on_rayon() {
        let runs_on = |shape: &[usize], threads: usize| {
            // A broadcast view: the plan of a large input without its bytes.
            let x = Tensor::zeros(&[1, 1], DType::F32, Device::Cpu)
                .unwrap()
                .expand(shape)
                .unwrap();
            let sig = ReduceOp::Sum.signature(DType::F32, None).unwrap();
            let iter = TensorIterator::reduce_op(&x, &[false, true], sig.output).unwrap();
            CpuPlan::new(&iter, &sig, threads).runs_on
        };
        assert_eq!(runs_on(&[4, 8], 16), CpuThreads::Caller);
        assert_eq!(runs_on(&[1024, 1024], 16), CpuThreads::Team);
        // 32 MiB, the edge, and one row more.
        assert_eq!(runs_on(&[8192, 1024], 16), CpuThreads::Team);
        assert_eq!(runs_on(&[8193, 1024], 16), CpuThreads::Rayon);
        // One thread is a team of one, the calling thread; larger inputs
        // still go to rayon.
        assert_eq!(runs_on(&[1024, 1024], 1), CpuThreads::Team);
        assert_eq!(runs_on(&[8193, 1024], 1), CpuThreads::Rayon);
    }

    #[test]
    fn plans_name_the_loop_and_its_sizes() {
        let rows = plan(&[64, 4096], &[1], false);
        assert_eq!(rows.num_outputs, 64);
        assert_eq!(rows.inputs_per_output, 4096);
        assert_eq!(
            rows.strategy,
            CpuStrategy::Inner {
                outputs_per_block: 16,
                contiguous_rows: true
            }
        );
        let cols = plan(&[64, 40000], &[0], false);
        assert_eq!(
            cols.strategy,
            CpuStrategy::Outer {
                tile: 16384,
                tiles_per_row: 3,
                rows: 1,
                leaf_rows: 128,
                threads_split_rows: false,
                leaf: CpuColumnLeaf::Passes,
            }
        );
        // A transposed row sum is a column sum of the storage.
        let transposed = plan(&[4096, 64], &[1], true);
        assert_eq!(
            transposed.strategy,
            CpuStrategy::Outer {
                tile: 64,
                tiles_per_row: 1,
                rows: 1,
                leaf_rows: 128,
                threads_split_rows: true,
                leaf: CpuColumnLeaf::Strips,
            }
        );
        // Reducing the outer and inner dims: each output's inputs are runs
        // one outer step apart, read run by run in blocks of outputs (all
        // 16 of them: their runs together are far from 64 KiB).
        let strided = plan(&[8, 16, 32], &[0, 2], false);
        assert_eq!(strided.reduce_dims, vec![(32, 1), (8, 512)]);
        assert_eq!(
            strided.strategy,
            CpuStrategy::Runs {
                outputs_per_block: 16
            }
        );
        // Rows of at most a leaf: the short-rows loop, end to end or with
        // gaps between rows (a slice of each row).
        let short = plan(&[1000, 3], &[1], false);
        assert_eq!(
            short.strategy,
            CpuStrategy::ShortRows {
                row_len: 3,
                row_stride: 3,
                outputs_per_block: 21845,
                picks_side_by_side: false,
            }
        );
        let x = Tensor::zeros(&[1000, 8], DType::F32, Device::Cpu).unwrap();
        let sliced = x.narrow(1, 0, 3).unwrap();
        assert!(matches!(
            sliced
                .explain_cpu(ReduceOp::Sum, &[1], false)
                .unwrap()
                .strategy,
            CpuStrategy::ShortRows {
                row_len: 3,
                row_stride: 8,
                ..
            }
        ));
        assert!(short
            .to_string()
            .contains("short rows of 3 contiguous elements, 3 apart"));
        // The index ops take rows end to end 8 at a time, side by side,
        // up to 512 bytes of compute values (f16's short rows are
        // converted end to end first, whatever their stride).
        let side_by_side = |dtype: DType, row_len: usize, sliced: bool, op: ReduceOp| {
            let x = Tensor::zeros(&[1000, 300], dtype, Device::Cpu).unwrap();
            let x = if sliced {
                x.narrow(1, 0, row_len).unwrap()
            } else {
                x.narrow(1, 0, row_len).unwrap().contiguous().unwrap()
            };
            let plan = x.explain_cpu(op, &[1], false).unwrap();
            match plan.strategy {
                CpuStrategy::ShortRows {
                    picks_side_by_side, ..
                } => picks_side_by_side,
                other => panic!("{dtype:?} rows of {row_len}: {other:?}"),
            }
        };
        assert!(side_by_side(DType::F32, 3, false, ReduceOp::ArgMax));
        assert!(side_by_side(DType::F64, 16, false, ReduceOp::MinDim));
        assert!(side_by_side(DType::F16, 5, true, ReduceOp::ArgMin));
        assert!(!side_by_side(DType::F32, 5, true, ReduceOp::ArgMax));
        assert!(side_by_side(DType::BF16, 9, false, ReduceOp::MaxDim));
        assert!(side_by_side(DType::F16, 128, false, ReduceOp::ArgMax));
        assert!(!side_by_side(DType::F32, 129, false, ReduceOp::ArgMax));
        assert!(side_by_side(DType::I32, 64, false, ReduceOp::ArgMax));
        assert!(!side_by_side(DType::F64, 65, false, ReduceOp::ArgMin));
        assert!(!side_by_side(DType::F32, 4, false, ReduceOp::Sum));
        let x = Tensor::zeros(&[1000, 4], DType::F32, Device::Cpu).unwrap();
        let argmax = x.explain_cpu(ReduceOp::ArgMax, &[1], false).unwrap();
        assert!(
            argmax.to_string().contains("8 rows side by side"),
            "{argmax}"
        );
        // Only a size-1 dim reduced: one input per output.
        let single = plan(&[1000, 1], &[1], false);
        assert_eq!(
            single.strategy,
            CpuStrategy::SingleInputs {
                input_stride: 1,
                outputs_per_block: PARALLEL_GRAIN
            }
        );
        assert!(single.to_string().contains("one input per output, 1 apart"));
        let empty = plan(&[0, 3], &[0], false);
        assert_eq!(empty.strategy, CpuStrategy::Empty);
        let x = Tensor::zeros(&[5, 1], DType::F32, Device::Cpu).unwrap();
        let fill = x.explain_cpu(ReduceOp::ArgMin, &[1], false).unwrap();
        assert_eq!(fill.strategy, CpuStrategy::IndexZeroFill);
        assert!(fill.to_string().contains("every index is 0"), "{fill}");
        let values = x.explain_cpu(ReduceOp::MinDim, &[1], false).unwrap();
        assert_ne!(values.strategy, CpuStrategy::IndexZeroFill);
        let text = cols.to_string();
        assert!(
            text.contains("outer column tiles of 16384 outputs (3 per row x 1 rows)"),
            "{text}"
        );
        assert!(!text.contains("registers"), "{text}");
        // A middle dim of 32 outputs a row: leaves in half of L1, strips.
        let strips = plan(&[100, 1000, 32], &[1], false).to_string();
        assert!(
            strips.contains("tiles of 32 outputs (1 per row x 100 rows); each leaf folds strips of columns down its rows"),
            "{strips}"
        );
        let narrow = plan(&[100_000, 5], &[0], false).to_string();
        assert!(
            narrow.contains("tiles of 5 outputs (1 per row x 1 rows); each tile adds whole input rows, its accumulators in registers"),
            "{narrow}"
        );
    }

    #[test]
    fn permuted_views_are_planned_in_the_input_order() {
        // [16, 16, 1024].permute(2, 0, 1) over its last dim: the result's
        // fastest dim strides the input by 64 KiB, the input's fastest kept
        // dim by one element, which makes the case a column sum.
        let base = Tensor::zeros(&[16, 16, 1024], DType::F32, Device::Cpu).unwrap();
        let x = base.permute(&[2, 0, 1]).unwrap();
        let p = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| x.explain_cpu(ReduceOp::Sum, &[2], false).unwrap());
        assert!(p.kept_dims_by_input);
        assert_eq!(p.reduce_dims, vec![(16, 1024)]);
        assert_eq!(p.output_dims, vec![(1024, 1), (16, 16384)]);
        assert_eq!(
            p.strategy,
            CpuStrategy::Outer {
                tile: 1024,
                tiles_per_row: 1,
                rows: 16,
                leaf_rows: 128,
                threads_split_rows: false,
                leaf: CpuColumnLeaf::Rows,
            }
        );
        assert!(p.to_string().contains("input's order of the kept dims"));
        assert!(!plan(&[64, 4096], &[1], false).kept_dims_by_input);
    }

    /// Integer sums of u8 and bool columns add bytes in 16-bit sums; the
    /// other ops over them, and tiles narrower than the byte leaf's, do
    /// not.
    #[test]
    fn byte_column_sums_say_so() {
        let outer = |dtype, op, shape: &[usize]| {
            let x = Tensor::zeros(shape, dtype, Device::Cpu).unwrap();
            let p = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
                .install(|| x.explain_cpu(op, &[0], false).unwrap());
            let CpuStrategy::Outer { leaf, .. } = p.strategy else {
                panic!("{dtype:?} {op:?}: {:?}", p.strategy)
            };
            (
                leaf == CpuColumnLeaf::ByteSums,
                p.to_string().contains("16-bit sums"),
            )
        };
        assert_eq!(outer(DType::U8, ReduceOp::Sum, &[64, 4096]), (true, true));
        assert_eq!(
            outer(DType::Bool, ReduceOp::NanSum, &[64, 4096]),
            (true, true)
        );
        assert_eq!(outer(DType::U8, ReduceOp::Sum, &[64, 8]), (false, false));
        assert_eq!(outer(DType::U8, ReduceOp::Sum, &[64, 127]), (false, false));
        assert_eq!(outer(DType::U8, ReduceOp::Sum, &[64, 128]), (true, true));
        assert_eq!(
            outer(DType::U8, ReduceOp::AMax, &[64, 4096]),
            (false, false)
        );
        assert_eq!(
            outer(DType::I32, ReduceOp::Sum, &[64, 4096]),
            (false, false)
        );
    }

    /// logsumexp's and Welford's column leaves take their own folds, at
    /// every tile width (a narrow tile's too); the other ops' walk their
    /// rows.
    #[test]
    fn column_leaf_folds_say_so() {
        let leaf = |op, shape: &[usize]| {
            let x = Tensor::zeros(shape, DType::F32, Device::Cpu).unwrap();
            let p = x.explain_cpu(op, &[0], false).unwrap();
            let CpuStrategy::Outer { leaf, .. } = p.strategy else {
                panic!("{op:?}: {:?}", p.strategy)
            };
            let text = p.to_string();
            (
                leaf,
                text.contains("a vectorized exp"),
                text.contains("Welford's update"),
            )
        };
        for shape in [&[64, 4096][..], &[64, 4]] {
            assert_eq!(
                leaf(ReduceOp::LogSumExp, shape),
                (CpuColumnLeaf::Blocks, true, false)
            );
            for op in [
                ReduceOp::Var,
                ReduceOp::Std,
                ReduceOp::VarMean,
                ReduceOp::StdMean,
            ] {
                assert_eq!(leaf(op, shape), (CpuColumnLeaf::WelfordChunks, false, true));
            }
            let (sum, exp, welford) = leaf(ReduceOp::Sum, shape);
            assert!(
                !exp && !welford
                    && sum != CpuColumnLeaf::Blocks
                    && sum != CpuColumnLeaf::WelfordChunks
            );
        }
    }

    #[test]
    fn bad_dims_are_errors() {
        let x = Tensor::zeros(&[2, 3], DType::F32, Device::Cpu).unwrap();
        assert!(matches!(
            x.explain_cpu(ReduceOp::Sum, &[2], false),
            Err(Error::DimOutOfRange { .. })
        ));
        assert!(matches!(
            x.explain_cpu(ReduceOp::Sum, &[1, -1], false),
            Err(Error::RepeatedDim { .. })
        ));
    }
}
