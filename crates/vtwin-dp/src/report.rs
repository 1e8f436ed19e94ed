//! The privacy report (`privacy.json`): epsilon per accountant and neighbouring relation, and
//! the epsilon each observer faces.
//!
//! Observers (paper section 5, `docs/privacy.md`):
//! - outside analyst: sees the released model; batch membership is hidden, so amplification
//!   by subsampling applies (Theorems 5.1, 5.2).
//! - each party: knows the batch indices, so no amplification (q = 1 over all steps, or the
//!   disjoint-minibatch epoch bound of section 5.2); if parties contribute the noise it knows
//!   its own share, so the noise it does not know has variance (P-1)/P σ² (Theorem 5.4).
//! - the coordinator: samples the batches, so it knows the indices (no amplification), and
//!   receives G + Z, but holds no noise share: the party bound with the full noise σ².
//! - each compute node: sees uniformly random replicated shares, the public parameters (a
//!   post-processing of earlier outputs) and the batch size B_t of every iteration. B_t is a
//!   function of the batch indices, so a node's view is a post-processing of the
//!   coordinator's (indices and G + Z) plus independent randomness: its figure is the
//!   coordinator's (an upper bound; the analyst's figure does not cover B_t). If nodes
//!   contribute the noise, a node also knows its share: variance (m-1)/m σ² with m nodes.
//!
//! Every figure is given under add/remove and under replace-one (VP-adjacency), see
//! [`crate::accounting::epsilon`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::accounting::{
    binomial_upper_tail, epsilon_both, participation_bound, Accountant, AccountingError,
    Composition, Sampling,
};
use crate::distributed::{kls_bound, DistributedBound, DistributedError};

/// Who samples the noise shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseContributors {
    /// Every party samples N_Z(0, σ²/P) (the paper's default).
    Parties,
    /// Every compute node samples N_Z(0, σ²/m).
    Nodes,
}

/// Inputs of a privacy report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacySetting {
    /// Noise multiplier σ: noise standard deviation over the clipping bound.
    pub noise_multiplier: f64,
    /// Clipping bound C (per-record L2 sensitivity under add/remove).
    pub clip: f64,
    /// Batch sampling.
    pub sampling: Sampling,
    /// Iterations released so far (or planned).
    pub steps: u64,
    /// Target delta.
    pub delta: f64,
    /// Number of data-holding parties P (>= 1).
    pub parties: u32,
    /// Number of compute nodes (3 for replicated sharing).
    pub nodes: u32,
    /// Who contributes the noise.
    pub noise_by: NoiseContributors,
    /// Fixed-point fractional bits of the noised sum (32).
    pub scale_bits: u32,
    /// Gradient dimension d (for the distributed discrete Gaussian bound).
    pub dimension: u64,
    /// Accountants to run.
    pub accountants: Vec<Accountant>,
    /// Summed bound, over the run, on the probability that a probabilistic truncation
    /// wrapped ([`crate::PrivacyLedger::failure`]). Observers who know the batches pay
    /// `2 truncation_failure` of delta (the no-wrap event is the same for both neighbours,
    /// given the batch); the outside analyst pays `(1 + e^epsilon)` times it (a total
    /// variation argument), with the batch overflows.
    #[serde(default)]
    pub truncation_failure: f64,
    /// Summed probability, over the run, that a Poisson batch exceeded the public padded size
    /// and was trimmed. Changes nothing for observers who know the (trimmed) batches; the
    /// outside analyst pays `(1 + e^epsilon)` times it.
    #[serde(default)]
    pub batch_overflow: f64,
    /// Summed over the run, the probability that a record one neighbour adds is sampled into
    /// a batch whose other records already fill the padded size, so that trimming may push
    /// another record out (a step of sensitivity 2C under add/remove): `q T P(Bin(N, q) >=
    /// B)`. Observers who know the batches pay it additively (the event depends on the
    /// sampling only); 0 where no batch is trimmed or the caller cannot compute it (planning
    /// figures without N).
    #[serde(default)]
    pub trim_risk: f64,
    /// Batches are padded to a public size, so a compute node's view does not depend on the
    /// batch sizes (it then faces the outside analyst's figure).
    #[serde(default)]
    pub padded_batches: bool,
}

