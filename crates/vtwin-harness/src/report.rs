//! The report of one `vtwin bench` run: the JSON schema of its `--out` file, written by
//! [`crate::run`] and read back, typed, by the figure generator. Keys are stable (INTERFACE.md);
//! optional parts are absent or null where they do not apply (no protocol runs for the
//! plaintext backends).

use serde::{Deserialize, Serialize};
use vtwin_host::machine::Machine;

use crate::spread::{median, Spread};

/// One `vtwin bench` run: where and when it ran, on what, and each backend's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Always "vtwin bench".
    pub command: String,
    /// The vtwin version measured.
    pub version: String,
    /// UTC start, RFC 3339.
    pub date_utc: String,
    /// UTC end, RFC 3339.
    pub finished_utc: String,
    /// The host and its load averages at the start.
    pub machine: MachineAtStart,
    /// 1, 5 and 15 minute load averages at the end (null where unreadable).
    #[serde(default)]
    pub load_average_after: Option<[f64; 3]>,
    /// The data the iterations ran on.
    pub workload: WorkloadReport,
    /// The training settings of every backend's run.
    pub settings: SettingsReport,
    /// One entry per measured backend, in the order run.
    pub backends: Vec<BackendEntry>,
    /// Backends asked for but not measured, with the reason.
    #[serde(default)]
    pub not_measured: Vec<NotMeasured>,
}

impl BenchReport {
    /// The entry of backend `name` ("float", "fixed", "mpc", "mpc-quic"), if measured.
    pub fn backend(&self, name: &str) -> Option<&BackendEntry> {
        self.backends.iter().find(|e| e.backend == name)
    }
}

/// The host as the run started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineAtStart {
    /// CPU, cores, OS, architecture.
    #[serde(flatten)]
    pub machine: Machine,
    /// 1, 5 and 15 minute load averages (null where unreadable).
    #[serde(default)]
    pub load_average: Option<[f64; 3]>,
}

/// The workload's public shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadReport {
    /// "adult", "demo" or "synthetic".
    pub name: String,
    /// Where the records came from (a file, or the generator and its seed).
    pub source: String,
    /// Records N.
    pub rows: usize,
    /// The parties, in layout order.
    pub parties: Vec<String>,
    /// Sufficient statistics per party.
    pub stat_width_per_party: Vec<usize>,
    /// Mixture components K.
    pub components: usize,
    /// Expected batch size B = q N.
    pub batch_expected: usize,
    /// Poisson sampling rate q.
    pub sample_rate: f64,
    /// Gradient dimension d.
    pub dimension: usize,
}

/// The settings every backend ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingsReport {
    /// Timed iterations per backend.
    pub iters: u64,
    /// Untimed warm-up iterations per backend.
    pub warmup: u64,
    /// Noise multiplier.
    pub sigma: f64,
    /// Clip bound C.
    pub clip: f64,
    /// Adam learning rate.
    pub lr: f64,
    /// Public seed.
    pub seed: u64,
    /// Renormalisation mode.
    pub renormalise: String,
    /// Where the secret randomness came from ("os": the production path).
    pub secret_randomness: String,
    /// What a timed iteration spans.
    pub timed: String,
    /// How many times the list of backends ran, in turn (absent for one round, so a
    /// one-round report is what it was before the option).
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub rounds: u32,
}

fn one_round() -> u32 {
    1
}

fn is_one_round(rounds: &u32) -> bool {
    *rounds == 1
}

/// One backend's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackendEntry {
    /// "float", "fixed", "mpc" or "mpc-quic".
    pub backend: String,
    /// Timed iterations.
    pub iterations_timed: usize,
    /// Milliseconds per iteration.
    pub ms_per_iteration: Spread,
    /// Median milliseconds of each phase (in-process backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_median_ms: Option<Phases>,
    /// Median records per batch (in-process backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_records_median: Option<f64>,
    /// Setup milliseconds (certificates, connections; mpc-quic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_ms: Option<f64>,
    /// Whole-run milliseconds (mpc-quic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
    /// What this entry does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Median communication rounds per iteration (the mpc backends; null otherwise).
    #[serde(default)]
    pub rounds_per_iteration: Option<f64>,
    /// Median traffic per iteration as the in-memory nodes count it (mpc only).
    #[serde(flatten, default)]
    pub traffic: Option<Traffic>,
    /// Each round's median milliseconds per iteration, in round order (more than one round
    /// only; `ms_per_iteration` pools every round's timed iterations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_medians_ms: Option<Vec<f64>>,
    /// Median over the fixed backend's median (null where fixed was not measured); with
    /// several rounds, the median of the ratios taken within each round.
    #[serde(default)]
    pub ratio_vs_fixed: Option<f64>,
    /// Median over the float backend's median (null where float was not measured); with
    /// several rounds, the median of the ratios taken within each round.
    #[serde(default)]
    pub ratio_vs_float: Option<f64>,
    /// The ratio to fixed within each round, in round order (more than one round only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_vs_fixed_per_round: Option<Vec<f64>>,
}

