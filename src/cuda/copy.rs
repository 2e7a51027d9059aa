//! Strided-to-contiguous copies on the GPU (`kernels/copy.cuh`), so that
//! `contiguous()` of a CUDA view never goes through host memory.
//!
//! The kernel is its own NVRTC program, compiled once per device (and cached
//! on disk like the reduce kernels); a view that is already one contiguous
//! run is copied with a plain device-to-device copy instead.

use super::kernel::{self, disk_cache, fnv1a64, CompiledKernel};
use super::nvrtc::{self, Image};
use super::params::MAX_DIMS;
use super::{driver_error, CudaStorage};
use crate::tensor::Tensor;
use crate::{Error, Result};
use cudarc::driver::{CudaFunction, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The kernel source, compiled alone.
const SOURCE: &str = include_str!("../../kernels/copy.cuh");

/// One instantiation per element size, in this order (1, 2, 4, 8 bytes).
const ELEMENT_TYPES: [&str; 4] = [
    "unsigned char",
    "unsigned short",
    "unsigned int",
    "unsigned long long",
];

/// `tr_copy::CopyParams`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct CopyParams {
    src: u64,
    dst: u64,
    numel: u64,
    sizes: [u64; MAX_DIMS],
    strides: [i64; MAX_DIMS],
    dims: i32,
    reserved: i32,
}

// SAFETY: plain old data, #[repr(C)], and the source asserts the C struct has
// the same size.
unsafe impl cudarc::driver::DeviceRepr for CopyParams {}

/// The view's dims as (size, element stride), fastest-moving first, with
/// size-1 dims dropped and neighbours that walk memory as one dim merged.
/// A contiguous view comes out as at most one dim of stride 1.
pub(crate) fn coalesce(shape: &[usize], strides: &[isize]) -> Vec<(usize, isize)> {
    let mut out: Vec<(usize, isize)> = Vec::new();
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n == 1 {
            continue;
        }
        match out.last_mut() {
            Some((m, t)) if *t * *m as isize == s => *m *= n,
            _ => out.push((n, s)),
        }
    }
    out
}

fn source() -> String {
    format!(
        "{SOURCE}\nstatic_assert(sizeof(tr_copy::CopyParams) == {}, \"CopyParams layout\");\n",
        std::mem::size_of::<CopyParams>()
    )
}

fn name_expressions() -> Vec<String> {
    ELEMENT_TYPES
        .iter()
        .map(|t| format!("tr_copy::strided_copy<{t}>"))
        .collect()
}

/// Compiles the copy kernel for `arch` = (major, minor) through the on-disk
/// cache, without a GPU: the cubin and the lowered name of each element
/// size's instantiation (1, 2, 4 and 8 bytes).
pub fn compile_copy_kernel(arch: (u32, u32)) -> Result<CompiledKernel> {
    let source = source();
    let options = kernel::options(arch);
    let exprs = name_expressions();
    let key = format!(
        "strided_copy\nsource={:016x}\noptions={options:?}\nexprs={exprs:?}\nnvrtc={:?}",
        fnv1a64(source.as_bytes()),
        nvrtc::nvrtc_version()?
    );
    if let Some(hit) = disk_cache::load(&key) {
        return Ok(hit);
    }
    let c = nvrtc::compile("strided_copy", &source, &options, &exprs, Image::Cubin)?;
    let compiled = CompiledKernel {
        cubin: c.image,
        lowered_names: c.lowered_names,
    };
    disk_cache::store(&key, &compiled);
    Ok(compiled)
}

