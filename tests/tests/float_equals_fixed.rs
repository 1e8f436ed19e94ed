//! Gradients of the mixture model: finite differences, the float and fixed backends against
//! each other, the paper's Figure 2 underflow, and the noise scale.

use candle_core::Device;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_model::backend::{GradientBackend, GradientInput, NoiseRngs};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::float_backend::{log_likelihood, per_example_gradients, FloatBackend};
use vtwin_model::kernels::{local_terms, PartyMaps};
use vtwin_model::layout::Layout;
use vtwin_model::model_file::natural_params;
use vtwin_model::party_data::{PartyBatch, PartyData};

use vtwin_tests::{demo, input};

fn random_theta(layout: &Layout, rng: &mut ChaCha20Rng, scale: f64) -> Vec<f64> {
    (0..layout.dim())
        .map(|_| rng.random_range(-scale..scale))
        .collect()
}

fn batches(data: &[PartyData], rows: &[usize]) -> Vec<PartyBatch> {
    data.iter().map(|p| p.batch(rows)).collect()
}

/// Checks the per-example gradients `g` (records x d, row-major) of `records` records against
/// central finite differences of `objective` (per-record values) at `theta`.
fn assert_finite_differences(
    g: &[f64],
    theta: &[f64],
    records: usize,
    what: &str,
    objective: impl Fn(&[f64]) -> Vec<f64>,
) {
    let d = theta.len();
    for i in 0..d {
        let h = 1e-6;
        let (mut a, mut b) = (theta.to_vec(), theta.to_vec());
        a[i] += h;
        b[i] -= h;
        let (la, lb) = (objective(&a), objective(&b));
        for n in 0..records {
            let fd = (la[n] - lb[n]) / (2.0 * h);
            let an = g[n * d + i];
            assert!(
                (fd - an).abs() < 1e-6 * (1.0 + an.abs()),
                "{what}, record {n}, theta[{i}]: finite difference {fd}, analytic {an}"
            );
        }
    }
}

#[test]
fn per_example_gradient_is_finite_difference_of_log_likelihood() {
    let (layout, data, _) = demo(40, 4, 11);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for trial in 0..3 {
        let theta = random_theta(&layout, &mut rng, 1.0);
        let rows = [trial * 7, trial * 7 + 3];
        let parties = batches(&data, &rows);
        let g = per_example_gradients(&Device::Cpu, &input(&layout, &theta, &parties, 1.0, 0.0))
            .unwrap();
        assert_finite_differences(&g, &theta, rows.len(), "untempered", |t| {
            log_likelihood(&Device::Cpu, &layout, t, &parties).unwrap()
        });
    }
}

/// The tempered objective of one record, from the definition and the parties' own kernels
/// (not the backend's code path): (1 / beta) ln sum_k (pi_k prod_p F_p(x^p | k))^beta.
fn tempered_objective(
    layout: &Layout,
    theta: &[f64],
    parties: &[PartyBatch],
    beta: f64,
) -> Vec<f64> {
    let k_n = layout.components;
    let b = parties[0].rows;
    let pi = vtwin_model::backend::softmax(&theta[..k_n]);
    let mut joint: Vec<f64> = (0..b * k_n).map(|i| pi[i % k_n].ln()).collect();
    for batch in parties {
        let maps = PartyMaps::new(theta, layout, batch.party);
        let t = local_terms(&Device::Cpu, &maps, &batch.stats, b, false).unwrap();
        joint
            .iter_mut()
            .zip(&t.log_density)
            .for_each(|(j, l)| *j += l);
    }
    joint
        .chunks_exact(k_n)
        .map(|row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(beta * v));
            (m + row.iter().map(|&v| (beta * v - m).exp()).sum::<f64>().ln()) / beta
        })
        .collect()
}

/// With tempering (`vtwin_model::tempering`), the per-example gradient is the gradient of
/// the tempered objective (1 / beta) ln sum_k (pi_k p(x | k))^beta, checked by finite
/// differences of that definition; at beta = 1 the objective is ln p(x) itself.
#[test]
fn tempered_gradient_is_finite_difference_of_the_tempered_objective() {
    let (layout, data, _) = demo(40, 4, 11);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for (trial, beta) in [0.2, 0.55, 1.0].into_iter().enumerate() {
        let theta = random_theta(&layout, &mut rng, 1.0);
        let rows = [trial * 5, trial * 5 + 2];
        let parties = batches(&data, &rows);
        let inp = GradientInput {
            beta,
            ..input(&layout, &theta, &parties, 1.0, 0.0)
        };
        let g = per_example_gradients(&Device::Cpu, &inp).unwrap();
        if beta == 1.0 {
            let base = tempered_objective(&layout, &theta, &parties, 1.0);
            let ll = log_likelihood(&Device::Cpu, &layout, &theta, &parties).unwrap();
            for (a, b) in base.iter().zip(&ll) {
                assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
            }
        }
        assert_finite_differences(&g, &theta, rows.len(), &format!("beta {beta}"), |t| {
            tempered_objective(&layout, t, &parties, beta)
        });
    }
}

