//! Training a mixture for the audit: the reference density of the density-ratio attack
//! (noiseless, float backend) and the shadow models (the release's noise, clip and sampling
//! rate, float or fixed backend). Both run vtwin-model's DPVI loop ([`Dpvi`]) and return the
//! natural parameters at the posterior mean, the same point the released model's density is
//! read at ([`vtwin_model::model_file::ModelFile::mean_params`]).
//!
//! The noise generators are seeded from the audit's seed: these models are never released,
//! and seeding makes the audit reproducible.

use vtwin_data::{MixtureParams, Table};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{GradientBackend, NoiseRngs};
use vtwin_model::dpvi::{Dpvi, DpviConfig, DpviError};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::float_backend::FloatBackend;
use vtwin_model::kernels::KernelError;
use vtwin_model::layout::{Layout, LayoutError};
use vtwin_model::model_file::natural_params;
use vtwin_model::party_data::{PartyData, StatsError};
use vtwin_model::tempering::Tempering;

/// Which gradient backend trains an audit model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrainBackend {
    /// Non-partitioned f64 ([`FloatBackend`]): Gaussian noise.
    Float,
    /// Partitioned fixed point ([`FixedBackend`], closed-form renormalisation): the parties'
    /// discrete Gaussian noise shares, as `vtwin train --backend fixed`.
    Fixed,
}

/// The settings of one training run.
#[derive(Debug, Clone, PartialEq)]
pub struct FitSettings {
    /// Mixture components K.
    pub components: usize,
    /// DPVI iterations.
    pub iterations: u64,
    /// Poisson sampling rate q in (0, 1].
    pub sample_rate: f64,
    /// Clip bound C.
    pub clip: f64,
    /// Noise multiplier (0: noiseless).
    pub sigma: f64,
    /// Adam learning rate.
    pub lr: f64,
    /// Backend.
    pub backend: TrainBackend,
    /// Seed of the public randomness (initialisation, batches, eta).
    pub seed: u64,
    /// Seed of the noise generators.
    pub noise_seed: u64,
    /// The responsibilities' tempering ([`Tempering::default_for`] the iterations trains
    /// as `vtwin train` does by default).
    pub tempering: Tempering,
}

/// Training an audit model failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// The schema and K give no valid layout.
    #[error("model layout: {0}")]
    Layout(#[from] LayoutError),
    /// The table does not fit the layout.
    #[error("training data: {0}")]
    Stats(#[from] StatsError),
    /// The backend could not start.
    #[error("backend: {0}")]
    Kernel(#[from] KernelError),
    /// The DPVI loop failed (settings out of range, divergence).
    #[error("training: {0}")]
    Dpvi(#[from] DpviError),
}

/// Trains on `table` with `s` and returns the mean parameters. Cost: `s.iterations` DPVI
/// steps (about 10 ms each on Adult with K = 20 and batches of 100, release build).
pub fn fit_mixture(table: &Table, s: &FitSettings) -> Result<MixtureParams, FitError> {
    let layout = Layout::from_schema(&table.schema, s.components)?;
    let data = PartyData::from_table(table, &layout)?;
    let backend: Box<dyn GradientBackend> = match s.backend {
        TrainBackend::Float => Box::new(FloatBackend::new()?),
        TrainBackend::Fixed => Box::new(FixedBackend::new(Renormalise::ClosedForm)?),
    };
    let config = DpviConfig {
        sample_rate: s.sample_rate,
        clip: s.clip,
        sigma: s.sigma,
        adam: AdamConfig {
            lr: s.lr,
            ..AdamConfig::default()
        },
        seed: s.seed,
        tempering: s.tempering,
    };
    let noise = NoiseRngs::seeded(s.noise_seed, layout.n_parties());
    // The auditor's own shadow models: reproducible from the noise seed by design.
    let batches = BatchKey::insecure(s.noise_seed);
    let mut dpvi = Dpvi::new(config, layout.clone(), data, backend, noise, batches)?;
    while dpvi.iteration() < s.iterations {
        dpvi.step()?;
    }
    Ok(natural_params(&layout, dpvi.mu()))
}
