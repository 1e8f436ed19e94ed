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
//!   tens of microseconds), frames pipelined (a background task keeps reading), order kept; used to emulate a round-trip time of 2 x delay when both
//!   ends set it.

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
use crate::role::Role;
use crate::stateless_reset::endpoint_config;
use crate::tls::{client_config, server_config, TlsError};

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
fn check_hello(got: &[u8; 8], peer: Role, options: &TransportOptions) -> Result<(), (u32, String)> {
    if *got == HELLO {
        return Ok(());
    }
    if *got != HELLO_INSECURE {
        return Err((CLOSE_BAD_HELLO, format!("bad hello {got:02x?}")));
    }
    if !options.insecure {
        tracing::error!(%peer, "{peer} runs with INSECURE seeds ([insecure] in its config): refused, this process is secure");
        return Err((
            CLOSE_INSECURE_PEER,
            format!("{peer} announces insecure seeds and this process is secure"),
        ));
    }
    tracing::warn!(%peer, "{peer} runs with INSECURE seeds, as this process does: nothing of this run is private or secret");
    Ok(())
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
    /// 70 s against a silent address).
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
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// TLS configuration failed (bad key or certificate).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// No answer from the peer after all attempts.
    #[error("{peer} at {addr} unreachable after {attempts} attempts: {last}")]
    Unreachable {
        /// The expected peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's failure.
        last: String,
    },
    /// The peer answered but the connection was refused (certificate from another CA,
    /// wrong role on either side, bad hello).
    #[error("connection to {peer} at {addr} refused: {reason}")]
    Refused {
        /// The expected peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A bad frame from the peer; the connection has been closed.
    #[error("bad frame from {peer} at {addr}, connection closed: {source}")]
    BadFrame {
        /// The peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// What was wrong.
        source: FrameError,
    },
    /// A frame to send could not be encoded (nothing was sent).
    #[error("cannot send to {peer} at {addr}: {source}")]
    Encode {
        /// The peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// What was wrong.
        source: FrameError,
    },
    /// The link is gone (peer closed, connection lost, idle timeout).
    #[error("link to {peer} at {addr} closed: {reason}")]
    Closed {
        /// The peer.
        peer: Role,
        /// Its address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// The endpoint was closed; no more connections.
    #[error("endpoint closed")]
    EndpointClosed,
}

/// A QUIC endpoint that accepts links from some roles and connects to others.
pub struct Endpoint {
    quinn: quinn::Endpoint,
    role: Role,
    client: quinn::ClientConfig,
    options: TransportOptions,
    accepted: Mutex<mpsc::Receiver<Link>>,
    refusals: Arc<AtomicU64>,
    /// Dropped with the endpoint: stops the acceptor task, so the socket is released once
    /// the last connection is gone (and the address can be bound again).
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Endpoint({} at {:?})",
            self.role,
            self.quinn.local_addr()
        )
    }
}

fn transport_config(options: &TransportOptions, accepts_stream: bool) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    // Idle timeouts above 2^62 us do not exist; fall back to quinn's default then.
    if let Ok(idle) = quinn::IdleTimeout::try_from(options.idle_timeout) {
        t.max_idle_timeout(Some(idle));
    }
    t.keep_alive_interval(Some(options.keep_alive));
    // One link = one bidirectional stream opened by the connector; nothing else.
    t.max_concurrent_bidi_streams(VarInt::from_u32(u32::from(accepts_stream)));
    t.max_concurrent_uni_streams(VarInt::from_u32(0));
    // Windows large enough for a 1 MB frame in flight without stalling on loopback.
    t.stream_receive_window(VarInt::from_u32(16 << 20));
    t.receive_window(VarInt::from_u32(32 << 20));
    t.send_window(32 << 20);
    t
}

fn peer_role_of(conn: &quinn::Connection) -> Result<Role, String> {
    let identity = conn
        .peer_identity()
        .ok_or_else(|| "no peer certificate".to_string())?;
    let chain = identity
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| "unexpected peer identity type".to_string())?;
    let leaf = chain
        .first()
        .ok_or_else(|| "empty peer chain".to_string())?;
    role_of_certificate(leaf).map_err(|e| e.to_string())
}

/// Whether a connection failure means "nobody answered" (retry) rather than "refused".
fn is_transient(e: &ConnectionError) -> bool {
    matches!(
        e,
        ConnectionError::TimedOut | ConnectionError::Reset | ConnectionError::CidsExhausted
    )
}

enum Attempt {
    Retry(String),
    Fatal(String),
}

