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
//! went from 6.9-8.0 to 3.7-5.1 ms, and in f16 from 5.3-5.7 to 2.3-2.8;
//! on the 16-core host of the GPU machine, `[64, 1024, 32, 32]` ran at
//! 1.14x torch's CPU with the blocks below, and at 0.89x with two blocks
//! a thread of 32 outputs each, which left threads idle behind the last
//! (docs/performance-history.md).
//!
//! Each leaf's value is the tree's own ([`leaf_value`]), kept in a buffer,
//! and each output then combines its leaf values in its tree's shape
//! ([`combine_tree`]): the same folds in the same association, so the same
//! bits as the tree, whatever the order the leaves were read in.

use super::element::CpuElement;
use super::ops::{Compute, ReduceOps};
use super::outputs::{par_blocks, Outputs, Written};
use super::team;
use super::tree::{leaf_value, maybe_join, split_point, Cursor, Layout, LEAF};
use std::ops::Range;

/// Input bytes a block of outputs reads from each run at a time, at least:
/// contiguous reads this long keep the prefetcher streaming.
const RUN_BLOCK_BYTES: usize = 64 << 10;

/// Leaf values a block of outputs keeps at most, whatever the shape: 128
/// KiB of f32 sums, 1 MiB of the widest states.
const LEAF_VALUES: usize = 1 << 15;

/// Outputs per block where the run-by-run walk applies: the reduced dims
/// are several, the fastest of them contiguous (so each output's inputs
/// are runs of `elem_bytes`-byte elements), and a run is shorter than
/// [`RUN_BLOCK_BYTES`], so that one output at a time would read short
/// pieces; blocks of at least two outputs, whose runs together make
/// `RUN_BLOCK_BYTES`. The threads split both the blocks and each block's
/// runs, so a block's size never limits the parallelism. On a team of two
/// `threads` or more ([`team::takes`]), blocks are smaller where there are
/// outputs enough for two blocks a thread.
pub(super) fn outputs_per_block(l: &Layout, elem_bytes: usize, threads: usize) -> Option<usize> {
    let contiguous_runs = l.reduce.len() >= 2 && l.reduce[0].1 == 1;
    // Leaves hold at most LEAF inputs, so an output of more than this many
    // inputs has too many leaves for two outputs a block (and counting
    // them would cost a call a leaf).
    let few_leaves = l.num_inputs <= LEAF * (LEAF_VALUES / 2);
    if !contiguous_runs || !few_leaves || l.num_inputs == 0 || l.num_outputs < 2 {
        return None;
    }
    let run_bytes = l.reduce[0].0.saturating_mul(elem_bytes.max(1));
    let mut block = RUN_BLOCK_BYTES
        .div_ceil(run_bytes)
        .min(LEAF_VALUES / leaf_count(l.num_inputs))
        .min(l.num_outputs);
    if threads >= 2
        && team::takes(l.input_bytes(elem_bytes))
        && l.num_outputs >= threads.saturating_mul(4)
    {
        // Read from cache, short runs cost little, and the team's fixed
        // split needs blocks it can share out evenly: two a member. On the
        // 16-core host `[32, 64, 56, 56]` over `(0, 2, 3)` (25.7 MB) took
        // 120-130 µs at the best in blocks of 6 outputs (11 blocks), 67-73
        // in blocks of 2. Fewer outputs keep their blocks, whose runs the
        // members share instead: blocks of 2 and 1 made `[64, 3, 64, 64]`
        // 18% slower on two threads than one block of 3.
        block = block.min(l.num_outputs / threads.saturating_mul(2));
    }
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
        // Leaf-major (leaf j of output o at `j * nb + o`), so that a range
        // of groups owns one piece; at most LEAF_VALUES (`outputs_per_block`).
        let nb = bases.len();
        let mut values = vec![op.identity(); nl * nb];
        let leaves_of = Leaves {
            data,
            l,
            op,
            leaves: &leaves,
            bases: &bases,
        };
        leaves_of.fill(&groups, &mut values);
        out.fill_staged(op, |k, accs| {
            for (i, acc) in accs.iter_mut().enumerate() {
                let mut v = (0..nl).map(|j| values[j * nb + k + i]);
                *acc = combine_tree(0, l.num_inputs, &mut v, &|a, b| op.combine(a, b));
            }
        })
    })
}

/// The leaves of a block of outputs, whose values [`Leaves::fill`] computes.
struct Leaves<'a, T, R> {
    data: &'a [T],
    l: &'a Layout,
    op: &'a R,
    /// The tree's leaves, as reduce index ranges.
    leaves: &'a [(usize, usize)],
    /// Each output's first input.
    bases: &'a [usize],
}

