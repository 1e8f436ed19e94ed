//! Inverse square root with range normalisation (exponent parity handled by normalising to
//! an even power of two) and Newton-Raphson.
//!
//! Algorithm (every step is what the MPC computes; `t` is the truncation rule):
//! 1. `e = msb(x mod 2^80)`; `s = 31 - e`, minus one if odd (so `s` is even, in [-48, 30]);
//!    one-hot bits give `p = 2^(s+48)`, `q_int = 2^(s/2)` if s >= 0 else 0,
//!    `q_frac = 2^(32+s/2)` if s < 0 else 0.
//! 2. `h = t(x * p, 49)` = m/2 where `m = x 2^s` is in [0.25, 1): h in [0.125, 0.5];
//!    pre-truncation < 2^80.
//! 3. `y = 2.132768 - t(2.43744 * h)` (relative minimax line for 1/sqrt(m) on [0.25, 1],
//!    |1 - y0 sqrt(m)| <= 0.0860), then 3 Newton-Raphson steps `y (1.5 - h y^2)`, each in
//!    two MPC layers: `a = t(y * y)`, `b = t(h * y)`, `c = t(1.5 * y)`, then
//!    `y = c - t(b * a)`; error after 3 steps about 1.5^7 0.086^8 < 2^-24.
//! 4. Scale back, `1/sqrt(x) = y 2^(s/2)`: `y q_int + t(y q_frac, 32)`; `a/sqrt(x)` first forms
//!    `z = t(a y)`.
//!
//! Truncation order: normalise 1, initial 1, Newton-Raphson 12 (per step a, b, c, then
//! `t(b a)`), then 1 ([`InvSqrt::value`]) or 2 ([`InvSqrt::mul`]).
//!
//! Error: the mantissa has relative error below 2^-22; `1/sqrt(x)` is then rounded to a
//! multiple of 2^-32, so its relative error is below 2^-20 while 1/sqrt(x) >= 2^-11 (x <= 2^22)
//! and its absolute error below 2^-31 beyond (relative x^(1/2) 2^-31, 2^-11 at x = 2^40). The
//! clip factor and any `a/sqrt(x)` use [`InvSqrt::mul`], which keeps the relative precision.
//!
//! MPC cost ([`crate::cost::INV_SQRT`]): one 80-bit normalisation (1532 AND gates, AND depth
//! 10, 80 bit injections), then 12 multiplications (normalise 1, Newton-Raphson 9, scale-back
//! 2), 15 truncations (the public constants of the initial line and of `1.5 y` add four), 9
//! arithmetic rounds.

use crate::domain::{check, DomainError};
use crate::normalise::{msb_in_window, pow2_if, scale_back};
use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS};

/// Bits decomposed for normalisation: inputs are read mod 2^80 (x < 2^48 as a real).
pub const RSQRT_WINDOW_BITS: u32 = 80;
/// Newton-Raphson iterations.
pub const RSQRT_ITERATIONS: u32 = 3;
/// `round(2.132768 * 2^32)`: intercept of the initial line.
pub const RSQRT_Y0_A_RAW: u128 = 9_160_168_810;
/// `round(2 * 1.21872 * 2^32)`: slope of the initial line in terms of h = m/2.
pub const RSQRT_Y0_B_RAW: u128 = 10_468_725_086;
/// `1.5 * 2^32`, the constant of the Newton-Raphson step.
pub const RSQRT_THREE_HALVES_RAW: u128 = 6_442_450_944;
/// Shift of the normalisation truncation (h = m / 2 = t(x p, 49)).
pub const RSQRT_NORM_SHIFT: u32 = 49;
/// Smallest input of the documented accuracy range (2^-30).
pub const RSQRT_MIN: f64 = 1.0 / 1_073_741_824.0;
/// Largest input of the documented accuracy range (2^40).
pub const RSQRT_MAX: f64 = 1_099_511_627_776.0;
/// Multipliers `a` of [`InvSqrt::mul`] and clip bounds must satisfy |a| < 2^22.
pub const RSQRT_MULTIPLIER_LIMIT: f64 = 4_194_304.0;

