//! The mechanism audit (`vtwin audit-mechanism`, docs/audit.md): canaries through the real
//! backend's iterations, scored from the released noisy sums, against the theoretical
//! epsilon of an observer who knows the batches.
//!
//! Worlds and trials. For each canary c ([`super::canary`]) the auditor runs `trials`
//! trainings of T iterations with c in every batch ("with c") and `trials` without any
//! canary ("without"; shared by all canaries). Each run is the training loop of `vtwin
//! train` ([`Trainer`] plan, the backend's gradient with the parties' discrete Gaussian
//! noise shares, charge, apply) over the same data, with its own batch key, noise and MPC
//! randomness (derived from the audit seed and the run: the audit's runs are never released,
//! and a seed makes the audit reproducible). The canary is added to the batch the trainer
//! sampled from the other records, and every batch is padded to one public size.
//!
//! The observer (the coordinator's view: it knows which records are in each batch) sees the
//! released G_t + Z_t and the public parameters, and, as a differential-privacy adversary,
//! knows every other record and the implementation. From the public state of the run (theta_t
//! follows from the released sums) it runs the audited implementation itself without noise:
//! the sum of the batch's other records S_t = A(B_t), and the canary's contribution
//! h_t = A({c}) (the canary alone). It scores the run by the likelihood-ratio statistic of
//! Gaussian noise,
//!
//! `score = sum_t <G_t + Z_t - S_t, h_t / |h_t|> / (sigma C sqrt(T))`,
//!
//! which is N(0, 1) without the canary if the noise is as claimed, and
//! N(sum_t |h_t| / (sigma C sqrt T), 1) with it. Since h_t is the implementation's own
//! contribution of the canary, the projection carries all of it: a clip that lets the canary
//! through at k C shifts the score k times further, in whatever direction. Nothing inside the
//! mechanism's run (clip factors, noise, shares) enters the score, and the bound comes from
//! the scores' empirical distributions, whatever the statistic: a wrong S_t or h_t can only
//! weaken the test, not make the bound unsound.
//!
//! The bound. The threshold is fixed before any run: half the shift the claim allows,
//! `mu_claim / 2` with `mu_claim = sqrt(T) / sigma`. Its false-positive and false-negative
//! counts give, per canary, a lower confidence bound on the GDP mu ([`super::gdp`]), hence on
//! epsilon at delta (the headline, Nasr et al. 2023). With k canaries each bound is taken at
//! confidence `1 - (1 - confidence)/k` (Bonferroni), so the largest of them holds at
//! `confidence`. The assumption-free Clopper-Pearson bound ([`super::epsilon_bound`]:
//! threshold chosen on half of the runs, bound on the other half) is reported beside it.
//!
//! The theoretical figure is vtwin-dp's PLD epsilon for T compositions at q = 1 with the
//! noise the observer does not know (the parties' shares, after the distributed discrete
//! Gaussian correction), at delta less the truncation failures: what `privacy.json` gives an
//! observer who knows that a record is in all T batches.
//!
//! The report is not a differential-privacy release: it holds thousands of runs on the data,
//! with batch keys, noise and MPC randomness derived from `seed` (reproducible by design).
//! Keep it with the data.
//!
//! Cost: (k + 1) `trials` runs of T iterations; each iteration is one backend gradient of the
//! padded batch, one more without noise (S_t), and one or k of a single record (h_t).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_data::Table;
use vtwin_dp::{Accountant, PrivacyReport, PrivacySetting, Sampling};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{BackendError, GradientBackend, GradientInput, NoiseConfig, NoiseRngs};
use vtwin_model::dpvi::{DpviConfig, DpviError};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::kernels::KernelError;
use vtwin_model::layout::{Layout, LayoutError};
use vtwin_model::mpc_backend::MpcBackend;
use vtwin_model::party_data::{PartyBatch, PartyData, StatsError};
use vtwin_model::tempering::Tempering;
use vtwin_model::trainer::Trainer;

use super::canary::{canary, with_canaries, CanaryKind};
use super::clopper_pearson::IntervalError;
use super::epsilon_bound::{epsilon_lower_bound, EpsilonBound, EpsilonBoundError, Labelled};
use super::gdp::{epsilon_of_delta, mu_lower_bound, mu_of_composition, GdpBound};

