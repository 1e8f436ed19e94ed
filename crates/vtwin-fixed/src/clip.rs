//! The clipping factor `min(1, C / sqrt(x))` of DP-SGD, with `x = |g|^2`.
//!
//! Computed as the MPC does: `over = [x > C^2]` (one comparison: the sign bit of
//! `floor(C_raw^2 / 2^32) - x`, public threshold), `s = C / sqrt(x)` by
//! [`InvSqrt::mul`](crate::InvSqrt::mul), then `1 + over * (s - 1)` (one multiplication by a
//! bit, no truncation). For x = 0 the normalisation is all zeros, `s` is garbage and `over`
//! is 0, so the factor is exactly 1.
//!
//! Comparison: `x > floor(C_raw^2 / 2^32)` on integers is exactly `x > C^2` on the encoded
//! reals, so the factor is exactly 1 whenever |g| <= C.
//!
//! Error: when x > C^2 the factor is C/sqrt(x) with relative error below 2^-20 while
//! C/sqrt(x) >= 2^-11 (measured max in protocols/arithmetic.md). The clipped norm
//! `factor * sqrt(x)` can exceed C by that relative error: a DP layer that needs a hard
//! bound uses sensitivity `C (1 + 2^-20)` or passes `C (1 - 2^-20)` here.
//!
//! MPC cost ([`crate::cost::CLIP_FACTOR`]): the 80-bit normalisation, 13 multiplications
//! (normalise 1, Newton-Raphson 9, scale-back 2, select 1; `C * y` is local because C is
//! public), 13 truncations, 1 comparison in parallel; 14 arithmetic rounds.

use crate::domain::{check, DomainError};
use crate::inv_sqrt::InvSqrt;
use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS};

/// Largest accepted x (exclusive): 2^48.
pub const CLIP_X_LIMIT: f64 = 281_474_976_710_656.0;

/// `min(1, c / sqrt(x))` for x in [0, 2^48) and c in (0, 2^22).
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
    let s = InvSqrt::new_unchecked(x, t).mul(c, t);
    Fx::ONE + (s - Fx::ONE).mul_int(i128::from(over))
}
