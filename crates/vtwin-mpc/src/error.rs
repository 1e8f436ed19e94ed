//! Errors of the node state machines and of the protocols they run.

use crate::message::{Peer, WireError};

/// Why a node rejected a message or stopped. A node that returned an error is poisoned: every
/// later call returns [`MpcError::Poisoned`]. Nothing here ever carries share values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MpcError {
    /// The bytes of a message did not decode.
    #[error("malformed message bytes: {0}")]
    Wire(#[from] WireError),
    /// The message belongs to another session.
    #[error("message from {from} belongs to another session")]
    WrongSession {
        /// The sender named in the message.
        from: Peer,
    },
    /// The message is addressed to another peer.
    #[error("message from {from} is addressed to {to}, not to this node")]
    Misrouted {
        /// The sender.
        from: Peer,
        /// The addressee named in the message.
        to: Peer,
    },
    /// The sender is this node itself, or a client id outside the session.
    #[error("message from unknown or invalid peer {from}")]
    UnknownPeer {
        /// The sender.
        from: Peer,
    },
    /// A second message with the same sender and step.
    #[error("duplicate message from {from} at step {step}")]
    Duplicate {
        /// The sender.
        from: Peer,
        /// The step (round number, or the client's input sequence number).
        step: u64,
    },
    /// A message this node's protocol did not expect from that sender at that step (the wrong
    /// node for the round, or a round that is over).
    #[error("unexpected message from {from} at step {step}")]
    Unexpected {
        /// The sender.
        from: Peer,
        /// The step.
        step: u64,
    },
    /// The payload does not have the length the protocol expects.
    #[error(
        "malformed message from {from} at step {step}: {got} ring elements, expected {expected}"
    )]
    Malformed {
        /// The sender.
        from: Peer,
        /// The step.
        step: u64,
        /// Elements expected.
        expected: usize,
        /// Elements received.
        got: usize,
    },
    /// A protocol was called with vectors of inconsistent lengths (a caller bug, reported).
    #[error("{protocol}: length mismatch ({left} vs {right})")]
    LengthMismatch {
        /// The protocol.
        protocol: &'static str,
        /// One length.
        left: usize,
        /// The other.
        right: usize,
    },
    /// Key agreement with a peer gave a non-contributory (low-order point) result.
    #[error("key agreement with {peer} is not contributory (invalid public key)")]
    NonContributoryKey {
        /// The peer whose public key is invalid.
        peer: Peer,
    },
    /// A client gave the nodes inconsistent input: nodes 1 and 2 received different
    /// corrections, or two nodes received different copies of a seed (`s_0` at nodes 0 and
    /// 2, `s_1` at nodes 0 and 1), or a relay altered one. Found by comparing SHA-256 digests
    /// before anything is revealed ([`crate::input`]). The node refuses to go on; nothing
    /// has been revealed.
    #[error(
        "a client sent the nodes inconsistent inputs (different corrections or seeds; the \
         digest from {peer} does not match this node's): refusing to continue, nothing was \
         revealed"
    )]
    InconsistentInput {
        /// The node whose digest differs.
        peer: Peer,
    },
    /// The program finished with client inputs or seeds that were never checked for
    /// consistency (no exchange or opening after them): a program bug, refused so that no
    /// result rests on unchecked inputs. Run [`crate::input::check_inputs`] before returning.
    #[error("the program finished with client inputs that were never checked for consistency")]
    UncheckedInput,
    /// The node already failed or finished.
    #[error("node is poisoned by an earlier error or has finished")]
    Poisoned,
    /// The simulator ran out of messages before every node finished.
    #[error("protocol stalled: node {node} did not finish")]
    Stalled {
        /// The first unfinished node.
        node: u8,
    },
}
