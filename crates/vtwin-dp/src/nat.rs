//! Exact natural numbers for the sampler: `u128`, a two-limb 256-bit integer, and `BigUint`.
//!
//! The sampling algorithms in [`crate::bernoulli`] are written once, generic over [`Nat`], and
//! instantiated with the fixed-width types on the fast path. Every fixed-width operation that
//! could overflow is checked; on overflow the caller continues the *same* computation (same
//! state, no fresh randomness) with `BigUint`, so the output distribution is exactly the one
//! the algorithm defines whichever width ends up doing the work.

use std::cmp::Ordering;

use num_bigint::BigUint;
use rand_core::RngCore;

/// Exact non-negative integers as the sampler needs them.
pub(crate) trait Nat: Clone + Ord + Sized {
    /// `v` as this type.
    fn from_u128(v: u128) -> Option<Self>;
    /// `self * rhs`, `None` on overflow.
    fn checked_mul(&self, rhs: &Self) -> Option<Self>;
    /// `self * k`, `None` on overflow.
    fn checked_mul_u64(&self, k: u64) -> Option<Self>;
    /// `|self - rhs|`.
    fn abs_diff(&self, rhs: &Self) -> Self;
    /// `self -= rhs`; requires `rhs <= self`.
    fn sub_assign_le(&mut self, rhs: &Self);
    /// A uniform value in `[0, self)`; requires `self > 0`. Rejection sampling on the bit
    /// length of `self`: the number of draws depends on `self` and the random words only.
    fn uniform_below<R: RngCore + ?Sized>(&self, rng: &mut R) -> Self;
    /// The same value as a `BigUint`.
    fn to_big(&self) -> BigUint;
}

/// `u64::MAX` as a `u128`, the low-limb mask.
const LOW: u128 = u64::MAX as u128;

/// Uniform `u128` in `[0, m)`, `m > 0`: draw `bits(m - 1)` random bits and reject values `>= m`.
/// Expected draws < 2. One 64-bit word per draw when `m <= 2^64`.
fn u128_below<R: RngCore + ?Sized>(m: u128, rng: &mut R) -> u128 {
    debug_assert!(m > 0);
    if m == 1 {
        return 0;
    }
    let bits = 128 - (m - 1).leading_zeros();
    let mask = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let r = if bits <= 64 {
            u128::from(rng.next_u64())
        } else {
            (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())
        } & mask;
        if r < m {
            return r;
        }
    }
}

impl Nat for u128 {
    fn from_u128(v: u128) -> Option<Self> {
        Some(v)
    }
    fn checked_mul(&self, rhs: &Self) -> Option<Self> {
        u128::checked_mul(*self, *rhs)
    }
    fn checked_mul_u64(&self, k: u64) -> Option<Self> {
        u128::checked_mul(*self, u128::from(k))
    }
    fn abs_diff(&self, rhs: &Self) -> Self {
        u128::abs_diff(*self, *rhs)
    }
    fn sub_assign_le(&mut self, rhs: &Self) {
        *self -= *rhs;
    }
    fn uniform_below<R: RngCore + ?Sized>(&self, rng: &mut R) -> Self {
        u128_below(*self, rng)
    }
    fn to_big(&self) -> BigUint {
        BigUint::from(*self)
    }
}

/// An unsigned 256-bit integer, `hi * 2^128 + lo`. Field order makes the derived `Ord` numeric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct U256 {
    hi: u128,
    lo: u128,
}

impl U256 {
    /// The full 256-bit product of two `u128` (schoolbook on 64-bit limbs; never overflows).
    pub(crate) fn widening_mul(a: u128, b: u128) -> Self {
        let (a1, a0) = (a >> 64, a & LOW);
        let (b1, b0) = (b >> 64, b & LOW);
        let p00 = a0 * b0;
        let p01 = a0 * b1;
        let p10 = a1 * b0;
        let p11 = a1 * b1;
        // mid < 3 * 2^64: no overflow.
        let mid = (p00 >> 64) + (p01 & LOW) + (p10 & LOW);
        let lo = (p00 & LOW) | (mid << 64);
        let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        U256 { hi, lo }
    }

    /// Bit length (0 for zero).
    fn bits(&self) -> u32 {
        if self.hi != 0 {
            256 - self.hi.leading_zeros()
        } else {
            128 - self.lo.leading_zeros()
        }
    }

    fn wrapping_sub(&self, rhs: &Self) -> Self {
        let (lo, borrow) = self.lo.overflowing_sub(rhs.lo);
        let hi = self
            .hi
            .wrapping_sub(rhs.hi)
            .wrapping_sub(u128::from(borrow));
        U256 { hi, lo }
    }

    /// A value with `bits` random low bits (`bits <= 256`).
    fn random_bits<R: RngCore + ?Sized>(bits: u32, rng: &mut R) -> Self {
        let mut limbs = [0u64; 4];
        let words = bits.div_ceil(64) as usize;
        for limb in limbs.iter_mut().take(words) {
            *limb = rng.next_u64();
        }
        let rem = bits % 64;
        if rem != 0 {
            limbs[words - 1] &= (1u64 << rem) - 1;
        }
        U256 {
            lo: u128::from(limbs[0]) | (u128::from(limbs[1]) << 64),
            hi: u128::from(limbs[2]) | (u128::from(limbs[3]) << 64),
        }
    }
}

