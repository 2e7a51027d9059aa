//! The templated `reduce_kernel`: which instantiation a launch needs, the
//! NVRTC source for it, and the two caches in front of NVRTC (in-process,
//! per device; on disk, across processes).

use super::nvrtc::{self, Compiled};
use crate::cuda::plan::KernelRegisters;
use crate::reduce::Signature;
use crate::{DType, Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

pub mod disk_cache;

/// The output vector sizes a compiled module may hold, one `reduce_kernel`
/// instantiation each: PyTorch's host switches over the first three, and
/// the ShortColumns strategy adds 8 for the signatures it can take
/// ([`output_vec_sizes`]).
pub const OUTPUT_VEC_SIZES: [u32; 4] = [1, 2, 4, 8];

/// The output vector sizes `sig`'s module holds: those of
/// [`OUTPUT_VEC_SIZES`] up to the planner's `max_output_vec_size`.
pub fn output_vec_sizes(sig: &Signature) -> &'static [u32] {
    let max = crate::cuda::plan::max_output_vec_size(sig);
    let n = OUTPUT_VEC_SIZES.iter().take_while(|&&v| v <= max).count();
    &OUTPUT_VEC_SIZES[..n]
}

/// The kernels of one compiled module, in the order of its lowered names:
/// `reduce_kernel` for each of [`output_vec_sizes`], then the ShortRows
/// strategy's `short_rows_kernel` for rows found by one stride and for rows
/// looked up (`LaunchPlan::rows_by_one_stride`), then the RaggedColumns
/// strategy's `reduce_kernel` ([`ragged_columns_name_expression`]), then
/// ShortRows' `packed_rows_kernel` (several rows a load), then, where the
/// module's loads are wide enough to have one, `short_rows_kernel`'s
/// `wide_loads` instantiation by one stride and looked up
/// (`ReduceConfig::wide_loads`).
pub fn name_expressions(sig: &Signature) -> Vec<String> {
    let op = reduce_op_type(sig);
    let short_rows = |wide: bool| {
        [true, false].map(|one_dim| format!("tr::short_rows_kernel<{op}, {one_dim}, {wide} >"))
    };
    let wide = crate::cuda::plan::has_wide_loads(sig.input_vec_size);
    output_vec_sizes(sig)
        .iter()
        .map(|&v| name_expression(sig, v))
        .chain(short_rows(false))
        .chain(std::iter::once(ragged_columns_name_expression(sig)))
        .chain(std::iter::once(format!("tr::packed_rows_kernel<{op} >")))
        .chain(short_rows(true).into_iter().filter(|_| wide))
        .collect()
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

/// A compute type (the functor's `compute_t`): arithmetic, so a bool is
/// C++'s `bool`, not the storage wrapper.
fn c_compute_type(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        d => c_type(d),
    }
}

/// The `reduce_kernel` instantiation a signature runs, for each output
/// vector size: one module per signature, specialised on the op's functor,
/// the input, compute, cast and output types, `vt0` and `input_vec_size`.
/// The index type is `uint32_t`, as in PyTorch: launches over larger tensors
/// are split by `TensorIterator::with_32bit_indexing`.
pub fn name_expression(sig: &Signature, output_vec_size: u32) -> String {
    reduce_kernel_name(sig, output_vec_size, false)
}

/// The RaggedColumns strategy's `reduce_kernel`: the widest of
/// [`output_vec_sizes`] (the planner's `max_output_vec_size`, which that
/// strategy's lanes take), instantiated with `ragged_columns`. An
/// instantiation of its own, so that the other kernels compile exactly as
/// they would without it.
pub fn ragged_columns_name_expression(sig: &Signature) -> String {
    reduce_kernel_name(sig, crate::cuda::plan::max_output_vec_size(sig), true)
}

/// `reduce_kernel<nt, output_vec_size, ReduceOp, ragged_columns>`, with
/// `max_num_threads` shared among the lanes' outputs.
fn reduce_kernel_name(sig: &Signature, output_vec_size: u32, ragged_columns: bool) -> String {
    let nt = sig.max_num_threads / output_vec_size;
    format!(
        "tr::reduce_kernel<{nt}, {output_vec_size}, {}, {ragged_columns} >",
        reduce_op_type(sig)
    )
}

