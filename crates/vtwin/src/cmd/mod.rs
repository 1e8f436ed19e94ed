//! Subcommands, one module each.
pub(crate) mod arith;
