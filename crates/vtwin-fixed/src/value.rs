//! The ring element [`Fx`]: a fixed-point number with [`FRAC_BITS`] fractional bits stored
//! in Z_2^128 (`u128`, wrapping), read as two's complement.

use std::fmt;
use std::ops::{Add, AddAssign, Neg, Sub, SubAssign};

use fixed::types::I32F32;

/// Number of fractional bits: a real value `v` is stored as `round(v * 2^32)`.
pub const FRAC_BITS: u32 = 32;
/// Ring size in bits: values live in Z_2^128.
pub const RING_BITS: u32 = 128;
/// Statistical security parameter (bits) for probabilistic truncation: each truncation of a
/// value within [`PRODUCT_BOUND_BITS`] fails with probability below 2^-STAT_SEC_BITS.
pub const STAT_SEC_BITS: u32 = 40;
/// Pre-truncation bound: a product (or sum of products) `X` with `|X| < 2^87` (raw, i.e. a
/// real value below 2^23 = 8,388,608) is truncated by the probabilistic truncation with
/// failure probability `|X| / 2^128 < 2^-41`. This is the bound every caller must respect.
pub const PRODUCT_BOUND_BITS: u32 = RING_BITS - STAT_SEC_BITS - 1;
/// The raw encoding of 1.0.
pub const ONE_RAW: u128 = 1 << FRAC_BITS;

/// A fixed-point value: `raw` is `round(v * 2^32)` reduced mod 2^128.
///
/// Arithmetic on `Fx` is ring arithmetic (wrapping), exactly as the MPC computes it on
/// shares; nothing here panics on overflow. Bounds that keep results meaningful are
/// documented on each operation and checked by the `*_checked` variants.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fx(pub u128);

/// A value does not fit the requested representation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RangeError {
    /// The value does not fit `I32F32` (needs |v| < 2^31).
    #[error("fixed-point value {value} does not fit I32F32 (|v| < 2^31)")]
    NotI32F32 {
        /// The value, decoded.
        value: f64,
    },
    /// A product (or accumulated sum of products) exceeds the truncation bound 2^87 (raw).
    #[error("product {value} exceeds the truncation bound 2^23 (raw 2^{bits})")]
    ProductTooLarge {
        /// The exact product, decoded (approximate if huge).
        value: f64,
        /// The bound in raw bits ([`PRODUCT_BOUND_BITS`]).
        bits: u32,
    },
}

impl Fx {
    /// 0.0.
    pub const ZERO: Fx = Fx(0);
    /// 1.0.
    pub const ONE: Fx = Fx(ONE_RAW);

    /// Wraps a raw ring element.
    pub const fn from_raw(raw: u128) -> Fx {
        Fx(raw)
    }

    /// The raw ring element.
    pub const fn raw(self) -> u128 {
        self.0
    }

    /// The raw value read as two's complement (`round(v * 2^32)` for an encoded `v`).
    pub const fn signed(self) -> i128 {
        self.0 as i128
    }

    /// From a signed raw value (`v * 2^32`), reduced mod 2^128.
    pub const fn from_signed(raw: i128) -> Fx {
        Fx(raw as u128)
    }

    /// The integer `n` as a fixed-point value, reduced mod 2^128 (exact for |n| < 2^95).
    pub const fn from_int(n: i64) -> Fx {
        Fx(((n as i128) << FRAC_BITS) as u128)
    }

    /// Multiplies by a public integer: no truncation needed, ring arithmetic.
    pub const fn mul_int(self, k: i128) -> Fx {
        Fx(self.0.wrapping_mul(k as u128))
    }

    /// True when the two's-complement sign bit is set (see [`crate::compare`]).
    pub const fn is_negative(self) -> bool {
        self.0 >> (RING_BITS - 1) == 1
    }

    /// Converts to `I32F32` (same scale); errors when |v| >= 2^31.
    pub fn to_i32f32(self) -> Result<I32F32, RangeError> {
        i64::try_from(self.signed())
            .map(I32F32::from_bits)
            .map_err(|_| RangeError::NotI32F32 {
                value: self.to_f64(),
            })
    }
}

impl From<I32F32> for Fx {
    /// Exact: `I32F32` has the same 32 fractional bits.
    fn from(v: I32F32) -> Fx {
        Fx::from_signed(i128::from(v.to_bits()))
    }
}

impl fmt::Debug for Fx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fx({} = {:#x})", self.to_f64(), self.0)
    }
}

impl fmt::Display for Fx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_f64())
    }
}

impl Add for Fx {
    type Output = Fx;
    fn add(self, rhs: Fx) -> Fx {
        Fx(self.0.wrapping_add(rhs.0))
    }
}

impl AddAssign for Fx {
    fn add_assign(&mut self, rhs: Fx) {
        self.0 = self.0.wrapping_add(rhs.0);
    }
}

impl Sub for Fx {
    type Output = Fx;
    fn sub(self, rhs: Fx) -> Fx {
        Fx(self.0.wrapping_sub(rhs.0))
    }
}

impl SubAssign for Fx {
    fn sub_assign(&mut self, rhs: Fx) {
        self.0 = self.0.wrapping_sub(rhs.0);
    }
}

impl Neg for Fx {
    type Output = Fx;
    fn neg(self) -> Fx {
        Fx(self.0.wrapping_neg())
    }
}
