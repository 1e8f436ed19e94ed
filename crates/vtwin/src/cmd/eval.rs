//! `vtwin eval`: evaluate a trained model (INTERFACE.md). This issue implements `nll_test`
//! and, given `--synthetic`, `tvd_1way`; the other metrics of INTERFACE.md (tvd_2way,
//! tvd_3way, corr_diff_within/across, tstr, and the --train/--target flags they need) belong
//! to the full evaluation of a later issue.
//!
//! - `nll_test`: mean negative log-likelihood per test record under the posterior-mean
//!   parameters, of the encoded values (Beta densities on the public (0,1) scaling, category
//!   and bin probabilities; `vtwin_model::params`). Same definition as `train.csv`'s test_nll.
//! - `tvd_1way`: mean over columns of the total-variation distance between the synthetic and
//!   test 1-way marginals. Categorical and binned columns use their categories and bins;
//!   continuous columns are binned into [`TVD_BINS`] equal-width bins of the public (0,1)
//!   scaling (integer columns: cells rounded to those bins).

use std::path::PathBuf;

use anyhow::{anyhow, bail};
use vtwin_model::checkpoint::write_atomic;
use vtwin_model::model_file::ModelFile;
use vtwin_model::{Column, Table};

/// Number of equal-width bins of (0,1) for continuous columns in `tvd_1way`.
pub(crate) const TVD_BINS: usize = 20;

/// Evaluate a model: test NLL now; the full utility metrics come in a later issue.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The model written by `vtwin train`.
    #[arg(long)]
    model: PathBuf,
    /// Synthetic CSV (from `vtwin synthesize`) for tvd_1way.
    #[arg(long)]
    synthetic: Option<PathBuf>,
    /// Test set with every column.
    #[arg(long)]
    test_joined: Option<PathBuf>,
    /// A party's test CSV, matched by the schema's id column (repeat per party).
    #[arg(long = "test", value_name = "PARTY=FILE")]
    test: Vec<String>,
    /// Output JSON (written atomically).
    #[arg(long)]
    out: PathBuf,
}

fn parse_party_files(specs: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    specs
        .iter()
        .map(|s| match s.split_once('=') {
            Some((p, f)) if !p.is_empty() && !f.is_empty() => Ok((p.to_owned(), f.into())),
            _ => Err(anyhow!("--test {s}: expected PARTY=FILE")),
        })
        .collect()
}

/// Histogram of one column as frequencies.
fn marginal(table: &Table, c: usize) -> Vec<f64> {
    let n = table.n_rows() as f64;
    let (bins, idx): (usize, Box<dyn Fn(usize) -> usize>) = match &table.columns[c] {
        Column::Unit(v) => (
            TVD_BINS,
            Box::new(move |r| ((v[r] * TVD_BINS as f64) as usize).min(TVD_BINS - 1)),
        ),
        Column::Index(v) => (
            table.schema.columns[c].kind.cardinality().unwrap_or(0),
            Box::new(move |r| v[r] as usize),
        ),
    };
    let mut h = vec![0.0; bins];
    for r in 0..table.n_rows() {
        h[idx(r)] += 1.0 / n;
    }
    h
}

/// Mean over columns of the 1-way total-variation distance.
fn tvd_1way(a: &Table, b: &Table) -> f64 {
    let cols = a.schema.columns.len();
    let total: f64 = (0..cols)
        .map(|c| {
            let (p, q) = (marginal(a, c), marginal(b, c));
            0.5 * p.iter().zip(&q).map(|(x, y)| (x - y).abs()).sum::<f64>()
        })
        .sum();
    total / cols as f64
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    let model = ModelFile::load(&a.model)?;
    let schema = &model.schema;
    let test = match (&a.test_joined, a.test.is_empty()) {
        (Some(j), true) => Table::read_joined(schema, j)?,
        (None, false) => Table::read_parties(schema, &parse_party_files(&a.test)?)?,
        (Some(_), false) => bail!("--test-joined and --test: give one of them"),
        (None, true) => bail!("--test-joined or --test is required"),
    };
    let nll = model.mean_params().mean_nll(&test)?;
    let mut out = serde_json::json!({
        "nll_test": nll,
        "n_test": test.n_rows(),
        "nll_params": "posterior-mean",
    });
    if let Some(s) = &a.synthetic {
        let synth = Table::read_joined(schema, s)?;
        out["tvd_1way"] = serde_json::json!(tvd_1way(&synth, &test));
        out["n_synthetic"] = serde_json::json!(synth.n_rows());
    }
    let text = serde_json::to_string_pretty(&out)? + "\n";
    write_atomic(&a.out, text.as_bytes()).map_err(|e| anyhow!("{}: {e}", a.out.display()))?;
    eprintln!("nll_test {nll:.6} over {} test records", test.n_rows());
    Ok(())
}
