//! What a state machine asks its driver to send: a [`Frame`] addressed to a [`Role`].
//!
//! The machines fill in the session, the attempt, iteration, step, sender and body; the link
//! fills in the
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

/// A session attempt: the session id and the coordinator's attempt at it
/// ([`Frame::attempt`]). Frames outside any session use [`Attempt::NONE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    /// The session id.
    pub session: [u8; 16],
    /// The coordinator's attempt (random, public).
    pub attempt: [u8; 8],
}

impl Attempt {
    /// No session (handshake frames, failures outside a session).
    pub const NONE: Attempt = Attempt {
        session: [0; 16],
        attempt: [0; 8],
    };

    /// The session attempt a frame belongs to.
    pub fn of(f: &Frame) -> Attempt {
        Attempt {
            session: f.session,
            attempt: f.attempt,
        }
    }
}

/// A frame of session attempt `at` from `sender` with sequence number 0 (the link numbers
/// it).
pub fn frame(sender: Role, at: Attempt, iteration: u64, step: u64, body: Body) -> Frame {
    let mut f = Frame::new(at.session, iteration, step, sender, body);
    f.attempt = at.attempt;
    f
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
        Body::Uploaded => "Uploaded",
        Body::Mpc { .. } => "Mpc",
        Body::Abort { .. } => "Abort",
        Body::Failed { .. } => "Failed",
        Body::AlignStart { .. } => "AlignStart",
        Body::Align { .. } => "Align",
        Body::LinkLost { .. } => "LinkLost",
        _ => "(unknown)",
    }
}
