//! The `mpc` backend against the `fixed` backend: bit for bit given the nodes' truncation
//! masks (replayed through `fixed_gradient` itself), close with independent masks, the same
//! training outcome, and a party's out-of-range value refused before anything is shared.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{Fx, Probabilistic};
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{BackendError, GradientBackend, NoiseRngs};
use vtwin_model::demo::demo_table;
use vtwin_model::dpvi::{Dpvi, DpviConfig};
use vtwin_model::fixed::{fixed_gradient, party_upload, FixedBackend, Renormalise};
use vtwin_model::layout::Layout;
use vtwin_model::model_file::natural_params;
use vtwin_model::mpc::{
    circuit_public, gradient_from_canonical, input_bounds, noise_to_canonical, plain_upload,
    MpcBackend,
};
use vtwin_model::stats::{PartyBatch, PartyData};
use vtwin_mpc::gradient::{
    gradient, masks_in_reference_order, receive_inputs, upload_messages, CircuitPublic, PlainUpload,
};
use vtwin_mpc::input::reveal_to;
use vtwin_mpc::{InputClient, Opening, SessionId, Simulation};

mod common;

use common::{demo, input};

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
        msgs.extend(upload_messages(&mut c, up, input_bounds()).expect("in range"));
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
                let (ups, z) = receive_inputs(&ctx, &public).await?;
                let g = gradient(&ctx, &public, &ups, &z).await?;
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
/// through the circuit equals `vtwin_model::fixed::fixed_gradient` bit for bit when
/// `fixed_gradient`'s truncator replays the nodes' masks.
#[test]
fn mpc_equals_fixed_gradient_bit_for_bit_with_replayed_masks() {
    let (layout, data, _) = demo(300, 4, 21);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for (trial, b) in [(0usize, 9usize), (1, 1), (2, 17)] {
        let theta: Vec<f64> = (0..layout.dim())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let rows: Vec<usize> = (0..b).map(|i| (i * 13 + trial * 5) % 300).collect();
        let parties: Vec<PartyBatch> = data.iter().map(|p| p.batch(&rows)).collect();
        let inp = input(&layout, &theta, &parties, 1.0, 1.0);
        let ups: Vec<_> = (0..layout.n_parties())
            .map(|p| {
                party_upload(&candle_core::Device::Cpu, &inp, p, Renormalise::ClosedForm).unwrap()
            })
            .collect();
        let noise: Vec<i128> = (0..layout.dim())
            .map(|_| rng.random_range(-(1i128 << 36)..(1i128 << 36)))
            .collect();
        let public = circuit_public(&inp, b).unwrap();
        let plain: Vec<_> = ups.iter().map(plain_upload).collect();
        let (opened, masks) = run_recorded(&public, &plain, &noise_to_canonical(&layout, &noise));
        let got = gradient_from_canonical(&layout, &opened);
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
        let inp = input(&layout, &theta, &parties, 1.0, 1.5);
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
        let bound = (40.0 * 15.0 * amax + 40.0 + 2.0) * 4.0 * 2f64.powi(-32);
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
        assert_eq!(c[0].rounds, 2 * layout.n_parties() as u64 + 93);
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
    };
    let mut d = Dpvi::new(
        cfg,
        layout.clone(),
        data.to_vec(),
        backend,
        NoiseRngs::seeded(5, layout.n_parties()),
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

    // The circuit's own check (the public bounds every party applies to its encoded
    // upload) refuses the first encoding past each bound.
    let bounds = input_bounds();
    let up = |mat: Fx, q: Fx, t: Fx| PlainUpload {
        mat: vec![mat],
        q: vec![q],
        stats: vec![t],
    };
    let ok = up(bounds.mat.1, bounds.q.1, bounds.stats.0);
    let (mut c, _) = InputClient::new(0, SESSION, &mut ChaCha20Rng::seed_from_u64(1));
    assert!(upload_messages(&mut c, &ok, bounds).is_ok());
    let ulp = Fx::from_raw(1);
    for bad in [
        up(bounds.mat.1 + ulp, bounds.q.1, Fx::ZERO),
        up(Fx::ZERO - ulp, Fx::ZERO, Fx::ZERO),
        up(Fx::ZERO, bounds.q.1 + ulp, Fx::ZERO),
        up(Fx::ZERO, Fx::ZERO, bounds.stats.0 - ulp),
    ] {
        assert!(upload_messages(&mut c, &bad, bounds).is_err());
    }
    assert_eq!(bounds.mat.1.to_f64(), 2f64.powi(31) - 2f64.powi(-32));
}