impl PrivacySetting {
    /// The paper's defaults around the given figures: 2 parties, 3 nodes, parties contribute
    /// noise, scale 2^32, clip 1, dimension 1, both accountants.
    pub fn new(noise_multiplier: f64, sampling: Sampling, steps: u64, delta: f64) -> Self {
        PrivacySetting {
            noise_multiplier,
            clip: 1.0,
            sampling,
            steps,
            delta,
            parties: 2,
            nodes: 3,
            noise_by: NoiseContributors::Parties,
            scale_bits: 32,
            dimension: 1,
            accountants: Accountant::ALL.to_vec(),
            truncation_failure: 0.0,
            batch_overflow: 0.0,
            trim_risk: 0.0,
            padded_batches: false,
        }
    }
}

/// Why a report cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// An accountant rejected the parameters.
    #[error(transparent)]
    Accounting(#[from] AccountingError),
    /// The distributed discrete Gaussian bound rejected the parameters.
    #[error(transparent)]
    Distributed(#[from] DistributedError),
    /// `--parties` must be at least 1 and the node count at least 1.
    #[error("need at least one party and one node, got {parties} parties and {nodes} nodes")]
    Roles {
        /// Parties given.
        parties: u32,
        /// Nodes given.
        nodes: u32,
    },
    /// The clipping bound must be positive.
    #[error("clip must be positive and finite, got {0}")]
    Clip(f64),
    /// The mechanism's own failure probability leaves no delta for the accountants.
    #[error("the mechanism's failure probability {failure:e} is not below delta {delta:e}")]
    Failure {
        /// The failure probability.
        failure: f64,
        /// The target delta.
        delta: f64,
    },
}

/// Epsilon under each neighbouring relation; `None` means unbounded (no unknown noise).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EpsilonPair {
    /// Add/remove one record.
    pub add_remove: Option<f64>,
    /// Replace one record (VP-adjacency).
    pub replace_one: Option<f64>,
}

/// The figure one observer faces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserverReport {
    /// "outside analyst", "party 0", ..., "node 0", ..., "coordinator" (0-based, as the
    /// roles are numbered everywhere else)
    pub observer: String,
    /// "analyst", "party", "node" or "coordinator".
    pub role: String,
    /// Sampling rate the accounting uses for this observer (1: no amplification).
    pub sample_rate: f64,
    /// Number of composed steps for this observer.
    pub steps: u64,
    /// Noise multiplier of the noise this observer does not know (after the distributed
    /// discrete Gaussian correction); 0 when it knows all of it.
    pub noise_multiplier: f64,
    /// Epsilon per accountant.
    pub epsilon: BTreeMap<String, EpsilonPair>,
    /// Why these parameters apply to this observer.
    pub reason: String,
}

/// The contents of `privacy.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyReport {
    /// Noise multiplier σ.
    pub sigma: f64,
    /// Clipping bound C.
    pub clip: f64,
    /// Nominal per-iteration sampling rate.
    pub sample_rate: f64,
    /// Batch sampling mode.
    pub sampling: Sampling,
    /// Composed steps: the released openings of G + Z (an iteration replayed after a crash or
    /// a failed update is a fresh, independently subsampled opening and counts again).
    pub steps: u64,
    /// Delta of every figure, the target; `delta_terms` says how each observer's accountant
    /// spends it.
    pub delta: f64,
    /// How delta is spent: the accountants run at `accountant_hidden_batches` for the outside
    /// analyst's add/remove figures (and nodes with padded batches), `delta - (1 +
    /// e^epsilon)(truncation_failure + batch_overflow)` with that relation's epsilon, at
    /// `accountant_hidden_batches_replace_one` for its replace-one figures (the same with
    /// replace-one's epsilon; each absent when that relation's amplification is void and its
    /// figures are the coordinator's), and at `accountant_known_batches`, `delta - 2
    /// truncation_failure - trim_risk`, for the observers who know the batches (before their
    /// participation-bound tail).
    pub delta_terms: BTreeMap<String, f64>,
    /// Epsilon for the outside analyst per accountant ("rdp", "pld").
    pub epsilon: BTreeMap<String, EpsilonPair>,
    /// The neighbouring relations used, by name.
    pub neighbouring: BTreeMap<String, String>,
    /// Who contributes the noise and how many shares sum to it.
    pub noise_by: NoiseContributors,
    /// Number of noise shares summed.
    pub noise_shares: u32,
    /// Standard deviation of the summed noise in fixed-point integer units, σ C 2^scale_bits.
    pub noise_sigma_integer: f64,
    /// The Kairouz-Liu-Steinke bound for the full sum of shares.
    pub distributed: DistributedBound,
    /// One entry per observer.
    pub per_observer: Vec<ObserverReport>,
}

