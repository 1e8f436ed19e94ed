//! Every malformed input is an error naming the file, the row (1-based line number, header =
//! row 1) and the column. One test per case, on the small fixture files in `tests/fixtures/`.

use std::path::PathBuf;

use vtwin_data::table::DataError;
use vtwin_data::{Schema, Table};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn schema() -> Schema {
    Schema::load(&fixture("schema.toml")).expect("fixture schema is valid")
}

/// Reads a joined fixture that must fail, and returns the one-line message.
fn joined_err(name: &str) -> (DataError, String) {
    let e = Table::read_joined(&schema(), &fixture(name)).expect_err("must be rejected");
    // The error and its causes on one line, as the command line prints them.
    let mut msg = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        msg = format!("{msg}: {c}");
        cause = c.source();
    }
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(msg.contains(name), "names the file: {msg}");
    (e, msg)
}

fn assert_names(msg: &str, row: u64, column: &str) {
    assert!(
        msg.contains(&format!("row {row}")),
        "names row {row}: {msg}"
    );
    assert!(
        msg.contains(&format!("column \"{column}\"")),
        "names column {column}: {msg}"
    );
}

#[test]
fn good_file_loads_with_drop_row_and_suffix() {
    let t = Table::read_joined(&schema(), &fixture("joined_ok.csv")).unwrap();
    t.check().unwrap();
    // Row 3 (id 2) has "?" in color, a drop-row column.
    assert_eq!(t.ids, ["1", "3", "4"]);
    // "yes." is read as "yes" (index 0); "no" is index 1.
    assert_eq!(t.columns[4], vtwin_data::Column::Index(vec![0, 1, 0]));
    // band: 5 -> [0,10), 100 -> last bin (closed), 0 -> first bin.
    assert_eq!(t.columns[3], vtwin_data::Column::Index(vec![0, 1, 0]));
}

#[test]
fn unknown_category() {
    let (e, msg) = joined_err("unknown_category.csv");
    assert!(matches!(e, DataError::Value { row: 3, .. }), "{e:?}");
    assert_names(&msg, 3, "color");
    assert!(msg.contains("unknown category \"purple\""), "{msg}");
}

#[test]
fn non_numeric_value() {
    let (_, msg) = joined_err("not_numeric.csv");
    assert_names(&msg, 4, "age");
    assert!(msg.contains("\"abc\" is not a number"), "{msg}");
}

#[test]
fn value_outside_public_bounds() {
    let (_, msg) = joined_err("out_of_bounds.csv");
    assert_names(&msg, 2, "age");
    assert!(msg.contains("outside the public bounds [0, 100]"), "{msg}");
}

#[test]
fn value_outside_bin_edges() {
    let (_, msg) = joined_err("out_of_bins.csv");
    assert_names(&msg, 3, "band");
    assert!(msg.contains("outside the public bounds [0, 100]"), "{msg}");
}

#[test]
fn nan_is_rejected() {
    let (_, msg) = joined_err("nan.csv");
    assert_names(&msg, 2, "income");
    assert!(msg.contains("not finite"), "{msg}");
}

#[test]
fn infinity_is_rejected() {
    let (_, msg) = joined_err("inf.csv");
    assert_names(&msg, 3, "income");
    assert!(msg.contains("not finite"), "{msg}");
}

#[test]
fn non_integer_in_integer_column() {
    let (_, msg) = joined_err("not_integer.csv");
    assert_names(&msg, 2, "age");
    assert!(msg.contains("not an integer"), "{msg}");
}

#[test]
fn missing_value_where_schema_says_error() {
    let (_, msg) = joined_err("missing_error.csv");
    assert_names(&msg, 3, "age");
    assert!(msg.contains("missing value \"?\""), "{msg}");
}

#[test]
fn duplicate_id() {
    let (_, msg) = joined_err("duplicate_id.csv");
    assert_names(&msg, 4, "id");
    assert!(msg.contains("duplicate id \"1\" (first at row 2)"), "{msg}");
}

#[test]
fn missing_column_in_header() {
    let (_, msg) = joined_err("missing_column.csv");
    assert_names(&msg, 1, "income");
}

#[test]
fn duplicate_column_in_header() {
    let (_, msg) = joined_err("duplicate_header.csv");
    assert_names(&msg, 1, "age");
}

#[test]
fn empty_file() {
    let (e, msg) = joined_err("empty.csv");
    assert!(matches!(e, DataError::EmptyFile { .. }), "{e:?}");
    assert!(msg.contains("row 1") && msg.contains("empty file"), "{msg}");
}

