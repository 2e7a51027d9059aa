//! The reduction ops, each described once: what it returns, what it
//! accumulates in, its identity, what an empty input gives, and the kernel
//! settings PyTorch launches it with. The planner, the kernel spec and its
//! cache key, `explain`, the CPU backend and the entry points all read this
//! description; nothing about an op is spelled anywhere else.

use crate::{DType, Device, Error, Result};
use std::fmt;

/// A reduction, as a value that flows through every layer.
///
/// Each op names one functor (`kernels/ops/*.cuh` on the GPU, `src/cpu/ops.rs`
/// on the CPU, with the same name on both sides) with PyTorch's
/// `SharedReduceOps.h` interface: `reduce(acc, x, idx)`, `combine(a, b)`,
/// `project(acc)` and an identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `torch.sum`.
    Sum,
    /// `torch.nansum`: a sum that skips NaN.
    NanSum,
    /// `torch.prod`.
    Prod,
    /// `torch.mean`: a sum times `1 / n` (PyTorch's `MeanOps` factor).
    Mean,
    /// `torch.amax`: NaN propagates.
    AMax,
    /// `torch.amin`: NaN propagates.
    AMin,
    /// `torch.any`: NaN counts as true.
    Any,
    /// `torch.all`: NaN counts as true.
    All,
    /// `torch.max(x, dim)`: values and indices from one kernel. NaN counts
    /// as the largest value; among ties (and among NaNs) the lowest index
    /// wins.
    MaxDim,
    /// `torch.min(x, dim)`: see [`ReduceOp::MaxDim`].
    MinDim,
    /// `torch.argmax`: the index of [`ReduceOp::MaxDim`].
    ArgMax,
    /// `torch.argmin`.
    ArgMin,
    /// `torch.aminmax`: (min, max) from one kernel; NaN propagates.
    AMinMax,
    /// `torch.var`: Welford's algorithm (PyTorch's `WelfordOps`).
    Var,
    /// `torch.std`: the square root of [`ReduceOp::Var`].
    Std,
    /// `torch.var_mean`: (var, mean) from one kernel.
    VarMean,
    /// `torch.std_mean`: (std, mean) from one kernel.
    StdMean,
    /// `torch.linalg.vector_norm` of one order.
    Norm(NormKind),
    /// `torch.logsumexp`, in one pass with an online (max, scaled sum)
    /// accumulator.
    LogSumExp,
}

/// The order of a vector norm, as far as the kernel cares: each kind is its
/// own functor (PyTorch's `NormZeroOps`, `NormOneOps`, `NormTwoOps`,
/// `AbsMaxOps`, `AbsMinOps`, `NormOps`). A general `p` is passed at launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// p = 0: the number of non-zero elements.
    Zero,
    /// p = 1: `Σ|x|`.
    One,
    /// p = 2: `sqrt(Σx²)`.
    Two,
    /// p = +inf: `max|x|`.
    Inf,
    /// p = -inf: `min|x|`.
    NegInf,
    /// Any other p: `(Σ|x|^p)^(1/p)`.
    P,
}

impl NormKind {
    /// The kind of order `p`.
    pub fn of(p: f64) -> NormKind {
        if p == 0.0 {
            NormKind::Zero
        } else if p == 1.0 {
            NormKind::One
        } else if p == 2.0 {
            NormKind::Two
        } else if p == f64::INFINITY {
            NormKind::Inf
        } else if p == f64::NEG_INFINITY {
            NormKind::NegInf
        } else {
            NormKind::P
        }
    }
}

/// What a reduction over no elements gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EmptyRule {
    /// Every output is this value (the projected identity), cast to the
    /// output dtype.
    Fill(f64),
    /// An empty reduced dim is an error: the op has no identity.
    NoIdentity,
}

/// The type a kernel or CPU tree accumulates in (PyTorch's `arg_t`). It
/// need not be a dtype: index reductions carry a (value, index) pair and
/// var/std Welford's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Accumulator {
    /// One value of this dtype (f32, f64, i64 or bool).
    Scalar(DType),
    /// A value of this dtype and its i64 index (`tr::ValueIndex`).
    ValueIndex(DType),
    /// Two values of this dtype (`tr::Pair`): (min, max) for aminmax,
    /// (max, scaled sum) for logsumexp.
    Pair(DType),
    /// Welford's state in this dtype (`tr::WelfordData`): mean, m2, an i32
    /// count and the count as a float.
    Welford(DType),
}

