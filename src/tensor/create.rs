//! The factory functions people reach for first: `ones`, `full`, `arange`.
//!
//! They are thin on purpose: host tensors start from [`Tensor::zeros`] and
//! are filled in place, so they share its checked size arithmetic and its
//! allocation; device tensors are made by the paths noted on each.

use super::storage::Storage;
use super::Tensor;
use crate::{with_dtype, DType, Device, Element, Error, Result};
use half::{bf16, f16};
use std::sync::Arc;

/// Whether `value` converts to `dtype` without overflow, by the rule torch's
/// `fill_` applies (`c10::overflows`): infinities and NaN fit any floating
/// type, finite values must lie within its range; integers take values
/// within their range (unsigned ones also negatives down to `-max`, which
/// wrap), and NaN fits no integer (torch would store an unspecified value).
fn fits(value: f64, dtype: DType) -> bool {
    let within = |lo: f64, hi: f64| value >= lo && value <= hi;
    match dtype {
        DType::Bool => true,
        DType::F16 | DType::BF16 | DType::F32 if !value.is_finite() => true,
        DType::F64 => true,
        DType::F16 => within(f16::MIN.to_f64(), f16::MAX.to_f64()),
        DType::BF16 => within(bf16::MIN.to_f64(), bf16::MAX.to_f64()),
        DType::F32 => within(f32::MIN as f64, f32::MAX as f64),
        DType::I32 => within(i32::MIN as f64, i32::MAX as f64),
        DType::I64 => within(i64::MIN as f64, i64::MAX as f64),
        DType::U8 => within(-(u8::MAX as f64), u8::MAX as f64),
    }
}

impl Tensor {
    /// A contiguous host tensor of `shape` whose element `i` (row-major) is
    /// `value(i)`, allocated through [`Tensor::zeros`].
    fn host_from_fn<T: Element>(shape: &[usize], value: impl Fn(usize) -> T) -> Result<Tensor> {
        let mut t = Tensor::zeros(shape, T::DTYPE, Device::Cpu)?;
        let Storage::Cpu(storage) = &mut t.storage else {
            unreachable!("zeros on the CPU makes host storage")
        };
        let storage = Arc::get_mut(storage).expect("a storage made just now has one owner");
        for (i, x) in storage.as_mut_slice::<T>().iter_mut().enumerate() {
            *x = value(i);
        }
        Ok(t)
    }

