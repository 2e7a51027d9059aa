//! The rules that keep every shape, stride and byte offset of a tensor
//! within `isize::MAX` bytes, so that no later computation (storage sizes,
//! spans, the iterator's byte strides, kernel offsets) can wrap. Every
//! constructor and view that makes new sizes or strides goes through these.

use super::Strides;
use crate::{Error, Result};
use smallvec::SmallVec;

/// The largest byte count or byte offset any tensor may reach.
const MAX_BYTES: usize = isize::MAX as usize;

/// The product of `shape`, or an error naming the shape on overflow.
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::ShapeOverflow {
            shape: shape.to_vec(),
        })
}

/// The element count of `shape`, checking that a contiguous tensor of it
/// with `element_size`-byte elements is addressable: the product of the
/// sizes, with empty dims counted as 1 (their contiguous strides still
/// multiply by 1), times the element size, fits in `isize::MAX` bytes.
pub(crate) fn checked_shape(shape: &[usize], element_size: usize) -> Result<usize> {
    let overflow = || Error::ShapeOverflow {
        shape: shape.to_vec(),
    };
    shape
        .iter()
        .try_fold(element_size, |acc, &d| acc.checked_mul(d.max(1)))
        .filter(|&bytes| bytes <= MAX_BYTES)
        .ok_or_else(overflow)?;
    checked_numel(shape)
}

/// Row-major (C-contiguous) element strides for `shape`. Callers pass
/// shapes that passed [`checked_shape`], so the products cannot wrap.
pub(crate) fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// Checks a strided view: the shape as in [`checked_shape`], every stride
/// non-negative with its byte size within `isize::MAX`, and the byte offset
/// one past its last element too. Returns the element range `[lo, hi)` the
/// view reaches (empty when it has no elements).
pub(crate) fn checked_span(
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    element_size: usize,
) -> Result<(usize, usize)> {
    let numel = checked_shape(shape, element_size)?;
    let overflow = || Error::LayoutOverflow {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        offset,
        element_size,
    };
    let bytes = |elements: usize| {
        elements
            .checked_mul(element_size)
            .filter(|&b| b <= MAX_BYTES)
    };
    for &s in strides {
        let s = usize::try_from(s)
            .map_err(|_| Error::InvalidView(format!("negative stride {s} in {strides:?}")))?;
        bytes(s).ok_or_else(overflow)?;
    }
    bytes(offset).ok_or_else(overflow)?;
    if numel == 0 {
        return Ok((offset, offset));
    }
    let last = shape
        .iter()
        .zip(strides)
        .try_fold(offset, |acc, (&d, &s)| {
            (d - 1).checked_mul(s as usize)?.checked_add(acc)
        })
        .ok_or_else(overflow)?;
    let hi = last.checked_add(1).ok_or_else(overflow)?;
    bytes(hi).ok_or_else(overflow)?;
    Ok((offset, hi))
}
