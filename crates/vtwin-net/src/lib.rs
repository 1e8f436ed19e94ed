//! QUIC transport (quinn + rustls, mutual TLS against the consortium CA), the versioned
//! wire format, and sealing of input shares to a compute node.
//!
//! - [`frame`]: `len (u32 LE) || postcard(Frame)`, at most [`frame::MAX_FRAME_BYTES`];
//!   version, per-link sequence number, session, attempt, iteration, step and sender in
//!   every frame;
//!   [`frame::SeqGuard`] rejects duplicates, replays, reordering and a forged sender.
//! - [`mod@seal`]: ephemeral-static X25519 + HKDF-SHA256 + AES-256-GCM, bound to (session,
//!   iteration, party, node), so the coordinator relays shares it cannot read.
//! - [`role`]: coordinator, node i, party p, and their certificate names.
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
//! # Measured (this 2-core machine, load average about 10 from parallel builds, so upper
//! bounds on the cost; `cargo bench -p vtwin-net --bench wire`, 1 MiB payload)
//!
//! | operation | time per MiB (median) | throughput |
//! |---|---|---|
//! | [`frame::encode`] of a `Body::Mpc` | 97 us | 10 GiB/s |
//! | [`frame::decode`] (with the canonical check) | 149 us | 6.5 GiB/s |
//! | [`seal::seal`] | 2.0 ms | 0.50 GiB/s |
//! | [`seal::unseal`] | 2.2 ms | 0.45 GiB/s |
//!
//! Fuzzing (fuzz/, coverage-instrumented, stable toolchain, 121 s each, one core, on
//! 2026-11-21 with wire version 2 and no other build running): `frame_decode` 31,325,862
//! executions (259,000/s), `mpc_message` (vtwin-mpc's message decoder) 175,863,905 (1,453,000/s),
//! `unseal` 678,603 (5,600/s: two X25519 operations each); no crash or property failure.
//! (Under load, wire version 1: `frame_decode` 50,200/s and `unseal` 952/s.)

pub mod frame;
pub mod pki;
pub mod role;
pub mod seal;
mod stateless_reset;
pub mod tls;
pub mod transport;

pub use frame::{
    Allowed, Body, Budget, Frame, FrameError, JobTerms, Refusal, SeqGuard, Term, WirePublic,
};
pub use role::Role;
pub use seal::{seal, unseal, SealContext, SealError, SealKey};
pub use transport::{
    Backoff, Endpoint, Link, LinkReceiver, LinkSender, TransportError, TransportOptions,
};
