//! Every raw number of a harness run, as written to `docs/results.json` and read back by
//! `--only` (which reruns some sections and keeps the others) and `--render-only`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vtwin_harness::BenchReport;
use vtwin_host::machine::Machine;

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Results {
    /// UTC time the run (or the last rerun section) started.
    pub(crate) date_utc: String,
    /// `git describe`-like id of the source tree measured (`<commit>` or `<commit>-dirty`).
    pub(crate) source: String,
    /// CPU model, cores, OS and architecture of the host (`machine` in main.rs, the same
    /// description as `vtwin bench`'s; the load averages are in `load`).
    pub(crate) machine: Option<Machine>,
    /// 1, 5 and 15 minute load averages at the start and at the end of each section.
    pub(crate) load: Vec<LoadSample>,
    /// Whether `--quick` (smoke-test sizes: not for reading) produced these numbers.
    pub(crate) quick: bool,
    /// Plot (a): utility against epsilon.
    pub(crate) utility: Option<Utility>,
    /// Plot (a)'s comparison: the utility section of an earlier run (`--utility-before`),
    /// drawn and tabulated beside this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) utility_before: Option<UtilityBefore>,
    /// Plot (b): the `vtwin bench` JSONs of the Adult and demo workloads.
    pub(crate) timing: Option<Timing>,
    /// Plots (c) and (d): scaling with B, K, P and d.
    pub(crate) scaling: Option<Scaling>,
    /// What was not measured, and why (printed and written to results.md).
    pub(crate) not_measured: Vec<String>,
}

/// Load averages at one moment.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LoadSample {
    /// Which moment ("utility start", ...).
    pub(crate) at: String,
    /// UTC time.
    pub(crate) utc: String,
    /// 1, 5, 15 minute load averages.
    #[serde(default)]
    pub(crate) load_average: Option<[f64; 3]>,
}

/// Section (a).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Utility {
    /// Training iterations T of every run (sigma calibrated for T).
    pub(crate) iters: u64,
    /// delta of every run.
    pub(crate) delta: f64,
    /// Expected batch size.
    pub(crate) batch: usize,
    /// Components K.
    pub(crate) components: usize,
    /// Public and noise seeds.
    pub(crate) seed: u64,
    /// Noise seed (reproducible runs: the privacy guarantee is void for these models).
    pub(crate) noise_seed: u64,
    /// Synthetic rows drawn per model for `vtwin eval`.
    pub(crate) synthetic_rows: usize,
    /// One row per (backend, epsilon).
    pub(crate) rows: Vec<UtilityRow>,
    /// The `tstr` block of one `vtwin eval --train-joined`: its `auc_real`, `acc_real`,
    /// `f1_real` (logistic) and `random_forest.*_real` are the train-on-real baseline.
    #[serde(default)]
    pub(crate) real_baseline: Option<Value>,
}

/// An earlier run's section (a), with what differed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct UtilityBefore {
    /// What the earlier run's settings were, e.g. "T 5000, last iterate, untempered".
    pub(crate) label: String,
    /// The earlier run's `source` (commit) and `date_utc`.
    pub(crate) source: String,
    /// Its numbers.
    pub(crate) utility: Utility,
}

/// One trained model and its evaluation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct UtilityRow {
    /// float, fixed or mpc.
    pub(crate) backend: String,
    /// Target epsilon (RDP, add/remove, at `delta`).
    pub(crate) epsilon: f64,
    /// The calibrated noise multiplier (from privacy.json).
    pub(crate) sigma: Option<f64>,
    /// Final test NLL from train.csv.
    pub(crate) nll_test: Option<f64>,
    /// Wall-clock seconds of the training run.
    pub(crate) train_seconds: f64,
    /// `vtwin eval`'s JSON (every key it wrote), if eval ran.
    pub(crate) eval: Option<Value>,
}

/// Section (b).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Timing {
    /// `vtwin bench --workload adult` report.
    pub(crate) adult: BenchReport,
    /// `vtwin bench --workload demo` report.
    pub(crate) demo: BenchReport,
}

/// Sections (c) and (d).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Scaling {
    /// The point every sweep goes through.
    pub(crate) base: ScalingConfig,
    /// Timed iterations per point and backend.
    pub(crate) iters: u64,
    /// Warm-up iterations per point and backend.
    pub(crate) warmup: u64,
    /// One entry per (factor, value, backend).
    pub(crate) points: Vec<ScalingPoint>,
}

/// A synthetic workload's shape.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScalingConfig {
    /// Expected batch size B.
    pub(crate) batch: usize,
    /// Components K.
    pub(crate) components: usize,
    /// Parties P.
    pub(crate) parties: usize,
    /// Sufficient statistics of all parties together (d = K (1 + width)).
    pub(crate) width: usize,
    /// Records.
    pub(crate) rows: usize,
}

/// One measured point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ScalingPoint {
    /// "batch", "components", "parties" or "dimension".
    pub(crate) factor: String,
    /// The workload.
    pub(crate) config: ScalingConfig,
    /// Gradient dimension d.
    pub(crate) dimension: u64,
    /// fixed or mpc.
    pub(crate) backend: String,
    /// Median, p10 and p90 ms per iteration.
    pub(crate) ms_median: f64,
    /// 10th percentile.
    pub(crate) ms_p10: f64,
    /// 90th percentile.
    pub(crate) ms_p90: f64,
    /// Median rounds per iteration (mpc).
    pub(crate) rounds: Option<f64>,
    /// Median bytes between nodes per iteration (mpc).
    pub(crate) bytes_between_nodes: Option<f64>,
    /// Median bytes uploaded by all parties per iteration (mpc).
    pub(crate) bytes_uploaded_total: Option<f64>,
    /// Median bytes from the nodes to the coordinator per iteration (mpc).
    pub(crate) bytes_to_coordinator: Option<f64>,
}

impl ScalingPoint {
    /// The swept factor's value at this point.
    pub(crate) fn x(&self) -> f64 {
        match self.factor.as_str() {
            "batch" => self.config.batch as f64,
            "components" => self.config.components as f64,
            "parties" => self.config.parties as f64,
            _ => self.dimension as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed docs/results.json (written before the report was typed) still reads
    /// back, so `--only` and `--render-only` keep working on it.
    #[test]
    fn committed_results_parse_typed() {
        let path = crate::vtwin_cli::workspace_root().join("docs/results.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let r: Results = serde_json::from_str(&text).unwrap();
        let t = r.timing.expect("timing section");
        let mpc = t.adult.backend("mpc").expect("mpc entry");
        assert!(mpc.rounds_per_iteration.unwrap() > 0.0);
        let traffic = mpc.traffic.as_ref().expect("mpc traffic");
        assert_eq!(traffic.bytes_uploaded_per_party_per_iteration.len(), 2);
        assert!(t.adult.backend("fixed").unwrap().traffic.is_none());
        assert!(r.machine.unwrap().logical_cores >= 1);
    }
}
