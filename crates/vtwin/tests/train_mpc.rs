//! `vtwin train --backend mpc` end to end on the demo data: the run completes, writes its
//! files, and timing.json carries the MPC costs per iteration.

use std::process::Command;

#[test]
fn demo_training_with_the_mpc_backend_writes_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mpc");
    let o = out.to_str().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_vtwin"))
        .args([
            "train",
            "--demo",
            "--demo-rows",
            "800",
            "--backend",
            "mpc",
            "--components",
            "4",
            "--batch",
            "40",
            "--iters",
            "20",
            "--sigma",
            "1.0",
            "--eval-every",
            "10",
            "--out",
            o,
        ])
        .output()
        .expect("run vtwin");
    assert!(
        run.status.success(),
        "vtwin train --backend mpc failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("trained 20 iterations (mpc)"), "{stdout}");
    for f in [
        "model.json",
        "privacy.json",
        "train.csv",
        "timing.json",
        "checkpoint.bin",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(out.join("train.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
    let timing: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("timing.json")).unwrap()).unwrap();
    assert_eq!(timing["backend"], "mpc");
    // Two demo parties: 2 P + 93 rounds per iteration.
    assert_eq!(timing["rounds_per_iteration"].as_f64(), Some(97.0));
    assert!(
        timing["bytes_between_nodes_per_iteration"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let m = &timing["mpc"];
    assert_eq!(m["iterations"], 20);
    let per = &m["median_per_iteration"];
    assert_eq!(per["bytes_uploaded_per_party"].as_array().unwrap().len(), 2);
    assert!(per["mults"].as_f64().unwrap() > 0.0);
    assert!(per["truncations"].as_f64().unwrap() > 0.0);
    assert!(per["bytes_to_coordinator"].as_f64().unwrap() > 0.0);
}
