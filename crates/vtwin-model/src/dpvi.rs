//! The DPVI loop (paper Algorithm 1) around a [`GradientBackend`].
//!
//! One iteration t:
//! 1. Poisson-sample the batch: each of the N records independently with probability q
//!    (public ChaCha20 stream, seeded by `seed`);
//! 2. draw eta ~ N(0, I_d) from the same public stream; theta = mu + exp(log_sigma) eta;
//! 3. G = backend gradient (clipped, noised data term; the only private step);
//! 4. data gradient estimate G / q (unbiased for the full-data sum under Poisson sampling,
//!    and independent of the secret batch size); add the public prior gradient and the
//!    entropy term ([`crate::prior::elbo_gradients`]); one Adam ascent step on mu and on
//!    log_sigma;
//! 5. the iteration is complete: charge the privacy ledger once.
//!
//! Same seed, same noise generators and same inputs give the same run, bit for bit; the
//! whole state ([`DpviState`]) is serialisable, so a resumed run continues identically.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use crate::adam::{Adam, AdamConfig};
use crate::backend::{
    BackendError, Diagnostics, GradientBackend, GradientInput, NoiseConfig, NoiseRngs,
};
use crate::layout::Layout;
use crate::prior::elbo_gradients;
use crate::rng_state::RngState;
use crate::stats::PartyData;
use vtwin_dp::{PrivacyLedger, Sampling};

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
    /// Seed of the public randomness (initialisation, batches, eta).
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
    /// The privacy ledger (None when sigma = 0: no noise, no privacy to account).
    #[serde(with = "ledger_as_json")]
    pub ledger: Option<PrivacyLedger>,
}

/// What one iteration did (simulation diagnostics; see [`Diagnostics`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Completed iterations after this one.
    pub iteration: u64,
    /// Backend diagnostics.
    pub diagnostics: Diagnostics,
    /// ms sampling the batch and eta.
    pub sample_ms: f64,
    /// ms gathering the parties' batches.
    pub gather_ms: f64,
    /// ms in the backend.
    pub backend_ms: f64,
    /// ms in the public update (prior, entropy, Adam).
    pub update_ms: f64,
}

/// A training run: the parties' data, a backend, the state and the noise generators.
pub struct Dpvi {
    config: DpviConfig,
    layout: Layout,
    data: Vec<PartyData>,
    backend: Box<dyn GradientBackend>,
    noise: NoiseRngs,
    state: DpviState,
    rng: ChaCha20Rng,
}

impl std::fmt::Debug for Dpvi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpvi")
            .field("config", &self.config)
            .field("backend", &self.backend.name())
            .field("iteration", &self.state.iteration)
            .finish_non_exhaustive()
    }
}

impl Dpvi {
    /// A fresh run: mu ~ N(0, 0.1^2) and log_sigma = ln 0.1 from the public stream.
    pub fn new(
        config: DpviConfig,
        layout: Layout,
        data: Vec<PartyData>,
        backend: Box<dyn GradientBackend>,
        noise: NoiseRngs,
    ) -> Result<Dpvi, DpviError> {
        let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
        let d = layout.dim();
        let mu = (0..d)
            .map(|_| INIT_MU_SCALE * rng.sample::<f64, _>(StandardNormal))
            .collect();
        let state = DpviState {
            iteration: 0,
            mu,
            log_sigma: vec![INIT_SIGMA_Q.ln(); d],
            adam_mu: Adam::new(config.adam, d),
            adam_log_sigma: Adam::new(config.adam, d),
            public_rng: RngState::of(&rng),
            ledger: if config.sigma > 0.0 {
                Some(
                    PrivacyLedger::new(
                        config.sigma,
                        Sampling::Poisson {
                            sample_rate: config.sample_rate,
                        },
                    )
                    .map_err(|e| DpviError::Config(e.to_string()))?,
                )
            } else {
                None
            },
        };
        Dpvi::resume(config, layout, data, backend, noise, state)
    }

