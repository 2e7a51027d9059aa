//! The reduction iterator: a port of PyTorch's `TensorIterator` as
//! `TensorIterator::reduce_op(out, in)` builds it.
//!
//! Both backends consume this one description of a reduction. Building it
//! takes four steps, each a small pure function below, in PyTorch's order:
//!
//! 1. `compute_strides`: byte strides for the two operands, **output first**
//!    (PyTorch's operand order). The output is the contiguous `keepdim`-shaped
//!    result, viewed with stride 0 on every reduced dim of size > 1.
//! 2. `reorder_dimensions`: reduced dims to the front, then ascending stride
//!    (the output's stride decides first, then the input's), so that dim 0 is
//!    the fastest-moving one. Note that this *inverts* a C-contiguous order.
//! 3. `coalesce_dimensions`: neighbours merge when either has size 1, or when
//!    `shape[d] * stride[d] == stride[d + 1]` for *every* operand. Because the
//!    output stride is 0 on reduced dims, a reduced and a kept dim never merge.
//! 4. On demand, `with_32bit_indexing` splits an iterator whose byte offsets
//!    exceed `i32::MAX` into halves along the dim of largest extent, marking
//!    the halves that must accumulate into (or not finalize) the output.
//!
//! After the build, dims `0..num_reduce_dims()` are reduced and the rest are
//! output dims.
//!
//! ```
//! use tensor_reduce::{iter::TensorIterator, DType, Device, Tensor};
//! // The worked example of seed 002: [16,128,64,128].sum(1) in f32.
//! let x = Tensor::zeros(&[16, 128, 64, 128], DType::F32, Device::Cpu)?;
//! let it = TensorIterator::reduce_op(&x, &[false, true, false, false], DType::F32)?;
//! assert_eq!(it.shape(), &[128, 8192, 16]);
//! assert_eq!(it.strides(TensorIterator::INPUT), &[32768, 4, 4194304]);
//! assert_eq!(it.strides(TensorIterator::OUTPUT), &[0, 4, 32768]);
//! assert_eq!(it.num_reduce_dims(), 1);
//! # Ok::<(), tensor_reduce::Error>(())
//! ```

use crate::tensor::{checked_shape, checked_span, INLINE_RANK};
use crate::{DType, Error, Result, Tensor};
use smallvec::SmallVec;

/// Per-dim values, inline for small ranks.
pub type DimVec<T> = SmallVec<[T; INLINE_RANK]>;

/// PyTorch's reduction `TensorIterator`, restricted to one output and one input.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorIterator {
    shape: DimVec<usize>,
    /// Byte strides, `[OUTPUT, INPUT]`.
    strides: [DimVec<i64>; 2],
    /// Byte offset of each operand's first element from its storage base.
    data_offsets: [u64; 2],
    element_sizes: [usize; 2],
    /// Start of this (sub-)iterator in each of its dims, in elements.
    view_offsets: DimVec<usize>,
    /// For each iterator dim, the tensor dims merged into it (fastest first).
    source_dims: DimVec<DimVec<usize>>,
    accumulate: bool,
    final_output: bool,
}

impl TensorIterator {
    /// Operand index of the output (PyTorch puts outputs first).
    pub const OUTPUT: usize = 0;
    /// Operand index of the input (`ntensors() - 1` in PyTorch).
    pub const INPUT: usize = 1;

    /// Builds the iterator for reducing `input` over the dims where
    /// `reduce_mask` is true, into a fresh contiguous output of `out_dtype`.
    ///
    /// The mask has one entry per dim of `input` (a 0-d input takes an empty
    /// mask). Errors as [`TensorIterator::reduction`] does.
    pub fn reduce_op(
        input: &Tensor,
        reduce_mask: &[bool],
        out_dtype: DType,
    ) -> Result<TensorIterator> {
        TensorIterator::reduction(
            input.shape(),
            input.strides(),
            input.storage_offset(),
            input.dtype().size_in_bytes(),
            out_dtype.size_in_bytes(),
            reduce_mask,
        )
    }

