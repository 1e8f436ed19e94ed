//! Epsilon of a composition of (subsampled) Gaussian steps, by accountant and neighbouring
//! relation, and sigma calibration for a target epsilon.
//!
//! Everything here is in units of the sensitivity: `noise_multiplier` is the noise standard
//! deviation divided by the clipping bound C, which is the per-record L2 sensitivity of the
//! gradient sum under add/remove-one neighbours.

use serde::{Deserialize, Serialize};

use crate::gaussian::gaussian_epsilon;
use crate::pld::PldComposition;
use crate::rdp::RdpCurve;

/// Which accountant computes a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Accountant {
    /// Rényi DP of the Poisson-subsampled Gaussian with the improved conversion ([`crate::rdp`]).
    Rdp,
    /// Privacy loss distribution, connect-the-dots discretisation ([`crate::pld`]); exact
    /// Gaussian profile when q = 1.
    Pld,
}

impl Accountant {
    /// Every accountant, in report order.
    pub const ALL: [Accountant; 2] = [Accountant::Rdp, Accountant::Pld];

    /// The name used in `privacy.json` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Accountant::Rdp => "rdp",
            Accountant::Pld => "pld",
        }
    }
}

impl std::fmt::Display for Accountant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which datasets count as neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Neighbouring {
    /// One record added or removed (the standard for the outside analyst).
    AddRemove,
    /// One record's values replaced (the paper's VP-adjacency: the individual exists and only
    /// the other parties' part changes). The gradient sum moves by up to 2C.
    ReplaceOne,
}

impl Neighbouring {
    /// Both relations, in report order.
    pub const BOTH: [Neighbouring; 2] = [Neighbouring::AddRemove, Neighbouring::ReplaceOne];

    /// The name used in `privacy.json`.
    pub fn name(self) -> &'static str {
        match self {
            Neighbouring::AddRemove => "add_remove",
            Neighbouring::ReplaceOne => "replace_one",
        }
    }
}

/// How the training loop draws batches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Sampling {
    /// Each record joins each iteration's batch independently with probability `sample_rate`.
    Poisson {
        /// The rate q in (0, 1].
        sample_rate: f64,
    },
    /// Every record in every iteration (q = 1).
    FullBatch,
    /// The paper's section 5.2 mode: the records are split once into `batches_per_epoch`
    /// disjoint minibatches that are cycled, so each record is used once per epoch.
    DisjointEpochs {
        /// S, the number of disjoint minibatches.
        batches_per_epoch: u64,
    },
}

impl Sampling {
    /// `(q, composed steps)` for `steps` iterations as seen by an observer who does not know
    /// which records are in which batch (amplification by Poisson subsampling applies).
    /// The disjoint mode claims no amplification: `(1, epochs)`.
    pub fn for_hidden_batches(&self, steps: u64) -> (f64, u64) {
        match *self {
            Sampling::Poisson { sample_rate } => (sample_rate, steps),
            Sampling::FullBatch => (1.0, steps),
            Sampling::DisjointEpochs { batches_per_epoch } => {
                (1.0, steps.div_ceil(batches_per_epoch.max(1)))
            }
        }
    }

    /// `(q, composed steps)` for an observer who knows the batch indices: no amplification;
    /// a record is in at most `steps` batches (Poisson, full batch) or `ceil(steps / S)`
    /// batches (disjoint epochs, paper section 5.2).
    pub fn for_known_batches(&self, steps: u64) -> (f64, u64) {
        match *self {
            Sampling::Poisson { .. } | Sampling::FullBatch => (1.0, steps),
            Sampling::DisjointEpochs { batches_per_epoch } => {
                (1.0, steps.div_ceil(batches_per_epoch.max(1)))
            }
        }
    }

    /// The nominal per-iteration sampling rate (1 for full batch; 1/S for disjoint epochs).
    pub fn nominal_rate(&self) -> f64 {
        match *self {
            Sampling::Poisson { sample_rate } => sample_rate,
            Sampling::FullBatch => 1.0,
            Sampling::DisjointEpochs { batches_per_epoch } => 1.0 / batches_per_epoch.max(1) as f64,
        }
    }
}