#[test]
fn log_likelihood_matches_the_data_side_mixture_density() {
    let (layout, data, table) = demo(200, 5, 11);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let theta = random_theta(&layout, &mut rng, 1.5);
    let all: Vec<PartyBatch> = data.iter().map(PartyData::all).collect();
    let ours = log_likelihood(&Device::Cpu, &layout, &theta, &all).unwrap();
    let theirs = natural_params(&layout, &theta)
        .log_likelihood(&table)
        .unwrap();
    for (n, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert!(
            (a - b).abs() < 1e-9 * (1.0 + b.abs()),
            "record {n}: {a} vs {b}"
        );
    }
}

/// The circuit clip C' the fixed backends use for C = 1 (`vtwin_fixed::clip_bound`).
fn circuit_clip_of(layout: &Layout) -> f64 {
    vtwin_model::mpc_backend::circuit_clip(layout, 1.0)
        .unwrap()
        .circuit
        .to_f64()
}

/// Per-example gradients (B = 1, clip far above every norm) of the fixed backend against
/// the float backend. Bound: the reciprocal's relative error is below 2^-20
/// (vtwin-fixed), every other step adds a few ulps (2^-32) times the score scale, so
/// |g_fixed - g_float| <= 2^-18 (|g_float| + 1) coordinate-wise; we assert 2^-17 (1e-5 + ...)
/// on the max over coordinates relative to the record's largest coordinate.
#[test]
fn fixed_per_example_gradients_agree_with_float() {
    let (layout, data, _) = demo(300, 6, 11);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut float = FloatBackend::new().unwrap();
    let mut fixed = FixedBackend::new(Renormalise::ClosedForm).unwrap();
    let mut noise = NoiseRngs::seeded(0, layout.n_parties());
    let mut worst: f64 = 0.0;
    for trial in 0..6 {
        // Demo-like parameters and wider random ones; the last two tempered (the parties
        // scale their log-densities and party 0 its weights, the float backend its joint).
        let theta = random_theta(&layout, &mut rng, if trial % 2 == 0 { 0.5 } else { 2.0 });
        let beta = [1.0, 1.0, 1.0, 1.0, 0.2, 0.6][trial];
        for n in (trial..300).step_by(15) {
            let parties = batches(&data, &[n]);
            let inp = GradientInput {
                beta,
                ..input(&layout, &theta, &parties, 1000.0, 0.0)
            };
            let a = float.gradient(&inp, &mut noise).unwrap().gradient;
            let b = fixed.gradient(&inp, &mut noise).unwrap().gradient;
            let scale = a.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                let err = (x - y).abs() / scale;
                worst = worst.max(err);
                assert!(
                    err <= 2f64.powi(-17),
                    "trial {trial} (beta {beta}) record {n} theta[{i}]: float {x}, fixed {y}"
                );
            }
        }
    }
    eprintln!("fixed vs float per-example: worst relative error {worst:.3e}");
}

/// Whole clipped batch sums (B = 100, C = 1, noise off) agree within B * 2^-17.
#[test]
fn fixed_batch_sum_agrees_with_float() {
    let (layout, data, _) = demo(400, 8, 11);
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let mut float = FloatBackend::new().unwrap();
    let mut noise = NoiseRngs::seeded(0, layout.n_parties());
    for mode in [Renormalise::ClosedForm, Renormalise::Paper] {
        let mut fixed = FixedBackend::new(mode).unwrap();
        for _ in 0..3 {
            let theta = random_theta(&layout, &mut rng, 1.0);
            let rows: Vec<usize> = (0..100).map(|_| rng.random_range(0..400)).collect();
            let parties = batches(&data, &rows);
            let inp = input(&layout, &theta, &parties, 1.0, 0.0);
            // The fixed backends clip at the circuit clip C' < C (the rounding margin).
            let at_circuit_clip = input(&layout, &theta, &parties, circuit_clip_of(&layout), 0.0);
            let a = float.gradient(&at_circuit_clip, &mut noise).unwrap();
            let b = fixed.gradient(&inp, &mut noise).unwrap();
            assert_eq!(a.diagnostics.clipped, b.diagnostics.clipped, "{mode:?}");
            let max = a
                .gradient
                .iter()
                .zip(&b.gradient)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            // Each clipped record's factor may differ by 2^-11 relative: the circuit resolves
            // |g|^2 to 2^(2L - 32) = 2^-10 (vtwin_fixed::clip_bound), always with C' <= C.
            let bound = 100.0 * 2f64.powi(-17) + b.diagnostics.clipped as f64 * 2f64.powi(-11);
            assert!(max <= bound, "{mode:?}: max difference {max} > {bound}");
        }
    }
}

