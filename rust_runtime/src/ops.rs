//! The value semantics of the envc language (docs/spec-language.md sections 6, 10, 11, 18) for compiled code:
//! integers wrap, `//` and `%` floor (and give 0 for a zero divisor), reads clamp their index, writes out of
//! range are dropped, f32 operations round once, f32 `//` and `%` count subnormals as zeros, f32 `min`/`max`
//! propagate NaN and put -0.0 below +0.0; `sin` and `cos` near zero are a fixed polynomial (the same bits on
//! every platform and in lane form), other transcendental functions use the platform's f32 libm.

/// A sized integer of the language (i8, i16, i32, u32) with Python's floor division and modulo.
pub trait Int: Copy + PartialEq + PartialOrd {
    /// `a // b` (floor; wraps; 0 when `b == 0`).
    fn floor_div(self, b: Self) -> Self;
    /// `a % b` (sign of the divisor; 0 when `b == 0`).
    fn floor_mod(self, b: Self) -> Self;
}

macro_rules! signed_int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline(always)]
            fn floor_div(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                let q = self.wrapping_div(b);
                let r = self.wrapping_rem(b);
                if r != 0 && ((r < 0) != (b < 0)) { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)]
            fn floor_mod(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(b);
                if r != 0 && ((r < 0) != (b < 0)) { r.wrapping_add(b) } else { r }
            }
        }
    )*};
}
signed_int!(i8, i16, i32);

impl Int for u32 {
    #[inline(always)]
    fn floor_div(self, b: Self) -> Self {
        self.checked_div(b).unwrap_or(0)
    }
    #[inline(always)]
    fn floor_mod(self, b: Self) -> Self {
        self.checked_rem(b).unwrap_or(0)
    }
}

/// A read index: `i` clamped into `0..n` (the fallback for an out-of-range read).
#[inline(always)]
pub fn ix<T: Into<i64>>(i: T, n: usize) -> usize {
    let i: i64 = i.into();
    if i <= 0 {
        0
    } else if i >= n as i64 {
        n - 1
    } else {
        i as usize
    }
}

/// A write index: `Some(i)` inside `0..n`, `None` (the write is dropped) outside.
#[inline(always)]
pub fn wx<T: Into<i64>>(i: T, n: usize) -> Option<usize> {
    let i: i64 = i.into();
    if i >= 0 && i < n as i64 {
        Some(i as usize)
    } else {
        None
    }
}

/// `E(x)`: a member index of an enum with `members` members; out of range gives member 0.
#[inline(always)]
pub fn to_enum<T: Into<i64>>(x: T, members: i64) -> i8 {
    let v: i64 = x.into();
    if v >= 0 && v < members {
        v as i8
    } else {
        0
    }
}

/// `to_enum` of an enum with more than 127 members (stored as i16).
#[inline(always)]
pub fn to_enum16<T: Into<i64>>(x: T, members: i64) -> i16 {
    let v: i64 = x.into();
    if v >= 0 && v < members {
        v as i16
    } else {
        0
    }
}

/// IEEE `floor(x)` (the sign of a zero kept: `floor(-0.0)` is -0.0).
#[inline(always)]
pub fn floor(x: f32) -> f32 {
    x.floor()
}

/// IEEE `ceil(x)` (the sign of a zero kept: `ceil(-0.5)` is -0.0).
#[inline(always)]
pub fn ceil(x: f32) -> f32 {
    x.ceil()
}

/// `x`, or a zero of its sign when `x` is subnormal (how f32 `//` and `%` see their operands and results). Bit
/// operations, so constant folding and the processor's flush-to-zero mode cannot change it.
#[inline(always)]
pub fn ftz(x: f32) -> f32 {
    let bits = x.to_bits();
    if bits & 0x7f80_0000 == 0 {
        f32::from_bits(bits & 0x8000_0000)
    } else {
        x
    }
}

/// f32 `a // b`: the IEEE floor of the rounded quotient (±inf or NaN for a zero divisor), subnormal operands and
/// quotient counting as zeros.
#[inline(always)]
pub fn f32_floor_div(a: f32, b: f32) -> f32 {
    ftz(ftz(a) / ftz(b)).floor()
}

/// f32 `a % b`: Python's float modulo on f32 values (fmod, plus the divisor when the signs differ, rounded once;
/// a zero result takes the divisor's sign), subnormal operands and results counting as zeros; NaN for a zero
/// divisor, an infinite `a` or a NaN.
#[inline(always)]
pub fn f32_floor_mod(a: f32, b: f32) -> f32 {
    let (a, b) = (ftz(a), ftz(b));
    if b == 0.0 || !a.is_finite() || b.is_nan() {
        return f32::NAN;
    }
    let r = ftz(a % b); // fmod: exact
    if r == 0.0 {
        0.0f32.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        ftz(r + b)
    } else {
        r
    }
}

