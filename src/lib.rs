//! # tensor-reduce
//!
//! PyTorch's reduction engine in Rust: `sum`, `mean`, `prod`, `amax`, `any`
//! and the rest of the family over any set of dims of any strided tensor,
//! with torch's semantics, on NVIDIA GPUs (through `cudarc` and NVRTC, no
//! CUDA toolkit needed to build) and on the CPU (rayon).
//!
//! Data flows one way, each stage a pure function of the one before:
//! [`Tensor`] → [`iter::TensorIterator`] (reduced dims get output stride 0,
//! dims reordered and coalesced, split for 32-bit indexing) → the op
//! ([`reduce::ReduceOp`] and its [`reduce::Signature`]: types, identity,
//! functor) → the GPU plan ([`cuda::plan::ReducePlan`], PyTorch's
//! `setReduceConfig`) or the CPU trees → a backend.
//!
//! ```
//! use tensor_reduce::{DType, Device, Tensor};
//! let x = Tensor::randn(&[2, 3, 4, 5], DType::F32, Device::Cpu, 0)?;
//! let y = x.sum(&[1], true)?;              // torch: x.sum(1, keepdim=True)
//! assert_eq!(y.shape(), &[2, 1, 4, 5]);
//! let total = x.sum_all()?;                 // 0-d
//! assert_eq!(total.shape(), &[] as &[usize]);
//! # Ok::<(), tensor_reduce::Error>(())
//! ```

pub mod cpu;
pub mod cuda;
mod device;
mod dtype;
mod error;
pub mod iter;
mod ops;
pub mod reduce;
mod tensor;

pub use device::Device;
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use half::{bf16, f16};
pub use tensor::Tensor;
