//! The public table schema (INTERFACE.md "Data"): every column's name, owning party, kind,
//! public bounds or categories, and how missing values are handled, plus the CSV dialect of
//! the input files. A schema is public: nothing in it may be computed from the private data.
//!
//! TOML form (see `examples/adult/schema.toml` for a full one):
//!
//! ```toml
//! id = "person"              # optional: the id column that matches per-party files
//! parties = ["demographics", "finance"]   # optional: declares the parties and their order
//! target = "Y"               # optional: the column downstream models predict (categorical
//!                            # or binned); the mixture gives each component one of its classes
//!
//! [csv]
//! delimiter = ","            # one ASCII character (default ",")
//! trim = true                # trim spaces around fields and header names (default false)
//! missing = ["?"]            # field values that mean "missing" (default none)
//!
//! [[column]]
//! name = "age"
//! party = "demographics"
//! kind = "continuous"        # Beta on (0,1) after scaling by the public bounds
//! min = 17
//! max = 90
//! integer = true             # values are integers; synthesis writes integers
//! model = "cells"            # optional, integer columns only: a categorical over the
//!                            # max - min + 1 values (default "beta")
//!
//! [[column]]
//! name = "capital-gain"
//! party = "finance"
//! kind = "binned"            # categorical over the bins [e_0,e_1), ..., [e_{m-1},e_m]
//! edges = [0, 1, 5000, 100000]
//! integer = true
//!
//! [[column]]
//! name = "Y"
//! party = "finance"
//! kind = "categorical"
//! categories = ["<=50K", ">50K"]
//! strip_suffix = "."         # accept "<=50K." as "<=50K" (Adult's test labels)
//! missing = "drop-row"       # or "error" (the default)
//! ```
//!
//! Validation ([`Schema::new`], run by [`Schema::load`] and by deserialisation) rejects:
//! duplicate column names, a column named like the id column, `model = "cells"` on a non-integer column
//! or over more than [`MAX_CELLS`] values, `model` on a categorical or binned column, an
//! empty or duplicated category list, a category with surrounding spaces when fields are trimmed or equal to a
//! missing marker, non-finite bounds, `min >= max`, non-integer bounds on an integer column,
//! fewer than 2 edges or edges not strictly increasing, an integer binned column with a bin
//! that holds no integer, an empty or undeclared party name, a declared party listed twice or
//! with no columns, fewer than 2 parties, and a `target` that is not a categorical or binned
//! column of the schema. Without `parties`, the parties are the owners
//! named by the columns, in order of first appearance.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How a column's values are modelled, with their public description.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ColumnKind {
    /// A real value in the public closed interval `[min, max]`, modelled as Beta after the
    /// scaling of [`crate::codec`] into the open interval (0,1). With `integer`, values must be
    /// integers (and `min`, `max` integers too).
    Continuous {
        /// Public lower bound (inclusive).
        min: f64,
        /// Public upper bound (inclusive), `> min`.
        max: f64,
        /// Whether the values are integers.
        integer: bool,
        /// How the column is modelled within a mixture component.
        model: ContinuousModel,
    },
    /// One of a public list of categories (matched exactly, after trimming and suffix
    /// stripping), modelled as Categorical over the list's indices.
    Categorical {
        /// The categories, at least one, no duplicates; index order is the model's order.
        categories: Vec<String>,
    },
    /// A real value in `[edges[0], edges[m]]` modelled as Categorical over the `m` bins
    /// `[e_i, e_{i+1})` (the last bin is closed: `[e_{m-1}, e_m]`).
    Binned {
        /// Strictly increasing, finite, at least 2.
        edges: Vec<f64>,
        /// Whether the values are integers (each bin must then hold at least one integer).
        integer: bool,
    },
}

