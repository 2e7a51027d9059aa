//! The CPU backend's loops compute the same bits in every instruction set
//! they are compiled for (`tensor_reduce::cpu::isa`): every op over short
//! and long rows, columns of narrow and wide tiles, strided multi-dim
//! slices and one-input outputs, in every dtype it takes, run with the
//! baseline loops and with the widest this CPU has, compared bit for bit.
//!
//! One test in its own binary: the instruction set is process-wide. On a
//! CPU with no wider set (not x86-64, or no AVX2) both runs take the
//! baseline, and the test says so.

use tensor_reduce::cpu::{limit_isa, CpuIsa};
use tensor_reduce::{DType, Device, Result, Tensor};

/// An op's call, giving its result (two for the ops that have two).
type OpCall<'a> = Box<dyn Fn() -> Result<Vec<Tensor>> + 'a>;

/// Every result of every op over `x`, as f64 bits (a result's dtype
/// conversion is deterministic, so equal results give equal bits).
fn results(x: &Tensor, dims: &[isize]) -> Vec<(String, Vec<u64>)> {
    let dim = dims[0];
    let ops: Vec<(&str, OpCall)> = vec![
        ("sum", Box::new(|| Ok(vec![x.sum(dims, false)?]))),
        ("mean", Box::new(|| Ok(vec![x.mean(dims, false)?]))),
        ("prod", Box::new(|| Ok(vec![x.prod(dims, false)?]))),
        ("nansum", Box::new(|| Ok(vec![x.nansum(dims, false)?]))),
        ("amax", Box::new(|| Ok(vec![x.amax(dims, false)?]))),
        ("amin", Box::new(|| Ok(vec![x.amin(dims, false)?]))),
        ("any", Box::new(|| Ok(vec![x.any(dims, false)?]))),
        ("all", Box::new(|| Ok(vec![x.all(dims, false)?]))),
        ("argmax", Box::new(|| Ok(vec![x.argmax(Some(dim), false)?]))),
        (
            "max_dim",
            Box::new(|| {
                let (v, i) = x.max_dim(dim, false)?;
                Ok(vec![v, i])
            }),
        ),
        ("var", Box::new(|| Ok(vec![x.var(dims, 1.0, false)?]))),
        ("norm2", Box::new(|| Ok(vec![x.norm(2.0, dims, false)?]))),
        ("norm1", Box::new(|| Ok(vec![x.norm(1.0, dims, false)?]))),
        ("norm3", Box::new(|| Ok(vec![x.norm(3.0, dims, false)?]))),
        (
            "logsumexp",
            Box::new(|| Ok(vec![x.logsumexp(dims, false)?])),
        ),
    ];
    ops.into_iter()
        .filter_map(|(name, run)| {
            // An op a dtype does not take (mean of integers) is an error
            // at either instruction set alike.
            let outs = run().ok()?;
            let bits = outs
                .iter()
                .flat_map(|t| {
                    t.to_dtype(DType::F64)
                        .and_then(|t| t.to_vec::<f64>())
                        .expect("a CPU result converts to f64")
                })
                .map(f64::to_bits)
                .collect();
            Some((name.to_string(), bits))
        })
        .collect()
}

/// (shape, view, reduced dims) covering each loop of the CPU trees.
fn layouts() -> Vec<(Vec<usize>, &'static str, Vec<isize>)> {
    vec![
        (vec![300, 7], "none", vec![1]),        // short rows, odd
        (vec![3000, 16], "none", vec![1]),      // short rows of 16
        (vec![64, 1000], "none", vec![1]),      // rows of a leaf
        (vec![4, 70000], "none", vec![1]),      // long rows: the pairwise tree
        (vec![200, 300], "none", vec![0]),      // columns, a narrow tile
        (vec![37, 20000], "none", vec![0]),     // columns, wide tiles, ragged passes
        (vec![300, 20000], "none", vec![0]),    // columns over several leaves
        (vec![8, 33, 40], "none", vec![0, 2]),  // strided multi-dim slices
        (vec![3, 4, 2100], "none", vec![0, 2]), // planes longer than a leaf
        (vec![40, 33, 8], "permute", vec![1]),  // a permuted view's middle dim
        (vec![1000, 2], "step", vec![1]),       // stepped: one input per output
    ]
}

#[test]
fn every_instruction_set_computes_the_same_bits() {
    let widest = CpuIsa::detected();
    if widest == CpuIsa::Baseline {
        println!("this CPU has only the baseline instruction set: both runs take it");
    }
    let dtypes = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::U8,
        DType::Bool,
    ];
    let mut compared = 0;
    for (case, (shape, view, dims)) in layouts().into_iter().enumerate() {
        for dtype in dtypes {
            let base = Tensor::randn(&shape, DType::F32, Device::Cpu, case as u64).unwrap();
            // Integers from a scaled normal; a few NaNs for the floats.
            let base = if dtype.is_floating_point() {
                let mut v = base.to_vec::<f32>().unwrap();
                v.iter_mut().step_by(97).for_each(|x| *x = f32::NAN);
                Tensor::from_vec(v, &shape)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
            } else {
                let v: Vec<f32> = base
                    .to_vec::<f32>()
                    .unwrap()
                    .iter()
                    .map(|x| x * 40.0)
                    .collect();
                Tensor::from_vec(v, &shape)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
            };
            let x = match view {
                "permute" => base.permute(&[2, 1, 0]).unwrap(),
                "step" => base.slice(1, 0, 2, 2).unwrap(),
                _ => base,
            };
            assert_eq!(limit_isa(CpuIsa::Baseline), CpuIsa::Baseline);
            let narrow = results(&x, &dims);
            assert_eq!(limit_isa(widest), widest);
            let wide = results(&x, &dims);
            assert_eq!(narrow.len(), wide.len());
            assert!(!wide.is_empty(), "{shape:?} {dtype}: no op ran");
            for ((op, a), (_, b)) in narrow.iter().zip(&wide) {
                assert!(a == b, "{op} of {dtype} {shape:?} {view} over {dims:?}: {widest:?} differs from the baseline");
                compared += a.len();
            }
        }
    }
    println!("{compared} results compared between the baseline and {widest:?}");
}
