//! The exact discrete Gaussian sampler N_Z(0, sigma^2) (Canonne, Kamath, Steinke 2020).
//!
//! `P(X = x) ∝ exp(-x^2 / (2 sigma^2))` for integer `x`, with `sigma^2` an exact positive
//! rational. Algorithm 3 of the paper: with `t = floor(sigma) + 1`, draw `Y` from the discrete
//! Laplace distribution with scale `t` (Algorithm 2) and accept it with probability
//! `exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))` (Algorithm 1); repeat until accepted.
//!
//! # Exactness
//! Every probability is an exact rational and every trial compares a uniform integer with an
//! integer numerator; there is no floating point. With `sigma^2 = n/d` the acceptance exponent
//! is `gamma = (|Y| t d - n)^2 / (2 n d t^2)`. The fast path evaluates it in `u128` and a
//! 256-bit integer with checked operations; if any product would overflow, that trial is
//! evaluated in `BigUint` instead (see [`crate::nat`]). Both paths compute the same exact
//! numbers from the same random words, so the distribution is exactly N_Z(0, sigma^2).
//!
//! # Timing
//! The running time of one sample is a function of the random words drawn and of the output
//! (the geometric count `V ≈ |Y| / t`, the number of rejected proposals, the unit trials inside
//! Bernoulli(exp(-gamma)), and on rare large outputs the switch to `BigUint`). It does not
//! depend on any data. The accept/reject path has no branch on secret values beyond those the
//! algorithm consists of; the 256-bit comparisons are not constant-time. So timing can reveal
//! something about the *noise magnitude*, never about data directly. Noise is pre-sampled
//! (into a [`NoiseShare`](crate::NoiseShare)) before the iteration's data phase, off the
//! message path: the sampler has finished before any data exists for that iteration, and no
//! protocol message is timed by it, so a remote observer sees at most the total time of a whole
//! noise vector (an aggregate over thousands of coordinates), and the contributor's own host,
//! which could time single samples, knows its share anyway (that knowledge is accounted for:
//! see [`crate::report`]).

use num_bigint::{BigInt, BigUint, Sign};
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use rand_core::{CryptoRng, RngCore};

use crate::bernoulli::{bernoulli_exp_neg, bernoulli_exp_neg_one, fair_coin};
use crate::nat::{Nat, U256};
use crate::noise_share::NoiseShare;

/// Largest `t = floor(sigma) + 1` supported: keeps every output inside `i128` (see
/// [`DiscreteGaussian::new`]).
const MAX_T: u128 = 1 << 62;

/// Why a discrete Gaussian cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplerError {
    /// sigma^2 must be strictly positive.
    #[error("sigma^2 must be positive, got {0}")]
    NonPositiveVariance(BigRational),
    /// sigma must be strictly positive.
    #[error("sigma must be positive, got {0}")]
    NonPositiveSigma(BigRational),
    /// sigma must be below 2^62 so that every sample fits in an `i128`.
    #[error("sigma must be below 2^62, got sigma^2 = {0}")]
    VarianceTooLarge(BigRational),
    /// The number of noise contributors must be at least 1.
    #[error("the number of noise contributors must be at least 1")]
    NoContributors,
}

/// Fixed-width parameters for the fast path.
#[derive(Debug, Clone)]
struct Fast {
    /// `t * d`.
    td: U256,
    /// `n` (numerator of sigma^2).
    n: U256,
    /// `2 n d t^2`, the denominator of gamma.
    den: U256,
}

/// The exact discrete Gaussian distribution N_Z(0, sigma^2) with rational `sigma^2`.
///
/// Build with [`DiscreteGaussian::new`] (from sigma^2) or [`DiscreteGaussian::from_sigma`]
/// (from sigma); draw with [`DiscreteGaussian::sample`] or [`DiscreteGaussian::sample_share`].
#[derive(Debug, Clone)]
pub struct DiscreteGaussian {
    sigma2: BigRational,
    /// Scale of the discrete Laplace proposal, `floor(sigma) + 1`.
    t: u128,
    /// `sigma^2 = n / d` in lowest terms.
    n: BigUint,
    d: BigUint,
    /// `t * d` and `2 n d t^2` as big integers, for the slow path.
    td_big: BigUint,
    den_big: BigUint,
    fast: Option<Fast>,
}

