//! Timed iterations of each gradient backend on one workload: the measurement behind
//! `vtwin bench`.
//!
//! Every backend runs the same workload with the same public seed (same batches and eta),
//! one after the other in this process, with OS-seeded secret randomness (the production
//! path: its cost is part of the iteration). An in-process iteration is timed around
//! `Dpvi::step` (batch sampling, gathering, the backend, the public update), what
//! `vtwin train` reports as `median_ms.iteration`; the first `warmup` iterations run but are
//! not counted (caches, the allocator, the noise distribution's set-up).
//!
//! With `rounds` R > 1 the whole list of backends runs R times in turn (fixed, mpc, mpc-quic,
//! fixed, mpc, mpc-quic, ...), each time with its warm-up, so that a slow or fast minute of a
//! shared machine falls on every backend alike; each entry pools its R runs' timed
//! iterations, and its ratios are the medians of the R ratios taken within a round
//! ([`crate::report::add_ratios`]).
//!
//! `mpc-quic` is the whole consortium over loopback QUIC in this process
//! ([`vtwin_consortium::loopback::run`]: a fresh CA, mutual TLS, three node services, one
//! party service per party and the coordinator, as tasks of one tokio runtime), on the same
//! data, settings and seeds; an iteration is timed by the coordinator from `Start` to the
//! applied update. It runs the same protocol as `mpc` (the two are equal bit for bit), so
//! its rounds are the protocol's; the loopback run does not count wire bytes (TLS, QUIC
//! and framing), so its entry has no traffic and says so in `note`.

use std::time::{Duration, Instant};

use vtwin_host::machine::{load_average, Machine};
use vtwin_iteration::randomness::BatchKey;
use vtwin_model::adam::AdamConfig;
use vtwin_model::backend::{GradientBackend, NoiseRngs};
use vtwin_model::dpvi::{Dpvi, DpviConfig, DpviError, StepReport};
use vtwin_model::fixed_backend::{FixedBackend, Renormalise};
use vtwin_model::float_backend::FloatBackend;
use vtwin_model::kernels::KernelError;
use vtwin_model::layout::{Layout, LayoutError};
use vtwin_model::mpc_backend::{CostLog, IterationCost, MpcBackend};
use vtwin_model::party_data::{OwnPartyData, PartyData, StatsError};

use crate::report::{
    add_ratios, BackendEntry, BenchReport, MachineAtStart, NotMeasured, Phases, SettingsReport,
    Traffic, WorkloadReport,
};
use crate::spread::{median, Spread};
use crate::workload::Workload;

/// The clip bound every benchmark runs with.
pub const BENCH_CLIP: f64 = 1.0;
/// The Adam learning rate every benchmark runs with.
pub const BENCH_LR: f64 = 0.01;
/// The delta the loopback parties' policy is checked at.
const BENCH_DELTA: f64 = 1e-5;
/// The coordinator's per-iteration timeout in the loopback run.
const LOOPBACK_ITERATION_TIMEOUT: Duration = Duration::from_secs(120);

/// A backend as benchmarked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchBackend {
    /// Non-partitioned f64 baseline.
    Float,
    /// Partitioned fixed-point reference.
    Fixed,
    /// Three in-memory MPC nodes.
    Mpc,
    /// The consortium over loopback QUIC (separate nodes, parties and coordinator).
    MpcQuic,
}

