//! The map between a field's text in original units and its encoded value, and back.
//!
//! Encoding rules (all from the public schema, never from the data):
//! - Continuous, real-valued, bounds `[min, max]`: `u = EPS + (1 - 2 EPS) (x - min) / (max - min)`
//!   with [`UNIT_EPS`] = 1e-6, so `u` lies in the closed interval `[EPS, 1 - EPS]`, strictly
//!   inside (0,1) where every Beta log-density is finite. Decoding inverts the affine map and
//!   clamps to `[min, max]`; `decode(encode(x))` is within a few ulps of `x`, and encodes back
//!   to exactly the same `u` (see [`value_from_unit`]).
//! - Continuous, integer-valued: the integers `min..=max` are the `W = max - min + 1` equal
//!   cells of (0,1) and `x` maps to its cell's centre, `u = (x - min + 1/2) / W` (a continuity
//!   correction; `u` is in `[1/(2W), 1 - 1/(2W)]`). Decoding is `x = min + floor(u W)` clamped to
//!   `[min, max]`, which is exact for cell centres, so integer columns round-trip exactly, and a
//!   Beta sample decodes to the integer whose cell it falls in (the Beta mass of that cell).
//! - Categorical: the index of the category in the schema's list.
//! - Binned with edges `e_0 < ... < e_m`: the index `i` with `e_i <= x < e_{i+1}`, the last bin
//!   closed (`x = e_m` is in bin `m - 1`). The model knows nothing within a bin, so decoding
//!   writes the bin's representative: its midpoint, or for an integer column the lower middle of
//!   the integers it holds (bin `[0, 1)` writes 0). Encoding the representative gives the bin back.

use std::fmt;

use crate::schema::{integer_bin_range, ColumnKind};

/// The margin that keeps scaled real-valued columns strictly inside (0,1).
pub const UNIT_EPS: f64 = 1e-6;

/// One encoded field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Encoded {
    /// A continuous value scaled into (0,1).
    Unit(f64),
    /// A category or bin index.
    Index(u32),
}

/// Why a field's text is not a valid value of its column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// Not a number where a number is expected.
    #[error("\"{value}\" is not a number")]
    NotNumeric {
        /// The field text.
        value: String,
    },
    /// NaN or infinite.
    #[error("\"{value}\" is not finite")]
    NotFinite {
        /// The field text.
        value: String,
    },
    /// A non-integer in an integer column.
    #[error("\"{value}\" is not an integer")]
    NotInteger {
        /// The field text.
        value: String,
    },
    /// Outside the public bounds (or outside the outer bin edges).
    #[error("{value} is outside the public bounds [{min}, {max}]")]
    OutOfBounds {
        /// The field text.
        value: String,
        /// Public lower bound.
        min: f64,
        /// Public upper bound.
        max: f64,
    },
    /// Not one of the schema's categories.
    #[error("unknown category \"{value}\" (expected one of {expected})")]
    UnknownCategory {
        /// The field text.
        value: String,
        /// The first few expected categories, for the message.
        expected: Expected,
    },
}

/// A short rendering of a category list for error messages (at most 8 names).
#[derive(Debug, Clone, PartialEq)]
pub struct Expected(pub Vec<String>, pub usize);

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self.0.iter().map(|c| format!("\"{c}\"")).collect();
        write!(f, "{}", shown.join(", "))?;
        if self.1 > self.0.len() {
            write!(f, ", ... ({} in all)", self.1)?;
        }
        Ok(())
    }
}

/// Encodes a field (already trimmed, suffix stripped, not a missing marker). Cost O(1) for
/// continuous, O(log m) for binned, O(categories) for categorical.
pub fn encode(kind: &ColumnKind, field: &str) -> Result<Encoded, ValueError> {
    match kind {
        ColumnKind::Continuous {
            min, max, integer, ..
        } => {
            let x = parse_number(field, *integer)?;
            if x < *min || x > *max {
                return Err(ValueError::OutOfBounds {
                    value: excerpt(field),
                    min: *min,
                    max: *max,
                });
            }
            Ok(Encoded::Unit(unit_from_value(*min, *max, *integer, x)))
        }
        ColumnKind::Categorical { categories } => categories
            .iter()
            .position(|c| c == field)
            .map(|i| Encoded::Index(i as u32))
            .ok_or_else(|| ValueError::UnknownCategory {
                value: excerpt(field),
                expected: Expected(
                    categories.iter().take(8).cloned().collect(),
                    categories.len(),
                ),
            }),
        ColumnKind::Binned { edges, integer } => {
            let x = parse_number(field, *integer)?;
            bin_of(edges, x)
                .map(|i| Encoded::Index(i as u32))
                .ok_or_else(|| ValueError::OutOfBounds {
                    value: excerpt(field),
                    min: edges[0],
                    max: edges[edges.len() - 1],
                })
        }
    }
}