/// The normalised inverse square root of `x`: mantissa `y ~ 1/sqrt(m)`, m in [0.25, 1), and
/// the secret scale 2^(s/2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvSqrt {
    /// Raw mantissa `y ~ 1/sqrt(m)`, in (1, 2].
    pub mantissa: u128,
    /// `2^(s/2)` if s >= 0, else 0.
    pub scale_int: u128,
    /// `2^(32+s/2)` if s < 0, else 0.
    pub scale_frac: u128,
}

impl InvSqrt {
    /// Checked: `x` must be positive and below 2^48 (accurate on [2^-30, 2^40]).
    pub fn new<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Result<Self, DomainError> {
        check(
            x.signed() > 0 && x.signed() < 1i128 << RSQRT_WINDOW_BITS,
            "inv_sqrt",
            "x",
            x,
            "(0, 2^48)",
        )?;
        Ok(Self::new_unchecked(x, t))
    }

    /// What the MPC computes for any ring element (garbage outside the domain, never panics).
    pub fn new_unchecked<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Self {
        Self::new_unchecked_steps(x, RSQRT_ITERATIONS, t)
    }

    /// [`InvSqrt::new_unchecked`] with `steps` Newton-Raphson steps instead of
    /// [`RSQRT_ITERATIONS`]. Every step lands at or below `1/sqrt(m)` in exact arithmetic,
    /// whatever it starts from (with `u = y sqrt(m)`, `1 - (1.5 u - 0.5 u^3) = 0.5 (u - 1)^2
    /// (u + 2) >= 0` for `u >= -2`), so fewer steps only lower the mantissa: relative error up
    /// to 2^-12.33 after 2 steps (the line's 0.086 at its worst sign), 2^-24 after 3.
    pub fn new_unchecked_steps<T: Truncator + ?Sized>(x: Fx, steps: u32, t: &mut T) -> Self {
        let (p, scale_int, scale_frac) = match msb_in_window(x.0, RSQRT_WINDOW_BITS) {
            None => (0, 0, 0),
            Some(e) => {
                let mut s = 31 - e as i32;
                if s % 2 != 0 {
                    s -= 1;
                }
                let j = s / 2;
                (
                    1u128 << (s + 48),
                    pow2_if(j >= 0, j),
                    pow2_if(j < 0, 32 + j),
                )
            }
        };
        let h = t.trunc(x.0.wrapping_mul(p), RSQRT_NORM_SHIFT);
        let mut y = RSQRT_Y0_A_RAW.wrapping_sub(t.trunc(RSQRT_Y0_B_RAW.wrapping_mul(h), FRAC_BITS));
        for _ in 0..steps {
            let a = t.trunc(y.wrapping_mul(y), FRAC_BITS);
            let b = t.trunc(h.wrapping_mul(y), FRAC_BITS);
            let c = t.trunc(y.wrapping_mul(RSQRT_THREE_HALVES_RAW), FRAC_BITS);
            y = c.wrapping_sub(t.trunc(b.wrapping_mul(a), FRAC_BITS));
        }
        InvSqrt {
            mantissa: y,
            scale_int,
            scale_frac,
        }
    }

    /// `1/sqrt(x)`. MPC: 2 multiplications (parallel), 1 truncation, 1 round.
    pub fn value<T: Truncator + ?Sized>(&self, t: &mut T) -> Fx {
        scale_back(self.mantissa, self.scale_int, self.scale_frac, t)
    }

    /// `a/sqrt(x)` for |a| < 2^22; relative error below 2^-20 whenever |a| >= 2^-11 and
    /// |a/sqrt(x)| >= 2^-11. MPC: 3 multiplications, 2 truncations, 2 rounds.
    pub fn mul<T: Truncator + ?Sized>(&self, a: Fx, t: &mut T) -> Fx {
        let z = t.trunc(a.0.wrapping_mul(self.mantissa), FRAC_BITS);
        scale_back(z, self.scale_int, self.scale_frac, t)
    }
}

/// `1/sqrt(x)` for x in (0, 2^48); accuracy as in the module docs.
pub fn inv_sqrt<T: Truncator + ?Sized>(x: Fx, t: &mut T) -> Result<Fx, DomainError> {
    Ok(InvSqrt::new(x, t)?.value(t))
}
