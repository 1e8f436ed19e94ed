//! Canary records for the mechanism audit: records an auditor adds to the training data to
//! test the clip where the fixed-point arithmetic is at its worst (docs/audit.md).
//!
//! Each canary is a record of the schema, built from the public bounds and from the training
//! data (which a differential-privacy adversary is allowed to know):
//! - [`CanaryKind::Outlier`]: every continuous value at its lower public bound (encoded
//!   `UNIT_EPS`, so its Beta statistic `ln u` is -13.8, next to the public range of 14) and
//!   every categorical or binned value at its rarest level in the data. Its gradient is far
//!   above any clip.
//! - [`CanaryKind::Edge`]: every continuous value at the public bound farther from the data's
//!   median, every categorical at its most common level: a record that every component
//!   explains badly, so its responsibilities are set by the tails of the likelihood and the
//!   components with tiny responsibility carry the largest score norms.
//! - [`CanaryKind::Dirac`]: a typical record (medians and most common levels) except one
//!   continuous value at its lower bound: its clipped gradient concentrates on that column's
//!   coordinates (its largest coordinate holds about half of |h|^2 at K = 20).
//!
//! An integer column modelled by its cells (`model = "cells"`) gets the same encoded values as
//! any continuous column: `UNIT_EPS` and `1 - UNIT_EPS` fall in its first and last cells (its
//! lowest and highest integers), and the upper median in its median cell. Its statistics are
//! 0/1 like a categorical's, so such a column adds no near-range statistic to a canary; a
//! schema without Beta columns tests the clip at categorical statistics only.
//!
//! The black-box canary attack ([`super::inserted_canaries`]) draws many distinct outliers
//! instead ([`random_outliers`]): every continuous value at one of its two public bounds,
//! every categorical or binned value at a uniformly random level.

use std::collections::BTreeSet;

use rand::Rng;
use vtwin_data::codec::{Encoded, UNIT_EPS};
use vtwin_data::{Column, Schema, Table};

/// Which canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CanaryKind {
    /// Every value extreme (module docs).
    Outlier,
    /// Far from every component (module docs).
    Edge,
    /// One extreme value in a typical record (module docs).
    Dirac,
}

impl CanaryKind {
    /// Every kind, in report order.
    pub const ALL: [CanaryKind; 3] = [CanaryKind::Outlier, CanaryKind::Edge, CanaryKind::Dirac];

    /// The report name.
    pub fn name(self) -> &'static str {
        match self {
            CanaryKind::Outlier => "outlier",
            CanaryKind::Edge => "edge",
            CanaryKind::Dirac => "dirac",
        }
    }
}

/// Level counts of an index column (length = cardinality).
fn level_counts(values: &[u32], cardinality: usize) -> Vec<usize> {
    let mut counts = vec![0usize; cardinality];
    for &v in values {
        counts[v as usize] += 1;
    }
    counts
}

/// The level with the smallest (`rarest`) or largest count; ties go to the lowest index.
fn level_by_count(counts: &[usize], rarest: bool) -> u32 {
    let pick = counts.iter().enumerate().min_by_key(|(i, &c)| {
        let key = if rarest { c } else { usize::MAX - c };
        (key, *i)
    });
    pick.map_or(0, |(i, _)| i as u32)
}

/// The upper median `v[n / 2]` of unit values (0.5 for none): an observed value, unlike the
/// midpoint average of statrs' `median` for even `n`, which would move the canaries.
fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.5;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The canary of `kind` for `table`'s schema and data: one encoded value per column.
/// Cost O(N) per column.
pub fn canary(kind: CanaryKind, table: &Table) -> Vec<Encoded> {
    let first_continuous = table
        .schema
        .columns
        .iter()
        .position(|c| c.kind.is_continuous());
    table
        .columns
        .iter()
        .zip(&table.schema.columns)
        .enumerate()
        .map(|(j, (column, spec))| match column {
            Column::Unit(u) => {
                let low = Encoded::Unit(UNIT_EPS);
                match kind {
                    CanaryKind::Outlier => low,
                    CanaryKind::Edge if median(u) >= 0.5 => low,
                    CanaryKind::Edge => Encoded::Unit(1.0 - UNIT_EPS),
                    CanaryKind::Dirac if Some(j) == first_continuous => low,
                    CanaryKind::Dirac => Encoded::Unit(median(u)),
                }
            }
            Column::Index(v) => {
                let counts = level_counts(v, spec.kind.cardinality().unwrap_or(1));
                Encoded::Index(level_by_count(&counts, kind == CanaryKind::Outlier))
            }
        })
        .collect()
}

/// Up to `count` distinct random outliers of `schema` (module docs); fewer only when the
/// schema has fewer such records (after 100 `count` draws). Cost O(count columns).
pub fn random_outliers<R: Rng + ?Sized>(
    schema: &Schema,
    count: usize,
    rng: &mut R,
) -> Vec<Vec<Encoded>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(count);
    for _ in 0..count.saturating_mul(100) {
        if out.len() == count {
            break;
        }
        let record: Vec<Encoded> = schema
            .columns
            .iter()
            .map(|c| match c.kind.cardinality() {
                None if rng.random_bool(0.5) => Encoded::Unit(UNIT_EPS),
                None => Encoded::Unit(1.0 - UNIT_EPS),
                Some(levels) => Encoded::Index(rng.random_range(0..levels as u32)),
            })
            .collect();
        let key: Vec<u64> = record
            .iter()
            .map(|v| match v {
                Encoded::Unit(u) => u.to_bits(),
                Encoded::Index(i) => u64::from(*i),
            })
            .collect();
        if seen.insert(key) {
            out.push(record);
        }
    }
    out
}

/// `table` with `canaries` appended as its last rows (ids "canary-1", ...), in order.
/// Cost O((N + k) columns).
pub fn with_canaries(table: &Table, canaries: &[Vec<Encoded>]) -> Table {
    let mut out = table.clone();
    for (i, record) in canaries.iter().enumerate() {
        out.ids.push(format!("canary-{}", i + 1));
        for (column, value) in out.columns.iter_mut().zip(record) {
            match (column, *value) {
                (Column::Unit(v), Encoded::Unit(u)) => v.push(u),
                (Column::Index(v), Encoded::Index(i)) => v.push(i),
                // canary() builds each value from its own column's variant.
                _ => unreachable!("a canary value of the wrong kind"),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canaries_are_valid_records_at_the_edges() {
        let table = vtwin_data::demo::demo_table(400, 1);
        let records: Vec<_> = CanaryKind::ALL.iter().map(|&k| canary(k, &table)).collect();
        let all = with_canaries(&table, &records);
        all.check().expect("canaries keep the table's invariants");
        assert_eq!(all.n_rows(), 403);
        // The outlier's continuous values sit at the public lower bound.
        assert!(records[0]
            .iter()
            .all(|v| !matches!(v, Encoded::Unit(u) if *u != UNIT_EPS)));
        // The Dirac canary differs from a typical record in one continuous column only.
        let extreme = records[2]
            .iter()
            .filter(|v| matches!(v, Encoded::Unit(u) if *u == UNIT_EPS))
            .count();
        assert_eq!(extreme, 1);
    }
}
