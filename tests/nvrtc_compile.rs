//! Compiles every `reduce_kernel` instantiation the entry points can ask
//! for (every op's signatures) through NVRTC to PTX for compute_90, lowered
//! with little optimisation, and the first signature of each op down to
//! machine code, fully optimised for sm_90 and with little optimisation for
//! sm_80, with no GPU needed.
//! (The GPU machine's test runs compile every module, optimised, to machine
//! code for its own architecture first.)
//!
//! The tests are ignored by default, so that a machine without libnvrtc
//! shows them as ignored rather than passed. Run them with
//! `cargo test --release --test nvrtc_compile -- --include-ignored` after
//! `scripts/install-nvrtc.sh` (CI does); asked for and without libnvrtc,
//! they fail.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tensor_reduce::cuda::{self, kernel};
use tensor_reduce::reduce::{ReduceOp, Signature};
use tensor_reduce::DType;

/// Fails, saying how to get one, when libnvrtc cannot be loaded: these
/// tests only run when asked for, and then must not pass without compiling.
fn require_nvrtc(test: &str) {
    assert!(
        cuda::nvrtc_available(),
        "{test}: libnvrtc could not be loaded (run scripts/install-nvrtc.sh and put its directory on LD_LIBRARY_PATH)"
    );
}

/// One fresh cache directory for this process, so the tests really run
/// NVRTC (set once: the environment is process-wide and tests run in
/// parallel).
fn private_cache_dir() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("tensor-reduce-nvrtc-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // SAFETY: set once, before any compile in this process reads it.
        unsafe { std::env::set_var("TENSOR_REDUCE_CACHE_DIR", &dir) };
        dir
    })
    .clone()
}

/// What a job of [`every_instantiation_compiles`] compiles a module to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Machine code as the GPU machine runs it ([`kernel::compile`]).
    MachineCode,
    /// Machine code lowered with little optimisation
    /// ([`kernel::compile_unoptimized`]).
    MachineCodeUnoptimized,
    /// PTX lowered with little optimisation ([`kernel::compile_ptx`]).
    Ptx,
}

#[test]
#[ignore = "needs libnvrtc (scripts/install-nvrtc.sh)"]
fn every_instantiation_compiles() {
    require_nvrtc("every_instantiation_compiles");
    private_cache_dir();
    println!("NVRTC {:?}", cuda::nvrtc_version().unwrap());
    // Every signature to PTX for the architecture the GPU machine has
    // (NVRTC's front end, where template and type errors show, lowered
    // with little optimisation: optimised, the PTX of every signature took
    // about 700 s of CI's 2 cores); the first of each op fully optimised to
    // machine code (ptxas too) for it, and lowered with little optimisation
    // to machine code for sm_80, which catches code that needs Hopper
    // (fully optimised, sm_80's modules took over a quarter of this test's
    // time on a 2-core machine like CI's, 576 s against 416, to check the
    // same thing). The GPU machine's test runs compile every module
    // optimised.
    let mut jobs: Vec<(Signature, (u32, u32), Check)> = Vec::new();
    for op in ReduceOp::ALL {
        let sigs = op.all_signatures();
        jobs.push((sigs[0], (8, 0), Check::MachineCodeUnoptimized));
        jobs.push((sigs[0], (9, 0), Check::MachineCode));
        jobs.extend(sigs.into_iter().map(|s| (s, (9, 0), Check::Ptx)));
    }
    assert!(jobs.len() > DType::ALL.len() * DType::ALL.len());
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8);
    let cubin_names = |k: kernel::CompiledKernel, spec: &Signature| {
        // A cubin is an ELF image.
        assert_eq!(&k.cubin[..4], b"\x7fELF");
        assert!(k.cubin.len() > 1000, "{}: tiny cubin", kernel::label(spec));
        k.lowered_names
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(spec, arch, check)) = jobs.get(i) else {
                    break;
                };
                let compiled = match check {
                    Check::MachineCode => {
                        kernel::compile(&spec, arch).map(|k| cubin_names(k, &spec))
                    }
                    Check::MachineCodeUnoptimized => {
                        kernel::compile_unoptimized(&spec, arch).map(|k| cubin_names(k, &spec))
                    }
                    Check::Ptx => {
                        kernel::compile_ptx(&spec, arch, kernel::PtxOptimization::FastCompile).map(
                            |k| {
                                // Every kernel is an entry of the PTX module.
                                for name in &k.lowered_names {
                                    assert!(
                                        k.ptx.contains(&format!(".entry {name}(")),
                                        "{}: no entry {name} in the PTX",
                                        kernel::label(&spec)
                                    );
                                }
                                k.lowered_names
                            },
                        )
                    }
                };
                match compiled {
                    Ok(names) => {
                        assert_eq!(names.len(), kernel::name_expressions(&spec).len());
                    }
                    Err(e) => failures.lock().unwrap().push(format!(
                        "{} {}_{}{}: {e}",
                        kernel::label(&spec),
                        if check == Check::Ptx { "compute" } else { "sm" },
                        arch.0,
                        arch.1
                    )),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} compiles failed:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n\n")
    );
    let machine_code = jobs.iter().filter(|j| j.2 != Check::Ptx).count();
    println!(
        "compiled {} modules ({} kernels), {machine_code} of them to machine code",
        jobs.len(),
        jobs.iter()
            .map(|(spec, _, _)| kernel::name_expressions(spec).len())
            .sum::<usize>()
    );
}

