//! The gradient circuit against a plaintext replica of `vtwin_model::fixed::fixed_gradient`
//! (same products and truncations, in that function's order), bit for bit given the
//! MPC's masks, revealed to the coordinator only.

#[path = "common/gradient_ref.rs"]
mod gradient_ref;

use gradient_ref::{instance, reference, run_mpc, Instance};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vtwin_fixed::Probabilistic;
use vtwin_mpc::gradient::masks_in_reference_order;

fn check(inst: &Instance) -> Result<(), TestCaseError> {
    let (got, masks, _) = run_mpc(inst);
    let mut seq = masks_in_reference_order(&inst.public, &masks).into_iter();
    let mut t = Probabilistic::new(move || seq.next().expect("enough masks"));
    let want = reference(inst, &mut t);
    prop_assert_eq!(
        t.calls() as usize,
        masks.iter().map(Vec::len).sum::<usize>()
    );
    prop_assert_eq!(got, want);
    Ok(())
}

#[test]
fn gradient_matches_the_fixed_backend_order_bit_for_bit() {
    check(&instance(1, 6, 3, &[2, 3])).expect("P = 2");
    check(&instance(2, 4, 2, &[1, 2, 2])).expect("P = 3");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 6,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/gradient.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn gradient_equivalence(seed in any::<u64>(), b in 1usize..8, k in 1usize..5, w1 in 1usize..4, w2 in 1usize..4) {
        check(&instance(seed, b, k, &[w1, w2]))?;
    }
}

/// Rounds and traffic of one iteration at the Adult paper setting (B = 100, K = 20, two
/// parties with |T| = 75 each, d = 3020), against the O(B K + d) analysis.
#[test]
fn adult_scale_costs() {
    let (b, k, widths) = (100usize, 20usize, [75usize, 75]);
    let inst = instance(5, b, k, &widths);
    let d = inst.public.dim();
    let (got, masks, counters) = run_mpc(&inst);
    assert_eq!(got.len(), d);
    let total = counters[0].plus(counters[1]).plus(counters[2]);
    let p = widths.len() as u64;
    // Inputs (all parties and the noise): 1; circuit 2P + 92; reveal 1.
    assert_eq!(total.rounds, 1 + (2 * p + 92) + 1);
    // Between nodes: input forwarding (one element per input value) plus the circuit.
    // Party 0 also inputs the B padding flags.
    let inputs = (widths.len() * 2 * b * k + b * widths.iter().sum::<usize>() + b + d) as u64;
    let circuit = total.elements - inputs;
    // Per (record, component): mat products 3 (P - 1) + pm 3 + divide 9 + score-root
    // products 3 P + w 3 = 12 + 6 P;
    // per record: normalised reciprocal 180 + two norm inner products 6 + clip factor 279
    // + padding flag 3;
    // per component: pi sc 3; per gradient coordinate of the parties: M and G_p, 6.
    let (bk, bb, kk, dd) = ((b * k) as u64, b as u64, k as u64, (d - k) as u64);
    assert_eq!(circuit, (12 + 6 * p) * bk + 468 * bb + 3 * kk + 6 * dd);
    println!(
        "B = {b}, K = {k}, d = {d}: {} rounds, {} messages, {} bytes between nodes \
         ({} elements = {inputs} input forwarding + circuit (12 + 6 P) B K + 468 B + 3 K + 6 (d - K) \
         = {circuit}); {} bytes to the coordinator; {} truncation layers",
        total.rounds,
        total.messages,
        total.bytes,
        total.elements,
        total.bytes_to_clients,
        masks.len()
    );
}

fn plain(inst: &Instance) -> Vec<vtwin_mpc::gradient::PlainUpload> {
    (0..inst.public.parties.len())
        .map(|p| gradient_ref::plain(inst, p))
        .collect()
}

/// The backend entry point: fresh randomness, so compared with the floor-truncation
/// reference within the accumulated probabilistic-rounding error.
#[test]
fn simulate_iteration_is_close_to_the_floor_reference() {
    use rand_chacha::rand_core::SeedableRng;
    let inst = instance(9, 20, 4, &[3, 5]);
    let noise: Vec<u128> = inst.noise.iter().map(|z| *z as u128).collect();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
    let it = vtwin_mpc::gradient::simulate_iteration(
        &inst.public,
        &plain(&inst),
        &[&noise],
        gradient_ref::bounds(),
        &mut rng,
    )
    .expect("iteration");
    let worst = max_abs_diff(&it.gradient, &reference(&inst, &mut vtwin_fixed::Floor));
    println!("max |mpc - floor| = {worst:e}");
    // The second norm sum is resolved at 2^(2L - 32) = 2^-10 on |g|^2, so a clipped
    // record's factor may differ between the two rounding rules by ~2^-11 relative.
    assert!(worst < 2f64.powi(-16), "{worst}");
    assert!(it.client_bytes > 0);
}

