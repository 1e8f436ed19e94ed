//! Train on synthetic, test on real (TSTR): a classifier of a binary target column is
//! trained once on the synthetic table and once on the real training table (the reference),
//! and both are scored on the real test table ([`crate::binary_metrics`]: AUC, accuracy and
//! F1 at threshold 1/2). Two model families: L2 logistic regression ([`crate::logistic`]) and
//! a random (probability) forest ([`crate::forest`]), both on the [`crate::features`]
//! encoding of every other column.
//!
//! The target must be a categorical or binned column with exactly 2 categories; the positive
//! class is the second one in the schema (`>50K` for Adult's `Y`). A training table holding
//! one class only cannot be fitted: the classifier is then the constant that predicts that
//! class (probability 0 or 1), and the report says so in `notes`.

use serde::Serialize;
use vtwin_data::{Column, ColumnKind, Schema, Table};

use crate::binary_metrics::{binary_scores, BinaryScores};
use crate::features::{FeatureError, FeatureMap, FeatureMatrix};
use crate::forest::{ForestError, ForestParams, ProbabilityForest};
use crate::logistic::{LogisticError, LogisticModel, DEFAULT_LAMBDA};

/// What a non-binary target column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetKind {
    /// Categorical with this many categories.
    Categorical(usize),
    /// Binned with this many bins.
    Binned(usize),
    /// Continuous.
    Continuous,
    /// A kind TSTR does not know.
    Other,
}

impl std::fmt::Display for TargetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetKind::Categorical(n) => write!(f, "categorical with {n} categories"),
            TargetKind::Binned(n) => write!(f, "binned with {n} bins"),
            TargetKind::Continuous => f.write_str("continuous"),
            TargetKind::Other => f.write_str("of a kind TSTR does not know"),
        }
    }
}

/// The target column is unusable, or a fit failed. Messages name the column (the CLI adds
/// its `--target` flag).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TstrError {
    /// No such column.
    #[error("target column {column}: no such column in the schema (columns: {known})")]
    UnknownColumn {
        /// The name given.
        column: String,
        /// The schema's columns, comma-separated.
        known: String,
    },
    /// The column is not binary.
    #[error("target column \"{column}\" is {kind}; TSTR needs a binary target (a categorical or binned column with 2 categories)")]
    NotBinary {
        /// The column.
        column: String,
        /// What it is instead.
        kind: TargetKind,
    },
    /// The feature encoding failed.
    #[error("target column {column}: {source}")]
    Features {
        /// The target column.
        column: String,
        /// The cause.
        source: FeatureError,
    },
    /// Logistic regression failed.
    #[error("TSTR on the {table} table: {source}")]
    Logistic {
        /// `real` or `synthetic`.
        table: &'static str,
        /// The cause.
        source: LogisticError,
    },
    /// The forest failed.
    #[error("TSTR on the {table} table: {source}")]
    Forest {
        /// `real` or `synthetic`.
        table: &'static str,
        /// The cause.
        source: ForestError,
    },
}

/// A validated binary target.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The column's name.
    pub name: String,
    /// Its schema index.
    pub column: usize,
    /// The positive class (second category, or the second bin as `[lo,hi]`).
    pub positive: String,
}

impl Target {
    /// Checks that `name` is a binary column of `schema` (module documentation).
    pub fn new(schema: &Schema, name: &str) -> Result<Target, TstrError> {
        let column = schema
            .column_index(name)
            .ok_or_else(|| TstrError::UnknownColumn {
                column: name.to_owned(),
                known: schema.column_list(),
            })?;
        let not_binary = |kind: TargetKind| TstrError::NotBinary {
            column: name.to_owned(),
            kind,
        };
        let positive = match &schema.columns[column].kind {
            ColumnKind::Categorical { categories } if categories.len() == 2 => {
                categories[1].clone()
            }
            ColumnKind::Categorical { categories } => {
                return Err(not_binary(TargetKind::Categorical(categories.len())))
            }
            ColumnKind::Binned { edges, .. } if edges.len() == 3 => {
                format!("[{},{}]", edges[1], edges[2])
            }
            ColumnKind::Binned { edges, .. } => {
                return Err(not_binary(TargetKind::Binned(edges.len() - 1)))
            }
            ColumnKind::Continuous { .. } => return Err(not_binary(TargetKind::Continuous)),
            _ => return Err(not_binary(TargetKind::Other)),
        };
        Ok(Target {
            name: name.to_owned(),
            column,
            positive,
        })
    }

    /// The labels of `table` (true = positive class). Panics if the table's column is not an
    /// index column (tables of the target's schema always are).
    pub fn labels(&self, table: &Table) -> Vec<bool> {
        match &table.columns[self.column] {
            Column::Index(v) => v.iter().map(|&i| i == 1).collect(),
            Column::Unit(_) => panic!("target column {} is not categorical", self.name),
        }
    }
}

/// TSTR settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TstrConfig {
    /// L2 strength of the logistic regression.
    pub lambda: f64,
    /// Forest parameters.
    pub forest: ForestParams,
}

impl Default for TstrConfig {
    fn default() -> Self {
        TstrConfig {
            lambda: DEFAULT_LAMBDA,
            forest: ForestParams::default(),
        }
    }
}

