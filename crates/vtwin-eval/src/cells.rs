//! Discretisation of every column into a finite set of cells, from the public schema only:
//! categorical and binned columns keep their category or bin index; a continuous column with
//! public bounds `[min, max]` is cut into [`CONTINUOUS_BINS`] equal-width bins of `[min, max]`
//! (the value `x` in original units goes to bin `min(floor(B (x - min) / (max - min)), B - 1)`).
//! The marginal distances and Cramér's V of binned numeric columns use these cells.

use vtwin_data::codec::value_from_unit;
use vtwin_data::{Column, ColumnKind, Table};

/// Number of equal-width bins of a continuous column's public range `[min, max]`. 20 bins of
/// 5% each is the usual choice of the synthetic-data literature for k-way marginals; an
/// integer column with fewer than 20 values has at most that many non-empty bins.
pub const CONTINUOUS_BINS: usize = 20;

/// One column's cells: an index per record, below `cardinality`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cells {
    /// Number of possible cells.
    pub cardinality: usize,
    /// Cell index of every record.
    pub index: Vec<u32>,
}

/// The cells of schema column `c` of `table` (module documentation). Panics if `c` is out of
/// range or the table breaks its schema's invariants (tables read by vtwin-model never do).
/// Cost O(rows).
pub fn column_cells(table: &Table, c: usize) -> Cells {
    let kind = &table.schema.columns[c].kind;
    match (&table.columns[c], kind) {
        (
            Column::Unit(v),
            ColumnKind::Continuous {
                min, max, integer, ..
            },
        ) => {
            let b = CONTINUOUS_BINS;
            let index = v
                .iter()
                .map(|&u| {
                    let x = value_from_unit(*min, *max, *integer, u);
                    let t = ((x - min) / (max - min)).clamp(0.0, 1.0);
                    ((t * b as f64) as usize).min(b - 1) as u32
                })
                .collect();
            Cells {
                cardinality: b,
                index,
            }
        }
        (Column::Index(v), kind) => Cells {
            cardinality: kind
                .cardinality()
                .expect("an index column has a cardinality"),
            index: v.clone(),
        },
        (_, kind) => panic!("column {c}: values do not fit kind {kind:?}"),
    }
}

/// The cells of every column, in schema order.
pub fn table_cells(table: &Table) -> Vec<Cells> {
    (0..table.columns.len())
        .map(|c| column_cells(table, c))
        .collect()
}
