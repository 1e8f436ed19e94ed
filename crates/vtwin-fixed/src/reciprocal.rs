//! Reciprocal and division with range normalisation and Goldschmidt factors (the value of
//! three Newton-Raphson steps in fewer MPC layers).
//!
//! Algorithm (every step is what the MPC computes; `t` is the truncation rule):
//! 1. `e = msb(x mod 2^64)` ([`crate::normalise`]); one-hot bits give the secret integers
//!    `p = 2^(63-e)`, `q_int = 2^(31-e)` if `e <= 31` else 0, `q_frac = 2^(63-e)` if `e >= 32`
//!    else 0.
//! 2. `m = t(x * p, 32)`: m in [0.5, 1] (exact when e <= 31); pre-truncation < 2^64.
//! 3. `y = 2.9142 - 2m` (local), `e = 1 - t(m * y)`, then 3 Goldschmidt factors
//!    `y = t(y * (1 + e))`, `e = t(e * e)` (the two in one MPC layer; the last `e` is not
//!    needed): `y0 (1 + e)(1 + e^2)(1 + e^4) = (1 - e^8) / m`, the value of 3 Newton-Raphson
//!    steps in 4 layers instead of 6. |1 - m y0| <= 0.0858, so the approximation error is
//!    0.0858^8 < 2^-28; unlike Newton-Raphson the factors do not correct earlier roundings,
//!    which add up to a few ulp of the mantissa.
//! 4. Scale back, `1/x = y * 2^(31-e)`: `y * q_int + t(y * q_frac, 32)` (one of the two terms is
//!    zero; the MPC computes both). Division `a / x` first forms `z = t(a * y)` and scales z.
//!
//! Truncation order (masks consumed): normalise 1, `e` 1, then per factor `y` before `e`
//! (2, 2, 1), then 1 for
//! [`Reciprocal::value`] or 2 for [`Reciprocal::divide`] and [`Reciprocal::divide_fraction`]
//! (per numerator).
//!
//! Error: the mantissa `y` has relative error below 2^-27 (measured max in
//! protocols/arithmetic.md). The result is then rounded to a multiple of 2^-32, so the
//! relative error of `1/x` is below 2^-20 only while `1/x >= 2^-11`, i.e. x <= 2^11; beyond,
//! the absolute error stays below 2 ulp (2^-31) but the relative error grows to x * 2^-31
//! (2^-15 at x = 2^16). Callers that need a/x with full relative precision use
//! [`Reciprocal::divide`] / [`divide`], which scales after multiplying.
//!
//! MPC cost ([`crate::cost::RECIPROCAL`], 3-party replicated sharing, ring 2^128): one
//! 64-bit normalisation (1149 AND gates, AND depth 9, 64 bit injections), then 9
//! multiplications (normalise 1, `e` 1, Goldschmidt 5, scale-back 2 in parallel), 8
//! truncations, 6 arithmetic rounds. Each further numerator ([`Reciprocal::divide`]) costs 3
//! multiplications, 2 truncations, 2 rounds.

use crate::domain::{check, DomainError};
use crate::normalise::{msb_in_window, pow2_if, scale_back};
use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS, ONE_RAW};

/// Bits decomposed for normalisation: inputs are read mod 2^64 (x < 2^32 as a real).
pub const RECIP_WINDOW_BITS: u32 = 64;
/// Goldschmidt factors `(1 + e^(2^i))`, worth as many Newton-Raphson steps.
pub const RECIP_ITERATIONS: u32 = 3;
/// `round(2.9142 * 2^32)`: intercept of the initial approximation `2.9142 - 2m` on [0.5, 1).
pub const RECIP_Y0_RAW: u128 = 12_516_393_694;
/// Smallest input of the documented accuracy range (2^-30).
pub const RECIP_MIN: f64 = 1.0 / 1_073_741_824.0;
/// Largest input of the documented accuracy range (2^16).
pub const RECIP_MAX: f64 = 65_536.0;
/// Division numerators must satisfy |a| < 2^22 (keeps `a * y` below 2^87).
pub const DIVIDE_NUMERATOR_LIMIT: f64 = 4_194_304.0;

/// The normalised reciprocal of `x`: mantissa `y ~ 1/m` with `m` in [0.5, 1] and the secret
/// scale `2^(31-e)`. Build once per `x`, then take [`Self::value`] or [`Self::divide`] (the
/// MPC computes one normalisation and mantissa per record, then one product per
/// numerator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reciprocal {
    /// Raw mantissa `y ~ 1/m`, in (1, 2] up to rounding (at most `2 + 2^-31`).
    pub mantissa: u128,
    /// `2^(31-e)` if e <= 31, else 0.
    pub scale_int: u128,
    /// `2^(63-e)` if e >= 32, else 0.
    pub scale_frac: u128,
}

impl Reciprocal {
    /// Checked: `x` must be positive and below 2^32 (accurate on [2^-30, 2^16], module docs).
    pub fn new<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Result<Self, DomainError> {
        check(
            x.signed() > 0 && x.signed() < 1i128 << RECIP_WINDOW_BITS,
            "reciprocal",
            "x",
            x,
            "(0, 2^32)",
        )?;
        Ok(Self::new_unchecked(x, t))
    }

