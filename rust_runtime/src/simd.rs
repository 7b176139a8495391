//! Two builds of the hot functions: the target's baseline and, on x86-64, one with AVX2, FMA and BMI.
//!
//! A generated crate must run on any x86-64 host (its wheel may move), so it is compiled for the baseline (SSE2),
//! which leaves the lane kernels half as wide as the host allows. The lane kernels, the rows of a pack and the
//! resets are therefore compiled a second time with AVX2, FMA, BMI1 and BMI2 enabled, and [`init`] picks the
//! build once per process. Both builds compute the same bits: Rust neither fuses nor reorders float operations
//! on its own, and an explicit `mul_add` is one rounding with or without the FMA instruction.
//! `ENVC_RUST_AVX2=0` keeps the baseline build (the tests run both).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Set by [`init`] only on a host with every feature of the AVX2 build, so reading it needs no check.
static AVX2: AtomicBool = AtomicBool::new(false);

/// Pick the build for this process: AVX2 where the host has AVX2, FMA, BMI1 and BMI2 and `ENVC_RUST_AVX2` is not
/// `0`. Until it runs, the baseline build runs (`Batch::new` and the generated modules' import call it).
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| AVX2.store(wanted(), Ordering::Relaxed));
}

/// Whether this process should run the AVX2 builds (what [`init`] stores).
fn wanted() -> bool {
    std::env::var_os("ENVC_RUST_AVX2").map_or(true, |v| v != "0") && host_avx2()
}

/// Whether the AVX2 builds run (after [`init`]).
#[inline(always)]
pub fn avx2() -> bool {
    AVX2.load(Ordering::Relaxed)
}

/// The build this process runs: `"avx2"` or `"baseline"`.
pub fn build() -> &'static str {
    init();
    if avx2() {
        "avx2"
    } else {
        "baseline"
    }
}

#[cfg(target_arch = "x86_64")]
fn host_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
}

#[cfg(not(target_arch = "x86_64"))]
fn host_avx2() -> bool {
    false
}

/// `fn name(args) => body`: defines `name`, which calls the AVX2 build of `body` (an `#[inline(always)]` function
/// of the same signature) where [`avx2`] holds and its baseline build otherwise. Both builds are out of line; the
/// choice between them is inlined into the caller.
#[macro_export]
macro_rules! simd_dispatch {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:ident
    ) => {
        $(#[$attr])*
        #[inline(always)]
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma,bmi1,bmi2")]
            #[inline(never)]
            unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                $body($($arg),*)
            }
            #[inline(never)]
            fn baseline($($arg: $ty),*) $(-> $ret)? {
                $body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::simd::avx2() {
                // SAFETY: `avx2()` holds only on a host with every feature `avx2` is compiled for.
                return unsafe { avx2($($arg),*) };
            }
            baseline($($arg),*)
        }
    };
}

#[cfg(test)]
mod tests {
    #[inline(always)]
    fn dot_body(a: &[f32; 16], b: &[f32; 16]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    crate::simd_dispatch! {
        /// A dot product, in both builds.
        fn dot(a: &[f32; 16], b: &[f32; 16]) -> f32 => dot_body
    }

    #[test]
    fn both_builds_agree() {
        super::init();
        assert_eq!(
            super::build(),
            if super::wanted() { "avx2" } else { "baseline" }
        );
        let a: [f32; 16] = std::array::from_fn(|i| (i as f32 + 0.1).sin());
        let b: [f32; 16] = std::array::from_fn(|i| (i as f32 * 0.7).cos());
        // `dot` runs the picked build; `dot_body`, inlined here, the baseline one.
        assert_eq!(dot(&a, &b).to_bits(), dot_body(&a, &b).to_bits());
    }
}
