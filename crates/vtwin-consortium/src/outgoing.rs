//! What a state machine asks its driver to send: a [`Frame`] addressed to a [`Role`].
//!
//! The machines fill in the session, iteration, step, sender and body; the link fills in the
//! sequence number when it sends ([`vtwin_net`] numbers frames per link and direction).

use vtwin_net::{Body, Frame, Role};

/// One frame to send to one peer.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    /// The addressee.
    pub to: Role,
    /// The frame (its `seq` is assigned by the link).
    pub frame: Frame,
}

/// A frame from `sender` with sequence number 0 (the link numbers it).
pub fn frame(sender: Role, session: [u8; 16], iteration: u64, step: u64, body: Body) -> Frame {
    Frame::new(session, iteration, step, sender, body)
}

/// The name of a body's kind, for logs and errors (never its content).
pub fn body_kind(body: &Body) -> &'static str {
    match body {
        Body::Hello => "Hello",
        Body::PartyInfo { .. } => "PartyInfo",
        Body::Start { .. } => "Start",
        Body::NodeKey { .. } => "NodeKey",
        Body::Request { .. } => "Request",
        Body::Upload { .. } => "Upload",
        Body::Refused { .. } => "Refused",
        Body::Relay { .. } => "Relay",
        Body::Mpc { .. } => "Mpc",
        Body::Abort { .. } => "Abort",
        Body::Failed { .. } => "Failed",
        _ => "(unknown)",
    }
}
