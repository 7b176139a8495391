//! The arithmetic of language 1.1 (docs/spec-language.md sections 6.4 and 10), as the reference interpreter
//! defines it (`envc/mathops.py`): `x ** n` for a static integer `n` as a fixed sequence of products, the shifts
//! for every count (negative, or at least the width), f32 `sign` and C `fmod`. The f32 functions with a libm
//! counterpart (`asin`, `sinh`, `hypot`, `powf`, ...) are called directly by the generated code.

/// f32 `x ** n` for a static integer `n`: `1.0` for `n == 0` (even for NaN); otherwise binary exponentiation
/// from the lowest bit of `|n|` (`acc` takes `p` at the first set bit and `acc * p` at the next ones, `p` is
/// squared between bits, never after the last), each product rounded to f32; for `n < 0`, `1.0 / acc`.
#[inline]
pub fn powi_f32(x: f32, n: i64) -> f32 {
    if n == 0 {
        return 1.0;
    }
    let mut m = n.unsigned_abs();
    let mut p = x;
    let mut acc: Option<f32> = None;
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

/// Shifts of the language's integers, for every count: `x << n` is `x * 2^n` wrapped (0 once `n` reaches the
/// width), `x >> n` is `floor(x / 2^n)` (arithmetic for signed types: the sign once `n` reaches the width;
/// logical for u32: 0). A negative count is a spec bug; its fallback is 0.
pub trait Shift: Copy {
    /// `self << n`.
    fn shl_by(self, n: i64) -> Self;
    /// `self >> n`.
    fn shr_by(self, n: i64) -> Self;
}

macro_rules! signed_shift {
    ($($t:ty),*) => {$(
        impl Shift for $t {
            #[inline(always)]
            fn shl_by(self, n: i64) -> Self {
                if n < 0 || n >= <$t>::BITS as i64 { 0 } else { self.wrapping_shl(n as u32) }
            }
            #[inline(always)]
            fn shr_by(self, n: i64) -> Self {
                if n < 0 { 0 } else { self >> (n.min(<$t>::BITS as i64 - 1) as u32) }
            }
        }
    )*};
}
signed_shift!(i8, i16, i32);

impl Shift for u32 {
    #[inline(always)]
    fn shl_by(self, n: i64) -> Self {
        if n < 0 || n >= 32 {
            0
        } else {
            self << (n as u32)
        }
    }
    #[inline(always)]
    fn shr_by(self, n: i64) -> Self {
        if n < 0 || n >= 32 {
            0
        } else {
            self >> (n as u32)
        }
    }
}

/// `x << n` (see [`Shift`]).
#[inline(always)]
pub fn shl<T: Shift>(x: T, n: i64) -> T {
    x.shl_by(n)
}

/// `x >> n` (see [`Shift`]).
#[inline(always)]
pub fn shr<T: Shift>(x: T, n: i64) -> T {
    x.shr_by(n)
}

/// f32 `sign(x)`: -1.0 or 1.0, a zero itself (the sign of -0.0 kept), NaN for NaN. (`f32::signum` gives 1.0 for
/// +0.0.)
#[inline(always)]
pub fn sign_f32(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

/// u32 `sign(x)`: 0 or 1.
#[inline(always)]
pub fn sign_u32(x: u32) -> u32 {
    u32::from(x != 0)
}

/// C `fmod(x, y)`: `x - trunc(x / y) * y` exactly, with the sign of `x`; NaN for `y == 0`, an infinite `x` or a
/// NaN; `x` for an infinite `y`.
#[inline(always)]
pub fn fmod(x: f32, y: f32) -> f32 {
    x % y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_multiply_in_the_documented_order() {
        assert_eq!(powi_f32(f32::NAN, 0), 1.0);
        assert_eq!(powi_f32(3.0, 5), 243.0);
        assert_eq!(powi_f32(2.0, -2), 0.25);
        assert_eq!(powi_f32(-0.0, -1), f32::NEG_INFINITY);
        let x = 1.1f32;
        let (x2, x4) = (x * x, x * x * (x * x));
        assert_eq!(powi_f32(x, 5).to_bits(), (x * x4).to_bits());
        assert_eq!(powi_f32(x, 6).to_bits(), (x2 * x4).to_bits());
    }

    #[test]
    fn shifts_for_every_count() {
        assert_eq!(shl(1i32, 31), i32::MIN);
        assert_eq!(shl(1i32, 32), 0);
        assert_eq!(shl(1i32, -1), 0);
        assert_eq!(shr(-5i32, 1), -3);
        assert_eq!(shr(-5i32, 99), -1);
        assert_eq!(shr(u32::MAX, 31), 1);
        assert_eq!(shr(u32::MAX, 32), 0);
        assert_eq!(shl(3i8, 7), i8::MIN);
        assert_eq!(shr(-128i8, 8), -1);
    }

    #[test]
    fn sign_and_fmod_edges() {
        assert_eq!(sign_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(sign_f32(f32::NAN).is_nan());
        assert_eq!(fmod(-7.5, 2.0), -1.5);
        assert!(fmod(1.0, 0.0).is_nan());
        assert_eq!(fmod(1.5, f32::INFINITY), 1.5);
    }
}
