//! Membership-inference attacks on a synthetic table and its model (docs/audit.md).
//!
//! Members are training records, non-members held-out records of the same population. Each
//! attack gives every record (or every shadow run) a score, higher meaning "member"; the
//! report gives the AUC, the TPR at FPR 0.01 and an empirical lower bound on epsilon with a
//! confidence interval, beside the theoretical epsilon from `privacy.json`.
//!
//! - [`distance`]: distance to the closest synthetic record (black box: synthetic data only).
//! - [`domias`]: density ratio of the released model against a reference density.
//! - [`shadow`]: models retrained with and without the most isolated members.
//! - [`inserted_canaries`]: outlier canaries inserted at random, one training, the model's
//!   density at each canary (black box; one-run bound, [`one_run`]).
//!
//! Metrics: [`roc`] (AUC, ROC, TPR at FPR), [`clopper_pearson`], [`epsilon_bound`].
//! Plumbing: [`split`] (which records), [`nearest`] (distances), [`training`] (mixtures),
//! [`privacy_claim`] (privacy.json), [`report`] (JSON).
//!
//! Entry point: [`run_audit`].
//!
//! The mechanism audit ([`mechanism`], `vtwin audit-mechanism`) tests the training
//! mechanism itself: [`canary`] records through the real backend's iterations, scored from
//! the released noisy sums, with bounds from [`gdp`] and [`epsilon_bound`].

pub mod canary;
pub mod clopper_pearson;
pub mod distance;
pub mod domias;
pub mod epsilon_bound;
pub mod gdp;
pub mod inserted_canaries;
pub mod mechanism;
pub mod nearest;
pub mod one_run;
pub mod privacy_claim;
pub mod report;
pub mod roc;
pub mod shadow;
pub mod split;
pub mod training;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_data::Table;
use vtwin_model::model_file::ModelFile;
use vtwin_model::tempering::Tempering;

use crate::features::{FeatureError, FeatureMap};
use epsilon_bound::Labelled;
use inserted_canaries::{inserted_canary_attack, InsertedCanaryError, InsertedCanarySettings};
use privacy_claim::PrivacyClaim;
use report::{attack_report, MetricsError};
pub use report::{AttackReport, AuditReport};
use shadow::{most_isolated, shadow_attack, ShadowError, ShadowSettings};
use split::AuditSplit;
use training::{fit_mixture, FitError, FitSettings, TrainBackend};

/// The attacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Attack {
    /// [`distance`].
    DistanceToClosestRecord,
    /// [`domias`].
    DensityRatio,
    /// [`shadow`].
    ShadowModel,
    /// [`inserted_canaries`].
    InsertedCanaries,
}

impl Attack {
    /// Every attack, in report order.
    pub const ALL: [Attack; 4] = [
        Attack::DistanceToClosestRecord,
        Attack::DensityRatio,
        Attack::ShadowModel,
        Attack::InsertedCanaries,
    ];

    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Attack::DistanceToClosestRecord => "distance_to_closest_record",
            Attack::DensityRatio => "density_ratio",
            Attack::ShadowModel => "shadow_model",
            Attack::InsertedCanaries => "inserted_canaries",
        }
    }
}

/// The audit's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    /// Which attacks, in report order.
    pub attacks: Vec<Attack>,
    /// Records scored per class, at most ([`split`]).
    pub records: usize,
    /// Seed of the sampling and of every audit model.
    pub seed: u64,
    /// Confidence of the intervals, in (0, 1).
    pub confidence: f64,
    /// DPVI iterations of the reference density (density ratio).
    pub reference_iterations: u64,
    /// Shadow targets k.
    pub shadow_targets: usize,
    /// Shadow runs per world and target.
    pub shadow_runs: usize,
    /// DPVI iterations per shadow model.
    pub shadow_iterations: u64,
    /// Backend of the shadow models.
    pub shadow_backend: TrainBackend,
    /// Adam learning rate of the audit's models (vtwin train's default 0.01).
    pub lr: f64,
    /// Canaries drawn by the inserted-canary attack (about half are inserted).
    pub canaries: usize,
    /// DPVI iterations of the inserted-canary attack's model.
    pub canary_iterations: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            attacks: Attack::ALL.to_vec(),
            records: 2000,
            seed: 0,
            confidence: 0.95,
            reference_iterations: 2000,
            shadow_targets: 5,
            shadow_runs: 4,
            shadow_iterations: 300,
            shadow_backend: TrainBackend::Fixed,
            lr: 0.01,
            canaries: 1000,
            canary_iterations: 300,
        }
    }
}

