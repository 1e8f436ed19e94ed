//! The numeric feature encoding of a table, shared by the metrics that need vectors (TSTR
//! classifiers, the Fréchet distance, nearest-record distances of the audit).
//!
//! Every schema column (except an optional excluded one, e.g. a classification target)
//! becomes one or more features, in schema order, all in `[0, 1]`:
//! - continuous column with public bounds `[min, max]`: one feature `(x - min) / (max - min)`
//!   of the value `x` in original units (decoded from the table's unit encoding by
//!   [`vtwin_data::codec::value_from_unit`], so integer columns give exact integers);
//! - categorical column with `m` categories: `m` one-hot features, named `column=category`;
//! - binned column with `m` bins: `m` one-hot features, named `column=[lo,hi)` (the last bin
//!   `[lo,hi]`).
//!
//! Nothing is computed from the data: the map depends on the public schema only, so real and
//! synthetic tables of one schema land in the same coordinates.

use vtwin_data::codec::value_from_unit;
use vtwin_data::{Column, ColumnKind, Schema, Table};

/// How one schema column is laid out in the feature vector.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FeatureEncoding {
    /// One feature, `(x - min) / (max - min)` in `[0, 1]`.
    Scaled {
        /// Public lower bound.
        min: f64,
        /// Public upper bound.
        max: f64,
        /// Whether the column holds integers.
        integer: bool,
    },
    /// `width` one-hot features (categories or bins, in schema order).
    OneHot {
        /// Number of categories or bins.
        width: usize,
    },
}

/// One encoded schema column: where its features start and how they are computed.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureColumn {
    /// Index of the column in the schema (and in [`Table::columns`]).
    pub column: usize,
    /// The column's name.
    pub name: String,
    /// First feature index of this column.
    pub offset: usize,
    /// The encoding.
    pub encoding: FeatureEncoding,
}

impl FeatureColumn {
    /// Number of features of this column (1, or the one-hot width).
    pub fn width(&self) -> usize {
        match self.encoding {
            FeatureEncoding::Scaled { .. } => 1,
            FeatureEncoding::OneHot { width } => width,
        }
    }
}

/// Building a feature map or encoding a table failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureError {
    /// The excluded column is not in the schema.
    #[error("column \"{column}\" is not in the schema (columns: {known})")]
    UnknownColumn {
        /// The name asked for.
        column: String,
        /// The schema's column names, comma-separated.
        known: String,
    },
    /// Excluding the column would leave no feature.
    #[error("excluding column \"{column}\" leaves no feature")]
    NoFeatures {
        /// The excluded column.
        column: String,
    },
    /// The table has another number of columns than the map's schema.
    #[error("table has {got} columns, the feature map's schema {want}")]
    ColumnCount {
        /// The table's columns.
        got: usize,
        /// The schema's.
        want: usize,
    },
    /// A table column differs from the map's column at its position.
    #[error(
        "table column \"{got}\" differs from the feature map's column \"{want}\" (name or kind)"
    )]
    ColumnMismatch {
        /// The table's column.
        got: String,
        /// The map's column.
        want: String,
    },
    /// The table breaks its own encoding invariants.
    #[error("table does not hold valid encoded values")]
    InvalidTable(#[source] vtwin_data::table::TableInvariantError),
    /// A column kind the features have no encoding for yet.
    #[error("column \"{column}\": no feature encoding for its kind")]
    UnsupportedKind {
        /// The column.
        column: String,
    },
}

/// A dense row-major matrix of `rows x cols` features.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMatrix {
    /// Number of rows (records).
    pub rows: usize,
    /// Number of columns (features).
    pub cols: usize,
    /// `rows * cols` values, row after row.
    pub data: Vec<f64>,
}

impl FeatureMatrix {
    /// A matrix from equally long rows (tests and small hand-made inputs). Panics if the rows
    /// differ in length. Cost O(rows * cols).
    pub fn from_rows(rows: &[&[f64]]) -> FeatureMatrix {
        let cols = rows.first().map_or(0, |r| r.len());
        assert!(
            rows.iter().all(|r| r.len() == cols),
            "rows of different lengths"
        );
        FeatureMatrix {
            rows: rows.len(),
            cols,
            data: rows.iter().flat_map(|r| r.iter().copied()).collect(),
        }
    }

    /// The features of record `r`. Panics if `r >= rows`.
    pub fn row(&self, r: usize) -> &[f64] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }

    /// Iterates over the rows.
    pub fn iter_rows(&self) -> impl Iterator<Item = &[f64]> + '_ {
        // `max(1)`: chunks_exact(0) panics; a 0-column matrix has no data to iterate anyway.
        self.data.chunks_exact(self.cols.max(1))
    }

    /// The rows as separate vectors (a copy; for APIs that want `Vec<Vec<f64>>`).
    pub fn to_rows(&self) -> Vec<Vec<f64>> {
        self.iter_rows().map(<[f64]>::to_vec).collect()
    }
}

