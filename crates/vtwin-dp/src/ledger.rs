//! The privacy ledger: which openings (released noised gradient sums) have been charged,
//! surviving checkpoint and resume.

use serde::{Deserialize, Serialize};

use crate::accounting::{
    epsilon, Accountant, AccountingError, Composition, Neighbouring, Sampling,
};

/// Why a ledger cannot be created.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The noise multiplier must be positive and finite.
    #[error("noise multiplier must be positive and finite, got {0}")]
    NoiseMultiplier(f64),
    /// The sampling rate must be in (0, 1].
    #[error("sample rate must be in (0, 1], got {0}")]
    SampleRate(f64),
    /// A disjoint-epoch run needs at least one batch per epoch.
    #[error("disjoint epochs need at least one batch per epoch")]
    NoBatches,
}

/// Records the openings whose noised gradient has been released.
///
/// The training loop calls [`PrivacyLedger::charge`] with the opening number of each release
/// (0, 1, 2, ... over the whole run; an iteration replayed after a crash or a failed update
/// is a new opening with a fresh batch, so it is charged again). Charging is idempotent per
/// opening, so an opening recorded both in a checkpoint and in the driver's write-ahead log
/// counts once; the ledger is `Serialize`/`Deserialize` and belongs in the checkpoint.
/// Charged openings are stored as sorted disjoint half-open ranges (one range for an
/// ordinary run), so the checkpoint stays small.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyLedger {
    noise_multiplier: f64,
    sampling: Sampling,
    charged: Vec<(u64, u64)>,
    /// Sum over the charged openings of the probability that the mechanism failed outside
    /// the Gaussian analysis (a truncation wrap, a batch overflow): added to delta.
    #[serde(default)]
    failure: f64,
}

impl PrivacyLedger {
    /// An empty ledger for noise multiplier `noise_multiplier` (noise std / clip) and `sampling`.
    pub fn new(noise_multiplier: f64, sampling: Sampling) -> Result<Self, LedgerError> {
        if !(noise_multiplier > 0.0 && noise_multiplier.is_finite()) {
            return Err(LedgerError::NoiseMultiplier(noise_multiplier));
        }
        match sampling {
            Sampling::Poisson { sample_rate } if !(sample_rate > 0.0 && sample_rate <= 1.0) => {
                return Err(LedgerError::SampleRate(sample_rate))
            }
            Sampling::DisjointEpochs {
                batches_per_epoch: 0,
            } => return Err(LedgerError::NoBatches),
            _ => {}
        }
        Ok(PrivacyLedger {
            noise_multiplier,
            sampling,
            charged: Vec::new(),
            failure: 0.0,
        })
    }

    /// Charges opening `opening` with `failure`, the probability that this opening's
    /// mechanism failed outside the Gaussian analysis (added to delta once, with the opening);
    /// returns `true` if it was not charged before. A negative or non-finite failure counts as
    /// 1 (the guarantee is then void). O(log ranges).
    pub fn charge_with(&mut self, opening: u64, failure: f64) -> bool {
        let fresh = self.charge(opening);
        if fresh {
            self.failure += if failure.is_finite() && failure >= 0.0 {
                failure
            } else {
                1.0
            };
        }
        fresh
    }

    /// The summed failure probability of the charged openings ([`PrivacyLedger::charge_with`]).
    pub fn failure(&self) -> f64 {
        self.failure
    }

    /// Charges opening `iteration` (the opening number) with no failure term; returns `true`
    /// if it was not charged before. O(log ranges).
    pub fn charge(&mut self, iteration: u64) -> bool {
        // First range whose end is >= iteration.
        let i = self.charged.partition_point(|&(_, end)| end < iteration);
        if let Some(&(start, end)) = self.charged.get(i) {
            if start <= iteration && iteration < end {
                return false;
            }
        }
        let next = iteration + 1;
        let joins_prev = i < self.charged.len() && self.charged[i].1 == iteration;
        let joins_next = {
            let j = if joins_prev { i + 1 } else { i };
            j < self.charged.len() && self.charged[j].0 == next
        };
        match (joins_prev, joins_next) {
            (true, true) => {
                self.charged[i].1 = self.charged[i + 1].1;
                self.charged.remove(i + 1);
            }
            (true, false) => self.charged[i].1 = next,
            (false, true) => self.charged[i].0 = iteration,
            (false, false) => self.charged.insert(i, (iteration, next)),
        }
        true
    }

