//! The public half of the DPVI loop (paper Algorithm 1): everything the coordinator holds.
//! No data and no backend; one secret, the batch key.
//!
//! One iteration t is [`Trainer::plan`], [`Trainer::charge`], then [`Trainer::apply`]:
//! 1. `plan` Poisson-samples the batch (each of the N records independently with probability
//!    q) from the secret [`BatchKey`]'s generator for (t, o), where o is the number of openings
//!    charged so far (the opening this plan leads to), draws eta ~ N(0, I_d) from the public
//!    ChaCha20 stream seeded by [`DpviConfig::seed`] (independent of the batch), and sets
//!    theta = mu + exp(log_sigma) eta, with every Beta log-parameter capped at ln 1000, or
//!    lower for large padded batches ([`crate::layout::beta_log_cap`],
//!    [`Layout::cap_beta_params`]). It changes nothing: a plan can be dropped (an aborted
//!    iteration, nothing opened) and planned again, identically;
//! 2. someone computes G = sum_n c_n g_n + Z for the plan's batch and theta (a
//!    [`crate::backend::GradientBackend`] in memory, or the consortium over the network);
//! 3. `charge` records the opening o in the privacy ledger, before G is used (the caller
//!    first makes it durable, [`crate::opening_log`]); from then on o is spent, whatever
//!    happens next. A retry of iteration t after a charged opening plans opening o + 1: a
//!    fresh Poisson batch (and fresh noise), so every opening is an independent subsampled
//!    Gaussian step and the accountants compose over openings, not iterations. With no
//!    crash and no failed update, o = t;
//! 4. `apply` forms the data gradient estimate G / q (unbiased for the full-data sum under
//!    Poisson sampling, independent of the secret batch size), adds the public prior gradient
//!    and the entropy term ([`crate::prior::elbo_gradients`]), takes one Adam ascent step on
//!    mu and on log_sigma, takes the new iterate into the iterate average when the run
//!    keeps one ([`crate::averaging`]; post-processing, never fed back), and moves the public
//!    stream past the plan's eta. On error nothing changes (the charge stays).
//!
//! Same seed, same batch key and same gradients give the same run, bit for bit; the whole
//! state ([`DpviState`], with the batch key) is serialisable, so a resumed run continues
//! identically.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;

use crate::adam::Adam;
use crate::averaging::{Averaging, IterateAverage};
use crate::layout::Layout;
use crate::prior::elbo_gradients;
use crate::rng_state::RngState;
use crate::training_state::{DpviConfig, DpviError, DpviState, INIT_MU_SCALE, INIT_SIGMA_Q};
use vtwin_dp::{PrivacyLedger, Sampling};
use vtwin_iteration::randomness::BatchKey;

/// The public inputs of one iteration (what [`Trainer::plan`] drew).
#[derive(Clone, Debug, PartialEq)]
pub struct IterationPlan {
    /// The iteration t (= completed iterations when planned).
    pub iteration: u64,
    /// The opening o this plan leads to (= openings charged when planned; = t unless an
    /// earlier opening was charged and not applied).
    pub opening: u64,
    /// The sampled record indices (ascending, each < N; may be empty; at most
    /// [`IterationPlan::padded`]). Secret: derived from the batch key.
    pub batch: Vec<usize>,
    /// The public batch size B every batch is padded to ([`Trainer::padded_batch`]): the
    /// compute nodes see only this size, never `batch.len()`.
    pub padded: usize,
    /// theta_t = mu + sigma_q eta with Beta log-parameters capped ([`Layout::cap_beta_params`]), length d.
    pub theta: Vec<f64>,
    /// eta ~ N(0, I_d), length d.
    pub eta: Vec<f64>,
    /// sigma_q = exp(log_sigma), length d.
    sigma_q: Vec<f64>,
    /// The public generator after this plan's eta.
    rng_after: RngState,
}

