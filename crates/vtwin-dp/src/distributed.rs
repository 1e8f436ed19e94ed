//! The distributed discrete Gaussian: the privacy of a sum of independent discrete Gaussians.
//!
//! `n` contributors each add N_Z(0, σ_s²) (integer units); the sum is close to, but not
//! exactly, N_Z(0, nσ_s²). Kairouz, Liu, Steinke (2021), "The Distributed Discrete Gaussian
//! Mechanism for Federated Learning with Secure Aggregation", Proposition 14: for σ_s >= 1/2,
//! any integer shift Δ ∈ Z^d with `‖Δ‖₂ <= Δ₂`, `‖Δ‖₁ <= Δ₁`, and every order α >= 1,
//!
//! `D_α(Z ‖ Z + Δ) <= min{ α/2 · Δ₂²/(nσ_s²) + τd,`
//! `                       α/2 · (Δ₂²/(nσ_s²) + 2Δ₁τ/(√n σ_s) + τ²d),`
//! `                       α/2 · (Δ₂/(√n σ_s) + τ√d)² }`
//!
//! with `τ = 10 Σ_{k=1}^{n-1} exp(-2π²σ_s² k/(k+1))`. Since α >= 1, the first term is at most
//! `α/2 (Δ₂²/(nσ_s²) + 2τd)`, so all three are the RDP curve of a Gaussian with
//! `ε_KLS² = Δ₂²/(nσ_s²) · (1 + I)` where `I` (the inflation) is the smallest of
//! `2τd nσ_s²/Δ₂²`, `2Δ₁τ√n σ_s/Δ₂² + τ²d nσ_s²/Δ₂²` and `2τ√d √n σ_s/Δ₂ + τ²d nσ_s²/Δ₂²`.
//! We take `Δ₁ = √d Δ₂` (Cauchy-Schwarz).
//!
//! Use in accounting: the noise multiplier handed to the accountants is divided by
//! `sqrt(1 + I)`. At the fixed-point scale 2^32, `ln τ ≈ -π² σ_s²` is about -10^20, so I
//! underflows to exactly 0 in f64; τ is therefore computed and reported in log space
//! (`log_tau`, `log10_inflation`) so that the figure is visibly computed rather than
//! silently zero. For subsampled steps the accountants treat the summed noise as the
//! Gaussian whose RDP curve bounds it (above); that step is the standard one (the discrete
//! Gaussian's RDP never exceeds the continuous one's, Canonne-Kamath-Steinke 2020, and the
//! paper's Theorem 5.2 accounts the same way), not a separate theorem about subsampled sums.

use serde::{Deserialize, Serialize};

use crate::normal::log_add_exp;

/// Why the bound cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DistributedError {
    /// Proposition 14 needs each share's sigma >= 1/2.
    #[error("each noise share needs sigma >= 1/2 (integer units), got {0}")]
    ShareSigmaTooSmall(f64),
    /// The L2 sensitivity must be positive.
    #[error("the L2 sensitivity must be positive, got {0}")]
    Sensitivity(f64),
    /// At least one contributor and one dimension.
    #[error("need at least one contributor and one dimension")]
    Empty,
}

/// The Kairouz-Liu-Steinke bound for one sum of noise shares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DistributedBound {
    /// Number of independent shares in the sum (n).
    pub summands: u32,
    /// Standard deviation parameter of each share, integer units (σ_s).
    pub share_sigma: f64,
    /// L2 sensitivity in integer units (Δ₂).
    pub sensitivity_l2: f64,
    /// Dimension d.
    pub dimension: u64,
    /// ln τ (`-inf` when n = 1: a single discrete Gaussian needs no correction).
    #[serde(with = "finite_or_null")]
    pub log_tau: f64,
    /// log10 of the inflation I of ε² (`-inf` when it is exactly 0).
    #[serde(with = "finite_or_null")]
    pub log10_inflation: f64,
    /// `1 / sqrt(1 + I)`: multiply the noise multiplier by this before accounting.
    pub noise_factor: f64,
}

/// Serialises non-finite f64 as JSON null (JSON has no infinities).
mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NEG_INFINITY))
    }
}

