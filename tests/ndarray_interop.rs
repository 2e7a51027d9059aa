//! Conversions between tensors and ndarray arrays (the `ndarray` feature,
//! which the README's test command and `.ci/run` turn on). Expected values are
//! ndarray's own indexing of the same array.

#[cfg(not(feature = "ndarray"))]
#[test]
#[ignore = "needs --features ndarray"]
fn ndarray_conversions() {}

#[cfg(feature = "ndarray")]
mod common;

#[cfg(feature = "ndarray")]
mod with_feature {
    use ndarray::{s, Array, ArrayD, Axis, IxDyn, ShapeBuilder};
    use tensor_reduce::{bf16, f16, DType, Device, Element, Tensor};

    /// `0..n` as `T`, in a standard-layout array of `shape`.
    fn iota<T: Element>(shape: &[usize]) -> ArrayD<T> {
        let n: usize = shape.iter().product();
        ArrayD::from_shape_vec(IxDyn(shape), (0..n as i64).map(T::from_i64).collect()).unwrap()
    }

    /// The tensor read back equals the array, element by element in
    /// logical order (ndarray's iteration is the reference).
    fn assert_same<T: Element>(t: &Tensor, a: &ArrayD<T>) {
        assert_eq!(t.shape(), a.shape());
        assert_eq!(t.dtype(), T::DTYPE);
        assert_eq!(
            t.to_vec::<T>().unwrap(),
            a.iter().copied().collect::<Vec<_>>()
        );
    }

    fn round_trip<T: Element>() {
        let a = iota::<T>(&[2, 3, 4]);
        // Standard layout, owned and borrowed.
        assert_same(&Tensor::try_from(a.clone()).unwrap(), &a);
        assert_same(&Tensor::from_ndarray(&a).unwrap(), &a);
        // A permuted view keeps its strides (no gather).
        let p = a.view().permuted_axes(IxDyn(&[2, 0, 1]));
        let t = Tensor::try_from(p.clone()).unwrap();
        assert_eq!(t.strides(), &[1, 12, 4]);
        assert_same(&t, &p.to_owned());
        // Negative strides and steps are gathered.
        let r = a.slice(s![.., ..;-1, 1..;2]).into_dyn();
        let t = Tensor::from_ndarray(&r).unwrap();
        assert!(t.is_contiguous());
        assert_same(&t, &r.to_owned());
        // Back to ndarray, from a view.
        let back: ArrayD<T> = Tensor::try_from(a.clone())
            .unwrap()
            .permute(&[2, 0, 1])
            .unwrap()
            .to_ndarray()
            .unwrap();
        assert_eq!(back, p.to_owned());
        assert!(back.is_standard_layout());
    }

    #[test]
    fn every_dtype_round_trips() {
        round_trip::<f16>();
        round_trip::<bf16>();
        round_trip::<f32>();
        round_trip::<f64>();
        round_trip::<i32>();
        round_trip::<i64>();
        round_trip::<u8>();
        let b = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![true, false, false, true]).unwrap();
        assert_same(&Tensor::try_from(b.clone()).unwrap(), &b);
        assert_eq!(
            Tensor::from_ndarray(&b)
                .unwrap()
                .to_ndarray::<bool>()
                .unwrap(),
            b
        );
    }

    #[test]
    fn owned_arrays_keep_their_layout() {
        // Fortran order: column-major strides survive.
        let f = Array::from_shape_vec((2, 3).f(), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let t = Tensor::try_from(f.clone()).unwrap();
        assert_eq!(t.strides(), &[1, 2]);
        assert_same(&t, &f.into_dyn());
        // A sliced owned array: the tensor views the kept buffer at an offset.
        let mut a = iota::<i64>(&[4, 5]);
        a.slice_collapse(s![1..3, 2..]);
        let t = Tensor::try_from(a.clone()).unwrap();
        assert_eq!((t.storage_offset(), t.strides()), (7, &[5isize, 1][..]));
        assert_same(&t, &a);
        // An inverted axis is gathered.
        let mut inv = iota::<i32>(&[3, 2]);
        inv.invert_axis(Axis(0));
        assert_same(&Tensor::try_from(inv.clone()).unwrap(), &inv);
    }

    #[test]
    fn empty_and_zero_d_arrays() {
        let e = ArrayD::<f64>::zeros(IxDyn(&[0, 3]));
        let t = Tensor::try_from(e).unwrap();
        assert_eq!((t.shape(), t.dtype()), (&[0usize, 3][..], DType::F64));
        assert_eq!(t.to_ndarray::<f64>().unwrap().shape(), &[0, 3]);
        let z = ndarray::arr0(2.5f32).into_dyn();
        let t = Tensor::from_ndarray(&z).unwrap();
        assert_eq!(t.shape(), &[] as &[usize]);
        assert_eq!(t.to_ndarray::<f32>().unwrap(), z);
        assert!(matches!(
            t.to_ndarray::<f64>(),
            Err(tensor_reduce::Error::DTypeMismatch { .. })
        ));
    }

    fn from_device(device: Device) {
        let a = iota::<f32>(&[3, 4]);
        let t = Tensor::try_from(a.clone())
            .unwrap()
            .to_device(device)
            .unwrap();
        assert_eq!(
            t.t().unwrap().to_ndarray::<f32>().unwrap(),
            a.t().to_owned()
        );
        // A sum of an ndarray input, against ndarray's own sum.
        let sums = t.sum(&[0], false).unwrap().to_ndarray::<f32>().unwrap();
        assert_eq!(sums, a.sum_axis(Axis(0)));
    }

    crate::backend_tests! {
        to_ndarray_from_any_device => from_device;
    }
}