/// The public trainer: config, layout, N, the state and the public generator (module docs).
#[derive(Clone, Debug)]
pub struct Trainer {
    config: DpviConfig,
    layout: Layout,
    rows: usize,
    /// The public padded batch size and the per-opening probability that a Poisson batch
    /// exceeds it ([`vtwin_dp::padded_batch_size`]).
    padded: (usize, f64),
    state: DpviState,
    rng: ChaCha20Rng,
}

fn check_config(config: &DpviConfig) -> Result<(), DpviError> {
    if !(config.sample_rate > 0.0 && config.sample_rate <= 1.0) {
        return Err(DpviError::SampleRate(config.sample_rate));
    }
    if !(config.clip.is_finite() && config.clip > 0.0) {
        return Err(DpviError::Clip(config.clip));
    }
    if !(config.sigma.is_finite() && config.sigma >= 0.0) {
        return Err(DpviError::Sigma(config.sigma));
    }
    if !(config.adam.lr.is_finite() && config.adam.lr > 0.0) {
        return Err(DpviError::LearningRate(config.adam.lr));
    }
    Ok(())
}

impl Trainer {
    /// A fresh run over `rows` records with the secret `batch_key` ([`BatchKey::from_os`] in
    /// production): mu ~ N(0, 0.1^2) and log_sigma = ln 0.1 from the public stream; the
    /// ledger exists when sigma > 0. Cost O(d).
    pub fn new(
        config: DpviConfig,
        layout: Layout,
        rows: usize,
        batch_key: BatchKey,
    ) -> Result<Trainer, DpviError> {
        check_config(&config)?;
        let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
        let d = layout.dim();
        let mut mu: Vec<f64> = (0..d)
            .map(|_| INIT_MU_SCALE * rng.sample::<f64, _>(StandardNormal))
            .collect();
        layout.pin_target(&mut mu);
        let state = DpviState {
            iteration: 0,
            mu,
            log_sigma: vec![INIT_SIGMA_Q.ln(); d],
            adam_mu: Adam::new(config.adam, d),
            adam_log_sigma: Adam::new(config.adam, d),
            public_rng: RngState::of(&rng),
            batch_key,
            openings: 0,
            ledger: if config.sigma > 0.0 {
                Some(PrivacyLedger::new(
                    config.sigma,
                    Sampling::Poisson {
                        sample_rate: config.sample_rate,
                    },
                )?)
            } else {
                None
            },
            average: None,
        };
        Trainer::resume(config, layout, rows, state)
    }

    /// Continues from a saved state (checked against the layout; it carries the batch key).
    /// Cost O(d).
    pub fn resume(
        config: DpviConfig,
        layout: Layout,
        rows: usize,
        state: DpviState,
    ) -> Result<Trainer, DpviError> {
        check_config(&config)?;
        let d = layout.dim();
        if state.mu.len() != d
            || state.log_sigma.len() != d
            || state.adam_mu.m.len() != d
            || state.adam_log_sigma.m.len() != d
            || state
                .average
                .as_ref()
                .is_some_and(|a| a.mu.len() != d || a.log_sigma.len() != d)
        {
            return Err(DpviError::StateMismatch);
        }
        let rng = state.public_rng.restore();
        let padded = vtwin_dp::padded_batch_size(
            rows as u64,
            config.sample_rate,
            vtwin_dp::BATCH_OVERFLOW_TAIL,
        );
        Ok(Trainer {
            config,
            layout,
            rows,
            padded,
            state,
            rng,
        })
    }

