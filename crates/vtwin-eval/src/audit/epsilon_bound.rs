//! An empirical lower bound on epsilon from a membership test, with a confidence interval.
//!
//! If training is (epsilon, delta)-DP under add/remove-one, then for any test "member iff
//! score >= t" with true- and false-positive rates TPR and FPR (Kairouz et al. 2015;
//! Jagielski et al. 2020, "Auditing differentially private machine learning"):
//!
//! - `TPR <= e^eps FPR + delta`, so `eps >= ln((TPR - delta) / FPR)`  ([`Inequality::Tpr`]);
//! - `TNR <= e^eps FNR + delta`, so `eps >= ln((TNR - delta) / FNR)`  ([`Inequality::Tnr`]),
//!   with TNR = 1 - FPR and FNR = 1 - TPR (the same test applied to the complement event);
//! - the reversed test "member iff score < t" has TPR' = FNR and FPR' = TNR, giving
//!   `eps >= ln((FNR - delta) / TNR)` ([`Inequality::Fnr`]) and
//!   `eps >= ln((FPR - delta) / TPR)` ([`Inequality::Fpr`]): a generator that keeps away
//!   from its training records leaks membership too.
//!
//! TPR and FPR are only estimated, from `tp` of `n_in` members and `fp` of `n_out`
//! non-members. Each gets a two-sided Clopper-Pearson interval at level
//! `1 - (1 - confidence) / 2`, so the four interval ends hold together with probability at
//! least `confidence` (Bonferroni). Plugging the pessimistic ends in gives `lo`, the
//! optimistic ends give `hi`: `[lo, hi]` covers the privacy loss `ln((TPR - delta) / FPR)` of
//! the chosen test with probability at least `confidence`, and `max(lo, 0)` is a lower
//! confidence bound on the true epsilon at level at least `1 - (1 - confidence) / 2`.
//!
//! The threshold (and which inequality) is chosen on a *selection* set and the bound is
//! computed on a disjoint *evaluation* set, so the choice does not bias the bound (no
//! multiple-testing correction is needed: one test is evaluated). On the selection set the
//! rule maximises the same `lo`; if no threshold gives a finite `lo` there, the one with the
//! largest `TPR - FPR` is taken.
//!
//! Assumption, stated in docs/audit.md: the `n_in` (and `n_out`) outcomes are treated as
//! independent trials. That holds exactly for the shadow-model attack (independent training
//! runs); for attacks on one released model it is the usual population reading of
//! membership inference, not a proof about the released run.

use serde::Serialize;

use super::clopper_pearson::{clopper_pearson, IntervalError};
use super::roc::{check_scores, operating_points, ScoreError};

/// Which DP inequality a test is read through (module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Inequality {
    /// `eps >= ln((TPR - delta) / FPR)`.
    Tpr,
    /// `eps >= ln((TNR - delta) / FNR)`.
    Tnr,
    /// `eps >= ln((FNR - delta) / TNR)` (reversed test).
    Fnr,
    /// `eps >= ln((FPR - delta) / TPR)` (reversed test).
    Fpr,
}

impl Inequality {
    /// All four, in the order the selection tries them.
    pub const ALL: [Inequality; 4] = [
        Inequality::Tpr,
        Inequality::Tnr,
        Inequality::Fnr,
        Inequality::Fpr,
    ];
}

/// Could not compute a bound.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EpsilonBoundError {
    /// A score set is empty or holds a NaN.
    #[error("{set} set: {source}")]
    Scores {
        /// `selection` or `evaluation`.
        set: &'static str,
        /// The cause.
        source: ScoreError,
    },
    /// delta not in [0, 1) or the confidence not in (0, 1).
    #[error(transparent)]
    Interval(#[from] IntervalError),
    /// delta not in [0, 1).
    #[error("delta {0} is not in [0, 1)")]
    Delta(f64),
}

/// The bound, with everything needed to recompute it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpsilonBound {
    /// The chosen threshold (member iff score >= threshold).
    pub threshold: f64,
    /// The chosen inequality.
    pub inequality: Inequality,
    /// Members of the evaluation set with score >= threshold.
    pub true_positives: u64,
    /// Members in the evaluation set.
    pub members: u64,
    /// Non-members of the evaluation set with score >= threshold.
    pub false_positives: u64,
    /// Non-members in the evaluation set.
    pub non_members: u64,
    /// The plug-in estimate of the privacy loss of the test (None when infinite or
    /// undefined, e.g. no false positives).
    pub point: Option<f64>,
    /// `max(lo, 0)`: the lower confidence bound on epsilon.
    pub lower_bound: f64,
    /// `[max(lo, 0), hi]`; `hi` is None when infinite.
    pub ci: (f64, Option<f64>),
    /// The largest `lower_bound` these evaluation set sizes can give (perfect separation):
    /// a small value means the audit is too small to show a large epsilon.
    pub max_achievable: f64,
    /// The confidence of `ci`.
    pub confidence: f64,
    /// delta.
    pub delta: f64,
}

/// Clopper-Pearson intervals for every count 0..=n, at one level.
struct IntervalTable(Vec<(f64, f64)>);

impl IntervalTable {
    fn new(n: u64, level: f64) -> Result<IntervalTable, IntervalError> {
        (0..=n)
            .map(|k| clopper_pearson(k, n, level))
            .collect::<Result<_, _>>()
            .map(IntervalTable)
    }
}

