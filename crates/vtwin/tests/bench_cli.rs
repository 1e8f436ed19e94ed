//! `vtwin bench` on the demo and synthetic workloads with a few iterations: the JSON has
//! every key INTERFACE.md promises, the ratios are the medians' ratios, the spread brackets
//! the median, the mpc costs are present (and the plaintext backends' are null), and bad
//! flags fail with one line naming the flag.

mod common;

use common::{assert_one_line_error, stdout, vtwin};
use serde_json::Value;

fn bench(dir: &std::path::Path, name: &str, extra: &[&str]) -> Value {
    let out = dir.join(name);
    let out_s = out.to_str().expect("utf-8 path");
    let mut args = vec!["bench", "--iters", "4", "--warmup", "1", "--out", out_s];
    args.extend_from_slice(extra);
    let o = vtwin(&args);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).expect("bench JSON written");
    // Atomic write: nothing else left in the directory but the outputs.
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let j: Value = serde_json::from_str(&text).expect("valid JSON");
    assert!(stdout(&o).contains("median"), "{}", stdout(&o));
    j
}

fn median(j: &Value, backend: &str) -> f64 {
    entry(j, backend)["ms_per_iteration"]["median"]
        .as_f64()
        .expect("median")
}

fn entry<'a>(j: &'a Value, backend: &str) -> &'a Value {
    j["backends"]
        .as_array()
        .expect("backends")
        .iter()
        .find(|e| e["backend"] == backend)
        .unwrap_or_else(|| panic!("no {backend} entry"))
}

