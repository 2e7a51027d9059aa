//! Outputs whose inputs are runs far apart, read in the input's order.
//!
//! Channel statistics (`N, C, H, W` over `0, 2, 3`) give each output one
//! plane of every image. The tree of [`super::tree`] reduces one output at a
//! time, so a thread reads one plane, jumps a whole image ahead for the
//! next, and restarts the prefetcher every few KiB: one thread summed 205
//! MB of `[256, 64, 56, 56]` over `(0, 2, 3)` in 14.2 ms, a full sum of the
//! same bytes in 6.2 (the 2-core machine). Here a block of outputs is
//! walked run by run instead: every output's piece of image 0, then of
//! image 1, and so on, which reads contiguously wherever neighbouring
//! outputs' runs are neighbours in memory. The same call on two threads
//! went from 6.9-8.0 to 3.7-4.1 ms, and in f16 from 5.7 to 2.3-2.8.
//!
//! Each leaf's value is the tree's own ([`leaf_value`]), kept in a buffer,
//! and each output then combines its leaf values in its tree's shape
//! ([`combine_tree`]): the same folds in the same association, so the same
//! bits as the tree, whatever the order the leaves were read in.

use super::element::CpuElement;
use super::ops::{Compute, ReduceOps};
use super::outputs::{par_blocks, Outputs, Written};
use super::tree::{leaf_value, split_point, Cursor, Layout, LEAF};

/// Leaf values a block of outputs keeps at most, whatever the shape: 128
/// KiB of f32 sums, 1 MiB of the widest states.
const LEAF_VALUES: usize = 1 << 15;

/// Blocks of outputs per thread: enough that one slow thread leaves work
/// for the others, few enough that a block keeps several outputs.
const BLOCKS_PER_THREAD: usize = 2;

/// Outputs per block where the run-by-run walk applies: the reduced dims
/// are several, the fastest of them contiguous (so each output's inputs are
/// runs), each block holds at least two outputs, and there are enough
/// blocks for `threads` threads (fewer outputs than that keep the tree,
/// whose subtrees spread one output over several threads).
pub(super) fn outputs_per_block(l: &Layout, threads: usize) -> Option<usize> {
    let contiguous_runs = l.reduce.len() >= 2 && l.reduce[0].1 == 1;
    if !contiguous_runs {
        return None;
    }
    let fit = LEAF_VALUES / leaf_count(l.num_inputs);
    let share = l
        .num_outputs
        .div_ceil(threads.max(1).saturating_mul(BLOCKS_PER_THREAD));
    let block = fit.min(share);
    (block >= 2).then_some(block)
}

/// The number of leaves of the tree over `n` inputs, without listing them.
fn leaf_count(n: usize) -> usize {
    if n <= LEAF {
        1
    } else {
        let mid = split_point(n);
        leaf_count(mid) + leaf_count(n - mid)
    }
}

/// The leaves of the pairwise tree over reduce indices `lo..hi`, in order.
fn tree_leaves(lo: usize, hi: usize, leaves: &mut Vec<(usize, usize)>) {
    if hi - lo <= LEAF {
        leaves.push((lo, hi));
        return;
    }
    let mid = lo + split_point(hi - lo);
    tree_leaves(lo, mid, leaves);
    tree_leaves(mid, hi, leaves);
}

/// The tree over reduce indices `lo..hi` of `values`, its leaves' values in
/// order: the association of [`super::tree`]'s `inner_tree`.
fn combine_tree<A>(
    lo: usize,
    hi: usize,
    values: &mut impl Iterator<Item = A>,
    combine: &impl Fn(A, A) -> A,
) -> A {
    if hi - lo <= LEAF {
        return values.next().expect("internal: a value per leaf");
    }
    let mid = lo + split_point(hi - lo);
    let a = combine_tree(lo, mid, values, combine);
    let b = combine_tree(mid, hi, values, combine);
    combine(a, b)
}

