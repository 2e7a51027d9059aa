//! One test per `setReduceConfig` branch, the worked examples of seed 002,
//! and the dtype dispatch. Expected numbers are worked out by hand from
//! PyTorch's code (the arithmetic is in the comments), never by the planner.

use super::*;
use crate::iter::TensorIterator;
use crate::reduce::{Accumulator, ReduceOp};
use crate::{DType, Device, Tensor};

fn contiguous(shape: &[usize]) -> Vec<isize> {
    crate::tensor::contiguous_strides(shape).to_vec()
}

fn plan(
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    reduce: &[usize],
    dtype: DType,
) -> ReducePlan {
    plan_op(ReduceOp::Sum, shape, strides, offset, reduce, dtype)
}

fn plan_op(
    op: ReduceOp,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    reduce: &[usize],
    dtype: DType,
) -> ReducePlan {
    let out = op.output_dtype(dtype, None).unwrap();
    let mask: Vec<bool> = (0..shape.len()).map(|d| reduce.contains(&d)).collect();
    let it = TensorIterator::reduction(
        shape,
        strides,
        offset,
        dtype.size_in_bytes(),
        out.size_in_bytes(),
        &mask,
    )
    .unwrap();
    ReducePlan::new(
        &it,
        // Only sum takes a dtype argument; the others' is their own.
        &op.signature(dtype, (op == ReduceOp::Sum).then_some(out))
            .unwrap(),
        &DeviceProps::h200(),
    )
    .unwrap()
}

fn only(p: &ReducePlan) -> &LaunchPlan {
    assert_eq!(p.launches.len(), 1);
    &p.launches[0]
}

/// PyTorch's own config for the one launch of `p`, whichever strategy runs.
fn pytorch(p: &ReducePlan) -> ReduceConfig {
    only(p).pytorch_own_config()
}

#[test]
fn last_pow2_and_div_up() {
    assert_eq!(
        [0, 1, 2, 5, 511, 512, 513].map(last_pow2),
        [1, 1, 2, 4, 256, 512, 512]
    );
    assert_eq!(div_up(7, 2), 4);
    assert_eq!(div_up(8, 2), 4);
}

#[test]
fn seed_002_worked_example_16x128x64x128() {
    // iter [128, 8192, 16]; lanes walk outputs (in stride 32768 >= 4),
    // output vec 4 -> dim0 131072/4; block (32, 4) under 512/4 = 128 threads;
    // values_per_thread 128 >= min(4*16, 256) = 64 -> warps split inputs.
    let shape = [16, 128, 64, 128];
    let p = plan(&shape, &contiguous(&shape), 0, &[1], DType::F32);
    let l = only(&p);
    let c = l.config;
    assert_eq!(
        (c.element_size_bytes, c.num_inputs, c.num_outputs),
        (4, 128, 131_072)
    );
    assert_eq!((c.step_input, c.step_output, c.ctas_per_output), (4, 32, 1));
    assert_eq!((c.input_mult, c.output_mult), ([0, 1, 0], [1, 0]));
    assert_eq!((c.block_width, c.block_height, c.num_threads), (32, 4, 128));
    assert_eq!((c.vectorize_input, c.output_vec_size), (false, 4));
    assert_eq!((l.nt, l.grid, l.block), (128, [1024, 1, 1], [32, 4, 1]));
    // block_y_reduce: 4 B x 128 threads x 4 outputs.
    assert_eq!(l.shared_memory_bytes, 2048);
    assert!(!c.should_block_x_reduce() && c.should_block_y_reduce() && !c.should_global_reduce());
}

#[test]
fn seed_002_gdb_dump_8x32x64x128() {
    // values_per_thread 32 < 64 -> warps take separate outputs:
    // output_mult = {1, 32}, step_output = 32 * 4 = 128, grid 65536/4/128.
    let shape = [8, 32, 64, 128];
    let l = only(&plan(&shape, &contiguous(&shape), 0, &[1], DType::F32)).clone();
    let c = l.config;
    assert_eq!(
        (c.num_inputs, c.num_outputs, c.step_input, c.step_output),
        (32, 65_536, 1, 128)
    );
    assert_eq!((c.input_mult, c.output_mult), ([0, 0, 0], [1, 32]));
    assert_eq!(
        (l.grid, l.block, l.shared_memory_bytes),
        ([128, 1, 1], [32, 4, 1], 0)
    );
}

#[test]
fn input_vectorization_uses_8_wide_loads_for_16_bit() {
    // [2048].sum(): f32 dim0 2048/4 = 512 -> block 512; f16 2048/8 = 256.
    let f32 = plan(&[2048], &[1], 0, &[0], DType::F32);
    let f16 = plan(&[2048], &[1], 0, &[0], DType::F16);
    let (a, b) = (only(&f32).config, only(&f16).config);
    assert!(a.vectorize_input && b.vectorize_input);
    assert_eq!((a.input_vec_size, b.input_vec_size), (4, 8));
    assert_eq!((a.block_width, b.block_width), (512, 256));
    // block_x wider than a warp needs shared memory, in f32 (arg_t) units.
    assert_eq!(
        (a.shared_memory_size(), b.shared_memory_size()),
        (4 * 512, 4 * 256)
    );
    // values_per_thread 2048/512 = 4 < min(16, 256): no warp split.
    assert_eq!(a.input_mult, [1, 0, 0]);
}

#[test]
fn no_input_vectorization_below_128_inputs_or_with_two_reduced_dims() {
    // 100 inputs per output: dim0 100 < 128. Block: pow2 64, height 4.
    let short = plan(&[7, 100], &[100, 1], 0, &[1], DType::F32);
    let c = pytorch(&short);
    assert!(!c.vectorize_input);
    assert_eq!((c.block_width, c.block_height), (64, 4));
    // [8, 3, 256].sum((0, 2)): contiguous fastest reduced dim, but 2 reduced dims.
    let two = plan(&[8, 3, 256], &[768, 256, 1], 0, &[0, 2], DType::F32);
    // (PyTorch's config; ours, VectorizedDims, loads vectors there.)
    assert_eq!(two.iter.num_reduce_dims(), 2);
    assert!(!pytorch(&two).vectorize_input);
    assert!(pytorch(&two).should_block_x_reduce());
}

#[test]
fn output_vec_size_falls_back_on_misaligned_views() {
    // [32, 64].sum(0) starting `offset` elements into the storage: the
    // address in elements must be divisible by the vector width.
    for (offset, vec, nt) in [
        (0, 4, 128),
        (1, 1, 512),
        (2, 2, 256),
        (3, 1, 512),
        (4, 4, 128),
    ] {
        let p = plan(&[32, 64], &[64, 1], offset, &[0], DType::F32);
        let l = only(&p);
        assert_eq!(
            (l.config.output_vec_size, l.nt),
            (vec, nt),
            "offset {offset}"
        );
    }
    // A kept dim of odd size or a reduced stride not divisible by 4 too.
    assert_eq!(
        only(&plan(&[32, 66], &[66, 1], 0, &[0], DType::F32))
            .config
            .output_vec_size,
        2
    );
    assert_eq!(
        only(&plan(&[32, 64], &[65, 1], 0, &[0], DType::F32))
            .config
            .output_vec_size,
        1
    );
}

#[test]
fn narrow_by_one_element_loses_output_vectorization() {
    let x = Tensor::zeros(&[32, 65], DType::F32, Device::Cpu).unwrap();
    let aligned = x.narrow(1, 0, 64).unwrap().contiguous().unwrap();
    let shifted = Tensor::zeros(&[32 * 64 + 1], DType::F32, Device::Cpu)
        .unwrap()
        .narrow(0, 1, 32 * 64)
        .unwrap();
    let shifted = shifted.reshape(&[32, 64]).unwrap();
    assert_eq!(shifted.storage_offset(), 1);
    let props = DeviceProps::h200();
    assert_eq!(
        aligned
            .explain(ReduceOp::Sum, &[0], false, &props)
            .unwrap()
            .launches[0]
            .config
            .output_vec_size,
        4
    );
    assert_eq!(
        shifted
            .explain(ReduceOp::Sum, &[0], false, &props)
            .unwrap()
            .launches[0]
            .config
            .output_vec_size,
        1
    );
}

#[test]
fn warps_split_outputs_when_each_thread_has_little_work() {
    // [1048576, 16].sum(1): 16 inputs per output, block (16, 32): one value
    // per thread < 256 -> every warp row takes its own output.
    let c = pytorch(&plan(&[1_048_576, 16], &[16, 1], 0, &[1], DType::F32));
    assert_eq!((c.input_mult, c.output_mult), ([1, 0, 0], [0, 1]));
    assert_eq!((c.block(), c.grid()), ([16, 32, 1], [32_768, 1, 1]));
}

