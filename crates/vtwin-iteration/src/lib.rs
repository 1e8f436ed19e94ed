//! One MPC training iteration as role types (`docs/architecture.md`, "One iteration"), after
//! the shape of libprio's VDAF roles: each role is a function of its own inputs and
//! generators, so the in-memory backend and the separate processes of a consortium run the
//! same code and agree bit for bit.
//!
//! - [`party`]: a party shards its encoded upload and its noise share into the messages it
//!   sends to the three compute nodes ([`party::Party::shard`]).
//! - [`node`]: a compute node's ephemeral key and its program for the iteration
//!   ([`node::iteration_node`]: receive the inputs, the gradient circuit, reveal G + Z).
//! - [`coordinator`]: the circuit's public parameters from public values, and the opening of
//!   G + Z ([`coordinator::open`]).
//! - [`public_bounds`]: what a node checks of those public parameters before it computes
//!   (the bounds the clip's proof assumes, exactly on the encoded values).
//! - What they share: the input bounds and uploads of the circuit (re-exported from
//!   [`vtwin_mpc::gradient`]), the circuit's [`canonical`] output order, and the per-iteration
//!   secret [`randomness`].
//! - [`memory`]: the in-memory driver of the three roles (the `mpc` backend and the tests).
//!
//! Nothing here knows the model (no candle, no layout): the model crate computes a party's
//! upload and the public score maps and hands them to these roles.

pub mod canonical;
pub mod coordinator;
pub mod memory;
pub mod node;
pub mod party;
pub mod public_bounds;
pub mod randomness;

pub use canonical::CanonicalOrder;
pub use randomness::{seeded_noise_rng, BatchKey, SecretRandomness};
pub use vtwin_mpc::gradient::{CircuitPublic, InputBounds, PartyMap, PlainUpload};
