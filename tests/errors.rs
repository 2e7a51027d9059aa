//! Every user error is a typed error naming what was wrong, never a panic.

use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Error, Tensor};

fn x234() -> Tensor {
    Tensor::from_vec((0..24).map(|v| v as f32).collect(), &[2, 3, 4]).unwrap()
}

#[test]
fn dim_out_of_range_names_dim_and_rank() {
    let e = x234().sum(&[3], false).unwrap_err();
    assert!(
        matches!(e, Error::DimOutOfRange { dim: 3, rank: 3 }),
        "{e:?}"
    );
    // torch's wording, word for word.
    assert_eq!(
        e.to_string(),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
    let e = x234().sum(&[-4], false).unwrap_err();
    assert!(
        matches!(e, Error::DimOutOfRange { dim: -4, rank: 3 }),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Dimension out of range (expected to be in range of [-3, 2], but got -4)"
    );
    // A rank-0 tensor takes -1 and 0.
    let e = Tensor::scalar(1.0f32).sum(&[1], false).unwrap_err();
    assert!(
        matches!(e, Error::DimOutOfRange { dim: 1, rank: 0 }),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
}

#[test]
fn repeated_dim_is_an_error_even_when_spelled_differently() {
    let e = x234().sum(&[1, -2], false).unwrap_err();
    assert!(matches!(&e, Error::RepeatedDim { dim: 1, .. }), "{e:?}");
    // torch names the wrapped dim.
    assert_eq!(
        e.to_string(),
        "dim 1 appears multiple times in the list of dims"
    );
    assert_eq!(
        x234().amax(&[-1, 2], false).unwrap_err().to_string(),
        "dim 2 appears multiple times in the list of dims"
    );
    assert!(matches!(
        x234().permute(&[0, 0, 1]),
        Err(Error::RepeatedDim { dim: 0, .. })
    ));
}

#[test]
fn data_length_mismatch_names_both_lengths() {
    let e = Tensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 6,
                given: 5,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("5 elements") && e.to_string().contains("needs 6"));
    assert!(matches!(
        Tensor::from_vec(vec![1u8; 2], &[usize::MAX, 2]),
        Err(Error::ShapeOverflow { .. })
    ));
}

#[test]
fn reading_back_with_the_wrong_type() {
    let e = x234().to_vec::<f64>().unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeMismatch {
                actual: DType::F32,
                requested: DType::F64
            }
        ),
        "{e:?}"
    );
    let s = Tensor::from_vec(vec![1i32, 2], &[2])
        .unwrap()
        .sum_all()
        .unwrap();
    assert!(s.to_vec::<i32>().is_err(), "an i32 sum is i64, as in torch");
}

