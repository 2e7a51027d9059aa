//! `impl Display for Tensor`: the text `print(x)` shows in PyTorch, with
//! torch's default print options (precision 4, line width 80, 3 edge items
//! per dim once a tensor has more than 1000 elements).
//!
//! This follows `torch/_tensor_str.py`: one [`Formatter`] per tensor decides
//! the number format from the values shown (integer mode, fixed or
//! scientific notation) and a common width, rows nest and wrap as there, and
//! the `device=` / `size=` / `dtype=` suffixes appear when torch shows them.

use super::storage::Storage;
use super::Tensor;
use crate::{with_dtype, DType, Device, Element};
use std::fmt;

/// Digits after the point (torch's `PRINT_OPTS.precision`).
const PRECISION: usize = 4;
/// Elements above which a tensor is summarised (`PRINT_OPTS.threshold`).
const THRESHOLD: usize = 1000;
/// Items shown at each edge of a summarised dim (`PRINT_OPTS.edgeitems`).
const EDGE_ITEMS: usize = 3;
/// Characters per line (`PRINT_OPTS.linewidth`).
const LINE_WIDTH: usize = 80;
/// `tensor(`: nested rows are indented past it.
const PREFIX: &str = "tensor(";

/// One element, as Python sees it after `.item()`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Float(f64),
    Int(i64),
    Bool(bool),
}

impl Value {
    fn of<T: Element>(x: T) -> Value {
        match T::DTYPE {
            DType::Bool => Value::Bool(x.to_i64() != 0),
            d if d.is_floating_point() => Value::Float(x.to_f64()),
            _ => Value::Int(x.to_i64()),
        }
    }
}

/// Python's `f"{v:.{p}e}"`: a mantissa with `p` decimals and a signed
/// exponent of at least two digits (Rust writes `1.0000e-5`).
fn python_exp(v: f64, p: usize) -> String {
    if !v.is_finite() {
        return python_special(v);
    }
    let s = format!("{v:.p$e}");
    let (mantissa, exp) = s.split_once('e').expect("LowerExp writes an exponent");
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// Python's `f"{v:.{p}f}"` (Rust agrees on rounding, ties to even on the
/// exact binary value, and on `-0`; only the non-finite spellings differ).
fn python_fixed(v: f64, p: usize) -> String {
    if !v.is_finite() {
        return python_special(v);
    }
    format!("{v:.p$}")
}

fn python_special(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// torch's `_Formatter`: the number format and common width of one tensor,
/// decided from the values that will be shown.
#[derive(Debug)]
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    fn new(floating: bool, values: &[Value]) -> Formatter {
        let mut f = Formatter {
            floating,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        if !floating {
            f.max_width = values
                .iter()
                .map(|&v| f.plain(v).len())
                .max()
                .unwrap_or(0)
                .max(1);
            return f;
        }
        let finite: Vec<f64> = values
            .iter()
            .filter_map(|v| match *v {
                Value::Float(x) if x.is_finite() && x != 0.0 => Some(x),
                _ => None,
            })
            .collect();
        if finite.is_empty() {
            return f;
        }
        let abs = finite.iter().map(|x| x.abs());
        let min = abs.clone().fold(f64::INFINITY, f64::min);
        let max = abs.fold(0.0, f64::max);
        f.int_mode = finite.iter().all(|&x| x == x.ceil());
        let widest = |g: &dyn Fn(f64) -> usize| finite.iter().map(|&x| g(x)).max().unwrap_or(1);
        if f.int_mode {
            if max / min > 1000.0 || max > 1.0e8 {
                f.sci_mode = true;
                f.max_width = f.max_width.max(widest(&|x| python_exp(x, PRECISION).len()));
            } else {
                // The `+ 1` is the trailing '.' that marks a float.
                f.max_width = f.max_width.max(widest(&|x| python_fixed(x, 0).len() + 1));
            }
        } else if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
            f.sci_mode = true;
            f.max_width = f.max_width.max(widest(&|x| python_exp(x, PRECISION).len()));
        } else {
            f.max_width = f
                .max_width
                .max(widest(&|x| python_fixed(x, PRECISION).len()));
        }
        f
    }

    /// `f"{value}"` for integers and bools.
    fn plain(&self, v: Value) -> String {
        match v {
            Value::Int(i) => i.to_string(),
            Value::Bool(b) => if b { "True" } else { "False" }.into(),
            Value::Float(x) => python_fixed(x, PRECISION),
        }
    }

    /// One element, right-aligned to the common width.
    fn format(&self, v: Value) -> String {
        let s = match v {
            Value::Float(x) if self.floating => {
                if self.sci_mode {
                    python_exp(x, PRECISION)
                } else if self.int_mode {
                    let mut s = python_fixed(x, 0);
                    if x.is_finite() {
                        s.push('.');
                    }
                    s
                } else {
                    python_fixed(x, PRECISION)
                }
            }
            _ => self.plain(v),
        };
        format!("{s:>width$}", width = self.max_width)
    }
}

/// A host tensor's elements read by storage offset.
struct Reader<'a> {
    t: &'a Tensor,
    summarize: bool,
}

