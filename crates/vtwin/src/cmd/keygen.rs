//! `vtwin keygen`: a consortium's keys, certificates and configurations
//! (`vtwin_consortium::keygen`), two ways.
//!
//! Deployment, by certificate requests (no private key leaves its role):
//! - `vtwin keygen ca --out DIR` (CA operator): `ca.pem`, `ca.key`;
//! - `vtwin keygen request --role ROLE --out DIR` (each role, on its host): `ROLE.key`,
//!   `ROLE.seal` (nodes), `ROLE.csr` to send to the CA operator;
//! - `vtwin keygen sign --ca DIR --parties A,B --request FILE... --out DIR` (CA operator):
//!   `ca.pem`, `ROLE.pem` and `ROLE.toml` for every role;
//! - `vtwin keygen show FILE...`: the fingerprints of a certificate or request.
//!
//! Each step prints SHA-256 fingerprints to compare out of band. Demos and tests:
//! `vtwin keygen --out DIR --parties A,B` writes everything, private keys included, at once.
//!
//! The coordinator's job defaults to the built-in demo (schema and data, as
//! `vtwin train --demo`): K = 20, 10000 iterations (100 / lr), epsilon 1 at delta 1e-5, expected batch
//! 100, clip 1, learning rate 0.01, closed-form renormalisation, a checkpoint every 100
//! iterations. Each party's `[policy]` agrees to exactly that job on the demo data (sigma
//! floor = the calibrated sigma, clip 1, K = 20, q = 100 / N, 10000 openings, epsilon 1 at
//! delta 1e-5); each node's `[policy]` takes the sigma floor and the clip cap. For real
//! data, edit `training.schema` in coordinator.toml and `schema`, `data` and `[policy]` in
//! each party's file (and the nodes' `[policy]`), and set `training.components` and every
//! policy's `components` to the K the job should use (`vtwin train` prints its default for a
//! schema, `vtwin_model::components`: 9 for the shipped Adult schema).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use vtwin_consortium::config::{DataSource, PartyPolicy, TrainingSettings};
use vtwin_consortium::keygen::{self, verify, KeygenError, KeygenSpec, RequestRole, Setting};
use vtwin_consortium::party::policy_for_plan;
use vtwin_net::JobTerms;

use super::train::noise_multiplier;

/// Keys, certificates and configs: by certificate requests (`ca`, `request`, `sign`), or
/// everything at once for demos and tests (`--out DIR --parties A,B`).
#[derive(Debug, Parser)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    step: Option<Step>,
    /// One step (demos and tests): output directory (created; existing files are never
    /// overwritten). The operator sees every private key.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    #[command(flatten)]
    consortium: Consortium,
}

/// The consortium's shape, shared by the one-step keygen and `sign`.
#[derive(Debug, clap::Args)]
struct Consortium {
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
        rows,
    )?;
    let mut policy = policy_for_plan(&JobTerms {
        sigma,
        clip: training.clip,
        components: u32::try_from(training.components).context("training.components")?,
        sample_rate: q,
        iterations: training.iters,
        delta,
        // A policy bounds neither the rows nor the tempering.
        rows: [0; 32],
        tempering_start: 1.0,
        tempering_iterations: 0,
    })
    .context("the job's party policy")?;
    if let Some(e) = training.epsilon {
        policy.epsilon = e;
    }
    Ok(policy)
}