impl Accumulator {
    /// Bytes of one accumulator (`sizeof(arg_t)`), which sizes shared and
    /// staging memory.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            Accumulator::Scalar(d) => d.size_in_bytes(),
            // The value is padded to the index's 8-byte alignment.
            Accumulator::ValueIndex(_) => 16,
            Accumulator::Pair(d) => 2 * d.size_in_bytes(),
            // mean, m2, n (i32, padded to the float's alignment), nf.
            Accumulator::Welford(d) => 4 * d.size_in_bytes(),
        }
    }
}

impl fmt::Display for Accumulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accumulator::Scalar(d) => write!(f, "{d}"),
            Accumulator::ValueIndex(d) => write!(f, "({d} value, i64 index)"),
            Accumulator::Pair(d) => write!(f, "({d}, {d})"),
            Accumulator::Welford(d) => write!(f, "Welford ({d} mean, {d} m2, i32 n, {d} nf)"),
        }
    }
}

/// Everything a backend needs to know about one op on one input dtype: the
/// kernel's template arguments (`scalar_t`, `arg_t`, `out_scalar_t`, `vt0`,
/// `input_vec_size`), the cast applied before reducing, and the thread cap.
/// It is the kernel cache key, so it holds nothing that varies per call
/// (mean's factor and the like are passed as [`OpParams`] at launch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The op.
    pub op: ReduceOp,
    /// `scalar_t`: the element type the input is read as.
    pub input: DType,
    /// The dtype each element is cast to before it is reduced, when that cast
    /// changes values (`sum(dtype=torch.float16)` of an f32 input rounds
    /// every element to f16 first, as torch's `self.to(dtype)` does). `None`
    /// when converting straight to the accumulator gives the same values.
    pub cast: Option<DType>,
    /// The functor's `compute_t`: the scalar type each element is converted
    /// to (after the cast) and the op computes in.
    pub compute: DType,
    /// `arg_t`.
    pub acc: Accumulator,
    /// `out_scalar_t`: the result's dtype.
    pub output: DType,
    /// Independent accumulators per thread.
    pub vt0: u32,
    /// Width of a vectorised input load.
    pub input_vec_size: u32,
    /// `mnt_wrapper<scalar_t>::MAX_NUM_THREADS`: threads per block at most.
    pub max_num_threads: u32,
}

/// Per-call scalars an op reads (`tr::OpParams` in the kernels): mean's
/// factor, var's correction and whether to take the square root, a general
/// norm's `p` and `1 / p`. Not part of the kernel, so not part of
/// [`Signature`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpParams {
    /// The values, op-specific.
    pub values: [f64; 2],
}

/// PyTorch's default `vt0` for `gpu_reduce_kernel`.
const VT0: u32 = 4;
/// PyTorch launches Welford with `vt0 = 2`: its 16- or 32-byte accumulator
/// would otherwise cost too many registers.
const WELFORD_VT0: u32 = 2;
/// `MAX_NUM_THREADS` for every dtype this crate has (PyTorch lowers it only
/// for complex double).
const MAX_NUM_THREADS: u32 = 512;

impl ReduceOp {
    /// Every op, for tests, the CLI and the kernel compile check.
    pub const ALL: [ReduceOp; 24] = [
        ReduceOp::Sum,
        ReduceOp::NanSum,
        ReduceOp::Prod,
        ReduceOp::Mean,
        ReduceOp::AMax,
        ReduceOp::AMin,
        ReduceOp::Any,
        ReduceOp::All,
        ReduceOp::MaxDim,
        ReduceOp::MinDim,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::AMinMax,
        ReduceOp::Var,
        ReduceOp::Std,
        ReduceOp::VarMean,
        ReduceOp::StdMean,
        ReduceOp::Norm(NormKind::Zero),
        ReduceOp::Norm(NormKind::One),
        ReduceOp::Norm(NormKind::Two),
        ReduceOp::Norm(NormKind::Inf),
        ReduceOp::Norm(NormKind::NegInf),
        ReduceOp::Norm(NormKind::P),
        ReduceOp::LogSumExp,
    ];

