//! `vtwin audit`: membership-inference attacks on a synthetic table and its model
//! (INTERFACE.md; the attacks and their statistics are in `vtwin_eval::audit` and
//! docs/audit.md). Writes the JSON report atomically and prints one line per attack.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};
use vtwin_data::{Schema, Table};
use vtwin_eval::audit::privacy_claim::PrivacyClaim;
use vtwin_eval::audit::training::TrainBackend;
use vtwin_eval::audit::{run_audit, Attack, AuditConfig, AuditData};
use vtwin_eval::TableSource;
use vtwin_host::atomic::{self, Mode};
use vtwin_model::model_file::ModelFile;

/// An attack, on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AttackArg {
    /// Distance to the closest synthetic record.
    Dcr,
    /// Density ratio of the released model against a reference density (DOMIAS-style).
    DensityRatio,
    /// Shadow models with and without the most isolated members.
    Shadow,
    /// Outlier canaries inserted at random into one training (black box, one-run bound).
    Canaries,
}

/// The shadow models' backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BackendArg {
    /// Non-partitioned f64.
    Float,
    /// Partitioned fixed point (as `vtwin train --backend fixed`).
    Fixed,
}

/// Membership-inference audit of a synthetic table and its model.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The model written by `vtwin train`.
    #[arg(long)]
    model: PathBuf,
    /// The schema (default: the model's; if given it must equal the model's).
    #[arg(long)]
    schema: Option<PathBuf>,
    /// The model's privacy.json (default: privacy.json next to the model).
    #[arg(long)]
    privacy: Option<PathBuf>,
    /// The synthetic table (CSV with every column, as `vtwin synthesize` writes it).
    #[arg(long)]
    synthetic: PathBuf,
    /// The training records, one CSV with every column (the whole training set: the shadow
    /// attack retrains on it).
    #[arg(long)]
    members: Option<PathBuf>,
    /// The training records, one CSV per party (repeat), matched by the schema's id column.
    #[arg(long = "members-party", value_name = "PARTY=FILE")]
    members_party: Vec<String>,
    /// Held-out records of the same population, one CSV with every column.
    #[arg(long)]
    non_members: Option<PathBuf>,
    /// Held-out records, one CSV per party (repeat).
    #[arg(long = "non-members-party", value_name = "PARTY=FILE")]
    non_members_party: Vec<String>,
    /// Reference records for the density ratio (default: the non-members not scored).
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Attacks to run (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [AttackArg::Dcr, AttackArg::DensityRatio, AttackArg::Shadow, AttackArg::Canaries])]
    attacks: Vec<AttackArg>,
    /// Records scored per class, at most (half choose the epsilon test, half evaluate it).
    #[arg(long, default_value_t = 2000)]
    records: usize,
    /// Seed of the sampling and of the audit's models.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Confidence of the intervals.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// DPVI iterations of the reference density.
    #[arg(long, default_value_t = 2000)]
    reference_iters: u64,
    /// Shadow attack: number of target records (the most isolated members).
    #[arg(long, default_value_t = 5)]
    shadow_targets: usize,
    /// Shadow attack: training runs per target with it and without it (each; at least 4).
    #[arg(long, default_value_t = 4)]
    shadow_runs: usize,
    /// Shadow attack: DPVI iterations per shadow model.
    #[arg(long, default_value_t = 300)]
    shadow_iters: u64,
    /// Shadow attack: backend of the shadow models.
    #[arg(long, value_enum, default_value_t = BackendArg::Fixed)]
    shadow_backend: BackendArg,
    /// Adam learning rate of the reference, shadow and canary models.
    #[arg(long, default_value_t = 0.01)]
    lr: f64,
    /// Inserted-canary attack: outlier canaries drawn (each inserted with probability 1/2).
    #[arg(long, default_value_t = 1000)]
    canaries: usize,
    /// Inserted-canary attack: DPVI iterations of the canary model (its backend is
    /// --shadow-backend).
    #[arg(long, default_value_t = 300)]
    canary_iters: u64,
    /// Output JSON (written atomically).
    #[arg(long)]
    out: PathBuf,
}

