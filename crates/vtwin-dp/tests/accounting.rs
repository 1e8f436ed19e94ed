//! Accountant test vectors (`protocols/vectors/dp-accounting.json`) and accountant properties.

use serde::Deserialize;
use vtwin_dp::gaussian::gaussian_epsilon;
use vtwin_dp::pld::PldComposition;
use vtwin_dp::rdp::{rdp_poisson_gaussian, RdpCurve};
use vtwin_dp::{epsilon, Accountant, Composition, Neighbouring};

#[derive(Deserialize)]
struct File {
    rdp: Vec<RdpVector>,
    rdp_epsilon: Vec<EpsVector>,
    pld_epsilon: Vec<EpsVector>,
    gaussian_exact: Vec<GaussianCase>,
}

#[derive(Deserialize)]
struct RdpVector {
    sample_rate: f64,
    sigma: f64,
    steps: u64,
    orders: Vec<f64>,
    rdp: Vec<f64>,
    rel_tol: f64,
}

#[derive(Deserialize)]
struct EpsVector {
    sample_rate: f64,
    sigma: f64,
    steps: u64,
    delta: f64,
    epsilon: f64,
    abs_tol: f64,
}

#[derive(Deserialize)]
struct GaussianCase {
    sigma: f64,
    steps: u64,
    delta: f64,
}

fn vectors() -> File {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../protocols/vectors/dp-accounting.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("vector file")).unwrap()
}

#[test]
fn rdp_matches_dp_accounting() {
    for v in vectors().rdp {
        for (&a, &want) in v.orders.iter().zip(&v.rdp) {
            let got = rdp_poisson_gaussian(v.sample_rate, v.sigma, a) * v.steps as f64;
            println!("order {a}: rdp {got:.9e} (dp-accounting {want:.9e})");
            assert!(
                (got - want).abs() <= v.rel_tol * want,
                "order {a}: {got} vs {want}"
            );
        }
    }
}

/// `steps * ln(A_alpha) / (alpha - 1)` by Simpson quadrature of the defining integral
/// `A_alpha = E_{z ~ N(0, s^2)} [((1-q) + q exp((2z-1)/(2 s^2)))^alpha]`: an independent check
/// of the series, valid for fractional orders.
fn rdp_by_quadrature(q: f64, s: f64, alpha: f64, steps: u64) -> f64 {
    let n = 200_000;
    let (lo, hi) = (-40.0 * s, 40.0 * s);
    let h = (hi - lo) / n as f64;
    let mut total = 0.0;
    for i in 0..=n {
        let z = lo + i as f64 * h;
        let w = if i == 0 || i == n {
            1.0
        } else if i % 2 == 1 {
            4.0
        } else {
            2.0
        };
        let density = (-z * z / (2.0 * s * s)).exp() / ((2.0 * std::f64::consts::PI).sqrt() * s);
        total +=
            w * density * ((1.0 - q) + q * ((2.0 * z - 1.0) / (2.0 * s * s)).exp()).powf(alpha);
    }
    steps as f64 * (total * h / 3.0).ln() / (alpha - 1.0)
}

#[test]
fn fractional_orders_match_quadrature() {
    for v in vectors().rdp {
        for &a in v.orders.iter().filter(|a| a.fract() != 0.0 && **a < 10.0) {
            let series = rdp_poisson_gaussian(v.sample_rate, v.sigma, a) * v.steps as f64;
            let quad = rdp_by_quadrature(v.sample_rate, v.sigma, a, v.steps);
            println!("order {a}: series {series:.9e}, quadrature {quad:.9e}");
            assert!(
                (series - quad).abs() <= 1e-7 * quad,
                "order {a}: {series} vs {quad}"
            );
        }
        for &(q, s, a) in &[(0.003_315, 2.042, 1.7), (0.1, 1.0, 3.3), (0.05, 0.8, 2.25)] {
            let series = rdp_poisson_gaussian(q, s, a);
            let quad = rdp_by_quadrature(q, s, a, 1);
            assert!(
                (series - quad).abs() <= 1e-7 * quad,
                "q {q} s {s} order {a}: {series} vs {quad}"
            );
        }
    }
}

#[test]
fn rdp_epsilon_vectors() {
    for v in vectors().rdp_epsilon {
        let c = Composition {
            noise_multiplier: v.sigma,
            sample_rate: v.sample_rate,
            steps: v.steps,
        };
        let e = epsilon(Accountant::Rdp, &c, v.delta, Neighbouring::AddRemove).unwrap();
        println!("rdp epsilon {e:.9} (want {})", v.epsilon);
        assert!((e - v.epsilon).abs() <= v.abs_tol, "{e} vs {}", v.epsilon);
    }
}

