//! envc-runtime: what every envc-generated Rust environment shares.
//!
//! * [`rng`]: threefry2x32 with `split`/`fold_in`/`bits` and envc's samplers, bit for bit equal to `jax.random`
//!   and to the reference interpreter (`envc.rng`);
//! * [`ops`]: the language's value semantics (wrapping integers, floor division, index fallbacks, f32 math);
//! * [`mathx`]: the arithmetic of language 1.1 (`**` with a static exponent, shifts for every count, `sign`, `fmod`);
//! * [`f64x`]: the f64 forms of the f32 semantics in `ops` and `mathx` (the opt-in `f64` type);
//! * [`mod@env`]: the [`env::Env`] trait a generated crate implements and the step protocol around it;
//! * [`batch`]: a batch driver writing observations, rewards and masks in place, on a [`gang`] of rayon threads
//!   kept awake between calls;
//! * [`simd`]: the AVX2 build of the hot functions, picked at run time;
//! * `py` (feature `python`): pyo3 + rust-numpy glue for the generated extension modules.

pub mod batch;
pub mod env;
pub mod f64x;
pub mod gang;
pub mod mathx;
pub mod ops;
#[cfg(feature = "python")]
pub mod py;
pub mod rng;
pub mod simd;
pub mod zone;

pub use batch::{Actions, Batch, Out, RolloutStats};
pub use env::{Action, ArrayMut, ArrayRef, ArraySpec, DType, Env, Full, LaneRows, ObsRows, LANES};
pub use rng::Key;

#[cfg(feature = "python")]
pub use {numpy, pyo3};
