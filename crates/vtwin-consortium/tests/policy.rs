//! Each party and node enforces its own policy (sans-IO): a party refuses requests outside
//! its terms and stops at its budget, across a restart; a node refuses a clip above its cap;
//! a refusal carries no private value.

use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_consortium::config::{NodePolicy, PartyPolicy};
use vtwin_consortium::outgoing::{frame, Attempt, Outgoing};
use vtwin_consortium::party::{policy_for_plan, PartyError, RequestFault};
use vtwin_consortium::{NodeSession, PartyLedger, PartyResponder, PartySetup};
use vtwin_data::table::Column;
use vtwin_data::Table;
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::party_data::PartyData;
use vtwin_mpc::NodeId;
use vtwin_net::{Allowed, Body, Budget, Frame, JobTerms, Refusal, Role, SealKey, Term, WirePublic};

const K: usize = 3;
const ROWS: usize = 60;

fn plan() -> JobTerms {
    JobTerms {
        sigma: 1.5,
        clip: 1.0,
        components: K as u32,
        sample_rate: 0.1,
        iterations: 4,
        delta: 1e-5,
        rows: vtwin_model::party_data::ids_digest(&table().ids),
        tempering_start: 1.0,
        tempering_iterations: 0,
    }
}

fn layout() -> Layout {
    Layout::from_schema(&vtwin_data::demo::demo_schema(), K).unwrap()
}

/// Party 0 ("health") of `table` with `policy` and `ledger`.
fn party(table: &Table, policy: PartyPolicy, ledger: PartyLedger) -> PartyResponder {
    let data = PartyData::from_table(table, &layout()).unwrap().remove(0);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let keys: Vec<SealKey> = (0..3).map(|_| SealKey::generate(&mut rng)).collect();
    PartyResponder::new(PartySetup {
        index: 0,
        schema: vtwin_data::demo::demo_schema(),
        data,
        ids: table.ids.clone(),
        node_seal_publics: [keys[0].public(), keys[1].public(), keys[2].public()],
        randomness: SecretRandomness::Os,
        noise_seed: None,
        renormalise: Renormalise::ClosedForm,
        policy,
        ledger,
        identity: vtwin_net::pki::Ca::generate()
            .unwrap()
            .identity(Role::Party(0))
            .unwrap(),
        align_timeout: std::time::Duration::from_secs(60),
    })
    .unwrap()
}

fn request(t: u64, batch: Vec<u32>, terms: JobTerms) -> Frame {
    let at = Attempt {
        session: [t as u8 + 1; 16],
        attempt: [1; 8],
    };
    let body = Body::Request {
        batch,
        theta: vec![0.0; layout().dim()],
        terms,
    };
    frame(Role::Coordinator, at, t, 0, body)
}

/// The party's answer to the coordinator, as its driver collects it (the reply, then
/// [`PartyResponder::upload_rest`]); with an upload, first each node's part 0, then each
/// node's part 1, in node order, then `Uploaded`.
fn reply(p: &mut PartyResponder, f: &Frame) -> Body {
    let mut out: Vec<Outgoing> = p.handle(Role::Coordinator, f).unwrap();
    out.extend(p.upload_rest().unwrap());
    let last = out.pop().unwrap();
    assert_eq!(last.to, Role::Coordinator);
    let uploads = if matches!(last.frame.body, Body::Uploaded) {
        6
    } else {
        0
    };
    assert_eq!(out.len(), uploads, "{:?}", last.frame.body);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o.to, Role::Node((i % 3) as u8));
        assert!(matches!(o.frame.body, Body::Upload { part, .. } if usize::from(part) == i / 3));
    }
    last.frame.body
}

fn table() -> Table {
    vtwin_data::demo::demo_table(ROWS, 1)
}

