//! The audit end to end on the demo population: a generator that copies its training rows
//! must be caught (DCR AUC near 1, the largest epsilon bound the sample sizes allow); one
//! independent of the members must not (AUC near 1/2, bound near 0); all four attacks run.

use std::collections::BTreeMap;

use vtwin_data::demo::{demo_schema, demo_table};
use vtwin_data::Table;
use vtwin_eval::audit::privacy_claim::PrivacyClaim;
use vtwin_eval::audit::training::TrainBackend;
use vtwin_eval::audit::{run_audit, Attack, AuditConfig, AuditData, AuditReport};
use vtwin_model::layout::Layout;
use vtwin_model::model_file::ModelFile;

fn claim() -> PrivacyClaim {
    PrivacyClaim {
        sigma: 1.0,
        clip: 1.0,
        sample_rate: 0.1,
        steps: 100,
        delta: 1e-5,
        epsilon_add_remove: BTreeMap::from([("rdp".into(), 3.0), ("pld".into(), 2.5)]),
    }
}

fn model() -> ModelFile {
    let schema = demo_schema();
    let layout = Layout::from_schema(&schema, 3).unwrap();
    let d = layout.dim();
    ModelFile::new(schema, layout, vec![0.0; d], vec![-2.0; d])
}

fn dcr_only(synthetic: &Table, members: &Table, non_members: &Table) -> AuditReport {
    let (model, claim) = (model(), claim());
    let config = AuditConfig {
        attacks: vec![Attack::DistanceToClosestRecord],
        records: 300,
        seed: 7,
        ..AuditConfig::default()
    };
    let data = AuditData {
        model: &model,
        privacy: &claim,
        synthetic,
        members,
        non_members,
        reference: None,
    };
    run_audit(&data, &config, &mut |_| {}).unwrap()
}

#[test]
fn a_generator_that_copies_training_rows_scores_auc_near_one() {
    let members = demo_table(300, 1);
    let non_members = demo_table(600, 2);
    let r = dcr_only(&members, &members, &non_members);
    assert_eq!((r.members, r.non_members, r.synthetic), (300, 300, 300));
    let a = &r.attacks[0];
    assert_eq!(a.name, "distance_to_closest_record");
    assert!(a.auc > 0.99, "AUC {}", a.auc);
    assert!(a.tpr_at_fpr_0_01 > 0.95, "TPR {}", a.tpr_at_fpr_0_01);
    // Perfect separation on the 150 + 150 evaluation records: the ceiling, about 3.5.
    let b = &a.epsilon_test;
    assert_eq!(b.members, 150);
    assert!(
        (a.epsilon_lower_bound - b.max_achievable).abs() < 0.1,
        "{} vs {}",
        a.epsilon_lower_bound,
        b.max_achievable
    );
    assert!(a.epsilon_lower_bound > 3.0, "{}", a.epsilon_lower_bound);
    assert_eq!(r.epsilon_theoretical, Some(2.5));
}

#[test]
fn a_generator_independent_of_the_members_scores_auc_near_one_half() {
    let members = demo_table(300, 1);
    let non_members = demo_table(600, 2);
    let synthetic = demo_table(300, 3);
    let r = dcr_only(&synthetic, &members, &non_members);
    let a = &r.attacks[0];
    // Null standard deviation of the AUC at 300 + 300 is about 0.024.
    assert!((a.auc - 0.5).abs() < 0.08, "AUC {}", a.auc);
    assert!(a.tpr_at_fpr_0_01 < 0.1, "TPR {}", a.tpr_at_fpr_0_01);
    assert!(a.epsilon_lower_bound < 0.5, "{}", a.epsilon_lower_bound);
}

#[test]
fn all_four_attacks_run_and_report() {
    let members = demo_table(120, 1);
    let non_members = demo_table(240, 2);
    let synthetic = demo_table(120, 3);
    let (model, claim) = (model(), claim());
    let config = AuditConfig {
        records: 60,
        reference_iterations: 30,
        shadow_targets: 2,
        shadow_runs: 4,
        shadow_iterations: 10,
        shadow_backend: TrainBackend::Float,
        canaries: 40,
        canary_iterations: 10,
        ..AuditConfig::default()
    };
    let data = AuditData {
        model: &model,
        privacy: &claim,
        synthetic: &synthetic,
        members: &members,
        non_members: &non_members,
        reference: None,
    };
    let mut lines = Vec::new();
    let r = run_audit(&data, &config, &mut |l| lines.push(l.to_owned())).unwrap();
    let names: Vec<&str> = r.attacks.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "distance_to_closest_record",
            "density_ratio",
            "shadow_model",
            "inserted_canaries"
        ]
    );
    let canaries = &r.attacks[3];
    assert_eq!(canaries.members + canaries.non_members, 40);
    assert_eq!(canaries.details["guesses"], 8);
    // Half of the non-members not scored fit the reference density.
    assert_eq!(r.reference, 180);
    let shadow = &r.attacks[2];
    // 2 targets x 2 test runs per world.
    assert_eq!((shadow.members, shadow.non_members), (4, 4));
    assert_eq!(shadow.details["targets"].as_array().unwrap().len(), 2);
    assert!(shadow.epsilon_theoretical_audited.unwrap() > 0.0);
    for a in &r.attacks {
        assert!((0.0..=1.0).contains(&a.auc), "{}: {}", a.name, a.auc);
        assert!(a.epsilon_lower_bound >= 0.0);
    }
    assert!(lines.iter().any(|l| l.contains("16/16")), "{lines:?}");
    // Same seed, same report.
    let again = run_audit(&data, &config, &mut |_| {}).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}