    /// [`TensorIterator::reduce_op`] from a raw layout: `shape`, element
    /// `strides` and element `offset` of the input, and the element sizes.
    ///
    /// Errors with [`Error::InvalidView`] when `strides` or `reduce_mask`
    /// do not have one entry per dim or a stride is negative, and with
    /// [`Error::ShapeOverflow`] or [`Error::LayoutOverflow`] when a byte
    /// stride or offset of the input or the output would not be
    /// addressable (so none of the iterator's byte arithmetic can wrap).
    pub fn reduction(
        shape: &[usize],
        strides: &[isize],
        offset: usize,
        input_element_size: usize,
        output_element_size: usize,
        reduce_mask: &[bool],
    ) -> Result<TensorIterator> {
        if shape.len() != strides.len() || shape.len() != reduce_mask.len() {
            return Err(Error::InvalidView(format!(
                "a reduction over shape {shape:?} needs one stride and one mask entry per dim, got strides {strides:?} and mask {reduce_mask:?}"
            )));
        }
        checked_span(shape, strides, offset, input_element_size)?;
        checked_shape(&output_shape(shape, reduce_mask), output_element_size)?;
        let mut it = TensorIterator {
            shape: shape.into(),
            strides: compute_strides(
                shape,
                strides,
                input_element_size,
                output_element_size,
                reduce_mask,
            ),
            data_offsets: [0, (offset * input_element_size) as u64],
            element_sizes: [output_element_size, input_element_size],
            view_offsets: SmallVec::from_elem(0, shape.len()),
            source_dims: (0..shape.len()).map(|d| smallvec::smallvec![d]).collect(),
            accumulate: false,
            final_output: true,
        };
        it.reorder_dimensions();
        it.coalesce_dimensions();
        Ok(it)
    }

    /// Number of iterator dims after reordering and coalescing.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Iterator shape; dim 0 moves fastest.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Byte strides of operand `arg` ([`Self::OUTPUT`] or [`Self::INPUT`]).
    pub fn strides(&self, arg: usize) -> &[i64] {
        &self.strides[arg]
    }

    /// Byte offset of operand `arg`'s first element from its storage base.
    pub fn data_offset(&self, arg: usize) -> u64 {
        self.data_offsets[arg]
    }

    /// Element size in bytes of operand `arg`.
    pub fn element_size(&self, arg: usize) -> usize {
        self.element_sizes[arg]
    }

    /// Where this sub-iterator starts in each dim (all zero unless split).
    pub fn view_offsets(&self) -> &[usize] {
        &self.view_offsets
    }

    /// The tensor dims merged into iterator dim `d`, fastest first.
    pub fn source_dims(&self, d: usize) -> &[usize] {
        &self.source_dims[d]
    }

    /// Whether this part must combine with what an earlier part of a split
    /// reduction left in the output.
    pub fn accumulate(&self) -> bool {
        self.accumulate
    }

    /// Whether this part writes the final value (false for the first half of
    /// a reduced dim split in two: the second half finishes it).
    pub fn final_output(&self) -> bool {
        self.final_output
    }

    /// Total number of (input) elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Number of leading dims where the output stride is 0.
    pub fn num_reduce_dims(&self) -> usize {
        self.strides[Self::OUTPUT]
            .iter()
            .filter(|&&s| s == 0)
            .count()
    }

    /// Number of output elements: the product of the non-reduced dims.
    pub fn num_output_elements(&self) -> usize {
        self.shape
            .iter()
            .zip(&self.strides[Self::OUTPUT])
            .filter(|(_, &s)| s != 0)
            .map(|(&d, _)| d)
            .product()
    }

    /// Whether dim `d` is reduced and has more than one element.
    pub fn is_dim_reduced(&self, d: usize) -> bool {
        self.strides[Self::OUTPUT][d] == 0 && self.shape[d] > 1
    }

