//! Fixed-point encoding at scale 2^32 on the ring Z_2^128, and the plaintext reference of
//! every arithmetic step the vtwin compute nodes perform.
//!
//! The MPC engine must match this crate to the bit: every compound function is written as
//! the sequence of ring operations the nodes compute, and takes a [`Truncator`] that is
//! called once per truncation in a documented order. With [`Floor`] it is the exact
//! deterministic reference; with [`Probabilistic`] fed the MPC's masks it reproduces the
//! MPC's output exactly.
//!
//! # Representation and bounds
//! - A value `v` is the ring element `round_ties_even(v 2^32) mod 2^128` ([`Fx`], read as
//!   two's complement). Encoding ([`Fx::from_f64`]) accepts finite |v| < 2^63 and errs
//!   otherwise; its absolute error is at most 2^-33.
//! - Products: `a * b` is exact-then-truncated; it is correct (error < 1 ulp) when
//!   `|a b| < 2^23` (raw `< 2^87`, [`PRODUCT_BOUND_BITS`]), which makes the probabilistic
//!   truncation fail with probability below 2^-41. Inner products truncate once after the
//!   sum, so the bound applies to `sum |a_i b_i|`: over N <= 10^5 records it is enough that
//!   each `|a_i b_i| < 64`. Sums of up to 2^32 encoded values never wrap.
//! - `I32F32` ([`fixed::types::I32F32`]) has the same scale: [`Fx::to_i32f32`] (|v| < 2^31)
//!   and `From<I32F32> for Fx`.
//!
//! # Entry points (stable API)
//! | function | range | error | MPC cost ([`cost`]) |
//! |---|---|---|---|
//! | [`Fx::from_f64`], [`Fx::to_f64`] | \|v\| < 2^63 | <= 2^-33 abs | local |
//! | [`mul()`], [`dot`] (+ `_checked`) | \|a b\| < 2^23 | < 1 ulp | 1 mult, 1 trunc |
//! | [`trunc_floor`], [`trunc_prob`] | \|X\| < 2^87 raw | < 1 ulp; fail prob \|X\|/2^128 | 1 trunc |
//! | [`reciprocal()`], [`Reciprocal`] | (0, 2^32); accurate [2^-30, 2^16] | rel < 2^-20 for x <= 2^11, then < 2 ulp abs | 64-bit normalisation + 9 mults |
//! | [`divide`], [`Reciprocal::divide`] | b as above, \|a\| < 2^22 | rel < 2^-20 if \|a\|, \|a/b\| >= 2^-11 | + 3 mults |
//! | [`inv_sqrt()`], [`InvSqrt`] | (0, 2^48); accurate [2^-30, 2^40] | rel < 2^-20 for x <= 2^22, then < 2 ulp abs | 80-bit normalisation + 12 mults |
//! | [`clip_factor`] | x in [0, 2^48), C in (0, 2^22) | rel < 2^-20 while C/sqrt(x) >= 2^-11; exactly 1 when x <= C^2 | 80-bit normalisation + 13 mults + 1 comparison |
//! | [`compare`] | encoded values | exact | 1 sign bit |
//! | [`exp()`] | [-64, 0] | few ulp abs; rel < 2^-20 for x >= -7.6 | 8 mults, 9 truncations + 39-bit decomposition |
//!
//! Measured errors and costs: `protocols/arithmetic.md`.
//!
//! Vectorised forms are in [`mod@slice`]. Unchecked forms (`*_unchecked`, `new_unchecked`) compute
//! what the MPC computes for any ring element and never panic; the checked forms reject
//! inputs outside the domain with a [`DomainError`] naming the function and argument.

pub mod clip;
pub mod clip_bound;
pub mod compare;
pub mod cost;
pub mod domain;
pub mod encode;
pub mod exp;
pub mod inv_sqrt;
pub mod mul;
pub mod normalise;
pub mod paper;
pub mod reciprocal;
pub mod score_norm;
pub mod score_root;
pub mod slice;
pub mod trunc;
pub mod value;

pub use clip::{clip_factor, clip_factor_unchecked};
pub use domain::{DomainError, SliceError};
pub use encode::{decode_slice, encode_slice, EncodeError, SliceEncodeError, ENCODE_LIMIT};
pub use exp::{exp, exp_unchecked};
pub use inv_sqrt::{inv_sqrt, InvSqrt, RSQRT_WINDOW_BITS};
pub use mul::{dot, dot_checked, mul, mul_checked, mul_floor};
pub use reciprocal::{divide, reciprocal, Reciprocal, RECIP_WINDOW_BITS};
pub use trunc::{
    mask_from_rng, probabilistic_from_rng, trunc_floor, trunc_prob, trunc_share_local, Counting,
    Floor, Probabilistic, Truncator,
};
pub use value::{Fx, RangeError, FRAC_BITS, ONE_RAW, PRODUCT_BOUND_BITS, RING_BITS, STAT_SEC_BITS};
