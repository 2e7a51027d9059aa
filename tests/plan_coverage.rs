//! Coverage of the planned launches: simulating every thread of every CTA
//! of every launch (`plan::simulate`, which walks the kernel's own index
//! maps, including the vectorized head/tail and the staging buffer) must
//! visit each (output, input) pair of the iterator exactly once, and
//! nothing else.

use proptest::prelude::*;
use std::collections::HashMap;
use tensor_reduce::cuda::plan::simulate::{iterator_visits, simulate_launch, Visit};
use tensor_reduce::cuda::plan::{
    DeviceProps, KernelRegisters, ReducePlan, Strategy as PlanStrategy,
};
use tensor_reduce::iter::TensorIterator;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::DType;

/// A strided view: `shape` over an allocation laid out in `order`, with a
/// step and some padding (narrowing) per dim, some dims broadcast.
#[derive(Clone, Debug)]
struct Layout {
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
    mask: Vec<bool>,
}

fn layout(max_dim: usize, max_numel: usize) -> impl Strategy<Value = Layout> {
    (1usize..=5)
        .prop_flat_map(move |rank| {
            (
                prop::collection::vec(1..=max_dim, rank),
                prop::collection::vec(1usize..=3, rank),
                prop::collection::vec(0usize..=2, rank),
                Just((0..rank).collect::<Vec<_>>()).prop_shuffle(),
                prop::collection::vec(any::<bool>(), rank),
                prop::collection::vec(0u8..10, rank),
                prop::collection::vec(0usize..=2, rank),
            )
        })
        .prop_map(
            move |(mut shape, step, pad, order, mask, broadcast, start)| {
                let rank = shape.len();
                while shape.iter().product::<usize>() > max_numel {
                    let d = (0..rank).max_by_key(|&d| shape[d]).unwrap();
                    shape[d] /= 2;
                }
                let alloc: Vec<usize> = (0..rank).map(|d| shape[d] * step[d] + pad[d]).collect();
                // Allocation strides, `order[0]` fastest.
                let mut alloc_stride = vec![0usize; rank];
                let mut acc = 1;
                for &d in &order {
                    alloc_stride[d] = acc;
                    acc *= alloc[d];
                }
                let strides = (0..rank)
                    .map(|d| {
                        if broadcast[d] == 0 {
                            0
                        } else {
                            (alloc_stride[d] * step[d]) as isize
                        }
                    })
                    .collect();
                let offset = (0..rank)
                    .map(|d| start[d].min(pad[d]) * alloc_stride[d])
                    .sum();
                Layout {
                    shape,
                    strides,
                    offset,
                    mask,
                }
            },
        )
}

const DTYPES: [DType; 8] = [
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::F64,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DTYPES.to_vec())
}

fn device() -> impl Strategy<Value = DeviceProps> {
    prop_oneof![
        Just(DeviceProps::h200()),
        Just(DeviceProps::a100()),
        (
            1u32..=16,
            prop::sample::select(vec![256u32, 512, 1024, 2048])
        )
            .prop_map(|(sms, threads)| DeviceProps {
                name: "tiny".into(),
                sm_count: sms,
                max_threads_per_sm: threads,
                ..DeviceProps::h200()
            }),
    ]
}

/// Simulates every launch of the plan and compares with the iterator the
/// kernel walks; returns how many pairs were checked.
fn check_plan(plan: &ReducePlan) -> Result<usize, String> {
    let mut balance: HashMap<Visit, i64> = HashMap::new();
    iterator_visits(&plan.iter, |v| *balance.entry(v).or_default() += 1);
    let scalar = plan.signature.input.size_in_bytes() as u64;
    for (i, launch) in plan.launches.iter().enumerate() {
        let mut extra = None;
        simulate_launch(launch, scalar, |v| {
            let n = balance.entry(v).or_default();
            *n -= 1;
            if *n < 0 && extra.is_none() {
                extra = Some(v);
            }
        })
        .map_err(|e| format!("launch {i}: {e}"))?;
        if let Some(v) = extra {
            return Err(format!(
                "launch {i} visits {v:?} once too often (or outside the iterator)"
            ));
        }
    }
    if let Some((v, n)) = balance.iter().find(|(_, &n)| n != 0) {
        return Err(format!("{v:?} visited {} time(s) too few", n));
    }
    Ok(plan.iter.numel())
}

