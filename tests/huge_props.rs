//! Property test: huge and overflowing shapes, strides, offsets and slice
//! bounds fed to every constructor, view and reduction give `Ok` or a typed
//! error, never a panic; and whatever is `Ok` can be read back.
//!
//! Sizes are either tiny (0..4) or enormous (2^48 and up, to `usize::MAX`):
//! a product of them is either cheap or far beyond any memory (2^48 bytes is
//! past the 47-bit user address space), so every allocation the test makes
//! either is small or fails at once. Reductions whose input is enormous but
//! whose result is small would really run, so those are left out.

mod common;

use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tensor_reduce::cuda::plan::DeviceProps;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Result, Tensor};

/// Tensors up to this many elements are read back and reduced.
const SMALL: usize = 1 << 16;

/// A reduction under test: `(tensor, dims, keepdim)`. Add new ops here.
type Reduction = fn(&Tensor, &[isize], bool) -> Result<()>;

const REDUCTIONS: &[(&str, Reduction)] = &[
    ("sum", |t, dims, keepdim| {
        t.sum(dims, keepdim).and_then(read)
    }),
    ("sum_dtype f64", |t, dims, keepdim| {
        t.sum_dtype(dims, keepdim, DType::F64).and_then(read)
    }),
    ("sum_dtype i64", |t, dims, keepdim| {
        t.sum_dtype(dims, keepdim, DType::I64).and_then(read)
    }),
    ("sum_all", |t, _, _| t.sum_all().and_then(read)),
    ("prod", |t, dims, keepdim| {
        t.prod(dims, keepdim).and_then(read)
    }),
    ("nansum", |t, dims, keepdim| {
        t.nansum(dims, keepdim).and_then(read)
    }),
    ("mean_dtype f32", |t, dims, keepdim| {
        t.mean_dtype(dims, keepdim, DType::F32).and_then(read)
    }),
    ("amax", |t, dims, keepdim| {
        t.amax(dims, keepdim).and_then(read)
    }),
    ("amin", |t, dims, keepdim| {
        t.amin(dims, keepdim).and_then(read)
    }),
    ("any", |t, dims, keepdim| {
        t.any(dims, keepdim).and_then(read)
    }),
    ("all", |t, dims, keepdim| {
        t.all(dims, keepdim).and_then(read)
    }),
    ("max_dim", |t, dims, keepdim| {
        let (v, i) = t.max_dim(dims.first().copied().unwrap_or(0), keepdim)?;
        read(v).and(read(i))
    }),
    ("argmin", |t, dims, keepdim| {
        t.argmin(dims.first().copied(), keepdim).and_then(read)
    }),
    ("aminmax", |t, dims, keepdim| {
        let (lo, hi) = t.aminmax(dims, keepdim)?;
        read(lo).and(read(hi))
    }),
    ("var_mean", |t, dims, keepdim| {
        let (v, m) = t.var_mean(dims, 1.0, keepdim)?;
        read(v).and(read(m))
    }),
    ("norm inf", |t, dims, keepdim| {
        t.norm(f64::INFINITY, dims, keepdim).and_then(read)
    }),
    ("norm 3", |t, dims, keepdim| {
        t.norm(3.0, dims, keepdim).and_then(read)
    }),
    ("logsumexp", |t, dims, keepdim| {
        t.logsumexp(dims, keepdim).and_then(read)
    }),
];

/// Reads a result back when it is small enough: an `Ok` over memory that is
/// not there would crash here.
fn read(t: Tensor) -> Result<()> {
    if t.numel() <= SMALL {
        let host = t.to_device(Device::Cpu)?.contiguous()?;
        assert_eq!(host.numel(), t.numel());
        tensor_reduce::with_dtype!(host.dtype(), T => { host.to_vec::<T>()?; });
    }
    Ok(())
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 0usize..4,
        // Mostly sizes whose products with a few tiny dims still have
        // addressable byte counts, so views of them exist and get reduced.
        3 => (48u32..54).prop_map(|k| 1usize << k),
        1 => (54u32..64).prop_map(|k| 1usize << k),
        1 => prop::sample::select(vec![
            usize::MAX,
            usize::MAX / 3,
            isize::MAX as usize,
            isize::MAX as usize + 1,
            (1 << 62) + 1,
        ]),
    ]
}

