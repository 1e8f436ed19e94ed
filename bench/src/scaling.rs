//! Sections (c) and (d): `vtwin bench --workload synthetic --backends fixed,mpc` at a base
//! point, sweeping one factor at a time: batch size B, components K, parties P (total
//! statistics width fixed, so d is fixed) and gradient dimension d = K (1 + width) (P = 2).

use anyhow::Context;
use vtwin_harness::BenchReport;

use crate::results::{Scaling, ScalingConfig, ScalingPoint};
use crate::timing::{bench, TimingPlan};
use crate::vtwin_cli::Vtwin;

/// The sweeps: factor name and its values (the base value is one of them).
#[derive(Clone, Debug)]
pub(crate) struct ScalingPlan {
    /// The point every sweep goes through.
    pub(crate) base: ScalingConfig,
    /// Timed and warm-up iterations per point.
    pub(crate) timing: TimingPlan,
    /// Batch sizes.
    pub(crate) batch: Vec<usize>,
    /// Components.
    pub(crate) components: Vec<usize>,
    /// Parties.
    pub(crate) parties: Vec<usize>,
    /// Total statistics widths.
    pub(crate) width: Vec<usize>,
}

fn point(factor: &str, config: ScalingConfig, j: &BenchReport) -> Vec<ScalingPoint> {
    j.backends
        .iter()
        .map(|e| ScalingPoint {
            factor: factor.into(),
            config,
            dimension: j.workload.dimension as u64,
            backend: e.backend.clone(),
            ms_median: e.ms_per_iteration.median,
            ms_p10: e.ms_per_iteration.p10,
            ms_p90: e.ms_per_iteration.p90,
            rounds: e.rounds_per_iteration,
            bytes_between_nodes: e
                .traffic
                .as_ref()
                .map(|t| t.bytes_between_nodes_per_iteration),
            bytes_uploaded_total: e
                .traffic
                .as_ref()
                .map(|t| t.bytes_uploaded_total_per_iteration),
            bytes_to_coordinator: e
                .traffic
                .as_ref()
                .map(|t| t.bytes_to_coordinator_per_iteration),
        })
        .collect()
}

/// Runs every sweep.
pub(crate) fn run(vtwin: &Vtwin, plan: &ScalingPlan) -> anyhow::Result<Scaling> {
    let work = tempfile::tempdir().context("temporary directory for the scaling runs")?;
    let b = plan.base;
    let mut configs: Vec<(&str, ScalingConfig)> = Vec::new();
    configs.extend(
        plan.batch
            .iter()
            .map(|&v| ("batch", ScalingConfig { batch: v, ..b })),
    );
    configs.extend(
        plan.components
            .iter()
            .map(|&v| ("components", ScalingConfig { components: v, ..b })),
    );
    configs.extend(
        plan.parties
            .iter()
            .map(|&v| ("parties", ScalingConfig { parties: v, ..b })),
    );
    configs.extend(
        plan.width
            .iter()
            .map(|&v| ("dimension", ScalingConfig { width: v, ..b })),
    );
    let mut points = Vec::new();
    for (i, (factor, c)) in configs.iter().enumerate() {
        eprintln!(
            "scaling {}/{}: {factor}: B {} K {} P {} width {}",
            i + 1,
            configs.len(),
            c.batch,
            c.components,
            c.parties,
            c.width
        );
        let j = bench(
            vtwin,
            &[
                "--workload".into(),
                "synthetic".into(),
                "--backends".into(),
                "fixed,mpc".into(),
                "--batch".into(),
                c.batch.to_string(),
                "--components".into(),
                c.components.to_string(),
                "--parties".into(),
                c.parties.to_string(),
                "--width".into(),
                c.width.to_string(),
                "--rows".into(),
                c.rows.to_string(),
            ],
            plan.timing,
            &work.path().join(format!("scaling-{i}.json")),
        )?;
        points.extend(point(factor, *c, &j));
    }
    Ok(Scaling {
        base: plan.base,
        iters: plan.timing.iters,
        warmup: plan.timing.warmup,
        points,
    })
}
