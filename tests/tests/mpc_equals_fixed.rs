//! The `mpc` backend against the `fixed` backend: bit for bit given the nodes' truncation
//! masks (replayed through `fixed_gradient` itself), close with independent masks, the same
//! training outcome, and a party's out-of-range value refused before anything is shared.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_data::demo::{demo_schema, demo_table};
use vtwin_fixed::{Fx, Probabilistic};
use vtwin_iteration::node::iteration_node;
use vtwin_iteration::randomness::{seeded_noise_rng, BatchKey, SecretRandomness};
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{BackendError, GradientBackend, GradientInput, NoiseRngs};
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed_backend::{fixed_gradient, party_upload, FixedBackend, Renormalise};
use vtwin_model::layout::Layout;
use vtwin_model::model_file::natural_params;
use vtwin_model::mpc_backend::{
    circuit_public, circuit_public_for, gradient_from_canonical, input_bounds, noise_to_canonical,
    plain_upload, MpcBackend,
};
use vtwin_model::party_data::{PartyBatch, PartyData};
use vtwin_model::party_upload::{party_messages, PartyTask};
use vtwin_model::trainer::Trainer;
use vtwin_mpc::gradient::{
    gradient, masks_in_reference_order, receive_inputs, upload_messages, CircuitPublic, PlainUpload,
};
use vtwin_mpc::input::reveal_to;
use vtwin_mpc::{
    InputClient, InputError, Message, NodeId, NodeKey, Opening, PairSeeds, Peer, SessionId,
    Simulation,
};

use vtwin_tests::{demo, demo_one_hot, input};

const SESSION: SessionId = SessionId(*b"vtwin-model-mpc!");

/// The circuit in the simulator with the nodes' truncation masks recorded (layer order).
fn run_recorded(
    public: &CircuitPublic,
    uploads: &[PlainUpload],
    noise: &[u128],
) -> (Vec<u128>, Vec<Vec<u128>>) {
    // One contributor holding the summed noise: addition of shares is local, so the number
    // of contributors does not change the truncation layers being recorded.
    let public = &CircuitPublic {
        noise_contributors: 1,
        ..public.clone()
    };
    let parties = public.parties.len();
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    let mut msgs = Vec::new();
    for (p, up) in uploads.iter().enumerate() {
        let (mut c, setup) = InputClient::new(p as u16, SESSION, &mut rng);
        msgs.extend(setup);
        msgs.extend(
            upload_messages(&mut c, up, input_bounds(Renormalise::ClosedForm, parties))
                .expect("in range"),
        );
    }
    let (mut nc, setup) = InputClient::new(parties as u16, SESSION, &mut rng);
    msgs.extend(setup);
    msgs.extend(nc.share_raw(noise));
    let coordinator = public.coordinator();
    let shared = public.clone();
    let rep = Simulation::new(SESSION, 37)
        .unwrap()
        .clients(coordinator + 1)
        .record_masks()
        .inject(msgs)
        .run(move |ctx| {
            let public = shared.clone();
            async move {
                let (ups, late) = receive_inputs(&ctx, &public).await?;
                let g = gradient(&ctx, &public, &ups, late).await?;
                reveal_to(&ctx, &g, public.coordinator()).await?;
                Ok(())
            }
        })
        .unwrap();
    let mut o = Opening::new(SESSION, coordinator, public.dim());
    for m in rep.to_clients {
        o.handle(m).unwrap();
    }
    (o.result().expect("opened"), rep.masks)
}

