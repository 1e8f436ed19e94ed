//! Pairwise association of columns, and its difference between a real and a synthetic table.
//!
//! Column types: a continuous column is *numeric* (its value in original units; every
//! statistic below is invariant to the affine scaling); categorical and binned columns are
//! *categorical* (their category or bin index). Per pair:
//! - numeric-numeric: Pearson's `r = cov(x, y) / (sd(x) sd(y))`, in `[-1, 1]`;
//! - categorical-categorical: Cramér's `V = sqrt(chi2 / (n (min(r, c) - 1)))` of the contingency
//!   table, with `r`, `c` the numbers of observed (non-empty) rows and columns; in `[0, 1]`;
//!   no bias correction;
//! - categorical-numeric: the correlation ratio
//!   `eta = sqrt(sum_k n_k (mean_k - mean)^2 / sum_i (y_i - mean)^2)`, in `[0, 1]`.
//!
//! A degenerate pair (a constant column, or fewer than 2 observed levels) has association 0:
//! the statistic is undefined, and 0 ("no detectable association") keeps the mean
//! differences finite. The report's differences are means of `|a_real - a_synth|` over pairs
//! whose two columns belong to one party (`within`) or to two parties (`across`).

use std::collections::BTreeMap;

use serde::Serialize;
use vtwin_data::codec::value_from_unit;
use vtwin_data::{Column, ColumnKind, Table};

/// Pearson's correlation of two equally long samples; 0 if either is constant or they are
/// shorter than 2. Two-pass (centred) sums for accuracy. Cost O(n).
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "pearson: samples of different lengths");
    let n = x.len() as f64;
    if x.len() < 2 {
        return 0.0;
    }
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (da, db) = (a - mx, b - my);
        sxy += da * db;
        sxx += da * da;
        syy += db * db;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return 0.0;
    }
    (sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0)
}

/// Cramér's V of two categorical samples (indices below `ka` and `kb`), as in the module
/// documentation; 0 when fewer than 2 levels of either are observed. Cost O(n + ka kb).
pub fn cramers_v(a: &[u32], ka: usize, b: &[u32], kb: usize) -> f64 {
    assert_eq!(a.len(), b.len(), "cramers_v: samples of different lengths");
    let n = a.len() as f64;
    let mut table = vec![0u64; ka * kb];
    let (mut ra, mut rb) = (vec![0u64; ka], vec![0u64; kb]);
    for (&i, &j) in a.iter().zip(b) {
        table[i as usize * kb + j as usize] += 1;
        ra[i as usize] += 1;
        rb[j as usize] += 1;
    }
    let r = ra.iter().filter(|&&c| c > 0).count();
    let c = rb.iter().filter(|&&c| c > 0).count();
    if r < 2 || c < 2 {
        return 0.0;
    }
    let mut chi2 = 0.0;
    for (i, &ni) in ra.iter().enumerate().filter(|(_, &c)| c > 0) {
        for (j, &nj) in rb.iter().enumerate().filter(|(_, &c)| c > 0) {
            let e = ni as f64 * nj as f64 / n;
            let d = table[i * kb + j] as f64 - e;
            chi2 += d * d / e;
        }
    }
    (chi2 / (n * (r.min(c) - 1) as f64)).sqrt().min(1.0)
}

/// The correlation ratio eta of numeric `y` given categorical `cat` (indices below `k`), as
/// in the module documentation; 0 if `y` is constant. Cost O(n + k).
pub fn correlation_ratio(cat: &[u32], k: usize, y: &[f64]) -> f64 {
    assert_eq!(
        cat.len(),
        y.len(),
        "correlation_ratio: samples of different lengths"
    );
    let n = y.len() as f64;
    if y.is_empty() {
        return 0.0;
    }
    let mean = y.iter().sum::<f64>() / n;
    let (mut sum, mut cnt) = (vec![0.0; k], vec![0u64; k]);
    for (&c, &v) in cat.iter().zip(y) {
        sum[c as usize] += v;
        cnt[c as usize] += 1;
    }
    let total: f64 = y.iter().map(|v| (v - mean) * (v - mean)).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let between: f64 = sum
        .iter()
        .zip(&cnt)
        .filter(|(_, &c)| c > 0)
        .map(|(s, &c)| {
            let d = s / c as f64 - mean;
            c as f64 * d * d
        })
        .sum();
    (between / total).sqrt().min(1.0)
}

