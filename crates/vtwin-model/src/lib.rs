//! The mixture model over the data of vtwin-data (schema, tables and synthesis live
//! there), local kernels, DPVI training, and the model's side of one MPC training
//! iteration (the protocol's roles are in vtwin-iteration: this crate computes a party's
//! upload and the public parameters from the model, and drives the roles in memory as the
//! `mpc` backend).

// Modules: parameter layout, the default number of components, prior, local kernels, sufficient statistics, gradient
// backends, Adam, iterate averaging, the responsibilities' tempering schedule, the DPVI loop, checkpoints and model files. The roles of a consortium
// iteration: the coordinator's public `trainer`, a party's `party_upload` (its upload from its
// own batch, sharded by vtwin-iteration's party role), and `iteration_inputs` (the model's
// values as the protocol's public parameters).
pub mod adam;
pub mod averaging;
pub mod backend;
pub mod checkpoint;
pub mod components;
pub mod dpvi;
pub mod fixed_backend;
pub mod float_backend;
pub mod iteration_inputs;
pub mod kernels;
pub mod layout;
pub mod model_file;
pub mod mpc_backend;
pub mod opening_log;
pub mod party_data;
pub mod party_upload;
pub mod prior;
pub mod rng_state;
pub mod tempering;
pub mod trainer;
pub mod training_state;
