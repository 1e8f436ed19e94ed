//! The whole evaluation behind `vtwin eval` (INTERFACE.md): the model's test NLL and, given a
//! synthetic table, its distance to the real data.
//!
//! The *reference* real table of the marginal, association and Fréchet metrics is the real
//! training table when one is given (what the synthetic data imitates), else the test table;
//! the report names it. TSTR always trains on the real training table (if any) and on the
//! synthetic table, and tests on the test table.

use std::time::Instant;

use serde::Serialize;
use vtwin_data::params::ParamsError;
use vtwin_data::Table;
use vtwin_model::model_file::ModelFile;

use crate::associations::{association_difference, AssociationReport};
use crate::cells::{table_cells, CONTINUOUS_BINS};
use crate::features::{FeatureError, FeatureMap};
use crate::frechet::{frechet_distance, FrechetError};
use crate::marginals::{marginal_distances, MarginalReport};
use crate::tstr::{tstr, Target, TstrConfig, TstrError, TstrReport};

/// Settings of an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EvalConfig {
    /// Seed of the 3-way marginal sample (large schemas only) and of the random forest.
    pub seed: u64,
    /// TSTR settings (the forest's seed is replaced by `seed`).
    pub tstr: TstrConfig,
}

/// The inputs of an evaluation.
#[derive(Debug, Clone, Copy)]
pub struct EvalInputs<'a> {
    /// The released model.
    pub model: &'a ModelFile,
    /// The real test table.
    pub test: &'a Table,
    /// The real training table, if available.
    pub train: Option<&'a Table>,
    /// The synthetic table, if any.
    pub synthetic: Option<&'a Table>,
    /// The TSTR target, if any (needs `synthetic`).
    pub target: Option<&'a Target>,
}

/// An evaluation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The model does not fit the test table.
    #[error("test NLL: {0}")]
    Nll(#[from] ParamsError),
    /// The feature encoding failed.
    #[error("{0}")]
    Features(#[from] FeatureError),
    /// The Fréchet distance failed.
    #[error("{0}")]
    Frechet(#[from] FrechetError),
    /// TSTR failed.
    #[error("{0}")]
    Tstr(#[from] TstrError),
    /// A target was given without a synthetic table.
    #[error("a TSTR target needs a synthetic table (TSTR trains on the synthetic table)")]
    TargetWithoutSynthetic,
    /// Tables of different schemas.
    #[error("the {0} table's schema differs from the model's")]
    SchemaMismatch(&'static str),
}

/// The synthetic-against-real metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticReport {
    /// Synthetic records.
    pub n_synthetic: usize,
    /// `"train"` or `"test"`: the real table the distances below compare with.
    pub reference: &'static str,
    /// Records of the reference table.
    pub n_reference: usize,
    /// Mean 1-way TVD.
    pub tvd_1way: f64,
    /// Mean 2-way TVD.
    pub tvd_2way: Option<f64>,
    /// Mean 3-way TVD.
    pub tvd_3way: Option<f64>,
    /// How the marginals were computed.
    pub marginals: MarginalDetails,
    /// Mean |association difference| over within-party pairs.
    pub corr_diff_within: Option<f64>,
    /// Mean |association difference| over cross-party pairs.
    pub corr_diff_across: Option<f64>,
    /// Association details.
    pub associations: AssociationReport,
    /// Fréchet distance of the feature vectors.
    pub frechet: f64,
    /// Number of features of the Fréchet distance.
    pub frechet_dim: usize,
    /// TSTR, when a target was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tstr: Option<TstrReport>,
}

/// Marginal settings and counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarginalDetails {
    /// Equal-width bins of a continuous column's public range.
    pub continuous_bins: usize,
    /// 3-way marginals averaged.
    pub n_3way: usize,
    /// Column triples in the schema.
    pub n_3way_total: usize,
    /// `"all"` or `"random sample"`.
    pub three_way: &'static str,
    /// Sampling seed when sampled.
    pub three_way_seed: Option<u64>,
}

/// The eval JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// Mean negative log-likelihood per test record under the posterior-mean parameters.
    pub nll_test: f64,
    /// Test records.
    pub n_test: usize,
    /// Which parameters the NLL uses.
    pub nll_params: &'static str,
    /// The synthetic metrics, when a synthetic table was given (flattened into the JSON).
    #[serde(flatten)]
    pub synthetic: Option<SyntheticReport>,
    /// Wall-clock seconds of the evaluation.
    pub seconds: f64,
}

/// Runs the evaluation (module documentation). Cost dominated by TSTR and the 3-way marginals
/// (a few seconds on Adult in a release build).
pub fn evaluate(inputs: EvalInputs<'_>, config: &EvalConfig) -> Result<EvalReport, EvalError> {
    let start = Instant::now();
    let schema = &inputs.model.schema;
    for (name, t) in [
        ("test", Some(inputs.test)),
        ("train", inputs.train),
        ("synthetic", inputs.synthetic),
    ] {
        if t.is_some_and(|t| &t.schema != schema) {
            return Err(EvalError::SchemaMismatch(name));
        }
    }
    let nll_test = inputs.model.mean_params().mean_nll(inputs.test)?;
    let synthetic = match (inputs.synthetic, inputs.target) {
        (None, Some(_)) => return Err(EvalError::TargetWithoutSynthetic),
        (None, None) => None,
        (Some(synth), target) => {
            let (reference, real) = match inputs.train {
                Some(t) => ("train", t),
                None => ("test", inputs.test),
            };
            let m: MarginalReport =
                marginal_distances(&table_cells(real), &table_cells(synth), config.seed);
            let assoc = association_difference(real, synth);
            let map = FeatureMap::new(schema, None)?;
            let frechet = frechet_distance(&map.encode(real)?, &map.encode(synth)?)?;
            let tstr = match target {
                Some(t) => {
                    let mut tc = config.tstr;
                    tc.forest.seed = config.seed;
                    Some(tstr(t, inputs.train, synth, inputs.test, &tc)?)
                }
                None => None,
            };
            Some(SyntheticReport {
                n_synthetic: synth.n_rows(),
                reference,
                n_reference: real.n_rows(),
                tvd_1way: m.tvd_1way,
                tvd_2way: m.tvd_2way,
                tvd_3way: m.tvd_3way,
                marginals: MarginalDetails {
                    continuous_bins: CONTINUOUS_BINS,
                    n_3way: m.n_3way,
                    n_3way_total: m.n_3way_total,
                    three_way: m.three_way,
                    three_way_seed: m.three_way_seed,
                },
                corr_diff_within: assoc.corr_diff_within,
                corr_diff_across: assoc.corr_diff_across,
                associations: assoc,
                frechet,
                frechet_dim: map.dim(),
                tstr,
            })
        }
    };
    Ok(EvalReport {
        nll_test,
        n_test: inputs.test.n_rows(),
        nll_params: "posterior-mean",
        synthetic,
        seconds: start.elapsed().as_secs_f64(),
    })
}