/// One column's values for the association statistics.
enum Values {
    Numeric(Vec<f64>),
    Categorical(Vec<u32>, usize),
}

fn column_values(table: &Table, c: usize) -> Values {
    match (&table.columns[c], &table.schema.columns[c].kind) {
        (
            Column::Unit(v),
            ColumnKind::Continuous {
                min, max, integer, ..
            },
        ) => Values::Numeric(
            v.iter()
                .map(|&u| value_from_unit(*min, *max, *integer, u))
                .collect(),
        ),
        (Column::Index(v), kind) => Values::Categorical(
            v.clone(),
            kind.cardinality()
                .expect("an index column has a cardinality"),
        ),
        (_, kind) => panic!("column {c}: values do not fit kind {kind:?}"),
    }
}

fn association(a: &Values, b: &Values) -> (f64, &'static str) {
    match (a, b) {
        (Values::Numeric(x), Values::Numeric(y)) => (pearson(x, y), "pearson"),
        (Values::Categorical(x, kx), Values::Categorical(y, ky)) => {
            (cramers_v(x, *kx, y, *ky), "cramers_v")
        }
        (Values::Categorical(c, k), Values::Numeric(y))
        | (Values::Numeric(y), Values::Categorical(c, k)) => {
            (correlation_ratio(c, *k, y), "correlation_ratio")
        }
    }
}

/// The association of every pair of columns `(a, b)`, `a < b`, in lexicographic order, with
/// the statistic's name. Cost O(m^2 rows).
pub fn association_pairs(table: &Table) -> Vec<((usize, usize), f64, &'static str)> {
    let vals: Vec<Values> = (0..table.columns.len())
        .map(|c| column_values(table, c))
        .collect();
    let m = vals.len();
    let mut out = Vec::with_capacity(m * m.saturating_sub(1) / 2);
    for a in 0..m {
        for b in a + 1..m {
            let (v, name) = association(&vals[a], &vals[b]);
            out.push(((a, b), v, name));
        }
    }
    out
}

/// Mean absolute association differences (module documentation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssociationReport {
    /// Mean over pairs inside one party; `None` if no party holds 2 columns.
    pub corr_diff_within: Option<f64>,
    /// Mean over pairs across parties.
    pub corr_diff_across: Option<f64>,
    /// Number of within-party pairs.
    pub n_within: usize,
    /// Number of cross-party pairs.
    pub n_across: usize,
    /// Mean within each party, by party name (parties with at least 2 columns).
    pub within_by_party: BTreeMap<String, f64>,
    /// The largest difference and its pair, `"a|b"`.
    pub max_diff: Option<(String, f64)>,
}

/// Compares the pairwise associations of two tables of the same schema. Cost O(m^2 rows).
pub fn association_difference(real: &Table, synth: &Table) -> AssociationReport {
    let schema = &real.schema;
    let (ar, asy) = (association_pairs(real), association_pairs(synth));
    let (mut within, mut across) = (Vec::new(), Vec::new());
    let mut by_party: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut max_diff: Option<(String, f64)> = None;
    for (((a, b), vr, _), (_, vs, _)) in ar.iter().zip(&asy) {
        let d = (vr - vs).abs();
        let (pa, pb) = (&schema.columns[*a].party, &schema.columns[*b].party);
        if pa == pb {
            within.push(d);
            by_party.entry(pa.clone()).or_default().push(d);
        } else {
            across.push(d);
        }
        if max_diff.as_ref().is_none_or(|(_, m)| d > *m) {
            let name = format!("{}|{}", schema.columns[*a].name, schema.columns[*b].name);
            max_diff = Some((name, d));
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    AssociationReport {
        corr_diff_within: mean(&within),
        corr_diff_across: mean(&across),
        n_within: within.len(),
        n_across: across.len(),
        within_by_party: by_party
            .into_iter()
            .map(|(p, v)| (p, v.iter().sum::<f64>() / v.len() as f64))
            .collect(),
        max_diff,
    }
}