impl Endpoint {
    /// Binds `addr` (port 0: any free port) with `identity`. If `accept` is non-empty the
    /// endpoint listens and accepts clients whose certificate names one of these roles;
    /// otherwise it only connects. Must be called inside a tokio runtime (spawns the
    /// acceptor task).
    pub fn bind(
        addr: SocketAddr,
        identity: &Identity,
        accept: &[Role],
        options: TransportOptions,
    ) -> Result<Endpoint, TransportError> {
        let client_crypto =
            QuicClientConfig::try_from(client_config(identity)?).map_err(|e| TlsError {
                reason: e.to_string(),
            })?;
        let mut client = quinn::ClientConfig::new(Arc::new(client_crypto));
        client.transport_config(Arc::new(transport_config(&options, false)));
        let server = if accept.is_empty() {
            None
        } else {
            let server_crypto = QuicServerConfig::try_from(server_config(identity, accept)?)
                .map_err(|e| TlsError {
                    reason: e.to_string(),
                })?;
            let mut server = quinn::ServerConfig::with_crypto(Arc::new(server_crypto));
            server.transport_config(Arc::new(transport_config(&options, true)));
            Some(server)
        };
        // Keys derived from the identity: a restarted process's stateless resets are honoured
        // by its peers (crate::stateless_reset).
        let config = endpoint_config(identity);
        let bind = |source| TransportError::Bind { addr, source };
        let socket = std::net::UdpSocket::bind(addr).map_err(bind)?;
        let runtime = quinn::default_runtime()
            .ok_or_else(|| bind(std::io::Error::other("no tokio runtime")))?;
        let quinn = quinn::Endpoint::new(config, server, socket, runtime).map_err(bind)?;
        let (tx, rx) = mpsc::channel(ACCEPT_QUEUE);
        let refusals = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        if !accept.is_empty() {
            tokio::spawn(accept_loop(
                quinn.clone(),
                identity.role(),
                options.clone(),
                tx,
                refusals.clone(),
                stopped,
            ));
        }
        Ok(Endpoint {
            quinn,
            role: identity.role(),
            client,
            options,
            accepted: Mutex::new(rx),
            refusals,
            _stop: stop,
        })
    }

    /// The bound address (with the actual port if 0 was asked).
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        self.quinn
            .local_addr()
            .map_err(|source| TransportError::Bind {
                addr: SocketAddr::from(([0, 0, 0, 0], 0)),
                source,
            })
    }

    /// This endpoint's own role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Number of incoming connections refused so far (each also logged at `warn`).
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// The next accepted link (mutual TLS done, peer role from its certificate, hello
    /// exchanged). Refused handshakes are logged and skipped. Errors only with
    /// [`TransportError::EndpointClosed`] (or on an endpoint that accepts no role).
    pub async fn accept(&self) -> Result<Link, TransportError> {
        self.accepted
            .lock()
            .await
            .recv()
            .await
            .ok_or(TransportError::EndpointClosed)
    }

    /// Connects to the peer `expect` at `addr`, retrying per `backoff` while it does not
    /// answer. Fails at once with [`TransportError::Refused`] if it answers but the
    /// handshake fails (another CA, a certificate for another role on either side); with
    /// [`TransportError::Unreachable`] after the last attempt. Both name `expect` and
    /// `addr`, and are logged at `warn`.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        expect: Role,
        backoff: Backoff,
    ) -> Result<Link, TransportError> {
        let attempts = backoff.attempts.max(1);
        let mut last = String::new();
        for n in 1..=attempts {
            let attempt =
                tokio::time::timeout(backoff.attempt_timeout, self.try_connect(addr, expect));
            match attempt.await {
                Ok(Ok(link)) => return Ok(link),
                Ok(Err(Attempt::Fatal(reason))) => {
                    tracing::warn!(peer = %expect, %addr, %reason, "connection refused");
                    return Err(TransportError::Refused {
                        peer: expect,
                        addr,
                        reason,
                    });
                }
                Ok(Err(Attempt::Retry(reason))) => last = reason,
                Err(_) => last = format!("no answer within {:?}", backoff.attempt_timeout),
            }
            if n < attempts {
                let delay = backoff.delay(n);
                tracing::info!(peer = %expect, %addr, attempt = n, reason = %last, ?delay, "peer not reachable yet, retrying");
                tokio::time::sleep(delay).await;
            }
        }
        tracing::warn!(peer = %expect, %addr, attempts, reason = %last, "peer unreachable");
        Err(TransportError::Unreachable {
            peer: expect,
            addr,
            attempts,
            last,
        })
    }

    async fn try_connect(&self, addr: SocketAddr, expect: Role) -> Result<Link, Attempt> {
        let connecting = self
            .quinn
            .connect_with(self.client.clone(), addr, &expect.dns_name())
            .map_err(|e| Attempt::Fatal(e.to_string()))?;
        let classify = |e: ConnectionError| {
            if is_transient(&e) {
                Attempt::Retry(e.to_string())
            } else {
                Attempt::Fatal(e.to_string())
            }
        };
        let conn = connecting.await.map_err(classify)?;
        let role = peer_role_of(&conn).map_err(Attempt::Fatal)?;
        if role != expect {
            // Unreachable with the CA's certificates (the server name is checked), kept as
            // defence in depth.
            conn.close(VarInt::from_u32(CLOSE_BAD_HELLO), b"unexpected role");
            return Err(Attempt::Fatal(format!("peer is {role}, expected {expect}")));
        }
        let (mut send, mut recv) = conn.open_bi().await.map_err(classify)?;
        send.write_all(&own_hello(&self.options))
            .await
            .map_err(|e| Attempt::Fatal(format!("sending hello: {e}")))?;
        let mut answer = [0u8; HELLO.len()];
        match recv.read_exact(&mut answer).await {
            Ok(()) => {
                if let Err((code, reason)) = check_hello(&answer, role, &self.options) {
                    conn.close(VarInt::from_u32(code), close_reason(code));
                    return Err(Attempt::Fatal(format!("hello answer: {reason}")));
                }
            }
            Err(quinn::ReadExactError::ReadError(quinn::ReadError::ConnectionLost(e))) => {
                return Err(classify(e))
            }
            Err(e) => return Err(Attempt::Fatal(format!("reading hello: {e}"))),
        }
        Ok(Link::new(conn, send, recv, self.role, role, &self.options))
    }

    /// Closes the endpoint and all its connections (code [`CLOSE_NORMAL`]).
    pub fn close(&self) {
        self.quinn
            .close(VarInt::from_u32(CLOSE_NORMAL), b"endpoint closed");
    }

    /// Waits until all connections are closed and their close was sent (bounded by the
    /// idle timeout).
    pub async fn wait_idle(&self) {
        self.quinn.wait_idle().await;
    }
}

