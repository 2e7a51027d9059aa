//! `ones`, `full`, `arange` and `from_vec` against values written out by hand
//! (torch's results for the same calls), on every backend.

mod common;

use tensor_reduce::{bf16, f16, DType, Device, Error, Tensor};

fn ones_and_full(device: Device) {
    let o = Tensor::ones(&[2, 3], DType::F32, device).unwrap();
    assert_eq!((o.shape(), o.device()), (&[2usize, 3][..], device));
    assert_eq!(o.to_vec::<f32>().unwrap(), vec![1.0; 6]);
    assert_eq!(
        Tensor::ones(&[3], DType::Bool, device)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![true; 3]
    );
    // torch.full((2, 2), -2.7, dtype=torch.int32) -> [[-2, -2], [-2, -2]]
    let i = Tensor::full(&[2, 2], -2.7, DType::I32, device).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![-2; 4]);
    // torch.full((2,), -1, dtype=torch.uint8) wraps to 255.
    let u = Tensor::full(&[2], -1.0, DType::U8, device).unwrap();
    assert_eq!(u.to_vec::<u8>().unwrap(), vec![255, 255]);
    let h = Tensor::full(&[1, 3], 0.1, DType::F16, device).unwrap();
    assert_eq!(h.to_vec::<f16>().unwrap(), vec![f16::from_f64(0.1); 3]);
    let b = Tensor::full(&[2], f64::INFINITY, DType::BF16, device).unwrap();
    assert_eq!(b.to_vec::<bf16>().unwrap(), vec![bf16::INFINITY; 2]);
    let s = Tensor::full(&[], 7.0, DType::I64, device).unwrap();
    assert_eq!((s.shape(), s.to_vec::<i64>().unwrap()), (&[][..], vec![7]));
    let e = Tensor::full(&[0, 4], 3.0, DType::F64, device).unwrap();
    assert_eq!((e.shape(), e.numel()), (&[0usize, 4][..], 0));
    // The result owns its storage: it is contiguous and sums as expected.
    let big = Tensor::full(&[300, 7], 0.5, DType::F32, device).unwrap();
    assert!(big.is_contiguous());
    assert_eq!(
        big.sum_all().unwrap().to_vec::<f32>().unwrap(),
        vec![1050.0]
    );
}

fn arange(device: Device) {
    let get = |start, end, step, dtype| Tensor::arange(start, end, step, dtype, device).unwrap();
    assert_eq!(
        get(0.0, 5.0, 1.0, DType::I64).to_vec::<i64>().unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    // torch.arange(1, 2.5, 0.5) -> [1.0, 1.5, 2.0]
    assert_eq!(
        get(1.0, 2.5, 0.5, DType::F32).to_vec::<f32>().unwrap(),
        vec![1.0, 1.5, 2.0]
    );
    // torch.arange(0, 1, 0.3, dtype=torch.float64): ceil(1 / 0.3) = 4 elements.
    assert_eq!(
        get(0.0, 1.0, 0.3, DType::F64).to_vec::<f64>().unwrap(),
        vec![0.0, 0.3, 0.6, 0.8999999999999999]
    );
    assert_eq!(
        get(5.0, -4.0, -3.0, DType::I32).to_vec::<i32>().unwrap(),
        vec![5, 2, -1]
    );
    assert_eq!(
        get(250.0, 260.0, 4.0, DType::U8).to_vec::<u8>().unwrap(),
        vec![250, 254, 2]
    );
    assert_eq!(
        get(0.0, 2.0, 0.5, DType::BF16).to_vec::<bf16>().unwrap(),
        [0.0, 0.5, 1.0, 1.5].map(bf16::from_f32).to_vec()
    );
    let empty = get(3.0, 3.0, 1.0, DType::F16);
    assert_eq!((empty.shape(), empty.device()), (&[0usize][..], device));
}

backend_tests! {
    ones_and_full_match_torch => ones_and_full;
    arange_matches_torch => arange;
}

#[test]
fn bad_arguments_are_typed_errors() {
    let cpu = Device::Cpu;
    assert!(matches!(
        Tensor::arange(0.0, 5.0, 0.0, DType::F32, cpu),
        Err(Error::InvalidArgument(m)) if m.contains("step must be nonzero")
    ));
    assert!(matches!(
        Tensor::arange(0.0, 5.0, -1.0, DType::I64, cpu),
        Err(Error::InvalidArgument(m)) if m.contains("inconsistent with step sign")
    ));
    assert!(matches!(
        Tensor::arange(0.0, f64::INFINITY, 1.0, DType::F64, cpu),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Tensor::arange(0.0, 5.0, 0.5, DType::I64, cpu),
        Err(Error::InvalidArgument(m)) if m.contains("truncates to 0")
    ));
    assert!(matches!(
        Tensor::arange(0.0, 2.0, 1.0, DType::Bool, cpu),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        Tensor::full(&[2], 256.0, DType::U8, cpu),
        Err(Error::ValueOutOfRange {
            dtype: DType::U8,
            ..
        })
    ));
    assert!(matches!(
        Tensor::full(&[2], f64::NAN, DType::I32, cpu),
        Err(Error::ValueOutOfRange { .. })
    ));
    assert!(matches!(
        Tensor::ones(&[usize::MAX, 2], DType::F32, cpu),
        Err(Error::ShapeOverflow { .. })
    ));
    assert!(matches!(
        Tensor::arange(0.0, 1e30, 1.0, DType::F32, cpu),
        Err(Error::InvalidArgument(_)) | Err(Error::ShapeOverflow { .. })
    ));
}

#[test]
fn from_vec_round_trips_every_dtype() {
    fn check<T: tensor_reduce::Element>(values: Vec<T>) {
        let t = Tensor::from_vec(values.clone(), &[2, 2]).unwrap();
        assert_eq!(t.dtype(), T::DTYPE);
        assert_eq!(t.to_vec::<T>().unwrap(), values);
        assert!(matches!(
            Tensor::from_vec(values, &[3]),
            Err(Error::LengthMismatch {
                expected: 3,
                given: 4,
                ..
            })
        ));
    }
    check([1.0, -2.0, 0.5, 3.0].map(f16::from_f32).to_vec());
    check([1.0, -2.0, 0.5, 3.0].map(bf16::from_f32).to_vec());
    check(vec![1f32, -2.0, 0.5, 3.0]);
    check(vec![1f64, -2.0, 0.5, 3.0]);
    check(vec![1i32, -2, i32::MAX, i32::MIN]);
    check(vec![1i64, -2, i64::MAX, i64::MIN]);
    check(vec![0u8, 1, 128, 255]);
    check(vec![true, false, false, true]);
}
