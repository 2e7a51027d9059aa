//! `exp` of arguments at most 0, in plain IEEE operations that the
//! compiler can put side by side in vector instructions (libm's `exp` is
//! a call per element).
//!
//! logsumexp's run and column leaf folds take it
//! ([`super::norm_ops::LogSumExpOps`]), for its terms `exp(x - max)`,
//! whose arguments are at most 0 (or NaN), and to merge blocks. A sum of
//! terms holds the maximum's own term, 1, so a term below the smallest
//! normal float may be any value under it: the code needs no subnormal
//! and no overflow cases.
//!
//! The method is the usual one: `x = n ln2 + r` with `n` the nearest
//! integer to `x / ln2` (Cody and Waite's two-part `ln2`, so that `r` is
//! exact to a few ulps of `x`), `exp(r)` by its Taylor polynomial on
//! `|r| <= ln2 / 2`, and `2^n` built in the exponent bits. Separate
//! multiplies and adds, never fused: the result is the same on every
//! instruction set ([`super::isa`]).

/// `exp` of an argument at most 0 or NaN: within 2 ulps of the exact
/// value down to [`MIN_ARG`](ExpNonPositive::MIN_ARG); below it, a normal
/// float no larger than `exp(MIN_ARG)`. NaN stays NaN.
pub(crate) trait ExpNonPositive: Copy {
    /// The argument below which results are clamped: `2^n` of it is still
    /// a normal float.
    const MIN_ARG: Self;
    fn exp_nonpositive(self) -> Self;
}

/// [`ExpNonPositive`] for one float type, spelled once for f32 and f64.
macro_rules! exp_nonpositive {
    ($t:ty, min: $min:expr, mantissa: $mantissa:expr, bias: $bias:expr,
     ln2: ($ln2_hi:expr, $ln2_lo:expr), taylor: [$first:expr $(, $c:expr)*]) => {
        impl ExpNonPositive for $t {
            const MIN_ARG: $t = $min;
            #[inline(always)]
            fn exp_nonpositive(self) -> $t {
                // A comparison, not `max`: NaN fails it and passes through.
                let min = <$t as ExpNonPositive>::MIN_ARG;
                let x = if self < min { min } else { self };
                // Adding 1.5 * 2^mantissa rounds x / ln2 to the nearest
                // integer n, held in the low bits of `k`.
                const ROUND: $t = 1.5 * (1u64 << $mantissa) as $t;
                let k = x * std::f64::consts::LOG2_E as $t + ROUND;
                let n = k - ROUND;
                let r = (x - n * $ln2_hi) - n * $ln2_lo;
                // Horner, from the highest term down.
                let mut p: $t = $first;
                $(p = p * r + $c;)*
                // k's low bits are n (two's complement): shifted into the
                // exponent field with the bias, they make 2^n.
                p * <$t>::from_bits(k.to_bits().wrapping_add($bias) << $mantissa)
            }
        }
    };
}

// Degree 7: r^8 / 8!, the first term left out, is under 2^-27 of the
// result for |r| <= ln2 / 2.
exp_nonpositive!(f32, min: -87.0, mantissa: 23, bias: 127,
    ln2: (f32::from_bits(0x3f31_8000), f32::from_bits(0xb95e_8083)),
    taylor: [1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0]);

// Degree 13: r^14 / 14! is under 2^-57 of the result.
exp_nonpositive!(f64, min: -708.0, mantissa: 52, bias: 1023,
ln2: (f64::from_bits(0x3fe6_2e42_fee0_0000), f64::from_bits(0x3dea_39ef_3579_3c76)),
taylor: [
    1.0 / 6_227_020_800.0, 1.0 / 479_001_600.0, 1.0 / 39_916_800.0, 1.0 / 3_628_800.0,
    1.0 / 362_880.0, 1.0 / 40_320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
    1.0 / 6.0, 0.5, 1.0, 1.0
]);

#[cfg(test)]
mod tests {
    use super::*;

    /// `got`'s distance from the exact `want`, in units of `ulp`.
    fn ulps(got: f64, want: f64, ulp: f64) -> f64 {
        (got - want).abs() / ulp
    }

    #[test]
    fn f32_is_within_2_ulps_of_exp() {
        // Every 97th f32 from -0 down to MIN_ARG, against f64's exp.
        let (mut worst, mut covered) = (0f64, 0);
        let arguments = (0u32..)
            .map(|i| f32::from_bits((-0.0f32).to_bits() + i * 97))
            .take_while(|&x| x >= f32::MIN_ARG);
        for x in arguments {
            let want = (x as f64).exp();
            let w = want as f32;
            let got = x.exp_nonpositive() as f64;
            worst = worst.max(ulps(got, want, (w.next_up() - w) as f64));
            covered += 1;
        }
        assert!(worst <= 2.0, "worst {worst} ulps");
        assert!(covered > 10_000_000, "covered {covered} arguments");
    }

    #[test]
    fn f64_is_within_2_ulps_of_exp() {
        // libm's exp is the reference, itself within about half an ulp
        // (glibc's): 1.5 ulps from it keeps ours within 2 of the exact
        // value (1.17 measured).
        let mut worst = 0f64;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f64::MIN_ARG * (state >> 11) as f64 / (1u64 << 53) as f64;
            let want = x.exp();
            worst = worst.max(ulps(x.exp_nonpositive(), want, want.next_up() - want));
        }
        assert!(worst <= 1.5, "worst {worst} ulps");
    }

    #[test]
    fn edges() {
        assert_eq!(0f32.exp_nonpositive(), 1.0);
        assert_eq!(0f64.exp_nonpositive(), 1.0);
        assert!(f32::NAN.exp_nonpositive().is_nan());
        assert!(f64::NAN.exp_nonpositive().is_nan());
        // Below MIN_ARG: a positive normal value no larger than exp(MIN_ARG).
        let cap = (f32::MIN_ARG as f64).exp() * (1.0 + 1e-6);
        for x in [-f32::INFINITY, -1e30, -100.0] {
            let v = x.exp_nonpositive();
            assert!(v.is_normal() && (v as f64) <= cap, "{x}: {v}");
        }
        let cap = f64::MIN_ARG.exp() * (1.0 + 1e-15);
        for x in [-f64::INFINITY, -1e300, -800.0] {
            let v = x.exp_nonpositive();
            assert!(v.is_normal() && v <= cap, "{x}: {v}");
        }
    }
}