/// Registers of a module's kernels: unknown (a full SM's CTAs a wave), or
/// anything from a few to the most a thread may take.
fn kernel_registers() -> impl Strategy<Value = KernelRegisters> {
    prop_oneof![
        Just(KernelRegisters::default()),
        (16u32..=255, 16u32..=255, 16u32..=255, 16u32..=255)
            .prop_map(|(a, b, c, d)| KernelRegisters::new([(1, a), (2, b), (4, c), (8, d)])),
    ]
}

fn plan_layout(l: &Layout, dtype: DType, props: &DeviceProps) -> ReducePlan {
    plan_layout_for(l, dtype, props, &KernelRegisters::default())
}

fn plan_layout_for(
    l: &Layout,
    dtype: DType,
    props: &DeviceProps,
    registers: &KernelRegisters,
) -> ReducePlan {
    let out = ReduceOp::Sum.output_dtype(dtype, None).unwrap();
    let it = TensorIterator::reduction(
        &l.shape,
        &l.strides,
        l.offset,
        dtype.size_in_bytes(),
        out.size_in_bytes(),
        &l.mask,
    )
    .unwrap();
    ReducePlan::for_kernels(
        &it,
        &ReduceOp::Sum.signature(dtype, Some(out)).unwrap(),
        props,
        registers,
    )
    .expect("plans")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn small_views_are_covered_exactly_once(l in layout(6, 4096), dtype in dtype(), props in device(), registers in kernel_registers()) {
        let plan = plan_layout_for(&l, dtype, &props, &registers);
        prop_assert_eq!(plan.launches.len(), 1);
        if let Err(e) = check_plan(&plan) {
            return Err(TestCaseError::fail(format!("{e}\nplan: {:#?}", plan.launches[0].config)));
        }
    }

    #[test]
    fn long_rows_and_columns_are_covered_exactly_once(l in layout(300, 6000), dtype in dtype(), props in device(), registers in kernel_registers()) {
        // Rows long enough for input vectorization (>= 128) and the
        // misaligned-head path of offset views.
        let plan = plan_layout_for(&l, dtype, &props, &registers);
        if let Err(e) = check_plan(&plan) {
            return Err(TestCaseError::fail(format!("{e}\nplan: {:#?}", plan.launches[0].config)));
        }
    }
}

/// Shapes where the CTA split (global reduce through staging) kicks in:
/// long contiguous rows (lanes on the reduced dim) or tall columns (lanes
/// on the outputs), as `(reduced, kept)` lengths.
fn global_reduce_shape() -> impl Strategy<Value = (usize, usize, bool)> {
    prop_oneof![
        (131_072usize..=200_000, 1usize..=2, Just(true)),
        (4096usize..=12_000, 1usize..=40, Just(false)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn global_reduce_launches_are_covered_exactly_once(
        (reduced, kept, rows) in global_reduce_shape(),
        offset in 0usize..=3,
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::F64, DType::I32]),
        props in device(),
        registers in kernel_registers(),
    ) {
        // rows: [kept, reduced] row-major; else [reduced, kept] row-major.
        let (shape, strides, mask) = if rows {
            ([kept, reduced], [reduced as isize, 1], [false, true])
        } else {
            ([reduced, kept], [kept as isize, 1], [true, false])
        };
        let out = ReduceOp::Sum.output_dtype(dtype, None).unwrap();
        let it = TensorIterator::reduction(&shape, &strides, offset, dtype.size_in_bytes(), out.size_in_bytes(), &mask).unwrap();
        let plan = ReducePlan::for_kernels(&it, &ReduceOp::Sum.signature(dtype, Some(out)).unwrap(), &props, &registers).unwrap();
        if let Err(e) = check_plan(&plan) {
            return Err(TestCaseError::fail(format!("{e}\nplan: {:#?}", plan.launches[0].config)));
        }
    }
}

