//! ROC analysis of a membership score: AUC with ties, the ROC curve, and TPR at a fixed FPR.
//!
//! Convention everywhere in the audit: a higher score means "more likely a member". The
//! classifier at threshold `t` says "member" iff `score >= t`.
//!
//! - AUC is the Mann-Whitney statistic with mid-ranks: `P(S_in > S_out) + P(S_in = S_out) / 2`
//!   over independent draws of a member score `S_in` and a non-member score `S_out`, i.e. the
//!   area under the ROC curve whose tied scores are joined by straight (diagonal) segments.
//! - The ROC curve has one point per distinct score (from the highest down), plus `(0, 0)`.
//! - TPR at FPR `f` interpolates linearly between the two curve points around `f`. Every
//!   point on that segment is achieved by a randomised classifier (use the higher threshold
//!   with probability `lambda`, the lower one otherwise), so the interpolated value is an
//!   operating point that really exists, not an optimistic envelope. When points lie exactly
//!   at `f`, the highest TPR among them is taken.

/// A score vector cannot be analysed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScoreError {
    /// One class has no scores.
    #[error("no {class} scores")]
    Empty {
        /// `member` or `non-member`.
        class: &'static str,
    },
    /// A score is NaN (infinite scores are allowed and ordered).
    #[error("{class} score {index} is NaN")]
    NaN {
        /// `member` or `non-member`.
        class: &'static str,
        /// Its index.
        index: usize,
    },
}

/// Checks that both classes are non-empty and NaN-free.
pub fn check_scores(members: &[f64], non_members: &[f64]) -> Result<(), ScoreError> {
    for (class, v) in [("member", members), ("non-member", non_members)] {
        if v.is_empty() {
            return Err(ScoreError::Empty { class });
        }
        if let Some(index) = v.iter().position(|x| x.is_nan()) {
            return Err(ScoreError::NaN { class, index });
        }
    }
    Ok(())
}

/// AUC by mid-ranks (module documentation): exactly `(#{in > out} + #{in = out} / 2) /
/// (n_in n_out)` over all pairs. Cost O(n log n) for n scores in all.
pub fn auc(members: &[f64], non_members: &[f64]) -> Result<f64, ScoreError> {
    check_scores(members, non_members)?;
    // (score, is_member), sorted ascending; ties get the mean of their 1-based ranks.
    let mut all: Vec<(f64, bool)> = members
        .iter()
        .map(|&s| (s, true))
        .chain(non_members.iter().map(|&s| (s, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum_members = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j share the mid-rank (i + 1 + j) / 2.
        let mid = (i + 1 + j) as f64 / 2.0;
        let in_tie = all[i..j].iter().filter(|e| e.1).count();
        rank_sum_members += mid * in_tie as f64;
        i = j;
    }
    let (n1, n0) = (members.len() as f64, non_members.len() as f64);
    let u = rank_sum_members - n1 * (n1 + 1.0) / 2.0;
    Ok(u / (n1 * n0))
}

/// One operating point of the classifier "member iff score >= threshold".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RocPoint {
    /// The threshold (`+inf` for the starting point `(0, 0)`).
    pub threshold: f64,
    /// Fraction of non-members with score >= threshold.
    pub fpr: f64,
    /// Fraction of members with score >= threshold.
    pub tpr: f64,
}

/// `(t, tp, fp)`: the counts of members and non-members with score >= t for every distinct
/// score t (descending), after the empty test at `+inf` (0, 0). Ties share one point.
/// Cost O(n log n).
pub fn operating_points(members: &[f64], non_members: &[f64]) -> Vec<(f64, usize, usize)> {
    let mut all: Vec<(f64, bool)> = members
        .iter()
        .map(|&s| (s, true))
        .chain(non_members.iter().map(|&s| (s, false)))
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = vec![(f64::INFINITY, 0, 0)];
    let (mut tp, mut fp, mut i) = (0, 0, 0);
    while i < all.len() {
        let t = all[i].0;
        while i < all.len() && all[i].0 == t {
            if all[i].1 {
                tp += 1;
            } else {
                fp += 1;
            }
            i += 1;
        }
        out.push((t, tp, fp));
    }
    out
}

/// The ROC curve: `(0, 0)` then one point per distinct score from the highest down, ending at
/// `(1, 1)`. FPR and TPR are non-decreasing along it. Cost O(n log n).
pub fn roc_curve(members: &[f64], non_members: &[f64]) -> Result<Vec<RocPoint>, ScoreError> {
    check_scores(members, non_members)?;
    let (n1, n0) = (members.len() as f64, non_members.len() as f64);
    Ok(operating_points(members, non_members)
        .into_iter()
        .map(|(threshold, tp, fp)| RocPoint {
            threshold,
            fpr: fp as f64 / n0,
            tpr: tp as f64 / n1,
        })
        .collect())
}

/// TPR of the ROC `curve` at false-positive rate `fpr` in [0, 1], by linear interpolation
/// between the last point with FPR <= `fpr` and the next one (module documentation).
/// `curve` must come from [`roc_curve`]. Cost O(curve length).
pub fn tpr_at_fpr(curve: &[RocPoint], fpr: f64) -> f64 {
    assert!((0.0..=1.0).contains(&fpr), "fpr {fpr} not in [0, 1]");
    // The last point with FPR <= fpr: it has the highest TPR among those points.
    let i = curve
        .iter()
        .rposition(|p| p.fpr <= fpr)
        .expect("the curve starts at (0, 0)");
    let a = curve[i];
    if a.fpr == fpr || i + 1 == curve.len() {
        return a.tpr;
    }
    let b = curve[i + 1];
    a.tpr + (b.tpr - a.tpr) * (fpr - a.fpr) / (b.fpr - a.fpr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_without_ties_counts_ordered_pairs() {
        // Pairs (in, out): 3>1, 3>2, 4>1, 4>2, 0<1, 0<2 -> 4 of 6.
        assert_eq!(auc(&[3.0, 4.0, 0.0], &[1.0, 2.0]).unwrap(), 4.0 / 6.0);
        assert_eq!(auc(&[5.0], &[1.0, 2.0]).unwrap(), 1.0);
        assert_eq!(auc(&[0.0], &[1.0, 2.0]).unwrap(), 0.0);
    }

    #[test]
    fn empty_or_nan_is_refused() {
        assert_eq!(auc(&[], &[1.0]), Err(ScoreError::Empty { class: "member" }));
        assert_eq!(
            roc_curve(&[1.0], &[0.0, f64::NAN]),
            Err(ScoreError::NaN {
                class: "non-member",
                index: 1
            })
        );
    }
}
