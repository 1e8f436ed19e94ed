//! `vtwin eval`: evaluate a trained model and its synthetic table (INTERFACE.md) with
//! [`vtwin_eval::evaluate`]; definitions in docs/metrics.md.
//!
//! - always `nll_test`: mean negative log-likelihood per test record under the posterior-mean
//!   parameters (same definition as `train.csv`'s test_nll);
//! - with `--synthetic`: `tvd_1way`, `tvd_2way`, `tvd_3way`, `corr_diff_within`,
//!   `corr_diff_across`, `frechet`, against the real training table if given (`--train-joined`
//!   or `--train`), else the test table;
//! - with `--synthetic` and `--target`: `tstr` (logistic regression at the top level, the
//!   random forest under `tstr.random_forest`), trained on synthetic and, if given, real
//!   training data, tested on the test table.

use std::path::PathBuf;

use anyhow::{anyhow, Context};
use vtwin_eval::tstr::Target;
use vtwin_eval::{evaluate, EvalConfig, EvalInputs, TableSource};
use vtwin_host::atomic::{self, Mode};
use vtwin_model::model_file::ModelFile;

/// Evaluate a model and its synthetic table against real data.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The model written by `vtwin train`.
    #[arg(long)]
    model: PathBuf,
    /// Synthetic CSV (from `vtwin synthesize`): enables the marginal, association, Fréchet
    /// and TSTR metrics.
    #[arg(long)]
    synthetic: Option<PathBuf>,
    /// Test set with every column.
    #[arg(long)]
    test_joined: Option<PathBuf>,
    /// A party's test CSV, matched by the schema's id column (repeat per party).
    #[arg(long = "test", value_name = "PARTY=FILE")]
    test: Vec<String>,
    /// Real training set with every column (the reference of the distances; TSTR's real side).
    #[arg(long)]
    train_joined: Option<PathBuf>,
    /// A party's real training CSV (repeat per party).
    #[arg(long = "train", value_name = "PARTY=FILE")]
    train: Vec<String>,
    /// Binary target column for TSTR (needs --synthetic); positive class = its second category.
    #[arg(long)]
    target: Option<String>,
    /// Seed of the random forest and of the 3-way marginal sample (large schemas).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output JSON (written atomically).
    #[arg(long)]
    out: PathBuf,
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    let model = ModelFile::load(&a.model)?;
    let schema = &model.schema;
    let test = TableSource::from_flags("--test-joined", a.test_joined.clone(), "--test", &a.test)?
        .ok_or_else(|| anyhow!("--test-joined or --test is required"))?
        .load(schema)?;
    let train = TableSource::from_flags(
        "--train-joined",
        a.train_joined.clone(),
        "--train",
        &a.train,
    )?
    .map(|s| s.load(schema))
    .transpose()?;
    let synthetic = a
        .synthetic
        .as_ref()
        .map(|p| TableSource::Joined(p.clone()).load(schema))
        .transpose()?;
    let target = a
        .target
        .as_deref()
        .map(|t| Target::new(schema, t).with_context(|| format!("--target {t}")))
        .transpose()?;
    if target.is_some() && synthetic.is_none() {
        anyhow::bail!("--target needs --synthetic (TSTR trains on the synthetic table)");
    }
    let config = EvalConfig {
        seed: a.seed,
        ..EvalConfig::default()
    };
    let report = evaluate(
        EvalInputs {
            model: &model,
            test: &test,
            train: train.as_ref(),
            synthetic: synthetic.as_ref(),
            target: target.as_ref(),
        },
        &config,
    )?;
    let text = serde_json::to_string_pretty(&report)? + "\n";
    atomic::write(&a.out, text.as_bytes(), Mode::Public)
        .map_err(|e| anyhow!("--out {}: {e}", a.out.display()))?;
    eprintln!(
        "nll_test {:.6} over {} test records",
        report.nll_test, report.n_test
    );
    if let Some(s) = &report.synthetic {
        eprintln!(
            "tvd 1/2/3-way {:.4} / {} / {}, corr diff within/across {} / {}, frechet {:.4}",
            s.tvd_1way,
            fmt_opt(s.tvd_2way),
            fmt_opt(s.tvd_3way),
            fmt_opt(s.corr_diff_within),
            fmt_opt(s.corr_diff_across),
            s.frechet
        );
        if let Some(t) = &s.tstr {
            eprintln!(
                "tstr {}: logistic auc real {} synth {}; forest auc real {} synth {}",
                t.target,
                fmt_opt(t.logistic.auc_real),
                fmt_opt(t.logistic.auc_synth),
                fmt_opt(t.random_forest.auc_real),
                fmt_opt(t.random_forest.auc_synth)
            );
        }
    }
    Ok(())
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{x:.4}"))
}