    /// Whether `iteration` has been charged.
    pub fn is_charged(&self, iteration: u64) -> bool {
        let i = self.charged.partition_point(|&(_, end)| end <= iteration);
        self.charged
            .get(i)
            .is_some_and(|&(s, e)| s <= iteration && iteration < e)
    }

    /// Number of distinct openings charged (the composed steps).
    pub fn steps(&self) -> u64 {
        self.charged.iter().map(|(s, e)| e - s).sum()
    }

    /// The noise multiplier.
    pub fn noise_multiplier(&self) -> f64 {
        self.noise_multiplier
    }

    /// The sampling mode.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// The composition the outside analyst faces so far.
    pub fn composition(&self) -> Composition {
        let (sample_rate, steps) = self.sampling.for_hidden_batches(self.steps());
        Composition {
            noise_multiplier: self.noise_multiplier,
            sample_rate,
            steps,
        }
    }

    /// Epsilon at `delta` for the outside analyst (add/remove) by the RDP accountant: cheap
    /// (about a millisecond), suitable for every logged iteration. Use
    /// [`PrivacyLedger::epsilon_with`] or [`crate::PrivacyReport`] for the tight figures.
    pub fn epsilon(&self, delta: f64) -> Result<f64, AccountingError> {
        self.epsilon_with(Accountant::Rdp, delta, Neighbouring::AddRemove)
    }

    /// Epsilon at `delta` for the outside analyst by `accountant` under `relation`.
    pub fn epsilon_with(
        &self,
        accountant: Accountant,
        delta: f64,
        relation: Neighbouring,
    ) -> Result<f64, AccountingError> {
        epsilon(accountant, &self.composition(), delta, relation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn ledger() -> PrivacyLedger {
        PrivacyLedger::new(2.0, Sampling::Poisson { sample_rate: 0.01 }).unwrap()
    }

    #[test]
    fn charge_is_idempotent_and_survives_a_round_trip() {
        let mut l = ledger();
        for i in 0..100 {
            assert!(l.charge(i));
        }
        let json = serde_json::to_string(&l).unwrap();
        let mut resumed: PrivacyLedger = serde_json::from_str(&json).unwrap();
        assert_eq!(resumed, l);
        // The resumed run replays iterations 95..100 then continues.
        for i in 95..150 {
            resumed.charge(i);
        }
        assert_eq!(resumed.steps(), 150);
        assert_eq!(resumed.charged, vec![(0, 150)]);
        let e100 = l.epsilon(1e-5).unwrap();
        let e150 = resumed.epsilon(1e-5).unwrap();
        assert!(e150 > e100);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(matches!(
            PrivacyLedger::new(0.0, Sampling::FullBatch),
            Err(LedgerError::NoiseMultiplier(_))
        ));
        assert!(matches!(
            PrivacyLedger::new(1.0, Sampling::Poisson { sample_rate: 0.0 }),
            Err(LedgerError::SampleRate(_))
        ));
        assert!(matches!(
            PrivacyLedger::new(
                1.0,
                Sampling::DisjointEpochs {
                    batches_per_epoch: 0
                }
            ),
            Err(LedgerError::NoBatches)
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn matches_a_set(ops in proptest::collection::vec(0u64..200, 0..300)) {
            let mut l = ledger();
            let mut set = BTreeSet::new();
            for &i in &ops {
                prop_assert_eq!(l.charge(i), set.insert(i));
            }
            prop_assert_eq!(l.steps(), set.len() as u64);
            for i in 0..201 {
                prop_assert_eq!(l.is_charged(i), set.contains(&i));
            }
            for w in l.charged.windows(2) {
                prop_assert!(w[0].1 < w[1].0, "ranges must be disjoint and non-adjacent");
            }
        }
    }
}