impl<T: CpuElement, R> Leaves<'_, T, R> {
    /// Sets `values` (leaf-major from `groups`' first leaf) to the values
    /// of `groups`' leaves for every output, group by group, splitting the
    /// groups across threads where they hold enough work.
    fn fill<W: Compute>(&self, groups: &[Range<usize>], values: &mut [R::Acc])
    where
        R: ReduceOps<W>,
    {
        let nb = self.bases.len();
        let (Some(first), Some(last)) = (groups.first(), groups.last()) else {
            return;
        };
        if groups.len() >= 2 {
            let mid = groups.len() / 2;
            let (a, b) = groups.split_at(mid);
            // The inputs each half reads.
            let split = self.leaves[b[0].start].0;
            let wa = (split - self.leaves[first.start].0).saturating_mul(nb);
            let wb = (self.leaves[last.end - 1].1 - split).saturating_mul(nb);
            let (va, vb) = values.split_at_mut((b[0].start - first.start) * nb);
            maybe_join(wa, wb, || self.fill(a, va), || self.fill(b, vb));
            return;
        }
        for (o, &base) in self.bases.iter().enumerate() {
            for j in first.clone() {
                let (lo, hi) = self.leaves[j];
                values[(j - first.start) * nb + o] =
                    leaf_value(self.data, base, &self.l.reduce, lo, hi, self.op);
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::super::ops::SumOps;
    use super::super::tree::inner_tree;
    use super::*;
    use crate::iter::TensorIterator;
    use crate::{f16, DType, Device, Tensor};

    /// Channel statistics through the run-by-run walk (the sum as the public
    /// one runs it) against each output's tree evaluated directly, bit for
    /// bit.
    fn runs_give_the_trees_bits<T: CpuElement, W: Compute + crate::Element>(
        dtype: DType,
        widen_result: fn(W) -> f64,
    ) where
        SumOps: ReduceOps<W, Acc = W>,
    {
        // 8 outputs of 6 planes of 40 x 50: 12000 inputs, runs of 2000,
        // so leaves inside runs and leaves across two.
        let x = Tensor::randn(&[6, 8, 40, 50], DType::F32, Device::Cpu, 7)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let iter = TensorIterator::reduce_op(&x, &[true, false, true, true], dtype).unwrap();
        let l = Layout::new(&iter);
        assert!(outputs_per_block(&l, dtype.size_in_bytes(), 1).is_some());
        let data = x.to_vec::<T>().unwrap();
        let got = super::super::sum_for_tests::<T, W>(&x, &[true, false, true, true])
            .to_dtype(DType::F64)
            .unwrap();
        let got: Vec<u64> = got
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u64> = (0..8)
            .map(|o| {
                let base = l.base + Cursor::new(&l.output, o).offset;
                let acc = inner_tree(&data, base, &l.reduce, 0, l.num_inputs, &SumOps);
                widen_result(acc).to_bits()
            })
            .collect();
        assert_eq!(got, want, "{dtype:?}");
    }

    #[test]
    fn runs_give_the_trees_bits_in_every_float_type() {
        runs_give_the_trees_bits::<f32, f32>(DType::F32, f64::from);
        runs_give_the_trees_bits::<f64, f64>(DType::F64, |v| v);
        // The f16 result is the f32 sum rounded to f16.
        runs_give_the_trees_bits::<f16, f32>(DType::F16, |v| f16::from_f32(v).to_f64());
    }

    /// The layout of a contiguous `[n, c, hw]` over `(0, 2)`, without its
    /// bytes.
    fn channels(n: usize, c: usize, hw: usize) -> Layout {
        Layout {
            reduce: vec![(hw, 1), (n, c * hw)],
            output: vec![(c, hw)],
            base: 0,
            num_outputs: c,
            num_inputs: n * hw,
        }
    }

    #[test]
    fn short_runs_and_few_outputs_keep_the_tree() {
        // Runs of 64 KiB: one output at a time reads them whole.
        assert_eq!(outputs_per_block(&channels(4, 8, 16384), 4, 1), None);
        // One output.
        assert_eq!(outputs_per_block(&channels(4, 1, 100), 4, 1), None);
    }

    #[test]
    fn blocks_hold_64_kib_of_runs_or_two_a_team_member() {
        // Runs of 4 KiB, 1 MB in all, one thread: 16 outputs a block.
        let small = channels(4, 64, 1024);
        assert_eq!(outputs_per_block(&small, 4, 1), Some(16));
        // On 16 threads the team takes it: blocks of 2, two a member.
        assert_eq!(outputs_per_block(&small, 4, 16), Some(2));
        // Too few outputs for two blocks a member: the byte rule.
        assert_eq!(outputs_per_block(&channels(64, 3, 4096), 4, 2), Some(3));
        // 205 MB: rayon splits it, and blocks keep 64 KiB of runs.
        let large = channels(256, 64, 56 * 56);
        assert_eq!(outputs_per_block(&large, 4, 16), Some(6));
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