/// The backend whose mechanism is audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditBackend {
    /// The plaintext fixed-point reference ([`FixedBackend`]), as `vtwin train --backend fixed`.
    Fixed,
    /// Three in-memory MPC nodes ([`MpcBackend`]), as `vtwin train --backend mpc`.
    Mpc,
}

/// The settings of a mechanism audit.
#[derive(Debug, Clone, PartialEq)]
pub struct MechanismAuditSettings {
    /// The backend.
    pub backend: AuditBackend,
    /// Renormalisation of the fixed-point backends.
    pub renormalise: Renormalise,
    /// Mixture components K.
    pub components: usize,
    /// Poisson sampling rate q of the other records.
    pub sample_rate: f64,
    /// Clip bound C the privacy claim is made for.
    pub clip: f64,
    /// Noise multiplier sigma (noise std sigma C per coordinate).
    pub sigma: f64,
    /// delta of the figures.
    pub delta: f64,
    /// Iterations T per run.
    pub iterations: u64,
    /// Adam learning rate.
    pub lr: f64,
    /// Runs per world.
    pub trials: usize,
    /// Confidence of the lower bounds (e.g. 0.95).
    pub confidence: f64,
    /// Seed of the runs' randomness (public init, batch keys, noise, MPC).
    pub seed: u64,
    /// 1 for the mechanism vtwin runs. A test of the audit's power sets k > 1: the backend
    /// then clips at k C while the noise and the claim stay those of C (a broken clip).
    pub sensitivity_inflation: f64,
    /// Worker threads (runs are independent).
    pub threads: usize,
}

