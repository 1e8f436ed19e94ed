//! `vtwin audit` end to end on a small demo model, and its one-line errors for bad input
//! (a missing file, a missing column, a missing privacy.json).

mod common;

use std::path::{Path, PathBuf};

use common::{assert_one_line_error, vtwin};
use vtwin_data::demo::demo_table;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    model: PathBuf,
    synthetic: PathBuf,
    members: PathBuf,
    non_members: PathBuf,
    dir: PathBuf,
}

/// A demo model trained (float, sigma 1, 30 iterations) on `demo_table(200, 1)`, 200
/// synthetic records, the members (the same 200 records) and 400 non-members as CSV files.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let run = dir.join("run");
    let o = vtwin(&[
        "train",
        "--demo",
        "--demo-rows",
        "200",
        "--backend",
        "float",
        "--sigma",
        "1",
        "--iters",
        "30",
        "--components",
        "3",
        "--out",
        s(&run),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let model = run.join("model.json");
    let synthetic = dir.join("synthetic.csv");
    let o = vtwin(&[
        "synthesize",
        "--model",
        s(&model),
        "--rows",
        "200",
        "--seed",
        "1",
        "--out",
        s(&synthetic),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let members = dir.join("members.csv");
    demo_table(200, 1).write_csv(&members).unwrap();
    let non_members = dir.join("non_members.csv");
    demo_table(400, 2).write_csv(&non_members).unwrap();
    Fixture {
        _dir: tmp,
        model,
        synthetic,
        members,
        non_members,
        dir,
    }
}

fn base<'a>(f: &'a Fixture, out: &'a Path) -> Vec<&'a str> {
    vec![
        "audit",
        "--model",
        s(&f.model),
        "--synthetic",
        s(&f.synthetic),
        "--members",
        s(&f.members),
        "--non-members",
        s(&f.non_members),
        "--records",
        "100",
        "--reference-iters",
        "20",
        "--shadow-targets",
        "1",
        "--shadow-iters",
        "5",
        "--shadow-backend",
        "float",
        "--canaries",
        "40",
        "--canary-iters",
        "5",
        "--out",
        s(out),
    ]
}

#[test]
fn audit_writes_the_report() {
    let f = fixture();
    let out = f.dir.join("audit.json");
    let o = vtwin(&base(&f, &out));
    assert!(o.status.success(), "{}", common::stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let names: Vec<&str> = r["attacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "distance_to_closest_record",
            "density_ratio",
            "shadow_model",
            "inserted_canaries"
        ]
    );
    for a in r["attacks"].as_array().unwrap() {
        for key in ["auc", "tpr_at_fpr_0_01", "epsilon_lower_bound"] {
            assert!(a[key].is_f64(), "{key}: {a}");
        }
        assert_eq!(a["epsilon_lower_bound_ci"].as_array().unwrap().len(), 2);
    }
    // The theoretical epsilon is the smaller accountant's add/remove figure of privacy.json.
    let p: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(f.model.with_file_name("privacy.json")).unwrap(),
    )
    .unwrap();
    let want = ["rdp", "pld"]
        .iter()
        .map(|a| p["epsilon"][a]["add_remove"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(r["epsilon_theoretical"].as_f64().unwrap(), want);
    assert_eq!(r["members"], 100);
    assert_eq!(r["non_members"], 100);
    // One summary line per attack plus the header.
    assert_eq!(common::stdout(&o).lines().count(), 5);

    // The same members as one CSV per party give the same DCR result.
    let (health, retail) = (f.dir.join("health.csv"), f.dir.join("retail.csv"));
    let members = demo_table(200, 1);
    members.write_party_csv("health", &health).unwrap();
    members.write_party_csv("retail", &retail).unwrap();
    let (h, r_) = (
        format!("health={}", s(&health)),
        format!("retail={}", s(&retail)),
    );
    let out2 = f.dir.join("audit-parties.json");
    let mut args = base(&f, &out2);
    let i = args.iter().position(|a| *a == "--members").unwrap();
    args.drain(i..i + 2);
    args.extend([
        "--members-party",
        &h,
        "--members-party",
        &r_,
        "--attacks",
        "dcr",
    ]);
    let o = vtwin(&args);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let r2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out2).unwrap()).unwrap();
    assert_eq!(r2["attacks"].as_array().unwrap().len(), 1);
    assert_eq!(r2["attacks"][0], r["attacks"][0]);
}

#[test]
fn a_missing_file_is_named() {
    let f = fixture();
    let out = f.dir.join("audit.json");
    let missing = f.dir.join("no-such-synthetic.csv");
    let mut args = base(&f, &out);
    let i = args.iter().position(|a| *a == "--synthetic").unwrap();
    args[i + 1] = s(&missing);
    let e = assert_one_line_error(&vtwin(&args), "no-such-synthetic.csv");
    assert!(e.contains("--synthetic"), "{e}");
    assert!(!out.exists());

    // No privacy.json next to the model, and no --privacy.
    std::fs::remove_file(f.model.with_file_name("privacy.json")).unwrap();
    assert_one_line_error(&vtwin(&base(&f, &out)), "privacy.json");
}

#[test]
fn a_missing_column_is_named() {
    let f = fixture();
    let out = f.dir.join("audit.json");
    // Drop the "bmi" column from the members file.
    let text = std::fs::read_to_string(&f.members).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let j = header.iter().position(|h| *h == "bmi").unwrap();
    let cut: String = text
        .lines()
        .map(|l| {
            let mut v: Vec<&str> = l.split(',').collect();
            v.remove(j);
            v.join(",") + "\n"
        })
        .collect();
    std::fs::write(&f.members, cut).unwrap();
    let e = assert_one_line_error(&vtwin(&base(&f, &out)), "\"bmi\"");
    assert!(e.contains("members.csv"), "{e}");
    assert!(!out.exists());
}