fn load(
    what: &str,
    joined_flag: &str,
    joined: Option<PathBuf>,
    party_flag: &str,
    parties: &[String],
    schema: &Schema,
) -> anyhow::Result<Table> {
    let source = TableSource::from_flags(joined_flag, joined, party_flag, parties)?
        .ok_or_else(|| anyhow!("{joined_flag} FILE or {party_flag} PARTY=FILE is required"))?;
    source
        .load(schema)
        .with_context(|| format!("{what} ({joined_flag})"))
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    if a.records < 2 {
        bail!("--records {}: at least 2 are needed", a.records);
    }
    if !(a.confidence > 0.0 && a.confidence < 1.0) {
        bail!("--confidence {}: must be in (0, 1)", a.confidence);
    }
    if !(a.lr.is_finite() && a.lr > 0.0) {
        bail!("--lr {}: must be positive", a.lr);
    }
    if a.attacks.contains(&AttackArg::Shadow) {
        if a.shadow_runs < 4 {
            bail!("--shadow-runs {}: at least 4 are needed", a.shadow_runs);
        }
        if a.shadow_targets == 0 {
            bail!("--shadow-targets 0: at least one target is needed");
        }
    }
    let model = ModelFile::load(&a.model).context("--model")?;
    if let Some(path) = &a.schema {
        let schema = Schema::load(path).context("--schema")?;
        if schema != model.schema {
            bail!(
                "--schema {}: differs from the schema in {}",
                path.display(),
                a.model.display()
            );
        }
    }
    let privacy_path = match &a.privacy {
        Some(p) => p.clone(),
        None => a
            .model
            .parent()
            .map_or_else(|| PathBuf::from("privacy.json"), |d| d.join("privacy.json")),
    };
    let privacy = PrivacyClaim::load(&privacy_path)
        .context("privacy claim (--privacy; default: next to --model)")?;
    let schema = &model.schema;
    let synthetic = Table::read_joined(schema, &a.synthetic).context("--synthetic")?;
    let members = load(
        "members",
        "--members",
        a.members.clone(),
        "--members-party",
        &a.members_party,
        schema,
    )?;
    let non_members = load(
        "non-members",
        "--non-members",
        a.non_members.clone(),
        "--non-members-party",
        &a.non_members_party,
        schema,
    )?;
    let reference = match &a.reference {
        Some(p) => Some(Table::read_joined(schema, p).context("--reference")?),
        None => None,
    };
    let mut attacks = Vec::new();
    for (arg, attack) in [
        (AttackArg::Dcr, Attack::DistanceToClosestRecord),
        (AttackArg::DensityRatio, Attack::DensityRatio),
        (AttackArg::Shadow, Attack::ShadowModel),
        (AttackArg::Canaries, Attack::InsertedCanaries),
    ] {
        if a.attacks.contains(&arg) {
            attacks.push(attack);
        }
    }
    let config = AuditConfig {
        attacks,
        records: a.records,
        seed: a.seed,
        confidence: a.confidence,
        reference_iterations: a.reference_iters,
        shadow_targets: a.shadow_targets,
        shadow_runs: a.shadow_runs,
        shadow_iterations: a.shadow_iters,
        shadow_backend: match a.shadow_backend {
            BackendArg::Float => TrainBackend::Float,
            BackendArg::Fixed => TrainBackend::Fixed,
        },
        lr: a.lr,
        canaries: a.canaries,
        canary_iterations: a.canary_iters,
    };
    let data = AuditData {
        model: &model,
        privacy: &privacy,
        synthetic: &synthetic,
        members: &members,
        non_members: &non_members,
        reference: reference.as_ref(),
    };
    let report = run_audit(&data, &config, &mut |line| eprintln!("audit: {line}"))?;
    let json = serde_json::to_string_pretty(&report)?;
    atomic::write(&a.out, json.as_bytes(), Mode::Public)
        .with_context(|| format!("--out {}", a.out.display()))?;
    let eps = |e: Option<f64>| e.map_or("none".to_owned(), |v| format!("{v:.3}"));
    println!(
        "{} members, {} non-members; epsilon_theoretical {}",
        report.members,
        report.non_members,
        eps(report.epsilon_theoretical)
    );
    for r in &report.attacks {
        println!(
            "{}: AUC {:.4}, TPR at FPR 0.01 {:.4}, epsilon lower bound {:.3} (CI [{:.3}, {}])",
            r.name,
            r.auc,
            r.tpr_at_fpr_0_01,
            r.epsilon_lower_bound,
            r.epsilon_lower_bound_ci.0,
            eps(r.epsilon_lower_bound_ci.1)
        );
    }
    Ok(())
}