/// Two-argument f32 `min` (IEEE 754-2019 `minimum`): NaN if either is NaN, -0.0 below +0.0.
#[inline(always)]
pub fn fmin(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a < b {
        a
    } else if b < a {
        b
    } else {
        f32::from_bits(a.to_bits() | b.to_bits()) // equal: the same bits, or two zeros (-0.0 if either is)
    }
}

/// Two-argument f32 `max` (IEEE 754-2019 `maximum`): NaN if either is NaN, +0.0 above -0.0.
#[inline(always)]
pub fn fmax(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a > b {
        a
    } else if b > a {
        b
    } else {
        f32::from_bits(a.to_bits() & b.to_bits()) // equal: the same bits, or two zeros (+0.0 if either is)
    }
}

/// Integer `min(a, b)`.
#[inline(always)]
pub fn imin<T: PartialOrd>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

/// Integer `max(a, b)`.
#[inline(always)]
pub fn imax<T: PartialOrd>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}

macro_rules! f32_math {
    ($($(#[$doc:meta])* $name:ident => $f:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(x: f32) -> f32 {
            x.$f()
        }
    )*};
}
f32_math! {
    /// `sqrt(x)` (correctly rounded), NaN below 0.
    sqrt => sqrt;
    /// `tan(x)`, single precision.
    tan => tan;
    /// `exp(x)`, single precision (overflows to inf).
    exp => exp;
    /// `log(x)`: -inf at 0, NaN below; single precision.
    log => ln;
    /// `tanh(x)`, single precision.
    tanh => tanh;
}

/// `|x|` up to which `sin` and `cos` use their polynomials (its interval); beyond it, libm's range reduction.
const POLY_MAX: f32 = std::f32::consts::FRAC_PI_4;

/// The odd and even polynomial coefficients of `sin` and `cos` on [-pi/4, pi/4] (minimax for f32 results when
/// evaluated in f64: ARM optimized-routines' `sincosf`, which glibc ships; `-0x1.555545995a603p-3` and so on).
const S1: f64 = -0.16666654943701084;
const S2: f64 = 0.008332178146138854;
const S3: f64 = -0.00019517298981385725;
const C1: f64 = -0.49999999725108224;
const C2: f64 = 0.041666623324344516;
const C3: f64 = -0.001388676379437604;
const C4: f64 = 2.4390450703564542e-05;

/// `sin(x)` for `|x| <= pi/4`: `x (1 + s1 x^2 + s2 x^4 + s3 x^6)` in f64 (unfused, Horner), rounded once; a product
/// with `x`, so `sin(-0.0)` is `-0.0`.
#[inline(always)]
fn sin_poly(x: f32) -> f32 {
    let x = f64::from(x);
    let x2 = x * x;
    let p = S1 + x2 * (S2 + x2 * S3);
    (x * (1.0 + x2 * p)) as f32
}

/// `cos(x)` for `|x| <= pi/4`: `1 + c1 x^2 + c2 x^4 + c3 x^6 + c4 x^8` in f64 (unfused, Horner), rounded once.
#[inline(always)]
fn cos_poly(x: f32) -> f32 {
    let x = f64::from(x);
    let x2 = x * x;
    (1.0 + x2 * (C1 + x2 * (C2 + x2 * (C3 + x2 * C4)))) as f32
}

/// Is `|x| <= POLY_MAX`? (An integer compare of the magnitude bits, false for NaN, so lane loops of it vectorize.)
#[inline(always)]
fn in_poly(x: f32) -> bool {
    x.to_bits() & 0x7fff_ffff <= POLY_MAX.to_bits()
}

/// Does every lane take the polynomial? (No early exit, so the test vectorizes.)
#[inline(always)]
fn all_poly<const N: usize>(x: &[f32; N]) -> bool {
    let mut ok = true;
    for &v in x {
        ok &= in_poly(v);
    }
    ok
}

