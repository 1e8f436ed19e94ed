//! The clipping factor `min(1, C / sqrt(x))` of DP-SGD, with `x = |g|^2`, rounded so that it
//! never exceeds the exact factor by more than a relative [`CLIP_REL_EXCESS`].
//!
//! Computed as the MPC does: `over = [x > C^2]` (one comparison: the sign bit of
//! `floor(C_raw^2 / 2^32) - x`, public threshold), `s = C / sqrt(x)` by
//! [`InvSqrt::mul`](crate::InvSqrt::mul), then `1 + over * (s - gamma - 1)` (one
//! multiplication by a bit, no truncation), with the public `gamma` of [`clip_rounding_slack`].
//! For x = 0 the normalisation is all zeros, `s` is garbage and `over` is 0, so the factor
//! is exactly 1.
//!
//! Comparison: `x > floor(C_raw^2 / 2^32)` on integers is exactly `x > C^2` on the encoded
//! reals, so the factor is exactly 1 whenever |g| <= C.
//!
//! Why `gamma`: `s` is `C y 2^(-s/2)` with the mantissa `y` (above `1/sqrt(m)` by less than
//! a relative 2^-22, rounding only: with [`CLIP_RSQRT_ITERATIONS`] = 2 Newton-Raphson steps
//! the approximation error, up to 2^-12.33, is all below) and two roundings of one ulp each, the first one scaled by `2^(j)` with `2^j <= 1/C` when
//! `x > C^2`. So `s <= (C/sqrt(x)) (1 + 2^-22) + (1 + 1/C) 2^-32`; subtracting
//! `gamma >= (1 + 1/C) 2^-32` leaves only the relative excess. For a tiny factor (x near
//! 2^48, C/sqrt(x) ~ 2^-24) the absolute rounding is a large relative error, and without
//! `gamma` the clipped norm `factor * sqrt(x)` could exceed C by ~2^-7; with it the factor
//! rounds down there instead (over-clipping, which is safe). Bound used by
//! `clip_bound`: `factor <= max(1 [x <= C^2], (1 + 2^-21) C / sqrt(x))`, tested over every
//! exponent branch of the inverse square root (`tests/clip.rs`).
//!
//! MPC cost ([`crate::cost::CLIP_FACTOR`]): the 80-bit normalisation, 10 multiplications
//! (normalise 1, Newton-Raphson 6, scale-back 2, select 1; `C * y` is local because C is
//! public), 12 truncations, 1 comparison in parallel; 9 arithmetic rounds. `gamma` is a
//! local public subtraction.

use crate::domain::{check, DomainError};
use crate::inv_sqrt::InvSqrt;
use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS, ONE_RAW};

/// Newton-Raphson steps of the clip factor's inverse square root: 2, one fewer than
/// [`crate::inv_sqrt::RSQRT_ITERATIONS`] (2 MPC rounds fewer). After the first step the
/// mantissa approaches `1/sqrt(m)` from below, so the missing step lowers the factor by up to
/// a relative 2^-12.33 (2^-12.29 measured; over-clipping, never more) and leaves the upper bound as it was.
pub const CLIP_RSQRT_ITERATIONS: u32 = 2;

/// Largest accepted x (exclusive): 2^48.
pub const CLIP_X_LIMIT: f64 = 281_474_976_710_656.0;

/// Relative excess the factor may have over `C / sqrt(x)` when it clips (2^-21): the
/// mantissa's 2^-22 with room to spare; enforced by tests over the whole domain.
pub const CLIP_REL_EXCESS: f64 = 1.0 / 2_097_152.0;

/// The public rounding slack `gamma` (raw ulps) subtracted from `C / sqrt(x)` (a factor below
/// `gamma` ulps can come out negative, still within the bound in absolute value):
/// `1 + ceil(1 / C)` ulps, which covers the two truncations of the scale-back for every
/// `x > C^2` (module docs). 2 ulps for C >= 1. `c` must be positive.
pub fn clip_rounding_slack(c: Fx) -> u128 {
    let c_raw = c.raw().max(1);
    // (1/C) 2^-32 as a real is 1/C ulps = 2^32 / c_raw ulps.
    1 + ONE_RAW.div_ceil(c_raw)
}

/// `min(1, c / sqrt(x))` for x in [0, 2^48) and c in (0, 2^22), rounded down as in the
/// module docs.
pub fn clip_factor<T: Truncator + ?Sized>(x: Fx, c: Fx, t: &mut T) -> Result<Fx, DomainError> {
    check(
        x.signed() >= 0 && x.signed() < 1i128 << 80,
        "clip_factor",
        "x",
        x,
        "[0, 2^48)",
    )?;
    check(
        c.signed() > 0 && c.signed() < 1i128 << 54,
        "clip_factor",
        "c",
        c,
        "(0, 2^22)",
    )?;
    Ok(clip_factor_unchecked(x, c, t))
}

/// What the MPC computes for any ring elements (never panics).
pub fn clip_factor_unchecked<T: Truncator + ?Sized>(x: Fx, c: Fx, t: &mut T) -> Fx {
    let threshold = Fx((c.0.wrapping_mul(c.0) as i128 >> FRAC_BITS) as u128);
    let over = (threshold - x).is_negative();
    let s = InvSqrt::new_unchecked_steps(x, CLIP_RSQRT_ITERATIONS, t).mul(c, t);
    let slack = Fx(clip_rounding_slack(c));
    Fx::ONE + (s - slack - Fx::ONE).mul_int(i128::from(over))
}