#[test]
fn a_party_refuses_every_term_outside_its_policy_and_uploads_within_it() {
    let policy = policy_for_plan(&plan()).unwrap();
    let mut p = party(&table(), policy.clone(), PartyLedger::in_memory());
    let cases: Vec<(JobTerms, Term, Allowed)> = vec![
        (
            JobTerms {
                sigma: 0.0,
                ..plan()
            },
            Term::Sigma,
            Allowed::AtLeast(1.5),
        ),
        (
            JobTerms {
                sigma: 1.4,
                ..plan()
            },
            Term::Sigma,
            Allowed::AtLeast(1.5),
        ),
        (
            JobTerms {
                sigma: f64::NAN,
                ..plan()
            },
            Term::Sigma,
            Allowed::AtLeast(1.5),
        ),
        (
            JobTerms {
                clip: 2.0,
                ..plan()
            },
            Term::Clip,
            Allowed::AtMost(1.0),
        ),
        (
            JobTerms {
                components: 4,
                ..plan()
            },
            Term::Components,
            Allowed::Exactly(K as f64),
        ),
        (
            JobTerms {
                sample_rate: 0.2,
                ..plan()
            },
            Term::SampleRate,
            Allowed::AtMost(0.1),
        ),
        (
            JobTerms {
                iterations: 5,
                ..plan()
            },
            Term::Iterations,
            Allowed::AtMost(4.0),
        ),
        (
            JobTerms {
                delta: 1e-4,
                ..plan()
            },
            Term::Delta,
            Allowed::AtMost(1e-5),
        ),
    ];
    for (terms, term, allowed) in cases {
        let body = reply(&mut p, &request(0, vec![1, 2], terms));
        assert_eq!(
            body,
            Body::Refused {
                refusal: Refusal::Policy { term, allowed }
            },
            "{terms:?}"
        );
    }
    // An iteration beyond the announced plan.
    let body = reply(&mut p, &request(4, vec![1, 2], plan()));
    assert!(
        matches!(
            body,
            Body::Refused {
                refusal: Refusal::Policy {
                    term: Term::Iterations,
                    ..
                }
            }
        ),
        "{body:?}"
    );
    // Rows that are not the party's (another alignment, or another order of its ids).
    let mut shuffled = table().ids;
    shuffled.swap(0, 1);
    let other_rows = JobTerms {
        rows: vtwin_model::party_data::ids_digest(&shuffled),
        ..plan()
    };
    let body = reply(&mut p, &request(0, vec![1, 2], other_rows));
    assert_eq!(
        body,
        Body::Refused {
            refusal: Refusal::Rows
        }
    );
    assert_eq!(p.uploads(), 0, "a refused request is never recorded");
    // The plan's epsilon above the party's: same terms, a party that agrees to less.
    let strict = PartyPolicy {
        epsilon: policy.epsilon * 0.9,
        ..policy
    };
    let mut q = party(&table(), strict.clone(), PartyLedger::in_memory());
    let body = reply(&mut q, &request(0, vec![1, 2], plan()));
    assert_eq!(
        body,
        Body::Refused {
            refusal: Refusal::Policy {
                term: Term::Epsilon,
                allowed: Allowed::AtMost(strict.epsilon)
            }
        }
    );
    // A tempering schedule out of range is a malformed request: an error naming it, nothing
    // shared or recorded.
    for start in [0.0, -1.0, 1.5, f64::NAN] {
        let bad = JobTerms {
            tempering_start: start,
            tempering_iterations: 3,
            ..plan()
        };
        let e = p
            .handle(Role::Coordinator, &request(0, vec![1, 2], bad))
            .unwrap_err();
        assert!(
            matches!(
                e,
                PartyError::BadRequest {
                    fault: RequestFault::Tempering(_),
                    ..
                }
            ),
            "{start}: {e:?}"
        );
        let cause = std::error::Error::source(&e).map(ToString::to_string);
        assert!(
            cause.as_deref().is_some_and(|c| c.contains("tempering")),
            "{e}: {cause:?}"
        );
    }
    assert_eq!(p.uploads(), 0);
    // Within the policy, untempered and tempered: uploads, recorded.
    let body = reply(&mut p, &request(0, vec![1, 2], plan()));
    assert!(matches!(body, Body::Uploaded), "{body:?}");
    let tempered = JobTerms {
        tempering_start: 0.3,
        tempering_iterations: 3,
        ..plan()
    };
    let body = reply(&mut p, &request(1, vec![3, 4], tempered));
    assert!(matches!(body, Body::Uploaded), "{body:?}");
    assert_eq!(p.uploads(), 2);
}

