//! Bundles `kernels/*.cuh` into the binary: `$OUT_DIR/kernels.rs` defines
//! `KERNEL_SOURCES` (name, text) in the order they are concatenated for
//! NVRTC, and `KERNEL_SOURCES_HASH` (FNV-1a 64 of all of them), which keys the
//! on-disk cache of compiled kernels.
//!
//! With the `cuda-aot` feature, `nvcc` on PATH and `CUDA_ARCHS` set (e.g.
//! `CUDA_ARCHS=80,90`), the sources are also compiled by nvcc for those
//! architectures as a build-time check of the kernels (the run-time path
//! still goes through NVRTC and its caches); without them the build warns
//! and continues. Nothing else at build time needs CUDA.

use std::path::Path;
use std::{env, fs};

/// The kernel files, in dependency order (NVRTC sees one concatenated source).
const KERNELS: [&str; 4] = [
    "types.cuh",
    "offset_calculator.cuh",
    "ops.cuh",
    "reduce.cuh",
];

fn fnv1a64(bytes: &[u8], mut hash: u64) -> u64 {
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn main() {
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-env-changed=CUDA_ARCHS");
    // Read at run time: `env!` would bake in the path of whichever checkout
    // first compiled this build script, and checkouts sharing a target dir
    // reuse that binary.
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest_dir).join("kernels");
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut out = String::from("/// The kernel sources, in concatenation order.\npub(crate) const KERNEL_SOURCES: &[(&str, &str)] = &[\n");
    for name in KERNELS {
        let path = dir.join(name);
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

    if env::var_os("CARGO_FEATURE_CUDA_AOT").is_some() {
        aot_check(&dir, &out_dir);
    }
}

/// Compiles one representative instantiation per dtype pair family with nvcc
/// for each arch in `CUDA_ARCHS`, failing the build on a kernel error.
fn aot_check(dir: &Path, out_dir: &str) {
    let archs = env::var("CUDA_ARCHS").unwrap_or_default();
    let nvcc_ok = std::process::Command::new("nvcc")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if archs.trim().is_empty() || !nvcc_ok {
        println!(
            "cargo:warning=cuda-aot: {} - kernels will only be compiled at run time by NVRTC",
            if nvcc_ok {
                "CUDA_ARCHS is not set (e.g. CUDA_ARCHS=80,90)"
            } else {
                "nvcc is not on PATH"
            }
        );
        return;
    }
    let mut src = String::new();
    for name in KERNELS {
        src.push_str(&fs::read_to_string(dir.join(name)).expect("kernel source"));
        src.push('\n');
    }
    for (scalar, acc, out) in [
        ("tr::Half", "float", "tr::Half"),
        ("float", "float", "float"),
        ("tr::BFloat16", "float", "tr::BFloat16"),
        ("double", "double", "double"),
        ("tr::int32_t", "tr::int64_t", "tr::int64_t"),
    ] {
        for ovs in [1, 2, 4] {
            src.push_str(&format!(
                "template __global__ void tr::reduce_kernel<{nt}, {ovs}, tr::ReduceOp<{scalar}, tr::SumOps<{acc}>, tr::uint32_t, {out}, 4, 4>>(tr::ReduceOp<{scalar}, tr::SumOps<{acc}>, tr::uint32_t, {out}, 4, 4>);\n",
                nt = 512 / ovs
            ));
        }
    }
    let cu = Path::new(out_dir).join("aot_check.cu");
    fs::write(&cu, src).expect("writing aot_check.cu");
    for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let status = std::process::Command::new("nvcc")
            .args(["-cubin", "-std=c++17", &format!("-arch=sm_{arch}"), "-o"])
            .arg(Path::new(out_dir).join(format!("aot_check_sm_{arch}.cubin")))
            .arg(&cu)
            .status()
            .expect("running nvcc");
        assert!(
            status.success(),
            "cuda-aot: nvcc failed to compile the kernels for sm_{arch}"
        );
    }
}
