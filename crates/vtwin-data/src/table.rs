//! A validated, encoded table: one record per matched individual, every schema column, in
//! schema order. Reading and writing CSV files is in [`crate::csv_table`].
//!
//! Encoding ([`crate::codec`]): continuous columns are [`Column::Unit`] values strictly inside
//! (0,1); categorical and binned columns are [`Column::Index`] values below the column's
//! cardinality. Every constructor in this crate upholds that invariant; [`Table::check`]
//! verifies it for a table built by hand.

use std::path::PathBuf;

use crate::codec::{Encoded, ValueError};
use crate::schema::{ColumnKind, Schema};

/// One column's encoded values.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// A continuous column, scaled into the open interval (0,1) by the public bounds.
    Unit(Vec<f64>),
    /// A categorical or binned column: the category or bin index.
    Index(Vec<u32>),
}

impl Column {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Column::Unit(v) => v.len(),
            Column::Index(v) => v.len(),
        }
    }

    /// Whether the column has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values at `rows`, in that order (panics on a position out of range). Cost
    /// O(len(rows)).
    pub fn select(&self, rows: &[usize]) -> Column {
        match self {
            Column::Unit(v) => Column::Unit(rows.iter().map(|&r| v[r]).collect()),
            Column::Index(v) => Column::Index(rows.iter().map(|&r| v[r]).collect()),
        }
    }

    /// The value of record `row`. Panics if `row` is out of range.
    pub fn get(&self, row: usize) -> Encoded {
        match self {
            Column::Unit(v) => Encoded::Unit(v[row]),
            Column::Index(v) => Encoded::Index(v[row]),
        }
    }

    /// An empty column of the right variant for `kind`, with room for `rows` values.
    pub(crate) fn with_capacity(kind: &ColumnKind, rows: usize) -> Column {
        if kind.is_continuous() {
            Column::Unit(Vec::with_capacity(rows))
        } else {
            Column::Index(Vec::with_capacity(rows))
        }
    }

    /// Appends a value. Panics if the variant does not match (an internal invariant).
    pub(crate) fn push(&mut self, value: Encoded) {
        match (self, value) {
            (Column::Unit(v), Encoded::Unit(u)) => v.push(u),
            (Column::Index(v), Encoded::Index(i)) => v.push(i),
            (_, value) => panic!("encoded value {value:?} does not fit the column variant"),
        }
    }
}

/// Records of all schema columns, matched across parties.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The schema the records were validated against.
    pub schema: Schema,
    /// One id per record: the id column's value, or for a schema without an id column the
    /// record's 1-based position among its file's data records (dropped records keep their
    /// numbers, so ids are gaps-and-all positions in the file).
    pub ids: Vec<String>,
    /// One column per schema column, in schema order, all of length `ids.len()`.
    pub columns: Vec<Column>,
}

/// Loading, matching or writing a table failed. Every variant names the file, and where one
/// applies the row (1-based line number in the file, the header being row 1) and the column.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be read or written.
    #[error("{}: {cause}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The cause (in the message, not chained as a source, so that `{:#}` prints it once).
        cause: std::io::Error,
    },
    /// The file is not well-formed CSV (e.g. an unterminated quote, invalid UTF-8).
    #[error("{}: row {row}: malformed CSV", file.display())]
    Csv {
        /// The file.
        file: PathBuf,
        /// The row.
        row: u64,
        /// The CSV parser's error.
        #[source]
        source: csv::Error,
    },
    /// The file is empty: it has no header row.
    #[error("{}: row 1: empty file, expected a header naming the columns", file.display())]
    EmptyFile {
        /// The file.
        file: PathBuf,
    },
    /// The header has no data rows after it (or every row was dropped for missing values).
    #[error("{}: no data rows after the header (row 1){}", file.display(),
        if *dropped > 0 { format!("; all {dropped} rows were dropped for missing values") } else { String::new() })]
    NoRows {
        /// The file.
        file: PathBuf,
        /// How many rows were dropped for missing values.
        dropped: usize,
    },
    /// A column the schema needs from this file is not in its header.
    #[error("{}: row 1 (header): missing column \"{column}\"", file.display())]
    MissingColumn {
        /// The file.
        file: PathBuf,
        /// The missing column.
        column: String,
    },
    /// A header names a column twice.
    #[error("{}: row 1 (header): column \"{column}\" appears twice", file.display())]
    DuplicateHeader {
        /// The file.
        file: PathBuf,
        /// The column.
        column: String,
    },
    /// A party's file holds a column that the schema gives to another party.
    #[error("{}: row 1 (header): column \"{column}\" belongs to party \"{owner}\", not \"{party}\"", file.display())]
    ForeignColumn {
        /// The file.
        file: PathBuf,
        /// The column.
        column: String,
        /// The party whose file this is.
        party: String,
        /// The party the schema gives the column to.
        owner: String,
    },
    /// A row has a different number of fields from the header.
    #[error("{}: row {row}: {found} fields, but the header has {expected}", file.display())]
    FieldCount {
        /// The file.
        file: PathBuf,
        /// The row.
        row: u64,
        /// Fields in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// A field is not a valid value of its column.
    #[error("{}: row {row}, column \"{column}\": {problem}", file.display())]
    Value {
        /// The file.
        file: PathBuf,
        /// The row.
        row: u64,
        /// The column.
        column: String,
        /// What is wrong.
        problem: ValueError,
    },
    /// A missing value in a column whose schema says `missing = "error"`.
    #[error("{}: row {row}, column \"{column}\": missing value \"{marker}\" (the schema says missing = \"error\")", file.display())]
    MissingValue {
        /// The file.
        file: PathBuf,
        /// The row.
        row: u64,
        /// The column.
        column: String,
        /// The marker found.
        marker: String,
    },
    /// An id appears twice in one file.
    #[error("{}: row {row}, column \"{column}\": duplicate id \"{id}\" (first at row {first_row})", file.display())]
    DuplicateId {
        /// The file.
        file: PathBuf,
        /// The row of the second occurrence.
        row: u64,
        /// The id column.
        column: String,
        /// The id.
        id: String,
        /// The row of the first occurrence.
        first_row: u64,
    },
    /// An id in one party's file has no record in another party's file.
    #[error("{}: row {row}, column \"{column}\": id \"{id}\" has no record in {}", file.display(), other.display())]
    UnmatchedId {
        /// The file holding the id.
        file: PathBuf,
        /// The row.
        row: u64,
        /// The id column.
        column: String,
        /// The id.
        id: String,
        /// The file that lacks it.
        other: PathBuf,
    },
    /// Per-party files need an id column to match records.
    #[error("{}: the schema names no id column, so per-party files cannot be matched (use a joined file, or add `id = \"...\"`)", file.display())]
    NoIdColumn {
        /// The first party file.
        file: PathBuf,
    },
    /// A party file for a party the schema does not name.
    #[error("{}: party \"{party}\" is not in the schema (its parties: {})", file.display(), parties.join(", "))]
    UnknownParty {
        /// The file.
        file: PathBuf,
        /// The party.
        party: String,
        /// The schema's parties.
        parties: Vec<String>,
    },
    /// A party given more than one file.
    #[error("{}: party \"{party}\" is given more than one file", file.display())]
    DuplicateParty {
        /// One of its files.
        file: PathBuf,
        /// The party.
        party: String,
    },
    /// A party of the schema given no file.
    #[error("{}: no file given for party \"{party}\"", file.display())]
    MissingParty {
        /// The first file given.
        file: PathBuf,
        /// The party.
        party: String,
    },
    /// A table to be written breaks its schema's invariants (a hand-built table).
    #[error("{}: not written: {problem}", file.display())]
    InvalidTable {
        /// The file that was to be written.
        file: PathBuf,
        /// What is wrong (names the column).
        problem: TableInvariantError,
    },
}

