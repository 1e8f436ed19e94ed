//! Section (b): `vtwin bench` on the Adult and demo workloads, every backend it knows
//! (float, fixed, mpc in memory, mpc over loopback QUIC when the build has it).

use std::path::Path;

use anyhow::Context;
use vtwin_harness::BenchReport;

use crate::results::Timing;
use crate::vtwin_cli::{read_json, Vtwin};

/// Timed and warm-up iterations per backend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimingPlan {
    /// Timed iterations.
    pub(crate) iters: u64,
    /// Warm-up iterations.
    pub(crate) warmup: u64,
    /// Runs of the whole list of backends, in turn (`vtwin bench --rounds`).
    pub(crate) rounds: u32,
}

/// Runs `vtwin bench --workload W` and returns its report.
pub(crate) fn bench(
    vtwin: &Vtwin,
    extra: &[String],
    plan: TimingPlan,
    out: &Path,
) -> anyhow::Result<BenchReport> {
    let mut args: Vec<String> = vec![
        "bench".into(),
        "--iters".into(),
        plan.iters.to_string(),
        "--warmup".into(),
        plan.warmup.to_string(),
        "--rounds".into(),
        plan.rounds.to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend_from_slice(extra);
    vtwin.run(&args)?;
    read_json(out)
}

/// Copies a bench report's `not_measured` entries into the run's list.
fn collect_not_measured(workload: &str, j: &BenchReport, not_measured: &mut Vec<String>) {
    for m in &j.not_measured {
        not_measured.push(format!("{} on {workload}: {}", m.backend, m.reason));
    }
}

/// Runs both workloads.
pub(crate) fn run(
    vtwin: &Vtwin,
    plan: TimingPlan,
    data_dir: &Path,
    not_measured: &mut Vec<String>,
) -> anyhow::Result<Timing> {
    let work = tempfile::tempdir().context("temporary directory for vtwin bench")?;
    eprintln!("timing: adult");
    let adult = bench(
        vtwin,
        &[
            "--workload".into(),
            "adult".into(),
            "--data-dir".into(),
            data_dir.display().to_string(),
        ],
        plan,
        &work.path().join("adult.json"),
    )?;
    collect_not_measured("adult", &adult, not_measured);
    eprintln!("timing: demo");
    let demo = bench(
        vtwin,
        &["--workload".into(), "demo".into()],
        plan,
        &work.path().join("demo.json"),
    )?;
    collect_not_measured("demo", &demo, not_measured);
    Ok(Timing { adult, demo })
}
