//! `vtwin-bench`: regenerates docs/results.md, docs/results.json and docs/img/*.png by
//! running the `vtwin` release binary (built first with `cargo build --release -p vtwin`
//! unless `--vtwin` names one):
//!
//! - (a) utility against epsilon in {0.5, 1, 2, 4, 8} on Adult for float, fixed and mpc
//!   (`vtwin train`, then `vtwin synthesize` and `vtwin eval` when eval has the full metrics);
//! - (b) ms per iteration of every backend on Adult and demo (`vtwin bench`);
//! - (c) scaling of ms and bytes per iteration with B, K, P and d, fixed vs mpc in memory
//!   (`vtwin bench --workload synthetic`);
//! - (d) bytes per iteration by link on Adult, and rounds per iteration.
//!
//! `--quick` runs smoke-test sizes (into a temporary directory unless `--out-dir`);
//! `--only SECTION,...` reruns some sections and keeps the others from the existing
//! results.json; `--render-only` redraws from results.json. All outputs are written
//! atomically (temporary file in the same directory, then rename).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};

mod plot;
mod report;
mod results;
mod scaling;
mod timing;
mod utility;
mod vtwin_cli;

use results::{LoadSample, Results, ScalingConfig, UtilityBefore};
use scaling::ScalingPlan;
use timing::TimingPlan;
use utility::UtilityPlan;
use vtwin_cli::{source_id, workspace_root, Vtwin};
use vtwin_host::atomic::{self, Mode};
use vtwin_host::clock::utc_now;
use vtwin_host::machine::{load_average, Machine};

/// A section of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Section {
    /// (a) utility against epsilon.
    Utility,
    /// (b) ms per iteration per backend.
    Timing,
    /// (c), (d) scaling, bytes and rounds.
    Scaling,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Utility => "utility",
            Section::Timing => "timing",
            Section::Scaling => "scaling",
        }
    }
}

/// Regenerate docs/results.md and its figures.
#[derive(Debug, clap::Parser)]
#[command(name = "vtwin-bench", about)]
struct Args {
    /// Smoke-test sizes (minutes, not for reading); output to a temporary directory unless --out-dir.
    #[arg(long)]
    quick: bool,
    /// Run only these sections; the others are kept from OUT_DIR/results.json.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Section>,
    /// Redraw results.md and the figures from OUT_DIR/results.json, running nothing.
    #[arg(long)]
    render_only: bool,
    /// Where results.md, results.json and img/ go (default: the workspace's docs/).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// The vtwin binary to run (default: build it with cargo).
    #[arg(long)]
    vtwin: Option<PathBuf>,
    /// Directory holding adult.data and adult.test (default: $VTWIN_DATA_DIR, else ../shared/data/adult).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// TrueType font for the figures.
    #[arg(long, default_value = plot::DEFAULT_FONT)]
    font: PathBuf,
    /// Training iterations T of each utility run.
    #[arg(long)]
    utility_iters: Option<u64>,
    /// No utility run starts after this many minutes of the utility section (the skipped
    /// ones are listed as not measured).
    #[arg(long, default_value_t = 25)]
    utility_minutes: u64,
    /// Utility runs at a time (they are seeded, so this changes only wall-clock seconds).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Compare section (a) with an earlier run's: `FILE.json=LABEL` takes the utility section
    /// of that results.json (e.g. `git show OLD:docs/results.json`), labelled with what its
    /// settings were; kept in results.json until given again.
    #[arg(long, value_name = "FILE.json=LABEL")]
    utility_before: Option<String>,
    /// Draw OUT_DIR/img/audit_scores.png from these `vtwin audit-mechanism` reports (one
    /// panel each) and run nothing else.
    #[arg(long = "audit-report", value_name = "FILE.json")]
    audit_reports: Vec<PathBuf>,
}

fn sample(r: &mut Results, at: &str) {
    r.load.push(LoadSample {
        at: at.into(),
        utc: utc_now(),
        load_average: load_average(),
    });
}

/// Writes a report file atomically (vtwin-host: temporary file, sync, rename).
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    atomic::write(path, bytes, Mode::Public).with_context(|| path.display().to_string())
}

type Drawer = fn(&Results, &Path) -> anyhow::Result<bool>;

