//! Exact Bernoulli trials: Bernoulli(a/b) and Bernoulli(exp(-a/b)) for exact integers a, b.
//!
//! Canonne, Kamath, Steinke (2020), "The Discrete Gaussian for Differential Privacy",
//! Algorithm 1. No floating point: a trial with rational probability a/b draws a uniform
//! integer in `[0, b)` and compares it with `a`.

use num_bigint::BigUint;
use rand_core::RngCore;

use crate::nat::Nat;

/// Bernoulli(num / den), exactly; requires `den > 0`. One uniform draw below `den` and one
/// comparison with `num`: the number of random words depends on `den` only.
#[inline]
pub(crate) fn bernoulli<N: Nat, R: RngCore + ?Sized>(num: &N, den: &N, rng: &mut R) -> bool {
    den.uniform_below(rng) < *num
}

/// Bernoulli(1/2) from one random bit.
#[inline]
pub(crate) fn fair_coin<R: RngCore + ?Sized>(rng: &mut R) -> bool {
    rng.next_u32() & 1 == 1
}

/// Bernoulli(exp(-num/den)) for any `num >= 0`, `den > 0`, exactly.
///
/// For gamma = num/den >= 1 it runs one Bernoulli(exp(-1)) per unit of gamma, stopping at the
/// first failure (as the algorithm requires), then Bernoulli(exp(-frac(gamma))). So the running
/// time reveals how many unit trials succeeded before the first failure, which is a function
/// of gamma and fresh randomness.
pub(crate) fn bernoulli_exp_neg<N: Nat, R: RngCore + ?Sized>(
    mut num: N,
    den: &N,
    rng: &mut R,
) -> bool {
    while num >= *den {
        if !bernoulli_exp_neg_one(rng) {
            return false;
        }
        num.sub_assign_le(den);
    }
    bernoulli_exp_neg_unit(num, den.clone(), 1, rng)
}

/// Bernoulli(exp(-1)).
#[inline]
pub(crate) fn bernoulli_exp_neg_one<R: RngCore + ?Sized>(rng: &mut R) -> bool {
    bernoulli_exp_neg_unit(1u128, 1u128, 1, rng)
}

/// Bernoulli(exp(-gamma)) for gamma = num/den in [0, 1] (CKS Algorithm 1, first branch):
/// K = 1; while Bernoulli(gamma / K) { K += 1 }; return K odd. `k` is the loop's starting K,
/// so a computation that overflows a fixed-width type continues in `BigUint` from the same
/// state instead of restarting (a restart conditioned on the overflow would bias the output).
fn bernoulli_exp_neg_unit<N: Nat, R: RngCore + ?Sized>(
    num: N,
    den: N,
    mut k: u64,
    rng: &mut R,
) -> bool {
    loop {
        let Some(den_k) = den.checked_mul_u64(k) else {
            return bernoulli_exp_neg_unit::<BigUint, R>(num.to_big(), den.to_big(), k, rng);
        };
        if !bernoulli(&num, &den_k, rng) {
            return k % 2 == 1;
        }
        // K exceeds n with probability 1/n!; u64 cannot run out.
        k = k.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// A 1e-6-significance two-sided normal-approximation bound on a binomial count.
    fn check_rate(hits: u64, n: u64, p: f64) {
        if p >= 1.0 {
            assert_eq!(hits, n);
            return;
        }
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        let z = (hits as f64 - n as f64 * p) / sd;
        assert!(
            z.abs() < 4.9,
            "rate {} vs {p}: z = {z}",
            hits as f64 / n as f64
        );
    }

    #[test]
    fn exp_neg_rates_match_for_every_width() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let n = 200_000u64;
        for &(a, b) in &[(0u128, 1u128), (1, 3), (1, 1), (7, 3), (5, 2), (23, 4)] {
            let p = (-(a as f64) / b as f64).exp();
            let mut h128 = 0;
            let mut hbig = 0;
            for _ in 0..n {
                h128 += u64::from(bernoulli_exp_neg(a, &b, &mut rng));
                hbig += u64::from(bernoulli_exp_neg(
                    BigUint::from(a),
                    &BigUint::from(b),
                    &mut rng,
                ));
            }
            check_rate(h128, n, p);
            check_rate(hbig, n, p);
        }
    }

    #[test]
    fn rational_rate_matches() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let n = 200_000u64;
        let hits = (0..n)
            .filter(|_| bernoulli(&3u128, &7u128, &mut rng))
            .count() as u64;
        check_rate(hits, n, 3.0 / 7.0);
    }
}