/// (a) The backend's mapping (party uploads, public side, noise order, output order) run
/// through the circuit equals `vtwin_model::fixed_backend::fixed_gradient` bit for bit when
/// `fixed_gradient`'s truncator replays the nodes' masks.
#[test]
fn mpc_equals_fixed_gradient_bit_for_bit_with_replayed_masks() {
    // The demo's Beta columns (T_p at scale 2^32) and every column one-hot (both parties
    // input integer statistics, one truncation layer fewer).
    let (layout, data, _) = demo(300, 4, 21);
    assert!(!layout.integer_stats(0) && !layout.integer_stats(1));
    equal_with_replayed_masks(&layout, &data, 17 + 2);
    let (layout, data, _) = demo_one_hot(300, 4, 21);
    assert!(layout.integer_stats(0) && layout.integer_stats(1));
    equal_with_replayed_masks(&layout, &data, 16 + 2);
}

/// The backend's mapping through the circuit against `fixed_gradient` replaying its masks,
/// over trials with padding and tempering; the circuit has `layers` truncation layers.
fn equal_with_replayed_masks(layout: &Layout, data: &[PartyData], layers: usize) {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    // (trial, real records, padded size): the last two pad (party 0 zeroes those rows).
    for (trial, real, b) in [
        (0usize, 9usize, 9usize),
        (1, 1, 1),
        (2, 17, 17),
        (3, 6, 11),
        (4, 0, 5),
    ] {
        let theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let rows: Vec<usize> = (0..real).map(|i| (i * 13 + trial * 5) % 300).collect();
        let parties: Vec<PartyBatch> = data
            .iter()
            .map(|p| p.padded_batch(&rows, b).unwrap())
            .collect();
        // Trials 2 and 3 tempered (3 with padding rows): the parties' uploads change, the
        // circuit does not.
        let beta = [1.0, 1.0, 0.2, 0.5, 1.0][trial];
        let inp = GradientInput {
            beta,
            ..input(layout, &theta, &parties, 1.0, 1.0)
        };
        let ups: Vec<_> = (0..layout.n_parties())
            .map(|p| {
                party_upload(&candle_core::Device::Cpu, &inp, p, Renormalise::ClosedForm).unwrap()
            })
            .collect();
        let noise: Vec<i128> = (0..layout.dim())
            .map(|_| rng.random_range(-(1i128 << 36)..(1i128 << 36)))
            .collect();
        let public = circuit_public(&inp, b).unwrap();
        let plain: Vec<_> = ups
            .iter()
            .enumerate()
            .map(|(p, up)| plain_upload(up, p))
            .collect();
        let (opened, masks) = run_recorded(&public, &plain, &noise_to_canonical(layout, &noise));
        assert_eq!(masks.len(), layers);
        let got = gradient_from_canonical(layout, &opened);
        let total: usize = masks.iter().map(Vec::len).sum();
        let mut seq = masks_in_reference_order(&public, &masks).into_iter();
        let mut t = Probabilistic::new(move || seq.next().expect("enough masks"));
        let (want, _) = fixed_gradient(&inp, &ups, &noise, &mut t).unwrap();
        assert_eq!(
            t.calls() as usize,
            total,
            "trial {trial}: one mask per truncation"
        );
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "trial {trial}, B = {b}");
    }
}