    /// The inputs of the next iteration (module docs, step 1). Does not advance anything:
    /// planning twice gives the same plan. Cost O(N + d) draws.
    pub fn plan(&self) -> IterationPlan {
        let q = self.config.sample_rate;
        let (t, o) = (self.state.iteration, self.state.openings);
        let mut secret = self.state.batch_key.rng(t, o);
        let mut batch: Vec<usize> = (0..self.rows).filter(|_| secret.random_bool(q)).collect();
        let padded = self.padded.0;
        if batch.len() > padded {
            // Overflow (probability at most 2^-40 per opening, charged to delta): keep a
            // uniformly random subset of the public size, drawn from the same secret stream.
            let keep = rand::seq::index::sample(&mut secret, batch.len(), padded);
            let mut kept: Vec<usize> = keep.iter().map(|i| batch[i]).collect();
            kept.sort_unstable();
            batch = kept;
        }
        let mut rng = self.rng.clone();
        let d = self.layout.dim();
        let eta: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
        let sigma_q: Vec<f64> = self.state.log_sigma.iter().map(|l| l.exp()).collect();
        let mut theta: Vec<f64> = (0..d)
            .map(|i| self.state.mu[i] + sigma_q[i] * eta[i])
            .collect();
        self.layout
            .cap_beta_params(&mut theta, crate::layout::beta_log_cap(padded));
        self.layout.pin_target(&mut theta);
        IterationPlan {
            iteration: t,
            opening: o,
            batch,
            padded,
            theta,
            eta,
            sigma_q,
            rng_after: RngState::of(&rng),
        }
    }

    /// Charges the plan's opening (module docs, step 3): call it once G exists and before it
    /// is used, after recording the opening durably. Errors, charging nothing: a plan of
    /// another iteration, or of an opening already charged (a stale plan). The opening's
    /// `truncation_failure` (from the backend or the circuit's public parameters) goes into
    /// the ledger, and so into delta; its batch overflow is [`Trainer::padded_batch`]'s. Cost O(log r) for r ranges in the
    /// ledger.
    pub fn charge(
        &mut self,
        plan: &IterationPlan,
        truncation_failure: f64,
    ) -> Result<(), DpviError> {
        if plan.iteration != self.state.iteration || plan.opening != self.state.openings {
            return Err(DpviError::ChargeOutOfTurn {
                iteration: plan.iteration,
                opening: plan.opening,
                current: self.state.iteration,
                next_opening: self.state.openings,
            });
        }
        if let Some(ledger) = &mut self.state.ledger {
            ledger.charge_with(plan.opening, truncation_failure);
        }
        self.state.openings += 1;
        Ok(())
    }

    /// Charges openings recorded durably elsewhere (the opening log read at resume: openings
    /// after the checkpoint whose iterations were lost with a crash). Each is charged once
    /// (idempotent), and the next plan takes a fresh opening number above all of them.
    /// Returns how many were not charged before. Cost O(k log r).
    pub fn charge_recorded(&mut self, openings: impl IntoIterator<Item = (u64, f64)>) -> u64 {
        let mut new = 0;
        for (o, truncation_failure) in openings {
            let fresh = match &mut self.state.ledger {
                Some(ledger) => ledger.charge_with(o, truncation_failure),
                None => o >= self.state.openings,
            };
            new += u64::from(fresh);
            self.state.openings = self.state.openings.max(o + 1);
        }
        new
    }

    /// The public batch size every batch is padded to, and the per-opening probability that
    /// a Poisson batch overflows it (charged to delta): the 2^-40 quantile of
    /// Binomial(N, q). Cost O(1) (computed once).
    pub fn padded_batch(&self) -> (usize, f64) {
        self.padded
    }

