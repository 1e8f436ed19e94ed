//! QUIC transport (quinn + rustls, mutual TLS against the consortium CA), the versioned
//! wire format, and sealing of input shares to a compute node.
//!
//! - [`frame`]: `len (u32 LE) || postcard(Frame)`, at most [`frame::MAX_FRAME_BYTES`];
//!   version, per-link sequence number, session, iteration, step and sender in every frame;
//!   [`frame::SeqGuard`] rejects duplicates, replays, reordering and a forged sender.
//! - [`seal`]: ephemeral-static X25519 + HKDF-SHA256 + AES-256-GCM, bound to (session,
//!   iteration, party, node), so the coordinator relays shares it cannot read.
//! - [`role`]: coordinator, node i, party p, and their certificate names.
//!
//! Normative descriptions: protocols/wire-format.md and protocols/sealing.md.

pub mod atomic_file;
pub mod frame;
pub mod role;
pub mod seal;

pub use frame::{Body, Frame, FrameError, SeqGuard, WirePublic};
pub use role::Role;
pub use seal::{seal, unseal, SealContext, SealError, SealKey};
