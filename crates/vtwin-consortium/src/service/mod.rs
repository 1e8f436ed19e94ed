//! Thin tokio services that connect the sans-IO machines to vtwin-net QUIC links.
//!
//! Each process runs its state machine in one task (a node's session on a thread of its
//! own, which reads the links' inbox itself); its links are read and written by their own
//! tasks ([`mesh`]). Topology: the coordinator dials the three nodes and every
//! party; node i dials node j for j > i and every party dials the three nodes (each redials
//! when its link drops, so a restarted node is reconnected); node i accepts the
//! coordinator, the nodes j < i and every party; a party accepts the coordinator only.
//! Certificates decide roles (vtwin-net); a refused handshake is
//! logged by vtwin-net and the process keeps serving. A malformed or oversized frame closes
//! that link (vtwin-net) and is logged here; the process keeps serving.
//!
//! Logs: tracing, one `iteration` span per iteration (fields `t` and the role).

#[cfg(feature = "model")]
pub mod coordinator;
mod mesh;
pub mod node;
#[cfg(feature = "model")]
pub mod party;

#[cfg(feature = "model")]
pub use coordinator::{run_coordinator, CoordinatorHooks, CoordinatorRun};
pub use node::{NodeRun, NodeServer};
#[cfg(feature = "model")]
pub use party::PartyServer;

use vtwin_net::transport::TransportError;

/// Why a service stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// A transport failure (names the peer and its address).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The job aborted (names the peer at fault).
    #[cfg(feature = "model")]
    #[error(transparent)]
    Job(#[from] crate::coordinator::JobError),
    /// The driver's own step failed (e.g. writing a checkpoint, a resume check).
    #[cfg(feature = "model")]
    #[error("{step}")]
    Driver {
        /// The step.
        step: DriverStep,
        /// The driver's error.
        #[source]
        source: crate::coordinator::HookError,
    },
    /// The machine's task ended unexpectedly.
    #[error("the service stopped")]
    Stopped(#[source] StopCause),
}

/// A step of the coordinator's driver ([`ServiceError::Driver`]).
#[cfg(feature = "model")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverStep {
    /// Building the trainer once the parties agree on the records.
    #[error("setting up the training")]
    Agreed,
    /// Recording this iteration after it was applied (checkpoint, progress).
    #[error("recording iteration {0}")]
    Applied(u64),
}

/// Why a service stopped unexpectedly ([`ServiceError::Stopped`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StopCause {
    /// A task of the service panicked or was cancelled.
    #[error("a task ended")]
    Task(#[source] tokio::task::JoinError),
    /// The thread running the node's sessions could not start.
    #[error("the session thread could not start")]
    Spawn(#[source] std::io::Error),
    /// The thread running the node's sessions ended.
    #[error("the session thread ended")]
    SessionThread,
    /// No link can arrive any more (the acceptor or the diallers ended).
    #[error("no more links")]
    NoMoreLinks,
    /// The links' inbox closed.
    #[error("the inbox closed")]
    InboxClosed,
    /// The job has no trainer where it must have one.
    #[error("no trainer")]
    NoTrainer,
    /// The party's noise sampling task panicked or was cancelled.
    #[error("the noise sampling task ended")]
    NoiseTask(#[source] tokio::task::JoinError),
}
