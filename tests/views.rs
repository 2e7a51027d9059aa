//! Views against explicit index arithmetic: they never copy, and read back
//! exactly the elements torch's views would.

use tensor_reduce::{DType, Device, Tensor};

fn iota(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n as i64).collect(), shape).unwrap()
}

#[test]
fn permute_and_transpose() {
    let x = iota(&[2, 3, 4]);
    let p = x.permute(&[2, 0, 1]).unwrap();
    assert_eq!(p.shape(), &[4, 2, 3]);
    assert_eq!(p.strides(), &[1, 12, 4]);
    let v = p.to_vec::<i64>().unwrap();
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                assert_eq!(v[k * 6 + i * 3 + j], (i * 12 + j * 4 + k) as i64);
            }
        }
    }
    assert!(!p.is_contiguous());
    assert_eq!(x.transpose(-1, 0).unwrap().shape(), &[4, 3, 2]);
    let m = iota(&[2, 3]);
    assert_eq!(
        m.t().unwrap().to_vec::<i64>().unwrap(),
        vec![0, 3, 1, 4, 2, 5]
    );
}

#[test]
fn narrow_slice_and_offsets() {
    let x = iota(&[4, 5]);
    let n = x.narrow(1, 1, 3).unwrap();
    assert_eq!(n.storage_offset(), 1);
    assert_eq!(
        n.to_vec::<i64>().unwrap(),
        vec![1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18]
    );
    let s = x.slice(0, 1, 4, 2).unwrap(); // rows 1 and 3
    assert_eq!(s.shape(), &[2, 5]);
    assert_eq!(s.strides(), &[10, 1]);
    assert_eq!(
        s.to_vec::<i64>().unwrap(),
        vec![5, 6, 7, 8, 9, 15, 16, 17, 18, 19]
    );
    assert_eq!(x.narrow(0, 4, 0).unwrap().numel(), 0);
}

/// `slice`'s arguments: dim, start, end, step.
type Slice = (isize, isize, isize, usize);

#[test]
fn slice_is_python_slicing() {
    // Expected values are torch's `x[:, a:b:c]` on x = arange(10).reshape(2, 5).
    let x = iota(&[2, 5]);
    let cases: [(Slice, &[usize], &[i64]); 10] = [
        ((1, 1, 7, 2), &[2, 2], &[1, 3, 6, 8]),
        ((1, 3, 1, 1), &[2, 0], &[]),
        ((1, 7, 9, 1), &[2, 0], &[]),
        ((1, -2, isize::MAX, 1), &[2, 2], &[3, 4, 8, 9]),
        ((1, -100, 2, 1), &[2, 2], &[0, 1, 5, 6]),
        ((1, -3, -1, 1), &[2, 2], &[2, 3, 7, 8]),
        ((1, 0, 5, 10), &[2, 1], &[0, 5]),
        ((1, 0, 5, usize::MAX), &[2, 1], &[0, 5]),
        ((1, isize::MIN, isize::MAX, 2), &[2, 3], &[0, 2, 4, 5, 7, 9]),
        ((0, -1, isize::MAX, 1), &[1, 5], &[5, 6, 7, 8, 9]),
    ];
    for ((dim, start, end, step), shape, values) in cases {
        let s = x.slice(dim, start, end, step).unwrap();
        assert_eq!(s.shape(), shape, "slice({dim}, {start}, {end}, {step})");
        assert_eq!(
            s.to_vec::<i64>().unwrap(),
            values,
            "slice({dim}, {start}, {end}, {step})"
        );
    }
    // Torch's strides: the dim's stride times the step.
    assert_eq!(x.slice(1, 1, 7, 2).unwrap().strides(), &[5, 2]);
}

#[test]
fn expand_unsqueeze_squeeze() {
    let x = iota(&[3]);
    let e = x.unsqueeze(0).unwrap().expand(&[2, 3]).unwrap();
    assert_eq!(e.strides(), &[0, 1]);
    assert_eq!(e.to_vec::<i64>().unwrap(), vec![0, 1, 2, 0, 1, 2]);
    let e2 = x.unsqueeze(-1).unwrap().expand(&[5, 3, 4]).unwrap();
    assert_eq!(e2.shape(), &[5, 3, 4]);
    assert_eq!(e2.strides(), &[0, 1, 0]);
    let u = iota(&[2, 1, 3, 1]);
    assert_eq!(u.squeeze().shape(), &[2, 3]);
    assert_eq!(u.squeeze_dim(1).unwrap().shape(), &[2, 3, 1]);
    assert_eq!(u.squeeze_dim(0).unwrap().shape(), &[2, 1, 3, 1]);
}

#[test]
fn reshape_views_when_it_can_and_copies_when_it_must() {
    let x = iota(&[2, 3, 4]);
    let r = x.reshape(&[6, 4]).unwrap();
    assert_eq!(r.strides(), &[4, 1]);
    let t = x.transpose(0, 1).unwrap(); // [3, 2, 4], strides [4, 12, 1]
    let merged_inner = t.reshape(&[3, 8]).unwrap(); // dims 1 and 2 are not adjacent in memory: copy
    assert!(merged_inner.is_contiguous());
    assert_eq!(
        merged_inner.to_vec::<i64>().unwrap(),
        t.to_vec::<i64>().unwrap()
    );
    let split = t.reshape(&[3, 2, 2, 2]).unwrap(); // splitting the contiguous last dim is a view
    assert_eq!(split.strides(), &[4, 12, 2, 1]);
    assert_eq!(split.to_vec::<i64>().unwrap(), t.to_vec::<i64>().unwrap());
}

#[test]
fn contiguous_and_zero_d() {
    let x = iota(&[3, 4]).t().unwrap();
    assert!(!x.is_contiguous());
    let c = x.contiguous().unwrap();
    assert!(c.is_contiguous());
    assert_eq!(c.to_vec::<i64>().unwrap(), x.to_vec::<i64>().unwrap());
    let s = Tensor::scalar(7i32);
    assert_eq!(s.dim(), 0);
    assert_eq!(s.numel(), 1);
    assert_eq!(s.to_vec::<i32>().unwrap(), vec![7]);
    assert!(Tensor::zeros(&[0, 3], DType::F32, Device::Cpu)
        .unwrap()
        .is_contiguous());
}

#[test]
fn randn_is_seeded_and_roughly_normal() {
    let a = Tensor::randn(&[100_000], DType::F64, Device::Cpu, 42)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let b = Tensor::randn(&[100_000], DType::F64, Device::Cpu, 42)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(a, b);
    let mean = a.iter().sum::<f64>() / a.len() as f64;
    let var = a.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / a.len() as f64;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
        "mean {mean} var {var}"
    );
    let c = Tensor::randn(&[100_000], DType::F64, Device::Cpu, 43)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_ne!(a, c);
}
