//! Faults of the consortium processes on loopback, each with a clear error and nothing lost:
//! an unreachable peer at start (named, retried with backoff up to a limit; a late peer is
//! reached by retrying), a certificate from another CA or for the wrong role (refused and
//! logged), malformed and oversized frames (that connection closed, the node keeps serving,
//! and a normal run then succeeds against the same processes), a restarted node (its peers'
//! stale links end by stateless reset within a keep-alive, not the idle timeout).

mod consortium_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use consortium_support::{coordinate, keygen, wait_until, Job, Kids};
use vtwin_consortium::config::{self, CoordinatorConfig, NodeConfig};
use vtwin_net::tls::client_config;
use vtwin_net::transport::{Backoff, Endpoint, TransportError, TransportOptions, HELLO_INSECURE};
use vtwin_net::Role;

fn small() -> Job {
    Job {
        iters: 2,
        ..Job::default()
    }
}

#[test]
fn an_unreachable_peer_is_named_after_the_retries_and_a_late_one_is_reached() {
    let tmp = tempfile::tempdir().unwrap();
    let c = keygen(&tmp.path().join("keys"), &small(), 0);
    let mut kids = Kids::default();
    c.spawn(&mut kids, "node", "node-0", &c.nodes[0]);
    c.spawn(&mut kids, "node", "node-1", &c.nodes[1]);
    for (p, f) in c.parties.iter().enumerate() {
        c.spawn(&mut kids, "party", &format!("party-{p}"), f);
    }
    let node2 = NodeConfig::load(&c.nodes[2]).unwrap().listen;
    let cfg = c.coordinator_config("coordinator-3.toml", &tmp.path().join("a"), |c| {
        c.timeouts.connect_attempts = 3;
        c.timeouts.connect_initial_delay_ms = 50;
        c.timeouts.connect_max_delay_ms = 100;
        c.timeouts.connect_attempt_ms = 500;
    });
    let (status, stderr, _) = coordinate(&cfg, &[]);
    assert!(!status.success());
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("node 2 at {node2} unreachable after 3 attempts")),
        "{last}"
    );
    // Not running at all: its host (loopback) says so, and the message tells the operator.
    assert!(last.contains("port unreachable"), "{last}");
    assert!(stderr.contains("retrying"), "no retry logged: {stderr}");
    // Node 2 starts late: the coordinator (16 attempts, 50 ms doubling) reaches it.
    let cfg = c.coordinator_config("coordinator-late.toml", &tmp.path().join("b"), |_| {});
    let late = std::thread::spawn(move || coordinate(&cfg, &[]));
    std::thread::sleep(Duration::from_millis(400));
    c.spawn(&mut kids, "node", "node-2", &c.nodes[2]);
    let (status, stderr, _) = late.join().unwrap();
    assert!(status.success(), "{stderr}");
}

#[test]
fn a_certificate_from_another_ca_or_for_the_wrong_role_is_refused_and_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let c = keygen(&tmp.path().join("keys"), &small(), 0);
    let other = keygen(&tmp.path().join("other"), &small(), 0);
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    // The coordinator presents a certificate of another consortium's CA.
    let foreign = CoordinatorConfig::load(&other.coordinator).unwrap().tls;
    let cfg = c.coordinator_config("coordinator-foreign.toml", &tmp.path().join("a"), |c| {
        c.tls = foreign;
    });
    let (status, stderr, _) = coordinate(&cfg, &[]);
    assert!(!status.success());
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("refused"), "{last}");
    // Node 2's certificate (right CA, wrong role) connecting to node 0, which accepts the
    // coordinator and the parties only (node 0 dials the others).
    let node2_tls = NodeConfig::load(&c.nodes[2]).unwrap().tls;
    let node0 = NodeConfig::load(&c.nodes[0]).unwrap().listen;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let refused = rt.block_on(async {
        let id = node2_tls.load().unwrap();
        // Insecure like the test consortium, so only the role is wrong.
        let ep = Endpoint::bind(
            "127.0.0.1:0".parse().unwrap(),
            &id,
            &[],
            TransportOptions {
                insecure: true,
                ..TransportOptions::default()
            },
        )
        .unwrap();
        let quick = Backoff {
            attempts: 2,
            initial: Duration::from_millis(20),
            max: Duration::from_millis(20),
            attempt_timeout: Duration::from_secs(2),
        };
        ep.connect(node0, Role::Node(0), quick).await
    });
    assert!(
        matches!(refused, Err(TransportError::Refused { .. })),
        "{refused:?}"
    );
    // Both refusals are in the nodes' logs; the nodes keep serving a normal run.
    std::thread::sleep(Duration::from_millis(200));
    let logs: String = (0..3).map(|i| c.log(&format!("node-{i}"))).collect();
    assert!(
        logs.matches("incoming connection refused").count() >= 2,
        "{logs}"
    );
    let cfg = c.coordinator_config("coordinator-ok.toml", &tmp.path().join("b"), |_| {});
    let (status, stderr, _) = coordinate(&cfg, &[]);
    assert!(status.success(), "{stderr}");
}

