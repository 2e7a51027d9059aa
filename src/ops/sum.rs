//! `sum`, `sum_all`, `sum_dtype` and `explain_sum`.

use crate::iter::TensorIterator;
use crate::plan::{DeviceProps, ReducePlan};
use crate::tensor::view::wrap_dim;
use crate::{cpu, cuda, DType, Device, Error, Result, Tensor};

/// What a reduction call asks for, resolved against the input.
struct Reduction {
    /// One entry per input dim: whether it is reduced.
    mask: Vec<bool>,
    /// The result's shape (with or without the reduced dims, per `keepdim`).
    out_shape: Vec<usize>,
    out_dtype: DType,
}

/// Resolves `dims` as torch does: negative dims wrap, a repeated dim is an
/// error, and an empty list means every dim.
fn resolve(input: &Tensor, dims: &[isize], keepdim: bool, out_dtype: DType) -> Result<Reduction> {
    let rank = input.dim();
    let mut mask = vec![false; rank];
    if dims.is_empty() {
        mask.iter_mut().for_each(|m| *m = true);
    }
    let mut seen = vec![false; rank.max(1)];
    for &d in dims {
        let w = wrap_dim(d, rank)?;
        if std::mem::replace(&mut seen[w], true) {
            return Err(Error::RepeatedDim {
                dim: w,
                dims: dims.to_vec(),
            });
        }
        if rank > 0 {
            mask[w] = true;
        }
    }
    let out_shape = input
        .shape()
        .iter()
        .zip(&mask)
        .filter_map(|(&n, &m)| match (m, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    Ok(Reduction {
        mask,
        out_shape,
        out_dtype,
    })
}

impl Tensor {
    /// Sums over `dims`, as `torch.sum(x, dims, keepdim)`.
    ///
    /// Dims may be negative and in any order; an empty slice reduces every
    /// dim. Floating inputs keep their dtype (f16 and bf16 accumulate in f32
    /// inside); integer and bool inputs sum to `I64`. A sum over no elements
    /// is 0; NaN and Inf propagate.
    ///
    /// ```
    /// use tensor_reduce::Tensor;
    /// let x = Tensor::from_vec((1..=6).map(|v| v as f32).collect(), &[2, 3])?;
    /// assert_eq!(x.sum(&[-1], false)?.to_vec::<f32>()?, vec![6.0, 15.0]);
    /// assert_eq!(x.sum(&[0], true)?.shape(), &[1, 3]);
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn sum(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.sum_dtype(dims, keepdim, self.dtype().sum_result())
    }

    /// Sums every element into a 0-d tensor, as `torch.sum(x)`.
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }

    /// Like [`Tensor::sum`] with the result in `dtype`, as
    /// `torch.sum(x, dims, keepdim, dtype=dtype)`: the input is cast to
    /// `dtype` and accumulated in its accumulator type (f32 for 16-bit floats,
    /// i64 for integers), so `sum_dtype(.., DType::F32)` of an f16 tensor is
    /// one pass with no f16 rounding of the total.
    ///
    /// ```
    /// use tensor_reduce::{f16, DType, Tensor};
    /// let x = Tensor::from_vec(vec![f16::from_f32(60000.0); 4], &[4])?;
    /// let total = x.sum_dtype(&[0], false, DType::F32)?;
    /// assert_eq!(total.to_vec::<f32>()?, vec![240000.0]); // would overflow f16
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn sum_dtype(&self, dims: &[isize], keepdim: bool, dtype: DType) -> Result<Tensor> {
        let r = resolve(self, dims, keepdim, dtype)?;
        if self.numel() == 0 {
            return Tensor::zeros(&r.out_shape, r.out_dtype, self.device());
        }
        let iter = TensorIterator::reduce_op(self, &r.mask, r.out_dtype)?;
        let flat = match self.device() {
            Device::Cpu => cpu::sum(self, &iter, r.out_dtype)?,
            Device::Cuda(_) => cuda::sum(self, &iter, r.out_dtype)?,
        };
        flat.reshape(&r.out_shape)
    }

    /// The GPU launch plan `sum(dims, keepdim)` would run on a device with
    /// `props`, without running it (no GPU needed): the iterator after
    /// reorder and coalesce, and for each launch PyTorch's `ReduceConfig`,
    /// grid, block and memory. Printing the plan explains it.
    ///
    /// ```
    /// use tensor_reduce::{plan::DeviceProps, DType, Device, Tensor};
    /// let x = Tensor::zeros(&[2, 3, 4, 5], DType::F32, Device::Cpu)?;
    /// let plan = x.explain_sum(&[1], true, &DeviceProps::h200())?;
    /// assert_eq!(plan.launches.len(), 1);
    /// println!("{plan}");
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn explain_sum(
        &self,
        dims: &[isize],
        keepdim: bool,
        props: &DeviceProps,
    ) -> Result<ReducePlan> {
        let r = resolve(self, dims, keepdim, self.dtype().sum_result())?;
        let iter = TensorIterator::reduce_op(self, &r.mask, r.out_dtype)?;
        ReducePlan::new(&iter, self.dtype(), r.out_dtype, props)
    }
}
