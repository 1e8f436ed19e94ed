//! `vtwin train`: DPVI of the mixture model in one process (INTERFACE.md), with the `float`,
//! `fixed` or `mpc` gradient backend. Writes model.json, privacy.json, train.csv,
//! timing.json (with the MPC's rounds, bytes and products per iteration for `mpc`) and a
//! checkpoint that `--resume` continues from, all atomically. model.json and train.csv's
//! test NLL are the released model: by default an EMA of the iterates (`--average`,
//! `vtwin_model::averaging`; post-processing, no privacy cost).
//!
//! Batches come from a secret batch key (OS CSPRNG), kept only in the checkpoint; every
//! opening is appended to DIR/openings.log and synced before it is used, and `--resume`
//! charges every opening of the log (`vtwin_model::opening_log`), so openings lost with a
//! crash after the last checkpoint are charged and their iterations replayed with fresh
//! batches. privacy.json composes over the openings.
//!
//! `--noise-seed` and `--mpc-seed` make every secret of iteration t a pure function of (seed,
//! role, t) (`vtwin_iteration::randomness`), so that a run can be reproduced bit for bit,
//! e.g. by the consortium's processes; the batch key is then derived from the MPC seed (or,
//! without one, from the noise seed). They void privacy: a warning is printed, privacy.json
//! reports `"guarantee": "void"` with the reason, and no epsilon is printed.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use vtwin_data::{Schema, Table};
use vtwin_dp::{calibrate_sigma_charged, PrivacyReport, PrivacySetting};
use vtwin_host::atomic::{self, Mode};
use vtwin_iteration::randomness::{BatchKey, SecretRandomness};
use vtwin_model::adam::{AdamConfig, LrSchedule};
use vtwin_model::averaging::Averaging;
use vtwin_model::backend::{GradientBackend, NoiseRngs};
use vtwin_model::checkpoint::{Checkpoint, HistoryRow, RunSettings};
use vtwin_model::dpvi::{Dpvi, DpviConfig, StepReport};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::float_backend::FloatBackend;
use vtwin_model::layout::Layout;
use vtwin_model::model_file::{natural_params, ModelFile};
use vtwin_model::mpc_backend::{CostLog, MpcBackend};
use vtwin_model::opening_log::OpeningLog;
use vtwin_model::party_data::PartyData;
use vtwin_model::rng_state::RngState;
use vtwin_model::tempering::Tempering;
use vtwin_model::trainer::Trainer;

use super::training_data::{components, parse_party_files, sample_rate, TrainingData};

/// Which gradient backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BackendKind {
    /// Non-partitioned f64 baseline.
    Float,
    /// Partitioned plaintext fixed-point reference.
    Fixed,
    /// Three in-memory MPC nodes (vtwin-mpc), the MPC twin of fixed.
    Mpc,
}

/// The default number of iterations for the learning rate (vtwin-model's rule, shared with
/// the consortium's default job).
pub(crate) fn default_iters(lr: f64) -> u64 {
    vtwin_model::adam::default_iterations(lr)
}

/// Which model a run releases (`--average`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AverageKind {
    /// An exponential moving average of the iterates (post-processing: no privacy cost).
    Ema,
    /// The last iterate.
    None,
}

/// The step-size schedule (`--lr-schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ScheduleKind {
    /// The same lr at every step.
    Constant,
    /// Cosine decay from lr to 0 over the run's iterations.
    Cosine,
}

impl ScheduleKind {
    /// The schedule for a run of `iters` iterations.
    pub(crate) fn schedule(self, iters: u64) -> LrSchedule {
        match self {
            ScheduleKind::Constant => LrSchedule::Constant,
            ScheduleKind::Cosine => LrSchedule::Cosine { iterations: iters },
        }
    }
}

