//! `vtwin demo [--out DIR] [--iters N] [--seed S]`: a whole consortium on this machine
//! (INTERFACE.md): a fresh CA and a certificate per role (in memory), three compute nodes,
//! the two demo parties (`health` and `retail`, each holding only its own columns of the
//! built-in demo table) and the coordinator, all in this process over loopback QUIC with
//! mutual TLS (`vtwin_consortium::loopback`). Secrets come from the OS CSPRNG.
//!
//! The parties never shared ids: health holds the first 90% of the demo's people, retail
//! the last 90% in its own order, so the job starts with the private record alignment
//! (`protocols/psi.md`) and trains on the 80% both hold.
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
use vtwin_model::tempering::Tempering;

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

/// Rows of the demo table held by health (the first 90%), by retail (the last 90%, in
/// reverse order) and by both (ascending).
fn demo_overlap(n: usize) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let cut = n / 10;
    let health: Vec<usize> = (0..n - cut).collect();
    let retail: Vec<usize> = (cut..n).rev().collect();
    let common: Vec<usize> = (cut..n - cut).collect();
    (health, retail, common)
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
    // Overlapping but different people, in different orders (module docs).
    let (health_rows, retail_rows, common) = demo_overlap(DEMO_ROWS);
    let parties = layout
        .parties
        .iter()
        .zip([&health_rows, &retail_rows])
        .map(|(name, rows)| Ok(PartyData::from_demo(&layout, name, DEMO_ROWS, 1)?.select(rows)))
        .collect::<anyhow::Result<Vec<_>>>()?;
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
            sample_rate: training.batch as f64 / common.len() as f64,
            clip: training.clip,
            sigma: 0.0,
            adam: AdamConfig {
                lr: training.lr,
                ..AdamConfig::default()
            },
            seed: training.seed,
            tempering: Tempering::Off,
        },
        iters: a.iters,
        renormalise: Renormalise::ClosedForm,
        mpc_seed: None,
        noise_seed: None,
        receive_delay: None,
        iteration_timeout: Duration::from_secs(60),
        // Every party agrees to exactly this job on the people they share (the policy
        // `vtwin keygen` writes for it).
        policy: super::keygen::policy_for_job(&training, common.len())?,
        delta: training.delta,
        align: training.align,
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
    let train = demo_table(DEMO_ROWS, 1).select_rows(&common);
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
        "vtwin demo: 3 nodes, 2 parties (health {} people, retail {}; {} in common, aligned privately), coordinator over loopback QUIC with mutual TLS",
        health_rows.len(),
        retail_rows.len(),
        common.len()
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