#[test]
fn short_rows_share_warps_and_keep_loads_in_flight() {
    // [1048576, 16] f32 over dim 1: 16-byte loads of 4 -> 4 lanes per row,
    // 32 / 4 = 8 rows per warp, block (32, 2) -> 16 rows per pass. A full
    // wave is 132 SMs x min(2048/64, 16 the register budget allows) = 2112
    // blocks; 8 rows per thread leave 2^20 / (16 x 8) = 8192 blocks >= 2112,
    // so 8.
    let p = plan(&[1_048_576, 16], &[16, 1], 0, &[1], DType::F32);
    let l = only(&p);
    let rows = |row_len, row_vec_size, lanes_per_row| {
        Strategy::ShortRows(ShortRows {
            row_len,
            row_vec_size,
            lanes_per_row,
            staged: false,
            ragged: false,
            rows_per_vector: 1,
        })
    };
    let ragged = |row_len, row_vec_size, lanes_per_row| {
        Strategy::ShortRows(ShortRows {
            row_len,
            row_vec_size,
            lanes_per_row,
            staged: false,
            ragged: true,
            rows_per_vector: 1,
        })
    };
    let staged = |row_len| {
        Strategy::ShortRows(ShortRows {
            row_len,
            row_vec_size: 1,
            lanes_per_row: 1,
            staged: true,
            ragged: false,
            rows_per_vector: 1,
        })
    };
    assert_eq!(l.strategy, rows(16, 4, 4));
    let c = &l.config;
    assert_eq!((l.block, l.grid), ([32, 2, 1], [8192, 1, 1]));
    assert_eq!(
        (
            c.lanes_per_row,
            c.row_vec_size,
            c.rows_per_thread,
            c.step_output
        ),
        (4, 4, 8, 16)
    );
    assert_eq!(l.shared_memory_bytes + l.staging_bytes as u32, 0);
    // PyTorch's own plan stays beside it: (16, 32) lanes x warps, scalar loads.
    let pt = l
        .pytorch_config
        .expect("PyTorch's config is kept for explain");
    assert_eq!((pt.block(), pt.vectorize_input), ([16, 32, 1], false));
    assert!(p.to_string().contains("ShortRows"), "{p}");
    // f16 rows of 16: 16-byte loads of 8 -> 2 lanes, 16 rows per warp, 32
    // per pass, and a wave of 12 x 132 = 1584 blocks (the kernel's budget
    // for loads that widen into 8 values); 8 rows per thread leave 4096 >=
    // 1584 blocks. 2^16 rows: 8 would leave 256 blocks, 4 512, 2 1024, all
    // short of a wave: 1.
    let h = only(&plan(&[1 << 20, 16], &[16, 1], 0, &[1], DType::F16)).clone();
    assert_eq!(h.strategy, rows(16, 8, 2));
    assert_eq!((h.config.rows_per_thread, h.grid), (8, [4096, 1, 1]));
    let h = only(&plan(&[1 << 16, 16], &[16, 1], 0, &[1], DType::F16)).clone();
    assert_eq!((h.config.rows_per_thread, h.grid), (1, [2048, 1, 1]));
    // Which lanes store, as the kernel's spread_rows and tree decide: with
    // 8 rows a thread the first lanes of a power of two (at most 8) store
    // 8 / that many each; with fewer, a row's first lane stores it.
    for (shape, says) in [
        ([1 << 20, 8], "over its first 2 lanes, each storing 4"),
        ([600_000, 20], "over its first 4 lanes, each storing 2"),
        ([140_000, 100], "over its first 8 lanes, each storing one"),
        ([1 << 10, 100], "into its first lane, which stores it"),
    ] {
        let text = plan(&shape, &[shape[1] as isize, 1], 0, &[1], DType::F32).to_string();
        assert!(text.contains(says), "{shape:?}: {text}");
    }
    // 2^18 rows: 8 leave 1024, 4 2048 >= 1584: 4. The same rows of f32 (4
    // lanes, 16 rows a pass) keep the 64-register budget's wave of 2112: 8
    // leave 2048, 4 4096: 4.
    let h = only(&plan(&[1 << 18, 16], &[16, 1], 0, &[1], DType::F16)).clone();
    assert_eq!((h.config.rows_per_thread, h.grid), (4, [2048, 1, 1]));
    assert!(h.config.wide_loads());
    let h = only(&plan(&[1 << 18, 16], &[16, 1], 0, &[1], DType::F32)).clone();
    assert_eq!((h.config.rows_per_thread, h.grid), (4, [4096, 1, 1]));
    assert!(!h.config.wide_loads());
    // 16-bit rows that no 16-byte vector reads whole (staged rows of 12,
    // scalar rows of 3) keep the 64-register kernel.
    for len in [12, 3] {
        let h = only(&plan(
            &[1 << 20, len],
            &[len as isize, 1],
            0,
            &[1],
            DType::F16,
        ))
        .clone();
        assert!(!h.config.wide_loads(), "f16 rows of {len}");
    }
    // Rows that are no whole number of vectors, or whose starts are not
    // aligned to one: rows of at most 32 bytes take narrower loads, a lane
    // each where those are scalars (7 and 8 f32, rows 36 bytes apart or one
    // element off a vector boundary), else a lane per vector; packed rows
    // of up to 64 bytes from an aligned base are staged (9 f32); longer
    // ones, and those with gaps, are ragged: 16-byte vectors around the
    // row (9 f32 with a gap: 3 vectors at most, 3 lanes; 17 f32: 5, 5
    // lanes). 1000 rows fill no wave: one row per thread, 1000 / (32 x 2)
    // -> 16 blocks.
    for (shape, strides, offset, expected) in [
        (vec![1000usize, 7], vec![7isize, 1], 0usize, staged(7)),
        (vec![1000, 8], vec![9, 1], 0, rows(8, 1, 1)),
        (vec![1000, 8], vec![8, 1], 1, rows(8, 1, 1)),
        (vec![1000, 8], vec![8, 1], 2, rows(8, 2, 4)),
        (vec![1000, 9], vec![9, 1], 0, staged(9)),
        (vec![1000, 9], vec![10, 1], 0, ragged(9, 4, 3)),
        (vec![1000, 17], vec![17, 1], 0, ragged(17, 4, 5)),
    ] {
        let l = only(&plan(&shape, &strides, offset, &[1], DType::F32)).clone();
        assert_eq!(l.strategy, expected, "{shape:?} {strides:?} +{offset}");
        assert_eq!(l.config.rows_per_thread, 1);
    }
    assert_eq!(
        only(&plan(&[1000, 7], &[7, 1], 0, &[1], DType::F32)).grid,
        [16, 1, 1]
    );
    // explain says how ragged rows are read: rows of 37 f32 span at most
    // (37 + 3) / 4 rounded up = 10 vectors, a lane each, 3 rows a warp.
    let text = plan(&[140_000, 37], &[37, 1], 0, &[1], DType::F32).to_string();
    for says in [
        "10 per row, each loading up to 1 aligned vector(s) of 4 inputs (16 B) around it",
        "3 neighbouring row(s) per warp",
        "at most 10, its inputs picked out by index",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    // Whole vectors that no lane count shares well are read ragged: f64
    // rows of 40 are 20 16-byte loads, one row a warp of 20 lanes (62% of
    // its loads), where 7 lanes of 3 loads hold 4 rows (83%, the row's
    // 21st vector wasted); f32 rows of 68 (17 vectors, 53%) take 9 lanes
    // of 2 (80%), and rows of 148 (37, which no lane count of at most four
    // loads divides) 13 lanes of 3 instead of PyTorch's warp a row. Rows
    // of 100 (25 vectors, 78% as 25 lanes) stay whole.
    for (len, dtype, expected) in [
        (40u32, DType::F64, ragged(40, 2, 7)),
        (68, DType::F32, ragged(68, 4, 9)),
        (148, DType::F32, ragged(148, 4, 13)),
        (100, DType::F32, rows(100, 4, 25)),
    ] {
        let n = len as usize;
        let d = only(&plan(&[4096, n], &[n as isize, 1], 0, &[1], dtype)).clone();
        assert_eq!(d.strategy, expected, "rows of {len} {dtype:?}");
    }
    // Rows of up to four warps of loads: the most lanes that share them
    // equally, at most four vectors each (f32 rows of 256, 200 and 512,
    // f64 rows of 128 and 256, f16 rows of 1024), unless read ragged they
    // use more of a warp's loads (f32 rows of 132: 33 vectors as 11 lanes
    // of 3 hold 2 rows, 69%; as 9 lanes of at most 4, 3 rows, 77%).
    for (shape, dtype, expected, vectors) in [
        ([1000usize, 256], DType::F32, rows(256, 4, 32), 2),
        ([1000, 200], DType::F32, rows(200, 4, 25), 2),
        ([1000, 128], DType::F64, rows(128, 2, 32), 2),
        ([1000, 132], DType::F32, ragged(132, 4, 9), 4),
        ([1000, 512], DType::F32, rows(512, 4, 32), 4),
        ([1000, 256], DType::F64, rows(256, 2, 32), 4),
        ([1000, 1024], DType::F16, rows(1024, 8, 32), 4),
    ] {
        let strides = [shape[1] as isize, 1];
        let l = only(&plan(&shape, &strides, 0, &[1], dtype)).clone();
        assert_eq!(l.strategy, expected, "{shape:?} {dtype:?}");
        match l.strategy {
            Strategy::ShortRows(r) => assert_eq!(r.vectors_per_lane(), vectors),
            other => panic!("{other:?}"),
        }
    }
    // Rows of more than four warps of loads (f32 rows of 1024), rows whose
    // vectors no lane count up to a warp shares in at most four each (f32
    // rows of 644: 161 vectors, 7 x 23), strided rows and column sums:
    // PyTorch's plan.
    for (shape, strides, reduce) in [
        (vec![1000usize, 1024], vec![1024isize, 1], 1usize),
        (vec![1000, 644], vec![644, 1], 1),
        (vec![1000, 8], vec![16, 2], 1),
        (vec![1000, 8], vec![1, 1000], 1),
    ] {
        let p = plan(&shape, &strides, 0, &[reduce], DType::F32);
        assert_eq!(
            only(&p).strategy,
            Strategy::PyTorch,
            "{shape:?} {strides:?}"
        );
        assert!(only(&p).pytorch_config.is_none());
    }
}

#[test]
fn byte_sums_show_pytorch_own_narrower_loads() {
    // PyTorch loads 4 u8 at a time; ours 16. Long rows keep PyTorch's
    // plan but load wider, so explain shows PyTorch's own launch beside
    // ours, and the why lines explain ours.
    let p = plan(&[300, 4096], &[4096, 1], 0, &[1], DType::U8);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::PyTorch);
    assert!(l.config.vectorize_input);
    assert_eq!(l.config.input_vec_size, 16);
    let pt = l.pytorch_config.expect("PyTorch's own loads differ");
    assert!(pt.vectorize_input);
    assert_eq!(pt.input_vec_size, 4);
    assert_eq!(l.pytorch_own_config(), pt);
    let text = p.to_string();
    for says in [
        "with vectorize_input=true output_vec_size=1 input_vec_size=4 (ours loads 16: the op sums bytes)",
        "input vec 16 / output vec 1",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(!text.contains("PyTorch's decisions, then ours"), "{text}");
    // Packed rows replace PyTorch's plan; the one shown is PyTorch's own.
    let l = only(&plan(&[1 << 20, 2], &[2, 1], 0, &[1], DType::U8)).clone();
    assert!(matches!(l.strategy, Strategy::ShortRows(_)));
    assert_eq!(l.pytorch_own_config().input_vec_size, 4);
    // Columns load no vectors, PyTorch's or ours: the same launch.
    let l = only(&plan(&[4096, 4096], &[4096, 1], 0, &[0], DType::Bool)).clone();
    if l.strategy == Strategy::PyTorch {
        assert!(l.pytorch_config.is_none(), "{:?}", l.pytorch_config);
    }
}

#[test]
fn index_ops_load_16_bytes_of_16_bit_rows_and_show_pytorchs_8() {
    // PyTorch loads 4 f16 at a time for argmax and max(dim) (only its sums
    // and means of 16-bit inputs load 8); a pick's bits do not depend on
    // how a lane loads, so ours loads 8 and explain shows both.
    for op in [ReduceOp::ArgMax, ReduceOp::MinDim] {
        let p = plan_op(op, &[300, 4096], &[4096, 1], 0, &[1], DType::BF16);
        let l = only(&p);
        assert_eq!(l.strategy, Strategy::PyTorch, "{op}");
        assert_eq!(l.config.input_vec_size, 8, "{op}");
        let pt = l.pytorch_config.expect("PyTorch's own loads differ");
        assert_eq!(pt.input_vec_size, 4, "{op}");
        let text = p.to_string();
        assert!(
            text.contains("input_vec_size=4 (ours loads 8: 16 bytes of 16-bit inputs, and a pick is the same in any order)"),
            "{text}"
        );
    }
    // f32 already loads 16 bytes, as PyTorch does: nothing to show.
    let p = plan_op(
        ReduceOp::ArgMax,
        &[300, 4096],
        &[4096, 1],
        0,
        &[1],
        DType::F32,
    );
    assert_eq!(only(&p).config.input_vec_size, 4);
    assert!(only(&p).pytorch_config.is_none());
}

#[test]
fn index_ops_keep_8_byte_loads_on_short_16_bit_rows() {
    // Rows shorter than SHORT_ROWS_WIDE_PICKS_MIN_ROW ran slower in 16-byte
    // loads: they load at most PyTorch's 4 inputs (packed, staged or in
    // vectors); from there on, whole 16-byte vectors, a lane's each.
    for op in [ReduceOp::ArgMax, ReduceOp::MaxDim] {
        for row in [2usize, 4, 16, 24, 32, 64, 128, 256] {
            let p = plan_op(op, &[1 << 16, row], &[row as isize, 1], 0, &[1], DType::F16);
            let l = only(&p);
            let Strategy::ShortRows(r) = l.strategy else {
                panic!("{op} rows of {row}: {:?}", l.strategy)
            };
            // A load's inputs, of one row or of several packed ones.
            if (row as u64) < SHORT_ROWS_WIDE_PICKS_MIN_ROW {
                assert!(
                    r.row_vec_size <= 4 && !l.config.wide_loads(),
                    "{op} rows of {row}: {r:?}"
                );
                assert!(
                    p.to_string().contains("keeps PyTorch's 4-input loads"),
                    "{p}"
                );
            } else {
                assert_eq!(
                    (r.row_vec_size, r.lanes_per_row),
                    (8, (row / 8).min(32) as u32),
                    "{op} rows of {row}"
                );
                assert!(l.config.wide_loads(), "{op} rows of {row}");
                assert!(!p.to_string().contains("keeps PyTorch's"), "{p}");
            }
        }
    }
}

#[test]
fn short_rows_find_rows_by_one_stride_where_the_kept_dims_coalesce() {
    let short_rows = |shape: &[usize], strides: &[isize]| {
        let l = only(&plan(shape, strides, 0, &[shape.len() - 1], DType::F32)).clone();
        assert!(
            matches!(l.strategy, Strategy::ShortRows(_)),
            "{shape:?} {strides:?}: {l:?}"
        );
        l
    };
    // Rows of a contiguous [8, 4000, 16]: the kept dims coalesce into one.
    assert!(short_rows(&[8, 4000, 16], &[64_000, 16, 1]).rows_by_one_stride());
    // Rows of its narrowed middle dim ([8, 3000 of 4000, 16]) or of a
    // permuted view ([300, 600, 12] read as [600, 300, 12]): two kept dims.
    let narrowed = short_rows(&[8, 3000, 16], &[64_000, 16, 1]);
    assert!(!narrowed.rows_by_one_stride());
    assert_eq!(
        narrowed.iter.shape().len() - narrowed.iter.num_reduce_dims(),
        2
    );
    assert!(!short_rows(&[300, 600, 12], &[12, 3600, 1]).rows_by_one_stride());
    let p = plan(&[8, 3000, 16], &[64_000, 16, 1], 0, &[2], DType::F32);
    assert!(
        p.to_string().contains("short_rows_kernel<one_dim=false>"),
        "{p}"
    );
}

#[test]
fn rows_of_wide_state_take_at_most_four_a_thread() {
    // Rows of 16, 2^20 of them, found by one stride: sum's 4-byte state
    // (of f32) takes up to 8 a thread; an f64 sum's 8 bytes, logsumexp's
    // 8-byte pairs, argmax's 16-byte index pairs and var's Welford state
    // 4. Sums and argmax take their most (var's rows are staged, and its
    // stage holds 2).
    for (op, dtype, rows) in [
        (ReduceOp::Sum, DType::F32, 8),
        (ReduceOp::Sum, DType::F64, 4),
        (ReduceOp::ArgMax, DType::F32, 4),
        (ReduceOp::Var, DType::F32, 4),
        (ReduceOp::LogSumExp, DType::F32, 4),
    ] {
        let p = plan_op(op, &[1 << 20, 16], &[16, 1], 0, &[1], dtype);
        let l = only(&p);
        assert!(matches!(l.strategy, Strategy::ShortRows(_)), "{op}: {p}");
        assert_eq!(l.short_rows_max_rows_per_thread(), rows, "{op}");
        assert!(l.config.rows_per_thread <= rows, "{op}: {p}");
        if matches!(op, ReduceOp::Sum | ReduceOp::ArgMax) {
            assert_eq!(l.config.rows_per_thread, rows, "{op}: {p}");
        }
        assert_eq!(
            p.to_string()
                .contains("wider than 4 B: a thread takes at most 4 rows"),
            rows == 4,
            "{op}: {p}"
        );
    }
}

#[test]
fn looked_up_rows_take_at_most_four_a_thread() {
    // f32 rows of 16 (4 lanes, 16 rows a CTA pass, a wave of 2112 blocks
    // on 132 SMs), 2^20 of them: found by one stride, 8 a thread leave 8192
    // blocks. The same rows as [1024, 1024 of 1025, 16] (a narrowed middle
    // dim: looked up one by one) stop at 4, the kernel's register arrays,
    // and say so.
    let one_stride = only(&plan(&[1 << 20, 16], &[16, 1], 0, &[1], DType::F32)).clone();
    assert!(one_stride.rows_by_one_stride());
    assert_eq!(
        (one_stride.config.rows_per_thread, one_stride.grid),
        (SHORT_ROWS_MAX_ROWS_PER_THREAD, [8192, 1, 1])
    );
    let p = plan(&[1024, 1024, 16], &[1025 * 16, 16, 1], 0, &[2], DType::F32);
    let looked_up = only(&p);
    assert!(!looked_up.rows_by_one_stride());
    assert_eq!(SHORT_ROWS_LOOKED_UP_MAX_ROWS_PER_THREAD, 4);
    assert_eq!(
        (looked_up.config.rows_per_thread, looked_up.grid),
        (4, [16384, 1, 1])
    );
    let text = p.to_string();
    assert!(text.contains("4 rows per thread: the most (≤ 4)"), "{text}");
    assert!(
        text.contains("again for its output at the store, and a thread takes at most 4 rows"),
        "{text}"
    );
    assert!(
        text.contains("spread its thread's 4 rows over its first 4 lanes, each storing one"),
        "{text}"
    );
}

#[test]
fn looked_up_rows_of_8_byte_inputs_past_their_bound_keep_pytorchs_plan() {
    // [R, 2048, L] permuted to [2048, R, L], reduced over L: two kept dims
    // that do not coalesce, so short_rows_kernel would look each row up.
    let looked_up = |op: ReduceOp, dtype: DType, len: usize| {
        let p = plan_op(
            op,
            &[2048, 64, len],
            &[len as isize, (2048 * len) as isize, 1],
            0,
            &[2],
            dtype,
        );
        let l = only(&p).clone();
        (l.strategy, p.to_string())
    };
    let short_rows = |s: &Strategy| matches!(s, Strategy::ShortRows(_));
    // 16-byte loads: a row of 64 f64 is 32 vectors, one a lane of a warp;
    // 128 is two a lane, 256 four.
    for dtype in [DType::F64, DType::I64] {
        for len in [64, 128] {
            let (strategy, text) = looked_up(ReduceOp::Sum, dtype, len);
            assert!(short_rows(&strategy), "{dtype:?} rows of {len}: {text}");
        }
        let (strategy, text) = looked_up(ReduceOp::Sum, dtype, 256);
        assert!(
            !short_rows(&strategy),
            "{dtype:?} rows of 256: {strategy:?}"
        );
        assert!(
            text.contains("each lane would load 4 vectors of a row, more than the 2"),
            "{text}"
        );
    }
    // An f64 max (8 bytes of state) follows the sums; an f64 variance
    // (Welford's 32 bytes) leaves rows of 128 already. What counts is the
    // input's width: an i32 sum (i64 accumulator) and an f32 argmax or
    // variance (16 bytes) keep ShortRows.
    assert!(short_rows(&looked_up(ReduceOp::AMax, DType::F64, 128).0));
    assert!(!short_rows(&looked_up(ReduceOp::AMax, DType::F64, 256).0));
    let (strategy, text) = looked_up(ReduceOp::Var, DType::F64, 128);
    assert!(!short_rows(&strategy), "{strategy:?}");
    assert!(text.contains("more than the 1"), "{text}");
    assert!(short_rows(&looked_up(ReduceOp::Sum, DType::I32, 256).0));
    assert!(short_rows(&looked_up(ReduceOp::ArgMax, DType::F32, 256).0));
    assert!(short_rows(&looked_up(ReduceOp::Var, DType::F32, 128).0));
    // 4- and 2-byte inputs keep ShortRows at every length it takes.
    for len in [128, 256, 512] {
        let (strategy, text) = looked_up(ReduceOp::Sum, DType::F32, len);
        assert!(short_rows(&strategy), "f32 rows of {len}: {strategy:?}");
        assert!(!text.contains("not ShortRows"), "{text}");
        assert!(short_rows(&looked_up(ReduceOp::Sum, DType::F16, len).0));
    }
    // Rows read a scalar a lane keep it: 3 f64 of a narrowed middle dim.
    let p = plan(&[64, 4000, 3], &[15_000, 3, 1], 3, &[2], DType::F64);
    assert!(!only(&p).rows_by_one_stride(), "{p}");
    assert!(short_rows(&only(&p).strategy), "{p}");
    // Rows found by one stride keep it: the same f64 rows, contiguous.
    let p = plan(
        &[64, 2048, 256],
        &contiguous(&[64, 2048, 256]),
        0,
        &[2],
        DType::F64,
    );
    assert!(short_rows(&only(&p).strategy), "{p}");
}

#[test]
fn rows_shorter_than_a_load_are_packed_several_a_lane() {
    let launch = |shape: &[usize], strides: &[isize], offset, dtype| {
        only(&plan(shape, strides, offset, &[shape.len() - 1], dtype)).clone()
    };
    let packed = |l: &LaunchPlan| match l.strategy {
        Strategy::ShortRows(r) => r.rows_per_vector,
        _ => 0,
    };
    // Rows that divide a 16-byte load (or the op's narrower one), end to
    // end from an aligned base: f16 rows of 2 are 4 a load, of 4 two; f32
    // rows of 2 two; also from a base a load in, with a short last group,
    // and over kept dims that coalesce. Sums of u8 load 16 bytes, but a
    // load holds only two rows, whose i64 sums are 16 bytes: rows of 2, 4
    // and 8 take loads of 4, 8 and 16 bytes. The lane's rows are its output vector. 2^20 rows of 2 f16:
    // 4 a lane, 64 lanes a block and 8 groups a thread -> 2^20 / (4 x 64 x
    // 8) = 512 blocks, short of a 2112-block wave (as are 1024 and 2048 at
    // 4 and 2 groups), so 1 group a thread and 4096 blocks.
    let l = launch(&[1 << 20, 2], &[2, 1], 0, DType::F16);
    assert_eq!(packed(&l), 4);
    let c = &l.config;
    assert_eq!(
        (c.output_vec_size, c.row_vec_size, c.lanes_per_row),
        (4, 8, 1)
    );
    assert_eq!((c.rows_per_thread, l.grid), (1, [4096, 1, 1]));
    for (shape, offset, dtype, rows, load) in [
        (vec![1usize << 24, 2], 0usize, DType::F16, 4, 8),
        (vec![1 << 24, 4], 0, DType::BF16, 2, 8),
        (vec![1 << 24, 2], 0, DType::F32, 2, 4),
        (vec![1000, 2], 8, DType::F16, 4, 8),
        (vec![1001, 2], 0, DType::F16, 4, 8),
        (vec![64, 300, 2], 0, DType::F32, 2, 4),
        (vec![1000, 2], 0, DType::U8, 2, 4),
        (vec![1000, 4], 8, DType::Bool, 2, 8),
        (vec![1000, 8], 0, DType::U8, 2, 16),
    ] {
        let l = launch(&shape, &contiguous(&shape), offset, dtype);
        assert_eq!(packed(&l), rows, "{dtype} {shape:?} +{offset}");
        assert_eq!(
            (l.config.output_vec_size, l.config.row_vec_size),
            (rows, load),
            "{dtype} {shape:?} +{offset}"
        );
    }
    assert_eq!(
        launch(&[1 << 24, 2], &[2, 1], 0, DType::F16)
            .config
            .rows_per_thread,
        8
    );
    // Not packed: a base one row off a load (f16 rows of 2 from element 2),
    // a gap between rows, kept dims that do not coalesce (a narrowed middle
    // dim) or run against memory order (a transposed view), rows of 3, of a
    // whole load (4 f32) or longer, and rows of 1, which are no rows.
    for (shape, strides, offset, dtype) in [
        (vec![1000usize, 2], vec![2isize, 1], 2usize, DType::F16),
        (vec![1000, 2], vec![3, 1], 0, DType::F16),
        (vec![8, 300, 2], vec![800, 2, 1], 0, DType::F32),
        (vec![30, 40, 2], vec![2, 60, 1], 0, DType::F32),
        (vec![1000, 3], vec![3, 1], 0, DType::F16),
        (vec![1000, 4], vec![4, 1], 0, DType::F32),
        (vec![1000, 16], vec![16, 1], 0, DType::F16),
        (vec![1000, 2], vec![2, 1], 2, DType::U8),
    ] {
        let l = launch(&shape, &strides, offset, dtype);
        assert!(
            packed(&l) <= 1,
            "{dtype} {shape:?} {strides:?} +{offset}: {:?}",
            l.strategy
        );
        assert_eq!(l.config.output_vec_size, 1);
    }
    // explain names the kernel and how a lane stores its rows.
    let text = plan(&[1 << 20, 2], &[2, 1], 0, &[1], DType::F16).to_string();
    for says in [
        "packed_rows_kernel",
        "4 whole rows of 2 inputs per 8-input load (16 B)",
        "stores: a lane's 4 outputs lie end to end: one 8-byte store",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
}

#[test]
fn packed_scalar_rows_are_staged_through_shared_memory() {
    let strategy = |shape: &[usize], strides: &[isize], offset, reduce: &[usize], dtype| {
        only(&plan(shape, strides, offset, reduce, dtype)).clone()
    };
    let staged = |l: &LaunchPlan| matches!(l.strategy, Strategy::ShortRows(r) if r.staged);
    // 2^22 packed f32 rows of 7 fill a wave at 8 rows a thread, but 2 warps
    // x 8 rows x a span of 32 x 28 B = 14336 B of stage is over 12 KiB: 4
    // rows a thread, 7168 B. Rows of 3: 2 x 8 x 32 x 12 = 6144 B, so 8;
    // rows of 5: 10240 B, so 8.
    for (len, rows_per_thread, stage) in [(7usize, 4, 7168), (3, 8, 6144), (5, 8, 10240)] {
        let l = strategy(&[1 << 22, len], &[len as isize, 1], 0, &[1], DType::F32);
        assert!(staged(&l), "rows of {len}: {:?}", l.strategy);
        assert!(l.config.stage_rows);
        assert_eq!(
            (l.config.rows_per_thread, l.shared_memory_bytes),
            (rows_per_thread, stage),
            "rows of {len}"
        );
        assert!(l.shared_memory_bytes <= SHORT_ROWS_STAGE_BYTES);
    }
    // Every dtype whose odd rows fit 32 bytes; rows of up to 64 bytes that
    // only vectors under 16 bytes fit (6, 9 and 15 f32, 12 f16);
    // kept dims that coalesce ([64, 300, 5]), a base 16 bytes in, a tail
    // warp (1000 rows).
    for (shape, offset, dtype) in [
        (vec![100_000usize, 6], 0usize, DType::F32),
        (vec![100_000, 9], 0, DType::F32),
        (vec![100_000, 15], 0, DType::F32),
        (vec![100_000, 12], 0, DType::F16),
        (vec![1000, 6], 0, DType::F16),
        (vec![100_000, 7], 0, DType::F16),
        (vec![100_000, 3], 0, DType::F64),
        (vec![100_000, 31], 0, DType::U8),
        (vec![100_000, 3], 0, DType::Bool),
        (vec![64, 300, 5], 0, DType::F32),
        (vec![1000, 7], 4, DType::F32),
        (vec![1000, 7], 8, DType::F16),
    ] {
        let strides = contiguous(&shape);
        let l = strategy(&shape, &strides, offset, &[shape.len() - 1], dtype);
        assert!(staged(&l), "{dtype} {shape:?} +{offset}: {:?}", l.strategy);
    }
    // Not staged: a base off 16 bytes (2 f32 in), rows with a gap between
    // them (a column slice), kept dims out of memory order (a transposed
    // view), rows a 16-byte vector fits, rows over 64 bytes, and rows of
    // one narrower load.
    let not_staged = [
        (
            vec![1000usize, 7],
            vec![7isize, 1],
            2usize,
            vec![1usize],
            DType::F32,
        ),
        (vec![1000, 7], vec![9, 1], 0, vec![1], DType::F32),
        (vec![30, 40, 7], vec![7, 210, 1], 0, vec![2], DType::F32),
        (vec![1000, 8], vec![8, 1], 0, vec![1], DType::F32),
        (vec![1000, 17], vec![17, 1], 0, vec![1], DType::F32),
        (vec![1000, 10], vec![10, 1], 0, vec![1], DType::F64),
        (vec![1000, 2], vec![2, 1], 0, vec![1], DType::F32),
        (vec![1000, 2], vec![2, 1], 0, vec![1], DType::BF16),
    ];
    for (shape, strides, offset, reduce, dtype) in not_staged {
        let l = strategy(&shape, &strides, offset, &reduce, dtype);
        assert!(
            !staged(&l),
            "{dtype} {shape:?} {strides:?} +{offset}: {:?}",
            l.strategy
        );
        assert!(!l.config.stage_rows);
    }
    let p = plan(&[1 << 22, 7], &[7, 1], 0, &[1], DType::F32);
    let text = p.to_string();
    assert!(text.contains("7168 B of shared memory"), "{text}");
    assert!(text.contains("16-byte aligned base"), "{text}");
}

#[test]
fn cta_split_of_a_full_reduction() {
    // [2^25].sum(): vectorized, block 512 x 1, values_per_thread 65536;
    // target 132 * 2048/512 = 528; ctas = max(min(528, 4096), 256) = 528.
    let l = only(&plan(&[1 << 25], &[1], 0, &[0], DType::F32)).clone();
    let c = l.config;
    assert_eq!(c.ctas_per_output, 528);
    assert_eq!(c.input_mult, [1, 512, 512]);
    assert_eq!(c.step_input, 512 * 528);
    assert_eq!((l.grid, l.block), ([1, 528, 1], [512, 1, 1]));
    // Staging: 4 B x 1 output x 528 CTAs (lanes share the output); one semaphore.
    assert_eq!((l.staging_bytes, l.semaphore_bytes), (4 * 528, 4));
}

#[test]
fn cta_split_of_columns_stages_every_lane() {
    // [8192, 32].sum(0) from offset 1 (so output vec 1): block (32, 16),
    // lanes on outputs, values_per_thread 8192/16 = 512;
    // ctas = max(min(528, 512/16 = 32), 512/256 = 2) = 32.
    let l = only(&plan(&[8192, 32], &[32, 1], 1, &[0], DType::F32)).clone();
    let c = l.config;
    assert_eq!(
        (c.output_vec_size, c.ctas_per_output, l.grid, l.block),
        (1, 32, [1, 32, 1], [32, 16, 1])
    );
    assert!(!c.should_block_x_reduce());
    // PyTorch's global_memory_size: 4 B x 32 outputs x 32 CTAs x 32 lanes;
    // the slots the kernel addresses: 4 B x 1 grid column x 32 CTAs x 32 lanes.
    assert_eq!(c.global_memory_size(), 4 * 32 * 32 * 32);
    assert_eq!(l.staging_bytes, 4 * 32 * 32);
    assert_eq!(c.staging_memory_offset(5, [3, 0, 0], [0, 5, 0]), 3 + 5 * 32);
}

#[test]
fn no_cta_split_when_outputs_already_fill_the_gpu() {
    // [4096, 131072].sum(0): output vec 4, block (32, 4) = 128 threads, so
    // target 132 * 2048/128 = 2112; grid.x 131072/4/32 = 1024 <= 2112 and
    // values_per_thread 4096/4 = 1024 -> ctas = max(min(3, 64), 4) = 4.
    let split = only(&plan(&[4096, 131_072], &[131_072, 1], 0, &[0], DType::F32)).clone();
    assert_eq!(split.decisions.target_grid_size, 2112);
    assert_eq!(
        (split.grid, split.config.ctas_per_output),
        ([1024, 4, 1], 4)
    );
    // [1024, 393216] (1.5 GiB, still one launch): values_per_thread
    // 1024/4 = 256 qualifies, but grid.x 393216/128 = 3072 > 2112.
    let wide = only(&plan(&[1024, 393_216], &[393_216, 1], 0, &[0], DType::F32)).clone();
    assert_eq!(wide.decisions.values_per_thread_at_cta_split, 256);
    assert_eq!(wide.grid, [3072, 1, 1]);
    assert!(!wide.config.should_global_reduce());
}

#[test]
fn zero_dim_input_is_one_thread() {
    let p = plan(&[], &[], 0, &[], DType::F32);
    let l = only(&p);
    assert_eq!(
        (l.grid, l.block, l.config.num_inputs, l.config.num_outputs),
        ([1, 1, 1], [1, 1, 1], 1, 1)
    );
}

#[test]
fn empty_input_plans_no_launch() {
    let p = plan(&[0, 5], &[5, 1], 0, &[0], DType::F32);
    assert!(p.launches.is_empty());
    assert!(p.to_string().contains("no launch"));
}

#[test]
fn index_ops_over_one_element_plan_no_launch() {
    // [4, 1, 3] over dim 1: every output reduces one input.
    for op in [ReduceOp::ArgMax, ReduceOp::ArgMin] {
        let p = plan_op(op, &[4, 1, 3], &[3, 3, 1], 0, &[1], DType::F16);
        assert!(p.launches.is_empty(), "{op}");
        assert!(p.to_string().contains("every index is 0"), "{p}");
    }
    // max(dim) reads the values; argmax of two inputs an output reduces.
    for (op, shape, strides) in [
        (ReduceOp::MaxDim, [4, 1, 3], [3, 3, 1]),
        (ReduceOp::ArgMax, [4, 2, 3], [6, 3, 1]),
    ] {
        let p = plan_op(op, &shape, &strides, 0, &[1], DType::F16);
        assert_eq!(p.launches.len(), 1, "{op}");
    }
}

#[test]
fn kernel_types_read_the_input_and_accumulate_in_the_outputs_acc_type() {
    use DType::*;
    // (input, output) -> (scalar_t, arg_t, input_vec_size, can_accumulate_in_output).
    // Same-dtype and 16-bit → f32 rows are PyTorch's `ReduceSumProdKernel.cu`
    // instantiations; mixed rows fuse the cast PyTorch does as a copy.
    for (input, output, scalar, acc, vec, can_acc) in [
        (F16, F16, F16, F32, 8, false),
        (BF16, BF16, BF16, F32, 8, false),
        (F16, F32, F16, F32, 8, true),
        (BF16, F32, BF16, F32, 8, true),
        (F32, F32, F32, F32, 4, true),
        (F64, F64, F64, F64, 4, true),
        (I32, I64, I32, I64, 4, true),
        (U8, I64, U8, I64, 16, true),
        (Bool, I64, Bool, I64, 16, true),
        (U8, I32, U8, I64, 16, false),
        (U8, F32, U8, F32, 4, true),
        (I64, I64, I64, I64, 4, true),
        (F32, F16, F32, F32, 4, false),
        (F32, F64, F32, F64, 4, true),
        (I64, I32, I64, I64, 4, false),
        (F16, I64, F16, I64, 8, true),
    ] {
        let k = ReduceOp::Sum.signature(input, Some(output)).unwrap();
        assert_eq!(
            (k.input, k.acc, k.output, k.input_vec_size, k.vt0),
            (scalar, Accumulator::Scalar(acc), output, vec, 4),
            "{input} -> {output}"
        );
        assert_eq!(k.can_accumulate_in_output(), can_acc, "{input} -> {output}");
    }
}

#[test]
fn integer_sums_read_the_input_in_place() {
    // An i32 view starting 1 element in: the kernel reads the i32 data where
    // it is, so the offset costs the output vectorization, as it would for f32.
    let p = plan(&[32, 64], &[64, 1], 1, &[0], DType::I32);
    assert_eq!(p.signature.input, DType::I32);
    assert_eq!(p.iter.data_offset(TensorIterator::INPUT), 4);
    assert_eq!(only(&p).config.output_vec_size, 1);
    assert_eq!(only(&p).config.element_size_bytes, 8);
    let aligned = plan(&[32, 64], &[64, 1], 4, &[0], DType::I32);
    assert_eq!(only(&aligned).config.output_vec_size, 4);
}

#[test]
fn staging_is_sized_to_the_slots_the_kernel_addresses() {
    // [64, 4096, 64] bf16 summed over dim 1: PyTorch's global_memory_size
    // counts every output times every CTA; the kernel addresses one slot of
    // output_vec_size accumulators per (CTA, lane).
    let p = plan(&[64, 4096, 64], &[262144, 64, 1], 0, &[1], DType::BF16);
    let c = only(&p).config;
    assert!(c.should_global_reduce() && !c.should_block_x_reduce());
    let [gx, gy, _] = c.grid();
    let slots = u64::from(gx) * u64::from(gy) * u64::from(c.block_width);
    assert_eq!(
        only(&p).staging_bytes,
        slots * 4 * u64::from(c.output_vec_size)
    );
    assert!(only(&p).staging_bytes < c.global_memory_size());
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let it = TensorIterator::reduction(&[4, 4], &[4, 1], 0, 4, 4, &[false, true]).unwrap();
    assert!(ReducePlan::new(
        &it,
        &ReduceOp::Sum
            .signature(DType::F64, Some(DType::F64))
            .unwrap(),
        &DeviceProps::h200()
    )
    .is_err());
    assert!(ReducePlan::new(
        &it,
        &ReduceOp::Sum
            .signature(DType::F32, Some(DType::F16))
            .unwrap(),
        &DeviceProps::h200()
    )
    .is_err());
    for bad in [
        DeviceProps {
            sm_count: 0,
            ..DeviceProps::h200()
        },
        DeviceProps {
            warp_size: 0,
            ..DeviceProps::h200()
        },
        DeviceProps {
            warp_size: 48,
            ..DeviceProps::h200()
        },
        DeviceProps {
            max_threads_per_sm: 0,
            ..DeviceProps::h200()
        },
    ] {
        assert!(matches!(
            ReducePlan::new(
                &it,
                &ReduceOp::Sum
                    .signature(DType::F32, Some(DType::F32))
                    .unwrap(),
                &bad
            ),
            Err(Error::Unsupported(_))
        ));
    }
    // A stride so large that every 32-bit piece holds one element.
    let it = TensorIterator::reduction(&[1 << 20], &[1 << 31], 0, 4, 4, &[true]).unwrap();
    assert!(matches!(
        ReducePlan::new(
            &it,
            &ReduceOp::Sum
                .signature(DType::F32, Some(DType::F32))
                .unwrap(),
            &DeviceProps::h200()
        ),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn a_tiny_device_changes_only_the_cta_split() {
    let tiny = DeviceProps {
        sm_count: 2,
        ..DeviceProps::h200()
    };
    let it = TensorIterator::reduction(&[1 << 25], &[1], 0, 4, 4, &[true]).unwrap();
    let p = ReducePlan::new(
        &it,
        &ReduceOp::Sum
            .signature(DType::F32, Some(DType::F32))
            .unwrap(),
        &tiny,
    )
    .unwrap();
    // target 2 * 4 = 8; ctas = max(min(8, 4096), 256) = 256.
    assert_eq!(only(&p).grid, [1, 256, 1]);
    assert_eq!(
        (DeviceProps::h100().sm_count, DeviceProps::a100().sm_count),
        (132, 108)
    );
    assert_eq!(DeviceProps::preset("A100"), Some(DeviceProps::a100()));
}

#[test]
fn explain_says_why() {
    let shape = [16, 128, 64, 128];
    let text = plan(&shape, &contiguous(&shape), 0, &[1], DType::F32).to_string();
    for needle in [
        "reduce_kernel<nt=128, output_vec_size=4>",
        "grid (1024, 1, 1)",
        "block (32, 4, 1)",
        "[3, 2]",
        "lanes walk the outputs",
        "values_per_thread 128 ≥ warp_split_threshold min(4·16, 256) = 64",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let text = plan(&[1 << 25], &[1], 0, &[0], DType::F32).to_string();
    for needle in [
        "lanes walk the reduced dim",
        "values_per_thread 65536 ≥ 256 and grid.x 1 ≤ target 528",
        "split across 528 CTAs",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn cta_split_where_pytorch_leaves_sms_idle() {
    // [32, 64, 56, 56] over (0, 2, 3): PyTorch's block (32, 16) leaves 196
    // values a thread, under its 256, so 64 CTAs on 132 SMs. Ours splits
    // each channel across min(⌈528 / 64⌉ = 9, ⌊196 / 16⌋ = 12) = 9 CTAs, as
    // PyTorch's own split would, then rounds to whole waves: 576 CTAs would
    // take 2 waves of 528 slots, 8 a channel (512) fill 97% of one. Split
    // as PyTorch splits: input_mult[CTA] = step_input before it.
    // (A base one element in, so that no vector load is aligned and the
    // scalar loads stay: aligned, the same grid takes VectorizedDims.)
    let channel_stats = |shape: [usize; 4]| {
        only(&plan(
            &shape,
            &contiguous(&shape),
            1,
            &[0, 2, 3],
            DType::F32,
        ))
        .clone()
    };
    let l = channel_stats([32, 64, 56, 56]);
    assert_eq!(l.strategy, Strategy::CtaSplit { ctas_per_output: 8 });
    let pt = l.pytorch_config.expect("PyTorch's config is kept");
    assert_eq!(
        (pt.grid(), pt.ctas_per_output, pt.values_per_thread()),
        ([64, 1, 1], 1, 196)
    );
    let c = l.config;
    assert_eq!(l.grid, [64, 8, 1]);
    assert_eq!(c.input_mult, [1, 32, 512]);
    assert_eq!(c.step_input, 512 * 8);
    assert!(l.staging_bytes > 0 && l.semaphore_bytes == 256);
    // Every SM already has a CTA ([64, 1024, 32, 32]: 1024 CTAs), or each
    // thread would keep under 32 values: PyTorch's plan.
    for shape in [[64usize, 1024, 32, 32], [2, 16, 16, 16]] {
        let l = channel_stats(shape);
        assert_eq!(l.strategy, Strategy::PyTorch, "{shape:?}");
    }
}

#[test]
fn row_per_warp_where_rows_fill_half_the_warp_slots() {
    // [8192, 8192] f16: PyTorch's block (32, 16) leaves a lane 8192 / 32 =
    // 256 values, at its threshold min(16·16, 256) = 256, so its warps split
    // each row: 8192 CTAs, input_mult [1, 32, 0], step_input 32·16 = 512.
    // 8192 rows are at least half of the H200's 132·2048/32 = 8448 warp
    // slots (4224): a warp per row, 16 rows a block, 8192/16 = 512 CTAs,
    // step_input 32, output_mult[y] = 1, and no shared memory.
    let shape = [8192, 8192];
    let p = plan(&shape, &contiguous(&shape), 0, &[1], DType::F16);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::RowPerWarp);
    let pt = l.pytorch_config.expect("PyTorch's config is kept");
    assert_eq!(
        (pt.grid(), pt.input_mult, pt.step_input),
        ([8192, 1, 1], [1, 32, 0], 512)
    );
    let c = l.config;
    assert_eq!(
        (l.grid, l.block, l.shared_memory_bytes),
        ([512, 1, 1], [32, 16, 1], 0)
    );
    assert_eq!(
        (c.input_mult, c.output_mult, c.step_input, c.step_output),
        ([1, 0, 0], [0, 1], 32, 16)
    );
    assert!(c.vectorize_input && c.values_per_thread() == 256);

    // 4223 rows are under half the slots: PyTorch's split stays.
    for (rows, ours) in [(4223, false), (4224, true)] {
        let shape = [rows, 8192];
        let p = plan(&shape, &contiguous(&shape), 0, &[1], DType::F32);
        assert_eq!(only(&p).strategy == Strategy::RowPerWarp, ours, "{rows}");
    }
    // Every other input of [8192, 16384] f16: no vectors (a 4-byte
    // stride), the same 256 values a lane, a warp a row all the same.
    let p = plan(&[8192, 8192], &[16_384, 2], 0, &[1], DType::F16);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::RowPerWarp);
    assert!(!l.config.vectorize_input);
    // Rows of 4096 (128 values a lane: PyTorch does not split) and 4 rows
    // of 2^20 (split across warps and CTAs) are not ours to change.
    for shape in [[8192, 4096], [4, 1 << 20]] {
        let p = plan(&shape, &contiguous(&shape), 0, &[1], DType::F32);
        assert!(
            matches!(
                only(&p).strategy,
                Strategy::PyTorch | Strategy::CtaSplit { .. }
            ),
            "{shape:?}"
        );
    }
}

#[test]
fn vectorized_dims_for_aligned_channel_statistics() {
    // [32, 64, 56, 56] f32 over (0, 2, 3): the iterator reduces H·W = 3136
    // contiguous inputs, then N = 32 (stride 64·3136·4 B), for 64 outputs.
    // PyTorch loads scalars (two reduced dims). Ours: 4-input vectors, as
    // the port makes them for one dim: dim0 = 100352 / 4 = 25088, block
    // (32, 16), input_mult [1, 32, _], 196 values a thread (under 256: no
    // split of its own), 64 CTAs; then CtaSplit's rule: min(⌈528 / 64⌉ = 9,
    // ⌊196 / 16⌋ = 12) = 9, in whole waves 8 CTAs per output (512 CTAs),
    // step_input 512·8 vectors, ⌈100352 / 4096⌉ = 25 values a thread.
    let shape = [32, 64, 56, 56];
    let p = plan(&shape, &contiguous(&shape), 0, &[0, 2, 3], DType::F32);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::VectorizedDims { cta_split: Some(8) });
    let pt = l.pytorch_config.expect("PyTorch's config is kept");
    assert!(!pt.vectorize_input);
    let c = l.config;
    assert!(c.vectorize_input && c.input_vec_size == 4);
    assert_eq!((l.grid, l.block), ([64, 8, 1], [32, 16, 1]));
    assert_eq!(
        (c.input_mult, c.step_input, c.values_per_thread()),
        ([1, 32, 512], 4096, 25)
    );
    let text = p.to_string();
    assert!(
        text.contains("PyTorch vectorises loads over one reduced dim only, and 2 are reduced"),
        "{text}"
    );

    // [64, 1024, 32, 32]: 1024 CTAs already reach every SM, no split; f16
    // loads 8 inputs (16 B) at a time.
    let shape = [64, 1024, 32, 32];
    for (dtype, width) in [(DType::F32, 4), (DType::F16, 8), (DType::BF16, 8)] {
        let p = plan(&shape, &contiguous(&shape), 0, &[0, 2, 3], dtype);
        let l = only(&p);
        assert_eq!(l.strategy, Strategy::VectorizedDims { cta_split: None });
        assert_eq!((l.config.input_vec_size, l.grid), (width, [1024, 1, 1]));
    }

    // Not ours: H·W = 63 is no whole number of vectors; a base one element
    // in; W narrowed to 4 of 5, so H's stride (20 B) breaks the alignment;
    // too few inputs an output (2·4·4 = 32 < 128) for the port to vectorise.
    let no_vectors = |shape: &[usize], strides: &[isize], offset| {
        let l = only(&plan(shape, strides, offset, &[0, 2, 3], DType::F32)).clone();
        assert!(!l.config.vectorize_input, "{shape:?} {strides:?} {offset}");
        assert!(!matches!(l.strategy, Strategy::VectorizedDims { .. }));
    };
    no_vectors(&[8, 16, 7, 9], &contiguous(&[8, 16, 7, 9]), 0);
    no_vectors(&shape, &contiguous(&shape), 1);
    no_vectors(&[8, 3, 64, 4], &[3 * 64 * 5, 64 * 5, 5, 1], 0);
    no_vectors(&[2, 8, 4, 4], &contiguous(&[2, 8, 4, 4]), 0);
}

#[test]
fn cta_splits_fill_whole_waves() {
    // 528 slots of 512 threads on an H200 (132 SMs x 2048 / 512).
    let h200 = DeviceProps::h200();
    let wave = u64::from(config::target_grid_size(&h200, 512));
    assert_eq!(wave, 528);
    let waves = |ctas, grid_x| strategy::whole_waves(ctas, grid_x, wave);
    // 64 x 9 = 576: two waves, 55% of their slots; 64 x 8 = 512, 97% of one.
    assert_eq!(waves(9, 64), 8);
    // 3 x 176 = 528 and 1 x 1056: whole waves already.
    assert_eq!(waves(176, 3), 176);
    assert_eq!(waves(1056, 1), 1056);
    // 200 x 5 = 1000 fill 95% of two waves; 2 (400) would fill 76% of one.
    assert_eq!(waves(5, 200), 5);
    // Under a wave: kept. 1 x 600: 528 fill one wave, 600 take two.
    assert_eq!(waves(2, 100), 2);
    assert_eq!(waves(600, 1), 528);
    assert_eq!(waves(1, 1000), 1);

    // The port's own split, vectorised: [256, 64, 56, 56] over (0, 2, 3)
    // has 802816 / 512 = 1568 values a thread, so the port splits each of
    // the 64 channels max(min(⌈528 / 64⌉ = 9, ⌈1568 / 16⌉ = 98), ⌈1568 /
    // 256⌉ = 7) = 9 ways; ours takes 8.
    let shape = [256, 64, 56, 56];
    let p = plan(&shape, &contiguous(&shape), 0, &[0, 2, 3], DType::F32);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::VectorizedDims { cta_split: Some(8) });
    assert_eq!(l.grid, [64, 8, 1]);
    assert_eq!(l.config.input_mult, [1, 32, 512]);
    assert_eq!(l.config.step_input, 512 * 8);
    assert!(p.to_string().contains("the port's own split"), "{p}");
    // [64, 3, 512, 512]: 3 x 176 = 528, the port's split as it is.
    let shape = [64, 3, 512, 512];
    let p = plan(&shape, &contiguous(&shape), 0, &[0, 2, 3], DType::F32);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::VectorizedDims { cta_split: None });
    assert_eq!(l.grid, [3, 176, 1]);
}

#[test]
fn waves_count_the_ctas_the_loaded_kernel_holds() {
    // With the kernels' registers known, a wave is the CTAs they let an SM
    // hold: reduce_kernel<512, 1> at 40 registers holds 3 CTAs of 512
    // threads an SM, 396 on an H200, not 528.
    let h200 = DeviceProps::h200();
    let held = KernelRegisters::new([(1, 40), (2, 32), (4, 49)]);
    let plan_held = |shape: &[usize], dims: &[usize], dt: DType| {
        let mask: Vec<bool> = (0..shape.len()).map(|d| dims.contains(&d)).collect();
        let it = TensorIterator::reduction(
            shape,
            &contiguous(shape),
            0,
            dt.size_in_bytes(),
            dt.size_in_bytes(),
            &mask,
        )
        .unwrap();
        let sig = ReduceOp::Sum.signature(dt, None).unwrap();
        ReducePlan::for_kernels(&it, &sig, &h200, &held).unwrap()
    };
    // VectorizedDims' port split: 9 CTAs a channel (576, 1.45 waves of
    // 396) become 6 (384, one wave); on a full SM's count, 8 (above).
    let p = plan_held(&[256, 64, 56, 56], &[0, 2, 3], DType::F32);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::VectorizedDims { cta_split: Some(6) });
    assert_eq!(l.grid, [64, 6, 1]);
    assert!(p.to_string().contains("384 CTAs for 396 resident at once (132 SMs x 3 CTAs of 512 threads at the kernel's 40 registers a thread)"), "{p}");
    // TallColumns of f64, lanes of one output: 32 CTA columns, 16 CTAs a
    // column on a full SM's count (512, 1.29 waves of 396), 12 here.
    let p = plan_held(&[16384, 1024], &[0], DType::F64);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::TallColumns { output_vec_size: 1 });
    assert_eq!(l.grid, [32, 12, 1]);
    assert_eq!(l.config.ctas_per_output, 12);
    // PyTorch's own config is the port's, whatever the registers.
    let full = plan(
        &[16384, 1024],
        &contiguous(&[16384, 1024]),
        0,
        &[0],
        DType::F64,
    );
    assert_eq!(l.pytorch_config, only(&full).pytorch_config);
}

#[test]
fn tall_columns_narrow_the_output_vectors_until_the_fold_is_short() {
    // [65536, 256] f64 over dim 0. PyTorch: 4 outputs a lane, block (32, 4)
    // (512 / 4 = 128 threads), grid.x = 256 / 128 = 2; 65536 / 4 = 16384
    // values a thread → ctas_per_output = max(min(⌈2112 / 2⌉ = 1056,
    // ⌈16384 / 16⌉ = 1024), 64) = 1024, and the last CTA's 4 rows fold
    // 1024 / 4 = 256 partials a thread. 2 a lane: block (32, 8), grid.x 4,
    // 8192 values → min(⌈1056 / 4⌉ = 264, 512) = 264, 264 / 8 = 33 > 8.
    // 1 a lane (8-byte loads): block (32, 16), grid.x 8, 4096 values →
    // min(⌈528 / 8⌉ = 66, 256) = 66 CTAs, one whole wave of 528, 66 / 16
    // = 5 partials a thread.
    let shape = [65536, 256];
    let p = plan(&shape, &contiguous(&shape), 0, &[0], DType::F64);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::TallColumns { output_vec_size: 1 });
    let pt = pytorch(&p);
    assert_eq!(
        (pt.output_vec_size, pt.grid(), pt.block()),
        (4, [2, 1024, 1], [32, 4, 1])
    );
    assert_eq!((l.nt, l.grid, l.block), (512, [8, 66, 1], [32, 16, 1]));
    assert!(!l.config.should_block_x_reduce() && l.config.should_block_y_reduce());
    assert!(p.to_string().contains("TallColumns"), "{p}");

    // [4096, 4096] f64: PyTorch's grid.x 32 and min(⌈2112 / 32⌉ = 66,
    // ⌈1024 / 16⌉ = 64) = 64 CTAs fold 16 a thread. 2 a lane: grid.x 64,
    // min(⌈1056 / 64⌉ = 17, ⌈512 / 16⌉ = 32) = 17 CTAs, whose 1088 spill
    // 32 past a wave of 1056: 16 CTAs fill one (1024), 2 a thread.
    let shape = [4096, 4096];
    let p = plan(&shape, &contiguous(&shape), 0, &[0], DType::F64);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::TallColumns { output_vec_size: 2 });
    assert_eq!((l.grid, l.block), ([64, 16, 1], [32, 8, 1]));

    // f32 stops at 2 a lane (8-byte loads), whatever the fold: [401408,
    // 128] (channels-last statistics) folds 528 with PyTorch's single CTA
    // column of 2112 CTAs, 528 / 8 = 66 at 2 a lane (grid.x 2, ⌈1056 /
    // 2⌉ = 528 CTAs).
    let shape = [401_408, 128];
    let p = plan(&shape, &contiguous(&shape), 0, &[0], DType::F32);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::TallColumns { output_vec_size: 2 });
    assert_eq!((l.grid, l.block), ([2, 528, 1], [32, 8, 1]));

    // 16-bit inputs keep PyTorch's 4 (8-byte loads); so do columns whose
    // fold is short already: [4096, 16384] f32, grid.x 128, ⌈2112 / 128⌉
    // = 17 CTAs, 17 / 4 = 5 a thread; and rows (lanes on the reduced dim).
    for (shape, dims, dtype) in [
        ([65536, 2048], [0], DType::F16),
        ([65536, 2048], [0], DType::BF16),
        ([4096, 16384], [0], DType::F32),
        ([256, 65536], [1], DType::F64),
    ] {
        let p = plan(&shape, &contiguous(&shape), 0, &dims, dtype);
        assert!(
            !matches!(only(&p).strategy, Strategy::TallColumns { .. }),
            "{shape:?} {dtype}"
        );
    }
}

