//! Round trips: a table written with `write_csv` (or per-party files) reads back to the same
//! encoded table, and the codec's encode/decode are inverse on every column kind.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use vtwin_data::codec::{self, Encoded, UNIT_EPS};
use vtwin_data::demo::{demo_schema, demo_table};
use vtwin_data::{ColumnKind, Table};

/// Same schema, ids and encoded values, bit for bit (decoding picks, for a real-valued
/// column, a value that encodes back to exactly the same unit value; see `codec`).
/// Compared column by column so that a failure prints one value, not the whole table.
fn assert_same(a: &Table, b: &Table) {
    assert_eq!(a.schema, b.schema);
    assert_eq!(a.ids, b.ids);
    for ((spec, x), y) in a.schema.columns.iter().zip(&a.columns).zip(&b.columns) {
        assert_eq!(x.len(), y.len(), "{}", spec.name);
        for r in 0..x.len() {
            let (u, v) = (x.get(r), y.get(r));
            let same = match (u, v) {
                (Encoded::Unit(p), Encoded::Unit(q)) => p.to_bits() == q.to_bits(),
                _ => u == v,
            };
            assert!(same, "column {} record {r}: {u:?} then {v:?}", spec.name);
        }
    }
}

#[test]
fn joined_table_round_trips() {
    let t = demo_table(2000, 11);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.csv");
    t.write_csv(&path).unwrap();
    let back = Table::read_joined(&demo_schema(), &path).unwrap();
    assert_same(&t, &back);
    // The written header is the id column, then the schema's names in order.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("person,age,bmi,smoker,condition,spend,visits,basket\n1,"),
        "{}",
        &text[..80]
    );
    // Loaded (not sampled) real values round-trip too: perturb bmi to arbitrary decimals.
    let text = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                return l.to_owned();
            }
            let mut f: Vec<String> = l.split(',').map(str::to_owned).collect();
            f[2] = format!("{:.9}", 15.0 + (i as f64 * 0.618_033_988_7) % 30.0);
            f.join(",")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let edited = dir.path().join("edited.csv");
    std::fs::write(&edited, text).unwrap();
    let loaded = Table::read_joined(&demo_schema(), &edited).unwrap();
    let again = dir.path().join("again.csv");
    loaded.write_csv(&again).unwrap();
    assert_same(
        &loaded,
        &Table::read_joined(&demo_schema(), &again).unwrap(),
    );
}

#[test]
fn party_files_round_trip() {
    let t = demo_table(500, 12);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(String, std::path::PathBuf)> = ["health", "retail"]
        .iter()
        .map(|p| (p.to_string(), dir.path().join(format!("{p}.csv"))))
        .collect();
    for (p, path) in &files {
        t.write_party_csv(p, path).unwrap();
    }
    let back = Table::read_parties(&demo_schema(), &files).unwrap();
    assert_same(&t, &back);
}

#[test]
fn selected_rows_round_trip() {
    let t = demo_table(100, 13);
    let s = t.select_rows(&[5, 3, 99]);
    assert_eq!(s.ids, ["6", "4", "100"]);
    assert_eq!(s.columns[0].get(1), t.columns[0].get(3));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sel.csv");
    s.write_csv(&path).unwrap();
    assert_same(&s, &Table::read_joined(&demo_schema(), &path).unwrap());
}

#[test]
fn write_is_atomic_and_leaves_no_temp_files() {
    let t = demo_table(50, 14);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    std::fs::write(&path, "old contents").unwrap();
    t.write_csv(&path).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.csv"]);
    // A hand-built table that breaks the encoding is refused, naming file and column.
    let mut broken = t.clone();
    broken.columns[1] = vtwin_data::Column::Unit(vec![1.5; 50]);
    let e = broken.write_csv(&path).unwrap_err().to_string();
    assert!(
        e.contains("out.csv") && e.contains("column \"bmi\"") && e.contains("1.5"),
        "{e}"
    );
    // Writing into a missing directory fails naming the file and leaves nothing behind.
    let bad = dir.path().join("missing/out.csv");
    let e = t.write_csv(&bad).unwrap_err();
    assert!(e.to_string().contains("missing/out.csv"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        // Integration tests have no lib.rs beside them, so name the file explicitly.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/data_roundtrip.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn integer_values_round_trip_exactly(min in -1000i64..1000, width in 1i64..100_000, off in 0.0f64..1.0) {
        let max = min + width;
        let x = min + (off * width as f64).floor() as i64;
        let kind = ColumnKind::Continuous { min: min as f64, max: max as f64, integer: true, model: Default::default() };
        let e = codec::encode(&kind, &x.to_string()).unwrap();
        let Encoded::Unit(u) = e else { panic!() };
        prop_assert!(u > 0.0 && u < 1.0);
        prop_assert_eq!(codec::decode(&kind, e), x.to_string());
    }

    #[test]
    fn real_values_round_trip_closely(min in -1e6f64..1e6, width in 1e-3f64..1e6, t in 0.0f64..=1.0) {
        let max = min + width;
        let x = (min + t * width).clamp(min, max);
        let kind = ColumnKind::Continuous { min, max, integer: false, model: Default::default() };
        let e = codec::encode(&kind, &format!("{x}")).unwrap();
        let Encoded::Unit(u) = e else { panic!() };
        prop_assert!((UNIT_EPS * 0.999..=1.0 - UNIT_EPS * 0.999).contains(&u));
        let back: f64 = codec::decode(&kind, e).parse().unwrap();
        prop_assert!((back - x).abs() <= 8.0 * f64::EPSILON * (min.abs() + max.abs()), "{} vs {}", back, x);
        // The decoded text encodes back to exactly the same unit value.
        prop_assert_eq!(codec::encode(&kind, &codec::decode(&kind, e)).unwrap(), e);
    }

    #[test]
    fn any_unit_decodes_into_bounds(u in 0.0f64..=1.0, integer in any::<bool>()) {
        let kind = ColumnKind::Continuous { min: 17.0, max: 90.0, integer, model: Default::default() };
        let x: f64 = codec::decode(&kind, Encoded::Unit(u)).parse().unwrap();
        prop_assert!((17.0..=90.0).contains(&x));
    }

    #[test]
    fn bin_representatives_stay_in_their_bin(
        steps in proptest::collection::vec(1u32..1000, 1..12),
        start in -500i32..500,
        integer in any::<bool>(),
    ) {
        let mut edges = vec![start as f64];
        for s in steps {
            let last = *edges.last().unwrap();
            edges.push(last + s as f64);
        }
        let kind = ColumnKind::Binned { edges: edges.clone(), integer };
        for i in 0..edges.len() - 1 {
            let text = codec::decode(&kind, Encoded::Index(i as u32));
            prop_assert_eq!(codec::encode(&kind, &text).unwrap(), Encoded::Index(i as u32));
        }
    }
}
