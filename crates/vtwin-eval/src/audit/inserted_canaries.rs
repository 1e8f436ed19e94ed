//! The black-box canary attack: outlier canaries inserted into the training set at random,
//! membership decided from the trained model's density (the one-run design of Steinke,
//! Nasr and Jagielski 2023; bound in [`super::one_run`]).
//!
//! The auditor draws m distinct outliers ([`super::canary::random_outliers`]) and inserts
//! each independently with probability 1/2 into the members. One model is trained on the
//! result with the release's noise, clip and sampling rate (its own iteration count, whose
//! theoretical epsilon the report gives). Each canary c is scored by
//! `ln p_trained(c) - ln p_released(c)`: the released model never saw a canary, so the
//! difference removes how likely the outlier is anyway. The auditor guesses "in" for the
//! top `guess_fraction` of the scores and "out" for the bottom `guess_fraction` (a rule
//! fixed in advance) and abstains on the rest; the number of right guesses gives the
//! one-run bound. Only the model's density at the canaries is used: a black-box attack.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;
use vtwin_data::{MixtureParams, Table};

use super::canary::{random_outliers, with_canaries};
use super::one_run::epsilon_lower_bound;
use super::training::{fit_mixture, FitError, FitSettings};

/// The attack's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertedCanarySettings {
    /// m, the canaries drawn (at least 2).
    pub canaries: usize,
    /// Fraction of the canaries guessed "in" (the highest scores), and again "out" (the
    /// lowest); in (0, 0.5].
    pub guess_fraction: f64,
    /// The training settings of the canary model.
    pub fit: FitSettings,
    /// Seed of the canaries and of the insertion.
    pub seed: u64,
    /// delta of the bound.
    pub delta: f64,
    /// Confidence of the bound.
    pub confidence: f64,
}

/// The attack's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertedCanaryOutcome {
    /// Scores of the inserted canaries.
    pub scores_in: Vec<f64>,
    /// Scores of the canaries left out.
    pub scores_out: Vec<f64>,
    /// m.
    pub canaries: u64,
    /// r: guesses made.
    pub guesses: u64,
    /// v: right guesses.
    pub correct: u64,
    /// The one-run lower bound at `confidence` ([`super::one_run`]).
    pub epsilon_lower_bound: f64,
}

/// The attack failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InsertedCanaryError {
    /// A setting is out of range.
    #[error("canary attack: {0}")]
    Setting(&'static str),
    /// The canary model could not be trained.
    #[error("canary attack: training: {0}")]
    Fit(#[from] Box<FitError>),
    /// A density could not be evaluated.
    #[error("canary attack: density: {0}")]
    Params(#[from] vtwin_data::params::ParamsError),
}

/// Runs the attack on `members` against the `released` model's density (module docs).
/// Cost: one training of `fit.iterations` steps on N + m/2 records, two density evaluations.
pub fn inserted_canary_attack(
    members: &Table,
    released: &MixtureParams,
    s: &InsertedCanarySettings,
) -> Result<InsertedCanaryOutcome, InsertedCanaryError> {
    if s.canaries < 2 {
        return Err(InsertedCanaryError::Setting(
            "at least 2 canaries are needed",
        ));
    }
    if !(s.guess_fraction > 0.0 && s.guess_fraction <= 0.5) {
        return Err(InsertedCanaryError::Setting(
            "the guess fraction must be in (0, 0.5]",
        ));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(s.seed);
    let canaries = random_outliers(&members.schema, s.canaries, &mut rng);
    if canaries.len() < 2 {
        return Err(InsertedCanaryError::Setting(
            "the schema has fewer than 2 distinct outliers",
        ));
    }
    let inserted: Vec<bool> = canaries.iter().map(|_| rng.random_bool(0.5)).collect();
    let chosen: Vec<_> = canaries
        .iter()
        .zip(&inserted)
        .filter(|(_, &i)| i)
        .map(|(c, _)| c.clone())
        .collect();
    let training = with_canaries(members, &chosen);
    let trained = fit_mixture(&training, &s.fit).map_err(Box::new)?;
    let all = with_canaries(&members.select_rows(&[]), &canaries);
    let scores: Vec<f64> = trained
        .log_likelihood(&all)?
        .iter()
        .zip(released.log_likelihood(&all)?)
        .map(|(t, r)| t - r)
        .collect();

    // Guesses by rank: the top k "in", the bottom k "out".
    let m = scores.len();
    let k = ((m as f64 * s.guess_fraction).floor() as usize)
        .max(1)
        .min(m / 2);
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let correct = order[..k].iter().filter(|&&i| !inserted[i]).count()
        + order[m - k..].iter().filter(|&&i| inserted[i]).count();
    let (mut scores_in, mut scores_out) = (Vec::new(), Vec::new());
    for (score, &was_in) in scores.iter().zip(&inserted) {
        if was_in {
            scores_in.push(*score);
        } else {
            scores_out.push(*score);
        }
    }
    let (m, r, v) = (m as u64, 2 * k as u64, correct as u64);
    Ok(InsertedCanaryOutcome {
        scores_in,
        scores_out,
        canaries: m,
        guesses: r,
        correct: v,
        epsilon_lower_bound: epsilon_lower_bound(m, r, v, s.delta, s.confidence),
    })
}
