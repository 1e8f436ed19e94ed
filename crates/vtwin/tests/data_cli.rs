//! `vtwin synthesize` and `vtwin eval` end to end, on a model.json that holds the known demo
//! mixture (posterior mean = `demo_truth`, posterior scale tiny), so the expected results are
//! exact: eval's nll_test must equal the truth's NLL computed in the library, and the
//! synthetic table must reproduce the truth's marginals and cross-party dependence.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_one_line_error, stderr, vtwin};
use vtwin_data::demo::{demo_schema, demo_table, demo_truth};
use vtwin_data::{Column, ColumnParams, Table};
use vtwin_model::layout::Layout;
use vtwin_model::model_file::ModelFile;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `vtwin synthesize --model MODEL --rows ROWS --out OUT`, then the `extra` flags.
fn synthesize(model: &Path, rows: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "synthesize",
        "--model",
        s(model),
        "--rows",
        rows,
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    vtwin(&args)
}

/// model.json whose posterior mean maps to `demo_truth()` (unconstrained: weight logits
/// ln pi, Beta (ln a, ln b), category logits ln p).
fn write_truth_model(dir: &Path) -> PathBuf {
    let schema = demo_schema();
    let truth = demo_truth();
    let k = truth.components();
    let layout = Layout::from_schema(&schema, k).unwrap();
    let mut mu = vec![0.0; layout.dim()];
    for (j, w) in truth.weights.iter().enumerate() {
        mu[j] = w.ln();
    }
    for (slot, cp) in layout.columns.iter().zip(&truth.columns) {
        let w = slot.model.width();
        for j in 0..k {
            let block = &mut mu[slot.param_offset + j * w..slot.param_offset + (j + 1) * w];
            match cp {
                ColumnParams::Beta { a, b } => block.copy_from_slice(&[a[j].ln(), b[j].ln()]),
                ColumnParams::Categorical { probs } => {
                    for (x, p) in block.iter_mut().zip(&probs[j]) {
                        *x = p.ln();
                    }
                }
            }
        }
    }
    let log_sigma = vec![-30.0; layout.dim()];
    let path = dir.join("model.json");
    ModelFile::new(schema, layout, mu, log_sigma)
        .save(&path)
        .unwrap();
    path
}

