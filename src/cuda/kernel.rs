//! The templated `reduce_kernel`: which instantiation a launch needs, the
//! NVRTC source for it, and the two caches in front of NVRTC (in-process,
//! per device; on disk, across processes).

use super::nvrtc::{self, Compiled};
use crate::{DType, Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// The reduction a kernel computes (the `ops_t` functor of `kernels/ops.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOpKind {
    /// `tr::SumOps`.
    Sum,
}

impl ReduceOpKind {
    fn functor(self) -> &'static str {
        match self {
            ReduceOpKind::Sum => "tr::SumOps",
        }
    }
}

/// The output vector sizes one compiled module holds, one `reduce_kernel`
/// instantiation each (PyTorch's host switches over the same three).
pub const OUTPUT_VEC_SIZES: [u32; 3] = [1, 2, 4];

/// Everything the kernel source is specialised on except the output vector
/// size (all three live in one module) and the architecture: the op, the
/// input, output and accumulator types, `vt0` and `input_vec_size`. The
/// index type is `uint32_t`, as in PyTorch: launches over larger tensors are
/// split by `TensorIterator::with_32bit_indexing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSpec {
    /// The op.
    pub op: ReduceOpKind,
    /// Input element type (`scalar_t`).
    pub input: DType,
    /// Output element type (`out_scalar_t`).
    pub output: DType,
    /// Independent accumulators per thread.
    pub vt0: u32,
    /// Width of a vectorised input load.
    pub input_vec_size: u32,
}

/// The C++ spelling of a dtype inside the kernels.
fn c_type(d: DType) -> &'static str {
    match d {
        DType::F16 => "tr::Half",
        DType::BF16 => "tr::BFloat16",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I32 => "tr::int32_t",
        DType::I64 => "tr::int64_t",
        DType::U8 => "tr::uint8_t",
        DType::Bool => "tr::Bool",
    }
}

impl KernelSpec {
    /// The spec of a sum of `input` into `output` with the planner's `vt0`
    /// and `input_vec_size`.
    pub fn sum(input: DType, output: DType, vt0: u32, input_vec_size: u32) -> KernelSpec {
        KernelSpec {
            op: ReduceOpKind::Sum,
            input,
            output,
            vt0,
            input_vec_size,
        }
    }

    /// Every spec the sum planner can ask for: each input dtype with each
    /// output dtype (`sum_dtype` takes any), `vt0 = 4`, and `input_vec_size`
    /// 8 for 16-bit inputs, else 4 (PyTorch's choice for sum).
    pub fn all_sums() -> Vec<KernelSpec> {
        let mut v = Vec::new();
        for input in DType::ALL {
            for output in DType::ALL {
                let ivs = if input.size_in_bytes() == 2 { 8 } else { 4 };
                v.push(KernelSpec::sum(input, output, 4, ivs));
            }
        }
        v
    }

    /// The accumulator (`arg_t`): the output dtype's accumulator type.
    pub fn acc(&self) -> DType {
        self.output.accumulator()
    }

    /// The instantiation for `output_vec_size`, as an NVRTC name expression.
    pub fn name_expression(&self, output_vec_size: u32) -> String {
        let nt = 512 / output_vec_size;
        format!(
            "tr::reduce_kernel<{nt}, {output_vec_size}, tr::ReduceOp<{}, {}<{}>, tr::uint32_t, {}, {}, {}> >",
            c_type(self.input),
            self.op.functor(),
            c_type(self.acc()),
            c_type(self.output),
            self.vt0,
            self.input_vec_size
        )
    }