async fn accept_loop(
    quinn: quinn::Endpoint,
    own: Role,
    options: TransportOptions,
    tx: mpsc::Sender<Link>,
    refusals: Arc<AtomicU64>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        let incoming = tokio::select! {
            incoming = quinn.accept() => incoming,
            _ = &mut stopped => None,
        };
        let Some(incoming) = incoming else { return };
        let (tx, refusals, options) = (tx.clone(), refusals.clone(), options.clone());
        tokio::spawn(async move {
            let addr = incoming.remote_address();
            match accept_one(incoming, own, &options).await {
                Ok(link) => {
                    tracing::debug!(peer = %link.peer(), %addr, "link accepted");
                    // A closed receiver means the endpoint is gone; the link drops.
                    let _ = tx.send(link).await;
                }
                Err(reason) => {
                    refusals.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%addr, %reason, "incoming connection refused");
                }
            }
        });
    }
}

async fn accept_one(
    incoming: quinn::Incoming,
    own: Role,
    options: &TransportOptions,
) -> Result<Link, String> {
    let conn = incoming.await.map_err(|e| format!("handshake: {e}"))?;
    let peer = peer_role_of(&conn)?;
    let hello = async {
        let (send, mut recv) = conn
            .accept_bi()
            .await
            .map_err(|e| (CLOSE_BAD_HELLO, e.to_string()))?;
        let mut got = [0u8; HELLO.len()];
        recv.read_exact(&mut got)
            .await
            .map_err(|e| (CLOSE_BAD_HELLO, e.to_string()))?;
        check_hello(&got, peer, options)?;
        Ok((send, recv))
    };
    let (mut send, recv) = match tokio::time::timeout(options.hello_timeout, hello).await {
        Ok(Ok(streams)) => streams,
        Ok(Err((code, reason))) => {
            conn.close(VarInt::from_u32(code), close_reason(code));
            return Err(format!("{peer}: {reason}"));
        }
        Err(_) => {
            conn.close(VarInt::from_u32(CLOSE_BAD_HELLO), b"no hello");
            return Err(format!(
                "{peer}: no hello within {:?}",
                options.hello_timeout
            ));
        }
    };
    send.write_all(&own_hello(options))
        .await
        .map_err(|e| format!("{peer}: answering hello: {e}"))?;
    Ok(Link::new(conn, send, recv, own, peer, options))
}

/// Why reading one raw frame stopped.
enum RawError {
    /// The length prefix was refused (oversized or empty).
    Frame(FrameError),
    /// The stream or connection failed, or ended inside a frame.
    Stream(String),
}