/// `steps` identical steps of the Gaussian mechanism with sensitivity 1 and noise
/// `noise_multiplier`, each on a Poisson subsample of rate `sample_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Composition {
    /// Noise standard deviation over sensitivity (> 0).
    pub noise_multiplier: f64,
    /// Poisson sampling rate q in [0, 1].
    pub sample_rate: f64,
    /// Number of steps.
    pub steps: u64,
}

/// Why an epsilon or a sigma cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AccountingError {
    /// `--sample-rate` must be in [0, 1].
    #[error("sample rate must be in [0, 1], got {0}")]
    SampleRate(f64),
    /// `--sigma` must be positive and finite.
    #[error("noise multiplier sigma must be positive and finite, got {0}")]
    NoiseMultiplier(f64),
    /// `--delta` must be in (0, 1).
    #[error("delta must be in (0, 1), got {0}")]
    Delta(f64),
    /// `--target-epsilon` must be positive and finite.
    #[error("target epsilon must be positive and finite, got {0}")]
    TargetEpsilon(f64),
    /// No sigma in the searched range reaches the target.
    #[error("no sigma <= {max_sigma} reaches epsilon {target} (got {reached})")]
    Unreachable {
        /// The target epsilon.
        target: f64,
        /// The largest sigma tried.
        max_sigma: f64,
        /// The epsilon at that sigma.
        reached: f64,
    },
}

fn validate(c: &Composition, delta: f64) -> Result<(), AccountingError> {
    if !(0.0..=1.0).contains(&c.sample_rate) || c.sample_rate.is_nan() {
        return Err(AccountingError::SampleRate(c.sample_rate));
    }
    if !(c.noise_multiplier > 0.0 && c.noise_multiplier.is_finite()) {
        return Err(AccountingError::NoiseMultiplier(c.noise_multiplier));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(AccountingError::Delta(delta));
    }
    Ok(())
}

/// A privacy profile that can be queried for epsilon at any delta.
enum Profile {
    Zero,
    Gaussian { mu: f64 },
    Rdp(RdpCurve),
    Pld(Box<PldComposition>),
}

impl Profile {
    /// Add/remove profile of a composition at sensitivity `sensitivity`.
    fn build(accountant: Accountant, c: &Composition, sensitivity: f64) -> Profile {
        if c.steps == 0 || c.sample_rate == 0.0 {
            return Profile::Zero;
        }
        let sigma = c.noise_multiplier / sensitivity;
        match accountant {
            Accountant::Rdp => {
                Profile::Rdp(RdpCurve::poisson_gaussian(c.sample_rate, sigma, c.steps))
            }
            Accountant::Pld if c.sample_rate == 1.0 => Profile::Gaussian {
                mu: (c.steps as f64).sqrt() / sigma,
            },
            Accountant::Pld => Profile::Pld(Box::new(PldComposition::poisson_gaussian(
                c.sample_rate,
                sigma,
                c.steps,
            ))),
        }
    }

    fn epsilon(&self, delta: f64) -> f64 {
        match self {
            Profile::Zero => 0.0,
            Profile::Gaussian { mu } => gaussian_epsilon(delta, *mu),
            Profile::Rdp(curve) => curve.epsilon(delta).0,
            Profile::Pld(pld) => pld.epsilon(delta),
        }
    }
}

/// Epsilon at `delta` of the composition `c` under `relation`, by `accountant`.
///
/// - Add/remove: the accountant's bound for the Poisson-subsampled Gaussian (for q = 1, the
///   PLD accountant uses the exact Gaussian profile).
/// - Replace-one with q = 1: exactly the Gaussian with sensitivity 2 (noise multiplier / 2).
/// - Replace-one with q < 1: replacing r by r' is removing r then adding r'; group privacy
///   gives `(ε1 + ε2, δ1 + e^ε1 δ2)`. We use the add/remove figure at a `δ1 = δ2` found by
///   bisection so that `δ1 (1 + e^ε(δ1)) <= delta`, and report `2 ε(δ1)`. Valid, but loose.
///
/// Cost: RDP about a millisecond; PLD see [`crate::pld`] (about a second for 20000 steps).
pub fn epsilon(
    accountant: Accountant,
    c: &Composition,
    delta: f64,
    relation: Neighbouring,
) -> Result<f64, AccountingError> {
    validate(c, delta)?;
    Ok(match relation {
        Neighbouring::AddRemove => Profile::build(accountant, c, 1.0).epsilon(delta),
        Neighbouring::ReplaceOne if c.sample_rate == 1.0 => {
            Profile::build(accountant, c, 2.0).epsilon(delta)
        }
        Neighbouring::ReplaceOne => {
            let profile = Profile::build(accountant, c, 1.0);
            group_of_two(&|d| profile.epsilon(d), delta)
        }
    })
}

