//! The index reductions', Welford's, the norms' and logsumexp's semantics at
//! the edges, as torch 2.11 gives them: NaN, ties, ±Inf, logical indices of
//! strided views, empty inputs, degrees of freedom, dtype rules and bad
//! input. Expected values are torch's, worked out by hand (and checked
//! against torch on the GPU machine). One body per backend.

mod common;

use tensor_reduce::{f16, DType, Device, Error, Tensor};

fn t32(v: &[f32], shape: &[usize], device: Device) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .to_device(device)
        .unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn i64s(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

const NAN: f32 = f32::NAN;
const INF: f32 = f32::INFINITY;

fn nan_and_ties(device: Device) {
    let x = t32(
        &[
            1.0, 5.0, 5.0, 3.0, NAN, 0.0, NAN, 7.0, -1.0, -1.0, 2.0, -1.0,
        ],
        &[3, 4],
        device,
    );
    let (v, i) = x.max_dim(1, false).unwrap();
    let v = f32s(&v);
    assert!(v[0] == 5.0 && v[1].is_nan() && v[2] == 2.0, "{v:?}");
    assert_eq!(i64s(&i), [1, 0, 2]);
    let (v, i) = x.min_dim(1, true).unwrap();
    assert_eq!(v.shape(), &[3, 1]);
    let v = f32s(&v);
    assert!(v[0] == 1.0 && v[1].is_nan() && v[2] == -1.0, "{v:?}");
    assert_eq!(i64s(&i), [0, 0, 0]);
    assert_eq!(i64s(&x.argmax(Some(1), false).unwrap()), [1, 0, 2]);
    assert_eq!(i64s(&x.argmin(Some(-1), false).unwrap()), [0, 0, 0]);
    // Down the columns: ties keep the first row, NaN wins for both.
    assert_eq!(i64s(&x.argmax(Some(0), false).unwrap()), [1, 0, 1, 1]);
    assert_eq!(i64s(&x.argmin(Some(0), false).unwrap()), [1, 2, 1, 2]);
    // Flattened: the first NaN.
    assert_eq!(i64s(&x.argmax(None, false).unwrap()), [4]);
    assert_eq!(i64s(&x.argmin(None, false).unwrap()), [4]);
    let (lo, hi) = x.aminmax(&[1], false).unwrap();
    let (lo, hi) = (f32s(&lo), f32s(&hi));
    assert!(lo[1].is_nan() && hi[1].is_nan(), "{lo:?} {hi:?}");
    assert_eq!((lo[0], hi[0], lo[2], hi[2]), (1.0, 5.0, -1.0, 2.0));
    // ±inf are ordinary extremes.
    let y = t32(&[-INF, 3.0, INF, INF], &[4], device);
    assert_eq!(i64s(&y.argmax(None, false).unwrap()), [2]);
    assert_eq!(i64s(&y.argmin(None, false).unwrap()), [0]);
    // Every element the identity's value still gives index 0.
    let z = t32(&[-INF, -INF], &[2], device);
    assert_eq!(i64s(&z.argmax(None, false).unwrap()), [0]);
}

fn indices_are_logical(device: Device) {
    // 0..24 as [2, 3, 4]; the largest is last in memory.
    let v: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let x = t32(&v, &[2, 3, 4], device);
    // Permuted to [4, 3, 2]: flat row-major index of element (3, 2, 1) is
    // 3·6 + 2·2 + 1 = 23.
    let p = x.permute(&[2, 1, 0]).unwrap();
    assert_eq!(i64s(&p.argmax(None, false).unwrap()), [23]);
    assert_eq!(i64s(&p.argmin(None, true).unwrap()), [0]);
    assert_eq!(p.argmin(None, true).unwrap().shape(), &[1, 1, 1]);
    // Along dim 0 of the permuted view (memory stride 1): the position in
    // that dim, not in memory.
    assert_eq!(
        i64s(&p.argmax(Some(0), false).unwrap()),
        vec![3; 6],
        "permuted"
    );
    // Stepped: every other element of a row, from element 1.
    let s = x.slice(2, 1, 4, 2).unwrap(); // [2, 3, 2]: columns 1 and 3
    let (vals, idx) = s.max_dim(2, false).unwrap();
    assert_eq!(i64s(&idx), vec![1; 6]);
    assert_eq!(f32s(&vals), [3.0, 7.0, 11.0, 15.0, 19.0, 23.0]);
    // Reversed order of values within a stepped, offset dim.
    let r = t32(&[9.0, 0.0, 8.0, 0.0, 7.0, 0.0, 9.0], &[7], device)
        .slice(0, 2, 7, 2)
        .unwrap(); // [8, 7, 9]
    assert_eq!(i64s(&r.argmax(Some(0), false).unwrap()), [2]);
    // Broadcast: every index of an expanded dim holds the same value, so
    // the first wins.
    let b = t32(&[1.0, 4.0, 2.0], &[3, 1], device)
        .expand(&[3, 5])
        .unwrap();
    assert_eq!(i64s(&b.argmax(Some(1), false).unwrap()), [0, 0, 0]);
    assert_eq!(i64s(&b.argmax(None, false).unwrap()), [5]);
    assert_eq!(i64s(&b.argmin(Some(0), false).unwrap()), vec![0; 5]);
}

fn index_dtypes(device: Device) {
    // f16 compared as f32; values keep their dtype.
    let h = Tensor::from_vec(
        [0.5f32, 2.0, -1.0, 2.0]
            .iter()
            .map(|&v| f16::from_f32(v))
            .collect(),
        &[4],
    )
    .unwrap()
    .to_device(device)
    .unwrap();
    let (v, i) = h.max_dim(0, false).unwrap();
    assert_eq!((v.dtype(), i.dtype()), (DType::F16, DType::I64));
    assert_eq!(
        (v.to_vec::<f16>().unwrap()[0].to_f32(), i64s(&i)[0]),
        (2.0, 1)
    );
    let u = Tensor::from_vec(vec![3u8, 250, 250, 0], &[2, 2])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(i64s(&u.argmax(Some(1), false).unwrap()), [1, 0]);
    assert_eq!(i64s(&u.argmin(Some(0), false).unwrap()), [0, 1]);
    let (lo, hi) = u.aminmax(&[], false).unwrap();
    assert_eq!(
        (lo.to_vec::<u8>().unwrap(), hi.to_vec::<u8>().unwrap()),
        (vec![0], vec![250])
    );
    let b = Tensor::from_vec(vec![false, true, true], &[3])
        .unwrap()
        .to_device(device)
        .unwrap();
    let (v, i) = b.max_dim(0, false).unwrap();
    assert_eq!(
        (v.to_vec::<bool>().unwrap(), i64s(&i)),
        (vec![true], vec![1])
    );
    match b.argmax(None, false) {
        Err(Error::UnsupportedDType { op, .. }) => assert_eq!(op, "argmax"),
        other => panic!("argmax of bool: {other:?}"),
    }
    let l = Tensor::from_vec(vec![i64::MIN, i64::MAX, i64::MAX], &[3])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(i64s(&l.argmax(None, false).unwrap()), [1]);
    assert_eq!(i64s(&l.argmin(None, false).unwrap()), [0]);
}

/// Equal within a few f32 ulps: Welford's divisions round differently with
/// the order its partial states meet in.
fn near(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 4.0 * f32::EPSILON * w.abs(),
            "{got:?} vs {want:?}"
        );
    }
}