/// The backend with fresh masks against the fixed backend (floor truncation), same noise
/// generators, so the same noise: the difference is the truncation rounding only. Bound:
/// every G coordinate is a sum over the batch of w T (|T| <= 14) through the public map
/// (A, b), or sw - pi sc; if each w and c is within E ulp of the floor path, then
/// |mpc - fixed| <= (B (14 max|A| + max|b|) + B + 2) E 2^-32. E = 4 is an assumption
/// (each truncation differs by < 1 ulp between the rules; the reciprocal and the clip
/// factor add a few ulp of relative error), checked here, not proven: the measured worst
/// case (printed) is about 7% of this bound at B = 40, K = 5.
#[test]
fn mpc_backend_is_close_to_fixed_backend_with_the_same_noise() {
    let (layout, data, _) = demo(400, 5, 21);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut worst_ratio: f64 = 0.0;
    for trial in 0..3 {
        let theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let rows: Vec<usize> = (0..40).map(|i| (i * 7 + trial * 11) % 400).collect();
        let parties: Vec<PartyBatch> = data.iter().map(|p| p.batch(&rows)).collect();
        // Trial 2 tempered: the backend passes beta to its parties as the fixed backend does.
        let inp = GradientInput {
            beta: [1.0, 1.0, 0.3][trial],
            ..input(&layout, &theta, &parties, 1.0, 1.5)
        };
        let noise = NoiseRngs::seeded(9 + trial as u64, layout.n_parties());
        let mut mpc = MpcBackend::seeded(Renormalise::ClosedForm, trial as u64).unwrap();
        let costs = mpc.costs();
        let got = mpc.gradient(&inp, &mut noise.clone()).unwrap();
        let want = FixedBackend::new(Renormalise::ClosedForm)
            .unwrap()
            .gradient(&inp, &mut noise.clone())
            .unwrap();
        let public = circuit_public(&inp, 40).unwrap();
        let amax = public
            .parties
            .iter()
            .flat_map(|p| p.scale.iter().chain(&p.offset))
            .map(|v| v.to_f64().abs())
            .fold(0.0, f64::max);
        // Plus, per clipped record, 2^-11 of its clipped contribution (at most C times its
        // largest score): the circuit resolves |g|^2 to 2^-10 (vtwin_fixed::clip_bound).
        let bound = (40.0 * 15.0 * amax + 40.0 + 2.0) * 4.0 * 2f64.powi(-32)
            + want.diagnostics.clipped as f64 * 2f64.powi(-11) * (15.0 * amax + 1.0);
        let worst = got
            .gradient
            .iter()
            .zip(&want.gradient)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!("trial {trial}: max |mpc - fixed| = {worst:e} (bound {bound:e})");
        assert!(worst <= bound, "trial {trial}: {worst} > {bound}");
        worst_ratio = worst_ratio.max(worst / bound);
        // The noise is there (sigma C = 1.5 per coordinate) and identical on both paths.
        let spread = got.gradient.iter().map(|g| g * g).sum::<f64>() / layout.dim() as f64;
        assert!(spread > 0.5, "noise missing: mean square {spread}");
        let c = costs.snapshot();
        assert_eq!(c.len(), 1);
        // Inputs 0 (the parties send their corrections to nodes 1 and 2), circuit P + 40
        // (every layer 1 round, protocols/mpc-gradient.md; the demo has Beta columns), reveal 1.
        assert_eq!(c[0].rounds, layout.n_parties() as u64 + 41);
        assert!(c[0].bytes_between_nodes > 0 && c[0].mults > 0);
        assert_eq!(c[0].bytes_uploaded_per_party.len(), layout.n_parties());
        // Every client is a party (its data, and its noise share as its noise contributor),
        // so the per-party figures account for every uploaded byte.
        assert_eq!(
            c[0].bytes_uploaded_per_party.iter().sum::<u64>(),
            c[0].bytes_uploaded_total
        );
        assert_eq!(got.diagnostics.records, 40);
    }
    println!("worst |mpc - fixed| / bound = {worst_ratio:e}");
}

/// An empty batch (Poisson sampling can draw one): G is the noise alone on both backends.
#[test]
fn empty_batch_gives_the_noise_alone() {
    let (layout, data, _) = demo(50, 3, 21);
    let theta = vec![0.1; layout.dim()];
    let parties: Vec<PartyBatch> = data.iter().map(|p| p.batch(&[])).collect();
    let inp = input(&layout, &theta, &parties, 1.0, 1.0);
    let noise = NoiseRngs::seeded(4, layout.n_parties());
    let got = MpcBackend::seeded(Renormalise::ClosedForm, 1)
        .unwrap()
        .gradient(&inp, &mut noise.clone())
        .unwrap();
    let want = FixedBackend::new(Renormalise::ClosedForm)
        .unwrap()
        .gradient(&inp, &mut noise.clone())
        .unwrap();
    assert_eq!(got.gradient, want.gradient);
}

