//! Subcommands, one module each.
pub(crate) mod align;
pub(crate) mod arith;
pub(crate) mod audit;
pub(crate) mod audit_mechanism;
pub(crate) mod bench;
pub(crate) mod coordinator;
pub(crate) mod demo;
pub(crate) mod eval;
pub(crate) mod keygen;
pub(crate) mod node;
pub(crate) mod noise;
pub(crate) mod party;
pub(crate) mod privacy;
pub(crate) mod synthesize;
pub(crate) mod train;
pub(crate) mod training_data;
