//! The CUDA backend: device contexts, device storage, and (in the submodules)
//! NVRTC compilation and the launch of the templated `reduce_kernel`.
//!
//! Everything is loaded at run time (`cudarc` with `dynamic-loading`), so the
//! crate builds without a CUDA toolkit and a machine without a driver gets an
//! [`Error::CudaUnavailable`] instead of a panic.

mod block_cache;
mod copy;
mod interop;
pub mod kernel;
mod nvrtc;
pub(crate) mod params;
pub mod plan;
mod plan_cache;
mod reduce;
mod storage;

pub use copy::compile_copy_kernel;
pub(crate) use copy::contiguous_copy;
pub use kernel::{disk_cache, CompiledKernel, OUTPUT_VEC_SIZES};
pub use nvrtc::{nvrtc_available, nvrtc_version};
pub(crate) use storage::CudaStorage;

use plan::DeviceProps;

use crate::{Error, Result};
use cudarc::driver::{CudaContext, DriverError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only probes for the shared library; loads nothing else.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Number of CUDA devices, 0 when there is no driver.
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// The (primary) context of device `ordinal`, created once per process and
/// set up for this crate's one-stream use (see [`configure`]). The common
/// case, a context already made, is one map lookup: this is on every call's
/// path.
pub(crate) fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    static CONTEXTS: OnceLock<Mutex<HashMap<usize, Arc<CudaContext>>>> = OnceLock::new();
    let mut map = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = map.get(&ordinal) {
        return Ok(ctx.clone());
    }
    if !driver_present() {
        return Err(Error::CudaUnavailable(
            "the CUDA driver library (libcuda) could not be loaded".into(),
        ));
    }
    let count = device_count();
    if ordinal >= count {
        return Err(Error::CudaUnavailable(format!(
            "device {ordinal} requested but {count} CUDA device(s) present"
        )));
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| {
        Error::CudaUnavailable(format!("creating a context on device {ordinal}: {e}"))
    })?;
    configure(&ctx, ordinal)?;
    map.insert(ordinal, ctx.clone());
    Ok(ctx)
}

/// Two settings that take host time off every call:
/// - cudarc's event tracking is off. It creates two events per allocation
///   and records one per kernel argument so that buffers can be shared
///   between streams safely; here every tensor's work runs on its storage's
///   one stream (the default stream unless it wraps a caller's buffer), whose
///   order alone keeps it safe. Callers who mix streams order them
///   themselves (see `interop`).
/// - the device's default memory pool keeps what is freed (release
///   threshold at its maximum), so allocating an output is a pool hit, as
///   with PyTorch's caching allocator, instead of a trip to the driver.
fn configure(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<()> {
    use cudarc::driver::sys;
    // SAFETY: see above; a buffer is only ever used on the stream of the
    // storage that owns it, or ordered by the caller across streams.
    unsafe { ctx.disable_event_tracking() };
    if ctx.has_async_alloc() {
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        let mut threshold = u64::MAX;
        // SAFETY: plain driver calls on a live context's device, with valid
        // out-pointers.
        unsafe {
            sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                .result()
                .and_then(|_| {
                    sys::cuMemPoolSetAttribute(
                        pool,
                        sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                        &mut threshold as *mut u64 as *mut std::ffi::c_void,
                    )
                    .result()
                })
        }
        .map_err(|e| driver_error(ordinal, 0, "configuring the memory pool", e))?;
    }
    Ok(())
}

/// Maps a driver error to the crate's error, singling out out-of-memory so
/// callers can react to it.
pub(crate) fn driver_error(ordinal: usize, bytes: usize, context: &str, e: DriverError) -> Error {
    if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        Error::CudaOutOfMemory { ordinal, bytes }
    } else {
        Error::Cuda {
            context: context.to_string(),
            message: e.to_string(),
        }
    }
}

/// The properties of device `ordinal` that launch planning reads, queried
/// from the driver once per process and device.
pub fn device_props(ordinal: usize) -> Result<DeviceProps> {
    static PROPS: OnceLock<Mutex<HashMap<usize, DeviceProps>>> = OnceLock::new();
    if let Some(p) = PROPS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&ordinal)
    {
        return Ok(p.clone());
    }
    let ctx = context(ordinal)?;
    use cudarc::driver::sys::CUdevice_attribute as A;
    let attr = |a: A| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(|e| driver_error(ordinal, 0, "cuDeviceGetAttribute", e))
    };
    let props = DeviceProps {
        name: ctx
            .name()
            .map_err(|e| driver_error(ordinal, 0, "cuDeviceGetName", e))?,
        sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        shared_mem_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        compute_capability: (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
    };
    PROPS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(ordinal, props.clone());
    Ok(props)
}

/// Runs a reduction on the GPU: the CUDA counterpart of
/// [`crate::cpu::reduce`] (a flat, contiguous result of `sig.output`
/// holding the outputs in order, on the input's device, and the second
/// output of the ops that have one). Casts are fused
/// into the kernel's `reduce`, so the input is read where it is.
pub(crate) use reduce::{device_plan, reduce};