impl Nat for U256 {
    fn from_u128(v: u128) -> Option<Self> {
        Some(U256 { hi: 0, lo: v })
    }

    fn checked_mul(&self, rhs: &Self) -> Option<Self> {
        if self.hi != 0 && rhs.hi != 0 {
            return None;
        }
        let base = U256::widening_mul(self.lo, rhs.lo);
        // At most one cross term is non-zero; it lands in the high limb.
        let cross = self
            .hi
            .checked_mul(rhs.lo)?
            .checked_add(self.lo.checked_mul(rhs.hi)?)?;
        Some(U256 {
            hi: base.hi.checked_add(cross)?,
            lo: base.lo,
        })
    }

    fn checked_mul_u64(&self, k: u64) -> Option<Self> {
        self.checked_mul(&U256 {
            hi: 0,
            lo: u128::from(k),
        })
    }

    fn abs_diff(&self, rhs: &Self) -> Self {
        match self.cmp(rhs) {
            Ordering::Less => rhs.wrapping_sub(self),
            _ => self.wrapping_sub(rhs),
        }
    }

    fn sub_assign_le(&mut self, rhs: &Self) {
        debug_assert!(*rhs <= *self);
        *self = self.wrapping_sub(rhs);
    }

    fn uniform_below<R: RngCore + ?Sized>(&self, rng: &mut R) -> Self {
        debug_assert!(*self > U256::default());
        if self.hi == 0 {
            return U256 {
                hi: 0,
                lo: u128_below(self.lo, rng),
            };
        }
        let bits = self.wrapping_sub(&U256 { hi: 0, lo: 1 }).bits();
        loop {
            let r = U256::random_bits(bits, rng);
            if r < *self {
                return r;
            }
        }
    }

    fn to_big(&self) -> BigUint {
        (BigUint::from(self.hi) << 128u32) | BigUint::from(self.lo)
    }
}

impl Nat for BigUint {
    fn from_u128(v: u128) -> Option<Self> {
        Some(BigUint::from(v))
    }
    fn checked_mul(&self, rhs: &Self) -> Option<Self> {
        Some(self * rhs)
    }
    fn checked_mul_u64(&self, k: u64) -> Option<Self> {
        Some(self * k)
    }
    fn abs_diff(&self, rhs: &Self) -> Self {
        if self >= rhs {
            self - rhs
        } else {
            rhs - self
        }
    }
    fn sub_assign_le(&mut self, rhs: &Self) {
        *self -= rhs;
    }
    fn uniform_below<R: RngCore + ?Sized>(&self, rng: &mut R) -> Self {
        let max = self - 1u32;
        let bits = max.bits();
        if bits == 0 {
            return BigUint::default();
        }
        let bytes = bits.div_ceil(8) as usize;
        let top_bits = bits % 8;
        let mut buf = vec![0u8; bytes];
        loop {
            rng.fill_bytes(&mut buf);
            if top_bits != 0 {
                buf[bytes - 1] &= (1u8 << top_bits) - 1;
            }
            let r = BigUint::from_bytes_le(&buf);
            if &r < self {
                return r;
            }
        }
    }
    fn to_big(&self) -> BigUint {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn big(v: &U256) -> BigUint {
        v.to_big()
    }

    proptest! {
        #[test]
        fn widening_mul_matches_bigint(a: u128, b: u128) {
            let w = U256::widening_mul(a, b);
            prop_assert_eq!(big(&w), BigUint::from(a) * BigUint::from(b));
        }

        #[test]
        fn checked_mul_matches_bigint(ah in 0u128..4, al: u128, b: u128, bh in 0u128..2) {
            let x = U256 { hi: ah, lo: al };
            let y = U256 { hi: bh, lo: b };
            let exact = big(&x) * big(&y);
            match x.checked_mul(&y) {
                Some(p) => prop_assert_eq!(big(&p), exact),
                None => prop_assert!(exact.bits() > 256),
            }
        }

        #[test]
        fn abs_diff_and_order_match_bigint(ah: u128, al: u128, bh: u128, bl: u128) {
            let x = U256 { hi: ah, lo: al };
            let y = U256 { hi: bh, lo: bl };
            prop_assert_eq!(x.cmp(&y), big(&x).cmp(&big(&y)));
            prop_assert_eq!(big(&x.abs_diff(&y)), Nat::abs_diff(&big(&x), &big(&y)));
        }
    }

    #[test]
    fn uniform_below_stays_below() {
        use rand_chacha::rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let m = U256 { hi: 5, lo: 3 };
        let mut saw_high = false;
        for _ in 0..2000 {
            let r = m.uniform_below(&mut rng);
            assert!(r < m);
            saw_high |= r.hi >= 3;
        }
        assert!(saw_high, "the top limb is never drawn");
        let b = BigUint::from(1000u32);
        for _ in 0..2000 {
            assert!(b.uniform_below(&mut rng) < b);
        }
    }
}
