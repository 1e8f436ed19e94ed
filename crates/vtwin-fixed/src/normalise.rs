//! Range normalisation by the most significant bit, shared by reciprocal and inverse square
//! root.
//!
//! Under MPC, the nodes add the summands of the low `window` bits of a positive shared value
//! (a carry-save layer then a `window`-bit parallel-prefix adder), obtain the one-hot vector
//! of its most significant set bit from the adder (a zero-detection suffix-AND riding in its
//! levels, then one AND layer: vtwin-mpc `binary::msb_one_hot_and_signs`), and convert the
//! one-hot bits back to arithmetic shares. Every power of two the
//! algorithms need is then a public linear combination of those bits, computed locally.
//! [`msb_in_window`] is the plaintext counterpart: the index of that one-hot bit.
//! [`scale_back`] undoes the normalisation once the mantissa is computed.

use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS};

/// Index of the most significant set bit of `x mod 2^window`, or `None` when it is zero (the
/// one-hot vector is then all zeros, and so is every power of two derived from it).
pub fn msb_in_window(x: u128, window: u32) -> Option<u32> {
    let v = if window >= 128 {
        x
    } else {
        x & ((1u128 << window) - 1)
    };
    (v != 0).then(|| 127 - v.leading_zeros())
}

/// `2^k` when `cond` holds, else 0: a public coefficient times a one-hot bit.
pub(crate) fn pow2_if(cond: bool, k: i32) -> u128 {
    if cond {
        debug_assert!((0..128).contains(&k));
        1u128 << k
    } else {
        0
    }
}

/// `z * 2^k` for the secret scale `2^k` held as two one-hot-derived terms, exactly one of
/// them non-zero: `scale_int = 2^k` when k >= 0, `scale_frac = 2^(32+k)` when k < 0. The MPC
/// cannot branch on which is live, so both products are formed: `z scale_int + t(z scale_frac,
/// 32)`. MPC: 2 multiplications (parallel), 1 truncation, 1 round.
pub(crate) fn scale_back<T: Truncator + ?Sized>(
    z: u128,
    scale_int: u128,
    scale_frac: u128,
    t: &mut T,
) -> Fx {
    let hi = z.wrapping_mul(scale_int);
    let lo = t.trunc(z.wrapping_mul(scale_frac), FRAC_BITS);
    Fx(hi.wrapping_add(lo))
}