/// The copy kernels of device `ordinal`, one per element size.
fn functions(ordinal: usize) -> Result<Arc<Vec<CudaFunction>>> {
    static LOADED: OnceLock<Mutex<HashMap<usize, Arc<Vec<CudaFunction>>>>> = OnceLock::new();
    let mut map = LOADED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(f) = map.get(&ordinal) {
        return Ok(f.clone());
    }
    let props = super::device_props(ordinal)?;
    let compiled = compile_copy_kernel(props.compute_capability)?;
    let module = super::context(ordinal)?
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(|e| driver_error(ordinal, 0, "loading strided_copy", e))?;
    let functions = compiled
        .lowered_names
        .iter()
        .map(|n| {
            module
                .load_function(n)
                .map_err(|e| driver_error(ordinal, 0, &format!("finding {n}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    let functions = Arc::new(functions);
    map.insert(ordinal, functions.clone());
    Ok(functions)
}

/// A contiguous copy of the view `t` of `storage`, made on the device and
/// enqueued on (and owned by) the storage's stream.
pub(crate) fn contiguous_copy(t: &Tensor, storage: &CudaStorage) -> Result<CudaStorage> {
    let stream = &storage.stream;
    let ordinal = storage.ordinal;
    let numel = t.numel();
    let esize = t.dtype().size_in_bytes();
    let mut out = CudaStorage::uninit_on(stream, t.dtype(), numel)?;
    if numel == 0 {
        return Ok(out);
    }
    let dims = coalesce(t.shape(), t.strides());
    let start = t.storage_offset() * esize;
    let bytes = numel * esize;
    if matches!(dims.as_slice(), [] | [(_, 1)]) {
        stream
            .memcpy_dtod(
                &storage.buf.slice(start..start + bytes),
                &mut out.buf.slice_mut(0..bytes),
            )
            .map_err(|e| driver_error(ordinal, bytes, "device-to-device copy", e))?;
        return Ok(out);
    }
    if dims.len() > MAX_DIMS {
        return Err(Error::Unsupported(format!(
            "a GPU copy of a view with {} non-mergeable dims (at most {MAX_DIMS})",
            dims.len()
        )));
    }
    let f = &functions(ordinal)?[esize.trailing_zeros() as usize];
    {
        let (src, _src_guard) = storage.buf.device_ptr(stream);
        let (dst, _dst_guard) = out.buf.device_ptr_mut(stream);
        let mut params = CopyParams {
            src: src + start as u64,
            dst,
            numel: numel as u64,
            sizes: [1; MAX_DIMS],
            strides: [0; MAX_DIMS],
            dims: dims.len() as i32,
            reserved: 0,
        };
        for (i, &(n, s)) in dims.iter().enumerate() {
            params.sizes[i] = n as u64;
            params.strides[i] = s as i64;
        }
        const THREADS: usize = 256;
        let blocks = numel.div_ceil(THREADS).min(1 << 20) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut builder = stream.launch_builder(f);
        builder.arg(&params);
        // SAFETY: the parameter block mirrors the kernel's (size asserted in
        // the source); every source offset lies in the view's span, which is
        // inside `storage` (views are bounds-checked when made), and the
        // output holds `numel` elements. Both buffers are alive on this
        // stream until the copy completes (they are freed in stream order).
        unsafe { builder.launch(cfg) }
            .map_err(|e| driver_error(ordinal, 0, "launching strided_copy", e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::coalesce;

    #[test]
    fn coalesce_merges_what_walks_memory_as_one_dim() {
        assert_eq!(coalesce(&[2, 3, 4], &[12, 4, 1]), vec![(24, 1)]);
        assert_eq!(coalesce(&[3, 2], &[1, 3]), vec![(2, 3), (3, 1)]);
        assert_eq!(coalesce(&[4, 1, 5], &[10, 99, 2]), vec![(20, 2)]);
        assert_eq!(coalesce(&[4, 1, 5], &[11, 99, 2]), vec![(5, 2), (4, 11)]);
        assert_eq!(coalesce(&[2, 3], &[0, 1]), vec![(3, 1), (2, 0)]);
        assert_eq!(coalesce(&[1, 1], &[7, 7]), vec![]);
        // A stepped slice of a row: stride 2 then 8 = 2 * 4 merges.
        assert_eq!(coalesce(&[3, 4], &[8, 2]), vec![(12, 2)]);
    }
}
