//! The shadow-model attack on the most vulnerable records (LiRA, Carlini et al. 2022,
//! "Membership inference attacks from first principles", with a global variance).
//!
//! Threat model: the attacker knows the whole training set except whether one target record
//! is in it (the DP adversary), the training algorithm and its settings, and sees the trained
//! model. Targets are the members farthest from any other member (nearest-neighbour
//! distance in the feature space of [`crate::features`]): outliers are the records whose
//! presence moves a density model the most.
//!
//! For each target `x`, the mixture is trained `runs` times on the members with `x` ("in")
//! and `runs` times on the members without it ("out"), each run with fresh public and noise
//! seeds. The observable is `l = ln p(x)` under each run's posterior-mean mixture.
//!
//! The first half of each target's runs per world (`calibration`) fits the test: per target,
//! the means `mu_in`, `mu_out` of `l`; over all targets, one pooled variance `s^2` (too few
//! runs per target for a variance each). The score of a run is the Gaussian log-likelihood
//! ratio `((l - mu_out)^2 - (l - mu_in)^2) / (2 s^2)`. The other half of the runs (`test`)
//! is scored with that fit and gives the AUC, TPR at FPR and the epsilon bound; the
//! calibration runs, scored in-sample, only choose the epsilon test's threshold.
//!
//! Every run is an independent training, so test outcomes are independent trials and the
//! epsilon bound is a real audit of the shadow configuration (its own `steps`, which the
//! report gives with its theoretical epsilon), not of the released run itself.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;
use vtwin_data::Table;

use super::nearest::nearest_distances;
use super::roc::auc;
use super::training::{fit_mixture, FitError, FitSettings};
use crate::features::FeatureMatrix;

/// The shadow experiment's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ShadowSettings {
    /// Runs per world and target (at least 4: two calibration and two test runs per world).
    pub runs: usize,
    /// The training settings; `seed` and `noise_seed` are replaced per run (drawn from
    /// `seed` below).
    pub fit: FitSettings,
    /// Seed of the per-run seeds.
    pub seed: u64,
}

/// One target's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShadowTarget {
    /// Row of the target in the members table.
    pub row: usize,
    /// Its id.
    pub id: String,
    /// Distance to its nearest other member.
    pub nn_distance: f64,
    /// `ln p(x)` under each "in" run (calibration runs first).
    pub ll_in: Vec<f64>,
    /// `ln p(x)` under each "out" run.
    pub ll_out: Vec<f64>,
    /// AUC of raw `ln p(x)` over all of this target's runs (in against out).
    pub auc_raw: f64,
}

/// All targets' results and the LiRA scores.
#[derive(Debug, Clone, PartialEq)]
pub struct ShadowOutcome {
    /// Per target.
    pub targets: Vec<ShadowTarget>,
    /// The pooled standard deviation `s`.
    pub pooled_sd: f64,
    /// Scores of the calibration runs (in-sample): (in, out).
    pub calibration: (Vec<f64>, Vec<f64>),
    /// Scores of the test runs: (in, out).
    pub test: (Vec<f64>, Vec<f64>),
}

/// The shadow experiment failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShadowError {
    /// Too few runs.
    #[error("{0} shadow runs: at least 4 runs per world are needed (2 calibration, 2 test)")]
    Runs(usize),
    /// No target, or fewer members than 2.
    #[error("shadow attack: {targets} targets among {members} members: need at least one target and two members")]
    Targets {
        /// Targets given.
        targets: usize,
        /// Member records.
        members: usize,
    },
    /// Training a shadow model failed.
    #[error("shadow model (target row {row}, {world}, run {run}): {source}")]
    Fit {
        /// The target's row.
        row: usize,
        /// `in` or `out`.
        world: &'static str,
        /// The run.
        run: usize,
        /// The cause (boxed: it is large).
        source: Box<FitError>,
    },
    /// The target's likelihood could not be computed.
    #[error("shadow model (target row {row}): {source}")]
    Params {
        /// The target's row.
        row: usize,
        /// The cause.
        source: vtwin_data::params::ParamsError,
    },
}

