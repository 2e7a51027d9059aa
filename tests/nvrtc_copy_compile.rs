//! Compiles the strided copy kernel (`kernels/copy.cuh`) through NVRTC for
//! sm_80 and sm_90, with no GPU needed. Ignored by default, as
//! `nvrtc_compile.rs` is, and run explicitly by CI after
//! `scripts/install-nvrtc.sh`; asked for without libnvrtc, it fails.

use tensor_reduce::cuda;

#[test]
#[ignore = "needs libnvrtc (scripts/install-nvrtc.sh)"]
fn copy_kernel_compiles_for_sm80_and_sm90() {
    assert!(
        cuda::nvrtc_available(),
        "libnvrtc could not be loaded (run scripts/install-nvrtc.sh and put its directory on LD_LIBRARY_PATH)"
    );
    // A private cache directory, so NVRTC really runs.
    let dir = std::env::temp_dir().join(format!("tensor-reduce-copy-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // SAFETY: this test binary has one test, so nothing reads the
    // environment concurrently.
    unsafe { std::env::set_var("TENSOR_REDUCE_CACHE_DIR", &dir) };
    for arch in [(8, 0), (9, 0)] {
        let k = cuda::compile_copy_kernel(arch).unwrap_or_else(|e| panic!("sm_{arch:?}: {e}"));
        assert_eq!(&k.cubin[..4], b"\x7fELF", "a cubin is an ELF image");
        assert_eq!(k.lowered_names.len(), 4, "one kernel per element size");
        assert!(k.lowered_names.iter().all(|n| n.contains("strided_copy")));
        // The second compile is a disk-cache hit with the same bytes.
        assert_eq!(cuda::compile_copy_kernel(arch).unwrap(), k);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