fn train(name: &str, layout: &Layout, data: &[PartyData], iters: u64) -> Dpvi {
    let backend: Box<dyn GradientBackend> = match name {
        "mpc" => Box::new(MpcBackend::seeded(Renormalise::ClosedForm, 77).unwrap()),
        _ => Box::new(FixedBackend::new(Renormalise::ClosedForm).unwrap()),
    };
    let cfg = DpviConfig {
        sample_rate: 0.05,
        clip: 1.0,
        sigma: 1.0,
        adam: AdamConfig::default(),
        seed: 17,
        tempering: vtwin_model::tempering::Tempering::Off,
    };
    let mut d = Dpvi::new(
        cfg,
        layout.clone(),
        data.to_vec(),
        backend,
        NoiseRngs::seeded(5, layout.n_parties()),
        BatchKey::insecure(5),
    )
    .unwrap();
    for _ in 0..iters {
        d.step().unwrap();
    }
    d
}

/// (b) A short training run: same seeds, same batches, same noise; mpc and fixed reach
/// nearly the same test NLL (within 0.5%), and both moved from the start.
#[test]
fn short_training_run_matches_fixed() {
    let (layout, data, _) = demo(1000, 4, 21);
    let test = demo_table(250, 22);
    let start = train("fixed", &layout, &data, 0);
    let nll0 = natural_params(&layout, start.mu()).mean_nll(&test).unwrap();
    let fixed = train("fixed", &layout, &data, 40);
    let mpc = train("mpc", &layout, &data, 40);
    let nf = natural_params(&layout, fixed.mu()).mean_nll(&test).unwrap();
    let nm = natural_params(&layout, mpc.mu()).mean_nll(&test).unwrap();
    println!("test NLL: start {nll0}, fixed {nf}, mpc {nm}");
    assert!(nf < nll0 && nm < nll0, "no learning: {nll0} -> {nf}, {nm}");
    assert!(
        (nm - nf).abs() <= 0.005 * nf.abs(),
        "mpc {nm} vs fixed {nf}"
    );
    let dmu = mpc
        .mu()
        .iter()
        .zip(fixed.mu())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!("max |mu_mpc - mu_fixed| = {dmu:e}");
    assert!(dmu < 1e-3, "{dmu}");
}

