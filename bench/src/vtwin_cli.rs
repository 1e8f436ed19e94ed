//! Running the `vtwin` binary: the harness measures exactly what users run, through the
//! documented commands (`train`, `synthesize`, `eval`, `bench`), never through internals.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};

/// The workspace root (the harness lives in `<root>/bench`).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// A `vtwin` release binary to run.
#[derive(Clone, Debug)]
pub(crate) struct Vtwin {
    exe: PathBuf,
}

impl Vtwin {
    /// `exe` as given, or else `cargo build --release -p vtwin -p vtwin-bench` in the
    /// workspace (same `CARGO_TARGET_DIR` as the harness) and the `vtwin` binary it produced.
    /// Both packages together: the dependencies' features are then unified the same way on
    /// every run, so a warm target directory is not rebuilt for a different feature set.
    pub(crate) fn locate(exe: Option<&Path>) -> anyhow::Result<Vtwin> {
        if let Some(e) = exe {
            if !e.is_file() {
                bail!("--vtwin {}: no such file", e.display());
            }
            return Ok(Vtwin { exe: e.to_owned() });
        }
        let root = workspace_root();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        eprintln!("building the vtwin binary (cargo build --release -p vtwin -p vtwin-bench)");
        let status = Command::new(&cargo)
            .args(["build", "--release", "-p", "vtwin", "-p", "vtwin-bench"])
            .current_dir(&root)
            .status()
            .context("running cargo build -p vtwin")?;
        if !status.success() {
            bail!("cargo build --release -p vtwin -p vtwin-bench failed ({status})");
        }
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|t| if t.is_absolute() { t } else { root.join(t) })
            .unwrap_or_else(|| root.join("target"));
        let exe = target.join("release").join("vtwin");
        if !exe.is_file() {
            bail!("{}: not found after cargo build", exe.display());
        }
        Ok(Vtwin { exe })
    }

    /// Runs `vtwin ARGS` in the workspace root; returns (stdout, seconds). Fails with the
    /// command and the binary's own one-line error.
    pub(crate) fn run(&self, args: &[String]) -> anyhow::Result<(String, f64)> {
        let t0 = Instant::now();
        let out = Command::new(&self.exe)
            .args(args)
            .current_dir(workspace_root())
            .output()
            .with_context(|| format!("starting {}", self.exe.display()))?;
        let secs = t0.elapsed().as_secs_f64();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("").to_owned();
            bail!("vtwin {} failed: {last}", args.join(" "));
        }
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), secs))
    }

    /// The help text of `vtwin SUBCOMMAND` (to see which flags this build has).
    pub(crate) fn help(&self, subcommand: &str) -> String {
        Command::new(&self.exe)
            .args([subcommand, "--help"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

/// Reads a JSON file the binary wrote, as `T`.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    serde_json::from_str(&text).with_context(|| path.display().to_string())
}

/// The measured source tree: `git rev-parse --short HEAD`, with `-dirty` when the working
/// tree differs from it.
pub(crate) fn source_id() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(workspace_root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    }
}