#[test]
fn synthesize_writes_original_units_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_truth_model(dir.path());
    let out = dir.path().join("synthetic.csv");
    let o = synthesize(&model, "20000", &out, &["--seed", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "person,age,bmi,smoker,condition,spend,visits,basket"
    );
    // Integer columns print as integers, categories by name, spend as a bin midpoint.
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(first[0], "1");
    assert!(first[1].parse::<u32>().is_ok(), "age {}", first[1]);
    assert!(["no", "yes"].contains(&first[3]));
    assert!(
        ["25", "75", "150", "300", "600", "1200"].contains(&first[5]),
        "spend {}",
        first[5]
    );

    let t = Table::read_joined(&demo_schema(), &out).unwrap();
    assert_eq!(t.n_rows(), 20000);
    // Cross-party dependence survives: P(basket = pharmacy | condition = heart) is far above
    // P(basket = pharmacy). Truth: 0.04945 / 0.114 = 0.4338 vs 0.1875.
    let (Column::Index(cond), Column::Index(basket)) = (&t.columns[3], &t.columns[6]) else {
        panic!()
    };
    let heart = cond.iter().filter(|&&c| c == 2).count() as f64;
    let heart_pharmacy = cond
        .iter()
        .zip(basket)
        .filter(|&(&c, &b)| c == 2 && b == 2)
        .count() as f64;
    let pharmacy = basket.iter().filter(|&&b| b == 2).count() as f64 / 20000.0;
    assert!((pharmacy - 0.1875).abs() < 0.012, "{pharmacy}");
    assert!(
        (heart_pharmacy / heart - 0.4338).abs() < 0.045,
        "{}",
        heart_pharmacy / heart
    );

    // Same seed, same bytes; another seed, another table.
    let again = dir.path().join("again.csv");
    let o = synthesize(&model, "20000", &again, &["--seed", "5"]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
    let o = synthesize(&model, "20000", &again, &["--seed", "6"]);
    assert!(o.status.success());
    assert_ne!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());

    // A posterior draw with a tiny scale gives (almost surely) the same table.
    let o = synthesize(
        &model,
        "100",
        &again,
        &["--seed", "5", "--params", "posterior"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn eval_reports_the_exact_test_nll_and_tvd() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_truth_model(dir.path());
    let test = demo_table(3000, 99);
    let test_csv = dir.path().join("test.csv");
    test.write_csv(&test_csv).unwrap();
    let synth = dir.path().join("synthetic.csv");
    let o = synthesize(&model, "20000", &synth, &["--seed", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let out = dir.path().join("eval.json");
    let o = vtwin(&[
        "eval",
        "--model",
        s(&model),
        "--synthetic",
        s(&synth),
        "--test-joined",
        s(&test_csv),
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let expected = demo_truth().mean_nll(&test).unwrap();
    let got = v["nll_test"].as_f64().unwrap();
    assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
    assert_eq!(v["n_test"], 3000);
    let tvd = v["tvd_1way"].as_f64().unwrap();
    // Both tables come from the truth: sampling noise only (about 0.01 at these sizes).
    assert!(tvd > 0.0 && tvd < 0.03, "{tvd}");

    // Per-party test files give the same number.
    let (h, r) = (dir.path().join("health.csv"), dir.path().join("retail.csv"));
    test.write_party_csv("health", &h).unwrap();
    test.write_party_csv("retail", &r).unwrap();
    let out2 = dir.path().join("eval2.json");
    let (th, tr) = (format!("health={}", s(&h)), format!("retail={}", s(&r)));
    let o = vtwin(&[
        "eval",
        "--model",
        s(&model),
        "--test",
        &th,
        "--test",
        &tr,
        "--out",
        s(&out2),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out2).unwrap()).unwrap();
    assert_eq!(v2["nll_test"], v["nll_test"]);
    assert!(v2.get("tvd_1way").is_none());
}

#[test]
fn errors_are_one_line_and_name_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_truth_model(dir.path());
    let out = dir.path().join("x.csv");

    let missing = dir.path().join("nope.json");
    let o = synthesize(&missing, "5", &out, &[]);
    assert_one_line_error(&o, "nope.json");
    assert!(!out.exists());

    let o = synthesize(&model, "0", &out, &[]);
    assert!(
        !o.status.success() && stderr(&o).contains("--rows 0"),
        "{}",
        stderr(&o)
    );

    // Output into a missing directory: error naming it, nothing written.
    let bad_out = dir.path().join("no/dir/x.csv");
    let o = synthesize(&model, "5", &bad_out, &[]);
    assert!(
        !o.status.success() && stderr(&o).contains("no/dir/x.csv"),
        "{}",
        stderr(&o)
    );

    // A malformed test file: file, row and column.
    let test = dir.path().join("test.csv");
    std::fs::write(&test, "person,age,bmi,smoker,condition,spend,visits,basket\n1,40,20.5,no,none,30,3,groceries\n2,40,20.5,maybe,none,30,3,groceries\n").unwrap();
    let json = dir.path().join("e.json");
    let o = vtwin(&[
        "eval",
        "--model",
        s(&model),
        "--test-joined",
        s(&test),
        "--out",
        s(&json),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("test.csv") && e.contains("row 3") && e.contains("column \"smoker\""),
        "{e}"
    );
    assert!(!json.exists());

    // A missing test file: named once, with the OS reason once.
    let gone = dir.path().join("gone.csv");
    let o = vtwin(&[
        "eval",
        "--model",
        s(&model),
        "--test-joined",
        s(&gone),
        "--out",
        s(&json),
    ]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("gone.csv"), "{e}");
    assert_eq!(e.matches("No such file").count(), 1, "{e}");

    let o = vtwin(&[
        "eval",
        "--model",
        s(&model),
        "--test",
        "health",
        "--out",
        s(&json),
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("expected PARTY=FILE"),
        "{}",
        stderr(&o)
    );
}
