//! A party's sufficient statistics T_p(x_n): what each party computes from its own columns
//! and feeds, per batch, to a gradient backend (`docs/architecture.md` step 2).
//!
//! Per column, in schema order within the party ([`crate::layout`]): a one-hot vector of
//! width C for a categorical or binned column; (ln u, ln(1-u)) for a Beta column, u being
//! the value scaled into [1e-6, 1 - 1e-6] by the public bounds ([`vtwin_data::codec`]), so every
//! statistic lies in [-13.82, 1]. T does not depend on theta, so it is computed once.
//!
//! A party process holds only its own columns: [`PartyData::from_party_csv`] (its own file,
//! rows sorted by id) or [`PartyData::from_demo`] (its slice of the demo table), with the ids,
//! whose [`ids_digest`] the coordinator compares across parties before training.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::layout::{ColumnModel, Layout};
use vtwin_data::codec::unit_cell;
use vtwin_data::csv_table::read_party_alone;
use vtwin_data::schema::Schema;
use vtwin_data::table::{Column, DataError, Table};

/// The index of party `party` in `layout`.
fn party_index(layout: &Layout, party: &str) -> Result<usize, PartyDataError> {
    layout
        .parties
        .iter()
        .position(|q| q == party)
        .ok_or_else(|| PartyDataError::UnknownParty {
            party: party.to_owned(),
            known: layout.parties.join(", "),
        })
}

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
/// (B x |T_p|, row-major), the real records first, then padding rows. This is all the
/// party-side data a backend may use; theta is public, the batch indices are known to the
/// parties and the coordinator only.
#[derive(Clone, Debug, PartialEq)]
pub struct PartyBatch {
    /// Party index in the layout.
    pub party: usize,
    /// |T_p|.
    pub width: usize,
    /// B: the public (padded) batch size.
    pub rows: usize,
    /// B_t <= B: the real records, rows `0..real`; rows `real..rows` are padding with zero
    /// statistics. They contribute exactly nothing (party 0 shares a zero likelihood factor
    /// and a 0 flag for them, `protocols/mpc-gradient.md`), so that the compute nodes never
    /// learn B_t.
    pub real: usize,
    /// The statistics, B x |T_p|.
    pub stats: Vec<f64>,
}

impl PartyBatch {
    /// The flags that keep padding rows' clip factors out of the circuit's sum_n c_n: raw
    /// integers 1 for the real rows, 0 for the padding (not fixed-point 1.0: the product
    /// needs no truncation).
    pub fn flags(&self) -> Vec<vtwin_fixed::Fx> {
        (0..self.rows)
            .map(|n| vtwin_fixed::Fx::from_raw(u128::from(n < self.real)))
            .collect()
    }
}

/// A batch larger than its public padded size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a batch of {got} records does not fit the public batch size {padded}")]
pub struct BatchOverflow {
    /// The records asked for.
    pub got: usize,
    /// The public size.
    pub padded: usize,
}

/// Writes one column's statistics into a party's matrix (rows x width, row-major).
fn fill_column(
    stats: &mut [f64],
    width: usize,
    slot: &crate::layout::ColumnSlot,
    col: &Column,
) -> Result<(), StatsError> {
    match (&slot.model, col) {
        (ColumnModel::Beta, Column::Unit(u)) => {
            for (i, &x) in u.iter().enumerate() {
                stats[i * width + slot.stat_offset] = x.ln();
                stats[i * width + slot.stat_offset + 1] = (-x).ln_1p();
            }
        }
        (ColumnModel::Cells { cells }, Column::Unit(u)) => {
            for (i, &x) in u.iter().enumerate() {
                stats[i * width + slot.stat_offset + unit_cell(x, *cells)] = 1.0;
            }
        }
        (ColumnModel::Categorical { cardinality }, Column::Index(idx)) => {
            for (i, &c) in idx.iter().enumerate() {
                if c as usize >= *cardinality {
                    return Err(StatsError::Mismatch {
                        column: slot.name.clone(),
                    });
                }
                stats[i * width + slot.stat_offset + c as usize] = 1.0;
            }
        }
        _ => {
            return Err(StatsError::Mismatch {
                column: slot.name.clone(),
            })
        }
    }
    Ok(())
}

/// Why one party could not load its own data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PartyDataError {
    /// Reading the party's file failed (names the file, row and column).
    #[error(transparent)]
    Data(#[from] DataError),
    /// The file's columns do not match the layout.
    #[error("{}: {source}", file.display())]
    Stats {
        /// The file.
        file: PathBuf,
        /// The mismatch (names the column).
        source: StatsError,
    },
    /// The party is not in the layout.
    #[error("party \"{party}\" is not in the model layout (its parties: {known})")]
    UnknownParty {
        /// The party asked for.
        party: String,
        /// The layout's parties.
        known: String,
    },
    /// The layout does not come from this schema.
    #[error("{}: party \"{party}\": the schema's columns do not match the model layout", file.display())]
    Layout {
        /// The file.
        file: PathBuf,
        /// The party.
        party: String,
    },
}

/// One party's own data as a party process holds it: its statistics and the record ids, in
/// the row order shared by every party (the batch indices of the coordinator's plans refer
/// to it).
#[derive(Clone, Debug, PartialEq)]
pub struct OwnPartyData {
    /// The statistics (N x |T_p|).
    pub data: PartyData,
    /// The record ids, row order.
    pub ids: Vec<String>,
}

