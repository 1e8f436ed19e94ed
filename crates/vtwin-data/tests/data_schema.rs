//! Schema validation: each rule rejects with a message naming the schema file and the column.

use std::path::PathBuf;

use vtwin_data::schema::SchemaError;
use vtwin_data::{ColumnKind, Schema};

const HEAD: &str = "[csv]\ntrim = true\nmissing = [\"?\"]\n";

fn col(name: &str, party: &str, body: &str) -> String {
    format!("\n[[column]]\nname = \"{name}\"\nparty = \"{party}\"\n{body}\n")
}

const CAT: &str = "kind = \"categorical\"\ncategories = [\"x\", \"y\"]";
const CONT: &str = "kind = \"continuous\"\nmin = 0\nmax = 1";

/// Writes `text` as a schema file in a temp dir and loads it; returns the error message.
fn load_err(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad-schema.toml");
    std::fs::write(&path, text).unwrap();
    let e = Schema::load(&path).expect_err("must be rejected");
    assert!(matches!(e, SchemaError::Invalid { .. }), "{e:?}");
    // The error and its causes on one line, as the command line prints them.
    let mut msg = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        msg = format!("{msg}: {c}");
        cause = c.source();
    }
    assert!(msg.contains("bad-schema.toml"), "names the file: {msg}");
    msg
}

fn assert_column(msg: &str, column: &str, what: &str) {
    assert!(
        msg.contains(&format!("column \"{column}\"")),
        "names {column}: {msg}"
    );
    assert!(msg.contains(what), "says {what:?}: {msg}");
}

#[test]
fn a_valid_schema_loads_and_round_trips() {
    let text = format!("{HEAD}{}{}", col("u", "p", CAT), col("v", "q", CONT));
    let s = Schema::from_toml(&text).unwrap();
    assert_eq!(s.parties(), ["p", "q"]);
    assert_eq!(s.columns_of("q"), [1]);
    assert_eq!(s.columns[0].kind.cardinality(), Some(2));
    assert_eq!(Schema::from_toml(&s.to_toml()).unwrap(), s);
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<Schema>(&json).unwrap(), s);
}

#[test]
fn deserialising_json_validates() {
    let s = Schema::from_toml(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT)
    ))
    .unwrap();
    let json = serde_json::to_string(&s)
        .unwrap()
        .replace("\"max\":1.0", "\"max\":-1.0");
    let e = serde_json::from_str::<Schema>(&json)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column \"v\"") && e.contains("not below max"),
        "{e}"
    );
}

#[test]
fn duplicate_column_name() {
    let msg = load_err(&format!(
        "{HEAD}{}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT),
        col("u", "q", CAT)
    ));
    assert_column(&msg, "u", "declared twice");
}

#[test]
fn column_named_like_the_id() {
    let msg = load_err(&format!(
        "id = \"u\"\n{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "id column");
}

#[test]
fn empty_category_list() {
    let bad = "kind = \"categorical\"\ncategories = []";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", bad),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "empty category list");
}

#[test]
fn duplicate_category() {
    let bad = "kind = \"categorical\"\ncategories = [\"x\", \"x\"]";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", bad),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "listed twice");
}

#[test]
fn category_equal_to_missing_marker() {
    let bad = "kind = \"categorical\"\ncategories = [\"x\", \"?\"]";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", bad),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "missing marker");
}

#[test]
fn category_that_trimming_could_never_match() {
    let bad = "kind = \"categorical\"\ncategories = [\"x\", \" y\"]";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", bad),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "surrounding spaces");
}

#[test]
fn min_not_below_max() {
    for (min, max) in [(1, 1), (2, 1)] {
        let bad = format!("kind = \"continuous\"\nmin = {min}\nmax = {max}");
        let msg = load_err(&format!(
            "{HEAD}{}{}",
            col("u", "p", CAT),
            col("v", "q", &bad)
        ));
        assert_column(&msg, "v", "is not below max");
    }
}

#[test]
fn continuous_without_bounds() {
    let bad = "kind = \"continuous\"\nmin = 0";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", bad)
    ));
    assert_column(&msg, "v", "needs public `min` and `max`");
}

