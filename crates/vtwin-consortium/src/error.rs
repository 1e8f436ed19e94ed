//! A lost link's cause ([`LinkLoss`]), shared by the state machines and services. Errors
//! are printed with their causes by `vtwin_host::error_chain::Chain`.

use vtwin_net::transport::TransportError;
use vtwin_net::Role;

/// Why a link to a peer is gone.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkLoss {
    /// There was no link to send a frame on.
    #[error("no link")]
    NoLink,
    /// The link failed or closed.
    #[error("the link failed")]
    Transport(#[source] TransportError),
    /// A compute node (or a party, of its link to a node) reported that it lost its link to the peer.
    #[error("{0} lost its link to it")]
    ReportedBy(Role),
}