/// The `ReduceOp` every kernel of a signature's module runs.
fn reduce_op_type(sig: &Signature) -> String {
    let functor = format!(
        "tr::{}<{}, {}>",
        sig.op.functor(),
        c_compute_type(sig.compute),
        c_compute_type(sig.cast.unwrap_or(sig.compute)),
    );
    format!(
        "tr::ReduceOp<{}, {functor}, tr::uint32_t, {}, {}, {}, {}>",
        c_type(sig.input),
        c_type(sig.output),
        sig.vt0,
        sig.input_vec_size,
        sig.sums_bytes(),
    )
}

fn validate(sig: &Signature) -> Result<()> {
    let ok_vt0 = (1..=16).contains(&sig.vt0);
    let ok_ivs = matches!(sig.input_vec_size, 1 | 2 | 4 | 8 | 16)
        && sig.input_vec_size as usize * sig.input.size_in_bytes() <= 32;
    let ok_threads = output_vec_sizes(sig)
        .iter()
        .all(|&v| sig.max_num_threads % v == 0 && sig.max_num_threads / v >= 32);
    if ok_vt0 && ok_ivs && ok_threads {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "kernel variant vt0 = {}, input_vec_size = {}, max_num_threads = {}",
            sig.vt0, sig.input_vec_size, sig.max_num_threads
        )))
    }
}

/// A short name for logs and errors.
pub fn label(sig: &Signature) -> String {
    let cast = sig.cast.map(|c| format!("_via_{c}")).unwrap_or_default();
    format!(
        "reduce_{}_{}{cast}_{}_vt{}_iv{}",
        sig.op, sig.input, sig.output, sig.vt0, sig.input_vec_size
    )
}

/// The full NVRTC source: the bundled kernels, then the layout checks
/// against the host's `#[repr(C)]` structs.
pub fn source() -> String {
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
    options_for(format!("sm_{}{}", arch.0, arch.1))
}

/// NVRTC options for the named architecture (`sm_90`, `compute_90`).
fn options_for(architecture: String) -> Vec<String> {
    vec![
        format!("--gpu-architecture={architecture}"),
        "-std=c++17".into(),
        "--device-as-default-execution-space".into(),
    ]
}

/// NVRTC's option for code lowered with little optimisation, to check that
/// a module compiles rather than to run it.
const FAST_COMPILE: &str = "--Ofast-compile=max";

/// How hard NVVM optimises a module compiled to PTX ([`compile_ptx`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxOptimization {
    /// As [`compile`] optimises: the PTX ptxas would be given, to read or
    /// to compare between commits.
    Full,
    /// NVRTC's `--Ofast-compile=max`: the same front end (templates,
    /// types, the layout asserts) and the same entries, lowered with
    /// little optimisation, in about a twentieth of the time. For checking
    /// that every signature compiles; its code is not what runs.
    FastCompile,
}

/// Compiles the kernels of `sig` to PTX for `arch`'s virtual architecture
/// (`compute_XY`), bypassing the disk cache: everything NVRTC's front end
/// and NVVM check short of ptxas's machine code. Nothing loads this PTX; it
/// is for reading kernels without a GPU and for the compile test, which
/// covers every signature this way beside machine code for one signature
/// per op.
pub fn compile_ptx(
    sig: &Signature,
    arch: (u32, u32),
    optimization: PtxOptimization,
) -> Result<CompiledPtx> {
    let mut options = options_for(format!("compute_{}{}", arch.0, arch.1));
    if optimization == PtxOptimization::FastCompile {
        options.push(FAST_COMPILE.into());
    }
    let Compiled {
        image,
        lowered_names,
        ..
    } = compile_uncached(sig, &options, nvrtc::Image::Ptx)?;
    Ok(CompiledPtx {
        ptx: String::from_utf8_lossy(&image)
            .trim_end_matches('\0')
            .to_string(),
        lowered_names,
    })
}

