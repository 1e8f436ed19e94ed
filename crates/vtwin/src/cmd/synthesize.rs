//! `vtwin synthesize`: sample a synthetic table from a trained model (INTERFACE.md).
//!
//! Each record draws its component z ~ Cat(pi) and then every party's columns from component
//! z ([`vtwin_data::synth::sample_table`]), written with the schema's original column names,
//! categories and units (integer columns as integers; binned columns as their bin's
//! representative value, see `vtwin_data::codec`). Synthesis is post-processing of the
//! DP-released model, so it costs no privacy, and its seed may be public.

use std::path::PathBuf;

use anyhow::{bail, Context};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_data::synth::sample_table;
use vtwin_model::model_file::ModelFile;

/// Which parameter value to sample from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ParamsChoice {
    /// The constrained map of the posterior mean mu.
    Mean,
    /// One draw theta ~ q from the variational posterior (for the whole table).
    Posterior,
}

/// Sample a synthetic table (CSV) from a trained model.json.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The model written by `vtwin train`.
    #[arg(long)]
    model: PathBuf,
    /// Number of synthetic records.
    #[arg(long)]
    rows: usize,
    /// Seed of the synthesis RNG (ChaCha20); default: fresh from the OS.
    #[arg(long)]
    seed: Option<u64>,
    /// Parameters to sample from.
    #[arg(long, value_enum, default_value_t = ParamsChoice::Mean)]
    params: ParamsChoice,
    /// Output CSV (written atomically).
    #[arg(long)]
    out: PathBuf,
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    if a.rows == 0 {
        bail!("--rows 0: ask for at least one record");
    }
    let model = ModelFile::load(&a.model)?;
    let mut rng = match a.seed {
        Some(s) => ChaCha20Rng::seed_from_u64(s),
        None => ChaCha20Rng::from_os_rng(),
    };
    let params = match a.params {
        ParamsChoice::Mean => model.mean_params(),
        ParamsChoice::Posterior => model.sample_params(&mut rng),
    };
    let table = sample_table(&params, &model.schema, a.rows, &mut rng)
        .with_context(|| format!("{}: parameters do not fit the schema", a.model.display()))?;
    table.write_csv(&a.out)?;
    eprintln!("wrote {} synthetic records to {}", a.rows, a.out.display());
    Ok(())
}