macro_rules! poly_math {
    ($($(#[$doc:meta])* $name:ident, $lanes:ident => $poly:ident, $libm:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(x: f32) -> f32 {
            if in_poly(x) {
                $poly(x)
            } else {
                x.$libm()
            }
        }

        #[doc = concat!("[`", stringify!($name), "`] of every lane, the same bits; vectorized when every lane is in")]
        #[doc = "[-pi/4, pi/4]."]
        #[inline(always)]
        pub fn $lanes<const N: usize>(x: &[f32; N]) -> [f32; N] {
            // Loops rather than `map`: an AVX2 build (`simd`) would call the baseline `map` instead of inlining it.
            let mut y = [0.0; N];
            if all_poly(x) {
                for (y, &x) in y.iter_mut().zip(x) {
                    *y = $poly(x);
                }
            } else {
                for (y, &x) in y.iter_mut().zip(x) {
                    *y = $name(x);
                }
            }
            y
        }
    )*};
}
poly_math! {
    /// `sin(x)`: for `|x| <= pi/4` a fixed polynomial in f64 rounded once (checked over every such f32: within
    /// 1 ULP of the reference's rounded f64 value, equal to it for 99.96%), the platform's `sinf` beyond (and NaN).
    sin, sin_lanes => sin_poly, sin;
    /// `cos(x)`, as [`sin`].
    cos, cos_lanes => cos_poly, cos;
}

/// `atan2(y, x)`, single precision.
#[inline(always)]
pub fn atan2(y: f32, x: f32) -> f32 {
    y.atan2(x)
}

/// The order of the `min`/`max`/`argmin`/`argmax` reductions: `<` for integers; for f32 a NaN beats every
/// value (the first NaN is the result) and -0.0 is below +0.0.
pub trait Ordered: Copy {
    /// Is this a NaN?
    #[inline(always)]
    fn is_nan_value(self) -> bool {
        false
    }
    /// `self < b` in the reductions' order (NaN aside).
    fn below(self, b: Self) -> bool;
}

macro_rules! ordered_int {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            #[inline(always)]
            fn below(self, b: Self) -> bool {
                self < b
            }
        }
    )*};
}
ordered_int!(i8, i16, i32, u32);

impl Ordered for f32 {
    #[inline(always)]
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
    #[inline(always)]
    fn below(self, b: Self) -> bool {
        self < b || (self == b && self.is_sign_negative() && !b.is_sign_negative())
    }
}

/// The (position, value) of the first NaN, else of the first value that no later one is `better` than.
#[inline(always)]
fn best_of<T: Ordered>(
    it: impl Iterator<Item = (i32, T)>,
    better: impl Fn(T, T) -> bool,
) -> Option<(i32, T)> {
    let mut best: Option<(i32, T)> = None;
    for (p, v) in it {
        best = match best {
            Some((_, b)) if b.is_nan_value() || !(v.is_nan_value() || better(v, b)) => best,
            _ => Some((p, v)),
        };
    }
    best
}

/// `min` over a generator or array: the first NaN if any, else the smallest value (-0.0 below +0.0); `empty`
/// if none.
#[inline(always)]
pub fn min_of<T: Ordered>(it: impl Iterator<Item = T>, empty: T) -> T {
    best_of(it.map(|v| (0, v)), |v, b| v.below(b)).map_or(empty, |(_, v)| v)
}

/// `max` over a generator or array: the first NaN if any, else the largest value (+0.0 above -0.0); `empty` if
/// none.
#[inline(always)]
pub fn max_of<T: Ordered>(it: impl Iterator<Item = T>, empty: T) -> T {
    best_of(it.map(|v| (0, v)), |v, b| b.below(v)).map_or(empty, |(_, v)| v)
}

/// `argmax`: the position of the first NaN if any, else of the first largest value; -1 if none.
#[inline(always)]
pub fn argmax_of<T: Ordered>(it: impl Iterator<Item = (i32, T)>) -> i32 {
    best_of(it, |v, b| b.below(v)).map_or(-1, |(p, _)| p)
}

/// `argmin`: the position of the first NaN if any, else of the first smallest value; -1 if none.
#[inline(always)]
pub fn argmin_of<T: Ordered>(it: impl Iterator<Item = (i32, T)>) -> i32 {
    best_of(it, |v, b| v.below(b)).map_or(-1, |(p, _)| p)
}

