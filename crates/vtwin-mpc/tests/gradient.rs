//! The gradient circuit against a plaintext replica of `vtwin_model::fixed_backend::fixed_gradient`
//! (same products and truncations, in that function's order), bit for bit given the
//! MPC's masks, revealed to the coordinator only.

#[path = "common/gradient_ref.rs"]
mod gradient_ref;

use gradient_ref::{instance, instance_with, reference, run_mpc, Instance};
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

/// A party that gives nodes 1 and 2 different late inputs (its T_p correction, or its noise
/// contributor's seed), which the nodes take only at the `M_p` layer, is caught there by
/// nodes 1 and 2, and neither reveals anything; node 0, which takes no part in the check,
/// may send its own share (uniform on its own), so the opening never completes.
#[test]
fn inconsistent_late_inputs_are_refused_before_any_reveal() {
    use vtwin_mpc::{MpcError, NodeId, Peer};
    let inst = instance(6, 4, 2, &[2, 3]);
    let noise = inst.public.parties.len() as u16;
    // (sender, step, addressee) of the message to alter.
    for (from, step, to) in [(1u16, 2u64, 1u8), (noise, 0, 2), (noise, 1, 1)] {
        let mut msgs = gradient_ref::client_messages(&inst);
        let m = msgs
            .iter_mut()
            .find(|m| {
                (m.from, m.step, m.to)
                    == (
                        Peer::Client(from),
                        step,
                        Peer::Node(NodeId::new(to).expect("id")),
                    )
            })
            .expect("the message");
        m.payload[0] ^= 1;
        let (errors, to_clients) = gradient_ref::run_mpc_on(&inst, msgs);
        for i in [1, 2] {
            assert!(
                matches!(errors[i], Some(MpcError::InconsistentInput { .. })),
                "client {from} step {step} to node {to}: node {i}: {:?}",
                errors[i]
            );
        }
        assert!(errors[0].is_none());
        // Node 0 takes no part in the check and may send its own share, uniform on its own.
        assert!(
            to_clients.len() <= 1
                && to_clients
                    .iter()
                    .all(|m| m.from == Peer::Node(NodeId::ALL[0])),
            "nodes 1 and 2 reveal nothing"
        );
    }
    // Untouched, all three reveal.
    let (errors, to_clients) =
        gradient_ref::run_mpc_on(&inst, gradient_ref::client_messages(&inst));
    assert_eq!(errors, vec![None, None, None]);
    assert_eq!(to_clients.len(), 3);
}

#[test]
fn gradient_matches_the_fixed_backend_order_bit_for_bit() {
    check(&instance(1, 6, 3, &[2, 3])).expect("P = 2");
    check(&instance(2, 4, 2, &[1, 2, 2])).expect("P = 3");
}

/// Parties that input T_p as raw integers (`PartyMap::integer_stats`): G_p in one truncation,
/// equal to the reference bit for bit whether all, some or none of the parties are integer;
/// and when all are, one truncation layer (and round) fewer.
#[test]
fn integer_parties_match_the_reference_and_save_a_layer() {
    for (seed, ints) in [(3u64, [true, true]), (4, [true, false]), (5, [false, true])] {
        let inst = instance_with(seed, 6, 3, &[2, 3], &ints);
        check(&inst).expect("integer parties");
        let (_, masks, counters) = run_mpc(&inst);
        let all = ints.iter().all(|&i| i);
        assert_eq!(masks.len(), 2 + 17 - usize::from(all), "{ints:?}");
        assert_eq!(masks.len(), inst.public.truncation_layers());
        assert_eq!(counters[0].rounds, 2 + 40 + 1 - u64::from(all), "{ints:?}");
    }
    check(&instance_with(6, 4, 2, &[1, 2, 2], &[true, false, true])).expect("P = 3");
}

