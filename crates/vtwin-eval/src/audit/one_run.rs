//! The one-run audit bound of Steinke, Nasr and Jagielski (2023, "Privacy auditing with one
//! (1) training run", Theorem 3.3 with the delta term of its appendix algorithm).
//!
//! m canaries are each inserted independently with probability 1/2; after one training the
//! auditor guesses "in" or "out" for r of them (abstaining on the rest) and v guesses are
//! right. If the training is (epsilon, delta)-DP, then
//!
//! `P[V >= v] <= beta + 2 m delta alpha`, with `beta = P[Binomial(r, p) >= v]`,
//! `p = e^epsilon / (1 + e^epsilon)` and `alpha = max_{1 <= i <= v} P[v - i <= Binomial(r, p) < v] / i`.
//!
//! So an observed v whose p-value is below `1 - confidence` refutes (epsilon, delta)-DP, and
//! the largest such epsilon is a lower bound at that confidence ([`epsilon_lower_bound`]).
//! The guesses must be fixed by a rule chosen before the scores are seen (here: the top and
//! bottom fractions of the scores). Cost: O(v) binomial terms per p-value, 60 bisection steps.

use statrs::distribution::{Binomial, Discrete, DiscreteCDF};

/// The p-value of `v` right guesses out of `r` among `m` canaries under (epsilon, delta)-DP
/// (module docs); in [0, 1].
pub fn p_value(m: u64, r: u64, v: u64, epsilon: f64, delta: f64) -> f64 {
    if v == 0 {
        return 1.0;
    }
    let p = 1.0 / (1.0 + (-epsilon).exp());
    let Ok(b) = Binomial::new(p, r) else {
        return 1.0;
    };
    // P[X >= v] = 1 - P[X <= v - 1].
    let beta = b.sf(v - 1);
    let mut alpha = 0.0f64;
    let mut window = 0.0f64;
    for i in 1..=v {
        window += b.pmf(v - i);
        alpha = alpha.max(window / i as f64);
    }
    (beta + 2.0 * m as f64 * delta * alpha).min(1.0)
}

/// The largest epsilon whose p-value for (m, r, v) stays below `1 - confidence`: the lower
/// bound at `confidence`; 0 when even epsilon = 0 is not refuted. Bisection to 1e-9.
pub fn epsilon_lower_bound(m: u64, r: u64, v: u64, delta: f64, confidence: f64) -> f64 {
    let level = 1.0 - confidence;
    if p_value(m, r, v, 0.0, delta) >= level {
        return 0.0;
    }
    let mut hi = 1.0f64;
    while p_value(m, r, v, hi, delta) < level {
        hi *= 2.0;
        if hi > 1e3 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0f64;
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if p_value(m, r, v, mid, delta) < level {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_level_guesses_prove_nothing() {
        assert_eq!(epsilon_lower_bound(1000, 200, 100, 1e-5, 0.95), 0.0);
        assert_eq!(epsilon_lower_bound(1000, 200, 0, 1e-5, 0.95), 0.0);
    }

    #[test]
    fn perfect_guesses_give_a_bound_that_grows_with_r() {
        let small = epsilon_lower_bound(1000, 50, 50, 1e-5, 0.95);
        let large = epsilon_lower_bound(1000, 400, 400, 1e-5, 0.95);
        assert!(small > 0.5 && large > small, "{small} {large}");
        // Pure DP, r = v: p = (e^eps / (1 + e^eps))^r = 0.05 at the bound.
        let e = epsilon_lower_bound(1000, 100, 100, 0.0, 0.95);
        let p = 1.0 / (1.0 + (-e).exp());
        assert!((p.powi(100) - 0.05).abs() < 1e-6, "{e}");
    }

    #[test]
    fn p_value_decreases_with_v_and_increases_with_epsilon() {
        assert!(p_value(500, 100, 80, 1.0, 1e-5) < p_value(500, 100, 70, 1.0, 1e-5));
        assert!(p_value(500, 100, 80, 1.0, 1e-5) < p_value(500, 100, 80, 2.0, 1e-5));
    }
}
