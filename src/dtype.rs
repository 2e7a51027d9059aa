//! Element types: the [`DType`] tag and the [`Element`] trait that ties a Rust
//! type to it.

use half::{bf16, f16};
use std::fmt;

/// The element type of a tensor, as in `torch.dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE half precision (`torch.float16`).
    F16,
    /// bfloat16 (`torch.bfloat16`).
    BF16,
    /// `torch.float32`.
    F32,
    /// `torch.float64`.
    F64,
    /// `torch.int32`.
    I32,
    /// `torch.int64`.
    I64,
    /// `torch.uint8`.
    U8,
    /// `torch.bool`, stored as one byte holding 0 or 1.
    Bool,
}

impl DType {
    /// Every dtype, for tests and argument parsing.
    pub const ALL: [DType; 8] = [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ];

    /// Bytes per element.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// Whether the dtype is a floating-point type.
    pub const fn is_floating_point(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// The type a sum producing this dtype accumulates in (PyTorch's
    /// `acc_type` on CUDA): 16-bit floats and f32 in f32, f64 in f64, every
    /// integer type (and bool) in i64.
    pub const fn accumulator(self) -> DType {
        match self {
            DType::F16 | DType::BF16 | DType::F32 => DType::F32,
            DType::F64 => DType::F64,
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => DType::I64,
        }
    }

    /// Whether converting any value of `self` to `to` gives back the same
    /// value (a widening cast). Casts that are not exact change values, so a
    /// reduction with `dtype=to` must apply them before reducing.
    pub const fn casts_exactly_to(self, to: DType) -> bool {
        use DType::*;
        matches!(
            (self, to),
            (F16, F16 | F32 | F64)
                | (BF16, BF16 | F32 | F64)
                | (F32, F32 | F64)
                | (F64, F64)
                | (I32, I32 | I64 | F64)
                | (I64, I64)
                | (U8, U8 | I32 | I64 | F16 | BF16 | F32 | F64)
                | (Bool, _)
        )
    }

    /// torch's own name in its messages (`Long` for `torch.int64`).
    pub const fn torch_name(self) -> &'static str {
        match self {
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::U8 => "Byte",
            DType::Bool => "Bool",
        }
    }

    /// The short name used in kernel names, the CLI and error messages.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }

    /// Parses [`DType::name`] back; `None` for anything else.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be a tensor element.
///
/// The conversions follow C++ casts as PyTorch applies them: float to integer
/// truncates toward zero (saturating here, where C++ leaves overflow
/// undefined), anything to bool is `!= 0`.
///
/// # Safety
/// Sealed: implemented only for the eight types of [`DType`]. Storage is kept
/// as untyped bytes and reinterpreted as `Self` when `DTYPE` matches, which is
/// sound because every implementor is plain old data and only valid values of
/// `Self` are ever written (a `Bool` buffer holds only 0 and 1).
pub unsafe trait Element:
    sealed::Sealed + Copy + Send + Sync + PartialEq + fmt::Debug + Default + 'static
{
    /// The dtype tag of this type.
    const DTYPE: DType;
    /// Converts to f32.
    fn to_f32(self) -> f32;
    /// Converts to f64 (exact for every type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts to i64.
    fn to_i64(self) -> i64;
    /// Converts from f32.
    fn from_f32(v: f32) -> Self;
    /// Converts from f64.
    fn from_f64(v: f64) -> Self;
    /// Converts from i64 (wrapping for narrower integers, as C++ does).
    fn from_i64(v: i64) -> Self;
}

macro_rules! impl_element {
    ($t:ty, $dt:ident, to_f32: $tf32:expr, to_f64: $tf64:expr, to_i64: $ti64:expr,
     from_f32: $ff32:expr, from_f64: $ff64:expr, from_i64: $fi64:expr) => {
        impl sealed::Sealed for $t {}
        unsafe impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)]
            fn to_f32(self) -> f32 {
                ($tf32)(self)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                ($tf64)(self)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                ($ti64)(self)
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                ($ff32)(v)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                ($ff64)(v)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                ($fi64)(v)
            }
        }
    };
}

