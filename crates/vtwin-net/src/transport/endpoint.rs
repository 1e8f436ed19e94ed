//! The endpoint: binds, accepts links from the roles it serves (each handshake in its own
//! task) and connects to others with backoff ([`super`] for the handshake and hello).

use super::port_probe::port_closed;
use super::*;

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
    // Ask the peer (quinn, so it speaks the ACK-frequency extension) to acknowledge every
    // tenth packet, or after 1 ms: half as many ACK datagrams, each a syscall and a wakeup on
    // both sides (docs/network-results.md: the no-delay base across namespaces 3-6 ms lower).
    let mut ack = quinn::AckFrequencyConfig::default();
    ack.ack_eliciting_threshold(VarInt::from_u32(9))
        .max_ack_delay(Some(std::time::Duration::from_millis(1)));
    t.ack_frequency_config(Some(ack));
    t
}

fn peer_role_of(conn: &quinn::Connection) -> Result<Role, PeerCertificateError> {
    let identity = conn.peer_identity().ok_or(PeerCertificateError::Missing)?;
    let chain = identity
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| PeerCertificateError::IdentityType)?;
    let leaf = chain.first().ok_or(PeerCertificateError::EmptyChain)?;
    role_of_certificate(leaf).map_err(PeerCertificateError::NoRole)
}

/// Whether a connection failure means "nobody answered" (retry) rather than "refused".
fn is_transient(e: &ConnectionError) -> bool {
    matches!(
        e,
        ConnectionError::TimedOut | ConnectionError::Reset | ConnectionError::CidsExhausted
    )
}

enum Attempt {
    Retry(ConnectFailure),
    Fatal(ConnectFailure),
}

/// The UDP socket buffers asked of the kernel, each way. The kernel's default (about 208
/// KiB on Linux) is less than one MPC round's burst into a node (the other nodes' shares and
/// the parties' uploads arrive together): datagrams beyond it are dropped, and each drop
/// costs a loss-recovery wait of up to a probe timeout (tens of ms with QUIC's 25 ms ACK
/// delay). Linux caps the request at `net.core.rmem_max` / `wmem_max` (docs/deployment.md).
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// Below this effective receive buffer, [`Endpoint::bind`] warns that drops are likely.
const SOCKET_BUFFER_WARN: usize = 1 << 20;