/// Rows of a contiguous reduced dim, as `[rows, row_len]` inside rows
/// `row_len + pad` apart, with an extra kept dim `outer` apart: the layouts
/// the ShortRows strategy takes (whole vectors or not, aligned or not, a
/// vector or several per lane).
fn short_rows_layout() -> impl Strategy<Value = Layout> {
    let short = (1usize..=48, 1usize..=700);
    let longer = (49usize..=300, 1usize..=120);
    // Up to four warps of 16-byte loads: 16-bit rows of 1024.
    let longest = (301usize..=1100, 1usize..=40);
    (
        prop_oneof![short, longer, longest],
        0usize..=4,
        1usize..=3,
        0usize..=9,
    )
        .prop_map(|((row_len, rows), pad, outer, offset)| {
            let row_stride = row_len + pad;
            Layout {
                shape: vec![outer, rows, row_len],
                strides: vec![(rows * row_stride) as isize, row_stride as isize, 1],
                offset,
                mask: vec![false, false, true],
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn short_rows_launches_are_covered_exactly_once(l in short_rows_layout(), dtype in dtype(), props in device()) {
        let plan = plan_layout(&l, dtype, &props);
        if let Err(e) = check_plan(&plan) {
            return Err(TestCaseError::fail(format!("{e}\nplan: {:#?}", plan.launches[0].config)));
        }
    }
}

#[test]
fn the_short_rows_generator_reaches_every_load_width() {
    // Guard against the generator above missing the strategy's branches:
    // every load width, several rows per thread, rows that are not a
    // power of two of lanes, lanes that load several vectors each, and
    // packed rows staged through shared memory (700 rows: the last warp's
    // span is partial and read unstaged): rows of 7 and 3 f32, 7 f16, and
    // 40 u8, which only 8-byte vectors fit; and ragged rows, read as the
    // vectors around them: 37 f32 packed, 127 f64 one element in, 33 f16
    // three elements in, and 148 f32, aligned whole vectors (37) that no
    // lane count shares well; and packed rows, several a load: 2 f16, 4
    // bf16 16 bytes in, 2 f32 16 bytes in, and 4 and 8 u8 (two rows a
    // load, whose i64 sums fill a 16-byte store: loads of 8 and 16 bytes).
    let mut seen = std::collections::BTreeSet::new();
    let mut staged = 0;
    let mut ragged = 0;
    let mut packed = std::collections::BTreeSet::new();
    let mut vectors_per_lane = std::collections::BTreeSet::new();
    // One ShortRows block fills this device, so 700 rows are many a thread.
    let tiny = DeviceProps {
        sm_count: 1,
        max_threads_per_sm: tensor_reduce::cuda::plan::SHORT_ROWS_THREADS,
        ..DeviceProps::h200()
    };
    for (row_len, offset, dtype) in [
        (16, 0, DType::F32),
        (6, 2, DType::F32),
        (5, 1, DType::F32),
        (40, 0, DType::U8),
        (24, 0, DType::F16),
        (256, 0, DType::F32),
        (200, 4, DType::F32),
        (128, 0, DType::F64),
        (300, 0, DType::F32),
        (512, 0, DType::F32),
        (1024, 0, DType::F16),
        (7, 0, DType::F32),
        (3, 4, DType::F32),
        (7, 8, DType::F16),
        (37, 0, DType::F32),
        (127, 1, DType::F64),
        (33, 3, DType::F16),
        (148, 0, DType::F32),
        (2, 0, DType::F16),
        (4, 8, DType::BF16),
        (2, 4, DType::F32),
        (4, 0, DType::U8),
        (8, 0, DType::U8),
    ] {
        let l = Layout {
            shape: vec![1, 700, row_len],
            strides: vec![700 * row_len as isize, row_len as isize, 1],
            offset,
            mask: vec![false, false, true],
        };
        let plan = plan_layout(&l, dtype, &tiny);
        let c = plan.launches[0].config;
        assert_ne!(c.lanes_per_row, 0, "{l:?} {dtype} should take short rows");
        assert!(c.rows_per_thread > 1, "{c:?}");
        seen.insert(c.row_vec_size);
        if c.output_vec_size > 1 {
            // Packed rows, several a lane's load (700 rows: the last group
            // of rows is short, read input by input).
            packed.insert((row_len, c.output_vec_size));
        } else if c.ragged_rows {
            ragged += 1;
        } else {
            vectors_per_lane.insert(c.num_inputs / (c.lanes_per_row * c.row_vec_size));
        }
        staged += usize::from(c.stage_rows);
        assert_eq!(check_plan(&plan), Ok(700 * row_len));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 2, 4, 8, 16]);
    // (Scalar rows, a lane each, count their length here.)
    for v in [1, 2, 3, 4] {
        assert!(vectors_per_lane.contains(&v), "{vectors_per_lane:?}");
    }
    assert_eq!((staged, ragged), (4, 4));
    assert_eq!(
        packed.into_iter().collect::<Vec<_>>(),
        [(2, 2), (2, 4), (4, 2), (8, 2)]
    );
}

/// Channel statistics, `(N, C, H, W)` over `(0, 2, 3)`, of a base with
/// `pad_w` extra columns a row, `pad_c` extra elements a channel and the
/// first `offset` elements skipped: whole vectors or not, each stride
/// aligned or not, and a kept `H` (over `(0, 3)`) for a third layout.
fn channel_stats_layout() -> impl Strategy<Value = Layout> {
    (
        (1usize..=6, 1usize..=5, 1usize..=12, 1usize..=40),
        (0usize..=2, 0usize..=8, 0usize..=8),
        any::<bool>(),
    )
        .prop_map(|((n, c, h, w), (pad_w, pad_c, offset), keep_h)| {
            let row = w + pad_w;
            let channel = h * row + pad_c;
            Layout {
                shape: vec![n, c, h, w],
                strides: vec![(c * channel) as isize, channel as isize, row as isize, 1],
                offset,
                mask: vec![true, false, !keep_h, true],
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn channel_stats_launches_are_covered_exactly_once(l in channel_stats_layout(), dtype in dtype(), props in device()) {
        let plan = plan_layout(&l, dtype, &props);
        if let Err(e) = check_plan(&plan) {
            return Err(TestCaseError::fail(format!("{e}\nplan: {:#?}", plan.launches[0].config)));
        }
    }
}

#[test]
fn vectorized_dims_launches_are_covered_exactly_once() {
    // Channel statistics that take vector loads across their reduced dims:
    // 1, 2, 4 and 8 vectors of the fastest dim a run, a kept H, channels
    // padded to keep alignment, with and without the CTA split (a device
    // of 2 SMs; the H200), in every width the ops load. The generator
    // above reaches these layouts too; here they are checked to take the
    // strategy as well as to be covered.
    let small = DeviceProps {
        sm_count: 2,
        max_threads_per_sm: 1024,
        ..DeviceProps::h200()
    };
    let mut split = [0; 2];
    for dtype in [DType::F16, DType::F32, DType::F64, DType::I32, DType::U8] {
        for (shape, strides, mask) in [
            (
                [4usize, 3, 8, 8],
                [192isize, 64, 8, 1],
                [true, false, true, true],
            ),
            ([5, 2, 4, 16], [128, 64, 16, 1], [true, false, true, true]),
            (
                [3, 4, 2, 32],
                [4 * 96, 96, 32, 1],
                [true, false, true, true],
            ),
            (
                [6, 3, 8, 64],
                [3 * 512, 512, 64, 1],
                [true, false, false, true],
            ),
            (
                [2, 2, 64, 128],
                [2 * 8256, 8256, 128, 1],
                [true, false, true, true],
            ),
        ] {
            for props in [&small, &DeviceProps::h200()] {
                let l = Layout {
                    shape: shape.to_vec(),
                    strides: strides.to_vec(),
                    offset: 0,
                    mask: mask.to_vec(),
                };
                let plan = plan_layout(&l, dtype, props);
                let launch = &plan.launches[0];
                let reduced: usize = shape
                    .iter()
                    .zip(mask)
                    .filter(|p| p.1)
                    .map(|p| p.0)
                    .product();
                if dtype == DType::U8 && reduced < 256 {
                    // u8 sums load 16 a lane, and a row is vectorised
                    // only where it holds 16 vectors: not 192 inputs.
                    assert!(!launch.config.vectorize_input, "{l:?} {dtype}");
                    assert_eq!(check_plan(&plan), Ok(shape.iter().product()));
                    continue;
                }
                let PlanStrategy::VectorizedDims { cta_split } = launch.strategy else {
                    panic!("{l:?} {dtype}: {:?}", launch.strategy);
                };
                split[usize::from(cta_split.is_some())] += 1;
                assert!(launch.config.vectorize_input);
                assert_eq!(
                    check_plan(&plan),
                    Ok(shape.iter().product()),
                    "{l:?} {dtype}"
                );
            }
        }
    }
    assert!(split[0] > 0 && split[1] > 0, "{split:?}");
}

#[test]
fn row_per_warp_launches_are_covered_exactly_once() {
    // A device of 2 SMs of 1024 threads has 64 warp slots, so 32 rows or
    // more of 8192 inputs and up take a warp each: rows starting mid-vector
    // (the head and tail of each row, 8200 apart), rows not filling the
    // last block, exactly vectors, and a reduced dim of stride 2 (no
    // vectors).
    let small = DeviceProps {
        sm_count: 2,
        max_threads_per_sm: 1024,
        ..DeviceProps::h200()
    };
    for dtype in [DType::F16, DType::F32, DType::F64, DType::I32] {
        for (shape, strides, offset) in [
            ([37usize, 8195], [8200isize, 1], 3),
            ([32, 8192], [8192, 1], 0),
            ([40, 8192], [16_384, 2], 1),
        ] {
            let l = Layout {
                shape: shape.to_vec(),
                strides: strides.to_vec(),
                offset,
                mask: vec![false, true],
            };
            let plan = plan_layout(&l, dtype, &small);
            let launch = &plan.launches[0];
            assert_eq!(launch.strategy, PlanStrategy::RowPerWarp, "{l:?} {dtype}");
            assert_eq!(
                launch.config.vectorize_input,
                strides[1] == 1,
                "{l:?} {dtype}"
            );
            assert_eq!(check_plan(&plan), Ok(shape[0] * shape[1]), "{l:?} {dtype}");
        }
    }
}

#[test]
fn the_global_reduce_generator_reaches_the_cta_split() {
    // Guard against the strategy above silently never splitting.
    let sum_f32 = |shape: &[usize], strides: &[isize], offset, mask: &[bool]| {
        let l = Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
            mask: mask.to_vec(),
        };
        plan_layout(&l, DType::F32, &DeviceProps::h200())
    };
    let plan = sum_f32(&[2, 131_075], &[131_075, 1], 3, &[false, true]);
    let c = plan.launches[0].config;
    assert!(c.should_global_reduce() && c.vectorize_input && c.should_block_x_reduce());
    assert_eq!(check_plan(&plan), Ok(2 * 131_075));
    // Vectorized rows whose warps split the input, starting mid-vector: the
    // head and tail must be reduced by warp 0 and CTA 0 only. 4 rows leave
    // SMs idle (our CTA split); 140 rows reach every SM (PyTorch's plan, no
    // global reduce).
    for (rows, split) in [(4usize, true), (140, false)] {
        let plan = sum_f32(&[rows, 16_384], &[16_384, 1], 1, &[false, true]);
        let c = plan.launches[0].config;
        assert!(c.vectorize_input && c.should_block_y_reduce(), "{rows}");
        assert_eq!(c.should_global_reduce(), split, "{rows}");
        assert_eq!(check_plan(&plan), Ok(rows * 16_384));
    }
    let plan = sum_f32(&[8192, 32], &[32, 1], 1, &[true, false]);
    let c = plan.launches[0].config;
    assert!(c.should_global_reduce() && !c.should_block_x_reduce());
    assert_eq!(check_plan(&plan), Ok(8192 * 32));
}

#[test]
fn split_launches_cover_the_whole_iterator_once() {
    // Byte offsets past i32::MAX without allocating: 2^30-element strides.
    let big = 1isize << 30;
    for (shape, strides, mask) in [
        (vec![3usize, 5], vec![big, 1], vec![false, true]),
        (vec![3, 5], vec![big, 1], vec![true, false]),
        (vec![4, 3, 2], vec![1, big, 3], vec![true, true, false]),
    ] {
        let it = TensorIterator::reduction(&shape, &strides, 0, 2, 2, &mask).unwrap();
        let plan = ReducePlan::new(
            &it,
            &ReduceOp::Sum
                .signature(DType::F16, Some(DType::F16))
                .unwrap(),
            &DeviceProps::h200(),
        )
        .unwrap();
        assert!(
            plan.launches.len() > 1,
            "{shape:?} {strides:?} should split"
        );
        assert_eq!(plan.launches.len(), it.with_32bit_indexing().len());
        for (launch, sub) in plan.launches.iter().zip(it.with_32bit_indexing()) {
            assert_eq!(launch.iter, sub);
            assert_eq!(launch.base_idx, sub.view_offsets()[0] as u64);
        }
        assert!(
            plan.needs_acc_buffer,
            "half -> half cannot accumulate in the output"
        );
        assert_eq!(check_plan(&plan), Ok(shape.iter().product()));
    }
}

/// A dtype and a view reduced: shape, strides, offset and reduce mask.
type ViewCase = (
    DType,
    &'static [usize],
    &'static [isize],
    usize,
    &'static [bool],
);

/// The case's layout, dtype and `sum` plan on an H200.
fn plan_view_case((dtype, shape, strides, offset, mask): ViewCase) -> (Layout, DType, ReducePlan) {
    let l = Layout {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        offset,
        mask: mask.to_vec(),
    };
    let plan = plan_layout(&l, dtype, &DeviceProps::h200());
    (l, dtype, plan)
}

#[test]
fn tall_columns_launches_are_covered_exactly_once() {
    // Columns few and long enough for PyTorch's last CTAs to fold many
    // partials a thread: 2 outputs a lane (f32, f64), 1 (f64 over 16384
    // rows), from an offset start on a wider row pitch, and channels-last
    // statistics (the reduced dims do not coalesce).
    let cases: [(ViewCase, u32); 5] = [
        ((DType::F32, &[4096, 128], &[128, 1], 0, &[true, false]), 2),
        ((DType::F64, &[8192, 128], &[128, 1], 0, &[true, false]), 2),
        ((DType::F64, &[16384, 128], &[128, 1], 0, &[true, false]), 1),
        ((DType::I64, &[16384, 128], &[130, 1], 2, &[true, false]), 1),
        (
            (
                DType::F32,
                &[64, 128, 16, 16],
                &[32_768, 1, 2048, 128],
                0,
                &[true, false, true, true],
            ),
            2,
        ),
    ];
    for (case, output_vec_size) in cases {
        let (l, dtype, plan) = plan_view_case(case);
        let shape = &l.shape;
        assert_eq!(
            plan.launches[0].strategy,
            PlanStrategy::TallColumns { output_vec_size },
            "{l:?} {dtype}"
        );
        assert!(plan.launches[0].config.should_global_reduce());
        assert_eq!(
            check_plan(&plan),
            Ok(shape.iter().product()),
            "{l:?} {dtype}"
        );
    }
}

#[test]
fn short_columns_launches_are_covered_exactly_once() {
    // Short columns of 16-bit inputs, 8 outputs a lane: contiguous, three
    // rows, on a row pitch wider than the row from an offset start, and a
    // transposed base whose kept dims do not coalesce.
    let cases: [ViewCase; 4] = [
        (DType::F16, &[2, 4096], &[4096, 1], 0, &[true, false]),
        (DType::F16, &[3, 520], &[520, 1], 0, &[true, false]),
        (DType::BF16, &[16, 2048], &[2056, 1], 8, &[true, false]),
        (
            DType::F16,
            &[4, 24, 64],
            &[64, 256, 1],
            0,
            &[true, false, false],
        ),
    ];
    for case in cases {
        let (l, dtype, plan) = plan_view_case(case);
        let shape = &l.shape;
        assert_eq!(
            plan.launches[0].strategy,
            PlanStrategy::ShortColumns { output_vec_size: 8 },
            "{l:?} {dtype}"
        );
        assert_eq!(
            check_plan(&plan),
            Ok(shape.iter().product()),
            "{l:?} {dtype}"
        );
    }
}

#[test]
fn ragged_columns_launches_are_covered_exactly_once() {
    // Columns whose rows start off a vector boundary, read as the aligned
    // vectors around each lane's inputs, the last lane of each row storing
    // only the outputs that exist: odd widths of 4-, 2- and 8-byte inputs,
    // a view starting 3 elements into a row pitch of 2063, a width of 4
    // mod 8 in bf16, columns of 16 rows, 1-byte inputs (4 outputs a
    // lane), and 8-byte ones on an odd row pitch.
    let cases: [ViewCase; 7] = [
        (DType::F32, &[3, 1001], &[1001, 1], 0, &[true, false]),
        (DType::F16, &[5, 2051], &[2063, 1], 3, &[true, false]),
        (DType::F64, &[7, 333], &[333, 1], 0, &[true, false]),
        (DType::BF16, &[2, 1028], &[1028, 1], 0, &[true, false]),
        (DType::F32, &[16, 1027], &[1027, 1], 0, &[true, false]),
        (DType::U8, &[5, 4101], &[4101, 1], 0, &[true, false]),
        (DType::I64, &[6, 300], &[301, 1], 1, &[true, false]),
    ];
    for case in cases {
        let (l, dtype, plan) = plan_view_case(case);
        let shape = &l.shape;
        assert!(
            matches!(
                plan.launches[0].strategy,
                PlanStrategy::RaggedColumns { .. }
            ),
            "{l:?} {dtype}: {:?}",
            plan.launches[0].strategy
        );
        assert_eq!(
            check_plan(&plan),
            Ok(shape.iter().product()),
            "{l:?} {dtype}"
        );
    }
}

#[test]
fn launches_in_the_input_order_are_covered_exactly_once() {
    // Kept dims that run in the input's order rather than the output's: a
    // permuted 3-d tensor (4 outputs a lane), channels-last images over
    // their height (three kept dims), a narrowed base starting mid-vector
    // (1 a lane), a reduced dim between the kept ones in the input, and
    // strides past 2^31 bytes, split for 32-bit indexing.
    const BIG: isize = 1 << 30;
    let cases: [ViewCase; 5] = [
        (
            DType::F32,
            &[256, 32, 64],
            &[1, 16_384, 256],
            0,
            &[false, false, true],
        ),
        (
            DType::F16,
            &[8, 64, 16, 16],
            &[16_384, 1, 1024, 64],
            0,
            &[false, false, true, false],
        ),
        (
            DType::U8,
            &[256, 32, 64],
            &[1, 16_576, 259],
            3,
            &[false, false, true],
        ),
        (
            DType::F64,
            &[24, 40, 6],
            &[1, 144, 24],
            0,
            &[false, false, true],
        ),
        (
            DType::F16,
            &[4, 3, 2],
            &[1, BIG, 8],
            0,
            &[false, false, true],
        ),
    ];
    for case in cases {
        let (l, dtype, plan) = plan_view_case(case);
        let shape = &l.shape;
        assert!(
            plan.launches
                .iter()
                .all(|launch| launch.pytorch_order_config.is_some()),
            "{l:?} {dtype}: {:?}",
            plan.launches
        );
        assert_eq!(
            check_plan(&plan),
            Ok(shape.iter().product()),
            "{l:?} {dtype}"
        );
    }
}