/// The figures: file, caption, drawing function.
const FIGURES: [(&str, &str, Drawer); 5] = [
    (
        "utility_epsilon.png",
        "(a) Utility against epsilon on Adult: float, fixed, mpc",
        plot::utility,
    ),
    (
        "ms_per_iteration.png",
        "(b) ms per iteration per backend (Adult, demo)",
        plot::ms_per_iteration,
    ),
    (
        "scaling_time.png",
        "(c) ms per iteration against B, K, P and d, fixed vs mpc in memory",
        plot::scaling_time,
    ),
    (
        "scaling_bytes.png",
        "(c) mpc bytes per iteration against B, K, P and d",
        plot::scaling_bytes,
    ),
    (
        "bytes_rounds.png",
        "(d) bytes per iteration by link on Adult, rounds per iteration",
        plot::bytes_rounds,
    ),
];

/// Draws every figure (through temporary files renamed into place) and writes results.md
/// and results.json.
fn render(r: &Results, out: &Path) -> anyhow::Result<()> {
    let img = out.join("img");
    std::fs::create_dir_all(&img).with_context(|| img.display().to_string())?;
    let mut made = Vec::new();
    for (file, caption, draw) in FIGURES {
        let tmp = img.join(format!(".{file}.tmp.png"));
        let ok = draw(r, &tmp).with_context(|| file.to_owned())?;
        if ok {
            std::fs::rename(&tmp, img.join(file))
                .with_context(|| img.join(file).display().to_string())?;
        }
        made.push((file, caption, ok));
    }
    write_atomic(
        &out.join("results.json"),
        serde_json::to_string_pretty(r)?.as_bytes(),
    )?;
    let md = out.join("results.md");
    let kept = std::fs::read_to_string(&md).unwrap_or_default();
    write_atomic(
        &md,
        report::with_kept_sections(report::markdown(r, &made), &kept).as_bytes(),
    )?;
    Ok(())
}

/// `FILE.json=LABEL` of `--utility-before`: that run's section (a).
fn utility_before(spec: &str) -> anyhow::Result<UtilityBefore> {
    let (file, label) = spec
        .split_once('=')
        .context("--utility-before: expected FILE.json=LABEL")?;
    let text = std::fs::read_to_string(file).with_context(|| format!("--utility-before {file}"))?;
    let old: Results =
        serde_json::from_str(&text).with_context(|| format!("--utility-before {file}"))?;
    let utility = old
        .utility
        .with_context(|| format!("--utility-before {file}: no utility section"))?;
    Ok(UtilityBefore {
        label: label.to_owned(),
        // The first start time only (reruns append theirs).
        source: format!(
            "{}, {}",
            old.source,
            old.date_utc.split(" (").next().unwrap_or_default()
        ),
        utility,
    })
}

fn plans(
    quick: bool,
    utility_iters: Option<u64>,
    utility_minutes: u64,
    jobs: usize,
) -> (UtilityPlan, TimingPlan, ScalingPlan) {
    let base = ScalingConfig {
        batch: 100,
        components: 20,
        parties: 2,
        width: 150,
        rows: 10_000,
    };
    if quick {
        (
            UtilityPlan {
                iters: utility_iters.unwrap_or(100),
                epsilons: vec![1.0, 8.0],
                synthetic_rows: 2000,
                jobs,
                budget: Duration::from_secs(60 * utility_minutes),
            },
            TimingPlan {
                iters: 10,
                warmup: 2,
                rounds: 2,
            },
            ScalingPlan {
                base: ScalingConfig { rows: 2000, ..base },
                timing: TimingPlan {
                    iters: 3,
                    warmup: 1,
                    rounds: 1,
                },
                batch: vec![50, 100],
                components: vec![10, 20],
                parties: vec![2, 3],
                width: vec![75, 150],
            },
        )
    } else {
        (
            UtilityPlan {
                iters: utility_iters.unwrap_or(2000),
                epsilons: utility::EPSILONS.to_vec(),
                synthetic_rows: 30_162,
                jobs,
                budget: Duration::from_secs(60 * utility_minutes),
            },
            // Four rounds of the backends in turn: a slow minute of a shared machine then
            // moves one round's ratios, not the median of four.
            TimingPlan {
                iters: 150,
                warmup: 20,
                rounds: 4,
            },
            ScalingPlan {
                base,
                timing: TimingPlan {
                    iters: 40,
                    warmup: 5,
                    rounds: 1,
                },
                batch: vec![25, 50, 100, 200, 400],
                components: vec![5, 10, 20, 40],
                parties: vec![2, 3, 4, 6, 8],
                width: vec![30, 75, 150, 300, 600],
            },
        )
    }
}

fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse();
    match run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(a: Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let out = match (&a.out_dir, a.quick) {
        (Some(d), _) => d.clone(),
        (None, true) => std::env::temp_dir().join("vtwin-bench-quick"),
        (None, false) => root.join("docs"),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("--out-dir {}", out.display()))?;
    plot::register_font(&a.font).context("--font")?;
    if !a.audit_reports.is_empty() {
        let reports = a
            .audit_reports
            .iter()
            .map(|p| -> anyhow::Result<serde_json::Value> {
                let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
                serde_json::from_str(&text).with_context(|| p.display().to_string())
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let img = out.join("img");
        std::fs::create_dir_all(&img).with_context(|| img.display().to_string())?;
        let path = img.join("audit_scores.png");
        plot::audit_scores(&reports, &path)?;
        println!("drew {}", path.display());
        return Ok(());
    }
    let existing = out.join("results.json");
    if a.render_only {
        let mut r: Results = serde_json::from_str(
            &std::fs::read_to_string(&existing).with_context(|| existing.display().to_string())?,
        )
        .with_context(|| existing.display().to_string())?;
        if let Some(spec) = &a.utility_before {
            r.utility_before = Some(utility_before(spec)?);
        }
        render(&r, &out)?;
        println!("redrew {} from {}", out.display(), existing.display());
        return Ok(());
    }
    let sections: Vec<Section> = if a.only.is_empty() {
        // Shortest first, so that a run cut short keeps the most.
        vec![Section::Timing, Section::Scaling, Section::Utility]
    } else {
        a.only.clone()
    };
    let mut r = if a.only.is_empty() {
        Results::default()
    } else {
        match std::fs::read_to_string(&existing) {
            Ok(text) => {
                serde_json::from_str(&text).with_context(|| existing.display().to_string())?
            }
            Err(_) => Results::default(),
        }
    };
    let now = utc_now();
    r.date_utc = if r.date_utc.is_empty() {
        now
    } else {
        let names: Vec<&str> = sections.iter().map(|s| s.name()).collect();
        format!("{} ({} rerun {now})", r.date_utc, names.join(", "))
    };
    r.source = source_id();
    r.machine = Some(Machine::detect());
    r.quick = a.quick;
    let data_dir = a
        .data_dir
        .clone()
        .or_else(|| std::env::var_os("VTWIN_DATA_DIR").map(PathBuf::from))
        .unwrap_or_else(|| root.join("../shared/data/adult"));
    let needs_adult = sections.contains(&Section::Utility) || sections.contains(&Section::Timing);
    if needs_adult && !data_dir.join("adult.data").is_file() {
        bail!(
            "Adult data: {} not found (give --data-dir or set VTWIN_DATA_DIR)",
            data_dir.join("adult.data").display()
        );
    }
    let data_dir = data_dir.canonicalize().unwrap_or(data_dir);
    let vtwin = Vtwin::locate(a.vtwin.as_deref())?;
    if let Some(spec) = &a.utility_before {
        r.utility_before = Some(utility_before(spec)?);
    }
    let (up, tp, sp) = plans(a.quick, a.utility_iters, a.utility_minutes, a.jobs);
    for s in &sections {
        let prefix = format!("{}: ", s.name());
        r.not_measured.retain(|n| !n.starts_with(&prefix));
        let mut missing = Vec::new();
        sample(&mut r, &format!("{} start", s.name()));
        match s {
            Section::Utility => {
                r.utility = Some(utility::run(&vtwin, &up, &data_dir, &mut missing)?)
            }
            Section::Timing => r.timing = Some(timing::run(&vtwin, tp, &data_dir, &mut missing)?),
            Section::Scaling => r.scaling = Some(scaling::run(&vtwin, &sp)?),
        }
        sample(&mut r, &format!("{} end", s.name()));
        r.not_measured
            .extend(missing.into_iter().map(|m| format!("{prefix}{m}")));
        // Write after every section, so a late failure keeps the finished ones.
        render(&r, &out)?;
    }
    for n in &r.not_measured {
        println!("not measured: {n}");
    }
    println!("wrote {}/results.md, results.json and img/", out.display());
    Ok(())
}
