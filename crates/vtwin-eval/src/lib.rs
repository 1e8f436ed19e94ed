//! Utility metrics of a synthetic table against real data, and membership-inference audits.
//!
//! - [`features`]: the public numeric encoding of a table (one-hot and scaled features).
//! - [`source`]: reading a real or synthetic table from a joined CSV or per-party CSVs.

pub mod audit;
pub mod features;
pub mod source;

pub use features::{FeatureError, FeatureMap, FeatureMatrix};
pub use source::{SourceError, TableSource};