#[test]
fn demo_workload_keys_and_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let j = bench(
        dir.path(),
        "demo.json",
        &[
            "--workload",
            "demo",
            "--rows",
            "400",
            "--batch",
            "40",
            "--components",
            "4",
        ],
    );
    // Machine and date.
    assert!(!j["machine"]["cpu_model"].as_str().unwrap().is_empty());
    assert!(j["machine"]["logical_cores"].as_u64().unwrap() >= 1);
    let date = j["date_utc"].as_str().unwrap();
    assert_eq!(date.len(), 20, "{date}");
    assert!(date.starts_with("20") && date.ends_with('Z'), "{date}");
    // Workload: demo has 2 parties; d = K (1 + sum of widths).
    let w = &j["workload"];
    assert_eq!(w["name"], "demo");
    assert_eq!(w["rows"], 400);
    assert_eq!(w["components"], 4);
    let widths: u64 = w["stat_width_per_party"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(w["dimension"].as_u64().unwrap(), 4 * (1 + widths));

    let names: Vec<&str> = j["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["backend"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["float", "fixed", "mpc", "mpc-quic"]);
    assert_eq!(j["not_measured"], serde_json::json!([]));
    for name in ["float", "fixed", "mpc"] {
        assert!(
            entry(&j, name)["phases_median_ms"]["backend"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    // One round (the default): the report has none of the rounds' keys.
    assert!(j["settings"].get("rounds").is_none(), "{}", j["settings"]);
    for name in &names {
        for k in ["round_medians_ms", "ratio_vs_fixed_per_round"] {
            assert!(entry(&j, name).get(k).is_none(), "{name}: {k}");
        }
    }

    let (float, fixed) = (median(&j, "float"), median(&j, "fixed"));
    for name in names {
        let e = entry(&j, name);
        assert_eq!(e["iterations_timed"], 4);
        let ms = &e["ms_per_iteration"];
        let get = |k: &str| ms[k].as_f64().unwrap_or_else(|| panic!("{name}: {k}"));
        assert!(
            get("min") <= get("p10") && get("p10") <= get("q1"),
            "{name}: {ms}"
        );
        assert!(
            get("q1") <= get("median") && get("median") <= get("q3"),
            "{name}: {ms}"
        );
        assert!(
            get("q3") <= get("p90") && get("p90") <= get("max"),
            "{name}: {ms}"
        );
        assert!(get("min") > 0.0, "{name}: {ms}");
        let m = get("median");
        let rf = e["ratio_vs_fixed"].as_f64().unwrap();
        let rl = e["ratio_vs_float"].as_f64().unwrap();
        assert!(
            (rf - m / fixed).abs() <= 1e-12 * rf.abs(),
            "{name}: {rf} vs {m}/{fixed}"
        );
        assert!(
            (rl - m / float).abs() <= 1e-12 * rl.abs(),
            "{name}: {rl} vs {m}/{float}"
        );
        for k in [
            "rounds_per_iteration",
            "bytes_between_nodes_per_iteration",
            "bytes_to_coordinator_per_iteration",
            "bytes_uploaded_per_party_per_iteration",
        ] {
            if name == "mpc" || (name == "mpc-quic" && k == "rounds_per_iteration") {
                assert!(!e[k].is_null(), "{name}: {k}");
            } else {
                assert!(e[k].is_null(), "{name}: {k} should be null, got {}", e[k]);
            }
        }
    }
    assert_eq!(entry(&j, "fixed")["ratio_vs_fixed"].as_f64(), Some(1.0));
    assert_eq!(entry(&j, "float")["ratio_vs_float"].as_f64(), Some(1.0));
    // The mpc costs: P + 41 rounds for P = 2 (protocols/mpc-gradient.md; the demo's Beta
    // columns keep T_p at scale 2^32), bytes > 0, one upload figure per party.
    let mpc = entry(&j, "mpc");
    assert_eq!(mpc["rounds_per_iteration"].as_f64(), Some(43.0));
    let quic = entry(&j, "mpc-quic");
    assert_eq!(quic["rounds_per_iteration"].as_f64(), Some(43.0));
    assert!(quic["note"].as_str().unwrap().contains("not counted"));
    assert!(quic["setup_ms"].as_f64().unwrap() > 0.0);
    assert!(mpc["bytes_between_nodes_per_iteration"].as_f64().unwrap() > 0.0);
    let up = mpc["bytes_uploaded_per_party_per_iteration"]
        .as_array()
        .unwrap();
    assert_eq!(up.len(), 2);
    assert!(up.iter().all(|v| v.as_f64().unwrap() > 0.0));
}

#[test]
fn synthetic_workload_parties_and_width() {
    let dir = tempfile::tempdir().unwrap();
    let j = bench(
        dir.path(),
        "synthetic.json",
        &[
            "--workload",
            "synthetic",
            "--backends",
            "fixed,mpc",
            "--parties",
            "3",
            "--width",
            "31",
            "--rows",
            "200",
            "--batch",
            "20",
            "--components",
            "3",
            "--rounds",
            "3",
        ],
    );
    let w = &j["workload"];
    assert_eq!(w["parties"].as_array().unwrap().len(), 3);
    assert_eq!(w["stat_width_per_party"], serde_json::json!([11, 10, 10]));
    assert_eq!(w["dimension"], 3 * (1 + 31));
    let mpc = entry(&j, "mpc");
    // P + 40 rounds for P = 3 (protocols/mpc-gradient.md): every synthetic column is
    // categorical, so every party inputs integer statistics.
    assert_eq!(mpc["rounds_per_iteration"].as_f64(), Some(3.0 + 40.0));
    assert_eq!(
        mpc["bytes_uploaded_per_party_per_iteration"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // No float entry: ratio_vs_float is null, ratio_vs_fixed is not.
    assert!(mpc["ratio_vs_float"].is_null());
    assert!(mpc["ratio_vs_fixed"].as_f64().unwrap() > 0.0);
    // Three rounds: every entry pools 3 x 4 timed iterations and keeps each round's
    // median; the ratio is the median of the three ratios within a round.
    assert_eq!(j["settings"]["rounds"], 3);
    let floats = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let fixed = entry(&j, "fixed");
    let (fixed_rounds, mpc_rounds) = (
        floats(&fixed["round_medians_ms"]),
        floats(&mpc["round_medians_ms"]),
    );
    assert_eq!((fixed_rounds.len(), mpc_rounds.len()), (3, 3));
    for e in [fixed, mpc] {
        assert_eq!(e["iterations_timed"], 12);
        // Phases and batch sizes come from the pooled rounds' reports.
        assert!(e["phases_median_ms"]["backend"].as_f64().unwrap() > 0.0);
        assert!(e["batch_records_median"].as_f64().unwrap() > 0.0);
        let ms = &e["ms_per_iteration"];
        for m in floats(&e["round_medians_ms"]) {
            assert!(ms["min"].as_f64().unwrap() <= m && m <= ms["max"].as_f64().unwrap());
        }
    }
    let mut within: Vec<f64> = mpc_rounds
        .iter()
        .zip(&fixed_rounds)
        .map(|(m, f)| m / f)
        .collect();
    assert_eq!(floats(&mpc["ratio_vs_fixed_per_round"]), within);
    within.sort_by(f64::total_cmp);
    assert_eq!(mpc["ratio_vs_fixed"].as_f64(), Some(within[1]));
    assert_eq!(floats(&fixed["ratio_vs_fixed_per_round"]), [1.0; 3]);
    // Rounds are the protocol's, whatever the number of runs.
    assert_eq!(mpc["rounds_per_iteration"].as_f64(), Some(3.0 + 40.0));
}

#[test]
fn bad_flags_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.json");
    let out = out.to_str().unwrap();
    let o = vtwin(&["bench", "--workload", "demo", "--iters", "0", "--out", out]);
    assert_one_line_error(&o, "--iters");
    let o = vtwin(&["bench", "--workload", "demo", "--rounds", "0", "--out", out]);
    assert_one_line_error(&o, "--rounds");
    let o = vtwin(&[
        "bench",
        "--workload",
        "demo",
        "--rows",
        "50",
        "--batch",
        "51",
        "--out",
        out,
    ]);
    assert_one_line_error(&o, "--batch");
    let o = vtwin(&[
        "bench",
        "--workload",
        "synthetic",
        "--parties",
        "1",
        "--out",
        out,
    ]);
    assert_one_line_error(&o, "--parties");
    let o = vtwin(&[
        "bench",
        "--workload",
        "adult",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--out",
        out,
    ]);
    let e = assert_one_line_error(&o, "adult.data");
    assert!(e.contains("VTWIN_DATA_DIR"), "{e}");
    assert!(
        !std::path::Path::new(out).exists(),
        "no output after a failure"
    );
}
