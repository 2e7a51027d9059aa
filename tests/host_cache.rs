//! The host cache of large results: a dropped result's memory is kept for
//! the next one of its size, and what the next result holds is its own
//! values, never the last owner's. One test in its own binary, so that no
//! other test takes or offers buffers meanwhile.

use tensor_reduce::{cpu, DType, Tensor};

/// Rows of 2 whose sums are `base + 4i + 1`, as an i32 tensor.
fn rows(n: usize, base: i32) -> Tensor {
    let values: Vec<i32> = (0..n as i32)
        .flat_map(|i| [base + 2 * i, 2 * i + 1])
        .collect();
    Tensor::from_vec(values, &[n, 2]).unwrap()
}

#[test]
fn a_dropped_large_result_is_kept_and_the_next_holds_its_own_values() {
    // 2^21 rows of 2 sum into 2^21 i64s: a 16 MiB result, the smallest kept.
    let n = 1usize << 21;
    let result_bytes = n * 8;
    let (a, b) = (rows(n, 0), rows(n, 1000));
    cpu::release_cached_memory();

    let first = a.sum(&[1], false).unwrap();
    assert_eq!(first.dtype(), DType::I64);
    drop(first);
    assert_eq!(cpu::release_cached_memory(), result_bytes);
    assert_eq!(cpu::release_cached_memory(), 0);

    // Kept once more, then written by results of other values and dtypes.
    drop(a.sum(&[1], false).unwrap());
    let second = b.sum(&[1], false).unwrap().to_vec::<i64>().unwrap();
    assert!(second
        .iter()
        .enumerate()
        .all(|(i, &s)| s == 1000 + 4 * i as i64 + 1));
    let b = b.to_dtype(DType::F64).unwrap();
    let third = b.amax(&[1], false).unwrap().to_vec::<f64>().unwrap();
    assert!(third
        .iter()
        .enumerate()
        .all(|(i, &m)| m == (1000 + 2 * i as i64).max(2 * i as i64 + 1) as f64));
    // A result smaller than the kept range is not kept.
    cpu::release_cached_memory();
    drop(a.narrow(0, 0, n / 2).unwrap().sum(&[1], false).unwrap());
    assert_eq!(cpu::release_cached_memory(), 0);
}