/// The text in original units of an encoded value (integers without a decimal point; reals in
/// Rust's shortest round-trip form). Panics if the variant does not fit the kind or an index
/// is out of range: callers hold tables validated against the same schema.
pub fn decode(kind: &ColumnKind, value: Encoded) -> String {
    match (kind, value) {
        (
            ColumnKind::Continuous {
                min, max, integer, ..
            },
            Encoded::Unit(u),
        ) => format_number(value_from_unit(*min, *max, *integer, u)),
        (ColumnKind::Categorical { categories }, Encoded::Index(i)) => {
            categories[i as usize].clone()
        }
        (ColumnKind::Binned { edges, integer }, Encoded::Index(i)) => {
            format_number(bin_representative(edges, *integer, i as usize))
        }
        (kind, value) => panic!("encoded value {value:?} does not fit column kind {kind:?}"),
    }
}

/// Scales `x` in `[min, max]` into (0,1) by the rule in the module documentation.
pub fn unit_from_value(min: f64, max: f64, integer: bool, x: f64) -> f64 {
    if integer {
        let width = max - min + 1.0;
        (x - min + 0.5) / width
    } else {
        UNIT_EPS + (1.0 - 2.0 * UNIT_EPS) * (x - min) / (max - min)
    }
}

/// The cell `j = floor(u W)` (clamped to `0..W`) of an encoded integer value `u` among the
/// `W` equal cells of (0,1): the value `min + j`, the same integer [`value_from_unit`] decodes.
/// Exact for cell centres. Cost O(1).
pub fn unit_cell(u: f64, cells: usize) -> usize {
    ((u * cells as f64).floor().max(0.0) as usize).min(cells.saturating_sub(1))
}

