//! The value semantics of the envc language (docs/spec-language.md sections 6, 10, 18) for compiled code:
//! integers wrap, `//` and `%` floor (and give 0 for a zero divisor), reads clamp their index, writes out of
//! range are dropped, f32 operations round once, transcendental functions use the platform's f32 libm.

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

/// Python's `float(math.floor(x))` for finite `x` (a zero result is +0.0), `x` itself otherwise.
#[inline(always)]
pub fn floor(x: f32) -> f32 {
    let r = x.floor();
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// Python's `float(math.ceil(x))` for finite `x` (a zero result is +0.0), `x` itself otherwise.
#[inline(always)]
pub fn ceil(x: f32) -> f32 {
    let r = x.ceil();
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// f32 `a // b`: the floor of the rounded quotient (IEEE for a zero divisor: ±inf or NaN).
#[inline(always)]
pub fn f32_floor_div(a: f32, b: f32) -> f32 {
    let q = a / b;
    if q.is_finite() {
        floor(q)
    } else {
        q
    }
}

/// f32 `a % b` with Python's sign rule (sign of the divisor), NaN for `b == 0` or an infinite `a`.
#[inline(always)]
pub fn f32_floor_mod(a: f32, b: f32) -> f32 {
    if b == 0.0 || !a.is_finite() {
        return f32::NAN;
    }
    let (x, y) = (a as f64, b as f64);
    let mut m = x % y;
    if m != 0.0 {
        if (y < 0.0) != (m < 0.0) {
            m += y;
        }
    } else {
        m = 0.0f64.copysign(y);
    }
    m as f32
}

/// Two-argument f32 `min` (NaN if either is NaN; the first of two equal values).
#[inline(always)]
pub fn fmin(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if b < a {
        b
    } else {
        a
    }
}

/// Two-argument f32 `max` (NaN if either is NaN; the first of two equal values).
#[inline(always)]
pub fn fmax(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if b > a {
        b
    } else {
        a
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
    /// `sin(x)`: the platform's single-precision `sinf` (within an ULP of the reference, which rounds f64 `sin`).
    sin => sin;
    /// `cos(x)`, single precision.
    cos => cos;
    /// `tan(x)`, single precision.
    tan => tan;
    /// `exp(x)`, single precision (overflows to inf).
    exp => exp;
    /// `log(x)`: -inf at 0, NaN below; single precision.
    log => ln;
    /// `tanh(x)`, single precision.
    tanh => tanh;
}

/// `atan2(y, x)`, single precision.
#[inline(always)]
pub fn atan2(y: f32, x: f32) -> f32 {
    y.atan2(x)
}

/// `min` over a generator or array (Python's: the first element, replaced by any smaller one), `empty` if none.
#[inline(always)]
pub fn min_of<T: PartialOrd + Copy>(it: impl Iterator<Item = T>, empty: T) -> T {
    let mut best: Option<T> = None;
    for v in it {
        best = match best {
            Some(b) if v < b => Some(v),
            Some(b) => Some(b),
            None => Some(v),
        };
    }
    best.unwrap_or(empty)
}

/// `max` over a generator or array (Python's: the first element, replaced by any larger one), `empty` if none.
#[inline(always)]
pub fn max_of<T: PartialOrd + Copy>(it: impl Iterator<Item = T>, empty: T) -> T {
    let mut best: Option<T> = None;
    for v in it {
        best = match best {
            Some(b) if v > b => Some(v),
            Some(b) => Some(b),
            None => Some(v),
        };
    }
    best.unwrap_or(empty)
}

#[inline(always)]
fn arg_of<T: PartialOrd + Copy>(
    it: impl Iterator<Item = (i32, T)>,
    better: impl Fn(T, T) -> bool,
) -> i32 {
    let mut best = -1i32;
    let mut value: Option<T> = None;
    for (p, v) in it {
        // As the reference: a negative position counts as "nothing chosen yet".
        if best < 0 || value.is_some_and(|b| better(v, b)) {
            best = p;
            value = Some(v);
        }
    }
    best
}

/// `argmax`: the position of the first largest value, -1 if none.
#[inline(always)]
pub fn argmax_of<T: PartialOrd + Copy>(it: impl Iterator<Item = (i32, T)>) -> i32 {
    arg_of(it, |v, b| v > b)
}

/// `argmin`: the position of the first smallest value, -1 if none.
#[inline(always)]
pub fn argmin_of<T: PartialOrd + Copy>(it: impl Iterator<Item = (i32, T)>) -> i32 {
    arg_of(it, |v, b| v < b)
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
        assert_eq!(f32_floor_div(-7.5, 2.0), -4.0);
        assert_eq!(f32_floor_div(-0.5, 4.0).to_bits(), (-1.0f32).to_bits());
        assert_eq!(floor(-0.0).to_bits(), 0.0f32.to_bits());
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
        assert_eq!(fmin(0.0, -0.0).to_bits(), 0.0f32.to_bits());
    }
}
