//! Rényi DP of the Poisson-subsampled Gaussian mechanism and its conversion to (epsilon, delta).
//!
//! Mironov, Talwar, Zhang (2019), "Rényi Differential Privacy of the Sampled Gaussian
//! Mechanism", add/remove-one neighbouring, sensitivity 1, noise multiplier sigma:
//! `RDP(alpha) = ln(A_alpha) / (alpha - 1)` with
//! `A_alpha = E_{z ~ N(0, sigma^2)} [((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha]`.
//! Integer orders use the binomial expansion (Section 3.3), fractional orders the two-series
//! formula (Section 3.4), both in log space, as in Google's dp-accounting
//! (`_compute_log_a_int`, `_compute_log_a_frac`). Composition over T steps multiplies by T.
//!
//! Conversion: the improved bound of Canonne, Kamath, Steinke (2020, Prop. 12) / Balle et al.
//! (2020, Thm. 21): `eps = rdp + ln((alpha-1)/alpha) - (ln delta + ln alpha) / (alpha - 1)`,
//! minimised over a grid of orders.

use crate::normal::{ln_erfc, log_add_exp, log_sub_exp};

/// The order grid: 1.1, 1.2, ..., 10.9, then 11..=63, then 64, 128, 256, 512, 1024.
/// (dp-accounting's default grid, extended upward for very small epsilon.)
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|x| 1.0 + f64::from(x) / 10.0).collect();
    v.extend((11..64).map(f64::from));
    v.extend([64.0, 128.0, 256.0, 512.0, 1024.0]);
    v
}

/// RDP at `order > 1` of one step of the Poisson-subsampled Gaussian with sampling rate
/// `q in [0, 1]` and noise multiplier `sigma > 0` (add/remove neighbours, sensitivity 1).
/// Cost: O(order) terms for integer orders; the fractional series runs until both terms are
/// below e^-30 of the accumulated value (tens to hundreds of terms).
pub fn rdp_poisson_gaussian(q: f64, sigma: f64, order: f64) -> f64 {
    if q == 0.0 {
        return 0.0;
    }
    if sigma == 0.0 || order.is_infinite() {
        return f64::INFINITY;
    }
    if q == 1.0 {
        return order / (2.0 * sigma * sigma);
    }
    let log_a = if order.fract() == 0.0 {
        log_a_int(q, sigma, order as u64)
    } else {
        log_a_frac(q, sigma, order)
    };
    log_a / (order - 1.0)
}

/// `ln A_alpha` for integer alpha: `sum_i C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 sigma^2))`.
fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let mut log_a = f64::NEG_INFINITY;
    let mut log_binom = 0.0f64; // ln C(alpha, 0)
    for i in 0..=alpha {
        if i > 0 {
            log_binom += ((alpha - i + 1) as f64).ln() - (i as f64).ln();
        }
        let fi = i as f64;
        let s =
            log_binom + fi * lq + (alpha - i) as f64 * l1q + (fi * fi - fi) / (2.0 * sigma * sigma);
        log_a = log_add_exp(log_a, s);
    }
    log_a
}

/// `ln A_alpha` for fractional alpha (Mironov-Talwar-Zhang Section 3.4): two alternating-sign
/// series split at `z0 = sigma^2 ln(1/q - 1) + 1/2`.
fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let s2 = sigma * sigma;
    let z0 = s2 * (1.0 / q - 1.0).ln() + 0.5;
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut log_abs_coef = 0.0f64; // ln |C(alpha, 0)|
    let mut coef_positive = true;
    let mut i = 0u64;
    loop {
        if i > 0 {
            // C(alpha, i) = C(alpha, i-1) (alpha - i + 1) / i
            let factor = alpha - i as f64 + 1.0;
            log_abs_coef += factor.abs().ln() - (i as f64).ln();
            if factor < 0.0 {
                coef_positive = !coef_positive;
            }
        }
        let fi = i as f64;
        let j = alpha - fi;
        let log_t0 = log_abs_coef + fi * lq + j * l1q;
        let log_t1 = log_abs_coef + j * lq + fi * l1q;
        let log_e0 = 0.5f64.ln() + ln_erfc((fi - z0) / (std::f64::consts::SQRT_2 * sigma));
        let log_e1 = 0.5f64.ln() + ln_erfc((z0 - j) / (std::f64::consts::SQRT_2 * sigma));
        let log_s0 = log_t0 + (fi * fi - fi) / (2.0 * s2) + log_e0;
        let log_s1 = log_t1 + (j * j - j) / (2.0 * s2) + log_e1;
        if coef_positive {
            log_a0 = log_add_exp(log_a0, log_s0);
            log_a1 = log_add_exp(log_a1, log_s1);
        } else {
            log_a0 = log_sub_exp(log_a0, log_s0);
            log_a1 = log_sub_exp(log_a1, log_s1);
        }
        i += 1;
        if log_s0.max(log_s1) < -30.0 || i > 100_000 {
            break;
        }
    }
    log_add_exp(log_a0, log_a1)
}