    /// PyTorch's `can_use_32bit_indexing`: the element count and every
    /// operand's largest byte offset (plus one) fit in an `i32`.
    pub fn can_use_32bit_indexing(&self) -> bool {
        let max = i32::MAX as i64;
        if self.numel() as u64 > max as u64 {
            return false;
        }
        self.strides.iter().all(|strides| {
            // Saturating: an empty iterator's extents are not bounded by any
            // allocation, and a saturated one is too large either way.
            let extent: i64 = self
                .shape
                .iter()
                .zip(strides)
                .map(|(&d, &s)| (d as i64 - 1).max(0).saturating_mul(s))
                .fold(0, i64::saturating_add);
            // PyTorch's `1 + extent <= INT32_MAX`.
            extent < max
        })
    }

    /// The dim with the largest byte extent over all operands (the last one
    /// wins ties in PyTorch's scan from the outermost dim down).
    pub fn get_dim_to_split(&self) -> usize {
        let mut best: Option<(i64, usize)> = None;
        for d in (0..self.ndim()).rev() {
            // PyTorch skips only empty dims; when a broadcast dim (stride 0
            // everywhere) holds most elements, every extent can be 0 and it
            // would pick a dim of one element, which cannot be split.
            if self.shape[d] < 2 {
                continue;
            }
            for strides in &self.strides {
                let extent = (self.shape[d] as i64 - 1).saturating_mul(strides[d].abs());
                if best.is_none_or(|(e, _)| extent > e) {
                    best = Some((extent, d));
                }
            }
        }
        best.expect("internal: get_dim_to_split on an iterator with no non-empty dim")
            .1
    }

    /// Splits dim `d` in two: `self` keeps the upper half and the returned
    /// iterator the lower. If `d` is reduced, the lower half no longer
    /// finalizes the output and the upper half accumulates onto it.
    pub fn split(&mut self, d: usize) -> TensorIterator {
        assert!(
            self.shape[d] >= 2,
            "internal: split needs a dim of size >= 2"
        );
        let overlaps = self.is_dim_reduced(d);
        let copy_size = self.shape[d] / 2;
        let this_size = self.shape[d] - copy_size;
        let mut copy = self.clone();
        copy.narrow(d, 0, copy_size);
        copy.final_output &= !overlaps;
        self.narrow(d, copy_size, this_size);
        self.accumulate |= overlaps;
        copy
    }

    fn narrow(&mut self, d: usize, start: usize, size: usize) {
        self.shape[d] = size;
        self.view_offsets[d] += start;
        for (offset, strides) in self.data_offsets.iter_mut().zip(&self.strides) {
            *offset = (*offset as i64 + strides[d] * start as i64) as u64;
        }
    }

    /// PyTorch's `with_32bit_indexing`: sub-iterators, in the order PyTorch
    /// visits them (lower halves first), each 32-bit indexable. An iterator
    /// that already is yields just itself.
    pub fn with_32bit_indexing(&self) -> Vec<TensorIterator> {
        self.with_32bit_indexing_at_most(usize::MAX)
            .expect("internal: no limit on the number of pieces")
    }

    /// [`Self::with_32bit_indexing`], or `None` as soon as it would need more
    /// than `limit` pieces (an iterator described without allocating it,
    /// as `explain` does, can have byte extents far beyond any memory).
    pub fn with_32bit_indexing_at_most(&self, limit: usize) -> Option<Vec<TensorIterator>> {
        let mut out = Vec::new();
        let mut stack = vec![self.clone()];
        while let Some(mut it) = stack.pop() {
            if it.can_use_32bit_indexing() {
                if out.len() == limit {
                    return None;
                }
                out.push(it);
                continue;
            }
            let d = it.get_dim_to_split();
            let lower = it.split(d);
            stack.push(it);
            stack.push(lower);
        }
        Some(out)
    }

