//! `vtwin train` end to end: demo runs with both backends, CLI resume, bad flags, and an
//! Adult smoke run (skipped when ../shared/data/adult is absent).

use std::path::{Path, PathBuf};
use std::process::Command;

fn vtwin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vtwin"))
        .args(args)
        .output()
        .expect("run vtwin")
}

fn ok(args: &[&str]) -> String {
    let out = vtwin(args);
    assert!(
        out.status.success(),
        "vtwin {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (iteration, test_nll) rows of train.csv.
fn history(dir: &Path) -> Vec<(u64, f64)> {
    let text = std::fs::read_to_string(dir.join("train.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("iteration,epsilon,test_nll"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

fn mu(dir: &Path) -> Vec<u64> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("model.json")).unwrap()).unwrap();
    v["mu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().to_bits())
        .collect()
}

#[test]
fn demo_training_decreases_test_nll_with_both_backends() {
    let tmp = tempfile::tempdir().unwrap();
    for backend in ["float", "fixed"] {
        let out = tmp.path().join(backend);
        let o = out.to_str().unwrap();
        ok(&[
            "train",
            "--demo",
            "--demo-rows",
            "2000",
            "--backend",
            backend,
            "--out",
            o,
            "--sigma",
            "1",
            "--components",
            "5",
            "--iters",
            "300",
            "--eval-every",
            "100",
            "--noise-seed",
            "4",
        ]);
        let h = history(&out);
        assert_eq!(
            h.iter().map(|r| r.0).collect::<Vec<_>>(),
            vec![0, 100, 200, 300]
        );
        let (first, last) = (h[0].1, h[3].1);
        assert!(last < first - 1.0, "{backend}: test NLL {first} -> {last}");
        for f in [
            "model.json",
            "privacy.json",
            "timing.json",
            "checkpoint.bin",
        ] {
            assert!(out.join(f).is_file(), "{backend}: {f} missing");
        }
        let p: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("privacy.json")).unwrap())
                .unwrap();
        assert_eq!(p["steps"], 300);
        assert!(p["epsilon"]["rdp"]["add_remove"].as_f64().unwrap() > 0.0);
        // The model file is readable by the library.
        vtwin_model::model_file::ModelFile::load(&out.join("model.json")).unwrap();
    }
}

#[test]
fn interrupted_and_resumed_run_equals_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    // The settings both runs share; the refused resume below changes only --seed.
    let settings = [
        "train",
        "--demo",
        "--demo-rows",
        "500",
        "--backend",
        "fixed",
        "--sigma",
        "1.5",
        "--components",
        "4",
        "--batch",
        "50",
        "--noise-seed",
        "8",
    ];
    let base = [&settings[..], &["--seed", "2", "--checkpoint-every", "7"]].concat();
    let whole = tmp.path().join("whole");
    let parts = tmp.path().join("parts");
    let with = |dir: &PathBuf, extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend(["--out", dir.to_str().unwrap()]);
        a.extend(extra);
        ok(&a);
    };
    with(&whole, &["--iters", "60"]);
    with(&parts, &["--iters", "25"]);
    with(&parts, &["--iters", "60", "--resume"]);
    assert_eq!(mu(&whole), mu(&parts));
    // The interrupted run logged one extra row (at its end, iteration 25); otherwise the
    // histories agree, including the final epsilon and test NLL.
    let mut h = history(&parts);
    assert_eq!(h.remove(1).0, 25);
    assert_eq!(history(&whole), h);
    // Resuming with different settings is refused, naming the flag.
    let out = vtwin(
        &[
            &settings[..],
            &[
                "--seed",
                "3",
                "--iters",
                "70",
                "--resume",
                "--out",
                parts.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
}

#[test]
fn bad_flags_give_one_line_errors_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--backend", "float", "--sigma", "1", "--clip=-1"],
            "--clip",
        ),
        (&["--backend", "float", "--sigma", "1", "--lr", "0"], "--lr"),
        (&["--backend", "float", "--epsilon", "1"], "--delta"),
        (
            &["--backend", "float", "--sigma", "1", "--batch", "0"],
            "--batch",
        ),
        (
            &["--backend", "float", "--sigma", "1", "--sample-rate", "1.5"],
            "--sample-rate",
        ),
        (
            &["--backend", "float", "--sigma", "1", "--components", "0"],
            "--components",
        ),
        (&["--backend", "float"], "--sigma"),
        (
            &[
                "--backend",
                "fixed",
                "--sigma",
                "1",
                "--renormalise",
                "sometimes",
            ],
            "--renormalise",
        ),
        (
            &["--backend", "float", "--sigma", "1", "--resume"],
            "--resume",
        ),
    ];
    for (extra, want) in cases {
        let mut a = vec![
            "train",
            "--demo",
            "--demo-rows",
            "50",
            "--out",
            o,
            "--iters",
            "2",
        ];
        a.extend_from_slice(extra);
        let out = vtwin(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{a:?} should fail");
        assert!(
            err.contains(want),
            "{a:?}: error {err:?} should name {want}"
        );
        if !err.starts_with("error: invalid value") {
            assert_eq!(err.trim_end().lines().count(), 1, "{a:?}: {err:?}");
        }
    }
    // Without --demo a schema is needed.
    let out = vtwin(&["train", "--backend", "float", "--sigma", "1", "--out", o]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--schema"));
}

fn adult_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("VTWIN_DATA_DIR")
        .map(|d| PathBuf::from(d).join("adult"))
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/adult")
        });
    dir.join("adult.data").is_file().then_some(dir)
}

#[test]
fn adult_smoke_run_with_the_fixed_backend() {
    let Some(dir) = adult_dir() else {
        eprintln!("skipped: Adult data not found (set VTWIN_DATA_DIR)");
        return;
    };
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/adult/schema.toml");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("adult");
    ok(&[
        "train",
        "--schema",
        schema.to_str().unwrap(),
        "--joined",
        dir.join("adult.data").to_str().unwrap(),
        "--test-joined",
        dir.join("adult.test").to_str().unwrap(),
        "--backend",
        "fixed",
        "--out",
        out.to_str().unwrap(),
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--iters",
        "40",
        "--eval-every",
        "40",
    ]);
    let h = history(&out);
    assert!(h[1].1 < h[0].1, "Adult test NLL {} -> {}", h[0].1, h[1].1);
}