impl BenchBackend {
    /// The name in reports ("float", "fixed", "mpc", "mpc-quic").
    pub fn name(self) -> &'static str {
        match self {
            BenchBackend::Float => "float",
            BenchBackend::Fixed => "fixed",
            BenchBackend::Mpc => "mpc",
            BenchBackend::MpcQuic => "mpc-quic",
        }
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchSettings {
    /// Timed iterations per backend (at least 1).
    pub iters: u64,
    /// Untimed warm-up iterations per backend.
    pub warmup: u64,
    /// Backends, in the order to run them (duplicates run once).
    pub backends: Vec<BenchBackend>,
    /// Expected batch size B (Poisson rate B / rows), 1 to the number of records.
    pub batch: usize,
    /// Mixture components K (at least 1).
    pub components: usize,
    /// Noise multiplier (drawn and shared as in training; mpc-quic needs it > 0).
    pub sigma: f64,
    /// Public seed (initialisation, eta).
    pub seed: u64,
    /// How many times the whole list of backends runs, in turn (at least 1).
    pub rounds: u32,
}

impl BenchSettings {
    /// Checks the settings against `workload` without running anything ([`run`] checks
    /// them too). Cost O(1).
    pub fn check(&self, workload: &Workload) -> Result<(), BenchError> {
        if self.iters == 0 {
            return Err(BenchError::NoIterations);
        }
        if self.rounds == 0 {
            return Err(BenchError::NoRounds);
        }
        if self.components == 0 {
            return Err(BenchError::NoComponents);
        }
        if !(self.sigma.is_finite() && self.sigma >= 0.0) {
            return Err(BenchError::Sigma { sigma: self.sigma });
        }
        if self.backends.is_empty() {
            return Err(BenchError::NoBackends);
        }
        let rows = workload.table.n_rows();
        if self.batch == 0 || self.batch > rows {
            return Err(BenchError::Batch {
                batch: self.batch,
                rows,
            });
        }
        Ok(())
    }
}

/// Why a benchmark could not run. A failure of `mpc-quic` is not an error: the other
/// figures stand and the report lists it under `not_measured`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// No timed iterations.
    #[error("at least one timed iteration is needed")]
    NoIterations,
    /// No rounds.
    #[error("at least one round of the backends is needed")]
    NoRounds,
    /// No components.
    #[error("at least one mixture component is needed")]
    NoComponents,
    /// A negative or non-finite noise multiplier.
    #[error("noise multiplier sigma = {sigma} must be finite and non-negative")]
    Sigma {
        /// The value given.
        sigma: f64,
    },
    /// No backend asked for.
    #[error("no backend to measure")]
    NoBackends,
    /// The batch is empty or larger than the data.
    #[error("expected batch size {batch} must be between 1 and the number of records ({rows})")]
    Batch {
        /// The batch asked for.
        batch: usize,
        /// Records of the workload.
        rows: usize,
    },
    /// The model's layout could not be built from the schema.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The parties' statistics could not be computed.
    #[error(transparent)]
    PartyData(#[from] StatsError),
    /// A backend's kernels could not start.
    #[error("backend {backend}: {source}")]
    Kernel {
        /// The backend.
        backend: &'static str,
        /// The cause.
        #[source]
        source: KernelError,
    },
    /// Training failed to start or an iteration failed.
    #[error("backend {backend}, iteration {iteration}: {source}")]
    Step {
        /// The backend.
        backend: &'static str,
        /// The failing iteration, 1-based (0: at set-up).
        iteration: u64,
        /// The cause.
        #[source]
        source: DpviError,
    },
    /// The mpc backend's cost log does not match its iterations (a defect).
    #[error("backend mpc: {costs} cost records for {timed} timed iterations")]
    CostLog {
        /// Cost records after the warm-up.
        costs: usize,
        /// Timed iterations.
        timed: usize,
    },
}

/// Runs every backend of `settings` on `workload` and returns the report (not written
/// anywhere: the caller decides). Cost: rounds (warmup + iters) iterations per backend.
pub fn run(workload: &Workload, settings: &BenchSettings) -> Result<BenchReport, BenchError> {
    settings.check(workload)?;
    let mut backends = settings.backends.clone();
    backends.dedup();
    let date_utc = vtwin_host::clock::utc_now();
    let machine = MachineAtStart {
        machine: Machine::detect(),
        load_average: load_average(),
    };
    let rows = workload.table.n_rows();
    let layout = Layout::from_schema(&workload.schema, settings.components)?;
    let config = DpviConfig {
        sample_rate: settings.batch as f64 / rows as f64,
        clip: BENCH_CLIP,
        sigma: settings.sigma,
        adam: AdamConfig {
            lr: BENCH_LR,
            ..AdamConfig::default()
        },
        seed: settings.seed,
        // As `vtwin train` runs by default (the same circuit and cost whatever beta is).
        tempering: vtwin_model::tempering::Tempering::default_for(settings.warmup + settings.iters),
    };
    let run = Run {
        settings,
        config: &config,
        layout: &layout,
        workload,
    };
    // measured[i]: backend i's runs, one per round, until one fails (mpc-quic only).
    let mut measured: Vec<Vec<Measured>> = backends.iter().map(|_| Vec::new()).collect();
    let mut not_measured = Vec::new();
    for round in 0..settings.rounds {
        for (i, &b) in backends.iter().enumerate() {
            match b {
                BenchBackend::MpcQuic => {
                    if not_measured
                        .iter()
                        .any(|n: &NotMeasured| n.backend == b.name())
                    {
                        continue;
                    }
                    match run.loopback() {
                        Ok(m) => measured[i].push(m),
                        // Reported, not hidden: the other backends' figures still stand.
                        Err(e) => {
                            measured[i].clear();
                            let why = vtwin_host::error_chain::chain(&e);
                            not_measured.push(NotMeasured {
                                backend: b.name().into(),
                                reason: if settings.rounds > 1 {
                                    format!("round {}: {why}", round + 1)
                                } else {
                                    why
                                },
                            });
                        }
                    }
                }
                _ => measured[i].push(run.in_process(b)?),
            }
        }
    }
    let mut entries: Vec<BackendEntry> = measured
        .into_iter()
        .filter(|runs| !runs.is_empty())
        .map(pool)
        .collect();
    // mpc-quic runs the in-memory mpc backend's protocol: the same rounds.
    let mpc_rounds = entries
        .iter()
        .find(|m| m.backend == BenchBackend::Mpc.name())
        .and_then(|m| m.rounds_per_iteration);
    if let Some(e) = entries
        .iter_mut()
        .find(|e| e.backend == BenchBackend::MpcQuic.name())
    {
        e.rounds_per_iteration = mpc_rounds;
    }
    add_ratios(&mut entries);
    Ok(BenchReport {
        command: "vtwin bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        date_utc,
        finished_utc: vtwin_host::clock::utc_now(),
        machine,
        load_average_after: load_average(),
        workload: WorkloadReport {
            name: workload.name.into(),
            source: workload.source.clone(),
            rows,
            parties: layout.parties.clone(),
            stat_width_per_party: (0..layout.n_parties())
                .map(|p| layout.stat_width(p))
                .collect(),
            components: settings.components,
            batch_expected: settings.batch,
            sample_rate: config.sample_rate,
            dimension: layout.dim(),
        },
        settings: SettingsReport {
            iters: settings.iters,
            warmup: settings.warmup,
            sigma: settings.sigma,
            clip: config.clip,
            lr: config.adam.lr,
            seed: settings.seed,
            renormalise: "closed-form".into(),
            secret_randomness: "os".into(),
            timed: "float, fixed, mpc: Dpvi::step wall clock (sample, gather, backend, update); mpc-quic: the coordinator's Start to the applied update".into(),
            rounds: settings.rounds,
        },
        backends: entries,
        not_measured,
    })
}

/// The median traffic of the timed iterations' cost records.
pub fn traffic(costs: &[IterationCost]) -> Traffic {
    let med = |f: &dyn Fn(&IterationCost) -> u64| median(costs.iter().map(|c| f(c) as f64));
    let parties = costs
        .first()
        .map_or(0, |c| c.bytes_uploaded_per_party.len());
    Traffic {
        bytes_between_nodes_per_iteration: med(&|c| c.bytes_between_nodes),
        elements_between_nodes_per_iteration: med(&|c| c.elements_between_nodes),
        bytes_to_coordinator_per_iteration: med(&|c| c.bytes_to_coordinator),
        bytes_uploaded_per_party_per_iteration: (0..parties)
            .map(|p| med(&|c| c.bytes_uploaded_per_party[p]))
            .collect(),
        bytes_uploaded_total_per_iteration: med(&|c| c.bytes_uploaded_total),
        mults_per_iteration: med(&|c| c.mults),
        truncations_per_iteration: med(&|c| c.truncations),
    }
}

/// Median rounds of the cost records.
pub fn rounds(costs: &[IterationCost]) -> f64 {
    median(costs.iter().map(|c| c.rounds as f64))
}

/// Median milliseconds of each phase over `reports`.
pub fn phases(reports: &[StepReport]) -> Phases {
    let phase = |f: &dyn Fn(&StepReport) -> f64| median(reports.iter().map(f));
    Phases {
        sample: phase(&|r| r.sample_ms),
        gather: phase(&|r| r.gather_ms),
        backend: phase(&|r| r.backend_ms),
        local_kernels: phase(&|r| r.diagnostics.local_ms),
        noise: phase(&|r| r.diagnostics.noise_ms),
        combine: phase(&|r| r.diagnostics.combine_ms),
        update: phase(&|r| r.update_ms),
    }
}

/// One run of one backend: its entry, and the samples [`pool`] merges across rounds.
struct Measured {
    entry: BackendEntry,
    ms: Vec<f64>,
    reports: Vec<StepReport>,
}

/// One entry from a backend's runs (one per round, at least one): the pooled timed
/// iterations' spread, phases and batch sizes, each round's median, the first run's protocol
/// costs (the same in every run), the median setup and the summed whole-run time. Cost
/// O(n log n) in the timed iterations.
fn pool(runs: Vec<Measured>) -> BackendEntry {
    let mut first: Option<BackendEntry> = None;
    let (mut ms, mut reports) = (Vec::new(), Vec::new());
    let (mut round_medians, mut setups, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    for m in runs {
        round_medians.push(m.entry.ms_per_iteration.median);
        setups.extend(m.entry.setup_ms);
        totals.extend(m.entry.total_ms);
        ms.extend(m.ms);
        reports.extend(m.reports);
        first.get_or_insert(m.entry);
    }
    let mut entry = first.expect("a backend is pooled from at least one run");
    entry.iterations_timed = ms.len();
    entry.ms_per_iteration = Spread::of(&ms);
    if !reports.is_empty() {
        entry.phases_median_ms = Some(phases(&reports));
        entry.batch_records_median =
            Some(median(reports.iter().map(|r| r.diagnostics.records as f64)));
    }
    entry.setup_ms = (!setups.is_empty()).then(|| median(setups));
    entry.total_ms = (!totals.is_empty()).then(|| totals.iter().sum());
    entry.round_medians_ms = (round_medians.len() > 1).then_some(round_medians);
    entry
}

/// One benchmark's shared inputs.
struct Run<'a> {
    settings: &'a BenchSettings,
    config: &'a DpviConfig,
    layout: &'a Layout,
    workload: &'a Workload,
}

impl Run<'_> {
    /// `warmup + iters` iterations of one in-process backend.
    fn in_process(&self, kind: BenchBackend) -> Result<Measured, BenchError> {
        let name = kind.name();
        let kernel = |source| BenchError::Kernel {
            backend: name,
            source,
        };
        let mut costs: Option<CostLog> = None;
        let backend: Box<dyn GradientBackend> = match kind {
            BenchBackend::Float => Box::new(FloatBackend::new().map_err(kernel)?),
            BenchBackend::Fixed => {
                Box::new(FixedBackend::new(Renormalise::ClosedForm).map_err(kernel)?)
            }
            BenchBackend::Mpc | BenchBackend::MpcQuic => {
                let m = MpcBackend::new(Renormalise::ClosedForm).map_err(kernel)?;
                costs = Some(m.costs());
                Box::new(m)
            }
        };
        let data = PartyData::from_table(&self.workload.table, self.layout)?;
        let step_err = |iteration| {
            move |source| BenchError::Step {
                backend: name,
                iteration,
                source,
            }
        };
        let mut dpvi = Dpvi::new(
            self.config.clone(),
            self.layout.clone(),
            data,
            backend,
            NoiseRngs::from_os(self.layout.n_parties()),
            BatchKey::from_os(),
        )
        .map_err(step_err(0))?;
        let warmup = self.settings.warmup;
        let mut ms = Vec::new();
        let mut reports: Vec<StepReport> = Vec::new();
        for i in 0..warmup + self.settings.iters {
            let t0 = Instant::now();
            let r = dpvi.step().map_err(step_err(i + 1))?;
            let elapsed = t0.elapsed().as_secs_f64() * 1e3;
            if i >= warmup {
                ms.push(elapsed);
                reports.push(r);
            }
        }
        let (rounds_per_iteration, traffic) = match costs {
            Some(log) => {
                let all = log.snapshot();
                let timed = all.get(warmup as usize..).unwrap_or(&[]);
                if timed.len() != ms.len() {
                    return Err(BenchError::CostLog {
                        costs: timed.len(),
                        timed: ms.len(),
                    });
                }
                (Some(rounds(timed)), Some(traffic(timed)))
            }
            None => (None, None),
        };
        let entry = BackendEntry {
            backend: name.into(),
            iterations_timed: ms.len(),
            ms_per_iteration: Spread::of(&ms),
            // From the pooled reports of every round ([`pool`]).
            phases_median_ms: None,
            batch_records_median: None,
            setup_ms: None,
            total_ms: None,
            note: None,
            rounds_per_iteration,
            traffic,
            round_medians_ms: None,
            ratio_vs_fixed: None,
            ratio_vs_float: None,
            ratio_vs_fixed_per_round: None,
        };
        Ok(Measured { entry, ms, reports })
    }

