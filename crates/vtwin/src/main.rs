//! The `vtwin` command line: one subcommand per role or tool (see docs/INTERFACE in shared).
//!
//! Each subcommand lives in its own module under `cmd/` and exposes `Args` (clap) and
//! `run(args) -> anyhow::Result<()>`. Errors print as one line and exit with status 1;
//! usage errors exit with status 2 (clap's convention).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// Differentially private synthetic twins of vertically partitioned tables.
#[derive(Debug, Parser)]
#[command(name = "vtwin", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Epsilon per accountant and observer for a sigma, or sigma for a target epsilon.
    Privacy(cmd::privacy::Args),
    /// Exact discrete Gaussian samples, one integer per line, for external audit.
    Noise(cmd::noise::Args),
    /// Evaluate a function of the fixed-point reference arithmetic (value, f64, relative error).
    Arith(cmd::arith::Args),
    /// Align the parties' records by a private set intersection of their ids (no id leaves a party).
    Align(cmd::align::Args),
    /// Train a model with DP variational inference (backends float, fixed and mpc).
    Train(cmd::train::Args),
    /// Sample a synthetic table (CSV, original names, categories and units) from a model.
    Synthesize(cmd::synthesize::Args),
    /// Evaluate a model and its synthetic table: test NLL, marginals, associations, TSTR, Fréchet.
    Eval(cmd::eval::Args),
    /// Benchmark the backends: ms, rounds and bytes per iteration, ratios against fixed and float.
    Bench(cmd::bench::Args),
    /// Membership-inference audit: DCR, density-ratio and shadow-model attacks, epsilon bounds.
    Audit(cmd::audit::Args),
    /// Canary audit of the training mechanism: empirical epsilon lower bound vs the claim.
    AuditMechanism(cmd::audit_mechanism::Args),
    /// Keys, certificates and configs: by certificate requests (ca, request, sign), or in one step.
    Keygen(cmd::keygen::Args),
    /// Run a compute node of the consortium (QUIC, mutual TLS) until interrupted.
    Node(cmd::node::Args),
    /// Run a party of the consortium: answer the coordinator with sealed input shares.
    Party(cmd::party::Args),
    /// Drive the consortium's training job over QUIC and write the model (like `train`).
    Coordinator(cmd::coordinator::Args),
    /// Run a whole consortium (3 nodes, 2 parties, coordinator) on loopback QUIC on the demo data.
    Demo(cmd::demo::Args),
}

/// candle's CPU thread pool spins its idle workers (pinned to cores) before parking them, so
/// a party's kernels keep taking CPU after they finish from whatever shares the host: on one
/// 2-core machine running the whole consortium this cost the MPC nodes 2-3 ms per Adult
/// iteration (docs/network-results.md), with no measurable gain for the kernels. Park idle
/// workers at once unless the user set the variable. Runs first in `main`, before any thread
/// exists (candle reads it once, when its pool is created).
fn park_idle_kernel_threads() {
    const SPIN_LIMIT: &str = "CANDLE_BARRIER_POOL_SPIN_LIMIT";
    if std::env::var_os(SPIN_LIMIT).is_none() {
        std::env::set_var(SPIN_LIMIT, "0");
    }
}

fn main() -> ExitCode {
    park_idle_kernel_threads();
    let cli = Cli::parse();
    let result: anyhow::Result<()> = match cli.command {
        Command::Privacy(args) => cmd::privacy::run(args),
        Command::Align(args) => cmd::align::run(args),
        Command::Noise(args) => cmd::noise::run(args),
        Command::Arith(args) => cmd::arith::run(args),
        Command::Train(args) => cmd::train::run(args),
        Command::Synthesize(args) => cmd::synthesize::run(args),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Audit(args) => cmd::audit::run(args),
        Command::AuditMechanism(args) => cmd::audit_mechanism::run(args),
        Command::Keygen(args) => cmd::keygen::run(args),
        Command::Node(args) => cmd::node::run(args),
        Command::Party(args) => cmd::party::run(args),
        Command::Coordinator(args) => cmd::coordinator::run(args),
        Command::Demo(args) => cmd::demo::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, outermost context first, so scripts can grep it.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
