//! The DPVI loop (paper Algorithm 1) in one process: the public [`Trainer`] around a
//! [`GradientBackend`] holding every party's data (the consortium runs the same trainer with
//! the parties and nodes as separate processes).
//!
//! One iteration t (see [`Trainer`] for the details):
//! 1. Poisson-sample the batch: each of the N records independently with probability q,
//!    from the secret batch key's generator for (t, opening);
//! 2. draw eta ~ N(0, I_d) from the public stream (seeded by `seed`); theta = mu +
//!    exp(log_sigma) eta;
//! 3. G = backend gradient (clipped, noised data term; the opening);
//! 4. charge the opening: first to the durable opening log when one is attached
//!    ([`Dpvi::set_opening_log`]), then to the privacy ledger;
//! 5. data gradient estimate G / q (unbiased for the full-data sum under Poisson sampling,
//!    and independent of the secret batch size); add the public prior gradient and the
//!    entropy term ([`crate::prior::elbo_gradients`]); one Adam ascent step on mu and on
//!    log_sigma.
//!
//! Same seed, same batch key, same noise generators and same inputs give the same run, bit
//! for bit; the whole state ([`DpviState`]) is serialisable, so a resumed run continues
//! identically.

use std::time::Instant;

use crate::backend::{Diagnostics, GradientBackend, GradientInput, NoiseConfig, NoiseRngs};
use crate::layout::Layout;
use crate::opening_log::{OpeningLog, OpeningRecord};
use crate::party_data::PartyData;
use crate::trainer::Trainer;
use vtwin_iteration::randomness::BatchKey;
// The run's settings, state and errors, at the paths callers have always used.
pub use crate::training_state::{DpviConfig, DpviError, DpviState, INIT_MU_SCALE, INIT_SIGMA_Q};
use vtwin_dp::PrivacyLedger;

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

/// A training run in one process: the public [`Trainer`] plus the parties' data, a backend
/// and the noise generators.
pub struct Dpvi {
    trainer: Trainer,
    data: Vec<PartyData>,
    backend: Box<dyn GradientBackend>,
    noise: NoiseRngs,
    log: Option<OpeningLog>,
}

impl std::fmt::Debug for Dpvi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpvi")
            .field("config", self.trainer.config())
            .field("backend", &self.backend.name())
            .field("iteration", &self.trainer.iteration())
            .finish_non_exhaustive()
    }
}

impl Dpvi {
    /// A fresh run ([`Trainer::new`] over the parties' N records with the secret batch key).
    pub fn new(
        config: DpviConfig,
        layout: Layout,
        data: Vec<PartyData>,
        backend: Box<dyn GradientBackend>,
        noise: NoiseRngs,
        batch_key: BatchKey,
    ) -> Result<Dpvi, DpviError> {
        let rows = data.first().map_or(0, |p| p.rows);
        let trainer = Trainer::new(config, layout, rows, batch_key)?;
        Dpvi::with_trainer(trainer, data, backend, noise)
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
        let rows = data.first().map_or(0, |p| p.rows);
        let trainer = Trainer::resume(config, layout, rows, state)?;
        Dpvi::with_trainer(trainer, data, backend, noise)
    }

    /// A run around an existing trainer: one data set (all with the trainer's N rows, in
    /// layout order) and one noise generator per party.
    pub fn with_trainer(
        trainer: Trainer,
        data: Vec<PartyData>,
        backend: Box<dyn GradientBackend>,
        noise: NoiseRngs,
    ) -> Result<Dpvi, DpviError> {
        let layout = trainer.layout();
        if data.len() != layout.n_parties() || noise.len() != layout.n_parties() {
            return Err(DpviError::PartyCount {
                data: data.len(),
                noise: noise.len(),
                parties: layout.n_parties(),
            });
        }
        if let Some((p, d)) = data.iter().enumerate().find(|(p, d)| {
            d.party != *p || d.rows != trainer.rows() || d.width != layout.stat_width(*p)
        }) {
            return Err(DpviError::PartyData {
                party: layout.parties[p].clone(),
                index: d.party,
                rows: d.rows,
                width: d.width,
                expected_rows: trainer.rows(),
            });
        }
        Ok(Dpvi {
            trainer,
            data,
            backend,
            noise,
            log: None,
        })
    }