/// How a continuous column is modelled within one mixture component (`model = "beta"` or
/// `model = "cells"` in TOML; the default is `beta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ContinuousModel {
    /// Beta on the encoded value in (0,1): two parameters, smooth, unimodal or U-shaped.
    #[default]
    Beta,
    /// For an integer column with `W = max - min + 1` values: a categorical over its W unit
    /// cells (the piecewise-constant density `W p_j` on the encoded value), which can put mass
    /// on single values (heaped answers such as a 40-hour week) where a Beta cannot. W
    /// parameters per component; at most [`MAX_CELLS`].
    Cells,
}

/// The most values an integer column modelled by its cells may have (its parameters per
/// component, each one more released coordinate per component).
pub const MAX_CELLS: usize = 1024;

impl ColumnKind {
    /// The number of unit cells of a continuous integer column modelled by them
    /// ([`ContinuousModel::Cells`]); `None` for every other column. Cost O(1).
    pub fn cells(&self) -> Option<usize> {
        match self {
            ColumnKind::Continuous {
                min,
                max,
                integer: true,
                model: ContinuousModel::Cells,
            } => {
                // Validation bounds W; checked again here because the fields are public.
                let w = max - min + 1.0;
                (w >= 2.0 && w <= MAX_CELLS as f64).then_some(w as usize)
            }
            _ => None,
        }
    }

    /// The number of per-component probabilities of a column modelled as a categorical: its
    /// categories, bins or cells ([`ColumnKind::cells`]); `None` for a Beta column. Cost O(1).
    pub fn levels(&self) -> Option<usize> {
        self.cardinality().or(self.cells())
    }

    /// Number of categories or bins; `None` for a continuous column. Cost O(1).
    pub fn cardinality(&self) -> Option<usize> {
        match self {
            ColumnKind::Continuous { .. } => None,
            ColumnKind::Categorical { categories } => Some(categories.len()),
            ColumnKind::Binned { edges, .. } => Some(edges.len() - 1),
        }
    }

    /// Whether the column is modelled as a Beta (continuous) column.
    pub fn is_continuous(&self) -> bool {
        matches!(self, ColumnKind::Continuous { .. })
    }
}

/// What to do with a field that holds one of the dialect's missing markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Missing {
    /// A missing value is an error naming file, row and column (the default).
    #[default]
    Error,
    /// The whole record is dropped (from every party's view, when files are matched by id).
    DropRow,
}

/// One column of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    /// The column's name, as in the CSV header.
    pub name: String,
    /// The party that holds this column.
    pub party: String,
    /// Kind and public description.
    pub kind: ColumnKind,
    /// Missing-value handling.
    pub missing: Missing,
    /// If set, a field ending with this suffix is read without it (Adult test labels end
    /// with "."). Applied after trimming and after the missing-marker check.
    pub strip_suffix: Option<String>,
}

/// The CSV dialect of the input files (all files of one schema share it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvDialect {
    /// Field separator, one ASCII character.
    #[serde(default = "default_delimiter")]
    pub delimiter: char,
    /// Trim ASCII whitespace around every field and header name.
    #[serde(default)]
    pub trim: bool,
    /// Field values (after trimming) that mean "missing".
    #[serde(default)]
    pub missing: Vec<String>,
}

fn default_delimiter() -> char {
    ','
}

impl Default for CsvDialect {
    fn default() -> Self {
        CsvDialect {
            delimiter: ',',
            trim: false,
            missing: Vec::new(),
        }
    }
}

/// A validated schema. Build it with [`Schema::new`] or [`Schema::load`]; the public fields
/// are for reading (a hand-edited `Schema` is re-validated by [`Schema::validate`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawSchema", into = "RawSchema")]
pub struct Schema {
    /// The id column that matches per-party files (not a modelled column). Optional for
    /// joined files: without it a record's id is its 1-based position among the file's records.
    pub id: Option<String>,
    /// The input files' CSV dialect.
    pub csv: CsvDialect,
    /// The parties, each holding at least one column; at least 2.
    pub parties: Vec<String>,
    /// The modelled columns, in model order.
    pub columns: Vec<ColumnSpec>,
    /// The column that downstream models predict (`target = "..."`), a categorical or binned
    /// column, or none. Public, like every field: the model stratifies its mixture on it
    /// (each component holds one of its classes; `vtwin_model::layout`).
    pub target: Option<String>,
}

