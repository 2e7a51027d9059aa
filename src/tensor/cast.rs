//! `to_dtype`: torch's `x.to(dtype)`, element by element with C++ cast rules.

use super::Tensor;
use crate::{with_dtype, DType, Element, Result};

/// One element converted as C++'s `static_cast` does (and so torch): floats
/// round to nearest, floats to integers truncate toward zero (saturating
/// here, where C++ leaves overflow undefined), integers to narrower integers
/// wrap, anything to bool is `!= 0` (NaN included).
#[inline]
pub(crate) fn cast_element<S: Element, D: Element>(x: S) -> D {
    if S::DTYPE.is_floating_point() || D::DTYPE.is_floating_point() || D::DTYPE == DType::Bool {
        D::from_f64(x.to_f64())
    } else {
        D::from_i64(x.to_i64())
    }
}

impl Tensor {
    /// A copy with every element cast to `dtype`, as `x.to(dtype)` (this
    /// tensor itself when it already has that dtype). The result is
    /// contiguous and on the same device.
    ///
    /// ```
    /// use tensor_reduce::{DType, Tensor};
    /// let x = Tensor::from_vec(vec![0.5f32, -1.7, 0.0], &[3])?;
    /// assert_eq!(x.to_dtype(DType::I32)?.to_vec::<i32>()?, vec![0, -1, 0]);
    /// assert_eq!(x.to_dtype(DType::Bool)?.to_vec::<bool>()?, vec![true, true, false]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let cast = with_dtype!(self.dtype(), S => {
            let values = self.to_vec::<S>()?;
            with_dtype!(dtype, D => Tensor::from_vec(
                values.into_iter().map(cast_element::<S, D>).collect::<Vec<D>>(),
                self.shape(),
            )?)
        });
        cast.to_device(self.device())
    }
}