/// The public map from a schema's columns to numeric features (module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMap {
    schema: Schema,
    columns: Vec<FeatureColumn>,
    names: Vec<String>,
    excluded: Option<usize>,
}

impl FeatureMap {
    /// The map of `schema`, without the column named `exclude` if given (e.g. a TSTR target).
    /// Errors if `exclude` names no column, or is the only column. Cost O(columns + categories).
    pub fn new(schema: &Schema, exclude: Option<&str>) -> Result<FeatureMap, FeatureError> {
        let excluded = match exclude {
            None => None,
            Some(name) => {
                Some(
                    schema
                        .column_index(name)
                        .ok_or_else(|| FeatureError::UnknownColumn {
                            column: name.to_owned(),
                            known: schema.column_list(),
                        })?,
                )
            }
        };
        let mut columns = Vec::new();
        let mut names = Vec::new();
        for (j, spec) in schema.columns.iter().enumerate() {
            if Some(j) == excluded {
                continue;
            }
            let offset = names.len();
            let encoding = match &spec.kind {
                ColumnKind::Continuous {
                    min, max, integer, ..
                } => {
                    names.push(spec.name.clone());
                    FeatureEncoding::Scaled {
                        min: *min,
                        max: *max,
                        integer: *integer,
                    }
                }
                ColumnKind::Categorical { categories } => {
                    names.extend(categories.iter().map(|c| format!("{}={c}", spec.name)));
                    FeatureEncoding::OneHot {
                        width: categories.len(),
                    }
                }
                ColumnKind::Binned { edges, .. } => {
                    let m = edges.len() - 1;
                    names.extend((0..m).map(|i| {
                        let close = if i + 1 == m { ']' } else { ')' };
                        format!("{}=[{},{}{close}", spec.name, edges[i], edges[i + 1])
                    }));
                    FeatureEncoding::OneHot { width: m }
                }
                // A kind added to the schema later has no encoding yet: refuse loudly.
                _ => {
                    return Err(FeatureError::UnsupportedKind {
                        column: spec.name.clone(),
                    })
                }
            };
            columns.push(FeatureColumn {
                column: j,
                name: spec.name.clone(),
                offset,
                encoding,
            });
        }
        if names.is_empty() {
            return Err(FeatureError::NoFeatures {
                column: exclude.unwrap_or_default().to_owned(),
            });
        }
        Ok(FeatureMap {
            schema: schema.clone(),
            columns,
            names,
            excluded,
        })
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.names.len()
    }

    /// The feature names, in feature order (`age`, `sex=Female`, `fnlwgt=[0,50000)`, ...).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The encoded schema columns, in schema order (without the excluded one).
    pub fn columns(&self) -> &[FeatureColumn] {
        &self.columns
    }

    /// Schema index of the excluded column, if any.
    pub fn excluded(&self) -> Option<usize> {
        self.excluded
    }

    /// The schema the map was built from.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Encodes every record of `table` (module documentation). The table must have the map's
    /// column names, kinds and cardinalities, in order, and satisfy [`Table::check`]'s
    /// invariants; else a [`FeatureError`] names the column. Every output value
    /// lies in `[0, 1]`. Cost O(rows * dim).
    pub fn encode(&self, table: &Table) -> Result<FeatureMatrix, FeatureError> {
        self.check_table(table)?;
        let (rows, cols) = (table.n_rows(), self.dim());
        let mut data = vec![0.0; rows * cols];
        for fc in &self.columns {
            match (&fc.encoding, &table.columns[fc.column]) {
                (FeatureEncoding::Scaled { min, max, integer }, Column::Unit(v)) => {
                    for (r, &u) in v.iter().enumerate() {
                        let x = value_from_unit(*min, *max, *integer, u);
                        data[r * cols + fc.offset] = ((x - min) / (max - min)).clamp(0.0, 1.0);
                    }
                }
                (FeatureEncoding::OneHot { .. }, Column::Index(v)) => {
                    for (r, &i) in v.iter().enumerate() {
                        data[r * cols + fc.offset + i as usize] = 1.0;
                    }
                }
                _ => unreachable!("check_table verified the column variants"),
            }
        }
        Ok(FeatureMatrix { rows, cols, data })
    }

    fn check_table(&self, table: &Table) -> Result<(), FeatureError> {
        if table.schema.columns.len() != self.schema.columns.len() {
            return Err(FeatureError::ColumnCount {
                got: table.schema.columns.len(),
                want: self.schema.columns.len(),
            });
        }
        for (a, b) in table.schema.columns.iter().zip(&self.schema.columns) {
            if a.name != b.name || a.kind != b.kind {
                return Err(FeatureError::ColumnMismatch {
                    got: a.name.clone(),
                    want: b.name.clone(),
                });
            }
        }
        table.check().map_err(FeatureError::InvalidTable)
    }
}
