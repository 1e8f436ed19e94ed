//! Synthesis and likelihood against the known demo mixture: sampling recovers the marginals
//! and the cross-party dependence; the truth scores its own data higher than perturbed
//! models; the log-likelihood matches an independent evaluation with statrs' distributions.

// Index loops mirror the formulas (category c, basket b, component k) across several tables.
#![allow(clippy::needless_range_loop)]

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{Beta, Continuous};

use vtwin_data::demo::{demo_schema, demo_table, demo_truth};
use vtwin_data::synth::sample_table;
use vtwin_data::{Column, ColumnParams, MixtureParams, Table};

const N: usize = 60_000;

fn big_sample() -> Table {
    let mut rng = ChaCha20Rng::seed_from_u64(20221);
    sample_table(&demo_truth(), &demo_schema(), N, &mut rng).unwrap()
}

fn index(t: &Table, name: &str) -> Vec<u32> {
    match &t.columns[t.schema.column_index(name).unwrap()] {
        Column::Index(v) => v.clone(),
        Column::Unit(_) => panic!("{name} is continuous"),
    }
}

fn unit(t: &Table, name: &str) -> Vec<f64> {
    match &t.columns[t.schema.column_index(name).unwrap()] {
        Column::Unit(v) => v.clone(),
        Column::Index(_) => panic!("{name} is discrete"),
    }
}

fn probs(p: &MixtureParams, col: usize) -> Vec<Vec<f64>> {
    match &p.columns[col] {
        ColumnParams::Categorical { probs } => probs.clone(),
        ColumnParams::Beta { .. } => panic!("column {col} is Beta"),
    }
}

fn beta_means(p: &MixtureParams, col: usize) -> Vec<f64> {
    match &p.columns[col] {
        ColumnParams::Beta { a, b } => a.iter().zip(b).map(|(a, b)| a / (a + b)).collect(),
        ColumnParams::Categorical { .. } => panic!("column {col} is categorical"),
    }
}

/// Tolerance for an empirical frequency of true probability `p` over `n` draws: 5 sigma.
fn tol(p: f64, n: usize) -> f64 {
    5.0 * (p * (1.0 - p) / n as f64).sqrt() + 1e-4
}

#[test]
fn sampling_recovers_categorical_and_binned_marginals() {
    let t = big_sample();
    t.check().unwrap();
    let truth = demo_truth();
    let s = demo_schema();
    for name in ["smoker", "condition", "spend", "basket"] {
        let c = s.column_index(name).unwrap();
        let pr = probs(&truth, c);
        let values = index(&t, name);
        for cat in 0..pr[0].len() {
            let p: f64 = (0..3).map(|k| truth.weights[k] * pr[k][cat]).sum();
            let f = values.iter().filter(|&&v| v as usize == cat).count() as f64 / N as f64;
            assert!((f - p).abs() < tol(p, N), "{name}[{cat}]: {f} vs {p}");
        }
    }
}

#[test]
fn sampling_recovers_beta_means() {
    let t = big_sample();
    let truth = demo_truth();
    let s = demo_schema();
    // (column, half cell width of the integer encoding: 1/(2W), 0 for real-valued).
    for (name, half_cell) in [("age", 0.5 / 73.0), ("bmi", 0.0), ("visits", 0.5 / 31.0)] {
        let m = beta_means(&truth, s.column_index(name).unwrap());
        let expect: f64 = (0..3).map(|k| truth.weights[k] * m[k]).sum();
        let u = unit(&t, name);
        let mean = u.iter().sum::<f64>() / N as f64;
        // Std of u is below 0.25, so 5 sigma of the mean is below 0.006; integer columns move
        // each value to its cell centre, at most half a cell.
        assert!(
            (mean - expect).abs() < 0.006 + half_cell,
            "{name}: {mean} vs {expect}"
        );
    }
}

