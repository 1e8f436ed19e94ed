//! Order statistics of timings: the median and spread a report gives for each backend.

use serde::{Deserialize, Serialize};

/// Linear-interpolation quantile (R type 7, the default of R and NumPy) of sorted `v`,
/// `p` in [0, 1]; NaN when `v` is empty. Cost O(1).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The median of `v` (NaN when empty; the mean of the middle two for an even count).
/// Cost O(n log n): sorts a copy.
pub fn median(v: impl IntoIterator<Item = f64>) -> f64 {
    let mut s: Vec<f64> = v.into_iter().collect();
    s.sort_by(f64::total_cmp);
    quantile(&s, 0.5)
}

/// Median, 10th and 90th percentiles, quartiles, extremes and mean of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Spread {
    /// The spread of `v` (all NaN when empty). Cost O(n log n).
    pub fn of(v: &[f64]) -> Spread {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let mean = if s.is_empty() {
            f64::NAN
        } else {
            s.iter().sum::<f64>() / s.len() as f64
        };
        Spread {
            median: quantile(&s, 0.5),
            p10: quantile(&s, 0.1),
            p90: quantile(&s, 0.9),
            q1: quantile(&s, 0.25),
            q3: quantile(&s, 0.75),
            min: s.first().copied().unwrap_or(f64::NAN),
            max: s.last().copied().unwrap_or(f64::NAN),
            mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.1), 1.4);
        assert_eq!(quantile(&v, 0.9), 4.6);
        assert_eq!(quantile(&[2.0, 4.0], 0.5), 3.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median([]).is_nan());
        let s = Spread::of(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.median, s.min, s.max, s.mean), (3.0, 1.0, 5.0, 3.0));
        assert_eq!((s.q1, s.q3), (2.0, 4.0));
        assert!(Spread::of(&[]).mean.is_nan());
    }
}
