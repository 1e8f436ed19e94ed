//! QUIC transport (quinn + rustls, mutual TLS against the consortium CA), the versioned
//! wire format, and sealing of input shares to a compute node.
//!
//! - [`frame`]: `len (u32 LE) || postcard(Frame)`, at most [`frame::MAX_FRAME_BYTES`];
//!   version, per-link sequence number, session, attempt, iteration, step and sender in
//!   every frame;
//!   [`frame::SeqGuard`] rejects duplicates, replays, reordering and a forged sender.
//! - [`mod@seal`]: X25519 once per (party, node) channel, then HKDF-SHA256 with a fresh salt
//!   and AES-256-GCM per blob, bound to (session, iteration, party, node), so only that node
//!   reads a party's shares, whatever carries them (the party's own link to the node since
//!   wire version 15; the coordinator's relay before).
//! - [`role`]: coordinator, node i, party p, and their certificate names.
//! - [`relay_signature`]: end-to-end signatures (by a role's certified key) on messages the
//!   coordinator relays between parties, so the relay can neither change nor forge them.
//! - [`pki`]: the consortium CA, per-role certificates, a process's [`pki::Identity`].
//! - `stateless_reset`: QUIC reset and connection-id keys derived from the TLS key, so a
//!   restarted process's resets are honoured and its peers redial within a keep-alive.
//! - [`tls`]: rustls 0.23 (ring only, TLS 1.3 only) mutual-TLS configurations.
//! - [`transport`]: [`transport::Endpoint`] (accept, connect with backoff) and
//!   [`transport::Link`] (send, recv, split), with an optional receive delay line.
//!
//! It moves bytes only: the services' configurations and keygen are in vtwin-consortium.
//!
//! Normative descriptions: protocols/wire-format.md and protocols/sealing.md.
//!
//! Costs: encoding and decoding are linear in the frame; sealing a blob is one HKDF plus
//! AES-256-GCM over the plaintext, and each (party, node) channel two X25519 scalar
//! multiplications at the party and one at the node. Measured figures (and fuzzing
//! counts) are in docs/component-costs.md.

pub mod frame;
pub mod pki;
pub mod relay_signature;
pub mod role;
pub mod seal;
mod stateless_reset;
pub mod tls;
pub mod transport;

pub use frame::{
    Allowed, Body, Budget, Frame, FrameError, JobTerms, Refusal, SeqGuard, Term, WirePublic,
};
pub use relay_signature::{RelaySignature, RelaySignatureError, RelaySigner, RelayVerifier};
pub use role::{Accept, Role};
pub use seal::{seal, unseal, unseal_owned, Opened, SealChannel, SealContext, SealError, SealKey};
pub use transport::{
    Backoff, Endpoint, Link, LinkReceiver, LinkSender, TransportError, TransportOptions,
};
