//! Views: new shapes and strides over the same storage, never a copy
//! (except `reshape`, which copies only when no view can express the result,
//! as in torch).

use super::{checked_numel, contiguous_strides, Shape, Strides, Tensor};
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
    /// must lie inside the storage.
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Tensor> {
        if shape.len() != strides.len() {
            return Err(Error::InvalidView(format!(
                "shape {shape:?} has {} dims but strides {strides:?} have {}",
                shape.len(),
                strides.len()
            )));
        }
        if let Some(s) = strides.iter().find(|&&s| s < 0) {
            return Err(Error::InvalidView(format!(
                "negative stride {s} in {strides:?}"
            )));
        }
        checked_numel(shape)?;
        let t = self.view_with(shape.into(), strides.into(), offset);
        let (_, hi) = t.storage_span();
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

    /// Elements `start..start + len` of `dim`.
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<Tensor> {
        self.slice(
            dim,
            start,
            start
                .checked_add(len)
                .ok_or_else(|| Error::InvalidView("narrow range overflows".into()))?,
            1,
        )
    }

    /// Elements `start..end` of `dim` taking every `step`-th, like
    /// `x[..., start:end:step]` in torch (which needs `step > 0`).
    pub fn slice(&self, dim: isize, start: usize, end: usize, step: usize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if self.dim() == 0 {
            return Err(Error::InvalidView("cannot slice a 0-d tensor".into()));
        }
        let size = self.shape[d];
        if step == 0 {
            return Err(Error::InvalidView("slice step must be positive".into()));
        }
        if start > end || end > size {
            return Err(Error::InvalidView(format!(
                "range {start}..{end} does not fit dim {d} of size {size}"
            )));
        }
        let mut t = self.clone();
        t.shape[d] = (end - start).div_ceil(step);
        if t.shape[d] > 0 {
            t.offset += start * self.strides[d] as usize;
        }
        t.strides[d] = self.strides[d] * step as isize;
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
                    "dim {i} has size {d}, which is neither {n} nor 1"
                )));
            }
        }
        checked_numel(shape)?;
        Ok(self.view_with(shape.into(), strides, self.offset))
    }

    /// Inserts a dim of size 1 at `dim` (in `-(rank+1)..=rank`).
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let rank = self.dim();
        let d = wrap_dim(dim, rank + 1)?;
        let stride = if d < rank {
            self.strides[d] * self.shape[d] as isize
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
        let (from_numel, to_numel) = (self.numel(), checked_numel(shape)?);
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
