//! Shapes, strides and results too large for memory are typed errors, never
//! a wrapped size, a panic or an aborted process. Sizes that must fail to
//! allocate are at least 2^48 bytes: beyond the 47-bit user address space,
//! so they fail even where the kernel overcommits memory.

mod common;

use tensor_reduce::cuda::plan::DeviceProps;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Error, Tensor};

fn on(device: Device, t: Tensor) -> Tensor {
    t.to_device(device).unwrap()
}

fn iota_f32(device: Device, n: usize) -> Tensor {
    on(
        device,
        Tensor::from_vec((0..n).map(|v| v as f32).collect(), &[n]).unwrap(),
    )
}

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::OutOfMemory { .. } | Error::CudaOutOfMemory { .. })
}

fn zeros_whose_bytes_overflow(device: Device) {
    for (shape, dtype) in [
        (vec![1usize << 62], DType::F32),
        (vec![usize::MAX], DType::U8),
        (vec![1 << 31, 1 << 31, 4], DType::F64),
        (vec![usize::MAX, 2], DType::U8),
    ] {
        let e = Tensor::zeros(&shape, dtype, device).unwrap_err();
        assert!(
            matches!(&e, Error::ShapeOverflow { shape: s } if *s == shape),
            "{shape:?} {dtype}: {e:?}"
        );
    }
    // A valid shape whose bytes just fit in isize is not a shape error.
    let e = Tensor::zeros(&[1 << 60], DType::F32, device).unwrap_err();
    assert!(is_out_of_memory(&e), "{e:?}");
}

fn empty_sum_whose_result_overflows(device: Device) {
    // [0, 2^62] u8 is a valid empty tensor; its sum over dim 0 is 2^62
    // zeros of i64, 2^65 bytes.
    let x = Tensor::zeros(&[0, 1 << 62], DType::U8, device).unwrap();
    let e = x.sum(&[0], false).unwrap_err();
    assert!(matches!(e, Error::ShapeOverflow { .. }), "{e:?}");
    // Over dim 1 the result is empty, and fine.
    let s = x.sum(&[1], false).unwrap();
    assert_eq!(s.shape(), &[0]);
    assert_eq!(s.to_vec::<i64>().unwrap(), Vec::<i64>::new());
}

fn as_strided_spans_that_wrap(device: Device) {
    let x = iota_f32(device, 8);
    // (2-1) * 2^62 * 4 dims wraps to 0 in usize: a span of one element.
    let e = x.as_strided(&[2, 2, 2, 2], &[1 << 62; 4], 0).unwrap_err();
    assert!(matches!(e, Error::LayoutOverflow { .. }), "{e:?}");
    // A stride whose byte size wraps, on an empty view.
    let e = x.as_strided(&[0, 2], &[isize::MAX, 1], 0).unwrap_err();
    assert!(matches!(e, Error::LayoutOverflow { .. }), "{e:?}");
    // An offset whose byte size wraps.
    let e = x.as_strided(&[0], &[1], usize::MAX / 2).unwrap_err();
    assert!(matches!(e, Error::LayoutOverflow { .. }), "{e:?}");
    // Large but addressable: an out-of-bounds error naming the element.
    let e = x.as_strided(&[2], &[1 << 40], 0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfBounds {
                max_index: 1099511627776,
                ..
            }
        ),
        "{e:?}"
    );
}

fn reading_huge_broadcasts_fails_cleanly(device: Device) {
    // 2^46 f32 is 2^48 bytes: a view is fine, a copy is not.
    let x = iota_f32(device, 1).expand(&[1 << 46]).unwrap();
    assert_eq!(x.numel(), 1 << 46);
    let e = x.to_vec::<f32>().unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e:?}");
    let e = x.contiguous().unwrap_err();
    assert!(is_out_of_memory(&e), "{e:?}");
    let e = x.reshape(&[1 << 23, 1 << 23]).and_then(|r| r.contiguous());
    assert!(is_out_of_memory(&e.unwrap_err()));
    // A keepdim sum whose result needs 2^48 bytes (2^45 i64; few enough
    // 32-bit pieces for the GPU plan, so it is the allocation that fails).
    let y = Tensor::zeros(&[1, 2], DType::U8, device).unwrap();
    let y = y.expand(&[1 << 45, 2]).unwrap();
    let e = y.sum(&[1], true).unwrap_err();
    assert!(is_out_of_memory(&e), "{e:?}");
    // Broadcasting past what a shape may address is a shape error.
    let e = iota_f32(device, 1).expand(&[1 << 62]).unwrap_err();
    assert!(matches!(e, Error::ShapeOverflow { .. }), "{e:?}");
}

fn views_with_huge_steps_stay_addressable(device: Device) {
    let x = iota_f32(device, 10).reshape(&[2, 5]).unwrap();
    let s = x.slice(1, 1, isize::MAX, usize::MAX).unwrap();
    assert_eq!(s.shape(), &[2, 1]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![1.0, 6.0]);
    assert_eq!(
        s.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(),
        vec![7.0]
    );
    // An empty view with a huge stride: the new size-1 dim's torch stride
    // (size * stride) would not be addressable, so it gets another.
    let e = x.as_strided(&[0, 2], &[1 << 60, 1 << 60], 0).unwrap();
    let u = e.unsqueeze(1).unwrap();
    assert_eq!(u.shape(), &[0, 1, 2]);
    assert_eq!(
        u.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 0.0]
    );
}

backend_tests! {
    zeros_whose_byte_size_overflows => zeros_whose_bytes_overflow;
    empty_sum_whose_result_overflows_is_an_error => empty_sum_whose_result_overflows;
    as_strided_spans_that_wrap_are_errors => as_strided_spans_that_wrap;
    reading_huge_broadcasts_fails_cleanly_not_by_abort => reading_huge_broadcasts_fails_cleanly;
    huge_steps_stay_addressable => views_with_huge_steps_stay_addressable;
}

/// Strides 1, 3, 5, ...: odd, so no stride is twice its neighbour and no
/// two dims coalesce.
fn uncoalescable(rank: usize) -> Tensor {
    let strides: Vec<isize> = (0..rank as isize).map(|i| 2 * i + 1).collect();
    let span = strides.iter().sum::<isize>() as usize + 1;
    Tensor::zeros(&[span], DType::F32, Device::Cpu)
        .unwrap()
        .as_strided(&vec![2; rank], &strides, 0)
        .unwrap()
}

#[test]
fn more_dims_than_the_kernel_holds_fail_at_plan_time() {
    let props = DeviceProps::h200();
    let plan = uncoalescable(25)
        .explain(ReduceOp::Sum, &[], false, &props)
        .unwrap();
    assert_eq!(plan.iter.ndim(), 25);
    let e = uncoalescable(26)
        .explain(ReduceOp::Sum, &[], false, &props)
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("26 dims") && msg.contains("at most 25"),
        "{msg}"
    );
}