/// What is wrong with a schema, naming the column when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaIssue {
    /// The column at fault, if any.
    pub column: Option<String>,
    /// What is wrong.
    pub problem: SchemaProblem,
}

impl fmt::Display for SchemaIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.column {
            Some(c) => write!(f, "column \"{c}\": {}", self.problem),
            None => write!(f, "{}", self.problem),
        }
    }
}

/// One rule of the module documentation that a schema breaks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaProblem {
    /// A missing marker contains the delimiter.
    #[error("[csv] a missing marker contains the delimiter")]
    MarkerHasDelimiter,
    /// The delimiter is not one ASCII character other than '"'.
    #[error("[csv] delimiter {0:?} must be one ASCII character other than '\"'")]
    Delimiter(char),
    /// No modelled column.
    #[error("no columns")]
    NoColumns,
    /// `id = ""`.
    #[error("the id column name is empty")]
    EmptyIdName,
    /// A column named "".
    #[error("a column has an empty name")]
    EmptyColumnName,
    /// A column with the id column's name.
    #[error("has the name of the id column")]
    NamedLikeId,
    /// A column declared twice.
    #[error("is declared twice")]
    DuplicateColumn,
    /// `party = ""`.
    #[error("empty party name")]
    EmptyParty,
    /// A column's party is not declared.
    #[error("party \"{0}\" is not among the declared parties")]
    UndeclaredParty(String),
    /// `strip_suffix = ""`.
    #[error("strip_suffix is empty")]
    EmptyStripSuffix,
    /// Continuous bounds not finite.
    #[error("bounds [{min}, {max}] are not finite")]
    NonFiniteBounds {
        /// min.
        min: f64,
        /// max.
        max: f64,
    },
    /// min >= max.
    #[error("min {min} is not below max {max}")]
    EmptyRange {
        /// min.
        min: f64,
        /// max.
        max: f64,
    },
    /// An integer column with fractional bounds.
    #[error("integer column with non-integer bounds [{min}, {max}]")]
    NonIntegerBounds {
        /// min.
        min: f64,
        /// max.
        max: f64,
    },
    /// An integer range too wide for exact f64 arithmetic.
    #[error("integer range wider than 2^52")]
    IntegerRangeTooWide,
    /// `model = "cells"` on a column that is not integer-valued.
    #[error("model = \"cells\" needs integer = true: the cells are the column's integers")]
    CellsNeedIntegers,
    /// `model = "cells"` on an integer range with more than [`MAX_CELLS`] values.
    #[error("model = \"cells\" over {cells} values: at most {max} (MAX_CELLS), or use model = \"beta\" or public bins", max = MAX_CELLS)]
    TooManyCells {
        /// max - min + 1.
        cells: f64,
    },
    /// `categories = []`.
    #[error("empty category list")]
    NoCategories,
    /// A category listed twice.
    #[error("category \"{0}\" is listed twice")]
    DuplicateCategory(String),
    /// A category with spaces that trimming removes.
    #[error("category \"{0}\" has surrounding spaces, which [csv] trim removes from every field")]
    CategorySpaces(String),
    /// A category that is also a missing marker.
    #[error("category \"{0}\" is also a missing marker")]
    CategoryIsMissingMarker(String),
    /// More categories than a u32 index holds.
    #[error("more than 2^32-1 categories")]
    TooManyCategories,
    /// Fewer than 2 bin edges.
    #[error("fewer than 2 bin edges")]
    TooFewEdges,
    /// A bin edge not finite.
    #[error("a bin edge is not finite")]
    NonFiniteEdge,
    /// Bin edges not strictly increasing.
    #[error("bin edges are not strictly increasing ({0} then {1})")]
    EdgesNotIncreasing(f64, f64),
    /// An integer column's bin without an integer.
    #[error("integer column: bin [{0}, {1}) holds no integer")]
    EmptyIntegerBin(f64, f64),
    /// A party declared twice.
    #[error("party \"{0}\" is declared twice")]
    DuplicateParty(String),
    /// A declared party without columns.
    #[error("party \"{0}\" has no columns")]
    PartyWithoutColumns(String),
    /// Fewer than 2 parties.
    #[error("fewer than 2 parties (found {0}): vertically partitioned data needs at least 2")]
    TooFewParties(usize),
    /// `target` names no column of the schema.
    #[error("target \"{0}\" is not a column of the schema")]
    UnknownTarget(String),
    /// `target` names a continuous column.
    #[error(
        "is the target, which must be categorical or binned (its classes stratify the mixture)"
    )]
    ContinuousTarget,
    /// A field of another column kind.
    #[error("field `{field}` is not allowed for kind {kind}")]
    ForeignField {
        /// The field.
        field: &'static str,
        /// The column's kind.
        kind: &'static str,
    },
    /// A field the kind needs is missing.
    #[error("{kind} column needs {needs}")]
    MissingField {
        /// The column's kind.
        kind: &'static str,
        /// What it needs.
        needs: &'static str,
    },
}