/// One model family's scores on the real test set, trained on real (`*_real`; `None`
/// without real training data) and on synthetic (`*_synth`) records.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyScores {
    /// AUC, trained on real.
    pub auc_real: Option<f64>,
    /// AUC, trained on synthetic.
    pub auc_synth: Option<f64>,
    /// Accuracy, trained on real.
    pub acc_real: Option<f64>,
    /// Accuracy, trained on synthetic.
    pub acc_synth: f64,
    /// F1 of the positive class, trained on real.
    pub f1_real: Option<f64>,
    /// F1 of the positive class, trained on synthetic.
    pub f1_synth: f64,
    /// Constant classifiers used, non-converged fits.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The TSTR section of the eval JSON: the logistic regression's scores at the top level (the
/// INTERFACE.md keys), the forest's under `random_forest`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TstrReport {
    /// The target column.
    pub target: String,
    /// Its positive class.
    pub positive_class: String,
    /// Test records.
    pub n_test: usize,
    /// Positive fraction of the test set.
    pub test_positive_rate: f64,
    /// Real training records (`None` without them).
    pub n_train_real: Option<usize>,
    /// Synthetic training records.
    pub n_train_synth: usize,
    /// Positive fraction of the synthetic set.
    pub synth_positive_rate: f64,
    /// L2 strength of the logistic regression.
    pub logistic_lambda: f64,
    /// Logistic regression.
    #[serde(flatten)]
    pub logistic: FamilyScores,
    /// Random forest (probability forest).
    pub random_forest: FamilyScores,
    /// The forest's parameters.
    pub random_forest_params: ForestParams,
}

fn constant(y: &[bool]) -> Option<bool> {
    let first = *y.first()?;
    y.iter().all(|&l| l == first).then_some(first)
}

/// Fits both families on `(x, y)` and returns their test scores, with notes.
fn fit_and_score(
    x: &FeatureMatrix,
    y: &[bool],
    test_x: &FeatureMatrix,
    test_y: &[bool],
    config: &TstrConfig,
    table: &'static str,
) -> Result<[(BinaryScores, Vec<String>); 2], TstrError> {
    if let Some(c) = constant(y) {
        let s = binary_scores(&vec![f64::from(u8::from(c)); test_y.len()], test_y);
        let note = format!(
            "the {table} training set holds only {} records: constant classifier",
            if c { "positive" } else { "negative" }
        );
        return Ok([(s, vec![note.clone()]), (s, vec![note])]);
    }
    let lr = LogisticModel::fit(x, y, config.lambda)
        .map_err(|source| TstrError::Logistic { table, source })?;
    let mut lr_notes = Vec::new();
    if !lr.converged {
        lr_notes.push(format!(
            "logistic regression on the {table} table stopped after {} Newton steps without converging",
            lr.iterations
        ));
    }
    let lr_scores = binary_scores(&lr.predict_proba(test_x), test_y);
    let forest = ProbabilityForest::fit(x, y, config.forest)
        .map_err(|source| TstrError::Forest { table, source })?;
    let p = forest
        .predict_proba(test_x)
        .map_err(|source| TstrError::Forest { table, source })?;
    Ok([
        (lr_scores, lr_notes),
        (binary_scores(&p, test_y), Vec::new()),
    ])
}

fn rate(y: &[bool]) -> f64 {
    y.iter().filter(|&&l| l).count() as f64 / y.len().max(1) as f64
}

/// Runs TSTR for `target` (module documentation). `real_train` is optional (without it the
/// `*_real` scores are `None`); every table must have the target's schema and at least one
/// record. Cost: two logistic fits (O(n d^2) per Newton step) and two forests.
pub fn tstr(
    target: &Target,
    real_train: Option<&Table>,
    synth: &Table,
    test: &Table,
    config: &TstrConfig,
) -> Result<TstrReport, TstrError> {
    let map = FeatureMap::new(&test.schema, Some(&target.name)).map_err(|source| {
        TstrError::Features {
            column: target.name.clone(),
            source,
        }
    })?;
    let enc = |t: &Table| {
        map.encode(t).map_err(|source| TstrError::Features {
            column: target.name.clone(),
            source,
        })
    };
    let (test_x, test_y) = (enc(test)?, target.labels(test));
    let (sx, sy) = (enc(synth)?, target.labels(synth));
    let [(ls, mut ln), (fs, mut fnotes)] =
        fit_and_score(&sx, &sy, &test_x, &test_y, config, "synthetic")?;
    let real = match real_train {
        Some(t) => {
            let (rx, ry) = (enc(t)?, target.labels(t));
            let [(lr, lrn), (fr, frn)] = fit_and_score(&rx, &ry, &test_x, &test_y, config, "real")?;
            ln.extend(lrn);
            fnotes.extend(frn);
            Some((lr, fr))
        }
        None => None,
    };
    let family = |synth: BinaryScores, real: Option<BinaryScores>, notes| FamilyScores {
        auc_real: real.and_then(|r| r.auc),
        auc_synth: synth.auc,
        acc_real: real.map(|r| r.accuracy),
        acc_synth: synth.accuracy,
        f1_real: real.map(|r| r.f1),
        f1_synth: synth.f1,
        notes,
    };
    Ok(TstrReport {
        target: target.name.clone(),
        positive_class: target.positive.clone(),
        n_test: test.n_rows(),
        test_positive_rate: rate(&test_y),
        n_train_real: real_train.map(Table::n_rows),
        n_train_synth: synth.n_rows(),
        synth_positive_rate: rate(&sy),
        logistic_lambda: config.lambda,
        logistic: family(ls, real.map(|r| r.0), ln),
        random_forest: family(fs, real.map(|r| r.1), fnotes),
        random_forest_params: config.forest,
    })
}