fn welford(device: Device) {
    let x = t32(&[1.0, 2.0, 3.0, 4.0, 2.0, 2.0, 2.0, 2.0], &[2, 4], device);
    near(&f32s(&x.var(&[1], 1.0, false).unwrap()), &[5.0 / 3.0, 0.0]);
    near(&f32s(&x.var(&[1], 0.0, false).unwrap()), &[1.25, 0.0]);
    let (s, m) = x.std_mean(&[1], 0.0, true).unwrap();
    assert_eq!((s.shape(), m.shape()), (&[2usize, 1][..], &[2usize, 1][..]));
    near(&f32s(&s), &[1.25f32.sqrt(), 0.0]);
    near(&f32s(&m), &[2.5, 2.0]);
    let (v, m) = x.var_mean(&[], 1.0, false).unwrap();
    assert_eq!(v.shape(), &[] as &[usize]);
    near(&f32s(&m), &[2.25]);
    // Σ(x - 2.25)² = 5.5, over 7.
    near(&f32s(&v), &[5.5 / 7.0]);
    // No degrees of freedom left: m2 / 0.
    let dof0 = f32s(&x.var(&[1], 4.0, false).unwrap());
    assert!(dof0[0] == INF && dof0[1].is_nan(), "{dof0:?}");
    assert_eq!(f32s(&x.var(&[1], 5.0, false).unwrap())[0], INF);
    // One element, correction 1: 0 / 0.
    let one = t32(&[3.0], &[1], device);
    assert!(f32s(&one.var(&[], 1.0, false).unwrap())[0].is_nan());
    assert!(f32s(&one.std(&[0], 1.0, false).unwrap())[0].is_nan());
    assert_eq!(f32s(&one.var(&[], 0.0, false).unwrap()), [0.0]);
    // NaN propagates to both outputs.
    let n = t32(&[1.0, NAN, 3.0], &[3], device);
    let (v, m) = n.var_mean(&[], 1.0, false).unwrap();
    assert!(f32s(&v)[0].is_nan() && f32s(&m)[0].is_nan());
    // Empty: NaN for both.
    let e = Tensor::zeros(&[0, 2], DType::F64, device).unwrap();
    let (v, m) = e.var_mean(&[0], 1.0, false).unwrap();
    assert!(v.to_vec::<f64>().unwrap().iter().all(|v| v.is_nan()));
    assert!(m.to_vec::<f64>().unwrap().iter().all(|v| v.is_nan()));
    assert_eq!(e.std(&[1], 1.0, false).unwrap().shape(), &[0]);
    // f16 computes in f32 and keeps its dtype.
    let h = x.to_dtype(DType::F16).unwrap();
    assert_eq!(h.var(&[1], 1.0, false).unwrap().dtype(), DType::F16);
}