/// Train a model with DP variational inference.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    training: TrainingData,
    /// Gradient backend.
    #[arg(long, value_enum)]
    backend: BackendKind,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Target epsilon (with --delta); sigma is calibrated for --iters iterations.
    #[arg(long)]
    epsilon: Option<f64>,
    /// delta of the target (and of the privacy report; default 1e-5 with --sigma).
    #[arg(long)]
    delta: Option<f64>,
    /// Noise multiplier sigma (noise std sigma * clip). 0 disables noise (no privacy).
    #[arg(long)]
    sigma: Option<f64>,
    /// Mixture components K [default: the largest K <= 20 with at most 3000 parameters, and at
    /// least one per target class; `vtwin_model::components`, docs/guide.md].
    #[arg(long)]
    components: Option<usize>,
    /// Expected batch size B (sample rate B/N).
    #[arg(long)]
    batch: Option<usize>,
    /// Poisson sampling rate q.
    #[arg(long)]
    sample_rate: Option<f64>,
    /// Total iterations (a resumed run continues up to this number) [default: 100 / lr,
    /// 10000 at the default lr; docs/utility-levers.md].
    #[arg(long)]
    iters: Option<u64>,
    /// Clip bound C.
    #[arg(long, default_value_t = 1.0)]
    clip: f64,
    /// Adam learning rate.
    #[arg(long, default_value_t = 0.01)]
    lr: f64,
    /// Step-size schedule over the run (public: no privacy cost).
    #[arg(long, value_enum, default_value = "constant")]
    lr_schedule: ScheduleKind,
    /// Inverse temperature of the responsibilities at iteration 0 (deterministic annealing,
    /// docs/utility-levers.md): beta rises linearly to 1 at --temper-until; 1 turns tempering
    /// off. Public: no privacy cost, the same MPC circuit and cost. [default: 0.2; a resumed
    /// run without --temper-start or --temper-until keeps its own schedule]
    #[arg(long)]
    temper_start: Option<f64>,
    /// The iteration from which beta is 1 [default: iters - ceil(iters / 5), 0.8 iters: the
    /// released average's last two half-lives untempered].
    #[arg(long)]
    temper_until: Option<u64>,
    /// Renormalisation (fixed and mpc backends): closed-form, paper or off.
    #[arg(long, default_value = "closed-form")]
    renormalise: Renormalise,
    /// Seed of the public randomness (initialisation, eta). Batches come from a secret key.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Seed the secret noise generators (reproducible runs and tests only: whoever knows it
    /// can remove the noise, so the privacy guarantee is void). Without --mpc-seed it also
    /// seeds the batch key.
    #[arg(long)]
    noise_seed: Option<u64>,
    /// Seed the MPC's secret randomness (session ids, node keys, input-sharing seeds) of the
    /// mpc backend, and the batch key (reproducible runs and tests only: whoever knows it can
    /// reconstruct every share and every batch, so the privacy guarantee is void).
    #[arg(long)]
    mpc_seed: Option<u64>,
    /// Continue from DIR/checkpoint.bin.
    #[arg(long)]
    resume: bool,
    /// Test set with every column, for test NLL.
    #[arg(long)]
    test_joined: Option<PathBuf>,
    /// A party's test CSV (repeat per party).
    #[arg(long = "test", value_name = "PARTY=FILE")]
    test: Vec<String>,
    /// Evaluate test NLL (and log a train.csv row) every N iterations.
    #[arg(long, default_value_t = 100)]
    eval_every: u64,
    /// Write the checkpoint every N iterations (and at the end).
    #[arg(long, default_value_t = 100)]
    checkpoint_every: u64,
    /// The released model (model.json, test NLL): an EMA of the iterates, or the last
    /// iterate. Post-processing of the noisy releases: no privacy cost.
    #[arg(long, value_enum, default_value = "ema")]
    average: AverageKind,
    /// Half-life of the EMA in iterations (default: iters / 10; a resumed run keeps its own).
    #[arg(long)]
    average_half_life: Option<f64>,
}

/// (schema, training table, optional test table).
fn load_data(a: &Args) -> anyhow::Result<(Schema, Table, Option<Table>)> {
    let (schema, train, demo_test) = a.training.load()?;
    if demo_test.is_some() {
        return Ok((schema, train, demo_test));
    }
    let test = match (&a.test_joined, a.test.is_empty()) {
        (Some(j), true) => Some(Table::read_joined(&schema, j)?),
        (None, false) => Some(Table::read_parties(
            &schema,
            &parse_party_files("--test", &a.test)?,
        )?),
        (Some(_), false) => bail!("--test-joined and --test: give one of them"),
        (None, true) => None,
    };
    Ok((schema, train, test))
}

/// The averaging of a run of `iters` iterations from `--average` and `--average-half-life`
/// (or the coordinator's `average`, `average_half_life`). A fresh run (`saved` None) gets the
/// default half-life iters / 10; a resumed run keeps its saved setting unless a half-life is
/// given (the trainer then refuses any change: an average must see every step).
pub(crate) fn averaging(
    kind: AverageKind,
    half_life: Option<f64>,
    iters: u64,
    saved: Option<Averaging>,
) -> Averaging {
    match (kind, half_life, saved) {
        (AverageKind::None, _, _) => Averaging::None,
        (AverageKind::Ema, Some(h), _) => Averaging::Ema { half_life: h },
        (AverageKind::Ema, None, Some(s @ Averaging::Ema { .. })) => s,
        (AverageKind::Ema, None, _) => Averaging::default_for(iters),
    }
}

