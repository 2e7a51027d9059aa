//! How the benches call each op: the one place that names the library's
//! reduction methods.

use super::reference::{self, OpSpec};
use tensor_reduce::{Result, Tensor};

/// What one call returns: the output that is checked, and for ops with two
/// outputs (max_dim) the second, kept so that both are freed after the timed
/// region, as the peers' are.
pub struct Output {
    pub first: Tensor,
    pub second: Option<Tensor>,
}

impl Output {
    fn one(first: Tensor) -> Output {
        Output {
            first,
            second: None,
        }
    }

    fn two((first, second): (Tensor, Tensor)) -> Output {
        Output {
            first,
            second: Some(second),
        }
    }

    /// Bytes the call wrote: every output's elements.
    pub fn bytes(&self) -> u64 {
        [Some(&self.first), self.second.as_ref()]
            .into_iter()
            .flatten()
            .map(|t| (t.numel() * t.dtype().size_in_bytes()) as u64)
            .sum()
    }
}

/// One op bound to the dims of one case.
pub type Call = Box<dyn Fn(&Tensor) -> Result<Output> + Send + Sync>;

/// The op `name` over `dims` (keepdim false), or `None` when the library
/// does not have it yet. Single-dim ops take `dims[0]`; the caller has
/// checked that there is exactly one ([`not_applicable`]).
pub fn call(name: &str, dims: &[isize]) -> Option<Call> {
    let dims = dims.to_vec();
    Some(match name {
        "sum" => Box::new(move |x: &Tensor| x.sum(&dims, false).map(Output::one)),
        "mean" => Box::new(move |x: &Tensor| x.mean(&dims, false).map(Output::one)),
        "prod" => Box::new(move |x: &Tensor| x.prod(&dims, false).map(Output::one)),
        "nansum" => Box::new(move |x: &Tensor| x.nansum(&dims, false).map(Output::one)),
        "amax" => Box::new(move |x: &Tensor| x.amax(&dims, false).map(Output::one)),
        "amin" => Box::new(move |x: &Tensor| x.amin(&dims, false).map(Output::one)),
        "any" => Box::new(move |x: &Tensor| x.any(&dims, false).map(Output::one)),
        "all" => Box::new(move |x: &Tensor| x.all(&dims, false).map(Output::one)),
        "argmax" => Box::new(move |x: &Tensor| x.argmax(Some(dims[0]), false).map(Output::one)),
        "argmin" => Box::new(move |x: &Tensor| x.argmin(Some(dims[0]), false).map(Output::one)),
        "max_dim" => Box::new(move |x: &Tensor| x.max_dim(dims[0], false).map(Output::two)),
        "var" => Box::new(move |x: &Tensor| x.var(&dims, 1.0, false).map(Output::one)),
        "std" => Box::new(move |x: &Tensor| x.std(&dims, 1.0, false).map(Output::one)),
        "norm" => Box::new(move |x: &Tensor| x.norm(2.0, &dims, false).map(Output::one)),
        "logsumexp" => Box::new(move |x: &Tensor| x.logsumexp(&dims, false).map(Output::one)),
        _ => return None,
    })
}

/// The ops this build of the benches can time: a reference and a call.
pub fn wired() -> Vec<&'static str> {
    reference::OPS
        .iter()
        .filter(|s| call(s.name, &[0]).is_some())
        .map(|s| s.name)
        .collect()
}

/// The spec of `name` if it can be timed, else a message naming what can.
pub fn lookup(name: &str) -> std::result::Result<&'static OpSpec, String> {
    let wired = wired();
    match reference::find(name) {
        Some(s) if wired.contains(&name) => Ok(s),
        Some(_) => Err(format!(
            "op {name:?} is not in the library yet (not wired in benches/common/ops.rs); supported: {}",
            wired.join(", ")
        )),
        None => Err(format!(
            "unknown op {name:?}; supported: {}",
            wired.join(", ")
        )),
    }
}

/// Why `spec` does not apply to a case reducing `n_dims` dims of `dtype`
/// (the case is skipped, as torch would refuse it), or `None` when it does.
pub fn not_applicable(spec: &OpSpec, n_dims: usize, dtype: tensor_reduce::DType) -> Option<String> {
    if spec.single_dim && n_dims != 1 {
        return Some(format!(
            "{} takes one dim, the case reduces {n_dims}",
            spec.name
        ));
    }
    if (spec.out_dtype)(dtype).is_none() {
        return Some(format!("{} does not take {dtype} input", spec.name));
    }
    None
}
