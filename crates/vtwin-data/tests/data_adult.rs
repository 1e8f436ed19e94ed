//! The Adult files load as they are with `examples/adult/schema.toml`: 30162 complete
//! training records and 15060 complete test records (paper section 6.1). Skips, saying why,
//! when the data directory is absent.

use std::path::PathBuf;

use vtwin_data::codec::Encoded;
use vtwin_data::{Column, Schema, Table};

fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("VTWIN_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/adult")
        });
    if dir.join("adult.data").is_file() && dir.join("adult.test").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: Adult data not found in {} (set VTWIN_DATA_DIR)",
            dir.display()
        );
        None
    }
}

fn schema() -> Schema {
    Schema::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/adult/schema.toml"),
    )
    .unwrap()
}

#[test]
fn adult_train_and_test_load_their_complete_rows() {
    let Some(dir) = data_dir() else { return };
    let s = schema();
    let train = Table::read_joined(&s, &dir.join("adult.data")).unwrap();
    let test = Table::read_joined(&s, &dir.join("adult.test")).unwrap();
    assert_eq!(train.n_rows(), 30162);
    assert_eq!(test.n_rows(), 15060);
    train.check().unwrap();
    test.check().unwrap();

    // First training record: "39, State-gov, 77516, Bachelors, 13, Never-married,
    // Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K".
    let get = |t: &Table, name: &str, row: usize| t.columns[s.column_index(name).unwrap()].get(row);
    let decode = |t: &Table, name: &str, row: usize| {
        vtwin_data::codec::decode(
            &s.columns[s.column_index(name).unwrap()].kind,
            get(t, name, row),
        )
    };
    assert_eq!(train.ids[0], "1");
    assert_eq!(decode(&train, "age", 0), "39");
    assert_eq!(decode(&train, "workclass", 0), "State-gov");
    assert_eq!(decode(&train, "education-num", 0), "13");
    assert_eq!(decode(&train, "hours-per-week", 0), "40");
    assert_eq!(decode(&train, "Y", 0), "<=50K");
    // 2174 is in the capital-gain bin [2000, 4000), index 2; capital-loss 0 is bin [0, 1).
    assert_eq!(get(&train, "capital-gain", 0), Encoded::Index(2));
    assert_eq!(get(&train, "capital-loss", 0), Encoded::Index(0));
    // age 39 on [17, 90]: cell centre (39 - 17 + 1/2) / 74.
    assert_eq!(get(&train, "age", 0), Encoded::Unit(22.5 / 74.0));

    // Test labels carry a "."; both classes must appear, in the proportions of the file
    // (11360 "<=50K." and 3700 ">50K." among the complete test records).
    let Column::Index(y) = &test.columns[s.column_index("Y").unwrap()] else {
        panic!()
    };
    let high = y.iter().filter(|&&v| v == 1).count();
    assert_eq!((y.len() - high, high), (11360, 3700));

    // Record 15 of adult.data (row 16) has workclass/occupation "?": dropped, ids skip it.
    assert!(!train.ids.iter().any(|id| id == "15"));
    assert!(train.ids.iter().any(|id| id == "16"));
}

#[test]
fn adult_round_trips_through_write_csv() {
    let Some(dir) = data_dir() else { return };
    let s = schema();
    let train = Table::read_joined(&s, &dir.join("adult.data")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("adult-copy.csv");
    train.write_csv(&out).unwrap();
    let back = Table::read_joined(&s, &out).unwrap();
    // All Adult columns are integer or discrete, so the encoded values are exactly equal.
    // Without an id column ids are positions in the file: the copy has no gaps.
    assert_eq!(back.columns, train.columns);
    assert_eq!(back.ids.len(), train.ids.len());
    assert_eq!(back.ids.last().unwrap(), &train.n_rows().to_string());
}