#[test]
fn simulate_iteration_rejects_out_of_range_uploads() {
    use rand_chacha::rand_core::SeedableRng;
    let inst = instance(9, 3, 2, &[1, 1]);
    let mut ups = plain(&inst);
    ups[1].stats[2] = gradient_ref::enc(15.0);
    let noise = vec![0u128; inst.public.dim()];
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
    let r = vtwin_mpc::gradient::simulate_iteration(
        &inst.public,
        &ups,
        &[&noise],
        gradient_ref::bounds(),
        &mut rng,
    );
    assert!(matches!(
        r,
        Err(vtwin_mpc::gradient::IterationError::Input { party: 1, .. })
    ));
}

#[test]
fn simulate_iteration_adds_every_noise_contribution() {
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    let mut inst = instance(9, 20, 4, &[3, 5]);
    inst.public.noise_contributors = 3;
    let noise: Vec<u128> = inst.noise.iter().map(|z| *z as u128).collect();
    // Three contributions that sum to the instance's noise, each uniform-looking alone.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
    let a: Vec<u128> = noise.iter().map(|_| u128::from(rng.next_u64())).collect();
    let b: Vec<u128> = noise.iter().map(|_| u128::from(rng.next_u64())).collect();
    let c: Vec<u128> = noise
        .iter()
        .zip(a.iter().zip(&b))
        .map(|(z, (a, b))| z.wrapping_sub(*a).wrapping_sub(*b))
        .collect();
    let it = vtwin_mpc::gradient::simulate_iteration(
        &inst.public,
        &plain(&inst),
        &[&a, &b, &c],
        gradient_ref::bounds(),
        &mut rng,
    )
    .expect("iteration");
    let worst = max_abs_diff(&it.gradient, &reference(&inst, &mut vtwin_fixed::Floor));
    assert!(worst < 2f64.powi(-16), "{worst}");

    // The number of contributions must match the public count.
    let err = vtwin_mpc::gradient::simulate_iteration(
        &inst.public,
        &plain(&inst),
        &[&a, &b],
        gradient_ref::bounds(),
        &mut rng,
    );
    assert!(err.is_err());
}

/// Largest |a_i - b_i| of two encoded vectors, as reals.
fn max_abs_diff(a: &[u128], b: &[u128]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (vtwin_fixed::Fx(*x) - vtwin_fixed::Fx(*y)).to_f64().abs())
        .fold(0.0, f64::max)
}

/// The node program every deployment runs (`iteration_node`), built from per-node keys as a
/// node process builds it (its own key, the three publics, `PairSeeds::derive`), gives the
/// same opening under any delivery order as `simulate_iteration` with the same draws; nodes
/// passed in the wrong slots are refused.
#[test]
fn iteration_nodes_agree_with_simulate_iteration_under_any_delivery_order() {
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use vtwin_mpc::gradient::{iteration_node, simulate_iteration, upload_messages};
    use vtwin_mpc::sim::run_nodes;
    use vtwin_mpc::{
        Delivery, InputClient, MpcError, NodeId, NodeKey, Opening, PairSeeds, SessionId,
    };

    let inst = instance(11, 6, 3, &[2, 3]);
    let noise: Vec<u128> = inst.noise.iter().map(|z| *z as u128).collect();
    let want = simulate_iteration(
        &inst.public,
        &plain(&inst),
        &[&noise],
        gradient_ref::bounds(),
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(21),
    )
    .expect("iteration")
    .gradient;
    for delivery in [Delivery::Fifo, Delivery::Random(1), Delivery::Random(2)] {
        // simulate_iteration's draws, in its documented order.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(21);
        let mut s = [0u8; 16];
        rng.fill_bytes(&mut s);
        let session = SessionId(s);
        let mut msgs = Vec::new();
        for (p, up) in plain(&inst).iter().enumerate() {
            let (mut c, setup) = InputClient::new(p as u16, session, &mut rng);
            msgs.extend(setup);
            msgs.extend(upload_messages(&mut c, up, gradient_ref::bounds()).expect("range"));
        }
        let (mut nc, setup) = InputClient::new(2, session, &mut rng);
        msgs.extend(setup);
        msgs.extend(nc.share_raw(&noise));
        let keys: Vec<NodeKey> = (0..3).map(|_| NodeKey::generate(&mut rng)).collect();
        let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
        let node = |id: NodeId| {
            let seeds = PairSeeds::derive(id, &keys[id.index()], &publics, session).expect("seeds");
            iteration_node(id, session, seeds, inst.public.clone())
        };
        let [n0, n1, n2] = NodeId::ALL;
        let rep = run_nodes([node(n0), node(n1), node(n2)], msgs.clone(), delivery).expect("run");
        let mut o = Opening::new(session, inst.public.coordinator(), inst.public.dim());
        for m in rep.to_clients {
            o.handle(m).expect("reveal");
        }
        assert_eq!(o.result().expect("opened"), want, "{delivery:?}");
        assert_eq!(
            rep.outputs[0], rep.counters[0],
            "the program returns its counters"
        );
        // Wrong slots.
        let err = run_nodes([node(n1), node(n0), node(n2)], msgs, delivery).unwrap_err();
        assert!(matches!(err, MpcError::Misrouted { .. }), "{err}");
    }
}
