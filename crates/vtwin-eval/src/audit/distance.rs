//! The distance-to-closest-record (DCR) attack.
//!
//! Threat model: the attacker holds the synthetic table and a candidate record, nothing else
//! (no model, no reference data). A generator that memorises training records puts synthetic
//! records at or near them, so a member's nearest synthetic record tends to be closer than a
//! non-member's. Score: `-min_s ||f(x) - f(s)||_2` over the synthetic records `s`, in the
//! feature space of [`crate::features`] (higher = more likely a member).
//! (Compare Zhao et al. 2021, "CTAB-GAN", and Yale et al. 2020 for DCR as a privacy metric.)

use super::nearest::nearest_distances;
use crate::features::FeatureMatrix;

/// DCR scores of `records` against `synthetic` (same feature map): minus the Euclidean
/// distance to the nearest synthetic record. Cost O(records * synthetic * dim).
pub fn dcr_scores(records: &FeatureMatrix, synthetic: &FeatureMatrix) -> Vec<f64> {
    nearest_distances(records, synthetic, |_| None)
        .into_iter()
        .map(|d| -d)
        .collect()
}
