//! `vtwin audit-mechanism`: the canary audit of the training mechanism itself
//! (`vtwin_eval::audit::mechanism`, docs/audit.md). Runs the real backend's iterations with
//! and without canary records, scores each run from the released noisy sums, and writes the
//! empirical epsilon lower bound beside the theoretical figure of an observer who knows the
//! batches.

use std::path::PathBuf;

use anyhow::{bail, Context};
use vtwin_dp::{calibrate_sigma, Accountant, Neighbouring};
use vtwin_eval::audit::mechanism::{
    audit_mechanism, AuditBackend, MechanismAuditError, MechanismAuditSettings,
};
use vtwin_host::atomic::{self, Mode};
use vtwin_model::fixed_backend::Renormalise;

use super::training_data::{components, sample_rate, TrainingData};

/// The backends with a mechanism to audit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Backend {
    /// The plaintext fixed-point reference.
    Fixed,
    /// Three in-memory MPC nodes.
    Mpc,
}

/// Audit the training mechanism with canaries: empirical epsilon lower bound vs theory.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    training: TrainingData,
    /// Gradient backend whose mechanism is audited.
    #[arg(long, value_enum, default_value = "fixed")]
    backend: Backend,
    /// Target epsilon of the audited observer (with --delta): sigma is calibrated so that T
    /// compositions with the canary in every batch give it (PLD).
    #[arg(long)]
    epsilon: Option<f64>,
    /// delta of the target and of the bounds (default 1e-5).
    #[arg(long)]
    delta: Option<f64>,
    /// Noise multiplier sigma instead of --epsilon.
    #[arg(long)]
    sigma: Option<f64>,
    /// Iterations T per run.
    #[arg(long, default_value_t = 10)]
    iters: u64,
    /// Expected batch size of the other records (sample rate B/N).
    #[arg(long)]
    batch: Option<usize>,
    /// Poisson sampling rate q of the other records.
    #[arg(long)]
    sample_rate: Option<f64>,
    /// Mixture components K [default: `vtwin train`'s for the schema,
    /// `vtwin_model::components`].
    #[arg(long)]
    components: Option<usize>,
    /// Clip bound C.
    #[arg(long, default_value_t = 1.0)]
    clip: f64,
    /// Adam learning rate.
    #[arg(long, default_value_t = 0.01)]
    lr: f64,
    /// Renormalisation of the fixed-point backends.
    #[arg(long, default_value = "closed-form")]
    renormalise: Renormalise,
    /// Runs per world (with each canary, and without).
    #[arg(long, default_value_t = 1000)]
    trials: usize,
    /// Confidence of the lower bounds.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Seed of the runs' batch keys, noise and MPC randomness (reproducible audits; the
    /// report is not a private release).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads.
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get()))]
    threads: usize,
    /// Output JSON.
    #[arg(long)]
    out: PathBuf,
    /// Tests of the audit's power only: clip at k C while the noise and the claim stay
    /// those of C (a deliberately broken mechanism).
    #[arg(long, hide = true, default_value_t = 1.0)]
    inflate_sensitivity: f64,
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    let (_, table, _) = a.training.load()?;
    if !a.training.demo {
        eprintln!(
            "note: the audit's report holds thousands of training runs on this data and is not a differential-privacy release: keep it with the data"
        );
    }
    let q = sample_rate(a.batch, a.sample_rate, table.n_rows())?;
    if a.components == Some(0) {
        bail!("--components must be at least 1");
    }
    if !(a.clip.is_finite() && a.clip > 0.0) {
        bail!("--clip {}: must be positive", a.clip);
    }
    let delta = a.delta.unwrap_or(1e-5);
    if !(delta > 0.0 && delta < 1.0) {
        bail!("--delta {delta}: must be in (0, 1)");
    }
    let sigma = match (a.epsilon, a.sigma) {
        (Some(_), Some(_)) => bail!("--epsilon and --sigma: give one of them"),
        (Some(e), None) => calibrate_sigma(
            Accountant::Pld,
            e,
            delta,
            1.0,
            a.iters,
            Neighbouring::AddRemove,
        )
        .with_context(|| format!("--epsilon {e}"))?,
        (None, Some(s)) if s.is_finite() && s > 0.0 => s,
        (None, Some(s)) => bail!("--sigma {s}: the audit needs noise (sigma > 0)"),
        (None, None) => bail!("--epsilon with --delta, or --sigma, is required"),
    };
    if a.inflate_sensitivity != 1.0 {
        eprintln!(
            "warning: --inflate-sensitivity {}: the audited mechanism is deliberately broken (clips at {} C); for tests of the audit's power only",
            a.inflate_sensitivity, a.inflate_sensitivity
        );
    }
    let settings = MechanismAuditSettings {
        backend: match a.backend {
            Backend::Fixed => AuditBackend::Fixed,
            Backend::Mpc => AuditBackend::Mpc,
        },
        renormalise: a.renormalise,
        components: components(a.components, &table.schema)?,
        sample_rate: q,
        clip: a.clip,
        sigma,
        delta,
        iterations: a.iters,
        lr: a.lr,
        trials: a.trials,
        confidence: a.confidence,
        seed: a.seed,
        sensitivity_inflation: a.inflate_sensitivity,
        threads: a.threads,
    };
    settings.check().map_err(with_flag)?;
    // A line per tenth of the runs: a full audit takes minutes.
    let report = audit_mechanism(&table, &settings, &|done, total| {
        if done % (total / 10).max(1) == 0 || done == total {
            eprintln!("audit-mechanism: {done}/{total} runs");
        }
    })?;
    atomic::write(
        &a.out,
        serde_json::to_string_pretty(&report)?.as_bytes(),
        Mode::Public,
    )
    .with_context(|| format!("--out {}", a.out.display()))?;
    println!(
        "audit-mechanism ({:?}, {} runs per world, T {}, sigma {:.4}): epsilon lower bound {:.3} (GDP fit; Clopper-Pearson {:.3}) vs theoretical {:.3}: {}",
        report.backend,
        report.trials,
        report.iterations,
        report.sigma,
        report.epsilon_lower_bound,
        report.epsilon_lower_bound_clopper_pearson,
        report.epsilon_theoretical,
        if report.sound {
            "no violation found"
        } else {
            "VIOLATION: the lower bound exceeds the claim"
        }
    );
    for c in &report.canaries {
        println!(
            "  {:<8} TPR {:.3} FPR {:.3} mu_lb {:.3} eps_lb {:.3} |h|/C mean {:.4} max {:.4}",
            c.canary.name(),
            c.tpr,
            c.fpr,
            c.gdp.mu_lower_bound,
            c.epsilon_lower_bound,
            c.mean_contribution_over_clip,
            c.max_contribution_over_clip
        );
    }
    if !report.sound {
        bail!(
            "the audit's lower bound {:.3} exceeds the theoretical epsilon {:.3}",
            report.epsilon_lower_bound,
            report.epsilon_theoretical
        );
    }
    Ok(())
}

/// A settings error of the library prefixed with the flag that set the value.
fn with_flag(e: MechanismAuditError) -> anyhow::Error {
    use MechanismAuditError as E;
    let flag = match e {
        E::Trials(_) => "--trials",
        E::Iterations(_) => "--iters",
        E::Sigma(_) => "--sigma",
        E::Delta(_) => "--delta",
        E::Confidence(_) => "--confidence",
        E::SensitivityInflation(_) => "--inflate-sensitivity",
        E::NoThreads => "--threads",
        _ => return e.into(),
    };
    anyhow::Error::new(e).context(flag)
}
