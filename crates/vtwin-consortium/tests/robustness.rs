//! Arbitrary frames from any peer never make a node or the coordinator panic: each is
//! buffered, dropped or answered with an error (and, in a session, a `Failed` report), and a
//! node in a session that failed keeps serving the next one.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_consortium::outgoing::{frame, Attempt};
use vtwin_consortium::{CoordinatorJob, NodeSession, Timeouts};
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::layout::Layout;
use vtwin_model::mpc_backend::circuit_public_for;
use vtwin_mpc::NodeId;
use vtwin_net::{Body, Role, SealKey, WirePublic};

fn role(i: u8) -> Role {
    match i % 6 {
        0 => Role::Coordinator,
        1..=3 => Role::Node(i % 6 - 1),
        k => Role::Party(u16::from(k - 4)),
    }
}

fn body(kind: u8, bytes: Vec<u8>, n: u16) -> Body {
    match kind % 7 {
        0 => Body::Mpc { message: bytes },
        1 => Body::Upload {
            part: n as u8 % 3,
            sealed: bytes.clone(),
            certificate: bytes.clone(),
            signature: bytes,
            expires: u64::from(n) << 20,
        },
        2 => Body::NodeKey {
            public: {
                let mut k = [0u8; 32];
                for (d, s) in k.iter_mut().zip(&bytes) {
                    *d = *s;
                }
                k
            },
            start: [n as u8; 32],
        },
        3 => Body::Uploaded,
        4 => Body::PartyInfo {
            rows: u64::from(n),
            ids_digest: [n as u8; 32],
        },
        5 => Body::Abort { reason: "x".into() },
        _ => Body::Refused {
            refusal: vtwin_net::Refusal::Budget {
                budget: vtwin_net::Budget::Openings { agreed: 1 },
            },
        },
    }
}

/// Session `session`, attempt [1; 8].
fn attempt(session: [u8; 16]) -> Attempt {
    Attempt {
        session,
        attempt: [1; 8],
    }
}

/// A `Start` of session `[1; 16]` under attempt `[a; 8]` (a node starts each attempt once).
fn start_frame(a: u8) -> vtwin_net::Frame {
    let layout = Layout::from_schema(&vtwin_data::demo::demo_schema(), 2).unwrap();
    let theta = vec![0.1; layout.dim()];
    let public = circuit_public_for(&layout, &theta, 1.0, 3).unwrap();
    let wire = WirePublic::try_from(&public).unwrap();
    let mut at = attempt([1; 16]);
    at.attempt = [a; 8];
    frame(
        Role::Coordinator,
        at,
        0,
        0,
        Body::Start {
            public: wire,
            terms: vtwin_net::JobTerms {
                sigma: 1.0,
                clip: 1.0,
                components: 2,
                sample_rate: 0.1,
                iterations: 10,
                delta: 1e-5,
                rows: [0; 32],
                tempering_start: 1.0,
                tempering_iterations: 0,
            },
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_node_survives_arbitrary_frames(
        frames in proptest::collection::vec(
            (any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..200), any::<u16>(), any::<bool>()),
            1..40,
        )
    ) {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let mut node = NodeSession::new(
            NodeId::new(1).unwrap(),
            SealKey::generate(&mut rng),
            vtwin_net::relay_signature::RelayVerifier::new(
                &vtwin_net::pki::Ca::generate()
                    .unwrap()
                    .identity(Role::Node(0))
                    .unwrap(),
            ),
            vtwin_consortium::config::NodePolicy { sigma: 1.0, clip: 1.0 },
            SecretRandomness::InsecureSeed(4),
        );
        let _ = node.handle(Role::Coordinator, start_frame(1));
        for (r, kind, bytes, n, same_session) in frames {
            let session = if same_session { [1; 16] } else { [n as u8; 16] };
            let f = frame(role(r), attempt(session), 0, u64::from(n), body(kind, bytes, n));
            let out = node.handle(role(r), f);
            // A failure in a session is reported to the coordinator.
            if out.error.is_some() {
                let reported = out.send.iter().any(|o| {
                    o.to == Role::Coordinator && matches!(o.frame.body, Body::Failed { .. })
                });
                prop_assert!(reported);
            }
        }
        // The node still accepts a new session attempt.
        let _ = node.handle(Role::Coordinator, start_frame(2));
        prop_assert_eq!(node.iteration(), Some(0));
    }

    #[test]
    fn the_coordinator_survives_arbitrary_frames(
        frames in proptest::collection::vec(
            (any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..200), any::<u16>()),
            1..40,
        )
    ) {
        let now = Instant::now();
        let timeouts = Timeouts { handshake: Duration::from_secs(1), iteration: Duration::from_secs(1) };
        let (mut job, _) = CoordinatorJob::new(2, 3, 1e-5, timeouts, SecretRandomness::InsecureSeed(1), now);
        for (r, kind, bytes, n) in frames {
            let f = frame(role(r), attempt([n as u8; 16]), 0, 0, body(kind, bytes, n));
            let out = job.handle(role(r), f, now);
            // Nothing is ever applied without a trainer and three opening shares.
            let applied = out
                .events
                .iter()
                .any(|e| matches!(e, vtwin_consortium::JobEvent::Applied { .. }));
            prop_assert!(!applied);
        }
        let _ = job.tick(now + Duration::from_secs(2));
        prop_assert!(job.is_stopped() || job.trainer().is_none());
    }
}
