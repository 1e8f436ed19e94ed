//! The three roles driven in memory ([`vtwin_iteration::memory`]) against the plaintext
//! reference of the circuit (`vtwin-mpc/tests/common/gradient_ref.rs`, reused as is).

mod common;

use common::gradient_ref::{self, instance, reference};
use common::{max_abs_diff, messages, split_noise};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_iteration::memory::{node_keys, run};
use vtwin_iteration::node::program;
use vtwin_iteration::party::{Party, ShardError};
use vtwin_iteration::SecretRandomness;
use vtwin_mpc::sim::run_nodes;
use vtwin_mpc::{Delivery, Message, MpcError, NodeId, SessionId};

/// Each party shards its upload and a share of the noise; the nodes add the shares, and the
/// opening is within the accumulated probabilistic rounding of the floor reference.
#[test]
fn roles_add_every_noise_share_and_match_the_floor_reference() {
    let mut inst = instance(9, 20, 4, &[3, 5, 2]);
    inst.public.noise_contributors = 3;
    let r = SecretRandomness::InsecureSeed(3);
    let session = r.session(0);
    let msgs = messages(&inst, session, &split_noise(&inst, 8));
    let it = run(
        session,
        &inst.public,
        &node_keys(&r, 0),
        msgs.clone(),
        Delivery::Fifo,
    )
    .expect("iteration");
    let worst = max_abs_diff(&it.opened, &reference(&inst, &mut vtwin_fixed::Floor));
    println!("max |mpc - floor| = {worst:e}");
    // The second norm sum is resolved at 2^(2L - 32 - F) = 2^-16 on |g|^2 (2^-10 before
    // 2026-11-29), so a clipped record's factor may differ between the two rounding rules by
    // ~2^-11 relative at most.
    assert!(worst < 2f64.powi(-16), "{worst}");
    assert!(it.client_bytes > 0);

    // A party's messages missing: the nodes cannot finish.
    let p0_only: Vec<Message> = msgs
        .into_iter()
        .filter(|m| matches!(m.from, vtwin_mpc::Peer::Client(0 | 3)))
        .collect();
    let err = run(
        session,
        &inst.public,
        &node_keys(&r, 0),
        p0_only,
        Delivery::Fifo,
    )
    .unwrap_err();
    assert!(matches!(err, MpcError::Stalled { .. }), "{err}");
}

#[test]
fn a_party_refuses_out_of_range_uploads_and_bad_noise() {
    let inst = instance(9, 3, 2, &[1, 1]);
    let mut up = gradient_ref::plain(&inst, 1);
    up.stats[2] = gradient_ref::enc(15.0);
    let party = Party {
        index: 1,
        parties: 2,
        session: SessionId([1; 16]),
    };
    let d = inst.public.dim();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let r = party.shard(&up, gradient_ref::bounds(), &vec![0; d], d, &mut rng);
    assert!(matches!(r, Err(ShardError::Input(_))), "{r:?}");
    let ok = gradient_ref::plain(&inst, 1);
    let r = party.shard(&ok, gradient_ref::bounds(), &vec![0; d - 1], d, &mut rng);
    assert!(
        matches!(r, Err(ShardError::NoiseLength { got, want }) if got == d - 1 && want == d),
        "{r:?}"
    );
}

/// The node programs give the same opening under any delivery order; nodes passed in the
/// wrong slots are refused.
#[test]
fn nodes_agree_under_any_delivery_order() {
    let mut inst = instance(11, 6, 3, &[2, 3]);
    inst.public.noise_contributors = 2;
    let r = SecretRandomness::InsecureSeed(5);
    let session = r.session(0);
    let msgs = messages(&inst, session, &split_noise(&inst, 2));
    let keys = node_keys(&r, 0);
    let want = run(session, &inst.public, &keys, msgs.clone(), Delivery::Fifo)
        .expect("iteration")
        .opened;
    for delivery in [Delivery::Random(1), Delivery::Random(2)] {
        let got = run(session, &inst.public, &keys, msgs.clone(), delivery).expect("run");
        assert_eq!(got.opened, want, "{delivery:?}");
    }
    let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
    let node = |id: NodeId| {
        program(
            id,
            &keys[id.index()],
            &publics,
            session,
            inst.public.clone(),
        )
        .expect("seeds")
    };
    let [n0, n1, n2] = NodeId::ALL;
    let err = run_nodes([node(n1), node(n0), node(n2)], msgs, Delivery::Fifo).unwrap_err();
    assert!(matches!(err, MpcError::Misrouted { .. }), "{err}");
}

/// The coordinator refuses a shape whose squared norm could leave the clip factor's 80-bit
/// window (its truncation-failure bound would not hold), and names P and K. The bound is
/// conservative (every responsibility at R), so P K = 2000 is refused although the
/// responsibilities' sum of about 1 would keep it inside.
#[test]
fn the_coordinator_refuses_shapes_beyond_the_clip_window() {
    use vtwin_iteration::coordinator::{circuit_public, PublicError, ScoreMap};
    let shape = |k: usize| {
        let pi = vec![1.0 / k as f64; k];
        let (scale, offset) = (vec![0.5; k], vec![0.1; k]);
        let maps = [
            ScoreMap {
                width: 1,
                scale: &scale,
                offset: &offset,
                integer_stats: false,
            },
            ScoreMap {
                width: 1,
                scale: &scale,
                offset: &offset,
                integer_stats: true,
            },
        ];
        circuit_public(100, &pi, 1.0, &maps)
    };
    assert!(shape(20).is_ok());
    assert!(shape(880).is_ok());
    match shape(1000) {
        Err(e @ PublicError::NormWindow { .. }) => {
            let text = e.to_string();
            assert!(text.contains("2 parties x 1000 components"), "{text}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("P K = 2000 accepted"),
    }
}
