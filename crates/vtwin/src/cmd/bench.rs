//! `vtwin bench`: the cost of one DPVI iteration with each gradient backend on one workload
//! (INTERFACE.md). The measurement and the report's schema are vtwin-harness's
//! ([`vtwin_harness::run`], [`vtwin_harness::BenchReport`]); this command maps flags to
//! settings, writes the report atomically and prints one line per backend.

use std::path::PathBuf;

use anyhow::Context;
use vtwin_harness::run::{BenchBackend, BenchError, BenchSettings};
use vtwin_harness::workload::{adult_dir, Workload, WorkloadError, WorkloadKind};
use vtwin_host::atomic::{self, Mode};

/// Which data the iterations run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum WorkloadFlag {
    /// Adult training set (30162 records, 2 parties, the shipped schema: d = K (1 + 318), K 9).
    Adult,
    /// Built-in demo data (2 parties, 7 columns).
    Demo,
    /// Random public schema with --parties parties and --width statistics in all.
    Synthetic,
}

/// A backend as benchmarked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BackendFlag {
    /// Non-partitioned f64 baseline.
    Float,
    /// Partitioned fixed-point reference.
    Fixed,
    /// Three in-memory MPC nodes.
    Mpc,
    /// The consortium over loopback QUIC (separate nodes, parties and coordinator).
    MpcQuic,
}

impl From<BackendFlag> for BenchBackend {
    fn from(b: BackendFlag) -> BenchBackend {
        match b {
            BackendFlag::Float => BenchBackend::Float,
            BackendFlag::Fixed => BenchBackend::Fixed,
            BackendFlag::Mpc => BenchBackend::Mpc,
            BackendFlag::MpcQuic => BenchBackend::MpcQuic,
        }
    }
}

/// Benchmark the gradient backends: ms, rounds and bytes per iteration.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Workload.
    #[arg(long, value_enum, default_value = "adult")]
    workload: WorkloadFlag,
    /// Timed iterations per backend (after the warm-up).
    #[arg(long, default_value_t = 200)]
    iters: u64,
    /// Untimed warm-up iterations per backend.
    #[arg(long, default_value_t = 20)]
    warmup: u64,
    /// How many times to run the list of backends, in turn (each run with its warm-up):
    /// with more than one, each ratio is the median of the ratios within a round, which a
    /// slow minute of a shared machine moves less.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Backends, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "float,fixed,mpc,mpc-quic"
    )]
    backends: Vec<BackendFlag>,
    /// Expected batch size B (Poisson rate B / rows).
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Mixture components K [default: `vtwin train`'s rule for the workload's schema,
    /// `vtwin_model::components`].
    #[arg(long)]
    components: Option<usize>,
    /// Noise multiplier sigma (the noise is drawn and shared as in training).
    #[arg(long, default_value_t = 1.0)]
    sigma: f64,
    /// Directory holding adult.data (adult workload; default $VTWIN_DATA_DIR, else ../shared/data/adult).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Records of the demo and synthetic workloads.
    #[arg(long, default_value_t = 10_000)]
    rows: usize,
    /// Parties of the synthetic workload (2 to 16).
    #[arg(long, default_value_t = 2)]
    parties: usize,
    /// Sufficient statistics of all parties together in the synthetic workload (d = K (1 + width)).
    #[arg(long, default_value_t = 150)]
    width: usize,
    /// Public seed (initialisation, batches, eta; the synthetic schema and table).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output JSON (written atomically).
    #[arg(long)]
    out: PathBuf,
}

/// The library's error in the words of this command's flags.
fn workload_error(e: WorkloadError) -> anyhow::Error {
    let flag = match &e {
        WorkloadError::AdultMissing { .. } => {
            "--workload adult (give --data-dir or set VTWIN_DATA_DIR)"
        }
        WorkloadError::TooFewRows { .. } => "--rows",
        WorkloadError::Parties { .. } => "--parties",
        WorkloadError::Width { .. } => "--width",
        _ => "--workload",
    };
    anyhow::Error::new(e).context(flag)
}

fn bench_error(e: BenchError) -> anyhow::Error {
    let flag = match &e {
        BenchError::NoIterations => "--iters",
        BenchError::NoRounds => "--rounds",
        BenchError::NoComponents => "--components",
        BenchError::Sigma { .. } => "--sigma",
        BenchError::NoBackends => "--backends",
        BenchError::Batch { .. } => "--batch",
        _ => "vtwin bench",
    };
    anyhow::Error::new(e).context(flag)
}

pub(crate) fn run(a: Args) -> anyhow::Result<()> {
    // Off unless asked: a subscriber on every event would slow what is being timed.
    // `RUST_LOG=vtwin_consortium=debug` shows each mpc-quic iteration's phases.
    if std::env::var_os("RUST_LOG").is_some() {
        crate::cmd::node::init_logging();
    }
    let kind = match a.workload {
        WorkloadFlag::Adult => WorkloadKind::Adult {
            data_dir: adult_dir(a.data_dir.as_deref()),
        },
        WorkloadFlag::Demo => WorkloadKind::Demo { rows: a.rows },
        WorkloadFlag::Synthetic => WorkloadKind::Synthetic {
            parties: a.parties,
            width: a.width,
            rows: a.rows,
            seed: a.seed,
        },
    };
    let workload = Workload::load(&kind).map_err(workload_error)?;
    let settings = BenchSettings {
        iters: a.iters,
        warmup: a.warmup,
        backends: a.backends.iter().map(|&b| b.into()).collect(),
        batch: a.batch,
        components: super::training_data::components(a.components, &workload.schema)?,
        sigma: a.sigma,
        seed: a.seed,
        rounds: a.rounds,
    };
    settings.check(&workload).map_err(bench_error)?;
    eprintln!(
        "bench {}: {} timed + {} warm-up iterations per backend, {} round(s)",
        workload.name, a.iters, a.warmup, a.rounds
    );
    let report = vtwin_harness::run(&workload, &settings).map_err(bench_error)?;
    atomic::write(
        &a.out,
        serde_json::to_string_pretty(&report)?.as_bytes(),
        Mode::Public,
    )
    .with_context(|| format!("--out {}", a.out.display()))?;
    let ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}"));
    for e in &report.backends {
        let ms = &e.ms_per_iteration;
        println!(
            "{:<9} median {:>9.3} ms/iteration (p10 {:.3}, p90 {:.3}), x{} fixed, x{} float",
            e.backend,
            ms.median,
            ms.p10,
            ms.p90,
            ratio(e.ratio_vs_fixed),
            ratio(e.ratio_vs_float),
        );
        if let Some(r) = &e.ratio_vs_fixed_per_round {
            let list: Vec<String> = r.iter().map(|x| format!("{x:.2}")).collect();
            println!("{:<9} x fixed per round: {}", "", list.join(", "));
        }
    }
    for m in &report.not_measured {
        println!("not measured: {} ({})", m.backend, m.reason);
    }
    Ok(())
}