/// Epsilon for both relations (add/remove, replace-one) sharing one profile computation.
pub fn epsilon_both(
    accountant: Accountant,
    c: &Composition,
    delta: f64,
) -> Result<(f64, f64), AccountingError> {
    validate(c, delta)?;
    let profile = Profile::build(accountant, c, 1.0);
    let add_remove = profile.epsilon(delta);
    let replace = if c.sample_rate == 1.0 {
        Profile::build(accountant, c, 2.0).epsilon(delta)
    } else {
        group_of_two(&|d| profile.epsilon(d), delta)
    };
    Ok((add_remove, replace))
}

/// Group privacy for two neighbouring steps: `2 ε(δ1)` for the largest `δ1` (bracketing by
/// factors of 10, then bisection in log space, 60 steps) with `δ1 (1 + e^ε(δ1)) <= delta`; infinity if none is found.
fn group_of_two(eps: &dyn Fn(f64) -> f64, delta: f64) -> f64 {
    let ok = |d1: f64| d1 * (1.0 + eps(d1).exp()) <= delta;
    let mut hi = (delta / 2.0).ln();
    if ok(hi.exp()) {
        return 2.0 * eps(hi.exp());
    }
    // Step down by factors of 10 to bracket; stop where epsilon becomes infinite (the PLD's
    // infinity mass, ~1e-11, bounds how small a delta it can answer).
    let mut lo = hi;
    loop {
        lo -= 10f64.ln();
        if ok(lo.exp()) {
            break;
        }
        if !eps(lo.exp()).is_finite() || lo < (delta * 1e-12).ln() {
            return f64::INFINITY;
        }
        hi = lo;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if ok(mid.exp()) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    2.0 * eps(lo.exp())
}

/// `P(Binomial(steps, q) > k)`, summed in log space. Cost: O(steps).
pub fn binomial_upper_tail(steps: u64, q: f64, k: u64) -> f64 {
    if k >= steps || q <= 0.0 {
        return 0.0;
    }
    if q >= 1.0 {
        return 1.0;
    }
    let n = steps as f64;
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let ln_fact_n = libm::lgamma(n + 1.0);
    let mut acc = f64::NEG_INFINITY;
    for j in (k + 1)..=steps {
        let j = j as f64;
        let lp =
            ln_fact_n - libm::lgamma(j + 1.0) - libm::lgamma(n - j + 1.0) + j * lq + (n - j) * l1q;
        acc = crate::normal::log_add_exp(acc, lp);
        // Terms decrease geometrically past the mean; stop when negligible.
        if j > n * q && lp < acc - 50.0 {
            break;
        }
    }
    acc.exp()
}

/// The smallest `k` with `P(Binomial(steps, q) > k) <= tail`: with probability at least
/// `1 - tail`, a given record is in at most `k` of `steps` Poisson batches. An observer who
/// knows the batch indices (a party) therefore faces at most a `k`-fold composition, at the
/// cost of `tail` in delta (the sampling does not depend on the data). Cost: O(steps log steps).
pub fn participation_bound(steps: u64, q: f64, tail: f64) -> u64 {
    let (mut lo, mut hi) = (0u64, steps);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if binomial_upper_tail(steps, q, mid) <= tail {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Per-iteration probability that a Poisson batch exceeds its public padded size
/// ([`padded_batch_size`]): 2^-40. The overflow is trimmed (the mechanism then differs from
/// Poisson sampling), so every iteration adds this much to delta.
pub const BATCH_OVERFLOW_TAIL: f64 = 9.094_947_017_729_282e-13;

/// The public batch size every batch is padded to, for `records` records sampled at rate
/// `q`: the smallest `b` with `P(Binomial(records, q) > b) <= tail`
/// ([`binomial_upper_tail`]), at least 1, and the overflow probability it leaves (at most
/// `tail`). A function of public quantities only, so every party and node derives the same
/// size. Cost O(records log records).
pub fn padded_batch_size(records: u64, q: f64, tail: f64) -> (usize, f64) {
    let b = participation_bound(records, q, tail).max(1);
    (b as usize, binomial_upper_tail(records, q, b))
}

/// The smallest noise multiplier (to a relative tolerance of 1e-6 for RDP, 1e-4 for PLD)
/// whose epsilon at `delta` is at most `target_epsilon`, for `steps` steps at rate
/// `sample_rate` under `relation`. The returned sigma always satisfies the target (it is the
/// upper end of the final bisection bracket). Searches sigma in [1e-3, 1e4].
///
/// Cost: about 60 accountant evaluations for RDP (well under a second); for PLD the bracket
/// is first found with RDP and refined with about 15 PLD evaluations.
pub fn calibrate_sigma(
    accountant: Accountant,
    target_epsilon: f64,
    delta: f64,
    sample_rate: f64,
    steps: u64,
    relation: Neighbouring,
) -> Result<f64, AccountingError> {
    if !(target_epsilon > 0.0 && target_epsilon.is_finite()) {
        return Err(AccountingError::TargetEpsilon(target_epsilon));
    }
    let eps_at = |acc: Accountant, sigma: f64| {
        epsilon(
            acc,
            &Composition {
                noise_multiplier: sigma,
                sample_rate,
                steps,
            },
            delta,
            relation,
        )
    };
    // Bracket with the cheap accountant; RDP is never below PLD, so RDP's sigma is an upper end.
    let (lo, hi) = bracket_up(1e-3, 1.0, 2.0, |sigma| {
        Ok(eps_at(Accountant::Rdp, sigma)? <= target_epsilon)
    })
    .map_err(|e| e.into_error(target_epsilon, |s| eps_at(Accountant::Rdp, s)))?;
    let hi = bisect_sigma(lo, hi, 1e-6, |sigma| {
        Ok(eps_at(Accountant::Rdp, sigma)? <= target_epsilon)
    })?;
    if accountant == Accountant::Rdp {
        return Ok(hi);
    }
    // Refine downward with the tight accountant inside [lower, hi].
    let mut lo = 1e-3f64.max(hi / 2.0);
    while eps_at(accountant, lo)? <= target_epsilon && lo > 1e-3 {
        lo /= 2.0;
    }
    // RDP is an upper bound, so PLD(hi) <= target in practice; guard it anyway.
    let (lo, hi_t) = bracket_up(lo, hi, 1.01, |sigma| {
        Ok(eps_at(accountant, sigma)? <= target_epsilon)
    })
    .map_err(|e| e.into_error(target_epsilon, |s| eps_at(accountant, s)))?;
    bisect_sigma(lo, hi_t, 1e-4, |sigma| {
        Ok(eps_at(accountant, sigma)? <= target_epsilon)
    })
}

/// The noise multiplier `--epsilon` asks for: the smallest sigma (to a relative tolerance of
/// 1e-6) whose outside-analyst epsilon under add/remove by the RDP accountant, as
/// [`crate::PrivacyReport`] states it, is at most `target_epsilon`. The report charges the
/// run's `failure` (its batch overflows and truncation wraps, summed over the `steps`
/// openings) to delta: the accountant runs at `delta - (1 + e^cap) failure`
/// ([`crate::amplified_delta`], `cap` one above the add/remove figure). With `failure = 0`
/// this is [`calibrate_sigma`]`(Accountant::Rdp, ..)`; with the failure charged the sigma is
/// a little larger (+0.02% at Adult's default), so that the printed epsilon is at most
/// the target. Errors as [`calibrate_sigma`], and a `failure` that leaves no delta to the
/// accountant ([`AccountingError::Delta`]). Cost: a few tens of RDP evaluations.
pub fn calibrate_sigma_charged(
    target_epsilon: f64,
    delta: f64,
    sample_rate: f64,
    steps: u64,
    failure: f64,
) -> Result<f64, AccountingError> {
    let uncharged = calibrate_sigma(
        Accountant::Rdp,
        target_epsilon,
        delta,
        sample_rate,
        steps,
        Neighbouring::AddRemove,
    )?;
    if failure == 0.0 {
        return Ok(uncharged);
    }
    // The charge is at least (1 + e) failure (its cap is at least 1): beyond that no sigma
    // leaves the accountant any delta.
    let least = (1.0 + std::f64::consts::E) * failure;
    if !(failure > 0.0 && failure.is_finite() && delta - least > 0.0) {
        return Err(AccountingError::Delta(delta - least));
    }
    // The report's analyst figure at sigma: amplified at the delta left after the charge
    // (None when the charge leaves no delta or the cap fails: the report then states the
    // coordinator's figure, which does not amplify and is far above the target; so where the
    // charge, 1 + e^(E + 1) times the failure, would exceed delta, sigma rises until the
    // figure is low enough for it: the calibration then gives less than E).
    let meets = |sigma: f64| -> Result<bool, AccountingError> {
        let c = Composition {
            noise_multiplier: sigma,
            sample_rate,
            steps,
        };
        let fig = crate::report::amplified_delta(
            delta,
            failure,
            |d| epsilon(Accountant::Rdp, &c, d, Neighbouring::AddRemove),
            |&ar: &f64| ar,
        )?;
        Ok(matches!(fig, Some((ar, _)) if ar <= target_epsilon))
    };
    // The charged figure is above the uncharged one at every sigma, so `uncharged` is a lower
    // end; step up until the target is met.
    let (lo, hi) = bracket_up(uncharged, uncharged * 1.001, 1.01, meets)
        .map_err(|e| e.into_error(target_epsilon, |_| Ok(f64::INFINITY)))?;
    bisect_sigma(lo, hi, 1e-6, meets)
}

/// The largest noise multiplier the calibrations try.
const MAX_SIGMA: f64 = 1e4;

/// Why [`bracket_up`] stopped without a bracket.
enum BracketError {
    /// The accountant failed.
    Accounting(AccountingError),
    /// No sigma up to [`MAX_SIGMA`] meets the target.
    Unreachable,
}

impl BracketError {
    /// The calibration's error: the accountant's, or [`AccountingError::Unreachable`] with
    /// `epsilon_at(MAX_SIGMA)`.
    fn into_error(
        self,
        target: f64,
        epsilon_at: impl Fn(f64) -> Result<f64, AccountingError>,
    ) -> AccountingError {
        match self {
            BracketError::Accounting(e) => e,
            BracketError::Unreachable => match epsilon_at(MAX_SIGMA) {
                Ok(reached) => AccountingError::Unreachable {
                    target,
                    max_sigma: MAX_SIGMA,
                    reached,
                },
                Err(e) => e,
            },
        }
    }
}

/// Steps `hi` up by `factor` (the last failing sigma becoming `lo`) until `meets(hi)`;
/// returns the bracket `(lo, hi)` for [`bisect_sigma`]. Errors: `meets` failed, or no sigma
/// up to [`MAX_SIGMA`] meets the target. Cost: one `meets` per step.
fn bracket_up(
    mut lo: f64,
    mut hi: f64,
    factor: f64,
    mut meets: impl FnMut(f64) -> Result<bool, AccountingError>,
) -> Result<(f64, f64), BracketError> {
    while !meets(hi).map_err(BracketError::Accounting)? {
        lo = hi;
        hi *= factor;
        if hi > MAX_SIGMA {
            return Err(BracketError::Unreachable);
        }
    }
    Ok((lo, hi))
}

/// Bisects `[lo, hi]` (where `meets(lo)` fails and `meets(hi)` holds, `meets` monotone in
/// sigma) until the bracket is narrower than `rel_tol * hi`; returns the upper end, the
/// smallest sigma found that meets the target. Cost: about `log2((hi - lo) / (rel_tol hi))`
/// evaluations of `meets`.
fn bisect_sigma(
    mut lo: f64,
    mut hi: f64,
    rel_tol: f64,
    mut meets: impl FnMut(f64) -> Result<bool, AccountingError>,
) -> Result<f64, AccountingError> {
    while hi - lo > rel_tol * hi {
        let mid = 0.5 * (lo + hi);
        if meets(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_inputs_naming_the_parameter() {
        let c = Composition {
            noise_multiplier: 1.0,
            sample_rate: 1.5,
            steps: 1,
        };
        let e = epsilon(Accountant::Rdp, &c, 1e-5, Neighbouring::AddRemove).unwrap_err();
        assert!(e.to_string().contains("sample rate"));
        let c = Composition {
            sample_rate: 0.5,
            noise_multiplier: -1.0,
            ..c
        };
        assert!(matches!(
            epsilon(Accountant::Rdp, &c, 1e-5, Neighbouring::AddRemove),
            Err(AccountingError::NoiseMultiplier(_))
        ));
        let c = Composition {
            noise_multiplier: 1.0,
            ..c
        };
        assert!(matches!(
            epsilon(Accountant::Rdp, &c, 0.0, Neighbouring::AddRemove),
            Err(AccountingError::Delta(_))
        ));
        assert!(matches!(
            calibrate_sigma(
                Accountant::Rdp,
                -1.0,
                1e-5,
                0.1,
                10,
                Neighbouring::AddRemove
            ),
            Err(AccountingError::TargetEpsilon(_))
        ));
    }

    #[test]
    fn binomial_tail_matches_direct_sums() {
        // Bin(10, 0.5): P(X > 7) = (45 + 10 + 1) / 1024.
        assert!((binomial_upper_tail(10, 0.5, 7) - 56.0 / 1024.0).abs() < 1e-14);
        assert_eq!(binomial_upper_tail(10, 0.5, 10), 0.0);
        let k = participation_bound(20_000, 100.0 / 30162.0, 5e-6);
        assert!(binomial_upper_tail(20_000, 100.0 / 30162.0, k) <= 5e-6);
        assert!(binomial_upper_tail(20_000, 100.0 / 30162.0, k - 1) > 5e-6);
        assert!((66..140).contains(&k), "{k}");
    }

    #[test]
    fn zero_steps_cost_nothing() {
        let c = Composition {
            noise_multiplier: 1.0,
            sample_rate: 0.1,
            steps: 0,
        };
        assert_eq!(
            epsilon(Accountant::Rdp, &c, 1e-5, Neighbouring::AddRemove).unwrap(),
            0.0
        );
    }

    #[test]
    fn replace_one_full_batch_is_sensitivity_two() {
        let c = Composition {
            noise_multiplier: 2.0 * 4.530_877_117,
            sample_rate: 1.0,
            steps: 1,
        };
        // RDP: sigma 4.530877117 gives (1, 1e-6) at sensitivity 1 (the vector), so
        // twice that sigma gives it at sensitivity 2.
        let e = epsilon(Accountant::Rdp, &c, 1e-6, Neighbouring::ReplaceOne).unwrap();
        assert!((e - 1.0).abs() < 1e-5, "{e}");
    }

    #[test]
    fn replace_one_is_never_below_add_remove() {
        let c = Composition {
            noise_multiplier: 1.5,
            sample_rate: 0.01,
            steps: 100,
        };
        let (ar, ro) = epsilon_both(Accountant::Rdp, &c, 1e-5).unwrap();
        assert!(ro >= ar && ro <= 2.5 * ar, "{ar} {ro}");
    }

    #[test]
    fn calibration_hits_the_target_from_above() {
        let sigma = calibrate_sigma(
            Accountant::Rdp,
            1.0,
            1e-5,
            0.01,
            1000,
            Neighbouring::AddRemove,
        )
        .unwrap();
        let c = Composition {
            noise_multiplier: sigma,
            sample_rate: 0.01,
            steps: 1000,
        };
        let e = epsilon(Accountant::Rdp, &c, 1e-5, Neighbouring::AddRemove).unwrap();
        assert!(e <= 1.0 && e > 0.999, "{sigma} -> {e}");
        // Full batch, one step, RDP: sigma for (1, 1e-6) is 4.530877117 (the vector).
        let s =
            calibrate_sigma(Accountant::Rdp, 1.0, 1e-6, 1.0, 1, Neighbouring::AddRemove).unwrap();
        assert!((s - 4.530_877_117).abs() < 1e-4, "{s}");
        // The exact Gaussian (PLD at q = 1) needs less noise for the same target.
        let p =
            calibrate_sigma(Accountant::Pld, 1.0, 1e-6, 1.0, 1, Neighbouring::AddRemove).unwrap();
        assert!(p < s, "{p} vs {s}");
    }
}