    /// Completes the planned iteration with its gradient G (length d, layout order; module
    /// docs, step 4); the plan's opening must have been charged ([`Trainer::charge`]).
    /// Errors, changing nothing: a plan of another iteration (stale or foreign) or an
    /// uncharged opening, a gradient of the wrong length, non-finite parameters after the
    /// step ([`DpviError::Diverged`]). Cost O(d).
    pub fn apply(&mut self, plan: IterationPlan, gradient: &[f64]) -> Result<(), DpviError> {
        let d = self.layout.dim();
        if plan.iteration != self.state.iteration {
            return Err(DpviError::StalePlan {
                iteration: plan.iteration,
                current: self.state.iteration,
            });
        }
        if plan.opening + 1 != self.state.openings {
            return Err(DpviError::Uncharged {
                iteration: plan.iteration,
                opening: plan.opening,
                next_opening: self.state.openings,
            });
        }
        if gradient.len() != d || plan.theta.len() != d {
            return Err(DpviError::GradientLength {
                gradient: gradient.len(),
                theta: plan.theta.len(),
                expected: d,
            });
        }
        let q = self.config.sample_rate;
        let data_grad: Vec<f64> = gradient.iter().map(|g| g / q).collect();
        let (mut g_mu, mut g_ls) =
            elbo_gradients(&data_grad, &plan.theta, &plan.eta, &plan.sigma_q);
        // The target's logits are pinned, not trained: their gradient (noise, prior and
        // entropy terms) moves neither mu nor sigma.
        for i in self.layout.pinned() {
            g_mu[i] = 0.0;
            g_ls[i] = 0.0;
        }
        let mut mu = self.state.mu.clone();
        let mut ls = self.state.log_sigma.clone();
        let mut adam_mu = self.state.adam_mu.clone();
        let mut adam_ls = self.state.adam_log_sigma.clone();
        adam_mu.ascend(&mut mu, &g_mu);
        adam_ls.ascend(&mut ls, &g_ls);
        if !mu.iter().chain(&ls).all(|v| v.is_finite()) {
            return Err(DpviError::Diverged(self.state.iteration + 1));
        }
        if let Some(avg) = &mut self.state.average {
            avg.update(&mu, &ls);
        }
        self.state.mu = mu;
        self.state.log_sigma = ls;
        self.state.adam_mu = adam_mu;
        self.state.adam_log_sigma = adam_ls;
        self.state.iteration += 1;
        self.rng = plan.rng_after.restore();
        Ok(())
    }

    /// The state after the last completed iteration (captures the public generator).
    pub fn state(&self) -> DpviState {
        let mut s = self.state.clone();
        s.public_rng = RngState::of(&self.rng);
        s
    }

    /// Completed iterations (= the next plan's iteration).
    pub fn iteration(&self) -> u64 {
        self.state.iteration
    }

    /// Openings charged so far (= the next plan's opening; >= [`Trainer::iteration`]).
    pub fn openings(&self) -> u64 {
        self.state.openings
    }

    /// Posterior means: the current iterate (what the next theta is drawn around).
    pub fn mu(&self) -> &[f64] {
        &self.state.mu
    }

    /// Posterior log standard deviations: the current iterate.
    pub fn log_sigma(&self) -> &[f64] {
        &self.state.log_sigma
    }

    /// Chooses the released model of a fresh run ([`Averaging`]); errors after the first
    /// iteration unless it is the run's own setting (an average must see every step), or on
    /// a non-positive half-life. Cost O(d).
    pub fn set_averaging(&mut self, averaging: Averaging) -> Result<(), DpviError> {
        let averaging = averaging.check()?;
        if averaging == self.averaging() {
            return Ok(());
        }
        if self.state.iteration != 0 {
            return Err(DpviError::AveragingChanged {
                run: self.averaging(),
                asked: averaging,
            });
        }
        self.state.average = match averaging {
            Averaging::None => None,
            Averaging::Ema { half_life } => Some(IterateAverage::new(
                half_life,
                &self.state.mu,
                &self.state.log_sigma,
            )),
        };
        Ok(())
    }

    /// The run's averaging setting.
    pub fn averaging(&self) -> Averaging {
        self.state
            .average
            .as_ref()
            .map_or(Averaging::None, IterateAverage::averaging)
    }

    /// The released model's posterior means: the iterate average when the run keeps one,
    /// else the current iterate. model.json and the test NLL use these.
    pub fn model_mu(&self) -> &[f64] {
        self.state
            .average
            .as_ref()
            .map_or(&self.state.mu, |a| &a.mu)
    }

    /// The released model's posterior log standard deviations (as [`Trainer::model_mu`]).
    pub fn model_log_sigma(&self) -> &[f64] {
        self.state
            .average
            .as_ref()
            .map_or(&self.state.log_sigma, |a| &a.log_sigma)
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The configuration.
    pub fn config(&self) -> &DpviConfig {
        &self.config
    }

    /// Number of training records N.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The privacy ledger over openings (None when sigma = 0).
    pub fn ledger(&self) -> Option<&PrivacyLedger> {
        self.state.ledger.as_ref()
    }
}
