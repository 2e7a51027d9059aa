//! Bundles the kernel sources into the binary: `$OUT_DIR/kernels.rs` defines
//! `KERNEL_SOURCES` (name, text) in the order they are concatenated for
//! NVRTC, and `KERNEL_SOURCES_HASH` (FNV-1a 64 of all of them), which keys the
//! on-disk cache of compiled kernels. Nothing at build time needs CUDA.
//!
//! The order is the dependency order: the element types, the offset
//! calculator, the op interface, every functor in `kernels/ops/` (sorted by
//! name, so adding an op is adding a file), then the kernel itself.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn fnv1a64(bytes: &[u8], mut hash: u64) -> u64 {
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The kernel files, relative to `kernels/`, in concatenation order.
fn kernel_files(dir: &Path) -> Vec<String> {
    let mut ops: Vec<String> = fs::read_dir(dir.join("ops"))
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.join("ops").display()))
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".cuh"))
        .map(|n| format!("ops/{n}"))
        .collect();
    ops.sort();
    let mut files: Vec<String> = ["types.cuh", "offset_calculator.cuh", "ops.cuh"]
        .map(String::from)
        .to_vec();
    files.extend(ops);
    files.push("reduce.cuh".into());
    files
}

fn main() {
    // Read at run time, not with env!(): a build script binary can be reused
    // by another checkout that shares the target directory.
    let manifest = env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = PathBuf::from(manifest).join("kernels");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!("cargo:rerun-if-changed={}", dir.join("ops").display());
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut out = String::from("/// The kernel sources, in concatenation order.\npub(crate) const KERNEL_SOURCES: &[(&str, &str)] = &[\n");
    for name in kernel_files(&dir) {
        let path = dir.join(&name);
        println!("cargo:rerun-if-changed={}", path.display());
        let text =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        hash = fnv1a64(name.as_bytes(), hash);
        hash = fnv1a64(text.as_bytes(), hash);
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    out.push_str(&format!("/// FNV-1a 64 of the names and texts of [`KERNEL_SOURCES`].\npub(crate) const KERNEL_SOURCES_HASH: u64 = {hash:#018x};\n"));
    let out_dir = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    fs::write(Path::new(&out_dir).join("kernels.rs"), out).expect("writing kernels.rs");
}
