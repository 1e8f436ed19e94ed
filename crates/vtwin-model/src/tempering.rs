//! Deterministic annealing of the responsibilities (Ueda and Nakano 1998): early in a run
//! the gradient uses the tempered responsibilities `r_beta[n][k] ∝ (pi_k p(x_n | k))^beta`
//! with an inverse temperature `beta` that rises to 1, the model's own posterior over
//! components.
//!
//! Why: at `beta = 1` every record's responsibility sits on the one or two components that
//! already explain it best, so under DP noise the mixture keeps only about five live
//! components whatever K is and which ones survive varies between noise draws
//! (docs/utility-levers.md). With `beta < 1` every component sees a share of every record,
//! so all of them follow the data while they separate, and they split as `beta` rises.
//!
//! The schedule is public (a function of the settings and the iteration only), and the
//! per-record gradient it defines is clipped like any other: the sensitivity and every
//! printed epsilon are unchanged. Where it acts: each party multiplies its log-densities by
//! `beta` before exponentiating, and party 0 folds `softmax(beta theta_w)` instead of
//! `pi` ([`crate::fixed_backend::party_upload_batch`]); the float backend tempers its joint
//! log-densities the same way. The compute nodes' circuit is unchanged (same inputs, same
//! ranges, same cost): `r` is still `pm / den`, and the weight part is still `r - pi` with
//! the model's `pi`. That is the gradient of the tempered log-likelihood
//! `(1 / beta) sum_n ln sum_k (pi_k p(x_n | k))^beta`, whose component-parameter part is
//! `sum_n r_beta[n][k] s[n][k]` and whose weight-logit part is `sum_n (r_beta[n] - pi)`.

use serde::{Deserialize, Serialize};

/// The inverse-temperature schedule of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Tempering {
    /// `beta = 1` throughout (the model's own responsibilities).
    #[default]
    Off,
    /// `beta` rises linearly from `start` at iteration 0 to 1 at iteration `iterations`, and
    /// stays 1 after it.
    Linear {
        /// beta at iteration 0, in (0, 1].
        start: f64,
        /// The iteration from which beta is 1.
        iterations: u64,
    },
}

/// beta at iteration 0 of [`Tempering::default_for`].
pub const DEFAULT_START: f64 = 0.2;

/// The iteration from which the default schedule's beta is 1: `T - ceil(T / 5)`, 0.8 T.
///
/// Why: the released model is the average of the iterates (EMA, half-life T / 10 by
/// default, [`crate::averaging::DEFAULT_HALF_LIFE_FRACTION`]), and the last two half-lives
/// carry three quarters of its weight. Ending the tempering two default half-lives before
/// the end keeps that share on iterates of the model's own objective (beta = 1), while the
/// tempering, which lets every component see a share of every record as they separate, runs
/// as long as that allows. Measured on Adult against T / 2 (the default before 2026-11-28)
/// over 16 and 6 noise draws: the final test NLL's spread 0.26% against 0.50%, the 2-way
/// marginals as good (docs/utility-levers.md); later (0.9 T, T) measured no better, earlier
/// (T / 4, T / 2) worse. A rule on T alone, public. Cost O(1).
pub fn default_until(iters: u64) -> u64 {
    iters - iters.div_ceil(5)
}

/// A schedule outside its range.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TemperingError {
    /// The starting inverse temperature is not in (0, 1].
    #[error("tempering start beta = {0} must be in (0, 1]")]
    Start(f64),
    /// beta would still be below 1 at the end of the run.
    #[error("tempering until iteration {until} is beyond the run's {iters} iterations")]
    Until {
        /// The iteration from which beta would be 1.
        until: u64,
        /// The run's iterations.
        iters: u64,
    },
}

impl Tempering {
    /// The default for a run of `iters` iterations: beta from [`DEFAULT_START`] to 1 at
    /// [`default_until`] (0.8 T). Why 0.2: a record's log-density differences between
    /// components are tens of nats on a table of a dozen columns; a fifth of that still ranks
    /// the components but spreads every record over several of them. Not fitted to one
    /// table: docs/utility-levers.md measures 0.1 to 0.3. Cost O(1).
    pub fn default_for(iters: u64) -> Tempering {
        // Through `from_terms`, so a run too short to temper is `Off` in both forms.
        Tempering::from_terms(DEFAULT_START, default_until(iters))
            .expect("DEFAULT_START is in (0, 1]")
    }

    /// The schedule of a run of `iters` iterations from its two settings: beta `start` at
    /// iteration 0, rising to 1 at `until` (default [`default_until`], as
    /// [`Tempering::default_for`]);
    /// `start = 1` is off. Checked as [`Tempering::from_terms`], and `until` at most `iters`
    /// (beta must reach 1: the released model is trained on its own objective at the end).
    /// Cost O(1).
    pub fn from_settings(
        start: f64,
        until: Option<u64>,
        iters: u64,
    ) -> Result<Tempering, TemperingError> {
        let until = until.unwrap_or_else(|| default_until(iters));
        if until > iters {
            return Err(TemperingError::Until { until, iters });
        }
        Tempering::from_terms(start, until)
    }