/// A copy of `n` = `N` elements of `data` from `offset` (an array-valued read).
#[inline(always)]
pub fn row<T: Copy, const N: usize>(data: &[T], offset: usize) -> [T; N] {
    let mut out = [data[offset]; N];
    out.copy_from_slice(&data[offset..offset + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_modulo_follow_python() {
        assert_eq!((-7i32).floor_div(2), -4);
        assert_eq!((-7i32).floor_mod(3), 2);
        assert_eq!(7i32.floor_mod(-3), -2);
        assert_eq!((-128i8).floor_div(-1), -128);
        assert_eq!((-128i8).floor_mod(-1), 0);
        assert_eq!(5i16.floor_div(0), 0);
        assert_eq!(5u32.floor_mod(0), 0);
        assert_eq!(f32_floor_mod(-7.5, 2.0), 0.5);
        assert_eq!(f32_floor_mod(7.5, -2.0), -0.5);
        assert!(f32_floor_mod(1.0, 0.0).is_nan());
        assert_eq!(f32_floor_mod(-4.0, 2.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(f32_floor_mod(4.0, -2.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(f32_floor_mod(-1.0, f32::INFINITY), f32::INFINITY);
        let tiny = f32::from_bits(1); // the smallest subnormal counts as +0.0
        assert_eq!(f32_floor_mod(tiny, -128.0).to_bits(), (-0.0f32).to_bits());
        assert!(f32_floor_mod(1.0, tiny).is_nan());
        assert_eq!(f32_floor_div(-7.5, 2.0), -4.0);
        assert_eq!(f32_floor_div(-0.5, 4.0).to_bits(), (-1.0f32).to_bits());
        assert_eq!(f32_floor_div(-0.0, 4.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(f32_floor_div(-1e-30, 1e10).to_bits(), (-0.0f32).to_bits()); // a subnormal quotient
        assert_eq!(f32_floor_div(-5.5, -0.0), f32::INFINITY);
        assert_eq!(floor(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(ceil(-0.5).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn min_max_and_their_reductions_order_nan_and_zeros() {
        assert_eq!(fmin(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fmax(-0.0, 0.0).to_bits(), 0.0f32.to_bits());
        assert!(fmax(f32::NAN, 1.0).is_nan());
        let v = [1.0f32, 0.0, -0.0, f32::NAN, -3.0];
        assert!(min_of(v.iter().copied(), 0.0).is_nan());
        assert_eq!(
            min_of(v[..3].iter().copied(), 0.0).to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(
            argmin_of(v.iter().copied().enumerate().map(|(i, x)| (i as i32, x))),
            3
        );
        assert_eq!(
            argmin_of(
                v[..3]
                    .iter()
                    .copied()
                    .enumerate()
                    .map(|(i, x)| (i as i32, x))
            ),
            2
        );
        assert_eq!(argmax_of([(-3, 5i8), (-2, 7), (-1, 7)].into_iter()), -2);
        assert_eq!(argmax_of(std::iter::empty::<(i32, u32)>()), -1);
        assert_eq!(max_of(std::iter::empty::<i8>(), i8::MIN), i8::MIN);
    }

    #[test]
    fn casts_and_indices() {
        assert_eq!(ix(-3i32, 5), 0);
        assert_eq!(ix(9i8, 5), 4);
        assert_eq!(wx(5u32, 5), None);
        assert_eq!(to_enum(3i32, 3), 0);
        assert_eq!(1000.0f32 as i8, 127);
        let nan = f32::from_bits(0x7fc0_0000);
        assert_eq!(nan as i32, 0);
        assert_eq!(-3.7f32 as i32, -3);
        assert_eq!(-5.0f32 as u32, 0);
        assert!(fmin(1.0, f32::NAN).is_nan());
        assert_eq!(fmin(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
    }

    /// Distance in ULPs between two finite f32 of the same sign.
    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn sin_and_cos_polynomials_round_the_exact_value() {
        // Every 251st f32 in [-pi/4, pi/4] (both signs), against f64 sin/cos rounded once (the reference's).
        let (mut n, mut exact) = (0u32, 0u32);
        for bits in (0..=POLY_MAX.to_bits()).step_by(251) {
            for x in [f32::from_bits(bits), -f32::from_bits(bits)] {
                for (got, want) in [
                    (sin(x), f64::from(x).sin() as f32),
                    (cos(x), f64::from(x).cos() as f32),
                ] {
                    assert!(ulps(got, want) <= 1, "x = {x:e}: {got:e} vs {want:e}");
                    n += 1;
                    exact += u32::from(got == want);
                }
            }
        }
        assert!(exact as f64 >= 0.999 * n as f64, "{exact} of {n} exact");
        assert_eq!(sin(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cos(0.0), 1.0);
        assert!(sin(f32::NAN).is_nan() && cos(f32::INFINITY).is_nan());
        assert_eq!(sin(2.0), 2.0f32.sin());
    }

    #[test]
    fn lane_forms_give_the_bits_of_one_lane_at_a_time() {
        let small = [0.1f32, -0.2, 0.0, -0.0, 0.785, -0.785, 1e-30, 0.5];
        let mixed = [
            0.1f32,
            3.0,
            f32::NAN,
            -0.785,
            f32::INFINITY,
            -10.0,
            1e-30,
            0.79,
        ];
        for x in [small, mixed] {
            let (s, c) = (sin_lanes(&x), cos_lanes(&x));
            for l in 0..x.len() {
                assert_eq!(s[l].to_bits(), sin(x[l]).to_bits());
                assert_eq!(c[l].to_bits(), cos(x[l]).to_bits());
            }
        }
    }
}