/// Median milliseconds per phase of an in-process iteration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Sampling the batch and eta.
    pub sample: f64,
    /// Gathering the parties' batches.
    pub gather: f64,
    /// The whole backend (kernels, noise, combination).
    pub backend: f64,
    /// The parties' local kernels.
    pub local_kernels: f64,
    /// Drawing the noise shares.
    pub noise: f64,
    /// Combining (the circuit, in the clear or under MPC).
    pub combine: f64,
    /// The public update (prior, entropy, Adam).
    pub update: f64,
}

/// Median protocol traffic per iteration (the in-memory mpc backend's cost log).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    /// Bytes between the three nodes (encoded messages, headers included).
    pub bytes_between_nodes_per_iteration: f64,
    /// Ring elements between the nodes.
    pub elements_between_nodes_per_iteration: f64,
    /// Bytes from the nodes to the coordinator (the opening).
    pub bytes_to_coordinator_per_iteration: f64,
    /// Bytes each party uploaded, party order.
    pub bytes_uploaded_per_party_per_iteration: Vec<f64>,
    /// Bytes all parties uploaded.
    pub bytes_uploaded_total_per_iteration: f64,
    /// Element-wise secret products.
    pub mults_per_iteration: f64,
    /// Element-wise probabilistic truncations.
    pub truncations_per_iteration: f64,
}

/// A backend that was asked for and not measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotMeasured {
    /// The backend.
    pub backend: String,
    /// Why (the error, with its causes).
    pub reason: String,
}

/// An entry's medians per round: its `round_medians_ms`, or its one median.
fn medians(e: &BackendEntry) -> Vec<f64> {
    e.round_medians_ms
        .clone()
        .unwrap_or_else(|| vec![e.ms_per_iteration.median])
}

