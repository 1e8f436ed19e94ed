//! Links over QUIC (quinn) with mutual TLS: one bidirectional stream per link, frames of
//! [`crate::frame`] on it, the peer's role from its verified certificate.
//!
//! - [`Endpoint::bind`] listens (if it accepts any role) and connects. Incoming
//!   handshakes run in their own tasks, so a slow or hostile peer never blocks others; a
//!   refused handshake (wrong CA, a role this endpoint does not accept, bad hello) is logged
//!   at `warn` with the remote address and the reason, counted ([`Endpoint::refusals`]),
//!   and the endpoint keeps accepting.
//! - [`Endpoint::connect`] retries with exponential backoff ([`Backoff`]) while the peer
//!   does not answer, and fails at once if the peer answers but refuses (or is not the
//!   expected role); errors name the peer and its address.
//! - After TLS, the connector opens the stream and sends an 8-byte hello
//!   (`b"vtwin/1\n"`, or [`HELLO_INSECURE`] from a process running with insecure seeds,
//!   [`TransportOptions::insecure`]); the acceptor answers with its own. So a refusal of the
//!   client's certificate (which TLS 1.3 reports only after the client thinks it is done)
//!   surfaces in `connect`, and the acceptor only hands out links whose stream exists. Each
//!   side logs an insecure peer at `warn`, and a secure side refuses it
//!   ([`CLOSE_INSECURE_PEER`]): a run is secure on every peer or openly insecure on all.
//! - [`Link::recv`] reads the u32 LE length prefix, refuses lengths over
//!   [`MAX_FRAME_BYTES`](crate::frame::MAX_FRAME_BYTES) before allocating, decodes and applies the [`SeqGuard`]; any bad
//!   frame closes that connection with [`CLOSE_BAD_FRAME`] and returns the error.
//! - Optional receive delay ([`TransportOptions::receive_delay`]): a delay line that
//!   delivers each frame at its arrival time + delay (released by an OS thread, precise to
//!   tens of microseconds), frames pipelined (a background task keeps reading), order kept;
//!   used to emulate a round-trip time of 2 x delay when both ends set it.
//!
//! Files: this module holds the options, the hello and the errors; `endpoint.rs` the
//! [`Endpoint`], `link.rs` the [`Link`] and its halves, `delay_line.rs` the receive delay line.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{ConnectionError, RecvStream, SendStream, VarInt};
use rustls::pki_types::CertificateDer;
use tokio::sync::{mpsc, Mutex};

use crate::frame::{
    body_len, decode, encode, Frame, FrameError, SeqCounter, SeqGuard, LENGTH_PREFIX_BYTES,
    WIRE_VERSION,
};
use crate::pki::{role_of_certificate, Identity};
use crate::role::{Accept, Role};
use crate::stateless_reset::endpoint_config;
use crate::tls::{client_config, server_config, TlsError};

mod delay_line;
mod endpoint;
mod link;
mod port_probe;

pub use endpoint::Endpoint;
pub use link::{Link, LinkReceiver, LinkSender};

/// Longest keep-alive interval: a link sends at least this often, so a restarted peer answers
/// with a stateless reset (crate `reset_key`) and the link is redialled within about this long
/// instead of the idle timeout. Cost: one small packet per link per interval.
pub const KEEP_ALIVE_MAX: Duration = Duration::from_secs(2);

/// Application close code: normal close ([`Link::close`]).
pub const CLOSE_NORMAL: u32 = 0;
/// Application close code: a malformed, oversized or out-of-sequence frame.
pub const CLOSE_BAD_FRAME: u32 = 1;
/// Application close code: the stream hello was wrong or missing.
pub const CLOSE_BAD_HELLO: u32 = 2;

/// Application close code: the peer announced insecure seeds and this side is secure.
pub const CLOSE_INSECURE_PEER: u32 = 3;

/// The stream hello of a secure process (both directions).
pub const HELLO: [u8; 8] = *b"vtwin/1\n";

/// The stream hello of a process running with insecure seeds (its config's `[insecure]`).
pub const HELLO_INSECURE: [u8; 8] = *b"vtwin/1i";

/// The close reason sent with a hello refusal's code.
fn close_reason(code: u32) -> &'static [u8] {
    if code == CLOSE_INSECURE_PEER {
        b"insecure seeds on one side only: refused by the secure side"
    } else {
        b"bad hello"
    }
}

