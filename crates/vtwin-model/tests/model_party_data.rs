//! A party process's own data: one party's CSV read alone (rows sorted by id, errors naming
//! the file and column), its slice of the demo table, and the id digests the coordinator
//! compares across parties.

use vtwin_data::demo::{demo_schema, demo_table};
use vtwin_data::DataError;
use vtwin_model::layout::Layout;
use vtwin_model::party_data::{ids_digest, PartyData, PartyDataError};

fn layout() -> Layout {
    Layout::from_schema(&demo_schema(), 3).unwrap()
}

/// The demo slice is exactly what the joined demo table gives that party, in table order.
#[test]
fn demo_slice_equals_the_joined_tables_party_data() {
    let layout = layout();
    let table = demo_table(120, 4);
    let all = PartyData::from_table(&table, &layout).unwrap();
    for (p, name) in layout.parties.iter().enumerate() {
        let own = PartyData::from_demo(&layout, name, 120, 4).unwrap();
        assert_eq!(own.data, all[p], "party {name}");
        assert_eq!(own.ids, table.ids);
        assert_eq!(own.ids[0], "1");
    }
    let err = PartyData::from_demo(&layout, "nobody", 10, 4).unwrap_err();
    assert!(matches!(err, PartyDataError::UnknownParty { .. }), "{err}");
    assert!(err.to_string().contains("nobody"), "{err}");
}

/// Each party's own file, read alone, gives its statistics in ascending id order; both
/// parties agree on the ids (same digest); files with different ids give different digests.
#[test]
fn party_csv_rows_follow_the_ids_and_digests_compare_them() {
    let layout = layout();
    let schema = demo_schema();
    let table = demo_table(60, 5);
    let dir = tempfile::tempdir().unwrap();
    // Sorted by id bytes: "1", "10", "11", ..., "19", "2", "20", ...
    let mut order: Vec<usize> = (0..table.n_rows()).collect();
    order.sort_by(|&a, &b| table.ids[a].cmp(&table.ids[b]));
    let sorted = PartyData::from_table(&table.select_rows(&order), &layout).unwrap();
    let mut digests = Vec::new();
    for (p, name) in layout.parties.iter().enumerate() {
        let path = dir.path().join(format!("{name}.csv"));
        // Shuffled rows in the file: the order on disk does not matter.
        let mut shuffled: Vec<usize> = (0..table.n_rows()).collect();
        shuffled.reverse();
        shuffled.swap(3, 40);
        table
            .select_rows(&shuffled)
            .write_party_csv(name, &path)
            .unwrap();
        let own = PartyData::from_party_csv(&schema, &layout, name, &path).unwrap();
        assert_eq!(own.data, sorted[p], "party {name}");
        assert_eq!(own.ids[..3], ["1", "10", "11"]);
        digests.push(own.ids_digest());
    }
    assert_eq!(digests[0], digests[1]);
    assert_eq!(digests[0], ids_digest(&table.select_rows(&order).ids));
    // Party 1's file lacks one record: its digest differs.
    let name = &layout.parties[1];
    let path = dir.path().join("fewer.csv");
    let rows: Vec<usize> = (1..table.n_rows()).collect();
    table
        .select_rows(&rows)
        .write_party_csv(name, &path)
        .unwrap();
    let fewer = PartyData::from_party_csv(&schema, &layout, name, &path).unwrap();
    assert_eq!(fewer.data.rows, 59);
    assert_ne!(fewer.ids_digest(), digests[0]);
    // The encoding is injective: splitting one id into two changes the digest.
    assert_ne!(
        ids_digest(&["ab".into()]),
        ids_digest(&["a".into(), "b".into()])
    );
}

/// A party's file without one of its columns, or with another party's column, is refused
/// with an error naming the file and the column.
#[test]
fn party_csv_errors_name_the_file_and_column() {
    let layout = layout();
    let schema = demo_schema();
    let dir = tempfile::tempdir().unwrap();
    let table = demo_table(5, 6);
    let name = &layout.parties[0];
    let full = dir.path().join("full.csv");
    table.write_party_csv(name, &full).unwrap();
    let text = std::fs::read_to_string(&full).unwrap();
    // Drop the last column of every line.
    let dropped: String = text
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n")
        .collect();
    let missing_col = schema.columns_of(name).last().copied().unwrap();
    let missing_name = schema.columns[missing_col].name.clone();
    let path = dir.path().join("missing.csv");
    std::fs::write(&path, dropped).unwrap();
    let err = PartyData::from_party_csv(&schema, &layout, name, &path).unwrap_err();
    assert!(
        matches!(&err, PartyDataError::Data(DataError::MissingColumn { column, .. }) if *column == missing_name),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("missing.csv") && msg.contains(&missing_name),
        "{msg}"
    );
    // Party 1's file given as party 0's: the foreign column is named.
    let other = dir.path().join("other.csv");
    table.write_party_csv(&layout.parties[1], &other).unwrap();
    let msg = PartyData::from_party_csv(&schema, &layout, name, &other)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("other.csv") && msg.contains("belongs to party"),
        "{msg}"
    );
    // A bad value names the file, row and column.
    let bad = dir.path().join("bad.csv");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let fields: Vec<&str> = lines[2].split(',').collect();
    let mut f: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
    let last = f.len() - 1;
    f[last] = "not-a-value".into();
    lines[2] = f.join(",");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let msg = PartyData::from_party_csv(&schema, &layout, name, &bad)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("bad.csv") && msg.contains("row 3") && msg.contains(&missing_name),
        "{msg}"
    );
}