/// What the audit reads. Every table must have the model's schema.
#[derive(Debug, Clone, Copy)]
pub struct AuditData<'a> {
    /// The released model.
    pub model: &'a ModelFile,
    /// Its privacy claim.
    pub privacy: &'a PrivacyClaim,
    /// The synthetic table.
    pub synthetic: &'a Table,
    /// The training records (the whole training set: the shadow attack retrains on it).
    pub members: &'a Table,
    /// Held-out records of the same population.
    pub non_members: &'a Table,
    /// Reference records for the density ratio; None: half of the non-members.
    pub reference: Option<&'a Table>,
}

/// The audit failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A table's schema differs from the model's.
    #[error("the {table} table's schema differs from the model's")]
    Schema {
        /// Which table.
        table: &'static str,
    },
    /// The confidence is not in (0, 1).
    #[error("confidence {0} is not in (0, 1)")]
    Confidence(f64),
    /// Too few records to split into members, non-members and reference.
    #[error(transparent)]
    Split(#[from] split::SplitError),
    /// Feature encoding failed.
    #[error("{table} table: {source}")]
    Features {
        /// Which table.
        table: &'static str,
        /// The cause.
        source: FeatureError,
    },
    /// The model's density could not be evaluated.
    #[error("{what}: {source}")]
    Params {
        /// What was evaluated.
        what: &'static str,
        /// The cause.
        source: vtwin_data::params::ParamsError,
    },
    /// The reference density could not be trained.
    #[error("reference density: {0}")]
    Reference(#[source] Box<FitError>),
    /// The shadow experiment failed.
    #[error(transparent)]
    Shadow(#[from] ShadowError),
    /// The inserted-canary attack failed.
    #[error(transparent)]
    InsertedCanaries(#[from] InsertedCanaryError),
    /// The shadow configuration's epsilon could not be computed.
    #[error("shadow epsilon: {0}")]
    Accounting(#[from] vtwin_dp::AccountingError),
    /// An attack's scores could not be analysed.
    #[error("{attack}: {source}")]
    Metrics {
        /// The attack.
        attack: &'static str,
        /// The cause.
        source: MetricsError,
    },
}

/// Splits `v` (a class's scores, selection half first) at `s`.
fn halves(v: &[f64], s: usize) -> (&[f64], &[f64]) {
    v.split_at(s)
}

fn report_for(
    attack: Attack,
    members: &[f64],
    non_members: &[f64],
    selection_len: usize,
    data: &AuditData<'_>,
    confidence: f64,
) -> Result<AttackReport, AuditError> {
    let (ms, me) = halves(members, selection_len);
    let (ns, ne) = halves(non_members, selection_len);
    attack_report(
        attack.name(),
        Labelled {
            members,
            non_members,
        },
        Labelled {
            members: ms,
            non_members: ns,
        },
        Labelled {
            members: me,
            non_members: ne,
        },
        data.privacy.delta,
        confidence,
    )
    .map_err(|source| AuditError::Metrics {
        attack: attack.name(),
        source,
    })
}

/// Runs the attacks of `config` on `data` (module documentation), reporting progress as
/// short lines through `progress`. Cost: DCR O(n * synthetic * dim); density ratio
/// `reference_iterations` DPVI steps; shadow `2 * shadow_runs * shadow_targets` trainings of
/// `shadow_iterations` steps plus O(n * members * dim) to find the targets.
pub fn run_audit(
    data: &AuditData<'_>,
    config: &AuditConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<AuditReport, AuditError> {
    let schema = &data.model.schema;
    for (table, t) in [
        ("synthetic", data.synthetic),
        ("members", data.members),
        ("non-members", data.non_members),
    ]
    .into_iter()
    .chain(data.reference.map(|r| ("reference", r)))
    {
        if &t.schema != schema {
            return Err(AuditError::Schema { table });
        }
    }
    if !(config.confidence > 0.0 && config.confidence < 1.0) {
        return Err(AuditError::Confidence(config.confidence));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
    let split = AuditSplit::draw(
        data.members.n_rows(),
        data.non_members.n_rows(),
        config.records,
        data.reference.is_some(),
        &mut rng,
    )?;
    let members = data.members.select_rows(&split.members);
    let non_members = data.non_members.select_rows(&split.non_members);
    let sel = split.selection_len();
    let map = FeatureMap::new(schema, None).map_err(|source| AuditError::Features {
        table: "model",
        source,
    })?;
    let encode = |table: &'static str, t: &Table| {
        map.encode(t)
            .map_err(|source| AuditError::Features { table, source })
    };

    let mut attacks = Vec::new();
    let mut reference_rows = 0;
    for &attack in &config.attacks {
        match attack {
            Attack::DistanceToClosestRecord => {
                progress("distance to closest record");
                let synth = encode("synthetic", data.synthetic)?;
                let sm = distance::dcr_scores(&encode("members", &members)?, &synth);
                let sn = distance::dcr_scores(&encode("non-members", &non_members)?, &synth);
                let mut r = report_for(attack, &sm, &sn, sel, data, config.confidence)?;
                r.details = serde_json::json!({
                    "score": "minus the Euclidean distance to the nearest synthetic record (one-hot/scaled features)",
                    "synthetic_records": data.synthetic.n_rows(),
                    "feature_dim": map.dim(),
                });
                attacks.push(r);
            }
            Attack::DensityRatio => {
                let reference = match data.reference {
                    Some(r) => r.clone(),
                    None => data.non_members.select_rows(&split.reference),
                };
                reference_rows = reference.n_rows();
                progress(&format!(
                    "density ratio: fitting the reference density on {reference_rows} records ({} iterations)",
                    config.reference_iterations
                ));
                let fit = FitSettings {
                    components: data.model.components,
                    iterations: config.reference_iterations,
                    sample_rate: (100.0 / reference_rows as f64).min(1.0),
                    clip: data.privacy.clip,
                    sigma: 0.0,
                    lr: config.lr,
                    backend: TrainBackend::Float,
                    seed: config.seed,
                    noise_seed: config.seed,
                    tempering: Tempering::default_for(config.reference_iterations),
                };
                let p_ref = fit_mixture(&reference, &fit)
                    .map_err(|e| AuditError::Reference(Box::new(e)))?;
                let p_model = data.model.mean_params();
                let score = |what: &'static str, t: &Table| {
                    domias::density_ratio_scores(&p_model, &p_ref, t)
                        .map_err(|source| AuditError::Params { what, source })
                };
                let sm = score("density ratio of the members", &members)?;
                let sn = score("density ratio of the non-members", &non_members)?;
                let mut r = report_for(attack, &sm, &sn, sel, data, config.confidence)?;
                r.details = serde_json::json!({
                    "score": "ln p_model(x) - ln p_ref(x); p_model at the released posterior mean, p_ref the same mixture family fitted without noise (float backend) on the reference records",
                    "reference_records": reference_rows,
                    "reference_source": if data.reference.is_some() { "--reference file" } else { "non-members not scored" },
                    "reference_iterations": config.reference_iterations,
                    "reference_sample_rate": fit.sample_rate,
                    "components": fit.components,
                });
                attacks.push(r);
            }
            Attack::ShadowModel => {
                progress("shadow models: choosing the most isolated members");
                let all_members = encode("members", data.members)?;
                let targets = most_isolated(&all_members, &split.members, config.shadow_targets);
                let settings = ShadowSettings {
                    runs: config.shadow_runs,
                    fit: FitSettings {
                        components: data.model.components,
                        iterations: config.shadow_iterations,
                        sample_rate: data.privacy.sample_rate,
                        clip: data.privacy.clip,
                        sigma: data.privacy.sigma,
                        lr: config.lr,
                        backend: config.shadow_backend,
                        seed: 0,
                        noise_seed: 0,
                        tempering: Tempering::default_for(config.shadow_iterations),
                    },
                    seed: config.seed,
                };
                let mut tick = |done: usize, total: usize| {
                    progress(&format!("shadow models: {done}/{total} trained"));
                };
                let out = shadow_attack(data.members, &targets, &settings, &mut tick)?;
                let (ci, co) = (&out.calibration.0, &out.calibration.1);
                let (ti, to) = (&out.test.0, &out.test.1);
                let mut r = attack_report(
                    attack.name(),
                    Labelled {
                        members: ti,
                        non_members: to,
                    },
                    Labelled {
                        members: ci,
                        non_members: co,
                    },
                    Labelled {
                        members: ti,
                        non_members: to,
                    },
                    data.privacy.delta,
                    config.confidence,
                )
                .map_err(|source| AuditError::Metrics {
                    attack: attack.name(),
                    source,
                })?;
                r.epsilon_theoretical_audited =
                    data.privacy.epsilon_at_steps(config.shadow_iterations)?;
                r.details = serde_json::json!({
                    "score": "LiRA Gaussian log-likelihood ratio of ln p(target) (per-target means, pooled variance) fitted on the calibration runs; AUC, TPR and the bound on the test runs",
                    "targets": out.targets,
                    "runs_per_world": config.shadow_runs,
                    "calibration_runs_per_world": config.shadow_runs / 2,
                    "iterations": config.shadow_iterations,
                    "released_iterations": data.privacy.steps,
                    "backend": config.shadow_backend,
                    "sigma": data.privacy.sigma,
                    "sample_rate": data.privacy.sample_rate,
                    "clip": data.privacy.clip,
                    "components": data.model.components,
                    "pooled_sd": out.pooled_sd,
                });
                attacks.push(r);
            }
            Attack::InsertedCanaries => {
                progress(&format!(
                    "inserted canaries: training with about {} of {} outliers ({} iterations)",
                    config.canaries / 2,
                    config.canaries,
                    config.canary_iterations
                ));
                let settings = InsertedCanarySettings {
                    canaries: config.canaries,
                    guess_fraction: 0.1,
                    fit: FitSettings {
                        components: data.model.components,
                        iterations: config.canary_iterations,
                        sample_rate: data.privacy.sample_rate,
                        clip: data.privacy.clip,
                        sigma: data.privacy.sigma,
                        lr: config.lr,
                        backend: config.shadow_backend,
                        seed: config.seed,
                        noise_seed: config.seed.wrapping_add(1),
                        tempering: Tempering::default_for(config.canary_iterations),
                    },
                    seed: config.seed,
                    delta: data.privacy.delta,
                    confidence: config.confidence,
                };
                let out =
                    inserted_canary_attack(data.members, &data.model.mean_params(), &settings)?;
                let (si, so) = (&out.scores_in, &out.scores_out);
                let sel = si.len().min(so.len()) / 2;
                let mut r = report_for(attack, si, so, sel, data, config.confidence)?;
                // The canaries share one training, so the per-canary test's trials are not
                // independent: the rigorous figure is the one-run bound.
                r.epsilon_lower_bound = out.epsilon_lower_bound;
                r.epsilon_lower_bound_ci = (out.epsilon_lower_bound, None);
                r.epsilon_theoretical_audited =
                    data.privacy.epsilon_at_steps(config.canary_iterations)?;
                r.details = serde_json::json!({
                    "score": "ln p_trained(c) - ln p_released(c) at the posterior means: the model trained with the inserted canaries against the released model, which saw none",
                    "bound": "one-run bound (Steinke, Nasr and Jagielski 2023): v right guesses of r (the top and bottom 10% of the scores) among m canaries inserted with probability 1/2; epsilon_test treats the canaries as independent trials and is shown for comparison only",
                    "canaries": out.canaries,
                    "inserted": si.len(),
                    "guesses": out.guesses,
                    "correct": out.correct,
                    "iterations": config.canary_iterations,
                    "backend": config.shadow_backend,
                    "sigma": data.privacy.sigma,
                    "sample_rate": data.privacy.sample_rate,
                    "clip": data.privacy.clip,
                });
                attacks.push(r);
            }
        }
    }
    Ok(AuditReport {
        attacks,
        epsilon_theoretical: data.privacy.epsilon(),
        epsilon_theoretical_by_accountant: data.privacy.epsilon_add_remove.clone(),
        delta: data.privacy.delta,
        members: split.per_class(),
        non_members: split.per_class(),
        reference: reference_rows,
        synthetic: data.synthetic.n_rows(),
        members_available: data.members.n_rows(),
        non_members_available: data.non_members.n_rows(),
        confidence: config.confidence,
        seed: config.seed,
    })
}
