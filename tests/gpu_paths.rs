//! The CUDA backend's launch paths, one by one, against the CPU backend.
//!
//! Inputs are small integers, so every partial sum is exact in every
//! accumulator and the GPU result must equal the CPU result bit for bit, for
//! every dtype (16-bit outputs round once, at the end, on both). Each test
//! also checks, through the plan the device ran (`device_plan`), that it
//! really takes the path the test is named after.
//!
//! These need a GPU: they are `#[ignore]`d so `cargo test` skips them
//! visibly; run them with `--include-ignored`. Without a usable device they
//! print SKIPPED and pass, unless `TENSOR_REDUCE_REQUIRE_CUDA=1`, which makes
//! them fail instead.

use tensor_reduce::cuda::plan::{ctas_per_sm, DeviceProps, LaunchPlan, Strategy};
use tensor_reduce::reduce::{NormKind, ReduceOp};
use tensor_reduce::{cuda, DType, Device, Tensor};

/// The device to test on, or `None` (after printing why) to skip.
fn gpu(test: &str) -> Option<(Device, DeviceProps)> {
    let found = Device::cuda(0).and_then(|d| Ok((d, cuda::device_props(0)?)));
    match found {
        Ok(x) => Some(x),
        Err(e) => {
            let required = std::env::var("TENSOR_REDUCE_REQUIRE_CUDA").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "{test}: TENSOR_REDUCE_REQUIRE_CUDA=1 but no usable CUDA device: {e}"
            );
            eprintln!("SKIPPED {test}: no usable CUDA device ({e})");
            None
        }
    }
}

/// An element's bit pattern, widened to 64 bits.
trait Bits: tensor_reduce::Element {
    fn bits(self) -> u64;
}

macro_rules! impl_bits {
    ($($t:ty => $f:expr;)*) => {
        $(impl Bits for $t {
            fn bits(self) -> u64 {
                ($f)(self)
            }
        })*
    };
}

impl_bits! {
    tensor_reduce::f16 => |v: tensor_reduce::f16| u64::from(v.to_bits());
    tensor_reduce::bf16 => |v: tensor_reduce::bf16| u64::from(v.to_bits());
    f32 => |v: f32| u64::from(v.to_bits());
    f64 => f64::to_bits;
    i32 => |v: i32| u64::from(v as u32);
    i64 => |v: i64| v as u64;
    u8 => u64::from;
    bool => u64::from;
}

/// Every element's bits, whatever the dtype.
fn bits(t: &Tensor) -> Vec<u64> {
    tensor_reduce::with_dtype!(t.dtype(), T => t.to_vec::<T>().unwrap().into_iter().map(Bits::bits).collect())
}

/// Small integers of `dtype` (non-negative where the dtype is unsigned).
fn ints(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    let (lo, hi) = match dtype {
        DType::U8 => (0, 16),
        DType::Bool => (0, 2),
        _ => (-8, 9),
    };
    Tensor::randint(lo, hi, shape, dtype, Device::Cpu, seed).unwrap()
}

/// `view(x)` summed over `dims` into `out` on the GPU equals the CPU's, bit
/// for bit; returns the plan the GPU ran.
fn check(
    x_cpu: &Tensor,
    view: impl Fn(&Tensor) -> Tensor,
    dims: &[isize],
    out: DType,
    dev: Device,
) -> Vec<LaunchPlan> {
    let x_gpu = x_cpu.to_device(dev).unwrap();
    let (vc, vg) = (view(x_cpu), view(&x_gpu));
    let want = vc.sum_dtype(dims, false, out).unwrap();
    let got = vg.sum_dtype(dims, false, out).unwrap();
    assert_eq!(got.device(), dev);
    assert_eq!(got.shape(), want.shape());
    assert_eq!(got.dtype(), out);
    let (g, w) = (bits(&got), bits(&want));
    if let Some(i) = g.iter().zip(&w).position(|(a, b)| a != b) {
        panic!("{:?} {} -> {out} over {dims:?}: element {i} of {} differs: gpu bits {:#x}, cpu bits {:#x}", vc.shape(), vc.dtype(), g.len(), g[i], w[i]);
    }
    // The plan the device runs, for the default output dtype; the config
    // does not depend on it for these dtypes, except through the
    // accumulator size.
    vg.device_plan(ReduceOp::Sum, dims, false)
        .map(|p| p.launches)
        .unwrap_or_default()
}

/// Row sums of a `shape` tensor of small integers (seed `seed`), the rows
/// narrowed to `(start, len)` when given, checked against the CPU bit for
/// bit by [`check`]; returns the GPU plan's launches.
fn check_row_sums(
    dt: DType,
    shape: [usize; 2],
    narrow: Option<(usize, usize)>,
    seed: u64,
    dev: Device,
) -> Vec<LaunchPlan> {
    let x = ints(&shape, dt, seed);
    let view = |t: &Tensor| match narrow {
        Some((start, len)) => t.narrow(1, start, len).unwrap(),
        None => t.clone(),
    };
    let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
    check(&x, view, &[1], out, dev)
}

/// A row-sums case: the dtype, `[rows, row length]` and the narrowing of
/// the rows, as [`check_row_sums`] takes them.
type RowsCase = (DType, [usize; 2], Option<(usize, usize)>);

/// [`check_row_sums`] on every case; each plan must have a launch that
/// `took` (the path named `path` in the failure).
fn rows_take_path(
    cases: &[RowsCase],
    seed: u64,
    dev: Device,
    path: &str,
    took: impl Fn(&LaunchPlan) -> bool,
) {
    for &(dt, shape, narrow) in cases {
        let l = check_row_sums(dt, shape, narrow, seed, dev);
        assert!(
            any_launch(&l, &took),
            "{dt} {shape:?} {narrow:?} did not take {path}: {l:?}"
        );
    }
}

