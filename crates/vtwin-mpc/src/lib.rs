//! 3-node replicated secret sharing over Z_2^128 (semi-honest, honest majority, no dealer)
//! and the MPC twins of the vtwin-fixed reference arithmetic.
//!
//! # Model
//! - Values are fixed point at scale 2^32 in Z_2^128 ([`vtwin_fixed::Fx`]); a vector is
//!   replicated-shared ([`Shared`]; node i holds `(x_i, x_{i+1})`), bits are XOR-shared 128
//!   to a word ([`BitShared`]).
//! - Correlated randomness comes from pairwise seeds (X25519 + HKDF-SHA256, [`keys`]) and a
//!   counter-addressed AES-128-CTR PRG ([`prg`]): zero-sharings, random sharings and masks known
//!   to one pair of nodes (or, from a node's private seed, to that node alone), all without
//!   communication or a dealer.
//! - Each node is a sans-IO state machine ([`Node`]): `handle(msg) -> messages to send`,
//!   deterministic, no sockets, threads or clocks. Protocols are `async` programs over a
//!   [`Ctx`]; [`sim::Simulation`] drives three nodes in memory, and [`sim::run_nodes`] drives
//!   three nodes built by the caller. One training iteration's node program (inputs,
//!   [`gradient::gradient`], reveal) is built in the vtwin-iteration crate.
//! - Clients (parties, noise contributors) input with PRG-compressed shares and receive
//!   openings addressed to them only ([`input`]).
//!
//! # Protocols (vectorised; one layer of the circuit per round)
//! Ring elements are 16 bytes; "elements" are summed over the three nodes, per value
//! (measured by `tests/costs.rs`, analysed in `protocols/mpc-*.md`).
//!
//! | function | twin of | rounds | elements per value |
//! |---|---|---|---|
//! | [`input::input`] | - | 0 | 2 uploaded (to nodes 1 and 2); 4 digest elements in all on the next exchange |
//! | [`input::input_many`] | - | 0 for any number of inputs | 2 uploaded; 4 digest elements in all |
//! | [`input::reveal_to`] | - | 1 | 3 (to the receiver only) |
//! | [`multiply::mul`] | ring product | 1 | 3 |
//! | [`multiply::mul_trunc`] | `vtwin_fixed::mul` | 1 | 5 |
//! | [`multiply::inner_products`] | `vtwin_fixed::dot` | 1 | 5 per output, any length |
//! | [`binary::a2b`], [`binary::sign_bit`] | bits, `Fx::is_negative` | 9 | 45 |
//! | [`compare::less_than`] | `vtwin_fixed::compare::lt` | 10 | 51 |
//! | [`reciprocal::reciprocal`] | `vtwin_fixed::reciprocal` | 17 | 205 |
//! | [`inv_sqrt::inv_sqrt`] | `vtwin_fixed::inv_sqrt` | 21 | 264 |
//! | [`inv_sqrt::clip_factor`] | `vtwin_fixed::clip_factor` | 21 | 303 |
//! | [`exp::exp`] | `vtwin_fixed::exp` | 21 | 150 |
//! | [`gradient::gradient`] | `vtwin_model::fixed_backend::fixed_gradient` | P + 40 (P + 39 with integer statistics) | (13 + 10 P) B K + 523 B + 5 K + 10 (d - K) in all (5 (d - K) with integer statistics) |
//!
//! Every truncation is `vtwin_fixed::trunc_prob` with a uniform 128-bit mask known to node 0
//! alone, in one round ([`multiply`]); with the masks replayed through `vtwin_fixed::Probabilistic`,
//! every protocol's output equals the reference's bit for bit, for every input (so errors
//! and ranges are the reference's, documented in vtwin-fixed and protocols/arithmetic.md).

pub mod binary;
pub mod compare;
pub mod counters;
pub mod error;
pub mod exp;
pub mod gradient;
pub mod input;
pub mod inv_sqrt;
pub mod keys;
mod le_bytes;
pub mod message;
pub mod multiply;
pub mod normalise;
pub mod packing;
pub mod prg;
pub mod reciprocal;
pub mod runtime;
pub mod share;
pub mod sim;
#[cfg(test)]
mod view_search;
mod winograd;

pub use counters::Counters;
pub use error::MpcError;
pub use input::{InputClient, InputError, InputRange, Opening};
pub use keys::{NodeKey, PairSeeds};
pub use message::{Message, NodeId, Peer, SessionId, WireError};
pub use packing::Packing;
pub use runtime::{Ctx, Node};
pub use share::{BitShared, Shared};
pub use sim::{Delivery, SimReport, Simulation};
