//! Reading tables from CSV files (joined, or one file per party matched by id) and writing
//! them back in original names, categories and units.
//!
//! Reading follows the schema's [`CsvDialect`](crate::schema::CsvDialect): the delimiter, optional
//! trimming of spaces around fields and header names, and the missing markers. Per field, in
//! order: a missing marker is handled by the column's [`Missing`] rule; else the column's
//! `strip_suffix` is removed if present; then the text is encoded ([`crate::codec`]).
//!
//! Header rules: every column the file must provide has to be present (else
//! [`DataError::MissingColumn`]); no name may appear twice; in a party's file a column of
//! another party is an error ([`DataError::ForeignColumn`]); other columns are ignored.
//!
//! Rows are reported as 1-based line numbers of the file (the line where the record starts;
//! the header is row 1 when it is the first line). Blank lines are skipped but counted; LF and
//! CRLF line ends and a UTF-8 byte-order mark are accepted. Every data row is validated,
//! including rows that are then dropped for a missing value.
//!
//! Matching per-party files (`read_parties`): ids must be unique within each file, and every
//! id of every file must appear in every other file (else [`DataError::UnmatchedId`], naming
//! the file that has it and the one that lacks it). A record with a missing value in a
//! `missing = "drop-row"` column of any party is dropped for all parties. Records follow the
//! order of the first party file given.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::codec::{self, Encoded};
use crate::schema::{Missing, Schema};
use crate::table::{Column, DataError, Table};

/// One file's records: ids, their rows, and for each kept record its encoded values.
struct ParsedFile {
    ids: Vec<String>,
    rows: Vec<u64>,
    /// Per record: the values of the wanted columns, or `None` if dropped for a missing value.
    values: Vec<Option<Vec<Encoded>>>,
}

impl Table {
    /// Reads one file holding every schema column (and the id column if the schema names
    /// one). Without an id column, a record's id is its 1-based position among the file's
    /// data records. Cost O(file size + rows * columns * log(categories)).
    pub fn read_joined(schema: &Schema, path: &Path) -> Result<Table, DataError> {
        let wanted: Vec<usize> = (0..schema.columns.len()).collect();
        let parsed = read_file(schema, path, &wanted, None)?;
        assemble(schema, path, &wanted, &[parsed])
    }

    /// Reads one file per party (`(party, path)`, every schema party exactly once), each with
    /// the id column and that party's columns, and matches the records by id (rules in the
    /// module documentation). Cost O(total size + rows * columns).
    pub fn read_parties(schema: &Schema, files: &[(String, PathBuf)]) -> Result<Table, DataError> {
        let first = files
            .first()
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| PathBuf::from("(no files)"));
        let Some(id_col) = schema.id.as_deref() else {
            return Err(DataError::NoIdColumn { file: first });
        };
        let parties = schema.parties();
        for (party, path) in files {
            if !parties.contains(party) {
                return Err(DataError::UnknownParty {
                    file: path.clone(),
                    party: party.clone(),
                    parties: parties.to_vec(),
                });
            }
            if files.iter().filter(|(p, _)| p == party).count() > 1 {
                return Err(DataError::DuplicateParty {
                    file: path.clone(),
                    party: party.clone(),
                });
            }
        }
        if let Some(p) = parties.iter().find(|p| !files.iter().any(|(q, _)| q == *p)) {
            return Err(DataError::MissingParty {
                file: first,
                party: p.clone(),
            });
        }

        let mut parsed = Vec::with_capacity(files.len());
        let mut wanted_all = Vec::new();
        for (party, path) in files {
            let wanted = schema.columns_of(party);
            parsed.push(read_file(schema, path, &wanted, Some(party))?);
            wanted_all.push(wanted);
        }

