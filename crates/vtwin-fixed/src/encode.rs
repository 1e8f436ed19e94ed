//! Encoding `f64 -> Fx` (round to nearest, ties to even) and decoding back.

use crate::value::{Fx, FRAC_BITS};

/// Largest magnitude accepted by [`Fx::from_f64`], exclusive: |v| < 2^63.
///
/// Why 2^63: the raw value is then below 2^95, so any sum of up to 2^32 encoded values is
/// exact in the signed 128-bit ring (no wrap), and `I32F32`-sized inputs are far inside.
pub const ENCODE_LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63

/// Maximum absolute encoding error: half an ulp, 2^-33.
pub const ENCODE_MAX_ABS_ERROR: f64 = 1.0 / 8_589_934_592.0; // 2^-33

const SCALE: f64 = (1u64 << FRAC_BITS) as f64;

/// Why an `f64` could not be encoded. Nothing is ever wrapped silently.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// NaN or an infinity.
    #[error("cannot encode {value}: not a finite number")]
    NotFinite {
        /// The offending value.
        value: f64,
    },
    /// |value| >= 2^63 ([`ENCODE_LIMIT`]).
    #[error("cannot encode {value}: magnitude must be below 2^63")]
    OutOfRange {
        /// The offending value.
        value: f64,
    },
}

/// An element of a slice could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("element {index}: {source}")]
#[non_exhaustive]
pub struct SliceEncodeError {
    /// Index of the first bad element.
    pub index: usize,
    /// What was wrong with it.
    pub source: EncodeError,
}

impl Fx {
    /// Encodes `v` as `round_ties_even(v * 2^32)`.
    ///
    /// Range: |v| < 2^63. Error: |decode(encode(v)) - v| <= 2^-33 (the multiplication by
    /// 2^32 is exact in f64, so the only rounding is the final one). Cost: local (a party
    /// encodes its own input before sharing it).
    pub fn from_f64(v: f64) -> Result<Fx, EncodeError> {
        if !v.is_finite() {
            return Err(EncodeError::NotFinite { value: v });
        }
        if v.abs() >= ENCODE_LIMIT {
            return Err(EncodeError::OutOfRange { value: v });
        }
        Ok(Fx::from_signed(round_to_integer(v * SCALE)))
    }

    /// Decodes to the nearest `f64` (exact when |raw| < 2^53, i.e. |v| < 2^21).
    pub fn to_f64(self) -> f64 {
        self.signed() as f64 / SCALE
    }
}

/// `x.round_ties_even()` as an integer, for |x| < 2^95 (`x` is `v 2^32`, exact).
///
/// Below 2^51 (every |v| < 2^19, so every model value) without the `roundeven` and
/// float-to-i128 library calls (3.9x faster encoding, docs/component-costs.md): adding and
/// subtracting 1.5 2^52 lands on the integers (ulp 1 in [2^52, 2^53]) with IEEE double
/// rounding to nearest, ties to even, and the result converts exactly through i64. The same
/// integer as the library path for every input (`tests/encode.rs`). Not on x87 (32-bit x86
/// without SSE2), whose extended precision would round twice.
#[inline]
fn round_to_integer(x: f64) -> i128 {
    const TWO_51: f64 = 2_251_799_813_685_248.0;
    const ROUNDER: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    const X87: bool = cfg!(all(target_arch = "x86", not(target_feature = "sse2")));
    if !X87 && x.abs() < TWO_51 {
        ((x + ROUNDER) - ROUNDER) as i64 as i128
    } else {
        // |x| < 2^95: the conversion to i128 cannot saturate.
        x.round_ties_even() as i128
    }
}

/// Encodes every element; the error names the first bad index.
pub fn encode_slice(values: &[f64]) -> Result<Vec<Fx>, SliceEncodeError> {
    values
        .iter()
        .enumerate()
        .map(|(index, &v)| Fx::from_f64(v).map_err(|source| SliceEncodeError { index, source }))
        .collect()
}

/// Decodes every element.
pub fn decode_slice(values: &[Fx]) -> Vec<f64> {
    values.iter().map(|v| v.to_f64()).collect()
}
