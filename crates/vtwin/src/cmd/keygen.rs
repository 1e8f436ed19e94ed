//! `vtwin keygen`: a consortium's CA, per-role certificates and keys (mode 0600), the
//! nodes' seal keys, and one configuration TOML per role with loopback addresses
//! (`vtwin_net::keygen`).
//!
//! The coordinator's job defaults to the built-in demo (schema and data, as
//! `vtwin train --demo`): K = 20, 1000 iterations, epsilon 1 at delta 1e-5, expected batch
//! 100, clip 1, learning rate 0.01, closed-form renormalisation, a checkpoint every 100
//! iterations. For real data, edit `training.schema` in coordinator.toml and `schema` and
//! `data` in each party's file.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use vtwin_net::config::{DataSource, TrainingSettings};
use vtwin_net::keygen::{keygen, verify, KeygenSpec};

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

pub(crate) fn run(args: Args) -> anyhow::Result<()> {
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
        training: TrainingSettings::default(),
        insecure: None,
    };
    let written = keygen(&args.out, &spec)?;
    verify(&written).context("reading back the written configurations")?;
    for file in &written.files {
        println!("{}", file.display());
    }
    Ok(())
}
