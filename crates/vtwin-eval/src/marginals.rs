//! k-way marginal distances between a real and a synthetic table.
//!
//! For a set `S` of `k` columns, the k-way marginal of a table is the empirical distribution
//! of its records over the product of the columns' cells ([`crate::cells`]); the distance is
//! the total variation `TVD_S = 1/2 sum_cells |p_real(cell) - p_synth(cell)|`, in `[0, 1]`.
//! `tvd_kway` is the mean of `TVD_S` over every set of `k` columns, except for `k = 3` on
//! schemas with more than [`MAX_EXHAUSTIVE_TRIPLES`] triples: then the mean is over
//! [`MAX_EXHAUSTIVE_TRIPLES`] distinct triples drawn uniformly without replacement with a
//! ChaCha20 generator seeded by the caller (the report says which).

use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::cells::Cells;

/// Above this many column triples, `tvd_3way` averages over a seeded random sample of this
/// size (Adult's 15 columns have 455 triples, so Adult is exhaustive).
pub const MAX_EXHAUSTIVE_TRIPLES: usize = 1000;

/// The marginal distances and how they were computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarginalReport {
    /// Mean TVD over the 1-way marginals (every column).
    pub tvd_1way: f64,
    /// Mean TVD over the 2-way marginals (every pair of columns); `None` with one column.
    pub tvd_2way: Option<f64>,
    /// Mean TVD over the 3-way marginals (all triples, or the sample); `None` with fewer than
    /// 3 columns.
    pub tvd_3way: Option<f64>,
    /// Number of 3-way marginals averaged.
    pub n_3way: usize,
    /// Number of column triples in the schema.
    pub n_3way_total: usize,
    /// `"all"`, or `"random sample"` when the triples were sampled.
    pub three_way: &'static str,
    /// The sampling seed, when the triples were sampled.
    pub three_way_seed: Option<u64>,
}

/// TVD between the `cols` marginals of two tables given as per-column cells. Panics if a
/// column index is out of range or the two tables' cardinalities differ. Cost O(rows (k +
/// log rows)).
pub fn tvd(real: &[Cells], synth: &[Cells], cols: &[usize]) -> f64 {
    // Cell keys in mixed radix; u128 holds three cardinalities below 2^32 each.
    let key = |cells: &[Cells], r: usize| -> u128 {
        cols.iter().fold(0u128, |acc, &c| {
            acc * cells[c].cardinality as u128 + cells[c].index[r] as u128
        })
    };
    for &c in cols {
        assert_eq!(real[c].cardinality, synth[c].cardinality, "column {c}");
    }
    let (nr, ns) = (real[cols[0]].index.len(), synth[cols[0]].index.len());
    // Sorted keys, merged: deterministic summation order (a hash map's is not, and the
    // last bits of the mean would change from run to run).
    let mut kr: Vec<u128> = (0..nr).map(|r| key(real, r)).collect();
    let mut ks: Vec<u128> = (0..ns).map(|r| key(synth, r)).collect();
    kr.sort_unstable();
    ks.sort_unstable();
    let (fr, fs) = (1.0 / nr as f64, 1.0 / ns as f64);
    let run = |k: &[u128], i: usize| k[i..].iter().take_while(|&&x| x == k[i]).count();
    let (mut i, mut j, mut total) = (0, 0, 0.0);
    while i < kr.len() || j < ks.len() {
        let next = match (kr.get(i), ks.get(j)) {
            (Some(a), Some(b)) => *a.min(b),
            (Some(a), None) => *a,
            (None, Some(b)) => *b,
            (None, None) => unreachable!(),
        };
        let a = if kr.get(i) == Some(&next) {
            run(&kr, i)
        } else {
            0
        };
        let b = if ks.get(j) == Some(&next) {
            run(&ks, j)
        } else {
            0
        };
        total += (a as f64 * fr - b as f64 * fs).abs();
        i += a;
        j += b;
    }
    0.5 * total
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// Every set of 3 columns out of `m`, in lexicographic order.
fn triples(m: usize) -> Vec<[usize; 3]> {
    let mut out = Vec::new();
    for a in 0..m {
        for b in a + 1..m {
            for c in b + 1..m {
                out.push([a, b, c]);
            }
        }
    }
    out
}

/// The 1-, 2- and 3-way mean TVDs of the module documentation. `real` and `synth` are the
/// per-column cells of the two tables (same schema, at least one record each); `seed` is used
/// only when the triples are sampled. Cost O(rows * (m + m^2 + min(m^3/6, 1000)) * log).
pub fn marginal_distances(real: &[Cells], synth: &[Cells], seed: u64) -> MarginalReport {
    let m = real.len();
    let tvd_1way = mean((0..m).map(|a| tvd(real, synth, &[a]))).unwrap_or(0.0);
    let tvd_2way = mean(
        (0..m)
            .flat_map(|a| (a + 1..m).map(move |b| (a, b)))
            .map(|(a, b)| tvd(real, synth, &[a, b])),
    );
    let all = triples(m);
    let total = all.len();
    let (chosen, sampled): (Vec<[usize; 3]>, bool) = if total <= MAX_EXHAUSTIVE_TRIPLES {
        (all, false)
    } else {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut idx = sample(&mut rng, total, MAX_EXHAUSTIVE_TRIPLES).into_vec();
        idx.sort_unstable();
        (idx.into_iter().map(|i| all[i]).collect(), true)
    };
    let tvd_3way = mean(chosen.iter().map(|t| tvd(real, synth, t)));
    MarginalReport {
        tvd_1way,
        tvd_2way,
        tvd_3way,
        n_3way: chosen.len(),
        n_3way_total: total,
        three_way: if sampled { "random sample" } else { "all" },
        three_way_seed: sampled.then_some(seed),
    }
}
