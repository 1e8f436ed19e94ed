//! Links over loopback QUIC: mutual TLS, refusals (other CA, wrong role, role not
//! accepted), retries against a closed port, bad frames, and the receive delay line.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use vtwin_host::error_chain::chain;

use vtwin_net::frame::{encode, Body, Frame, FrameError, MAX_FRAME_BYTES, WIRE_VERSION};
use vtwin_net::pki::{Ca, Identity};
use vtwin_net::tls::client_config;
use vtwin_net::transport::{ConnectFailure, LinkClosed, CLOSE_BAD_FRAME, HELLO};
use vtwin_net::{Accept, Backoff, Endpoint, Role, TransportError, TransportOptions};

fn identity(ca: &Ca, trusted: &Ca, role: Role) -> Identity {
    let issued = ca.issue(role).unwrap();
    Identity::from_pem(
        ["ca", "cert", "key"],
        trusted.cert_pem().as_bytes(),
        issued.cert_pem.as_bytes(),
        issued.key_pem.as_bytes(),
    )
    .unwrap()
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn bind(ca: &Ca, role: Role, accept: &[Role], options: TransportOptions) -> Endpoint {
    let accept: Vec<Accept> = accept.iter().map(|&r| r.into()).collect();
    Endpoint::bind(loopback(), &identity(ca, ca, role), &accept, options).unwrap()
}

/// Node 0 accepting the coordinator, with default options, and its address.
fn node_serving_the_coordinator(ca: &Ca) -> (Endpoint, SocketAddr) {
    let node = bind(
        ca,
        Role::Node(0),
        &[Role::Coordinator],
        TransportOptions::default(),
    );
    let addr = node.local_addr().unwrap();
    (node, addr)
}

fn quick() -> Backoff {
    Backoff {
        attempts: 3,
        initial: Duration::from_millis(50),
        max: Duration::from_millis(100),
        attempt_timeout: Duration::from_millis(300),
    }
}

fn frame(step: u64, body: Body) -> Frame {
    // Sender and seq are stamped by the link; give wrong ones to show it.
    let mut f = Frame::new([9; 16], 4, step, Role::Party(999), body);
    f.seq = 77;
    f
}

/// Captures `warn` and above from this thread (tests run on a current-thread runtime, so
/// spawned tasks log here too).
fn capture_logs() -> (Arc<Mutex<Vec<u8>>>, tracing::subscriber::DefaultGuard) {
    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Arc::new(Mutex::new(Vec::new()));
    let sink = Sink(buf.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    (buf, tracing::subscriber::set_default(subscriber))
}

fn logs(buf: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8_lossy(&buf.lock().unwrap()).into_owned()
}

#[tokio::test]
async fn mutual_tls_link_carries_frames_both_ways() {
    let ca = Ca::generate().unwrap();
    let node = bind(
        &ca,
        Role::Node(1),
        &[Role::Coordinator],
        TransportOptions::default(),
    );
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let addr = node.local_addr().unwrap();
    let (connected, accepted) =
        tokio::join!(coord.connect(addr, Role::Node(1), quick()), node.accept());
    let (mut c, mut n) = (connected.unwrap(), accepted.unwrap());
    assert_eq!(c.peer(), Role::Node(1));
    assert_eq!(n.peer(), Role::Coordinator);
    for step in 0..3 {
        c.send(frame(step, Body::Hello)).await.unwrap();
    }
    for step in 0..3 {
        let f = n.recv().await.unwrap();
        assert_eq!(
            (f.seq, f.step, f.sender, f.version),
            (step, step, Role::Coordinator, WIRE_VERSION)
        );
        assert_eq!(f.body, Body::Hello);
    }
    let message = vec![0xab; 3 << 20];
    n.send(frame(
        5,
        Body::Mpc {
            message: message.clone(),
        },
    ))
    .await
    .unwrap();
    let back = c.recv().await.unwrap();
    assert_eq!((back.seq, back.sender), (0, Role::Node(1)));
    assert_eq!(back.body, Body::Mpc { message });
    // Split halves work from different tasks.
    let (mut tx, mut rx) = n.split();
    let echo = tokio::spawn(async move {
        let f = rx.recv().await.unwrap();
        tx.send(f).await.unwrap();
        (tx, rx)
    });
    c.send(frame(6, Body::Abort { reason: "x".into() }))
        .await
        .unwrap();
    let f = c.recv().await.unwrap();
    assert_eq!((f.seq, f.step, f.sender), (1, 6, Role::Node(1)));
    let (tx, rx) = echo.await.unwrap();
    assert!(tx.bytes_sent() > 3 << 20 && rx.bytes_received() > 0);
}

#[tokio::test]
async fn client_certificate_from_another_ca_refused_and_logged() {
    let (logs_buf, _guard) = capture_logs();
    let ca = Ca::generate().unwrap();
    let rogue = Ca::generate().unwrap();
    let (node, addr) = node_serving_the_coordinator(&ca);
    // Trusts the right CA, but its own certificate comes from the rogue CA (vtwin's
    // Identity refuses such a pair, so the intruder builds its rustls config by hand).
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let forged = rogue.issue(Role::Coordinator).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap())
        .unwrap();
    let mut tls = rustls::ClientConfig::builder_with_provider(vtwin_net::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(
            vec![CertificateDer::from_pem_slice(forged.cert_pem.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(forged.key_pem.as_bytes()).unwrap(),
        )
        .unwrap();
    tls.alpn_protocols = vec![vtwin_net::tls::ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut intruder = quinn::Endpoint::client(loopback()).unwrap();
    intruder.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let attempt = async {
        let conn = intruder
            .connect(addr, &Role::Node(0).dns_name())
            .unwrap()
            .await?;
        let (mut send, mut recv) = conn.open_bi().await?;
        send.write_all(&HELLO)
            .await
            .map_err(|e| e.to_string())
            .unwrap();
        let mut answer = [0u8; 8];
        match recv.read_exact(&mut answer).await {
            Ok(()) => panic!("the intruder got a hello answer"),
            Err(quinn::ReadExactError::ReadError(quinn::ReadError::ConnectionLost(e))) => {
                Err::<(), quinn::ConnectionError>(e)
            }
            Err(e) => panic!("{e}"),
        }
    };
    let err: quinn::ConnectionError = attempt.await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("UnknownIssuer"), "{text}");
    // The endpoint still accepts an honest coordinator.
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let (ok, accepted) = tokio::join!(coord.connect(addr, Role::Node(0), quick()), node.accept());
    ok.unwrap();
    assert_eq!(accepted.unwrap().peer(), Role::Coordinator);
    assert_eq!(node.refusals(), 1);
    let log = logs(&logs_buf);
    let intruder_addr = intruder.local_addr().unwrap().to_string();
    assert!(
        log.contains("incoming connection refused") && log.contains(&intruder_addr),
        "{log}"
    );
    assert!(log.to_lowercase().contains("certificate"), "{log}");
    eprintln!("client error: {text}\nserver log: {log}");
}

#[tokio::test]
async fn server_with_the_wrong_role_refused() {
    let (logs_buf, _guard) = capture_logs();
    let ca = Ca::generate().unwrap();
    let node2 = bind(
        &ca,
        Role::Node(2),
        &[Role::Coordinator],
        TransportOptions::default(),
    );
    let addr = node2.local_addr().unwrap();
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let started = Instant::now();
    let err = coord
        .connect(addr, Role::Node(1), quick())
        .await
        .unwrap_err();
    // Refused at once, not retried.
    assert!(started.elapsed() < Duration::from_millis(250));
    assert!(
        matches!(
            err,
            TransportError::Refused {
                peer: Role::Node(1),
                ..
            }
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("node 1") && text.contains(&addr.to_string()),
        "{text}"
    );
    let log = logs(&logs_buf);
    assert!(
        log.contains("connection refused") && log.contains(&addr.to_string()),
        "{log}"
    );
    eprintln!("{log}");
}

#[tokio::test]
async fn client_with_a_role_not_accepted_refused() {
    let ca = Ca::generate().unwrap();
    // A party accepts the coordinator only.
    let party = bind(
        &ca,
        Role::Party(0),
        &[Role::Coordinator],
        TransportOptions::default(),
    );
    let addr = party.local_addr().unwrap();
    for role in [Role::Node(0), Role::Party(1)] {
        let other = bind(&ca, role, &[], TransportOptions::default());
        let err = other
            .connect(addr, Role::Party(0), quick())
            .await
            .unwrap_err();
        assert!(
            matches!(err, TransportError::Refused { .. }),
            "{role}: {err}"
        );
        eprintln!("{role}: {err}");
    }
    assert_eq!(party.refusals(), 2);
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let (ok, accepted) = tokio::join!(coord.connect(addr, Role::Party(0), quick()), party.accept());
    assert_eq!(ok.unwrap().peer(), Role::Party(0));
    assert_eq!(accepted.unwrap().peer(), Role::Coordinator);
}

#[tokio::test]
async fn a_node_accepting_any_party_admits_parties_only() {
    let ca = Ca::generate().unwrap();
    // A node takes the parties' uploads (and the coordinator) whatever a job's P.
    let node = Endpoint::bind(
        loopback(),
        &identity(&ca, &ca, Role::Node(2)),
        &[Role::Coordinator.into(), Accept::AnyParty],
        TransportOptions::default(),
    )
    .unwrap();
    let addr = node.local_addr().unwrap();
    for p in [0, 7, u16::MAX] {
        let party = bind(&ca, Role::Party(p), &[], TransportOptions::default());
        let (ok, accepted) =
            tokio::join!(party.connect(addr, Role::Node(2), quick()), node.accept());
        assert_eq!(ok.unwrap().peer(), Role::Node(2));
        assert_eq!(accepted.unwrap().peer(), Role::Party(p));
    }
    let other = bind(&ca, Role::Node(1), &[], TransportOptions::default());
    let err = other
        .connect(addr, Role::Node(2), quick())
        .await
        .unwrap_err();
    assert!(matches!(err, TransportError::Refused { .. }), "{err}");
    assert_eq!(node.refusals(), 1);
}

/// A coordinator's failed connection to node 1 at `addr`: the error and how long it took.
async fn failed_connect(addr: SocketAddr, backoff: Backoff) -> (TransportError, Duration) {
    let ca = Ca::generate().unwrap();
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let started = Instant::now();
    let err = coord
        .connect(addr, Role::Node(1), backoff)
        .await
        .unwrap_err();
    (err, started.elapsed())
}

#[tokio::test]
async fn closed_port_retried_with_backoff_then_named() {
    // A port freed on 127.0.0.2, where no other test binds, so it stays closed.
    let addr = {
        let socket = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
        socket.local_addr().unwrap()
    };
    let backoff = quick();
    let (err, elapsed) = failed_connect(addr, backoff).await;
    match &err {
        TransportError::Unreachable {
            peer,
            addr: a,
            attempts,
            last,
        } => {
            assert_eq!((*peer, *a, *attempts), (Role::Node(1), addr, 3));
            // The host (loopback: no per-destination ICMP rate limit) says the port is closed.
            assert!(matches!(**last, ConnectFailure::PortClosed), "{last:?}");
        }
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("node 1") && text.contains(&addr.to_string()) && text.contains("port"),
        "{text}"
    );
    // The delays 50 + 100 ms between the three attempts and the last attempt's 300 ms (QUIC
    // alone), but not the first two attempts' time limits: the probe ended them.
    let least = backoff.delay(1) + backoff.delay(2) + backoff.attempt_timeout;
    assert!(elapsed >= least, "{elapsed:?} < {least:?}");
    assert!(elapsed < least + backoff.attempt_timeout, "{elapsed:?}");
    eprintln!("{err} after {elapsed:?}");
    assert_eq!(backoff.delay(1), Duration::from_millis(50));
    assert_eq!(backoff.delay(2), Duration::from_millis(100));
    assert_eq!(backoff.delay(3), Duration::from_millis(100));
}

#[tokio::test]
async fn silent_peer_costs_every_attempt_timeout() {
    // Something holds the port and never answers (a firewall dropping the packets looks the
    // same): the probe learns nothing, each QUIC attempt waits its full time limit.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let backoff = quick();
    let (err, elapsed) = failed_connect(addr, backoff).await;
    match &err {
        TransportError::Unreachable { attempts, last, .. } => {
            assert_eq!(*attempts, 3);
            assert!(matches!(**last, ConnectFailure::Timeout(_)), "{last:?}");
        }
        other => panic!("{other}"),
    }
    let least = 3 * backoff.attempt_timeout + backoff.delay(1) + backoff.delay(2);
    assert!(elapsed >= least, "{elapsed:?} < {least:?}");
    // The probes' one-byte datagrams (beside every attempt but the last) reached the socket
    // (a QUIC endpoint drops them).
    silent.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    let mut one_byte = 0;
    while let Ok(n) = silent.recv(&mut buf) {
        one_byte += usize::from(n == 1);
    }
    assert_eq!(one_byte, 2);
    drop(silent);
}

#[tokio::test]
async fn late_server_reached_by_retrying() {
    let ca = Ca::generate().unwrap();
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    // A port freed on 127.0.0.3, where no other socket binds while it waits to be reused.
    let addr = {
        let socket = std::net::UdpSocket::bind("127.0.0.3:0").unwrap();
        socket.local_addr().unwrap()
    };
    let id = identity(&ca, &ca, Role::Node(0));
    let server = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let node = Endpoint::bind(
            addr,
            &id,
            &[Role::Coordinator.into()],
            TransportOptions::default(),
        )
        .unwrap();
        let link = node.accept().await.unwrap();
        (node, link)
    });
    // Probes end the attempts before the bind at once; 12 attempts (every 100 ms) leave
    // several probed ones after it.
    let backoff = Backoff {
        attempts: 12,
        ..quick()
    };
    let link = coord.connect(addr, Role::Node(0), backoff).await.unwrap();
    assert_eq!(link.peer(), Role::Node(0));
    let (_node, accepted) = server.await.unwrap();
    assert_eq!(accepted.peer(), Role::Coordinator);
}

/// A raw client speaking QUIC + TLS + hello correctly, then writing arbitrary bytes.
async fn raw_client(
    ca: &Ca,
    addr: SocketAddr,
) -> (quinn::Endpoint, quinn::Connection, quinn::SendStream) {
    let id = identity(ca, ca, Role::Coordinator);
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(client_config(&id).unwrap()).unwrap();
    let mut ep = quinn::Endpoint::client(loopback()).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep
        .connect(addr, &Role::Node(0).dns_name())
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&HELLO).await.unwrap();
    let mut answer = [0u8; 8];
    recv.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer, HELLO);
    (ep, conn, send)
}

#[tokio::test]
async fn bad_frames_close_that_connection_and_the_endpoint_keeps_serving() {
    let (logs_buf, _guard) = capture_logs();
    let ca = Ca::generate().unwrap();
    let (node, addr) = node_serving_the_coordinator(&ca);

    let good = |seq: u64, sender: Role| {
        let mut f = Frame::new([1; 16], 0, 0, sender, Body::Hello);
        f.seq = seq;
        encode(&f).unwrap()
    };
    let mut oversized = ((MAX_FRAME_BYTES + 1) as u32).to_le_bytes().to_vec();
    oversized.extend_from_slice(&[0; 16]);
    let mut garbage = 10u32.to_le_bytes().to_vec();
    garbage.extend_from_slice(&[
        WIRE_VERSION,
        0xff,
        0xff,
        0xff,
        0xff,
        0xff,
        0xff,
        0xff,
        0xff,
        0xff,
    ]);
    let replay = [good(0, Role::Coordinator), good(0, Role::Coordinator)].concat();
    let forged = good(0, Role::Node(2));
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("oversized", oversized, 0),
        ("garbage", garbage, 0),
        ("replay", replay, 1),
        ("forged sender", forged, 0),
    ];
    for (name, bytes, good_before) in cases {
        let (_ep, conn, mut send) = raw_client(&ca, addr).await;
        let mut link = node.accept().await.unwrap();
        send.write_all(&bytes).await.unwrap();
        for _ in 0..good_before {
            link.recv().await.unwrap();
        }
        let err = link.recv().await.unwrap_err();
        let TransportError::BadFrame { peer, source, .. } = &err else {
            panic!("{name}: {err}")
        };
        assert_eq!(*peer, Role::Coordinator, "{name}");
        match name {
            "oversized" => assert!(matches!(source, FrameError::TooLarge { .. })),
            "garbage" => assert!(matches!(source, FrameError::Malformed { .. })),
            "replay" => assert!(matches!(
                source,
                FrameError::Sequence {
                    expected: 1,
                    got: 0,
                    ..
                }
            )),
            _ => assert!(matches!(source, FrameError::Sender { .. })),
        }
        // The client sees the connection closed with the bad-frame code.
        match conn.closed().await {
            quinn::ConnectionError::ApplicationClosed(c) => {
                assert_eq!(
                    c.error_code,
                    quinn::VarInt::from_u32(CLOSE_BAD_FRAME),
                    "{name}"
                )
            }
            other => panic!("{name}: {other}"),
        }
    }
    // Still serving.
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let (c, n) = tokio::join!(coord.connect(addr, Role::Node(0), quick()), node.accept());
    let (mut c, mut n) = (c.unwrap(), n.unwrap());
    c.send(frame(1, Body::Hello)).await.unwrap();
    assert_eq!(n.recv().await.unwrap().body, Body::Hello);
    let log = logs(&logs_buf);
    assert_eq!(
        log.matches("bad frame, closing the connection").count(),
        4,
        "{log}"
    );
    eprintln!("{log}");
}