/// Epsilon per accountant name.
type Figures = BTreeMap<String, EpsilonPair>;

/// The figures of an observer who gets amplification by subsampling, when the real
/// mechanism differs from the analysed one with probability at most `failure` on every input
/// (a total-variation argument: `(epsilon, delta_acc + (1 + e^epsilon) failure)`).
/// `eval(delta_acc)` computes the figures and `largest` their largest epsilon. Since epsilon
/// depends on delta_acc only weakly, `delta_acc = delta - (1 + e^(eps + 1)) failure` with eps
/// the largest figure at `delta - 2 failure`, and the figures at delta_acc must stay below
/// eps + 1. Returns the figures and delta_acc, or None where that leaves no delta (large
/// epsilon: the caller falls back to a figure without amplification). Cost: two evaluations
/// (one when `failure` is 0).
pub fn amplified_delta<T, E>(
    delta: f64,
    failure: f64,
    eval: impl Fn(f64) -> Result<T, E>,
    largest: impl Fn(&T) -> f64,
) -> Result<Option<(T, f64)>, E> {
    if failure == 0.0 {
        return Ok(Some((eval(delta)?, delta)));
    }
    let start = delta - 2.0 * failure;
    if start.is_nan() || start <= 0.0 {
        return Ok(None);
    }
    let cap = largest(&eval(start)?) + 1.0;
    let delta_acc = delta - (1.0 + cap.exp()) * failure;
    if delta_acc.is_nan() || delta_acc <= 0.0 {
        return Ok(None);
    }
    let fig = eval(delta_acc)?;
    Ok((largest(&fig) <= cap).then_some((fig, delta_acc)))
}

