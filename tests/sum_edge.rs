//! Edge cases of `sum` with torch's expected results, on every backend.

mod common;

use tensor_reduce::{bf16, f16, DType, Device, Tensor};

fn on(device: Device, t: Tensor) -> Tensor {
    t.to_device(device).unwrap()
}

fn zero_d(device: Device) {
    let x = on(device, Tensor::scalar(2.5f32));
    for dims in [&[][..], &[0], &[-1]] {
        let s = x.sum(dims, false).unwrap();
        assert_eq!(s.shape(), &[] as &[usize]);
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![2.5]);
    }
    assert_eq!(x.sum(&[0], true).unwrap().shape(), &[] as &[usize]);
    assert!(x.sum(&[1], false).is_err());
}

fn empty_dims_sum_to_zero(device: Device) {
    let x = on(
        device,
        Tensor::zeros(&[3, 0, 4], DType::F32, Device::Cpu).unwrap(),
    );
    let s = x.sum(&[1], false).unwrap();
    assert_eq!(s.shape(), &[3, 4]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![0.0; 12]);
    assert_eq!(x.sum(&[1], true).unwrap().shape(), &[3, 1, 4]);
    // Reducing the non-empty dims leaves an empty result.
    assert_eq!(x.sum(&[0, 2], false).unwrap().shape(), &[0]);
    let i = on(
        device,
        Tensor::zeros(&[0], DType::I32, Device::Cpu).unwrap(),
    );
    assert_eq!(i.sum_all().unwrap().to_vec::<i64>().unwrap(), vec![0]);
}

fn nan_and_inf_propagate(device: Device) {
    let x = on(
        device,
        Tensor::from_vec(
            vec![
                1.0f32,
                f32::NAN,
                2.0,
                f32::INFINITY,
                1.0,
                3.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ],
            &[4, 2],
        )
        .unwrap(),
    );
    let s = x.sum(&[1], false).unwrap().to_vec::<f32>().unwrap();
    assert!(s[0].is_nan());
    assert_eq!(s[1], f32::INFINITY);
    assert_eq!(s[2], 4.0);
    assert!(s[3].is_nan(), "inf + -inf is NaN");
}

fn keepdim_and_negative_dims(device: Device) {
    let x = on(
        device,
        Tensor::from_vec((0..24).map(|v| v as f64).collect(), &[2, 3, 4]).unwrap(),
    );
    let a = x.sum(&[-1, 0], true).unwrap();
    assert_eq!(a.shape(), &[1, 3, 1]);
    // Independent arithmetic: sum over i, k of (12 i + 4 j + k) = 2*4*4j + (4*12 + 2*6) = 32 j + 60.
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![60.0, 92.0, 124.0]);
    assert_eq!(
        x.sum(&[2, 0], false).unwrap().to_vec::<f64>().unwrap(),
        vec![60.0, 92.0, 124.0]
    );
    assert_eq!(x.sum_all().unwrap().to_vec::<f64>().unwrap(), vec![276.0]);
    assert_eq!(x.sum(&[], true).unwrap().shape(), &[1, 1, 1]);
}

fn dtypes_follow_torch(device: Device) {
    let b = on(
        device,
        Tensor::from_vec(vec![true, false, true, true], &[4]).unwrap(),
    );
    let s = b.sum_all().unwrap();
    assert_eq!(s.dtype(), DType::I64);
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![3]);
    let u = on(
        device,
        Tensor::from_vec(vec![200u8, 100, 50], &[3]).unwrap(),
    );
    assert_eq!(
        u.sum_all().unwrap().to_vec::<i64>().unwrap(),
        vec![350],
        "u8 sums widen to i64, no wrap at 256"
    );
    let i = on(
        device,
        Tensor::from_vec(vec![i32::MAX, i32::MAX], &[2]).unwrap(),
    );
    assert_eq!(
        i.sum_all().unwrap().to_vec::<i64>().unwrap(),
        vec![2 * i32::MAX as i64]
    );
    // f16 accumulates in f32: 4096 ones sum to 4096 (an f16 accumulator stalls at 2048).
    let h = on(
        device,
        Tensor::from_vec(vec![f16::ONE; 4096], &[4096]).unwrap(),
    );
    let hs = h.sum_all().unwrap();
    assert_eq!(hs.dtype(), DType::F16);
    assert_eq!(hs.to_vec::<f16>().unwrap(), vec![f16::from_f32(4096.0)]);
    let bh = on(
        device,
        Tensor::from_vec(vec![bf16::ONE; 1000], &[1000]).unwrap(),
    );
    assert_eq!(
        bh.sum_all().unwrap().to_vec::<bf16>().unwrap(),
        vec![bf16::from_f32(1000.0)]
    );
}

