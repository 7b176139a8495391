//! The opt-in `f64` type (docs/spec-language.md 6.1): the f64 forms of the f32 semantics in [`crate::ops`] and
//! [`crate::mathx`], as the reference interpreter defines them (`envc/f64.py`, `envc/mathops.py`). Every f64
//! `+ - * /` is one IEEE binary64 operation (Rust neither fuses nor reorders them); `//` and `%` count subnormal
//! operands and results as zeros, as the f32 ones do; the transcendental functions are the std `f64` methods
//! (the platform's libm).

use crate::ops::Ordered;

/// `x`, or a zero of its sign when `x` is a subnormal f64 (bit operations, as [`crate::ops::ftz`]).
#[inline(always)]
pub fn ftz(x: f64) -> f64 {
    let bits = x.to_bits();
    if bits & 0x7ff0_0000_0000_0000 == 0 {
        f64::from_bits(bits & 0x8000_0000_0000_0000)
    } else {
        x
    }
}

/// f64 `a // b`: the IEEE floor of the rounded quotient, subnormal operands and quotient counting as zeros.
#[inline(always)]
pub fn floor_div(a: f64, b: f64) -> f64 {
    ftz(ftz(a) / ftz(b)).floor()
}

/// f64 `a % b`: Python's float modulo (fmod, plus the divisor when the signs differ, rounded once; a zero result
/// takes the divisor's sign), subnormals counting as zeros; NaN for a zero divisor, an infinite `a` or a NaN.
#[inline(always)]
pub fn floor_mod(a: f64, b: f64) -> f64 {
    let (a, b) = (ftz(a), ftz(b));
    if b == 0.0 || !a.is_finite() || b.is_nan() {
        return f64::NAN;
    }
    let r = ftz(a % b); // fmod: exact
    if r == 0.0 {
        0.0f64.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        ftz(r + b)
    } else {
        r
    }
}

/// Two-argument f64 `min` (IEEE 754-2019 `minimum`): NaN if either is NaN, -0.0 below +0.0.
#[inline(always)]
pub fn fmin(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a < b {
        a
    } else if b < a {
        b
    } else {
        f64::from_bits(a.to_bits() | b.to_bits())
    }
}

/// Two-argument f64 `max` (IEEE 754-2019 `maximum`): NaN if either is NaN, +0.0 above -0.0.
#[inline(always)]
pub fn fmax(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a > b {
        a
    } else if b > a {
        b
    } else {
        f64::from_bits(a.to_bits() & b.to_bits())
    }
}

/// f64 `x ** n` for a static integer `n`: the products of [`crate::mathx::powi_f32`], each rounded to f64.
#[inline]
pub fn powi(x: f64, n: i64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let mut m = n.unsigned_abs();
    let mut p = x;
    let mut acc: Option<f64> = None;
    loop {
        if m & 1 == 1 {
            acc = Some(match acc {
                None => p,
                Some(a) => a * p,
            });
        }
        m >>= 1;
        if m == 0 {
            break;
        }
        p = p * p;
    }
    let acc = acc.unwrap_or(1.0);
    if n > 0 {
        acc
    } else {
        1.0 / acc
    }
}

/// f64 `sign(x)`: -1.0 or 1.0, a zero itself (the sign of -0.0 kept), NaN for NaN.
#[inline(always)]
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

/// C `fmod(x, y)` on f64 (Rust's `%`).
#[inline(always)]
pub fn fmod(x: f64, y: f64) -> f64 {
    x % y
}

impl Ordered for f64 {
    #[inline(always)]
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
    #[inline(always)]
    fn below(self, b: Self) -> bool {
        self < b || (self == b && self.is_sign_negative() && !b.is_sign_negative())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_div_and_mod_edges() {
        assert_eq!(floor_div(-7.5, 2.0), -4.0);
        assert_eq!(floor_mod(-7.5, 2.0), 0.5);
        assert_eq!(floor_mod(4.0, -2.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(floor_div(1.0, 5e-324), f64::INFINITY);
        assert!(floor_mod(1.0, 0.0).is_nan());
        let x = 1.1f64;
        assert_eq!(powi(x, 5).to_bits(), (x * (x * x * (x * x))).to_bits());
        assert_eq!(powi(2.0, -2), 0.25);
        assert_eq!(fmin(0.0, -0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(sign(-0.0).to_bits(), (-0.0f64).to_bits());
    }
}
