//! `vtwin demo [--out DIR] [--iters N] [--seed S]`: a whole consortium on this machine
//! (INTERFACE.md): a fresh CA and a certificate per role (in memory), three compute nodes,
//! the two demo parties (`health` and `retail`, each holding only its own columns of the
//! built-in demo table) and the coordinator, all in this process over loopback QUIC with
//! mutual TLS (`vtwin_consortium::loopback`). Secrets come from the OS CSPRNG.
//!
//! Writes what `vtwin coordinator` writes (model.json, privacy.json, synthetic.csv,
//! train.csv, timing.json, checkpoint.bin) and eval.json: `vtwin_eval`'s report (nll_test
//! on a held-out demo table, tvd_1way and the other synthetic-data metrics against the
//! training table). Prints a short summary; a progress bar on a terminal.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use vtwin_consortium::config::TrainingSettings;
use vtwin_consortium::loopback::{run_with_hooks, LoopbackSettings};
use vtwin_data::demo::{demo_schema, demo_table, DEMO_ROWS};
use vtwin_data::Table;
use vtwin_eval::report::{evaluate, EvalConfig, EvalInputs};
use vtwin_host::atomic::{self, Mode};
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::adam::AdamConfig;
use vtwin_model::dpvi::DpviConfig;
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::model_file::ModelFile;
use vtwin_model::party_data::PartyData;

use super::coordinator::Driver;
use super::node::{init_logging, runtime};

/// Mixture components of the demo model.
const COMPONENTS: usize = 10;

/// Run a whole consortium (3 nodes, 2 parties, coordinator) on loopback QUIC on the demo data.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Output directory.
    #[arg(long, default_value = "vtwin-demo")]
    out: PathBuf,
    /// Iterations.
    #[arg(long, default_value_t = 500)]
    iters: u64,
    /// Seed of the public randomness (initialisation, batches, synthesis).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    if std::env::var_os("RUST_LOG").is_some() {
        init_logging();
    }
    if a.iters == 0 {
        anyhow::bail!("--iters must be at least 1");
    }
    let t0 = Instant::now();
    let schema = demo_schema();
    let layout = Layout::from_schema(&schema, COMPONENTS)?;
    let parties = layout
        .parties
        .iter()
        .map(|name| PartyData::from_demo(&layout, name, DEMO_ROWS, 1))
        .collect::<Result<Vec<_>, _>>()?;
    let training = TrainingSettings {
        components: COMPONENTS,
        iters: a.iters,
        seed: a.seed,
        ..TrainingSettings::default()
    };
    let settings = LoopbackSettings {
        schema: schema.clone(),
        parties,
        components: COMPONENTS,
        // Not used by run_with_hooks: the driver builds the trainer from `training` once the
        // parties report N (sigma calibrated then).
        config: DpviConfig {
            sample_rate: training.batch as f64 / DEMO_ROWS as f64,
            clip: training.clip,
            sigma: 0.0,
            adam: AdamConfig {
                lr: training.lr,
                ..AdamConfig::default()
            },
            seed: training.seed,
        },
        iters: a.iters,
        renormalise: Renormalise::ClosedForm,
        mpc_seed: None,
        noise_seed: None,
        receive_delay: None,
        iteration_timeout: Duration::from_secs(60),
        // Every party agrees to exactly this job (the policy `vtwin keygen` writes for it).
        policy: super::keygen::policy_for_job(&training, DEMO_ROWS)?,
        delta: training.delta,
    };
    let mut driver = Driver::new(
        &a.out,
        schema.clone(),
        layout,
        training.clone(),
        false,
        SecretRandomness::Os,
    )?;
    let rt = runtime()?;
    let trainer = rt.block_on(run_with_hooks(&settings, &mut driver))?;
    driver.finish(&trainer)?;
    let train_secs = t0.elapsed().as_secs_f64();

    let model = ModelFile::load(&a.out.join("model.json"))?;
    let synthetic = Table::read_joined(&schema, &a.out.join("synthetic.csv"))?;
    let train = demo_table(DEMO_ROWS, 1);
    let test = demo_table(DEMO_ROWS / 4, 2);
    let report = evaluate(
        EvalInputs {
            model: &model,
            test: &test,
            train: Some(&train),
            synthetic: Some(&synthetic),
            target: None,
        },
        &EvalConfig {
            seed: a.seed,
            ..EvalConfig::default()
        },
    )
    .context("evaluating the demo model")?;
    atomic::write(
        &a.out.join("eval.json"),
        (serde_json::to_string_pretty(&report)? + "\n").as_bytes(),
        Mode::Public,
    )?;
    let privacy: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.out.join("privacy.json"))?)?;
    let tvd = report.synthetic.as_ref().map_or(f64::NAN, |s| s.tvd_1way);
    println!(
        "vtwin demo: 3 nodes, 2 parties (health, retail), coordinator over loopback QUIC with mutual TLS"
    );
    println!(
        "trained {} iterations in {train_secs:.1} s; privacy.json: {}",
        trainer.iteration(),
        privacy["epsilon"]
    );
    println!(
        "nll_test {:.4} on {} held-out records; tvd_1way {tvd:.4}",
        report.nll_test, report.n_test
    );
    println!(
        "wrote {}/{{model.json, privacy.json, synthetic.csv, eval.json, train.csv, timing.json, checkpoint.bin}}",
        a.out.display()
    );
    Ok(())
}