/// A sum over the last dim of a view: the dtype, the base's shape, the
/// view, and what the case expects of its plan (read by the test's
/// predicate).
type ViewCase = (DType, &'static [usize], fn(&Tensor) -> Tensor, bool);

/// [`check`] on every case (a base of integers, seeded `seed` plus the
/// case's index); each case's launches must satisfy `took(launches,
/// expected)` (the path named `path` in the failure).
fn views_take_path(
    cases: &[ViewCase],
    seed: u64,
    dev: Device,
    path: &str,
    took: impl Fn(&[LaunchPlan], bool) -> bool,
) {
    for (i, &(dt, shape, view, expected)) in cases.iter().enumerate() {
        let x = ints(shape, dt, seed + i as u64);
        let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
        let l = check(&x, view, &[-1], out, dev);
        assert!(
            took(&l, expected),
            "{dt} {shape:?} case {i} (expected {expected}) did not take {path}: {l:?}"
        );
    }
}

fn any_launch(launches: &[LaunchPlan], pred: impl Fn(&LaunchPlan) -> bool) -> bool {
    launches.iter().any(pred)
}

#[test]
#[ignore = "needs a CUDA device"]
fn input_vectorized_contiguous_rows() {
    let Some((dev, _)) = gpu("input_vectorized_contiguous_rows") else {
        return;
    };
    let cases = [
        (DType::F32, [37, 4096], None),
        (DType::F16, [37, 2000], None),
        (DType::BF16, [37, 4099], None),
        (DType::F64, [37, 777], None),
        (DType::I32, [37, 3001], None),
        (DType::U8, [37, 4096], None),
    ];
    rows_take_path(&cases, 1, dev, "vectorized input", |l| {
        l.config.vectorize_input
    });
}

#[test]
#[ignore = "needs a CUDA device"]
fn short_rows_strategy() {
    let Some((dev, _)) = gpu("short_rows_strategy") else {
        return;
    };
    // Row lengths of every lane count up to a warp, whole vectors or not,
    // enough rows for several per thread, rows starting off a vector
    // boundary (a narrowed view), short rows no vector fits, which take a
    // lane each, and rows of two to four warps of loads (two to four
    // vectors a lane, a warp or 25 lanes per row; rows of 132 f32 and 40
    // f64, whose whole vectors share a warp poorly, read ragged).
    let cases = [
        (DType::F32, [1 << 20, 4], None),
        (DType::F32, [600_000, 7], None),
        (DType::F32, [300_000, 16], Some((1, 15))),
        (DType::F32, [40_000, 128], None),
        (DType::F16, [1 << 20, 16], None),
        (DType::BF16, [500_000, 2], None),
        (DType::F64, [300_000, 40], None),
        (DType::I64, [400_000, 5], None),
        (DType::U8, [300_000, 48], None),
        (DType::Bool, [300_000, 3], None),
        (DType::F64, [300_000, 3], None),
        (DType::F16, [200_000, 9], Some((1, 7))),
        (DType::F32, [40_000, 256], None),
        (DType::F64, [60_000, 128], None),
        (DType::BF16, [30_000, 512], None),
        (DType::F32, [30_000, 204], Some((4, 200))),
        (DType::F32, [40_000, 132], None),
        (DType::F32, [30_000, 512], None),
        (DType::F16, [20_000, 1024], None),
        (DType::F64, [30_000, 256], None),
        (DType::I64, [30_001, 256], None),
    ];
    rows_take_path(&cases, 3, dev, "the short-rows strategy", |l| {
        l.config.lanes_per_row != 0
    });
}

/// ShortRows over kept dims that do not coalesce into one (rows of a
/// narrowed middle dim, or of a permuted view), which its other kernel
/// runs: every load width, a lane or several a row, two vectors a lane,
/// and enough rows for eight a thread.
#[test]
#[ignore = "needs a CUDA device"]
fn short_rows_over_several_kept_dims() {
    let Some((dev, _)) = gpu("short_rows_over_several_kept_dims") else {
        return;
    };
    type View = fn(&Tensor) -> Tensor;
    let cases: [(DType, &[usize], View); 8] = [
        (DType::F32, &[8, 40_000, 16], |t| {
            t.narrow(1, 0, 36_000).unwrap()
        }),
        (DType::F16, &[8, 40_000, 16], |t| {
            t.narrow(1, 3, 36_000).unwrap()
        }),
        (DType::F32, &[600, 300, 12], |t| {
            t.permute(&[1, 0, 2]).unwrap()
        }),
        (DType::F64, &[64, 5000, 3], |t| {
            t.narrow(1, 1, 4000).unwrap()
        }),
        (DType::U8, &[16, 3000, 48], |t| {
            t.narrow(1, 0, 2999).unwrap()
        }),
        (DType::BF16, &[32, 9000, 2], |t| {
            t.narrow(1, 0, 8000).unwrap()
        }),
        (DType::F32, &[4, 600, 256], |t| t.narrow(1, 0, 500).unwrap()),
        (DType::I64, &[40, 3000, 8], |t| {
            t.narrow(2, 1, 7).unwrap().narrow(1, 0, 2999).unwrap()
        }),
    ];
    for (i, (dt, shape, view)) in cases.into_iter().enumerate() {
        let x = ints(shape, dt, 90 + i as u64);
        let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
        let l = check(&x, view, &[-1], out, dev);
        assert!(
            any_launch(&l, |l| l.config.lanes_per_row != 0
                && !l.rows_by_one_stride()),
            "{dt} {shape:?} case {i} did not take ShortRows over several kept dims: {l:?}"
        );
    }
}

/// Sums of rows of 8-byte inputs looked up one by one that a lane would
/// read more than two vectors of (`LOOKED_UP_8_BYTE_MAX_VECTORS_PER_LANE`)
/// take the plan after ShortRows (PyTorch's `reduce_kernel`), from a
/// narrowed middle dim and a permuted view; rows of one and two vectors a
/// lane keep ShortRows.
#[test]
#[ignore = "needs a CUDA device"]
fn looked_up_8_byte_rows_past_their_bound() {
    let Some((dev, _)) = gpu("looked_up_8_byte_rows_past_their_bound") else {
        return;
    };
    let cases: [ViewCase; 5] = [
        (
            DType::F64,
            &[6, 700, 128],
            |t| t.narrow(1, 1, 600).unwrap(),
            true,
        ),
        (
            DType::I64,
            &[5, 900, 256],
            |t| t.narrow(1, 0, 899).unwrap(),
            false,
        ),
        (
            DType::F64,
            &[30, 70, 256],
            |t| t.permute(&[1, 0, 2]).unwrap(),
            false,
        ),
        (
            DType::I64,
            &[40, 90, 128],
            |t| t.permute(&[1, 0, 2]).unwrap(),
            true,
        ),
        (
            DType::F64,
            &[8, 900, 64],
            |t| t.narrow(1, 0, 800).unwrap(),
            true,
        ),
    ];
    views_take_path(
        &cases,
        120,
        dev,
        "rows looked up one by one, ShortRows as expected",
        |l, short_rows| {
            l.iter().all(|l| !l.rows_by_one_stride())
                && any_launch(l, |l| l.config.lanes_per_row != 0) == short_rows
        },
    );
}

/// 16-bit rows read in whole 16-byte vectors run `short_rows_kernel`'s
/// `wide_loads` instantiation (its own register budget), by one stride and
/// over kept dims that do not coalesce.
#[test]
#[ignore = "needs a CUDA device"]
fn wide_loads_short_rows() {
    let Some((dev, _)) = gpu("wide_loads_short_rows") else {
        return;
    };
    let cases: [ViewCase; 4] = [
        (DType::F16, &[300_000, 16], |t| t.clone(), true),
        (DType::BF16, &[40_000, 128], |t| t.clone(), true),
        (
            DType::F16,
            &[600, 300, 64],
            |t| t.permute(&[1, 0, 2]).unwrap(),
            false,
        ),
        (
            DType::BF16,
            &[8, 40_000, 32],
            |t| t.narrow(1, 0, 36_000).unwrap(),
            false,
        ),
    ];
    views_take_path(
        &cases,
        120,
        dev,
        "the wide-loads kernel (expected: rows by one stride)",
        |l, one_dim| {
            any_launch(l, |l| {
                l.config.wide_loads() && l.rows_by_one_stride() == one_dim
            })
        },
    );
}

/// u8 and bool sums, which load 16 bytes and add them four a `dp4a`:
/// every u8 value, rows packed several a load (2, 4 and 8), rows read in
/// whole 16-byte vectors (the wide-loads kernel), rows staged or read
/// ragged (31 and 100 bytes, and rows that start off a vector), long rows
/// with tails past the last whole vector, `dtype=` outputs that keep or
/// leave the byte path, and columns; all against the CPU bit for bit, and
/// rows of 255s against their closed form.
#[test]
#[ignore = "needs a CUDA device"]
fn byte_sums() {
    let Some((dev, _)) = gpu("byte_sums") else {
        return;
    };
    type Case = (&'static [usize], Option<(usize, usize)>);
    let cases: [Case; 14] = [
        (&[1 << 20, 2], None),
        (&[1 << 20, 4], None),
        (&[1 << 20, 8], None),
        (&[300_000, 16], None),
        (&[300_000, 31], None),
        (&[100_000, 100], None),
        (&[60_000, 128], None),
        (&[40_000, 130], Some((1, 128))),
        (&[40_000, 50], Some((3, 44))),
        (&[3_000, 1_000], None),
        (&[300, 4_096], None),
        (&[37, 65_539], None),
        (&[2, 1 << 22], None),
        (&[1, 3 << 20], Some((3, (3 << 20) - 5))),
    ];
    for (i, &(shape, narrow)) in cases.iter().enumerate() {
        let view = |t: &Tensor| match narrow {
            Some((start, len)) => t.narrow(1, start, len).unwrap(),
            None => t.clone(),
        };
        let u8s = Tensor::randint(0, 256, shape, DType::U8, Device::Cpu, 300 + i as u64).unwrap();
        let bools = ints(shape, DType::Bool, 400 + i as u64);
        let row_len = narrow.map_or(shape[1], |(_, len)| len);
        let launches = check(&u8s, view, &[1], DType::I64, dev);
        if shape == [300_000, 16] {
            assert!(
                any_launch(&launches, |l| l.config.wide_loads()),
                "{launches:?}"
            );
        }
        if row_len > 4_096 {
            assert!(
                any_launch(&launches, |l| l.config.vectorize_input),
                "{launches:?}"
            );
        }
        check(&u8s, view, &[1], DType::I32, dev);
        // An f32 sum is exact, and so order-free, below 2^24.
        if 255 * row_len < 1 << 24 {
            check(&u8s, view, &[1], DType::F32, dev);
        }
        check(&bools, view, &[1], DType::I64, dev);
        check(&u8s, view, &[0], DType::I64, dev);
    }
    // Rows of 255s: a row's sum is 255 times its length, however its
    // bytes were grouped.
    for (rows, len) in [(100_000, 16), (5_000, 1_001), (3, 3 << 20)] {
        let x = Tensor::from_vec(vec![255u8; rows * len], &[rows, len])
            .unwrap()
            .to_device(dev)
            .unwrap();
        let got = x.sum(&[1], false).unwrap().to_vec::<i64>().unwrap();
        assert!(
            got.iter().all(|&s| s == 255 * len as i64),
            "rows of {len} 255s: {:?}",
            &got[..3]
        );
    }
}

/// Rows for just over half the device's warp slots: long rows (PyTorch's
/// warps would split them) then take a warp each.
fn rows_for_a_warp_each(props: &DeviceProps) -> usize {
    (props.sm_count * (props.max_threads_per_sm / props.warp_size)) as usize / 2 + 5
}

#[test]
#[ignore = "needs a CUDA device"]
fn row_per_warp_strategy() {
    let Some((dev, props)) = gpu("row_per_warp_strategy") else {
        return;
    };
    // Whole vectors, rows starting mid-vector (a head and a tail a row),
    // and rows of 16-bit inputs twice as long.
    let rows = rows_for_a_warp_each(&props);
    let cases = [
        (DType::F32, [rows, 8192], None),
        (DType::F16, [rows, 8200], Some((3, 8195))),
        (DType::F64, [rows, 8192], None),
        (DType::I64, [rows, 8200], Some((1, 8197))),
        (DType::BF16, [rows, 16_384], None),
        (DType::U8, [rows, 8192], Some((5, 8187))),
    ];
    rows_take_path(&cases, 9, dev, "a warp per row", |l| {
        l.strategy == Strategy::RowPerWarp
    });
}

/// Every op on rows a warp each ([`Strategy::RowPerWarp`]), starting
/// mid-vector, in the dtypes of each accumulator width.
#[test]
#[ignore = "needs a CUDA device"]
fn ops_on_rows_a_warp_each() {
    let Some((dev, props)) = gpu("ops_on_rows_a_warp_each") else {
        return;
    };
    let cases: [OpsCase; 1] = [(
        vec![rows_for_a_warp_each(&props), 8200],
        |t| t.narrow(1, 3, 8195).unwrap(),
        vec![1],
    )];
    let dtypes = [DType::F32, DType::F16, DType::F64, DType::I64, DType::Bool];
    ops_on_cases(dev, &ReduceOp::ALL, &dtypes, &cases);
}

/// Channel statistics and other reductions over several dims whose fastest
/// reduced dim takes vector loads ([`Strategy::VectorizedDims`]): every
/// output on its own CTAs, outputs split across CTAs, a kept dim between
/// the reduced ones, and a channel slice, in each load width.
#[test]
#[ignore = "needs a CUDA device"]
fn vectorized_dims_strategy() {
    let Some((dev, _)) = gpu("vectorized_dims_strategy") else {
        return;
    };
    type View = fn(&Tensor) -> Tensor;
    let cases: [(&[usize], View, &[isize]); 5] = [
        (&[16, 96, 16, 16], |t| t.clone(), &[0, 2, 3]),
        (&[64, 32, 32, 32], |t| t.clone(), &[0, 2, 3]),
        (&[4, 3, 64, 64], |t| t.clone(), &[0, 2, 3]),
        (&[8, 40, 8, 32], |t| t.clone(), &[0, 3]),
        (
            &[8, 20, 24, 16],
            |t| t.narrow(1, 3, 16).unwrap(),
            &[0, 2, 3],
        ),
    ];
    for dt in [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I64,
        DType::I32,
        DType::U8,
    ] {
        for (i, (shape, view, dims)) in cases.iter().enumerate() {
            let x = ints(shape, dt, 70 + i as u64);
            let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
            let l = check(&x, view, dims, out, dev);
            assert!(
                any_launch(&l, |l| matches!(
                    l.strategy,
                    Strategy::VectorizedDims { .. }
                ) && l.config.vectorize_input),
                "{dt} {shape:?} over {dims:?} did not take VectorizedDims: {l:?}"
            );
        }
    }
}

/// Few, long columns ([`Strategy::TallColumns`]): 2 outputs a lane for
/// 4-byte inputs, 2 and 1 for 8-byte ones, on contiguous columns, on a
/// row pitch wider than the row from an aligned and from an offset start
/// (where PyTorch's lanes take 4 and 2), and on channels-last statistics.
#[test]
#[ignore = "needs a CUDA device"]
fn tall_columns_strategy() {
    let Some((dev, _)) = gpu("tall_columns_strategy") else {
        return;
    };
    // The dtype, base shape, view and dims, and the outputs a lane.
    type Case = (
        DType,
        &'static [usize],
        fn(&Tensor) -> Tensor,
        &'static [isize],
        u32,
    );
    let cases: [Case; 7] = [
        (DType::F32, &[8192, 256], |t| t.clone(), &[0], 2),
        (DType::I32, &[8192, 256], |t| t.clone(), &[0], 2),
        (DType::F64, &[8192, 128], |t| t.clone(), &[0], 2),
        (DType::F64, &[16384, 128], |t| t.clone(), &[0], 1),
        (
            DType::I64,
            &[16384, 130],
            |t| t.narrow(1, 2, 128).unwrap(),
            &[0],
            1,
        ),
        (
            DType::I64,
            &[16384, 132],
            |t| t.narrow(1, 4, 128).unwrap(),
            &[0],
            1,
        ),
        (
            DType::F32,
            &[64, 16, 16, 128],
            |t| t.permute(&[0, 3, 1, 2]).unwrap(),
            &[0, 2, 3],
            2,
        ),
    ];
    for (i, &(dt, shape, view, dims, vec)) in cases.iter().enumerate() {
        let x = ints(shape, dt, 90 + i as u64);
        let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
        let l = check(&x, view, dims, out, dev);
        assert!(
            any_launch(&l, |l| l.strategy
                == Strategy::TallColumns {
                    output_vec_size: vec
                }),
            "{dt} {shape:?} over {dims:?} did not take TallColumns with {vec} a lane: {l:?}"
        );
    }
}

/// The planner's count of the CTAs an SM holds (`ctas_per_sm`, from a
/// kernel's registers a thread) against the driver's occupancy calculator,
/// for every `reduce_kernel` of a few signatures at every block size up to
/// its launch bound; and the registers a device plan counts by are those
/// the compiled kernels report.
#[test]
#[ignore = "needs a CUDA device"]
fn resident_ctas_agree_with_the_driver() {
    let Some((dev, props)) = gpu("resident_ctas_agree_with_the_driver") else {
        return;
    };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let signatures = [
        (ReduceOp::Sum, DType::F32),
        (ReduceOp::Sum, DType::F16),
        (ReduceOp::Sum, DType::F64),
        (ReduceOp::AMax, DType::BF16),
        (ReduceOp::ArgMax, DType::F32),
        (ReduceOp::Var, DType::F64),
    ];
    for (op, dt) in signatures {
        let sig = op.signature(dt, None).unwrap();
        let compiled = cuda::kernel::compile(&sig, props.compute_capability).unwrap();
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .unwrap();
        let x = Tensor::zeros(&[4096, 64], dt, dev).unwrap();
        let plan = x.device_plan(op, &[0], false).unwrap();
        let vec_sizes = cuda::kernel::output_vec_sizes(&sig);
        for (&v, name) in vec_sizes.iter().zip(&compiled.lowered_names) {
            let f = module.load_function(name).unwrap();
            let registers = f.num_regs().unwrap() as u32;
            assert_eq!(
                plan.kernel_registers.of(v),
                Some(registers),
                "{op} {dt}: {name}"
            );
            let mut threads = props.warp_size;
            while threads <= sig.max_num_threads / v {
                let driver = f
                    .occupancy_max_active_blocks_per_multiprocessor(threads, 0, None)
                    .unwrap();
                assert_eq!(
                    ctas_per_sm(&props, Some(registers), threads),
                    driver,
                    "{op} {dt}: {name}, {registers} registers, {threads} threads"
                );
                threads *= 2;
            }
        }
    }
}

/// Short columns of 16-bit inputs ([`Strategy::ShortColumns`]): 8 outputs
/// a lane on contiguous columns of 2, 3 and 16 rows, on a row pitch wider
/// than the row from an offset start, and over the first dim of a
/// transposed base whose kept dims do not coalesce.
#[test]
#[ignore = "needs a CUDA device"]
fn short_columns_strategy() {
    let Some((dev, _)) = gpu("short_columns_strategy") else {
        return;
    };
    type View = fn(&Tensor) -> Tensor;
    let cases: [(DType, &[usize], View, &[isize]); 5] = [
        (DType::F16, &[2, 65536], |t| t.clone(), &[0]),
        (DType::BF16, &[3, 40_000], |t| t.clone(), &[0]),
        (
            DType::F16,
            &[16, 8200],
            |t| t.narrow(1, 8, 8192).unwrap(),
            &[0],
        ),
        (DType::BF16, &[4, 1000, 520], |t| t.clone(), &[0]),
        (
            DType::F16,
            &[24, 4, 64],
            |t| t.transpose(0, 1).unwrap(),
            &[0],
        ),
    ];
    for (i, &(dt, shape, view, dims)) in cases.iter().enumerate() {
        let x = ints(shape, dt, 110 + i as u64);
        let l = check(&x, view, dims, dt, dev);
        assert!(
            any_launch(&l, |l| l.strategy
                == Strategy::ShortColumns { output_vec_size: 8 }),
            "{dt} {shape:?} over {dims:?} did not take ShortColumns: {l:?}"
        );
    }
}

/// Columns whose rows start off a vector boundary
/// ([`Strategy::RaggedColumns`]): odd widths in every dtype (the last lane
/// of a row storing fewer outputs than it reads), a view 3 elements into a
/// row pitch of 2063, a 16-bit width of 4 mod 8, columns of 16 rows, and
/// inputs of over 1 MiB (allocated to the byte, not
/// from the block cache) whose last row ends off a vector boundary of the
/// allocation, so that its last lanes read input by input up to its end.
#[test]
#[ignore = "needs a CUDA device"]
fn ragged_columns_strategy() {
    let Some((dev, _)) = gpu("ragged_columns_strategy") else {
        return;
    };
    type View = fn(&Tensor) -> Tensor;
    let cases: [(&[usize], View); 5] = [
        (&[3, 4099], |t| t.clone()),
        (&[5, 2063], |t| t.narrow(1, 3, 2051).unwrap()),
        (&[2, 1028], |t| t.clone()),
        (&[16, 1027], |t| t.clone()),
        (&[3, 200_003], |t| t.clone()),
    ];
    for dt in DType::ALL {
        for (i, &(shape, view)) in cases.iter().enumerate() {
            let x = ints(shape, dt, 130 + i as u64);
            let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
            let l = check(&x, view, &[0], out, dev);
            // The odd widths and pitches leave every dtype's PyTorch plan
            // narrower than the widest; a width of 4 mod 8 (1028) does
            // only where the widest is 8 (16-bit inputs).
            let widest =
                cuda::plan::max_output_vec_size(&ReduceOp::Sum.signature(dt, None).unwrap());
            let aligned = shape[1] % widest as usize == 0;
            assert_eq!(
                any_launch(&l, |l| matches!(l.strategy, Strategy::RaggedColumns { .. })),
                !aligned,
                "{dt} {shape:?} over dim 0: {l:?}"
            );
        }
    }
}

/// Permuted views whose kept dims run in the input's order rather than
/// PyTorch's (the output's): a permuted 3-d tensor, channels-last images
/// reduced over their height, and a narrowed base whose start leaves no
/// vector loads.
#[test]
#[ignore = "needs a CUDA device"]
fn kept_dims_in_the_input_order() {
    let Some((dev, _)) = gpu("kept_dims_in_the_input_order") else {
        return;
    };
    type View = fn(&Tensor) -> Tensor;
    let cases: [(&[usize], View, &[isize]); 3] = [
        (&[32, 64, 256], |t| t.permute(&[2, 0, 1]).unwrap(), &[2]),
        (
            &[8, 16, 16, 64],
            |t| t.permute(&[0, 3, 1, 2]).unwrap(),
            &[2],
        ),
        (
            &[32, 64, 259],
            |t| t.narrow(2, 3, 256).unwrap().permute(&[2, 0, 1]).unwrap(),
            &[2],
        ),
    ];
    for dt in [DType::F32, DType::F16, DType::F64, DType::I64, DType::U8] {
        for (i, (shape, view, dims)) in cases.iter().enumerate() {
            let x = ints(shape, dt, 100 + i as u64);
            let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
            let l = check(&x, view, dims, out, dev);
            assert!(
                any_launch(&l, |l| l.pytorch_order_config.is_some()),
                "{dt} {shape:?} over {dims:?} kept PyTorch's dim order: {l:?}"
            );
        }
    }
}

/// Every op over channel statistics with vector loads across the reduced
/// dims ([`Strategy::VectorizedDims`]), with and without a CTA split, in
/// the dtypes of each accumulator width.
#[test]
#[ignore = "needs a CUDA device"]
fn ops_on_vectorized_dims() {
    let Some((dev, _props)) = gpu("ops_on_vectorized_dims") else {
        return;
    };
    let cases: [OpsCase; 2] = [
        (vec![4, 16, 8, 16], |t| t.clone(), vec![0, 2, 3]),
        (vec![64, 8, 32, 32], |t| t.clone(), vec![0, 2, 3]),
    ];
    let dtypes = [DType::F32, DType::F16, DType::F64, DType::I64, DType::Bool];
    ops_on_cases(dev, &ReduceOp::ALL, &dtypes, &cases);
}

#[test]
#[ignore = "needs a CUDA device"]
fn packed_short_rows_are_staged() {
    let Some((dev, _)) = gpu("packed_short_rows_are_staged") else {
        return;
    };
    // Packed rows no 16-byte vector fits, of more than one load, of every
    // element size and up to 64 bytes, with a partial last warp where the
    // row count is not a multiple of 32; and rows of 7 with a gap between
    // them, which a lane reads from global memory.
    let packed = [
        (DType::F32, [300_001, 9], None),
        (DType::F32, [200_003, 6], None),
        (DType::F16, [300_000, 12], None),
        (DType::F64, [200_001, 5], None),
        (DType::I64, [100_000, 7], None),
        (DType::F32, [600_001, 7], None),
        (DType::F16, [300_000, 7], None),
        (DType::BF16, [300_017, 15], None),
        (DType::U8, [300_000, 31], None),
        (DType::Bool, [300_005, 3], None),
        (DType::F64, [300_001, 3], None),
        (DType::I64, [400_000, 3], None),
        (DType::I32, [5_000, 5], None),
    ];
    rows_take_path(&packed, 5, dev, "a lane per row, staged", |l| {
        l.config.lanes_per_row == 1 && l.config.stage_rows
    });
    let gaps = [(DType::F32, [300_000, 9], Some((1, 7)))];
    rows_take_path(&gaps, 5, dev, "a lane per row, unstaged", |l| {
        l.config.lanes_per_row == 1 && !l.config.stage_rows
    });
}

/// Ragged short rows: rows the widest load does not fit (prime lengths,
/// lengths only narrower loads divide, rows starting off a vector
/// boundary), read as the aligned vectors around each row, of every
/// element size; packed ones whose inputs end off a 16-byte boundary, so
/// that the last row's last vector would pass the allocation's end and is
/// read input by input instead.
#[test]
#[ignore = "needs a CUDA device"]
fn ragged_short_rows() {
    let Some((dev, _)) = gpu("ragged_short_rows") else {
        return;
    };
    let cases = [
        (DType::F32, [300_001, 37], None),
        (DType::I64, [200_001, 37], None),
        (DType::F32, [100_001, 127], None),
        (DType::F16, [100_003, 255], None),
        (DType::BF16, [300_001, 33], None),
        (DType::F64, [100_000, 131], Some((1, 129))),
        (DType::F32, [300_000, 16], Some((1, 15))),
        (DType::U8, [300_001, 101], None),
        (DType::I32, [1001, 66], None),
        (DType::F16, [50_001, 100], None),
        (DType::F64, [3, 9], None),
        // Aligned whole vectors that no lane count shares well, the last
        // row ending at the allocation's end.
        (DType::F32, [300_001, 148], None),
        (DType::F32, [300_000, 68], None),
        (DType::F64, [200_001, 40], None),
    ];
    rows_take_path(&cases, 11, dev, "ragged rows", |l| l.config.ragged_rows);
}

#[test]
#[ignore = "needs a CUDA device"]
fn misaligned_views_take_the_head_and_tail_paths() {
    let Some((dev, _)) = gpu("misaligned_views_take_the_head_and_tail_paths") else {
        return;
    };
    for dt in [DType::F32, DType::F16, DType::BF16, DType::F64, DType::U8] {
        let x = ints(&[19, 2051], dt, 2);
        for start in 1..4 {
            // Narrowing the last dim shifts every row's start off alignment.
            let l = check(
                &x,
                |t| t.narrow(1, start, 2051 - start).unwrap(),
                &[1],
                ReduceOp::Sum.output_dtype(dt, None).unwrap(),
                dev,
            );
            assert!(
                any_launch(&l, |l| l.config.vectorize_input),
                "{dt} narrow({start}) did not vectorize"
            );
            // And the whole storage offset by one element, reduced fully.
            check(
                &x,
                |t| {
                    t.reshape(&[19 * 2051])
                        .unwrap()
                        .narrow(0, start, 19 * 2051 - start)
                        .unwrap()
                },
                &[0],
                ReduceOp::Sum.output_dtype(dt, None).unwrap(),
                dev,
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn output_vectorized_columns() {
    let Some((dev, _)) = gpu("output_vectorized_columns") else {
        return;
    };
    for (cols, vec) in [(64usize, 4u32), (66, 2), (67, 1)] {
        for dt in [DType::F32, DType::F16, DType::F64, DType::I32, DType::Bool] {
            let x = ints(&[3000, cols], dt, 3);
            let l = check(
                &x,
                |t| t.clone(),
                &[0],
                ReduceOp::Sum.output_dtype(dt, None).unwrap(),
                dev,
            );
            assert!(
                any_launch(&l, |l| l.config.output_vec_size == vec),
                "{dt} [3000, {cols}].sum(0): expected output_vec_size {vec}, plan {l:?}"
            );
        }
    }
    // A view one element off alignment falls back to narrower vectors.
    let x = ints(&[3000, 65], DType::F32, 4);
    check(&x, |t| t.narrow(1, 1, 64).unwrap(), &[0], DType::F32, dev);
}

/// Lanes of several outputs whose inputs lie over two reduced dims that do
/// not coalesce (a narrowed middle dim): their lookups take the kernel's
/// N-d input path, a loop over the dims.
#[test]
#[ignore = "needs a CUDA device"]
fn output_vectorized_columns_over_several_reduced_dims() {
    let Some((dev, _)) = gpu("output_vectorized_columns_over_several_reduced_dims") else {
        return;
    };
    // (base shape, the middle dim narrowed to this many, reduced dims)
    let cases: [(&[usize], usize, &[isize]); 3] = [
        (&[9, 7, 256], 6, &[0, 1]),
        (&[3, 5, 4, 128], 3, &[0, 1, 2]),
        (&[2, 3, 64], 2, &[0, 1]),
    ];
    for dt in [DType::F32, DType::F16, DType::F64, DType::I64, DType::U8] {
        for (i, &(shape, kept, dims)) in cases.iter().enumerate() {
            let x = ints(shape, dt, 200 + i as u64);
            let out = ReduceOp::Sum.output_dtype(dt, None).unwrap();
            let l = check(&x, |t| t.narrow(1, 0, kept).unwrap(), dims, out, dev);
            assert!(
                any_launch(&l, |l| l.config.output_vec_size > 1
                    && l.iter.num_reduce_dims() > 1),
                "{dt} {shape:?} narrowed over {dims:?}: expected vector lanes over several reduced dims, plan {l:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn warp_split_block_y_reduce() {
    let Some((dev, _)) = gpu("warp_split_block_y_reduce") else {
        return;
    };
    for dt in [DType::F32, DType::F16, DType::I64] {
        // Few outputs with many inputs each: rows of the block split the inputs.
        let x = ints(&[20_000, 8], dt, 5);
        let l = check(
            &x,
            |t| t.clone(),
            &[0],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        assert!(
            any_launch(&l, |l| l.config.input_mult[1] != 0),
            "{dt}: no block_y split: {l:?}"
        );
        let x = ints(&[8, 20_000], dt, 6);
        let l = check(
            &x,
            |t| t.clone(),
            &[1],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        assert!(
            any_launch(&l, |l| l.config.input_mult[1] != 0
                || l.config.input_mult[0] != 0),
            "{dt}: rows: {l:?}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn cta_split_global_reduce() {
    let Some((dev, _)) = gpu("cta_split_global_reduce") else {
        return;
    };
    for dt in [DType::F32, DType::BF16, DType::F64, DType::I32, DType::U8] {
        // A full reduction: block_x + block_y + global.
        let x = ints(&[1 << 22], dt, 7);
        let l = check(
            &x,
            |t| t.clone(),
            &[0],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        assert!(
            any_launch(&l, |l| l.config.input_mult[2] != 0),
            "{dt} full: no CTA split: {l:?}"
        );
        // Column sums of a tall matrix: global reduce without block_x.
        let x = ints(&[1 << 20, 16], dt, 8);
        let l = check(
            &x,
            |t| t.clone(),
            &[0],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        assert!(
            any_launch(&l, |l| l.config.input_mult[2] != 0
                && l.config.input_mult[0] == 0),
            "{dt} columns: {l:?}"
        );
        // Channel statistics of a small batch: PyTorch's plan leaves SMs
        // without a CTA, so ours splits each channel across CTAs. (Rows of
        // the image one element in, so that no vector load is aligned:
        // vectorised, the split is VectorizedDims', which
        // vectorized_dims_strategy tests.)
        let x = ints(&[32, 64, 28, 29], dt, 10);
        let l = check(
            &x,
            |t| t.narrow(3, 1, 28).unwrap(),
            &[0, 2, 3],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        assert!(
            any_launch(&l, |l| matches!(l.strategy, Strategy::CtaSplit { .. })
                && l.config.input_mult[2] != 0),
            "{dt} channel statistics: {l:?}"
        );
    }
    // Repeated launches reuse the semaphores: the kernel must leave them at 0.
    let x = ints(&[3, 1 << 20], DType::F32, 9);
    for _ in 0..5 {
        check(&x, |t| t.clone(), &[1], DType::F32, dev);
        check(&x, |t| t.clone(), &[], DType::F32, dev);
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn strided_expanded_and_nd_inputs() {
    let Some((dev, _)) = gpu("strided_expanded_and_nd_inputs") else {
        return;
    };
    for dt in [DType::F32, DType::F16, DType::I64] {
        let x = ints(&[1, 513], dt, 10);
        // expand: stride 0 along the reduced and the kept dim.
        check(
            &x,
            |t| t.expand(&[1000, 513]).unwrap(),
            &[0],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        check(
            &x,
            |t| t.expand(&[1000, 513]).unwrap(),
            &[1],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        check(
            &x,
            |t| t.expand(&[1000, 513]).unwrap(),
            &[],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        let y = ints(&[24, 40, 36], dt, 11);
        // 1-D strided: the reduced dim is not the fastest.
        check(
            &y,
            |t| t.clone(),
            &[1],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        // N-d reduced dims through the OffsetCalculator, permuted views.
        check(
            &y,
            |t| t.clone(),
            &[0, 2],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        check(
            &y,
            |t| t.permute(&[2, 0, 1]).unwrap(),
            &[0, 2],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        check(
            &y,
            |t| t.slice(2, 1, 36, 3).unwrap(),
            &[0, 2],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
        check(
            &y,
            |t| t.t().unwrap_or_else(|_| t.transpose(0, 2).unwrap()),
            &[1],
            ReduceOp::Sum.output_dtype(dt, None).unwrap(),
            dev,
        );
    }
    // 0-d and size-1 reductions.
    let s = ints(&[], DType::F32, 12);
    check(&s, |t| t.clone(), &[], DType::F32, dev);
    let one = ints(&[5, 1, 7], DType::I32, 13);
    check(&one, |t| t.clone(), &[1], DType::I64, dev);
}

#[test]
#[ignore = "needs a CUDA device"]
fn all_dtypes_and_sum_dtype_casts() {
    let Some((dev, _)) = gpu("all_dtypes_and_sum_dtype_casts") else {
        return;
    };
    let mut pairs: Vec<(DType, DType)> = DType::ALL
        .iter()
        .map(|&d| (d, ReduceOp::Sum.output_dtype(d, None).unwrap()))
        .collect();
    pairs.extend([
        (DType::F16, DType::F32),
        (DType::BF16, DType::F32),
        (DType::F32, DType::F64),
        (DType::F64, DType::F32),
        (DType::F32, DType::F16),
        (DType::I32, DType::I32),
        (DType::I64, DType::F64),
        (DType::U8, DType::U8),
        (DType::Bool, DType::Bool),
        (DType::F32, DType::I64),
    ]);
    for (i, &(din, dout)) in pairs.iter().enumerate() {
        let x = ints(&[45, 130], din, 20 + i as u64);
        for dims in [&[0isize][..], &[1], &[]] {
            check(&x, |t| t.clone(), dims, dout, dev);
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn float_sums_match_an_f64_reference() {
    let Some((dev, _props)) = gpu("float_sums_match_an_f64_reference") else {
        return;
    };
    for dt in [DType::F32, DType::F16, DType::BF16] {
        let x = Tensor::randn(&[257, 3001], dt, Device::Cpu, 30).unwrap();
        let reference = x
            .sum_dtype(&[1], false, DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let got = x
            .to_device(dev)
            .unwrap()
            .sum_dtype(&[1], false, DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let num: f64 = got
            .iter()
            .zip(&reference)
            .map(|(&g, &r)| (g as f64 - r).powi(2))
            .sum();
        let den: f64 = reference.iter().map(|r| r * r).sum();
        let rel = (num / den).sqrt();
        assert!(rel < 1e-5, "{dt}: relative error {rel}");
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn runs_are_bitwise_deterministic() {
    let Some((dev, _props)) = gpu("runs_are_bitwise_deterministic") else {
        return;
    };
    for (shape, dims, dt) in [
        (vec![1usize << 23], vec![], DType::F32),
        (vec![1 << 21, 3], vec![0isize], DType::F16),
        (vec![64, 100_003], vec![1], DType::BF16),
        (vec![1 << 20, 16], vec![0], DType::F32),
    ] {
        let x = Tensor::randn(&shape, dt, Device::Cpu, 40)
            .unwrap()
            .to_device(dev)
            .unwrap();
        let first = bits(&x.sum(&dims, false).unwrap());
        for _ in 0..4 {
            assert_eq!(bits(&x.sum(&dims, false).unwrap()), first, "{shape:?} {dt}");
        }
    }
}

/// `op` over `dims` of `x` through the public entry point: every output
/// (values and indices, min and max, var and mean). The index ops take one
/// dim: the first of `dims`, or the flattened tensor (`argmax`) or dim 0
/// (`max_dim`) for `&[]`.
fn apply(op: ReduceOp, x: &Tensor, dims: &[isize]) -> Vec<Tensor> {
    let one = |t: tensor_reduce::Result<Tensor>| vec![t.unwrap()];
    let two = |t: tensor_reduce::Result<(Tensor, Tensor)>| {
        let (a, b) = t.unwrap();
        vec![a, b]
    };
    let dim = dims.first().copied();
    match op {
        ReduceOp::Sum => one(x.sum(dims, false)),
        ReduceOp::NanSum => one(x.nansum(dims, false)),
        ReduceOp::Prod => one(x.prod(dims, false)),
        ReduceOp::Mean => one(x.mean(dims, false)),
        ReduceOp::AMax => one(x.amax(dims, false)),
        ReduceOp::AMin => one(x.amin(dims, false)),
        ReduceOp::Any => one(x.any(dims, false)),
        ReduceOp::All => one(x.all(dims, false)),
        ReduceOp::MaxDim => two(x.max_dim(dim.unwrap_or(0), false)),
        ReduceOp::MinDim => two(x.min_dim(dim.unwrap_or(0), false)),
        ReduceOp::ArgMax => one(x.argmax(dim, false)),
        ReduceOp::ArgMin => one(x.argmin(dim, false)),
        ReduceOp::AMinMax => two(x.aminmax(dims, false)),
        ReduceOp::Var => one(x.var(dims, 1.0, false)),
        ReduceOp::Std => one(x.std(dims, 1.0, false)),
        ReduceOp::VarMean => two(x.var_mean(dims, 1.0, false)),
        ReduceOp::StdMean => two(x.std_mean(dims, 1.0, false)),
        ReduceOp::Norm(kind) => one(x.norm(order(kind), dims, false)),
        ReduceOp::LogSumExp => one(x.logsumexp(dims, false)),
    }
}

/// An order of each kind of norm (3 for a general p).
fn order(kind: NormKind) -> f64 {
    match kind {
        NormKind::Zero => 0.0,
        NormKind::One => 1.0,
        NormKind::Two => 2.0,
        NormKind::Inf => f64::INFINITY,
        NormKind::NegInf => f64::NEG_INFINITY,
        NormKind::P => 3.0,
    }
}

/// Whether `op` on small integers is exact, so the GPU must match the CPU
/// bit for bit; the others round differently with the order of their
/// combines (Welford's divisions, exp, pow), and match to a few ulps.
fn exact(op: ReduceOp) -> bool {
    !matches!(
        op,
        ReduceOp::Var
            | ReduceOp::Std
            | ReduceOp::VarMean
            | ReduceOp::StdMean
            | ReduceOp::Norm(NormKind::Two | NormKind::P)
            | ReduceOp::LogSumExp
    )
}

/// `got` within a few ulps of the output dtype of `want` (NaN where it is
/// NaN, infinities equal).
fn assert_close(got: &Tensor, want: &Tensor, what: &str) {
    let tol = match want.dtype() {
        DType::F64 => 1e-12,
        DType::F32 => 1e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    };
    let g = got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let w = want.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(g.len(), w.len(), "{what}");
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * b.abs().max(1.0);
        assert!(ok, "{what}: element {i}: GPU {a}, CPU {b}");
    }
}

/// The ops carrying a single value (sums, products, extremes, truth tests).
const VALUE_OPS: usize = 8;

#[test]
#[ignore = "needs a CUDA device"]
fn value_ops_on_every_path() {
    ops_on_every_path("value_ops_on_every_path", &ReduceOp::ALL[..VALUE_OPS]);
}

/// The ops whose accumulator is a (value, index) pair, a pair of values or
/// Welford's state, with two outputs for some.
#[test]
#[ignore = "needs a CUDA device"]
fn stateful_ops_on_every_path() {
    ops_on_every_path("stateful_ops_on_every_path", &ReduceOp::ALL[VALUE_OPS..]);
}

/// `ops` on every dtype each takes, through the launch shapes that matter
/// (vectorised misaligned rows, vectorised and ragged columns, block.y, a
/// CTA split, an N-d channel reduction), against the CPU: the inputs are -1, 0 and 1,
/// so sums, products, means, extremes and indices are exact on both sides
/// and compared bit for bit (the others within a few ulps), and twice on
/// the GPU, bit for bit against itself. Small enough to run under every
/// compute-sanitizer tool.
fn ops_on_every_path(test: &str, ops: &[ReduceOp]) {
    let Some((dev, _props)) = gpu(test) else {
        return;
    };
    let cases: [OpsCase; 21] = [
        (vec![64, 1028], |t| t.narrow(1, 1, 1027).unwrap(), vec![1]),
        (vec![1024, 96], |t| t.clone(), vec![0]),
        (vec![4096, 8], |t| t.clone(), vec![0]),
        (vec![1 << 18], |t| t.clone(), vec![]),
        (vec![4, 16, 14, 14], |t| t.clone(), vec![0, 2, 3]),
        // Short rows: packed rows of 3, a lane each, staged through shared
        // memory with several rows per thread and a last warp of one row
        // read unstaged; rows of 7, 9 apart, a lane each from global
        // memory; rows of 12 starting mid-vector, 16 apart.
        (vec![600_001, 3], |t| t.clone(), vec![1]),
        (vec![4096, 9], |t| t.narrow(1, 1, 7).unwrap(), vec![1]),
        (vec![2048, 16], |t| t.narrow(1, 2, 12).unwrap(), vec![-1]),
        // Ragged rows, read as the vectors around them: packed rows of 37
        // (staged where 1-byte), the last one ending off a 16-byte
        // boundary of the allocation for most dtypes; rows of 127 whose
        // starts move through every alignment.
        (vec![4001, 37], |t| t.clone(), vec![1]),
        (vec![600, 131], |t| t.narrow(1, 3, 127).unwrap(), vec![1]),
        // Rows of two to four warps of loads, two to four vectors a lane:
        // 4-byte rows of 256 and 512, 8-byte rows of 128, 4-byte rows of
        // 132 (11 lanes a row, 3 vectors each).
        (vec![2048, 256], |t| t.clone(), vec![1]),
        (vec![2048, 128], |t| t.clone(), vec![1]),
        (vec![1025, 512], |t| t.clone(), vec![1]),
        (vec![2047, 132], |t| t.clone(), vec![1]),
        // Short rows over kept dims that do not coalesce: rows of 16 of a
        // narrowed middle dim; rows of 5 of a permuted view.
        (vec![6, 700, 16], |t| t.narrow(1, 0, 600).unwrap(), vec![2]),
        (
            vec![48, 300, 5],
            |t| t.permute(&[1, 0, 2]).unwrap(),
            vec![2],
        ),
        // Tall columns: 128 outputs of 4096 inputs, 2 outputs a lane for
        // 4- and 8-byte inputs (PyTorch's 4 for narrower ones).
        (vec![4096, 128], |t| t.clone(), vec![0]),
        // Short columns: 3 rows of 4096 starting 8 columns in, 8 outputs a
        // lane for 16-bit and 1-byte inputs whose accumulator is at most 4
        // bytes (PyTorch's 4 for the rest).
        (vec![3, 4104], |t| t.narrow(1, 8, 4096).unwrap(), vec![0]),
        // Ragged columns: an odd width, and a view 3 elements into an odd
        // row pitch; the last lane of each row stores part of its vector.
        (vec![5, 4101], |t| t.clone(), vec![0]),
        (vec![3, 2063], |t| t.narrow(1, 3, 2051).unwrap(), vec![0]),
        // A permuted view whose kept dims run in the input's order.
        (
            vec![48, 40, 64],
            |t| t.permute(&[2, 0, 1]).unwrap(),
            vec![2],
        ),
    ];
    ops_on_cases(dev, ops, &DType::ALL, &cases);
}

/// ShortRows' spread combine, where each of a row's first lanes (up to 8)
/// ends with whole rows of a thread's full set (8, or 4 looked up one by
/// one) and stores them, for every op on a 4- and an 8-byte dtype (every
/// size of accumulator): rows
/// of 2 and 32 lanes of one 16-byte load each, row groups that do not
/// tile a warp (5 and 25 lanes; 11 lanes of 3 loads), and rows of 16 of a
/// narrowed middle dim (kept dims that do not coalesce), ragged rows of 37
/// (10 lanes of the vectors around each row), each with enough rows for 8
/// a thread on this device and a partial last CTA. Against the
/// CPU as in [`ops_on_every_path`], and twice on the GPU, bit for bit.
#[test]
#[ignore = "needs a CUDA device"]
fn ops_on_rows_spread_over_lanes() {
    let Some((dev, props)) = gpu("ops_on_rows_spread_over_lanes") else {
        return;
    };
    let full = tensor_reduce::cuda::plan::SHORT_ROWS_MAX_ROWS_PER_THREAD;
    // The lanes per row of each op's spread plans, over all cases.
    let mut spread_lanes =
        std::collections::BTreeMap::<String, std::collections::BTreeSet<u32>>::new();
    for dt in [DType::F32, DType::F64] {
        let vec = 16 / dt.size_in_bytes();
        // Rows of 37 are ragged: 10 lanes of the vectors around each row.
        let row_lens = [2, 5, 25, 32, 33].map(|vectors| vectors * vec);
        let row_lens = row_lens.into_iter().chain([37]).map(Some).chain([None]);
        for (i, row_len) in row_lens.enumerate() {
            // Rows for 8 a thread: a full wave of CTAs, each taking a CTA
            // pass of rows (found from a small probe's plan) 8 times.
            let probe_shape = |rows: usize| match row_len {
                Some(len) => vec![rows, len],
                None => vec![2, rows / 2 + 3, 16],
            };
            let view = |t: &Tensor| match row_len {
                Some(_) => t.clone(),
                None => {
                    let kept = t.shape()[1] - 3;
                    t.narrow(1, 1, kept).unwrap()
                }
            };
            let probe = view(&Tensor::zeros(&probe_shape(64), dt, Device::Cpu).unwrap());
            let plan = probe.explain(ReduceOp::Sum, &[-1], false, &props).unwrap();
            let step = plan.launches[0].config.step_output as usize;
            let wave =
                (props.sm_count * tensor_reduce::cuda::plan::SHORT_ROWS_MIN_BLOCKS_PER_SM) as usize;
            let rows = wave * step * full as usize + step / 2 + 1;
            let x =
                Tensor::randint(-1, 2, &probe_shape(rows), dt, Device::Cpu, 40 + i as u64).unwrap();
            let xg = view(&x.to_device(dev).unwrap());
            let xc = view(&x);
            for op in ReduceOp::ALL {
                if op.output_dtype(dt, None).is_err() {
                    continue;
                }
                let what = format!("{op} {dt} {:?}", xc.shape());
                let plan = xg.explain(op, &[-1], false, &props).unwrap();
                let l = &plan.launches[0];
                let lanes = l.config.lanes_per_row;
                if lanes > 1 && l.config.rows_per_thread == l.short_rows_max_rows_per_thread() {
                    spread_lanes
                        .entry(op.to_string())
                        .or_default()
                        .insert(lanes);
                }
                assert_gpu_matches_cpu(op, &xc, &xg, &[-1], &what);
            }
        }
    }
    // Every op spread its rows, over lanes from 2 to a warp between them.
    for op in ReduceOp::ALL {
        let seen = spread_lanes.get(&op.to_string());
        assert!(
            seen.is_some_and(|s| s.len() >= 3 && s.contains(&32)),
            "{op}: spread over lanes {seen:?}"
        );
    }
    let all: std::collections::BTreeSet<u32> = spread_lanes.values().flatten().copied().collect();
    // (Rows of 33 vectors, which 11 lanes of 3 would share at 69% of a
    // warp's loads, are read ragged: 9 lanes of at most 4.)
    assert!(
        [2, 5, 9, 25, 32].iter().all(|l| all.contains(l)),
        "spread over lanes {all:?}"
    );
}

/// Every op on rows shorter than a lane's load, several rows a load
/// (`packed_rows_kernel`): rows of 2, 4 and 8 of each dtype that such rows
/// fit, with rows for 8 groups a thread, a partial last CTA and a last
/// group of rows cut short; also a view that starts a load in (a base
/// offset the plan still packs from) and one that starts a row in (which
/// it must not). Against the CPU as in [`ops_on_every_path`], and twice on
/// the GPU, bit for bit.
#[test]
#[ignore = "needs a CUDA device"]
fn ops_on_packed_rows() {
    let Some((dev, props)) = gpu("ops_on_packed_rows") else {
        return;
    };
    let full = tensor_reduce::cuda::plan::SHORT_ROWS_MAX_ROWS_PER_THREAD as usize;
    let wave = (props.sm_count * tensor_reduce::cuda::plan::SHORT_ROWS_MIN_BLOCKS_PER_SM) as usize;
    // (op, dtype, rows a load) of every packed plan run.
    let mut packed = std::collections::BTreeSet::new();
    for dt in [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::U8,
        DType::Bool,
        DType::I32,
    ] {
        for row_len in [2usize, 4, 8] {
            if row_len * dt.size_in_bytes() >= 16 {
                continue;
            }
            // A pass of rows for the widest packing of this row: sum's.
            let probe = Tensor::zeros(&[4096, row_len], dt, Device::Cpu).unwrap();
            let plan = probe.explain(ReduceOp::Sum, &[-1], false, &props).unwrap();
            let c = plan.launches[0].config;
            let pass = c.step_output as usize * c.output_vec_size as usize;
            let rows = wave * pass * full + pass / 2 + 3;
            let x = ints(&[rows, row_len], dt, 70 + row_len as u64);
            let xg_base = x.to_device(dev).unwrap();
            let group = c.output_vec_size as usize;
            for (view, from) in [("whole", 0), ("a load in", group), ("a row in", 1)] {
                let xc = x.narrow(0, from, rows - from).unwrap();
                let xg = xg_base.narrow(0, from, rows - from).unwrap();
                for op in ReduceOp::ALL {
                    if op.output_dtype(dt, None).is_err() {
                        continue;
                    }
                    let plan = xg.explain(op, &[-1], false, &props).unwrap();
                    let l = &plan.launches[0];
                    if l.config.lanes_per_row != 0 && l.config.output_vec_size > 1 {
                        assert_ne!(view, "a row in", "{op} {dt} rows of {row_len}");
                        packed.insert((op.to_string(), dt.to_string(), l.config.output_vec_size));
                    }
                    let what = format!("{op} {dt} rows of {row_len}, {view}");
                    assert_gpu_matches_cpu(op, &xc, &xg, &[-1], &what);
                }
            }
        }
    }
    // Each kind of accumulator took the packed plan: sums, min/max values,
    // index pairs (and max's two outputs), logic, norms and
    // logsumexp's state. (Ops whose loads are 4 inputs wide pack f16 rows
    // of 2 two a load; Welford's loads of 2 hold no two rows.)
    for (op, dt, rows) in [
        ("sum", "f16", 4),
        ("sum", "f32", 2),
        ("amax", "bf16", 2),
        ("argmax", "f16", 2),
        ("max", "i32", 2),
        ("any", "bool", 2),
        ("norm2", "f16", 2),
        ("logsumexp", "f16", 2),
    ] {
        assert!(
            packed.contains(&(op.to_string(), dt.to_string(), rows)),
            "{op} {dt} not packed {rows} a load: {packed:?}"
        );
    }
}

/// A base shape, the view of it to reduce, and the dims.
type OpsCase = (Vec<usize>, fn(&Tensor) -> Tensor, Vec<isize>);

/// `ops` on each of `dtypes` it takes and each case, as
/// [`ops_on_every_path`] says.
fn ops_on_cases(dev: Device, ops: &[ReduceOp], dtypes: &[DType], cases: &[OpsCase]) {
    for &op in ops {
        for &dt in dtypes {
            if op.output_dtype(dt, None).is_err() {
                continue;
            }
            for (i, (shape, view, dims)) in cases.iter().enumerate() {
                let (lo, hi) = if matches!(dt, DType::U8 | DType::Bool) {
                    (0, 2)
                } else {
                    (-1, 2)
                };
                let x = Tensor::randint(lo, hi, shape, dt, Device::Cpu, 7 + i as u64).unwrap();
                let xg = view(&x.to_device(dev).unwrap());
                assert_gpu_matches_cpu(op, &view(&x), &xg, dims, &format!("{op} {dt} case {i}"));
            }
        }
    }
}

/// `op` over `dims` of `xg` (on the GPU) against the same of `xc` (the
/// same values on the CPU): each output's shape and dtype, its bits where
/// the op is exact on small integers (else a few ulps), and a second GPU
/// run bit for bit against the first.
fn assert_gpu_matches_cpu(op: ReduceOp, xc: &Tensor, xg: &Tensor, dims: &[isize], what: &str) {
    let want = apply(op, xc, dims);
    let got = apply(op, xg, dims);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        let what = format!("{what} output {k}");
        assert_eq!((g.shape(), g.dtype()), (w.shape(), w.dtype()), "{what}");
        if exact(op) {
            assert_eq!(bits(g), bits(w), "{what}: GPU differs from CPU");
        } else {
            assert_close(g, w, &what);
        }
    }
    let again = apply(op, xg, dims);
    for (k, (a, g)) in again.iter().zip(&got).enumerate() {
        assert_eq!(bits(a), bits(g), "{what} output {k}: not deterministic");
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn concurrent_callers_share_the_kernel_cache() {
    let Some((dev, _)) = gpu("concurrent_callers_share_the_kernel_cache") else {
        return;
    };
    std::thread::scope(|s| {
        for (i, dt) in [
            DType::F32,
            DType::F16,
            DType::I32,
            DType::F32,
            DType::F16,
            DType::I32,
        ]
        .into_iter()
        .enumerate()
        {
            s.spawn(move || {
                let x = ints(&[300, 301], dt, 50 + i as u64);
                check(
                    &x,
                    |t| t.clone(),
                    &[1],
                    ReduceOp::Sum.output_dtype(dt, None).unwrap(),
                    dev,
                );
                check(
                    &x,
                    |t| t.clone(),
                    &[0],
                    ReduceOp::Sum.output_dtype(dt, None).unwrap(),
                    dev,
                );
            });
        }
    });
}

/// Over 2^31 bytes: PyTorch's 32-bit split into several launches. A full
/// reduction splits the reduced dim, so later launches accumulate in the
/// output (f32 can); a two-row sum splits the kept dim instead.
#[test]
#[ignore = "needs a CUDA device"]
fn split_32bit_f32_over_2gib() {
    let Some((dev, _)) = gpu("split_32bit_f32_over_2gib") else {
        return;
    };
    let x = ints(&[(1 << 29) + 7], DType::F32, 60);
    let l = check(&x, |t| t.clone(), &[0], DType::F32, dev);
    assert!(
        l.len() > 1,
        "expected a 32-bit split, got {} launch(es)",
        l.len()
    );
    assert!(
        l.iter().any(|l| l.iter.accumulate()),
        "the reduced dim was not split"
    );
    assert!(l.iter().any(|l| !l.iter.final_output()));
    drop(x);
    let n = (1usize << 28) + 3;
    let x = ints(&[2, n], DType::F32, 61);
    let l = check(&x, |t| t.clone(), &[1], DType::F32, dev);
    assert!(
        l.len() > 1,
        "expected a 32-bit split, got {} launch(es)",
        l.len()
    );
    check(&x, |t| t.clone(), &[], DType::F32, dev);
    check(&x, |t| t.clone(), &[0], DType::F32, dev);
}

/// Over 2^31 elements of f16. Splitting the reduced dim makes the launches
/// carry partial sums through an f32 accumulation buffer (f16 partials would
/// round); with an f32 output they accumulate in the output itself.
#[test]
#[ignore = "needs a CUDA device"]
fn split_32bit_f16_over_2g_elements() {
    let Some((dev, props)) = gpu("split_32bit_f16_over_2g_elements") else {
        return;
    };
    // Values in {-1, 0, 1}: every f32 partial is an exact integer, so both
    // backends round the same exact sum to f16 once.
    let x = Tensor::randint(-1, 2, &[(1 << 31) + 16], DType::F16, Device::Cpu, 62).unwrap();
    let plan = x.explain(ReduceOp::Sum, &[0], false, &props).unwrap();
    assert!(plan.launches.len() > 2, "{} launches", plan.launches.len());
    assert!(plan
        .launches
        .iter()
        .any(|l| l.iter.accumulate() && !l.iter.final_output()));
    check(&x, |t| t.clone(), &[0], DType::F16, dev);
    check(&x, |t| t.clone(), &[0], DType::F32, dev);
    drop(x);
    // Rows: the kept dim is split (no accumulation), then reduced fully.
    let x = Tensor::randint(-1, 2, &[4, (1 << 29) + 5], DType::F16, Device::Cpu, 63).unwrap();
    check(&x, |t| t.clone(), &[1], DType::F16, dev);
    check(&x, |t| t.clone(), &[0], DType::F16, dev);
}

/// Over 2^31 elements, the reduced dim is split into several launches and
/// each later piece's indices count from its own start: `translate_idx`
/// with the launch's `base_idx` must make them logical again. The maxima
/// sit past 2^31 (and a tie before them must still win), and the same
/// reduction as rows splits the kept dim instead.
#[test]
#[ignore = "needs a CUDA device"]
fn index_ops_across_the_32bit_split() {
    let Some((dev, props)) = gpu("index_ops_across_the_32bit_split") else {
        return;
    };
    let n = (1usize << 31) + 4096;
    let mut v = vec![1u8; n];
    let late = (1usize << 31) + 100;
    v[late] = 9;
    v[late + 7] = 9;
    v[n - 1] = 0;
    let x = Tensor::from_vec(v, &[n]).unwrap();
    let plan = x.explain(ReduceOp::ArgMax, &[0], false, &props).unwrap();
    assert!(
        plan.launches.iter().any(|l| l.iter.accumulate()),
        "the reduced dim was not split"
    );
    let xg = x.to_device(dev).unwrap();
    assert_eq!(
        xg.argmax(None, false).unwrap().to_vec::<i64>().unwrap(),
        [late as i64]
    );
    assert_eq!(
        xg.argmin(Some(0), false).unwrap().to_vec::<i64>().unwrap(),
        [n as i64 - 1]
    );
    let (v, i) = xg.max_dim(0, true).unwrap();
    assert_eq!(
        (v.to_vec::<u8>().unwrap(), i.to_vec::<i64>().unwrap()),
        (vec![9], vec![late as i64])
    );
    // A tie in the first piece wins over the later ones.
    drop((xg, v, i));
    let mut w = x.to_vec::<u8>().unwrap();
    w[5] = 9;
    let xg = Tensor::from_vec(w, &[n]).unwrap().to_device(dev).unwrap();
    assert_eq!(
        xg.argmax(Some(0), false).unwrap().to_vec::<i64>().unwrap(),
        [5]
    );
    // Two rows: the kept dim splits, indices stay within each row.
    let rows = xg.reshape(&[2, n / 2]).unwrap();
    let want = rows
        .to_device(Device::Cpu)
        .unwrap()
        .argmax(Some(1), false)
        .unwrap();
    let got = rows.argmax(Some(1), false).unwrap();
    assert_eq!(got.to_vec::<i64>().unwrap(), want.to_vec::<i64>().unwrap());
    assert_eq!(got.to_vec::<i64>().unwrap(), [5, (late - n / 2) as i64]);
}

/// Welford's count division for float (`tr::divide_by_count`,
/// kernels/ops/welford.cuh: CUDA's fast path with the count's reciprocal
/// shared, and no branch) against IEEE division, the host's f32 `/`: the
/// same bits wherever the quotient is a normal float, an infinity or NaN,
/// a zero of either sign where it is zero, and at most one unit in the last
/// place off where it is subnormal. Numerators are random bit patterns
/// (every exponent, subnormals, infinities and NaNs among them) and the
/// edges; counts every one of 1 to 4096 and random ones up to 2^31.
#[test]
#[ignore = "needs a CUDA device"]
fn welford_count_division_is_ieee_division() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    let Some((_, props)) = gpu("welford_count_division_is_ieee_division") else {
        return;
    };
    let src = format!(
        "{}\nextern \"C\" __global__ void divide(const float* a, const float* b, float* q, unsigned n) {{\n  \
         const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  \
         if (i < n) q[i] = tr::divide_by_count(a[i], b[i]);\n}}\n",
        cuda::kernel::source()
    );
    let (major, minor) = props.compute_capability;
    let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(
        src,
        cudarc::nvrtc::CompileOptions {
            arch: Some(arch),
            options: vec![
                "-std=c++17".into(),
                "--device-as-default-execution-space".into(),
            ],
            ..Default::default()
        },
    )
    .unwrap();

    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let edges = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        1.0,
        -3.0,
    ];
    let n = 1 << 21;
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let r = next();
        a.push(if i < edges.len() * 4096 {
            edges[i / 4096]
        } else {
            f32::from_bits((r >> 32) as u32)
        });
        let count = if i % 2 == 0 {
            (i / 2 % 4096 + 1) as u32
        } else {
            ((r as u32) >> 1).max(1)
        };
        b.push(count as f32);
    }

    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let f = ctx
        .load_module(ptx)
        .unwrap()
        .load_function("divide")
        .unwrap();
    let (da, db) = (
        stream.clone_htod(&a).unwrap(),
        stream.clone_htod(&b).unwrap(),
    );
    let mut dq = stream.alloc_zeros::<f32>(n).unwrap();
    let len = n as u32;
    let mut launch = stream.launch_builder(&f);
    launch.arg(&da).arg(&db).arg(&mut dq).arg(&len);
    // SAFETY: the kernel reads a[i] and b[i] and writes q[i] for i < len,
    // and each buffer holds len floats.
    unsafe { launch.launch(LaunchConfig::for_num_elems(len)) }.unwrap();
    let q = stream.clone_dtoh(&dq).unwrap();

    let mut subnormal = 0;
    for i in 0..n {
        let (got, want) = (q[i], a[i] / b[i]);
        let ok = if want.is_nan() {
            got.is_nan()
        } else if want == 0.0 {
            got == 0.0
        } else if want.abs() < f32::MIN_POSITIVE {
            subnormal += 1;
            got.is_sign_negative() == want.is_sign_negative()
                && (got.to_bits() as i64 - want.to_bits() as i64).abs() <= 1
        } else {
            got.to_bits() == want.to_bits()
        };
        assert!(
            ok,
            "{} / {}: got {got:e}, IEEE division gives {want:e}",
            a[i], b[i]
        );
    }
    assert!(
        subnormal > 1000,
        "only {subnormal} subnormal quotients drawn"
    );
}
