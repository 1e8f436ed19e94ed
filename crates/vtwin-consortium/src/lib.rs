//! The consortium protocol: coordinator, compute-node and party state machines (sans-IO),
//! and the thin services that drive them over [`vtwin_net`].
//!
//! - [`coordinator::CoordinatorJob`], [`node::NodeSession`], [`party::PartyResponder`]:
//!   deterministic state machines; input `(authenticated sender role, frame)` and explicit time
//!   (`now`), output frames to send ([`outgoing::Outgoing`]) and events. No sockets, threads or
//!   clocks, so tests drive them in memory ([`memory`]).
//! - [`service`]: tokio tasks that connect them to vtwin-net QUIC links.
//! - [`config`]: the services' TOML configurations (policies, training settings, data
//!   sources); [`keygen`] writes them with the keys and certificates.
//! - [`loopback`]: a whole consortium in one process on loopback (for `vtwin demo` and
//!   `vtwin bench`).
//!
//! Protocol, messages, rounds, bytes, timeouts and abort semantics: `protocols/consortium.md`.
//!
//! Feature `model` (default): the party and coordinator roles, which hold the model
//! (vtwin-model: the local kernels on candle, the trainer). Without it the crate is the
//! compute node alone ([`node`], [`service::node`]), whose iteration role comes from
//! vtwin-iteration: `cargo tree -p vtwin-consortium --no-default-features` has no candle.

pub mod config;
#[cfg(feature = "model")]
pub mod coordinator;
pub mod error;
pub mod keygen;
#[cfg(feature = "model")]
pub mod loopback;
#[cfg(feature = "model")]
pub mod memory;

pub mod node;
pub mod outgoing;
#[cfg(feature = "model")]
pub mod party;
pub mod party_ledger;
pub mod service;
pub mod upload;
mod verified_channels;

#[cfg(feature = "model")]
pub use coordinator::{CoordinatorJob, JobError, JobEvent, JobOutput, Timeouts};
pub use error::LinkLoss;
pub use node::{NodeError, NodeOutput, NodeSession};
pub use outgoing::Outgoing;
#[cfg(feature = "model")]
pub use party::{PartyError, PartyResponder, PartySetup};
pub use party_ledger::PartyLedger;