/// Reads one length-prefixed frame body: `Ok(None)` on a clean end of stream between
/// frames. The length is checked before the body buffer is allocated.
async fn read_raw(stream: &mut RecvStream) -> Result<Option<Vec<u8>>, RawError> {
    let mut prefix = [0u8; LENGTH_PREFIX_BYTES];
    match stream.read_exact(&mut prefix).await {
        Ok(()) => {}
        Err(quinn::ReadExactError::FinishedEarly(0)) => return Ok(None),
        Err(e) => return Err(RawError::Stream(e.to_string())),
    }
    let len = body_len(prefix).map_err(RawError::Frame)?;
    let mut body = vec![0u8; len];
    stream
        .read_exact(&mut body)
        .await
        .map_err(|e| RawError::Stream(format!("inside a frame of {len} bytes: {e}")))?;
    Ok(Some(body))
}

/// One frame read by a delay line, with its arrival time.
struct Arrival {
    at: Instant,
    raw: RawFrame,
}

/// What [`read_raw`] returns.
type RawFrame = Result<Option<Vec<u8>>, RawError>;

enum Source {
    Direct(RecvStream),
    /// Frames released by the delay line's timer thread at arrival + delay.
    Delayed(mpsc::Receiver<RawFrame>),
}

/// The sending half of a link.
pub struct LinkSender {
    conn: quinn::Connection,
    stream: SendStream,
    own: Role,
    peer: Role,
    counter: SeqCounter,
    bytes: u64,
}

/// The receiving half of a link.
pub struct LinkReceiver {
    conn: quinn::Connection,
    source: Source,
    guard: SeqGuard,
    bytes: u64,
}

/// A link to one authenticated peer: one bidirectional QUIC stream.
pub struct Link {
    tx: LinkSender,
    rx: LinkReceiver,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Link({} at {})", self.peer(), self.remote_address())
    }
}

impl Link {
    fn new(
        conn: quinn::Connection,
        send: SendStream,
        recv: RecvStream,
        own: Role,
        peer: Role,
        options: &TransportOptions,
    ) -> Link {
        let source = match options.receive_delay {
            Some(delay) if !delay.is_zero() => Source::Delayed(delay_line(recv, delay)),
            _ => Source::Direct(recv),
        };
        Link {
            tx: LinkSender {
                conn: conn.clone(),
                stream: send,
                own,
                peer,
                counter: SeqCounter::new(),
                bytes: 0,
            },
            rx: LinkReceiver {
                conn,
                source,
                guard: SeqGuard::new(peer),
                bytes: 0,
            },
        }
    }

    /// The authenticated peer.
    pub fn peer(&self) -> Role {
        self.tx.peer
    }

    /// The peer's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.tx.conn.remote_address()
    }

    /// Sends `frame` (see [`LinkSender::send`]).
    pub async fn send(&mut self, frame: Frame) -> Result<(), TransportError> {
        self.tx.send(frame).await
    }

    /// Receives the next frame (see [`LinkReceiver::recv`]).
    pub async fn recv(&mut self) -> Result<Frame, TransportError> {
        self.rx.recv().await
    }

    /// The two halves, to send and receive from different tasks.
    pub fn split(self) -> (LinkSender, LinkReceiver) {
        (self.tx, self.rx)
    }

    /// Closes the connection with [`CLOSE_NORMAL`] and `reason` (frames not yet
    /// delivered to the peer may be lost: close after the protocol's last exchange).
    pub fn close(&self, reason: &str) {
        self.tx.close(reason);
    }
}