#[test]
fn kept_dims_run_in_the_input_order_where_pytorch_scatters_its_lanes() {
    // [256, 256, 1024].permute(2, 0, 1) summed over its last dim (the
    // base's middle, stride 1024): the result [1024, 256] is contiguous,
    // so PyTorch's order puts the permuted dim 0 (input stride 1 element,
    // output stride 256) after dim 1 (input stride 262144, output stride
    // 1), and its lanes, which walk the first kept dim, load 4 bytes 1 MiB
    // apart. By the input the first kept dim is contiguous: PyTorch's rules
    // then vectorise 4 outputs a lane, block (32, 4), grid.x = 262144 /
    // (32·4) = 2048, each warp row's lanes loading 512 contiguous bytes.
    let p = plan(&[1024, 256, 256], &[1, 262_144, 1024], 0, &[2], DType::F32);
    let l = only(&p);
    let own = l.pytorch_order_config.expect("PyTorch's own order is kept");
    assert_eq!(
        (own.output_vec_size, own.grid(), own.block()),
        (1, [16384, 1, 1], [32, 16, 1])
    );
    assert_eq!(pytorch(&p), own);
    assert_eq!(l.iter.source_dims(1), &[0]);
    assert_eq!(l.iter.strides(TensorIterator::INPUT), &[4096, 4, 1 << 20]);
    assert_eq!(l.iter.strides(TensorIterator::OUTPUT), &[0, 1024, 4]);
    assert_eq!(
        (l.config.output_vec_size, l.grid, l.block),
        (4, [2048, 1, 1], [32, 4, 1])
    );
    assert!(p.to_string().contains("dim order (ours)"), "{p}");

    // Not ours to change: a contiguous reduced dim (lanes walk the rows in
    // either order); kept dims already by input; PyTorch's first kept dim
    // striding less than a sector (8 bytes: lanes share sectors); a single
    // kept dim.
    for (shape, strides, dims) in [
        (vec![64, 32, 128], vec![128, 8192, 1], vec![2]),
        (vec![64, 32, 128], vec![4096, 128, 1], vec![0]),
        (vec![2, 4, 128], vec![1, 2, 8], vec![2]),
        (vec![64, 4096], vec![1, 64], vec![1]),
    ] {
        let p = plan(&shape, &strides, 0, &dims, DType::F32);
        assert!(
            only(&p).pytorch_order_config.is_none(),
            "{shape:?} {strides:?} {dims:?}"
        );
    }
}