/// The median (NaN for none); sorts `v`.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

/// Whether [`write_outputs`] writes a checkpoint of a run in progress or its release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outputs {
    /// train.csv and checkpoint.bin only; a model.json or privacy.json left in `out` by an
    /// earlier run is removed, so an aborted run never leaves a model that looks finished.
    Checkpoint,
    /// model.json as well (the caller then writes privacy.json).
    Release,
}

/// train.csv and checkpoint.bin of the run so far, and model.json at its release, each
/// written atomically (also used by `vtwin coordinator`, whose trainer is driven over the
/// network). `noise` is what the checkpoint records about the noise generators
/// (`Dpvi::noise_checkpoint`).
pub(crate) fn write_outputs(
    out: &Path,
    trainer: &Trainer,
    noise: Option<Vec<RngState>>,
    schema: &Schema,
    history: &[HistoryRow],
    settings: &RunSettings,
    what: Outputs,
) -> anyhow::Result<()> {
    match what {
        Outputs::Release => ModelFile::new(
            schema.clone(),
            trainer.layout().clone(),
            trainer.model_mu().to_vec(),
            trainer.model_log_sigma().to_vec(),
        )
        .save(&out.join("model.json"))?,
        Outputs::Checkpoint => {
            for stale in ["model.json", "privacy.json"] {
                let f = out.join(stale);
                match std::fs::remove_file(&f) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(anyhow::Error::new(e).context(f.display().to_string()))
                    }
                    _ => {}
                }
            }
        }
    }
    let mut csv = String::from("iteration,epsilon,test_nll\n");
    for r in history {
        let nll = r.test_nll.map_or(String::new(), |v| format!("{v}"));
        csv.push_str(&format!("{},{},{}\n", r.iteration, r.epsilon, nll));
    }
    atomic::write(&out.join("train.csv"), csv.as_bytes(), Mode::Public)
        .with_context(|| out.join("train.csv").display().to_string())?;
    Checkpoint {
        settings: settings.clone(),
        state: trainer.state(),
        noise,
        history: history.to_vec(),
    }
    .save(&out.join("checkpoint.bin"))?;
    Ok(())
}

/// The journal of openings in `out`: a new one for a fresh run; at resume the existing
/// one, whose openings are all charged to `trainer` (those after the checkpoint were lost
/// with a crash or a failed update: charged, and their iterations replayed with fresh
/// batches). Refuses a log that does not cover the checkpoint's openings. Shared with
/// `vtwin coordinator`.
pub(crate) fn opening_log(
    out: &Path,
    resume: bool,
    trainer: &mut Trainer,
) -> anyhow::Result<OpeningLog> {
    let path = out.join("openings.log");
    if !resume {
        // A fresh run must not erase the openings of an earlier one: they were released.
        if let Ok((_, earlier)) = OpeningLog::open(&path) {
            if !earlier.is_empty() {
                bail!(
                    "{} records {} opening(s) of an earlier run in this directory: continue it with --resume, or train into a new directory",
                    path.display(),
                    earlier.len()
                );
            }
        }
        return Ok(OpeningLog::create(&path)?);
    }
    let (log, records) = OpeningLog::open(&path).context("--resume")?;
    let known = trainer.openings();
    let covered = records.iter().filter(|r| r.opening < known).count() as u64;
    if covered != known {
        bail!(
            "--resume: {} records {covered} of the {known} openings charged in the checkpoint (deleted, truncated or from another run): refusing to under-count",
            path.display()
        );
    }
    let lost = trainer.charge_recorded(records.iter().map(|r| (r.opening, r.truncation_failure)));
    if lost > 0 {
        eprintln!(
            "--resume: {lost} opening(s) after the checkpoint at iteration {} were already released: charged; their iterations run again with fresh batches",
            trainer.iteration()
        );
    }
    Ok(log)
}

/// Why privacy is void with these insecure seed kinds (`RunSettings::insecure_seeds`).
pub(crate) fn void_reason(seeds: &[String]) -> String {
    format!(
        "insecure test seeds in use ({}): whoever knows them can recompute the batches and the {}, so no differential-privacy guarantee holds; the figures under `if_seeds_were_secret` are what the mechanism would give with secret randomness",
        seeds.join(", "),
        if seeds.iter().any(|s| s == "noise") {
            "noise"
        } else {
            "MPC's shares"
        }
    )
}

