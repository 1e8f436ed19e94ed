//! The training-data options shared by `vtwin train` and `vtwin audit-mechanism`: the
//! built-in demo data, or a schema with one joined CSV or one CSV per party.

use std::path::PathBuf;

use anyhow::{anyhow, bail};
use vtwin_data::{Schema, Table};

/// Where the training records come from.
#[derive(Debug, clap::Args)]
pub(crate) struct TrainingData {
    /// Public schema (TOML); not needed with --demo.
    #[arg(long)]
    pub(crate) schema: Option<PathBuf>,
    /// A party's CSV, matched by the schema's id column (repeat per party).
    #[arg(long = "data", value_name = "PARTY=FILE")]
    pub(crate) data: Vec<String>,
    /// One CSV with every column.
    #[arg(long)]
    pub(crate) joined: Option<PathBuf>,
    /// Train on the built-in demo data (no files needed).
    #[arg(long)]
    pub(crate) demo: bool,
    /// Number of demo training records (test: a quarter as many).
    #[arg(long, default_value_t = vtwin_data::demo::DEMO_ROWS)]
    pub(crate) demo_rows: usize,
}

/// `PARTY=FILE` arguments of `flag` as (party, path); errors name the flag.
pub(crate) fn parse_party_files(
    flag: &str,
    specs: &[String],
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    specs
        .iter()
        .map(|s| match s.split_once('=') {
            Some((p, f)) if !p.is_empty() && !f.is_empty() => Ok((p.to_owned(), PathBuf::from(f))),
            _ => Err(anyhow!("{flag} {s}: expected PARTY=FILE")),
        })
        .collect()
}

impl TrainingData {
    /// (schema, training table, the demo's test table with --demo). Errors name the flag or
    /// the file, row and column.
    pub(crate) fn load(&self) -> anyhow::Result<(Schema, Table, Option<Table>)> {
        if self.demo {
            if self.schema.is_some() || self.joined.is_some() || !self.data.is_empty() {
                bail!("--demo: do not combine with --schema, --joined or --data");
            }
            if self.demo_rows < 2 {
                bail!("--demo-rows must be at least 2");
            }
            let train = vtwin_data::demo::demo_table(self.demo_rows, 1);
            let test = vtwin_data::demo::demo_table((self.demo_rows / 4).max(1), 2);
            return Ok((vtwin_data::demo::demo_schema(), train, Some(test)));
        }
        let schema_path = self
            .schema
            .as_ref()
            .ok_or_else(|| anyhow!("--schema is required (or use --demo)"))?;
        let schema = Schema::load(schema_path)?;
        let train = match (&self.joined, self.data.is_empty()) {
            (Some(j), true) => Table::read_joined(&schema, j)?,
            (None, false) => {
                Table::read_parties(&schema, &parse_party_files("--data", &self.data)?)?
            }
            (Some(_), false) => bail!("--joined and --data: give one of them"),
            (None, true) => bail!("--joined or --data is required"),
        };
        Ok((schema, train, None))
    }
}

/// K from `--components`, or by default the rule for `schema`
/// (`vtwin_model::components::default_components`); errors name the flag.
pub(crate) fn components(flag: Option<usize>, schema: &Schema) -> anyhow::Result<usize> {
    match flag {
        Some(k) => Ok(k),
        None => vtwin_model::components::default_components(schema)
            .map_err(|e| anyhow::Error::new(e).context("--components")),
    }
}

/// The Poisson sampling rate from `--batch B` (rate B/N) or `--sample-rate q`, by default
/// an expected batch of 100 records; errors name the flag.
pub(crate) fn sample_rate(
    batch: Option<usize>,
    rate: Option<f64>,
    n: usize,
) -> anyhow::Result<f64> {
    Ok(match (batch, rate) {
        (Some(_), Some(_)) => bail!("--batch and --sample-rate: give one of them"),
        (Some(b), None) if b == 0 || b > n => {
            bail!("--batch {b}: must be between 1 and the number of training records ({n})")
        }
        (Some(b), None) => b as f64 / n as f64,
        (None, Some(q)) if !(q > 0.0 && q <= 1.0) => bail!("--sample-rate {q}: must be in (0, 1]"),
        (None, Some(q)) => q,
        (None, None) => (100.0 / n as f64).min(1.0),
    })
}
