//! The data a benchmark runs on: the Adult training set, the built-in demo data, or a
//! random public schema for measuring how the cost scales with the parties P and the
//! statistics d.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_data::params::{ColumnParams, MixtureParams, ParamsError};
use vtwin_data::schema::{ColumnKind, ColumnSpec, CsvDialect, Missing, SchemaIssue};
use vtwin_data::{DataError, Schema, Table};

/// The Adult schema that ships with the project (public: bounds and categories only).
pub const ADULT_SCHEMA: &str = include_str!("../../../examples/adult/schema.toml");

/// Largest categorical column of the synthetic workload (wider parties get more columns).
pub const MAX_CATEGORIES: usize = 25;

/// Parties the synthetic workload allows.
pub const SYNTHETIC_PARTIES: std::ops::RangeInclusive<usize> = 2..=16;

/// Which data the iterations run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `adult.data` in this directory, under the shipped Adult schema (30162 complete
    /// records, 2 parties, target Y; d = K (1 + 318) with age and hours by their cells, K 9 by
    /// default: `vtwin_model::components`).
    Adult {
        /// The directory holding `adult.data`.
        data_dir: PathBuf,
    },
    /// `rows` records of the built-in demo data (2 parties, 7 columns; generator seed 1).
    Demo {
        /// Records.
        rows: usize,
    },
    /// A random public schema ([`synthetic_columns`]) and `rows` records of a random
    /// 3-component mixture over it.
    Synthetic {
        /// Parties P.
        parties: usize,
        /// Sufficient statistics of all parties together.
        width: usize,
        /// Records.
        rows: usize,
        /// Seed of the schema and the records.
        seed: u64,
    },
}

/// A loaded workload: its data and public description.
#[derive(Clone, Debug)]
pub struct Workload {
    /// "adult", "demo" or "synthetic".
    pub name: &'static str,
    /// The public schema.
    pub schema: Schema,
    /// The records.
    pub table: Table,
    /// Where the records came from.
    pub source: String,
}

