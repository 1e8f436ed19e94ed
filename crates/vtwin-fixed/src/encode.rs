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
        // |v * 2^32| < 2^95: the conversion to i128 cannot saturate.
        let raw = (v * SCALE).round_ties_even() as i128;
        Ok(Fx::from_signed(raw))
    }

    /// Decodes to the nearest `f64` (exact when |raw| < 2^53, i.e. |v| < 2^21).
    pub fn to_f64(self) -> f64 {
        self.signed() as f64 / SCALE
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
