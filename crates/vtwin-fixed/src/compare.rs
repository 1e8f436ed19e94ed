//! Comparison and sign, via the most significant (sign) bit of the two's-complement value.
//!
//! `a < b` is `msb(a - b)`; it is correct whenever |a - b| < 2^127 (raw), which holds for any
//! two encoded values (|v| < 2^63, raw < 2^95). MPC cost of one sign bit: an arithmetic-to-
//! binary carry computation over 128 bits (see [`crate::cost::MSB`]); a zero test (for
//! [`sign`]) is a 128-input OR tree. Both are exact: no truncation, no error.

use crate::value::Fx;

/// True iff `x < 0`. MPC: 1 MSB extraction.
pub fn is_negative(x: Fx) -> bool {
    x.is_negative()
}

/// -1, 0 or 1. MPC: 1 MSB extraction + 1 zero test.
pub fn sign(x: Fx) -> i8 {
    if x.0 == 0 {
        0
    } else if x.is_negative() {
        -1
    } else {
        1
    }
}

/// `a < b`. MPC: 1 MSB extraction of `a - b`.
pub fn lt(a: Fx, b: Fx) -> bool {
    (a - b).is_negative()
}

/// `a <= b`, as `!(b < a)`. MPC: 1 MSB extraction.
pub fn le(a: Fx, b: Fx) -> bool {
    !lt(b, a)
}

/// `if bit { a } else { b }` as the MPC computes it: `b + bit * (a - b)`. MPC: 1
/// multiplication (bit times value, no truncation).
pub fn select(bit: bool, a: Fx, b: Fx) -> Fx {
    b + (a - b).mul_int(i128::from(bit))
}

/// `min(a, b)`. MPC: 1 MSB extraction + 1 multiplication.
pub fn min(a: Fx, b: Fx) -> Fx {
    select(lt(a, b), a, b)
}

/// `max(a, b)`. MPC: 1 MSB extraction + 1 multiplication.
pub fn max(a: Fx, b: Fx) -> Fx {
    select(lt(a, b), b, a)
}
