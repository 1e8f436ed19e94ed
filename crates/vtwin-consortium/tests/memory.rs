//! The three state machines wired in memory: a run equals the in-memory mpc backend bit for
//! bit; failures abort without applying anything and name the peer.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_consortium::memory::MemoryConsortium;
use vtwin_consortium::{
    CoordinatorJob, JobError, JobEvent, NodeSession, PartyResponder, PartySetup, Timeouts,
};
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::NoiseRngs;
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed::Renormalise;
use vtwin_model::layout::Layout;
use vtwin_model::mpc::MpcBackend;
use vtwin_model::secret_randomness::SecretRandomness;
use vtwin_model::stats::{ids_digest, PartyData};
use vtwin_model::trainer::Trainer;
use vtwin_model::Table;
use vtwin_mpc::NodeId;
use vtwin_net::{Role, SealKey};

const MPC_SEED: u64 = 11;
const NOISE_SEED: u64 = 12;
const ROWS: usize = 120;

struct World {
    layout: Layout,
    table: Table,
    config: DpviConfig,
}

fn world() -> World {
    let table = vtwin_model::demo::demo_table(ROWS, 1);
    let layout = Layout::from_schema(&vtwin_model::demo::demo_schema(), 3).unwrap();
    let config = DpviConfig {
        sample_rate: 0.1,
        clip: 1.0,
        sigma: 1.0,
        adam: AdamConfig::default(),
        seed: 5,
    };
    World {
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
    let randomness = SecretRandomness::InsecureSeed(MPC_SEED);
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let keys: Vec<SealKey> = (0..3).map(|_| SealKey::generate(&mut rng)).collect();
    let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
    let data = PartyData::from_table(&w.table, &w.layout).unwrap();
    let parties = data
        .into_iter()
        .enumerate()
        .map(|(p, d)| {
            let mut ids = w.table.ids.clone();
            if tamper_ids == Some(p) {
                ids.rotate_left(1);
            }
            PartyResponder::new(PartySetup {
                index: p as u16,
                schema: vtwin_model::demo::demo_schema(),
                data: d,
                ids_digest: ids_digest(&ids),
                node_seal_publics: publics,
                randomness,
                noise_seed: Some(NOISE_SEED),
                renormalise: Renormalise::ClosedForm,
            })
            .unwrap()
        })
        .collect();
    let nodes = keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| NodeSession::new(NodeId::new(i as u8).unwrap(), k, randomness))
        .collect();
    let (job, hello) = CoordinatorJob::new(2, iters, timeouts(), randomness, now);
    MemoryConsortium::new(job, hello, nodes, parties)
}

fn begin(c: &mut MemoryConsortium, w: &World, now: Instant) {
    c.run(now);
    assert!(
        matches!(c.events.first(), Some(JobEvent::Agreed { rows, .. }) if *rows == ROWS as u64),
        "{:?}",
        c.events
    );
    let trainer = Trainer::new(w.config.clone(), w.layout.clone(), ROWS).unwrap();
    let o = c.job.begin(trainer, now);
    c.coordinator_output(o);
}

#[test]
fn a_run_equals_the_in_memory_mpc_backend_bit_for_bit() {
    let w = world();
    let now = Instant::now();
    let iters = 3;
    let mut c = consortium(&w, iters, now, None);
    begin(&mut c, &w, now);
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

#[test]
fn a_silent_node_times_out_naming_it_and_nothing_is_applied() {
    let w = world();
    let now = Instant::now();
    let mut c = consortium(&w, 3, now, None);
    begin(&mut c, &w, now);
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
