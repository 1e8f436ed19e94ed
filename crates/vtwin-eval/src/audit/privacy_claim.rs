//! The theoretical privacy claim the audit is compared with, read from `privacy.json`
//! (INTERFACE.md; written by `vtwin train`).
//!
//! Membership inference is the add/remove-one game, and the attacker of the audit is the
//! outside analyst (sees the released model or synthetic data), so the figure is the
//! top-level `epsilon.<accountant>.add_remove`. Every accountant's figure is a valid upper
//! bound; the claim is the smallest of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vtwin_dp::{epsilon, Accountant, AccountingError, Composition, Neighbouring};

/// The privacy settings and figures of a trained model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyClaim {
    /// Noise multiplier (0: not private).
    pub sigma: f64,
    /// Clip bound.
    pub clip: f64,
    /// Poisson sampling rate.
    pub sample_rate: f64,
    /// Iterations.
    pub steps: u64,
    /// delta.
    pub delta: f64,
    /// Add/remove epsilon per accountant (absent when sigma = 0).
    pub epsilon_add_remove: BTreeMap<String, f64>,
}

/// `privacy.json` could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrivacyClaimError {
    /// Reading failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not the expected JSON.
    #[error("{}: not a privacy.json", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error (names the field and position).
        #[source]
        source: serde_json::Error,
    },
    /// A field outside its range.
    #[error("{}: {field} = {value} is not in {range}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
        /// The allowed range.
        range: &'static str,
    },
}

#[derive(Deserialize)]
struct Pair {
    add_remove: Option<f64>,
}

#[derive(Deserialize)]
struct File {
    sigma: f64,
    clip: f64,
    sample_rate: f64,
    steps: u64,
    delta: f64,
    #[serde(default)]
    epsilon: BTreeMap<String, Pair>,
}

impl PrivacyClaim {
    /// Reads `path` (the fields sigma, clip, sample_rate, steps, delta and epsilon of
    /// INTERFACE.md's privacy.json; other fields are ignored).
    pub fn load(path: &Path) -> Result<PrivacyClaim, PrivacyClaimError> {
        let text = std::fs::read_to_string(path).map_err(|source| PrivacyClaimError::Io {
            path: path.into(),
            source,
        })?;
        let f: File = serde_json::from_str(&text).map_err(|source| PrivacyClaimError::Json {
            path: path.into(),
            source,
        })?;
        let bad = |field, value, range| PrivacyClaimError::Field {
            path: path.into(),
            field,
            value,
            range,
        };
        if !(f.sigma.is_finite() && f.sigma >= 0.0) {
            return Err(bad("sigma", f.sigma, "[0, inf)"));
        }
        if !(f.sample_rate > 0.0 && f.sample_rate <= 1.0) {
            return Err(bad("sample_rate", f.sample_rate, "(0, 1]"));
        }
        if !(f.delta > 0.0 && f.delta < 1.0) {
            return Err(bad("delta", f.delta, "(0, 1)"));
        }
        Ok(PrivacyClaim {
            sigma: f.sigma,
            clip: f.clip,
            sample_rate: f.sample_rate,
            steps: f.steps,
            delta: f.delta,
            epsilon_add_remove: f
                .epsilon
                .into_iter()
                .filter_map(|(k, p)| p.add_remove.map(|e| (k, e)))
                .collect(),
        })
    }

    /// The claimed epsilon: the smallest add/remove figure, None when there is none
    /// (sigma = 0, or no finite figure).
    pub fn epsilon(&self) -> Option<f64> {
        self.epsilon_add_remove
            .values()
            .copied()
            .filter(|e| e.is_finite())
            .reduce(f64::min)
    }

    /// The add/remove epsilon at this claim's sigma, rate and delta after `steps` iterations
    /// (the shadow models' own figure), the smallest over the RDP and PLD accountants. None
    /// when sigma = 0. Cost: about a second for the PLD accountant at 20000 steps.
    pub fn epsilon_at_steps(&self, steps: u64) -> Result<Option<f64>, AccountingError> {
        if self.sigma == 0.0 {
            return Ok(None);
        }
        if steps == 0 {
            return Ok(Some(0.0));
        }
        let c = Composition {
            noise_multiplier: self.sigma,
            sample_rate: self.sample_rate,
            steps,
        };
        let mut best = f64::INFINITY;
        for acc in Accountant::ALL {
            best = best.min(epsilon(acc, &c, self.delta, Neighbouring::AddRemove)?);
        }
        Ok(best.is_finite().then_some(best))
    }
}