/// var of 10^7 values 10^4 + N(0, 1) in f32: Welford keeps ~1e-4 relative
/// accuracy where a one-pass sum of squares in f32 loses every digit
/// (E[x²] ≈ 1e8, so its rounding alone is ~6 per term against a variance
/// of 1).
fn var_is_stable(device: Device) {
    let n = 10_000_000;
    let noise = Tensor::randn(&[n], DType::F32, Device::Cpu, 77)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let values: Vec<f32> = noise.iter().map(|&z| 1e4f32 + z).collect();
    let two_pass = |v: &[f32]| {
        let mean = v.iter().map(|&v| v as f64).sum::<f64>() / v.len() as f64;
        let m2: f64 = v.iter().map(|&v| (v as f64 - mean).powi(2)).sum();
        m2 / (v.len() - 1) as f64
    };
    let want = two_pass(&values);
    let row_want: Vec<f64> = values.chunks(n / 10).map(two_pass).collect();
    let x = Tensor::from_vec(values, &[n])
        .unwrap()
        .to_device(device)
        .unwrap();
    let got = f32s(&x.var(&[], 1.0, false).unwrap())[0] as f64;
    let rel = (got - want).abs() / want;
    assert!(
        rel < 1e-4,
        "var {got}, f64 reference {want}: relative error {rel}"
    );
    // Rows too (one CTA per row on the GPU, one tree per row on the CPU).
    let rows = x.reshape(&[10, n / 10]).unwrap();
    for (i, (v, w)) in f32s(&rows.var(&[1], 1.0, false).unwrap())
        .iter()
        .zip(&row_want)
        .enumerate()
    {
        let rel = (*v as f64 - w).abs() / w;
        assert!(
            rel < 1e-4,
            "row {i}: var {v}, f64 reference {w}: relative error {rel}"
        );
    }
}

