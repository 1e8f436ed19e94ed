//! The gradient-backend seam: the private part of one DPVI iteration.
//!
//! A backend receives the public theta_t, the clip bound C, the noise multiplier sigma and,
//! from every party, only that party's batch of sufficient statistics ([`PartyBatch`]), and
//! returns G = sum_n c_n g_n + Z, the noised sum of clipped per-example gradients of the
//! data term log p(x_n | theta) (length d, [`crate::layout`] order), with Z of standard
//! deviation sigma C per coordinate. Nothing else about the data leaves a backend except
//! [`Diagnostics`], which are for tests and benchmarks of a simulation only (they are
//! data-dependent: a deployment must not release them).
//!
//! Implementations: [`crate::float_backend::FloatBackend`] (f64, log space, the non-partitioned
//! baseline) and [`crate::fixed_backend::FixedBackend`] (`docs/architecture.md` steps 2-4 in plaintext fixed
//! point). The MPC backend implements the same trait with the same inputs: each party runs
//! the local kernels on its own [`PartyBatch`] and secret-shares the results
//! ([`crate::party_upload::party_messages`]), and each party's noise share comes from that
//! party's generator in [`NoiseRngs`], positioned at the iteration ([`NoiseRngs::seek`], so
//! seeded noise is a function of (seed, party, t)).

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::kernels::KernelError;
use crate::layout::Layout;
use crate::party_data::PartyBatch;
use crate::rng_state::RngState;
use vtwin_iteration::randomness::seeded_noise_rng;

/// The noise of one iteration: Z has standard deviation `sigma * clip` per coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseConfig {
    /// Noise multiplier sigma >= 0; 0 turns noise off (tests only: no privacy).
    pub sigma: f64,
}

/// One iteration's public inputs and the parties' private batches.
#[derive(Clone, Copy, Debug)]
pub struct GradientInput<'a> {
    /// The parameter layout.
    pub layout: &'a Layout,
    /// The iteration t (0-based): seeded secret randomness and seeded noise generators are
    /// functions of it ([`vtwin_iteration::randomness`]), so a retried iteration redraws them.
    pub iteration: u64,
    /// theta_t (length d), public.
    pub theta: &'a [f64],
    /// One batch per party, in layout order, all with the same number of rows B (B may be 0).
    pub parties: &'a [PartyBatch],
    /// Clip bound C > 0 on the L2 norm of each per-example gradient.
    pub clip: f64,
    /// Noise.
    pub noise: NoiseConfig,
    /// The responsibilities' inverse temperature at this iteration, in (0, 1]
    /// ([`crate::tempering`]): 1 is the model's own posterior over components. Public.
    pub beta: f64,
}

/// What a backend observed; simulation diagnostics only (see module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diagnostics {
    /// B.
    pub records: usize,
    /// Records whose gradient norm exceeded C.
    pub clipped: usize,
    /// Records whose den underflowed to 0 (fixed backend; their responsibilities are 0).
    pub den_zero: usize,
    /// Milliseconds in the parties' local kernels (all parties, sequentially).
    pub local_ms: f64,
    /// Milliseconds combining the parties' inputs (the node-side work).
    pub combine_ms: f64,
    /// Milliseconds sampling noise (mpc: inside `local_ms`, each party samples its own share
    /// in `party_messages`; 0 here).
    pub noise_ms: f64,
}

/// A backend's result for one iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientOutput {
    /// G = sum_n c_n g_n + Z, length d.
    pub gradient: Vec<f64>,
    /// Diagnostics.
    pub diagnostics: Diagnostics,
    /// Upper bound on the probability that a probabilistic truncation of this iteration
    /// wrapped (`protocols/truncation-failure.md`): 0 for exact arithmetic (float, and the
    /// fixed backend's floor truncation), charged to delta with the opening.
    pub truncation_failure: f64,
}