#[test]
fn pld_epsilon_vectors() {
    for v in vectors().pld_epsilon {
        let pld = PldComposition::poisson_gaussian(v.sample_rate, v.sigma, v.steps);
        let e = pld.epsilon(v.delta);
        let lower = pld.epsilon_lower_bound(v.delta);
        println!(
            "pld epsilon {e:.6} (want {}), certified lower bound {lower:.6}, grid {:e}",
            v.epsilon,
            pld.grid()
        );
        assert!((e - v.epsilon).abs() <= v.abs_tol, "{e} vs {}", v.epsilon);
        assert!(lower <= e);
        // The RDP accountant is looser.
        let r = RdpCurve::poisson_gaussian(v.sample_rate, v.sigma, v.steps)
            .epsilon(v.delta)
            .0;
        assert!(r > e, "rdp {r} <= pld {e}");
    }
}

/// The PLD discretisation run on a single Gaussian (q = 1; `epsilon()` would use the exact
/// profile there instead) is never below the exact value and within 1% above it.
#[test]
fn pld_is_pessimistic_and_tight_on_a_single_gaussian() {
    for g in vectors().gaussian_exact {
        let mu = (g.steps as f64).sqrt() / g.sigma;
        let exact = gaussian_epsilon(g.delta, mu);
        let pld = PldComposition::poisson_gaussian(1.0, g.sigma, g.steps).epsilon(g.delta);
        println!(
            "sigma {} steps {}: exact {exact:.9}, pld {pld:.9}",
            g.sigma, g.steps
        );
        assert!(pld >= exact, "pld {pld} below exact {exact}");
        assert!(
            pld <= exact * 1.01,
            "pld {pld} more than 1% above exact {exact}"
        );
    }
}

/// RDP is an upper bound too: never below the exact Gaussian.
#[test]
fn rdp_is_never_below_the_exact_gaussian() {
    for g in vectors().gaussian_exact {
        let mu = (g.steps as f64).sqrt() / g.sigma;
        let exact = gaussian_epsilon(g.delta, mu);
        let c = Composition {
            noise_multiplier: g.sigma,
            sample_rate: 1.0,
            steps: g.steps,
        };
        let r = epsilon(Accountant::Rdp, &c, g.delta, Neighbouring::AddRemove).unwrap();
        assert!(r >= exact, "rdp {r} below exact {exact}");
    }
}

/// Epsilon grows with steps and q, and falls with sigma, for both accountants.
#[test]
fn monotone_in_every_parameter() {
    for acc in Accountant::ALL {
        let e = |q: f64, s: f64, t: u64| {
            epsilon(
                acc,
                &Composition {
                    noise_multiplier: s,
                    sample_rate: q,
                    steps: t,
                },
                1e-5,
                Neighbouring::AddRemove,
            )
            .unwrap()
        };
        let base = e(0.01, 1.5, 200);
        assert!(e(0.02, 1.5, 200) > base, "{acc}: q");
        assert!(e(0.01, 1.6, 200) < base, "{acc}: sigma");
        assert!(e(0.01, 1.5, 400) > base, "{acc}: steps");
    }
}

/// The paper's Adult setting: sigma 2.042, batch 100 of 30162, 20000 steps, delta 1e-5. The
/// paper reports epsilon = 1 for the outside analyst; both accountants must agree with that
/// to within their known looseness, PLD must be below RDP, and the certified PLD interval
/// must be narrow.
#[test]
fn adult_setting() {
    let (q, sigma, steps, delta) = (100.0 / 30162.0, 2.042, 20_000u64, 1e-5);
    let c = Composition {
        noise_multiplier: sigma,
        sample_rate: q,
        steps,
    };
    let rdp = epsilon(Accountant::Rdp, &c, delta, Neighbouring::AddRemove).unwrap();
    let pld = PldComposition::poisson_gaussian(q, sigma, steps);
    let (e, lower) = (pld.epsilon(delta), pld.epsilon_lower_bound(delta));
    println!(
        "adult: rdp {rdp:.6}, pld {e:.6} (certified lower bound {lower:.6}, s = {:.6}, grid {:e})",
        pld.error_bound(),
        pld.grid()
    );
    assert!(e < rdp, "pld {e} >= rdp {rdp}");
    assert!(
        e - lower < 0.05,
        "certified interval too wide: [{lower}, {e}]"
    );
    assert!(
        (0.8..1.1).contains(&e) && (0.8..1.2).contains(&rdp),
        "paper: epsilon = 1"
    );
}

