//! The three state machines wired in memory: a run equals the in-memory mpc backend bit for
//! bit; failures abort without applying anything and name the peer.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_consortium::config::{NodePolicy, PartyPolicy};
use vtwin_consortium::memory::MemoryConsortium;
use vtwin_consortium::outgoing::{frame, Attempt};
use vtwin_consortium::party::policy_for_plan;
use vtwin_consortium::party_ledger::{batch_digest, UploadRecord};
use vtwin_consortium::PartyLedger;
use vtwin_consortium::{
    CoordinatorJob, JobError, JobEvent, NodeOutput, NodeSession, PartyResponder, PartySetup,
    Timeouts,
};
use vtwin_data::Table;
use vtwin_iteration::randomness::BatchKey;
use vtwin_iteration::randomness::SecretRandomness;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::NoiseRngs;
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed_backend::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::mpc_backend::MpcBackend;
use vtwin_model::party_data::{OwnPartyData, PartyData};
use vtwin_model::trainer::Trainer;
use vtwin_mpc::NodeId;
use vtwin_net::{Body, Frame, JobTerms, Refusal, Role, SealKey, WirePublic};

const MPC_SEED: u64 = 11;
const NOISE_SEED: u64 = 12;
const ROWS: usize = 120;
const DELTA: f64 = 1e-5;
/// More iterations than any test here runs: the parties' policies allow them all.
const PLANNED: u64 = 10;

/// The job's terms for `w` (what the coordinator announces).
fn terms(w: &World, iters: u64) -> JobTerms {
    JobTerms {
        rows: vtwin_model::party_data::ids_digest(&w.table.ids),
        sigma: w.config.sigma,
        clip: w.config.clip,
        components: w.layout.components as u32,
        sample_rate: w.config.sample_rate,
        iterations: iters,
        delta: DELTA,
        tempering_start: 1.0,
        tempering_iterations: 0,
    }
}

/// A policy agreeing to `PLANNED` iterations of `w`'s job, one of them retried on its batch
/// (the resume test reruns an aborted iteration; each upload counts).
fn policy(w: &World) -> PartyPolicy {
    let plan = policy_for_plan(&terms(w, PLANNED)).unwrap();
    let mut ledger = PartyLedger::in_memory();
    for t in 0..PLANNED {
        let upload = UploadRecord {
            iteration: t,
            batch: batch_digest(&[t as u32]),
            sigma: plan.sigma,
            clip: plan.clip,
            sample_rate: plan.sample_rate,
        };
        ledger.record(&upload).unwrap();
        if t == 0 {
            ledger.record(&upload).unwrap();
        }
    }
    PartyPolicy {
        epsilon: ledger.epsilon(None, plan.delta).unwrap(),
        openings: PLANNED + 1,
        ..plan
    }
}

fn node_policy(w: &World) -> NodePolicy {
    NodePolicy {
        sigma: w.config.sigma,
        clip: w.config.clip,
    }
}

struct World {
    schema: vtwin_data::Schema,
    layout: Layout,
    table: Table,
    config: DpviConfig,
}

fn world() -> World {
    world_under(vtwin_data::demo::demo_schema())
}

/// The demo world with "smoker" as the target (the mixture stratified on it).
fn targeted_world() -> World {
    let schema = vtwin_data::demo::demo_schema()
        .with_target(Some("smoker".into()))
        .unwrap();
    world_under(schema)
}

fn world_under(schema: vtwin_data::Schema) -> World {
    let table = vtwin_data::demo::demo_table(ROWS, 1);
    let layout = Layout::from_schema(&schema, 3).unwrap();
    let config = DpviConfig {
        sample_rate: 0.1,
        clip: 1.0,
        sigma: 1.0,
        adam: AdamConfig::default(),
        seed: 5,
        tempering: vtwin_model::tempering::Tempering::Off,
    };
    World {
        schema,
        layout,
        table,
        config,
    }
}

fn timeouts() -> Timeouts {
    Timeouts {
        handshake: Duration::from_secs(5),
        iteration: Duration::from_secs(5),
    }
}

/// A consortium over `w` with `iters` iterations; party `shift` (if any) gets its rows rotated
/// by one (same count, different id order).
fn consortium(w: &World, iters: u64, now: Instant, tamper_ids: Option<usize>) -> MemoryConsortium {
    let data = PartyData::from_table(&w.table, &w.layout).unwrap();
    let own = data
        .into_iter()
        .enumerate()
        .map(|(p, d)| {
            let mut ids = w.table.ids.clone();
            if tamper_ids == Some(p) {
                ids.rotate_left(1);
            }
            OwnPartyData { data: d, ids }
        })
        .collect();
    consortium_of(w, iters, now, own, false)
}

/// The parties' responders, holding `own`, under `schema`; an alignment may run for
/// `align_timeout` at each.
fn responders(
    policy: &PartyPolicy,
    schema: &vtwin_data::Schema,
    own: Vec<OwnPartyData>,
    align_timeout: Duration,
) -> Vec<PartyResponder> {
    own.into_iter()
        .enumerate()
        .map(|(p, own)| {
            PartyResponder::new(PartySetup {
                index: p as u16,
                schema: schema.clone(),
                data: own.data,
                ids: own.ids,
                node_seal_publics: node_keys().map(|k| k.public()),
                randomness: SecretRandomness::InsecureSeed(MPC_SEED),
                noise_seed: Some(NOISE_SEED),
                renormalise: Renormalise::ClosedForm,
                policy: policy.clone(),
                ledger: PartyLedger::in_memory(),
                identity: party_identity(p as u16),
                align_timeout,
            })
            .unwrap()
        })
        .collect()
}

/// The nodes' seal keys (the same in every consortium of these tests).
fn node_keys() -> [SealKey; 3] {
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    std::array::from_fn(|_| SealKey::generate(&mut rng))
}

/// A consortium of parties holding `own`, record alignment `align`.
fn consortium_of(
    w: &World,
    iters: u64,
    now: Instant,
    own: Vec<OwnPartyData>,
    align: bool,
) -> MemoryConsortium {
    consortium_under(w, iters, now, own, align, &w.schema)
}

/// [`consortium_of`] whose parties hold `schema` (the coordinator's layout stays `w`'s).
fn consortium_under(
    w: &World,
    iters: u64,
    now: Instant,
    own: Vec<OwnPartyData>,
    align: bool,
    schema: &vtwin_data::Schema,
) -> MemoryConsortium {
    let randomness = SecretRandomness::InsecureSeed(MPC_SEED);
    let parties = responders(&policy(w), schema, own, Duration::from_secs(60));
    let nodes = node_keys()
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            NodeSession::new(
                NodeId::new(i as u8).unwrap(),
                k,
                verifier(),
                node_policy(w),
                randomness,
            )
        })
        .collect();
    let (job, hello) =
        CoordinatorJob::new_with_alignment(2, iters, DELTA, timeouts(), randomness, align, now);
    MemoryConsortium::new(job, hello, nodes, parties)
}

fn begin(c: &mut MemoryConsortium, w: &World, now: Instant) {
    c.run(now);
    assert!(
        matches!(c.events.first(), Some(JobEvent::Agreed { rows, .. }) if *rows == ROWS as u64),
        "{:?}",
        c.events
    );
    let trainer = Trainer::new(
        w.config.clone(),
        w.layout.clone(),
        ROWS,
        BatchKey::insecure(MPC_SEED),
    )
    .unwrap();
    let o = c.job.begin(trainer, now);
    c.coordinator_output(o);
}

#[test]
fn a_run_equals_the_in_memory_mpc_backend_bit_for_bit() {
    assert_run_equals_the_in_memory_mpc_backend(&world());
}

#[test]
fn a_run_with_a_target_equals_the_in_memory_mpc_backend_bit_for_bit() {
    let w = targeted_world();
    assert!(w.layout.target().is_some());
    assert_run_equals_the_in_memory_mpc_backend(&w);
}

/// Three iterations of the consortium over `w`, against the same three in memory.
fn assert_run_equals_the_in_memory_mpc_backend(w: &World) {
    let now = Instant::now();
    let iters = 3;
    let mut c = consortium(w, iters, now, None);
    begin(&mut c, w, now);
    c.run(now);
    assert!(c.job.is_done(), "{:?}", c.events);
    let applied = c
        .events
        .iter()
        .filter(|e| matches!(e, JobEvent::Applied { .. }))
        .count();
    assert_eq!(applied, iters as usize);
    let net = c.job.trainer().unwrap().state();

    let data = PartyData::from_table(&w.table, &w.layout).unwrap();
    let backend = MpcBackend::seeded(Renormalise::ClosedForm, MPC_SEED).unwrap();
    let mut dpvi = Dpvi::new(
        w.config.clone(),
        w.layout.clone(),
        data,
        Box::new(backend),
        NoiseRngs::seeded(NOISE_SEED, 2),
        BatchKey::insecure(MPC_SEED),
    )
    .unwrap();
    for _ in 0..iters {
        dpvi.step().unwrap();
    }
    let mem = dpvi.state();
    assert_eq!(net.iteration, iters);
    // Bit for bit: f64 equality of every parameter and optimiser value, and the ledger.
    assert_eq!(net, mem);
}

#[test]
fn parties_with_different_ids_are_refused_naming_the_party() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium(&w, 1, now, Some(1));
    c.run(now);
    match c.events.as_slice() {
        [JobEvent::Aborted(JobError::Mismatch { party, .. })] => assert_eq!(*party, Role::Party(1)),
        other => panic!("{other:?}"),
    }
}

/// Long ids, so that a test can look for them in the traffic.
fn long_ids(w: &World) -> Vec<String> {
    w.table
        .ids
        .iter()
        .map(|id| format!("customer-{id:0>8}"))
        .collect()
}

/// Health holds records 0..100, retail 20..120 in reverse order: 80 people in common.
fn overlapping(w: &World) -> Vec<OwnPartyData> {
    let data = PartyData::from_table(&w.table, &w.layout).unwrap();
    let full: Vec<OwnPartyData> = data
        .into_iter()
        .map(|d| OwnPartyData {
            data: d,
            ids: long_ids(w),
        })
        .collect();
    let health: Vec<usize> = (0..100).collect();
    let retail: Vec<usize> = (20..ROWS).rev().collect();
    vec![full[0].select(&health), full[1].select(&retail)]
}

/// After an alignment of [`overlapping`] (80 people in common): trains on them to the end.
fn train_aligned(c: &mut MemoryConsortium, w: &World, now: Instant) {
    let trainer = Trainer::new(
        w.config.clone(),
        w.layout.clone(),
        80,
        BatchKey::insecure(MPC_SEED),
    )
    .unwrap();
    let o = c.job.begin(trainer, now);
    c.coordinator_output(o);
    c.run(now);
}

