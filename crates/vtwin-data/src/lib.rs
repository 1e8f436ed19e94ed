//! The data side of vtwin, apart from the model: the public TOML schema ([`schema`]), the
//! value encoding of each column ([`codec`]), tables and CSV loading with validation
//! ([`table`], [`csv_table`]), mixture parameters and their likelihood ([`params`]),
//! synthesis from a fitted mixture ([`synth`]) and the demo data set ([`demo`]).
//!
//! Nothing here knows the training: vtwin-model builds the parameter layout and the DPVI loop
//! on these types and re-exports them at their old paths.

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