/// Why a backend could not produce a gradient.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// A local kernel failed.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// theta does not have the layout's d values.
    #[error("gradient input: theta has {got} values, the layout needs {expected}")]
    ThetaLength {
        /// Values given.
        got: usize,
        /// d.
        expected: usize,
    },
    /// A parameter is NaN or infinite.
    #[error("gradient input: theta[{index}] is not finite")]
    ThetaNotFinite {
        /// Its index in the layout.
        index: usize,
    },
    /// Not one batch per party.
    #[error("gradient input: {got} party batches for {expected} parties")]
    PartyCount {
        /// Batches given.
        got: usize,
        /// Parties in the layout.
        expected: usize,
    },
    /// A party index outside the layout.
    #[error("gradient input: party index {index} for {parties} parties")]
    PartyIndex {
        /// The index given.
        index: usize,
        /// Parties in the layout.
        parties: usize,
    },
    /// A party's batch has another party's index, width or row count.
    #[error("gradient input: party {party}: batch does not match the layout or the other parties' row count")]
    BatchMismatch {
        /// Party name.
        party: String,
    },
    /// A noise vector whose length is not d.
    #[error("gradient input: {got} noise values, the layout needs {expected}")]
    NoiseLength {
        /// Values given.
        got: usize,
        /// d.
        expected: usize,
    },
    /// A party's upload could not be secret-shared.
    #[error("party {party}: {source}")]
    Shard {
        /// Party name.
        party: String,
        /// Why.
        source: vtwin_iteration::party::ShardError,
    },
    /// A party's value is outside what the fixed-point pipeline can represent.
    #[error("party {party}: {what} = {value} is outside the fixed-point range {range}")]
    Range {
        /// Party name.
        party: String,
        /// Which quantity.
        what: &'static str,
        /// The offending value.
        value: f64,
        /// The documented range.
        range: &'static str,
    },
    /// The clipping bound C is not positive and finite.
    #[error("clipping bound C = {0} must be positive and finite")]
    Clip(f64),
    /// The noise multiplier sigma is negative or not finite.
    #[error("noise multiplier sigma = {0} must be non-negative and finite")]
    Sigma(f64),
    /// The responsibilities' inverse temperature is not in (0, 1] ([`crate::tempering`]).
    #[error("tempering beta = {0} must be in (0, 1]")]
    Beta(f64),
    /// The exact discrete Gaussian noise law could not be built.
    #[error("noise: {0}")]
    NoiseLaw(#[from] vtwin_dp::SamplerError),
    /// The floating-point Gaussian noise law could not be built.
    #[error("noise: {0}")]
    NoiseNormal(#[from] rand_distr::NormalError),
    /// The public values of the circuit (weights, score maps, clip) do not encode.
    #[error("circuit public values: {0}")]
    Public(#[from] vtwin_iteration::coordinator::PublicError),
    /// The public side fails a node's check (`vtwin_iteration::public_bounds`): never for
    /// the public side this crate builds.
    #[error("circuit public values outside the clip proof's bounds: {0}")]
    PublicBounds(#[from] vtwin_iteration::public_bounds::BoundsError),
    /// The public ranges give no finite truncation-failure bound (den or the squared norm
    /// could leave its window): refused before anything is opened.
    #[error("the public ranges give no finite truncation-failure bound (a value could leave its window)")]
    UnboundedTruncation,
    /// The MPC protocol failed (a node error, or a node that did not finish).
    #[error("mpc: {0}")]
    Mpc(#[from] vtwin_mpc::MpcError),
}

impl GradientInput<'_> {
    /// Checks shapes and parameters; every backend calls it first.
    pub fn validate(&self) -> Result<usize, BackendError> {
        if self.theta.len() != self.layout.dim() {
            return Err(BackendError::ThetaLength {
                got: self.theta.len(),
                expected: self.layout.dim(),
            });
        }
        if let Some(i) = self.theta.iter().position(|t| !t.is_finite()) {
            return Err(BackendError::ThetaNotFinite { index: i });
        }
        if self.parties.len() != self.layout.n_parties() {
            return Err(BackendError::PartyCount {
                got: self.parties.len(),
                expected: self.layout.n_parties(),
            });
        }
        let b = self.parties.first().map_or(0, |p| p.rows);
        let real = self.parties.first().map_or(0, |p| p.real);
        for (p, batch) in self.parties.iter().enumerate() {
            if batch.party != p
                || batch.rows != b
                || batch.real != real
                || real > b
                || batch.width != self.layout.stat_width(p)
                || batch.stats.len() != b * batch.width
            {
                return Err(BackendError::BatchMismatch {
                    party: self.layout.parties[p].clone(),
                });
            }
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(BackendError::Clip(self.clip));
        }
        if !(self.noise.sigma.is_finite() && self.noise.sigma >= 0.0) {
            return Err(BackendError::Sigma(self.noise.sigma));
        }
        if !(self.beta > 0.0 && self.beta <= 1.0) {
            return Err(BackendError::Beta(self.beta));
        }
        Ok(b)
    }

    /// The public mixture weights pi = softmax(theta[0..K]).
    pub fn weights(&self) -> Vec<f64> {
        softmax(&self.theta[..self.layout.components])
    }
}

/// softmax(z), stable.
pub fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}

/// The secret noise generators, one per party (each party samples its own share).
///
/// Production ([`NoiseRngs::from_os`]): every generator is seeded from the OS CSPRNG and is
/// never written anywhere, so a resumed or retried iteration draws fresh noise.
///
/// Tests and reproducible simulations ([`NoiseRngs::seeded`]): party p's generator for
/// iteration t is [`seeded_noise_rng`]`(seed, p, t)`, a pure function, and
/// [`NoiseRngs::seek`] positions every generator there. A retried iteration therefore redraws
/// identical noise, a resumed run needs no generator state, and a party process builds its own
/// generator for iteration t without the others'. Whoever knows the seed can subtract the
/// noise, which voids the privacy guarantee.
#[derive(Clone, Debug)]
pub struct NoiseRngs {
    rngs: Vec<ChaCha20Rng>,
    seed: Option<u64>,
}

impl NoiseRngs {
    /// One OS-seeded generator per party.
    pub fn from_os(parties: usize) -> NoiseRngs {
        NoiseRngs {
            rngs: (0..parties).map(|_| ChaCha20Rng::from_os_rng()).collect(),
            seed: None,
        }
    }

    /// Generators derived from `seed`, positioned at iteration 0 (see [`NoiseRngs::seek`]).
    /// No privacy.
    pub fn seeded(seed: u64, parties: usize) -> NoiseRngs {
        NoiseRngs {
            rngs: (0..parties).map(|p| seeded_noise_rng(seed, p, 0)).collect(),
            seed: Some(seed),
        }
    }

    /// Positions every generator at the start of iteration `t`: seeded generators become
    /// [`seeded_noise_rng`]`(seed, p, t)` (so calling it again for the same t redraws the same
    /// noise); OS-seeded generators are left as they are (fresh noise). Cost O(P) SHA-256.
    pub fn seek(&mut self, t: u64) {
        if let Some(seed) = self.seed {
            for (p, r) in self.rngs.iter_mut().enumerate() {
                *r = seeded_noise_rng(seed, p, t);
            }
        }
    }

    /// The insecure seed, if the generators are seeded from one.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// Whether the generators are seeded from a number (no privacy).
    pub fn is_reproducible(&self) -> bool {
        self.seed.is_some()
    }

    /// What a checkpoint taken before iteration `next` records about the noise: for seeded
    /// generators their states at the start of iteration `next` (a fingerprint of the seed:
    /// [`NoiseRngs::check_checkpoint`] compares it on resume; the states themselves are not
    /// needed, the generators being pure functions of (seed, p, t)); `None` for OS-seeded
    /// ones, which are never written.
    pub fn checkpoint_states(&self, next: u64) -> Option<Vec<RngState>> {
        self.seed.map(|seed| {
            (0..self.rngs.len())
                .map(|p| RngState::of(&seeded_noise_rng(seed, p, next)))
                .collect()
        })
    }

    /// Checks that these generators can resume a checkpoint taken before iteration `next`
    /// whose noise record is `states` ([`NoiseRngs::checkpoint_states`]): both OS-seeded, or
    /// both seeded from the same seed. Checkpoints of older versions (sequential seeded
    /// streams) do not match and are refused. The error says why.
    pub fn check_checkpoint(
        &self,
        states: Option<&[RngState]>,
        next: u64,
    ) -> Result<(), NoiseResumeError> {
        match (states, self.checkpoint_states(next)) {
            (None, None) => Ok(()),
            (Some(_), None) => Err(NoiseResumeError::NeedSeed),
            (None, Some(_)) => Err(NoiseResumeError::Unseeded),
            (Some(have), Some(want)) if have == want.as_slice() => Ok(()),
            (Some(_), Some(_)) => Err(NoiseResumeError::Mismatch),
        }
    }

    /// Number of generators.
    pub fn len(&self) -> usize {
        self.rngs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rngs.is_empty()
    }

    /// Party p's generator, at its current position.
    pub fn party(&mut self, p: usize) -> &mut ChaCha20Rng {
        &mut self.rngs[p]
    }
}

/// Why seeded noise generators cannot resume a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoiseResumeError {
    /// The checkpointed run used a noise seed and this one does not.
    #[error("the checkpointed run seeded its noise; give the same noise seed")]
    NeedSeed,
    /// This run has a noise seed and the checkpointed run did not.
    #[error("the checkpointed run drew its noise from the OS; give no noise seed")]
    Unseeded,
    /// Different seed, or a checkpoint of an older version (sequential noise streams).
    #[error("the checkpoint's noise generators do not match this noise seed (a different seed, or a checkpoint written by an older vtwin with sequential noise streams: start the run again)")]
    Mismatch,
}

/// A gradient backend: see the module documentation.
pub trait GradientBackend {
    /// "float", "fixed", "mpc".
    fn name(&self) -> &'static str;

    /// G = sum_n min(1, C/|g_n|) g_n + Z for the batch; see the module documentation.
    fn gradient(
        &mut self,
        input: &GradientInput<'_>,
        noise: &mut NoiseRngs,
    ) -> Result<GradientOutput, BackendError>;
}