impl Reader<'_> {
    fn value(&self, offset: usize) -> Value {
        let Storage::Cpu(s) = &self.t.storage else {
            unreachable!("display reads a host copy")
        };
        with_dtype!(self.t.dtype, T => Value::of(s.as_slice::<T>()[offset]))
    }

    /// The indices of a dim of `size` that are shown; `None` marks the `...`.
    fn shown(&self, size: usize) -> Vec<Option<usize>> {
        if self.summarize && size > 2 * EDGE_ITEMS {
            (0..EDGE_ITEMS)
                .map(Some)
                .chain([None])
                .chain((size - EDGE_ITEMS..size).map(Some))
                .collect()
        } else {
            (0..size).map(Some).collect()
        }
    }

    fn stride(&self, d: usize) -> usize {
        // Display reads a host copy made by `to_device`, whose strides are
        // the view's own and never negative.
        self.t.strides[d] as usize
    }

    /// Every shown element, in row-major order (torch's `get_summarized_data`).
    fn collect(&self, d: usize, base: usize, out: &mut Vec<Value>) {
        if d == self.t.dim() {
            out.push(self.value(base));
            return;
        }
        for i in self.shown(self.t.shape[d]).into_iter().flatten() {
            self.collect(d + 1, base + i * self.stride(d), out);
        }
    }

    /// torch's `_tensor_str_with_formatter` for the sub-tensor from dim `d`.
    fn render(&self, f: &Formatter, d: usize, base: usize, indent: usize) -> String {
        let rank = self.t.dim();
        if d == rank {
            return f.format(self.value(base));
        }
        let shown = self.shown(self.t.shape[d]);
        if d + 1 == rank {
            let items: Vec<String> = shown
                .iter()
                .map(|i| match i {
                    Some(i) => f.format(self.value(base + i * self.stride(d))),
                    None => " ...".into(),
                })
                .collect();
            let per_line = (LINE_WIDTH.saturating_sub(indent) / (f.max_width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|l| l.join(", ")).collect();
            return format!(
                "[{}]",
                lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
            );
        }
        let rows: Vec<String> = shown
            .iter()
            .map(|i| match i {
                Some(i) => self.render(f, d + 1, base + i * self.stride(d), indent + 1),
                None => "...".into(),
            })
            .collect();
        let sep = format!(",{}{}", "\n".repeat(rank - d - 1), " ".repeat(indent + 1));
        format!("[{}]", rows.join(&sep))
    }
}

/// `torch.float16`-style name, as torch prints dtypes.
fn torch_dtype(d: DType) -> &'static str {
    match d {
        DType::F16 => "torch.float16",
        DType::BF16 => "torch.bfloat16",
        DType::F32 => "torch.float32",
        DType::F64 => "torch.float64",
        DType::I32 => "torch.int32",
        DType::I64 => "torch.int64",
        DType::U8 => "torch.uint8",
        DType::Bool => "torch.bool",
    }
}

