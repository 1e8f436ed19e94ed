//! `vtwin privacy` and `vtwin noise` as INTERFACE.md specifies them.

mod common;

use common::{assert_one_line_error, stderr, stdout, vtwin};

#[test]
fn noise_is_reproducible_with_a_seed_and_one_integer_per_line() {
    let a = vtwin(&["noise", "--sigma", "3.5", "--count", "200", "--seed", "7"]);
    let b = vtwin(&["noise", "--sigma", "3.5", "--count", "200", "--seed", "7"]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    let lines: Vec<i64> = stdout(&a).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(lines.len(), 200);
    assert!(lines.iter().any(|&x| x != lines[0]));
    let c = vtwin(&["noise", "--sigma", "3.5", "--count", "200", "--seed", "8"]);
    assert_ne!(a.stdout, c.stdout);
}

#[test]
fn noise_matches_the_regression_vector() {
    // protocols/vectors/dp-discrete-gaussian.json: sigma^2 = 2^66 (sigma = 2^33), seed 5.
    let o = vtwin(&[
        "noise",
        "--sigma",
        "8589934592",
        "--count",
        "3",
        "--seed",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "4643275754\n-11297234336\n-13779115175\n");
}

#[test]
fn noise_without_seed_uses_the_os() {
    let a = vtwin(&["noise", "--sigma", "1e6", "--count", "5"]);
    let b = vtwin(&["noise", "--sigma", "1e6", "--count", "5"]);
    assert!(a.status.success());
    assert_ne!(
        a.stdout, b.stdout,
        "two OS-seeded runs gave the same samples"
    );
}

#[test]
fn noise_errors_name_the_flag() {
    for (sigma, _) in [("-1", "positive"), ("abc", "decimal"), ("0", "positive")] {
        let o = vtwin(&["noise", "--sigma", sigma, "--count", "1"]);
        assert_one_line_error(&o, "--sigma");
    }
}

#[test]
fn privacy_prints_epsilon_for_each_accountant() {
    let o = vtwin(&[
        "privacy",
        "--sigma",
        "4",
        "--sample-rate",
        "0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let pld: f64 = out
        .lines()
        .find(|l| l.starts_with("outside analyst\tpld"))
        .and_then(|l| l.split('\t').nth(2))
        .unwrap()
        .parse()
        .unwrap();
    assert!((pld - 0.2721).abs() < 5e-4, "{out}");
    assert!(out.contains("each party\trdp"), "{out}");
}

#[test]
fn privacy_json_is_the_privacy_json_object() {
    let o = vtwin(&[
        "privacy",
        "--sigma",
        "2.042",
        "--sample-rate",
        "0.0033155",
        "--steps",
        "2000",
        "--delta",
        "1e-5",
        "--accountant",
        "rdp",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "sigma",
        "clip",
        "sample_rate",
        "steps",
        "delta",
        "epsilon",
        "per_observer",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(v["epsilon"]["rdp"]["add_remove"].as_f64().unwrap() > 0.0);
    assert!(v["epsilon"]["rdp"]["replace_one"].as_f64().unwrap() > 0.0);
    let observers = v["per_observer"].as_array().unwrap();
    assert_eq!(observers.len(), 1 + 2 + 3 + 1);
    assert!(observers
        .iter()
        .all(|o| o["reason"].as_str().is_some_and(|r| !r.is_empty())));
}

#[test]
fn privacy_target_epsilon_prints_sigma() {
    let o = vtwin(&[
        "privacy",
        "--target-epsilon",
        "1",
        "--sample-rate",
        "1",
        "--steps",
        "1",
        "--delta",
        "1e-6",
        "--accountant",
        "rdp",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let s: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("rdp\tsigma = "))
        .unwrap()
        .parse()
        .unwrap();
    assert!((s - 4.530877).abs() < 1e-4, "{out}");
}

#[test]
fn privacy_errors_name_the_flag() {
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--sigma",
                "1",
                "--sample-rate",
                "1.5",
                "--steps",
                "1",
                "--delta",
                "1e-5",
            ],
            "--sample-rate",
        ),
        (
            &[
                "--sigma",
                "1",
                "--sample-rate",
                "0.1",
                "--steps",
                "1",
                "--delta",
                "2",
            ],
            "--delta",
        ),
        (
            &[
                "--sigma",
                "-1",
                "--sample-rate",
                "0.1",
                "--steps",
                "1",
                "--delta",
                "1e-5",
            ],
            "--sigma",
        ),
        (
            &[
                "--target-epsilon",
                "0",
                "--sample-rate",
                "0.1",
                "--steps",
                "1",
                "--delta",
                "1e-5",
            ],
            "--target-epsilon",
        ),
    ];
    for (args, flag) in cases {
        let mut all = vec!["privacy"];
        all.extend_from_slice(args);
        assert_one_line_error(&vtwin(&all), flag);
    }
    // Neither --sigma nor --target-epsilon: clap's usage error (exit status 2).
    let o = vtwin(&[
        "privacy",
        "--sample-rate",
        "0.1",
        "--steps",
        "1",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn privacy_disjoint_batches_counts_epochs() {
    let o = vtwin(&[
        "privacy",
        "--sigma",
        "2.042",
        "--sample-rate",
        "0.0033155",
        "--steps",
        "20000",
        "--delta",
        "1e-5",
        "--disjoint-batches",
        "302",
        "--accountant",
        "rdp",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["per_observer"][0]["steps"].as_u64(), Some(67));
    assert_eq!(v["sampling"]["mode"].as_str(), Some("disjoint_epochs"));
}