/// privacy.json: vtwin-dp's report over the openings so far (or a no-privacy note for sigma
/// = 0); with insecure seeds the guarantee is reported void and the figures are moved under
/// `if_seeds_were_secret`.
pub(crate) fn privacy_json(
    settings: &RunSettings,
    trainer: &Trainer,
) -> anyhow::Result<serde_json::Value> {
    let report = privacy_report(settings, trainer)?;
    if settings.insecure_seeds.is_empty() {
        return Ok(report);
    }
    let c = &settings.config;
    Ok(serde_json::json!({
        "guarantee": "void",
        "void_reason": void_reason(&settings.insecure_seeds),
        "sigma": report["sigma"],
        "clip": c.clip,
        "sample_rate": c.sample_rate,
        "steps": trainer.openings(),
        "delta": settings.delta,
        "epsilon": {},
        "if_seeds_were_secret": report,
    }))
}

fn privacy_report(settings: &RunSettings, trainer: &Trainer) -> anyhow::Result<serde_json::Value> {
    let c = &settings.config;
    let Some(setting) = privacy_setting(trainer, settings.delta) else {
        return Ok(serde_json::json!({
            "guarantee": "none",
            "sigma": 0.0,
            "clip": c.clip,
            "sample_rate": c.sample_rate,
            "steps": trainer.openings(),
            "delta": settings.delta,
            "epsilon": {},
            "note": "sigma = 0: no noise, the model is not differentially private",
        }));
    };
    let mut v = serde_json::to_value(PrivacyReport::build(&setting)?)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("guarantee".into(), "differential privacy".into());
    }
    Ok(v)
}

/// What privacy.json accounts for the run so far: the ledger's openings, with the truncation
/// wraps, batch overflows and trimming events charged to delta; batches are padded to a
/// public size, so the nodes face the analyst's figure. None without noise.
fn privacy_setting(trainer: &Trainer, delta: f64) -> Option<PrivacySetting> {
    let ledger = trainer.ledger()?;
    let mut setting = PrivacySetting::new(
        ledger.noise_multiplier(),
        ledger.sampling(),
        ledger.steps(),
        delta,
    );
    setting.clip = trainer.config().clip;
    setting.parties = u32::try_from(trainer.layout().n_parties()).unwrap_or(u32::MAX);
    setting.dimension = trainer.layout().dim() as u64;
    setting.truncation_failure = ledger.failure();
    setting.batch_overflow = ledger.steps() as f64 * trainer.padded_batch().1;
    setting.trim_risk = trim_risk(trainer, ledger);
    setting.padded_batches = true;
    Some(setting)
}

/// Medians over the timed iterations of the MPC costs (rounds, bytes, products).
fn mpc_cost_json(log: &CostLog) -> serde_json::Value {
    let costs = log.snapshot();
    let med = |f: &dyn Fn(&vtwin_model::mpc_backend::IterationCost) -> u64| {
        let mut v: Vec<f64> = costs.iter().map(|c| f(c) as f64).collect();
        median(&mut v)
    };
    let parties = costs
        .first()
        .map_or(0, |c| c.bytes_uploaded_per_party.len());
    serde_json::json!({
        "iterations": costs.len(),
        "median_per_iteration": {
            "rounds": med(&|c| c.rounds),
            "bytes_between_nodes": med(&|c| c.bytes_between_nodes),
            "elements_between_nodes": med(&|c| c.elements_between_nodes),
            "bytes_to_coordinator": med(&|c| c.bytes_to_coordinator),
            "bytes_uploaded_per_party": (0..parties)
                .map(|p| med(&|c| c.bytes_uploaded_per_party[p]))
                .collect::<Vec<_>>(),
            "bytes_uploaded_total": med(&|c| c.bytes_uploaded_total),
            "mults": med(&|c| c.mults),
            "truncations": med(&|c| c.truncations),
        },
    })
}

