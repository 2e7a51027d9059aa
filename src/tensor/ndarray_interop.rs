//! Conversions to and from `ndarray` arrays (the `ndarray` cargo feature),
//! for the eight element types.
//!
//! What is copied, honestly: a tensor's host storage is the crate's own
//! 8-byte-aligned buffer, so building a tensor always copies the elements
//! into it once. Where the layout allows, that is one bulk copy and the
//! array's strides are kept (an owned array keeps even its sliced-away
//! elements, as `torch.from_numpy` keeps the base array); an array with a
//! negative stride, which torch tensors cannot express, or a non-contiguous
//! view, is gathered in logical order into a contiguous tensor instead.

use super::Tensor;
use crate::{Device, Element, Error, Result};
use ndarray::{Array, ArrayBase, ArrayD, ArrayView, Data, Dimension, IxDyn};

/// The array's strides as a tensor can hold them: `None` when a dim of more
/// than one element has a negative stride (dims of one element may have any
/// stride, so theirs is set to 0).
fn tensor_strides(shape: &[usize], strides: &[isize]) -> Option<Vec<isize>> {
    shape
        .iter()
        .zip(strides)
        .map(|(&n, &s)| match (n, s) {
            (0 | 1, _) => Some(0),
            (_, s) if s < 0 => None,
            (_, s) => Some(s),
        })
        .collect()
}

impl Tensor {
    /// A host tensor with the elements of `array`, which may be any view
    /// (sliced, transposed, with negative strides).
    ///
    /// A contiguous array (in any memory order, strides non-negative) is
    /// copied in one piece and keeps its strides; any other is gathered into
    /// a contiguous tensor. Errors only when the array's element count
    /// overflows, which a valid array cannot.
    ///
    /// ```
    /// use ndarray::{array, s};
    /// use tensor_reduce::Tensor;
    /// let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    /// let t = Tensor::from_ndarray(&a.t())?;            // keeps the transposed strides
    /// assert_eq!(t.strides(), &[1, 3]);
    /// let r = Tensor::from_ndarray(&a.slice(s![.., ..;-1]))?; // negative stride: gathered
    /// assert_eq!(r.to_vec::<f32>()?, vec![3.0, 2.0, 1.0, 6.0, 5.0, 4.0]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn from_ndarray<T, S, D>(array: &ArrayBase<S, D>) -> Result<Tensor>
    where
        T: Element,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let shape = array.shape();
        if array.is_empty() {
            return Tensor::zeros(shape, T::DTYPE, Device::Cpu);
        }
        let strides = tensor_strides(shape, array.strides());
        match (array.as_slice_memory_order(), strides) {
            // With non-negative strides the lowest address holds the
            // logically first element, so the slice starts at offset 0.
            (Some(memory), Some(strides)) => {
                Tensor::from_slice(memory, &[memory.len()])?.as_strided(shape, &strides, 0)
            }
            _ => Tensor::from_vec(array.iter().copied().collect(), shape),
        }
    }

    /// The elements as an owned `ArrayD` in standard (row-major) layout,
    /// from any layout or device. Errors with [`Error::DTypeMismatch`] when
    /// `T` is not the tensor's dtype.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let t = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3])?;
    /// let a = t.t()?.to_ndarray::<i64>()?;
    /// assert_eq!(a, ndarray::array![[1i64, 4], [2, 5], [3, 6]].into_dyn());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn to_ndarray<T: Element>(&self) -> Result<ArrayD<T>> {
        let data = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(self.shape()), data)
            .map_err(|e| Error::Unsupported(format!("an ndarray of shape {:?}: {e}", self.shape())))
    }
}

/// Takes the array's buffer as it is: with non-negative strides, its whole
/// allocation is copied once and the tensor views it with the array's
/// strides and offset; otherwise as [`Tensor::from_ndarray`].
impl<T: Element, D: Dimension> TryFrom<Array<T, D>> for Tensor {
    type Error = Error;

    fn try_from(array: Array<T, D>) -> Result<Tensor> {
        let shape = array.shape().to_vec();
        match tensor_strides(&shape, array.strides()) {
            Some(strides) if !array.is_empty() => {
                let (data, offset) = array.into_raw_vec_and_offset();
                let len = data.len();
                Tensor::from_vec(data, &[len])?.as_strided(&shape, &strides, offset.unwrap_or(0))
            }
            _ => Tensor::from_ndarray(&array),
        }
    }
}

/// As [`Tensor::from_ndarray`].
impl<T: Element, D: Dimension> TryFrom<ArrayView<'_, T, D>> for Tensor {
    type Error = Error;

    fn try_from(array: ArrayView<'_, T, D>) -> Result<Tensor> {
        Tensor::from_ndarray(&array)
    }
}

#[cfg(test)]
mod tests {
    use super::tensor_strides;

    #[test]
    fn strides_a_tensor_can_hold() {
        assert_eq!(tensor_strides(&[2, 3], &[3, 1]), Some(vec![3, 1]));
        assert_eq!(tensor_strides(&[2, 1], &[-1, -5]), None);
        assert_eq!(tensor_strides(&[1, 3], &[-7, 2]), Some(vec![0, 2]));
    }
}
