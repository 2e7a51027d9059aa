//! Where a tensor lives.

use crate::Result;
use std::fmt;

/// A compute device, as in `torch.device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory; reductions run on the CPU backend (rayon).
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(usize),
}

impl Device {
    /// The CUDA device `ordinal`, after checking that the driver loads and
    /// the device exists; an [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) otherwise.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        crate::cuda::context(ordinal)?;
        Ok(Device::Cuda(ordinal))
    }

    /// CUDA device 0 when a usable GPU is present, else the CPU.
    ///
    /// ```
    /// let device = tensor_reduce::Device::cuda_if_available();
    /// println!("running on {device}");
    /// ```
    pub fn cuda_if_available() -> Device {
        Device::cuda(0).unwrap_or(Device::Cpu)
    }

    /// Whether this is a CUDA device.
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}
