//! The audit's JSON report (INTERFACE.md: `attacks: [{name, auc, tpr_at_fpr_0_01,
//! epsilon_lower_bound}]` and `epsilon_theoretical`), and the metrics of one attack's scores.

use std::collections::BTreeMap;

use serde::Serialize;

use super::epsilon_bound::{epsilon_lower_bound, EpsilonBound, EpsilonBoundError, Labelled};
use super::roc::{auc, roc_curve, tpr_at_fpr, ScoreError};

/// The false-positive rate of `tpr_at_fpr_0_01`.
pub const LOW_FPR: f64 = 0.01;

/// One attack's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttackReport {
    /// `distance_to_closest_record`, `density_ratio` or `shadow_model`.
    pub name: String,
    /// AUC (mid-ranks, [`super::roc::auc`]) over all scored records (runs for the shadow
    /// attack's test runs).
    pub auc: f64,
    /// TPR at FPR 0.01, linear interpolation on the ROC curve ([`super::roc::tpr_at_fpr`]).
    pub tpr_at_fpr_0_01: f64,
    /// Lower confidence bound on epsilon ([`super::epsilon_bound`]), >= 0.
    pub epsilon_lower_bound: f64,
    /// `[lo, hi]` at `confidence`; `hi` null when infinite.
    pub epsilon_lower_bound_ci: (f64, Option<f64>),
    /// The test behind the bound: threshold, counts, confidence, largest achievable bound.
    pub epsilon_test: EpsilonBound,
    /// Member scores behind `auc`.
    pub members: usize,
    /// Non-member scores behind `auc`.
    pub non_members: usize,
    /// For an attack on retrained models (shadow): the theoretical epsilon of that training
    /// configuration, which is what its bound audits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_theoretical_audited: Option<f64>,
    /// Attack-specific settings and diagnostics.
    pub details: serde_json::Value,
}

/// An attack's scores could not be analysed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// AUC or ROC.
    #[error(transparent)]
    Scores(#[from] ScoreError),
    /// The epsilon bound.
    #[error(transparent)]
    Bound(#[from] EpsilonBoundError),
}

/// The metrics of one attack: AUC and TPR at FPR 0.01 on `all`, the epsilon bound with the
/// test chosen on `selection` and evaluated on `evaluation`. Cost O(n log n) plus the bound's.
pub fn attack_report(
    name: &str,
    all: Labelled<'_>,
    selection: Labelled<'_>,
    evaluation: Labelled<'_>,
    delta: f64,
    confidence: f64,
) -> Result<AttackReport, MetricsError> {
    let a = auc(all.members, all.non_members)?;
    let curve = roc_curve(all.members, all.non_members)?;
    let bound = epsilon_lower_bound(selection, evaluation, delta, confidence)?;
    Ok(AttackReport {
        name: name.to_owned(),
        auc: a,
        tpr_at_fpr_0_01: tpr_at_fpr(&curve, LOW_FPR),
        epsilon_lower_bound: bound.lower_bound,
        epsilon_lower_bound_ci: bound.ci,
        epsilon_test: bound,
        members: all.members.len(),
        non_members: all.non_members.len(),
        epsilon_theoretical_audited: None,
        details: serde_json::Value::Null,
    })
}

/// The whole audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// One entry per attack run.
    pub attacks: Vec<AttackReport>,
    /// The released model's claimed add/remove epsilon ([`super::privacy_claim`]); null when
    /// the model is not private.
    pub epsilon_theoretical: Option<f64>,
    /// The claim per accountant.
    pub epsilon_theoretical_by_accountant: BTreeMap<String, f64>,
    /// delta of the claim, also used in the bounds.
    pub delta: f64,
    /// Members scored (per class, records; the shadow attack reports its runs itself).
    pub members: usize,
    /// Non-members scored.
    pub non_members: usize,
    /// Records fitting the reference density (0 when no density-ratio attack ran).
    pub reference: usize,
    /// Synthetic records (DCR).
    pub synthetic: usize,
    /// Rows of the members file (the training set).
    pub members_available: usize,
    /// Rows of the non-members file.
    pub non_members_available: usize,
    /// Confidence of every interval.
    pub confidence: f64,
    /// Seed of the audit's sampling and training.
    pub seed: u64,
}