/// A UDP socket bound to `addr` with [`SOCKET_BUFFER_BYTES`] asked for each way (granted
/// up to the kernel's caps; a refusal leaves the default and is only logged).
fn udp_socket(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if let Err(e) = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES) {
        tracing::warn!(%addr, error = %e, "cannot size the UDP receive buffer");
    }
    if let Err(e) = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES) {
        tracing::warn!(%addr, error = %e, "cannot size the UDP send buffer");
    }
    if let Ok(got) = socket.recv_buffer_size() {
        if got < SOCKET_BUFFER_WARN {
            tracing::warn!(%addr, bytes = got, "small UDP receive buffer: datagrams may be dropped in bursts (raise net.core.rmem_max, docs/deployment.md)");
        }
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

impl Endpoint {
    /// Binds `addr` (port 0: any free port) with `identity`. If `accept` is non-empty the
    /// endpoint listens and accepts clients whose certificate names a role one of these admits;
    /// otherwise it only connects. Must be called inside a tokio runtime (spawns the
    /// acceptor task).
    pub fn bind(
        addr: SocketAddr,
        identity: &Identity,
        accept: &[Accept],
        options: TransportOptions,
    ) -> Result<Endpoint, TransportError> {
        let client_crypto =
            QuicClientConfig::try_from(client_config(identity)?).map_err(TlsError::Quic)?;
        let mut client = quinn::ClientConfig::new(Arc::new(client_crypto));
        client.transport_config(Arc::new(transport_config(&options, false)));
        let server = if accept.is_empty() {
            None
        } else {
            let server_crypto = QuicServerConfig::try_from(server_config(identity, accept)?)
                .map_err(TlsError::Quic)?;
            let mut server = quinn::ServerConfig::with_crypto(Arc::new(server_crypto));
            server.transport_config(Arc::new(transport_config(&options, true)));
            Some(server)
        };
        // Keys derived from the identity: a restarted process's stateless resets are honoured
        // by its peers (crate::stateless_reset).
        let config = endpoint_config(identity);
        let bind = |source| TransportError::Bind { addr, source };
        let socket = udp_socket(addr).map_err(bind)?;
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
    /// `addr`, and are logged at `warn`. Beside each attempt but the last, a probe asks the
    /// peer's host whether the port is closed ([`port_closed`]); if it says so the attempt
    /// ends as [`ConnectFailure::PortClosed`] without waiting `attempt_timeout`, so a peer
    /// whose service is not running costs the delays between attempts and one full last
    /// attempt (about 26 s with the default schedule, up to ~31 s where the peer's host
    /// rate-limits its ICMP answers, not 71 s), and is reported as `PortClosed` if later
    /// attempts time out.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        expect: Role,
        backoff: Backoff,
    ) -> Result<Link, TransportError> {
        let attempts = backoff.attempts.max(1);
        let mut last = ConnectFailure::Timeout(backoff.attempt_timeout);
        let mut port_closed_seen = false;
        for n in 1..=attempts {
            let attempt =
                tokio::time::timeout(backoff.attempt_timeout, self.try_connect(addr, expect));
            // The last attempt is QUIC's alone: a refusal that only the probe sees (a forged
            // ICMP, a firewall rule on the probe's port) can shorten the wait, never decide it.
            let probe = port_closed(self.quinn.local_addr().ok(), addr);
            let outcome = tokio::select! {
                biased;
                done = attempt => Some(done),
                true = probe, if n < attempts => None,
            };
            let failure = match outcome {
                None => ConnectFailure::PortClosed,
                Some(Ok(Ok(link))) => return Ok(link),
                Some(Ok(Err(Attempt::Fatal(reason)))) => {
                    let why = vtwin_host::error_chain::chain(&reason);
                    tracing::warn!(peer = %expect, %addr, reason = %why, "connection refused");
                    return Err(TransportError::Refused {
                        peer: expect,
                        addr,
                        reason: Box::new(reason),
                    });
                }
                Some(Ok(Err(Attempt::Retry(reason)))) => reason,
                Some(Err(_)) => ConnectFailure::Timeout(backoff.attempt_timeout),
            };
            // Time-outs after port-unreachable answers (the probe-less last attempt, a probe
            // lost or rate-limited): the answers say more about the peer than the silence.
            port_closed_seen |= matches!(failure, ConnectFailure::PortClosed);
            last = match failure {
                ConnectFailure::Timeout(_) if port_closed_seen => ConnectFailure::PortClosed,
                f => f,
            };
            if n < attempts {
                let delay = backoff.delay(n);
                tracing::info!(peer = %expect, %addr, attempt = n, reason = %vtwin_host::error_chain::chain(&last), ?delay, "peer not reachable yet, retrying");
                tokio::time::sleep(delay).await;
            }
        }
        tracing::warn!(peer = %expect, %addr, attempts, reason = %vtwin_host::error_chain::chain(&last), "peer unreachable");
        Err(TransportError::Unreachable {
            peer: expect,
            addr,
            attempts,
            last: Box::new(last),
        })
    }

    async fn try_connect(&self, addr: SocketAddr, expect: Role) -> Result<Link, Attempt> {
        let connecting = self
            .quinn
            .connect_with(self.client.clone(), addr, &expect.dns_name())
            .map_err(|e| Attempt::Fatal(ConnectFailure::Start(e)))?;
        let classify = |wrap: fn(ConnectionError) -> ConnectFailure| {
            move |e: ConnectionError| {
                if is_transient(&e) {
                    Attempt::Retry(wrap(e))
                } else {
                    Attempt::Fatal(wrap(e))
                }
            }
        };
        let conn = connecting
            .await
            .map_err(classify(ConnectFailure::Handshake))?;
        let role =
            peer_role_of(&conn).map_err(|e| Attempt::Fatal(ConnectFailure::PeerCertificate(e)))?;
        if role != expect {
            // Unreachable with the CA's certificates (the server name is checked), kept as
            // defence in depth.
            conn.close(VarInt::from_u32(CLOSE_BAD_HELLO), b"unexpected role");
            return Err(Attempt::Fatal(ConnectFailure::WrongPeer {
                found: role,
                expected: expect,
            }));
        }
        let (mut send, mut recv) = conn
            .open_bi()
            .await
            .map_err(classify(ConnectFailure::Stream))?;
        send.write_all(&own_hello(&self.options))
            .await
            .map_err(|e| Attempt::Fatal(ConnectFailure::SendHello(e)))?;
        let mut answer = [0u8; HELLO.len()];
        match recv.read_exact(&mut answer).await {
            Ok(()) => {
                if let Err((code, reason)) = check_hello(&answer, role, &self.options) {
                    conn.close(VarInt::from_u32(code), close_reason(code));
                    return Err(Attempt::Fatal(ConnectFailure::Hello(reason)));
                }
            }
            Err(quinn::ReadExactError::ReadError(quinn::ReadError::ConnectionLost(e))) => {
                return Err(classify(ConnectFailure::Handshake)(e))
            }
            Err(e) => return Err(Attempt::Fatal(ConnectFailure::ReadHello(e))),
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
                Err((peer, reason)) => {
                    refusals.fetch_add(1, Ordering::Relaxed);
                    let peer = peer.map(|p| p.to_string()).unwrap_or_default();
                    let reason = vtwin_host::error_chain::chain(&reason);
                    tracing::warn!(%addr, %peer, %reason, "incoming connection refused");
                }
            }
        });
    }
}

