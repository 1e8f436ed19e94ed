//! `vtwin noise`: exact discrete Gaussian samples, one integer per line, for external audit.

use std::io::{BufWriter, Write};

use anyhow::Context;
use clap::Parser;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_dp::{parse_decimal, DiscreteGaussian};

/// Print exact discrete Gaussian samples N_Z(0, sigma^2), one integer per line.
#[derive(Debug, Parser)]
pub(crate) struct Args {
    /// Standard deviation sigma as an exact decimal (e.g. 2.042, 8589934592, 1e3); sigma^2 is
    /// taken exactly, no floating point.
    #[arg(long, allow_negative_numbers = true)]
    sigma: String,
    /// Number of samples.
    #[arg(long)]
    count: u64,
    /// Seed for ChaCha20 (reproducible output); without it the OS CSPRNG seeds the generator.
    #[arg(long)]
    seed: Option<u64>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<()> {
    let sigma = parse_decimal(&args.sigma).context("--sigma")?;
    let dg = DiscreteGaussian::from_sigma(&sigma).context("--sigma")?;
    let mut rng = match args.seed {
        Some(s) => ChaCha20Rng::seed_from_u64(s),
        None => ChaCha20Rng::from_os_rng(),
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for _ in 0..args.count {
        match writeln!(out, "{}", dg.sample(&mut rng)) {
            Ok(()) => {}
            // A closed pipe (e.g. `| head`) ends the output quietly.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e).context("writing samples to stdout"),
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing samples to stdout")
        }
        _ => Ok(()),
    }
}
