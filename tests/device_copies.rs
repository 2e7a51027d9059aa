//! `contiguous()` and `to_device()` of views, against explicit index
//! arithmetic, on every backend (on CUDA they gather on the device and
//! download only the view's span).

mod common;

use tensor_reduce::{f16, DType, Device, Error, Tensor};

/// `0..n` as i64 in `shape`, on `device`.
fn iota(shape: &[usize], device: Device) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n as i64).collect(), shape)
        .unwrap()
        .to_device(device)
        .unwrap()
}

fn contiguous_views(device: Device) {
    let x = iota(&[4, 5, 6], device);
    // x.permute(2, 0, 1)[:, 1:4:2, ::2]: element [k, i, j] is
    // x[1 + 2i, 2j, k] = (1 + 2i) * 30 + 2j * 6 + k.
    let v = x
        .permute(&[2, 0, 1])
        .unwrap()
        .slice(1, 1, 4, 2)
        .unwrap()
        .slice(2, 0, 5, 2)
        .unwrap();
    let c = v.contiguous().unwrap();
    assert!(c.is_contiguous());
    assert_eq!((c.shape(), c.device()), (&[6usize, 2, 3][..], device));
    let mut expected = Vec::new();
    for k in 0..6i64 {
        for i in 0..2i64 {
            for j in 0..3i64 {
                expected.push((1 + 2 * i) * 30 + 2 * j * 6 + k);
            }
        }
    }
    assert_eq!(c.to_vec::<i64>().unwrap(), expected);

    // Broadcast (stride 0) and every element size: f16 (2 bytes), i32 (4),
    // u8 (1), f64 (8).
    let h = Tensor::from_vec(vec![f16::from_f32(1.5), f16::from_f32(-2.0)], &[2, 1])
        .unwrap()
        .to_device(device)
        .unwrap()
        .expand(&[2, 3])
        .unwrap()
        .contiguous()
        .unwrap();
    assert_eq!(
        h.to_vec::<f16>().unwrap(),
        [1.5, 1.5, 1.5, -2.0, -2.0, -2.0]
            .map(f16::from_f32)
            .to_vec()
    );
    for dtype in [DType::I32, DType::U8, DType::F64] {
        let t = Tensor::arange(0.0, 12.0, 1.0, dtype, device)
            .unwrap()
            .reshape(&[3, 4])
            .unwrap()
            .t()
            .unwrap()
            .contiguous()
            .unwrap();
        let got: Vec<f64> = common::to_f64(&t);
        let want: Vec<f64> = (0..4)
            .flat_map(|c| (0..3).map(move |r| (r * 4 + c) as f64))
            .collect();
        assert_eq!(got, want, "{dtype}");
    }
    // A narrowed view that is contiguous but offset: copied from its offset.
    let n = x.narrow(0, 2, 1).unwrap().contiguous().unwrap();
    assert_eq!(n.to_vec::<i64>().unwrap(), (60..90).collect::<Vec<_>>());
    // Empty views.
    let e = x.narrow(1, 5, 0).unwrap().permute(&[1, 0, 2]).unwrap();
    assert_eq!(e.contiguous().unwrap().shape(), &[0, 4, 6]);
}

fn views_move_between_devices(device: Device) {
    // The last row of a big matrix: only that row's span moves, re-based to
    // an offset within 16 bytes (alignment kept).
    let big = iota(&[1000, 100], device);
    let row = big.narrow(0, 999, 1).unwrap().slice(1, 3, 100, 3).unwrap();
    let host = row.to_device(Device::Cpu).unwrap();
    if device.is_cuda() {
        assert!(
            host.storage_offset() < 2,
            "offset {}",
            host.storage_offset()
        );
    }
    assert_eq!(host.strides(), row.strides());
    let want: Vec<i64> = (3..100).step_by(3).map(|c| 99_900 + c).collect();
    assert_eq!(host.to_vec::<i64>().unwrap(), want);
    let back = host.to_device(device).unwrap();
    assert_eq!(back.to_vec::<i64>().unwrap(), want);
}

fn huge_broadcasts_are_errors(device: Device) {
    let one = Tensor::ones(&[1], DType::F32, device).unwrap();
    // A view this size is refused already (its contiguous byte count would
    // not fit in isize); one that fits but could never be allocated is
    // refused when it is copied.
    assert!(matches!(
        one.expand(&[1 << 61, 4]),
        Err(Error::ShapeOverflow { .. })
    ));
    let huge = one.expand(&[1 << 50, 4]).unwrap();
    assert!(matches!(
        huge.contiguous(),
        Err(Error::OutOfMemory { .. } | Error::CudaOutOfMemory { .. })
    ));
    assert!(matches!(
        huge.to_vec::<f32>(),
        Err(Error::OutOfMemory { .. })
    ));
}

backend_tests! {
    copies_of_huge_broadcasts_are_errors => huge_broadcasts_are_errors;
    contiguous_gathers_views => contiguous_views;
    to_device_moves_the_span => views_move_between_devices;
}

#[test]
fn cuda_slices_need_a_cuda_tensor() {
    let x = Tensor::ones(&[2], DType::F32, Device::Cpu).unwrap();
    assert!(x.cuda_stream().is_none());
    assert!(matches!(
        x.to_cuda_slice::<f32>(),
        Err(Error::DeviceMismatch {
            actual: Device::Cpu,
            ..
        })
    ));
    assert!(matches!(
        x.to_cuda_slice::<f64>(),
        Err(Error::DTypeMismatch { .. })
    ));
}