fn stride() -> impl Strategy<Value = isize> {
    prop_oneof![
        6 => 0isize..5,
        2 => (40u32..63).prop_map(|k| 1isize << k),
        1 => prop::sample::select(vec![isize::MAX, isize::MIN, -1, isize::MAX / 2 + 1]),
    ]
}

fn index() -> impl Strategy<Value = isize> {
    prop_oneof![
        4 => -4isize..5,
        1 => prop::sample::select(vec![isize::MIN, isize::MAX, 1 << 50, -(1 << 50)]),
    ]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(size(), 0..=4)
}

/// One view applied to the tensor built so far.
#[derive(Clone, Debug)]
enum View {
    AsStrided(Vec<usize>, Vec<isize>, usize),
    Expand(Vec<usize>),
    /// Broadcasts the current shape (most random targets would not):
    /// new leading dims, and the `k`-th size-1 dim (cyclically) becomes `n`.
    Broadcast(Vec<usize>, usize, usize),
    Slice(isize, isize, isize, usize),
    Narrow(isize, usize, usize),
    Unsqueeze(isize),
    Reshape(Vec<usize>),
    Permute(Vec<isize>),
    Transpose(isize, isize),
    SqueezeDim(isize),
}

fn view() -> impl Strategy<Value = View> {
    let strided = (0usize..=4).prop_flat_map(|rank| {
        (
            prop::collection::vec(size(), rank),
            prop::collection::vec(stride(), rank),
            size(),
        )
    });
    prop_oneof![
        2 => strided.prop_map(|(s, st, o)| View::AsStrided(s, st, o)),
        2 => shape().prop_map(View::Expand),
        4 => (prop::collection::vec(size(), 0..=1), size(), 0usize..4)
            .prop_map(|(lead, n, k)| View::Broadcast(lead, n, k)),
        2 => (index(), index(), index(), size()).prop_map(|(d, a, b, s)| View::Slice(d, a, b, s)),
        2 => (index(), size(), size()).prop_map(|(d, a, n)| View::Narrow(d, a, n)),
        2 => index().prop_map(View::Unsqueeze),
        2 => shape().prop_map(View::Reshape),
        2 => prop::collection::vec(index(), 0..=4).prop_map(View::Permute),
        2 => (index(), index()).prop_map(|(a, b)| View::Transpose(a, b)),
        2 => index().prop_map(View::SqueezeDim),
    ]
}

fn apply(t: &Tensor, v: &View) -> Result<Tensor> {
    match v {
        View::AsStrided(s, st, o) => t.as_strided(s, st, *o),
        View::Expand(s) => t.expand(s),
        View::Broadcast(lead, n, k) => {
            let mut target: Vec<usize> = lead.iter().chain(t.shape()).copied().collect();
            let ones: Vec<usize> = (lead.len()..target.len())
                .filter(|&d| target[d] == 1)
                .collect();
            if !ones.is_empty() {
                target[ones[k % ones.len()]] = *n;
            }
            t.expand(&target)
        }
        View::Slice(d, a, b, s) => t.slice(*d, *a, *b, *s),
        View::Narrow(d, a, n) => t.narrow(*d, *a, *n),
        View::Unsqueeze(d) => t.unsqueeze(*d),
        View::Reshape(s) => t.reshape(s),
        View::Permute(p) => t.permute(p),
        View::Transpose(a, b) => t.transpose(*a, *b),
        View::SqueezeDim(d) => t.squeeze_dim(*d),
    }
}

#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    zeros_shape: Vec<usize>,
    views: Vec<View>,
    dims: Vec<isize>,
    keepdim: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(DType::ALL.to_vec()),
        shape(),
        prop::collection::vec(view(), 1..=4),
        prop::collection::vec(index(), 0..=3),
        any::<bool>(),
    )
        .prop_map(|(dtype, zeros_shape, views, dims, keepdim)| Case {
            dtype,
            zeros_shape,
            views,
            dims,
            keepdim,
        })
}