#[test]
fn header_without_rows() {
    let (e, msg) = joined_err("header_only.csv");
    assert!(matches!(e, DataError::NoRows { .. }), "{e:?}");
    assert!(msg.contains("no data rows"), "{msg}");
}

#[test]
fn wrong_field_count() {
    let (_, msg) = joined_err("field_count.csv");
    assert!(msg.contains("row 3"), "{msg}");
    assert!(msg.contains("5 fields, but the header has 6"), "{msg}");
}

#[test]
fn rows_are_file_lines_with_crlf_and_blank_lines() {
    // CRLF line ends and a blank line 3: the bad record starts on line 4.
    let (_, msg) = joined_err("crlf_blank_line.csv");
    assert_names(&msg, 4, "age");
    // A UTF-8 byte-order mark does not hide the first column's name.
    let (_, msg) = joined_err("bom.csv");
    assert_names(&msg, 3, "age");
}

#[test]
fn invalid_utf8_names_row_and_field() {
    let (e, msg) = joined_err("invalid_utf8.csv");
    assert!(matches!(e, DataError::Csv { row: 3, .. }), "{e:?}");
    assert!(msg.contains("row 3") && msg.contains("field 2"), "{msg}");
}

#[test]
fn newline_in_a_quoted_field_stays_one_line() {
    let (_, msg) = joined_err("newline_in_field.csv");
    assert_names(&msg, 2, "color");
    assert!(msg.contains("unknown category \"re\\nd\""), "{msg}");
}

#[test]
fn missing_file_names_it() {
    let e = Table::read_joined(&schema(), &fixture("no_such_file.csv")).unwrap_err();
    assert!(e.to_string().contains("no_such_file.csv"), "{e}");
}

fn parties(b: &str) -> Vec<(String, PathBuf)> {
    vec![
        ("a".to_owned(), fixture("party_a.csv")),
        ("b".to_owned(), fixture(b)),
    ]
}

#[test]
fn party_files_match_by_id_and_drop_rows_for_all() {
    let t = Table::read_parties(&schema(), &parties("party_b.csv")).unwrap();
    t.check().unwrap();
    // Party a's order; id 9 is dropped (color "?") from both parties.
    assert_eq!(t.ids, ["7", "8"]);
    assert_eq!(t.columns[3], vtwin_data::Column::Index(vec![0, 1]));
    assert_eq!(t.columns[4], vtwin_data::Column::Index(vec![0, 1]));
}

#[test]
fn id_missing_from_other_party() {
    let e = Table::read_parties(&schema(), &parties("party_b_short.csv")).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, DataError::UnmatchedId { .. }), "{e:?}");
    // Id 9 is at row 4 of party_a.csv and absent from party_b_short.csv.
    assert!(
        msg.starts_with(&fixture("party_a.csv").display().to_string()),
        "{msg}"
    );
    assert_names(&msg, 4, "id");
    assert!(msg.contains("id \"9\" has no record in") && msg.contains("party_b_short.csv"));
}

#[test]
fn id_only_in_other_party() {
    let e = Table::read_parties(&schema(), &parties("party_b_extra.csv")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("party_b_extra.csv"), "{msg}");
    assert_names(&msg, 5, "id");
    assert!(msg.contains("id \"10\" has no record in") && msg.contains("party_a.csv"));
}

#[test]
fn column_of_another_party_in_a_party_file() {
    let e = Table::read_parties(&schema(), &parties("party_b_foreign.csv")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("party_b_foreign.csv"), "{msg}");
    assert_names(&msg, 1, "age");
    assert!(msg.contains("belongs to party \"a\""), "{msg}");
}

#[test]
fn party_files_must_cover_the_schema_parties() {
    let one = vec![("a".to_owned(), fixture("party_a.csv"))];
    let e = Table::read_parties(&schema(), &one).unwrap_err();
    assert!(
        e.to_string().contains("no file given for party \"b\""),
        "{e}"
    );
    let unknown = vec![
        ("a".to_owned(), fixture("party_a.csv")),
        ("c".to_owned(), fixture("party_b.csv")),
    ];
    let e = Table::read_parties(&schema(), &unknown).unwrap_err();
    assert!(
        e.to_string().contains("party \"c\" is not in the schema"),
        "{e}"
    );
}

#[test]
fn party_files_need_an_id_column() {
    let mut s = schema();
    s.id = None;
    let e = Table::read_parties(&s, &parties("party_b.csv")).unwrap_err();
    assert!(matches!(e, DataError::NoIdColumn { .. }), "{e:?}");
}
