//! Views: new shapes and strides over the same storage, never a copy
//! (except `reshape`, which copies only when no view can express the result,
//! as in torch).

use super::{checked_shape, checked_span, contiguous_strides, Shape, Strides, Tensor};
use crate::{Error, Result};

/// Wraps a possibly negative dim into `0..rank`, as torch does.
pub(crate) fn wrap_dim(dim: isize, rank: usize) -> Result<usize> {
    // torch treats a 0-d tensor as having one wrappable dim (-1 and 0).
    let r = rank.max(1) as isize;
    if dim < -r || dim >= r {
        return Err(Error::DimOutOfRange { dim, rank });
    }
    Ok(if dim < 0 {
        (dim + r) as usize
    } else {
        dim as usize
    })
}

/// A Python slice bound on a dim of `size`: a negative one counts from the
/// end, then it is clamped to `0..=size`.
fn python_index(i: isize, size: usize) -> usize {
    if i < 0 {
        size.saturating_sub(i.unsigned_abs())
    } else {
        i.unsigned_abs().min(size)
    }
}

impl Tensor {
    fn view_with(&self, shape: Shape, strides: Strides, offset: usize) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            shape,
            strides,
            offset,
            dtype: self.dtype,
        }
    }

    /// A view with arbitrary shape, element strides and storage offset, as
    /// `torch.as_strided`. Strides must be non-negative and every element
    /// must lie inside the storage; strides and offsets too large to address
    /// are an [`Error::LayoutOverflow`].
    ///
    /// ```
    /// use tensor_reduce::{Error, Tensor};
    /// let x = Tensor::from_vec((0..8).map(|v| v as f32).collect(), &[8])?;
    /// let diag = x.as_strided(&[2, 2], &[3, 1], 1)?;
    /// assert_eq!(diag.to_vec::<f32>()?, vec![1., 2., 4., 5.]);
    /// let wraps = x.as_strided(&[2, 2, 2, 2], &[1 << 62; 4], 0);
    /// assert!(matches!(wraps, Err(Error::LayoutOverflow { .. })));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Tensor> {
        if shape.len() != strides.len() {
            return Err(Error::InvalidView(format!(
                "shape {shape:?} has {} dims but strides {strides:?} have {}",
                shape.len(),
                strides.len()
            )));
        }
        let (_, hi) = checked_span(shape, strides, offset, self.dtype.size_in_bytes())?;
        let t = self.view_with(shape.into(), strides.into(), offset);
        let len = self.storage.len();
        if t.numel() > 0 && hi > len {
            return Err(Error::OutOfBounds {
                shape: shape.to_vec(),
                strides: strides.to_vec(),
                offset,
                max_index: hi - 1,
                storage_len: len,
            });
        }
        Ok(t)
    }

    /// Reorders the dims: dim `i` of the result is dim `perm[i]` of `self`.
    pub fn permute(&self, perm: &[isize]) -> Result<Tensor> {
        let rank = self.dim();
        if perm.len() != rank {
            return Err(Error::InvalidView(format!(
                "permute of a rank-{rank} tensor needs {rank} dims, got {perm:?}"
            )));
        }
        let mut seen = vec![false; rank];
        let mut shape = Shape::new();
        let mut strides = Strides::new();
        for &p in perm {
            let d = wrap_dim(p, rank)?;
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::RepeatedDim {
                    dim: d,
                    dims: perm.to_vec(),
                });
            }
            shape.push(self.shape[d]);
            strides.push(self.strides[d]);
        }
        Ok(self.view_with(shape, strides, self.offset))
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        let rank = self.dim();
        let (a, b) = (wrap_dim(dim0, rank)?, wrap_dim(dim1, rank)?);
        let mut t = self.clone();
        if rank > 0 {
            t.shape.swap(a, b);
            t.strides.swap(a, b);
        }
        Ok(t)
    }

    /// The transpose of a matrix; a tensor of rank 0 or 1 is returned as is
    /// (torch's `t()`), higher ranks are an error.
    pub fn t(&self) -> Result<Tensor> {
        match self.dim() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            r => Err(Error::InvalidView(format!(
                "t() expects a tensor of rank <= 2, got rank {r}; use transpose"
            ))),
        }
    }

    /// Elements `start..start + len` of `dim`, as `torch.narrow`: unlike
    /// [`Tensor::slice`], a range that does not fit the dim is an error.
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        let size = self.shape.get(d).copied().unwrap_or(1);
        let end = start.checked_add(len).filter(|&e| e <= size);
        let Some(end) = end else {
            return Err(Error::InvalidView(format!(
                "narrow range {start}..{start}+{len} does not fit dim {d} of size {size}"
            )));
        };
        // Both fit in isize: they are at most a dim size, which is addressable.
        self.slice(dim, start as isize, end as isize, 1)
    }

    /// Elements `start..end` of `dim` taking every `step`-th, exactly as
    /// Python's `x[..., start:end:step]` in torch: negative `start` and `end`
    /// count from the end of the dim, both are then clamped to it, and a
    /// range with `end <= start` is empty. `step` must be positive.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec((0..10).map(|v| v as f32).collect(), &[2, 5])?;
    /// // x[:, 1:7:2]: the end is clamped to the dim's size.
    /// assert_eq!(x.slice(1, 1, 7, 2)?.to_vec::<f32>()?, vec![1., 3., 6., 8.]);
    /// // x[:, -2:]: the last two columns.
    /// assert_eq!(x.slice(1, -2, isize::MAX, 1)?.to_vec::<f32>()?, vec![3., 4., 8., 9.]);
    /// // x[:, 3:1]: empty.
    /// assert_eq!(x.slice(1, 3, 1, 1)?.shape(), &[2, 0]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn slice(&self, dim: isize, start: isize, end: isize, step: usize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if self.dim() == 0 {
            return Err(Error::InvalidView("cannot slice a 0-d tensor".into()));
        }
        if step == 0 {
            return Err(Error::InvalidView("slice step must be positive".into()));
        }
        let size = self.shape[d];
        let (start, end) = (python_index(start, size), python_index(end, size));
        let len = end.saturating_sub(start).div_ceil(step);
        let mut t = self.clone();
        t.shape[d] = len;
        if len > 0 {
            t.offset += start * self.strides[d] as usize;
        }
        // With two or more elements, stride * step is inside the span and so
        // addressable; with one or none the stride is never walked, and
        // keeping the old one avoids overflowing on a huge step.
        let esize = self.dtype.size_in_bytes() as isize;
        t.strides[d] = isize::try_from(step)
            .ok()
            .and_then(|st| self.strides[d].checked_mul(st))
            .filter(|s| s.checked_mul(esize).is_some())
            .unwrap_or(self.strides[d]);
        Ok(t)
    }

    /// Broadcasts to `shape` without copying: dims of size 1 (and new
    /// leading dims) get stride 0, as in torch's `expand`.
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        let rank = self.dim();
        let err = |why: String| Error::InvalidExpand {
            from: self.shape.to_vec(),
            to: shape.to_vec(),
            why,
        };
        if shape.len() < rank {
            return Err(err(format!(
                "the target has {} dims, fewer than the tensor's {rank}",
                shape.len()
            )));
        }
        let lead = shape.len() - rank;
        let mut strides = Strides::new();
        for (i, &n) in shape.iter().enumerate() {
            if i < lead {
                strides.push(0);
                continue;
            }
            let (d, s) = (self.shape[i - lead], self.strides[i - lead]);
            if d == n {
                strides.push(s);
            } else if d == 1 {
                strides.push(0);
            } else {
                return Err(err(format!(
                    "dim {} has size {d}, which cannot become {n}: only dims of size 1 broadcast",
                    i - lead
                )));
            }
        }
        checked_shape(shape, self.dtype.size_in_bytes())?;
        Ok(self.view_with(shape.into(), strides, self.offset))
    }

    /// Inserts a dim of size 1 at `dim` (in `-(rank+1)..=rank`).
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let rank = self.dim();
        let d = wrap_dim(dim, rank + 1).map_err(|_| {
            Error::InvalidView(format!(
                "unsqueeze dim {dim} is out of range for a tensor of rank {rank} (expected a dim in {}..={rank})",
                -(rank as isize) - 1
            ))
        })?;
        // torch's stride for the new dim; a size-1 dim is never walked, so
        // when that product is not addressable (an empty tensor with a huge
        // stride) any addressable stride does.
        let esize = self.dtype.size_in_bytes() as isize;
        let stride = if d < rank {
            self.strides[d]
                .checked_mul(self.shape[d] as isize)
                .filter(|s| s.checked_mul(esize).is_some())
                .unwrap_or(1)
        } else {
            1
        };
        let mut t = self.clone();
        t.shape.insert(d, 1);
        t.strides.insert(d, stride);
        Ok(t)
    }

    /// Removes every dim of size 1.
    pub fn squeeze(&self) -> Tensor {
        let mut t = self.clone();
        let keep: Vec<usize> = (0..self.dim()).filter(|&d| self.shape[d] != 1).collect();
        t.shape = keep.iter().map(|&d| self.shape[d]).collect();
        t.strides = keep.iter().map(|&d| self.strides[d]).collect();
        t
    }

    /// Removes `dim` if it has size 1; otherwise returns the tensor as is (torch's `squeeze(dim)`).
    pub fn squeeze_dim(&self, dim: isize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        let mut t = self.clone();
        if self.dim() > 0 && self.shape[d] == 1 {
            t.shape.remove(d);
            t.strides.remove(d);
        }
        Ok(t)
    }

    /// A tensor of `shape` with the same elements in row-major order: a view
    /// when the strides allow one (torch's `computeStride`), else a copy.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        let (from_numel, to_numel) = (
            self.numel(),
            checked_shape(shape, self.dtype.size_in_bytes())?,
        );
        if from_numel != to_numel {
            return Err(Error::ReshapeMismatch {
                from: self.shape.to_vec(),
                from_numel,
                to: shape.to_vec(),
                to_numel,
            });
        }
        if let Some(strides) = view_strides(&self.shape, &self.strides, shape) {
            return Ok(self.view_with(shape.into(), strides, self.offset));
        }
        let c = self.contiguous()?;
        Ok(c.view_with(shape.into(), contiguous_strides(shape), c.offset))
    }
}

/// Strides that let `new_shape` view memory laid out as (`shape`, `strides`),
/// or `None` when only a copy can. A port of torch's `computeStride`: chunks
/// of old dims that are contiguous with one another can be re-split freely.
fn view_strides(shape: &[usize], strides: &[isize], new_shape: &[usize]) -> Option<Strides> {
    let numel: usize = shape.iter().product();
    if numel == 0 {
        return Some(contiguous_strides(new_shape));
    }
    let mut out: Strides = smallvec::smallvec![0; new_shape.len()];
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base_stride = *strides.last().unwrap_or(&1);
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..shape.len()).rev() {
        tensor_numel *= shape[tensor_d];
        if tensor_d == 0
            || (shape[tensor_d - 1] != 1
                && strides[tensor_d - 1] != tensor_numel as isize * chunk_base_stride)
        {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                out[view_d as usize] = view_numel as isize * chunk_base_stride;
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(out)
}