#[test]
fn parties_with_overlapping_ids_align_privately_then_train() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), true);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let digests = std::sync::Arc::new(std::sync::Mutex::new(Vec::<[u8; 32]>::new()));
    let (log, reported) = (seen.clone(), digests.clone());
    c.intercept(Box::new(move |_, _, f: &mut Frame| {
        match &f.body {
            Body::Align { message, .. } => log.lock().unwrap().push(message.clone()),
            Body::PartyInfo { ids_digest, .. } => reported.lock().unwrap().push(*ids_digest),
            // An aligning job never asks for a digest of a whole id list.
            Body::Hello => panic!("Hello sent in an aligning job"),
            _ => {}
        }
        true
    }));
    c.run(now);
    // Agreed means every party reported the same id digest after aligning: the same 80
    // people in the same order at both.
    let Some(JobEvent::Agreed { rows, ids_digest }) = c.events.first() else {
        panic!("{:?}", c.events);
    };
    assert_eq!(*rows, 80);
    // What the coordinator saw of the ids: one digest per party, equal, and not the digest
    // of any id list a party holds (whole or aligned, in its own order or sorted): it is the
    // digest of the intersection's tags.
    let reported = digests.lock().unwrap().clone();
    assert_eq!(reported, vec![*ids_digest; 2]);
    let ids = long_ids(&w);
    let mut lists: Vec<Vec<String>> = vec![
        ids[..100].to_vec(),
        ids[20..].to_vec(),
        ids[20..100].to_vec(),
    ];
    for l in lists.clone() {
        let mut rev = l.clone();
        rev.reverse();
        let mut sorted = l.clone();
        sorted.sort();
        lists.extend([rev, sorted]);
    }
    for l in &lists {
        assert_ne!(
            *ids_digest,
            vtwin_model::party_data::ids_digest(l),
            "an id-list digest reached the coordinator"
        );
    }
    train_aligned(&mut c, &w, now);
    assert!(c.job.is_done(), "{:?}", c.events);
    // What travelled during the alignment is blinded points: no id bytes. Every party's set
    // goes out and comes back (2 parties: 2 messages each way through the coordinator).
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        8,
        "party -> coordinator -> party, two steps, two parties"
    );
    for f in seen.iter() {
        for id in &long_ids(&w) {
            assert!(
                !f.windows(id.len()).any(|win| win == id.as_bytes()),
                "id {id} in an alignment message"
            );
        }
    }
}

/// The consortium CA of these tests (one per test process).
fn test_ca() -> &'static vtwin_net::pki::Ca {
    static CA: std::sync::OnceLock<vtwin_net::pki::Ca> = std::sync::OnceLock::new();
    CA.get_or_init(|| vtwin_net::pki::Ca::generate().unwrap())
}

/// The nodes' verifier of the parties' channel signatures, trusting [`test_ca`].
fn verifier() -> vtwin_net::relay_signature::RelayVerifier {
    vtwin_net::relay_signature::RelayVerifier::new(&test_ca().identity(Role::Node(0)).unwrap())
}

/// Party p's TLS identity under [`test_ca`].
fn party_identity(p: u16) -> vtwin_net::pki::Identity {
    test_ca().identity(Role::Party(p)).unwrap()
}

/// Runs an aligning job whose relay rewrites the first `Align` frame addressed to party 1
/// with `tamper`, and returns the abort's error text (the job must abort, blaming party 1).
fn relay_tampering(tamper: impl Fn(&mut Body) + 'static) -> String {
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), true);
    let mut done = false;
    c.intercept(Box::new(move |from, to, f: &mut Frame| {
        if !done && from == Role::Coordinator && to == Role::Party(1) {
            if let Body::Align { .. } = f.body {
                tamper(&mut f.body);
                done = true;
            }
        }
        true
    }));
    c.run(now);
    match c.events.as_slice() {
        [JobEvent::Aborted(e @ JobError::PeerFailed { peer, .. })] => {
            assert_eq!(*peer, Role::Party(1), "{e}");
            e.to_string()
        }
        other => panic!("{other:?}"),
    }
}

/// Replaces the points of an `Align` message by a blinded candidate id and the set's
/// other points, re-sorted: a valid message of the protocol, but not the sender's.
fn insert_candidate(body: &mut Body) {
    let Body::Align { message, .. } = body else {
        unreachable!()
    };
    let mut m = vtwin_psi::Message::decode(message).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let key = vtwin_psi::BlindingKey::random(&mut rng);
    m.points[0] = vtwin_psi::blind::hash_and_blind(&[b"candidate id".as_slice()], &key)[0];
    m.points.sort();
    *message = m.encode();
}

#[test]
fn a_relay_that_changes_an_alignment_message_is_refused() {
    let e = relay_tampering(insert_candidate);
    assert!(
        e.contains("claiming to come from party 0 is not signed by it"),
        "{e}"
    );
}

/// Replaces an `Align` body's signature by `identity`'s signature of its message.
fn re_sign(body: &mut Body, identity: &vtwin_net::pki::Identity) {
    let Body::Align {
        message,
        certificate,
        signature,
    } = body
    else {
        unreachable!()
    };
    let s = vtwin_net::RelaySigner::new(identity)
        .unwrap()
        .sign(vtwin_net::relay_signature::Purpose::Alignment, message)
        .unwrap();
    (*certificate, *signature) = (s.certificate, s.signature);
}

#[test]
fn a_relay_cannot_sign_alignment_messages_for_a_party() {
    // The relay's own certified key (coordinator) over the changed message.
    let e = relay_tampering(|body| {
        insert_candidate(body);
        re_sign(body, &test_ca().identity(Role::Coordinator).unwrap());
    });
    assert!(
        e.contains("claiming to come from party 0 is signed by coordinator"),
        "{e}"
    );
    // Party 0's key under another CA (a relay that made its own PKI).
    let e = relay_tampering(|body| {
        insert_candidate(body);
        let other = vtwin_net::pki::Ca::generate().unwrap();
        re_sign(body, &other.identity(Role::Party(0)).unwrap());
    });
    assert!(e.contains("not signed by it"), "{e}");
}

#[test]
fn an_alignment_session_id_is_taken_once() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), true);
    let mut start = frame(
        Role::Coordinator,
        Attempt::NONE,
        0,
        0,
        Body::AlignStart { parties: 2 },
    );
    start.session = [7; 16];
    let first = c.parties[0].handle(Role::Coordinator, &start).unwrap();
    assert!(matches!(first[0].frame.body, Body::Align { .. }));
    let again = c.parties[0].handle(Role::Coordinator, &start).unwrap_err();
    assert!(again.public().contains("used before"), "{}", again.public());
    // A fresh session id is taken.
    start.session = [8; 16];
    c.parties[0].handle(Role::Coordinator, &start).unwrap();
}

/// `f` as the coordinator relays it in alignment session `session`.
fn relayed(f: &Frame, session: [u8; 16]) -> Frame {
    let mut r = frame(Role::Coordinator, Attempt::NONE, 0, 0, f.body.clone());
    r.session = session;
    r
}

/// An `AlignStart` for `parties` in session `session`.
fn align_start(parties: u16, session: [u8; 16]) -> Frame {
    let mut f = frame(
        Role::Coordinator,
        Attempt::NONE,
        0,
        0,
        Body::AlignStart { parties },
    );
    f.session = session;
    f
}

/// The one frame a party answered.
fn only(mut out: Vec<vtwin_consortium::outgoing::Outgoing>) -> Frame {
    assert_eq!(out.len(), 1, "{out:?}");
    out.remove(0).frame
}

#[test]
fn a_party_key_signs_only_for_its_own_party_and_a_refusal_drops_the_keys() {
    let w = world();
    let mut c = consortium_of(&w, 2, Instant::now(), overlapping(&w), true);
    let s = [10; 16];
    let a1 = only(
        c.parties[0]
            .handle(Role::Coordinator, &align_start(2, s))
            .unwrap(),
    );
    only(
        c.parties[1]
            .handle(Role::Coordinator, &align_start(2, s))
            .unwrap(),
    );
    // Party 0's message, re-signed with a genuine party-1 key of the consortium CA.
    let mut f = relayed(&a1, s);
    re_sign(&mut f.body, &party_identity(1));
    let e = c.parties[1].handle(Role::Coordinator, &f).unwrap_err();
    assert!(
        e.public()
            .contains("claiming to come from party 0 is signed by party 1"),
        "{}",
        e.public()
    );
    // The refused role is gone with its keys: the genuine message now finds no alignment.
    let e = c.parties[1]
        .handle(Role::Coordinator, &relayed(&a1, s))
        .unwrap_err();
    assert!(
        e.public().contains("no record alignment is running"),
        "{}",
        e.public()
    );
    // Party 0's own message reflected back to it.
    let e = c.parties[0]
        .handle(Role::Coordinator, &relayed(&a1, s))
        .unwrap_err();
    assert!(e.public().contains("message for party 1"), "{}", e.public());
}

/// Two parties start an alignment with an `align_timeout`; party 1 answers party 0's first
/// message, and the relay holds party 1's two messages back: returns the parties and them.
fn held_back_run(align_timeout: Duration) -> (Vec<PartyResponder>, Frame, Frame) {
    let w = world();
    let schema = vtwin_data::demo::demo_schema();
    let mut parties = responders(&policy(&w), &schema, overlapping(&w), align_timeout);
    let s = [11; 16];
    let mut step = |p: usize, f: &Frame| only(parties[p].handle(Role::Coordinator, f).unwrap());
    let a1 = step(0, &align_start(2, s));
    let b1 = step(1, &align_start(2, s));
    let b2 = step(1, &relayed(&a1, s));
    (parties, relayed(&b1, s), relayed(&b2, s))
}

#[test]
fn a_stalled_alignment_expires_at_the_party() {
    // A relay that holds messages back (e.g. to complete the run later with another
    // party's pre-restart messages) finds the role gone after the party's own deadline.
    let (mut parties, b1, b2) = held_back_run(Duration::from_millis(30));
    std::thread::sleep(Duration::from_millis(60));
    let e = parties[0].handle(Role::Coordinator, &b1).unwrap_err();
    assert!(e.public().contains("ran longer than"), "{}", e.public());
    let e = parties[0].handle(Role::Coordinator, &b2).unwrap_err();
    assert!(
        e.public().contains("no record alignment is running"),
        "{}",
        e.public()
    );
    // Within the deadline the same messages complete the run (80 people in common).
    let (mut parties, b1, b2) = held_back_run(Duration::from_secs(60));
    parties[0].handle(Role::Coordinator, &b1).unwrap();
    let out = parties[0].handle(Role::Coordinator, &b2).unwrap();
    assert!(out
        .iter()
        .any(|o| matches!(o.frame.body, Body::PartyInfo { rows: 80, .. })));
}