/// (epsilon, delta) from an RDP curve by the improved conversion, minimised over `orders`.
/// Returns `(epsilon, best order)`; `epsilon >= 0`. Orders at or below 1.01 are skipped
/// (the bound degenerates there). `delta in (0, 1)`.
pub fn rdp_to_epsilon(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for (&a, &r) in orders.iter().zip(rdp) {
        let eps = if delta * delta + (-r).exp_m1() > 0.0 {
            // delta >= sqrt(1 - exp(-r)): epsilon 0 suffices (Pinsker-type bound used by
            // dp-accounting).
            0.0
        } else if a > 1.01 {
            r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
        } else {
            f64::INFINITY
        };
        if eps < best.0 {
            best = (eps, a);
        }
    }
    (best.0.max(0.0), best.1)
}

/// The composed RDP curve of `steps` identical Poisson-subsampled Gaussian steps.
#[derive(Debug, Clone)]
pub struct RdpCurve {
    orders: Vec<f64>,
    rdp: Vec<f64>,
}

impl RdpCurve {
    /// `steps` steps at rate `q`, noise multiplier `sigma`, on [`default_orders`].
    /// Cost: independent of `steps`; about a millisecond.
    pub fn poisson_gaussian(q: f64, sigma: f64, steps: u64) -> Self {
        let orders = default_orders();
        let rdp = orders
            .iter()
            .map(|&a| rdp_poisson_gaussian(q, sigma, a) * steps as f64)
            .collect();
        RdpCurve { orders, rdp }
    }

    /// Epsilon at `delta` and the minimising order.
    pub fn epsilon(&self, delta: f64) -> (f64, f64) {
        rdp_to_epsilon(&self.orders, &self.rdp, delta)
    }

    /// The orders and the RDP values.
    pub fn points(&self) -> (&[f64], &[f64]) {
        (&self.orders, &self.rdp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_and_fractional_series_agree_near_integers() {
        for &(q, s) in &[(0.01, 2.5), (0.1, 1.0), (0.003, 2.042)] {
            for a in [2.0, 3.0, 8.0, 32.0] {
                let int = rdp_poisson_gaussian(q, s, a);
                let frac = log_a_frac(q, s, a + 1e-9) / (a + 1e-9 - 1.0);
                assert!(
                    (int - frac).abs() <= 1e-6 * int.abs().max(1e-12),
                    "q={q} s={s} a={a}: {int} vs {frac}"
                );
            }
        }
    }

    #[test]
    fn full_batch_is_the_gaussian() {
        assert_eq!(rdp_poisson_gaussian(1.0, 2.0, 3.0), 3.0 / 8.0);
        assert_eq!(rdp_poisson_gaussian(0.0, 2.0, 3.0), 0.0);
    }

    #[test]
    fn conversion_matches_closed_form_for_a_gaussian() {
        // One Gaussian, sigma = 1: rdp(a) = a/2; epsilon is finite and decreases with delta.
        let orders = default_orders();
        let rdp: Vec<f64> = orders.iter().map(|a| a / 2.0).collect();
        let (e5, _) = rdp_to_epsilon(&orders, &rdp, 1e-5);
        let (e3, _) = rdp_to_epsilon(&orders, &rdp, 1e-3);
        assert!(e5 > e3 && e3 > 0.0);
    }
}
