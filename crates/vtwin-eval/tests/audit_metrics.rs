//! The audit's metrics against hand-computed values on tiny inputs: AUC with ties, the ROC
//! curve and TPR at FPR, Clopper-Pearson (replayed vectors), the epsilon bound, DCR.

use vtwin_eval::audit::clopper_pearson::clopper_pearson;
use vtwin_eval::audit::distance::dcr_scores;
use vtwin_eval::audit::epsilon_bound::{epsilon_lower_bound, Inequality, Labelled};
use vtwin_eval::audit::nearest::nearest_distances;
use vtwin_eval::audit::roc::{auc, roc_curve, tpr_at_fpr};
use vtwin_eval::audit::shadow::most_isolated;
use vtwin_eval::FeatureMatrix;

// Members [1, 2, 2, 3], non-members [0, 2, 2]. Pairs (in, out), 12 of them:
// 1: beats 0, loses to both 2s -> 1; each 2: beats 0, ties both 2s -> 1 + 0.5 + 0.5 = 2;
// 3: beats all three -> 3. (1 + 2 + 2 + 3) / 12 = 2/3.
const TIE_IN: [f64; 4] = [1.0, 2.0, 2.0, 3.0];
const TIE_OUT: [f64; 3] = [0.0, 2.0, 2.0];

#[test]
fn auc_with_ties_is_the_mid_rank_statistic() {
    assert!((auc(&TIE_IN, &TIE_OUT).unwrap() - 2.0 / 3.0).abs() < 1e-15);
    // Swapping the classes gives 1 - AUC.
    assert!((auc(&TIE_OUT, &TIE_IN).unwrap() - 1.0 / 3.0).abs() < 1e-15);
    // All tied: 1/2.
    assert_eq!(auc(&[5.0, 5.0], &[5.0]).unwrap(), 0.5);
}

#[test]
fn roc_curve_and_tpr_at_fpr_by_hand() {
    let c = roc_curve(&TIE_IN, &TIE_OUT).unwrap();
    // Thresholds 3, 2, 1, 0: (fp, tp) = (0, 1), (2, 3), (2, 4), (3, 4).
    let pts: Vec<(f64, f64)> = c.iter().map(|p| (p.fpr, p.tpr)).collect();
    assert_eq!(
        pts,
        vec![
            (0.0, 0.0),
            (0.0, 0.25),
            (2.0 / 3.0, 0.75),
            (2.0 / 3.0, 1.0),
            (1.0, 1.0)
        ]
    );
    // The trapezoid area of the curve equals the mid-rank AUC.
    let area: f64 = c
        .windows(2)
        .map(|w| (w[1].fpr - w[0].fpr) * (w[0].tpr + w[1].tpr) / 2.0)
        .sum();
    assert!((area - 2.0 / 3.0).abs() < 1e-15);
    // FPR 0.01 lies on the segment (0, 0.25) -> (2/3, 0.75): 0.25 + 0.5 * 0.01 / (2/3).
    assert!((tpr_at_fpr(&c, 0.01) - 0.2575).abs() < 1e-15);
    // At a vertical segment the highest TPR counts.
    assert_eq!(tpr_at_fpr(&c, 2.0 / 3.0), 1.0);
    assert_eq!(tpr_at_fpr(&c, 0.0), 0.25);
    assert_eq!(tpr_at_fpr(&c, 1.0), 1.0);

    // 100 non-members, one of them scoring 9.5: members 10, 9, 8 are all caught at FPR 0.01.
    let mut out: Vec<f64> = (0..99).map(|i| -(i as f64)).collect();
    out.push(9.5);
    let c = roc_curve(&[10.0, 9.0, 8.0], &out).unwrap();
    assert_eq!(tpr_at_fpr(&c, 0.01), 1.0);
    assert!((tpr_at_fpr(&c, 0.005) - 1.0 / 3.0).abs() < 1e-15);
}

#[test]
fn clopper_pearson_replays_the_vectors() {
    let text = include_str!("vectors/clopper_pearson.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for c in cases {
        let (k, n) = (
            c["successes"].as_u64().unwrap(),
            c["trials"].as_u64().unwrap(),
        );
        let conf = c["confidence"].as_f64().unwrap();
        let (lo, hi) = clopper_pearson(k, n, conf).unwrap();
        for (got, want) in [
            (lo, c["lower"].as_f64().unwrap()),
            (hi, c["upper"].as_f64().unwrap()),
        ] {
            assert!(
                (got - want).abs() <= 1e-12 * want.max(1e-3),
                "({k}, {n}, {conf}): {got} vs {want}"
            );
        }
    }
    // R's ?binom.test example, to 7 digits.
    let (lo, hi) = clopper_pearson(682, 925, 0.95).unwrap();
    assert_eq!(
        (format!("{lo:.7}"), format!("{hi:.7}")),
        ("0.7076683".into(), "0.7654066".into())
    );
}