    /// [`Self::with_kept_dims_by_input_stride`] where that moves a loop over
    /// outputs from scattered reads to closer ones, else `None`. A loop
    /// walks the first kept dim when no reduced dim strides the input less;
    /// PyTorch's first kept dim (the output's fastest) scatters when it
    /// strides the input by `scattered_bytes` or more (or is a broadcast,
    /// which moves nothing), and the input's order helps when its first kept
    /// dim is no broadcast and strides the input less than PyTorch's and
    /// than the fastest reduced dim. `[256, 256, 1024].permute(2, 0, 1)` over its last dim: PyTorch's
    /// first kept dim strides the input by 256 KiB, the input's by 4 B.
    /// Each backend passes the unit its loads move (a GPU's sector, a CPU's
    /// cache line).
    pub fn kept_dims_by_input(&self, scattered_bytes: u64) -> Option<TensorIterator> {
        let nrd = self.num_reduce_dims();
        if nrd == 0 || self.ndim() - nrd < 2 {
            return None;
        }
        let input = &self.strides[Self::INPUT];
        // The input's first kept dim is the one of least non-zero stride
        // (0 when every kept dim is a broadcast): decided without building
        // the reordered iterator, which a CPU call would pay for each time.
        let ours = input[nrd..]
            .iter()
            .map(|s| s.unsigned_abs())
            .filter(|&s| s != 0)
            .min()
            .unwrap_or(0);
        let (pytorchs, reduced) = (input[nrd].unsigned_abs(), input[0].unsigned_abs());
        let loop_walks_outputs = ours < reduced;
        let moves_less = ours != 0 && (pytorchs == 0 || ours < pytorchs);
        let pytorch_scatters = pytorchs == 0 || pytorchs >= scattered_bytes;
        (loop_walks_outputs && moves_less && pytorch_scatters)
            .then(|| self.with_kept_dims_by_input_stride())
    }

    /// This iterator with its kept dims in ascending order of input stride
    /// (stable for equal strides; broadcast dims last), the reduced dims
    /// still first and in their order. PyTorch's order puts the output's
    /// fastest dim first, which for a permuted view of a contiguous tensor
    /// can be a dim the input strides by megabytes. The dims are only
    /// permuted, operands' strides and view offsets with them: no
    /// coalescing, which would drop a split iterator's view offsets.
    pub fn with_kept_dims_by_input_stride(&self) -> TensorIterator {
        let nrd = self.num_reduce_dims();
        let input = &self.strides[Self::INPUT];
        let mut perm: DimVec<usize> = (0..self.ndim()).collect();
        // A broadcast dim (stride 0) moves nothing: it goes last.
        perm[nrd..].sort_by_key(|&d| match input[d].unsigned_abs() {
            0 => u64::MAX,
            stride => stride,
        });
        let mut it = self.clone();
        it.shape = perm.iter().map(|&p| self.shape[p]).collect();
        for (mine, theirs) in it.strides.iter_mut().zip(&self.strides) {
            *mine = perm.iter().map(|&p| theirs[p]).collect();
        }
        it.view_offsets = perm.iter().map(|&p| self.view_offsets[p]).collect();
        it.source_dims = perm.iter().map(|&p| self.source_dims[p].clone()).collect();
        it
    }

    /// Moves reduced dims to the front, then sorts by ascending stride with
    /// PyTorch's three-way comparison and insertion sort (stable for ties the
    /// comparator calls ambiguous).
    fn reorder_dimensions(&mut self) {
        let ndim = self.ndim();
        if ndim <= 1 {
            return;
        }
        // Start from the reversed order: C-contiguous dims become fastest-first.
        let mut perm: DimVec<usize> = (0..ndim).rev().collect();
        for i in 1..ndim {
            let mut dim1 = i;
            for dim0 in (0..i).rev() {
                match self.should_swap(perm[dim0], perm[dim1]) {
                    std::cmp::Ordering::Greater => {
                        perm.swap(dim0, dim1);
                        dim1 = dim0;
                    }
                    std::cmp::Ordering::Less => break,
                    std::cmp::Ordering::Equal => {}
                }
            }
        }
        self.shape = perm.iter().map(|&p| self.shape[p]).collect();
        for strides in &mut self.strides {
            *strides = perm.iter().map(|&p| strides[p]).collect();
        }
        self.view_offsets = perm.iter().map(|&p| self.view_offsets[p]).collect();
        self.source_dims = perm.iter().map(|&p| self.source_dims[p].clone()).collect();
    }

