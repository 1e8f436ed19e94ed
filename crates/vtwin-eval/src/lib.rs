//! Utility metrics of a synthetic table against real data, and membership-inference audits.
//! Definitions, formulas and references: `docs/metrics.md`.
//!
//! - [`features`]: the public numeric encoding of a table (one-hot and scaled features).
//! - [`source`]: reading a real or synthetic table from a joined CSV or per-party CSVs.
//! - [`cells`]: discretisation of columns (continuous columns binned by public bounds).
//! - [`marginals`]: mean total-variation distance of 1-, 2- and 3-way marginals.
//! - [`associations`]: Pearson, Cramér's V, correlation ratio; within/across-party differences.
//! - [`binary_metrics`]: AUC (ranks, ties), accuracy, F1.
//! - [`logistic`], [`forest`], [`tstr`]: train on synthetic, test on real.
//! - [`frechet`]: the Fréchet distance between Gaussians fitted to feature vectors.
//! - [`report`]: the whole `vtwin eval` report ([`report::evaluate`]).
//! - [`audit`]: membership-inference attacks.

pub mod associations;
pub mod audit;
pub mod binary_metrics;
pub mod cells;
pub mod features;
pub mod forest;
pub mod frechet;
pub mod logistic;
pub mod marginals;
pub mod report;
pub mod source;
pub mod tstr;

pub use features::{FeatureError, FeatureMap, FeatureMatrix};
pub use report::{evaluate, EvalConfig, EvalError, EvalInputs, EvalReport};
pub use source::{SourceError, TableSource};
