//! Standard normal tail functions with relative accuracy far into the tails.

use libm::erfc;

/// `ln erfc(x)`, accurate for all finite `x`.
///
/// For `x < 25` it is `ln` of libm's `erfc` (musl; < 1 ulp; erfc(25) ≈ 8e-274 is
/// still a normal double). Beyond, the asymptotic series
/// `erfc(x) = exp(-x^2)/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(2x^2)^2 - 15/(2x^2)^3 + ...)`
/// truncated after 6 terms; the first omitted term is below 1e-22 there.
pub(crate) fn ln_erfc(x: f64) -> f64 {
    if x < 25.0 {
        return erfc(x).ln();
    }
    ln_erfc_asymptotic(x)
}

/// The asymptotic series of `ln erfc(x)` (6 terms), for large `x`.
fn ln_erfc_asymptotic(x: f64) -> f64 {
    let y = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..6 {
        term *= -((2 * k - 1) as f64) * y;
        sum += term;
    }
    -x * x - (x * std::f64::consts::PI.sqrt()).ln() + sum.ln()
}

/// `P(N(0,1) > z)`, relative accuracy ~1e-15 for `z` up to about 38.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// `P(N(0,1) <= z)`.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// `P(a < N(0,1) <= b)` for `a <= b`, computed on the side of zero where it does not cancel.
pub(crate) fn normal_interval(a: f64, b: f64) -> f64 {
    if a >= 0.0 {
        (normal_sf(a) - normal_sf(b)).max(0.0)
    } else if b <= 0.0 {
        (normal_cdf(b) - normal_cdf(a)).max(0.0)
    } else {
        (1.0 - normal_cdf(a) - normal_sf(b)).max(0.0)
    }
}

/// `ln(exp(a) + exp(b))` without overflow; `-inf` is the identity.
pub(crate) fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// `ln(exp(a) - exp(b))` for `a >= b`; `-inf` when equal.
pub(crate) fn log_sub_exp(a: f64, b: f64) -> f64 {
    if b == f64::NEG_INFINITY {
        return a;
    }
    if a <= b {
        return f64::NEG_INFINITY;
    }
    a + (-(b - a).exp()).ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_erfc_is_continuous_at_the_switch() {
        let direct = erfc(25.0).ln();
        let series = ln_erfc_asymptotic(25.0);
        assert!((direct - series).abs() < 1e-9, "{direct} vs {series}");
        // Known: ln erfc(30) = -904.2780 (from -x^2 - ln(x sqrt(pi)) - 1/(2x^2) ...).
        let v = ln_erfc(30.0);
        assert!(
            (v - (-900.0 - (30.0 * std::f64::consts::PI.sqrt()).ln() - 1.0 / 1800.0)).abs() < 1e-6
        );
    }

    #[test]
    fn log_sum_identities() {
        let x = log_add_exp(2.0f64.ln(), 3.0f64.ln());
        assert!((x - 5.0f64.ln()).abs() < 1e-15);
        let y = log_sub_exp(5.0f64.ln(), 3.0f64.ln());
        assert!((y - 2.0f64.ln()).abs() < 1e-15);
        assert_eq!(log_add_exp(f64::NEG_INFINITY, 1.0), 1.0);
    }

    #[test]
    fn interval_masses() {
        let v = normal_interval(-1.0, 1.0);
        assert!((v - 0.682_689_492_137_085_9).abs() < 1e-12, "{v}");
        assert!((normal_interval(8.0, 9.0) - (normal_sf(8.0) - normal_sf(9.0))).abs() < 1e-30);
    }
}