impl LinkSender {
    /// Stamps `frame` with the wire version, this endpoint's role as sender and the next
    /// sequence number, and writes it. Errors: [`TransportError::Encode`] (too large;
    /// nothing sent), [`TransportError::Closed`]. Cost: one encode, one stream write
    /// (waits for flow control).
    pub async fn send(&mut self, mut frame: Frame) -> Result<(), TransportError> {
        let addr = self.conn.remote_address();
        frame.version = WIRE_VERSION;
        frame.sender = self.own;
        let mut counter = self.counter.clone();
        counter.stamp(&mut frame);
        let bytes = encode(&frame).map_err(|source| TransportError::Encode {
            peer: self.peer,
            addr,
            source,
        })?;
        self.stream
            .write_all(&bytes)
            .await
            .map_err(|e| TransportError::Closed {
                peer: self.peer,
                addr,
                reason: e.to_string(),
            })?;
        self.counter = counter;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// The peer.
    pub fn peer(&self) -> Role {
        self.peer
    }

    /// Bytes sent on this link so far (frames with their prefixes).
    pub fn bytes_sent(&self) -> u64 {
        self.bytes
    }

    /// Closes the connection with [`CLOSE_NORMAL`] and `reason`.
    pub fn close(&self, reason: &str) {
        self.conn
            .close(VarInt::from_u32(CLOSE_NORMAL), reason.as_bytes());
    }
}

impl LinkReceiver {
    /// The next frame from the peer, after the length check, decoding and the
    /// [`SeqGuard`] (version, sender = authenticated peer, sequence = previous + 1). With a
    /// receive delay, not before arrival + delay. A bad frame closes the connection with
    /// [`CLOSE_BAD_FRAME`] and returns [`TransportError::BadFrame`] (also logged at
    /// `warn`); a closed or lost connection returns [`TransportError::Closed`].
    pub async fn recv(&mut self) -> Result<Frame, TransportError> {
        let addr = self.conn.remote_address();
        let peer = self.guard.peer();
        let raw = match &mut self.source {
            Source::Direct(stream) => read_raw(stream).await,
            Source::Delayed(queue) => match queue.recv().await {
                Some(raw) => raw,
                None => Err(RawError::Stream("delay line stopped".into())),
            },
        };
        let closed = |reason: String| TransportError::Closed { peer, addr, reason };
        let bytes = match raw {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(closed("the peer finished the link".into())),
            Err(RawError::Stream(reason)) => {
                return Err(closed(match self.conn.close_reason() {
                    Some(why) => why.to_string(),
                    None => reason,
                }))
            }
            Err(RawError::Frame(e)) => return Err(self.refuse(e)),
        };
        self.bytes += (LENGTH_PREFIX_BYTES + bytes.len()) as u64;
        let frame = decode(&bytes).map_err(|e| self.refuse(e))?;
        self.guard.check(&frame).map_err(|e| self.refuse(e))?;
        Ok(frame)
    }

    fn refuse(&self, source: FrameError) -> TransportError {
        let addr = self.conn.remote_address();
        let peer = self.guard.peer();
        tracing::warn!(%peer, %addr, reason = %source, "bad frame, closing the connection");
        self.conn.close(
            VarInt::from_u32(CLOSE_BAD_FRAME),
            source.to_string().as_bytes(),
        );
        TransportError::BadFrame { peer, addr, source }
    }

    /// The peer.
    pub fn peer(&self) -> Role {
        self.guard.peer()
    }

    /// Bytes received on this link so far (frames with their prefixes, as delivered).
    pub fn bytes_received(&self) -> u64 {
        self.bytes
    }
}

/// The delay line of one link: a task reads frames as they arrive and stamps them; an OS
/// thread releases each at arrival + `delay`, in order, into the returned queue.
///
/// Why a thread: tokio's timer has a 1 ms resolution, so a 0.5 ms sleep lasted 1 to 2 ms and
/// an emulated RTT of 1 ms measured the timer, not the protocol. A thread sleep is precise to
/// tens of microseconds. At most [`DELAY_QUEUE_FRAMES`] frames wait in each stage; beyond,
/// the reader stops and QUIC flow control holds the sender back. Both stop when the stream
/// ends or fails (that outcome is delivered last) or when the link is dropped.
fn delay_line(mut stream: RecvStream, delay: Duration) -> mpsc::Receiver<RawFrame> {
    const SPIN: Duration = Duration::from_micros(100);
    let (arrivals, mut pending) = mpsc::channel::<Arrival>(DELAY_QUEUE_FRAMES);
    let (release, queue) = mpsc::channel(DELAY_QUEUE_FRAMES);
    tokio::spawn(async move {
        loop {
            let raw = read_raw(&mut stream).await;
            let last = !matches!(raw, Ok(Some(_)));
            let arrival = Arrival {
                at: Instant::now(),
                raw,
            };
            if arrivals.send(arrival).await.is_err() || last {
                return;
            }
        }
    });
    let timer = std::thread::Builder::new()
        .name("vtwin-delay-line".into())
        .spawn(move || {
            while let Some(a) = pending.blocking_recv() {
                let due = a.at + delay;
                // Sleep to just before the deadline (a thread sleep overshoots by the timer
                // slack, about 50 us), then yield until it.
                let wait = due.saturating_duration_since(Instant::now());
                if wait > SPIN {
                    std::thread::sleep(wait - SPIN);
                }
                while Instant::now() < due {
                    std::thread::yield_now();
                }
                if release.blocking_send(a.raw).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = timer {
        // Without the thread the link cannot deliver; say so on the first receive.
        tracing::warn!("delay line thread: {e}");
    }
    queue
}