#[test]
fn sampling_keeps_the_cross_party_dependence() {
    let t = big_sample();
    let truth = demo_truth();
    let s = demo_schema();
    let (ci, bi) = (
        s.column_index("condition").unwrap(),
        s.column_index("basket").unwrap(),
    );
    let (pc, pb) = (probs(&truth, ci), probs(&truth, bi));
    let (cond, basket) = (index(&t, "condition"), index(&t, "basket"));
    let mut max_dependence: f64 = 0.0;
    for c in 0..4 {
        for b in 0..4 {
            let joint: f64 = (0..3).map(|k| truth.weights[k] * pc[k][c] * pb[k][b]).sum();
            let mc: f64 = (0..3).map(|k| truth.weights[k] * pc[k][c]).sum();
            let mb: f64 = (0..3).map(|k| truth.weights[k] * pb[k][b]).sum();
            max_dependence = max_dependence.max((joint - mc * mb).abs());
            let f = cond
                .iter()
                .zip(&basket)
                .filter(|&(&x, &y)| x as usize == c && y as usize == b)
                .count() as f64
                / N as f64;
            assert!(
                (f - joint).abs() < tol(joint, N),
                "P(cond={c}, basket={b}): {f} vs {joint}"
            );
        }
    }
    // The demo is built to be strongly dependent across parties.
    assert!(max_dependence > 0.03, "{max_dependence}");

    // Correlation of age (health) and visits (retail): analytic vs empirical.
    let (ma, mv) = (
        beta_means(&truth, s.column_index("age").unwrap()),
        beta_means(&truth, s.column_index("visits").unwrap()),
    );
    let var_beta = |p: &MixtureParams, col: usize| -> Vec<f64> {
        let ColumnParams::Beta { a, b } = &p.columns[col] else {
            panic!()
        };
        a.iter()
            .zip(b)
            .map(|(a, b)| a * b / ((a + b).powi(2) * (a + b + 1.0)))
            .collect()
    };
    let (va, vv) = (
        var_beta(&truth, s.column_index("age").unwrap()),
        var_beta(&truth, s.column_index("visits").unwrap()),
    );
    let w = &truth.weights;
    let e = |f: &dyn Fn(usize) -> f64| (0..3).map(|k| w[k] * f(k)).sum::<f64>();
    let (ea, ev) = (e(&|k| ma[k]), e(&|k| mv[k]));
    let cov = e(&|k| ma[k] * mv[k]) - ea * ev;
    let var_a = e(&|k| va[k] + ma[k] * ma[k]) - ea * ea;
    let var_v = e(&|k| vv[k] + mv[k] * mv[k]) - ev * ev;
    let rho = cov / (var_a * var_v).sqrt();
    let (ua, uv) = (unit(&t, "age"), unit(&t, "visits"));
    let r = pearson(&ua, &uv);
    eprintln!("corr(age, visits): analytic {rho:.4}, empirical {r:.4}; max |P(c,b)-P(c)P(b)| {max_dependence:.4}");
    assert!(rho > 0.5, "analytic correlation {rho}");
    // Cell-centre rounding of both integer columns shrinks the correlation very slightly.
    assert!((r - rho).abs() < 0.02, "empirical {r} vs analytic {rho}");
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    sxy / (sxx * syy).sqrt()
}

#[test]
fn truth_scores_its_data_higher_than_perturbed_models() {
    let data = demo_table(4000, 7);
    let truth = demo_truth();
    let base = truth.mean_nll(&data).unwrap();
    assert!(base.is_finite());

    let mut flat_weights = truth.clone();
    flat_weights.weights = vec![1.0 / 3.0; 3];
    let mut shifted_beta = truth.clone();
    if let ColumnParams::Beta { a, .. } = &mut shifted_beta.columns[0] {
        a.iter_mut().for_each(|x| *x *= 1.3);
    }
    // Swap the basket distributions of components 0 and 2: same marginal shapes, but the
    // cross-party link between age/condition and basket is broken.
    let mut unlinked = truth.clone();
    if let ColumnParams::Categorical { probs } = &mut unlinked.columns[6] {
        probs.swap(0, 2);
    }
    for (what, p) in [
        ("flat weights", &flat_weights),
        ("shifted Beta", &shifted_beta),
        ("unlinked", &unlinked),
    ] {
        let nll = p.mean_nll(&data).unwrap();
        eprintln!("mean NLL per record: truth {base:.4}, {what} {nll:.4}");
        assert!(nll > base + 0.005, "{what}: {nll} vs truth {base}");
    }
}

#[test]
fn log_likelihood_matches_an_independent_evaluation() {
    let data = demo_table(50, 3);
    let truth = demo_truth();
    let ll = truth.log_likelihood(&data).unwrap();
    for n in [0, 17, 49] {
        let mut total = 0.0;
        for k in 0..3 {
            let mut p = truth.weights[k];
            for (cp, col) in truth.columns.iter().zip(&data.columns) {
                p *= match (cp, col) {
                    (ColumnParams::Beta { a, b }, Column::Unit(u)) => {
                        Beta::new(a[k], b[k]).unwrap().pdf(u[n])
                    }
                    (ColumnParams::Categorical { probs }, Column::Index(i)) => {
                        probs[k][i[n] as usize]
                    }
                    _ => unreachable!(),
                };
            }
            total += p;
        }
        assert!(
            (ll[n] - total.ln()).abs() < 1e-12,
            "record {n}: {} vs {}",
            ll[n],
            total.ln()
        );
    }
}

#[test]
fn parameters_that_do_not_fit_are_rejected() {
    let data = demo_table(10, 1);
    let mut p = demo_truth();
    p.weights = vec![0.5, 0.5, 0.5];
    let e = p.log_likelihood(&data).unwrap_err();
    // The cause is the error's source, as the CLI prints the chain.
    let cause = std::error::Error::source(&e).map(ToString::to_string);
    assert!(e.to_string().contains("weights"), "{e}");
    assert!(
        cause.as_deref().is_some_and(|c| c.contains("sum to 1.5")),
        "{cause:?}"
    );
    let mut p = demo_truth();
    if let ColumnParams::Beta { a, .. } = &mut p.columns[1] {
        a[2] = -1.0;
    }
    let msg = vtwin_host::error_chain::chain(&p.log_likelihood(&data).unwrap_err());
    assert!(
        msg.contains("column \"bmi\"") && msg.contains("-1"),
        "{msg}"
    );
    let mut p = demo_truth();
    p.columns.swap(0, 2);
    assert!(p.check(&demo_schema()).is_err());
}

#[test]
fn demo_table_is_deterministic_and_seed_dependent() {
    assert_eq!(demo_table(300, 5), demo_table(300, 5));
    assert_ne!(demo_table(300, 5).columns, demo_table(300, 6).columns);
}
