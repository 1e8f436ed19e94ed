//! `vtwin eval` with the full metrics, end to end on the demo consortium: a model trained by
//! `vtwin train`, its synthetic table, real train and test tables. The JSON must hold every
//! INTERFACE.md key, equal the library's `vtwin_eval::evaluate` on the same files, be
//! deterministic, and obey the inequalities every correct implementation satisfies.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_one_line_error, stderr, vtwin};
use vtwin_data::demo::demo_table;
use vtwin_eval::tstr::Target;
use vtwin_eval::{evaluate, EvalConfig, EvalInputs, TableSource};
use vtwin_model::model_file::ModelFile;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    model: PathBuf,
    synth: PathBuf,
    train: PathBuf,
    test: PathBuf,
}

/// Trains a small float model on the demo data, synthesizes 2000 rows, writes demo train
/// (2000) and test (1500) tables.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let run = root.join("run");
    let o = vtwin(&[
        "train",
        "--demo",
        "--demo-rows",
        "2000",
        "--backend",
        "float",
        "--sigma",
        "1",
        "--components",
        "5",
        "--iters",
        "300",
        "--seed",
        "3",
        "--out",
        s(&run),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let model = run.join("model.json");
    let synth = root.join("synthetic.csv");
    let o = vtwin(&[
        "synthesize",
        "--model",
        s(&model),
        "--rows",
        "2000",
        "--seed",
        "1",
        "--out",
        s(&synth),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (train, test) = (root.join("train.csv"), root.join("test.csv"));
    demo_table(2000, 5).write_csv(&train).unwrap();
    demo_table(1500, 99).write_csv(&test).unwrap();
    Fixture {
        _dir: dir,
        root,
        model,
        synth,
        train,
        test,
    }
}

fn eval_json(f: &Fixture, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "eval",
        "--model",
        s(&f.model),
        "--synthetic",
        s(&f.synth),
        "--test-joined",
        s(&f.test),
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    let o = vtwin(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn full_report_matches_the_library_and_is_deterministic() {
    let f = fixture();
    let flags = ["--train-joined", s(&f.train), "--target", "smoker"];
    let v = eval_json(&f, &f.root.join("e1.json"), &flags);

    // Every INTERFACE.md key, in range.
    assert!(num(&v, "nll_test").is_finite());
    let (t1, t2, t3) = (
        num(&v, "tvd_1way"),
        num(&v, "tvd_2way"),
        num(&v, "tvd_3way"),
    );
    // TVD cannot grow under marginalisation, so with all pairs and triples averaged the
    // means are ordered; all are in (0, 1) for a synthetic table that is not a copy.
    assert!(
        0.0 < t1 && t1 <= t2 && t2 <= t3 && t3 < 1.0,
        "{t1} {t2} {t3}"
    );
    assert_eq!(v["marginals"]["three_way"], "all");
    assert_eq!(v["marginals"]["n_3way"], 35);
    assert_eq!(v["reference"], "train");
    for k in ["corr_diff_within", "corr_diff_across"] {
        let x = num(&v, k);
        assert!((0.0..=1.0).contains(&x), "{k} {x}");
    }
    // 7 columns, 4 + 3 per party: 6 + 3 within, 12 across.
    assert_eq!(v["associations"]["n_within"], 9);
    assert_eq!(v["associations"]["n_across"], 12);
    assert!(num(&v, "frechet") > 0.0);
    let t = &v["tstr"];
    assert_eq!(t["target"], "smoker");
    assert_eq!(t["positive_class"], "yes");
    for k in [
        "auc_real",
        "auc_synth",
        "acc_real",
        "acc_synth",
        "f1_real",
        "f1_synth",
    ] {
        let x = num(t, k);
        assert!((0.0..=1.0).contains(&x), "tstr.{k} {x}");
        let y = num(&t["random_forest"], k);
        assert!((0.0..=1.0).contains(&y), "tstr.random_forest.{k} {y}");
    }
    // The demo's smoker depends weakly on the mixture component (P(yes) 0.25, 0.40, 0.20),
    // which the other columns reveal: better than chance, far from perfect.
    assert!(num(t, "auc_real") > 0.5, "{t}");

    // The same numbers as the library on the same files.
    let model = ModelFile::load(&f.model).unwrap();
    let load = |p: &PathBuf| TableSource::Joined(p.clone()).load(&model.schema).unwrap();
    let (test, train, synth) = (load(&f.test), load(&f.train), load(&f.synth));
    let target = Target::new(&model.schema, "smoker").unwrap();
    let lib = evaluate(
        EvalInputs {
            model: &model,
            test: &test,
            train: Some(&train),
            synthetic: Some(&synth),
            target: Some(&target),
        },
        &EvalConfig::default(),
    )
    .unwrap();
    let mut lib = serde_json::to_value(&lib).unwrap();
    let mut cli = v.clone();
    for x in [&mut lib, &mut cli] {
        x.as_object_mut().unwrap().remove("seconds");
    }
    assert_eq!(cli, lib);

    // Deterministic: a second run gives the same JSON (but the timing).
    let mut again = eval_json(&f, &f.root.join("e2.json"), &flags);
    again.as_object_mut().unwrap().remove("seconds");
    assert_eq!(again, cli);

    // Without --train the reference is the test table and TSTR has no real side.
    let v = eval_json(&f, &f.root.join("e3.json"), &["--target", "smoker"]);
    assert_eq!(v["reference"], "test");
    assert!(v["tstr"]["auc_real"].is_null());
    assert!(num(&v["tstr"], "auc_synth") > 0.0);
}

#[test]
fn errors_are_one_line_and_name_the_flag_file_or_column() {
    let f = fixture();
    let out = f.root.join("bad.json");
    let base = |extra: &[&str]| {
        let mut a = vec![
            "eval".to_owned(),
            "--model".into(),
            s(&f.model).into(),
            "--test-joined".into(),
            s(&f.test).into(),
            "--out".into(),
            s(&out).into(),
        ];
        a.extend(extra.iter().map(|x| (*x).to_owned()));
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        vtwin(&refs)
    };
    let synth = ["--synthetic", s(&f.synth)];
    let e = assert_one_line_error(
        &base(&[&synth[..], &["--target", "income"]].concat()),
        "--target income",
    );
    assert!(e.contains("no such column"), "{e}");
    let e = assert_one_line_error(
        &base(&[&synth[..], &["--target", "condition"]].concat()),
        "--target condition",
    );
    assert!(e.contains("4 categories"), "{e}");
    assert_one_line_error(
        &base(&[&synth[..], &["--target", "bmi"]].concat()),
        "continuous",
    );
    assert_one_line_error(&base(&["--target", "smoker"]), "--target needs --synthetic");
    assert_one_line_error(
        &base(
            &[
                &synth[..],
                &["--train-joined", s(&f.train), "--train", "health=x.csv"],
            ]
            .concat(),
        ),
        "--train-joined and --train",
    );
    assert_one_line_error(
        &base(&["--train", "health"]),
        "--train health: expected PARTY=FILE",
    );
    let gone = f.root.join("gone.csv");
    assert_one_line_error(&base(&["--synthetic", s(&gone)]), "gone.csv");
    // A synthetic file with a bad value: file, row and column.
    let bad = f.root.join("bad_synth.csv");
    let text = std::fs::read_to_string(&f.synth).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let smoker = lines[0].split(',').position(|h| h == "smoker").unwrap();
    let mut fields: Vec<String> = lines[2].split(',').map(str::to_owned).collect();
    fields[smoker] = "maybe".into();
    lines[2] = fields.join(",");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let e = assert_one_line_error(&base(&["--synthetic", s(&bad)]), "bad_synth.csv");
    assert!(
        e.contains("row 3") && e.contains("column \"smoker\""),
        "{e}"
    );
    assert!(!out.exists(), "nothing written on error");
    // Output into a missing directory.
    let o = vtwin(&[
        "eval",
        "--model",
        s(&f.model),
        "--test-joined",
        s(&f.test),
        "--out",
        s(&f.root.join("no/dir/e.json")),
    ]);
    assert_one_line_error(&o, "--out");
}
