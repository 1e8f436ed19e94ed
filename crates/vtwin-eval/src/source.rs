//! Where a real or synthetic table comes from: one joined CSV, or one CSV per party matched by
//! the schema's id column; read with the vtwin-model readers ([`Table::read_joined`],
//! [`Table::read_parties`]), so the same dialect, missing-value and error rules apply.

use std::fmt;
use std::path::PathBuf;

use vtwin_data::{DataError, Schema, Table};

/// The file(s) holding a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableSource {
    /// One file with every schema column (a `vtwin synthesize` output, or `--joined`).
    Joined(PathBuf),
    /// One file per party, `(party, file)`, matched by the schema's id column.
    Parties(Vec<(String, PathBuf)>),
}

/// Command-line flags that name a table are inconsistent or malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A per-party flag value is not `PARTY=FILE`.
    #[error("{flag} {value}: expected PARTY=FILE")]
    BadPartySpec {
        /// The flag, e.g. `--test`.
        flag: String,
        /// The value given.
        value: String,
    },
    /// Both the joined flag and per-party flags were given.
    #[error("{joined_flag} and {party_flag}: give one of them")]
    Both {
        /// e.g. `--test-joined`.
        joined_flag: String,
        /// e.g. `--test`.
        party_flag: String,
    },
}

impl TableSource {
    /// The source named by a pair of flags (`--X-joined FILE` or `--X PARTY=FILE ...`), or
    /// `None` when neither was given.
    pub fn from_flags(
        joined_flag: &str,
        joined: Option<PathBuf>,
        party_flag: &str,
        parties: &[String],
    ) -> Result<Option<TableSource>, SourceError> {
        match (joined, parties.is_empty()) {
            (Some(j), true) => Ok(Some(TableSource::Joined(j))),
            (None, true) => Ok(None),
            (Some(_), false) => Err(SourceError::Both {
                joined_flag: joined_flag.to_owned(),
                party_flag: party_flag.to_owned(),
            }),
            (None, false) => parties
                .iter()
                .map(|s| parse_party_spec(party_flag, s))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| Some(TableSource::Parties(v))),
        }
    }

    /// Reads the table against `schema`. Errors name the file, row and column
    /// ([`DataError`]). Cost O(file size + rows * columns).
    pub fn load(&self, schema: &Schema) -> Result<Table, DataError> {
        match self {
            TableSource::Joined(path) => Table::read_joined(schema, path),
            TableSource::Parties(files) => Table::read_parties(schema, files),
        }
    }
}

impl fmt::Display for TableSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableSource::Joined(p) => write!(f, "{}", p.display()),
            TableSource::Parties(v) => {
                let parts: Vec<String> = v
                    .iter()
                    .map(|(party, p)| format!("{party}={}", p.display()))
                    .collect();
                f.write_str(&parts.join(" "))
            }
        }
    }
}

/// Parses one `PARTY=FILE` value of `flag` (both sides non-empty).
pub fn parse_party_spec(flag: &str, value: &str) -> Result<(String, PathBuf), SourceError> {
    match value.split_once('=') {
        Some((p, f)) if !p.is_empty() && !f.is_empty() => Ok((p.to_owned(), f.into())),
        _ => Err(SourceError::BadPartySpec {
            flag: flag.to_owned(),
            value: value.to_owned(),
        }),
    }
}
