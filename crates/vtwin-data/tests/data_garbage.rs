//! Arbitrary file contents never panic the reader: every input is a table or an error that
//! names the file (and, when a row is at fault, a row that exists in the file).

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vtwin_data::{Schema, Table};

fn schema() -> Schema {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema.toml");
    Schema::load(&path).unwrap()
}

/// Lines built from plausible and hostile pieces, so that many inputs get past the header.
fn line() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("1".to_owned()),
        Just("30".to_owned()),
        Just("red".to_owned()),
        Just("?".to_owned()),
        Just("yes.".to_owned()),
        Just("NaN".to_owned()),
        Just("\"".to_owned()),
        Just("".to_owned()),
        "[ -~]{0,6}",
        "\\PC{0,3}",
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.join(", "))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/data_garbage.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn reader_never_panics(
        header_ok in any::<bool>(),
        lines in proptest::collection::vec(line(), 0..6),
        crlf in any::<bool>(),
        raw in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage.csv");
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut text = String::new();
        if header_ok {
            text.push_str("id, age, color, income, band, label");
            text.push_str(nl);
        }
        for l in &lines {
            text.push_str(l);
            text.push_str(nl);
        }
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(&raw);
        std::fs::write(&path, &bytes).unwrap();
        let total_lines = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        match Table::read_joined(&schema(), &path) {
            Ok(t) => prop_assert!(t.check().is_ok()),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("garbage.csv"), "{}", msg);
                prop_assert!(!msg.contains('\n'), "{}", msg);
                // Messages put the row right after the file: "<file>: row N".
                if let Some(rest) = msg.split(": row ").nth(1) {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let row: u64 = digits.parse().unwrap();
                    prop_assert!(row >= 1 && row <= total_lines, "row {} of {}: {}", row, total_lines, msg);
                }
            }
        }
    }
}
