//! Multiplication with truncation and inner products.
//!
//! Bound: a product `a * b` is formed in the ring (raw `a_raw * b_raw`, up to 2^192 before
//! reduction) and then truncated by 32 bits. It is exact and within one ulp only when the
//! raw product satisfies `|a_raw * b_raw| < 2^87` ([`crate::PRODUCT_BOUND_BITS`]), i.e.
//! `|a * b| < 2^23` as reals. An inner product `sum_i a_i b_i` is truncated once after the
//! sum, so the bound applies to `sum_i |a_i b_i|`: for a batch of N <= 10^5 < 2^17 records it
//! suffices that every `|a_i b_i| < 2^6 = 64` (in vtwin: weights in [0, 1] times sufficient
//! statistics bounded by 64 in magnitude). [`mul_checked`] and [`dot_checked`] verify it.

use crate::trunc::Truncator;
use crate::value::{Fx, RangeError, FRAC_BITS, PRODUCT_BOUND_BITS};

/// `a * b` truncated by `t`. MPC cost: 1 multiplication (one reshare) + 1 truncation, 1 round.
/// Error: < 1 ulp (2^-32) for floor and probabilistic rules, inside the bound (module docs).
pub fn mul<T: Truncator + ?Sized>(a: Fx, b: Fx, t: &mut T) -> Fx {
    Fx(t.trunc(a.0.wrapping_mul(b.0), FRAC_BITS))
}

/// `a * b` with exact floor truncation.
pub fn mul_floor(a: Fx, b: Fx) -> Fx {
    mul(a, b, &mut crate::trunc::Floor)
}

fn check_product(p: Option<i128>) -> Result<(), RangeError> {
    match p {
        Some(p) if p.unsigned_abs() < 1u128 << PRODUCT_BOUND_BITS => Ok(()),
        _ => Err(RangeError::ProductTooLarge {
            value: p.map_or(f64::INFINITY, |p| p as f64 / 2f64.powi(64)),
            bits: PRODUCT_BOUND_BITS,
        }),
    }
}

/// [`mul`], but errors instead of computing a product outside the truncation bound.
pub fn mul_checked<T: Truncator + ?Sized>(a: Fx, b: Fx, t: &mut T) -> Result<Fx, RangeError> {
    check_product(a.signed().checked_mul(b.signed()))?;
    Ok(mul(a, b, t))
}

/// `sum_i a_i b_i`, accumulated untruncated in the ring and truncated once (what the MPC
/// does: one reshare of the local sum, one truncation). Panics if lengths differ.
/// MPC cost: n local products, 1 reshare, 1 truncation, 1 round.
pub fn dot<T: Truncator + ?Sized>(a: &[Fx], b: &[Fx], t: &mut T) -> Fx {
    assert_eq!(a.len(), b.len(), "dot: length mismatch");
    let acc = a
        .iter()
        .zip(b)
        .fold(0u128, |acc, (x, y)| acc.wrapping_add(x.0.wrapping_mul(y.0)));
    Fx(t.trunc(acc, FRAC_BITS))
}

/// [`dot`], but errors when `sum_i |a_i b_i|` reaches the truncation bound, so that no
/// partial sum can wrap or leave the bound.
pub fn dot_checked<T: Truncator + ?Sized>(a: &[Fx], b: &[Fx], t: &mut T) -> Result<Fx, RangeError> {
    assert_eq!(a.len(), b.len(), "dot: length mismatch");
    let mut abs_sum: u128 = 0;
    for (x, y) in a.iter().zip(b) {
        let p = x.signed().checked_mul(y.signed());
        check_product(p)?;
        abs_sum += p.map_or(0, i128::unsigned_abs);
        check_product(i128::try_from(abs_sum).ok())?;
    }
    Ok(dot(a, b, t))
}
