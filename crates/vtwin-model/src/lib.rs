//! Schema, data loading, the mixture model, local kernels, DPVI training and synthesis.

// DATA modules: schema, encoding, tables and CSV, parameters and likelihood, synthesis, demo.
pub mod codec;
pub mod csv_table;
pub mod demo;
pub mod params;
pub mod schema;
pub mod synth;
pub mod table;

pub use params::{ColumnParams, MixtureParams};
pub use schema::{ColumnKind, ColumnSpec, Schema};
pub use table::{Column, DataError, Table};