/// (sigma, delta) from `--epsilon E --delta D` or `--sigma S [--delta D]` (default delta
/// 1e-5); errors name the flag. With `--epsilon`, sigma is calibrated with the RDP accountant
/// for `iters` Poisson-subsampled steps at rate `q` on `rows` records, with the batch
/// overflows of the run's padded batches charged to delta as `privacy.json` charges them
/// ([`vtwin_dp::calibrate_sigma_charged`]), so that the analyst's printed epsilon is at most
/// E (the MPC's truncation-failure charge, about 1.2e-12 per opening at Adult's shape, is
/// not known before the run: it lifts Adult's default mpc run to 1.0006; SECURITY.md).
pub(crate) fn noise_multiplier(
    epsilon: Option<f64>,
    delta: Option<f64>,
    sigma: Option<f64>,
    q: f64,
    iters: u64,
    rows: usize,
) -> anyhow::Result<(f64, f64)> {
    Ok(match (epsilon, delta, sigma) {
        (Some(_), _, Some(_)) => bail!("--epsilon and --sigma: give one of them"),
        (Some(e), Some(d), None) => {
            if !(d > 0.0 && d < 1.0) {
                bail!("--delta {d}: must be in (0, 1)");
            }
            let overflow =
                vtwin_dp::padded_batch_size(rows as u64, q, vtwin_dp::BATCH_OVERFLOW_TAIL).1;
            let s = calibrate_sigma_charged(e, d, q, iters, iters as f64 * overflow)
                .with_context(|| format!("--epsilon {e}"))?;
            (s, d)
        }
        (Some(_), None, None) => bail!("--epsilon needs --delta"),
        (None, d, Some(s)) => {
            if !(s.is_finite() && s >= 0.0) {
                bail!("--sigma {s}: must be non-negative");
            }
            let d = d.unwrap_or(1e-5);
            if !(d > 0.0 && d < 1.0) {
                bail!("--delta {d}: must be in (0, 1)");
            }
            (s, d)
        }
        (None, _, None) => bail!("--epsilon with --delta, or --sigma, is required"),
    })
}

/// Why the noise generators cannot resume a checkpoint, in the command's flags.
fn noise_resume_message(e: &vtwin_model::backend::NoiseResumeError) -> String {
    use vtwin_model::backend::NoiseResumeError;
    match e {
        NoiseResumeError::NeedSeed => {
            "the checkpointed run used --noise-seed; give the same one".into()
        }
        NoiseResumeError::Unseeded => {
            "the checkpointed run drew its noise from the OS; do not give --noise-seed".into()
        }
        NoiseResumeError::Mismatch => "the checkpoint's noise generators do not match --noise-seed (a different seed, or a checkpoint written by an older vtwin with sequential noise streams: start the run again)".into(),
        other => other.to_string(),
    }
}

/// Refuses to resume `ck` (read from `path`) unless it was written by a run with `settings`
/// (the target iteration count aside).
pub(crate) fn check_resume(
    ck: &Checkpoint,
    settings: &RunSettings,
    path: &Path,
) -> anyhow::Result<()> {
    let (had, have) = (ck.settings.layout.components, settings.layout.components);
    if had != have {
        bail!(
            "--resume: {} was written by a run with K = {had} components, not {have} (--components)",
            path.display()
        );
    }
    let mut want = settings.clone();
    want.iters = ck.settings.iters;
    if ck.settings != want {
        bail!(
            "--resume: {} was written by a run with different settings (backend, data, schema, K, rate, clip, sigma, lr, tempering, seed, delta or insecure seeds)",
            path.display()
        );
    }
    Ok(())
}

/// "epsilon E", or why no epsilon holds (insecure seeds), for the final line of a run.
pub(crate) fn epsilon_line(settings: &RunSettings, epsilon: f64) -> String {
    if settings.insecure_seeds.is_empty() {
        format!("epsilon {epsilon}")
    } else {
        format!(
            "no privacy guarantee (insecure seeds: {})",
            settings.insecure_seeds.join(", ")
        )
    }
}

/// `q T P(Bin(N, q) >= B)` over the ledger's openings, for Poisson batches padded to B
/// ([`PrivacySetting::trim_risk`]): the chance that a record a neighbour adds lands in a batch
/// that trimming may then cut. 0 for other sampling. Cost O(N).
fn trim_risk(trainer: &Trainer, ledger: &vtwin_dp::PrivacyLedger) -> f64 {
    match ledger.sampling() {
        vtwin_dp::Sampling::Poisson { sample_rate } if sample_rate < 1.0 => {
            let b = trainer.padded_batch().0 as u64;
            let full = vtwin_dp::binomial_upper_tail(trainer.rows() as u64, sample_rate, b - 1);
            ledger.steps() as f64 * sample_rate * full
        }
        _ => 0.0,
    }
}