impl DiscreteGaussian {
    /// N_Z(0, sigma2) for an exact rational `0 < sigma2 < 2^124` (so `sigma < 2^62`).
    ///
    /// Cost: one big-integer square root and a few products.
    pub fn new(sigma2: BigRational) -> Result<Self, SamplerError> {
        if !sigma2.is_positive() {
            return Err(SamplerError::NonPositiveVariance(sigma2));
        }
        let n = sigma2.numer().magnitude().clone();
        let d = sigma2.denom().magnitude().clone();
        // floor(sqrt(n/d)) = isqrt(floor(n/d)).
        let t_big = (&n / &d).sqrt() + 1u32;
        let t = match t_big.to_u128() {
            Some(t) if t <= MAX_T => t,
            _ => return Err(SamplerError::VarianceTooLarge(sigma2.clone())),
        };
        let td_big = &t_big * &d;
        let den_big = BigUint::from(2u32) * &n * &d * &t_big * &t_big;
        let fast = (|| {
            Some(Fast {
                td: U256::from_u128(td_big.to_u128()?)?,
                n: U256::from_u128(n.to_u128()?)?,
                den: U256::from_u128(d.to_u128()?)?
                    .checked_mul(&U256::from_u128(n.to_u128()?)?)?
                    .checked_mul(&U256::from_u128(2 * t * t)?)?,
            })
        })();
        Ok(DiscreteGaussian {
            sigma2,
            t,
            n,
            d,
            td_big,
            den_big,
            fast,
        })
    }

    /// N_Z(0, sigma^2) from an exact rational standard deviation `0 < sigma < 2^62`.
    pub fn from_sigma(sigma: &BigRational) -> Result<Self, SamplerError> {
        if !sigma.is_positive() {
            return Err(SamplerError::NonPositiveSigma(sigma.clone()));
        }
        Self::new(sigma * sigma)
    }

    /// The share distribution of the distributed discrete Gaussian: N_Z(0, sigma2 / m), so that
    /// `m` independent shares sum to approximately N_Z(0, sigma2) (the exact law of the sum is
    /// bounded in [`crate::distributed`]).
    pub fn share_of(sigma2: &BigRational, m: u32) -> Result<Self, SamplerError> {
        if m == 0 {
            return Err(SamplerError::NoContributors);
        }
        Self::new(sigma2 / BigRational::from_integer(BigInt::from(m)))
    }

    /// The exact variance parameter sigma^2.
    pub fn sigma2(&self) -> &BigRational {
        &self.sigma2
    }

    /// Whether draws use the fixed-width fast path (true when the numerator and denominator of
    /// sigma^2 fit in `u128` and `2 n d t^2` fits in 256 bits, e.g. for every sigma^2 with a
    /// small denominator up to about 2^80).
    pub fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// One exact sample.
    ///
    /// Expected cost: about 2 proposals, each a handful of 64-bit random words and a few
    /// 256-bit products (measured in the `dp` bench). Output magnitude is below 2^127.
    pub fn sample<R: CryptoRng + RngCore + ?Sized>(&self, rng: &mut R) -> i128 {
        loop {
            let (magnitude, negative) = self.discrete_laplace(rng);
            let accept = match &self.fast {
                Some(f) => match accept_gamma(magnitude, &f.td, &f.n) {
                    Some(num) => bernoulli_exp_neg(num, &f.den, rng),
                    None => self.accept_big(magnitude, rng),
                },
                None => self.accept_big(magnitude, rng),
            };
            if accept {
                // magnitude < 2^127, so the cast is exact; the sign is applied without a branch.
                let m = magnitude as i128;
                return m - 2 * m * i128::from(negative);
            }
        }
    }