/// Reduces every output of `out` in blocks of `block`, each block read run
/// by run (see the module's documentation).
pub(super) fn reduce_by_runs<T: CpuElement, W: Compute, R: ReduceOps<W>>(
    data: &[T],
    l: &Layout,
    op: &R,
    out: Outputs<'_>,
    block: usize,
) -> Written {
    let mut leaves = Vec::new();
    tree_leaves(0, l.num_inputs, &mut leaves);
    // Consecutive leaves inside one run of the fastest reduced dim are read
    // together for each output; a leaf across runs stands alone.
    let n0 = l.reduce[0].0;
    let run_of = |(lo, hi): (usize, usize)| (lo / n0 == (hi - 1) / n0).then_some(lo / n0);
    let mut groups = Vec::new();
    let mut j = 0;
    while j < leaves.len() {
        let mut g = j + 1;
        if let Some(run) = run_of(leaves[j]) {
            while g < leaves.len() && run_of(leaves[g]) == Some(run) {
                g += 1;
            }
        }
        groups.push(j..g);
        j = g;
    }
    let nl = leaves.len();
    par_blocks(out, block, l.num_inputs, &|first, out| {
        let mut cursor = Cursor::new(&l.output, first);
        let bases: Vec<usize> = (0..out.len())
            .map(|_| {
                let base = l.base + cursor.offset;
                cursor.advance();
                base
            })
            .collect();
        // At most LEAF_VALUES (`outputs_per_block`).
        let mut values = vec![op.identity(); bases.len() * nl];
        for g in &groups {
            for (o, &base) in bases.iter().enumerate() {
                for j in g.clone() {
                    let (lo, hi) = leaves[j];
                    values[o * nl + j] = leaf_value(data, base, &l.reduce, lo, hi, op);
                }
            }
        }
        out.fill_staged(op, |k, accs| {
            for (i, acc) in accs.iter_mut().enumerate() {
                let o = k + i;
                let mut v = values[o * nl..(o + 1) * nl].iter().copied();
                *acc = combine_tree(0, l.num_inputs, &mut v, &|a, b| op.combine(a, b));
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::TensorIterator;
    use crate::{DType, Device, Tensor};

    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
    }

    /// Channel statistics through the run-by-run walk (one thread) and
    /// through the tree (a thread per output, too many for blocks of two),
    /// bit for bit, for functors of every kind of state.
    #[test]
    fn runs_give_the_trees_bits() {
        // 8 outputs of 6 planes of 40 x 50: 12000 inputs, runs of 2000,
        // so leaves inside runs and leaves across two.
        let shape = [6, 8, 40, 50];
        let mask = [true, false, true, true];
        for dtype in [DType::F32, DType::F16, DType::F64] {
            let x = Tensor::randn(&shape, dtype, Device::Cpu, 7).unwrap();
            let iter = TensorIterator::reduce_op(&x, &mask, dtype).unwrap();
            let l = Layout::new(&iter);
            assert_eq!(outputs_per_block(&l, 1), Some(4));
            assert_eq!(outputs_per_block(&l, 8), None);
            type Run = fn(&Tensor) -> Tensor;
            let runs: [(&str, Run); 6] = [
                ("sum", |x| x.sum(&[0, 2, 3], false).unwrap()),
                ("mean", |x| x.mean(&[0, 2, 3], false).unwrap()),
                ("var", |x| x.var(&[0, 2, 3], 1.0, false).unwrap()),
                ("norm", |x| x.norm(2.0, &[0, 2, 3], false).unwrap()),
                ("logsumexp", |x| x.logsumexp(&[0, 2, 3], false).unwrap()),
                ("amax", |x| x.amax(&[0, 2, 3], false).unwrap()),
            ];
            for (name, run) in runs {
                let by_runs = on_threads(1, || run(&x)).to_dtype(DType::F64).unwrap();
                let by_tree = on_threads(8, || run(&x)).to_dtype(DType::F64).unwrap();
                let bits = |t: &Tensor| -> Vec<u64> {
                    t.to_vec::<f64>()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect()
                };
                assert_eq!(bits(&by_runs), bits(&by_tree), "{name} of {dtype:?}");
            }
        }
    }

    #[test]
    fn leaves_are_counted_and_listed_as_the_tree_cuts_them() {
        for n in [1, 8, LEAF, LEAF + 1, 3136, 3 * 3136, 802_816, 1_000_003] {
            let mut leaves = Vec::new();
            tree_leaves(0, n, &mut leaves);
            assert_eq!(leaves.len(), leaf_count(n), "n = {n}");
            // In order, end to end, none longer than a leaf.
            assert_eq!(leaves[0].0, 0);
            assert_eq!(leaves.last().unwrap().1, n);
            assert!(leaves.windows(2).all(|w| w[0].1 == w[1].0));
            assert!(leaves.iter().all(|&(lo, hi)| lo < hi && hi - lo <= LEAF));
        }
    }

    #[test]
    fn leaf_values_combine_in_the_trees_association() {
        // Strings record the association: the tree over 3000 inputs halves
        // twice (at multiples of 8) into four leaves.
        let mut leaves = Vec::new();
        tree_leaves(0, 3000, &mut leaves);
        assert_eq!(
            leaves,
            vec![(0, 744), (744, 1496), (1496, 2248), (2248, 3000)]
        );
        let names = ["a", "b", "c", "d"].map(String::from);
        let joined = combine_tree(0, 3000, &mut names.into_iter(), &|x, y| {
            format!("({x} {y})")
        });
        assert_eq!(joined, "((a b) (c d))");
    }
}