/// What ptxas reports for each kernel of `sig`'s module on `arch`
/// (registers, stack frame, spill stores and loads), as
/// (name expression, ptxas's lines for it) in [`name_expressions`]' order:
/// machine code compiled with `--ptxas-options=-v`, bypassing the disk
/// cache. Spills cost bandwidth the way a kernel's paths share registers,
/// and this shows them without a GPU.
pub fn ptxas_info(sig: &Signature, arch: (u32, u32)) -> Result<Vec<(String, String)>> {
    let mut options = options(arch);
    options.push("--ptxas-options=-v".into());
    let compiled = compile_uncached(sig, &options, nvrtc::Image::Cubin)?;
    // ptxas's lines for a kernel follow its "Compiling entry function
    // '<mangled name>'" line, up to the next such line.
    let mut by_name = std::collections::HashMap::<&str, String>::new();
    let mut current: Option<&str> = None;
    for line in compiled.log.lines() {
        if line.contains("Compiling entry function") {
            current = compiled
                .lowered_names
                .iter()
                .find(|n| line.contains(&format!("'{n}'")))
                .map(String::as_str);
        } else if let Some(name) = current {
            if line.contains("registers") || line.contains("spill") {
                let lines = by_name.entry(name).or_default();
                lines.push_str(
                    line.trim_start_matches("ptxas")
                        .trim_start_matches([' ', '.'])
                        .trim_start_matches("info    : "),
                );
                lines.push('\n');
            }
        }
    }
    Ok(name_expressions(sig)
        .into_iter()
        .zip(&compiled.lowered_names)
        .map(|(expr, name)| (expr, by_name.remove(name.as_str()).unwrap_or_default()))
        .collect())
}

/// A module compiled to PTX ([`compile_ptx`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledPtx {
    /// The PTX text.
    pub ptx: String,
    /// Mangled kernel names, in [`name_expressions`]' order.
    pub lowered_names: Vec<String>,
}

/// Compiles the kernels of `sig` for `arch` through the on-disk cache,
/// without a GPU: the cubin and the lowered name of each output vector size.
pub fn compile(sig: &Signature, arch: (u32, u32)) -> Result<CompiledKernel> {
    validate(sig)?;
    let source = source();
    let options = options(arch);
    let exprs = name_expressions(sig);
    let key = format!(
        "{label}\nkernels={KERNEL_SOURCES_HASH:016x}\nsource={src:016x}\noptions={options:?}\nexprs={exprs:?}\nnvrtc={nvrtc:?}\ndriver={driver}",
        label = label(sig),
        src = fnv1a64(source.as_bytes()),
        nvrtc = nvrtc::nvrtc_version()?,
        driver = driver_version(),
    );
    if let Some(hit) = disk_cache::load(&key) {
        return Ok(hit);
    }
    let Compiled {
        image,
        lowered_names,
        ..
    } = nvrtc::compile(&label(sig), &source, &options, &exprs, nvrtc::Image::Cubin)?;
    let compiled = CompiledKernel {
        cubin: image,
        lowered_names,
    };
    disk_cache::store(&key, &compiled);
    Ok(compiled)
}

/// Compiles the kernels of `sig` to machine code for `arch` as [`compile`]
/// does, but lowered with little optimisation (NVRTC's
/// `--Ofast-compile=max`, about an eighth of the time) and bypassing the
/// disk cache: ptxas's check of a module on an architecture nothing here
/// runs it on, which catches what that architecture lacks (the kernels'
/// inline assembly is ptxas's to accept). The code is not what runs.
pub fn compile_unoptimized(sig: &Signature, arch: (u32, u32)) -> Result<CompiledKernel> {
    let mut options = options(arch);
    options.push(FAST_COMPILE.into());
    let Compiled {
        image,
        lowered_names,
        ..
    } = compile_uncached(sig, &options, nvrtc::Image::Cubin)?;
    Ok(CompiledKernel {
        cubin: image,
        lowered_names,
    })
}

/// `sig`'s module compiled by NVRTC with `options`, bypassing the disk
/// cache: what [`compile_ptx`], [`ptxas_info`] and [`compile_unoptimized`]
/// share (the kernels they check or read are never loaded, so never
/// cached).
fn compile_uncached(sig: &Signature, options: &[String], image: nvrtc::Image) -> Result<Compiled> {
    validate(sig)?;
    nvrtc::compile(
        &label(sig),
        &source(),
        options,
        &name_expressions(sig),
        image,
    )
}

/// A compiled module: the cubin and the lowered name of each kernel of
/// [`name_expressions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledKernel {
    /// The cubin (SASS for one architecture).
    pub cubin: Vec<u8>,
    /// Mangled kernel names, in [`name_expressions`]' order.
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

