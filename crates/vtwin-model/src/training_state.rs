//! The public settings ([`DpviConfig`]) and the evolving state ([`DpviState`]) of a DPVI
//! run, and its errors: what the public [`crate::trainer::Trainer`] holds and what the
//! in-process loop [`crate::dpvi::Dpvi`] wraps (both import it; neither imports the other's
//! types back).

use serde::{Deserialize, Serialize};
use vtwin_dp::PrivacyLedger;

use crate::adam::{Adam, AdamConfig};
use crate::averaging::IterateAverage;
use crate::backend::BackendError;
use crate::rng_state::RngState;
use crate::secret_randomness::BatchKey;

/// Initial standard deviation of mu around 0 (symmetry breaking).
pub const INIT_MU_SCALE: f64 = 0.1;
/// Initial posterior standard deviation sigma_q.
pub const INIT_SIGMA_Q: f64 = 0.1;

/// The public settings of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DpviConfig {
    /// Poisson sampling rate q in (0, 1].
    pub sample_rate: f64,
    /// Clip bound C.
    pub clip: f64,
    /// Noise multiplier sigma (noise std sigma C); 0 only for noiseless tests.
    pub sigma: f64,
    /// Adam.
    pub adam: AdamConfig,
    /// Seed of the public randomness (initialisation and eta; synthesis uses it too). The
    /// batches come from the secret [`BatchKey`], never from this seed.
    pub seed: u64,
}

/// Errors of the loop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DpviError {
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A setting is out of range.
    #[error("{0}")]
    Config(String),
    /// The optimisation diverged (non-finite parameters).
    #[error("iteration {0}: parameters became non-finite (lower --lr?)")]
    Diverged(u64),
    /// The opening could not be recorded durably (it was not used).
    #[error(transparent)]
    OpeningLog(#[from] crate::opening_log::OpeningLogError),
}

/// Everything that evolves during training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DpviState {
    /// Completed iterations.
    pub iteration: u64,
    /// Posterior means.
    pub mu: Vec<f64>,
    /// Posterior log standard deviations.
    pub log_sigma: Vec<f64>,
    /// Adam on mu.
    pub adam_mu: Adam,
    /// Adam on log_sigma.
    pub adam_log_sigma: Adam,
    /// The public generator, positioned after the last completed iteration.
    pub public_rng: RngState,
    /// The secret key of the batch sampler (private checkpoint only).
    pub batch_key: BatchKey,
    /// Openings charged so far (each a released G + Z; >= `iteration`).
    pub openings: u64,
    /// The privacy ledger over openings (None when sigma = 0: no noise, no privacy to account).
    #[serde(with = "ledger_as_json")]
    pub ledger: Option<PrivacyLedger>,
    /// The running average of the iterates, the released model (None: the last iterate is
    /// released; [`crate::averaging`]).
    pub average: Option<IterateAverage>,
}

/// The ledger travels as a JSON string inside binary checkpoints: its sampling enum is
/// internally tagged, which non-self-describing formats (postcard) cannot decode. serde_json
/// is built with `float_roundtrip`, so its f64 values survive exactly.
mod ledger_as_json {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use vtwin_dp::PrivacyLedger;

    pub(super) fn serialize<S: Serializer>(
        ledger: &Option<PrivacyLedger>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let text = ledger
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(serde::ser::Error::custom)?;
        text.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<PrivacyLedger>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}
