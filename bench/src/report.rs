//! docs/results.md from [`Results`]: the tables behind every figure, the machine, the date,
//! the load, and what was not measured.

use std::fmt::Write as _;
use vtwin_harness::BenchReport;
use vtwin_host::machine::Machine;

use crate::plot::si;
use crate::results::{Results, Utility};

fn f(v: Option<f64>, digits: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or("-".into(), |x| format!("{x:.digits$}"))
}

fn int(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{}", x.round() as i64))
}

fn thousands(v: Option<f64>) -> String {
    let Some(x) = v else {
        return "-".into();
    };
    let s = format!("{}", x.round() as i64);
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 && ch != '-' {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The load verdict: the machine counts as loaded when any 1-minute load average sampled
/// during the run exceeded its logical cores.
fn load_note(r: &Results) -> String {
    let cores = r.machine.as_ref().map_or(1, |m| m.logical_cores) as f64;
    let max = r
        .load
        .iter()
        .filter_map(|s| s.load_average.map(|l| l[0]))
        .fold(f64::NAN, f64::max);
    let samples: Vec<String> = r
        .load
        .iter()
        .map(|s| {
            format!(
                "{} ({}): {}",
                s.at,
                s.utc,
                s.load_average.map_or("unreadable".into(), |l| l
                    .iter()
                    .map(|v| format!("{v:.2}"))
                    .collect::<Vec<_>>()
                    .join(" / "))
            )
        })
        .collect();
    let verdict = if max > cores {
        format!(
            "**The machine was loaded**: the 1-minute load average reached {max:.1} on {cores} \
             logical cores (other work was running), so absolute milliseconds are inflated and \
             noisy; the ratios between backends measured back to back are the figures to read."
        )
    } else {
        format!("The 1-minute load average stayed at or below {max:.1} on {cores} logical cores.")
    };
    format!(
        "{verdict}\n\nLoad averages (1 / 5 / 15 min) sampled by the harness:\n\n{}\n",
        samples
            .iter()
            .map(|s| format!("- {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

fn bench_table(out: &mut String, j: &BenchReport) {
    let w = &j.workload;
    let s = &j.settings;
    let _ = writeln!(
        out,
        "Workload `{}`: {} records, parties {:?}, statistics widths {:?}, K = {}, expected B = {}, \
         d = {}; {} timed iterations after {} warm-up per backend{}, sigma {}, started {}.\n",
        w.name,
        w.rows,
        w.parties,
        w.stat_width_per_party,
        w.components,
        w.batch_expected,
        w.dimension,
        s.iters,
        s.warmup,
        if s.rounds > 1 {
            format!(
                " in each of {} rounds of the backends in turn (the ms columns pool the rounds; \
                 the ratios are the medians of the ratios within a round)",
                s.rounds
            )
        } else {
            String::new()
        },
        s.sigma,
        j.date_utc,
    );
    out.push_str(
        "| backend | median ms | p10 | p90 | IQR | / fixed | / float | rounds | bytes between nodes | bytes to coordinator | bytes uploaded per party |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for e in &j.backends {
        let ms = &e.ms_per_iteration;
        let t = e.traffic.as_ref();
        let per_party = t.map_or("-".into(), |t| {
            t.bytes_uploaded_per_party_per_iteration
                .iter()
                .map(|&v| thousands(Some(v)))
                .collect::<Vec<_>>()
                .join(" / ")
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {}-{} | {} | {} | {} | {} | {} | {} |",
            e.backend,
            f(Some(ms.median), 2),
            f(Some(ms.p10), 2),
            f(Some(ms.p90), 2),
            f(Some(ms.q1), 2),
            f(Some(ms.q3), 2),
            f(e.ratio_vs_fixed, 2),
            f(e.ratio_vs_float, 2),
            int(e.rounds_per_iteration),
            thousands(t.map(|t| t.bytes_between_nodes_per_iteration)),
            thousands(t.map(|t| t.bytes_to_coordinator_per_iteration)),
            per_party,
        );
    }
    let per_round: Vec<String> = j
        .backends
        .iter()
        .filter(|e| e.backend != "fixed")
        .filter_map(|e| {
            let r = e.ratio_vs_fixed_per_round.as_ref()?;
            let list: Vec<String> = r.iter().map(|x| f(Some(*x), 2)).collect();
            Some(format!("{} {}", e.backend, list.join(", ")))
        })
        .collect();
    if !per_round.is_empty() {
        let _ = writeln!(
            out,
            "\nRatio to fixed in each round: {}.",
            per_round.join("; ")
        );
    }
    let phases: Vec<String> = j
        .backends
        .iter()
        .filter_map(|e| {
            let p = e.phases_median_ms?;
            Some(format!(
                "{}: local kernels {}, noise {}, combine {}, backend {}, update {}",
                e.backend,
                f(Some(p.local_kernels), 2),
                f(Some(p.noise), 2),
                f(Some(p.combine), 2),
                f(Some(p.backend), 2),
                f(Some(p.update), 2),
            ))
        })
        .collect();
    let _ = writeln!(out, "\nMedian ms per phase: {}.\n", phases.join("; "));
    for m in &j.not_measured {
        let _ = writeln!(out, "Not measured: {} ({}).\n", m.backend, m.reason);
    }
}

fn eval_value(row: &crate::results::UtilityRow, key: &str) -> Option<f64> {
    let mut v = row.eval.as_ref()?;
    for k in key.split('.') {
        v = v.get(k)?;
    }
    v.as_f64()
}

/// The line after which results.md holds hand-measured sections (figures this harness does
/// not produce, e.g. the record alignment against its peer); a regeneration keeps them.
pub(crate) const KEPT_MARKER: &str =
    "<!-- Sections below this line are measured by hand and kept by vtwin-bench. -->";

/// `generated`, then the marker and whatever followed it in `previous` (the file being
/// replaced), if it had the marker.
pub(crate) fn with_kept_sections(mut generated: String, previous: &str) -> String {
    if let Some(i) = previous.find(KEPT_MARKER) {
        if !generated.ends_with('\n') {
            generated.push('\n');
        }
        generated.push('\n');
        generated.push_str(&previous[i..]);
    }
    generated
}

/// Renders docs/results.md.
pub(crate) fn markdown(r: &Results, figures: &[(&str, &str, bool)]) -> String {
    let mut out = String::new();
    let unknown = Machine {
        cpu_model: "unknown CPU".into(),
        logical_cores: 0,
        os: "?".into(),
        arch: "?".into(),
    };
    let m = r.machine.as_ref().unwrap_or(&unknown);
    let _ = writeln!(
        out,
        "# vtwin: benchmark and utility results\n\n\
         Generated by `cargo run --release -p vtwin-bench`{} (source `{}`), started {} UTC on \
         {} ({} logical cores, {} {}). The raw numbers are in `docs/results.json`; every figure \
         carries the same machine and date in its footer. A source id ending in `-dirty` \
         means the checkout held uncommitted changes (other work in progress) when the \
         binary was built.\n",
        if r.quick {
            " -- --quick (SMOKE TEST SIZES: do not read these numbers)"
        } else {
            ""
        },
        r.source,
        r.date_utc,
        m.cpu_model,
        m.logical_cores,
        m.os,
        m.arch,
    );
    out.push_str(&load_note(r));
    out.push('\n');
    if !r.not_measured.is_empty() {
        out.push_str("## Not measured\n\n");
        for n in &r.not_measured {
            let _ = writeln!(out, "- not measured: {n}");
        }
        out.push('\n');
    }

    out.push_str("## (a) Utility against epsilon (Adult)\n\n");
    match &r.utility {
        None => out.push_str("Not measured in this run.\n\n"),
        Some(u) => {
            let _ = writeln!(
                out,
                "`vtwin train` on `adult.data` (30162 records), test NLL on `adult.test` \
                 (15060 records), K = {}, expected batch {}, clip 1, Adam lr 0.01, T = {} \
                 iterations; sigma calibrated by RDP (add/remove) for each epsilon at delta {:e} \
                 and exactly T iterations (before the ninth session of 2026-11-28, which \
                 charges the batch overflows in the calibration and raises sigma by 0.02% at \
                 epsilon 1 and 0.2% at epsilon 4, and at epsilon 8 by more, as the charge binds \
                 there (the run states 7.23): `docs/privacy.md`, \"Calibration\"); public seed \
                 {}, noise seed {} (seeded noise: a \
                 reproducible measurement, not a private release). One run per cell: the \
                 run-to-run spread over seeds is not measured. T is far below the 20000 of \
                 docs/training-adult.md to fit the time box, so these NLLs are higher than a \
                 full run's. Every other setting is `vtwin train`'s default in the source build \
                 (since 2026-11-25: the released model the EMA of the iterates, and tempered \
                 responsibilities, beta from 0.2 to 1 over T / 2; since 2026-11-28 the shipped \
                 schema names the target Y and models age and hours by their cells, and K is \
                 the default for that schema, and the tempering runs until 0.8 T; \
                 docs/utility-levers.md).\n",
                u.components, u.batch, u.iters, u.delta, u.seed, u.noise_seed
            );
            utility_table(&mut out, u);
            if let Some(b) = &r.utility_before {
                let _ = writeln!(
                    out,
                    "\nThe same table from an earlier run ({}; source {}), T = {}, for comparison \
                     (dashed grey in the figure):\n",
                    b.label, b.source, b.utility.iters
                );
                utility_table(&mut out, &b.utility);
            }
            out.push('\n');
            if let Some(t) = &u.real_baseline {
                let _ = writeln!(
                    out,
                    "TSTR baseline trained on the real training set (target `{}`, tested on \
                     adult.test): logistic regression AUC {}, accuracy {}, F1 {}; random \
                     forest AUC {}, accuracy {}, F1 {}. `tstr.*` above is logistic regression \
                     trained on {} synthetic records; the other metrics compare the synthetic \
                     table with adult.test (docs/metrics.md).\n",
                    t["target"].as_str().unwrap_or("?"),
                    f(t["auc_real"].as_f64(), 4),
                    f(t["acc_real"].as_f64(), 4),
                    f(t["f1_real"].as_f64(), 4),
                    f(t["random_forest"]["auc_real"].as_f64(), 4),
                    f(t["random_forest"]["acc_real"].as_f64(), 4),
                    f(t["random_forest"]["f1_real"].as_f64(), 4),
                    u.synthetic_rows,
                );
            }
        }
    }
    out.push_str(
        "## (b) ms per iteration\n\n`vtwin bench`: every backend on the same workload with the \
         same public seed, back to back in one process; an iteration is `Dpvi::step` (batch \
         sampling, gathering, the backend, the public update); for mpc-quic (the whole \
         consortium over loopback QUIC with mutual TLS: three node services, the party \
         services and the coordinator as tasks of one tokio runtime on this machine, no \
         added network delay) it is the coordinator's time from `Start` to the applied \
         update. Ratios are medians over medians within a round of the backends (with \
         several rounds, the median of the rounds' ratios); the VM's speed varies from \
         minute to minute, and a slow spell slows the fixed backend more than the QUIC \
         path, so read a ratio with its rounds. mpc-quic runs the same protocol as mpc \
         (equal bit for bit), so its rounds are mpc's; its bytes on the wire are not counted \
         by the loopback run.\n\n",
    );
    match &r.timing {
        None => out.push_str("Not measured in this run.\n\n"),
        Some(t) => {
            out.push_str("### Adult\n\n");
            bench_table(&mut out, &t.adult);
            out.push_str("### demo\n\n");
            bench_table(&mut out, &t.demo);
        }
    }
    out.push_str("## (c) Scaling, fixed vs mpc in memory; (d) bytes and rounds\n\n");
    match &r.scaling {
        None => out.push_str("Not measured in this run.\n\n"),
        Some(s) => {
            let b = s.base;
            let _ = writeln!(
                out,
                "`vtwin bench --workload synthetic --backends fixed,mpc`: a random public schema \
                 of P parties whose categorical columns (at most 25 categories each) give `width` \
                 sufficient statistics in all, split evenly over the parties, and {} records from \
                 a random 3-component mixture. Base point: B = {}, K = {}, P = {}, width = {} \
                 (d = {}, the Adult shape); one factor varies at a time (for P the total width \
                 stays {}, so d is fixed). {} timed iterations after {} warm-up per point and \
                 backend.\n",
                b.rows,
                b.batch,
                b.components,
                b.parties,
                b.width,
                b.components * (1 + b.width),
                b.width,
                s.iters,
                s.warmup
            );
            out.push_str(
                "| factor | B | K | P | d | fixed ms | mpc ms (p10-p90) | mpc / fixed | rounds | bytes between nodes | bytes uploaded (all parties) | bytes to coordinator |\n\
                 |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            );
            for p in s.points.iter().filter(|p| p.backend == "mpc") {
                let fixed = s
                    .points
                    .iter()
                    .find(|q| q.backend == "fixed" && q.factor == p.factor && q.config == p.config);
                let fx = fixed.map(|q| q.ms_median);
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} ({}-{}) | {} | {} | {} | {} | {} |",
                    p.factor,
                    p.config.batch,
                    p.config.components,
                    p.config.parties,
                    p.dimension,
                    f(fx, 2),
                    f(Some(p.ms_median), 2),
                    f(Some(p.ms_p10), 2),
                    f(Some(p.ms_p90), 2),
                    f(fx.map(|x| p.ms_median / x), 2),
                    p.rounds.map_or("-".into(), |v| format!("{v:.0}")),
                    p.bytes_between_nodes.map_or("-".into(), si),
                    p.bytes_uploaded_total.map_or("-".into(), si),
                    p.bytes_to_coordinator.map_or("-".into(), si),
                );
            }
            out.push('\n');
        }
    }
    out.push_str("## Figures\n\n");
    for (file, caption, made) in figures {
        if *made {
            let _ = writeln!(out, "![{caption}](img/{file})\n\n*{caption}*\n");
        } else {
            let _ = writeln!(
                out,
                "- not measured: {caption} (`img/{file}` not drawn: its section did not run)\n"
            );
        }
    }
    out.push_str(
        "## Regenerating\n\n```\ncargo run --release -p vtwin-bench            # everything (about 30 minutes on 2 cores)\n\
         cargo run --release -p vtwin-bench -- --quick # smoke test sizes, into a temporary directory unless --out-dir\n\
         cargo run --release -p vtwin-bench -- --only timing   # rerun one section, keep the others from docs/results.json\n\
         cargo run --release -p vtwin-bench -- --render-only   # redraw results.md and the figures from docs/results.json\n```\n",
    );
    out
}

/// Section (a)'s table of one run: a row per (epsilon, backend), the metrics any row has.
fn utility_table(out: &mut String, u: &Utility) {
    let keys: Vec<&str> = [
        "tvd_1way",
        "tvd_2way",
        "tvd_3way",
        "corr_diff_within",
        "corr_diff_across",
        "frechet",
        "tstr.auc_synth",
        "tstr.f1_synth",
        "tstr.random_forest.auc_synth",
    ]
    .into_iter()
    .filter(|k| u.rows.iter().any(|row| eval_value(row, k).is_some()))
    .collect();
    out.push_str("| epsilon | backend | sigma | test NLL |");
    for k in &keys {
        let _ = write!(out, " {k} |");
    }
    out.push_str(" train s |\n|---:|---|---:|---:|");
    for _ in &keys {
        out.push_str("---:|");
    }
    out.push_str("---:|\n");
    for row in &u.rows {
        let _ = write!(
            out,
            "| {} | {} | {} | {} |",
            row.epsilon,
            row.backend,
            f(row.sigma, 4),
            f(row.nll_test, 4)
        );
        for k in &keys {
            let _ = write!(out, " {} |", f(eval_value(row, k), 4));
        }
        let _ = writeln!(out, " {:.0} |", row.train_seconds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::LoadSample;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(Some(2_173_154.0)), "2,173,154");
        assert_eq!(thousands(Some(999.0)), "999");
        assert_eq!(thousands(Some(1000.0)), "1,000");
        assert_eq!(thousands(Some(-1234.0)), "-1,234");
        assert_eq!(thousands(None), "-");
    }

    #[test]
    fn hand_measured_sections_survive_a_regeneration() {
        let previous = format!("# old\nold table\n\n{KEPT_MARKER}\n\n## Record alignment\nrow\n");
        let out = with_kept_sections("# new\nnew table\n".into(), &previous);
        assert!(out.starts_with("# new\nnew table\n"));
        assert!(!out.contains("old table"));
        assert!(out.ends_with(&format!("{KEPT_MARKER}\n\n## Record alignment\nrow\n")));
        assert_eq!(with_kept_sections("# new\n".into(), "# old\n"), "# new\n");
    }

    fn with_load(loads: &[f64]) -> Results {
        Results {
            machine: Some(Machine {
                cpu_model: "test CPU".into(),
                logical_cores: 2,
                os: "linux".into(),
                arch: "x86_64".into(),
            }),
            load: loads
                .iter()
                .map(|&l| LoadSample {
                    at: "x".into(),
                    utc: "t".into(),
                    load_average: Some([l, l, l]),
                })
                .collect(),
            ..Results::default()
        }
    }

    #[test]
    fn loaded_when_the_load_exceeds_the_cores() {
        assert!(load_note(&with_load(&[0.5, 2.5])).contains("The machine was loaded"));
        assert!(!load_note(&with_load(&[0.5, 1.9])).contains("was loaded"));
    }
}