/// A stream that ends inside a frame's body (here 10 of 1000 announced bytes, the body read
/// in chunks) is a closed link naming the peer, the announced length and how far it got.
#[tokio::test]
async fn a_stream_ending_inside_a_frame_body_is_named() {
    let ca = Ca::generate().unwrap();
    let (node, addr) = node_serving_the_coordinator(&ca);
    let (_ep, _conn, mut send) = raw_client(&ca, addr).await;
    let mut link = node.accept().await.unwrap();
    let mut bytes = 1000u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&[7; 10]);
    send.write_all(&bytes).await.unwrap();
    send.finish().unwrap();
    let err = link.recv().await.unwrap_err();
    let TransportError::Closed { peer, reason, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*peer, Role::Coordinator);
    assert!(
        matches!(
            reason.as_ref(),
            LinkClosed::ReadBody {
                len: 1000,
                source: quinn::ReadExactError::FinishedEarly(10)
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("1000 bytes"), "{err}");
}

#[tokio::test]
async fn receive_delay_is_applied_pipelined_and_in_order() {
    let delay = Duration::from_millis(100);
    let ca = Ca::generate().unwrap();
    let options = TransportOptions {
        receive_delay: Some(delay),
        ..TransportOptions::default()
    };
    let node = bind(&ca, Role::Node(1), &[Role::Coordinator], options);
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let addr = node.local_addr().unwrap();
    let (c, n) = tokio::join!(coord.connect(addr, Role::Node(1), quick()), node.accept());
    let (mut c, mut n) = (c.unwrap(), n.unwrap());
    const FRAMES: u64 = 20;
    let sent_at = Instant::now();
    for step in 0..FRAMES {
        c.send(frame(
            step,
            Body::Mpc {
                message: vec![step as u8; 1000],
            },
        ))
        .await
        .unwrap();
    }
    let mut times = Vec::new();
    for step in 0..FRAMES {
        let f = n.recv().await.unwrap();
        times.push(sent_at.elapsed());
        assert_eq!((f.seq, f.step), (step, step));
    }
    // Every frame waited at least the delay; all of them together took about one delay,
    // not FRAMES delays (pipelined).
    assert!(times[0] >= delay, "{times:?}");
    assert!(times[FRAMES as usize - 1] < 3 * delay, "{times:?}");
    // Without the delay on the other direction, an answer comes back quickly.
    let before = Instant::now();
    n.send(frame(0, Body::Hello)).await.unwrap();
    c.recv().await.unwrap();
    assert!(before.elapsed() < delay, "{:?}", before.elapsed());
}

#[tokio::test]
async fn a_dropped_endpoint_releases_its_address() {
    let ca = Ca::generate().unwrap();
    let id = identity(&ca, &ca, Role::Node(0));
    let node = Endpoint::bind(
        loopback(),
        &id,
        &[Role::Coordinator.into()],
        TransportOptions::default(),
    )
    .unwrap();
    let addr = node.local_addr().unwrap();
    drop(node);
    // Give the acceptor task a turn to stop and the driver to release the socket.
    let mut rebound = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(e) = Endpoint::bind(
            addr,
            &id,
            &[Role::Coordinator.into()],
            TransportOptions::default(),
        ) {
            rebound = Some(e);
            break;
        }
    }
    let node = rebound.expect("address released after drop");
    let coord = bind(&ca, Role::Coordinator, &[], TransportOptions::default());
    let (c, n) = tokio::join!(coord.connect(addr, Role::Node(0), quick()), node.accept());
    assert_eq!(c.unwrap().peer(), Role::Node(0));
    assert_eq!(n.unwrap().peer(), Role::Coordinator);
}

