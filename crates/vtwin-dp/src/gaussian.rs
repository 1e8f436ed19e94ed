//! The exact privacy profile of the (non-subsampled) Gaussian mechanism.
//!
//! For sensitivity `Δ` and noise `σ`, with `μ = Δ/σ`, the mechanism is exactly
//! `(ε, δ(ε))`-DP with `δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)` (Balle and Wang 2018,
//! Theorem 8), and no smaller δ holds. T-fold composition is the same with `μ√T`. This is the
//! ground truth the PLD accountant is tested against, and the accountant for q = 1.

use crate::normal::{normal_cdf, normal_sf};

/// `δ(ε)` of the Gaussian mechanism with `μ = Δ/σ > 0`.
pub fn gaussian_delta(epsilon: f64, mu: f64) -> f64 {
    let a = normal_cdf(-epsilon / mu + mu / 2.0);
    // e^ε Φ(-ε/μ - μ/2) computed as exp(ε + ln Φ(..)) to avoid overflow at large ε.
    let b = (epsilon + normal_sf(epsilon / mu + mu / 2.0).ln()).exp();
    (a - b).max(0.0)
}

/// The smallest `ε >= 0` with `δ(ε) <= delta` for the Gaussian mechanism with `μ`, found by
/// bisection to an absolute tolerance of 1e-12 (δ is decreasing in ε). Cost: ~100 evaluations.
pub fn gaussian_epsilon(delta: f64, mu: f64) -> f64 {
    if gaussian_delta(0.0, mu) <= delta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while gaussian_delta(hi, mu) > delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e6 {
            return f64::INFINITY;
        }
    }
    while hi - lo > 1e-12 * hi.max(1.0) {
        let mid = 0.5 * (lo + hi);
        if gaussian_delta(mid, mu) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_inverse() {
        // mu = 1: delta(0) = Phi(1/2) - Phi(-1/2).
        assert!((gaussian_delta(0.0, 1.0) - 0.382_924_922_548_026).abs() < 1e-14);
        for &(d, mu) in &[(1e-6, 0.2207), (1e-5, 1.0), (1e-9, 3.0)] {
            let e = gaussian_epsilon(d, mu);
            assert!(
                (gaussian_delta(e, mu) - d).abs() <= 1e-9 * d,
                "{d} {mu} {e}"
            );
        }
    }
}
