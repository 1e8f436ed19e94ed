//! The mechanism audit against the definition: on the real mechanism its lower bound stays
//! below the theoretical epsilon, and on a mechanism that clips at 3C while accounting for C
//! it exceeds it (the audit has power). The scores are N(0, 1) without the canary, as the
//! claimed noise makes them, and the canary's clipped contribution never exceeds C.

use vtwin_data::demo::demo_table;
use vtwin_dp::{calibrate_sigma, Accountant, Neighbouring};
use vtwin_eval::audit::mechanism::{
    audit_mechanism, AuditBackend, MechanismAuditReport, MechanismAuditSettings,
};
use vtwin_model::fixed_backend::Renormalise;

fn settings(trials: usize, iterations: u64) -> MechanismAuditSettings {
    let sigma = calibrate_sigma(
        Accountant::Pld,
        2.0,
        1e-5,
        1.0,
        iterations,
        Neighbouring::AddRemove,
    )
    .unwrap();
    MechanismAuditSettings {
        backend: AuditBackend::Fixed,
        renormalise: Renormalise::ClosedForm,
        components: 3,
        sample_rate: 0.05,
        clip: 1.0,
        sigma,
        delta: 1e-5,
        iterations,
        lr: 0.01,
        trials,
        confidence: 0.95,
        seed: 11,
        sensitivity_inflation: 1.0,
        threads: 2,
    }
}

fn run(s: &MechanismAuditSettings) -> MechanismAuditReport {
    audit_mechanism(&demo_table(600, 1), s, &|_, _| {}).unwrap()
}

#[test]
fn sound_on_the_real_mechanism_and_powerful_on_a_broken_one() {
    let s = settings(300, 10);
    let honest = run(&s);
    assert!(
        (honest.epsilon_theoretical - 2.0).abs() < 0.01,
        "{}",
        honest.epsilon_theoretical
    );
    assert!(honest.sound);
    assert!(honest.epsilon_lower_bound <= honest.epsilon_theoretical);
    assert!(honest.epsilon_lower_bound_clopper_pearson <= honest.epsilon_theoretical);
    for c in &honest.canaries {
        // The clip holds for every canary at every step, and is nearly reached.
        assert!(c.max_contribution_over_clip <= 1.0, "{c:?}");
        assert!(c.mean_contribution_over_clip > 0.99, "{c:?}");
        // Without the canary the score is the projected noise: N(0, 1).
        assert!(
            (c.sd_score_without - 1.0).abs() < 0.15,
            "{}",
            c.sd_score_without
        );
        assert!(c.mean_score_without.abs() < 0.2, "{}", c.mean_score_without);
        // With it, shifted by mu times the contribution (standard error 1/sqrt(300)).
        let shift = c.mean_score_with - c.mean_score_without;
        let want = honest.mu_theoretical * c.mean_contribution_over_clip;
        assert!((shift - want).abs() < 0.25, "{shift} vs {want}");
    }

    // The auditor runs the implementation it audits (as a DP adversary may), so a clip
    // broken to 3 C shows in the canary's contribution and in the scores; a large batch at
    // small K (many other records sharing the canary's coordinates) included.
    for sample_rate in [0.05, 0.2] {
        let broken = run(&MechanismAuditSettings {
            sensitivity_inflation: 3.0,
            sample_rate,
            ..s.clone()
        });
        assert!(!broken.sound);
        assert!(
            broken.epsilon_lower_bound > broken.epsilon_theoretical,
            "q {sample_rate}: {} <= {}",
            broken.epsilon_lower_bound,
            broken.epsilon_theoretical
        );
        for c in &broken.canaries {
            assert!(c.max_contribution_over_clip > 2.9, "{c:?}");
            assert!(
                (c.sd_score_without - 1.0).abs() < 0.15,
                "{}",
                c.sd_score_without
            );
        }
    }
}

#[test]
fn the_mpc_mechanism_gives_the_fixed_scores() {
    let s = settings(6, 3);
    let fixed = run(&s);
    let mpc = run(&MechanismAuditSettings {
        backend: AuditBackend::Mpc,
        ..s
    });
    for (f, m) in fixed.canaries.iter().zip(&mpc.canaries) {
        for (a, b) in f
            .scores_with
            .iter()
            .chain(&f.scores_without)
            .zip(m.scores_with.iter().chain(&m.scores_without))
        {
            // Equal up to the MPC's probabilistic truncations and Newton steps (the fixed
            // backend truncates by floor), which move the score by ~1e-4 of its unit noise.
            assert!((a - b).abs() < 1e-2, "{a} {b}");
        }
    }
    assert!(mpc.truncation_failure_per_run > 0.0);
    assert!(mpc.epsilon_theoretical >= fixed.epsilon_theoretical);
}