#[test]
fn a_party_refuses_a_job_on_rows_it_does_not_hold() {
    // After the alignment, the relay tells party 1 the job runs on the digest of all of
    // its ids (as if it had not aligned): row r would be two people.
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), true);
    let all = vtwin_model::party_data::ids_digest(&overlapping(&w)[1].ids);
    c.intercept(Box::new(move |_, to, f: &mut Frame| {
        if let (Role::Party(1), Body::Request { terms, .. }) = (to, &mut f.body) {
            terms.rows = all;
        }
        true
    }));
    c.run(now);
    train_aligned(&mut c, &w, now);
    let e = aborted(&c).to_string();
    assert!(
        e.contains("party 1") && e.contains("not this party's current rows"),
        "{e}"
    );
}

/// Three parties (the demo schema with its last column at a third party) align through a
/// relay that delivers every message as addressed, or (`misdeliver`) gives the first filter
/// to party 2 instead of party 1. Returns each party's rows or its error.
fn three_party_alignment(misdeliver: bool) -> Vec<Result<u64, String>> {
    let w = world();
    let mut schema = vtwin_data::demo::demo_schema();
    schema.parties.push("bank".to_string());
    let last = schema.columns.len() - 1;
    schema.columns[last].party = "bank".to_string();
    let layout = Layout::from_schema(&schema, 3).unwrap();
    let ids = long_ids(&w);
    let held: [Vec<usize>; 3] = [
        (0..100).collect(),
        (20..ROWS).rev().collect(),
        (10..110).collect(),
    ];
    let own = PartyData::from_table(&w.table, &layout)
        .unwrap()
        .into_iter()
        .zip(&held)
        .map(|(data, rows)| {
            OwnPartyData {
                data,
                ids: ids.clone(),
            }
            .select(rows)
        })
        .collect();
    let mut parties = responders(&policy(&w), &schema, own, Duration::from_secs(60));
    let s = [3; 16];
    let mut queue = std::collections::VecDeque::new();
    for p in parties.iter_mut() {
        queue.extend(p.handle(Role::Coordinator, &align_start(3, s)).unwrap());
    }
    let mut result: Vec<Result<u64, String>> = vec![Err("unfinished".into()); 3];
    let mut misdelivered = false;
    while let Some(o) = queue.pop_front() {
        match &o.frame.body {
            Body::Align { message, .. } => {
                let m = vtwin_psi::Message::decode(message).unwrap();
                let mut to = m.to;
                if misdeliver && !misdelivered && m.kind == vtwin_psi::Kind::Filter {
                    to = 2;
                    misdelivered = true;
                }
                match parties[usize::from(to)].handle(Role::Coordinator, &relayed(&o.frame, s)) {
                    Ok(out) => queue.extend(out),
                    Err(e) => result[usize::from(to)] = Err(e.public()),
                }
            }
            Body::PartyInfo { rows, .. } => {
                let Role::Party(p) = o.frame.sender else {
                    unreachable!()
                };
                result[usize::from(p)] = Ok(*rows);
            }
            other => panic!("{other:?}"),
        }
    }
    result
}

#[test]
fn three_parties_align_with_signed_messages_and_refuse_a_misdelivered_one() {
    // 20..100 is held by all three.
    assert_eq!(three_party_alignment(false), vec![Ok(80), Ok(80), Ok(80)]);
    let r = three_party_alignment(true);
    assert!(
        matches!(&r[2], Err(e) if e.contains("message for party 1")),
        "{r:?}"
    );
    assert!(r.iter().all(Result::is_err), "{r:?}");
}

#[test]
fn the_largest_alignment_message_fits_one_frame_with_its_signature() {
    let signer = vtwin_net::RelaySigner::new(&party_identity(0)).unwrap();
    let message = vec![0u8; 30 + 32 * vtwin_consortium::party::MAX_ALIGN_IDS];
    let s = signer
        .sign(vtwin_net::relay_signature::Purpose::Alignment, &message)
        .unwrap();
    let mut f = frame(
        Role::Party(u16::MAX),
        Attempt::NONE,
        u64::MAX,
        u64::MAX,
        Body::Align {
            message,
            certificate: s.certificate,
            // A DER ECDSA P-256 signature is at most 72 bytes.
            signature: vec![0xff; 72],
        },
    );
    f.seq = u64::MAX;
    f.session = [0xff; 16];
    let bytes = vtwin_net::frame::encode(&f).unwrap();
    vtwin_net::frame::decode(&bytes[vtwin_net::frame::LENGTH_PREFIX_BYTES..]).unwrap();
}