#[derive(Debug, Subcommand)]
enum Step {
    /// CA operator: a new consortium CA, ca.pem and ca.key (0600; keep it offline).
    Ca {
        /// Output directory (created; existing files are never overwritten).
        #[arg(long)]
        out: PathBuf,
    },
    /// Each role, on its own host: its TLS key, a node's seal key (0600) and ROLE.csr.
    Request {
        /// coordinator, node-0, node-1, node-2 or party-NAME.
        #[arg(long)]
        role: RequestRole,
        /// Output directory (created; existing files are never overwritten).
        #[arg(long)]
        out: PathBuf,
    },
    /// CA operator: verify and sign every role's request; write certificates and configs.
    Sign {
        /// Directory holding ca.pem and ca.key.
        #[arg(long)]
        ca: PathBuf,
        /// Request files (ROLE.csr), one per role: coordinator, node-0..2, each party.
        #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
        request: Vec<PathBuf>,
        /// Output directory (created; existing files are never overwritten).
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        consortium: Consortium,
    },
    /// Print the fingerprints of certificates (.pem) or requests (.csr).
    Show {
        /// The files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// The consortium's keygen spec: demo data, the default training job and the party policy
/// that agrees to exactly that job.
fn spec(c: Consortium) -> anyhow::Result<KeygenSpec> {
    let training = TrainingSettings::default();
    let policy = policy_for_job(&training, vtwin_data::demo::DEMO_ROWS)?;
    Ok(KeygenSpec {
        data: c
            .parties
            .iter()
            .map(|_| DataSource::Demo {
                rows: vtwin_data::demo::DEMO_ROWS,
                seed: 1,
            })
            .collect(),
        parties: c.parties,
        nodes: c.nodes,
        base_port: c.base_port,
        training,
        insecure: None,
        policy,
    })
}

/// The CLI's wording of a keygen error: the library names the setting
/// ([`keygen::Setting`]) or role; the command adds the flag that gives it.
fn with_flag(e: KeygenError) -> anyhow::Error {
    let flag = match &e {
        KeygenError::Invalid { setting, .. } => match setting {
            Setting::Nodes => "--nodes",
            Setting::Parties => "--parties",
            Setting::BasePort => "--base-port",
            _ => return e.into(),
        },
        KeygenError::MissingRequest { .. } => "--request",
        KeygenError::Exists { .. } => "--out",
        _ => return e.into(),
    };
    anyhow::Error::new(e).context(flag)
}

fn list(files: &[PathBuf]) {
    for file in files {
        println!("{}", file.display());
    }
}

pub(crate) fn run(args: Args) -> anyhow::Result<()> {
    match args.step {
        None => {
            let out = args.out.context("--out is required")?;
            let written = keygen::keygen(&out, &spec(args.consortium)?).map_err(with_flag)?;
            verify(&written).context("reading back the written configurations")?;
            list(&written.files);
        }
        Some(Step::Ca { out }) => {
            let written = keygen::ca(&out)?;
            list(&written.files);
            println!("ca.pem certificate {}", written.fingerprint);
            println!("Give ca.pem and this fingerprint to every role; keep ca.key offline.");
        }
        Some(Step::Request { role, out }) => {
            let written = keygen::request(&out, &role)?;
            list(&written.files);
            println!("{role} tls key {}", written.key_fingerprint);
            if let Some(seal) = &written.seal_fingerprint {
                println!("{role} seal key {seal}");
            }
            println!(
                "Send {} to the CA operator and these fingerprints by another channel; \
                 the private keys stay here.",
                written.request.display()
            );
        }
        Some(Step::Sign {
            ca,
            request,
            out,
            consortium,
        }) => {
            let written =
                keygen::sign(&out, &ca, &request, &spec(consortium)?).map_err(with_flag)?;
            verify(&written.output).context("reading back the written configurations")?;
            list(&written.output.files);
            println!("ca.pem certificate {}", written.ca_fingerprint);
            for s in &written.signed {
                println!("{} tls key {}", s.role, s.key_fingerprint);
                if let Some(seal) = &s.seal_fingerprint {
                    println!("{} seal key {seal}", s.role);
                }
            }
            println!(
                "Compare each fingerprint with the one its role sent by another channel \
                 before distributing the files."
            );
        }
        Some(Step::Show { files }) => {
            for file in files {
                for (what, value) in keygen::describe(&file)? {
                    println!("{}: {what} {value}", file.display());
                }
            }
        }
    }
    Ok(())
}