/// Sets every entry's `ratio_vs_fixed` and `ratio_vs_float`: the median over the rounds of
/// the entry's median over the reference's median in the same round (with one round,
/// median over median), so that a slow minute of the machine, which slows every backend
/// run in it, does not enter a ratio as a difference between backends. None where the
/// reference was not measured, not in as many rounds, or not positive; the per-round
/// ratios to fixed are kept where there is more than one round. Cost O(backends rounds).
pub fn add_ratios(entries: &mut [BackendEntry]) {
    let reference = |name: &str, entries: &[BackendEntry]| {
        entries
            .iter()
            .find(|e| e.backend == name)
            .map(medians)
            .filter(|m| m.iter().all(|&x| x > 0.0))
    };
    let fixed = reference("fixed", entries);
    let float = reference("float", entries);
    let per_round = |own: &[f64], reference: &Option<Vec<f64>>| {
        reference
            .as_ref()
            .filter(|r| r.len() == own.len())
            .map(|r| own.iter().zip(r).map(|(m, r)| m / r).collect::<Vec<f64>>())
    };
    for e in entries.iter_mut() {
        let own = medians(e);
        let to_fixed = per_round(&own, &fixed);
        let to_float = per_round(&own, &float);
        e.ratio_vs_fixed = to_fixed.as_ref().map(|r| median(r.iter().copied()));
        e.ratio_vs_float = to_float.map(median);
        e.ratio_vs_fixed_per_round = to_fixed.filter(|r| r.len() > 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(backend: &str, median: f64, traffic: Option<Traffic>) -> BackendEntry {
        BackendEntry {
            backend: backend.into(),
            iterations_timed: 3,
            ms_per_iteration: Spread::of(&[median - 1.0, median, median + 1.0]),
            phases_median_ms: None,
            batch_records_median: None,
            setup_ms: None,
            total_ms: None,
            note: None,
            rounds_per_iteration: traffic.as_ref().map(|_| 68.0),
            traffic,
            round_medians_ms: None,
            ratio_vs_fixed: None,
            ratio_vs_float: None,
            ratio_vs_fixed_per_round: None,
        }
    }

    #[test]
    fn ratios_and_json_shape() {
        let traffic = Traffic {
            bytes_between_nodes_per_iteration: 10.0,
            elements_between_nodes_per_iteration: 1.0,
            bytes_to_coordinator_per_iteration: 2.0,
            bytes_uploaded_per_party_per_iteration: vec![3.0, 4.0],
            bytes_uploaded_total_per_iteration: 7.0,
            mults_per_iteration: 5.0,
            truncations_per_iteration: 6.0,
        };
        let mut entries = vec![
            entry("float", 2.0, None),
            entry("fixed", 4.0, None),
            entry("mpc", 12.0, Some(traffic)),
        ];
        add_ratios(&mut entries);
        assert_eq!(entries[2].ratio_vs_fixed, Some(3.0));
        assert_eq!(entries[2].ratio_vs_float, Some(6.0));
        assert_eq!(entries[1].ratio_vs_fixed, Some(1.0));
        // The traffic keys sit flat in the entry (the documented JSON), absent for plaintext.
        let mpc = serde_json::to_value(&entries[2]).unwrap();
        assert_eq!(mpc["bytes_between_nodes_per_iteration"], 10.0);
        assert_eq!(mpc["rounds_per_iteration"], 68.0);
        let fixed = serde_json::to_value(&entries[1]).unwrap();
        assert!(fixed["bytes_between_nodes_per_iteration"].is_null());
        // One round: no per-round keys.
        assert!(fixed.get("round_medians_ms").is_none());
        assert!(fixed.get("ratio_vs_fixed_per_round").is_none());
        // Both read back as they were.
        let back: BackendEntry = serde_json::from_value(mpc).unwrap();
        assert_eq!(back, entries[2]);
        let back: BackendEntry = serde_json::from_value(fixed).unwrap();
        assert_eq!(back, entries[1]);
        // Without a fixed entry there is no ratio to it.
        let mut alone = vec![entry("mpc", 12.0, None)];
        add_ratios(&mut alone);
        assert_eq!(alone[0].ratio_vs_fixed, None);
        assert_eq!(alone[0].ratio_vs_fixed_per_round, None);
    }

    #[test]
    fn ratios_over_rounds_are_paired_within_each_round() {
        // Ratios within the rounds 3, 2 and 4: their median is 3, where the median over the
        // median of the rounds' medians would be 16 / 5 = 3.2.
        let rounds = |b: &str, m: [f64; 3]| {
            let mut e = entry(b, m[1], None);
            e.round_medians_ms = Some(m.to_vec());
            e
        };
        let mut entries = vec![
            rounds("fixed", [4.0, 8.0, 5.0]),
            rounds("mpc", [12.0, 16.0, 20.0]),
            rounds("float", [2.0, 2.0, 2.0]),
        ];
        add_ratios(&mut entries);
        assert_eq!(entries[1].ratio_vs_fixed, Some(3.0));
        assert_eq!(
            entries[1].ratio_vs_fixed_per_round,
            Some(vec![3.0, 2.0, 4.0])
        );
        assert_eq!(entries[1].ratio_vs_float, Some(8.0));
        assert_eq!(entries[0].ratio_vs_float, Some(2.5));
        let json = serde_json::to_value(&entries[1]).unwrap();
        assert_eq!(json["round_medians_ms"][1], 16.0);
        assert_eq!(json["ratio_vs_fixed_per_round"][0], 3.0);
        let back: BackendEntry = serde_json::from_value(json).unwrap();
        assert_eq!(back, entries[1]);
        // Rounds that do not pair up (a reference or an entry measured in fewer rounds)
        // give no ratio.
        let mut short = vec![rounds("fixed", [4.0, 8.0, 5.0]), entry("mpc", 12.0, None)];
        add_ratios(&mut short);
        assert_eq!(short[1].ratio_vs_fixed, None);
        let mut short = vec![entry("fixed", 4.0, None), rounds("mpc", [12.0, 16.0, 20.0])];
        add_ratios(&mut short);
        assert_eq!(short[1].ratio_vs_fixed, None);
        assert_eq!(short[1].ratio_vs_fixed_per_round, None);
        // A round whose reference median is not positive gives no ratio either.
        let mut zero = vec![
            rounds("fixed", [4.0, 0.0, 5.0]),
            rounds("mpc", [1.0, 2.0, 3.0]),
        ];
        add_ratios(&mut zero);
        assert_eq!(zero[1].ratio_vs_fixed, None);
    }
}
