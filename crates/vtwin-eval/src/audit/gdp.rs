//! Gaussian differential privacy (Dong, Roth and Su 2019): the trade-off curve of telling
//! N(0, 1) from N(mu, 1), and the lower bound on mu, hence on epsilon, that an observed test
//! implies (the f-DP audit of Nasr et al. 2023, "Tight auditing of differentially private
//! machine learning").
//!
//! - A mechanism is mu-GDP when no test of "with" against "without" does better than the
//!   test of N(mu, 1) against N(0, 1): `FNR >= Phi(Phi^-1(1 - FPR) - mu)` for every test. So
//!   a test with rates (FPR, FNR) proves `mu >= Phi^-1(1 - FPR) - Phi^-1(FNR)` for every GDP
//!   guarantee the mechanism could satisfy ([`mu_lower_bound`]).
//! - mu-GDP is (epsilon, delta(epsilon))-DP for every epsilon >= 0 with
//!   `delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)`, and this
//!   is tight (Corollary 2.13 there; the Gaussian mechanism's profile of Balle and Wang 2018,
//!   `vtwin_dp::gaussian`): [`delta_of_epsilon`], [`epsilon_of_delta`].
//!
//! T compositions of the Gaussian mechanism with sensitivity C and noise sigma C are exactly
//! `sqrt(T)/sigma`-GDP, which is what an observer who knows that a record is in all T batches
//! faces. Cost: each function is O(1) normal CDF evaluations (bisection: about 100).

use statrs::distribution::{ContinuousCDF, Normal};

use vtwin_dp::gaussian::{gaussian_delta, gaussian_epsilon};

use super::clopper_pearson::{clopper_pearson, IntervalError};

fn standard_normal() -> Normal {
    Normal::standard()
}

/// `delta(epsilon)` of mu-GDP (module docs): vtwin-dp's exact Gaussian profile.
pub fn delta_of_epsilon(mu: f64, epsilon: f64) -> f64 {
    gaussian_delta(epsilon, mu)
}

/// The smallest epsilon >= 0 with `delta(epsilon) <= delta` for mu-GDP (0 when mu <= 0):
/// vtwin-dp's [`gaussian_epsilon`], to 1e-12.
pub fn epsilon_of_delta(mu: f64, delta: f64) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    gaussian_epsilon(delta, mu)
}

/// The mu of T-fold composition of the Gaussian mechanism with noise multiplier `sigma`.
pub fn mu_of_composition(sigma: f64, steps: u64) -> f64 {
    (steps as f64).sqrt() / sigma
}

/// A test's error counts and the bound they imply.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct GdpBound {
    /// Runs without the canary scored "with" (false positives), of `negatives`.
    pub false_positives: u64,
    /// Runs without the canary.
    pub negatives: u64,
    /// Runs with the canary scored "without" (false negatives), of `positives`.
    pub false_negatives: u64,
    /// Runs with the canary.
    pub positives: u64,
    /// The point estimate `Phi^-1(1 - FPR) - Phi^-1(FNR)` (rates clamped to
    /// [1/(2n), 1 - 1/(2n)] so that it is finite).
    pub mu_estimate: f64,
    /// One-sided upper confidence bounds on FPR and FNR (Clopper-Pearson).
    pub fpr_upper: f64,
    /// See `fpr_upper`.
    pub fnr_upper: f64,
    /// `max(0, Phi^-1(1 - fpr_upper) - Phi^-1(fnr_upper))`.
    pub mu_lower_bound: f64,
}

/// The lower confidence bound on mu from a test's errors: each rate's one-sided
/// Clopper-Pearson upper bound at level `1 - (1 - confidence)/2`, so that both hold together
/// with probability at least `confidence` (Bonferroni), then the GDP inequality (module docs).
/// Valid for any fixed threshold chosen before the scores are seen. Cost: two intervals.
pub fn mu_lower_bound(
    false_positives: u64,
    negatives: u64,
    false_negatives: u64,
    positives: u64,
    confidence: f64,
) -> Result<GdpBound, IntervalError> {
    let (_, fpr_upper) = clopper_pearson(false_positives, negatives, confidence)?;
    let (_, fnr_upper) = clopper_pearson(false_negatives, positives, confidence)?;
    let n = standard_normal();
    let clamp = |k: u64, m: u64| {
        let m = m as f64;
        (k as f64 / m).clamp(0.5 / m, 1.0 - 0.5 / m)
    };
    let mu_estimate = n.inverse_cdf(1.0 - clamp(false_positives, negatives))
        - n.inverse_cdf(clamp(false_negatives, positives));
    let mu_lower_bound = if fpr_upper >= 1.0 || fnr_upper >= 1.0 {
        0.0
    } else {
        (n.inverse_cdf(1.0 - fpr_upper) - n.inverse_cdf(fnr_upper)).max(0.0)
    };
    Ok(GdpBound {
        false_positives,
        negatives,
        false_negatives,
        positives,
        mu_estimate,
        fpr_upper,
        fnr_upper,
        mu_lower_bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_at_zero_is_total_variation() {
        // delta(0) = Phi(mu/2) - Phi(-mu/2): the TV distance of N(0,1) and N(mu,1).
        let want = 0.382_924_922_548_026; // 2 Phi(0.5) - 1
        assert!((delta_of_epsilon(1.0, 0.0) - want).abs() < 1e-12);
    }

    #[test]
    fn epsilon_inverts_delta() {
        for &mu in &[0.1, 0.5, 1.0, 3.0] {
            for &delta in &[1e-3, 1e-5, 1e-8] {
                let e = epsilon_of_delta(mu, delta);
                assert!(e > 0.0);
                assert!(delta_of_epsilon(mu, e) <= delta * (1.0 + 1e-9));
                assert!(delta_of_epsilon(mu, e * (1.0 - 1e-6)) > delta);
            }
        }
    }

    #[test]
    fn epsilon_grows_with_mu() {
        let a = epsilon_of_delta(0.5, 1e-5);
        let b = epsilon_of_delta(1.0, 1e-5);
        assert!(a < b, "{a} {b}");
        // mu = 1 at delta 1e-5 lies between 4.3 and 4.4: delta(4.3) = 1.388e-5 and
        // delta(4.4) = 9.07e-6 by the formula (Python, math.erfc).
        assert!((delta_of_epsilon(1.0, 4.3) - 1.388e-5).abs() < 1e-8);
        assert!(b > 4.3 && b < 4.4, "{b}");
    }

    #[test]
    fn lower_bound_is_below_estimate_and_zero_without_signal() {
        let g = mu_lower_bound(300, 1000, 300, 1000, 0.95).unwrap();
        assert!(g.mu_lower_bound < g.mu_estimate);
        assert!(g.mu_estimate > 1.0 && g.mu_estimate < 1.1);
        let none = mu_lower_bound(500, 1000, 500, 1000, 0.95).unwrap();
        assert_eq!(none.mu_lower_bound, 0.0);
    }
}