/// The audit could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MechanismAuditError {
    /// Fewer than 4 training runs per world.
    #[error("{0} trials per world: at least 4 are needed")]
    Trials(usize),
    /// No training iteration.
    #[error("{0} iterations: at least 1 is needed")]
    Iterations(u64),
    /// The audit needs noise.
    #[error(
        "noise multiplier sigma = {0}: the audit needs noise, sigma must be positive and finite"
    )]
    Sigma(f64),
    /// delta outside (0, 1).
    #[error("delta = {0} must be in (0, 1)")]
    Delta(f64),
    /// Confidence outside (0, 1).
    #[error("confidence {0} must be in (0, 1)")]
    Confidence(f64),
    /// A sensitivity inflation below 1 or not finite.
    #[error("sensitivity inflation {0} must be at least 1")]
    SensitivityInflation(f64),
    /// No worker thread.
    #[error("at least one thread is needed")]
    NoThreads,
    /// A sampled batch larger than its public size.
    #[error(transparent)]
    BatchOverflow(#[from] vtwin_model::party_data::BatchOverflow),
    /// The privacy report lacks the coordinator's add/remove PLD figure.
    #[error("the privacy report has no coordinator figure")]
    NoCoordinatorFigure,
    /// A training run ended without a result (a worker stopped early).
    #[error("a run did not finish")]
    Unfinished,
    /// The schema gives no layout.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The data gives no statistics.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// A backend could not be built.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// A backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The training loop refused a step.
    #[error(transparent)]
    Dpvi(#[from] DpviError),
    /// The theoretical figure could not be computed.
    #[error("theoretical epsilon: {0}")]
    Report(#[from] vtwin_dp::ReportError),
    /// A confidence bound could not be computed.
    #[error(transparent)]
    Interval(#[from] IntervalError),
    /// The assumption-free bound could not be computed.
    #[error(transparent)]
    EpsilonBound(#[from] EpsilonBoundError),
}

/// One canary's results.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CanaryReport {
    /// Which canary.
    pub canary: CanaryKind,
    /// The test's true-positive rate at the threshold (runs with the canary scored "with").
    pub tpr: f64,
    /// The test's false-positive rate at the threshold.
    pub fpr: f64,
    /// The GDP bound from the errors (at the Bonferroni-adjusted confidence).
    pub gdp: GdpBound,
    /// `epsilon_of_delta(gdp.mu_lower_bound, delta)`.
    pub epsilon_lower_bound: f64,
    /// The assumption-free bound (Clopper-Pearson, threshold chosen on half the runs).
    pub clopper_pearson: EpsilonBound,
    /// Mean score with the canary (the claim allows `mu_theoretical`).
    pub mean_score_with: f64,
    /// Mean score without.
    pub mean_score_without: f64,
    /// Standard deviation of the scores without the canary (1 if the noise is as claimed).
    pub sd_score_without: f64,
    /// Mean over runs and iterations of |h_t| / C: the canary's contribution as the audited
    /// backend computes it (noiseless, the canary alone), in units of the claimed clip.
    pub mean_contribution_over_clip: f64,
    /// Largest |h_t| / C seen.
    pub max_contribution_over_clip: f64,
    /// Mean over iterations of the largest coordinate's share of |h_t|^2 (1: a Dirac).
    pub top_coordinate_share: f64,
    /// Scores of the runs with the canary.
    pub scores_with: Vec<f64>,
    /// Scores of the runs without (this canary's direction).
    pub scores_without: Vec<f64>,
}

/// The audit's results (`--out FILE.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MechanismAuditReport {
    /// The backend audited.
    pub backend: AuditBackend,
    /// The observer whose view is audited.
    pub observer: &'static str,
    /// N (without canaries).
    pub records: usize,
    /// Model dimension d.
    pub dimension: usize,
    /// K.
    pub components: usize,
    /// q of the other records.
    pub sample_rate: f64,
    /// The public padded batch size (the trainer's, plus one for the canary).
    pub padded_batch: usize,
    /// C.
    pub clip: f64,
    /// sigma.
    pub sigma: f64,
    /// delta.
    pub delta: f64,
    /// T.
    pub iterations: u64,
    /// Runs per world.
    pub trials: usize,
    /// Confidence of the bounds.
    pub confidence: f64,
    /// 1 unless the mechanism was deliberately broken (module docs).
    pub sensitivity_inflation: f64,
    /// The PLD epsilon (add/remove) of this observer at sigma, T and delta (module docs).
    pub epsilon_theoretical: f64,
    /// sqrt(T) / sigma: the GDP mu of the claim, before the discrete-noise correction.
    pub mu_theoretical: f64,
    /// The decision threshold on the score, fixed in advance: mu_theoretical / 2.
    pub threshold: f64,
    /// The largest canary's epsilon lower bound (GDP method), at `confidence`.
    pub epsilon_lower_bound: f64,
    /// How `epsilon_lower_bound` is computed.
    pub method: &'static str,
    /// The largest assumption-free (Clopper-Pearson) bound over the canaries.
    pub epsilon_lower_bound_clopper_pearson: f64,
    /// Both bounds are at most `epsilon_theoretical`: the audit found no violation. (For a
    /// correct mechanism each bound exceeds it with probability at most 1 - confidence, so
    /// a false alarm has probability at most 2 (1 - confidence).)
    pub sound: bool,
    /// Truncation-failure bound summed over a run's openings (charged to delta).
    pub truncation_failure_per_run: f64,
    /// Per canary.
    pub canaries: Vec<CanaryReport>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// One run's per-canary statistics.
#[derive(Debug, Clone, Default)]
struct RunOutcome {
    /// Score per canary (for "with c" runs only c's entry is filled).
    scores: Vec<f64>,
    /// Per canary: sum over iterations of |h_t|/C, max |h_t|/C, sum of top-coordinate shares.
    contribution_sum: Vec<f64>,
    contribution_max: Vec<f64>,
    top_share_sum: Vec<f64>,
    truncation_failure: f64,
}

/// The data of a run: the parties' statistics with the canaries as the last rows.
struct AuditData {
    layout: Layout,
    parties: Vec<PartyData>,
    /// N: the records the trainer samples from.
    records: usize,
}

/// The seeds of run `run` in `world`: (batch key, noise, MPC), from the audit seed's
/// ChaCha20 stream `world * 2^32 + run` (distinct for every run).
fn run_seeds(seed: u64, world: usize, run: usize) -> (u64, u64, u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(((world as u64) << 32) | run as u64);
    (rng.next_u64(), rng.next_u64(), rng.next_u64())
}

fn batches(
    parties: &[PartyData],
    idx: &[usize],
    padded: usize,
) -> Result<Vec<PartyBatch>, MechanismAuditError> {
    parties
        .iter()
        .map(|p| Ok(p.padded_batch(idx, padded)?))
        .collect()
}

/// The audited backend of one run: MPC randomness derived from the run's seed, so that an
/// audit is reproducible.
fn audited_backend(
    s: &MechanismAuditSettings,
    mpc_seed: u64,
) -> Result<Box<dyn GradientBackend>, MechanismAuditError> {
    Ok(match s.backend {
        AuditBackend::Fixed => Box::new(FixedBackend::new(s.renormalise)?),
        AuditBackend::Mpc => Box::new(MpcBackend::seeded(s.renormalise, mpc_seed)?),
    })
}

/// One run: `world` 0 is "without", world c + 1 is "with canary c".
fn run_once(
    s: &MechanismAuditSettings,
    data: &AuditData,
    world: usize,
    run: usize,
) -> Result<RunOutcome, MechanismAuditError> {
    let k = CanaryKind::ALL.len();
    let config = DpviConfig {
        sample_rate: s.sample_rate,
        clip: s.clip,
        sigma: s.sigma,
        adam: AdamConfig {
            lr: s.lr,
            ..AdamConfig::default()
        },
        seed: s.seed,
        // The shipped default, so the audit runs the mechanism `vtwin train` runs.
        tempering: Tempering::default_for(s.iterations),
    };
    let (batch_seed, noise_seed, mpc_seed) = run_seeds(s.seed, world, run);
    let mut audited = audited_backend(s, mpc_seed)?;
    let mut trainer = Trainer::new(
        config,
        data.layout.clone(),
        data.records,
        BatchKey::insecure(batch_seed),
    )?;
    let p_n = data.layout.n_parties();
    let mut noise = NoiseRngs::seeded(noise_seed, p_n);
    let mut silent = NoiseRngs::seeded(0, p_n);
    let scale = s.sigma * s.clip;
    let mut out = RunOutcome {
        scores: vec![0.0; k],
        contribution_sum: vec![0.0; k],
        contribution_max: vec![0.0; k],
        top_share_sum: vec![0.0; k],
        truncation_failure: 0.0,
    };
    // The canaries whose direction this run is scored on.
    let scored: Vec<usize> = if world == 0 {
        (0..k).collect()
    } else {
        vec![world - 1]
    };
    while trainer.iteration() < s.iterations {
        let plan = trainer.plan();
        let padded = plan.padded + 1;
        let mut idx = plan.batch.clone();
        if world > 0 {
            idx.push(data.records + world - 1);
        }
        let parties = batches(&data.parties, &idx, padded)?;
        // The broken mechanism of a power test clips at k C with noise sigma C.
        let inflation = s.sensitivity_inflation;
        let input = GradientInput {
            layout: &data.layout,
            iteration: plan.iteration,
            theta: &plan.theta,
            parties: &parties,
            clip: s.clip * inflation,
            noise: NoiseConfig {
                sigma: s.sigma / inflation,
            },
            beta: trainer.config().tempering.beta(plan.iteration),
        };
        let released = audited.gradient(&input, &mut noise)?;
        out.truncation_failure += released.truncation_failure;

        // The observer's side information, from the public state: the implementation's
        // noiseless sum of the other records and each scored canary's contribution.
        let mut clean = |idx: &[usize], padded: usize| -> Result<Vec<f64>, MechanismAuditError> {
            let parties = batches(&data.parties, idx, padded)?;
            let input = GradientInput {
                parties: &parties,
                noise: NoiseConfig { sigma: 0.0 },
                ..input
            };
            Ok(audited.gradient(&input, &mut silent)?.gradient)
        };
        let others = clean(&plan.batch, padded)?;
        for &c in &scored {
            let h = clean(&[data.records + c], 1)?;
            let norm2: f64 = h.iter().map(|v| v * v).sum();
            let norm = norm2.sqrt();
            if norm == 0.0 {
                continue;
            }
            let projection: f64 = released
                .gradient
                .iter()
                .zip(&others)
                .zip(&h)
                .map(|((g, o), h)| (g - o) * h)
                .sum::<f64>()
                / norm;
            out.scores[c] += projection / scale;
            out.contribution_sum[c] += norm / s.clip;
            out.contribution_max[c] = out.contribution_max[c].max(norm / s.clip);
            let top = h.iter().map(|v| v * v).fold(0.0f64, f64::max);
            out.top_share_sum[c] += top / norm2;
        }
        trainer.charge(&plan, released.truncation_failure)?;
        trainer.apply(plan, &released.gradient)?;
    }
    let root_t = (s.iterations as f64).sqrt();
    for v in &mut out.scores {
        *v /= root_t;
    }
    Ok(out)
}

impl MechanismAuditSettings {
    /// Checks the settings' ranges ([`audit_mechanism`] does it first); errors name the
    /// setting and its value.
    pub fn check(&self) -> Result<(), MechanismAuditError> {
        use MechanismAuditError as E;
        if self.trials < 4 {
            return Err(E::Trials(self.trials));
        }
        if self.iterations == 0 {
            return Err(E::Iterations(self.iterations));
        }
        if !(self.sigma.is_finite() && self.sigma > 0.0) {
            return Err(E::Sigma(self.sigma));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(E::Delta(self.delta));
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(E::Confidence(self.confidence));
        }
        if !(self.sensitivity_inflation.is_finite() && self.sensitivity_inflation >= 1.0) {
            return Err(E::SensitivityInflation(self.sensitivity_inflation));
        }
        if self.threads == 0 {
            return Err(E::NoThreads);
        }
        Ok(())
    }
}

/// The theoretical epsilon of the audited observer (module docs).
fn epsilon_theoretical(
    s: &MechanismAuditSettings,
    layout: &Layout,
    truncation_failure: f64,
) -> Result<f64, MechanismAuditError> {
    let mut setting = PrivacySetting::new(s.sigma, Sampling::FullBatch, s.iterations, s.delta);
    setting.clip = s.clip;
    setting.parties = u32::try_from(layout.n_parties()).unwrap_or(u32::MAX);
    setting.dimension = layout.dim() as u64;
    setting.accountants = vec![Accountant::Pld];
    setting.truncation_failure = truncation_failure;
    let report = PrivacyReport::build(&setting)?;
    report
        .per_observer
        .iter()
        .find(|o| o.role == "coordinator")
        .and_then(|o| o.epsilon.get(Accountant::Pld.name()))
        .and_then(|e| e.add_remove)
        .ok_or(MechanismAuditError::NoCoordinatorFigure)
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// Runs the audit on `table` (module docs), calling `progress(done, total)` after each run
/// (from the worker threads). Errors name the setting or the failing step.
pub fn audit_mechanism(
    table: &Table,
    s: &MechanismAuditSettings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<MechanismAuditReport, MechanismAuditError> {
    s.check()?;
    let start = Instant::now();
    let k = CanaryKind::ALL.len();
    let records: Vec<_> = CanaryKind::ALL.iter().map(|&c| canary(c, table)).collect();
    let augmented = with_canaries(table, &records);
    let layout = Layout::from_schema(&table.schema, s.components)?;
    let parties = PartyData::from_table(&augmented, &layout)?;
    let data = AuditData {
        layout,
        parties,
        records: table.n_rows(),
    };

    // Every (world, run), spread over the workers.
    let jobs: Vec<(usize, usize)> = (0..=k)
        .flat_map(|w| (0..s.trials).map(move |r| (w, r)))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<RunOutcome>>> = Mutex::new(vec![None; jobs.len()]);
    let failure: Mutex<Option<MechanismAuditError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..s.threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs.len() || failure.lock().map_or(true, |f| f.is_some()) {
                    return;
                }
                let (w, r) = jobs[i];
                match run_once(s, &data, w, r) {
                    Ok(o) => {
                        if let Ok(mut res) = results.lock() {
                            res[i] = Some(o);
                        }
                        progress(done.fetch_add(1, Ordering::Relaxed) + 1, jobs.len());
                    }
                    Err(e) => {
                        failure.lock().map(|mut f| *f = Some(e)).ok();
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let results: Vec<RunOutcome> = results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .collect::<Option<_>>()
        .ok_or(MechanismAuditError::Unfinished)?;
    let world = |w: usize| &results[w * s.trials..(w + 1) * s.trials];
    let truncation_failure_per_run = results
        .iter()
        .map(|r| r.truncation_failure)
        .fold(0.0f64, f64::max);

    let mu_theoretical = mu_of_composition(s.sigma, s.iterations);
    let threshold = mu_theoretical / 2.0;
    let per_canary_confidence = 1.0 - (1.0 - s.confidence) / k as f64;
    let t = s.iterations as f64;
    let mut canaries = Vec::with_capacity(k);
    for (c, &kind) in CanaryKind::ALL.iter().enumerate() {
        let with: Vec<f64> = world(c + 1).iter().map(|r| r.scores[c]).collect();
        let without: Vec<f64> = world(0).iter().map(|r| r.scores[c]).collect();
        let tp = with.iter().filter(|&&v| v >= threshold).count() as u64;
        let fp = without.iter().filter(|&&v| v >= threshold).count() as u64;
        let n = s.trials as u64;
        let gdp = mu_lower_bound(fp, n, n - tp, n, per_canary_confidence)?;
        let half = s.trials / 2;
        let clopper_pearson = epsilon_lower_bound(
            Labelled {
                members: &with[..half],
                non_members: &without[..half],
            },
            Labelled {
                members: &with[half..],
                non_members: &without[half..],
            },
            s.delta,
            per_canary_confidence,
        )?;
        let runs = world(c + 1);
        let steps = runs.len() as f64 * t;
        let (mean_with, _) = mean_sd(&with);
        let (mean_without, sd_without) = mean_sd(&without);
        canaries.push(CanaryReport {
            canary: kind,
            tpr: tp as f64 / n as f64,
            fpr: fp as f64 / n as f64,
            epsilon_lower_bound: epsilon_of_delta(gdp.mu_lower_bound, s.delta),
            gdp,
            clopper_pearson,
            mean_score_with: mean_with,
            mean_score_without: mean_without,
            sd_score_without: sd_without,
            mean_contribution_over_clip: runs.iter().map(|r| r.contribution_sum[c]).sum::<f64>()
                / steps,
            max_contribution_over_clip: runs
                .iter()
                .map(|r| r.contribution_max[c])
                .fold(0.0f64, f64::max),
            top_coordinate_share: runs.iter().map(|r| r.top_share_sum[c]).sum::<f64>() / steps,
            scores_with: with,
            scores_without: without,
        });
    }
    let epsilon_theoretical = epsilon_theoretical(s, &data.layout, truncation_failure_per_run)?;
    let epsilon_lower_bound = canaries
        .iter()
        .map(|c| c.epsilon_lower_bound)
        .fold(0.0f64, f64::max);
    let epsilon_lower_bound_clopper_pearson = canaries
        .iter()
        .map(|c| c.clopper_pearson.lower_bound)
        .fold(0.0f64, f64::max);
    Ok(MechanismAuditReport {
        backend: s.backend,
        observer: "coordinator (knows every batch; the canary is in all T batches)",
        records: data.records,
        dimension: data.layout.dim(),
        components: s.components,
        sample_rate: s.sample_rate,
        padded_batch: vtwin_dp::padded_batch_size(
            data.records as u64,
            s.sample_rate,
            vtwin_dp::BATCH_OVERFLOW_TAIL,
        )
        .0 + 1,
        clip: s.clip,
        sigma: s.sigma,
        delta: s.delta,
        iterations: s.iterations,
        trials: s.trials,
        confidence: s.confidence,
        sensitivity_inflation: s.sensitivity_inflation,
        epsilon_theoretical,
        mu_theoretical,
        threshold,
        epsilon_lower_bound,
        method: "f-DP (Gaussian DP) fit: Clopper-Pearson upper bounds on FPR and FNR at the \
                 fixed threshold mu/2, mu >= Phi^-1(1 - FPR) - Phi^-1(FNR), converted to \
                 epsilon at delta by the Gaussian trade-off (valid as a refutation of a \
                 Gaussian claim, which the accounting makes; not a lower bound on epsilon for \
                 a non-Gaussian mechanism); Bonferroni over the canaries (Nasr et al. 2023)",
        epsilon_lower_bound_clopper_pearson,
        sound: epsilon_lower_bound <= epsilon_theoretical
            && epsilon_lower_bound_clopper_pearson <= epsilon_theoretical,
        truncation_failure_per_run,
        canaries,
        seconds: start.elapsed().as_secs_f64(),
    })
}