impl_element!(f32, F32, to_f32: |x: f32| x, to_f64: |x: f32| x as f64, to_i64: |x: f32| x as i64,
    from_f32: |v: f32| v, from_f64: |v: f64| v as f32, from_i64: |v: i64| v as f32);
impl_element!(f64, F64, to_f32: |x: f64| x as f32, to_f64: |x: f64| x, to_i64: |x: f64| x as i64,
    from_f32: |v: f32| v as f64, from_f64: |v: f64| v, from_i64: |v: i64| v as f64);
impl_element!(f16, F16, to_f32: |x: f16| x.to_f32(), to_f64: |x: f16| x.to_f64(), to_i64: |x: f16| x.to_f32() as i64,
    from_f32: f16::from_f32, from_f64: f16::from_f64, from_i64: |v: i64| f16::from_f32(v as f32));
impl_element!(bf16, BF16, to_f32: |x: bf16| x.to_f32(), to_f64: |x: bf16| x.to_f64(), to_i64: |x: bf16| x.to_f32() as i64,
    from_f32: bf16::from_f32, from_f64: bf16::from_f64, from_i64: |v: i64| bf16::from_f32(v as f32));
impl_element!(i32, I32, to_f32: |x: i32| x as f32, to_f64: |x: i32| x as f64, to_i64: |x: i32| x as i64,
    from_f32: |v: f32| v as i32, from_f64: |v: f64| v as i32, from_i64: |v: i64| v as i32);
impl_element!(i64, I64, to_f32: |x: i64| x as f32, to_f64: |x: i64| x as f64, to_i64: |x: i64| x,
    from_f32: |v: f32| v as i64, from_f64: |v: f64| v as i64, from_i64: |v: i64| v);
impl_element!(u8, U8, to_f32: |x: u8| x as f32, to_f64: |x: u8| x as f64, to_i64: |x: u8| x as i64,
    from_f32: |v: f32| v as i64 as u8, from_f64: |v: f64| v as i64 as u8, from_i64: |v: i64| v as u8);
impl_element!(bool, Bool, to_f32: |x: bool| x as u8 as f32, to_f64: |x: bool| x as u8 as f64, to_i64: |x: bool| x as i64,
    from_f32: |v: f32| v != 0.0, from_f64: |v: f64| v != 0.0, from_i64: |v: i64| v != 0);

/// Calls `$body` with `$T` bound to the Rust type of the runtime dtype `$dt`.
///
/// One generic body, monomorphised per dtype: the crate's way of writing a
/// code path once instead of once per dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::DType::F16 => {
                type $T = $crate::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_casts_are_the_widenings() {
        // Every exact pair round-trips a value that is extreme for the source.
        assert!(DType::U8.casts_exactly_to(DType::BF16)); // 255 has 8 significant bits
        assert!(!DType::I32.casts_exactly_to(DType::F32)); // 2^24 + 1
        assert!(!DType::F32.casts_exactly_to(DType::F16));
        assert!(!DType::I64.casts_exactly_to(DType::I32));
        assert!(!DType::F16.casts_exactly_to(DType::BF16));
        assert!(!DType::F32.casts_exactly_to(DType::Bool));
        for d in DType::ALL {
            assert!(d.casts_exactly_to(d));
            assert!(DType::Bool.casts_exactly_to(d));
        }
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("f8"), None);
    }

    #[test]
    fn casts_follow_cpp() {
        assert_eq!(<i32 as Element>::from_f64(-2.7), -2);
        assert!(<bool as Element>::from_i64(5));
        assert_eq!(<u8 as Element>::from_i64(257), 1);
        assert_eq!(f16::from_f32(1.5).to_i64(), 1);
    }
}