/// (c) A party's value outside the fixed-point range is refused by that party before
/// anything is shared: the error names the party and the quantity, and no protocol ran.
#[test]
fn out_of_range_party_input_is_rejected_before_sharing() {
    let (layout, data, _) = demo(30, 3, 21);
    let theta = vec![0.0; layout.dim()];
    let mut parties: Vec<PartyBatch> = data.iter().map(|p| p.batch(&[0, 1, 2])).collect();
    parties[1].stats[1] = 14.5;
    let inp = input(&layout, &theta, &parties, 1.0, 0.0);
    let mut mpc = MpcBackend::seeded(Renormalise::ClosedForm, 1).unwrap();
    let costs = mpc.costs();
    let err = mpc
        .gradient(&inp, &mut NoiseRngs::seeded(1, layout.n_parties()))
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, BackendError::Range { party, what: "T", .. } if *party == layout.parties[1]),
        "{msg}"
    );
    assert!(msg.contains("14.5") && msg.contains("[-14, 14]"), "{msg}");
    assert!(costs.snapshot().is_empty(), "a protocol ran");

    // An integer party (one-hot columns only) inputs T_p as raw integers: a statistic off the
    // integers is refused rather than floored.
    let (one_hot, one_hot_data, _) = demo_one_hot(30, 3, 21);
    let theta = vec![0.0; one_hot.dim()];
    let mut parties: Vec<PartyBatch> = one_hot_data.iter().map(|p| p.batch(&[0, 1, 2])).collect();
    parties[1].stats[1] = 0.5;
    let inp = input(&one_hot, &theta, &parties, 1.0, 0.0);
    let err =
        party_upload(&candle_core::Device::Cpu, &inp, 1, Renormalise::ClosedForm).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(&err, BackendError::Range { party, what: "T", .. } if *party == one_hot.parties[1]),
        "{msg}"
    );
    assert!(msg.contains("integers in [-14, 14]"), "{msg}");

    // The circuit's own check (the public bounds every party applies to its encoded
    // upload) refuses the first encoding past each bound.
    let bounds = input_bounds(Renormalise::ClosedForm, 2);
    let up = |mat: Fx, root: Fx, t: Fx| PlainUpload {
        mat: vec![mat],
        root: vec![root],
        stats: vec![t],
        flags: vec![Fx::from_raw(1)],
        integer_stats: false,
    };
    let ok = up(bounds.mat.1, bounds.root.1, bounds.stats.0);
    // A fresh client each time: a party's upload is its client's inputs 1 and 2.
    let client = || InputClient::new(0, SESSION, &mut ChaCha20Rng::seed_from_u64(1)).0;
    let mut c = client();
    assert!(upload_messages(&mut c, &ok, bounds).is_ok());
    // A client that already shared its inputs is refused (the nodes expect 1 and 2).
    assert!(matches!(
        upload_messages(&mut c, &ok, bounds),
        Err(InputError::Sequence { got: 3, want: 1 })
    ));
    let ulp = Fx::from_raw(1);
    for bad in [
        up(bounds.mat.1 + ulp, bounds.root.1, Fx::ZERO),
        up(Fx::ZERO - ulp, Fx::ZERO, Fx::ZERO),
        up(Fx::ZERO, bounds.root.1 + ulp, Fx::ZERO),
        up(Fx::ZERO, Fx::ZERO, bounds.stats.0 - ulp),
    ] {
        assert!(upload_messages(&mut client(), &bad, bounds).is_err());
    }
    // An integer party's T_p is checked as raw integers against the same real range: 14 and
    // -14 pass, 15 and -15 do not, nor does 14 at scale 2^32 (raw 14 2^32).
    let int = |t: i128| PlainUpload {
        stats: vec![Fx::from_signed(t)],
        integer_stats: true,
        ..up(Fx::ZERO, Fx::ZERO, Fx::ZERO)
    };
    for (t, fine) in [(14, true), (-14, true), (15, false), (-15, false)] {
        assert_eq!(
            upload_messages(&mut client(), &int(t), bounds).is_ok(),
            fine,
            "{t}"
        );
    }
    assert!(upload_messages(&mut client(), &int(14 << 32), bounds).is_err());
    // Closed-form renormalisation puts every record's largest mat_p at exactly 1.
    assert_eq!(bounds.mat.1, Fx::ONE);
    let paper = input_bounds(Renormalise::Paper, 2);
    assert_eq!(paper.mat.1.to_f64(), 128.0);
}

/// The settings the seeded-run tests share.
fn seeded_config() -> DpviConfig {
    DpviConfig {
        sample_rate: 0.04,
        clip: 1.0,
        sigma: 1.0,
        adam: AdamConfig::default(),
        seed: 23,
        tempering: vtwin_model::tempering::Tempering::Off,
    }
}

