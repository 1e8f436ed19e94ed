//! `exp(x)` for x in [-64, 0], as `2^(x log2 e)` split into integer and fractional parts.
//!
//! Algorithm (what the MPC computes):
//! 1. `u = t(x * round(log2(e) 2^32))`, u in [-92.4, 0]; pre-truncation < 2^71.
//! 2. Bit-decompose `u` (39 bits suffice: 32 fractional + 7 integer, after adding the
//!    public offset 128): `n = floor(u)` in [-93, 0] and `f = u - n` in [0, 1), exactly.
//! 3. `p = P(f) ~ 2^f` by Horner, degree 7, least-squares fit on Chebyshev nodes (fit error
//!    4.5e-11 relative, 2^-34.4); coefficients rounded to 2^-32; 7 truncations.
//! 4. `exp(x) = p 2^n = t(p * q)` with `q = 2^(32+n)` for n >= -32, else 0 (one-hot of the 7
//!    integer bits, public coefficients).
//!
//! Truncation order: 1 (step 1), 7 (Horner, highest degree first), 1 (step 4): 9 in all.
//!
//! Error: absolute error at most a few ulp (measured in protocols/arithmetic.md); relative
//! error below 2^-20 while exp(x) >= 2^-11 (x >= -7.6); below that the value is quantised to
//! 2^-32: with floor truncation it is 0 once exp(x) < 2^-32 (x < -22.18). A log-domain caller
//! therefore rescales first (paper Algorithm 4, [`crate::paper`]).
//!
//! MPC cost ([`crate::cost::EXP`]): 8 multiplications (7 Horner + 1 scale; the log2(e)
//! product is by a public constant), 9 truncations, 9 arithmetic rounds, plus one 39-bit
//! arithmetic-to-binary conversion, a one-hot decode of the 7 integer bits and the bit
//! injections of f (32 bits) and of the 33 one-hot outputs used.

use crate::domain::{check, DomainError};
use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS, ONE_RAW};

/// Smallest accepted input.
pub const EXP_MIN: f64 = -64.0;
/// `round(log2(e) * 2^32)`.
pub const LOG2E_RAW: u128 = 6_196_328_019;
/// Coefficients of P(f) ~ 2^f on [0, 1), constant term first, raw at scale 2^32.
pub const EXP2_COEFFS_RAW: [u128; 8] = [
    4_294_967_296,
    2_977_044_492,
    1_031_764_510,
    238_392_467,
    41_292_504,
    5_764_157,
    616_974,
    92_193,
];

/// `exp(x)` for x in [-64, 0].
pub fn exp<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Result<Fx, DomainError> {
    check(
        x.signed() <= 0 && x.signed() >= -64i128 << FRAC_BITS,
        "exp",
        "x",
        x,
        "[-64, 0]",
    )?;
    Ok(exp_unchecked(x, t))
}

/// What the MPC computes for any ring element (garbage outside [-64, 0], never panics).
pub fn exp_unchecked<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Fx {
    let u = t.trunc(x.0.wrapping_mul(LOG2E_RAW), FRAC_BITS);
    let n = (u as i128) >> FRAC_BITS;
    let f = u & (ONE_RAW - 1);
    let mut p = EXP2_COEFFS_RAW[EXP2_COEFFS_RAW.len() - 1];
    for &c in EXP2_COEFFS_RAW.iter().rev().skip(1) {
        p = t.trunc(p.wrapping_mul(f), FRAC_BITS).wrapping_add(c);
    }
    let q = if (-32..=0).contains(&n) {
        1u128 << (32 + n)
    } else {
        0
    };
    Fx(t.trunc(p.wrapping_mul(q), FRAC_BITS))
}