/// A table does not satisfy the invariants of its schema.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("table column \"{column}\": {problem}")]
pub struct TableInvariantError {
    /// The column at fault (or "(all)").
    pub column: String,
    /// What is wrong.
    pub problem: TableProblem,
}

/// Which invariant of [`Table::check`] fails.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TableProblem {
    /// Another number of columns than the schema's.
    #[error("{got} columns for a schema of {want}")]
    ColumnCount {
        /// Columns in the table.
        got: usize,
        /// Columns in the schema.
        want: usize,
    },
    /// A column of another length than the ids.
    #[error("{values} values for {ids} ids")]
    Length {
        /// Values in the column.
        values: usize,
        /// Ids of the table.
        ids: usize,
    },
    /// A unit value outside (0, 1).
    #[error("unit value {0} not in (0,1)")]
    Unit(f64),
    /// A category index out of range.
    #[error("index {index} not below cardinality {cardinality}")]
    Index {
        /// The index.
        index: u32,
        /// The column's number of categories or bins.
        cardinality: usize,
    },
    /// A unit column for a categorical kind or the reverse.
    #[error("wrong column variant for its kind")]
    Variant,
}

impl Table {
    /// Number of records.
    pub fn n_rows(&self) -> usize {
        self.ids.len()
    }

    /// The records at `rows`, in that order (repeats allowed). Panics if an index is out of
    /// range. Cost O(rows.len() * columns).
    pub fn select_rows(&self, rows: &[usize]) -> Table {
        let columns = self.columns.iter().map(|c| c.select(rows)).collect();
        Table {
            schema: self.schema.clone(),
            ids: rows.iter().map(|&r| self.ids[r].clone()).collect(),
            columns,
        }
    }

    /// Verifies the encoding invariants: one column per schema column of the right variant,
    /// all of length `n_rows`, unit values strictly inside (0,1), indices below cardinality.
    /// Cost O(rows * columns).
    pub fn check(&self) -> Result<(), TableInvariantError> {
        let bad = |column: &str, problem: TableProblem| TableInvariantError {
            column: column.to_owned(),
            problem,
        };
        if self.columns.len() != self.schema.columns.len() {
            return Err(bad(
                "(all)",
                TableProblem::ColumnCount {
                    got: self.columns.len(),
                    want: self.schema.columns.len(),
                },
            ));
        }
        for (spec, col) in self.schema.columns.iter().zip(&self.columns) {
            if col.len() != self.n_rows() {
                return Err(bad(
                    &spec.name,
                    TableProblem::Length {
                        values: col.len(),
                        ids: self.n_rows(),
                    },
                ));
            }
            match (spec.kind.cardinality(), col) {
                (None, Column::Unit(v)) => {
                    if let Some(u) = v.iter().find(|u| !(**u > 0.0 && **u < 1.0)) {
                        return Err(bad(&spec.name, TableProblem::Unit(*u)));
                    }
                }
                (Some(card), Column::Index(v)) => {
                    if let Some(i) = v.iter().find(|&&i| i as usize >= card) {
                        return Err(bad(
                            &spec.name,
                            TableProblem::Index {
                                index: *i,
                                cardinality: card,
                            },
                        ));
                    }
                }
                _ => return Err(bad(&spec.name, TableProblem::Variant)),
            }
        }
        Ok(())
    }
}
