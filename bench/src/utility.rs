//! Section (a): utility against epsilon on Adult. For every (backend, epsilon): `vtwin train`
//! with sigma calibrated (RDP, add/remove, delta) for exactly `iters` iterations, the final
//! test NLL from `train.csv`; then, when this build's `vtwin eval` reports more than the NLL,
//! `vtwin synthesize` and `vtwin eval` (every key it writes is kept).
//!
//! `vtwin eval` compares each synthetic table with the real *test* set (TVD, associations,
//! Fréchet) and scores TSTR on it; the train-on-real baseline of TSTR does not depend on the
//! model, so it is computed once (one extra `vtwin eval --train-joined`, kept in
//! [`Utility::real_baseline`]).
//!
//! The runs are independent and seeded (public seed, noise seed), so they may run `jobs` at
//! a time without changing any number; only their wall-clock seconds depend on it. Runs are
//! started in priority order (epsilon 1 and 8 first, the figures) and none starts
//! after the time budget is spent: the skipped ones are listed as not measured.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    /// No run starts after this much time from the section's start.
    pub(crate) budget: Duration,
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
    has_eval: bool,
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
    let sigma = read_json::<serde_json::Value>(&dir.join("privacy.json"))?["sigma"].as_f64();
    let nll_test = last_nll(&dir.join("train.csv"))?;
    let eval = if has_eval {
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
        Some(eval(vtwin, &dir, &synth, &test, None)?)
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

/// `vtwin eval` of `dir/model.json` and `synth` against `test` (TSTR target Y), with the
/// train-on-real baseline when `train` is given; returns its JSON.
fn eval(
    vtwin: &Vtwin,
    dir: &Path,
    synth: &Path,
    test: &Path,
    train: Option<&Path>,
) -> anyhow::Result<serde_json::Value> {
    let s = |p: &Path| p.display().to_string();
    let out = dir.join(if train.is_some() {
        "eval-with-real.json"
    } else {
        "eval.json"
    });
    let mut args: Vec<String> = vec![
        "eval".into(),
        "--model".into(),
        s(&dir.join("model.json")),
        "--synthetic".into(),
        s(synth),
        "--test-joined".into(),
        s(test),
        "--target".into(),
        TARGET.into(),
        "--out".into(),
        s(&out),
    ];
    if let Some(t) = train {
        args.extend(["--train-joined".into(), s(t)]);
    }
    vtwin.run(&args)?;
    read_json(&out)
}

/// Epsilons in the order their runs start: the figures (1 and 8) first.
fn priority(epsilons: &[f64]) -> Vec<f64> {
    let mut v = epsilons.to_vec();
    let rank = |e: f64| [1.0, 8.0].iter().position(|&x| x == e).unwrap_or(2);
    v.sort_by_key(|&e| rank(e));
    v
}

/// Runs the plan; `not_measured` receives what this build cannot measure.
pub(crate) fn run(
    vtwin: &Vtwin,
    plan: &UtilityPlan,
    data_dir: &Path,
    not_measured: &mut Vec<String>,
) -> anyhow::Result<Utility> {
    let started = Instant::now();
    let help = vtwin.help("eval");
    let has_eval = help.contains("--target") && help.contains("--train-joined");
    if !has_eval {
        not_measured.push(
            "TVD and TSTR AUC against epsilon: this build's `vtwin eval` has no --target \
             (the full metrics of vtwin-eval had not landed)"
                .into(),
        );
    }
    let work = tempfile::tempdir().context("temporary directory for the utility runs")?;
    let tasks: Vec<(&str, f64)> = priority(&plan.epsilons)
        .into_iter()
        .flat_map(|e| BACKENDS.iter().map(move |&b| (b, e)))
        .collect();
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<(usize, anyhow::Result<UtilityRow>)>> = Mutex::new(Vec::new());
    let skipped: Mutex<Vec<(&str, f64)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..plan.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(b, e)) = tasks.get(i) else { break };
                if started.elapsed() > plan.budget {
                    if let Ok(mut s) = skipped.lock() {
                        s.push((b, e));
                    }
                    continue;
                }
                let r = one_run(vtwin, plan, data_dir, work.path(), b, e, has_eval);
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
    let mut rows = results
        .into_iter()
        .map(|(_, r)| r)
        .collect::<anyhow::Result<Vec<_>>>()?;
    rows.sort_by(|a, b| {
        a.epsilon.total_cmp(&b.epsilon).then_with(|| {
            let pos = |n: &str| BACKENDS.iter().position(|&x| x == n);
            pos(&a.backend).cmp(&pos(&b.backend))
        })
    });
    for (b, e) in skipped
        .into_inner()
        .map_err(|_| anyhow!("a utility worker panicked"))?
    {
        not_measured.push(format!(
            "{b} at epsilon {e}: the utility section's time budget ({} s) was spent before it started",
            plan.budget.as_secs()
        ));
    }
    // The train-on-real TSTR baseline, once (it does not depend on the model).
    let real_baseline = match (has_eval, rows.first()) {
        (true, Some(first)) => {
            let dir = work
                .path()
                .join(format!("{}-eps{}", first.backend, first.epsilon));
            let j = eval(
                vtwin,
                &dir,
                &dir.join("synthetic.csv"),
                &data_dir.join("adult.test"),
                Some(&data_dir.join("adult.data")),
            )?;
            Some(j["tstr"].clone())
        }
        _ => None,
    };
    // K is `vtwin train`'s default for the schema (the runs pass no --components): read it
    // back from a model rather than assume it.
    let components = match rows.first() {
        Some(first) => {
            let dir = work
                .path()
                .join(format!("{}-eps{}", first.backend, first.epsilon));
            read_json::<serde_json::Value>(&dir.join("model.json"))?["components"]
                .as_u64()
                .context("model.json: components")? as usize
        }
        None => 0,
    };
    Ok(Utility {
        iters: plan.iters,
        delta: 1e-5,
        batch: 100,
        components,
        seed: 0,
        noise_seed: 1,
        synthetic_rows: plan.synthetic_rows,
        rows,
        real_baseline,
    })
}