/// `(lo, hi)` of the privacy loss for counts, from the interval tables (module docs).
fn loss_interval(
    ineq: Inequality,
    tp: usize,
    fp: usize,
    tpr: &IntervalTable,
    fpr: &IntervalTable,
    delta: f64,
) -> (f64, f64) {
    let (a, b) = (tpr.0[tp], fpr.0[fp]);
    // Intervals of the four rates; the complement of [lo, hi] is [1 - hi, 1 - lo].
    let not = |(lo, hi): (f64, f64)| (1.0 - hi, 1.0 - lo);
    let (num, den) = match ineq {
        Inequality::Tpr => (a, b),
        Inequality::Tnr => (not(b), not(a)),
        Inequality::Fnr => (not(a), not(b)),
        Inequality::Fpr => (b, a),
    };
    let ln_ratio = |num: f64, den: f64| {
        if num <= 0.0 {
            f64::NEG_INFINITY
        } else {
            (num / den).ln()
        }
    };
    (
        ln_ratio(num.0 - delta, den.1),
        ln_ratio(num.1 - delta, den.0),
    )
}

/// Members and non-members' scores of one set.
#[derive(Debug, Clone, Copy)]
pub struct Labelled<'a> {
    /// Scores of members.
    pub members: &'a [f64],
    /// Scores of non-members.
    pub non_members: &'a [f64],
}

/// Chooses the test on `selection` and bounds epsilon on `evaluation` (module
/// documentation). `delta` in [0, 1), `confidence` in (0, 1), e.g. 0.95.
/// Cost O(n log n) plus about 130 incomplete-beta evaluations per record.
pub fn epsilon_lower_bound(
    selection: Labelled<'_>,
    evaluation: Labelled<'_>,
    delta: f64,
    confidence: f64,
) -> Result<EpsilonBound, EpsilonBoundError> {
    check_scores(selection.members, selection.non_members).map_err(|source| {
        EpsilonBoundError::Scores {
            set: "selection",
            source,
        }
    })?;
    check_scores(evaluation.members, evaluation.non_members).map_err(|source| {
        EpsilonBoundError::Scores {
            set: "evaluation",
            source,
        }
    })?;
    if !(0.0..1.0).contains(&delta) {
        return Err(EpsilonBoundError::Delta(delta));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(IntervalError::Confidence(confidence).into());
    }
    let level = 1.0 - (1.0 - confidence) / 2.0;

    // Selection.
    let (s1, s0) = (selection.members.len(), selection.non_members.len());
    let (sel_tpr, sel_fpr) = (
        IntervalTable::new(s1 as u64, level)?,
        IntervalTable::new(s0 as u64, level)?,
    );
    let mut best: Option<(f64, f64, Inequality)> = None; // (lo, threshold, inequality)
    let mut youden: (f64, f64) = (f64::NEG_INFINITY, f64::INFINITY); // (TPR - FPR, threshold)
    for (t, tp, fp) in operating_points(selection.members, selection.non_members) {
        for ineq in Inequality::ALL {
            let (lo, _) = loss_interval(ineq, tp, fp, &sel_tpr, &sel_fpr, delta);
            if lo.is_finite() && best.is_none_or(|b| lo > b.0) {
                best = Some((lo, t, ineq));
            }
        }
        let j = tp as f64 / s1 as f64 - fp as f64 / s0 as f64;
        if j > youden.0 {
            youden = (j, t);
        }
    }
    let (threshold, inequality) = match best {
        Some((_, t, i)) => (t, i),
        None => (youden.1, Inequality::Tpr),
    };

    // Evaluation.
    let (e1, e0) = (evaluation.members.len(), evaluation.non_members.len());
    let (ev_tpr, ev_fpr) = (
        IntervalTable::new(e1 as u64, level)?,
        IntervalTable::new(e0 as u64, level)?,
    );
    let tp = evaluation
        .members
        .iter()
        .filter(|&&s| s >= threshold)
        .count();
    let fp = evaluation
        .non_members
        .iter()
        .filter(|&&s| s >= threshold)
        .count();
    let (lo, hi) = loss_interval(inequality, tp, fp, &ev_tpr, &ev_fpr, delta);
    let (tpr, fpr) = (tp as f64 / e1 as f64, fp as f64 / e0 as f64);
    let (num, den) = match inequality {
        Inequality::Tpr => (tpr, fpr),
        Inequality::Tnr => (1.0 - fpr, 1.0 - tpr),
        Inequality::Fnr => (1.0 - tpr, 1.0 - fpr),
        Inequality::Fpr => (fpr, tpr),
    };
    let point = ((num - delta) / den).ln();
    let (max_lo, _) = loss_interval(Inequality::Tpr, e1, 0, &ev_tpr, &ev_fpr, delta);
    let lower_bound = lo.max(0.0);
    Ok(EpsilonBound {
        threshold,
        inequality,
        true_positives: tp as u64,
        members: e1 as u64,
        false_positives: fp as u64,
        non_members: e0 as u64,
        point: point.is_finite().then_some(point),
        lower_bound,
        ci: (lower_bound, (hi < f64::INFINITY).then_some(hi.max(0.0))),
        max_achievable: max_lo.max(0.0),
        confidence,
        delta,
    })
}