/// A batch where some records clip (over = 1) and some do not (over = 0), with padding rows
/// (flag 0, party 0's factor 0, den = 0) among them: the clip's selection, folded into w's
/// layer through `over r` and `over flag`, must pick each record's own bit.
#[test]
fn gradient_matches_with_clipped_unclipped_and_padding_rows_mixed() {
    use gradient_ref::enc;
    use vtwin_fixed::Fx;
    for seed in 0..4u64 {
        let (b, k_n) = (8usize, 3usize);
        let mut inst = instance(seed + 40, b, k_n, &[2, 3]);
        // C' = 10: a record whose score roots are 0.1 has |g|^2 ~ 2^22 (0.1 r)^2 K P >> 100;
        // one whose roots are 1e-5 has |g|^2 <= 2 + 2^22 1e-10 K P << 100.
        inst.public.clip = enc(10.0);
        for root in inst.root.iter_mut() {
            for (i, v) in root.iter_mut().enumerate() {
                let n = i / k_n;
                *v = enc(if n % 2 == 0 { 0.1 } else { 1e-5 } * (1.0 + (i % 5) as f64 / 5.0));
            }
        }
        for n in [1usize, 4] {
            inst.flags[n] = Fx::ZERO;
            for v in &mut inst.mat[0][n * k_n..(n + 1) * k_n] {
                *v = Fx::ZERO;
            }
        }
        check(&inst).expect("mixed batch");
    }
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
    fn gradient_equivalence(seed in any::<u64>(), b in 1usize..8, k in 1usize..5, w1 in 1usize..4, w2 in 1usize..4, ints in any::<[bool; 2]>()) {
        check(&instance_with(seed, b, k, &[w1, w2], &ints))?;
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
    // Inputs (all parties and the noise): no round (the clients send their corrections to
    // nodes 1 and 2); circuit P + 40 (every layer 1 round); reveal 1.
    assert_eq!(total.rounds, (p + 40) + 1);
    assert_eq!(masks.len() as u64, p + 17, "truncation layers");
    // Between nodes: the circuit, plus two input checks, each riding on a truncation
    // layer's four messages between node 0 and nodes 1, 2 and between nodes 1 and 2: node
    // 0's seed digests, 4 elements to each of nodes 1 and 2, and nodes 1 and 2's digest, 2
    // elements each way. The first on the circuit's first round (the parties' first inputs),
    // the second on the M_p layer (their T_p and the noise, taken late: `LateInputs`).
    let inputs = 2 * 12u64;
    let circuit = total.elements - inputs;
    // Uploads: every input value reaches nodes 1 and 2 (party 0 also inputs the B padding
    // flags), plus the seeds and headers.
    let values = (widths.len() * 2 * b * k + b * widths.iter().sum::<usize>() + b + d) as u64;
    // Elements in all per truncated value (`multiply::layer`) and per reshared one.
    let (t, r) = (5u64, 3u64);
    // Per (record, component): mat products t (P - 1) + divide 2 t (pm' beside m, then
    // r = trunc(pm' y)) + score-root products t P (z = trunc(pm' u) beside e) + over r
    // (untruncated, in the clip's first layer) r + w t = (2 P + 2) t + r = 10 P + 13 (pi is
    // folded into party 0's factor; 15 P + 13 with the products z y before 2026-11-29);
    // per record: normalised reciprocal 54 r + 7 t (reshares of the one-hot MSB, injections
    // and selection; 7 truncations in 5 layers) + the score norm's factors 2 t (Z' beside
    // the last Goldschmidt factor, y2' beside r) + the two norm sums 2 t (sum (r - pi)^2
    // and Z' y2') + clip factor 80 r + 12 t (its selection product is gone) + over flag r
    // (in its first layer) + (s - gamma - 1) over flag r (in w's layer) = 523;
    // per component: pi sc t; per gradient coordinate of the parties: M and G_p, 2 t.
    let per_bk = (2 * p + 2) * t + r;
    let per_record = (54 * r + 7 * t) + 2 * t + 2 * t + (80 * r + 12 * t) + r + r;
    let (bk, bb, kk, dd) = ((b * k) as u64, b as u64, k as u64, (d - k) as u64);
    assert_eq!((per_bk, per_record), (10 * p + 13, 523));
    assert_eq!(circuit, per_bk * bk + per_record * bb + t * kk + 2 * t * dd);
    assert_packed_words(&total, bb);
    println!(
        "B = {b}, K = {k}, d = {d}: {} rounds, {} messages, {} bytes between nodes \
         ({} elements = {inputs} of the two input checks + circuit (13 + 10 P) B K + 523 B + 5 K + 10 (d - K) \
         = {circuit}); {} bytes to the coordinator; {} truncation layers; {values} input values \
         uploaded to each of nodes 1 and 2",
        total.rounds,
        total.messages,
        total.bytes,
        total.elements,
        total.bytes_to_clients,
        masks.len()
    );
}

/// The binary layers' words travel at their windows' width (`protocols/mpc-binary.md`): per
/// record the reciprocal's 20 AND words per node at 8 bytes instead of 16 and the clip
/// factor's 23 of the 80-bit window at 10, less each packed message's run table (4 + 5 r
/// bytes); every other element whole.
fn assert_packed_words(total: &vtwin_mpc::Counters, records: u64) {
    let plain = 38 * total.messages + 16 * total.elements;
    let saved = plain - total.bytes;
    let ideal = (3 * 20 * 8 + 3 * 23 * 6) * records;
    println!("packed words: {saved} bytes saved of at most {ideal}");
    assert!(
        saved < ideal && saved > ideal * 98 / 100,
        "{saved} of {ideal}"
    );
}

/// The shipped Adult schema's shape (every column one-hot, so both parties input integer
/// statistics; B = 178 padded, K = 9, |T_1| = 167, |T_2| = 151, d = 2871): one round and
/// 5 (d - K) elements fewer than at scale 2^32, G_p's single truncation in the layer of
/// trunc(pi sc).
#[test]
fn adult_scale_costs_with_integer_statistics() {
    let (b, k, widths) = (178usize, 9usize, [167usize, 151]);
    let run = |ints: [bool; 2]| {
        let inst = instance_with(7, b, k, &widths, &ints);
        let (_, masks, counters) = run_mpc(&inst);
        let total = counters[0].plus(counters[1]).plus(counters[2]);
        (inst.public.dim(), masks.len() as u64, total)
    };
    let (d, layers, int) = run([true, true]);
    let (_, layers_real, real) = run([false, false]);
    let p = widths.len() as u64;
    assert_eq!((int.rounds, layers), ((p + 39) + 1, p + 16));
    assert_eq!((real.rounds, layers_real), ((p + 40) + 1, p + 17));
    let (t, r) = (5u64, 3u64);
    let per_bk = (2 * p + 2) * t + r;
    let (bk, bb, kk, dd) = ((b * k) as u64, b as u64, k as u64, (d - k) as u64);
    let inputs = 2 * 12u64;
    assert_eq!(
        int.elements - inputs,
        per_bk * bk + 523 * bb + t * kk + t * dd
    );
    assert_eq!(real.elements - int.elements, t * dd);
    assert_packed_words(&int, bb);
    assert_packed_words(&real, bb);
    println!(
        "B = {b}, K = {k}, d = {d}: integer statistics {} rounds, {} bytes between nodes; \
         at scale 2^32 {} rounds, {} bytes",
        int.rounds, int.bytes, real.rounds, real.bytes
    );
}