        // Match: every id of every file must be in every other file.
        let index: Vec<HashMap<&str, usize>> = parsed
            .iter()
            .map(|f| {
                f.ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| (id.as_str(), i))
                    .collect()
            })
            .collect();
        for (a, fa) in parsed.iter().enumerate() {
            for (b, ib) in index.iter().enumerate() {
                if a == b {
                    continue;
                }
                if let Some(i) = fa.ids.iter().position(|id| !ib.contains_key(id.as_str())) {
                    return Err(DataError::UnmatchedId {
                        file: files[a].1.clone(),
                        row: fa.rows[i],
                        column: id_col.to_owned(),
                        id: codec::excerpt(&fa.ids[i]),
                        other: files[b].1.clone(),
                    });
                }
            }
        }

        // Join in the first file's order; drop a record dropped by any party.
        let n = parsed[0].ids.len();
        let mut columns: Vec<Column> = schema
            .columns
            .iter()
            .map(|c| Column::with_capacity(&c.kind, n))
            .collect();
        let mut ids = Vec::with_capacity(n);
        let mut dropped = 0usize;
        for (r0, id) in parsed[0].ids.iter().enumerate() {
            let rows: Vec<usize> = index.iter().map(|ix| ix[id.as_str()]).collect();
            if rows
                .iter()
                .zip(&parsed)
                .any(|(&r, f)| f.values[r].is_none())
            {
                dropped += 1;
                continue;
            }
            debug_assert_eq!(rows[0], r0);
            for ((&r, f), wanted) in rows.iter().zip(&parsed).zip(&wanted_all) {
                let values = f.values[r].as_ref().expect("checked above");
                for (&c, &v) in wanted.iter().zip(values) {
                    columns[c].push(v);
                }
            }
            ids.push(id.clone());
        }
        if ids.is_empty() {
            return Err(DataError::NoRows {
                file: first,
                dropped,
            });
        }
        Ok(Table {
            schema: schema.clone(),
            ids,
            columns,
        })
    }

    /// Writes all columns (the id column first if the schema names one) in original names,
    /// categories and units, with the schema's delimiter, after [`Table::check`], atomically (temp file in the same
    /// directory, then rename). [`Table::read_joined`] reads it back to the same encoded table
    /// bit for bit (see [`crate::codec::value_from_unit`]).
    pub fn write_csv(&self, path: &Path) -> Result<(), DataError> {
        let cols: Vec<usize> = (0..self.schema.columns.len()).collect();
        self.write_columns(path, &cols, self.schema.id.is_some())
    }

    /// Writes one party's file: the id column and the party's columns, atomically. Needs an id
    /// column in the schema (per-party files are matched by it).
    pub fn write_party_csv(&self, party: &str, path: &Path) -> Result<(), DataError> {
        if self.schema.id.is_none() {
            return Err(DataError::NoIdColumn {
                file: path.to_owned(),
            });
        }
        let cols = self.schema.columns_of(party);
        if cols.is_empty() {
            return Err(DataError::UnknownParty {
                file: path.to_owned(),
                party: party.to_string(),
                parties: self.schema.parties().to_vec(),
            });
        }
        self.write_columns(path, &cols, true)
    }

    fn write_columns(&self, path: &Path, cols: &[usize], with_id: bool) -> Result<(), DataError> {
        // Decoding trusts the invariants; a hand-built table is checked first (O(rows * cols)).
        self.check().map_err(|problem| DataError::InvalidTable {
            file: path.to_owned(),
            problem,
        })?;
        let mut header: Vec<&str> = Vec::with_capacity(cols.len() + 1);
        if with_id {
            header.push(self.schema.id.as_deref().expect("checked by callers"));
        }
        header.extend(cols.iter().map(|&c| self.schema.columns[c].name.as_str()));
        write_records(&self.schema, path, &header, self.n_rows(), |r, record| {
            if with_id {
                record.push(self.ids[r].clone());
            }
            for &c in cols {
                let kind = &self.schema.columns[c].kind;
                record.push(codec::decode(kind, self.columns[c].get(r)));
            }
        })
    }
}