/// The public padded batch size: the Adult setting (30162 records, q = 100/30162) pads to
/// the 2^-40 quantile of Binomial(30162, q), and the overflow it leaves is at most the tail
/// and more than the tail of one record more.
#[test]
fn padded_batch_size_is_the_binomial_quantile() {
    let (n, q) = (30162u64, 100.0 / 30162.0);
    let (b, overflow) = vtwin_dp::padded_batch_size(n, q, vtwin_dp::BATCH_OVERFLOW_TAIL);
    assert!(overflow <= vtwin_dp::BATCH_OVERFLOW_TAIL, "{overflow}");
    assert!(vtwin_dp::binomial_upper_tail(n, q, b as u64 - 1) > vtwin_dp::BATCH_OVERFLOW_TAIL);
    println!("MEASURED Adult padded batch size {b}, overflow {overflow:.3e}");
    assert!((150..=200).contains(&b), "{b}");
    // Tiny data: at least one row.
    assert_eq!(vtwin_dp::padded_batch_size(5, 1e-9, 1e-12).0, 1);
}

/// How the report spends delta on the mechanism's failures, and what padding gives the
/// nodes: with padded batches a node faces exactly the analyst's figure, without it the
/// coordinator's; observers who know the batches run at delta - 2 truncation_failure; the
/// analyst at delta - (1 + e^eps) failure, so its figure rises with the failure.
#[test]
fn delta_terms_and_the_nodes_figure_follow_the_failures_and_the_padding() {
    use vtwin_dp::{PrivacyReport, PrivacySetting, Sampling};
    let base = PrivacySetting::new(
        2.042,
        Sampling::Poisson {
            sample_rate: 100.0 / 30162.0,
        },
        2000,
        1e-5,
    );
    let pld = |r: &PrivacyReport, who: &str| {
        let o = r.per_observer.iter().find(|o| o.observer == who).unwrap();
        o.epsilon["pld"].add_remove.unwrap()
    };
    let clean = PrivacyReport::build(&base).unwrap();
    assert_eq!(pld(&clean, "node 0"), pld(&clean, "coordinator"));
    let padded = PrivacySetting {
        padded_batches: true,
        truncation_failure: 1e-7,
        batch_overflow: 1e-8,
        ..base.clone()
    };
    let r = PrivacyReport::build(&padded).unwrap();
    assert_eq!(pld(&r, "node 0"), pld(&r, "outside analyst"));
    assert_eq!(r.delta_terms["accountant_known_batches"], 1e-5 - 2e-7);
    let hidden = r.delta_terms["accountant_hidden_batches"];
    assert!(
        hidden < 1e-5 - (1.0 + pld(&r, "outside analyst").exp()) * 1.1e-7,
        "{hidden}"
    );
    assert!(pld(&r, "outside analyst") > pld(&clean, "outside analyst"));
    // Each relation is charged at its own epsilon, the largest over the accountants: the
    // add/remove figures at theirs, the replace-one figures (about twice as large) at theirs.
    let failure = 1.1e-7;
    let analyst = &r.per_observer[0].epsilon;
    let most = |pick: fn(&vtwin_dp::EpsilonPair) -> Option<f64>| {
        analyst.values().filter_map(pick).fold(0.0f64, f64::max)
    };
    let (ar, ro) = (most(|p| p.add_remove), most(|p| p.replace_one));
    let hidden_ro = r.delta_terms["accountant_hidden_batches_replace_one"];
    assert!(hidden <= 1e-5 - (1.0 + ar.exp()) * failure, "{hidden}");
    assert!(
        hidden_ro <= 1e-5 - (1.0 + ro.exp()) * failure,
        "{hidden_ro}"
    );
    // One charge for both (the larger one) would give them the same delta.
    assert!(hidden > hidden_ro, "{hidden} {hidden_ro}");
    // Where replace-one's charge leaves no delta (epsilon 4 over 10000 steps, 7e-9 of
    // overflow), its figures are the coordinator's, the add/remove ones still amplified.
    let mut e4 = PrivacySetting {
        padded_batches: true,
        batch_overflow: 6.7e-9,
        ..PrivacySetting::new(
            0.7448,
            Sampling::Poisson {
                sample_rate: 100.0 / 30162.0,
            },
            10000,
            1e-5,
        )
    };
    e4.accountants = vec![Accountant::Rdp];
    let r4 = PrivacyReport::build(&e4).unwrap();
    let a4 = &r4.per_observer[0];
    let c4 = r4
        .per_observer
        .iter()
        .find(|o| o.observer == "coordinator")
        .unwrap();
    let ar4 = a4.epsilon["rdp"].add_remove.unwrap();
    assert!(ar4 < 4.0 && ar4 > 3.9, "{ar4}");
    assert_eq!(a4.epsilon["rdp"].replace_one, c4.epsilon["rdp"].replace_one);
    assert!(a4.reason.contains("for replace-one"), "{}", a4.reason);
    assert!(r4.delta_terms.contains_key("accountant_hidden_batches"));
    assert!(!r4
        .delta_terms
        .contains_key("accountant_hidden_batches_replace_one"));
    // The trimming event comes out of the known-batch delta additively, and raises the
    // figures of the observers who know the batches.
    let trimmed = PrivacyReport::build(&PrivacySetting {
        trim_risk: 3e-7,
        ..padded.clone()
    })
    .unwrap();
    assert_eq!(
        trimmed.delta_terms["accountant_known_batches"],
        1e-5 - 2e-7 - 3e-7
    );
    assert!(pld(&trimmed, "coordinator") > pld(&r, "coordinator"));
    // A failure that leaves no delta is refused.
    let void = PrivacySetting {
        truncation_failure: 1e-5,
        ..base
    };
    assert!(PrivacyReport::build(&void).is_err());
}