#[test]
fn integer_column_with_fractional_bounds() {
    let bad = "kind = \"continuous\"\nmin = 0.5\nmax = 3\ninteger = true";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", bad)
    ));
    assert_column(&msg, "v", "non-integer bounds");
}

#[test]
fn unsorted_edges() {
    let bad = "kind = \"binned\"\nedges = [0, 10, 5]";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", bad)
    ));
    assert_column(&msg, "v", "not strictly increasing (10 then 5)");
}

#[test]
fn too_few_edges() {
    let bad = "kind = \"binned\"\nedges = [0]";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", bad)
    ));
    assert_column(&msg, "v", "fewer than 2 bin edges");
}

#[test]
fn integer_bin_without_integers() {
    let bad = "kind = \"binned\"\nedges = [0, 1.2, 1.5, 3]\ninteger = true";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", bad)
    ));
    assert_column(&msg, "v", "bin [1.2, 1.5) holds no integer");
}

#[test]
fn field_of_another_kind() {
    let bad = "kind = \"categorical\"\ncategories = [\"x\"]\nedges = [0, 1]";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", bad),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "`edges` is not allowed for kind categorical");
}

/// `model = "cells"` parses, round-trips through TOML and JSON (and is written only when it is
/// not the default, so Beta schemas keep their old text), and gives the column its W cells.
#[test]
fn an_integer_column_modelled_by_its_cells() {
    let cells = "kind = \"continuous\"\nmin = 1\nmax = 99\ninteger = true\nmodel = \"cells\"";
    let beta = "kind = \"continuous\"\nmin = 1\nmax = 99\ninteger = true\nmodel = \"beta\"";
    let s = Schema::from_toml(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", cells)
    ))
    .unwrap();
    assert_eq!(s.columns[1].kind.cells(), Some(99));
    assert_eq!(s.columns[1].kind.cardinality(), None);
    assert!(s.columns[1].kind.is_continuous());
    assert!(s.to_toml().contains("model = \"cells\""));
    assert_eq!(Schema::from_toml(&s.to_toml()).unwrap(), s);
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<Schema>(&json).unwrap(), s);
    let b = Schema::from_toml(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", beta)
    ))
    .unwrap();
    assert_eq!(b.columns[1].kind.cells(), None);
    assert!(!b.to_toml().contains("model"), "{}", b.to_toml());
    let plain = format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", &beta.replace("\nmodel = \"beta\"", ""))
    );
    assert_eq!(Schema::from_toml(&plain).unwrap(), b);
}

#[test]
fn cells_need_an_integer_column_of_at_most_max_cells_values() {
    let real = "kind = \"continuous\"\nmin = 0\nmax = 10\nmodel = \"cells\"";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", real)
    ));
    assert_column(&msg, "v", "needs integer = true");
    let max = vtwin_data::schema::MAX_CELLS;
    let ok = format!(
        "kind = \"continuous\"\nmin = 0\nmax = {}\ninteger = true\nmodel = \"cells\"",
        max - 1
    );
    let s = Schema::from_toml(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", &ok)
    ))
    .unwrap();
    assert_eq!(s.columns[1].kind.cells(), Some(max));
    let wide = ok.replace(&format!("max = {}", max - 1), &format!("max = {max}"));
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", &wide)
    ));
    assert_column(&msg, "v", &format!("over {} values", max + 1));
    let on_categorical = format!("{CAT}\nmodel = \"cells\"");
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", &on_categorical),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "u", "`model` is not allowed for kind categorical");
    let unknown = "kind = \"continuous\"\nmin = 0\nmax = 10\ninteger = true\nmodel = \"spline\"";
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", unknown)
    ));
    assert!(msg.contains("spline"), "{msg}");
}

#[test]
fn unknown_field_is_rejected() {
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", &format!("{CAT}\ncolour = 1")),
        col("v", "q", CONT)
    ));
    assert!(msg.contains("colour"), "{msg}");
}

#[test]
fn fewer_than_two_parties() {
    let msg = load_err(&format!(
        "{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "p", CONT)
    ));
    assert!(msg.contains("fewer than 2 parties (found 1)"), "{msg}");
}