    fn validate(&self) -> Result<()> {
        let ok_vt0 = (1..=16).contains(&self.vt0);
        let ok_ivs = matches!(self.input_vec_size, 1 | 2 | 4 | 8 | 16)
            && self.input_vec_size as usize * self.input.size_in_bytes() <= 32;
        if ok_vt0 && ok_ivs {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "kernel variant vt0 = {}, input_vec_size = {}",
                self.vt0, self.input_vec_size
            )))
        }
    }

    /// A short name for logs and errors.
    pub fn label(&self) -> String {
        format!(
            "reduce_{:?}_{}_{}_vt{}_iv{}",
            self.op, self.input, self.output, self.vt0, self.input_vec_size
        )
        .to_lowercase()
    }

    /// The full NVRTC source: the bundled kernels, the layout checks against
    /// the host's `#[repr(C)]` structs.
    pub fn source(&self) -> String {
        let mut src = String::with_capacity(64 * 1024);
        for (name, text) in KERNEL_SOURCES {
            src.push_str(&format!("// ---- kernels/{name} ----\n"));
            src.push_str(text);
            src.push('\n');
        }
        src.push_str(&super::params::layout_asserts());
        src
    }

    /// NVRTC options for `arch` = (major, minor).
    pub fn options(arch: (u32, u32)) -> Vec<String> {
        vec![
            format!("--gpu-architecture=sm_{}{}", arch.0, arch.1),
            "-std=c++17".into(),
            "--device-as-default-execution-space".into(),
        ]
    }

    /// Compiles this spec for `arch` through the on-disk cache, without a
    /// GPU: the cubin and the lowered name of each output vector size.
    pub fn compile(&self, arch: (u32, u32)) -> Result<CompiledKernel> {
        self.validate()?;
        let source = self.source();
        let options = KernelSpec::options(arch);
        let exprs: Vec<String> = OUTPUT_VEC_SIZES
            .iter()
            .map(|&v| self.name_expression(v))
            .collect();
        let key = format!(
            "{label}\nkernels={KERNEL_SOURCES_HASH:016x}\nsource={src:016x}\noptions={options:?}\nexprs={exprs:?}\nnvrtc={nvrtc:?}\ndriver={driver}",
            label = self.label(),
            src = fnv1a64(source.as_bytes()),
            nvrtc = nvrtc::nvrtc_version()?,
            driver = driver_version(),
        );
        if let Some(hit) = disk_cache::load(&key) {
            return Ok(hit);
        }
        let Compiled {
            cubin,
            lowered_names,
        } = nvrtc::compile_cubin(&self.label(), &source, &options, &exprs)?;
        let compiled = CompiledKernel {
            cubin,
            lowered_names,
        };
        disk_cache::store(&key, &compiled);
        Ok(compiled)
    }
}

/// A compiled module: the cubin and the lowered name of the kernel for each
/// of [`OUTPUT_VEC_SIZES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledKernel {
    /// The cubin (SASS for one architecture).
    pub cubin: Vec<u8>,
    /// Mangled kernel names, one per output vector size.
    pub lowered_names: Vec<String>,
}

/// The CUDA driver's version, or 0 without a driver (compiling needs none).
fn driver_version() -> i32 {
    if !super::driver_present() {
        return 0;
    }
    let mut v = 0;
    // SAFETY: valid out-pointer; the driver library is present.
    match unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) } {
        cudarc::driver::sys::CUresult::CUDA_SUCCESS => v,
        _ => 0,
    }
}

/// FNV-1a, 64 bits.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Compiled kernels on disk, keyed by a hash of everything that determines
/// the cubin. An entry stores the full key and a checksum; one that does not
/// match in every byte is recompiled and overwritten, never loaded.
pub mod disk_cache {
    use super::*;

    const MAGIC: &[u8; 8] = b"TRKERN01";

    /// `$TENSOR_REDUCE_CACHE_DIR`, else `$XDG_CACHE_HOME/tensor-reduce`, else
    /// `$HOME/.cache/tensor-reduce`; `None` disables the disk cache (also
    /// when `TENSOR_REDUCE_CACHE_DIR` is set but empty).
    pub fn dir() -> Option<PathBuf> {
        let non_empty = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(v) = std::env::var_os("TENSOR_REDUCE_CACHE_DIR") {
            return (!v.is_empty()).then(|| PathBuf::from(v));
        }
        non_empty("XDG_CACHE_HOME")
            .map(|p| p.join("tensor-reduce"))
            .or_else(|| non_empty("HOME").map(|p| p.join(".cache").join("tensor-reduce")))
    }

    /// The file an entry with `key` lives in.
    pub fn path_for(dir: &Path, key: &str) -> PathBuf {
        dir.join(format!("{:016x}.cubin", fnv1a64(key.as_bytes())))
    }

