//! The Clopper-Pearson ("exact") confidence interval of a binomial proportion.
//!
//! For `k` successes in `n` independent trials and confidence `1 - alpha`, the interval is
//! `[B(alpha/2; k, n-k+1), B(1-alpha/2; k+1, n-k)]` where `B(p; a, b)` is the `p`-quantile of
//! the Beta(a, b) distribution, with the lower end 0 when `k = 0` and the upper end 1 when
//! `k = n` (Clopper and Pearson 1934). Each end is a one-sided bound at level `1 - alpha/2`,
//! and the coverage of the interval is at least `1 - alpha` for every true proportion.
//!
//! The quantile is found by bisection on the regularised incomplete beta function
//! (statrs `beta_reg`, the Beta CDF), which is monotone in `x`: 200 halvings of [0, 1] leave
//! the bracket below one ulp, so the error is that of `beta_reg` (about 1e-14 relative on
//! the vectors in `tests/vectors/clopper_pearson.json`, computed with exact binomial sums).

use statrs::function::beta::checked_beta_reg;

/// An argument is outside its domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IntervalError {
    /// More successes than trials, or no trials.
    #[error(
        "{successes} successes in {trials} trials: need 0 <= successes <= trials and trials >= 1"
    )]
    Counts {
        /// k.
        successes: u64,
        /// n.
        trials: u64,
    },
    /// The confidence is not in (0, 1).
    #[error("confidence {0} is not in (0, 1)")]
    Confidence(f64),
}

/// The `p`-quantile of Beta(a, b) for `a, b > 0`, `p` in (0, 1), by bisection. Cost: 200
/// evaluations of the incomplete beta function.
fn beta_quantile(a: f64, b: f64, p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        // a, b > 0 and mid in (0, 1): beta_reg is defined.
        let cdf = checked_beta_reg(a, b, mid).unwrap_or(f64::NAN);
        if cdf < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The two-sided Clopper-Pearson interval `(lower, upper)` for `successes` out of `trials`
/// at `confidence` (e.g. 0.95); see the module documentation. Cost: at most 400 evaluations
/// of the incomplete beta function.
pub fn clopper_pearson(
    successes: u64,
    trials: u64,
    confidence: f64,
) -> Result<(f64, f64), IntervalError> {
    if trials == 0 || successes > trials {
        return Err(IntervalError::Counts { successes, trials });
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(IntervalError::Confidence(confidence));
    }
    let tail = (1.0 - confidence) / 2.0;
    let (k, n) = (successes as f64, trials as f64);
    let lower = if successes == 0 {
        0.0
    } else {
        beta_quantile(k, n - k + 1.0, tail)
    };
    let upper = if successes == trials {
        1.0
    } else {
        beta_quantile(k + 1.0, n - k, 1.0 - tail)
    };
    Ok((lower, upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms_at_the_edges() {
        // k = 0: upper = 1 - (alpha/2)^(1/n); k = n: lower = (alpha/2)^(1/n).
        let (lo, hi) = clopper_pearson(0, 10, 0.95).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025f64.powf(0.1))).abs() < 1e-13, "{hi}");
        let (lo, hi) = clopper_pearson(10, 10, 0.95).unwrap();
        assert!((lo - 0.025f64.powf(0.1)).abs() < 1e-13, "{lo}");
        assert_eq!(hi, 1.0);
        assert!(clopper_pearson(3, 2, 0.95).is_err());
        assert!(clopper_pearson(0, 0, 0.95).is_err());
        assert!(clopper_pearson(1, 2, 1.0).is_err());
    }
}