#[test]
fn short_columns_take_16_byte_loads_of_narrow_inputs() {
    // [2, 2^20] f16 over dim 0: PyTorch's 4 outputs a lane (8-byte loads),
    // block (64, 2) of 128 threads, 2 values a thread, each warp its own
    // outputs; 8 a lane: at most 512 / 8 = 64 threads, block (32, 2), and
    // the same 512 outputs a CTA, so grid.x stays 2^20 / 512 = 2048.
    let shape = [2, 1 << 20];
    let p = plan(&shape, &contiguous(&shape), 0, &[0], DType::F16);
    let l = only(&p);
    assert_eq!(l.strategy, Strategy::ShortColumns { output_vec_size: 8 });
    let pt = pytorch(&p);
    assert_eq!(
        (pt.output_vec_size, pt.grid(), pt.block()),
        (4, [2048, 1, 1], [64, 2, 1])
    );
    assert_eq!((l.nt, l.grid, l.block), (64, [2048, 1, 1], [32, 2, 1]));
    assert!(!l.config.should_block_y_reduce() && !l.config.should_global_reduce());
    assert!(p.to_string().contains("ShortColumns"), "{p}");
    // Its kernel has no block reduce: the same lanes made to share their
    // columns between the block's two warps are a broken plan, which the
    // simulator (and the backend, before launching) refuses.
    assert!(!l.config.wide_lanes_share_outputs());
    let mut shared = l.clone();
    shared.config.input_mult[BLOCK_Y] = shared.config.input_mult[BLOCK_X].max(1);
    assert!(shared.config.wide_lanes_share_outputs());
    let refused = simulate::simulate_launch(&shared, 2, |_| {}).unwrap_err();
    assert!(refused.contains("lanes of 8 outputs"), "{refused}");

    // bf16 columns of 16: PyTorch's block (32, 4), 16 values a thread,
    // under its warp split threshold of 4 · 16 = 64.
    let shape = [16, 1 << 20];
    let p = plan(&shape, &contiguous(&shape), 0, &[0], DType::BF16);
    assert_eq!(
        only(&p).strategy,
        Strategy::ShortColumns { output_vec_size: 8 }
    );

    // Kept as PyTorch plans them: 4-byte inputs (already 16-byte loads), a
    // view starting 4 elements into its row (vectors of 4 at most), and
    // columns long enough for PyTorch's warps to share them.
    for (shape, strides, offset, dtype) in [
        (vec![2, 1 << 20], contiguous(&[2, 1 << 20]), 0, DType::F32),
        (vec![2, 1024], vec![1028, 1], 4, DType::F16),
        (
            vec![128, 1 << 16],
            contiguous(&[128, 1 << 16]),
            0,
            DType::F16,
        ),
    ] {
        let p = plan(&shape, &strides, offset, &[0], dtype);
        assert!(
            !matches!(only(&p).strategy, Strategy::ShortColumns { .. }),
            "{shape:?} {dtype}: {:?}",
            only(&p).strategy
        );
    }

    // Which signatures have the 8-output kernel: narrow inputs with
    // accumulators of at most 4 bytes.
    let widest =
        |op: ReduceOp, dtype: DType| max_output_vec_size(&op.signature(dtype, None).unwrap());
    assert_eq!(widest(ReduceOp::Sum, DType::F16), 8);
    assert_eq!(widest(ReduceOp::AMax, DType::BF16), 8);
    assert_eq!(widest(ReduceOp::Sum, DType::F32), 4);
    assert_eq!(widest(ReduceOp::Sum, DType::U8), 4); // accumulates in i64
    assert_eq!(widest(ReduceOp::ArgMax, DType::F16), 4); // value and index
    assert_eq!(widest(ReduceOp::Var, DType::F16), 4); // Welford state
}

