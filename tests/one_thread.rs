//! The CPU backend with a global pool of one thread (`RAYON_NUM_THREADS=1`),
//! in a test binary of its own because the global pool is built once per
//! process. There the team of threads is the calling thread alone: a tree
//! that splits runs its halves in turn, on the caller, rather than being
//! handed to rayon's one worker. Its results must be rayon's, bit for bit,
//! and the sums must agree with an f64 reference.

use tensor_reduce::cpu::CpuThreads;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Tensor};

/// A reduction of `x` over `dims`.
type Op = fn(&Tensor, &[isize]) -> Tensor;

fn one_thread_pool() {
    // Fails only if the pool exists already; then it must be of one thread.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global();
    assert_eq!(rayon::current_num_threads(), 1);
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// Each output of a sum over `dims` of `x`, in f64 from the f64 inputs.
fn reference_sums(x: &Tensor, dims: &[isize]) -> Vec<f64> {
    f64s(&x.to_dtype(DType::F64).unwrap().sum(dims, false).unwrap())
}

#[test]
fn the_calling_thread_alone_gives_rayons_bits() {
    one_thread_pool();
    let rows = Tensor::randn(&[64, 2056], DType::F32, Device::Cpu, 31).unwrap();
    let cube = Tensor::randn(&[8, 64, 56, 56], DType::F32, Device::Cpu, 32).unwrap();
    let half = Tensor::randn(&[300, 1003], DType::F16, Device::Cpu, 33).unwrap();
    // Each splits (at least 2^17 inputs) and is under 32 MiB: the team's.
    let cases: [(&Tensor, &[isize]); 5] = [
        (&rows, &[1]),
        (&rows, &[0]),
        (&rows, &[]),
        (&cube, &[0, 2, 3]),
        (&half, &[1]),
    ];
    let rayon_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for (x, dims) in cases {
        let plan = x.explain_cpu(ReduceOp::Sum, dims, false).unwrap();
        assert_eq!(plan.runs_on, CpuThreads::Team, "{plan}");
        assert!(plan.to_string().contains("a team of one"), "{plan}");
        let ops: [(&str, Op); 4] = [
            ("sum", |t, d| t.sum(d, false).unwrap()),
            ("logsumexp", |t, d| t.logsumexp(d, false).unwrap()),
            ("var", |t, d| t.var(d, 1.0, false).unwrap()),
            ("argmax", |t, d| match d {
                [d] => t.argmax(Some(*d), false).unwrap(),
                _ => t.argmax(None, false).unwrap(),
            }),
        ];
        for (name, op) in ops {
            let alone = f64s(&op(x, dims));
            let stolen = f64s(&rayon_pool.install(|| op(x, dims)));
            assert!(
                alone.len() == stolen.len()
                    && alone
                        .iter()
                        .zip(&stolen)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{name} over {dims:?} of {:?}",
                x.shape()
            );
        }
        let sums = f64s(&x.sum(dims, false).unwrap());
        let want = reference_sums(x, dims);
        for (got, want) in sums.iter().zip(&want) {
            // f32 (or f16 widened to f32) partial sums of randn: far inside
            // this bound, which a lost or doubled subtree breaks.
            let bound = 1e-3 * (1.0 + want.abs());
            assert!((got - want).abs() <= bound, "{got} vs {want} over {dims:?}");
        }
    }
}
