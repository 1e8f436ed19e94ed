//! `vtwin align`: parties holding overlapping but different ids, in different orders, get
//! files of exactly the common records in one common order, each keeping its own values;
//! the outputs train; bad input fails with one line naming the file and id.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_one_line_error, stdout, vtwin};
use vtwin_data::csv_table::read_party_alone;
use vtwin_data::demo::{demo_schema, demo_table};

const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/demo/schema.toml"
);

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes health's rows `h` and retail's rows `r` of one demo table to two files.
fn party_files(dir: &Path, h: &[usize], r: &[usize]) -> (PathBuf, PathBuf) {
    let table = demo_table(400, 5);
    let hp = dir.join("health.csv");
    let rp = dir.join("retail.csv");
    table.select_rows(h).write_party_csv("health", &hp).unwrap();
    table.select_rows(r).write_party_csv("retail", &rp).unwrap();
    (hp, rp)
}

/// `vtwin align --schema SCHEMA --data health=H --data retail=R --out OUT`.
fn align(schema: &str, h: &Path, r: &Path, out: &Path) -> Output {
    vtwin(&[
        "align",
        "--schema",
        schema,
        "--data",
        &format!("health={}", s(h)),
        "--data",
        &format!("retail={}", s(r)),
        "--out",
        s(out),
    ])
}

#[test]
fn aligns_overlapping_ids_into_one_order() {
    let dir = tempfile::tempdir().unwrap();
    // health holds records 0..300, retail 100..400 in reverse: 200 in common.
    let h: Vec<usize> = (0..300).collect();
    let r: Vec<usize> = (100..400).rev().collect();
    let (hp, rp) = party_files(dir.path(), &h, &r);
    let out = dir.path().join("aligned");
    let o = align(SCHEMA, &hp, &rp, &out);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        stdout(&o).contains("200 records in common"),
        "{}",
        stdout(&o)
    );
    // The outputs, read back as the party processes read them, hold exactly the common ids.
    let schema = demo_schema();
    let ha = read_party_alone(&schema, "health", &out.join("health.csv")).unwrap();
    let ra = read_party_alone(&schema, "retail", &out.join("retail.csv")).unwrap();
    assert_eq!(ha.ids.len(), 200);
    assert_eq!(ha.ids, ra.ids);
    let table = demo_table(400, 5);
    let mut want: Vec<String> = (100..300).map(|i| table.ids[i].clone()).collect();
    want.sort();
    assert_eq!(ha.ids, want);
    // Row r of both files is the same person: the raw files list the ids in one order.
    let first_col = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        first_col(&out.join("health.csv")),
        first_col(&out.join("retail.csv"))
    );
    // Each party keeps its own values for those people.
    let full = read_party_alone(&schema, "health", &hp).unwrap();
    for (r, id) in ha.ids.iter().enumerate() {
        let src = full.ids.iter().position(|x| x == id).unwrap();
        for (c, col) in ha.columns.iter().enumerate() {
            assert_eq!(col.get(r), full.columns[c].get(src), "id {id}, column {c}");
        }
    }
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("align.json")).unwrap()).unwrap();
    assert_eq!(j["intersection"], 200);
    assert_eq!(j["parties"][0]["rows_in"], 300);
    assert!(j["parties"][0]["bytes_sent"].as_u64().unwrap() >= 300 * 32);
    // The aligned files train as they are.
    let model = dir.path().join("model");
    let o = vtwin(&[
        "train",
        "--schema",
        SCHEMA,
        "--data",
        &format!("health={}", s(&out.join("health.csv"))),
        "--data",
        &format!("retail={}", s(&out.join("retail.csv"))),
        "--backend",
        "float",
        "--sigma",
        "1",
        "--iters",
        "3",
        "--components",
        "2",
        "--out",
        s(&model),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (hp, rp) = party_files(dir.path(), &[0, 1, 2], &[3, 4, 5]);
    let out = dir.path().join("o");
    // No id in common.
    let e = assert_one_line_error(
        &align(SCHEMA, &hp, &rp, &out),
        "no id is held by every party",
    );
    assert!(e.contains("health.csv") && e.contains("retail.csv"), "{e}");
    assert!(
        !out.join("health.csv").exists(),
        "no output after a failure"
    );
    // A duplicate id names the file, row and id.
    let dup = dir.path().join("dup.csv");
    let mut text = std::fs::read_to_string(&hp).unwrap();
    let second = text.lines().nth(1).unwrap().to_owned();
    text.push_str(&second);
    text.push('\n');
    std::fs::write(&dup, text).unwrap();
    let e = assert_one_line_error(&align(SCHEMA, &dup, &rp, &out), "dup.csv");
    assert!(e.contains("duplicate id"), "{e}");
    // A file without the id column.
    let noid = dir.path().join("noid.csv");
    let text = std::fs::read_to_string(&hp).unwrap();
    let stripped: String = text
        .lines()
        .map(|l| l.split_once(',').unwrap().1.to_owned() + "\n")
        .collect();
    std::fs::write(&noid, stripped).unwrap();
    let e = assert_one_line_error(&align(SCHEMA, &noid, &rp, &out), "noid.csv");
    assert!(e.contains("person"), "{e}");
    // A party missing, and a schema without an id column.
    let o = vtwin(&[
        "align",
        "--schema",
        SCHEMA,
        "--data",
        &format!("health={}", s(&hp)),
        "--out",
        s(&out),
    ]);
    assert_one_line_error(&o, "retail");
    let no_id_schema = dir.path().join("schema.toml");
    let text = std::fs::read_to_string(SCHEMA)
        .unwrap()
        .replace("id = \"person\"\n", "");
    std::fs::write(&no_id_schema, text).unwrap();
    let o = align(s(&no_id_schema), &hp, &rp, &out);
    assert_one_line_error(&o, "id column");
}
