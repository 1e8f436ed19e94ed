//! Exact rationals from decimal text, for sigma as users write it ("2.042", "1e-5").

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

/// Why a decimal string is not an exact rational.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecimalError {
    /// The text is not `[+-]digits[.digits][(e|E)[+-]digits]`.
    #[error("`{0}` is not a decimal number")]
    Malformed(String),
    /// The exponent is outside [-1000, 1000].
    #[error("exponent of `{0}` is outside [-1000, 1000]")]
    ExponentOutOfRange(String),
}

/// Parses `[+-]digits[.digits][(e|E)[+-]digits]` into the exact rational it denotes
/// (`"2.042"` is 1021/500, not the nearest double). Cost: linear in the text length and the
/// exponent.
pub fn parse_decimal(text: &str) -> Result<BigRational, DecimalError> {
    let bad = || DecimalError::Malformed(text.to_owned());
    let s = text.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if int_part.is_empty() && frac_part.is_empty()
        || !all_digits(int_part)
        || !all_digits(frac_part)
    {
        return Err(bad());
    }
    let digits = format!("{int_part}{frac_part}");
    let mut numer: BigInt = digits.parse().map_err(|_| bad())?;
    let mut exp10: i64 = -(frac_part.len() as i64);
    if let Some(e) = exponent {
        let e: i64 = e.parse().map_err(|_| bad())?;
        if !(-1000..=1000).contains(&e) {
            return Err(DecimalError::ExponentOutOfRange(text.to_owned()));
        }
        exp10 += e;
    }
    if negative {
        numer = -numer;
    }
    let ten = BigInt::from(10u8);
    let scale = num_traits::pow(ten, exp10.unsigned_abs() as usize);
    Ok(if exp10 >= 0 {
        BigRational::from_integer(numer * scale)
    } else {
        BigRational::new(numer, scale)
    })
}

/// `x` exactly, as a rational (every finite `f64` is a dyadic rational); `None` for NaN or
/// infinities.
pub fn rational_from_f64(x: f64) -> Option<BigRational> {
    if x == 0.0 {
        return Some(BigRational::zero());
    }
    BigRational::from_float(x)
}

/// `2^bits` as a rational, for fixed-point scales.
pub fn pow2(bits: u32) -> BigRational {
    BigRational::from_integer(BigInt::one() << bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    #[test]
    fn parses_exactly() {
        assert_eq!(parse_decimal("2.042").unwrap(), r(1021, 500));
        assert_eq!(parse_decimal("1e-5").unwrap(), r(1, 100_000));
        assert_eq!(parse_decimal("-0.5").unwrap(), r(-1, 2));
        assert_eq!(parse_decimal("+3").unwrap(), r(3, 1));
        assert_eq!(parse_decimal(".25E2").unwrap(), r(25, 1));
        assert_eq!(parse_decimal("4.").unwrap(), r(4, 1));
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "", ".", "abc", "1.2.3", "1e", "--1", "1e5000", "0x10", "1,5",
        ] {
            assert!(parse_decimal(s).is_err(), "{s}");
        }
    }

    #[test]
    fn f64_is_exact() {
        assert_eq!(rational_from_f64(0.5).unwrap(), r(1, 2));
        assert_eq!(rational_from_f64(0.0).unwrap(), r(0, 1));
        assert!(rational_from_f64(f64::NAN).is_none());
        assert_eq!(pow2(3), r(8, 1));
    }
}
