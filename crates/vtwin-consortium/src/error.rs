//! Error plumbing shared by the state machines and services: a lost link's cause
//! ([`LinkLoss`]) and printing an error with its causes ([`Chain`]).

use std::fmt;

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
    /// A compute node reported that it lost its link to the peer.
    #[error("{0} lost its link to it")]
    ReportedBy(Role),
}

/// Displays an error followed by its chain of causes, `: `-separated (what `{:#}` of an
/// `anyhow::Error` prints): for logs and for the text of `Failed` and `Abort` frames, which
/// carry no typed error.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
