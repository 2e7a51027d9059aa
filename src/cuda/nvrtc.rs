//! A thin NVRTC layer on `cudarc::nvrtc`'s raw bindings: compile to a cubin
//! for one real architecture (no PTX JIT at load time), or to PTX only, and
//! look up the lowered names of template instantiations (cudarc's safe API
//! offers neither).

use crate::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::{CStr, CString};

/// Whether libnvrtc can be loaded on this machine.
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes for the shared library.
    unsafe { sys::is_culib_present() }
}

/// NVRTC's `(major, minor)` version, or an error when it cannot be loaded.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    require_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Compile {
            kernel: "nvrtcVersion".into(),
            log: format!("{e:?}"),
        })?;
    Ok((major, minor))
}

fn require_nvrtc() -> Result<()> {
    if nvrtc_available() {
        Ok(())
    } else {
        Err(Error::CudaUnavailable(
            "NVRTC (libnvrtc.so) could not be loaded; put its directory on LD_LIBRARY_PATH".into(),
        ))
    }
}

/// A compiled program: its image (a cubin, or PTX text) and the lowered
/// (mangled) name of each requested name expression, in request order.
pub(crate) struct Compiled {
    pub image: Vec<u8>,
    pub lowered_names: Vec<String>,
    /// The program log: warnings, and with `--ptxas-options=-v` ptxas's
    /// registers and spills per kernel.
    pub log: String,
}

/// What a compile produces: machine code for a real architecture
/// (`--gpu-architecture=sm_XY`, NVVM then ptxas), or PTX for a virtual
/// one (`compute_XY`, NVVM only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Image {
    Cubin,
    Ptx,
}

/// Destroys the program on every path out of [`compile`].
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn nvrtc_err(kernel: &str, what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Compile {
        kernel: kernel.to_string(),
        log: format!("{what}: {e:?}"),
    }
}

/// Compiles `src` with `options` (whose architecture must be real for
/// [`Image::Cubin`], virtual for [`Image::Ptx`]) and instantiates
/// `name_expressions`.
pub(crate) fn compile(
    program_name: &str,
    src: &str,
    options: &[String],
    name_expressions: &[String],
    image: Image,
) -> Result<Compiled> {
    require_nvrtc()?;
    let c_src = CString::new(src).map_err(|e| nvrtc_err(program_name, "source", e))?;
    let c_name = CString::new(program_name).map_err(|e| nvrtc_err(program_name, "name", e))?;
    let prog = Program(
        result::create_program(&c_src, Some(&c_name))
            .map_err(|e| nvrtc_err(program_name, "nvrtcCreateProgram", e))?,
    );
    let c_exprs: Vec<CString> = name_expressions
        .iter()
        .map(|n| CString::new(n.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|e| nvrtc_err(program_name, "name expression", e))?;
    for expr in &c_exprs {
        // SAFETY: live program, NUL-terminated expression kept alive in c_exprs.
        unsafe { sys::nvrtcAddNameExpression(prog.0, expr.as_ptr()) }
            .result()
            .map_err(|e| nvrtc_err(program_name, "nvrtcAddNameExpression", e))?;
    }
    // SAFETY: live program; options are converted to C strings by cudarc.
    let compiled = unsafe { result::compile_program(prog.0, options) };
    // SAFETY: live program.
    let log = unsafe { result::get_program_log(prog.0) }
        .map(|raw| {
            // SAFETY: NVRTC returns a NUL-terminated log.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    if let Err(e) = compiled {
        return Err(Error::Compile {
            kernel: program_name.to_string(),
            log: format!("{e:?} with options {options:?}:\n{log}"),
        });
    }
    let (get_size, get) = match image {
        Image::Cubin => ("nvrtcGetCUBINSize", "nvrtcGetCUBIN"),
        Image::Ptx => ("nvrtcGetPTXSize", "nvrtcGetPTX"),
    };
    let mut size = 0usize;
    // SAFETY: live, compiled program; valid out-pointer.
    match image {
        Image::Cubin => unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) },
        Image::Ptx => unsafe { sys::nvrtcGetPTXSize(prog.0, &mut size) },
    }
    .result()
    .map_err(|e| nvrtc_err(program_name, get_size, e))?;
    let mut bytes = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes, as NVRTC asked for.
    match image {
        Image::Cubin => unsafe { sys::nvrtcGetCUBIN(prog.0, bytes.as_mut_ptr() as *mut _) },
        Image::Ptx => unsafe { sys::nvrtcGetPTX(prog.0, bytes.as_mut_ptr() as *mut _) },
    }
    .result()
    .map_err(|e| nvrtc_err(program_name, get, e))?;
    let mut lowered_names = Vec::with_capacity(c_exprs.len());
    for expr in &c_exprs {
        let mut lowered: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: the expression was added before compiling; NVRTC owns the
        // returned string until the program is destroyed, so copy it now.
        unsafe { sys::nvrtcGetLoweredName(prog.0, expr.as_ptr(), &mut lowered) }
            .result()
            .map_err(|e| nvrtc_err(program_name, "nvrtcGetLoweredName", e))?;
        // SAFETY: non-null NUL-terminated string on success.
        lowered_names.push(
            unsafe { CStr::from_ptr(lowered) }
                .to_string_lossy()
                .into_owned(),
        );
    }
    Ok(Compiled {
        image: bytes,
        lowered_names,
        log,
    })
}
