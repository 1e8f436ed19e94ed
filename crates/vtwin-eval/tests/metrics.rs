//! Every metric against values computed by hand on a tiny table (the derivations are in the
//! comments), plus the Fréchet distance against closed forms.

use vtwin_data::{Schema, Table};
use vtwin_eval::associations::{association_difference, correlation_ratio, cramers_v, pearson};
use vtwin_eval::cells::table_cells;
use vtwin_eval::frechet::{frechet_distance, frechet_from_moments};
use vtwin_eval::marginals::{marginal_distances, tvd};
use vtwin_eval::tstr::{tstr, Target, TstrConfig, TstrError};
use vtwin_eval::{FeatureMatrix, TableSource};

/// x (party a, integer 0..10: bins of width 0.5, so 0, 5, 10 -> bins 0, 10, 19), c (a, p/q),
/// d (b, u/v/w), y (b, integer 0..4: 0, 2, 4 -> bins 0, 10, 19).
const SCHEMA: &str = r#"
[[column]]
name = "x"
party = "a"
kind = "continuous"
min = 0
max = 10
integer = true

[[column]]
name = "c"
party = "a"
kind = "categorical"
categories = ["p", "q"]

[[column]]
name = "d"
party = "b"
kind = "categorical"
categories = ["u", "v", "w"]

[[column]]
name = "y"
party = "b"
kind = "continuous"
min = 0
max = 4
integer = true
"#;

const REAL: &str = "x,c,d,y\n0,p,u,0\n5,p,v,2\n5,q,v,2\n10,q,w,4\n";
const SYNTH: &str = "x,c,d,y\n0,p,u,0\n0,p,u,0\n5,q,v,4\n10,q,w,4\n";

fn load(schema: &Schema, text: &str) -> Table {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.csv");
    std::fs::write(&p, text).unwrap();
    TableSource::Joined(p).load(schema).unwrap()
}

fn tables() -> (Table, Table) {
    let schema = Schema::from_toml(SCHEMA).unwrap();
    (load(&schema, REAL), load(&schema, SYNTH))
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
}

#[test]
fn marginals_by_hand() {
    let (r, s) = tables();
    let (rc, sc) = (table_cells(&r), table_cells(&s));
    // 1-way: x {0:1/4,10:1/2,19:1/4} vs {0:1/2,10:1/4,19:1/4} -> 1/4; c equal -> 0;
    // d {u:1/4,v:1/2,w:1/4} vs {1/2,1/4,1/4} -> 1/4; y {0:1/4,10:1/2,19:1/4} vs {0:1/2,19:1/2}
    // -> (1/4 + 1/2 + 1/4)/2 = 1/2. Mean 1/4.
    close(tvd(&rc, &sc, &[0]), 0.25);
    close(tvd(&rc, &sc, &[1]), 0.0);
    close(tvd(&rc, &sc, &[3]), 0.5);
    let m = marginal_distances(&rc, &sc, 7);
    close(m.tvd_1way, 0.25);
    // 2-way: (x,c) 1/4, (x,d) 1/4, (x,y) 1/2, (c,d) 1/4, (c,y) 1/2, (d,y) 1/2 -> 2.25/6.
    close(tvd(&rc, &sc, &[0, 2]), 0.25);
    close(tvd(&rc, &sc, &[1, 3]), 0.5);
    close(m.tvd_2way.unwrap(), 0.375);
    // 3-way: (x,c,d) 1/4, (x,c,y) 1/2, (x,d,y) 1/2, (c,d,y) 1/2 -> 1.75/4, all 4 triples.
    close(tvd(&rc, &sc, &[0, 1, 2]), 0.25);
    close(m.tvd_3way.unwrap(), 0.4375);
    assert_eq!((m.n_3way, m.n_3way_total, m.three_way), (4, 4, "all"));
    assert_eq!(m.three_way_seed, None);
    // A table against itself: 0 everywhere.
    let same = marginal_distances(&rc, &rc, 0);
    assert_eq!(
        (same.tvd_1way, same.tvd_2way, same.tvd_3way),
        (0.0, Some(0.0), Some(0.0))
    );
}