fn spend(p: &mut PartyResponder, from: u64, to: u64) {
    for t in from..to {
        let body = reply(p, &request(t, vec![t as u32, 10 + t as u32], plan()));
        assert!(matches!(body, Body::Uploaded), "iteration {t}: {body:?}");
    }
}

fn open(path: &Path) -> PartyLedger {
    PartyLedger::open(path).unwrap()
}

#[test]
fn a_party_stops_at_its_openings_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("party-health.ledger");
    let policy = policy_for_plan(&plan()).unwrap();
    let mut p = party(&table(), policy.clone(), open(&path));
    spend(&mut p, 0, 3);
    drop(p);
    // Restarted: the ledger remembers three uploads; one more fits, then none.
    let mut p = party(&table(), policy.clone(), open(&path));
    assert_eq!(p.uploads(), 3);
    spend(&mut p, 3, 4);
    drop(p);
    let mut p = party(&table(), policy, open(&path));
    let body = reply(&mut p, &request(3, vec![3, 13], plan()));
    assert_eq!(
        body,
        Body::Refused {
            refusal: Refusal::Budget {
                budget: Budget::Openings { agreed: 4 }
            }
        }
    );
    assert_eq!(p.uploads(), 4);
}

#[test]
fn a_retry_that_would_pass_the_epsilon_budget_is_refused() {
    // The party agrees to the plan exactly: four uploads on four batches. Retrying an
    // iteration on its batch opens that batch twice, which costs more than a fresh batch,
    // so the retry does not fit although the openings allow it; a fresh batch still does.
    let policy = PartyPolicy {
        openings: 10,
        ..policy_for_plan(&plan()).unwrap()
    };
    let mut p = party(&table(), policy.clone(), PartyLedger::in_memory());
    spend(&mut p, 0, 3);
    let body = reply(&mut p, &request(2, vec![2, 12], plan()));
    assert_eq!(
        body,
        Body::Refused {
            refusal: Refusal::Budget {
                budget: Budget::Epsilon {
                    agreed: policy.epsilon
                }
            }
        }
    );
    assert_eq!(p.uploads(), 3);
    spend(&mut p, 3, 4);
    assert_eq!(p.uploads(), 4);
}

#[test]
fn a_range_refusal_names_the_quantity_and_range_but_never_the_value() {
    // Record 0's age scaled to e^-14.5: its statistic log x = -14.5 is outside [-14, 14].
    let mut t = table();
    let private = (-14.5f64).exp();
    let Column::Unit(age) = &mut t.columns[0] else {
        panic!("age is continuous")
    };
    age[0] = private;
    let mut p = party(
        &t,
        policy_for_plan(&plan()).unwrap(),
        PartyLedger::in_memory(),
    );
    let f = request(0, vec![0, 1], plan());
    let out = p.handle(Role::Coordinator, &f).unwrap();
    let body = &out[0].frame.body;
    assert_eq!(
        *body,
        Body::Refused {
            refusal: Refusal::Range {
                quantity: "T".into(),
                range: "[-14, 14]".into()
            }
        }
    );
    assert_eq!(p.uploads(), 0);
    let wire = vtwin_net::frame::encode(&out[0].frame).unwrap();
    for v in [private, private.ln()] {
        let bytes = v.to_le_bytes();
        assert!(!wire.windows(8).any(|w| w == bytes), "{v} on the wire");
    }
    let text = String::from_utf8_lossy(&wire);
    assert!(!text.contains("14.5") && !text.contains("e-7"), "{text}");
}

fn node(policy: NodePolicy) -> NodeSession {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    NodeSession::new(
        NodeId::new(0).unwrap(),
        SealKey::generate(&mut rng),
        vtwin_net::relay_signature::RelayVerifier::new(
            &vtwin_net::pki::Ca::generate()
                .unwrap()
                .identity(Role::Node(0))
                .unwrap(),
        ),
        policy,
        SecretRandomness::InsecureSeed(3),
    )
}