#[test]
fn a_party_whose_policy_refuses_alignment_stops_the_job_naming_it() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), true);
    // Party 1 refuses to take part: its AlignStart fails, nothing is aligned or trained.
    let mut refusing = policy(&w);
    refusing.align = false;
    c.parties[1] = responders(
        &refusing,
        &vtwin_data::demo::demo_schema(),
        overlapping(&w),
        Duration::from_secs(60),
    )
    .swap_remove(1);
    c.run(now);
    match c.events.as_slice() {
        [JobEvent::Aborted(e @ JobError::PeerFailed { peer, .. })] => {
            assert_eq!(*peer, Role::Party(1));
            assert!(e.to_string().contains("policy.align = false"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn parties_with_different_ids_and_no_alignment_are_told_how_to_align() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), false);
    c.run(now);
    match c.events.as_slice() {
        [JobEvent::Aborted(e @ JobError::Mismatch { party, .. })] => {
            assert_eq!(*party, Role::Party(1));
            let text = e.to_string();
            assert!(text.contains("id column differs"), "{text}");
            assert!(text.contains("training.align"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_silent_node_times_out_naming_it_and_nothing_is_applied() {
    let (now, mut c) = running(3);
    // Iteration 0 completes, then node 1 goes silent.
    while !c
        .events
        .iter()
        .any(|e| matches!(e, JobEvent::Applied { iteration: 0, .. }))
    {
        assert!(c.step(now));
    }
    let before = c.job.trainer().unwrap().state();
    c.cut(Role::Node(1));
    c.run(now);
    assert_eq!(c.job.iteration_in_flight(), Some(1));
    let o = c.job.tick(now + Duration::from_secs(4));
    assert!(o.events.is_empty());
    let o = c.job.tick(now + Duration::from_secs(6));
    let Some(JobEvent::Aborted(JobError::Timeout {
        iteration, waiting, ..
    })) = o.events.last()
    else {
        panic!("{:?}", o.events)
    };
    assert_eq!(*iteration, 1);
    assert!(waiting.contains(&Role::Node(1)), "{waiting:?}");
    // Abort goes to every peer; the trainer is untouched (not applied, not charged).
    let aborts = o
        .send
        .iter()
        .filter(|s| matches!(s.frame.body, vtwin_net::Body::Abort { .. }))
        .count();
    assert_eq!(aborts, 5);
    assert!(c.job.is_stopped());
    assert_eq!(c.job.trainer().unwrap().state(), before);
    assert_eq!(
        c.job.trainer().unwrap().ledger().map(|l| l.steps()),
        Some(1)
    );
    // The surviving nodes drop the session on Abort and keep serving.
    c.coordinator_output(o);
    c.run(now);
    assert_eq!(c.nodes[0].iteration(), None);
    assert_eq!(c.nodes[2].iteration(), None);
}

/// A consortium over [`world`] with `iters` iterations, past its handshake (the trainer
/// begun), at `now`.
fn running(iters: u64) -> (Instant, MemoryConsortium) {
    let w = world();
    let now = Instant::now();
    let mut c = consortium(&w, iters, now, None);
    begin(&mut c, &w, now);
    (now, c)
}

/// Runs a consortium whose frames pass through `hook`, to the end or to an abort.
fn run_tampered(
    hook: impl FnMut(Role, Role, &mut vtwin_net::Frame) -> bool + 'static,
) -> MemoryConsortium {
    let (now, mut c) = running(2);
    c.intercept(Box::new(hook));
    c.run(now);
    c
}

/// Runs a consortium through `hook` ([`run_tampered`]) and checks that the job aborted,
/// applying nothing, with an error whose text contains `what`.
fn assert_aborts_with(
    hook: impl FnMut(Role, Role, &mut vtwin_net::Frame) -> bool + 'static,
    what: &str,
) {
    let c = run_tampered(hook);
    let text = aborted(&c).to_string();
    assert!(text.contains(what), "{text}");
}

fn aborted(c: &MemoryConsortium) -> &JobError {
    assert!(c.job.is_stopped(), "{:?}", c.events);
    assert_eq!(c.job.trainer().unwrap().iteration(), 0, "nothing applied");
    match c.events.last() {
        Some(JobEvent::Aborted(e)) => e,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_blob_sent_on_another_partys_link_is_refused_by_the_node() {
    // Party 1 passes party 0's upload (blob, certificate and signature) off as its own: the
    // link names party 1, and party 0 signed a statement naming party 0.
    let mut of_party_0: [Option<Body>; 3] = Default::default();
    let c = run_tampered(move |from, to, f| {
        if let (Role::Node(n), Body::Upload { .. }) = (to, &f.body) {
            let slot = &mut of_party_0[usize::from(n)];
            match from {
                Role::Party(0) => *slot = Some(f.body.clone()),
                Role::Party(1) => f.body = slot.clone().expect("party 0 uploads first"),
                _ => {}
            }
        }
        true
    });
    let e = aborted(&c);
    let text = vtwin_host::error_chain::Chain(e).to_string();
    assert!(
        matches!(
            e,
            JobError::PeerFailed {
                peer: Role::Node(_),
                ..
            }
        ) && text.contains("upload of party 1")
            && text.contains("does not verify under party 0's certificate"),
        "{text}"
    );
}

/// Checks that the job aborted ([`aborted`]) with `what` in its error chain.
fn assert_aborted_with(c: &MemoryConsortium, what: &str) {
    let text = vtwin_host::error_chain::Chain(aborted(c)).to_string();
    assert!(text.contains(what), "{text}");
}

/// Checks that the coordinator took a frame without sending anything or stopping.
fn assert_ignored(c: &MemoryConsortium, out: &vtwin_consortium::JobOutput) {
    assert!(
        out.send.is_empty() && !c.job.is_stopped(),
        "{:?}",
        out.events
    );
}

/// A one-iteration job run until it stalls because `party`'s upload to `node` was lost on
/// the way (the first one only, its first part): the job, the attempt and iteration of the
/// request, and the lost upload.
fn with_a_lost_upload(party: u16, node: u8) -> (Instant, MemoryConsortium, Attempt, u64, Frame) {
    with_a_lost_upload_part(party, node, 0)
}

/// [`with_a_lost_upload`] of the upload's part `part` (0 or 1).
fn with_a_lost_upload_part(
    party: u16,
    node: u8,
    part: u8,
) -> (Instant, MemoryConsortium, Attempt, u64, Frame) {
    let (now, mut c) = running(1);
    let lost = std::rc::Rc::new(std::cell::RefCell::new(None));
    let keep = lost.clone();
    let request = std::rc::Rc::new(std::cell::RefCell::new(None));
    let seen = request.clone();
    c.intercept(Box::new(move |from, to, f: &mut Frame| {
        if to == Role::Party(0) && matches!(f.body, Body::Request { .. }) {
            *seen.borrow_mut() = Some((Attempt::of(f), f.iteration));
        }
        let first = keep.borrow().is_none();
        if first
            && from == Role::Party(party)
            && to == Role::Node(node)
            && matches!(f.body, Body::Upload { part: q, .. } if q == part)
        {
            *keep.borrow_mut() = Some(f.clone());
            return false;
        }
        true
    }));
    c.run(now);
    assert!(!c.job.is_stopped() && !c.job.is_done(), "{:?}", c.events);
    let (at, t) = request.borrow().expect("a request");
    let upload = lost.borrow().clone().expect("an upload lost");
    (now, c, at, t, upload)
}

#[test]
fn a_lost_party_link_drops_a_session_only_while_its_upload_is_missing() {
    // Party 1's upload to node 1 never arrives (its link went down with it).
    let (now, mut c, ..) = with_a_lost_upload(1, 1);
    let node = &mut c.nodes[1];
    // Party 0 uploaded already: its link is not needed any more.
    let out = node.link_lost(Role::Party(0), vtwin_consortium::LinkLoss::NoLink);
    assert!(
        out.error.is_none() && out.send.is_empty(),
        "{:?}",
        out.error
    );
    assert!(node.iteration().is_some(), "the session goes on");
    // Party 1's is missing: the session cannot finish, and the coordinator hears who is lost.
    let out = node.link_lost(Role::Party(1), vtwin_consortium::LinkLoss::NoLink);
    assert!(out.error.is_some() && node.iteration().is_none());
    c.post(Role::Node(1), out.send);
    c.run(now);
    assert_aborted_with(&c, "lost the link to party 1: node 1 lost its link to it");
}

#[test]
fn a_lost_party_link_drops_a_session_while_the_late_part_of_its_upload_is_missing() {
    // Party 1's first part reached node 2, its late part (T_p and the noise) did not.
    let (now, mut c, ..) = with_a_lost_upload_part(1, 2, 1);
    let node = &mut c.nodes[2];
    assert!(
        node.iteration().is_some(),
        "the session waits for the late part"
    );
    let out = node.link_lost(Role::Party(0), vtwin_consortium::LinkLoss::NoLink);
    assert!(out.error.is_none() && out.send.is_empty());
    let out = node.link_lost(Role::Party(1), vtwin_consortium::LinkLoss::NoLink);
    assert!(out.error.is_some() && node.iteration().is_none());
    c.post(Role::Node(2), out.send);
    c.run(now);
    assert_aborted_with(&c, "lost the link to party 1: node 2 lost its link to it");
}

/// Re-signs the sealing channel of the upload in `f` (from `party` to `node`, whose seal
/// public key is `node_public`) with `signer`'s genuine key, with the expiry `expires` (the
/// upload's own if `None`): what a party that signed another's channel key, or signed for
/// another lifetime, would send.
fn resign_channel(
    f: &mut Frame,
    signer: u16,
    party: u16,
    node: u8,
    node_public: &[u8; 32],
    expires: Option<u64>,
) {
    let Body::Upload {
        sealed,
        certificate,
        signature,
        expires: e,
        ..
    } = &mut f.body
    else {
        panic!("an upload");
    };
    *e = expires.unwrap_or(*e);
    let channel = vtwin_net::seal::channel_of(sealed).expect("a sealed blob");
    let key = vtwin_net::relay_signature::RelaySigner::new(&party_identity(signer)).unwrap();
    let statement =
        vtwin_consortium::upload::channel_statement(party, node, &channel, node_public, *e);
    let s = key
        .sign(vtwin_net::relay_signature::Purpose::Channel, &statement)
        .unwrap();
    *certificate = s.certificate;
    *signature = s.signature;
}

/// Party 1's late upload to node 1 with its part byte set to `part` (the channel signature
/// does not cover it), so that only the node's part checks stand in the way.
fn relabelled_late_part(part: u8) -> impl FnMut(Role, Role, &mut Frame) -> bool {
    move |from, to, f| {
        if (from, to) == (Role::Party(1), Role::Node(1)) {
            if let Body::Upload { part: p @ 1, .. } = &mut f.body {
                *p = part;
            }
        }
        true
    }
}

#[test]
fn an_upload_part_sent_twice_or_of_no_such_number_is_refused() {
    assert_aborts_with(relabelled_late_part(0), "part First sent twice");
    assert_aborts_with(relabelled_late_part(2), "part 2: no such part");
}

#[test]
fn an_upload_moved_to_the_other_part_is_refused() {
    // The part is sealed inside the blob: the late blob relabelled as the first (and the
    // first as the late, which then comes second) names the other part.
    assert_aborts_with(
        |from, to, f| {
            if let (Role::Party(0), Role::Node(2), Body::Upload { part, .. }) =
                (from, to, &mut f.body)
            {
                *part = 1 - *part;
            }
            true
        },
        "not for this attempt as part",
    );
}

#[test]
fn a_partys_report_of_a_lost_node_link_aborts_its_own_attempt_only() {
    // Party 0's upload to node 2 is lost with its link; the party says so.
    let (now, mut c, at, t, _) = with_a_lost_upload(0, 2);
    let lost = |at| {
        frame(
            Role::Party(0),
            at,
            t,
            0,
            Body::LinkLost {
                peer: Role::Node(2),
            },
        )
    };
    // A late report, of an attempt that is not running: nothing happens.
    let stale = Attempt {
        attempt: [0xEE; 8],
        ..at
    };
    let out = c.job.handle(Role::Party(0), lost(stale), now);
    assert_ignored(&c, &out);
    // The running attempt's: aborted, naming the node.
    let out = c.job.handle(Role::Party(0), lost(at), now);
    c.coordinator_output(out);
    assert_aborted_with(&c, "lost the link to node 2: party 0 lost its link to it");
}

#[test]
fn stray_frames_from_parties_leave_the_session_and_the_job_running() {
    // Party 1's upload to node 0 is held back, so node 0's session stays open.
    let (now, mut c, at, t, upload) = with_a_lost_upload(1, 0);
    assert!(c.nodes[0].iteration().is_some());
    // A party outside the job (a certificate of the CA, P = 2 here), at this iteration or
    // another, an upload of another iteration from a party in the job, and a body a party
    // has no business sending to a node: logged and dropped.
    for (from, t, body) in [
        (Role::Party(9), t, upload.body.clone()),
        (Role::Party(9), t + 1, upload.body.clone()),
        (Role::Party(1), t + 1, upload.body.clone()),
        (Role::Party(0), t, Body::Uploaded),
        (Role::Party(1), t, Body::Abort { reason: "x".into() }),
    ] {
        let out = c.nodes[0].handle(from, frame(from, at, t, 0, body));
        assert!(
            out.error.is_none() && out.send.is_empty(),
            "{from}: {:?}",
            out.error
        );
        assert!(c.nodes[0].iteration().is_some(), "{from}");
    }
    // A late Uploaded, and a node's or a party's late LinkLost (of an attempt that is over,
    // or of another coordinator run's), change nothing.
    let stale = Attempt {
        attempt: [0xEE; 8],
        ..at
    };
    for (from, body) in [
        (Role::Party(0), Body::Uploaded),
        (
            Role::Party(0),
            Body::LinkLost {
                peer: Role::Node(1),
            },
        ),
        (
            Role::Node(2),
            Body::LinkLost {
                peer: Role::Node(1),
            },
        ),
        (
            Role::Node(2),
            Body::LinkLost {
                peer: Role::Party(1),
            },
        ),
    ] {
        let out = c.job.handle(from, frame(from, stale, t, 0, body), now);
        assert_ignored(&c, &out);
    }
    // The held upload arrives: the iteration finishes.
    c.post(
        Role::Party(1),
        vec![vtwin_consortium::Outgoing {
            to: Role::Node(0),
            frame: upload,
        }],
    );
    c.run(now);
    assert!(c.job.is_done(), "{:?}", c.events);
}

#[test]
fn a_party_reporting_a_lost_link_to_no_node_is_refused() {
    // Party 1's upload to node 0 is lost: the attempt stays running.
    let (now, mut c, at, t, _) = with_a_lost_upload(1, 0);
    let f = frame(
        Role::Party(0),
        at,
        t,
        0,
        Body::LinkLost {
            peer: Role::Node(7),
        },
    );
    let out = c.job.handle(Role::Party(0), f, now);
    c.coordinator_output(out);
    assert_aborted_with(&c, "LinkLost");
}

#[test]
fn a_blob_sent_to_the_wrong_node_is_refused() {
    // Node 1 receives the blob sealed (and signed) for node 0.
    let mut first: Option<Vec<u8>> = None;
    let c = run_tampered(move |_, to, f| {
        if let Body::Upload { sealed, .. } = &mut f.body {
            match (to, first.take()) {
                (Role::Node(0), None) => first = Some(sealed.clone()),
                (Role::Node(1), Some(b0)) => {
                    first = Some(std::mem::replace(sealed, b0));
                }
                (_, keep) => first = keep,
            }
        }
        true
    });
    assert!(
        aborted(&c).to_string().contains("upload of party"),
        "{:?}",
        c.events
    );
}

#[test]
fn an_mpc_message_whose_inner_sender_is_not_the_link_peer_is_refused() {
    // A node-to-node message claims to come from the third node.
    assert_aborts_with(
        |from, to, f| {
            if let (Role::Node(a), Role::Node(b), vtwin_net::Body::Mpc { message }) =
                (from, to, &mut f.body)
            {
                let mut m = vtwin_mpc::Message::decode(message).unwrap();
                m.from = vtwin_mpc::Peer::Node(NodeId::new(3 - a - b).unwrap());
                *message = m.encode();
            }
            true
        },
        "differs from the link's peer",
    );
}

/// Node 0 on its own, with no session.
fn lone_node() -> NodeSession {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    NodeSession::new(
        NodeId::new(0).unwrap(),
        SealKey::generate(&mut rng),
        verifier(),
        node_policy(&world()),
        SecretRandomness::InsecureSeed(1),
    )
}

#[test]
fn the_early_buffer_is_bounded() {
    let mut node = lone_node();
    let max = vtwin_consortium::node::EARLY_FRAMES;
    for k in 0..max + 10 {
        let f = frame(
            Role::Node(1),
            Attempt {
                session: [7; 16],
                attempt: [7; 8],
            },
            0,
            k as u64,
            vtwin_net::Body::Mpc {
                message: vec![0; 8],
            },
        );
        let out = node.handle(Role::Node(1), f);
        assert!(out.send.is_empty() && out.error.is_none());
    }
    assert_eq!(node.early_frames(), max);
}

#[test]
fn parties_early_uploads_wait_apart_one_each_and_never_push_out_a_nodes_frames() {
    let mut node = lone_node();
    let upload_part = |from: u16, k: u64, part: u8, certificate: Vec<u8>| {
        frame(
            Role::Party(from),
            Attempt {
                session: [7; 16],
                attempt: k.to_le_bytes(),
            },
            0,
            0,
            Body::Upload {
                part,
                sealed: Vec::new(),
                certificate,
                signature: Vec::new(),
                expires: 0,
            },
        )
    };
    let upload = |from: u16, k: u64, certificate: Vec<u8>| upload_part(from, k, 0, certificate);
    // A fellow node's early key first.
    let key = frame(
        Role::Node(1),
        Attempt {
            session: [8; 16],
            attempt: [8; 8],
        },
        0,
        0,
        Body::NodeKey {
            public: [1; 32],
            start: [2; 32],
        },
    );
    assert!(node.handle(Role::Node(1), key).error.is_none());
    // A flood from one party keeps one slot, its newest.
    let max = vtwin_consortium::node::EARLY_FRAMES;
    for k in 0..max as u64 + 10 {
        let out = node.handle(Role::Party(3), upload(3, k, Vec::new()));
        assert!(out.send.is_empty() && out.error.is_none());
    }
    assert_eq!(
        node.early_frames(),
        2,
        "the key and party 3's newest upload"
    );
    // Its late parts take a second slot, parts that do not exist none.
    for (k, part) in [(1, 1), (2, 1), (3, 2), (4, 255)] {
        let out = node.handle(Role::Party(3), upload_part(3, k, part, Vec::new()));
        assert!(out.send.is_empty() && out.error.is_none());
    }
    assert_eq!(
        node.early_frames(),
        3,
        "the key and party 3's newest of each part"
    );
    // One party's two parts share one frame's worth: a part that would take it past that is
    // dropped, one that fits is kept.
    let mut lone = lone_node();
    let mib = 1 << 20;
    for (part, size, kept) in [(0, 40 * mib, 1), (1, 40 * mib, 1), (1, 20 * mib, 2)] {
        let out = lone.handle(Role::Party(8), upload_part(8, 1, part, vec![0; size]));
        assert!(out.error.is_none());
        assert_eq!(lone.early_frames(), kept, "part {part} of {size} bytes");
    }
    // Uploads whose certificates alone fill the parties' budget (a frame carries at most
    // 64 MiB, and so does one party's share of it): the one that does not fit is dropped,
    // and the node's key stays.
    let big = vtwin_consortium::node::EARLY_UPLOAD_BYTES_PER_PARTY - 1;
    for p in [4, 5, 6, 7] {
        let out = node.handle(Role::Party(p), upload(p, 1, vec![0; big]));
        assert!(out.error.is_none());
    }
    assert_eq!(
        node.early_frames(),
        3 + 3,
        "the key, party 3's two, and three of the four large uploads"
    );
}

/// With insecure seeds a resumed job reruns iteration t under the session id of the aborted
/// attempt, and a rerun job reuses every id. A faster node's `NodeKey` of the new attempt may
/// reach a node before the coordinator's `Start` does: it must wait in the early buffer, not
/// be dropped as a late frame of the closed old attempt (wire version 1, which had no attempt
/// id, deadlocked there: CI hung a resumed consortium this way), and a late frame of the old
/// attempt must not be replayed into the new one.
#[test]
fn a_retried_session_buffers_the_new_attempts_early_frames_and_drops_the_old_ones() {
    let w = world();
    let theta = vec![0.1; w.layout.dim()];
    let public = vtwin_model::mpc_backend::circuit_public_for(&w.layout, &theta, 1.0, 3).unwrap();
    let wire = WirePublic::try_from(&public).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut nodes: Vec<NodeSession> = NodeId::ALL
        .into_iter()
        .map(|id| {
            NodeSession::new(
                id,
                SealKey::generate(&mut rng),
                verifier(),
                node_policy(&w),
                SecretRandomness::InsecureSeed(9),
            )
        })
        .collect();
    let session = [5; 16];
    let old = Attempt {
        session,
        attempt: [1; 8],
    };
    let new = Attempt {
        session,
        attempt: [2; 8],
    };
    let start = |at| {
        frame(
            Role::Coordinator,
            at,
            0,
            0,
            Body::Start {
                public: wire.clone(),
                terms: terms(&w, 1),
            },
        )
    };
    let abort = |at| {
        frame(
            Role::Coordinator,
            at,
            0,
            0,
            Body::Abort {
                reason: "test".into(),
            },
        )
    };
    let key_to_0 = |out: NodeOutput| -> Frame {
        out.send
            .into_iter()
            .find(|o| o.to == Role::Node(0) && matches!(o.frame.body, Body::NodeKey { .. }))
            .expect("a NodeKey for node 0")
            .frame
    };
    // The old attempt: nodes 0 and 2 start; node 2's key to node 0 is held back (late).
    let late = key_to_0(nodes[2].handle(Role::Coordinator, start(old)));
    let _ = nodes[0].handle(Role::Coordinator, start(old));
    for n in &mut nodes {
        let out = n.handle(Role::Coordinator, abort(old));
        assert!(out.error.is_none() && out.open.is_none());
    }
    // The new attempt: nodes 1 and 2 start first.
    let k1 = key_to_0(nodes[1].handle(Role::Coordinator, start(new)));
    let k2 = key_to_0(nodes[2].handle(Role::Coordinator, start(new)));
    assert_eq!(late.session, k2.session, "same session id in both attempts");
    let out = nodes[0].handle(Role::Node(2), late);
    assert!(out.send.is_empty() && out.error.is_none());
    assert_eq!(
        nodes[0].early_frames(),
        0,
        "the old attempt's late key is dropped"
    );
    for (from, k) in [(Role::Node(1), k1), (Role::Node(2), k2)] {
        let out = nodes[0].handle(from, k);
        assert!(out.send.is_empty() && out.error.is_none());
    }
    assert_eq!(nodes[0].early_frames(), 2, "the new attempt's keys wait");
    let out = nodes[0].handle(Role::Coordinator, start(new));
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.open, Some(0));
    assert_eq!(nodes[0].early_frames(), 0, "both keys were replayed");
    // Every frame node 0 sends belongs to the new attempt.
    assert!(!out.send.is_empty());
    assert!(out.send.iter().all(|o| Attempt::of(&o.frame) == new));
}

#[test]
fn after_an_abort_the_same_machines_resume_and_match_an_uninterrupted_run() {
    let w = world();
    let now = Instant::now();
    let iters = 3;
    let mut reference = consortium(&w, iters, now, None);
    begin(&mut reference, &w, now);
    reference.run(now);
    let want = reference.job.trainer().unwrap().state();

    let mut c = consortium(&w, iters, now, None);
    begin(&mut c, &w, now);
    while !c
        .events
        .iter()
        .any(|e| matches!(e, JobEvent::Applied { iteration: 0, .. }))
    {
        assert!(c.step(now));
    }
    // Every frame of iteration 1 from node 2 is lost: the deadline aborts it.
    c.intercept(Box::new(|from, _, _| from != Role::Node(2)));
    c.run(now);
    let o = c.job.tick(now + Duration::from_secs(6));
    c.coordinator_output(o);
    c.run(now);
    let saved = c.job.trainer().unwrap().state();
    assert_eq!(saved.iteration, 1);
    // A new coordinator job resumes from the saved state on the same nodes and parties.
    c.intercept(Box::new(|_, _, _| true));
    let randomness = SecretRandomness::InsecureSeed(MPC_SEED);
    let (job, hello) = CoordinatorJob::new(2, iters, DELTA, timeouts(), randomness, now);
    c.job = job;
    c.events.clear();
    c.post(Role::Coordinator, hello);
    c.run(now);
    let trainer = Trainer::resume(w.config.clone(), w.layout.clone(), ROWS, saved).unwrap();
    let o = c.job.begin(trainer, now);
    c.coordinator_output(o);
    c.run(now);
    assert!(c.job.is_done(), "{:?}", c.events);
    assert_eq!(c.job.trainer().unwrap().state(), want);
}

/// Frames of one iteration between each pair of roles (the counts protocols/consortium.md
/// gives), and the wire bytes of each (printed with --nocapture for the document).
#[test]
fn one_iteration_sends_the_documented_frames() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium(&w, 1, now, None);
    c.run(now);
    c.reset_counts();
    let trainer = Trainer::new(
        w.config.clone(),
        w.layout.clone(),
        ROWS,
        BatchKey::insecure(MPC_SEED),
    )
    .unwrap();
    // What party 0 sends, in order.
    let sent = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = sent.clone();
    c.intercept(Box::new(move |from, to, f: &mut Frame| {
        if from == Role::Party(0) {
            let part = match f.body {
                Body::Upload { part, .. } => Some(part),
                _ => None,
            };
            log.borrow_mut().push((to, part));
        }
        true
    }));
    let o = c.job.begin(trainer, now);
    c.coordinator_output(o);
    c.run(now);
    assert!(c.job.is_done());
    // The first parts to the three nodes, then the late parts, then Uploaded.
    let order: Vec<(Role, Option<u8>)> = (0..2u8)
        .flat_map(|part| (0..3u8).map(move |n| (Role::Node(n), Some(part))))
        .chain([(Role::Coordinator, None)])
        .collect();
    assert_eq!(*sent.borrow(), order);
    let frames = |a: Role, b: Role| c.frames.get(&(a, b)).copied().unwrap_or(0);
    let (co, p0, p1) = (Role::Coordinator, Role::Party(0), Role::Party(1));
    let nodes = [Role::Node(0), Role::Node(1), Role::Node(2)];
    for n in nodes {
        // Start only: the uploads do not pass the coordinator.
        assert_eq!(frames(co, n), 1, "coordinator -> {n}");
        // One opening share each.
        assert_eq!(frames(n, co), 1, "{n} -> coordinator");
        for p in [p0, p1] {
            assert_eq!(frames(p, n), 2, "{p} -> {n}: Upload, both parts");
            assert_eq!(frames(n, p), 0, "{n} -> {p}");
        }
    }
    let bytes = |a: Role, b: Role| c.bytes.get(&(a, b)).copied().unwrap_or(0);
    for p in [p0, p1] {
        assert_eq!(frames(co, p), 1, "Request");
        assert_eq!(frames(p, co), 1, "Uploaded");
        // What the coordinator sees of an upload: a frame with no content, never a blob
        // (the smallest blob, node 0's seeds with the party's certificate, is about 0.9 KB).
        assert!(
            bytes(p, co) < 100,
            "{p} -> coordinator: {} bytes",
            bytes(p, co)
        );
        for n in nodes {
            assert!(bytes(p, n) > 500, "{p} -> {n}: {} bytes", bytes(p, n));
        }
    }
    let node_frames: u64 = nodes
        .iter()
        .flat_map(|a| nodes.iter().map(move |b| (*a, *b)))
        .map(|(a, b)| frames(a, b))
        .sum();
    // 6 NodeKey frames plus one frame per vtwin-mpc node-to-node message.
    assert!(node_frames > 6, "{node_frames}");
    let mut rows: Vec<_> = c.bytes.iter().collect();
    rows.sort();
    for ((a, b), bytes) in rows {
        eprintln!("{a} -> {b}: {} frames, {bytes} bytes", frames(*a, *b));
    }
}

/// Steps `c` until `done` holds for one of its events.
fn step_until(c: &mut MemoryConsortium, now: Instant, done: impl Fn(&JobEvent) -> bool) {
    while !c.events.iter().any(&done) {
        assert!(c.step(now), "ran out of frames: {:?}", c.events);
    }
}

/// Write-ahead charging: every opening reaches the driver's record before its shares are
/// combined. The coordinator "crashes" after opening 4 with its checkpoint at iteration 2;
/// the resumed job charges the two lost openings from the record, replays iterations 2..4
/// with fresh openings (fresh batches: the result differs from an uninterrupted run), and
/// the ledger counts every opening: the 5 recorded before the crash plus one per iteration
/// after the checkpoint.
#[test]
fn openings_lost_with_a_crash_are_charged_at_resume_and_replayed_with_fresh_batches() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use vtwin_model::opening_log::OpeningRecord;

    let w = world();
    let now = Instant::now();
    let iters = 6;
    let mut reference = consortium(&w, iters, now, None);
    begin(&mut reference, &w, now);
    reference.run(now);
    let uninterrupted = reference.job.trainer().unwrap().state();

    let log: Rc<RefCell<Vec<OpeningRecord>>> = Rc::default();
    let mut c = consortium(&w, iters, now, None);
    let record = log.clone();
    c.on_charge(Box::new(move |r| {
        record.borrow_mut().push(r);
        Ok(())
    }));
    begin(&mut c, &w, now);
    step_until(&mut c, now, |e| {
        matches!(e, JobEvent::Applied { iteration: 1, .. })
    });
    let checkpoint = c.job.trainer().unwrap().state();
    assert_eq!((checkpoint.iteration, checkpoint.openings), (2, 2));
    step_until(&mut c, now, |e| {
        matches!(e, JobEvent::Applied { iteration: 4, .. })
    });
    let before_crash = log.borrow().len() as u64;
    assert_eq!(before_crash, 5);
    assert!(log
        .borrow()
        .iter()
        .enumerate()
        .all(|(i, r)| r.opening == i as u64 && r.iteration == i as u64));

    // Crash: the job and its in-memory trainer are gone; the checkpoint and the log remain.
    // The frames of its iteration in flight die with it.
    c.intercept(Box::new(|_, to, _| to != Role::Coordinator));
    c.run(now);
    c.intercept(Box::new(|_, _, _| true));
    let randomness = SecretRandomness::InsecureSeed(MPC_SEED);
    let (job, hello) = CoordinatorJob::new(2, iters, DELTA, timeouts(), randomness, now);
    c.job = job;
    c.events.clear();
    c.post(Role::Coordinator, hello);
    c.run(now);
    let mut trainer =
        Trainer::resume(w.config.clone(), w.layout.clone(), ROWS, checkpoint.clone()).unwrap();
    let lost = trainer.charge_recorded(
        log.borrow()
            .iter()
            .map(|r| (r.opening, r.truncation_failure)),
    );
    assert_eq!(lost, before_crash - checkpoint.openings);
    let o = c.job.begin(trainer, now);
    c.coordinator_output(o);
    c.run(now);
    assert!(c.job.is_done(), "{:?}", c.events);
    let t = c.job.trainer().unwrap();
    let want = before_crash + (iters - checkpoint.iteration);
    assert_eq!(t.iteration(), iters);
    assert_eq!(t.openings(), want);
    assert_eq!(t.ledger().unwrap().steps(), want);
    // The replays were recorded under fresh opening numbers, iteration by iteration.
    let after: Vec<(u64, u64)> = log.borrow()[before_crash as usize..]
        .iter()
        .map(|r| (r.opening, r.iteration))
        .collect();
    let expect: Vec<(u64, u64)> = (checkpoint.iteration..iters)
        .map(|t| (before_crash + t - checkpoint.iteration, t))
        .collect();
    assert_eq!(after, expect);
    assert_ne!(
        t.mu(),
        &uninterrupted.mu[..],
        "replayed iterations reused their batches"
    );
}

/// An opening the driver cannot record is never combined: the job stops naming the
/// opening, nothing is applied, and the trainer charges nothing for it.
#[test]
fn an_opening_that_cannot_be_recorded_is_not_combined() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium(&w, 3, now, None);
    c.on_charge(Box::new(|r| {
        if r.opening == 1 {
            Err("disk full".into())
        } else {
            Ok(())
        }
    }));
    begin(&mut c, &w, now);
    c.run(now);
    assert!(c.job.is_stopped());
    let applied = c
        .events
        .iter()
        .filter(|e| matches!(e, JobEvent::Applied { .. }))
        .count();
    assert_eq!(applied, 1);
    match c.events.last() {
        Some(JobEvent::Aborted(JobError::Charge {
            iteration: 1,
            opening: 1,
            source,
        })) => assert_eq!(source.to_string(), "disk full"),
        other => panic!("{other:?}"),
    }
    let t = c.job.trainer().unwrap();
    assert_eq!((t.iteration(), t.openings()), (1, 1));
    assert_eq!(t.ledger().unwrap().steps(), 1);
}

#[test]
fn a_coordinator_telling_the_parties_a_larger_sigma_than_the_nodes_is_caught_by_the_nodes() {
    // The parties accept the larger sigma (more noise than their floor), but their sealed
    // inputs state it, and the nodes hold the session's terms: the upload is refused.
    assert_aborts_with(
        |_, _, f| {
            if let Body::Request { terms, .. } = &mut f.body {
                terms.sigma *= 2.0;
            }
            true
        },
        "another sigma or clip",
    );
}

#[test]
fn a_party_sent_another_theta_than_the_nodes_maps_is_caught_by_the_nodes() {
    // The coordinator gives party 1 a theta whose score maps differ from the ones it sends the
    // nodes: party 1's score roots would then bound the wrong scores and the clip would not
    // hold (protocols/clip-bound.md). Party 1 accepts the request; its sealed statement of
    // the map it used does not match the nodes' map for it.
    let w = world();
    let k = w.layout.components;
    assert_aborts_with(
        move |_, to, f| {
            if let (Role::Party(1), Body::Request { theta, .. }) = (to, &mut f.body) {
                // One of party 1's parameters (past the K weights and party 0's columns).
                let last = theta.len() - 1;
                assert!(last >= k);
                theta[last] += 0.5;
            }
            true
        },
        "another score map",
    );
}

#[test]
fn nodes_told_another_statistics_scale_than_the_party_used_refuse_its_upload() {
    // The coordinator tells all three nodes (so their Start digests agree) that party 0
    // inputs T_p at the other scale (integers for 2^32, or the reverse): its G_p would be
    // off by 2^32 and the clip's bound void. Party 0's sealed statement names the scale it
    // used, from its own schema, so the nodes' map for it differs and its upload is refused.
    assert_aborts_with(
        |_, to, f| {
            if let (Role::Node(_), Body::Start { public, .. }) = (to, &mut f.body) {
                public.parties[0].integer_stats = !public.parties[0].integer_stats;
            }
            true
        },
        "another score map",
    );
}

#[test]
fn nodes_started_with_different_weights_refuse_each_other() {
    // The coordinator sends node 2 mixture weights one ulp off the others' (still inside
    // every public bound, so each node alone accepts its Start). A public constant sits in a
    // share two nodes hold, so the nodes' shares of `r - pi` would no longer be of one value
    // and the clip factor would be random: the nodes compare digests of their Starts first.
    assert_aborts_with(
        |_, to, f| {
            if let (Role::Node(2), Body::Start { public, .. }) = (to, &mut f.body) {
                public.pi[0] -= 1;
            }
            true
        },
        "another public side",
    );
}

/// A hook that reseals every upload of party 1 to node 1 on a channel of its own (sealing is
/// anonymous), under the genuine context, with the plaintext `plain(genuine plaintext)`, and
/// keeps party 1's certificate and channel signature.
fn resealed_for_node_1(plain: fn(&[u8]) -> Vec<u8>) -> impl FnMut(Role, Role, &mut Frame) -> bool {
    let keys = node_keys();
    move |from, to, f| {
        let (session, t) = (f.session, f.iteration);
        if let (Role::Party(1), Role::Node(1), Body::Upload { sealed, .. }) =
            (from, to, &mut f.body)
        {
            let ctx = vtwin_net::SealContext {
                session,
                iteration: t,
                party: 1,
                node: 1,
            };
            let genuine = vtwin_net::unseal(&keys[1], &ctx, sealed).unwrap();
            let mut rng = ChaCha20Rng::seed_from_u64(t * 2 + 7);
            *sealed = vtwin_net::seal(&keys[1].public(), &ctx, &plain(&genuine), &mut rng).unwrap();
        }
        true
    }
}

#[test]
fn a_blob_sealed_on_another_channel_is_refused_by_the_nodes() {
    // Other inputs sealed to node 1 under party 1's genuine context, on a channel of their
    // own (sealing is anonymous), with party 1's certificate and channel signature kept (the
    // link would not let anyone but party 1 send this; the check does not rely on it). The
    // signature covers party 1's channel key, not this one, so node 1 refuses the blob
    // before it unseals (without the check this blob would fail later, as inputs that do not
    // decode; `the_partys_own_plaintext_resealed_on_an_unsigned_channel_is_refused` is the
    // case a node would otherwise compute on).
    assert_aborts_with(
        resealed_for_node_1(|_| b"forged inputs".to_vec()),
        "signature does not verify",
    );
}

#[test]
fn a_channel_is_verified_once_and_its_later_blobs_need_no_signature() {
    // Party 1's late parts (and every part of the second iteration) carry no signature:
    // each node verified the channel at its first part, and unsealing authenticates the
    // rest, so the job runs.
    let c = run_tampered(|from, _, f| {
        if let (
            Role::Party(1),
            Body::Upload {
                part, signature, ..
            },
        ) = (from, &mut f.body)
        {
            if *part == 1 || f.iteration > 0 {
                signature.clear();
            }
        }
        true
    });
    assert!(c.job.is_done(), "{:?}", c.events);
    // The channel's first blob without it is refused.
    assert_aborts_with(
        |from, _, f| {
            if let (Role::Party(1), Body::Upload { signature, .. }) = (from, &mut f.body) {
                signature.clear();
            }
            true
        },
        "channel's signature does not verify",
    );
}

#[test]
fn an_upload_whose_channel_another_party_signed_is_refused_by_the_nodes() {
    // Party 1's channel to node 2 re-signed with party 0's genuine key: the signature
    // verifies, but under a certificate naming party 0, not the party whose link it came on.
    let node_public = node_keys()[2].public();
    assert_aborts_with(
        move |from, to, f| {
            if let (Role::Party(1), Role::Node(2), Body::Upload { .. }) = (from, to, &f.body) {
                resign_channel(f, 0, 1, 2, &node_public, None);
            }
            true
        },
        "channel is signed by party 0",
    );
}

#[test]
fn a_channel_signed_for_another_node_or_party_is_refused_by_the_nodes() {
    // Party 1 signs its channel to node 2 naming node 1's key, or naming party 0 as the
    // party: neither statement is the one node 2 checks.
    let keys = node_keys();
    let (node1, node2) = (keys[1].public(), keys[2].public());
    for (party, node, key) in [(1u16, 2u8, node1), (0, 2, node2), (1, 1, node2)] {
        assert_aborts_with(
            move |from, to, f| {
                if let (Role::Party(1), Role::Node(2), Body::Upload { .. }) = (from, to, &f.body) {
                    resign_channel(f, 1, party, node, &key, None);
                }
                true
            },
            "channel's signature does not verify",
        );
    }
    // The statement it should have signed passes (the hook has power only through it).
    let c = run_tampered(move |from, to, f| {
        if let (Role::Party(1), Role::Node(2), Body::Upload { .. }) = (from, to, &f.body) {
            resign_channel(f, 1, 1, 2, &node2, None);
        }
        true
    });
    assert!(c.job.is_done(), "{:?}", c.events);
}

#[test]
fn a_channel_signed_past_its_time_or_for_too_long_is_refused_by_the_nodes() {
    // Party 1's channel to node 2 signed by party 1 itself, expiring a minute ago, or later
    // than a node accepts; within the bound it passes.
    use vtwin_consortium::upload::{unix_now, CHANNEL_MAX_AHEAD_SECS};
    let node2 = node_keys()[2].public();
    let signed_until = move |expires: u64| {
        move |from: Role, to: Role, f: &mut Frame| {
            if let (Role::Party(1), Role::Node(2), Body::Upload { .. }) = (from, to, &f.body) {
                resign_channel(f, 1, 1, 2, &node2, Some(expires));
            }
            true
        }
    };
    let now = unix_now();
    assert_aborts_with(signed_until(now - 60), "its channel's signature expires at");
    assert_aborts_with(
        signed_until(now + CHANNEL_MAX_AHEAD_SECS + 600),
        "its channel's signature expires at",
    );
    let c = run_tampered(signed_until(now + CHANNEL_MAX_AHEAD_SECS - 600));
    assert!(c.job.is_done(), "{:?}", c.events);
}

/// (iteration, channel key, signature expiry) of each of party 1's uploads to node 0, with
/// every role on `clock`, advanced by `step(t)` seconds each time a request for iteration
/// t > 0 reaches party 0 (a re-requested attempt would advance it again): the consortium
/// after `iters` iterations, and the uploads.
fn with_a_clock(
    iters: u64,
    clock: fn() -> u64,
    set: fn(u64),
    step: fn(u64) -> u64,
) -> (MemoryConsortium, Vec<(u64, [u8; 32], u64)>) {
    set(vtwin_consortium::upload::unix_now());
    let (now, mut c) = running(iters);
    for n in &mut c.nodes {
        n.set_clock(clock);
    }
    for p in &mut c.parties {
        p.set_clock(clock);
    }
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let keep = seen.clone();
    c.intercept(Box::new(move |from, to, f: &mut Frame| {
        if to == Role::Party(0) && f.iteration > 0 && matches!(f.body, Body::Request { .. }) {
            set(clock() + step(f.iteration));
        }
        if let (
            Role::Party(1),
            Role::Node(0),
            Body::Upload {
                sealed, expires, ..
            },
        ) = (from, to, &f.body)
        {
            let channel = vtwin_net::seal::channel_of(sealed).unwrap();
            keep.borrow_mut().push((f.iteration, channel, *expires));
        }
        true
    }));
    c.run(now);
    let seen = seen.borrow().clone();
    (c, seen)
}

#[test]
fn a_party_renews_its_channels_before_their_signatures_lapse() {
    // The clock moves into the renewal margin before iteration 1 (the old channel would
    // still have held), and by a whole lifetime before iteration 2 (onto the second channel's
    // last second, still accepted, so only the new key shows the renewal): each time the
    // party signs a new channel, and the nodes take it.
    use std::sync::atomic::{AtomicU64, Ordering};
    use vtwin_consortium::upload::{CHANNEL_LIFETIME_SECS, CHANNEL_RENEW_SECS};
    static NOW: AtomicU64 = AtomicU64::new(0);
    fn clock() -> u64 {
        NOW.load(Ordering::Relaxed)
    }
    fn set(v: u64) {
        NOW.store(v, Ordering::Relaxed)
    }
    fn step(t: u64) -> u64 {
        match t {
            1 => CHANNEL_LIFETIME_SECS - CHANNEL_RENEW_SECS + 1,
            _ => CHANNEL_LIFETIME_SECS,
        }
    }
    let (c, seen) = with_a_clock(3, clock, set, step);
    assert!(c.job.is_done(), "{:?}", c.events);
    let by_t = |t: u64| seen.iter().find(|s| s.0 == t).copied().unwrap();
    let (a, b, d) = (by_t(0), by_t(1), by_t(2));
    assert!(a.1 != b.1 && b.1 != d.1, "a new channel each time");
    assert_eq!(b.2 - a.2, CHANNEL_LIFETIME_SECS - CHANNEL_RENEW_SECS + 1);
    assert_eq!(d.2 - b.2, CHANNEL_LIFETIME_SECS);
    // Both parts of an iteration travel on one channel here, because this clock does not
    // move between them (a renewal may fall between the parts; nodes check each part alone).
    assert!(seen.iter().all(|s| s.1 == by_t(s.0).1));
}

#[test]
fn a_node_stops_keeping_a_channel_when_its_signature_lapses() {
    // Only the nodes' clock moves, past the party's channel expiry, before iteration 1: the
    // party (by its own clock) keeps sealing on the channel, and the nodes, whose kept entry
    // has lapsed, check it again and refuse it.
    use std::sync::atomic::{AtomicU64, Ordering};
    use vtwin_consortium::upload::CHANNEL_LIFETIME_SECS;
    static NODES: AtomicU64 = AtomicU64::new(0);
    static PARTIES: AtomicU64 = AtomicU64::new(0);
    fn nodes() -> u64 {
        NODES.load(Ordering::Relaxed)
    }
    fn parties() -> u64 {
        PARTIES.load(Ordering::Relaxed)
    }
    let start = vtwin_consortium::upload::unix_now();
    NODES.store(start, Ordering::Relaxed);
    PARTIES.store(start, Ordering::Relaxed);
    let (now, mut c) = running(2);
    for n in &mut c.nodes {
        n.set_clock(nodes);
    }
    for p in &mut c.parties {
        p.set_clock(parties);
    }
    c.intercept(Box::new(move |_, to, f: &mut Frame| {
        if to == Role::Party(0) && f.iteration == 1 && matches!(f.body, Body::Request { .. }) {
            NODES.store(start + CHANNEL_LIFETIME_SECS + 1, Ordering::Relaxed);
        }
        true
    }));
    c.run(now);
    assert!(c.job.is_stopped(), "{:?}", c.events);
    assert_eq!(
        c.job.trainer().unwrap().iteration(),
        1,
        "iteration 0 applied"
    );
    match c.events.last() {
        Some(JobEvent::Aborted(e)) => {
            let text = e.to_string();
            assert!(
                text.contains("its channel's signature expires at"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_partys_own_plaintext_resealed_on_an_unsigned_channel_is_refused() {
    // Every upload of party 1 to node 1 unsealed with node 1's key (what only a forger who
    // knows the plaintext could do) and sealed again on a channel of the forger's own, with
    // party 1's certificate and channel signature kept: well-formed inputs a node would
    // compute on, refused only because party 1 did not sign that channel. (From the cold
    // review: without the channel check the job runs on them.)
    let c = run_tampered(resealed_for_node_1(|genuine| genuine.to_vec()));
    let text = aborted(&c).to_string();
    assert!(text.contains("signature does not verify"), "{text}");
}

#[test]
fn uploads_replayed_into_another_attempt_are_refused_by_the_nodes() {
    // A party's sealed uploads of an attempt that ran to its opening, sent again into a new
    // attempt of the same session (with another public side the two openings could be
    // subtracted: the same inputs and noise): every node refuses them (the party sealed
    // each blob for the attempt it answered), and none starts the old attempt again. The
    // coordinator never holds an upload, and one it sends as its own is refused outright.
    let (now, mut c) = running(1);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let keep = seen.clone();
    c.intercept(Box::new(move |from, to, f: &mut Frame| {
        if matches!(f.body, Body::Start { .. } | Body::Upload { .. }) {
            keep.borrow_mut().push((from, to, f.clone()));
        }
        true
    }));
    c.run(now);
    assert!(c.job.is_done(), "{:?}", c.events);
    let seen = seen.borrow();
    for node in 0..3u8 {
        let to_node = |f: &&(Role, Role, Frame)| f.1 == Role::Node(node);
        let (_, _, start) = seen
            .iter()
            .find(|f| to_node(f) && matches!(f.2.body, Body::Start { .. }))
            .unwrap();
        let mut again = start.clone();
        again.attempt = [0xAB; 8];
        let n = &mut c.nodes[usize::from(node)];
        let out = n.handle(Role::Coordinator, again.clone());
        assert!(out.error.is_none(), "{:?}", out.error);
        let (party, _, upload) = seen
            .iter()
            .find(|f| to_node(f) && matches!(f.2.body, Body::Upload { .. }))
            .unwrap();
        let mut replayed = upload.clone();
        replayed.attempt = again.attempt;
        // From the coordinator's link: not a body a node takes from it.
        let out = n.handle(Role::Coordinator, replayed.clone());
        let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
        assert!(
            e.contains("unexpected Upload from coordinator"),
            "node {node}: {e}"
        );
        let out = n.handle(Role::Coordinator, again.clone());
        assert!(out.error.is_some(), "the attempt was started once");
        // From the party's own link, into a fresh attempt.
        let mut fresh = start.clone();
        fresh.attempt = [0xCD; 8];
        let out = n.handle(Role::Coordinator, fresh.clone());
        assert!(out.error.is_none(), "{:?}", out.error);
        replayed.attempt = fresh.attempt;
        let out = n.handle(*party, replayed);
        let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
        // The party sealed, inside its blob, the attempt it answered.
        assert!(
            e.contains("it was sealed for attempt") && e.contains("not for this attempt"),
            "node {node}: {e}"
        );
        // And the original attempt cannot be started again to take them either.
        let out = n.handle(Role::Coordinator, start.clone());
        let e = vtwin_host::error_chain::Chain(&out.error.expect("refused")).to_string();
        assert!(e.contains("repeats a session attempt"), "node {node}: {e}");
    }
}

#[test]
fn a_party_whose_schema_models_a_column_differently_is_caught_by_the_nodes() {
    // The parties' schema models "smoker" (2 categories, width 2) as a 0..1 integer Beta
    // column (also width 2): every width and d agree with the coordinator's layout, so
    // nothing before the nodes' check tells them apart, but the parties' score roots are
    // computed under Beta maps while the circuit applies categorical ones.
    let w = world();
    let now = Instant::now();
    let mut schema = vtwin_data::demo::demo_schema();
    let smoker = schema.column_index("smoker").unwrap();
    schema.columns[smoker].kind = vtwin_data::schema::ColumnKind::Continuous {
        min: 0.0,
        max: 1.0,
        integer: true,
        model: vtwin_data::schema::ContinuousModel::Beta,
    };
    let theirs = Layout::from_schema(&schema, w.layout.components).unwrap();
    assert_eq!(theirs.dim(), w.layout.dim());
    assert_ne!(theirs, w.layout);
    let data = PartyData::from_table(&w.table, &w.layout).unwrap();
    let own = data
        .into_iter()
        .map(|d| OwnPartyData {
            data: d,
            ids: w.table.ids.clone(),
        })
        .collect();
    let mut c = consortium_under(&w, 2, now, own, false, &schema);
    begin(&mut c, &w, now);
    c.run(now);
    let text = aborted(&c).to_string();
    assert!(text.contains("another score map"), "{text}");
}

#[test]
fn parties_whose_schema_has_no_target_are_caught_by_the_nodes() {
    // The coordinator stratifies on "smoker"; the parties' schema does not, so the party
    // holding it scores and weighs that column as a free categorical. Widths and d agree;
    // the score map the party states is not the circuit's.
    let w = targeted_world();
    assert_party_schema_is_caught_by_the_nodes(&w, &vtwin_data::demo::demo_schema());
}

#[test]
fn parties_whose_schema_has_a_target_the_coordinators_lacks_are_caught_by_the_nodes() {
    // The mirror: the parties stratify on "smoker", the coordinator does not. The party
    // holding it states a zero score map there (the pinned target, its mask in the factor)
    // while the circuit's is a categorical's (scale 1, offset -omega).
    let w = world();
    assert!(w.layout.target().is_none());
    assert_party_schema_is_caught_by_the_nodes(&w, &targeted_world().schema);
}

/// A coordinator over `w` whose parties hold the same records under `schema` (the same
/// statistics, another model of the target): the nodes refuse the party's score map
/// statement, and nothing is opened or applied.
fn assert_party_schema_is_caught_by_the_nodes(w: &World, schema: &vtwin_data::Schema) {
    let data = PartyData::from_table(&w.table, &w.layout).unwrap();
    let own = data
        .into_iter()
        .map(|d| OwnPartyData {
            data: d,
            ids: w.table.ids.clone(),
        })
        .collect();
    let now = Instant::now();
    let mut c = consortium_under(w, 2, now, own, false, schema);
    begin(&mut c, w, now);
    c.run(now);
    let text = aborted(&c).to_string();
    assert!(text.contains("another score map"), "{text}");
    assert!(
        !c.events.iter().any(|e| matches!(e, JobEvent::ChargeDue(_))),
        "opened: {:?}",
        c.events
    );
}

#[test]
fn parties_asked_for_different_batches_are_caught_by_the_nodes() {
    // Party 1 is asked for every record one further on: row r of party 0 would be joined
    // with row r + 1 of party 1 (two people in one record, one person in two). Each party
    // accepts its request; the nodes compare the parties' sealed batch statements.
    let c = run_tampered(|_, to, f| {
        if let (Role::Party(1), Body::Request { batch, .. }) = (to, &mut f.body) {
            for i in batch.iter_mut().filter(|i| **i < ROWS as u32 - 1) {
                *i += 1;
            }
        }
        true
    });
    let text = aborted(&c).to_string();
    assert!(
        text.contains("another batch than the other parties"),
        "{text}"
    );
}

#[test]
fn a_party_sent_back_to_all_its_rows_is_caught_by_the_nodes() {
    // After the alignment the relay sends `Hello` to party 1 only, which goes back to all of
    // its rows, and asks it to train on them (with its own digest, so it accepts) while
    // party 0 trains on the aligned ones: the nodes hold the session's rows digest.
    let w = world();
    let now = Instant::now();
    let mut c = consortium_of(&w, 2, now, overlapping(&w), true);
    c.run(now);
    let hello = frame(Role::Coordinator, Attempt::NONE, 0, 0, Body::Hello);
    let info = only(c.parties[1].handle(Role::Coordinator, &hello).unwrap());
    let Body::PartyInfo {
        ids_digest: all, ..
    } = info.body
    else {
        panic!("{info:?}")
    };
    assert_eq!(
        all,
        vtwin_model::party_data::ids_digest(&overlapping(&w)[1].ids)
    );
    c.intercept(Box::new(move |_, to, f: &mut Frame| {
        if let (Role::Party(1), Body::Request { terms, .. }) = (to, &mut f.body) {
            terms.rows = all;
        }
        true
    }));
    train_aligned(&mut c, &w, now);
    let e = aborted(&c).to_string();
    assert!(e.contains("other rows than this session's terms"), "{e}");
}

#[test]
fn a_request_during_an_alignment_is_refused_and_ends_it() {
    let w = world();
    let mut c = consortium_of(&w, 2, Instant::now(), overlapping(&w), true);
    only(
        c.parties[0]
            .handle(Role::Coordinator, &align_start(2, [12; 16]))
            .unwrap(),
    );
    // The digest of the rows it holds while aligning (all of its own).
    let mut t = terms(&w, 2);
    t.rows = vtwin_model::party_data::ids_digest(&overlapping(&w)[0].ids);
    let request = frame(
        Role::Coordinator,
        Attempt {
            session: [1; 16],
            attempt: [1; 8],
        },
        0,
        0,
        Body::Request {
            batch: vec![1, 2],
            theta: vec![0.0; w.layout.dim()],
            terms: t,
        },
    );
    let reply = only(c.parties[0].handle(Role::Coordinator, &request).unwrap());
    assert_eq!(
        reply.body,
        Body::Refused {
            refusal: Refusal::Rows
        }
    );
    // The alignment's keys are gone: a later alignment message finds none running.
    let a1 = only(
        c.parties[1]
            .handle(Role::Coordinator, &align_start(2, [12; 16]))
            .unwrap(),
    );
    let e = c.parties[0]
        .handle(Role::Coordinator, &relayed(&a1, [12; 16]))
        .unwrap_err();
    assert!(
        e.public().contains("no record alignment is running"),
        "{}",
        e.public()
    );
}

/// The uploads' sealed blobs: every blob of a party to a node in a job on one channel (the
/// same public key), one channel per (party, node), a fresh salt in every blob; after a
/// `Hello` (a new job) the party's next upload is on new channels.
#[test]
fn uploads_share_a_channel_per_node_and_job_with_a_fresh_salt_each() {
    use std::cell::RefCell;
    use std::collections::{HashMap, HashSet};
    use std::rc::Rc;
    use vtwin_net::seal::SALT_BYTES;
    type Seen = Vec<((u16, u8), [u8; 32], [u8; SALT_BYTES])>;
    let seen: Rc<RefCell<Seen>> = Rc::default();
    let requests: Rc<RefCell<Vec<Frame>>> = Rc::default();
    let (s, r) = (seen.clone(), requests.clone());
    let (now, mut c) = running(2);
    c.intercept(Box::new(move |from, to, f| {
        match (from, to, &f.body) {
            (Role::Party(p), Role::Node(n), Body::Upload { sealed, .. }) => {
                let channel: [u8; 32] = sealed[..32].try_into().unwrap();
                let salt = sealed[32..32 + SALT_BYTES].try_into().unwrap();
                s.borrow_mut().push(((p, n), channel, salt));
            }
            (Role::Coordinator, Role::Party(0), Body::Request { .. }) => {
                r.borrow_mut().push(f.clone())
            }
            _ => {}
        }
        true
    }));
    c.run(now);
    assert!(c.job.is_done(), "{:?}", c.events);
    let seen = seen.borrow();
    // Two parties, three nodes, two iterations, two parts.
    assert_eq!(seen.len(), 2 * 3 * 2 * 2);
    let mut channels: HashMap<(u16, u8), HashSet<[u8; 32]>> = HashMap::new();
    for (link, channel, _) in seen.iter() {
        channels.entry(*link).or_default().insert(*channel);
    }
    assert_eq!(channels.len(), 6);
    assert!(channels.values().all(|c| c.len() == 1), "{channels:?}");
    let distinct: HashSet<_> = channels.values().flatten().collect();
    assert_eq!(distinct.len(), 6, "one channel per (party, node)");
    let salts: HashSet<_> = seen.iter().map(|(_, _, salt)| *salt).collect();
    assert_eq!(salts.len(), seen.len(), "a fresh salt in every blob");
    // A new job at party 0: its next upload (the last request again, with the plan
    // accepted anew) is on new channels.
    let hello = frame(Role::Coordinator, Attempt::NONE, 0, 0, Body::Hello);
    c.parties[0].handle(Role::Coordinator, &hello).unwrap();
    let request = requests.borrow().last().unwrap().clone();
    let out = c.parties[0].handle(Role::Coordinator, &request).unwrap();
    let mut fresh = HashSet::new();
    for o in &out {
        if let (Role::Node(n), Body::Upload { sealed, .. }) = (o.to, &o.frame.body) {
            let channel: [u8; 32] = sealed[..32].try_into().unwrap();
            assert!(!distinct.contains(&channel), "node {n}");
            fresh.insert(channel);
        }
    }
    // Three uploads (part 0 to each node), on three new, distinct channels.
    assert_eq!(
        fresh.len(),
        3,
        "{:?}",
        out.iter().map(|o| o.to).collect::<Vec<_>>()
    );
}