/// Writes `header` and `rows` records (`fill(r, record)` appends row r's fields) as CSV
/// with the schema's delimiter, atomically and world-readable (vtwin-host). Cost O(output).
fn write_records(
    schema: &Schema,
    path: &Path,
    header: &[&str],
    rows: usize,
    mut fill: impl FnMut(usize, &mut Vec<String>),
) -> Result<(), DataError> {
    vtwin_host::atomic::write_with(path, vtwin_host::atomic::Mode::Public, |out| {
        let mut w = csv::WriterBuilder::new()
            .delimiter(schema.csv.delimiter as u8)
            .from_writer(out);
        w.write_record(header).map_err(std::io::Error::other)?;
        let mut record: Vec<String> = Vec::with_capacity(header.len());
        for r in 0..rows {
            record.clear();
            fill(r, &mut record);
            w.write_record(&record).map_err(std::io::Error::other)?;
        }
        w.flush()
    })
    .map_err(|cause| DataError::Io {
        file: path.to_owned(),
        cause,
    })
}

/// One party's own columns, read from its own file alone (a party process never sees another
/// party's file): see [`read_party_alone`].
#[derive(Debug, Clone, PartialEq)]
pub struct PartyColumns {
    /// The party's name.
    pub party: String,
    /// The record ids, in ascending byte order.
    pub ids: Vec<String>,
    /// Schema indices of the party's columns (schema order).
    pub schema_columns: Vec<usize>,
    /// The party's encoded columns, one per entry of `schema_columns`, rows in `ids` order.
    pub columns: Vec<Column>,
}

impl PartyColumns {
    /// The rows at `rows` (positions in this party's order), in that order. Panics if a
    /// position is out of range. Cost O(len(rows) * columns).
    pub fn select(&self, rows: &[usize]) -> PartyColumns {
        PartyColumns {
            party: self.party.clone(),
            ids: rows.iter().map(|&r| self.ids[r].clone()).collect(),
            schema_columns: self.schema_columns.clone(),
            columns: self.columns.iter().map(|c| c.select(rows)).collect(),
        }
    }

    /// Writes the id column and the party's columns (original names, categories and units,
    /// the schema's delimiter), rows in this order, atomically; [`read_party_alone`] reads
    /// the same encoded values back (its rows sorted by id). Cost O(rows * columns).
    pub fn write_csv(&self, schema: &Schema, path: &Path) -> Result<(), DataError> {
        let Some(id) = schema.id.as_deref() else {
            return Err(DataError::NoIdColumn {
                file: path.to_owned(),
            });
        };
        let mut header = vec![id];
        header.extend(
            self.schema_columns
                .iter()
                .map(|&c| schema.columns[c].name.as_str()),
        );
        write_records(schema, path, &header, self.ids.len(), |r, record| {
            record.push(self.ids[r].clone());
            for (&c, col) in self.schema_columns.iter().zip(&self.columns) {
                record.push(codec::decode(&schema.columns[c].kind, col.get(r)));
            }
        })
    }
}