#[test]
fn epsilon_bound_of_a_perfect_test_by_hand() {
    // 10 members above 10 non-members; the bound uses Clopper-Pearson at 0.975 per rate:
    // TPR_lo = 0.0125^(1/10), FPR_hi = 1 - 0.0125^(1/10), eps_lo = ln(TPR_lo / FPR_hi).
    let members: Vec<f64> = (0..10).map(|i| 10.0 + i as f64).collect();
    let non: Vec<f64> = (0..10).map(|i| i as f64).collect();
    let set = Labelled {
        members: &members,
        non_members: &non,
    };
    let b = epsilon_lower_bound(set, set, 0.0, 0.95).unwrap();
    let a = 0.0125f64.powf(0.1);
    let want = (a / (1.0 - a)).ln();
    assert_eq!((b.true_positives, b.false_positives), (10, 0));
    assert!(
        (b.lower_bound - want).abs() < 1e-9,
        "{} vs {want}",
        b.lower_bound
    );
    assert!((b.max_achievable - want).abs() < 1e-9);
    assert_eq!(b.ci.1, None, "no false positive: the upper end is infinite");
    assert_eq!(b.point, None);
    assert!(matches!(b.inequality, Inequality::Tpr | Inequality::Tnr));
    // delta enters as TPR_lo - delta.
    let b = epsilon_lower_bound(set, set, 0.1, 0.95).unwrap();
    assert!((b.lower_bound - ((a - 0.1) / (1.0 - a)).ln()).abs() < 1e-9);
}

#[test]
fn epsilon_bound_threshold_is_chosen_on_the_selection_set() {
    // Selection says members score high; evaluation scores are identical across classes,
    // so the chosen test has TPR = FPR there and the bound is 0.
    let sel_in: Vec<f64> = (0..50).map(|i| 100.0 + i as f64).collect();
    let sel_out: Vec<f64> = (0..50).map(|i| i as f64).collect();
    let ev: Vec<f64> = (0..50).map(|i| 2.0 * i as f64 + 1.0).collect();
    let b = epsilon_lower_bound(
        Labelled {
            members: &sel_in,
            non_members: &sel_out,
        },
        Labelled {
            members: &ev,
            non_members: &ev,
        },
        1e-5,
        0.95,
    )
    .unwrap();
    assert_eq!(b.true_positives, b.false_positives);
    assert_eq!(b.lower_bound, 0.0);
    assert_eq!(b.members, 50);
    // Reversed scores are caught by the reversed inequalities.
    let b = epsilon_lower_bound(
        Labelled {
            members: &sel_out,
            non_members: &sel_in,
        },
        Labelled {
            members: &sel_out,
            non_members: &sel_in,
        },
        0.0,
        0.95,
    )
    .unwrap();
    assert!(matches!(b.inequality, Inequality::Fnr | Inequality::Fpr));
    assert!(b.lower_bound > 2.0, "{}", b.lower_bound);
}

fn matrix(rows: &[&[f64]]) -> FeatureMatrix {
    FeatureMatrix::from_rows(rows)
}

#[test]
fn dcr_on_three_points_by_hand() {
    // Synthetic (0,0), (3,0), (0,4); records (0,0) -> 0, (3,4) -> min(5, 4, 3) = 3,
    // (1,1) -> min(sqrt 2, sqrt 5, sqrt 10) = sqrt 2.
    let synth = matrix(&[&[0.0, 0.0], &[3.0, 0.0], &[0.0, 4.0]]);
    let recs = matrix(&[&[0.0, 0.0], &[3.0, 4.0], &[1.0, 1.0]]);
    let s = dcr_scores(&recs, &synth);
    assert_eq!(s[0], 0.0);
    assert_eq!(s[1], -3.0);
    assert!((s[2] + 2f64.sqrt()).abs() < 1e-15);
    // Skipping a record's own row: (0,0) -> 3, (3,0) -> 3, (0,4) -> 4.
    let d = nearest_distances(&synth, &synth, Some);
    assert_eq!(d, vec![3.0, 3.0, 4.0]);
    // The most isolated is (0,4); the tie at 3 goes to the lower row.
    assert_eq!(
        most_isolated(&synth, &[0, 1, 2], 2),
        vec![(2, 4.0), (0, 3.0)]
    );
    assert_eq!(most_isolated(&synth, &[1], 5), vec![(1, 3.0)]);
}