impl OwnPartyData {
    /// [`ids_digest`] of the ids: what the party reports to the coordinator, which refuses to
    /// train unless every party reports the same digest (same ids, same order).
    pub fn ids_digest(&self) -> [u8; 32] {
        ids_digest(&self.ids)
    }

    /// The records at `rows` (positions in this party's order), in that order: the party's
    /// data after a record alignment. Panics if a position is out of range. Cost
    /// O(len(rows) x |T_p|).
    pub fn select(&self, rows: &[usize]) -> OwnPartyData {
        OwnPartyData {
            data: self.data.select(rows),
            ids: rows.iter().map(|&r| self.ids[r].clone()).collect(),
        }
    }
}

/// SHA-256 of an id list: `"vtwin/v1 ids" || 0x00 || N` then, per id, its byte length and
/// bytes (lengths as 8-byte little-endian, so the encoding is injective). Equal digests mean
/// equal lists in equal order (up to SHA-256 collisions). Cost O(total id bytes).
pub fn ids_digest(ids: &[String]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"vtwin/v1 ids\x00");
    h.update((ids.len() as u64).to_le_bytes());
    for id in ids {
        h.update((id.len() as u64).to_le_bytes());
        h.update(id.as_bytes());
    }
    h.finalize().into()
}

impl PartyData {
    /// The records at `rows`, in that order. Panics if a position is out of range. Cost
    /// O(len(rows) x |T_p|).
    pub fn select(&self, rows: &[usize]) -> PartyData {
        let w = self.width;
        let mut stats = Vec::with_capacity(rows.len() * w);
        for &r in rows {
            stats.extend_from_slice(&self.stats[r * w..(r + 1) * w]);
        }
        PartyData {
            party: self.party,
            width: w,
            rows: rows.len(),
            stats,
        }
    }

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
            fill_column(&mut pd.stats, pd.width, slot, col)?;
        }
        Ok(out)
    }

    /// Party `party`'s data from its own CSV file alone ([`vtwin_data::csv_table::read_party_alone`]:
    /// the id column and the party's columns, rows sorted by id), with the ids. Errors name the
    /// file, and the row and column where one applies. Cost O(file size + N log N + N |T_p|).
    pub fn from_party_csv(
        schema: &Schema,
        layout: &Layout,
        party: &str,
        path: &Path,
    ) -> Result<OwnPartyData, PartyDataError> {
        let p = party_index(layout, party)?;
        let cols = read_party_alone(schema, party, path)?;
        let slots: Vec<_> = layout.columns.iter().filter(|s| s.party == p).collect();
        let names_match = slots.len() == cols.schema_columns.len()
            && slots
                .iter()
                .zip(&cols.schema_columns)
                .all(|(s, &c)| s.name == schema.columns[c].name);
        if !names_match {
            return Err(PartyDataError::Layout {
                file: path.to_owned(),
                party: party.to_owned(),
            });
        }
        let (n, width) = (cols.ids.len(), layout.stat_width(p));
        let mut stats = vec![0.0; n * width];
        for (slot, col) in slots.iter().zip(&cols.columns) {
            fill_column(&mut stats, width, slot, col).map_err(|source| PartyDataError::Stats {
                file: path.to_owned(),
                source,
            })?;
        }
        Ok(OwnPartyData {
            data: PartyData {
                party: p,
                width,
                rows: n,
                stats,
            },
            ids: cols.ids,
        })
    }

    /// Party `party`'s slice of the built-in demo table [`vtwin_data::demo::demo_table`]`(rows,
    /// seed)`, in the table's order (ids "1" to `rows`), exactly the rows and statistics
    /// `vtwin train --demo` gives that party. `layout` must come from
    /// [`vtwin_data::demo::demo_schema`]. Cost O(rows x 7).
    pub fn from_demo(
        layout: &Layout,
        party: &str,
        rows: usize,
        seed: u64,
    ) -> Result<OwnPartyData, PartyDataError> {
        let p = party_index(layout, party)?;
        let table = vtwin_data::demo::demo_table(rows, seed);
        let data = PartyData::from_table(&table, layout)
            .map_err(|source| PartyDataError::Stats {
                file: PathBuf::from("(built-in demo data)"),
                source,
            })?
            .swap_remove(p);
        Ok(OwnPartyData {
            data,
            ids: table.ids,
        })
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
            real: idx.len(),
            stats,
        }
    }

    /// The records `idx` followed by `padded - idx.len()` padding rows (zero statistics):
    /// a batch of the public size `padded` whose real size only the flags carry. Errors
    /// when `idx` has more than `padded` records (the caller trims an overflowing batch
    /// first). Cost O(padded |T_p|).
    pub fn padded_batch(&self, idx: &[usize], padded: usize) -> Result<PartyBatch, BatchOverflow> {
        if idx.len() > padded {
            return Err(BatchOverflow {
                got: idx.len(),
                padded,
            });
        }
        let mut batch = self.batch(idx);
        batch.stats.resize(padded * self.width, 0.0);
        batch.rows = padded;
        Ok(batch)
    }

    /// All rows as one batch (for evaluation).
    pub fn all(&self) -> PartyBatch {
        PartyBatch {
            party: self.party,
            width: self.width,
            rows: self.rows,
            real: self.rows,
            stats: self.stats.clone(),
        }
    }
}