/// Reads party `party`'s own file (the id column and that party's columns; the header rules
/// of the module docs: a missing column is [`DataError::MissingColumn`] naming the file and
/// column, another party's column is [`DataError::ForeignColumn`]). Records dropped for a
/// missing value are left out (the parties then disagree on the ids, which a comparison of
/// their id digests reveals). Rows are sorted by id in ascending byte order, so that parties
/// holding the same ids agree on the row order without seeing each other's files.
/// Cost O(file size + rows log rows).
pub fn read_party_alone(
    schema: &Schema,
    party: &str,
    path: &Path,
) -> Result<PartyColumns, DataError> {
    if schema.id.is_none() {
        return Err(DataError::NoIdColumn {
            file: path.to_owned(),
        });
    }
    let wanted = schema.columns_of(party);
    if wanted.is_empty() {
        return Err(DataError::UnknownParty {
            file: path.to_owned(),
            party: party.to_string(),
            parties: schema.parties().to_vec(),
        });
    }
    let parsed = read_file(schema, path, &wanted, Some(party))?;
    let mut order: Vec<usize> = (0..parsed.ids.len())
        .filter(|&r| parsed.values[r].is_some())
        .collect();
    if order.is_empty() {
        return Err(DataError::NoRows {
            file: path.to_owned(),
            dropped: parsed.ids.len(),
        });
    }
    order.sort_by(|&a, &b| parsed.ids[a].as_bytes().cmp(parsed.ids[b].as_bytes()));
    let mut columns: Vec<Column> = wanted
        .iter()
        .map(|&c| Column::with_capacity(&schema.columns[c].kind, order.len()))
        .collect();
    let mut ids = Vec::with_capacity(order.len());
    for &r in &order {
        let values = parsed.values[r].as_ref().expect("kept records only");
        for (col, &v) in columns.iter_mut().zip(values) {
            col.push(v);
        }
        ids.push(parsed.ids[r].clone());
    }
    Ok(PartyColumns {
        party: party.to_owned(),
        ids,
        schema_columns: wanted,
        columns,
    })
}

/// Builds a table from one parsed joined file.
fn assemble(
    schema: &Schema,
    path: &Path,
    wanted: &[usize],
    parsed: &[ParsedFile],
) -> Result<Table, DataError> {
    let f = &parsed[0];
    let mut columns: Vec<Column> = schema
        .columns
        .iter()
        .map(|c| Column::with_capacity(&c.kind, f.ids.len()))
        .collect();
    let mut ids = Vec::with_capacity(f.ids.len());
    let mut dropped = 0usize;
    for (id, values) in f.ids.iter().zip(&f.values) {
        let Some(values) = values else {
            dropped += 1;
            continue;
        };
        for (&c, &v) in wanted.iter().zip(values) {
            columns[c].push(v);
        }
        ids.push(id.clone());
    }
    if ids.is_empty() {
        return Err(DataError::NoRows {
            file: path.to_owned(),
            dropped,
        });
    }
    Ok(Table {
        schema: schema.clone(),
        ids,
        columns,
    })
}