impl std::error::Error for SchemaIssue {}

/// Loading a schema file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The file could not be read.
    #[error("schema {}: {cause}", path.display())]
    Io {
        /// The schema file.
        path: PathBuf,
        /// The cause (in the message, not chained as a source, so that `{:#}` prints it once).
        cause: std::io::Error,
    },
    /// The file is not valid TOML for a schema, or the schema is invalid.
    #[error("schema {}", path.display())]
    Invalid {
        /// The schema file.
        path: PathBuf,
        /// What is wrong (names the column when there is one).
        #[source]
        source: SchemaTextError,
    },
}

/// Schema text is not a valid schema ([`Schema::from_toml`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaTextError {
    /// Not TOML, or not the shape of a schema (unknown or missing keys, wrong types).
    #[error("not a schema file")]
    Toml(#[source] toml::de::Error),
    /// Well-formed, but breaks a schema rule.
    #[error(transparent)]
    Invalid(#[from] SchemaIssue),
}

impl Schema {
    /// Builds and validates a schema. `parties: None` takes the owners named by the columns
    /// in order of first appearance. Cost O(columns * parties + categories + edges).
    pub fn new(
        id: Option<String>,
        csv: CsvDialect,
        parties: Option<Vec<String>>,
        columns: Vec<ColumnSpec>,
    ) -> Result<Schema, SchemaIssue> {
        let parties = parties.unwrap_or_else(|| {
            let mut out: Vec<String> = Vec::new();
            for c in &columns {
                if !out.contains(&c.party) {
                    out.push(c.party.clone());
                }
            }
            out
        });
        let s = Schema {
            id,
            csv,
            parties,
            columns,
            target: None,
        };
        s.validate()?;
        Ok(s)
    }

    /// The same schema with `target` as its target column (none: no target), validated.
    /// Cost O(columns).
    pub fn with_target(mut self, target: Option<String>) -> Result<Schema, SchemaIssue> {
        self.target = target;
        self.validate()?;
        Ok(self)
    }

    /// Reads and validates a TOML schema file; errors name the file and the column.
    pub fn load(path: &Path) -> Result<Schema, SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|cause| SchemaError::Io {
            path: path.to_owned(),
            cause,
        })?;
        Schema::from_toml(&text).map_err(|source| SchemaError::Invalid {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses and validates TOML text (the error message names the column when there is one).
    pub fn from_toml(text: &str) -> Result<Schema, SchemaTextError> {
        let raw: RawSchema = toml::from_str(text).map_err(SchemaTextError::Toml)?;
        Ok(Schema::try_from(raw)?)
    }

    /// The schema as TOML text ([`Schema::from_toml`] reads it back to an equal schema).
    pub fn to_toml(&self) -> String {
        toml::to_string(&RawSchema::from(self.clone()))
            .expect("a validated schema always serialises to TOML")
    }

    /// Checks every rule listed in the module documentation.
    pub fn validate(&self) -> Result<(), SchemaIssue> {
        let issue = |column: Option<&str>, problem: SchemaProblem| SchemaIssue {
            column: column.map(str::to_owned),
            problem,
        };
        if self
            .csv
            .missing
            .iter()
            .any(|m| m.contains(self.csv.delimiter))
        {
            return Err(issue(None, SchemaProblem::MarkerHasDelimiter));
        }
        if !self.csv.delimiter.is_ascii() || self.csv.delimiter == '"' {
            return Err(issue(None, SchemaProblem::Delimiter(self.csv.delimiter)));
        }
        if self.columns.is_empty() {
            return Err(issue(None, SchemaProblem::NoColumns));
        }
        let mut names = HashSet::new();
        if let Some(id) = &self.id {
            if id.is_empty() {
                return Err(issue(None, SchemaProblem::EmptyIdName));
            }
            names.insert(id.as_str());
        }
        for c in &self.columns {
            let col = Some(c.name.as_str());
            if c.name.is_empty() {
                return Err(issue(None, SchemaProblem::EmptyColumnName));
            }
            if !names.insert(c.name.as_str()) {
                let why = if self.id.as_deref() == Some(c.name.as_str()) {
                    SchemaProblem::NamedLikeId
                } else {
                    SchemaProblem::DuplicateColumn
                };
                return Err(issue(col, why));
            }
            if c.party.is_empty() {
                return Err(issue(col, SchemaProblem::EmptyParty));
            }
            if !self.parties.contains(&c.party) {
                return Err(issue(col, SchemaProblem::UndeclaredParty(c.party.clone())));
            }
            if c.strip_suffix.as_deref() == Some("") {
                return Err(issue(col, SchemaProblem::EmptyStripSuffix));
            }
            match &c.kind {
                ColumnKind::Continuous {
                    min,
                    max,
                    integer,
                    model,
                } => {
                    if !min.is_finite() || !max.is_finite() {
                        return Err(issue(
                            col,
                            SchemaProblem::NonFiniteBounds {
                                min: *min,
                                max: *max,
                            },
                        ));
                    }
                    if min >= max {
                        return Err(issue(
                            col,
                            SchemaProblem::EmptyRange {
                                min: *min,
                                max: *max,
                            },
                        ));
                    }
                    if *integer && (min.fract() != 0.0 || max.fract() != 0.0) {
                        return Err(issue(
                            col,
                            SchemaProblem::NonIntegerBounds {
                                min: *min,
                                max: *max,
                            },
                        ));
                    }
                    // Integer columns are encoded by exact integer arithmetic in f64.
                    if *integer && (max - min) >= 2f64.powi(52) {
                        return Err(issue(col, SchemaProblem::IntegerRangeTooWide));
                    }
                    if *model == ContinuousModel::Cells {
                        if !*integer {
                            return Err(issue(col, SchemaProblem::CellsNeedIntegers));
                        }
                        if max - min >= MAX_CELLS as f64 {
                            return Err(issue(
                                col,
                                SchemaProblem::TooManyCells {
                                    cells: max - min + 1.0,
                                },
                            ));
                        }
                    }
                }
                ColumnKind::Categorical { categories } => {
                    if categories.is_empty() {
                        return Err(issue(col, SchemaProblem::NoCategories));
                    }
                    let mut seen = HashSet::new();
                    for cat in categories {
                        if !seen.insert(cat.as_str()) {
                            return Err(issue(col, SchemaProblem::DuplicateCategory(cat.clone())));
                        }
                        if self.csv.trim && cat.trim() != cat {
                            return Err(issue(col, SchemaProblem::CategorySpaces(cat.clone())));
                        }
                        if self.csv.missing.contains(cat) {
                            return Err(issue(
                                col,
                                SchemaProblem::CategoryIsMissingMarker(cat.clone()),
                            ));
                        }
                    }
                    if categories.len() > u32::MAX as usize {
                        return Err(issue(col, SchemaProblem::TooManyCategories));
                    }
                }
                ColumnKind::Binned { edges, integer } => {
                    if edges.len() < 2 {
                        return Err(issue(col, SchemaProblem::TooFewEdges));
                    }
                    if edges.iter().any(|e| !e.is_finite()) {
                        return Err(issue(col, SchemaProblem::NonFiniteEdge));
                    }
                    if let Some(w) = edges.windows(2).find(|w| w[0] >= w[1]) {
                        return Err(issue(col, SchemaProblem::EdgesNotIncreasing(w[0], w[1])));
                    }
                    if *integer {
                        for i in 0..edges.len() - 1 {
                            if integer_bin_range(edges, i).is_none() {
                                return Err(issue(
                                    col,
                                    SchemaProblem::EmptyIntegerBin(edges[i], edges[i + 1]),
                                ));
                            }
                        }
                    }
                }
            }
        }
        let mut seen = HashSet::new();
        for p in &self.parties {
            if !seen.insert(p.as_str()) {
                return Err(issue(None, SchemaProblem::DuplicateParty(p.clone())));
            }
            if !self.columns.iter().any(|c| &c.party == p) {
                return Err(issue(None, SchemaProblem::PartyWithoutColumns(p.clone())));
            }
        }
        let parties = &self.parties;
        if parties.len() < 2 {
            return Err(issue(None, SchemaProblem::TooFewParties(parties.len())));
        }
        if let Some(t) = &self.target {
            match self.columns.iter().find(|c| &c.name == t) {
                None => return Err(issue(None, SchemaProblem::UnknownTarget(t.clone()))),
                Some(c) if matches!(c.kind, ColumnKind::Continuous { .. }) => {
                    return Err(issue(Some(t), SchemaProblem::ContinuousTarget))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// The parties: as declared, or else in order of first appearance among the columns.
    pub fn parties(&self) -> Vec<String> {
        self.parties.clone()
    }

    /// Indices (schema order) of the columns held by `party`; empty for an unknown party.
    pub fn columns_of(&self, party: &str) -> Vec<usize> {
        (0..self.columns.len())
            .filter(|&i| self.columns[i].party == party)
            .collect()
    }

    /// The column names in order, comma-separated: the "known" list of unknown-column errors.
    /// Cost O(total name length).
    pub fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Index of the column named `name`, if any.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// The on-disk (TOML/JSON) form; every field is checked by `Schema::try_from`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchema {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parties: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(default)]
    csv: CsvDialect,
    #[serde(default, rename = "column")]
    columns: Vec<RawColumn>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColumn {
    name: String,
    party: String,
    kind: RawKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    integer: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<RawModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    categories: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edges: Option<Vec<f64>>,
    #[serde(default)]
    missing: Missing,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    strip_suffix: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RawModel {
    Beta,
    Cells,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RawKind {
    Continuous,
    Categorical,
    Binned,
}

impl TryFrom<RawSchema> for Schema {
    type Error = SchemaIssue;

    fn try_from(raw: RawSchema) -> Result<Schema, SchemaIssue> {
        let mut columns = Vec::with_capacity(raw.columns.len());
        for c in raw.columns {
            let col = Some(c.name.clone());
            let bad = |problem: SchemaProblem| SchemaIssue {
                column: col.clone(),
                problem,
            };
            let kind_name = match c.kind {
                RawKind::Continuous => "continuous",
                RawKind::Categorical => "categorical",
                RawKind::Binned => "binned",
            };
            let forbid = |field: &'static str, present: bool| {
                if present {
                    Err(bad(SchemaProblem::ForeignField {
                        field,
                        kind: kind_name,
                    }))
                } else {
                    Ok(())
                }
            };
            let needs = |needs: &'static str| {
                bad(SchemaProblem::MissingField {
                    kind: kind_name,
                    needs,
                })
            };
            let kind = match c.kind {
                RawKind::Continuous => {
                    forbid("categories", c.categories.is_some())?;
                    forbid("edges", c.edges.is_some())?;
                    let (Some(min), Some(max)) = (c.min, c.max) else {
                        return Err(needs("public `min` and `max`"));
                    };
                    ColumnKind::Continuous {
                        min,
                        max,
                        integer: c.integer.unwrap_or(false),
                        model: match c.model {
                            None | Some(RawModel::Beta) => ContinuousModel::Beta,
                            Some(RawModel::Cells) => ContinuousModel::Cells,
                        },
                    }
                }
                RawKind::Categorical => {
                    forbid("model", c.model.is_some())?;
                    forbid("min", c.min.is_some())?;
                    forbid("max", c.max.is_some())?;
                    forbid("edges", c.edges.is_some())?;
                    forbid("integer", c.integer.is_some())?;
                    let Some(categories) = c.categories else {
                        return Err(needs("`categories`"));
                    };
                    ColumnKind::Categorical { categories }
                }
                RawKind::Binned => {
                    forbid("model", c.model.is_some())?;
                    forbid("min", c.min.is_some())?;
                    forbid("max", c.max.is_some())?;
                    forbid("categories", c.categories.is_some())?;
                    let Some(edges) = c.edges else {
                        return Err(needs("public `edges`"));
                    };
                    ColumnKind::Binned {
                        edges,
                        integer: c.integer.unwrap_or(false),
                    }
                }
            };
            columns.push(ColumnSpec {
                name: c.name,
                party: c.party,
                kind,
                missing: c.missing,
                strip_suffix: c.strip_suffix,
            });
        }
        Schema::new(raw.id, raw.csv, raw.parties, columns)?.with_target(raw.target)
    }
}

impl From<Schema> for RawSchema {
    fn from(s: Schema) -> RawSchema {
        let columns = s
            .columns
            .into_iter()
            .map(|c| {
                let mut raw = RawColumn {
                    name: c.name,
                    party: c.party,
                    kind: RawKind::Continuous,
                    min: None,
                    max: None,
                    integer: None,
                    model: None,
                    categories: None,
                    edges: None,
                    missing: c.missing,
                    strip_suffix: c.strip_suffix,
                };
                match c.kind {
                    ColumnKind::Continuous {
                        min,
                        max,
                        integer,
                        model,
                    } => {
                        raw.min = Some(min);
                        raw.max = Some(max);
                        raw.integer = Some(integer);
                        // Written only when not the default, so Beta schemas read and write
                        // as they did before the field existed.
                        raw.model = (model == ContinuousModel::Cells).then_some(RawModel::Cells);
                    }
                    ColumnKind::Categorical { categories } => {
                        raw.kind = RawKind::Categorical;
                        raw.categories = Some(categories);
                    }
                    ColumnKind::Binned { edges, integer } => {
                        raw.kind = RawKind::Binned;
                        raw.edges = Some(edges);
                        raw.integer = Some(integer);
                    }
                }
                raw
            })
            .collect();
        RawSchema {
            id: s.id,
            target: s.target,
            parties: Some(s.parties),
            csv: s.csv,
            columns,
        }
    }
}

/// The integers `lo..=hi` that bin `i` of `edges` holds (`e_i <= x < e_{i+1}`, the last bin
/// closed), or `None` if it holds none. Schema validation requires every bin of an integer
/// column to hold one; the codec writes the middle one.
pub(crate) fn integer_bin_range(edges: &[f64], i: usize) -> Option<(f64, f64)> {
    let last = i + 2 == edges.len();
    let lo = edges[i].ceil();
    let hi = if last {
        edges[i + 1].floor()
    } else {
        edges[i + 1].ceil() - 1.0
    };
    (lo <= hi).then_some((lo, hi))
}