    /// Continues from a saved state.
    pub fn resume(
        config: DpviConfig,
        layout: Layout,
        data: Vec<PartyData>,
        backend: Box<dyn GradientBackend>,
        noise: NoiseRngs,
        state: DpviState,
    ) -> Result<Dpvi, DpviError> {
        if !(config.sample_rate > 0.0 && config.sample_rate <= 1.0) {
            return Err(DpviError::Config(format!(
                "--sample-rate must be in (0, 1], got {}",
                config.sample_rate
            )));
        }
        if !(config.clip.is_finite() && config.clip > 0.0) {
            return Err(DpviError::Config(format!(
                "--clip must be positive, got {}",
                config.clip
            )));
        }
        if !(config.sigma.is_finite() && config.sigma >= 0.0) {
            return Err(DpviError::Config(format!(
                "--sigma must be non-negative, got {}",
                config.sigma
            )));
        }
        if !(config.adam.lr.is_finite() && config.adam.lr > 0.0) {
            return Err(DpviError::Config(format!(
                "--lr must be positive, got {}",
                config.adam.lr
            )));
        }
        let d = layout.dim();
        if state.mu.len() != d || state.log_sigma.len() != d || state.adam_mu.m.len() != d {
            return Err(DpviError::Config(
                "the saved state does not match the model layout".into(),
            ));
        }
        if data.len() != layout.n_parties() || noise.len() != layout.n_parties() {
            return Err(DpviError::Config(
                "one data set and one noise generator per party are needed".into(),
            ));
        }
        let rng = state.public_rng.restore();
        Ok(Dpvi {
            config,
            layout,
            data,
            backend,
            noise,
            state,
            rng,
        })
    }

    /// The state after the last completed iteration (captures the public generator).
    pub fn state(&self) -> DpviState {
        let mut s = self.state.clone();
        s.public_rng = RngState::of(&self.rng);
        s
    }

    /// The noise generators (for checkpointing their state when seeded).
    pub fn noise(&self) -> &NoiseRngs {
        &self.noise
    }

    /// The configuration.
    pub fn config(&self) -> &DpviConfig {
        &self.config
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Posterior means.
    pub fn mu(&self) -> &[f64] {
        &self.state.mu
    }

    /// Posterior log standard deviations.
    pub fn log_sigma(&self) -> &[f64] {
        &self.state.log_sigma
    }

    /// The privacy ledger (None when sigma = 0).
    pub fn ledger(&self) -> Option<&PrivacyLedger> {
        self.state.ledger.as_ref()
    }

    /// Completed iterations.
    pub fn iteration(&self) -> u64 {
        self.state.iteration
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Runs one iteration. On error nothing is updated, and the iteration is not counted
    /// (the caller must not release anything from it).
    pub fn step(&mut self) -> Result<StepReport, DpviError> {
        let t0 = Instant::now();
        let n = self.data.first().map_or(0, |p| p.rows);
        let q = self.config.sample_rate;
        let mut rng = self.rng.clone();
        let batch: Vec<usize> = (0..n).filter(|_| rng.random_bool(q)).collect();
        let d = self.layout.dim();
        let eta: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
        let sigma_q: Vec<f64> = self.state.log_sigma.iter().map(|l| l.exp()).collect();
        let theta: Vec<f64> = (0..d)
            .map(|i| self.state.mu[i] + sigma_q[i] * eta[i])
            .collect();
        let sample_ms = t0.elapsed().as_secs_f64() * 1e3;

        let t1 = Instant::now();
        let parties: Vec<_> = self.data.iter().map(|p| p.batch(&batch)).collect();
        let gather_ms = t1.elapsed().as_secs_f64() * 1e3;

        let t2 = Instant::now();
        let input = GradientInput {
            layout: &self.layout,
            theta: &theta,
            parties: &parties,
            clip: self.config.clip,
            noise: NoiseConfig {
                sigma: self.config.sigma,
            },
        };
        let out = self.backend.gradient(&input, &mut self.noise)?;
        let backend_ms = t2.elapsed().as_secs_f64() * 1e3;

        let t3 = Instant::now();
        let data_grad: Vec<f64> = out.gradient.iter().map(|g| g / q).collect();
        let (g_mu, g_ls) = elbo_gradients(&data_grad, &theta, &eta, &sigma_q);
        let mut mu = self.state.mu.clone();
        let mut ls = self.state.log_sigma.clone();
        let mut adam_mu = self.state.adam_mu.clone();
        let mut adam_ls = self.state.adam_log_sigma.clone();
        adam_mu.ascend(&mut mu, &g_mu);
        adam_ls.ascend(&mut ls, &g_ls);
        if !mu.iter().chain(&ls).all(|v| v.is_finite()) {
            return Err(DpviError::Diverged(self.state.iteration + 1));
        }
        self.state.mu = mu;
        self.state.log_sigma = ls;
        self.state.adam_mu = adam_mu;
        self.state.adam_log_sigma = adam_ls;
        // The iteration is complete: charge it (idempotent per index).
        if let Some(ledger) = &mut self.state.ledger {
            ledger.charge(self.state.iteration);
        }
        self.state.iteration += 1;
        self.rng = rng;
        let update_ms = t3.elapsed().as_secs_f64() * 1e3;
        Ok(StepReport {
            iteration: self.state.iteration,
            diagnostics: out.diagnostics,
            sample_ms,
            gather_ms,
            backend_ms,
            update_ms,
        })
    }
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