fn to_opt(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Epsilon per accountant for `(q, steps)` and noise multiplier `noise`; all `None` if no
/// noise is unknown to the observer.
fn figures(
    accountants: &[Accountant],
    noise: f64,
    q: f64,
    steps: u64,
    delta: f64,
) -> Result<BTreeMap<String, EpsilonPair>, AccountingError> {
    let mut out = BTreeMap::new();
    for &acc in accountants {
        let pair = if noise > 0.0 {
            let c = Composition {
                noise_multiplier: noise,
                sample_rate: q,
                steps,
            };
            let (ar, ro) = epsilon_both(acc, &c, delta)?;
            EpsilonPair {
                add_remove: to_opt(ar),
                replace_one: to_opt(ro),
            }
        } else {
            EpsilonPair {
                add_remove: None,
                replace_one: None,
            }
        };
        out.insert(acc.name().to_owned(), pair);
    }
    Ok(out)
}

impl PrivacyReport {
    /// Computes every figure. Cost: one accountant run per (observer kind, accountant); the
    /// PLD runs dominate (about a second each for 20000 steps).
    pub fn build(s: &PrivacySetting) -> Result<PrivacyReport, ReportError> {
        if s.parties == 0 || s.nodes == 0 {
            return Err(ReportError::Roles {
                parties: s.parties,
                nodes: s.nodes,
            });
        }
        if !(s.clip > 0.0 && s.clip.is_finite()) {
            return Err(ReportError::Clip(s.clip));
        }
        // The mechanism's own failures come out of delta. Known batches: given the batch,
        // the event "no truncation wraps, with these masks, for D nor for D'" is the same for
        // both neighbours and has probability >= 1 - 2 truncation_failure; on it the release
        // is a mixture over masks of Gaussian mechanisms of sensitivity C, so the composed
        // hockey-stick divergence grows by at most 2 truncation_failure. Trimming: off the
        // event `trim_risk` (a data-independent sampling event) no trimmed batch holds the
        // added record, so the steps keep sensitivity C.
        let failure = s.truncation_failure + s.batch_overflow;
        let delta_known = s.delta - 2.0 * s.truncation_failure - s.trim_risk;
        if !(s.truncation_failure >= 0.0
            && s.batch_overflow >= 0.0
            && s.trim_risk >= 0.0
            && delta_known > 0.0)
        {
            return Err(ReportError::Failure {
                failure,
                delta: s.delta,
            });
        }
        let delta = delta_known;
        // Validate the rest once through the accountant.
        let (q_hidden, t_hidden) = s.sampling.for_hidden_batches(s.steps);
        let (q_known, t_known) = s.sampling.for_known_batches(s.steps);
        let m = match s.noise_by {
            NoiseContributors::Parties => s.parties,
            NoiseContributors::Nodes => s.nodes,
        };
        let unit = s.clip * 2f64.powi(s.scale_bits as i32);
        let sigma_int = s.noise_multiplier * unit;
        // Noise multiplier after the KLS correction for `n` unknown shares of the m.
        let corrected = |n: u32| -> Result<(f64, Option<DistributedBound>), ReportError> {
            if n == 0 {
                return Ok((0.0, None));
            }
            let share_sigma = sigma_int / f64::from(m).sqrt();
            let b = kls_bound(share_sigma, n, unit, s.dimension)?;
            let noise = s.noise_multiplier * (f64::from(n) / f64::from(m)).sqrt() * b.noise_factor;
            Ok((noise, Some(b)))
        };
        let (analyst_noise, full) = corrected(m)?;
        let distributed = full.ok_or(ReportError::Roles {
            parties: s.parties,
            nodes: s.nodes,
        })?;
        // With Poisson batches an observer who knows the batches can use the participation
        // bound: with probability 1 - tail a record is in at most k batches (the sampling
        // ignores the data).
        let (t_party, delta_party, participation) = match s.sampling {
            Sampling::Poisson { sample_rate } if sample_rate < 1.0 => {
                let k = participation_bound(s.steps, sample_rate, delta / 2.0);
                let tail = binomial_upper_tail(s.steps, sample_rate, k);
                (k, delta - tail, Some((k, tail)))
            }
            _ => (t_known, delta, None),
        };
        // The coordinator samples the batches and opens G + Z; it holds no noise share.
        let coordinator_fig =
            figures(&s.accountants, analyst_noise, q_known, t_party, delta_party)?;

        // Hidden batches (amplification): the real mechanism differs from the analysed one
        // (Poisson batches, exact arithmetic) with probability at most `failure` on each
        // input, so it is (epsilon, delta_acc + (1 + e^epsilon) failure)-DP for the epsilon
        // it certifies. epsilon depends on delta_acc only weakly: take delta_acc for an
        // epsilon one above the figure at delta - 2 failure, and check that the figures stay
        // below it. Each relation's statement is its own, so each gets its own charge
        // (add/remove at its own epsilon, not replace-one's, about twice as large).
        // None when the factor e^epsilon makes the argument void (large epsilon): that
        // relation's figure is then the coordinator's, which needs no amplification (the
        // analyst's view, the released sums, is a post-processing of the coordinator's).
        let hidden = |d: f64| figures(&s.accountants, analyst_noise, q_hidden, t_hidden, d);
        let largest = |pick: fn(&EpsilonPair) -> Option<f64>| {
            move |f: &Figures| f.values().filter_map(pick).fold(0.0f64, f64::max)
        };
        let add_remove = amplified_delta(s.delta, failure, hidden, largest(|p| p.add_remove))?;
        let replace_one = amplified_delta(s.delta, failure, hidden, largest(|p| p.replace_one))?;
        let pick = |amplified: &Option<(Figures, f64)>, acc: &str| {
            amplified.as_ref().map_or(&coordinator_fig, |(f, _)| f)[acc]
        };
        let analyst: Figures = s
            .accountants
            .iter()
            .map(|acc| {
                let name = acc.name();
                let pair = EpsilonPair {
                    add_remove: pick(&add_remove, name).add_remove,
                    replace_one: pick(&replace_one, name).replace_one,
                };
                (name.to_owned(), pair)
            })
            .collect();
        let is_amplified = add_remove.is_some();
        let (q_analyst, t_analyst) = if is_amplified {
            (q_hidden, t_hidden)
        } else {
            (q_known, t_party)
        };
        let fallback = format!(
            "the mechanism's failure terms (times 1 + e^epsilon) would exceed delta, so the \
             figure is the coordinator's (the analyst's view is a post-processing of it: q = 1 \
             over {t_party} steps, at delta {delta_party:.3e})"
        );
        let amplified = "batch membership is hidden, so amplification by subsampling applies \
                         to the sum of all noise shares (paper Theorems 5.1, 5.2)";
        let reason = match (is_amplified, replace_one.is_some()) {
            (true, true) => format!("sees only the released parameters; {amplified}"),
            (true, false) => format!(
                "sees only the released parameters; {amplified} for the add/remove figures; \
                 for replace-one, at its epsilon {fallback}"
            ),
            (false, true) => format!(
                "sees only the released parameters; amplification is claimed for the \
                 replace-one figures only: for add/remove, at its epsilon {fallback}"
            ),
            (false, false) => format!(
                "sees only the released parameters; amplification is not claimed here: at \
                 this epsilon {fallback}"
            ),
        };
        let mut per_observer = vec![ObserverReport {
            observer: "outside analyst".into(),
            role: "analyst".into(),
            sample_rate: q_analyst,
            steps: t_analyst,
            noise_multiplier: analyst_noise,
            epsilon: analyst.clone(),
            reason,
        }];

        // Parties.
        let (party_noise, party_reason) = match s.noise_by {
            NoiseContributors::Parties => (
                corrected(m - 1)?.0,
                format!(
                    "knows the batch indices (no amplification: {}) and its own noise share, so \
                     the unknown noise has variance (P-1)/P sigma^2 with P = {m} (paper Theorem 5.4)",
                    known_batches_text(&s.sampling)
                ),
            ),
            NoiseContributors::Nodes => (
                analyst_noise,
                format!(
                    "knows the batch indices (no amplification: {}) but no noise share \
                     (paper Theorem 5.3)",
                    known_batches_text(&s.sampling)
                ),
            ),
        };
        let party_fig = figures(&s.accountants, party_noise, q_known, t_party, delta_party)?;
        let participation_text = |reason: String| match participation {
            Some((k, tail)) => format!(
                "{reason}; a record is in at most k = {k} of the {} batches except with \
                 probability {tail:.3e} (binomial tail, charged to delta), so the figure is the \
                 k-fold composition at delta - {tail:.3e}",
                s.steps
            ),
            None => reason,
        };
        let party_reason = participation_text(party_reason);
        // 0-based, as in certificates (party-0, node-0), configs and every log and error.
        for p in 0..s.parties {
            per_observer.push(ObserverReport {
                observer: format!("party {p}"),
                role: "party".into(),
                sample_rate: q_known,
                steps: t_party,
                noise_multiplier: party_noise,
                epsilon: party_fig.clone(),
                reason: party_reason.clone(),
            });
        }

        let coordinator_reason = participation_text(format!(
            "samples the batches, so it knows the indices (no amplification: {}), and opens \
             G + Z, but holds no noise share (a coordinator run by a party has the party's figure)",
            known_batches_text(&s.sampling)
        ));

        // Nodes: their view (shares, public parameters, batch sizes) is a post-processing of
        // the coordinator's plus independent randomness.
        let (node_noise, node_fig, node_reason) = match s.noise_by {
            NoiseContributors::Nodes => {
                let noise = corrected(m - 1)?.0;
                (
                    noise,
                    figures(&s.accountants, noise, q_known, t_party, delta_party)?,
                    participation_text(format!(
                        "learns the batch size of every iteration (a function of the indices, so \
                         no amplification is claimed: {}) and knows its own noise share, so the \
                         unknown noise has variance (m-1)/m sigma^2 with m = {m}",
                        known_batches_text(&s.sampling)
                    )),
                )
            }
            NoiseContributors::Parties if s.padded_batches => (
                analyst_noise,
                analyst.clone(),
                "sees uniformly random replicated shares and the public parameters (theta, a \
                 post-processing of the released sums, and the public padded batch size): its \
                 view is a post-processing of the outside analyst's plus independent randomness, \
                 so it faces the analyst's figure (a node run by a party has the party's figure)"
                    .to_owned(),
            ),
            NoiseContributors::Parties => (
                analyst_noise,
                coordinator_fig.clone(),
                "sees uniformly random replicated shares, the public parameters and the batch \
                 size of every iteration: a post-processing of the coordinator's view, so the \
                 coordinator's figure bounds it (loosely: a node does not learn the indices); \
                 the analyst's figure would not cover the batch sizes (a node run by a party has \
                 the party's figure)"
                    .to_owned(),
            ),
        };
        // A node facing the analyst's figure faces its composition too.
        let (q_node, t_node) =
            if matches!(s.noise_by, NoiseContributors::Parties) && s.padded_batches {
                (q_analyst, t_analyst)
            } else {
                (q_known, t_party)
            };
        for n in 0..s.nodes {
            per_observer.push(ObserverReport {
                observer: format!("node {n}"),
                role: "node".into(),
                sample_rate: q_node,
                steps: t_node,
                noise_multiplier: node_noise,
                epsilon: node_fig.clone(),
                reason: node_reason.clone(),
            });
        }
        per_observer.push(ObserverReport {
            observer: "coordinator".into(),
            role: "coordinator".into(),
            sample_rate: q_known,
            steps: t_party,
            noise_multiplier: analyst_noise,
            epsilon: coordinator_fig,
            reason: coordinator_reason,
        });

        let neighbouring = BTreeMap::from([
            (
                "add_remove".to_owned(),
                "one record added or removed; the standard for the outside analyst".to_owned(),
            ),
            (
                "replace_one".to_owned(),
                "one record's values replaced (VP-adjacency: the individual exists, only the \
                 other parties' part changes); q = 1 is exact with sensitivity 2C, q < 1 uses \
                 group privacy over remove-then-add"
                    .to_owned(),
            ),
        ]);

        Ok(PrivacyReport {
            sigma: s.noise_multiplier,
            clip: s.clip,
            sample_rate: s.sampling.nominal_rate(),
            sampling: s.sampling,
            steps: s.steps,
            delta: s.delta,
            delta_terms: BTreeMap::from([
                ("accountant_known_batches".to_owned(), delta_known),
                ("truncation_failure".to_owned(), s.truncation_failure),
                ("batch_overflow".to_owned(), s.batch_overflow),
                ("trim_risk".to_owned(), s.trim_risk),
            ])
            .into_iter()
            // A relation that is not amplified has no hidden-batch accountant.
            .chain(add_remove.map(|(_, d)| ("accountant_hidden_batches".to_owned(), d)))
            .chain(
                replace_one.map(|(_, d)| ("accountant_hidden_batches_replace_one".to_owned(), d)),
            )
            .collect(),
            epsilon: analyst,
            neighbouring,
            noise_by: s.noise_by,
            noise_shares: m,
            noise_sigma_integer: sigma_int,
            distributed,
            per_observer,
        })
    }
}

fn known_batches_text(sampling: &Sampling) -> &'static str {
    match sampling {
        Sampling::Poisson { .. } => "q = 1 for every batch the record is in",
        Sampling::FullBatch => "full batch, q = 1",
        Sampling::DisjointEpochs { .. } => {
            "disjoint minibatches, q = 1 over the number of epochs (paper section 5.2)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_round_trips_and_lists_every_observer() {
        let mut s = PrivacySetting::new(2.0, Sampling::Poisson { sample_rate: 0.01 }, 100, 1e-5);
        s.accountants = vec![Accountant::Rdp];
        let r = PrivacyReport::build(&s).unwrap();
        assert_eq!(r.per_observer.len(), 1 + 2 + 3 + 1);
        let json = serde_json::to_string_pretty(&r).unwrap();
        let back: PrivacyReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let analyst = r.epsilon["rdp"].add_remove.unwrap();
        let party = r.per_observer[1].epsilon["rdp"].add_remove.unwrap();
        assert!(party > analyst, "a party knows more: {party} vs {analyst}");
        let coordinator = &r.per_observer[6];
        assert_eq!(coordinator.role, "coordinator");
        let coord = coordinator.epsilon["rdp"].add_remove.unwrap();
        assert!(
            coord > analyst && coord < party,
            "the coordinator knows the indices but no share: {coord} vs {analyst}, {party}"
        );
        assert_eq!(
            r.per_observer[3].epsilon, coordinator.epsilon,
            "a node (which learns batch sizes) is bounded by the coordinator's figure"
        );
    }

    #[test]
    fn a_sole_contributor_party_has_no_protection_from_itself() {
        let mut s = PrivacySetting::new(2.0, Sampling::FullBatch, 10, 1e-5);
        s.parties = 1;
        s.accountants = vec![Accountant::Rdp];
        let r = PrivacyReport::build(&s).unwrap();
        assert_eq!(r.per_observer[1].epsilon["rdp"].add_remove, None);
    }

    #[test]
    fn noise_by_nodes_and_disjoint_epochs() {
        let mut s = PrivacySetting::new(
            2.0,
            Sampling::DisjointEpochs {
                batches_per_epoch: 100,
            },
            1000,
            1e-5,
        );
        s.accountants = vec![Accountant::Rdp];
        s.noise_by = NoiseContributors::Nodes;
        let r = PrivacyReport::build(&s).unwrap();
        // 10 epochs, no amplification for anyone.
        assert!(r
            .per_observer
            .iter()
            .all(|o| o.steps == 10 && o.sample_rate == 1.0));
        let analyst = r.per_observer[0].epsilon["rdp"].add_remove.unwrap();
        let party = r.per_observer[1].epsilon["rdp"].add_remove.unwrap();
        let node = r.per_observer[3].epsilon["rdp"].add_remove.unwrap();
        // Parties know no share here; a node knows 1 of 3.
        assert_eq!(party, analyst);
        assert!(node > analyst);
        let expect = 2.0 * (2.0f64 / 3.0).sqrt();
        assert!((r.per_observer[3].noise_multiplier - expect).abs() < 1e-12);
    }

    #[test]
    fn party_uses_the_participation_bound() {
        let mut s = PrivacySetting::new(2.0, Sampling::Poisson { sample_rate: 0.01 }, 10_000, 1e-5);
        s.accountants = vec![Accountant::Rdp];
        let r = PrivacyReport::build(&s).unwrap();
        let k = r.per_observer[1].steps;
        assert!(k > 100 && k < 200, "{k}");
        assert!(r.per_observer[1].reason.contains(&format!("k = {k}")));
    }

    #[test]
    fn rejects_bad_roles() {
        let mut s = PrivacySetting::new(2.0, Sampling::FullBatch, 10, 1e-5);
        s.parties = 0;
        assert!(matches!(
            PrivacyReport::build(&s),
            Err(ReportError::Roles { .. })
        ));
    }
}