/// A seeded backend is a pure function of (seeds, iteration): two backends give identical
/// gradients, a retried iteration (after another one ran) redraws identical values, and
/// another iteration, another MPC seed or another noise seed give different ones.
#[test]
fn seeded_backend_is_reproducible_and_a_retried_iteration_is_identical() {
    let (layout, data, _) = demo(300, 4, 21);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let theta: Vec<f64> = (0..layout.dim())
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let rows: Vec<usize> = (0..20).map(|i| (i * 11) % 300).collect();
    let parties: Vec<PartyBatch> = data.iter().map(|p| p.batch(&rows)).collect();
    let at = |t: u64| GradientInput {
        iteration: t,
        ..input(&layout, &theta, &parties, 1.0, 1.0)
    };
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let run = |mpc_seed: u64, noise_seed: u64, ts: &[u64]| {
        let mut b = MpcBackend::seeded(Renormalise::ClosedForm, mpc_seed).unwrap();
        let mut noise = NoiseRngs::seeded(noise_seed, layout.n_parties());
        ts.iter()
            .map(|&t| bits(&b.gradient(&at(t), &mut noise).unwrap().gradient))
            .collect::<Vec<_>>()
    };
    let first = run(3, 9, &[7, 8, 7]);
    assert_eq!(first[0], first[2], "retried iteration 7 differs");
    assert_ne!(first[0], first[1], "iterations 7 and 8 drew the same");
    assert_eq!(
        run(3, 9, &[7]),
        vec![first[0].clone()],
        "second backend differs"
    );
    assert_ne!(run(4, 9, &[7])[0], first[0], "the MPC seed is not used");
    assert_ne!(run(3, 10, &[7])[0], first[0], "the noise seed is not used");
    // OS randomness: two iterations with the same inputs and seeded noise still differ in
    // the truncation rounding (fresh keys, hence fresh masks).
    let mut os = MpcBackend::new(Renormalise::ClosedForm).unwrap();
    let mut noise = NoiseRngs::seeded(9, layout.n_parties());
    let a = os.gradient(&at(7), &mut noise).unwrap().gradient;
    let b = os.gradient(&at(7), &mut noise).unwrap().gradient;
    assert_ne!(bits(&a), bits(&b), "OS randomness repeated itself");
}

