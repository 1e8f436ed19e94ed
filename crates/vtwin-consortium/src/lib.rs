//! The consortium protocol: coordinator, compute-node and party state machines (sans-IO),
//! and the thin services that drive them over [`vtwin_net`].
//!
//! - [`coordinator::CoordinatorJob`], [`node::NodeSession`], [`party::PartyResponder`]:
//!   deterministic state machines; input `(authenticated sender role, frame)` and explicit time
//!   (`now`), output frames to send ([`outgoing::Outgoing`]) and events. No sockets, threads or
//!   clocks, so tests drive them in memory ([`memory`]).
//! - [`service`]: tokio tasks that connect them to vtwin-net QUIC links.
//! - [`loopback`]: a whole consortium in one process on loopback (for `vtwin demo` and
//!   `vtwin bench`).
//!
//! Protocol, messages, rounds, bytes, timeouts and abort semantics: `protocols/consortium.md`.

pub mod coordinator;
pub mod loopback;
pub mod memory;

pub mod node;
pub mod outgoing;
pub mod party;
pub mod party_ledger;
pub mod service;
pub mod upload;

pub use coordinator::{CoordinatorJob, JobError, JobEvent, JobOutput, Timeouts};
pub use node::{NodeError, NodeOutput, NodeSession};
pub use outgoing::Outgoing;
pub use party::{PartyError, PartyResponder, PartySetup};
pub use party_ledger::PartyLedger;