/// Python's `str(tuple(shape))`: `(0,)`, `(0, 3)`.
fn python_tuple(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    match items.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", items.join(", ")),
    }
}

/// torch's `_add_suffixes`: `, suffix` on the same line while it fits.
fn add_suffixes(body: String, suffixes: &[String]) -> String {
    let indent = PREFIX.len();
    // torch's own arithmetic: with no newline `rfind` is -1, so this is len + 2.
    let mut last_line_len = match body.rfind('\n') {
        Some(i) => body.len() - i + 1,
        None => body.len() + 2,
    };
    let mut out = body;
    for s in suffixes {
        if last_line_len + s.len() + 2 > LINE_WIDTH {
            out.push_str(&format!(",\n{}{s}", " ".repeat(indent)));
            last_line_len = indent + s.len();
        } else {
            out.push_str(&format!(", {s}"));
            last_line_len += s.len() + 2;
        }
    }
    out.push(')');
    out
}

/// The whole printout, from a host tensor (`t` on the CPU) and the device the
/// original lives on.
fn render(t: &Tensor, device: Device) -> String {
    let mut suffixes = Vec::new();
    if let Device::Cuda(i) = device {
        suffixes.push(format!("device='cuda:{i}'"));
    }
    let body = if t.numel() == 0 {
        if t.dim() != 1 {
            suffixes.push(format!("size={}", python_tuple(&t.shape)));
        }
        // No element shows the dtype of an empty tensor, so torch names
        // every dtype but the default one.
        if t.dtype != DType::F32 {
            suffixes.push(format!("dtype={}", torch_dtype(t.dtype)));
        }
        "[]".to_string()
    } else {
        if !matches!(t.dtype, DType::F32 | DType::I64 | DType::Bool) {
            suffixes.push(format!("dtype={}", torch_dtype(t.dtype)));
        }
        let reader = Reader {
            t,
            summarize: t.numel() > THRESHOLD,
        };
        let mut shown = Vec::new();
        reader.collect(0, t.offset, &mut shown);
        let f = Formatter::new(t.dtype.is_floating_point(), &shown);
        reader.render(&f, 0, t.offset, PREFIX.len())
    };
    add_suffixes(format!("{PREFIX}{body}"), &suffixes)
}

/// Prints as PyTorch does, e.g. `tensor([[1., 2.],\n        [3., 4.]])`.
///
/// A CUDA tensor is copied to the host first (only the span its view
/// reaches); if that copy fails, the error is printed in place of the values.
///
/// ```
/// use tensor_reduce::Tensor;
/// let x = Tensor::from_vec(vec![1.5f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(x.to_string(), "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]])");
/// # Ok::<(), tensor_reduce::Error>(())
/// ```
impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let device = self.device();
        match self.to_device(Device::Cpu) {
            Ok(host) => f.write_str(&render(&host, device)),
            Err(e) => write!(f, "tensor(<unreadable on {device}: {e}>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_number_spellings() {
        assert_eq!(python_exp(1e-5, 4), "1.0000e-05");
        assert_eq!(python_exp(12345.0, 4), "1.2345e+04");
        assert_eq!(python_exp(1e100, 4), "1.0000e+100");
        assert_eq!(python_exp(-2.5e-300, 4), "-2.5000e-300");
        assert_eq!(python_fixed(f64::NEG_INFINITY, 4), "-inf");
        assert_eq!(python_fixed(0.125, 2), "0.12");
    }

    #[test]
    fn suffixes_wrap_at_the_line_width() {
        let body = format!("tensor([{}])", "1".repeat(60));
        assert_eq!(
            add_suffixes(body.clone(), &["dtype=torch.float16".into()]),
            format!("{body},\n       dtype=torch.float16)")
        );
    }
}
