//! Scores of a binary classifier on labelled records: AUC, accuracy, F1.

use serde::Serialize;

/// The area under the ROC curve of `scores` (higher = more likely positive) for `labels`,
/// by ranks: `AUC = (R+ - n+ (n+ + 1) / 2) / (n+ n-)` with `R+` the sum of the positives'
/// ranks among all scores, tied scores sharing their mean rank (the Mann-Whitney U statistic;
/// a tie between a positive and a negative counts 1/2). `None` if one class is absent or a
/// score is NaN. Cost O(n log n).
pub fn auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    assert_eq!(
        scores.len(),
        labels.len(),
        "auc: scores and labels differ in length"
    );
    if scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let n_pos = labels.iter().filter(|&&l| l).count();
    let n_neg = labels.len() - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return None;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 (1-based) share their mean.
        let mean_rank = (i + j + 2) as f64 / 2.0;
        let pos = order[i..=j].iter().filter(|&&k| labels[k]).count();
        rank_sum_pos += mean_rank * pos as f64;
        i = j + 1;
    }
    let (p, n) = (n_pos as f64, n_neg as f64);
    Some((rank_sum_pos - p * (p + 1.0) / 2.0) / (p * n))
}

/// Accuracy, F1 and AUC of probability scores thresholded at 1/2 (predict positive iff
/// `score >= 0.5`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BinaryScores {
    /// Area under the ROC curve ([`auc`]); `None` if the test set has one class only.
    pub auc: Option<f64>,
    /// Fraction of correct predictions.
    pub accuracy: f64,
    /// `2 TP / (2 TP + FP + FN)` of the positive class; 0 when there is no positive at all
    /// (neither predicted nor true).
    pub f1: f64,
}

/// [`BinaryScores`] of probability `scores` for `labels`. Panics on different lengths or an
/// empty input. Cost O(n log n).
pub fn binary_scores(scores: &[f64], labels: &[bool]) -> BinaryScores {
    assert_eq!(
        scores.len(),
        labels.len(),
        "scores and labels differ in length"
    );
    assert!(!labels.is_empty(), "no records to score");
    let (mut tp, mut fp, mut fneg, mut correct) = (0u64, 0u64, 0u64, 0u64);
    for (&s, &l) in scores.iter().zip(labels) {
        let pred = s >= 0.5;
        match (pred, l) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fneg += 1,
            (false, false) => {}
        }
        correct += u64::from(pred == l);
    }
    let denom = 2 * tp + fp + fneg;
    BinaryScores {
        auc: auc(scores, labels),
        accuracy: correct as f64 / labels.len() as f64,
        f1: if denom == 0 {
            0.0
        } else {
            2.0 * tp as f64 / denom as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_by_hand() {
        // Perfect, reversed, and the textbook example with a tie.
        let l = [false, false, true, true];
        assert_eq!(auc(&[0.1, 0.2, 0.3, 0.4], &l), Some(1.0));
        assert_eq!(auc(&[0.4, 0.3, 0.2, 0.1], &l), Some(0.0));
        // Pairs (pos, neg): (0.3,0.1) 1, (0.3,0.3) 1/2, (0.8,0.1) 1, (0.8,0.3) 1 -> 3.5/4.
        assert_eq!(auc(&[0.1, 0.3, 0.3, 0.8], &l), Some(0.875));
        // All scores tied: 1/2.
        assert_eq!(auc(&[0.5; 4], &l), Some(0.5));
        assert_eq!(auc(&[0.5, 0.6], &[true, true]), None);
        assert_eq!(auc(&[f64::NAN, 0.6], &[true, false]), None);
    }

    #[test]
    fn accuracy_and_f1_by_hand() {
        // Predictions at 0.5: T F T T F; labels T T F T F -> TP 2, FP 1, FN 1, TN 1.
        let s = binary_scores(
            &[0.9, 0.2, 0.5, 0.7, 0.1],
            &[true, true, false, true, false],
        );
        assert_eq!(s.accuracy, 3.0 / 5.0);
        assert_eq!(s.f1, 4.0 / 6.0);
        // AUC: positives 0.9, 0.2, 0.7 vs negatives 0.5, 0.1: 2 + 1 + 2 = 5 of 6 pairs.
        assert_eq!(s.auc, Some(5.0 / 6.0));
        let none = binary_scores(&[0.1, 0.2], &[false, false]);
        assert_eq!((none.accuracy, none.f1, none.auc), (1.0, 0.0, None));
    }
}