/// Parses one file: header checks, then every row. `party` is `Some` for a party's own file
/// (the id column is then required, and other parties' columns are rejected).
fn read_file(
    schema: &Schema,
    path: &Path,
    wanted: &[usize],
    party: Option<&str>,
) -> Result<ParsedFile, DataError> {
    let file = || path.to_owned();
    // The whole file in memory (tables here are megabytes): rows are numbered by counting
    // newlines before a record's first byte, because the csv crate's line counter drifts on
    // CRLF files and its byte position can point at the line end before the record.
    let bytes = std::fs::read(path).map_err(|cause| DataError::Io {
        file: file(),
        cause,
    })?;
    let newlines: Vec<u64> = bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i as u64)
        .collect();
    let line_of = |pos: Option<&csv::Position>| -> u64 {
        pos.map_or(0, |p| {
            let mut start = p.byte() as usize;
            while start < bytes.len() && matches!(bytes[start], b'\r' | b'\n') {
                start += 1;
            }
            newlines.partition_point(|&n| n < start as u64) as u64 + 1
        })
    };
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(schema.csv.delimiter as u8)
        .has_headers(false)
        .flexible(true)
        .trim(if schema.csv.trim {
            csv::Trim::All
        } else {
            csv::Trim::None
        })
        .from_reader(bytes.as_slice());
    let csv_err = |e: csv::Error| {
        let row = line_of(e.position());
        if let csv::ErrorKind::Io(_) = e.kind() {
            if let csv::ErrorKind::Io(cause) = e.into_kind() {
                return DataError::Io {
                    file: file(),
                    cause,
                };
            }
            unreachable!("the kind was just matched");
        }
        DataError::Csv {
            file: file(),
            row,
            source: e,
        }
    };
    let mut records = rdr.records();

    // Header.
    let header = match records.next() {
        None => return Err(DataError::EmptyFile { file: file() }),
        Some(r) => r.map_err(csv_err)?,
    };
    if header.len() == 1 && header[0].is_empty() {
        return Err(DataError::EmptyFile { file: file() });
    }
    let mut pos: HashMap<&str, usize> = HashMap::new();
    for (i, name) in header.iter().enumerate() {
        if pos.insert(name, i).is_some() {
            return Err(DataError::DuplicateHeader {
                file: file(),
                column: codec::excerpt(name),
            });
        }
        if let (Some(party), Some(c)) = (party, schema.column_index(name)) {
            let owner = &schema.columns[c].party;
            if owner != party {
                return Err(DataError::ForeignColumn {
                    file: file(),
                    column: name.to_owned(),
                    party: party.to_owned(),
                    owner: owner.clone(),
                });
            }
        }
    }
    let find = |name: &str| {
        pos.get(name)
            .copied()
            .ok_or_else(|| DataError::MissingColumn {
                file: file(),
                column: name.to_owned(),
            })
    };
    let id_pos = match (&schema.id, party) {
        (Some(id), _) => Some((id.as_str(), find(id)?)),
        (None, Some(_)) => return Err(DataError::NoIdColumn { file: file() }),
        (None, None) => None,
    };
    let col_pos: Vec<usize> = wanted
        .iter()
        .map(|&c| find(&schema.columns[c].name))
        .collect::<Result<_, _>>()?;

    // Rows.
    let mut out = ParsedFile {
        ids: Vec::new(),
        rows: Vec::new(),
        values: Vec::new(),
    };
    let mut first_row_of: HashMap<String, u64> = HashMap::new();
    for (ordinal, rec) in records.enumerate() {
        let rec = rec.map_err(csv_err)?;
        let row = line_of(rec.position());
        if rec.len() != header.len() {
            return Err(DataError::FieldCount {
                file: file(),
                row,
                expected: header.len(),
                found: rec.len(),
            });
        }
        let id = match id_pos {
            Some((name, p)) => {
                let id = &rec[p];
                if id.is_empty() || schema.csv.missing.iter().any(|m| m == id) {
                    return Err(DataError::MissingValue {
                        file: file(),
                        row,
                        column: name.to_owned(),
                        marker: id.to_owned(),
                    });
                }
                if let Some(&first_row) = first_row_of.get(id) {
                    return Err(DataError::DuplicateId {
                        file: file(),
                        row,
                        column: name.to_owned(),
                        id: codec::excerpt(id),
                        first_row,
                    });
                }
                first_row_of.insert(id.to_owned(), row);
                id.to_owned()
            }
            None => (ordinal + 1).to_string(),
        };
        let mut values = Vec::with_capacity(wanted.len());
        let mut drop = false;
        for (&c, &p) in wanted.iter().zip(&col_pos) {
            let spec = &schema.columns[c];
            let mut field = &rec[p];
            if schema.csv.missing.iter().any(|m| m == field) {
                match spec.missing {
                    Missing::Error => {
                        return Err(DataError::MissingValue {
                            file: file(),
                            row,
                            column: spec.name.clone(),
                            marker: field.to_owned(),
                        })
                    }
                    Missing::DropRow => {
                        drop = true;
                        continue;
                    }
                }
            }
            if let Some(s) = &spec.strip_suffix {
                field = field.strip_suffix(s.as_str()).unwrap_or(field);
            }
            let v = codec::encode(&spec.kind, field).map_err(|problem| DataError::Value {
                file: file(),
                row,
                column: spec.name.clone(),
                problem,
            })?;
            values.push(v);
        }
        out.ids.push(id);
        out.rows.push(row);
        out.values.push((!drop).then_some(values));
    }
    if out.ids.is_empty() {
        return Err(DataError::NoRows {
            file: file(),
            dropped: 0,
        });
    }
    Ok(out)
}