    /// Attaches the durable opening log: every later opening is appended (and synced) to
    /// it before it is charged and used. Without one, openings are charged in memory only
    /// (benchmarks, tests).
    pub fn set_opening_log(&mut self, log: OpeningLog) {
        self.log = Some(log);
    }

    /// The trainer, mutably (to charge the openings of the log at resume).
    pub fn trainer_mut(&mut self) -> &mut Trainer {
        &mut self.trainer
    }

    /// The public trainer.
    pub fn trainer(&self) -> &Trainer {
        &self.trainer
    }

    /// The state after the last completed iteration (captures the public generator).
    pub fn state(&self) -> DpviState {
        self.trainer.state()
    }

    /// The noise generators.
    pub fn noise(&self) -> &NoiseRngs {
        &self.noise
    }

    /// What a checkpoint of this run records about the noise
    /// ([`NoiseRngs::checkpoint_states`] at the next iteration).
    pub fn noise_checkpoint(&self) -> Option<Vec<crate::rng_state::RngState>> {
        self.noise.checkpoint_states(self.trainer.iteration())
    }

    /// The configuration.
    pub fn config(&self) -> &DpviConfig {
        self.trainer.config()
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        self.trainer.layout()
    }

    /// Posterior means (the current iterate).
    pub fn mu(&self) -> &[f64] {
        self.trainer.mu()
    }

    /// The released model's posterior means ([`Trainer::model_mu`]).
    pub fn model_mu(&self) -> &[f64] {
        self.trainer.model_mu()
    }

    /// Posterior log standard deviations.
    pub fn log_sigma(&self) -> &[f64] {
        self.trainer.log_sigma()
    }

    /// The privacy ledger (None when sigma = 0).
    pub fn ledger(&self) -> Option<&PrivacyLedger> {
        self.trainer.ledger()
    }

    /// Completed iterations.
    pub fn iteration(&self) -> u64 {
        self.trainer.iteration()
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Runs one iteration: plan, gather the parties' batches, the backend's gradient with
    /// the noise generators positioned at the iteration ([`NoiseRngs::seek`]), charge the
    /// opening (log first), apply. On a backend error nothing is charged or updated and a
    /// retry redraws seeded secrets and noise identically; once charged, an opening stays
    /// charged even if the update fails, and a retry takes a fresh batch.
    pub fn step(&mut self) -> Result<StepReport, DpviError> {
        let t0 = Instant::now();
        let plan = self.trainer.plan();
        let sample_ms = t0.elapsed().as_secs_f64() * 1e3;

        let t1 = Instant::now();
        // Padded to the public size (the plan never exceeds it).
        let parties = self
            .data
            .iter()
            .map(|p| p.padded_batch(&plan.batch, plan.padded))
            .collect::<Result<Vec<_>, _>>()?;
        let gather_ms = t1.elapsed().as_secs_f64() * 1e3;

        let t2 = Instant::now();
        let config = self.trainer.config();
        let input = GradientInput {
            layout: self.trainer.layout(),
            iteration: plan.iteration,
            theta: &plan.theta,
            parties: &parties,
            clip: config.clip,
            noise: NoiseConfig {
                sigma: config.sigma,
            },
            beta: config.tempering.beta(plan.iteration),
        };
        self.noise.seek(plan.iteration);
        let out = self.backend.gradient(&input, &mut self.noise)?;
        let backend_ms = t2.elapsed().as_secs_f64() * 1e3;

        let t3 = Instant::now();
        if let Some(log) = &mut self.log {
            log.append(OpeningRecord {
                opening: plan.opening,
                iteration: plan.iteration,
                truncation_failure: out.truncation_failure,
            })?;
        }
        self.trainer.charge(&plan, out.truncation_failure)?;
        self.trainer.apply(plan, &out.gradient)?;
        let update_ms = t3.elapsed().as_secs_f64() * 1e3;
        Ok(StepReport {
            iteration: self.trainer.iteration(),
            diagnostics: out.diagnostics,
            sample_ms,
            gather_ms,
            backend_ms,
            update_ms,
        })
    }
}