/// The `k` candidates farthest from their nearest other member: `candidates` are rows of
/// the members table, `features` its feature matrix. Returns `(row, distance)`, farthest
/// first (ties by row). Cost O(candidates * members * dim).
pub fn most_isolated(
    features: &FeatureMatrix,
    candidates: &[usize],
    k: usize,
) -> Vec<(usize, f64)> {
    let queries = FeatureMatrix {
        rows: candidates.len(),
        cols: features.cols,
        data: candidates
            .iter()
            .flat_map(|&r| features.row(r).iter().copied())
            .collect(),
    };
    let d = nearest_distances(&queries, features, |q| Some(candidates[q]));
    let mut order: Vec<(usize, f64)> = candidates.iter().copied().zip(d).collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    order.truncate(k);
    order
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Runs the experiment on `targets` (`(row, nn_distance)` in `members`), calling
/// `progress(done, total)` after each training run. Cost `2 * runs * targets` trainings.
pub fn shadow_attack(
    members: &Table,
    targets: &[(usize, f64)],
    settings: &ShadowSettings,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ShadowOutcome, ShadowError> {
    if settings.runs < 4 {
        return Err(ShadowError::Runs(settings.runs));
    }
    if targets.is_empty() || members.n_rows() < 2 {
        return Err(ShadowError::Targets {
            targets: targets.len(),
            members: members.n_rows(),
        });
    }
    let mut seeds = ChaCha20Rng::seed_from_u64(settings.seed);
    let total = 2 * settings.runs * targets.len();
    let mut done = 0;
    let mut results = Vec::with_capacity(targets.len());
    for &(row, nn_distance) in targets {
        let target = members.select_rows(&[row]);
        let without: Vec<usize> = (0..members.n_rows()).filter(|&r| r != row).collect();
        let out_table = members.select_rows(&without);
        let mut ll = [Vec::new(), Vec::new()];
        for run in 0..settings.runs {
            for (w, (world, table)) in [("in", members), ("out", &out_table)].iter().enumerate() {
                let fit = FitSettings {
                    seed: seeds.random(),
                    noise_seed: seeds.random(),
                    ..settings.fit.clone()
                };
                let params = fit_mixture(table, &fit).map_err(|source| ShadowError::Fit {
                    row,
                    world,
                    run,
                    source: Box::new(source),
                })?;
                let l = params
                    .log_likelihood(&target)
                    .map_err(|source| ShadowError::Params { row, source })?[0];
                ll[w].push(l);
                done += 1;
                progress(done, total);
            }
        }
        let [ll_in, ll_out] = ll;
        let auc_raw = auc(&ll_in, &ll_out).unwrap_or(f64::NAN);
        results.push(ShadowTarget {
            row,
            id: members.ids[row].clone(),
            nn_distance,
            ll_in,
            ll_out,
            auc_raw,
        });
    }
    Ok(lira(results, settings.runs / 2))
}

/// Fits the per-target means and the pooled variance on the first `cal` runs of each world
/// and scores every run (module documentation).
fn lira(targets: Vec<ShadowTarget>, cal: usize) -> ShadowOutcome {
    let mut ss = 0.0;
    let mut dof = 0usize;
    let means: Vec<(f64, f64)> = targets
        .iter()
        .map(|t| {
            let (mi, mo) = (mean(&t.ll_in[..cal]), mean(&t.ll_out[..cal]));
            ss += t.ll_in[..cal].iter().map(|l| (l - mi).powi(2)).sum::<f64>();
            ss += t.ll_out[..cal]
                .iter()
                .map(|l| (l - mo).powi(2))
                .sum::<f64>();
            dof += 2 * (cal - 1);
            (mi, mo)
        })
        .collect();
    // A zero variance (identical runs) would make every score infinite; floor it.
    let var = (ss / dof as f64).max(f64::MIN_POSITIVE);
    let score = |l: f64, (mi, mo): (f64, f64)| ((l - mo).powi(2) - (l - mi).powi(2)) / (2.0 * var);
    let mut out = ShadowOutcome {
        targets: Vec::new(),
        pooled_sd: var.sqrt(),
        calibration: (Vec::new(), Vec::new()),
        test: (Vec::new(), Vec::new()),
    };
    for (t, &m) in targets.iter().zip(&means) {
        out.calibration
            .0
            .extend(t.ll_in[..cal].iter().map(|&l| score(l, m)));
        out.calibration
            .1
            .extend(t.ll_out[..cal].iter().map(|&l| score(l, m)));
        out.test
            .0
            .extend(t.ll_in[cal..].iter().map(|&l| score(l, m)));
        out.test
            .1
            .extend(t.ll_out[cal..].iter().map(|&l| score(l, m)));
    }
    out.targets = targets;
    out
}