/// `ln τ = ln 10 + ln Σ_{k=1}^{n-1} exp(-2π²σ_s² k/(k+1))`, in log space; `-inf` for n = 1.
/// Cost: O(n).
pub fn log_tau(share_sigma: f64, summands: u32) -> f64 {
    let c = 2.0 * std::f64::consts::PI.powi(2) * share_sigma * share_sigma;
    let mut acc = f64::NEG_INFINITY;
    for k in 1..summands {
        let k = f64::from(k);
        acc = log_add_exp(acc, -c * k / (k + 1.0));
    }
    if acc == f64::NEG_INFINITY {
        acc
    } else {
        10f64.ln() + acc
    }
}

/// The bound for `summands` shares of sigma `share_sigma` each (integer units), L2 sensitivity
/// `sensitivity_l2` (integer units) in `dimension` coordinates. Cost: O(summands).
pub fn kls_bound(
    share_sigma: f64,
    summands: u32,
    sensitivity_l2: f64,
    dimension: u64,
) -> Result<DistributedBound, DistributedError> {
    if summands == 0 || dimension == 0 {
        return Err(DistributedError::Empty);
    }
    if share_sigma.is_nan() || share_sigma < 0.5 {
        return Err(DistributedError::ShareSigmaTooSmall(share_sigma));
    }
    if !(sensitivity_l2 > 0.0 && sensitivity_l2.is_finite()) {
        return Err(DistributedError::Sensitivity(sensitivity_l2));
    }
    let lt = log_tau(share_sigma, summands);
    let d = dimension as f64;
    let ln_n_s2 = f64::from(summands).ln() + 2.0 * share_sigma.ln(); // ln(nσ²)
    let ln_sqrt_n_s = 0.5 * ln_n_s2; // ln(√n σ)
    let ln_d2 = sensitivity_l2.ln();
    let ln_d1 = 0.5 * d.ln() + ln_d2;
    // The three inflations, in log space.
    let i1 = 2f64.ln() + lt + d.ln() + ln_n_s2 - 2.0 * ln_d2;
    let sq = 2.0 * lt + d.ln() + ln_n_s2 - 2.0 * ln_d2; // τ²d nσ²/Δ₂²
    let i2 = log_add_exp(2f64.ln() + ln_d1 + lt + ln_sqrt_n_s - 2.0 * ln_d2, sq);
    let i3 = log_add_exp(2f64.ln() + lt + 0.5 * d.ln() + ln_sqrt_n_s - ln_d2, sq);
    let ln_inflation = i1.min(i2).min(i3);
    let noise_factor = (-0.5 * ln_inflation.exp().ln_1p()).exp();
    Ok(DistributedBound {
        summands,
        share_sigma,
        sensitivity_l2,
        dimension,
        log_tau: lt,
        log10_inflation: ln_inflation / 10f64.ln(),
        noise_factor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_is_direct_sum_where_representable() {
        let s = 0.6f64;
        let direct: f64 = 10.0
            * (1..5)
                .map(|k| {
                    let k = f64::from(k);
                    (-2.0 * std::f64::consts::PI.powi(2) * s * s * k / (k + 1.0)).exp()
                })
                .sum::<f64>();
        assert!((log_tau(s, 5) - direct.ln()).abs() < 1e-12);
        assert_eq!(log_tau(s, 1), f64::NEG_INFINITY);
    }

    #[test]
    fn at_fixed_point_scale_tau_is_tiny_but_not_zero_in_log_space() {
        let share_sigma = 2.042 * 4294967296.0 / 2f64.sqrt();
        let b = kls_bound(share_sigma, 2, 4294967296.0, 3000).unwrap();
        assert!(b.log_tau.is_finite() && b.log_tau < -1e19, "{}", b.log_tau);
        assert!(b.log10_inflation.is_finite());
        assert_eq!(b.noise_factor, 1.0);
    }

    #[test]
    fn small_sigma_inflates() {
        let b = kls_bound(0.6, 3, 1.0, 10).unwrap();
        assert!(b.noise_factor < 1.0 && b.noise_factor > 0.0);
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(
            kls_bound(0.4, 2, 1.0, 1),
            Err(DistributedError::ShareSigmaTooSmall(_))
        ));
        assert!(matches!(
            kls_bound(1.0, 2, 0.0, 1),
            Err(DistributedError::Sensitivity(_))
        ));
        assert!(matches!(
            kls_bound(1.0, 0, 1.0, 1),
            Err(DistributedError::Empty)
        ));
    }
}
