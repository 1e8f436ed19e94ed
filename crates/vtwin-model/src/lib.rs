//! Schema, data loading, the mixture model, local kernels, DPVI training and synthesis, and
//! the coordinator's and parties' halves of one MPC training iteration.

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

// MODEL modules: parameter layout, prior, local kernels, sufficient statistics, gradient
// backends, Adam, the DPVI loop, checkpoints and model files. The roles of a consortium
// iteration: the coordinator's public `trainer`, a party's `party_upload` (its MPC messages
// from its own batch), and the per-iteration `secret_randomness` of every role.
pub mod adam;
pub mod backend;
pub mod checkpoint;
pub mod dpvi;
pub mod fixed;
pub mod float;
pub mod kernels;
pub mod layout;
pub mod model_file;
pub mod mpc;
pub mod opening_log;
pub mod party_upload;
pub mod prior;
pub mod rng_state;
pub mod secret_randomness;
pub mod stats;
pub mod trainer;
