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
use crate::tempering::Tempering;
use vtwin_iteration::randomness::BatchKey;

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
    /// The responsibilities' inverse-temperature schedule ([`Tempering`]). Checkpoints written
    /// before it existed (format 5) are refused by their version, not read as off.
    pub tempering: Tempering,
}

/// Errors of the loop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DpviError {
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The sample rate q is not in (0, 1].
    #[error("sample rate q = {0} must be in (0, 1]")]
    SampleRate(f64),
    /// The clipping bound C is not positive and finite.
    #[error("clipping bound C = {0} must be positive and finite")]
    Clip(f64),
    /// The noise multiplier sigma is negative or not finite.
    #[error("noise multiplier sigma = {0} must be non-negative and finite")]
    Sigma(f64),
    /// The Adam learning rate is not positive and finite.
    #[error("learning rate {0} must be positive and finite")]
    LearningRate(f64),
    /// The privacy ledger refused the noise or sampling setting.
    #[error("privacy ledger: {0}")]
    Ledger(#[from] vtwin_dp::LedgerError),
    /// A saved state whose vectors do not have the layout's d values.
    #[error("the saved state does not match the model layout")]
    StateMismatch,
    /// Not one data set and one noise generator per party.
    #[error("{data} data sets and {noise} noise generators for {parties} parties: one of each per party is needed")]
    PartyCount {
        /// Data sets given.
        data: usize,
        /// Noise generators given.
        noise: usize,
        /// Parties in the layout.
        parties: usize,
    },
    /// A party's data set is out of layout order or has another width or row count.
    #[error("party {party}: data set {index} ({rows} rows, width {width}) does not match the layout or the other parties' {expected_rows} rows")]
    PartyData {
        /// The layout's name for the position.
        party: String,
        /// The party index the data set carries.
        index: usize,
        /// Its rows.
        rows: usize,
        /// Its width.
        width: usize,
        /// The trainer's N.
        expected_rows: usize,
    },
    /// A sampled batch larger than the public padded size.
    #[error(transparent)]
    BatchOverflow(#[from] crate::party_data::BatchOverflow),
    /// A plan charged out of turn.
    #[error("a plan for iteration {iteration} (opening {opening}) cannot be charged at iteration {current} (next opening {next_opening})")]
    ChargeOutOfTurn {
        /// The plan's iteration.
        iteration: u64,
        /// The plan's opening.
        opening: u64,
        /// The trainer's iteration.
        current: u64,
        /// The trainer's next opening.
        next_opening: u64,
    },
    /// A plan applied at another iteration.
    #[error("a plan for iteration {iteration} cannot be applied at iteration {current}")]
    StalePlan {
        /// The plan's iteration.
        iteration: u64,
        /// The trainer's iteration.
        current: u64,
    },
    /// A plan applied before its opening was charged.
    #[error("iteration {iteration}: opening {opening} was not charged (next opening {next_opening}): charge before applying")]
    Uncharged {
        /// The plan's iteration.
        iteration: u64,
        /// The plan's opening.
        opening: u64,
        /// The trainer's next opening.
        next_opening: u64,
    },
    /// A gradient (or the plan's theta) whose length is not the model's d.
    #[error(
        "gradient of length {gradient} (plan theta {theta}) for a model of dimension {expected}"
    )]
    GradientLength {
        /// The gradient's length.
        gradient: usize,
        /// The plan's theta length.
        theta: usize,
        /// d.
        expected: usize,
    },
    /// An averaging half-life that is not a positive number.
    #[error("averaging half-life {0} must be positive")]
    HalfLife(f64),
    /// A run's averaging changed after its first iteration (an average must see every step).
    #[error("the run averages {run:?}; it cannot change to {asked:?} after iteration 0")]
    AveragingChanged {
        /// The run's own setting.
        run: crate::averaging::Averaging,
        /// The setting asked for.
        asked: crate::averaging::Averaging,
    },
    /// The optimisation diverged (non-finite parameters).
    #[error("iteration {0}: parameters became non-finite (lower the learning rate?)")]
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
