//! Section (a): utility against epsilon on Adult. For every (backend, epsilon): `vtwin train`
//! with sigma calibrated (RDP, add/remove, delta) for exactly `iters` iterations, the final
//! test NLL from `train.csv`; then, when this build's `vtwin eval` reports more than the NLL,
//! `vtwin synthesize` and `vtwin eval` (every key it writes is kept).
//!
//! The runs are independent and seeded (public seed, noise seed), so they may run `jobs` at
//! a time without changing any number; only their wall-clock seconds depend on it.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, Context};

use crate::results::{Utility, UtilityRow};
use crate::vtwin_cli::{read_json, Vtwin};

/// The epsilons of plot (a).
pub(crate) const EPSILONS: [f64; 5] = [0.5, 1.0, 2.0, 4.0, 8.0];
/// The backends of plot (a).
pub(crate) const BACKENDS: [&str; 3] = ["float", "fixed", "mpc"];
/// The Adult target column (examples/adult/schema.toml).
const TARGET: &str = "Y";

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct UtilityPlan {
    /// Training iterations.
    pub(crate) iters: u64,
    /// Epsilons.
    pub(crate) epsilons: Vec<f64>,
    /// Synthetic rows per model for eval.
    pub(crate) synthetic_rows: usize,
    /// Parallel runs.
    pub(crate) jobs: usize,
}

/// The last test NLL of a train.csv (columns iteration, epsilon, test_nll).
fn last_nll(path: &Path) -> anyhow::Result<Option<f64>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(2))
        .filter(|v| !v.is_empty())
        .last()
        .map(str::parse::<f64>)
        .transpose()
        .with_context(|| format!("{}: test_nll", path.display()))
}

fn one_run(
    vtwin: &Vtwin,
    plan: &UtilityPlan,
    data_dir: &Path,
    work: &Path,
    backend: &str,
    epsilon: f64,
    eval_flags: (bool, bool),
) -> anyhow::Result<UtilityRow> {
    let dir = work.join(format!("{backend}-eps{epsilon}"));
    let s = |p: &Path| p.display().to_string();
    let train = data_dir.join("adult.data");
    let test = data_dir.join("adult.test");
    let iters = plan.iters.to_string();
    let args: Vec<String> = [
        "train",
        "--schema",
        "examples/adult/schema.toml",
        "--joined",
        &s(&train),
        "--test-joined",
        &s(&test),
        "--backend",
        backend,
        "--epsilon",
        &epsilon.to_string(),
        "--delta",
        "1e-5",
        "--iters",
        &iters,
        "--eval-every",
        &iters,
        "--checkpoint-every",
        &iters,
        "--seed",
        "0",
        "--noise-seed",
        "1",
        "--out",
        &s(&dir),
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    let (_, train_seconds) = vtwin.run(&args)?;
    let sigma = read_json(&dir.join("privacy.json"))?["sigma"].as_f64();
    let nll_test = last_nll(&dir.join("train.csv"))?;
    let (has_target, has_train) = eval_flags;
    let eval = if has_target {
        let synth = dir.join("synthetic.csv");
        vtwin.run(&[
            "synthesize".into(),
            "--model".into(),
            s(&dir.join("model.json")),
            "--rows".into(),
            plan.synthetic_rows.to_string(),
            "--seed".into(),
            "2".into(),
            "--out".into(),
            s(&synth),
        ])?;
        let mut eval_args: Vec<String> = vec![
            "eval".into(),
            "--model".into(),
            s(&dir.join("model.json")),
            "--synthetic".into(),
            s(&synth),
            "--test-joined".into(),
            s(&test),
            "--target".into(),
            TARGET.into(),
            "--out".into(),
            s(&dir.join("eval.json")),
        ];
        if has_train {
            eval_args.extend(["--train-joined".into(), s(&train)]);
        }
        vtwin.run(&eval_args)?;
        Some(read_json(&dir.join("eval.json"))?)
    } else {
        None
    };
    eprintln!(
        "utility: {backend} epsilon {epsilon}: sigma {sigma:?}, test NLL {nll_test:?} ({train_seconds:.0} s)"
    );
    Ok(UtilityRow {
        backend: backend.into(),
        epsilon,
        sigma,
        nll_test,
        train_seconds,
        eval,
    })
}

/// Runs the plan; `not_measured` receives what this build cannot measure.
pub(crate) fn run(
    vtwin: &Vtwin,
    plan: &UtilityPlan,
    data_dir: &Path,
    not_measured: &mut Vec<String>,
) -> anyhow::Result<Utility> {
    let help = vtwin.help("eval");
    let eval_flags = (help.contains("--target"), help.contains("--train-joined"));
    if !eval_flags.0 {
        not_measured.push(
            "TVD and TSTR AUC against epsilon: this build's `vtwin eval` has no --target \
             (the full metrics of vtwin-eval had not landed)"
                .into(),
        );
    }
    let work = tempfile::tempdir().context("temporary directory for the utility runs")?;
    let tasks: Vec<(&str, f64)> = plan
        .epsilons
        .iter()
        .flat_map(|&e| BACKENDS.iter().map(move |&b| (b, e)))
        .collect();
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<(usize, anyhow::Result<UtilityRow>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..plan.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(b, e)) = tasks.get(i) else { break };
                let r = one_run(vtwin, plan, data_dir, work.path(), b, e, eval_flags);
                if let Ok(mut o) = out.lock() {
                    o.push((i, r));
                }
            });
        }
    });
    let mut results = out
        .into_inner()
        .map_err(|_| anyhow!("a utility worker panicked"))?;
    results.sort_by_key(|(i, _)| *i);
    let rows = results
        .into_iter()
        .map(|(_, r)| r)
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Utility {
        iters: plan.iters,
        delta: 1e-5,
        batch: 100,
        components: 20,
        seed: 0,
        noise_seed: 1,
        synthetic_rows: plan.synthetic_rows,
        rows,
    })
}
