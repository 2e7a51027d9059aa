//! Tensors over cudarc buffers: wrapped without a copy, reduced on the
//! caller's stream, results handed back as cudarc buffers. Every test needs
//! a GPU.

mod common;

use cudarc::driver::CudaContext;
use std::sync::Arc;
use tensor_reduce::{Device, Error, Tensor};

fn stream() -> Arc<cudarc::driver::CudaStream> {
    common::cuda_device();
    CudaContext::new(0).unwrap().new_stream().unwrap()
}

#[test]
#[ignore = "needs a CUDA device"]
fn wrapped_buffers_reduce_on_their_stream() {
    let stream = stream();
    let buf = stream
        .clone_htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap();
    let x = Tensor::from_cuda_slice(buf, &[2, 3]).unwrap();
    assert_eq!(x.device(), Device::Cuda(0));
    let x_stream = x.cuda_stream().unwrap();
    assert_eq!(x_stream.cu_stream(), stream.cu_stream());
    let cols = x.sum(&[0], false).unwrap();
    assert_eq!(cols.cuda_stream().unwrap().cu_stream(), stream.cu_stream());
    let out = cols.to_cuda_slice::<f32>().unwrap();
    assert_eq!(out.stream().cu_stream(), stream.cu_stream());
    assert_eq!(stream.clone_dtoh(&out).unwrap(), vec![5.0, 7.0, 9.0]);
    // A transposed view comes back gathered on the device.
    let t = x.t().unwrap().to_cuda_slice::<f32>().unwrap();
    assert_eq!(
        stream.clone_dtoh(&t).unwrap(),
        vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    // Empty buffers wrap too.
    let empty = Tensor::from_cuda_slice(stream.null::<i64>().unwrap(), &[0, 5]).unwrap();
    assert_eq!(
        empty.sum(&[0], false).unwrap().to_vec::<i64>().unwrap(),
        vec![0; 5]
    );
    assert_eq!(empty.to_cuda_slice::<i64>().unwrap().len(), 0);
}

#[test]
#[ignore = "needs a CUDA device"]
fn wrapping_checks_length_and_context() {
    let stream = stream();
    let buf = stream.alloc_zeros::<f32>(6).unwrap();
    assert!(matches!(
        Tensor::from_cuda_slice(buf, &[4, 2]),
        Err(Error::LengthMismatch {
            expected: 8,
            given: 6,
            ..
        })
    ));
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let foreign = other.default_stream().alloc_zeros::<f32>(4).unwrap();
    assert!(matches!(
        Tensor::from_cuda_slice(foreign, &[4]),
        Err(Error::Unsupported(m)) if m.contains("primary context")
    ));
}

#[test]
#[ignore = "needs a CUDA device"]
fn two_streams_reduce_concurrently() {
    // Big enough that a full sum splits over CTAs and uses the staging
    // buffer and semaphores; one workspace per stream keeps them apart.
    const N: usize = 1 << 22;
    let results: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = [1.0f32, 2.0]
            .into_iter()
            .map(|v| {
                s.spawn(move || {
                    let stream = stream();
                    let buf = stream.clone_htod(&vec![v; N]).unwrap();
                    let x = Tensor::from_cuda_slice(buf, &[N]).unwrap();
                    (0..20)
                        .map(|_| x.sum_all().unwrap().to_vec::<f32>().unwrap()[0])
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Sums of ones and twos up to 2^23 are exact in f32.
    assert!(
        results[0].iter().all(|&s| s == N as f32),
        "{:?}",
        results[0]
    );
    assert!(
        results[1].iter().all(|&s| s == 2.0 * N as f32),
        "{:?}",
        results[1]
    );
}