/// The hello this side sends.
fn own_hello(options: &TransportOptions) -> [u8; 8] {
    if options.insecure {
        HELLO_INSECURE
    } else {
        HELLO
    }
}

/// Checks the peer's hello: `Ok(())` for a secure peer, or an insecure one when this side is
/// insecure too (logged at `warn`); `Err` for an unknown hello or an insecure peer of a
/// secure side (with the close code).
fn check_hello(
    got: &[u8; 8],
    peer: Role,
    options: &TransportOptions,
) -> Result<(), (u32, HelloRefusal)> {
    if *got == HELLO {
        return Ok(());
    }
    if *got != HELLO_INSECURE {
        return Err((CLOSE_BAD_HELLO, HelloRefusal::Unknown { hello: *got }));
    }
    if !options.insecure {
        tracing::error!(%peer, "{peer} runs with INSECURE seeds ([insecure] in its config): refused, this process is secure");
        return Err((CLOSE_INSECURE_PEER, HelloRefusal::InsecurePeer { peer }));
    }
    tracing::warn!(%peer, "{peer} runs with INSECURE seeds, as this process does: nothing of this run is private or secret");
    Ok(())
}

/// Why a stream hello was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HelloRefusal {
    /// Neither [`HELLO`] nor [`HELLO_INSECURE`].
    #[error("bad hello {hello:02x?}")]
    Unknown {
        /// The bytes received.
        hello: [u8; 8],
    },
    /// The peer runs with insecure seeds and this process is secure.
    #[error("{peer} announces insecure seeds and this process is secure")]
    InsecurePeer {
        /// The peer.
        peer: Role,
    },
}