#[test]
fn ragged_columns_take_whole_vectors_of_misaligned_columns() {
    // [3, 22369621] f32 over dim 0: the width is odd, so PyTorch's
    // get_output_vec_size halves to 1; set_block_dimension(22369621, 3)
    // at 512 threads: width 32, height min(2, 16) = 2, width min(512, 256)
    // = 256; 3 values a thread < min(2·16, 256) → warps take outputs;
    // grid.x = ⌈22369621 / 512⌉ = 43691.
    let shape = [3, 22_369_621];
    let p = plan(&shape, &contiguous(&shape), 0, &[0], DType::F32);
    let l = only(&p);
    let pt = pytorch(&p);
    assert_eq!(
        (pt.output_vec_size, pt.grid(), pt.block()),
        (1, [43691, 1, 1], [256, 2, 1])
    );
    // Ours: 4 a lane whatever the alignment, at most 512 / 4 = 128
    // threads: ⌈22369621 / 4⌉ = 5592406 vectors, block (64, 2), 128 vectors
    // a CTA, grid.x = ⌈5592406 / 128⌉ = 43691; the last vector holds
    // 22369621 mod 4 = 1 output.
    assert_eq!(l.strategy, Strategy::RaggedColumns { output_vec_size: 4 });
    assert!(l.config.ragged_columns);
    assert_eq!((l.nt, l.grid, l.block), (128, [43691, 1, 1], [64, 2, 1]));
    assert_eq!(l.config.num_outputs, 22_369_621);
    assert!(!l.config.should_block_y_reduce() && !l.config.should_global_reduce());
    let text = p.to_string();
    assert!(text.contains("RaggedColumns"), "{text}");
    assert!(text.contains("stores the 1 of its 4 outputs"), "{text}");

    // 16-bit columns one element into a row pitch of 2063: PyTorch's 1
    // output a lane; ours 8 (16-byte vectors).
    let p = plan(&[3, 2051], &[2063, 1], 3, &[0], DType::F16);
    assert_eq!(
        only(&p).strategy,
        Strategy::RaggedColumns { output_vec_size: 8 }
    );
    // A width of 4 mod 8 leaves 16-bit lanes PyTorch's 4 (8-byte loads).
    let p = plan(&[2, 1028], &contiguous(&[2, 1028]), 0, &[0], DType::BF16);
    assert_eq!(pytorch(&p).output_vec_size, 4);
    assert_eq!(
        only(&p).strategy,
        Strategy::RaggedColumns { output_vec_size: 8 }
    );

    // Kept as they were: aligned columns (PyTorch's 4 already), columns
    // too few to fill a warp of lanes, kept dims that do not coalesce
    // (a transposed base), reduced dims that do not, rows, where lanes
    // share an output, and long columns: [64, 1048577] f32 at 4 a lane
    // and 128 threads gets block (32, 4), whose warps split the rows.
    for (shape, strides, reduce, dtype) in [
        (
            vec![3, 1 << 20],
            contiguous(&[3, 1 << 20]),
            vec![0],
            DType::F32,
        ),
        (
            vec![6, 4, 3001],
            vec![13001, 3001, 1],
            vec![0, 1],
            DType::F32,
        ),
        (vec![1000, 67], contiguous(&[1000, 67]), vec![0], DType::F32),
        (vec![4, 24, 65], vec![65, 260, 1], vec![0], DType::F32),
        (vec![4099, 3], vec![1, 4099], vec![0], DType::F32),
        (
            vec![64, 1_048_577],
            contiguous(&[64, 1_048_577]),
            vec![0],
            DType::F32,
        ),
    ] {
        let p = plan(&shape, &strides, 0, &reduce, dtype);
        assert!(
            p.launches
                .iter()
                .all(|l| !matches!(l.strategy, Strategy::RaggedColumns { .. })),
            "{shape:?} {strides:?}: {:?}",
            only(&p).strategy
        );
    }
}
