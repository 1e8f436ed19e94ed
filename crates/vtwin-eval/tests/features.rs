//! The feature encoding on a tiny hand-checked table, and the CSV sources.

use std::path::Path;

use vtwin_data::Schema;
use vtwin_eval::source::parse_party_spec;
use vtwin_eval::{FeatureError, FeatureMap, SourceError, TableSource};

const SCHEMA: &str = r#"
id = "pid"
[[column]]
name = "age"
party = "a"
kind = "continuous"
min = 10
max = 20
integer = true

[[column]]
name = "w"
party = "a"
kind = "continuous"
min = -1.0
max = 3.0

[[column]]
name = "colour"
party = "b"
kind = "categorical"
categories = ["red", "green", "blue"]

[[column]]
name = "pay"
party = "b"
kind = "binned"
edges = [0, 10, 100]
"#;

const CSV: &str = "pid,age,w,colour,pay\n1,10,-1,blue,5\n2,15,0,red,10\n3,20,3,green,100\n";

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn encodes_a_tiny_table_by_hand() {
    let schema = Schema::from_toml(SCHEMA).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "t.csv", CSV);
    let table = TableSource::Joined(csv).load(&schema).unwrap();
    let map = FeatureMap::new(&schema, None).unwrap();
    assert_eq!(
        map.names(),
        [
            "age",
            "w",
            "colour=red",
            "colour=green",
            "colour=blue",
            "pay=[0,10)",
            "pay=[10,100]"
        ]
    );
    let m = map.encode(&table).unwrap();
    assert_eq!((m.rows, m.cols), (3, 7));
    // age (x-10)/10; w (x+1)/4; one-hot colour; one-hot pay (10 is in the second bin,
    // 100 in the closed last bin).
    let expected = [
        [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0],
        [0.5, 0.25, 1.0, 0.0, 0.0, 0.0, 1.0],
        [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0],
    ];
    for (r, e) in expected.iter().enumerate() {
        for (got, want) in m.row(r).iter().zip(e) {
            assert!(
                (got - want).abs() < 1e-12,
                "row {r}: {:?} vs {e:?}",
                m.row(r)
            );
        }
    }
    assert_eq!(m.to_rows().len(), 3);

    // Excluding a column drops its features and shifts the offsets.
    let map = FeatureMap::new(&schema, Some("colour")).unwrap();
    assert_eq!(map.dim(), 4);
    assert_eq!(map.excluded(), Some(2));
    assert_eq!(map.columns()[2].offset, 2);
    assert_eq!(map.encode(&table).unwrap().row(1), [0.5, 0.25, 0.0, 1.0]);
}

#[test]
fn errors_name_the_column_and_the_flag() {
    let schema = Schema::from_toml(SCHEMA).unwrap();
    let e = FeatureMap::new(&schema, Some("income")).unwrap_err();
    assert!(matches!(e, FeatureError::UnknownColumn { .. }));
    assert!(e.to_string().contains("\"income\""), "{e}");

    // A table of another schema is refused, naming the column.
    let other = Schema::from_toml(&SCHEMA.replace("\"colour\"", "\"hue\"")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "t.csv", &CSV.replace("colour", "hue"));
    let t = TableSource::Joined(csv).load(&other).unwrap();
    let e = FeatureMap::new(&schema, None)
        .unwrap()
        .encode(&t)
        .unwrap_err();
    assert!(e.to_string().contains("\"hue\""), "{e}");

    assert!(matches!(
        parse_party_spec("--test", "a"),
        Err(SourceError::BadPartySpec { .. })
    ));
    let e = TableSource::from_flags("--test-joined", Some("x".into()), "--test", &["a=b".into()])
        .unwrap_err();
    assert_eq!(e.to_string(), "--test-joined and --test: give one of them");
    assert_eq!(
        TableSource::from_flags("--test-joined", None, "--test", &[]).unwrap(),
        None
    );
}

#[test]
fn per_party_files_give_the_joined_table() {
    let schema = Schema::from_toml(SCHEMA).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let joined = TableSource::Joined(write(dir.path(), "t.csv", CSV))
        .load(&schema)
        .unwrap();
    let a = write(dir.path(), "a.csv", "pid,age,w\n3,20,3\n1,10,-1\n2,15,0\n");
    let b = write(
        dir.path(),
        "b.csv",
        "pid,colour,pay\n1,blue,5\n2,red,10\n3,green,100\n",
    );
    let specs = [format!("a={}", a.display()), format!("b={}", b.display())];
    let src = TableSource::from_flags("--test-joined", None, "--test", &specs)
        .unwrap()
        .unwrap();
    let t = src.load(&schema).unwrap();
    let map = FeatureMap::new(&schema, None).unwrap();
    let (mj, mp) = (map.encode(&joined).unwrap(), map.encode(&t).unwrap());
    // Records follow the first party file's order: ids 3, 1, 2.
    assert_eq!(t.ids, ["3", "1", "2"]);
    assert_eq!(mp.row(0), mj.row(2));
    assert_eq!(mp.row(1), mj.row(0));
}