/// Why one attempt to connect to a peer (or to accept one) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The connection could not be started (bad address, endpoint closed).
    #[error("cannot start the connection")]
    Start(#[source] quinn::ConnectError),
    /// The QUIC or TLS handshake failed, or the connection was lost during the hello.
    #[error("handshake")]
    Handshake(#[source] ConnectionError),
    /// No answer within the attempt's time limit.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The peer's host answered ICMP port unreachable: the peer's service is not running
    /// (or not on that port), or a firewall rejects the datagrams.
    #[error("port unreachable (no service on that UDP port, or a firewall rejecting): is the peer's service running there?")]
    PortClosed,
    /// The peer's certificate names no role (unreachable after a verified handshake).
    #[error("peer certificate")]
    PeerCertificate(#[source] PeerCertificateError),
    /// The peer's certificate names another role than the one dialled.
    #[error("peer is {found}, expected {expected}")]
    WrongPeer {
        /// The role its certificate names.
        found: Role,
        /// The role dialled.
        expected: Role,
    },
    /// The stream for the hello could not be opened or accepted.
    #[error("opening the stream")]
    Stream(#[source] ConnectionError),
    /// The hello could not be sent.
    #[error("sending hello")]
    SendHello(#[source] quinn::WriteError),
    /// The hello could not be read.
    #[error("reading hello")]
    ReadHello(#[source] quinn::ReadExactError),
    /// The peer's hello was refused.
    #[error("hello")]
    Hello(#[source] HelloRefusal),
    /// The peer sent no hello in time.
    #[error("no hello within {0:?}")]
    NoHello(Duration),
}

/// Why a peer's verified certificate yields no role.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerCertificateError {
    /// The connection carries no peer certificate.
    #[error("no peer certificate")]
    Missing,
    /// The peer identity is not a certificate chain.
    #[error("unexpected peer identity type")]
    IdentityType,
    /// The chain is empty.
    #[error("empty peer chain")]
    EmptyChain,
    /// The leaf names no single role.
    #[error("names no single vtwin role")]
    NoRole(#[source] crate::pki::CertRoleError),
}

/// Why a link ended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkClosed {
    /// The peer finished its stream between frames.
    #[error("the peer finished the link")]
    Finished,
    /// The connection was closed or lost.
    #[error("connection closed")]
    Connection(#[source] ConnectionError),
    /// Reading a length prefix failed.
    #[error("reading a frame")]
    Read(#[source] quinn::ReadExactError),
    /// Reading a frame's body failed.
    #[error("reading inside a frame of {len} bytes")]
    ReadBody {
        /// The announced body length.
        len: usize,
        /// The cause.
        #[source]
        source: quinn::ReadExactError,
    },
    /// Writing a frame failed.
    #[error("writing a frame")]
    Write(#[source] quinn::WriteError),
    /// The receive delay line stopped.
    #[error("the delay line stopped")]
    DelayLine,
}

/// Frames buffered by a delay line before it stops reading (QUIC flow control then holds
/// the sender back).
pub const DELAY_QUEUE_FRAMES: usize = 4096;

/// Links whose handshake completed but that [`Endpoint::accept`] has not taken yet.
const ACCEPT_QUEUE: usize = 64;

/// Transport settings of an endpoint (shared by all its links).
#[derive(Clone, Debug)]
pub struct TransportOptions {
    /// A connection with no traffic for this long is closed (QUIC idle timeout).
    pub idle_timeout: Duration,
    /// Keep-alive interval (well below `idle_timeout`, so idle links stay up; also how soon
    /// a restarted peer's stateless reset is provoked, so how soon a link to it is redialled).
    pub keep_alive: Duration,
    /// How long an accepted connection may take to open its stream and send the hello.
    pub hello_timeout: Duration,
    /// One-way delay added to every received frame (None: deliver at once).
    pub receive_delay: Option<Duration>,
    /// This process runs with insecure seeds: it says so in every hello and accepts peers
    /// that do; a secure endpoint (false) refuses them.
    pub insecure: bool,
}

impl Default for TransportOptions {
    /// Idle timeout 15 s (seven keep-alives of 2 s lost in a row: a dead or cut-off peer, not
    /// a slow one), keep-alive 2 s, hello timeout 10 s, no delay, secure.
    fn default() -> TransportOptions {
        TransportOptions {
            idle_timeout: Duration::from_secs(15),
            keep_alive: KEEP_ALIVE_MAX,
            hello_timeout: Duration::from_secs(10),
            receive_delay: None,
            insecure: false,
        }
    }
}

/// Retry schedule of [`Endpoint::connect`]: up to `attempts` attempts, each limited to
/// `attempt_timeout`, separated by `initial`, `2 initial`, `4 initial`, ... capped at `max`.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// Attempts in all (>= 1).
    pub attempts: u32,
    /// Delay after the first failed attempt.
    pub initial: Duration,
    /// Largest delay between attempts.
    pub max: Duration,
    /// Limit on one attempt (handshake and hello).
    pub attempt_timeout: Duration,
}

impl Default for Backoff {
    /// 10 attempts, 100 ms doubling to at most 5 s, 5 s per attempt (gives up after about
    /// 71 s against a silent address, about 26 s against a closed port whose host answers
    /// port unreachable).
    fn default() -> Backoff {
        Backoff {
            attempts: 10,
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
            attempt_timeout: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// The delay after failed attempt `n` (1-based): `min(initial 2^(n-1), max)`.
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.saturating_sub(1)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// A transport operation failed; names the peer and its address where known.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The UDP socket could not be bound.
    #[error("cannot bind {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// TLS configuration failed (bad key or certificate).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// No answer from the peer after all attempts.
    #[error("{peer} at {addr} unreachable after {attempts} attempts: {}", vtwin_host::error_chain::chain(last.as_ref()))]
    Unreachable {
        /// The expected peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's failure (with its causes in the message, not chained as a
        /// source: services log this error with `{}`, and `{:#}` prints it once).
        last: Box<ConnectFailure>,
    },
    /// The peer answered but the connection was refused (certificate from another CA,
    /// wrong role on either side, bad hello).
    #[error("connection to {peer} at {addr} refused: {}", vtwin_host::error_chain::chain(reason.as_ref()))]
    Refused {
        /// The expected peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// Why (with its causes in the message, not chained as a source).
        reason: Box<ConnectFailure>,
    },
    /// A bad frame from the peer; the connection has been closed.
    #[error("bad frame from {peer} at {addr}, connection closed")]
    BadFrame {
        /// The peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// What was wrong.
        #[source]
        source: FrameError,
    },
    /// A frame to send could not be encoded (nothing was sent).
    #[error("cannot send to {peer} at {addr}")]
    Encode {
        /// The peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// What was wrong.
        #[source]
        source: FrameError,
    },
    /// The link is gone (peer closed, connection lost, idle timeout).
    #[error("link to {peer} at {addr} closed: {}", vtwin_host::error_chain::chain(reason.as_ref()))]
    Closed {
        /// The peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// Why (with its causes in the message, not chained as a source).
        reason: Box<LinkClosed>,
    },
    /// The endpoint was closed; no more connections.
    #[error("endpoint closed")]
    EndpointClosed,
}