    /// torch's name for the op (for a norm, `norm` and its order, as the
    /// `explain` CLI spells it).
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::MaxDim => "max",
            ReduceOp::MinDim => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::AMinMax => "aminmax",
            ReduceOp::Var => "var",
            ReduceOp::Std => "std",
            ReduceOp::VarMean => "var_mean",
            ReduceOp::StdMean => "std_mean",
            ReduceOp::Norm(NormKind::Zero) => "norm0",
            ReduceOp::Norm(NormKind::One) => "norm1",
            ReduceOp::Norm(NormKind::Two) => "norm2",
            ReduceOp::Norm(NormKind::Inf) => "norm_inf",
            ReduceOp::Norm(NormKind::NegInf) => "norm_neginf",
            ReduceOp::Norm(NormKind::P) => "norm_p",
            ReduceOp::LogSumExp => "logsumexp",
            ReduceOp::Sum => "sum",
            ReduceOp::NanSum => "nansum",
            ReduceOp::Prod => "prod",
            ReduceOp::Mean => "mean",
            ReduceOp::AMax => "amax",
            ReduceOp::AMin => "amin",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
        }
    }

    /// Parses [`ReduceOp::name`] back, and the entry points' own names where
    /// they differ from torch's: `max_dim`, `min_dim`, and `norm` (the
    /// 2-norm, `vector_norm`'s default).
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        match name {
            "max_dim" => Some(ReduceOp::MaxDim),
            "min_dim" => Some(ReduceOp::MinDim),
            "norm" => Some(ReduceOp::Norm(NormKind::Two)),
            _ => ReduceOp::ALL.into_iter().find(|op| op.name() == name),
        }
    }

    /// The functor's name, the same in `kernels/ops/*.cuh` (namespace `tr`)
    /// and in `src/cpu/ops.rs`.
    pub const fn functor(self) -> &'static str {
        match self {
            ReduceOp::Sum => "SumOps",
            ReduceOp::NanSum => "NanSumOps",
            ReduceOp::Prod => "ProdOps",
            ReduceOp::Mean => "MeanOps",
            ReduceOp::AMax => "MaxOps",
            ReduceOp::AMin => "MinOps",
            ReduceOp::Any => "AnyOps",
            ReduceOp::All => "AllOps",
            ReduceOp::MaxDim => "MaxDimOps",
            ReduceOp::MinDim => "MinDimOps",
            ReduceOp::ArgMax => "ArgMaxOps",
            ReduceOp::ArgMin => "ArgMinOps",
            ReduceOp::AMinMax => "MinMaxOps",
            ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean => "WelfordOps",
            ReduceOp::Norm(NormKind::Zero) => "NormZeroOps",
            ReduceOp::Norm(NormKind::One) => "NormOneOps",
            ReduceOp::Norm(NormKind::Two) => "NormTwoOps",
            ReduceOp::Norm(NormKind::Inf) => "AbsMaxOps",
            ReduceOp::Norm(NormKind::NegInf) => "AbsMinOps",
            ReduceOp::Norm(NormKind::P) => "NormOps",
            ReduceOp::LogSumExp => "LogSumExpOps",
        }
    }

    /// The identity, for `explain`.
    pub const fn identity_text(self) -> &'static str {
        match self {
            ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Mean => "0",
            ReduceOp::Prod => "1",
            ReduceOp::AMax => "-inf (the lowest value)",
            ReduceOp::AMin => "+inf (the highest value)",
            ReduceOp::Any => "false",
            ReduceOp::All => "true",
            ReduceOp::MaxDim | ReduceOp::ArgMax => "(-inf (the lowest value), index 0)",
            ReduceOp::MinDim | ReduceOp::ArgMin => "(+inf (the highest value), index 0)",
            ReduceOp::AMinMax => "(+inf, -inf) (the highest and lowest values)",
            ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean => {
                "mean 0, m2 0, n 0"
            }
            ReduceOp::Norm(NormKind::NegInf) => "+inf",
            ReduceOp::Norm(_) => "0",
            ReduceOp::LogSumExp => "(max -inf, sum 0)",
        }
    }

    /// What a reduction over no elements gives.
    pub const fn empty_rule(self) -> EmptyRule {
        match self {
            ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Any => EmptyRule::Fill(0.0),
            ReduceOp::Prod | ReduceOp::All => EmptyRule::Fill(1.0),
            ReduceOp::Mean => EmptyRule::Fill(f64::NAN),
            ReduceOp::AMax
            | ReduceOp::AMin
            | ReduceOp::MaxDim
            | ReduceOp::MinDim
            | ReduceOp::ArgMax
            | ReduceOp::ArgMin
            | ReduceOp::AMinMax => EmptyRule::NoIdentity,
            ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean => {
                EmptyRule::Fill(f64::NAN)
            }
            // torch refuses an empty inf, -inf or negative-order norm (the
            // entry point checks); the others are sums.
            ReduceOp::Norm(_) => EmptyRule::Fill(0.0),
            ReduceOp::LogSumExp => EmptyRule::Fill(f64::NEG_INFINITY),
        }
    }

    /// Whether the result of `numel` inputs reduced into `num_outputs`
    /// outputs is the index 0 everywhere whatever the inputs are: argmax
    /// and argmin where each output reduces a single input (every reduced
    /// dim of size 1). The result is then a zero fill that reads nothing,
    /// as torch writes it: on an H100 torch's CUDA argmax of a
    /// `[67108864, 1]` f32 tensor over dim 1 took 171 µs, our reduction
    /// 448 µs.
    pub const fn fills_index_zero(self, numel: usize, num_outputs: usize) -> bool {
        numel != 0 && numel == num_outputs && matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }

    /// Whether the op takes a `dtype=` argument in torch.
    pub const fn takes_dtype(self) -> bool {
        matches!(
            self,
            ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Prod | ReduceOp::Mean
        )
    }

    /// The result dtype for `input` with an optional `dtype=`, or the error
    /// torch raises.
    pub fn output_dtype(self, input: DType, dtype: Option<DType>) -> Result<DType> {
        let not_floating = |d: DType, what: &str| {
            Err(Error::UnsupportedDType {
                op: self.name(),
                dtype: d,
                message: format!(
                    "{}(): could not infer output dtype. {what} must be either a floating point or complex dtype. Got: {}",
                    self.name(),
                    d.torch_name()
                ),
            })
        };
        if dtype.is_some() && !self.takes_dtype() {
            return Err(Error::Unsupported(format!(
                "{}() takes no dtype argument",
                self.name()
            )));
        }
        match self {
            ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Prod => {
                Ok(dtype.unwrap_or(if input.is_floating_point() {
                    input
                } else {
                    DType::I64
                }))
            }
            ReduceOp::Mean => match dtype {
                Some(d) if !d.is_floating_point() => not_floating(d, "Optional dtype"),
                Some(d) => Ok(d),
                None if !input.is_floating_point() => not_floating(input, "Input dtype"),
                None => Ok(input),
            },
            ReduceOp::AMax
            | ReduceOp::AMin
            | ReduceOp::MaxDim
            | ReduceOp::MinDim
            | ReduceOp::AMinMax => Ok(input),
            ReduceOp::ArgMax | ReduceOp::ArgMin if input == DType::Bool => {
                Err(Error::UnsupportedDType {
                    op: self.name(),
                    dtype: input,
                    message: format!("{}(): does not support bool input", self.name()),
                })
            }
            ReduceOp::ArgMax | ReduceOp::ArgMin => Ok(DType::I64),
            ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean
                if !input.is_floating_point() =>
            {
                Err(Error::UnsupportedDType {
                    op: self.name(),
                    dtype: input,
                    // torch names the fused ops on their own.
                    message: match self {
                        ReduceOp::VarMean | ReduceOp::StdMean => format!(
                            "{} only support floating point and complex dtypes",
                            self.name()
                        ),
                        _ => "std and var only support floating point and complex dtypes".into(),
                    },
                })
            }
            ReduceOp::Norm(_) if !input.is_floating_point() => Err(Error::UnsupportedDType {
                op: "linalg.vector_norm",
                dtype: input,
                message: format!(
                    "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                    input.torch_name()
                ),
            }),
            ReduceOp::Var
            | ReduceOp::Std
            | ReduceOp::VarMean
            | ReduceOp::StdMean
            | ReduceOp::Norm(_) => Ok(input),
            // Integers are promoted to torch's default float dtype.
            ReduceOp::LogSumExp => Ok(if input.is_floating_point() {
                input
            } else {
                DType::F32
            }),
            // torch keeps uint8 for uint8 inputs (a legacy of masks).
            ReduceOp::Any | ReduceOp::All => Ok(if input == DType::U8 {
                DType::U8
            } else {
                DType::Bool
            }),
        }
    }

    /// The full description of this op on `input` with an optional
    /// `dtype=`: result dtype, cast, accumulator and kernel settings.
    ///
    /// ```
    /// use tensor_reduce::{reduce::{Accumulator, ReduceOp}, DType};
    /// let s = ReduceOp::Sum.signature(DType::F16, None)?;
    /// assert_eq!((s.output, s.acc), (DType::F16, Accumulator::Scalar(DType::F32)));
    /// assert_eq!(s.input_vec_size, 8); // 16-byte loads of 16-bit inputs
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn signature(self, input: DType, dtype: Option<DType>) -> Result<Signature> {
        if self == ReduceOp::NanSum && !input.is_floating_point() {
            // Integers have no NaN: torch's nansum of them is their sum.
            return ReduceOp::Sum.signature(input, dtype);
        }
        let output = self.output_dtype(input, dtype)?;
        // torch casts the input to the requested dtype first (except the
        // fused 16-bit -> f32 case, which loses nothing). Converting straight
        // to the accumulator gives the same values whenever the output dtype
        // is the accumulator or holds every input value exactly.
        let compute = match self {
            // Comparisons and truth tests run in the input's own compute type.
            ReduceOp::AMax
            | ReduceOp::AMin
            | ReduceOp::Any
            | ReduceOp::All
            | ReduceOp::MaxDim
            | ReduceOp::MinDim
            | ReduceOp::ArgMax
            | ReduceOp::ArgMin
            | ReduceOp::AMinMax => input.accumulator(),
            _ => output.accumulator(),
        };
        let acc = match self {
            ReduceOp::Any | ReduceOp::All => Accumulator::Scalar(DType::Bool),
            ReduceOp::MaxDim | ReduceOp::MinDim | ReduceOp::ArgMax | ReduceOp::ArgMin => {
                Accumulator::ValueIndex(compute)
            }
            ReduceOp::AMinMax | ReduceOp::LogSumExp => Accumulator::Pair(compute),
            ReduceOp::Var | ReduceOp::Std | ReduceOp::VarMean | ReduceOp::StdMean => {
                Accumulator::Welford(compute)
            }
            _ => Accumulator::Scalar(compute),
        };
        let cast = (self.takes_dtype() && output != compute && !input.casts_exactly_to(output))
            .then_some(output);
        // PyTorch PR #165055: sum and mean of 16-bit inputs load 8 elements
        // (16 bytes) at once. Every other op keeps input_vec_size = vt0 in
        // PyTorch; ours widens byte sums beyond it (Signature::sums_bytes).
        let wide_16bit = matches!(self, ReduceOp::Sum | ReduceOp::Mean | ReduceOp::NanSum)
            && input.size_in_bytes() == 2;
        let vt0 = match acc {
            Accumulator::Welford(_) => WELFORD_VT0,
            _ => VT0,
        };
        let pytorch = Signature {
            op: self,
            input,
            cast,
            compute,
            acc,
            output,
            vt0,
            input_vec_size: if wide_16bit {
                SIXTEEN_BIT_WIDE_VEC_SIZE
            } else {
                vt0
            },
            max_num_threads: MAX_NUM_THREADS,
        };
        Ok(Signature {
            input_vec_size: pytorch
                .wider_loads()
                .map_or(pytorch.input_vec_size, WiderLoads::vec_size),
            ..pytorch
        })
    }

    /// Every signature the entry points can ask for: each input dtype, with
    /// each `dtype=` the op accepts. The kernel compile check walks this.
    pub fn all_signatures(self) -> Vec<Signature> {
        let requests: Vec<Option<DType>> = if self.takes_dtype() {
            std::iter::once(None).chain(DType::ALL.map(Some)).collect()
        } else {
            vec![None]
        };
        let mut out: Vec<Signature> = DType::ALL
            .into_iter()
            .flat_map(|input| requests.iter().map(move |&d| (input, d)))
            .filter_map(|(input, d)| self.signature(input, d).ok())
            .filter(|s| s.dispatch().is_ok())
            .collect();
        let mut seen = std::collections::HashSet::new();
        out.retain(|s| seen.insert(*s));
        out
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Inputs a vectorised load of [`Signature::sums_bytes`] signatures holds:
/// 16 bytes, where PyTorch loads `vt0` (4). In 4-byte loads the short
/// rows of u8 and bool took the most lanes a byte of any dtype.
pub const BYTE_SUM_INPUT_VEC_SIZE: u32 = 16;

/// Inputs a lane loads at once of a 16-bit input where it loads 16 bytes:
/// sum, mean and nansum as PyTorch does, and the index ops
/// ([`Signature::wider_loads_reason`]).
pub const SIXTEEN_BIT_WIDE_VEC_SIZE: u32 = 8;

/// Where our kernel loads more inputs at once than PyTorch's `vt0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WiderLoads {
    /// Byte sums ([`Signature::sums_bytes`]) load
    /// [`BYTE_SUM_INPUT_VEC_SIZE`] bytes.
    ByteSums,
    /// The index ops load 16 bytes of 16-bit inputs
    /// ([`SIXTEEN_BIT_WIDE_VEC_SIZE`]). A pick of value and index is the
    /// same in any order, so how many inputs a lane loads at once cannot
    /// change its bits; with 8-byte loads, argmax and max(dim) of f16 rows
    /// of 4096 and longer read at 58-60% of an H100's read ceiling, where
    /// f32 rows (16-byte loads) read at 84-91%.
    SixteenBitPicks,
}

