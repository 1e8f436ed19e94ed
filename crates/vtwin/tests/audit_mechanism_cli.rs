//! `vtwin audit-mechanism` end to end: the report on the demo data, a deliberately broken
//! mechanism caught (non-zero exit, `sound: false`), and one-line errors for bad settings.

mod common;

use common::{assert_one_line_error, stdout, vtwin};

fn report(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn args<'a>(out: &'a str, trials: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "audit-mechanism",
        "--demo",
        "--demo-rows",
        "600",
        "--components",
        "3",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--iters",
        "10",
        "--trials",
        trials,
        "--out",
        out,
    ];
    a.extend_from_slice(extra);
    a
}

#[test]
fn the_audit_reports_and_catches_an_inflated_sensitivity() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("audit.json");
    let o = vtwin(&args(out.to_str().unwrap(), "40", &[]));
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(stdout(&o).contains("no violation found"), "{}", stdout(&o));
    let r = report(&out);
    let theory = r["epsilon_theoretical"].as_f64().unwrap();
    assert!((theory - 2.0).abs() < 0.01, "{theory}");
    assert!(r["epsilon_lower_bound"].as_f64().unwrap() <= theory);
    assert_eq!(r["sound"], true);
    assert_eq!(r["backend"], "fixed");
    let names: Vec<&str> = r["canaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["canary"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["outlier", "edge", "dirac"]);
    for c in r["canaries"].as_array().unwrap() {
        assert_eq!(c["scores_with"].as_array().unwrap().len(), 40);
        assert!(c["max_contribution_over_clip"].as_f64().unwrap() <= 1.0);
    }

    // Clipping at 4 C while claiming C: the audit's bound exceeds the claim and it fails.
    let broken = dir.path().join("broken.json");
    let o = vtwin(&args(
        broken.to_str().unwrap(),
        "100",
        &["--inflate-sensitivity", "4"],
    ));
    assert!(!o.status.success());
    let e = common::stderr(&o);
    assert!(e.contains("deliberately broken"), "{e}");
    assert!(e.contains("exceeds the theoretical epsilon"), "{e}");
    let r = report(&broken);
    assert_eq!(r["sound"], false);
    assert!(
        r["epsilon_lower_bound"].as_f64().unwrap() > r["epsilon_theoretical"].as_f64().unwrap()
    );
}

#[test]
fn bad_settings_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.json");
    let out = out.to_str().unwrap();
    let base = ["audit-mechanism", "--demo", "--out", out];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        vtwin(&a)
    };
    assert_one_line_error(&with(&[]), "--epsilon with --delta, or --sigma");
    assert_one_line_error(&with(&["--sigma", "0"]), "--sigma 0");
    assert_one_line_error(&with(&["--sigma", "1", "--trials", "2"]), "--trials");
    assert_one_line_error(&with(&["--sigma", "1", "--delta", "2"]), "--delta 2");
    assert_one_line_error(
        &vtwin(&["audit-mechanism", "--sigma", "1", "--out", out]),
        "--schema is required",
    );
    assert!(!std::path::Path::new(out).exists());
}
