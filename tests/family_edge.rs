//! The value reductions' semantics at the edges, as torch 2.11 gives them:
//! NaN, ±Inf, negative zero, empty inputs, dtype rules, casts and bad input.
//! Expected values are torch's, worked out by hand. One body per backend.

mod common;

use tensor_reduce::{bf16, f16, DType, Device, Error, Tensor};

fn t32(v: &[f32], shape: &[usize], device: Device) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .to_device(device)
        .unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn nan_and_inf(device: Device) {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let x = t32(&[1.0, nan, 3.0, -inf, 2.0, 5.0], &[2, 3], device);
    let amax = f32s(&x.amax(&[1], false).unwrap());
    assert!(amax[0].is_nan() && amax[1] == 5.0, "{amax:?}");
    let amin = f32s(&x.amin(&[1], false).unwrap());
    assert!(amin[0].is_nan() && amin[1] == -inf, "{amin:?}");
    assert_eq!(f32s(&x.nansum(&[1], false).unwrap()), vec![4.0, -inf]);
    let mean = f32s(&x.mean(&[1], false).unwrap());
    assert!(mean[0].is_nan() && mean[1] == -inf, "{mean:?}");
    // NaN is not zero: true for any and all.
    let y = t32(&[0.0, nan, 0.0, 0.0], &[2, 2], device);
    assert_eq!(
        y.any(&[1], false).unwrap().to_vec::<bool>().unwrap(),
        [true, false]
    );
    assert_eq!(
        y.all(&[0], false).unwrap().to_vec::<bool>().unwrap(),
        [false, false]
    );
    // inf - inf and 0 * inf are NaN.
    let z = t32(&[inf, -inf, 0.0, inf], &[2, 2], device);
    let s = f32s(&z.sum(&[1], false).unwrap());
    assert!(s[0].is_nan() && s[1] == inf, "{s:?}");
    let p = f32s(&z.prod(&[1], false).unwrap());
    assert!(p[0] == -inf && p[1].is_nan(), "{p:?}");
    // nansum skips NaN elements, not the NaN that inf - inf makes.
    let w = t32(&[inf, nan, -inf, 1.0, nan, inf], &[2, 3], device);
    let ns = f32s(&w.nansum(&[1], false).unwrap());
    assert!(ns[0].is_nan() && ns[1] == inf, "{ns:?}");
    assert!(f32s(&z.mean(&[], false).unwrap())[0].is_nan());
}

fn empty_inputs(device: Device) {
    let e = Tensor::zeros(&[0, 3], DType::F32, device).unwrap();
    assert_eq!(f32s(&e.sum(&[0], false).unwrap()), vec![0.0; 3]);
    assert_eq!(f32s(&e.nansum(&[0], false).unwrap()), vec![0.0; 3]);
    assert_eq!(f32s(&e.prod(&[0], false).unwrap()), vec![1.0; 3]);
    assert!(f32s(&e.mean(&[0], false).unwrap())
        .iter()
        .all(|m| m.is_nan()));
    assert_eq!(
        e.any(&[0], false).unwrap().to_vec::<bool>().unwrap(),
        [false; 3]
    );
    assert_eq!(
        e.all(&[0], false).unwrap().to_vec::<bool>().unwrap(),
        [true; 3]
    );
    // Reducing the non-empty dim of an empty tensor is fine: the result is empty.
    assert_eq!(e.amax(&[1], false).unwrap().shape(), &[0]);
    assert_eq!(e.amin(&[1], true).unwrap().shape(), &[0, 1]);
    // ... but max has no identity for an empty reduced dim.
    match e.amax(&[0], false) {
        Err(Error::EmptyReduction { op, message }) => {
            assert_eq!(op, "amax");
            assert_eq!(
                message,
                "amax(): Expected reduction dim 0 to have non-zero size."
            );
        }
        other => panic!("expected EmptyReduction, got {other:?}"),
    }
    let err = e.amin(&[], false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "amin(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
    );
    // Integer empty products and sums widen as torch's.
    let ei = Tensor::zeros(&[2, 0], DType::I32, device).unwrap();
    assert_eq!(
        ei.prod(&[1], false).unwrap().to_vec::<i64>().unwrap(),
        [1, 1]
    );
}