impl WiderLoads {
    /// The inputs a lane loads at once.
    pub(crate) fn vec_size(self) -> u32 {
        match self {
            WiderLoads::ByteSums => BYTE_SUM_INPUT_VEC_SIZE,
            WiderLoads::SixteenBitPicks => SIXTEEN_BIT_WIDE_VEC_SIZE,
        }
    }

    /// Why, in `explain`'s words.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            WiderLoads::ByteSums => "the op sums bytes",
            WiderLoads::SixteenBitPicks => {
                "16 bytes of 16-bit inputs, and a pick is the same in any order"
            }
        }
    }
}

impl Signature {
    /// Whether this is an integer sum of u8 or bool inputs into i64 with no
    /// cast: reducing its inputs is adding bytes, exact in any order, which
    /// the kernel does four an instruction (its `ByteSum` trait, for exactly
    /// these signatures), from loads of [`BYTE_SUM_INPUT_VEC_SIZE`] bytes.
    /// Every module passes this to the kernel's `ReduceOp`, which refuses
    /// to compile where its trait says otherwise.
    ///
    /// ```
    /// use tensor_reduce::{reduce::ReduceOp, DType};
    /// let s = ReduceOp::Sum.signature(DType::U8, None)?;
    /// assert!(s.sums_bytes());
    /// assert_eq!((s.input_vec_size, s.pytorch_input_vec_size()), (16, 4));
    /// assert!(!ReduceOp::Sum.signature(DType::U8, Some(DType::F32))?.sums_bytes());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn sums_bytes(&self) -> bool {
        self.op == ReduceOp::Sum
            && matches!(self.input, DType::U8 | DType::Bool)
            && self.compute == DType::I64
            && self.cast.is_none()
    }

    /// Where our kernel loads more inputs at once than PyTorch's (`vt0`,
    /// this signature's `input_vec_size` as PyTorch has it), and why.
    pub(crate) fn wider_loads(&self) -> Option<WiderLoads> {
        if self.sums_bytes() {
            Some(WiderLoads::ByteSums)
        } else if matches!(self.acc, Accumulator::ValueIndex(_)) && self.input.size_in_bytes() == 2
        {
            Some(WiderLoads::SixteenBitPicks)
        } else {
            None
        }
    }

    /// Why this signature's kernel loads more inputs at once than
    /// PyTorch's, where it does (`explain` says so beside PyTorch's
    /// launch).
    pub fn wider_loads_reason(&self) -> Option<&'static str> {
        self.wider_loads().map(WiderLoads::reason)
    }

    /// The `input_vec_size` PyTorch's own kernel has for this signature:
    /// [`Signature::input_vec_size`] but where ours loads more inputs at
    /// once (byte sums, and the index ops of 16-bit inputs), which PyTorch
    /// loads `vt0` at a time. The planner's port of `setReduceConfig` reads
    /// it where it shows what PyTorch itself would launch.
    ///
    /// ```
    /// use tensor_reduce::{reduce::ReduceOp, DType};
    /// let s = ReduceOp::ArgMax.signature(DType::BF16, None)?;
    /// assert_eq!((s.input_vec_size, s.pytorch_input_vec_size()), (8, 4));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn pytorch_input_vec_size(&self) -> u32 {
        if self.wider_loads().is_some() {
            self.vt0
        } else {
            self.input_vec_size
        }
    }

    /// This signature as PyTorch's own kernel has it
    /// ([`Signature::pytorch_input_vec_size`]).
    pub fn as_pytorch(&self) -> Signature {
        Signature {
            input_vec_size: self.pytorch_input_vec_size(),
            ..*self
        }
    }

    /// The signature as `device` runs it. torch's CPU computes
    /// `mean(dtype=float16 | bfloat16)` as a float32 sum of the elements
    /// converted to float32, divided, then rounded to the 16-bit dtype; its
    /// CUDA, like every other `dtype=`, casts each element to the requested
    /// dtype first. So `mean(dtype=float16)` of `[70000., -70000.]` is 0 on
    /// torch's CPU and NaN on its GPU (checked with torch 2.11 on both),
    /// and each backend here follows its own.
    ///
    /// ```
    /// use tensor_reduce::{reduce::ReduceOp, DType, Device};
    /// let s = ReduceOp::Mean.signature(DType::F32, Some(DType::F16))?;
    /// assert_eq!(s.cast, Some(DType::F16));
    /// assert_eq!(s.for_device(Device::Cpu).cast, None); // f32 converts to f32 exactly
    /// assert_eq!(s.for_device(Device::Cuda(0)).cast, Some(DType::F16));
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn for_device(self, device: Device) -> Signature {
        match (device, self.op, self.output) {
            (Device::Cpu, ReduceOp::Mean, DType::F16 | DType::BF16) => Signature {
                cast: (!self.input.casts_exactly_to(DType::F32)).then_some(DType::F32),
                ..self
            },
            _ => self,
        }
    }

    /// The per-call parameters of this op when it reduces `numel` elements
    /// into `num_outputs` (`numel > 0`), with the call's scalar argument
    /// `arg` (var's correction, a general norm's `p`; ignored otherwise):
    /// mean's factor `outputs / inputs`, rounded to the compute type as
    /// PyTorch computes its `factor_t`; Welford's (correction, take_sqrt);
    /// the norm's (p, 1 / p).
    pub fn params(&self, num_outputs: usize, numel: usize, arg: f64) -> OpParams {
        let values = match self.op {
            ReduceOp::Mean => [
                match self.compute {
                    DType::F32 => (num_outputs as f32 / numel as f32) as f64,
                    _ => num_outputs as f64 / numel as f64,
                },
                0.0,
            ],
            ReduceOp::Var | ReduceOp::VarMean => [arg, 0.0],
            ReduceOp::Std | ReduceOp::StdMean => [arg, 1.0],
            ReduceOp::Norm(NormKind::P) => [arg, 1.0 / arg],
            _ => [0.0; 2],
        };
        OpParams { values }
    }

    /// The dtype of the op's second output, for the ops that return two
    /// from one kernel: max/min's indices, aminmax's max, var_mean's mean.
    pub fn second_output(&self) -> Option<DType> {
        match self.op {
            ReduceOp::MaxDim | ReduceOp::MinDim => Some(DType::I64),
            ReduceOp::AMinMax | ReduceOp::VarMean | ReduceOp::StdMean => Some(self.output),
            _ => None,
        }
    }

    /// The error torch's dispatch raises for a signature it has no kernel
    /// of: a floating nansum into an integer or bool dtype (`"nansum_cpu"
    /// not implemented for 'Long'`; an integer input's nansum is a sum, of
    /// any dtype). torch raises it only when there is something to reduce,
    /// so an empty input still gets its fill, and so do we.
    ///
    /// ```
    /// use tensor_reduce::{reduce::ReduceOp, DType};
    /// let s = ReduceOp::NanSum.signature(DType::F32, Some(DType::I64))?;
    /// assert!(s.dispatch().is_err());
    /// assert!(ReduceOp::NanSum.signature(DType::I32, Some(DType::I64))?.dispatch().is_ok());
    /// # Ok::<(), tensor_reduce::Error>(())
    /// ```
    pub fn dispatch(&self) -> Result<()> {
        if self.op == ReduceOp::NanSum && !self.output.is_floating_point() {
            return Err(Error::UnsupportedDType {
                op: self.op.name(),
                dtype: self.output,
                message: format!(
                    "\"nansum\" not implemented for '{}'",
                    self.output.torch_name()
                ),
            });
        }
        Ok(())
    }

    /// `can_accumulate_in_output`: whether a partial result can wait in the
    /// output between the launches of a split iterator. Only when the output
    /// holds exactly the accumulator: PyTorch says no for half and bfloat16
    /// outputs (every partial would round), and an i32 output cannot hold an
    /// i64 partial either.
    pub fn can_accumulate_in_output(&self) -> bool {
        self.acc == Accumulator::Scalar(self.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn result_dtypes_follow_torch() {
        for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::NanSum] {
            for d in [I32, I64, U8, Bool] {
                assert_eq!(op.output_dtype(d, None).unwrap(), I64, "{op} {d}");
            }
            for d in [F16, BF16, F32, F64] {
                assert_eq!(op.output_dtype(d, None).unwrap(), d, "{op} {d}");
            }
        }
        assert_eq!(ReduceOp::Any.output_dtype(U8, None).unwrap(), U8);
        assert_eq!(ReduceOp::All.output_dtype(F32, None).unwrap(), Bool);
        assert_eq!(ReduceOp::AMax.output_dtype(I32, None).unwrap(), I32);
        assert_eq!(ReduceOp::Mean.output_dtype(I64, Some(F32)).unwrap(), F32);
        let e = ReduceOp::Mean.output_dtype(I64, None).unwrap_err();
        assert!(e.to_string().contains("Got: Long"), "{e}");
        assert!(ReduceOp::Mean.output_dtype(F32, Some(I32)).is_err());
        assert!(ReduceOp::AMax.output_dtype(F32, Some(F64)).is_err());
    }

    #[test]
    fn casts_happen_only_where_they_change_values() {
        let sig = |op: ReduceOp, i, d| op.signature(i, d).unwrap();
        // Narrowing: each element must round (or wrap) first.
        assert_eq!(sig(ReduceOp::Sum, F32, Some(F16)).cast, Some(F16));
        assert_eq!(sig(ReduceOp::Sum, F32, Some(Bool)).cast, Some(Bool));
        assert_eq!(sig(ReduceOp::Sum, I64, Some(I32)).cast, Some(I32));
        assert_eq!(sig(ReduceOp::Prod, F64, Some(BF16)).cast, Some(BF16));
        // Widening or same type: converting to the accumulator is exact.
        assert_eq!(sig(ReduceOp::Sum, F16, Some(F32)).cast, None);
        assert_eq!(sig(ReduceOp::Sum, I32, None).cast, None);
        assert_eq!(sig(ReduceOp::Sum, F16, None).cast, None);
        assert_eq!(sig(ReduceOp::Sum, Bool, Some(F16)).cast, None);
        // An f32 output accumulates in f32: the conversion is the cast.
        assert_eq!(sig(ReduceOp::Sum, F64, Some(F32)).cast, None);
    }

    #[test]
    fn accumulators_and_vector_widths() {
        let s = ReduceOp::Sum.signature(BF16, None).unwrap();
        assert_eq!(
            (s.acc, s.input_vec_size, s.vt0),
            (Accumulator::Scalar(F32), 8, 4)
        );
        let s = ReduceOp::AMax.signature(F16, None).unwrap();
        assert_eq!((s.acc, s.input_vec_size), (Accumulator::Scalar(F32), 4));
        let s = ReduceOp::Any.signature(F64, None).unwrap();
        assert_eq!((s.acc, s.output), (Accumulator::Scalar(Bool), Bool));
        assert!(ReduceOp::Sum
            .signature(F32, None)
            .unwrap()
            .can_accumulate_in_output());
        assert!(!ReduceOp::Sum
            .signature(F16, None)
            .unwrap()
            .can_accumulate_in_output());
        assert!(!ReduceOp::Sum
            .signature(I32, Some(I32))
            .unwrap()
            .can_accumulate_in_output());
    }

    #[test]
    fn every_signature_is_listed_once() {
        for op in ReduceOp::ALL {
            let all = op.all_signatures();
            assert!(!all.is_empty(), "{op}");
            for (i, a) in all.iter().enumerate() {
                assert!(!all[i + 1..].contains(a), "{op}: {a:?} twice");
            }
        }
        assert_eq!(ReduceOp::Sum.all_signatures().len(), 64);
        assert_eq!(ReduceOp::AMax.all_signatures().len(), 8);
        assert_eq!(ReduceOp::ArgMax.all_signatures().len(), 7);
        assert_eq!(ReduceOp::Var.all_signatures().len(), 4);
        assert_eq!(ReduceOp::Norm(NormKind::P).all_signatures().len(), 4);
        // Floats keep their dtype; every integer type (and bool) gives f32.
        assert_eq!(ReduceOp::LogSumExp.all_signatures().len(), 8);
        for op in ReduceOp::ALL {
            assert_eq!(ReduceOp::from_name(op.name()), Some(op), "{op}");
        }
        assert_eq!(ReduceOp::from_name("amin"), Some(ReduceOp::AMin));
    }

    /// The zero fill writes a single output of indices: it must never
    /// claim an op that has a second output or another result dtype, nor
    /// outputs of more than one input, nor an empty input.
    #[test]
    fn index_zero_fills_are_one_input_index_ops() {
        let claimed: Vec<ReduceOp> = ReduceOp::ALL
            .into_iter()
            .filter(|op| op.fills_index_zero(6, 6))
            .collect();
        assert!(ReduceOp::ALL
            .into_iter()
            .all(|op| !op.fills_index_zero(6, 3) && !op.fills_index_zero(0, 0)));
        assert_eq!(claimed, [ReduceOp::ArgMax, ReduceOp::ArgMin]);
        for op in claimed {
            for sig in op.all_signatures() {
                assert_eq!((sig.output, sig.second_output()), (I64, None), "{op}");
            }
        }
    }
}