/// One training iteration assembled by hand from the role functions, as separate processes
/// run them (coordinator: `Trainer::plan`, `SecretRandomness::session`,
/// `circuit_public_for`, `Opening`, `Trainer::apply`; party p: `PartyData::from_demo` for
/// its own columns only, `seeded_noise_rng`, `SecretRandomness::party`, `party_messages`;
/// node i: `SecretRandomness::node`, `NodeKey`, `PairSeeds::derive`, `iteration_node`), with
/// every message encoded and delivered newest first, equals `Dpvi` with `MpcBackend` bit for
/// bit, for three consecutive iterations.
#[test]
fn an_iteration_wired_from_the_role_functions_equals_the_mpc_backend() {
    let (rows, data_seed, noise_seed, mpc_seed) = (400usize, 1u64, 8u64, 12u64);
    let layout = Layout::from_schema(&demo_schema(), 4).unwrap();
    let randomness = SecretRandomness::InsecureSeed(mpc_seed);
    let cfg = seeded_config();
    let own: Vec<_> = layout
        .parties
        .iter()
        .map(|name| PartyData::from_demo(&layout, name, rows, data_seed).unwrap())
        .collect();
    let mut dpvi = Dpvi::new(
        cfg.clone(),
        layout.clone(),
        PartyData::from_table(&demo_table(rows, data_seed), &layout).unwrap(),
        Box::new(MpcBackend::seeded(Renormalise::ClosedForm, mpc_seed).unwrap()),
        NoiseRngs::seeded(noise_seed, layout.n_parties()),
        randomness.batch_key(),
    )
    .unwrap();
    let mut trainer =
        Trainer::new(cfg.clone(), layout.clone(), rows, randomness.batch_key()).unwrap();
    let device = candle_core::Device::Cpu;
    for _ in 0..3 {
        // Coordinator.
        let plan = trainer.plan();
        let t = plan.iteration;
        let session = randomness.session(t);
        let public = circuit_public_for(&layout, &plan.theta, cfg.clip, plan.padded).unwrap();
        // Parties: only their own data.
        let mut wire: Vec<(usize, Vec<u8>)> = Vec::new();
        for (p, mine) in own.iter().enumerate() {
            let batch = mine.data.padded_batch(&plan.batch, plan.padded).unwrap();
            let task = PartyTask {
                layout: &layout,
                party: p,
                iteration: t,
                session,
                theta: &plan.theta,
                clip: cfg.clip,
                sigma: cfg.sigma,
                beta: 1.0,
                batch: &batch,
                renormalise: Renormalise::ClosedForm,
            };
            let msgs = party_messages(
                &device,
                &task,
                &mut seeded_noise_rng(noise_seed, p, t),
                &mut randomness.party(p, t),
            )
            .unwrap();
            for (i, to_node) in msgs.iter().enumerate() {
                wire.extend(to_node.iter().map(|m| (i, m.encode())));
            }
        }
        // Nodes: each draws its own key; the three publics are exchanged.
        let keys: Vec<NodeKey> = (0..3)
            .map(|i| NodeKey::generate(&mut randomness.node(i, t)))
            .collect();
        let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
        let mut nodes: Vec<_> = NodeId::ALL
            .iter()
            .map(|&id| {
                let seeds = PairSeeds::derive(id, &keys[id.index()], &publics, session).unwrap();
                iteration_node(id, session, seeds, public.clone())
            })
            .collect();
        let mut to_coordinator = Vec::new();
        for n in nodes.iter_mut() {
            wire.extend(n.start().unwrap().iter().map(|m| match m.to {
                Peer::Node(id) => (id.index(), m.encode()),
                Peer::Client(_) => (3, m.encode()),
            }));
        }
        // Newest message first: a different order from the backend's FIFO simulator.
        while let Some((to, bytes)) = wire.pop() {
            if to == 3 {
                to_coordinator.push(Message::decode(&bytes).unwrap());
                continue;
            }
            for m in nodes[to].handle_bytes(&bytes).unwrap() {
                let dest = match m.to {
                    Peer::Node(id) => id.index(),
                    Peer::Client(_) => 3,
                };
                wire.push((dest, m.encode()));
            }
        }
        assert!(nodes.iter().all(|n| n.is_done()));
        // Coordinator: open and apply.
        let mut opening = Opening::new(session, public.coordinator(), public.dim());
        for m in to_coordinator {
            opening.handle(m).unwrap();
        }
        let g = gradient_from_canonical(&layout, &opening.result().unwrap());
        let bounds = input_bounds(Renormalise::ClosedForm, layout.n_parties());
        trainer
            .charge(&plan, public.truncation_failure_bound(&bounds))
            .unwrap();
        trainer.apply(plan, &g).unwrap();
        dpvi.step().unwrap();
        assert_eq!(trainer.state(), dpvi.state(), "iteration {t}");
    }
    assert_eq!(trainer.ledger().unwrap().steps(), 3);
}