    /// `Greater` if `dim0` should come after `dim1`, `Less` if before, `Equal`
    /// when no operand decides.
    fn should_swap(&self, dim0: usize, dim1: usize) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        for (arg, strides) in self.strides.iter().enumerate() {
            let (s0, s1) = (strides[dim0], strides[dim1]);
            if arg == Self::OUTPUT && (s0 == 0) != (s1 == 0) {
                // Reduced dims (output stride 0) go to the front.
                return if s1 == 0 { Greater } else { Less };
            }
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return s0.cmp(&s1);
            }
            // Equal strides: the smaller dim goes first.
            if self.shape[dim0] > self.shape[dim1] {
                return Greater;
            }
        }
        Equal
    }

    fn coalesce_dimensions(&mut self) {
        let ndim = self.ndim();
        if ndim <= 1 {
            return;
        }
        let can_coalesce = |it: &Self, d0: usize, d1: usize| {
            let (n0, n1) = (it.shape[d0], it.shape[d1]);
            // An empty dim's size times its stride may not be addressable;
            // then it cannot equal the next stride, which is.
            n0 == 1
                || n1 == 1
                || it
                    .strides
                    .iter()
                    .all(|s| (n0 as i64).checked_mul(s[d0]) == Some(s[d1]))
        };
        let mut prev = 0;
        for d in 1..ndim {
            if can_coalesce(self, prev, d) {
                if self.shape[prev] == 1 {
                    for s in &mut self.strides {
                        s[prev] = s[d];
                    }
                    self.view_offsets[prev] = self.view_offsets[d];
                }
                self.shape[prev] *= self.shape[d];
                let merged = self.source_dims[d].clone();
                self.source_dims[prev].extend(merged);
            } else {
                prev += 1;
                if prev != d {
                    for s in &mut self.strides {
                        s[prev] = s[d];
                    }
                    self.shape[prev] = self.shape[d];
                    self.view_offsets[prev] = self.view_offsets[d];
                    self.source_dims[prev] = self.source_dims[d].clone();
                }
            }
        }
        let n = prev + 1;
        self.shape.truncate(n);
        self.view_offsets.truncate(n);
        self.source_dims.truncate(n);
        for s in &mut self.strides {
            s.truncate(n);
        }
    }
}

/// The output's `keepdim` shape: reduced dims become 1.
fn output_shape(shape: &[usize], reduce_mask: &[bool]) -> DimVec<usize> {
    shape
        .iter()
        .zip(reduce_mask)
        .map(|(&d, &r)| if r { 1 } else { d })
        .collect()
}

/// Byte strides of `[output, input]`. The output is the contiguous result in
/// its `keepdim` shape; a reduced dim of size > 1 is broadcast (stride 0) in
/// it, which is how the iterator knows it is reduced.
fn compute_strides(
    shape: &[usize],
    strides: &[isize],
    input_element_size: usize,
    output_element_size: usize,
    reduce_mask: &[bool],
) -> [DimVec<i64>; 2] {
    let out_shape = output_shape(shape, reduce_mask);
    let out_contig = crate::tensor::contiguous_strides(&out_shape);
    let output = (0..shape.len())
        .map(|d| {
            if out_shape[d] == 1 && shape[d] != 1 {
                0
            } else {
                out_contig[d] as i64 * output_element_size as i64
            }
        })
        .collect();
    let input = strides
        .iter()
        .map(|&s| s as i64 * input_element_size as i64)
        .collect();
    [output, input]
}

#[cfg(test)]
mod tests;
