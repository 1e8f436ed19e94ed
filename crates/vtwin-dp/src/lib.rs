//! Exact discrete Gaussian noise, privacy accountants and the privacy ledger for vtwin.
//!
//! # Entry points
//!
//! **Noise** (each noise contributor, before the iteration's data phase):
//! ```
//! use num_bigint::BigInt;
//! use num_rational::BigRational;
//! use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! use vtwin_dp::{parse_decimal, pow2, DiscreteGaussian};
//!
//! // sigma * C * 2^32 with sigma = 2.042, C = 1, exactly; 2 contributors share the variance.
//! let sigma = parse_decimal("2.042").unwrap() * pow2(32);
//! let share = DiscreteGaussian::share_of(&(&sigma * &sigma), 2).unwrap();
//! let mut rng = ChaCha20Rng::seed_from_u64(1); // production: ChaCha20Rng::from_os_rng()
//! let noise = share.sample_share(&mut rng, 3000); // NoiseShare, zeroized on drop
//! assert_eq!(noise.len(), 3000);
//! # let _ = BigRational::from_integer(BigInt::from(1));
//! ```
//! - [`DiscreteGaussian`]: exact N_Z(0, σ²) for rational σ², `sample(&mut rng) -> i128`,
//!   `sample_share(&mut rng, n) -> NoiseShare`; [`DiscreteGaussian::share_of`] for N_Z(0, σ²/m).
//! - [`NoiseShare`]: a zeroize-on-drop buffer of secret noise.
//! - [`parse_decimal`], [`rational_from_f64`], [`pow2`]: exact rationals for σ.
//!
//! **Accounting** (the coordinator):
//! - [`PrivacyLedger`]: `new(sigma, sampling)`, `charge(iteration)` (idempotent per index, so
//!   a resumed run never double counts), `steps()`, `epsilon(delta)` (RDP, cheap),
//!   `epsilon_with(accountant, delta, relation)`; serde, store it in the checkpoint.
//! - [`calibrate_sigma`]: the noise multiplier for a target (ε, δ), q and steps;
//!   [`calibrate_sigma_charged`] the same with the run's failure terms charged to δ as the
//!   report charges them (what `--epsilon` uses).
//! - [`epsilon`] / [`epsilon_both`]: ε of a [`Composition`] by [`Accountant::Rdp`] or
//!   [`Accountant::Pld`], under [`Neighbouring::AddRemove`] or [`Neighbouring::ReplaceOne`].
//! - [`PrivacyReport::build`] from a [`PrivacySetting`]: the `privacy.json` object, with
//!   the per-observer figures (outside analyst, each party, each node).
//!
//! **Lower level**: [`rdp`] (Mironov-Talwar-Zhang RDP and the improved conversion),
//! [`pld`] (connect-the-dots PLD with a certified error bound), [`gaussian`] (exact
//! Gaussian profile), [`distributed`] (Kairouz-Liu-Steinke bound for sums of discrete
//! Gaussians).
//!
//! The protocol notes are `protocols/discrete-gaussian.md` and `protocols/accounting.md`;
//! the user-facing explanation is `docs/privacy.md`.

mod accounting;
mod bernoulli;
mod discrete_gaussian;
pub mod distributed;
pub mod gaussian;
mod ledger;
mod nat;
mod noise_share;
mod normal;
pub mod pld;
mod rational;
pub mod rdp;
mod report;

pub use accounting::{
    binomial_upper_tail, calibrate_sigma, calibrate_sigma_charged, epsilon, epsilon_both,
    padded_batch_size, participation_bound, Accountant, AccountingError, Composition, Neighbouring,
    Sampling, BATCH_OVERFLOW_TAIL,
};
pub use discrete_gaussian::{DiscreteGaussian, SamplerError};
pub use distributed::{kls_bound, DistributedBound, DistributedError};
pub use ledger::{LedgerError, PrivacyLedger};
pub use noise_share::NoiseShare;
pub use rational::{parse_decimal, pow2, rational_from_f64, DecimalError};
pub use report::{
    amplified_delta, EpsilonPair, NoiseContributors, ObserverReport, PrivacyReport, PrivacySetting,
    ReportError,
};