/// Insecure mode is announced in the hello: a secure side refuses an insecure peer in either
/// direction (and logs it), two insecure sides link up (and log it).
#[tokio::test]
async fn an_insecure_peer_is_announced_and_refused_by_a_secure_one() {
    let (logs_buf, _guard) = capture_logs();
    let ca = Ca::generate().unwrap();
    let insecure = || TransportOptions {
        insecure: true,
        ..TransportOptions::default()
    };
    for (server_insecure, client_insecure) in [(false, true), (true, false), (true, true)] {
        let options = |i: bool| {
            if i {
                insecure()
            } else {
                TransportOptions::default()
            }
        };
        let node = bind(
            &ca,
            Role::Node(0),
            &[Role::Coordinator],
            options(server_insecure),
        );
        let addr = node.local_addr().unwrap();
        let coord = bind(&ca, Role::Coordinator, &[], options(client_insecure));
        let connected = coord.connect(addr, Role::Node(0), quick()).await;
        if server_insecure && client_insecure {
            let link = connected.expect("both insecure: linked");
            let _accepted = node.accept().await.unwrap();
            drop(link);
        } else {
            let err = connected.unwrap_err();
            assert!(
                matches!(err, TransportError::Refused { .. }),
                "server insecure {server_insecure}: {err}"
            );
            let text = chain(&err);
            assert!(text.contains("insecure"), "{text}");
        }
    }
    let log = logs(&logs_buf);
    assert!(log.contains("INSECURE seeds"), "{log}");
    assert!(log.contains("refused, this process is secure"), "{log}");
    assert!(
        log.contains("as this process does"),
        "both-insecure link logged: {log}"
    );
}