#[test]
fn declared_party_without_columns() {
    let text = format!(
        "parties = [\"p\", \"q\", \"r\"]\n{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT)
    );
    let msg = load_err(&text);
    assert!(msg.contains("party \"r\" has no columns"), "{msg}");
}

#[test]
fn column_of_undeclared_party() {
    let text = format!(
        "parties = [\"p\", \"q\"]\n{HEAD}{}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT),
        col("w", "z", CAT)
    );
    let msg = load_err(&text);
    assert_column(&msg, "w", "party \"z\" is not among the declared parties");
}

#[test]
fn unreadable_schema_names_the_file() {
    let e = Schema::load(&PathBuf::from("/nonexistent/schema.toml")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/schema.toml"), "{e}");
}

#[test]
fn adult_schema_is_valid_and_splits_as_the_paper() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/adult/schema.toml");
    let s = Schema::load(&path).unwrap();
    assert_eq!(s.parties(), ["demographics", "finance"]);
    assert_eq!(s.columns.len(), 15);
    // The income class, as adult.names declares it.
    assert_eq!(s.target.as_deref(), Some("Y"));
    let names = |p: &str| -> Vec<String> {
        s.columns_of(p)
            .iter()
            .map(|&i| s.columns[i].name.clone())
            .collect()
    };
    assert_eq!(
        names("demographics"),
        [
            "age",
            "sex",
            "race",
            "marital-status",
            "relationship",
            "native-country",
            "education",
            "education-num"
        ]
    );
    assert_eq!(
        names("finance"),
        [
            "workclass",
            "occupation",
            "fnlwgt",
            "capital-gain",
            "capital-loss",
            "hours-per-week",
            "Y"
        ]
    );
    let kind = |n: &str| &s.columns[s.column_index(n).unwrap()].kind;
    assert!(matches!(
        kind("age"),
        ColumnKind::Continuous { integer: true, .. }
    ));
    assert!(matches!(
        kind("hours-per-week"),
        ColumnKind::Continuous { integer: true, .. }
    ));
    // By their integers (cells), not the paper's Beta (docs/utility-levers.md).
    assert_eq!(kind("age").cells(), Some(74));
    assert_eq!(kind("hours-per-week").cells(), Some(99));
    for n in ["fnlwgt", "capital-gain", "capital-loss"] {
        assert!(matches!(kind(n), ColumnKind::Binned { .. }), "{n}");
    }
    assert_eq!(kind("native-country").cardinality(), Some(41));
    assert_eq!(kind("education").cardinality(), Some(16));
    assert_eq!(kind("occupation").cardinality(), Some(14));
}

#[test]
fn demo_schema_file_matches_the_built_in_demo() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo/schema.toml");
    assert_eq!(
        Schema::load(&path).unwrap(),
        vtwin_data::demo::demo_schema()
    );
}

#[test]
fn a_target_is_a_categorical_or_binned_column_and_round_trips() {
    let text = format!(
        "target = \"u\"\n{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT)
    );
    let s = Schema::from_toml(&text).unwrap();
    assert_eq!(s.target.as_deref(), Some("u"));
    assert_eq!(Schema::from_toml(&s.to_toml()).unwrap(), s);
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<Schema>(&json).unwrap(), s);
    let binned = "kind = \"binned\"\nedges = [0, 1, 2]";
    let text = format!(
        "target = \"v\"\n{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", binned)
    );
    assert_eq!(
        Schema::from_toml(&text).unwrap().target.as_deref(),
        Some("v")
    );
}

#[test]
fn a_target_that_is_no_column_or_continuous_is_rejected() {
    let msg = load_err(&format!(
        "target = \"w\"\n{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT)
    ));
    assert!(msg.contains("target \"w\" is not a column"), "{msg}");
    let msg = load_err(&format!(
        "target = \"v\"\n{HEAD}{}{}",
        col("u", "p", CAT),
        col("v", "q", CONT)
    ));
    assert_column(&msg, "v", "must be categorical or binned");
}
