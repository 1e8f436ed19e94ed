//! A party's sufficient statistics T_p(x_n): what each party computes from its own columns
//! and feeds, per batch, to a gradient backend (ARCHITECTURE step 2).
//!
//! Per column, in schema order within the party ([`crate::layout`]): a one-hot vector of
//! width C for a categorical or binned column; (ln u, ln(1-u)) for a Beta column, u being
//! the value scaled into [1e-6, 1 - 1e-6] by the public bounds ([`crate::codec`]), so every
//! statistic lies in [-13.82, 1]. T does not depend on theta, so it is computed once.

use crate::layout::{ColumnModel, Layout};
use crate::table::{Column, Table};

/// Errors building a party's statistics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// The table's columns do not match the layout (different schema).
    #[error("column {column}: the table's encoding does not match the model layout")]
    Mismatch {
        /// The column at fault.
        column: String,
    },
}

/// All of one party's records as sufficient statistics (N x |T_p|, row-major). Private to
/// the party: in the MPC deployment it never leaves the party except as shares.
#[derive(Clone, Debug, PartialEq)]
pub struct PartyData {
    /// Party index in the layout.
    pub party: usize,
    /// |T_p|.
    pub width: usize,
    /// N.
    pub rows: usize,
    stats: Vec<f64>,
}

/// One party's input to a gradient backend for one batch: the batch's rows of T_p
/// (B x |T_p|, row-major). This is all the party-side data a backend may use; theta and the
/// batch indices are public.
#[derive(Clone, Debug, PartialEq)]
pub struct PartyBatch {
    /// Party index in the layout.
    pub party: usize,
    /// |T_p|.
    pub width: usize,
    /// B.
    pub rows: usize,
    /// The statistics, B x |T_p|.
    pub stats: Vec<f64>,
}

impl PartyData {
    /// The statistics of every party, from a table whose schema produced `layout`.
    /// Cost O(N sum_p |T_p|).
    pub fn from_table(table: &Table, layout: &Layout) -> Result<Vec<PartyData>, StatsError> {
        let n = table.n_rows();
        let mut out: Vec<PartyData> = (0..layout.n_parties())
            .map(|p| PartyData {
                party: p,
                width: layout.stat_width(p),
                rows: n,
                stats: vec![0.0; n * layout.stat_width(p)],
            })
            .collect();
        if table.columns.len() != layout.columns.len() {
            return Err(StatsError::Mismatch {
                column: "(column count)".into(),
            });
        }
        for (slot, col) in layout.columns.iter().zip(&table.columns) {
            let pd = &mut out[slot.party];
            let w = pd.width;
            match (&slot.model, col) {
                (ColumnModel::Beta, Column::Unit(u)) => {
                    for (i, &x) in u.iter().enumerate() {
                        pd.stats[i * w + slot.stat_offset] = x.ln();
                        pd.stats[i * w + slot.stat_offset + 1] = (-x).ln_1p();
                    }
                }
                (ColumnModel::Categorical { cardinality }, Column::Index(idx)) => {
                    for (i, &c) in idx.iter().enumerate() {
                        if c as usize >= *cardinality {
                            return Err(StatsError::Mismatch {
                                column: slot.name.clone(),
                            });
                        }
                        pd.stats[i * w + slot.stat_offset + c as usize] = 1.0;
                    }
                }
                _ => {
                    return Err(StatsError::Mismatch {
                        column: slot.name.clone(),
                    })
                }
            }
        }
        Ok(out)
    }

    /// The rows `idx` (each < N) as a batch. Cost O(B |T_p|).
    pub fn batch(&self, idx: &[usize]) -> PartyBatch {
        let mut stats = Vec::with_capacity(idx.len() * self.width);
        for &i in idx {
            stats.extend_from_slice(&self.stats[i * self.width..(i + 1) * self.width]);
        }
        PartyBatch {
            party: self.party,
            width: self.width,
            rows: idx.len(),
            stats,
        }
    }

    /// All rows as one batch (for evaluation).
    pub fn all(&self) -> PartyBatch {
        PartyBatch {
            party: self.party,
            width: self.width,
            rows: self.rows,
            stats: self.stats.clone(),
        }
    }
}