/// Accepts one connection: the link, or the peer's role (once known) and why it was refused.
async fn accept_one(
    incoming: quinn::Incoming,
    own: Role,
    options: &TransportOptions,
) -> Result<Link, (Option<Role>, ConnectFailure)> {
    let conn = incoming
        .await
        .map_err(|e| (None, ConnectFailure::Handshake(e)))?;
    let peer = peer_role_of(&conn).map_err(|e| (None, ConnectFailure::PeerCertificate(e)))?;
    let hello = async {
        let (send, mut recv) = conn
            .accept_bi()
            .await
            .map_err(|e| (CLOSE_BAD_HELLO, ConnectFailure::Stream(e)))?;
        let mut got = [0u8; HELLO.len()];
        recv.read_exact(&mut got)
            .await
            .map_err(|e| (CLOSE_BAD_HELLO, ConnectFailure::ReadHello(e)))?;
        check_hello(&got, peer, options).map_err(|(code, r)| (code, ConnectFailure::Hello(r)))?;
        Ok((send, recv))
    };
    let (mut send, recv) = match tokio::time::timeout(options.hello_timeout, hello).await {
        Ok(Ok(streams)) => streams,
        Ok(Err((code, reason))) => {
            conn.close(VarInt::from_u32(code), close_reason(code));
            return Err((Some(peer), reason));
        }
        Err(_) => {
            conn.close(VarInt::from_u32(CLOSE_BAD_HELLO), b"no hello");
            return Err((Some(peer), ConnectFailure::NoHello(options.hello_timeout)));
        }
    };
    send.write_all(&own_hello(options))
        .await
        .map_err(|e| (Some(peer), ConnectFailure::SendHello(e)))?;
    Ok(Link::new(conn, send, recv, own, peer, options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_get_the_largest_buffers_the_kernel_allows() {
        // Linux grants min(request, rmem_max) and reports twice that; without the request
        // the socket keeps rmem_default (about 208 KiB).
        let cap = |name: &str| -> usize {
            std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        let socket = udp_socket("127.0.0.1:0".parse().unwrap()).unwrap();
        let socket = socket2::SockRef::from(&socket);
        let recv = socket.recv_buffer_size().unwrap();
        let send = socket.send_buffer_size().unwrap();
        assert!(recv >= SOCKET_BUFFER_BYTES.min(cap("rmem_max")), "{recv}");
        assert!(send >= SOCKET_BUFFER_BYTES.min(cap("wmem_max")), "{send}");
    }
}