/// `--epsilon E` calibrates against the report's own charge: the analyst's RDP figure in
/// `PrivacyReport` (the same failure terms, the RDP accountant) is at most E at the
/// calibrated sigma and above E just below it, while the uncharged calibration's sigma prints
/// more than E. Without a failure the two calibrations agree.
#[test]
fn the_charged_calibration_prints_at_most_its_target() {
    use vtwin_dp::{
        calibrate_sigma, calibrate_sigma_charged, PrivacyReport, PrivacySetting, Sampling,
    };
    let (q, steps, delta) = (100.0 / 30162.0, 3000u64, 1e-5);
    let analyst = |sigma: f64, truncation: f64, overflow: f64| {
        let mut s = PrivacySetting::new(sigma, Sampling::Poisson { sample_rate: q }, steps, delta);
        s.truncation_failure = truncation;
        s.batch_overflow = overflow;
        s.padded_batches = true;
        s.accountants = vec![Accountant::Rdp];
        let r = PrivacyReport::build(&s).unwrap();
        r.epsilon["rdp"].add_remove.unwrap()
    };
    for target in [0.5, 1.0, 4.0] {
        let plain = calibrate_sigma(
            Accountant::Rdp,
            target,
            delta,
            q,
            steps,
            Neighbouring::AddRemove,
        )
        .unwrap();
        assert_eq!(
            calibrate_sigma_charged(target, delta, q, steps, 0.0).unwrap(),
            plain
        );
        for (truncation, overflow) in [(0.0, 3000.0 * 2f64.powi(-40)), (1e-8, 1e-9), (1e-8, 0.0)] {
            let failure = truncation + overflow;
            let s = calibrate_sigma_charged(target, delta, q, steps, failure).unwrap();
            let at = analyst(s, truncation, overflow);
            // At most the target, and tight: the charge moves sigma, not the figure.
            assert!(
                at <= target && at > target * (1.0 - 1e-5),
                "target {target}, failure {failure}: {at}"
            );
            let below = analyst(s * (1.0 - 4e-6), truncation, overflow);
            assert!(
                below > target,
                "target {target}, failure {failure}: not tight ({below})"
            );
            assert!(s > plain, "target {target}, failure {failure}");
            assert!(analyst(plain, truncation, overflow) > target);
        }
    }
    // Where the charge would leave no delta at E, amplification cannot be claimed at E:
    // sigma rises until the (amplified) figure is low enough for its charge, so the figure
    // is below the target, and still amplified (not the known-batch one, in the thousands).
    let (truncation, target) = (1e-6, 4.0);
    let s = calibrate_sigma_charged(target, delta, q, steps, truncation).unwrap();
    let at = analyst(s, truncation, 0.0);
    assert!(at < 0.9 * target, "{at}");
    assert!((1.0 + at.exp()) * truncation < delta, "{at}");
    // Still the smallest such sigma: just below it the report can no longer amplify and
    // states the coordinator's (known-batch) figure, far above the target.
    assert!(analyst(s * (1.0 - 4e-6), truncation, 0.0) > target);
    // A charge that leaves no delta is refused.
    assert!(calibrate_sigma_charged(1.0, delta, q, steps, 1e-5).is_err());
    assert!(calibrate_sigma_charged(1.0, delta, q, steps, f64::NAN).is_err());
}