/// Runs `f`, failing the case (not the process) if it panics.
fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> std::result::Result<R, TestCaseError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| TestCaseError::fail(format!("{what} panicked")))
}

/// Elements from which a tensor is certain not to fit in memory: 2^48
/// bytes at one byte per element.
const HUGE: usize = 1 << 48;

/// How much work reading `n` elements (`None`: more than fit in a usize) is.
#[derive(Clone, Copy, PartialEq)]
enum Size {
    /// Cheap to read, copy and reduce.
    Small,
    /// Allocatable but slow (a slice with a huge step can make these): left out.
    Medium,
    /// Cannot be allocated: every copy must fail, and fail fast.
    Huge,
}

fn size_of(n: Option<usize>) -> Size {
    match n {
        Some(n) if n <= SMALL => Size::Small,
        Some(n) if n < HUGE => Size::Medium,
        _ => Size::Huge,
    }
}

/// The elements of `t`'s result when reducing `dims` (`None` when that
/// overflows a usize).
fn result_numel(t: &Tensor, dims: &[isize]) -> Option<usize> {
    let rank = t.dim() as isize;
    let reduced = |d: usize| {
        dims.is_empty()
            || dims
                .iter()
                .any(|&x| x == d as isize || x + rank == d as isize)
    };
    (0..t.dim())
        .filter(|&d| !reduced(d))
        .try_fold(1usize, |acc, d| acc.checked_mul(t.shape()[d]))
}

/// Every reduction, read-back and plan of `t` that can run quickly.
fn exercise(t: &Tensor, case: &Case) -> std::result::Result<(), TestCaseError> {
    let what = format!("{t:?}");
    // Plans are descriptions: always cheap.
    no_panic(&format!("explain of {what}"), || {
        let _ = t.explain(
            ReduceOp::Sum,
            &case.dims,
            case.keepdim,
            &DeviceProps::h200(),
        );
    })?;
    let input = size_of(Some(t.numel()));
    match input {
        Size::Small => no_panic(&format!("read of {what}"), || read(t.clone()))??,
        Size::Medium => return Ok(()),
        Size::Huge => {
            let copy = no_panic(&format!("contiguous of {what}"), || t.contiguous())?;
            prop_assert!(t.is_contiguous() || copy.is_err(), "copied {what}");
            let host = no_panic(
                &format!("to_vec of {what}"),
                || tensor_reduce::with_dtype!(t.dtype(), T => t.to_vec::<T>().map(|_| ())),
            )?;
            prop_assert!(host.is_err(), "read back {what}");
        }
    }
    // A huge input is reduced only when its result is huge too, so that
    // allocating the result fails before any work.
    let result = size_of(result_numel(t, &case.dims));
    for (name, op) in REDUCTIONS {
        let all = *name == "sum_all";
        if input != Size::Small && (all || result != Size::Huge) {
            continue;
        }
        let r = no_panic(&format!("{name} of {what}"), || {
            op(t, &case.dims, case.keepdim)
        })?;
        prop_assert!(
            input == Size::Small || r.is_err(),
            "{name} of {what} succeeded over a result too large to allocate"
        );
    }
    Ok(())
}

fn check(case: &Case, device: Device) -> std::result::Result<(), TestCaseError> {
    if let Ok(z) = no_panic("zeros", || {
        Tensor::zeros(&case.zeros_shape, case.dtype, device)
    })? {
        exercise(&z, case)?;
    }
    // Size-1 dims to broadcast, among others.
    let base = Tensor::zeros(&[2, 1, 3, 1], case.dtype, Device::Cpu)
        .unwrap()
        .to_device(device)
        .unwrap();
    let mut t = base;
    for v in &case.views {
        match no_panic(&format!("{v:?} of {t:?}"), || apply(&t, v))? {
            Ok(next) => {
                exercise(&next, case)?;
                t = next;
            }
            Err(_) => continue,
        }
    }
    Ok(())
}

fn huge_inputs(device: Device) {
    let config = ProptestConfig {
        cases: 500,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(c in case())| {
        check(&c, device)?;
    });
}

backend_tests! {
    huge_shapes_and_strides_never_panic => huge_inputs;
}