/// A module loaded on one device: its kernels, in [`name_expressions`]'
/// order.
pub(crate) struct LoadedKernel {
    functions: Vec<cudarc::driver::CudaFunction>,
    /// The module's [`output_vec_sizes`]: its first `reduce_kernel`s.
    output_vec_sizes: &'static [u32],
    /// Registers a thread of each of those `reduce_kernel`s takes, which
    /// the planner counts waves by.
    pub(crate) registers: KernelRegisters,
}

impl LoadedKernel {
    /// The kernel that runs `launch`: for the ShortRows strategy the
    /// `packed_rows_kernel` where a lane's load holds several rows (its
    /// output vector), else a `short_rows_kernel` (by
    /// [`LaunchPlan::rows_by_one_stride`]); the ragged `reduce_kernel` for
    /// RaggedColumns; else the `reduce_kernel` of its output vector size.
    ///
    /// [`LaunchPlan::rows_by_one_stride`]: crate::cuda::plan::LaunchPlan::rows_by_one_stride
    pub(crate) fn function(
        &self,
        launch: &crate::cuda::plan::LaunchPlan,
    ) -> Result<&cudarc::driver::CudaFunction> {
        let config = &launch.config;
        // Their kernels would store partial results.
        if config.wide_lanes_share_outputs() {
            return Err(Error::Unsupported(format!(
                "a plan whose lanes of {} outputs share them across threads or CTAs",
                config.output_vec_size
            )));
        }
        // A ShortRows kernel holds its rows in arrays of a fixed size: a
        // thread told to take more would skip the rest, so such a launch is
        // refused rather than run short.
        let most_rows = launch.short_rows_max_rows_per_thread();
        if config.lanes_per_row != 0 && config.rows_per_thread > most_rows {
            return Err(Error::Unsupported(format!(
                "{} rows per thread, more than the {most_rows} of its ShortRows kernel",
                config.rows_per_thread
            )));
        }
        let short_rows = self.output_vec_sizes.len();
        let index = if config.packed_rows() {
            Some(short_rows + 3)
        } else if config.wide_loads() {
            Some(short_rows + 4 + usize::from(!launch.rows_by_one_stride()))
        } else if config.lanes_per_row != 0 {
            Some(short_rows + usize::from(!launch.rows_by_one_stride()))
        } else if config.ragged_columns {
            // The module's widest kernel, the only output_vec_size the
            // planner gives RaggedColumns.
            (self.output_vec_sizes.last() == Some(&config.output_vec_size))
                .then_some(short_rows + 2)
        } else {
            self.output_vec_sizes
                .iter()
                .position(|&v| v == config.output_vec_size)
        };
        index.and_then(|i| self.functions.get(i)).ok_or_else(|| {
            Error::Unsupported(format!("output_vec_size {}", config.output_vec_size))
        })
    }
}

type Slot = Arc<Mutex<Option<Arc<LoadedKernel>>>>;

/// The in-process cache: one slot per (device, spec). The map's lock is held
/// only to find the slot; compiling holds the slot's own lock, so callers of
/// the same spec wait for one compile and other specs proceed.
pub(crate) fn loaded(ordinal: usize, sig: &Signature) -> Result<Arc<LoadedKernel>> {
    static CACHE: OnceLock<Mutex<HashMap<(usize, Signature), Slot>>> = OnceLock::new();
    let slot = {
        let mut map = CACHE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry((ordinal, *sig)).or_default().clone()
    };
    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = guard.as_ref() {
        return Ok(k.clone());
    }
    let props = super::device_props(ordinal)?;
    let compiled = compile(sig, props.compute_capability)?;
    let ctx = super::context(ordinal)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(|e| super::driver_error(ordinal, 0, &format!("loading {}", label(sig)), e))?;
    let functions = compiled
        .lowered_names
        .iter()
        .map(|n| {
            module
                .load_function(n)
                .map_err(|e| super::driver_error(ordinal, 0, &format!("finding {n}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    let vec_sizes = output_vec_sizes(sig);
    let registers = vec_sizes
        .iter()
        .zip(&functions)
        .map(|(&v, f)| {
            f.num_regs()
                .map(|r| (v, r.max(0) as u32))
                .map_err(|e| super::driver_error(ordinal, 0, "cuFuncGetAttribute", e))
        })
        .collect::<Result<Vec<_>>>()?;
    let k = Arc::new(LoadedKernel {
        functions,
        output_vec_sizes: vec_sizes,
        registers: KernelRegisters::new(registers),
    });
    *guard = Some(k.clone());
    Ok(k)
}