    fn encode(key: &str, k: &CompiledKernel) -> Vec<u8> {
        let mut body = Vec::new();
        let mut put = |bytes: &[u8]| {
            body.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            body.extend_from_slice(bytes);
        };
        put(key.as_bytes());
        put(&(k.lowered_names.len() as u64).to_le_bytes());
        for n in &k.lowered_names {
            put(n.as_bytes());
        }
        put(&k.cubin);
        let mut out = Vec::with_capacity(body.len() + 16);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&fnv1a64(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    fn decode(key: &str, bytes: &[u8]) -> Option<CompiledKernel> {
        let body = bytes.strip_prefix(MAGIC)?;
        let (sum, body) = body.split_at_checked(8)?;
        if u64::from_le_bytes(sum.try_into().ok()?) != fnv1a64(body) {
            return None;
        }
        let mut rest = body;
        let mut take = || -> Option<&[u8]> {
            let (len, tail) = rest.split_at_checked(8)?;
            let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
            let (item, tail) = tail.split_at_checked(len)?;
            rest = tail;
            Some(item)
        };
        if take()? != key.as_bytes() {
            return None;
        }
        let count = u64::from_le_bytes(take()?.try_into().ok()?);
        let mut lowered_names = Vec::new();
        for _ in 0..count.min(64) {
            lowered_names.push(String::from_utf8(take()?.to_vec()).ok()?);
        }
        let cubin = take()?.to_vec();
        (rest.is_empty() && lowered_names.len() as u64 == count && !cubin.is_empty()).then_some(
            CompiledKernel {
                cubin,
                lowered_names,
            },
        )
    }

    /// The entry for `key`, if present and intact.
    pub fn load(key: &str) -> Option<CompiledKernel> {
        let bytes = std::fs::read(path_for(&dir()?, key)).ok()?;
        decode(key, &bytes)
    }

    /// Writes the entry atomically (temporary file, then rename). Best
    /// effort: a cache that cannot be written only costs a recompile.
    pub fn store(key: &str, k: &CompiledKernel) {
        let Some(dir) = dir() else { return };
        let _ = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let path = path_for(&dir, key);
            let tmp = dir.join(format!(
                ".{}.{}.{:?}.tmp",
                path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::write(&tmp, encode(key, k))?;
            std::fs::rename(&tmp, &path).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
        })();
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn entries_round_trip_and_reject_damage() {
            let k = CompiledKernel {
                cubin: vec![1, 2, 3, 4, 5],
                lowered_names: vec!["_Z1a".into(), "_Z1b".into()],
            };
            let bytes = encode("key", &k);
            assert_eq!(decode("key", &bytes), Some(k.clone()));
            assert_eq!(decode("other key", &bytes), None);
            for i in 0..bytes.len() {
                let mut bad = bytes.clone();
                bad[i] ^= 0x40;
                assert_eq!(decode("key", &bad), None, "flipped byte {i}");
            }
            assert_eq!(decode("key", &bytes[..bytes.len() - 1]), None);
        }
    }
}

/// A module loaded on one device: the kernel for each output vector size.
pub(crate) struct LoadedKernel {
    functions: Vec<cudarc::driver::CudaFunction>,
}

impl LoadedKernel {
    /// The `reduce_kernel` instantiation for `output_vec_size`.
    pub(crate) fn function(&self, output_vec_size: u32) -> Result<&cudarc::driver::CudaFunction> {
        OUTPUT_VEC_SIZES
            .iter()
            .position(|&v| v == output_vec_size)
            .map(|i| &self.functions[i])
            .ok_or_else(|| Error::Unsupported(format!("output_vec_size {output_vec_size}")))
    }
}

type Slot = Arc<Mutex<Option<Arc<LoadedKernel>>>>;

/// The in-process cache: one slot per (device, spec). The map's lock is held
/// only to find the slot; compiling holds the slot's own lock, so callers of
/// the same spec wait for one compile and other specs proceed.
pub(crate) fn loaded(ordinal: usize, spec: KernelSpec) -> Result<Arc<LoadedKernel>> {
    static CACHE: OnceLock<Mutex<HashMap<(usize, KernelSpec), Slot>>> = OnceLock::new();
    let slot = {
        let mut map = CACHE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry((ordinal, spec)).or_default().clone()
    };
    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = guard.as_ref() {
        return Ok(k.clone());
    }
    let props = super::device_props(ordinal)?;
    let compiled = spec.compile(props.compute_capability)?;
    let ctx = super::context(ordinal)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(|e| super::driver_error(ordinal, 0, &format!("loading {}", spec.label()), e))?;
    let functions = compiled
        .lowered_names
        .iter()
        .map(|n| {
            module
                .load_function(n)
                .map_err(|e| super::driver_error(ordinal, 0, &format!("finding {n}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    let k = Arc::new(LoadedKernel { functions });
    *guard = Some(k.clone());
    Ok(k)
}