/// The paper's Figure 2: without renormalisation, a record whose every mat_p underflows
/// for one party gets den = 0 and r = 0, so its component parameters get exactly zero
/// gradient (its weight-logit part is -c pi, see fixed_backend.rs), while closed-form
/// renormalisation recovers the float gradient for the same record.
#[test]
fn without_renormalisation_underflowing_records_give_zero_gradient() {
    let (layout, data, _) = demo(50, 3, 11);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut theta = random_theta(&layout, &mut rng, 0.3);
    // Make every categorical probability tiny for the observed categories of party 0 by
    // pushing all its category logits of one column to very different values: logits
    // -30 for category 0..C-1 except the last, so a record in category 0 has
    // log F_0 < -25 in every component.
    let col = layout
        .columns
        .iter()
        .find(|c| {
            c.party == 0
                && matches!(
                    c.model,
                    vtwin_model::layout::ColumnModel::Categorical { .. }
                )
        })
        .unwrap()
        .clone();
    let w = col.model.width();
    for k in 0..layout.components {
        for j in 0..w {
            theta[col.param_offset + k * w + j] = if j + 1 == w { 0.0 } else { -30.0 };
        }
    }
    let all = data[0].all();
    let rows: Vec<usize> = (0..50)
        .filter(|&n| all.stats[n * all.width + col.stat_offset + w - 1] == 0.0)
        .take(5)
        .collect();
    assert!(
        !rows.is_empty(),
        "demo data has records outside the last category"
    );
    let parties = batches(&data, &rows);
    let inp = input(&layout, &theta, &parties, 1.0, 0.0);
    let mut noise = NoiseRngs::seeded(0, layout.n_parties());
    let off = FixedBackend::new(Renormalise::Off)
        .unwrap()
        .gradient(&inp, &mut noise)
        .unwrap();
    assert_eq!(off.diagnostics.den_zero, rows.len());
    let k_n = layout.components;
    assert!(
        off.gradient[k_n..].iter().all(|&v| v == 0.0),
        "component gradients must be exactly 0"
    );
    let pi = inp.weights();
    for (k, (&got, &p)) in off.gradient[..k_n].iter().zip(&pi).enumerate() {
        // Weight logits: sum over records of -c_n pi_k with c_n = 1 (|g| = |pi| < 1).
        let want = -(rows.len() as f64) * p;
        assert!((got - want).abs() < 1e-6, "k {k}: {got} vs {want}");
    }
    let on = FixedBackend::new(Renormalise::ClosedForm)
        .unwrap()
        .gradient(&inp, &mut noise)
        .unwrap();
    assert_eq!(on.diagnostics.den_zero, 0);
    let at_circuit_clip = input(&layout, &theta, &parties, circuit_clip_of(&layout), 0.0);
    let float = FloatBackend::new()
        .unwrap()
        .gradient(&at_circuit_clip, &mut noise)
        .unwrap();
    let max = float
        .gradient
        .iter()
        .zip(&on.gradient)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    // Plus 2^-11 per clipped record: the circuit resolves |g|^2 to 2^-10.
    let bound = 1e-4 + on.diagnostics.clipped as f64 * 2f64.powi(-11);
    assert!(
        max < bound,
        "closed-form renormalisation recovers float, max diff {max} > {bound}"
    );
    assert!(on.gradient[k_n..].iter().any(|&v| v.abs() > 1e-3));
}

/// The summed noise has standard deviation sigma C per coordinate (fixed: sum of P
/// discrete Gaussian shares; float: continuous). With 3 x 200 x d samples the sample
/// standard deviation is within 3% of sigma C with overwhelming probability.
#[test]
fn noise_has_the_configured_scale() {
    let (layout, data, _) = demo(20, 3, 11);
    let theta = vec![0.0; layout.dim()];
    let parties = batches(&data, &[]);
    let (sigma, clip) = (2.0, 0.5);
    let inp = input(&layout, &theta, &parties, clip, sigma);
    let backends: Vec<Box<dyn GradientBackend>> = vec![
        Box::new(FloatBackend::new().unwrap()),
        Box::new(FixedBackend::new(Renormalise::ClosedForm).unwrap()),
    ];
    for mut b in backends {
        let mut noise = NoiseRngs::seeded(9, layout.n_parties());
        let mut sum2 = 0.0;
        let mut count = 0.0;
        for t in 0..200 {
            // Empty batch: G is pure noise, fresh for each iteration t.
            let inp = GradientInput {
                iteration: t,
                ..inp
            };
            for v in b.gradient(&inp, &mut noise).unwrap().gradient {
                sum2 += v * v;
                count += 1.0;
            }
        }
        let sd = (sum2 / count).sqrt();
        assert!(
            (sd / (sigma * clip) - 1.0).abs() < 0.03,
            "{}: sample sd {sd}, expected {}",
            b.name(),
            sigma * clip
        );
    }
}