#[test]
fn three_way_is_sampled_above_the_limit() {
    // 20 columns have 1140 triples > 1000: a seeded sample of 1000, reproducible.
    let mut toml = String::new();
    let mut header = Vec::new();
    for i in 0..20 {
        toml += &format!(
            "[[column]]\nname = \"k{i}\"\nparty = \"{}\"\nkind = \"categorical\"\ncategories = [\"0\", \"1\"]\n",
            if i < 10 { "a" } else { "b" }
        );
        header.push(format!("k{i}"));
    }
    let schema = Schema::from_toml(&toml).unwrap();
    let row = |bits: u32| {
        (0..20)
            .map(|i| ((bits >> i) & 1).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let text = |rows: &[u32]| {
        let mut t = header.join(",") + "\n";
        for &b in rows {
            t += &(row(b) + "\n");
        }
        t
    };
    let r = load(&schema, &text(&[0, 0xFFFFF, 0x5555, 0x12345]));
    let s = load(&schema, &text(&[0, 0xFFFFF, 0xAAAA, 0x54321]));
    let (rc, sc) = (table_cells(&r), table_cells(&s));
    let a = marginal_distances(&rc, &sc, 11);
    let b = marginal_distances(&rc, &sc, 11);
    assert_eq!(a, b);
    assert_eq!(
        (a.n_3way, a.n_3way_total, a.three_way),
        (1000, 1140, "random sample")
    );
    assert_eq!(a.three_way_seed, Some(11));
    let c = marginal_distances(&rc, &sc, 12);
    assert_ne!(a.tvd_3way, c.tvd_3way, "another seed draws another sample");
}

#[test]
fn association_statistics_by_hand() {
    // Pearson: (0,5,5,10) vs (0,0,5,10) ... see below; exact line -> 1; constant -> 0.
    close(pearson(&[0.0, 5.0, 5.0, 10.0], &[0.0, 2.0, 2.0, 4.0]), 1.0);
    close(pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
    assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), 0.0);
    // x = (0,0,5,10), y = (0,0,4,4): centred sums sxy 30, sxx 68.75, syy 16.
    close(
        pearson(&[0.0, 0.0, 5.0, 10.0], &[0.0, 0.0, 4.0, 4.0]),
        30.0 / (68.75f64 * 16.0).sqrt(),
    );
    // Cramér's V: p:{u,v}, q:{v,w}: chi2 = 4 * 0.5 = 2, V = sqrt(2 / 4) ; p:{u,u}, q:{v,w}:
    // chi2 = 1 + 1 + 4 * 0.5 = 4, V = 1.
    close(cramers_v(&[0, 0, 1, 1], 2, &[0, 1, 1, 2], 3), 0.5f64.sqrt());
    close(cramers_v(&[0, 0, 1, 1], 2, &[0, 0, 1, 2], 3), 1.0);
    assert_eq!(cramers_v(&[0, 0, 0], 2, &[0, 1, 2], 3), 0.0);
    // eta: groups (0,5) and (5,10): between 25, total 50.
    close(
        correlation_ratio(&[0, 0, 1, 1], 2, &[0.0, 5.0, 5.0, 10.0]),
        0.5f64.sqrt(),
    );
    close(
        correlation_ratio(&[0, 0, 1, 1], 2, &[0.0, 0.0, 5.0, 10.0]),
        (56.25f64 / 68.75).sqrt(),
    );
    assert_eq!(correlation_ratio(&[0, 1], 2, &[3.0, 3.0]), 0.0);
}

#[test]
fn association_differences_by_hand() {
    let (r, s) = tables();
    let a = association_difference(&r, &s);
    // Within party a: (x,c) |sqrt(1/2) - sqrt(56.25/68.75)|; party b: (d,y) |1 - 1| = 0.
    let xc = (0.5f64.sqrt() - (56.25f64 / 68.75).sqrt()).abs();
    close(a.corr_diff_within.unwrap(), xc / 2.0);
    close(a.within_by_party["a"], xc);
    close(a.within_by_party["b"], 0.0);
    // Across: (x,d) eta 1 vs 1 -> 0; (x,y) Pearson 1 vs 30/sqrt(1100); (c,d) Cramér
    // sqrt(1/2) vs 1; (c,y) eta sqrt(1/2) vs 1.
    let across = [
        0.0,
        1.0 - 30.0 / 1100f64.sqrt(),
        1.0 - 0.5f64.sqrt(),
        1.0 - 0.5f64.sqrt(),
    ];
    close(
        a.corr_diff_across.unwrap(),
        across.iter().sum::<f64>() / 4.0,
    );
    assert_eq!((a.n_within, a.n_across), (2, 4));
    assert_eq!(a.max_diff.as_ref().unwrap().0, "c|d");
}

fn matrix(rows: &[&[f64]]) -> FeatureMatrix {
    FeatureMatrix::from_rows(rows)
}

#[test]
fn frechet_closed_forms() {
    // 1-d: (mu1 - mu2)^2 + (sd1 - sd2)^2; [0,2]: mean 1, var 2; [1,5]: mean 3, var 8.
    let a = matrix(&[&[0.0], &[2.0]]);
    let b = matrix(&[&[1.0], &[5.0]]);
    close(
        frechet_distance(&a, &b).unwrap(),
        4.0 + (2f64.sqrt() - 8f64.sqrt()).powi(2),
    );
    // Identical inputs: 0.
    let c = matrix(&[
        &[0.0, 1.0, 0.3],
        &[1.0, 0.0, 0.7],
        &[0.5, 0.5, 0.1],
        &[1.0, 1.0, 0.9],
    ]);
    assert!(frechet_distance(&c, &c).unwrap().abs() < 1e-12);
    // 2x2 non-commuting covariances: Tr sqrt(M) = sqrt(tr(S1 S2) + 2 sqrt(det S1 det S2)).
    let (s1, s2) = ([2.0, 0.5, 0.5, 1.0], [1.0, -0.3, -0.3, 3.0]);
    let tr12 = s1[0] * s2[0] + s1[1] * s2[2] + s1[2] * s2[1] + s1[3] * s2[3];
    let det = |s: &[f64; 4]| s[0] * s[3] - s[1] * s[2];
    let cross = (tr12 + 2.0 * (det(&s1) * det(&s2)).sqrt()).sqrt();
    let mu = ([1.0, 0.0], [0.0, 2.0]);
    let want = 1.0 + 4.0 + (2.0 + 1.0 + 1.0 + 3.0) - 2.0 * cross;
    let got = frechet_from_moments(&mu.0, &s1, &mu.1, &s2, 2);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    // Symmetric in its arguments.
    let back = frechet_from_moments(&mu.1, &s2, &mu.0, &s1, 2);
    assert!((got - back).abs() < 1e-12);
}

#[test]
fn tstr_target_errors_name_the_column() {
    let (r, _) = tables();
    let e = Target::new(&r.schema, "income").unwrap_err();
    assert!(matches!(e, TstrError::UnknownColumn { .. }));
    assert!(
        e.to_string()
            .starts_with("target column income: no such column"),
        "{e}"
    );
    let e = Target::new(&r.schema, "d").unwrap_err().to_string();
    assert!(e.contains("\"d\"") && e.contains("3 categories"), "{e}");
    let e = Target::new(&r.schema, "x").unwrap_err().to_string();
    assert!(e.contains("continuous"), "{e}");
    assert_eq!(Target::new(&r.schema, "c").unwrap().positive, "q");
}

#[test]
fn tstr_by_hand() {
    // Target c (positive "q"): c = q exactly when x >= 5 in REAL's first three and fourth rows
    // ... here x separates p (x = 0, 5) from q (x = 5, 10) only partly. Use a separable table:
    let schema = Schema::from_toml(SCHEMA).unwrap();
    let sep = "x,c,d,y\n0,p,u,0\n1,p,u,1\n2,p,v,0\n8,q,w,4\n9,q,w,3\n10,q,v,4\n";
    let t = load(&schema, sep);
    let target = Target::new(&schema, "c").unwrap();
    let cfg = TstrConfig::default();
    let rep = tstr(&target, Some(&t), &t, &t, &cfg).unwrap();
    // Separable by x (and y): both families rank every q above every p.
    assert_eq!(rep.logistic.auc_synth, Some(1.0));
    assert_eq!(rep.logistic.auc_real, Some(1.0));
    assert_eq!(rep.logistic.acc_synth, 1.0);
    assert_eq!(rep.logistic.f1_synth, 1.0);
    assert_eq!(rep.test_positive_rate, 0.5);

    // A synthetic table with no positive: the constant classifier "p" on the test table
    // (3 p, 3 q): AUC 1/2, accuracy 1/2, F1 0, and a note says so.
    let nopos = load(&schema, "x,c,d,y\n0,p,u,0\n9,p,w,4\n");
    let rep = tstr(&target, None, &nopos, &t, &cfg).unwrap();
    assert_eq!(rep.logistic.auc_synth, Some(0.5));
    assert_eq!(rep.logistic.acc_synth, 0.5);
    assert_eq!(rep.logistic.f1_synth, 0.0);
    assert_eq!(rep.random_forest.acc_synth, 0.5);
    assert!(
        rep.logistic.notes[0].contains("only negative"),
        "{:?}",
        rep.logistic.notes
    );
    assert_eq!(rep.logistic.auc_real, None);
    assert_eq!(rep.n_train_real, None);
}

#[test]
fn both_families_learn_a_noisy_threshold() {
    // c = q iff x >= 5, with every 10th label flipped; y is noise. 400 records: both
    // families must rank far better than chance on a fresh test table of the same law.
    let schema = Schema::from_toml(SCHEMA).unwrap();
    let make = |n: usize, mut state: u64| {
        let mut t = String::from("x,c,d,y\n");
        for i in 0..n {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = (state >> 33) % 11;
            let y = (state >> 20) % 5;
            let d = ["u", "v", "w"][((state >> 40) % 3) as usize];
            let flip = i % 10 == 0;
            let c = if (x >= 5) != flip { "q" } else { "p" };
            t += &format!("{x},{c},{d},{y}\n");
        }
        load(&schema, &t)
    };
    let (train, test) = (make(400, 1), make(300, 2));
    let target = Target::new(&schema, "c").unwrap();
    let rep = tstr(&target, Some(&train), &train, &test, &TstrConfig::default()).unwrap();
    for (name, f) in [("logistic", &rep.logistic), ("forest", &rep.random_forest)] {
        let auc = f.auc_synth.unwrap();
        assert!(auc > 0.85, "{name}: AUC {auc}");
        // Labels are 90% the threshold: accuracy near 0.9.
        assert!(f.acc_synth > 0.8, "{name}: accuracy {}", f.acc_synth);
        assert_eq!(f.auc_real, f.auc_synth, "same training table");
    }
}