/// A party's out-of-range value makes `party_messages` refuse with the range error naming
/// the party, producing no message; a well-formed task gives the documented message layout.
#[test]
fn party_messages_refuse_out_of_range_values_and_follow_the_documented_layout() {
    let (layout, data, _) = demo(30, 3, 21);
    let theta = vec![0.0; layout.dim()];
    let randomness = SecretRandomness::InsecureSeed(1);
    let batch = data[1].batch(&[0, 1, 2]);
    let mut bad = batch.clone();
    bad.stats[1] = -14.5;
    let other = data[0].batch(&[0]);
    let task = |batch| PartyTask {
        layout: &layout,
        party: 1,
        iteration: 0,
        session: randomness.session(0),
        theta: &theta,
        clip: 1.0,
        sigma: 1.0,
        beta: 1.0,
        batch,
        renormalise: Renormalise::ClosedForm,
    };
    let device = candle_core::Device::Cpu;
    let msgs = party_messages(
        &device,
        &task(&batch),
        &mut seeded_noise_rng(1, 1, 0),
        &mut randomness.party(1, 0),
    )
    .unwrap();
    let p_n = layout.n_parties() as u16;
    let froms = |i: usize| {
        msgs[i]
            .iter()
            .map(|m| (m.from, m.step, m.payload.len()))
            .collect::<Vec<_>>()
    };
    // Party 1's first input [mat | root] (B K each; no flags), then T_p (B |T_1|).
    let (first_len, stats_len, d) = (3 * 2 * 3, 3 * layout.stat_width(1), layout.dim());
    assert_eq!(
        froms(0),
        [(Peer::Client(1), 0, 4), (Peer::Client(p_n + 1), 0, 4)]
    );
    // Nodes 1 and 2 both hold x_2: each gets the two setups and the three corrections, the
    // first input's before T_p's and the noise's (the nodes take those two late).
    for node in [1, 2] {
        assert_eq!(
            froms(node),
            [
                (Peer::Client(1), 0, 2),
                (Peer::Client(1), 1, first_len),
                (Peer::Client(1), 2, stats_len),
                (Peer::Client(p_n + 1), 0, 2),
                (Peer::Client(p_n + 1), 1, d)
            ],
            "node {node}"
        );
    }
    // The same corrections (the setups differ: s_1 to node 1, s_0 to node 2).
    for k in [1, 2, 4] {
        assert_eq!(msgs[1][k].payload, msgs[2][k].payload);
    }
    let err = party_messages(
        &device,
        &task(&bad),
        &mut seeded_noise_rng(1, 1, 0),
        &mut randomness.party(1, 0),
    )
    .unwrap_err();
    assert!(
        matches!(&err, BackendError::Range { party, what: "T", .. } if *party == layout.parties[1]),
        "{err}"
    );
    // Another party's batch is refused as a shape error.
    assert!(matches!(
        party_messages(
            &device,
            &task(&other),
            &mut seeded_noise_rng(1, 1, 0),
            &mut randomness.party(1, 0)
        ),
        Err(BackendError::BatchMismatch { .. })
    ));
}

/// A backend that runs the mpc backend but discards its result once, at iteration
/// `fail_at`, as if the coordinator had timed out after the parties and nodes did their work.
struct FailsOnce {
    inner: MpcBackend,
    fail_at: u64,
    failed: bool,
}

impl GradientBackend for FailsOnce {
    fn name(&self) -> &'static str {
        "mpc"
    }

    fn gradient(
        &mut self,
        input: &GradientInput<'_>,
        noise: &mut NoiseRngs,
    ) -> Result<vtwin_model::backend::GradientOutput, BackendError> {
        let out = self.inner.gradient(input, noise)?;
        if input.iteration == self.fail_at && !self.failed {
            self.failed = true;
            // As a coordinator sees a node that stopped answering.
            return Err(BackendError::Mpc(vtwin_mpc::MpcError::Stalled { node: 0 }));
        }
        Ok(out)
    }
}

/// An iteration aborted after every secret of it was drawn (noise shares, client seeds,
/// node keys) is not counted, and retrying it gives the uninterrupted run bit for bit.
#[test]
fn an_aborted_and_retried_iteration_equals_an_uninterrupted_run() {
    let (layout, data, _) = demo(300, 3, 21);
    let run = |fail_at: u64| {
        let backend = FailsOnce {
            inner: MpcBackend::seeded(Renormalise::ClosedForm, 4).unwrap(),
            fail_at,
            failed: false,
        };
        let mut d = Dpvi::new(
            seeded_config(),
            layout.clone(),
            data.clone(),
            Box::new(backend),
            NoiseRngs::seeded(6, layout.n_parties()),
            BatchKey::insecure(6),
        )
        .unwrap();
        while d.iteration() < 4 {
            if let Err(e) = d.step() {
                assert_eq!(
                    e.to_string(),
                    "mpc: protocol stalled: node 0 did not finish"
                );
                assert_eq!(d.iteration(), fail_at, "the aborted iteration was counted");
                assert_eq!(d.ledger().unwrap().steps(), fail_at, "and charged");
            }
        }
        d.state()
    };
    let whole = run(u64::MAX);
    assert_eq!(run(2), whole);
    assert_eq!(run(0), whole);
}
