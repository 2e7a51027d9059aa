use super::TensorIterator as It;

fn contiguous(shape: &[usize]) -> Vec<isize> {
    crate::tensor::contiguous_strides(shape).to_vec()
}

fn mask(rank: usize, dims: &[usize]) -> Vec<bool> {
    (0..rank).map(|d| dims.contains(&d)).collect()
}

#[test]
fn seed_worked_example() {
    // seed 002: x = [16,128,64,128] f32, x.sum(1).
    let shape = [16, 128, 64, 128];
    let it = It::reduction(&shape, &contiguous(&shape), 0, 4, 4, &mask(4, &[1])).unwrap();
    assert_eq!(it.shape(), &[128, 8192, 16]);
    assert_eq!(it.strides(It::INPUT), &[32768, 4, 4194304]);
    assert_eq!(it.strides(It::OUTPUT), &[0, 4, 32768]);
    assert_eq!(it.num_reduce_dims(), 1);
    assert_eq!(it.num_output_elements(), 8192 * 16);
    assert_eq!(it.source_dims(1), &[3, 2]);
    assert!(it.can_use_32bit_indexing());
}

#[test]
fn full_reduction_coalesces_to_one_dim() {
    let shape = [7, 11, 13];
    let it = It::reduction(&shape, &contiguous(&shape), 0, 4, 4, &mask(3, &[0, 1, 2])).unwrap();
    assert_eq!(it.shape(), &[1001]);
    assert_eq!(it.strides(It::INPUT), &[4]);
    assert_eq!(it.strides(It::OUTPUT), &[0]);
    assert_eq!(it.num_reduce_dims(), 1);
    assert_eq!(it.num_output_elements(), 1);
}

#[test]
fn reduced_and_kept_dims_never_merge() {
    // [7,11,13].sum((0,2)): reduced dims 2 (stride 4) and 0 (stride 572) go first.
    let shape = [7, 11, 13];
    let it = It::reduction(&shape, &contiguous(&shape), 0, 4, 4, &mask(3, &[0, 2])).unwrap();
    assert_eq!(it.shape(), &[13, 7, 11]);
    assert_eq!(it.strides(It::INPUT), &[4, 572, 52]);
    assert_eq!(it.strides(It::OUTPUT), &[0, 0, 4]);
    assert_eq!(it.num_reduce_dims(), 2);
}

#[test]
fn transposed_input_reorders_reduced_dim_by_input_stride() {
    // x = [8192, 8192] contiguous, x.t().sum(1): the reduced dim of the view
    // is the slow dim in memory; the kept one is contiguous.
    let (n, m) = (64usize, 32usize);
    let strides = [1isize, n as isize]; // transpose of a contiguous [m, n]... shape [n, m]
    let it = It::reduction(&[n, m], &strides, 0, 4, 4, &mask(2, &[1])).unwrap();
    assert_eq!(it.shape(), &[m, n]);
    assert_eq!(it.strides(It::INPUT), &[4 * n as i64, 4]);
    assert_eq!(it.strides(It::OUTPUT), &[0, 4]);
}

#[test]
fn kept_dims_follow_the_output_order_first() {
    // permute(0,2,1,3) of a contiguous [64,128,256,32], reduce view dims 1 and 3.
    // View shape [64,256,128,32], strides [1048576, 32, 8192, 1].
    let it = It::reduction(
        &[64, 256, 128, 32],
        &[1048576, 32, 8192, 1],
        0,
        4,
        4,
        &mask(4, &[1, 3]),
    )
    .unwrap();
    // Reduced: view dim 3 (stride 4 B) then view dim 1 (128 B), which are
    // contiguous with each other in memory (32 * 4 == 128) and coalesce.
    // Kept: view dim 2 (out stride 4) then view dim 0 (out stride 512),
    // which are adjacent in both the output and the input (base dims 1, 0).
    assert_eq!(it.shape(), &[32 * 256, 128 * 64]);
    assert_eq!(it.strides(It::INPUT), &[4, 32768]);
    assert_eq!(it.strides(It::OUTPUT), &[0, 4]);
    assert_eq!(it.source_dims(1), &[2, 0]);
    assert_eq!(it.source_dims(0), &[3, 1]);
}

#[test]
fn size_one_dims_disappear() {
    // [3,1,5].sum(1): the reduced dim has size 1, so nothing is reduced.
    let it = It::reduction(&[3, 1, 5], &[5, 5, 1], 0, 4, 4, &mask(3, &[1])).unwrap();
    assert_eq!(it.shape(), &[15]);
    assert_eq!(it.num_reduce_dims(), 0);
    assert_eq!(it.num_output_elements(), 15);
}

#[test]
fn expanded_dims_keep_stride_zero_in_the_input() {
    // A [4] tensor expanded to [3, 4] (stride 0 on dim 0), summed over dim 0.
    let it = It::reduction(&[3, 4], &[0, 1], 0, 4, 4, &mask(2, &[0])).unwrap();
    assert_eq!(it.shape(), &[3, 4]);
    assert_eq!(it.strides(It::INPUT), &[0, 4]);
    assert_eq!(it.strides(It::OUTPUT), &[0, 4]);
}

#[test]
fn zero_d_input() {
    let it = It::reduction(&[], &[], 0, 8, 8, &[]).unwrap();
    assert_eq!(it.ndim(), 0);
    assert_eq!(it.numel(), 1);
    assert_eq!(it.num_output_elements(), 1);
    assert_eq!(it.num_reduce_dims(), 0);
}