fn dtype_rules(device: Device) {
    let i = Tensor::from_vec(vec![3i32, -4, 5, 6], &[2, 2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(
        i.prod(&[1], false).unwrap().to_vec::<i64>().unwrap(),
        [-12, 30]
    );
    assert_eq!(
        i.amax(&[0], false).unwrap().to_vec::<i32>().unwrap(),
        [5, 6]
    );
    assert_eq!(i.amin(&[], false).unwrap().to_vec::<i32>().unwrap(), [-4]);
    assert_eq!(
        i.nansum(&[0], false).unwrap().to_vec::<i64>().unwrap(),
        [8, 2]
    );
    match i.mean(&[0], false) {
        Err(e @ Error::UnsupportedDType { .. }) => assert_eq!(
            e.to_string(),
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int"
        ),
        other => panic!("expected UnsupportedDType, got {other:?}"),
    }
    // mean(dtype=) casts integers to the floating dtype first.
    let m = i.mean_dtype(&[1], false, DType::F64).unwrap();
    assert_eq!(m.to_vec::<f64>().unwrap(), [-0.5, 5.5]);
    assert!(i.mean_dtype(&[1], false, DType::I64).is_err());
    // any/all give bool, except uint8 stays uint8.
    let u = Tensor::from_vec(vec![0u8, 7, 0, 0], &[2, 2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(u.any(&[1], false).unwrap().to_vec::<u8>().unwrap(), [1, 0]);
    assert_eq!(u.all(&[0], false).unwrap().to_vec::<u8>().unwrap(), [0, 0]);
    assert_eq!(i.all(&[], false).unwrap().dtype(), DType::Bool);
    // 16-bit floats accumulate in f32: 4096 halves of 1 sum to 4096, not 2048.
    let h = Tensor::from_vec(vec![f16::ONE; 4096], &[4096])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(
        h.mean(&[0], false).unwrap().to_vec::<f16>().unwrap(),
        [f16::ONE]
    );
    let b = Tensor::from_vec(vec![bf16::from_f32(-2.5), bf16::from_f32(7.0)], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(
        b.amax(&[0], false).unwrap().to_vec::<bf16>().unwrap(),
        [bf16::from_f32(7.0)]
    );
    assert_eq!(
        b.prod(&[0], false).unwrap().to_vec::<bf16>().unwrap(),
        [bf16::from_f32(-17.5)]
    );
    // Integer products wrap as int64 does.
    let big = Tensor::from_vec(vec![1i64 << 62, 4], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(big.prod(&[0], false).unwrap().to_vec::<i64>().unwrap(), [0]);
}

fn dtype_casts_come_first(device: Device) {
    // Each element becomes +-inf in f16 first: inf + -inf is NaN.
    let x = t32(&[70000.0, -70000.0], &[2], device);
    let s = x
        .sum_dtype(&[0], false, DType::F16)
        .unwrap()
        .to_vec::<f16>()
        .unwrap();
    assert!(s[0].is_nan(), "{s:?}");
    // 1.0004 rounds to 1.0 in f16 before a thousand of them are added.
    let y = t32(&[1.0004; 1000], &[1000], device);
    let s = y
        .sum_dtype(&[0], false, DType::F16)
        .unwrap()
        .to_vec::<f16>()
        .unwrap();
    assert_eq!(s, [f16::from_f32(1000.0)]);
    // In bf16, 1.0004 is 1.0 too (8 significant bits).
    let s = y
        .sum_dtype(&[0], false, DType::BF16)
        .unwrap()
        .to_vec::<bf16>()
        .unwrap();
    assert_eq!(s, [bf16::from_f32(1000.0)]);
    // Every non-zero value is true as a bool, and true + true stays true.
    for v in [vec![0.5f32], vec![1.0, -1.0]] {
        let n = v.len();
        let b = t32(&v, &[n], device)
            .sum_dtype(&[0], false, DType::Bool)
            .unwrap();
        assert_eq!(b.to_vec::<bool>().unwrap(), [true], "{v:?}");
    }
    let l = Tensor::from_vec(vec![1i64, -1], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(
        l.sum_dtype(&[0], false, DType::Bool)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        [true]
    );
    // Narrowing integers wrap first: 2^32 + 1 is 1 as an i32.
    let w = Tensor::from_vec(vec![(1i64 << 32) + 1, 2], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(
        w.sum_dtype(&[0], false, DType::I32)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        [3]
    );
    // prod(dtype=) casts first as well: 0.5 truncates to 0 as an integer.
    let p = t32(&[0.5, 4.0], &[2], device)
        .prod_dtype(&[0], false, DType::I64)
        .unwrap();
    assert_eq!(p.to_vec::<i64>().unwrap(), [0]);
}

fn negative_zero_sums_to_positive_zero(device: Device) {
    // The accumulator starts at +0.0, so -0.0 + (+0.0) = +0.0, whatever the
    // path: a full sum, a size-1 reduced dim, a mean.
    let x = t32(&[-0.0, -0.0], &[2, 1], device);
    for s in [
        x.sum_all().unwrap(),
        x.sum(&[1], false).unwrap(),
        x.nansum(&[1], false).unwrap(),
        x.mean(&[1], false).unwrap(),
    ] {
        for v in f32s(&s) {
            assert!(v == 0.0 && v.is_sign_positive(), "{v:?}");
        }
    }
    // max keeps the element itself.
    let m = f32s(&x.amax(&[1], false).unwrap());
    assert!(m.iter().all(|v| *v == 0.0 && v.is_sign_negative()), "{m:?}");
}

fn bad_input_is_a_typed_error(device: Device) {
    let x = t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device);
    assert!(matches!(
        x.amax(&[2], false),
        Err(Error::DimOutOfRange { .. })
    ));
    assert!(matches!(
        x.prod(&[0, -2], false),
        Err(Error::RepeatedDim { .. })
    ));
    assert!(matches!(
        x.all(&[-3], false),
        Err(Error::DimOutOfRange { .. })
    ));
    assert!(matches!(
        x.mean_dtype(&[0], false, DType::Bool),
        Err(Error::UnsupportedDType { .. })
    ));
}

fn zero_dim_and_keepdim(device: Device) {
    let s = Tensor::from_vec(vec![-3.5f32], &[])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(f32s(&s.amax(&[], false).unwrap()), [-3.5]);
    assert_eq!(f32s(&s.prod(&[0], true).unwrap()), [-3.5]);
    assert_eq!(s.any(&[-1], false).unwrap().shape(), &[] as &[usize]);
    let x = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 2, 3], device);
    let m = x.mean(&[0, 2], true).unwrap();
    assert_eq!((m.shape(), f32s(&m)), (&[1usize, 2, 1][..], vec![2.0, 5.0]));
}

/// torch 2.11 gives |x| for a norm of one element per output, whatever the
/// order but 0, on its CPU and CUDA alike (checked on both).
fn one_element_norms_are_absolute_values(device: Device) {
    let x = t32(&[3.9e29, -2.0, 1e-30], &[3, 1], device);
    for p in [3.0, 2.0, 0.5, -1.0, 1.0, f64::INFINITY, f64::NEG_INFINITY] {
        let n = f32s(&x.norm(p, &[1], false).unwrap());
        assert_eq!(n, vec![3.9e29, 2.0, 1e-30], "p = {p}");
    }
    // p = 0 still counts the non-zero elements.
    assert_eq!(f32s(&x.norm(0.0, &[1], false).unwrap()), vec![1.0; 3]);
    // Every dim of a one-element tensor.
    let one = t32(&[-3.9e29], &[1, 1], device);
    assert_eq!(f32s(&one.norm(3.0, &[], false).unwrap()), vec![3.9e29]);
    // Two elements are a real reduction: the cube overflows f32, in torch too.
    let two = t32(&[3.9e29, 1.0], &[2], device);
    assert_eq!(
        f32s(&two.norm(3.0, &[], false).unwrap()),
        vec![f32::INFINITY]
    );
}

/// `mean(dtype=float16)` of [70000., -70000.]: torch 2.11's CPU sums in
/// float32 and rounds the mean (0); its CUDA casts each element to float16
/// first (inf + -inf is NaN). Each backend follows its own; `sum(dtype=)`
/// casts first on both (`dtype_casts_come_first`) but for the CPU's layout
/// rule (`sum_to_16_bits_follows_each_devices_layout_rule`).
fn mean_to_16_bits_follows_each_device(device: Device) {
    let x = t32(&[70000.0, -70000.0], &[2], device);
    let m = x
        .mean_dtype(&[0], false, DType::F16)
        .unwrap()
        .to_vec::<f16>()
        .unwrap();
    match device {
        Device::Cpu => assert_eq!(m, [f16::ZERO]),
        Device::Cuda(_) => assert!(m[0].is_nan(), "{m:?}"),
    }
}

/// `sum(dtype=float16)` where the two fastest reduced dims do not merge:
/// torch 2.11's CPU sums the elements cast to float32 and rounds the sum,
/// its CUDA casts each to float16 first. The values, from torch 2.11 on the
/// CPU: `[1e5, -1e5 + 3, 0.25, 0.25]` repeated as `[3, 9, 1, 4]`,
/// transposed (1, 3), summed over dims (1, 3): 10.5 in each of the nine
/// results; the same tensor made contiguous: NaN (its reduced dims merge,
/// so each element is cast first, and inf + -inf is NaN). And `2^62, -2^62`
/// as int64 the same way: 0 (int64 to float32, then summed).
fn sum_to_16_bits_follows_each_devices_layout_rule(device: Device) {
    let pattern = [1e5f32, -1e5 + 3.0, 0.25, 0.25];
    let values: Vec<f32> = pattern.iter().copied().cycle().take(108).collect();
    let x = t32(&values, &[3, 9, 1, 4], device)
        .transpose(1, -4)
        .unwrap();
    let sum = |t: &Tensor, dtype| {
        let s = t.sum_dtype(&[1, 3], false, dtype).unwrap();
        s.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
    };
    let permuted = sum(&x, DType::F16);
    let contiguous = sum(&x.contiguous().unwrap(), DType::F16);
    assert!(contiguous.iter().all(|v| v.is_nan()), "{contiguous:?}");
    let big: Vec<i64> = [1i64 << 62, -(1i64 << 62)]
        .iter()
        .copied()
        .cycle()
        .take(108)
        .collect();
    let ints = Tensor::from_vec(big, &[3, 9, 1, 4])
        .unwrap()
        .to_device(device)
        .unwrap()
        .transpose(1, -4)
        .unwrap();
    let int_sums = sum(&ints, DType::F16);
    match device {
        Device::Cpu => {
            assert_eq!(permuted, vec![10.5; 9]);
            assert_eq!(int_sums, vec![0.0; 9]);
        }
        Device::Cuda(_) => {
            assert!(permuted.iter().all(|v| v.is_nan()), "{permuted:?}");
            assert!(int_sums.iter().all(|v| v.is_nan()), "{int_sums:?}");
        }
    }
}

/// `nansum(dtype=)`, values from torch 2.11's CPU: each element is cast
/// first (f32 `[70000, NaN, -70000]` in float16 is NaN: inf + -inf, on
/// every layout), NaN counts as 0 after the cast, an integer input's is its
/// sum, and a floating input into an integer dtype is refused unless it is
/// empty.
fn nansum_dtype_casts_first(device: Device) {
    let x = t32(&[1.5, f32::NAN, 2.0], &[3], device);
    let half = x.nansum_dtype(&[], false, DType::F16).unwrap();
    assert_eq!(half.to_vec::<f16>().unwrap(), [f16::from_f32(3.5)]);
    let wide = x.nansum_dtype(&[0], true, DType::F64).unwrap();
    assert_eq!(
        (wide.to_vec::<f64>().unwrap(), wide.shape()),
        (vec![3.5], &[1][..])
    );
    let apart = t32(&[70000.0, f32::NAN, -70000.0, 1.0], &[4], device);
    let s = apart.nansum_dtype(&[0], false, DType::F16).unwrap();
    assert!(s.to_vec::<f16>().unwrap()[0].is_nan());
    let values: Vec<f32> = [70000.0, f32::NAN, -70000.0, 1.0]
        .into_iter()
        .cycle()
        .take(108)
        .collect();
    let permuted = t32(&values, &[3, 9, 1, 4], device)
        .transpose(1, -4)
        .unwrap();
    let s = permuted.nansum_dtype(&[1, 3], false, DType::F16).unwrap();
    assert!(s.to_vec::<f16>().unwrap().iter().all(|v| v.is_nan()));
    match x.nansum_dtype(&[], false, DType::I64) {
        Err(Error::UnsupportedDType {
            dtype: DType::I64, ..
        }) => {}
        other => panic!("expected UnsupportedDType, got {other:?}"),
    }
    // torch refuses only when it would reduce: an empty input gets its 0.
    let empty = Tensor::zeros(&[2, 0], DType::F32, device).unwrap();
    let s = empty.nansum_dtype(&[1], false, DType::I64).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), [0, 0]);
    let ints = Tensor::from_vec(vec![1i64, 2, 3], &[3])
        .unwrap()
        .to_device(device)
        .unwrap();
    let s = ints.nansum_dtype(&[], false, DType::I32).unwrap();
    assert_eq!(s.to_vec::<i32>().unwrap(), [6]);
    let s = ints.nansum_dtype(&[], false, DType::F16).unwrap();
    assert_eq!(s.to_vec::<f16>().unwrap(), [f16::from_f32(6.0)]);
}

backend_tests! {
    nansum_dtype_casts_first => nansum_dtype_casts_first;
    sum_to_16_bits_follows_each_devices_layout_rule => sum_to_16_bits_follows_each_devices_layout_rule;
    one_element_norms_are_absolute_values => one_element_norms_are_absolute_values;
    mean_to_16_bits_follows_each_device => mean_to_16_bits_follows_each_device;
    nan_and_inf_follow_torch => nan_and_inf;
    empty_inputs_follow_torch => empty_inputs;
    result_dtypes_follow_torch => dtype_rules;
    dtype_casts_come_first => dtype_casts_come_first;
    negative_zero_sums_to_positive_zero => negative_zero_sums_to_positive_zero;
    bad_input_is_a_typed_error => bad_input_is_a_typed_error;
    zero_dim_and_keepdim => zero_dim_and_keepdim;
}

/// The CPU's results are the same bits on one thread and on seven, for
/// the ops with folds of their own (logsumexp's blocks down columns and
/// along runs, Welford's lanes, the norms): more threads narrow the
/// column tiles, so a column lands elsewhere in its tile and in its
/// tile's chunks.
#[test]
fn cpu_results_do_not_depend_on_thread_count() {
    let x = Tensor::randn(&[300, 51_003], DType::F32, Device::Cpu, 21).unwrap();
    let h = Tensor::randn(&[1000, 1003], DType::F16, Device::Cpu, 22).unwrap();
    let views = [x.clone(), x.transpose(0, 1).unwrap(), h];
    type Op = fn(&Tensor, &[isize]) -> Tensor;
    let ops: [(&str, Op); 3] = [
        ("logsumexp", |t, d| t.logsumexp(d, false).unwrap()),
        ("var", |t, d| t.var(d, 1.0, false).unwrap()),
        ("norm", |t, d| t.norm(2.0, d, false).unwrap()),
    ];
    let on = |threads: usize, f: &(dyn Fn() -> Tensor + Sync)| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
            .to_dtype(DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
    };
    for v in &views {
        for dims in [&[0][..], &[1]] {
            for (name, op) in ops {
                let (a, b) = (on(1, &|| op(v, dims)), on(7, &|| op(v, dims)));
                assert!(
                    a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{name} over {dims:?} of {:?}",
                    v.shape()
                );
            }
        }
    }
}