/// Maps `u` in [0,1] back to `[min, max]` (inverse of [`unit_from_value`], clamped; integer
/// columns give the integer whose cell holds `u`).
///
/// For a real-valued column, if `u` is the encoding of some f64 `x` (as every value loaded or
/// sampled by this crate is), the result `y` satisfies `unit_from_value(y) == u` exactly, so
/// encoded tables round-trip bit-exactly through their CSV text. The affine inverse usually is
/// such a `y`; otherwise the f64s of `[min, max]` are bisected (in their total order), which
/// works because `unit_from_value` is a composition of correctly rounded monotone operations
/// and hence monotone. A `u` with no preimage gets the affine inverse. Cost O(1), at worst 64
/// extra evaluations of the encoding.
pub fn value_from_unit(min: f64, max: f64, integer: bool, u: f64) -> f64 {
    if integer {
        let width = max - min + 1.0;
        return (min + (u * width).floor()).clamp(min, max);
    }
    let t = ((u - UNIT_EPS) / (1.0 - 2.0 * UNIT_EPS)).clamp(0.0, 1.0);
    let x0 = (min + t * (max - min)).clamp(min, max);
    let enc = |x: f64| unit_from_value(min, max, false, x);
    if enc(x0) == u {
        return x0;
    }
    // Smallest key in [key(min), key(max)] whose value encodes to >= u.
    let (mut lo, mut hi) = (order_key(min), order_key(max));
    if enc(max) < u {
        return x0;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if enc(from_order_key(mid)) >= u {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let y = from_order_key(lo);
    if enc(y) == u {
        y
    } else {
        x0
    }
}

/// A u64 whose unsigned order is the numeric order of finite f64s (-0.0 just below 0.0).
fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 0 {
        b | (1 << 63)
    } else {
        !b
    }
}

fn from_order_key(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

/// The bin holding `x` (`e_i <= x < e_{i+1}`, last bin closed), or `None` outside
/// `[e_0, e_m]`. Cost O(log m).
pub fn bin_of(edges: &[f64], x: f64) -> Option<usize> {
    let m = edges.len() - 1;
    if x < edges[0] || x > edges[m] {
        return None;
    }
    let above = edges.partition_point(|&e| e <= x); // edges[..above] <= x
    Some((above - 1).min(m - 1))
}

/// The value synthesis writes for bin `i` (see the module documentation).
pub fn bin_representative(edges: &[f64], integer: bool, i: usize) -> f64 {
    if integer {
        let (lo, hi) = integer_bin_range(edges, i)
            .expect("schema validation ensures every integer bin holds an integer");
        lo + ((hi - lo) / 2.0).floor()
    } else {
        edges[i] + (edges[i + 1] - edges[i]) / 2.0
    }
}

fn parse_number(field: &str, integer: bool) -> Result<f64, ValueError> {
    let x: f64 = field.parse().map_err(|_| ValueError::NotNumeric {
        value: excerpt(field),
    })?;
    if !x.is_finite() {
        return Err(ValueError::NotFinite {
            value: excerpt(field),
        });
    }
    if integer && x.fract() != 0.0 {
        return Err(ValueError::NotInteger {
            value: excerpt(field),
        });
    }
    Ok(x)
}

/// At most [`EXCERPT_CHARS`] characters of a field, for error messages: enough to find the
/// value, without copying a long private field into logs. Control characters (a newline in a
/// quoted field) are escaped, so messages stay on one line.
pub fn excerpt(field: &str) -> String {
    let mut out = String::new();
    for (i, ch) in field.chars().enumerate() {
        if i == EXCERPT_CHARS {
            out.push_str("...");
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    out
}

/// Longest field text quoted in an error message.
pub const EXCERPT_CHARS: usize = 40;

/// Integers without a decimal point, other values in shortest round-trip form.
fn format_number(x: f64) -> String {
    // f64's Display already prints 40.0 as "40" and never uses exponent notation.
    format!("{x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_cells_round_trip_exactly() {
        for x in 17..=90 {
            let u = unit_from_value(17.0, 90.0, true, x as f64);
            assert!(u > 0.0 && u < 1.0);
            assert_eq!(value_from_unit(17.0, 90.0, true, u), x as f64);
        }
        // Boundaries of the open interval decode to the extreme integers.
        assert_eq!(value_from_unit(17.0, 90.0, true, 0.0), 17.0);
        assert_eq!(value_from_unit(17.0, 90.0, true, 1.0), 90.0);
    }

    #[test]
    fn real_values_stay_inside_open_interval() {
        let (lo, hi) = (-3.5, 12.25);
        assert!((unit_from_value(lo, hi, false, lo) - UNIT_EPS).abs() < 1e-15);
        assert!((unit_from_value(lo, hi, false, hi) - (1.0 - UNIT_EPS)).abs() < 1e-15);
        for x in [-3.5, -1.0, 0.0, 3.3, 12.25] {
            let u = unit_from_value(lo, hi, false, x);
            let back = value_from_unit(lo, hi, false, u);
            assert!((back - x).abs() <= 1e-14 * (hi - lo), "{x} -> {back}");
            assert_eq!(unit_from_value(lo, hi, false, back), u);
        }
    }

    #[test]
    fn order_key_is_monotone() {
        let xs = [
            -1e300,
            -2.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            1e-300,
            1.0,
            1.0 + f64::EPSILON,
            7e10,
        ];
        for w in xs.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{w:?}");
        }
        for x in xs {
            assert_eq!(from_order_key(order_key(x)).to_bits(), x.to_bits());
        }
    }

    #[test]
    fn decoding_finds_exact_preimages_under_cancellation() {
        // x near 0 on a wide range around it: the affine inverse is off by many ulps of x.
        let (lo, hi) = (-1e6, 1e6);
        for x in [1e-3, -7.25e-5, 0.1, 999_999.5, -1e6] {
            let u = unit_from_value(lo, hi, false, x);
            let y = value_from_unit(lo, hi, false, u);
            assert_eq!(unit_from_value(lo, hi, false, y), u, "{x} -> {y}");
        }
    }

    #[test]
    fn bins_are_half_open_with_closed_last() {
        let e = [0.0, 1.0, 10.0, 100.0];
        assert_eq!(bin_of(&e, 0.0), Some(0));
        assert_eq!(bin_of(&e, 0.999), Some(0));
        assert_eq!(bin_of(&e, 1.0), Some(1));
        assert_eq!(bin_of(&e, 99.0), Some(2));
        assert_eq!(bin_of(&e, 100.0), Some(2));
        assert_eq!(bin_of(&e, 100.5), None);
        assert_eq!(bin_of(&e, -0.5), None);
        for i in 0..3 {
            for integer in [false, true] {
                assert_eq!(bin_of(&e, bin_representative(&e, integer, i)), Some(i));
            }
        }
        assert_eq!(bin_representative(&e, true, 0), 0.0);
        assert_eq!(bin_representative(&e, true, 1), 5.0); // integers 1..=9
        assert_eq!(bin_representative(&e, true, 2), 55.0); // integers 10..=100
    }

    #[test]
    fn long_fields_are_cut_in_messages() {
        let long = "x".repeat(100);
        let e = encode(
            &ColumnKind::Categorical {
                categories: vec!["a".into()],
            },
            &long,
        );
        let msg = e.unwrap_err().to_string();
        assert!(msg.contains(&format!("\"{}...\"", "x".repeat(40))), "{msg}");
        assert!(!msg.contains(&"x".repeat(41)), "{msg}");
        assert_eq!(excerpt("éé"), "éé");
        assert_eq!(excerpt("a\nb\r"), "a\\nb\\r");
    }

    #[test]
    fn formats_integers_without_point() {
        assert_eq!(format_number(40.0), "40");
        assert_eq!(format_number(1490400.0), "1490400");
        assert_eq!(format_number(0.1), "0.1");
    }
}