#[test]
fn offsets_are_in_bytes() {
    let it = It::reduction(&[10], &[1], 3, 2, 2, &[true]).unwrap();
    assert_eq!(it.data_offset(It::INPUT), 6);
    assert_eq!(it.data_offset(It::OUTPUT), 0);
}

#[test]
fn split_for_32bit_indexing_halves_the_largest_dim() {
    // 2^30 f32 elements in [2^15, 2^15], column sum: 4 GiB of input.
    let n = 1usize << 15;
    let it = It::reduction(&[n, n], &[n as isize, 1], 0, 4, 4, &mask(2, &[0])).unwrap();
    assert!(!it.can_use_32bit_indexing());
    let parts = it.with_32bit_indexing();
    assert!(parts.iter().all(|p| p.can_use_32bit_indexing()));
    // The reduced dim (extent (n-1)*4n bytes) is split first, so every part
    // after the first accumulates and only the last ones finalize.
    assert_eq!(parts.iter().map(|p| p.numel()).sum::<usize>(), n * n);
    assert!(!parts[0].accumulate());
    assert!(!parts[0].final_output());
    assert!(parts.last().unwrap().accumulate());
    assert!(parts.last().unwrap().final_output());
    // Lower halves come first, in address order.
    let offsets: Vec<u64> = parts.iter().map(|p| p.data_offset(It::INPUT)).collect();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");
    assert_eq!(parts[0].view_offsets(), &[0, 0]);
}

#[test]
fn split_of_an_output_dim_keeps_each_part_final() {
    // [2^31 + 2] bytes of u8 rows reduced along the short inner dim.
    let rows = (1usize << 30) + 1;
    let it = It::reduction(&[rows, 2], &[2, 1], 0, 1, 8, &mask(2, &[1])).unwrap();
    assert!(!it.can_use_32bit_indexing());
    for p in it.with_32bit_indexing() {
        assert!(p.final_output() && !p.accumulate());
    }
}

#[test]
fn a_broadcast_dim_holding_most_elements_gets_split() {
    // [2^33 broadcast, 3] summed over dim 0: the byte extents fit in 32 bits
    // but the element count does not. Once the kept dim is split to pieces
    // of one element, every extent is 0, and only the broadcast dim can be
    // halved further.
    let it = It::reduction(&[1 << 33, 3], &[0, 1], 0, 4, 4, &mask(2, &[0])).unwrap();
    let pieces = it.with_32bit_indexing();
    assert!(pieces.iter().all(|p| p.can_use_32bit_indexing()));
    assert_eq!(pieces.iter().map(|p| p.numel()).sum::<usize>(), 3 << 33);
    // Each piece at most 2^31 - 1 elements, and halving gives 2^30.
    assert!(pieces.iter().all(|p| p.numel() == 1 << 30));
}

#[test]
fn kept_dims_sort_by_input_stride_with_broadcast_dims_last() {
    // [5, 3, 4, 6] over dim 2: input strides 1, 0 (broadcast), 30, 5
    // elements (f32); the contiguous result [5, 3, 6] strides 18, 6, 1.
    // PyTorch's order: the reduced dim, then by the output: 6 (out 4 B),
    // 3 (24 B), 5 (72 B). By the input: 5 (4 B), 6 (20 B), then the
    // broadcast 3 last. A split along the last kept dim keeps its view
    // offset with it.
    let it = It::reduction(&[5, 3, 4, 6], &[1, 0, 30, 5], 0, 4, 4, &mask(4, &[2])).unwrap();
    assert_eq!(it.shape(), &[4, 6, 3, 5]);
    let mut split = it.clone();
    let first = split.split(3);
    for part in [first, split] {
        let sorted = part.with_kept_dims_by_input_stride();
        assert_eq!(sorted.shape(), &[4, part.shape()[3], 6, 3]);
        assert_eq!(sorted.strides(It::INPUT), &[120, 4, 20, 0]);
        assert_eq!(sorted.strides(It::OUTPUT), &[0, 72, 4, 24]);
        assert_eq!(sorted.source_dims(1), &[0]);
        assert_eq!(sorted.source_dims(3), &[1]);
        let offsets = part.view_offsets();
        assert_eq!(
            sorted.view_offsets(),
            &[offsets[0], offsets[3], offsets[1], offsets[2]]
        );
        assert_eq!(sorted.data_offset(It::INPUT), part.data_offset(It::INPUT));
        assert_eq!(sorted.numel(), part.numel());
    }
}

#[test]
fn kept_dims_move_to_the_input_order_only_where_the_results_scatter() {
    // [3, 4, 5].permute(2, 0, 1), f32: shape [5, 3, 4], input strides 4,
    // 80 and 20 B. Over dim 2 (20 B), PyTorch's first kept dim is the
    // result's fastest, the one of 80 B; the input's is the one of 4 B.
    let (shape, strides) = ([5, 3, 4], [1, 20, 5]);
    let it = It::reduction(&shape, &strides, 0, 4, 4, &mask(3, &[2])).unwrap();
    assert_eq!(it.strides(It::INPUT), &[20, 80, 4]);
    let ours = it.kept_dims_by_input(80).expect("80 B scatters at 80");
    assert_eq!(ours.strides(It::INPUT), &[20, 4, 80]);
    assert!(it.kept_dims_by_input(81).is_none());
    // Over dim 0 (4 B, the fastest of all): the loop walks the reduced
    // dim, whatever the kept dims' order.
    let rows = It::reduction(&shape, &strides, 0, 4, 4, &mask(3, &[0])).unwrap();
    assert_eq!(rows.strides(It::INPUT)[0], 4);
    assert!(rows.kept_dims_by_input(1).is_none());
}