    /// A contiguous tensor of ones (`true` for `Bool`), as `torch.ones`.
    ///
    /// ```
    /// use tensor_reduce::{DType, Device, Tensor};
    /// let x = Tensor::ones(&[2, 3], DType::I32, Device::Cpu)?;
    /// assert_eq!(x.to_vec::<i32>()?, vec![1; 6]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn ones(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype, device)
    }

    /// A contiguous tensor with every element `value`, as `torch.full`.
    ///
    /// `value` is converted as torch converts it (truncated toward zero for
    /// integers, `!= 0` for `Bool`); a value the dtype cannot hold (300 for
    /// `U8`, 1e6 for `F16`, NaN for an integer) is an
    /// [`Error::ValueOutOfRange`]. On a GPU, one element is uploaded and
    /// broadcast on the device by [`Tensor::contiguous`].
    ///
    /// ```
    /// use tensor_reduce::{DType, Device, Tensor};
    /// let x = Tensor::full(&[3], 2.5, DType::F32, Device::Cpu)?;
    /// assert_eq!(x.to_vec::<f32>()?, vec![2.5; 3]);
    /// assert!(Tensor::full(&[3], 300.0, DType::U8, Device::Cpu).is_err());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
        if !fits(value, dtype) {
            return Err(Error::ValueOutOfRange { value, dtype });
        }
        if value == 0.0 {
            return Tensor::zeros(shape, dtype, device);
        }
        match device {
            Device::Cpu => with_dtype!(dtype, T => {
                let v = T::from_f64(value);
                Tensor::host_from_fn(shape, |_| v)
            }),
            Device::Cuda(_) => {
                let one = Tensor::full(&[], value, dtype, Device::Cpu)?;
                if super::layout::checked_numel(shape)? == 0 {
                    return Tensor::zeros(shape, dtype, device);
                }
                one.to_device(device)?.expand(shape)?.contiguous()
            }
        }
    }

    /// Values from `start` to `end` (exclusive) by `step`, as `torch.arange`:
    /// `ceil((end - start) / step)` elements, element `i` being
    /// `start + i * step` computed as torch's CPU kernel computes it (in f64
    /// for f32 and f64, in f32 for f16 and bf16, in i64 after truncating
    /// `start`, `end` and `step` for integer dtypes), then cast to `dtype`.
    ///
    /// A `step` of 0, non-finite bounds, or a step whose sign leads away
    /// from `end` are [`Error::InvalidArgument`]; `Bool` is
    /// [`Error::Unsupported`], as in torch. Built on the host, then moved to
    /// `device`.
    ///
    /// ```
    /// use tensor_reduce::{DType, Device, Tensor};
    /// let x = Tensor::arange(0.0, 1.0, 0.25, DType::F32, Device::Cpu)?;
    /// assert_eq!(x.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75]);
    /// let y = Tensor::arange(10.0, 0.0, -3.0, DType::I64, Device::Cpu)?;
    /// assert_eq!(y.to_vec::<i64>()?, vec![10, 7, 4, 1]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType, device: Device) -> Result<Tensor> {
        let invalid = |why: &str| {
            Error::InvalidArgument(format!(
                "arange(start={start}, end={end}, step={step}): {why}"
            ))
        };
        if dtype == DType::Bool {
            return Err(Error::Unsupported("arange with dtype bool".into()));
        }
        if step == 0.0 || step.is_nan() {
            return Err(invalid("step must be nonzero"));
        }
        if !start.is_finite() || !end.is_finite() {
            return Err(invalid("unsupported range: the bounds must be finite"));
        }
        if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
            return Err(invalid(
                "upper bound and lower bound inconsistent with step sign",
            ));
        }
        let host = if dtype.is_floating_point() {
            let n = (end - start) / step;
            let n = n.ceil();
            if !(0.0..=i64::MAX as f64).contains(&n) {
                return Err(invalid("invalid size, possible overflow"));
            }
            let n = n as usize;
            match dtype {
                DType::F16 | DType::BF16 => {
                    let (s, d) = (start as f32, step as f32);
                    with_dtype!(dtype, T => Tensor::host_from_fn::<T>(&[n], |i| T::from_f32(s + d * i as f32))?)
                }
                _ => {
                    with_dtype!(dtype, T => Tensor::host_from_fn::<T>(&[n], |i| T::from_f64(start + step * i as f64))?)
                }
            }
        } else {
            let (s, e, d) = (start as i64, end as i64, step as i64);
            if d == 0 {
                return Err(invalid("step truncates to 0 for an integer dtype"));
            }
            // Truncation keeps the order of the bounds, so the sign check
            // above still holds; |e - s| always fits in u64.
            let n = e.abs_diff(s).div_ceil(d.unsigned_abs());
            let n = usize::try_from(n).map_err(|_| invalid("invalid size, possible overflow"))?;
            with_dtype!(dtype, T => Tensor::host_from_fn::<T>(&[n], |i| T::from_i64(s.wrapping_add(d.wrapping_mul(i as i64))))?)
        };
        host.to_device(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_follows_torch_fill() {
        assert!(fits(255.0, DType::U8) && fits(-1.0, DType::U8));
        assert!(!fits(256.0, DType::U8));
        assert!(!fits(f64::NAN, DType::I32) && !fits(f64::INFINITY, DType::I64));
        assert!(fits(f64::INFINITY, DType::F16) && fits(f64::NAN, DType::BF16));
        assert!(!fits(65536.0, DType::F16) && fits(65504.0, DType::F16));
        assert!(fits(1e300, DType::F64) && !fits(1e300, DType::F32));
        assert!(fits(-7.0, DType::Bool));
    }
}
