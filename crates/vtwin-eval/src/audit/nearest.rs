//! Euclidean nearest-neighbour distances between feature vectors, by exhaustive search.
//!
//! The feature space is [`crate::features`]: scaled continuous columns in [0, 1] and one-hot
//! categorical and binned columns, so two records that differ in one category are at
//! distance sqrt(2) on that column, and a continuous column contributes at most 1.
//!
//! Exhaustive search is exact; each candidate's partial sum stops as soon as it exceeds the
//! best distance so far. Cost O(queries * reference rows * dim) in the worst case.

use crate::features::FeatureMatrix;

/// For every row of `queries`, the Euclidean distance to its nearest row of `reference`,
/// skipping the reference row `skip(q)` for query `q` when it returns `Some` (a record's own
/// row, when queries are drawn from the reference). `+inf` when no reference row is left.
/// Panics if the two matrices have different numbers of columns.
pub fn nearest_distances(
    queries: &FeatureMatrix,
    reference: &FeatureMatrix,
    skip: impl Fn(usize) -> Option<usize>,
) -> Vec<f64> {
    assert_eq!(
        queries.cols, reference.cols,
        "queries and reference have different feature dimensions"
    );
    (0..queries.rows)
        .map(|q| {
            let x = queries.row(q);
            let own = skip(q);
            let mut best = f64::INFINITY;
            for (r, y) in reference.iter_rows().enumerate() {
                if Some(r) == own {
                    continue;
                }
                let mut d2 = 0.0;
                for (a, b) in x.iter().zip(y) {
                    let t = a - b;
                    d2 += t * t;
                    if d2 >= best {
                        break;
                    }
                }
                if d2 < best {
                    best = d2;
                }
            }
            best.sqrt()
        })
        .collect()
}