/// A `Start` whose circuit clips to `circuit_clip` under `terms`.
fn start(terms: JobTerms, circuit_clip: f64) -> Frame {
    let theta = vec![0.1; layout().dim()];
    let public =
        vtwin_model::mpc_backend::circuit_public_for(&layout(), &theta, circuit_clip, 3).unwrap();
    let at = Attempt {
        session: [9; 16],
        attempt: [9; 8],
    };
    let body = Body::Start {
        public: WirePublic::try_from(&public).unwrap(),
        terms,
    };
    frame(Role::Coordinator, at, 0, 0, body)
}

#[test]
fn a_node_refuses_a_clip_above_its_cap_a_sigma_below_its_floor_and_a_circuit_clip_above_c() {
    let policy = NodePolicy {
        sigma: 1.5,
        clip: 1.0,
    };
    let refused = |f: Frame, what: &str| {
        let mut n = node(policy.clone());
        let out = n.handle(Role::Coordinator, f);
        let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
        assert!(e.contains("bad Start") && e.contains(what), "{e}");
        assert_eq!(n.iteration(), None, "no session opened");
        assert!(out
            .send
            .iter()
            .any(|o| o.to == Role::Coordinator && matches!(o.frame.body, Body::Failed { .. })));
    };
    let over = JobTerms {
        clip: 2.0,
        ..plan()
    };
    refused(start(over, 1.0), "clip 2 is above this node's cap 1");
    let under = JobTerms {
        sigma: 1.0,
        ..plan()
    };
    refused(start(under, 1.0), "sigma 1 is below this node's floor 1.5");
    let small = JobTerms {
        clip: 0.5,
        ..plan()
    };
    refused(start(small, 0.75), "circuit clip");
    let other_k = JobTerms {
        components: 2,
        ..plan()
    };
    refused(start(other_k, 1.0), "components");
    // A circuit clip below C but not the one derived from C (here: from C - 1e-6): the
    // proof's margin is computed for the derived clip only, so only it is accepted.
    refused(start(plan(), 1.0 - 1e-6), "is not the derived clip");
    // Within the policy, with the circuit clip derived from C: started.
    let mut n = node(policy);
    let out = n.handle(Role::Coordinator, start(plan(), 1.0));
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(n.iteration(), Some(0));
    // The same attempt again (after it ran, or while it runs) is refused: the parties'
    // uploads of an attempt are computed on once.
    let out = n.handle(Role::Coordinator, start(plan(), 1.0));
    let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
    assert!(e.contains("repeats a session attempt"), "{e}");
}

#[test]
fn a_session_failing_on_an_early_frame_keeps_other_attempts_early_frames() {
    let policy = NodePolicy {
        sigma: 1.5,
        clip: 1.0,
    };
    let mut n = node(policy);
    let start_at = |a: u8| {
        let mut f = start(plan(), 1.0);
        f.attempt = [a; 8];
        f
    };
    let digest = |f: &Frame| match &f.body {
        Body::Start { public, terms } => {
            vtwin_consortium::node::start_digest(public, terms, Attempt::of(f), f.iteration)
                .unwrap()
        }
        other => panic!("{other:?}"),
    };
    let key = |from: u8, a: u8, start: [u8; 32]| {
        let at = Attempt {
            session: [9; 16],
            attempt: [a; 8],
        };
        frame(
            Role::Node(from),
            at,
            0,
            0,
            Body::NodeKey {
                public: [from + 1; 32],
                start,
            },
        )
    };
    let second = start_at(2);
    // Before either attempt starts: node 2's key for attempt 1 with a digest of another Start,
    // then node 1's genuine key for attempt 2.
    assert!(n.handle(Role::Node(2), key(2, 1, [0; 32])).error.is_none());
    assert!(n
        .handle(Role::Node(1), key(1, 2, digest(&second)))
        .error
        .is_none());
    // Attempt 1 fails on its early frame.
    let out = n.handle(Role::Coordinator, start_at(1));
    let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
    assert!(e.contains("another public side"), "{e}");
    // Attempt 2 starts with node 1's early key still buffered: the same key again is a second.
    let out = n.handle(Role::Coordinator, second.clone());
    assert!(out.error.is_none(), "{:?}", out.error);
    let out = n.handle(Role::Node(1), key(1, 2, digest(&second)));
    let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
    assert!(e.contains("second node key"), "{e}");
}
