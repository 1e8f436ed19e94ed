//! `vtwin keygen`: a consortium's CA, per-role certificates and keys (mode 0600), the
//! nodes' seal keys, and one configuration TOML per role with loopback addresses
//! (`vtwin_net::keygen`).
//!
//! The coordinator's job defaults to the built-in demo (schema and data, as
//! `vtwin train --demo`): K = 20, 1000 iterations, epsilon 1 at delta 1e-5, expected batch
//! 100, clip 1, learning rate 0.01, closed-form renormalisation, a checkpoint every 100
//! iterations. Each party's `[policy]` agrees to exactly that job on the demo data (sigma
//! floor = the calibrated sigma, clip 1, K = 20, q = 100 / N, 1000 openings, epsilon 1 at
//! delta 1e-5); each node's `[policy]` takes the sigma floor and the clip cap. For real
//! data, edit `training.schema` in coordinator.toml and `schema`, `data` and `[policy]` in
//! each party's file (and the nodes' `[policy]`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use vtwin_consortium::party::policy_for_plan;
use vtwin_net::config::{DataSource, PartyPolicy, TrainingSettings};
use vtwin_net::keygen::{keygen, verify, KeygenSpec};
use vtwin_net::JobTerms;

use super::train::noise_multiplier;

/// Write the CA, certificates, keys and one config per role.
#[derive(Debug, Parser)]
pub(crate) struct Args {
    /// Output directory (created; existing files are never overwritten).
    #[arg(long)]
    out: PathBuf,
    /// Party names in index order, comma separated (at least 2).
    #[arg(long, value_delimiter = ',', required = true)]
    parties: Vec<String>,
    /// Compute nodes (replicated sharing needs exactly 3).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// First port: node i listens on P + i, party j on P + 3 + j (127.0.0.1).
    #[arg(long, default_value_t = 7400)]
    base_port: u16,
}

/// The policy of a party that agrees to `training` on `rows` records: sigma calibrated as
/// the coordinator calibrates it (so the floor is exactly the job's sigma), the job's clip,
/// K, q = batch / rows, delta and iterations, and its target epsilon (or, for a job given
/// by sigma, the analyst's epsilon of the plan).
pub(crate) fn policy_for_job(
    training: &TrainingSettings,
    rows: usize,
) -> anyhow::Result<PartyPolicy> {
    let q = training.batch as f64 / rows as f64;
    let (sigma, delta) = noise_multiplier(
        training.epsilon,
        Some(training.delta),
        training.sigma,
        q,
        training.iters,
    )?;
    let mut policy = policy_for_plan(&JobTerms {
        sigma,
        clip: training.clip,
        components: u32::try_from(training.components).context("training.components")?,
        sample_rate: q,
        iterations: training.iters,
        delta,
    })
    .context("the job's party policy")?;
    if let Some(e) = training.epsilon {
        policy.epsilon = e;
    }
    Ok(policy)
}

pub(crate) fn run(args: Args) -> anyhow::Result<()> {
    let training = TrainingSettings::default();
    let policy = policy_for_job(&training, vtwin_model::demo::DEMO_ROWS)?;
    let spec = KeygenSpec {
        data: args
            .parties
            .iter()
            .map(|_| DataSource::Demo {
                rows: vtwin_model::demo::DEMO_ROWS,
                seed: 1,
            })
            .collect(),
        parties: args.parties,
        nodes: args.nodes,
        base_port: args.base_port,
        training,
        insecure: None,
        policy,
    };
    let written = keygen(&args.out, &spec)?;
    verify(&written).context("reading back the written configurations")?;
    for file in &written.files {
        println!("{}", file.display());
    }
    Ok(())
}