    /// What the MPC computes for any ring element (garbage outside the domain, never panics).
    pub fn new_unchecked<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Self {
        let e = msb_in_window(x.0, RECIP_WINDOW_BITS);
        let (p, scale_int, scale_frac) = match e {
            None => (0, 0, 0),
            Some(e) => {
                let e = e as i32;
                (
                    1u128 << (63 - e),
                    pow2_if(e <= 31, 31 - e),
                    pow2_if(e >= 32, 63 - e),
                )
            }
        };
        let m = t.trunc(x.0.wrapping_mul(p), FRAC_BITS);
        let mut y = RECIP_Y0_RAW.wrapping_sub(m.wrapping_mul(2));
        let mut e = ONE_RAW.wrapping_sub(t.trunc(m.wrapping_mul(y), FRAC_BITS));
        let factor = |y: u128, e: u128, t: &mut T| {
            t.trunc(y.wrapping_mul(ONE_RAW.wrapping_add(e)), FRAC_BITS)
        };
        // The last factor needs no further e.
        for _ in 1..RECIP_ITERATIONS {
            y = factor(y, e, t);
            e = t.trunc(e.wrapping_mul(e), FRAC_BITS);
        }
        y = factor(y, e, t);
        Reciprocal {
            mantissa: y,
            scale_int,
            scale_frac,
        }
    }

    /// `1/x`. MPC: 2 multiplications (parallel), 1 truncation, 1 round.
    pub fn value<T: Truncator + ?Sized>(&self, t: &mut T) -> Fx {
        scale_back(self.mantissa, self.scale_int, self.scale_frac, t)
    }

    /// `a/x` for |a| < 2^22; relative error below 2^-20 whenever |a| >= 2^-11 and
    /// |a/x| >= 2^-11 (below that, both are quantised to 2^-32).
    /// MPC: 3 multiplications, 2 truncations, 2 rounds.
    pub fn divide<T: Truncator + ?Sized>(&self, a: Fx, t: &mut T) -> Fx {
        let z = t.trunc(a.0.wrapping_mul(self.mantissa), FRAC_BITS);
        scale_back(z, self.scale_int, self.scale_frac, t)
    }

    /// `a/x` for a fraction `0 <= a <= x` of the denominator (a responsibility): `a` is
    /// normalised like `x`, `a' = t(a p)` with `p = 2^(63-e) = 2^32 scale_int + scale_frac`
    /// (so `a' <= m + 2^-32 < 1`), then `t(a' y)`. Both truncated values stay below 2^64
    /// raw (`a p < 2^64` since `a <= x < 2^(e+1)`; `a' y < 2^65`); the result is within
    /// `2^-27 + 2^-31` of `a/x` absolute (the mantissa's relative error, below 2^-27 and
    /// measured at 2^-28.05, and two roundings; not relative: a tiny fraction loses relative
    /// precision), so at most `1 + 2^-27 + 2^-31`. MPC: 2 multiplications, 2 truncations, and 1 round after the mantissa,
    /// because `t(a p)` rides in the layer of `m = t(x p)`.
    pub fn divide_fraction<T: Truncator + ?Sized>(&self, a: Fx, t: &mut T) -> Fx {
        let scaled = self.normalise_fraction(a, t);
        self.times_mantissa(scaled, t)
    }

    /// The first half of [`Self::divide_fraction`]: `a' = t(a p)`, the fraction normalised
    /// like `x` (below `m + 2^-32 < 1` for `0 <= a <= x`). MPC: 1 truncation, in the layer of
    /// `m`.
    pub fn normalise_fraction<T: Truncator + ?Sized>(&self, a: Fx, t: &mut T) -> Fx {
        let p = (self.scale_int << FRAC_BITS).wrapping_add(self.scale_frac);
        Fx(t.trunc(a.0.wrapping_mul(p), FRAC_BITS))
    }

    /// `t(z y)`: a normalised value times the mantissa (the second half of
    /// [`Self::divide_fraction`]). MPC: 1 truncation, 1 round after the mantissa.
    pub fn times_mantissa<T: Truncator + ?Sized>(&self, z: Fx, t: &mut T) -> Fx {
        Fx(t.trunc(z.0.wrapping_mul(self.mantissa), FRAC_BITS))
    }

    /// `t(y^2) + 2^-32`: the squared mantissa rounded up (a truncation errs by less than one
    /// ulp, so the result exceeds `y^2`; the gradient circuit's score norm needs a value at
    /// least `y^2`, `protocols/clip-bound.md`). At most `y^2 + 2^-31`; 543 when `x = 0`
    /// (y = 23.3). MPC: 1 truncation in the layer of the quotients `t(a' y)`.
    pub fn mantissa_squared_up<T: Truncator + ?Sized>(&self, t: &mut T) -> Fx {
        Fx(
            t.trunc(self.mantissa.wrapping_mul(self.mantissa), FRAC_BITS)
                .wrapping_add(1),
        )
    }
}

/// `1/x` for x in (0, 2^32); accuracy as in the module docs.
pub fn reciprocal<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Result<Fx, DomainError> {
    Ok(Reciprocal::new(x, t)?.value(t))
}

/// `a / b` for b in (0, 2^32) and |a| < 2^22 (b is normalised, a is not).
pub fn divide<T: Truncator + ?Sized>(a: Fx, b: Fx, t: &mut T) -> Result<Fx, DomainError> {
    check(
        a.signed().unsigned_abs() < 1u128 << 54,
        "divide",
        "a",
        a,
        "(-2^22, 2^22)",
    )?;
    Ok(Reciprocal::new(b, t)?.divide(a, t))
}