fn sum_dtype_casts_first(device: Device) {
    let h = on(
        device,
        Tensor::from_vec(vec![f16::from_f32(60000.0); 4], &[2, 2]).unwrap(),
    );
    assert_eq!(
        h.sum(&[0], false).unwrap().to_vec::<f16>().unwrap(),
        vec![f16::INFINITY; 2],
        "f16 result overflows as in torch"
    );
    let f = h.sum_dtype(&[0], false, DType::F32).unwrap();
    assert_eq!(f.dtype(), DType::F32);
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![120000.0; 2]);
    let i = on(
        device,
        Tensor::from_vec(vec![1.9f32, 2.9, -1.5], &[3]).unwrap(),
    );
    // torch casts each element to the target dtype before summing: 1 + 2 - 1.
    assert_eq!(
        i.sum_dtype(&[0], false, DType::I64)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![2]
    );
    let n = on(device, Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap());
    assert_eq!(
        n.sum_dtype(&[], false, DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap(),
        vec![6.0]
    );
    assert_eq!(
        n.sum_dtype(&[], false, DType::I32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![6]
    );
}

fn cascade_summation_is_accurate(device: Device) {
    // 2^24 + 3 copies of 0.1f32: a naive f32 loop stalls at 2^21; torch's
    // result is within 1e-5 relative of the exact sum.
    let n = (1usize << 24) + 3;
    let x = on(device, Tensor::from_vec(vec![0.1f32; n], &[n]).unwrap());
    let got = x.sum_all().unwrap().to_vec::<f32>().unwrap()[0] as f64;
    let exact = n as f64 * 0.1f32 as f64;
    assert!(
        ((got - exact) / exact).abs() < 1e-5,
        "got {got}, exact {exact}"
    );
}

/// The property tests' tolerance must tell a pairwise sum from a naive one:
/// on 2^20 same-sign f32 values, a left-to-right f32 loop (computed here)
/// falls outside it and the library's sum, rows and columns, inside.
#[test]
fn tolerance_rejects_a_sequential_sum() {
    let n = 1usize << 20;
    let mut rng = common::Rng(11);
    let values: Vec<f32> = (0..n)
        .map(|_| 0.5 + (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    let exact: f64 = values.iter().map(|&v| v as f64).sum();
    let tol = common::tolerance(exact, exact, n, DType::F32);
    let naive = values.iter().fold(0f32, |acc, &v| acc + v) as f64;
    assert!(
        (naive - exact).abs() > tol,
        "naive error {} within tolerance {tol}",
        (naive - exact).abs()
    );
    // Eight identical columns, so the column sums take the tiled path.
    let columns: Vec<f32> = values.iter().flat_map(|&v| [v; 8]).collect();
    let row = Tensor::from_vec(values, &[1, n]).unwrap().sum(&[1], false);
    let cols = Tensor::from_vec(columns, &[n, 8]).unwrap().sum(&[0], false);
    for (what, sums) in [("row", row), ("columns", cols)] {
        for got in sums.unwrap().to_vec::<f32>().unwrap() {
            let err = (got as f64 - exact).abs();
            assert!(err <= tol, "{what}: error {err} beyond tolerance {tol}");
        }
    }
}

/// The property tests' check takes an infinity where the reference rounds
/// past the output's largest finite value (f16 sums of 66403 are `inf` in
/// torch too), and only there.
#[test]
fn the_check_takes_infinity_only_where_the_cast_overflows() {
    let check = |got: f64, reference: f64| {
        std::panic::catch_unwind(|| {
            common::assert_close(
                &[got],
                &[reference],
                &[reference.abs()],
                8,
                DType::F16,
                "f16",
            )
        })
        .is_ok()
    };
    assert!(check(f64::INFINITY, 66403.4));
    assert!(check(f64::NEG_INFINITY, -66403.4));
    assert!(!check(f64::NEG_INFINITY, 66403.4));
    assert!(!check(f64::INFINITY, 60000.0));
    assert!(check(65504.0, 65510.0));
}

/// The CPU backend's column sums are pairwise too. (On the GPU, column sums
/// follow PyTorch's order, whose error grows with the values per thread.)
#[test]
fn cpu_column_sums_are_accurate() {
    let c = Tensor::from_vec(vec![0.1f32; 4 << 20], &[1 << 20, 4]).unwrap();
    for v in c.sum(&[0], false).unwrap().to_vec::<f32>().unwrap() {
        let e = (1 << 20) as f64 * 0.1f32 as f64;
        assert!(
            ((v as f64 - e) / e).abs() < 1e-5,
            "column got {v}, exact {e}"
        );
    }
}

fn deterministic_across_calls(device: Device) {
    let x = Tensor::randn(&[300, 1000], DType::F32, device, 7).unwrap();
    let x = x.transpose(0, 1).unwrap();
    let a = x.sum(&[1], false).unwrap().to_vec::<f32>().unwrap();
    for _ in 0..3 {
        let b = x.sum(&[1], false).unwrap().to_vec::<f32>().unwrap();
        assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()));
    }
}

fn large_expanded_input(device: Device) {
    // A stride-0 dim of 100k over 7 real values: reduced without materialising.
    let base = on(
        device,
        Tensor::from_vec((1..=7).map(|v| v as f32).collect(), &[1, 7]).unwrap(),
    );
    let x = base.expand(&[100_000, 7]).unwrap();
    assert_eq!(x.strides(), &[0, 1]);
    let s = x.sum(&[0], false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(s, (1..=7).map(|v| v as f32 * 100_000.0).collect::<Vec<_>>());
    assert_eq!(
        x.sum_all().unwrap().to_vec::<f32>().unwrap(),
        vec![2_800_000.0]
    );
}

/// Integer sums: i64 sums wrap modulo 2^64 as torch's do, and every add
/// carries between the 32-bit halves of its accumulator. Full-range i64
/// values, and full-range i32, u8 and bool values summed into i64, on the
/// row, column and whole-tensor paths, against the rows' wrapping sums
/// (the order of integer adds cannot change them).
fn integer_sums_carry_and_wrap(device: Device) {
    fn wrapping(v: impl Iterator<Item = i64>) -> i64 {
        v.fold(0i64, |a, b| a.wrapping_add(b))
    }
    let mut rng = common::Rng(64);
    for (rows, len) in [
        (4096usize, 16usize),
        (1024, 128),
        (8, 4096),
        (3, 5),
        (8192, 2),
    ] {
        let values: Vec<i64> = (0..rows * len).map(|_| rng.next_u64() as i64).collect();
        let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        let bytes: Vec<u8> = values.iter().map(|&v| v as u8).collect();
        let bools: Vec<bool> = values.iter().map(|&v| v < 0).collect();
        let inputs = [
            (
                Tensor::from_vec(values.clone(), &[rows, len]).unwrap(),
                values,
            ),
            (
                Tensor::from_vec(narrow.clone(), &[rows, len]).unwrap(),
                narrow.iter().map(|&v| v as i64).collect(),
            ),
            (
                Tensor::from_vec(bytes.clone(), &[rows, len]).unwrap(),
                bytes.iter().map(|&v| v as i64).collect(),
            ),
            (
                Tensor::from_vec(bools.clone(), &[rows, len]).unwrap(),
                bools.iter().map(|&v| v as i64).collect(),
            ),
        ];
        for (x, exact) in inputs {
            let x = on(device, x);
            let what = format!("{:?} [{rows}, {len}]", x.dtype());
            let row_sums: Vec<i64> = exact
                .chunks(len)
                .map(|r| wrapping(r.iter().copied()))
                .collect();
            let column_sums: Vec<i64> = (0..len)
                .map(|c| wrapping((0..rows).map(|r| exact[r * len + c])))
                .collect();
            assert_eq!(
                x.sum(&[1], false).unwrap().to_vec::<i64>().unwrap(),
                row_sums,
                "{what} over dim 1"
            );
            assert_eq!(
                x.sum(&[0], false).unwrap().to_vec::<i64>().unwrap(),
                column_sums,
                "{what} over dim 0"
            );
            assert_eq!(
                x.sum_all().unwrap().to_vec::<i64>().unwrap(),
                vec![wrapping(exact.iter().copied())],
                "{what} over all dims"
            );
        }
    }
}

/// Sums of bytes at their largest: every u8 is 255 and every bool true,
/// where a narrow partial sum of bytes would overflow first, in rows of
/// 1023, 8193 and 70001 (many of the CPU tree's leaves), of 3, and 600 of
/// 4099 (columns whose leaves the CPU adds in 16-bit sums), as rows, as
/// columns and whole, against the count times the value.
fn byte_sums_at_their_largest(device: Device) {
    for (rows, len) in [
        (3usize, 1023usize),
        (2, 8193),
        (4, 70001),
        (70001, 3),
        (600, 4099),
    ] {
        let n = rows * len;
        let inputs = [
            (
                Tensor::from_vec(vec![255u8; n], &[rows, len]).unwrap(),
                255i64,
            ),
            (Tensor::from_vec(vec![true; n], &[rows, len]).unwrap(), 1),
        ];
        for (x, value) in inputs {
            let x = on(device, x);
            let what = format!("{:?} [{rows}, {len}]", x.dtype());
            assert_eq!(
                x.sum(&[1], false).unwrap().to_vec::<i64>().unwrap(),
                vec![value * len as i64; rows],
                "{what} over dim 1"
            );
            assert_eq!(
                x.sum(&[0], false).unwrap().to_vec::<i64>().unwrap(),
                vec![value * rows as i64; len],
                "{what} over dim 0"
            );
            assert_eq!(
                x.sum_all().unwrap().to_vec::<i64>().unwrap(),
                vec![value * n as i64],
                "{what} over all dims"
            );
        }
    }
}

/// 16-bit results are rounded from the f32 accumulator to nearest, ties to
/// even, as torch rounds them: at exact ties, at the edge of overflow and
/// among the subnormals. Each row's sum (or mean) is exact in f32, so the
/// expected bits are those of the rounding alone, written out here.
fn sixteen_bit_results_round_to_nearest_even(device: Device) {
    /// Each `(row, expected)`: the row's two elements and the bits of
    /// their sum; then the subnormal means, whose bits are the same in
    /// both types: the smallest subnormal 0x0001 halved ties between 0 and
    /// 0x0001, three of it halved between 0x0001 and 0x0002.
    fn check<T: tensor_reduce::Element>(
        device: Device,
        what: &str,
        from_bits: fn(u16) -> T,
        to_bits: fn(T) -> u16,
        sums: &[([u16; 2], u16)],
    ) {
        let rows = |pairs: &[[u16; 2]]| {
            let flat: Vec<T> = pairs.iter().flatten().map(|&b| from_bits(b)).collect();
            on(device, Tensor::from_vec(flat, &[pairs.len(), 2]).unwrap())
        };
        let bits = |result: tensor_reduce::Result<Tensor>| -> Vec<u16> {
            let values = result.unwrap().to_vec::<T>().unwrap();
            values.into_iter().map(to_bits).collect()
        };
        let pairs: Vec<[u16; 2]> = sums.iter().map(|&(pair, _)| pair).collect();
        let expected: Vec<u16> = sums.iter().map(|&(_, e)| e).collect();
        assert_eq!(bits(rows(&pairs).sum(&[1], false)), expected, "{what} sums");
        let means = rows(&[[0x0001, 0x0000], [0x0003, 0x0000]]);
        assert_eq!(
            bits(means.mean(&[1], false)),
            [0x0000, 0x0002],
            "{what} subnormal means"
        );
    }
    // bf16 (1 + 7 bits): 1 = 0x3f80, 2^-8 = 0x3b80 (half an ulp of 1),
    // 3 * 2^-9 = 0x3bc0, the largest finite 0x7f7f and half its ulp 2^119 =
    // 0x7b00.
    check(
        device,
        "bf16",
        bf16::from_bits,
        bf16::to_bits,
        &[
            ([0x3f80, 0x3b80], 0x3f80), // 1 + half an ulp: the tie goes to 1 (even)
            ([0x3f81, 0x3b80], 0x3f82), // odd + half an ulp: up
            ([0x3f80, 0x3bc0], 0x3f81), // past the tie: up
            ([0xbf80, 0xbb80], 0xbf80), // -1 - half an ulp: -1
            ([0x7f7f, 0x7b00], 0x7f80), // the largest + half an ulp: the tie overflows
        ],
    );
    // f16 (1 + 10 bits), the same cases: 1 = 0x3c00, 2^-11 = 0x1000,
    // 3 * 2^-12 = 0x1200, the largest finite 0x7bff and half its ulp 2^4 =
    // 0x4c00.
    check(
        device,
        "f16",
        f16::from_bits,
        f16::to_bits,
        &[
            ([0x3c00, 0x1000], 0x3c00),
            ([0x3c01, 0x1000], 0x3c02),
            ([0x3c00, 0x1200], 0x3c01),
            ([0xbc00, 0x9000], 0xbc00),
            ([0x7bff, 0x4c00], 0x7c00),
        ],
    );
}

/// Results of 32 MiB and more, which the CPU writes with streaming stores
/// in stages that start on cache lines: rows of 1, 2 and 3 (rows of 3 put
/// the parallel blocks' starts off a line) and columns of 2, in f32, f64
/// and i64, against the rows' sums taken here (small integers, exact in
/// every dtype).
fn results_larger_than_the_caches(device: Device) {
    // An f32 result just over 32 MiB; the wider ones twice or more that.
    let outputs = (32 << 20) / 4 + 5;
    for dtype in [DType::F32, DType::F64, DType::I64] {
        for (width, dim) in [(1, 1), (2, 1), (3, 1), (2, 0)] {
            // (output, reduced) strides of the contiguous input.
            let (shape, strides) = if dim == 1 {
                ([outputs, width], (width, 1))
            } else {
                ([width, outputs], (1, outputs))
            };
            let values: Vec<f64> = (0..outputs * width)
                .map(|i| (i % 1001) as f64 - 500.0)
                .collect();
            let x = on(device, common::tensor_of(dtype, &values, &shape));
            let s = x.sum(&[dim], false).unwrap();
            let want: Vec<f64> = (0..outputs)
                .map(|o| {
                    (0..width)
                        .map(|k| values[o * strides.0 + k * strides.1])
                        .sum()
                })
                .collect();
            assert!(
                common::to_f64(&s) == want,
                "{dtype} {shape:?} over dim {dim}"
            );
        }
    }
}

backend_tests! {
    zero_d_tensors => zero_d;
    empty_dims => empty_dims_sum_to_zero;
    nan_and_inf => nan_and_inf_propagate;
    keepdim_and_negative => keepdim_and_negative_dims;
    result_dtypes => dtypes_follow_torch;
    sum_dtype => sum_dtype_casts_first;
    cascade_accuracy => cascade_summation_is_accurate;
    determinism => deterministic_across_calls;
    expanded_input => large_expanded_input;
    integer_carry_and_wrap => integer_sums_carry_and_wrap;
    bytes_at_their_largest => byte_sums_at_their_largest;
    sixteen_bit_rounding => sixteen_bit_results_round_to_nearest_even;
    large_results => results_larger_than_the_caches;
}

#[test]
fn cpu_result_does_not_depend_on_thread_count() {
    let x = Tensor::randn(&[64, 300_000], DType::F32, Device::Cpu, 11).unwrap();
    // Few columns: more threads narrow the column tiles.
    let y = Tensor::randn(&[300, 20_000], DType::F32, Device::Cpu, 12).unwrap();
    let views = [x.clone(), x.transpose(0, 1).unwrap(), y];
    for v in &views {
        for dims in [&[0][..], &[1], &[]] {
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
                .install(|| v.sum(dims, false).unwrap());
            let many = rayon::ThreadPoolBuilder::new()
                .num_threads(7)
                .build()
                .unwrap()
                .install(|| v.sum(dims, false).unwrap());
            let (a, b) = (one.to_vec::<f32>().unwrap(), many.to_vec::<f32>().unwrap());
            assert!(
                a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
                "dims {dims:?}"
            );
        }
    }
}