/// Why a workload could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// `adult.data` is not in the directory.
    #[error("{}: not found (the Adult workload needs adult.data)", path.display())]
    AdultMissing {
        /// The file looked for.
        path: PathBuf,
    },
    /// The shipped Adult schema does not parse (a build defect).
    #[error("examples/adult/schema.toml")]
    AdultSchema(#[source] vtwin_data::schema::SchemaTextError),
    /// The Adult file does not load under the schema.
    #[error(transparent)]
    Data(#[from] DataError),
    /// Fewer than two records asked for.
    #[error("{rows} records: a workload needs at least 2")]
    TooFewRows {
        /// Records asked for.
        rows: usize,
    },
    /// Parties outside [`SYNTHETIC_PARTIES`].
    #[error("{parties} parties: the synthetic workload has 2 to 16")]
    Parties {
        /// Parties asked for.
        parties: usize,
    },
    /// Fewer than two statistics per party.
    #[error("width {width}: the synthetic workload needs at least 2 statistics per party ({min})")]
    Width {
        /// Width asked for.
        width: usize,
        /// 2 P.
        min: usize,
    },
    /// The generated schema is invalid (a defect of the generator).
    #[error("synthetic schema: {0}")]
    SyntheticSchema(#[from] SchemaIssue),
    /// The generated mixture is invalid (a defect of the generator).
    #[error("synthetic table: {0}")]
    SyntheticTable(#[from] ParamsError),
}

impl Workload {
    /// Loads `kind`. Cost: reading and validating the CSV (Adult), or drawing the records.
    pub fn load(kind: &WorkloadKind) -> Result<Workload, WorkloadError> {
        match kind {
            WorkloadKind::Adult { data_dir } => {
                let schema = Schema::from_toml(ADULT_SCHEMA).map_err(WorkloadError::AdultSchema)?;
                let file = data_dir.join("adult.data");
                if !file.is_file() {
                    return Err(WorkloadError::AdultMissing { path: file });
                }
                let table = Table::read_joined(&schema, &file)?;
                Ok(Workload {
                    name: "adult",
                    schema,
                    table,
                    source: file.display().to_string(),
                })
            }
            WorkloadKind::Demo { rows } => {
                check_rows(*rows)?;
                Ok(Workload {
                    name: "demo",
                    schema: vtwin_data::demo::demo_schema(),
                    table: vtwin_data::demo::demo_table(*rows, 1),
                    source: "built-in demo generator (seed 1)".into(),
                })
            }
            WorkloadKind::Synthetic {
                parties,
                width,
                rows,
                seed,
            } => {
                let (schema, table) = synthetic(*parties, *width, *rows, *seed)?;
                Ok(Workload {
                    name: "synthetic",
                    schema,
                    table,
                    source: format!(
                        "random schema and 3-component mixture (seed {seed}): {parties} parties, width {width}"
                    ),
                })
            }
        }
    }
}

/// The Adult directory: `flag` if given, else `$VTWIN_DATA_DIR`, else
/// `../shared/data/adult` (relative to the working directory).
pub fn adult_dir(flag: Option<&Path>) -> PathBuf {
    match flag {
        Some(d) => d.to_owned(),
        None => std::env::var_os("VTWIN_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("../shared/data/adult")),
    }
}

fn check_rows(rows: usize) -> Result<(), WorkloadError> {
    if rows < 2 {
        return Err(WorkloadError::TooFewRows { rows });
    }
    Ok(())
}

/// Widths of each party's categorical columns: party p holds `width / parties` statistics
/// (the first `width % parties` parties one more), cut into columns of at most
/// [`MAX_CATEGORIES`] and at least 2 categories.
pub fn synthetic_columns(parties: usize, width: usize) -> Result<Vec<Vec<usize>>, WorkloadError> {
    if !SYNTHETIC_PARTIES.contains(&parties) {
        return Err(WorkloadError::Parties { parties });
    }
    if width < 2 * parties {
        return Err(WorkloadError::Width {
            width,
            min: 2 * parties,
        });
    }
    Ok((0..parties)
        .map(|p| {
            let w = width / parties + usize::from(p < width % parties);
            let n_cols = w.div_ceil(MAX_CATEGORIES);
            // Even split: every column gets floor or ceil of w / n_cols >= 2.
            (0..n_cols)
                .map(|c| w / n_cols + usize::from(c < w % n_cols))
                .collect()
        })
        .collect())
}

/// A random public schema ([`synthetic_columns`]) and `rows` records from a random
/// 3-component mixture over it (category probabilities uniform on the simplex), seeded.
fn synthetic(
    parties: usize,
    width: usize,
    rows: usize,
    seed: u64,
) -> Result<(Schema, Table), WorkloadError> {
    check_rows(rows)?;
    let layout = synthetic_columns(parties, width)?;
    let mut columns = Vec::new();
    for (p, cols) in layout.iter().enumerate() {
        for (c, &m) in cols.iter().enumerate() {
            columns.push(ColumnSpec {
                name: format!("p{}_c{}", p + 1, c + 1),
                party: format!("party{}", p + 1),
                kind: ColumnKind::Categorical {
                    categories: (0..m).map(|i| format!("v{i}")).collect(),
                },
                missing: Missing::Error,
                strip_suffix: None,
            });
        }
    }
    let schema = Schema::new(None, CsvDialect::default(), None, columns)?;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    const TRUE_K: usize = 3;
    let mut simplex = |m: usize| -> Vec<f64> {
        // Uniform on the simplex: normalised exponentials.
        let e: Vec<f64> = (0..m).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
        let s: f64 = e.iter().sum();
        e.iter().map(|x| x / s).collect()
    };
    let params = MixtureParams {
        weights: simplex(TRUE_K),
        columns: layout
            .iter()
            .flatten()
            .map(|&m| ColumnParams::Categorical {
                probs: (0..TRUE_K).map(|_| simplex(m)).collect(),
            })
            .collect(),
    };
    let table = vtwin_data::synth::sample_table(&params, &schema, rows, &mut rng)?;
    Ok((schema, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_widths_sum_and_bound() {
        for p in 2..=8 {
            for w in [30, 75, 150, 151, 600] {
                let cols = synthetic_columns(p, w).unwrap();
                assert_eq!(cols.len(), p);
                assert_eq!(cols.iter().flatten().sum::<usize>(), w);
                assert!(cols
                    .iter()
                    .flatten()
                    .all(|&m| (2..=MAX_CATEGORIES).contains(&m)));
                let per: Vec<usize> = cols.iter().map(|c| c.iter().sum()).collect();
                assert!(per.iter().max().unwrap() - per.iter().min().unwrap() <= 1);
            }
        }
        assert!(matches!(
            synthetic_columns(1, 10),
            Err(WorkloadError::Parties { parties: 1 })
        ));
        assert!(matches!(
            synthetic_columns(4, 7),
            Err(WorkloadError::Width { width: 7, min: 8 })
        ));
    }

    #[test]
    fn synthetic_workload_is_seeded() {
        let kind = WorkloadKind::Synthetic {
            parties: 3,
            width: 60,
            rows: 50,
            seed: 7,
        };
        let a = Workload::load(&kind).unwrap();
        let b = Workload::load(&kind).unwrap();
        assert_eq!(a.table.n_rows(), 50);
        assert_eq!(a.schema.parties.len(), 3);
        assert_eq!(a.table, b.table);
        assert!(matches!(
            Workload::load(&WorkloadKind::Demo { rows: 1 }),
            Err(WorkloadError::TooFewRows { rows: 1 })
        ));
        let missing = Workload::load(&WorkloadKind::Adult {
            data_dir: "/nonexistent".into(),
        });
        assert!(matches!(missing, Err(WorkloadError::AdultMissing { .. })));
    }
}