    /// Checks the range (module docs). Cost O(1).
    pub fn validate(self) -> Result<Tempering, TemperingError> {
        match self {
            Tempering::Off => Ok(self),
            Tempering::Linear { start, .. } => {
                if start > 0.0 && start <= 1.0 {
                    Ok(self)
                } else {
                    Err(TemperingError::Start(start))
                }
            }
        }
    }

    /// beta at iteration `t` (0-based), in (0, 1] for a valid schedule. Cost O(1).
    pub fn beta(self, t: u64) -> f64 {
        match self {
            Tempering::Off => 1.0,
            Tempering::Linear { start, iterations } => {
                if t >= iterations {
                    1.0
                } else {
                    (start + (1.0 - start) * t as f64 / iterations as f64).min(1.0)
                }
            }
        }
    }

    /// The schedule as two public numbers (beta at iteration 0, the iteration from which
    /// beta is 1), as the consortium's job terms carry it; `Off` is `(1, 0)`. Cost O(1).
    pub fn to_terms(self) -> (f64, u64) {
        match self {
            Tempering::Off => (1.0, 0),
            Tempering::Linear { start, iterations } => (start, iterations),
        }
    }

    /// The inverse of [`Tempering::to_terms`], checked; `start = 1` or `iterations = 0` is
    /// `Off` (beta is 1 at every iteration either way). Cost O(1).
    pub fn from_terms(start: f64, iterations: u64) -> Result<Tempering, TemperingError> {
        if start == 1.0 || (iterations == 0 && start > 0.0 && start <= 1.0) {
            return Ok(Tempering::Off);
        }
        Tempering::Linear { start, iterations }.validate()
    }
}

impl std::fmt::Display for Tempering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tempering::Off => write!(f, "off"),
            Tempering::Linear { start, iterations } => {
                write!(f, "beta {start} -> 1 over {iterations} iterations")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_schedule_rises_to_one_and_stays() {
        let s = Tempering::Linear {
            start: 0.2,
            iterations: 100,
        };
        assert_eq!(s.beta(0), 0.2);
        assert!((s.beta(50) - 0.6).abs() < 1e-15);
        assert_eq!(s.beta(100), 1.0);
        assert_eq!(s.beta(10_000), 1.0);
        let mut last = 0.0;
        for t in 0..=100 {
            let b = s.beta(t);
            assert!(b >= last && b > 0.0 && b <= 1.0, "t {t}: {b}");
            last = b;
        }
        assert_eq!(Tempering::Off.beta(0), 1.0);
    }

    #[test]
    fn default_spans_four_fifths_of_the_run() {
        assert_eq!(
            Tempering::default_for(10_000),
            Tempering::Linear {
                start: DEFAULT_START,
                iterations: 8_000
            }
        );
        // The last fifth untempered, rounded up: at least one iteration at beta = 1.
        for (iters, until) in [
            (20_000, 16_000),
            (9, 7),
            (5, 4),
            (4, 3),
            (2, 1),
            (1, 0),
            (0, 0),
            (u64::MAX, u64::MAX - u64::MAX.div_ceil(5)),
        ] {
            assert_eq!(default_until(iters), until, "{iters}");
        }
        // A one-iteration run is untempered from the start, in the form the terms give.
        assert_eq!(Tempering::default_for(1), Tempering::Off);
        let (a, b) = Tempering::default_for(1).to_terms();
        assert_eq!(Tempering::from_terms(a, b), Ok(Tempering::default_for(1)));
        // The settings' default is the same schedule; beta must reach 1 within the run.
        assert_eq!(
            Tempering::from_settings(DEFAULT_START, None, 10_000),
            Ok(Tempering::default_for(10_000))
        );
        assert_eq!(
            Tempering::from_settings(0.2, Some(11), 10),
            Err(TemperingError::Until {
                until: 11,
                iters: 10
            })
        );
    }

    #[test]
    fn out_of_range_starts_are_refused() {
        for bad in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert_eq!(
                Tempering::Linear {
                    start: bad,
                    iterations: 10
                }
                .validate()
                .map_err(|e| matches!(e, TemperingError::Start(_))),
                Err(true),
                "{bad}"
            );
            assert!(Tempering::from_terms(bad, 10).is_err(), "{bad}");
        }
    }

    #[test]
    fn terms_round_trip() {
        for s in [
            Tempering::Off,
            Tempering::Linear {
                start: 0.2,
                iterations: 5000,
            },
        ] {
            let (a, b) = s.to_terms();
            assert_eq!(Tempering::from_terms(a, b), Ok(s));
        }
        assert_eq!(Tempering::from_terms(0.3, 0), Ok(Tempering::Off));
        assert!(Tempering::from_terms(0.0, 0).is_err());
    }
}