#[test]
fn bad_views() {
    let x = x234();
    assert!(matches!(x.permute(&[0, 1]), Err(Error::InvalidView(_))));
    assert!(matches!(x.narrow(1, 2, 2), Err(Error::InvalidView(_))));
    assert!(matches!(x.slice(0, 0, 2, 0), Err(Error::InvalidView(_))));
    assert!(matches!(
        x.expand(&[3, 3, 4]),
        Err(Error::InvalidExpand { .. })
    ));
    assert!(matches!(
        x.expand(&[3, 4]),
        Err(Error::InvalidExpand { .. })
    ));
    assert!(matches!(
        x.reshape(&[5, 5]),
        Err(Error::ReshapeMismatch {
            from_numel: 24,
            to_numel: 25,
            ..
        })
    ));
    assert!(matches!(x.t(), Err(Error::InvalidView(_))));
    // The rank named is the tensor's, and the range is unsqueeze's own
    // (one wider than a dim index of the tensor).
    let e = x.unsqueeze(5).unwrap_err();
    assert!(matches!(e, Error::InvalidView(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("dim 5") && msg.contains("rank 3") && msg.contains("-4..=3"),
        "{msg}"
    );
    assert!(matches!(x.unsqueeze(-5), Err(Error::InvalidView(_))));
    assert_eq!(x.unsqueeze(3).unwrap().shape(), &[2, 3, 4, 1]);
    assert_eq!(x.unsqueeze(-4).unwrap().shape(), &[1, 2, 3, 4]);
    let e = x.as_strided(&[3, 9], &[9, 1], 0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfBounds {
                max_index: 26,
                storage_len: 24,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(matches!(
        x.as_strided(&[2], &[-1], 5),
        Err(Error::InvalidView(_))
    ));
}

#[test]
fn expand_names_the_size_that_cannot_broadcast() {
    let x = Tensor::zeros(&[0, 3], DType::F32, Device::Cpu).unwrap();
    let e = x.expand(&[1, 3]).unwrap_err();
    assert!(matches!(e, Error::InvalidExpand { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("dim 0 has size 0, which cannot become 1"),
        "{msg}"
    );
    // With new leading dims the dim named is the tensor's own.
    let e = x234().expand(&[5, 2, 4, 4]).unwrap_err().to_string();
    assert!(e.contains("dim 1 has size 3, which cannot become 4"), "{e}");
}

#[test]
fn slice_steps_must_be_positive_and_narrow_must_fit() {
    let x = x234();
    assert!(matches!(x.slice(2, 0, 4, 0), Err(Error::InvalidView(_))));
    assert!(matches!(
        x.slice(3, 0, 4, 1),
        Err(Error::DimOutOfRange { .. })
    ));
    assert!(matches!(
        Tensor::scalar(1.0f32).slice(0, 0, 1, 1),
        Err(Error::InvalidView(_))
    ));
    // narrow is torch.narrow: no clamping, unlike slice.
    let e = x.narrow(2, 3, 2).unwrap_err();
    assert!(e.to_string().contains("size 4"), "{e}");
    assert!(matches!(
        x.narrow(2, usize::MAX, 2),
        Err(Error::InvalidView(_))
    ));
}

#[test]
fn randn_needs_a_float_dtype() {
    assert!(matches!(
        Tensor::randn(&[2], DType::I32, Device::Cpu, 0),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        Tensor::randint(3, 3, &[2], DType::I32, Device::Cpu, 0),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn a_missing_gpu_is_an_error_not_a_panic() {
    // Device 1000 exists nowhere, with or without a driver.
    let e = Device::cuda(1000).unwrap_err();
    assert!(matches!(e, Error::CudaUnavailable(_)), "{e:?}");
    let e = x234().to_device(Device::Cuda(1000)).unwrap_err();
    assert!(matches!(e, Error::CudaUnavailable(_)), "{e:?}");
}

#[test]
fn an_empty_reduced_dim_is_named_as_the_caller_wrote_it() {
    let e = Tensor::zeros(&[2, 0], DType::F32, Device::Cpu).unwrap();
    // torch's messages name the dim as passed, not wrapped.
    assert_eq!(
        e.amin(&[-1], false).unwrap_err().to_string(),
        "amin(): Expected reduction dim -1 to have non-zero size."
    );
    assert_eq!(
        e.amax(&[1], false).unwrap_err().to_string(),
        "amax(): Expected reduction dim 1 to have non-zero size."
    );
    assert_eq!(
        e.argmax(Some(-1), true).unwrap_err().to_string(),
        "argmax(): Expected reduction dim -1 to have non-zero size."
    );
    // The first empty dim in the order given, as torch checks them.
    let e = Tensor::zeros(&[0, 3, 0], DType::F32, Device::Cpu).unwrap();
    assert_eq!(
        e.amax(&[2, 0], false).unwrap_err().to_string(),
        "amax(): Expected reduction dim 2 to have non-zero size."
    );
    assert_eq!(
        e.amax(&[1, -3], false).unwrap_err().to_string(),
        "amax(): Expected reduction dim -3 to have non-zero size."
    );
}

#[test]
fn a_device_plan_needs_a_gpu_tensor() {
    // The plan a device runs is only defined for a tensor on one; on the
    // CPU, explain with a device's properties is the way to plan.
    let err = x234().device_plan(ReduceOp::Sum, &[0], false).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DeviceMismatch {
                expected: Device::Cuda(0),
                actual: Device::Cpu
            }
        ),
        "{err:?}"
    );
    // Bad dims are still named as such, whatever the device.
    assert!(x234().device_plan(ReduceOp::Sum, &[5], false).is_err());
}