fn norms(device: Device) {
    let x = t32(&[3.0, -4.0, 0.0, 1.0, -1.0, 0.0], &[2, 3], device);
    assert_eq!(f32s(&x.norm(2.0, &[1], false).unwrap()), [5.0, 2f32.sqrt()]);
    assert_eq!(f32s(&x.norm(1.0, &[1], false).unwrap()), [7.0, 2.0]);
    assert_eq!(f32s(&x.norm(0.0, &[], false).unwrap()), [4.0]);
    assert_eq!(
        f32s(&x.norm(f64::INFINITY, &[0], false).unwrap()),
        [3.0, 4.0, 0.0]
    );
    assert_eq!(
        f32s(&x.norm(f64::NEG_INFINITY, &[1], false).unwrap()),
        [0.0, 0.0]
    );
    let p3 = f32s(&x.norm(3.0, &[1], false).unwrap())[0];
    assert!((p3 - 91f32.cbrt()).abs() < 1e-5, "{p3}");
    // A negative order over a zero: |0|^-1 = inf, inf^-1 = 0.
    assert_eq!(f32s(&x.norm(-1.0, &[1], false).unwrap()), [0.0, 0.0]);
    let y = t32(&[NAN, 1.0, 0.0, -INF], &[4], device);
    for p in [0.0, 1.0, 2.0, 3.0, f64::INFINITY, f64::NEG_INFINITY] {
        let r = f32s(&y.norm(p, &[], false).unwrap())[0];
        // NaN is not zero, so p = 0 counts it.
        if p == 0.0 {
            assert_eq!(r, 3.0);
        } else {
            assert!(r.is_nan(), "p = {p}: {r}");
        }
    }
    let z = t32(&[-INF, 2.0], &[2], device);
    assert_eq!(f32s(&z.norm(2.0, &[], false).unwrap()), [INF]);
    assert_eq!(f32s(&z.norm(f64::NEG_INFINITY, &[], false).unwrap()), [2.0]);
    // Empty: 0 where the norm is a sum, an error where it has no identity.
    let e = Tensor::zeros(&[0, 3], DType::F32, device).unwrap();
    assert_eq!(f32s(&e.norm(2.0, &[0], false).unwrap()), [0.0; 3]);
    assert_eq!(f32s(&e.norm(0.0, &[], false).unwrap()), [0.0]);
    assert_eq!(e.norm(f64::INFINITY, &[1], false).unwrap().shape(), &[0]);
    for p in [f64::INFINITY, f64::NEG_INFINITY, -1.0] {
        assert!(
            matches!(e.norm(p, &[0], false), Err(Error::EmptyReduction { .. })),
            "p = {p}"
        );
        assert!(matches!(
            e.norm(p, &[], false),
            Err(Error::EmptyReduction { .. })
        ));
    }
    // Large values stay finite: the square is taken in f32 even for f16.
    let h = Tensor::from_vec(vec![f16::from_f32(300.0), f16::from_f32(400.0)], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    let n = h.norm(2.0, &[], false).unwrap();
    assert_eq!(
        (n.dtype(), n.to_vec::<f16>().unwrap()[0].to_f32()),
        (DType::F16, 500.0)
    );
}

fn logsumexp(device: Device) {
    let x = t32(&[1000.0, 1000.0, -1000.0, 0.0, 0.0, 0.0], &[2, 3], device);
    let r = f32s(&x.logsumexp(&[1], false).unwrap());
    assert!((r[0] - (1000.0 + 2f32.ln())).abs() < 1e-3, "{r:?}");
    assert!((r[1] - 3f32.ln()).abs() < 1e-6, "{r:?}");
    let edges = t32(
        &[
            -INF, -INF, -INF, -INF, 1.0, INF, 1.0, NAN, INF, INF, -INF, INF,
        ],
        &[4, 3],
        device,
    );
    let r = f32s(&edges.logsumexp(&[1], false).unwrap());
    assert!(
        r[0] == -INF && r[1] == INF && r[2].is_nan() && r[3] == INF,
        "{r:?}"
    );
    // Empty: -inf.
    let e = Tensor::zeros(&[2, 0], DType::F32, device).unwrap();
    assert_eq!(f32s(&e.logsumexp(&[1], false).unwrap()), [-INF, -INF]);
    assert_eq!(f32s(&e.logsumexp(&[], true).unwrap()), [-INF]);
    // Integers and bool give torch's default float, f32.
    let i = Tensor::from_vec(vec![0i64, 0, 0, 0], &[4])
        .unwrap()
        .to_device(device)
        .unwrap();
    let r = i.logsumexp(&[], false).unwrap();
    assert_eq!(r.dtype(), DType::F32);
    assert!((f32s(&r)[0] - 4f32.ln()).abs() < 1e-6);
    let b = Tensor::from_vec(vec![true, false], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    let r = f32s(&b.logsumexp(&[0], false).unwrap())[0];
    assert!((r - (1f32.exp() + 1.0).ln()).abs() < 1e-6, "{r}");
    let h = t32(&[1.0, 2.0], &[2], device)
        .to_dtype(DType::BF16)
        .unwrap();
    assert_eq!(h.logsumexp(&[], false).unwrap().dtype(), DType::BF16);
}

fn empty_and_bad_input(device: Device) {
    let e = Tensor::zeros(&[0, 3], DType::F32, device).unwrap();
    // Reducing a non-empty dim of an empty tensor: an empty result.
    let (v, i) = e.max_dim(1, false).unwrap();
    assert_eq!((v.shape(), i.shape()), (&[0usize][..], &[0usize][..]));
    assert_eq!(e.argmin(Some(1), true).unwrap().shape(), &[0, 1]);
    let (lo, _) = e.aminmax(&[1], false).unwrap();
    assert_eq!(lo.shape(), &[0]);
    // An empty reduced dim has no identity.
    for r in [
        e.max_dim(0, false).map(|_| ()),
        e.min_dim(-2, false).map(|_| ()),
        e.argmax(Some(0), false).map(|_| ()),
        e.argmin(None, false).map(|_| ()),
        e.aminmax(&[0], false).map(|_| ()),
        e.aminmax(&[], false).map(|_| ()),
    ] {
        assert!(matches!(r, Err(Error::EmptyReduction { .. })), "{r:?}");
    }
    // torch 2.11's own words, punctuation included.
    let message = |r: tensor_reduce::Result<()>| r.unwrap_err().to_string();
    let e1 = Tensor::zeros(&[0], DType::F32, device).unwrap();
    for (got, want) in [
        (message(e1.max_dim(0, false).map(|_| ())), "max(): Expected reduction dim 0 to have non-zero size."),
        (message(e.min_dim(0, false).map(|_| ())), "min(): Expected reduction dim 0 to have non-zero size."),
        (message(e1.argmax(None, false).map(|_| ())), "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
        (message(e1.argmin(Some(0), false).map(|_| ())), "argmin(): Expected reduction dim 0 to have non-zero size."),
        (message(e1.aminmax(&[], false).map(|_| ())), "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."),
        (message(e.aminmax(&[0], false).map(|_| ())), "aminmax: Expected reduction dim 0 to have non-zero size."),
        (message(e1.norm(f64::INFINITY, &[], false).map(|_| ())), "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does not have an identity"),
        (message(e.norm(-1.0, &[-2], false).map(|_| ())), "linalg.vector_norm cannot compute the -1 norm on the dimension -2because this dimension is empty and the operation does not have an identity"),
        (message(e.norm(f64::NEG_INFINITY, &[1, 0], false).map(|_| ())), "linalg.vector_norm cannot compute the -inf norm on the dimension 0because this dimension is empty and the operation does not have an identity"),
    ] {
        assert_eq!(got, want);
    }
    let x = t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device);
    assert!(matches!(
        x.max_dim(2, false),
        Err(Error::DimOutOfRange { .. })
    ));
    assert!(matches!(
        x.argmax(Some(-3), false),
        Err(Error::DimOutOfRange { .. })
    ));
    assert!(matches!(
        x.var(&[0, -2], 1.0, false),
        Err(Error::RepeatedDim { .. })
    ));
    assert!(matches!(
        x.logsumexp(&[5], false),
        Err(Error::DimOutOfRange { .. })
    ));
    let i = Tensor::from_vec(vec![1i32, 2], &[2])
        .unwrap()
        .to_device(device)
        .unwrap();
    let err = i.var(&[], 1.0, false).unwrap_err();
    assert!(matches!(err, Error::UnsupportedDType { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("std and var only support floating point and complex dtypes"),
        "{err}"
    );
    let err = i.norm(2.0, &[], false).unwrap_err();
    assert!(
        err.to_string()
            .contains("Expected a floating point or complex tensor as input. Got Int"),
        "{err}"
    );
    assert_eq!(
        i.std_mean(&[0], 0.0, false).unwrap_err().to_string(),
        "std_mean only support floating point and complex dtypes"
    );
    assert_eq!(
        i.var_mean(&[0], 0.0, false).unwrap_err().to_string(),
        "var_mean only support floating point and complex dtypes"
    );
    let b = Tensor::from_vec(vec![true], &[1])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(
        b.argmin(None, false).unwrap_err().to_string(),
        "argmin(): does not support bool input"
    );
    assert_eq!(
        b.norm(2.0, &[], false).unwrap_err().to_string(),
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Bool"
    );
}

fn zero_dim(device: Device) {
    let s = t32(&[-3.5], &[], device);
    let (v, i) = s.max_dim(0, false).unwrap();
    assert_eq!(
        (f32s(&v), i64s(&i), v.shape()),
        (vec![-3.5], vec![0], &[] as &[usize])
    );
    assert_eq!(s.argmax(Some(-1), true).unwrap().shape(), &[] as &[usize]);
    assert_eq!(i64s(&s.argmin(None, false).unwrap()), [0]);
    assert_eq!(f32s(&s.norm(1.0, &[], false).unwrap()), [3.5]);
    assert_eq!(f32s(&s.logsumexp(&[0], false).unwrap()), [-3.5]);
    assert_eq!(f32s(&s.var(&[], 0.0, false).unwrap()), [0.0]);
}

/// Reduced dims of one element: argmax and argmin are index 0 whatever the
/// value (NaN, -inf, a negative zero), in the output's shape, as i64, for
/// every dtype and layout; max(dim) still gives the values. Expected values
/// are torch 2.11's.
fn one_element_reduced_dims(device: Device) {
    let nan = f32::NAN;
    let v = [2.0, nan, -f32::INFINITY, -0.0, 7.5, -1.0];
    let x = t32(&v, &[3, 2, 1], device);
    for (got, shape) in [
        (x.argmax(Some(2), false).unwrap(), &[3, 2][..]),
        (x.argmin(Some(-1), true).unwrap(), &[3, 2, 1][..]),
    ] {
        assert_eq!(
            (i64s(&got), got.shape(), got.dtype()),
            (vec![0; 6], shape, DType::I64)
        );
    }
    // A size-1 dim of a strided, offset view of another dtype.
    let base = t32(
        &(0..24).map(|i| i as f32 - 12.0).collect::<Vec<_>>(),
        &[4, 6],
        device,
    )
    .to_dtype(DType::F16)
    .unwrap();
    let view = base.narrow(1, 3, 1).unwrap().transpose(0, 1).unwrap(); // [1, 4]
    let got = view.argmax(Some(0), false).unwrap();
    assert_eq!((i64s(&got), got.shape()), (vec![0; 4], &[4][..]));
    // Integers, and a one-element tensor over every dim.
    let i = Tensor::from_vec(vec![i64::MIN, 5, -3], &[3, 1])
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(i64s(&i.argmin(Some(1), false).unwrap()), [0, 0, 0]);
    let one = t32(&[nan], &[1, 1, 1], device);
    assert_eq!(i64s(&one.argmax(None, false).unwrap()), [0]);
    assert_eq!(one.argmax(None, true).unwrap().shape(), &[1, 1, 1]);
    // max(dim) reads its values.
    let (m, at) = x.max_dim(2, false).unwrap();
    let m = f32s(&m);
    assert!(
        m[1].is_nan() && m[3].to_bits() == (-0.0f32).to_bits(),
        "{m:?}"
    );
    assert_eq!((m[0], m[2], m[4], m[5]), (2.0, -f32::INFINITY, 7.5, -1.0));
    assert_eq!(i64s(&at), [0; 6]);
}

/// A permuted view reduced over a dim that is neither its fastest nor its
/// slowest in memory: `[6, 5, 40].permute(2, 0, 1)` over its last dim,
/// whose result's fastest dim strides the input by 800 B, where the
/// backends visit the outputs in the input's order. Every value, index and
/// both outputs of the two-output ops land where the result's order puts
/// them; the expected values come from index arithmetic on the base.
fn permuted_views(device: Device) {
    let (a, b, c) = (6, 5, 40);
    // Distinct along each reduced row (steps of 40 * 37 mod 101), exact in f32.
    let base: Vec<f32> = (0..a * b * c)
        .map(|i| ((i * 37) % 101) as f32 - 50.0)
        .collect();
    let x = t32(&base, &[a, b, c], device).permute(&[2, 0, 1]).unwrap();
    let row = |k: usize, i: usize| -> Vec<f64> {
        (0..b).map(|j| base[i * b * c + j * c + k] as f64).collect()
    };
    let outputs = || (0..c).flat_map(|k| (0..a).map(move |i| (k, i)));
    let sum: Vec<f32> = outputs()
        .map(|(k, i)| row(k, i).iter().sum::<f64>() as f32)
        .collect();
    assert_eq!(f32s(&x.sum(&[2], false).unwrap()), sum);
    let max = |r: &[f64]| r.iter().cloned().fold(f64::MIN, f64::max);
    let argmax = |r: &[f64]| r.iter().position(|&v| v == max(r)).unwrap() as i64;
    let amax: Vec<f32> = outputs().map(|(k, i)| max(&row(k, i)) as f32).collect();
    let args: Vec<i64> = outputs().map(|(k, i)| argmax(&row(k, i))).collect();
    assert_eq!(f32s(&x.amax(&[-1], false).unwrap()), amax);
    assert_eq!(i64s(&x.argmax(Some(2), false).unwrap()), args);
    let (values, indices) = x.max_dim(2, true).unwrap();
    assert_eq!(values.shape(), &[c, a, 1]);
    assert_eq!((f32s(&values), i64s(&indices)), (amax, args));
    let (var, mean) = x.var_mean(&[2], 1.0, false).unwrap();
    let moments = |r: &[f64]| {
        let m = r.iter().sum::<f64>() / b as f64;
        (
            r.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (b - 1) as f64,
            m,
        )
    };
    let (want_var, want_mean): (Vec<f32>, Vec<f32>) = outputs()
        .map(|(k, i)| {
            let (v, m) = moments(&row(k, i));
            (v as f32, m as f32)
        })
        .unzip();
    near(&f32s(&var), &want_var);
    near(&f32s(&mean), &want_mean);
    let lse: Vec<f32> = outputs()
        .map(|(k, i)| {
            let r = row(k, i);
            let m = max(&r);
            (m + r.iter().map(|v| (v - m).exp()).sum::<f64>().ln()) as f32
        })
        .collect();
    near(&f32s(&x.logsumexp(&[2], false).unwrap()), &lse);
}

backend_tests! {
    nan_and_ties_follow_torch => nan_and_ties;
    indices_are_logical_positions => indices_are_logical;
    index_ops_keep_their_dtypes => index_dtypes;
    welford_follows_torch => welford;
    var_is_stable_with_a_large_offset => var_is_stable;
    norms_follow_torch => norms;
    logsumexp_follows_torch => logsumexp;
    empty_and_bad_input_are_typed_errors => empty_and_bad_input;
    zero_dim_reductions => zero_dim;
    one_element_reduced_dims_give_index_zero => one_element_reduced_dims;
    permuted_views_reduce_into_the_results_order => permuted_views;
}

/// Sample variance in f64, two passes, as the reference for huge values.
fn var_f64(v: &[f64]) -> f64 {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().map(|&x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

/// Values near 1e30 have a finite std in f32 but squared deviations far
/// beyond f32's range: torch's CPU keeps Welford's state in f64 for every
/// floating dtype, so it gives the std (torch's GPU, with an f32 state,
/// gives inf, which is why this is a CPU test).
#[test]
fn cpu_var_of_huge_f32_values_is_finite() {
    let v: [f32; 8] = [1e30, -1e30, 3e29, -7e29, 5e29, 2.5e29, -4e29, 9e29];
    let v64: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    let want_std = var_f64(&v64).sqrt();
    let want_mean = v64.iter().sum::<f64>() / v64.len() as f64;
    let x = t32(&v, &[8], Device::Cpu);
    let close = |got: f32, want: f64, what: &str| {
        let rel = (got as f64 - want).abs() / want.abs();
        assert!(rel < 1e-6, "{what}: {got} vs f64 reference {want}");
    };
    close(f32s(&x.std(&[], 1.0, false).unwrap())[0], want_std, "std");
    let (s, m) = x.std_mean(&[0], 1.0, false).unwrap();
    close(f32s(&s)[0], want_std, "std_mean's std");
    close(f32s(&m)[0], want_mean, "std_mean's mean");
    // bf16 holds these values too (its range is f32's).
    let b = x.to_dtype(DType::BF16).unwrap();
    let b64: Vec<f64> = b
        .to_vec::<tensor_reduce::bf16>()
        .unwrap()
        .iter()
        .map(|v| v.to_f64())
        .collect();
    let got = b
        .std(&[], 1.0, false)
        .unwrap()
        .to_vec::<tensor_reduce::bf16>()
        .unwrap()[0];
    let want = var_f64(&b64).sqrt();
    assert!(
        (got.to_f64() - want).abs() <= 8e-3 * want,
        "bf16 std {got} vs f64 reference {want}"
    );
    // A variance that fits in f32 although its sum of squared deviations
    // (about 2e41) does not: 1000 values of ±1.5e19.
    let w: Vec<f32> = (0..1000)
        .map(|i| if i % 2 == 0 { 1.5e19 } else { -1.5e19 })
        .collect();
    let w64: Vec<f64> = w.iter().map(|&x| x as f64).collect();
    let x = t32(&w, &[10, 100], Device::Cpu);
    close(
        f32s(&x.var(&[], 1.0, false).unwrap())[0],
        var_f64(&w64),
        "var",
    );
    let (v, _) = x.var_mean(&[0, 1], 1.0, true).unwrap();
    close(f32s(&v)[0], var_f64(&w64), "var_mean's var");
}