#[test]
#[ignore = "needs libnvrtc (scripts/install-nvrtc.sh)"]
fn disk_cache_serves_hits_and_recompiles_corrupt_entries() {
    require_nvrtc("disk_cache_serves_hits_and_recompiles_corrupt_entries");
    private_cache_dir();
    let spec = ReduceOp::Sum.signature(DType::F32, None).unwrap();
    let first = kernel::compile(&spec, (9, 0)).unwrap();
    let dir = cuda::disk_cache::dir().unwrap();
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cubin"))
        .collect();
    assert!(!entries.is_empty(), "nothing written to {}", dir.display());
    let t0 = std::time::Instant::now();
    let hit = kernel::compile(&spec, (9, 0)).unwrap();
    assert_eq!(hit, first);
    println!("cache hit in {:?}", t0.elapsed());
    // Damage every entry (the other test may be writing more; a damaged or
    // half-written entry is only ever recompiled): the next compile must
    // not trust them.
    for p in &entries {
        let mut bytes = std::fs::read(p).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 0xff;
        std::fs::write(p, bytes).unwrap();
    }
    let again = kernel::compile(&spec, (9, 0)).unwrap();
    assert_eq!(again.lowered_names, first.lowered_names);
    assert_eq!(&again.cubin[..4], b"\x7fELF");
}

/// ptxas's report reaches every kernel of a module, and the kernel that
/// packs short rows several a load spills nothing: it is an entry of its
/// own because inside `short_rows_kernel` its paths made ptxas spill.
#[test]
#[ignore = "needs libnvrtc (scripts/install-nvrtc.sh)"]
fn ptxas_reports_each_kernel_and_packed_rows_spill_nothing() {
    require_nvrtc("ptxas_reports_each_kernel_and_packed_rows_spill_nothing");
    let sig = ReduceOp::Sum
        .signature(DType::F16, Some(DType::F16))
        .unwrap();
    let report = kernel::ptxas_info(&sig, (9, 0)).unwrap();
    assert_eq!(report.len(), kernel::name_expressions(&sig).len());
    for (kernel, info) in &report {
        assert!(info.contains("registers"), "{kernel}: {info:?}");
    }
    let (_, packed) = report
        .iter()
        .find(|(k, _)| k.contains("packed_rows_kernel"))
        .expect("the module holds packed_rows_kernel");
    assert!(packed.contains(" 0 bytes spill stores"), "{packed}");
}