/// A QUIC + TLS client with the coordinator's certificate that speaks the (insecure) stream
/// hello and
/// then writes `bytes`; returns once the node closed the connection (or after 5 s).
async fn raw(coordinator: &CoordinatorConfig, node: SocketAddr, bytes: &[u8]) -> String {
    let id = coordinator.tls.load().unwrap();
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(client_config(&id).unwrap()).unwrap();
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep
        .connect(node, &Role::Node(0).dns_name())
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    // The test consortium runs with insecure seeds: say so, and hear it said.
    send.write_all(&HELLO_INSECURE).await.unwrap();
    let mut answer = [0u8; 8];
    recv.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer, HELLO_INSECURE);
    send.write_all(bytes).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    format!("{closed:?}")
}

#[test]
fn malformed_and_oversized_frames_close_that_link_and_the_node_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let c = keygen(&tmp.path().join("keys"), &small(), 0);
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    let coordinator = CoordinatorConfig::load(&c.coordinator).unwrap();
    let node0 = NodeConfig::load(&c.nodes[0]).unwrap().listen;
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A frame whose body is garbage, then a length prefix over the 64 MiB limit.
    let mut garbage = 16u32.to_le_bytes().to_vec();
    garbage.extend([0xff; 16]);
    let oversized = u32::MAX.to_le_bytes().to_vec();
    for bytes in [garbage, oversized] {
        let closed = rt.block_on(raw(&coordinator, node0, &bytes));
        assert!(closed.contains("ApplicationClosed"), "{closed}");
    }
    std::thread::sleep(Duration::from_millis(200));
    let log = c.log("node-0");
    assert!(log.matches("bad frame").count() >= 2, "{log}");
    // The same node processes then serve a normal run.
    let cfg = c.coordinator_config("coordinator-ok.toml", &tmp.path().join("b"), |_| {});
    let (status, stderr, _) = coordinate(&cfg, &[]);
    assert!(status.success(), "{stderr}");
}

/// A restarted node derives the same QUIC reset keys from its TLS key, so its peers' stale
/// links end by stateless reset at their next keep-alive (at most 2 s) and are redialled,
/// although the idle timeout is the default 60 s; then a job runs on the same processes.
#[test]
fn a_restarted_node_is_reset_and_redialled_long_before_the_idle_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let c = keygen(&tmp.path().join("keys"), &small(), 0);
    for f in &c.nodes {
        let mut n = NodeConfig::load(f).unwrap();
        n.timeouts.idle_ms = 60_000;
        config::write(f, &n).unwrap();
    }
    let mut kids = Kids::default();
    c.start_all(&mut kids);
    let cfg = c.coordinator_config("coordinator-a.toml", &tmp.path().join("a"), |_| {});
    let (status, stderr, _) = coordinate(&cfg, &[]);
    assert!(status.success(), "first job: {stderr}");
    let links = |name: &str, what: &str| -> Vec<String> {
        c.log(name)
            .lines()
            .filter(|l| l.contains(what) && l.contains("peer=node 1"))
            .map(str::to_owned)
            .collect()
    };
    let up0 = links("node-0", "link up").len();
    kids.kill("node-1");
    let restarted = Instant::now();
    c.spawn(&mut kids, "node", "node-1b", &c.nodes[1]);
    assert!(
        wait_until(Duration::from_secs(30), || links("node-0", "link up").len()
            > up0),
        "node 0 did not redial node 1: {}",
        c.log("node-0")
    );
    let took = restarted.elapsed();
    let down = links("node-0", "link down");
    assert!(
        down.last().is_some_and(|l| l.contains("reset")),
        "node 0 saw no reset: {down:?}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    eprintln!(
        "node 1 restarted -> node 0 redialled after {:.0} ms ({})",
        took.as_secs_f64() * 1e3,
        down.last().unwrap()
    );
    let cfg = c.coordinator_config("coordinator-b.toml", &tmp.path().join("b"), |_| {});
    let (status, stderr, _) = coordinate(&cfg, &[]);
    assert!(status.success(), "job after the restart: {stderr}");
}

/// Services run under systemd or a container runtime are stopped with SIGTERM: a node and a
/// party exit cleanly (status 0) and log which signal stopped them.
#[test]
fn sigterm_stops_a_node_and_a_party_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let c = keygen(&tmp.path().join("keys"), &small(), 0);
    let mut kids = Kids::default();
    c.spawn(&mut kids, "node", "node-0", &c.nodes[0]);
    c.spawn(&mut kids, "party", "party-0", &c.parties[0]);
    // Both are up once their logs say they serve.
    for name in ["node-0", "party-0"] {
        let log = c.dir.join(format!("{name}.log"));
        assert!(
            wait_until(Duration::from_secs(20), || {
                std::fs::read_to_string(&log).is_ok_and(|t| t.contains("serving"))
            }),
            "{name} did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    for (name, child) in &mut kids.0 {
        let pid = child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "{name} ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{name}: {status}");
        let log = std::fs::read_to_string(c.dir.join(format!("{name}.log"))).unwrap();
        assert!(log.contains("SIGTERM: stopping"), "{name}: {log}");
    }
}