/// Epsilon spent so far (RDP, add/remove, outside analyst): privacy.json's figure for the
/// openings so far, computed the same way (RDP alone); infinite without noise. Cost: one
/// RDP privacy report.
pub(crate) fn epsilon_now(trainer: &Trainer, delta: f64) -> anyhow::Result<f64> {
    let Some(mut setting) = privacy_setting(trainer, delta) else {
        return Ok(f64::INFINITY);
    };
    if setting.steps == 0 {
        return Ok(0.0);
    }
    setting.accountants = vec![vtwin_dp::Accountant::Rdp];
    let report = PrivacyReport::build(&setting)?;
    Ok(report.epsilon["rdp"].add_remove.unwrap_or(f64::INFINITY))
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    if a.components == Some(0) {
        bail!("--components must be at least 1");
    }
    if a.eval_every == 0 || a.checkpoint_every == 0 {
        bail!("--eval-every and --checkpoint-every must be at least 1");
    }
    let (schema, train, test) = load_data(&a)?;
    let n = train.n_rows();
    let q = sample_rate(a.batch, a.sample_rate, n)?;
    if !(a.clip.is_finite() && a.clip > 0.0) {
        bail!("--clip {}: must be positive", a.clip);
    }
    if !(a.lr.is_finite() && a.lr > 0.0) {
        bail!("--lr {}: must be positive", a.lr);
    }
    let iters = a.iters.unwrap_or_else(|| default_iters(a.lr));
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    let (sigma, delta) = noise_multiplier(a.epsilon, a.delta, a.sigma, q, iters, n)?;
    if sigma == 0.0 {
        eprintln!("warning: --sigma 0: no noise, the result is not differentially private");
    }
    if a.mpc_seed.is_some() && a.backend != BackendKind::Mpc {
        bail!("--mpc-seed: only the mpc backend has MPC randomness (use --backend mpc)");
    }
    if a.mpc_seed.is_some() {
        eprintln!("warning: --mpc-seed: the MPC's secrets are derived from a known seed, so anyone who knows it can reconstruct every share: the result is not private (tests only)");
    }
    if a.noise_seed.is_some() {
        eprintln!("warning: --noise-seed: the noise is derived from a known seed, so anyone who knows it can remove it: the result is not differentially private (tests only)");
    }
    let mut insecure_seeds = Vec::new();
    if a.mpc_seed.is_some() {
        insecure_seeds.push("mpc".to_owned());
    }
    if a.noise_seed.is_some() {
        insecure_seeds.push("noise".to_owned());
    }
    // The batch key: secret, or derived from an insecure seed (reproducible, void).
    let batch_key = match a.mpc_seed.or(a.noise_seed) {
        Some(s) => SecretRandomness::InsecureSeed(s).batch_key(),
        None => BatchKey::from_os(),
    };
    // Loaded once: a resumed run keeps the K it started with (explicit or an earlier
    // default), as it keeps its tempering; check_resume compares everything else.
    let ck_path = a.out.join("checkpoint.bin");
    let resumed = if a.resume {
        Some(Checkpoint::load(&ck_path).context("--resume")?)
    } else {
        None
    };
    let k = match (&resumed, a.components) {
        (Some(ck), None) => ck.settings.layout.components,
        _ => components(a.components, &schema)?,
    };
    let layout = Layout::from_schema(&schema, k)?;
    // The default K is announced once the run has started (errors stay one line).
    let k_note = (a.components.is_none() && resumed.is_none()).then(|| {
        use vtwin_model::components::{MAX_COMPONENTS, PARAMETER_BUDGET};
        let d = layout.dim();
        let floor = if d > PARAMETER_BUDGET {
            ", above it: at least one component per target class"
        } else {
            ""
        };
        format!(
            "K = {k} components, d = {d} (the default for this schema: the largest K \
             <= {MAX_COMPONENTS} with d <= {PARAMETER_BUDGET}{floor}; --components to choose)"
        )
    });
    let data = PartyData::from_table(&train, &layout)?;
    let mut config = DpviConfig {
        sample_rate: q,
        clip: a.clip,
        sigma,
        adam: AdamConfig {
            lr: a.lr,
            schedule: a.lr_schedule.schedule(iters),
            ..AdamConfig::default()
        },
        seed: a.seed,
        tempering: Tempering::from_settings(
            a.temper_start
                .unwrap_or(vtwin_model::tempering::DEFAULT_START),
            a.temper_until,
            iters,
        )
        .context("--temper-start, --temper-until")?,
    };
    let renorm_name = match a.renormalise {
        Renormalise::ClosedForm => "closed-form",
        Renormalise::Paper => "paper",
        _ => "off",
    };
    let mut mpc_costs: Option<CostLog> = None;
    let backend: Box<dyn GradientBackend> = match a.backend {
        BackendKind::Float => Box::new(FloatBackend::new()?),
        BackendKind::Mpc => {
            let randomness = match a.mpc_seed {
                Some(s) => SecretRandomness::InsecureSeed(s),
                None => SecretRandomness::Os,
            };
            let m = MpcBackend::with_randomness(a.renormalise, randomness)?;
            mpc_costs = Some(m.costs());
            Box::new(m)
        }
        BackendKind::Fixed => Box::new(FixedBackend::new(a.renormalise)?),
    };
    let mut settings = RunSettings {
        backend: backend.name().into(),
        renormalise: renorm_name.into(),
        layout: layout.clone(),
        config: config.clone(),
        train_rows: n,
        iters,
        delta,
        insecure_seeds,
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("--out {}", a.out.display()))?;
    let p_n = layout.n_parties();
    let (mut dpvi, mut history) = if let Some(ck) = resumed {
        if a.temper_start.is_none() && a.temper_until.is_none() {
            // The default schedule follows --iters; a resumed run keeps the one it started
            // with (so --iters can grow, as with --sigma).
            config.tempering = ck.settings.config.tempering;
            settings.config.tempering = config.tempering;
        }
        check_resume(&ck, &settings, &ck_path)?;
        let noise = match a.noise_seed {
            Some(s) => NoiseRngs::seeded(s, p_n),
            None => NoiseRngs::from_os(p_n),
        };
        noise
            .check_checkpoint(ck.noise.as_deref(), ck.state.iteration)
            .map_err(|e| {
                anyhow::anyhow!(
                    "--resume: {}: {}",
                    ck_path.display(),
                    noise_resume_message(&e)
                )
            })?;
        if !settings.insecure_seeds.is_empty() && ck.state.batch_key != batch_key {
            bail!(
                "--resume: {}: its batches were not drawn from this --mpc-seed/--noise-seed",
                ck_path.display()
            );
        }
        (
            Dpvi::resume(config, layout.clone(), data, backend, noise, ck.state)?,
            ck.history,
        )
    } else {
        let noise = match a.noise_seed {
            Some(s) => NoiseRngs::seeded(s, p_n),
            None => NoiseRngs::from_os(p_n),
        };
        (
            Dpvi::new(config, layout.clone(), data, backend, noise, batch_key)?,
            Vec::new(),
        )
    };
    let saved = a.resume.then(|| dpvi.trainer().averaging());
    dpvi.trainer_mut()
        .set_averaging(averaging(a.average, a.average_half_life, iters, saved))
        .context("--average")?;
    let log = opening_log(&a.out, a.resume, dpvi.trainer_mut())?;
    dpvi.set_opening_log(log);
    if let Some(note) = k_note {
        eprintln!("{note}");
    }
    let void = !settings.insecure_seeds.is_empty();

    let eval = |mu: &[f64]| -> anyhow::Result<Option<f64>> {
        match &test {
            Some(t) => Ok(Some(natural_params(&layout, mu).mean_nll(t)?)),
            None => Ok(None),
        }
    };
    if dpvi.iteration() == 0 && history.is_empty() {
        history.push(HistoryRow {
            iteration: 0,
            epsilon: 0.0,
            test_nll: eval(dpvi.model_mu())?,
        });
        // A checkpoint from the start, so that any crash can be resumed (and its openings,
        // already in the log, charged) instead of restarted uncharged.
        write_outputs(
            &a.out,
            dpvi.trainer(),
            dpvi.noise_checkpoint(),
            &schema,
            &history,
            &settings,
            Outputs::Checkpoint,
        )?;
    }
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(iters);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} iteration {pos}/{len} {msg}")
        {
            b.set_style(style);
        }
        b.set_position(dpvi.iteration());
        b
    });
    let mut reports: Vec<StepReport> = Vec::new();
    let mut iter_ms = Vec::new();
    while dpvi.iteration() < iters {
        let t0 = std::time::Instant::now();
        let r = dpvi.step()?;
        iter_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        reports.push(r);
        let t = dpvi.iteration();
        if t % a.eval_every == 0 || t == iters {
            let row = HistoryRow {
                iteration: t,
                epsilon: epsilon_now(dpvi.trainer(), delta)?,
                test_nll: eval(dpvi.model_mu())?,
            };
            if let Some(b) = &bar {
                b.set_message(format!(
                    "{} nll {}",
                    if void {
                        "privacy void".to_owned()
                    } else {
                        format!("eps {:.3}", row.epsilon)
                    },
                    row.test_nll.map_or("-".into(), |v| format!("{v:.4}"))
                ));
            }
            history.push(row);
        }
        // The last iteration's files are written once, after the loop.
        if t % a.checkpoint_every == 0 && t < iters {
            write_outputs(
                &a.out,
                dpvi.trainer(),
                dpvi.noise_checkpoint(),
                &schema,
                &history,
                &settings,
                Outputs::Checkpoint,
            )?;
        }
        if let Some(b) = &bar {
            b.set_position(t);
        }
    }
    if let Some(b) = bar {
        b.finish();
    }
    write_outputs(
        &a.out,
        dpvi.trainer(),
        dpvi.noise_checkpoint(),
        &schema,
        &history,
        &settings,
        Outputs::Release,
    )?;
    let privacy = privacy_json(&settings, dpvi.trainer())?;
    atomic::write(
        &a.out.join("privacy.json"),
        serde_json::to_string_pretty(&privacy)?.as_bytes(),
        Mode::Public,
    )?;
    let phase = |f: &dyn Fn(&StepReport) -> f64| {
        let mut v: Vec<f64> = reports.iter().map(f).collect();
        median(&mut v)
    };
    // Rounds and bytes are 0 for the plaintext backends (no nodes).
    let mpc = mpc_costs.map(|log| mpc_cost_json(&log));
    let timing = serde_json::json!({
        "backend": dpvi.backend_name(),
        "iterations_timed": reports.len(),
        "median_ms": {
            "iteration": median(&mut iter_ms.clone()),
            "sample": phase(&|r| r.sample_ms),
            "gather": phase(&|r| r.gather_ms),
            "local_kernels": phase(&|r| r.diagnostics.local_ms),
            "combine": phase(&|r| r.diagnostics.combine_ms),
            "noise": phase(&|r| r.diagnostics.noise_ms),
            "backend": phase(&|r| r.backend_ms),
            "update": phase(&|r| r.update_ms),
        },
        "rounds_per_iteration": mpc.as_ref().map_or(0.0, |m| m["median_per_iteration"]["rounds"].as_f64().unwrap_or(0.0)),
        "bytes_between_nodes_per_iteration": mpc.as_ref().map_or(0.0, |m| m["median_per_iteration"]["bytes_between_nodes"].as_f64().unwrap_or(0.0)),
        "mpc": mpc,
    });
    atomic::write(
        &a.out.join("timing.json"),
        serde_json::to_string_pretty(&timing)?.as_bytes(),
        Mode::Public,
    )?;
    let last = history.last();
    // privacy.json's analyst figure. What the calibration (noise_multiplier) could not know
    // comes out of delta as the run goes: the MPC's truncation-failure bounds, summed from
    // each opening's public circuit, and openings beyond the planned iterations (replays).
    let stated = privacy["epsilon"]["rdp"]["add_remove"].as_f64();
    if let (Some(target), Some(stated)) = (a.epsilon, stated) {
        if stated > target {
            eprintln!(
                "note: privacy.json states epsilon {stated} (rdp, add/remove), above --epsilon {target}: --epsilon calibrates for {iters} openings with the batch overflows charged, and this run charged {} openings and {:.3e} of truncation-failure bounds to delta (SECURITY.md)",
                dpvi.trainer().openings(),
                dpvi.trainer().ledger().map_or(0.0, |l| l.failure())
            );
        }
    }
    println!(
        "trained {} iterations ({}, {} openings), {}, test NLL {}",
        dpvi.iteration(),
        dpvi.backend_name(),
        dpvi.trainer().openings(),
        epsilon_line(&settings, last.map_or(f64::NAN, |r| r.epsilon)),
        last.and_then(|r| r.test_nll)
            .map_or("-".into(), |v| format!("{v:.4}"))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_iterations_follow_the_learning_rate() {
        assert_eq!(default_iters(0.01), 10_000);
        assert_eq!(default_iters(0.05), 2_000);
        assert_eq!(default_iters(1e3), 1);
    }

    #[test]
    fn averaging_flags_fresh_and_resumed() {
        let ema = |h| Averaging::Ema { half_life: h };
        assert_eq!(averaging(AverageKind::Ema, None, 10_000, None), ema(1000.0));
        assert_eq!(
            averaging(AverageKind::Ema, Some(50.0), 10_000, None),
            ema(50.0)
        );
        assert_eq!(
            averaging(AverageKind::None, None, 10_000, None),
            Averaging::None
        );
        // A resumed run keeps its own half-life when none is given, whatever --iters says.
        assert_eq!(
            averaging(AverageKind::Ema, None, 20_000, Some(ema(1000.0))),
            ema(1000.0)
        );
    }
}