    /// `count` exact samples in a zeroize-on-drop buffer.
    pub fn sample_share<R: CryptoRng + RngCore + ?Sized>(
        &self,
        rng: &mut R,
        count: usize,
    ) -> NoiseShare {
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            values.push(self.sample(rng));
        }
        NoiseShare::new(values)
    }

    /// One exact sample computed entirely with `BigUint` (the reference path; slower). Same
    /// distribution as [`DiscreteGaussian::sample`].
    pub fn sample_reference<R: CryptoRng + RngCore + ?Sized>(&self, rng: &mut R) -> BigInt {
        loop {
            let (magnitude, negative) = self.discrete_laplace_big(rng);
            if self.accept_big_value(&magnitude, rng) {
                let sign = if negative { Sign::Minus } else { Sign::Plus };
                return BigInt::from_biguint(sign, magnitude);
            }
        }
    }

    /// The acceptance trial in `BigUint`.
    fn accept_big<R: RngCore + ?Sized>(&self, magnitude: u128, rng: &mut R) -> bool {
        self.accept_big_value(&BigUint::from(magnitude), rng)
    }

    fn accept_big_value<R: RngCore + ?Sized>(&self, magnitude: &BigUint, rng: &mut R) -> bool {
        let x = Nat::abs_diff(&(magnitude * &self.td_big), &self.n);
        bernoulli_exp_neg(&x * &x, &self.den_big, rng)
    }

    /// Discrete Laplace with scale `t` (CKS Algorithm 2 with s = 1), as (|Y|, Y < 0).
    /// `P(Y = y) ∝ exp(-|y| / t)`.
    fn discrete_laplace<R: RngCore + ?Sized>(&self, rng: &mut R) -> (u128, bool) {
        let t = self.t;
        loop {
            let u = t.uniform_below(rng);
            if !bernoulli_exp_neg(u, &t, rng) {
                continue;
            }
            let mut v: u128 = 0;
            while bernoulli_exp_neg_one(rng) {
                // v < 2^64 in any physically possible run; saturate rather than wrap.
                v = v.saturating_add(1).min(u128::from(u64::MAX));
            }
            // t <= 2^62 and v < 2^64: u + t v < 2^127.
            let x = u + t * v;
            let negative = fair_coin(rng);
            if negative && x == 0 {
                continue;
            }
            return (x, negative);
        }
    }

    /// The same discrete Laplace with `BigUint` (reference path).
    fn discrete_laplace_big<R: RngCore + ?Sized>(&self, rng: &mut R) -> (BigUint, bool) {
        let t = BigUint::from(self.t);
        loop {
            let u = t.uniform_below(rng);
            if !bernoulli_exp_neg(u.clone(), &t, rng) {
                continue;
            }
            let mut v = BigUint::zero();
            while bernoulli_exp_neg(BigUint::one(), &BigUint::one(), rng) {
                v += 1u32;
            }
            let x = u + &t * v;
            let negative = fair_coin(rng);
            if negative && x.is_zero() {
                continue;
            }
            return (x, negative);
        }
    }

    /// The numerator and denominator of sigma^2 in lowest terms.
    pub fn sigma2_parts(&self) -> (&BigUint, &BigUint) {
        (&self.n, &self.d)
    }
}

/// The numerator `(|Y| t d - n)^2` of gamma in 256 bits, or `None` if it would overflow.
#[inline]
fn accept_gamma(magnitude: u128, td: &U256, n: &U256) -> Option<U256> {
    let ytd = U256::from_u128(magnitude)?.checked_mul(td)?;
    let x = ytd.abs_diff(n);
    x.checked_mul(&x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn rat(n: i64, d: i64) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    #[test]
    fn rejects_bad_variances() {
        assert!(matches!(
            DiscreteGaussian::new(rat(0, 1)),
            Err(SamplerError::NonPositiveVariance(_))
        ));
        assert!(matches!(
            DiscreteGaussian::new(rat(-1, 2)),
            Err(SamplerError::NonPositiveVariance(_))
        ));
        let huge = BigRational::from_integer(BigInt::from(1u8) << 126u32);
        assert!(matches!(
            DiscreteGaussian::new(huge),
            Err(SamplerError::VarianceTooLarge(_))
        ));
        assert!(matches!(
            DiscreteGaussian::from_sigma(&rat(-1, 1)),
            Err(SamplerError::NonPositiveSigma(_))
        ));
        assert!(matches!(
            DiscreteGaussian::share_of(&rat(1, 1), 0),
            Err(SamplerError::NoContributors)
        ));
    }

    #[test]
    fn t_is_floor_sigma_plus_one() {
        for (s2, t) in [
            (rat(1, 4), 1u128),
            (rat(1, 1), 2),
            (rat(49, 4), 4),
            (rat(10000, 1), 101),
        ] {
            assert_eq!(DiscreteGaussian::new(s2).unwrap().t, t);
        }
        let big = BigRational::from_integer(BigInt::from(1u8) << 66u32);
        let dg = DiscreteGaussian::new(big).unwrap();
        assert_eq!(dg.t, (1u128 << 33) + 1);
        assert!(dg.has_fast_path());
    }

    #[test]
    fn fast_and_big_acceptance_agree_on_the_exponent() {
        let dg = DiscreteGaussian::new(rat(1_042_441, 250_000)).unwrap();
        let f = dg.fast.as_ref().unwrap();
        for y in [0u128, 1, 2, 3, 10, 1000] {
            let fast = accept_gamma(y, &f.td, &f.n).unwrap().to_big();
            let x = Nat::abs_diff(&(BigUint::from(y) * &dg.td_big), &dg.n);
            assert_eq!(fast, &x * &x);
        }
        assert_eq!(f.den.to_big(), dg.den_big);
    }

    #[test]
    fn sample_share_zeroizes_and_counts() {
        let dg = DiscreteGaussian::new(rat(9, 1)).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let share = dg.sample_share(&mut rng, 10);
        assert_eq!(share.len(), 10);
    }
}