    /// `warmup + iters` iterations of the consortium over loopback QUIC; the error is why
    /// it was not measured.
    fn loopback(&self) -> Result<Measured, NotMeasuredError> {
        use vtwin_consortium::loopback::{run, LoopbackSettings};
        let settings = self.settings;
        let table = &self.workload.table;
        let parties = PartyData::from_table(table, self.layout)
            .map_err(NotMeasuredError::Parties)?
            .into_iter()
            .map(|data| OwnPartyData {
                data,
                ids: table.ids.clone(),
            })
            .collect();
        let iters = settings.warmup + settings.iters;
        // The parties agree to exactly the benchmarked plan.
        let policy = vtwin_consortium::party::policy_for_plan(&vtwin_net::JobTerms {
            sigma: self.config.sigma,
            clip: self.config.clip,
            components: settings.components as u32,
            sample_rate: self.config.sample_rate,
            iterations: iters,
            delta: BENCH_DELTA,
            // A policy bounds neither the rows nor the tempering.
            rows: [0; 32],
            tempering_start: 1.0,
            tempering_iterations: 0,
        })
        .map_err(NotMeasuredError::Policy)?;
        let report = run(LoopbackSettings {
            schema: self.workload.schema.clone(),
            parties,
            components: settings.components,
            config: self.config.clone(),
            iters,
            renormalise: Renormalise::ClosedForm,
            mpc_seed: None,
            noise_seed: None,
            receive_delay: None,
            iteration_timeout: LOOPBACK_ITERATION_TIMEOUT,
            policy,
            delta: BENCH_DELTA,
            align: false,
        })
        .map_err(|e| NotMeasuredError::Loopback(Box::new(e)))?;
        let ms = report
            .iteration_ms
            .get(settings.warmup as usize..)
            .unwrap_or(&[])
            .to_vec();
        if ms.len() as u64 != settings.iters {
            return Err(NotMeasuredError::IterationTimes {
                found: report.iteration_ms.len(),
                iterations: iters,
            });
        }
        let entry = BackendEntry {
            backend: BenchBackend::MpcQuic.name().into(),
            iterations_timed: ms.len(),
            ms_per_iteration: Spread::of(&ms),
            phases_median_ms: None,
            batch_records_median: None,
            setup_ms: Some(report.setup_ms),
            total_ms: Some(report.total_ms),
            note: Some("wire bytes (TLS, QUIC, framing) are not counted by the loopback run; rounds are the protocol's, as mpc".into()),
            rounds_per_iteration: None,
            traffic: None,
            round_medians_ms: None,
            ratio_vs_fixed: None,
            ratio_vs_float: None,
            ratio_vs_fixed_per_round: None,
        };
        Ok(Measured {
            entry,
            ms,
            reports: Vec::new(),
        })
    }
}

/// Why the consortium over loopback QUIC was not measured (reported, not fatal).
#[derive(Debug, thiserror::Error)]
enum NotMeasuredError {
    /// The workload does not split into the parties' data.
    #[error("party data")]
    Parties(#[source] StatsError),
    /// The parties' policy refuses the benchmarked plan.
    #[error("the parties refuse the plan (a noiseless plan has no finite epsilon)")]
    Policy(#[source] vtwin_dp::AccountingError),
    /// The loopback consortium failed.
    #[error("loopback consortium")]
    Loopback(#[source] Box<vtwin_consortium::loopback::LoopbackError>),
    /// The run timed another number of iterations than asked.
    #[error("{found} iteration times for {iterations} iterations")]
    IterationTimes {
        /// Iteration times reported.
        found: usize,
        /// Iterations asked for.
        iterations: u64,
    },
}
