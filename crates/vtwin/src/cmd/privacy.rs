//! `vtwin privacy`: epsilon for a noise multiplier, or the noise multiplier for a target
//! epsilon, by accountant; with `--json`, the `privacy.json` object.

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use vtwin_dp::{
    calibrate_sigma, Accountant, EpsilonPair, Neighbouring, NoiseContributors, PrivacyReport,
    PrivacySetting, Sampling,
};

/// Accountant selection on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AccountantArg {
    /// Rényi DP (Mironov-Talwar-Zhang) with the improved conversion.
    Rdp,
    /// Privacy loss distribution, connect-the-dots (tight).
    Pld,
    /// Both.
    All,
}

/// Who samples the noise shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum NoiseByArg {
    /// Each party adds N_Z(0, sigma^2 / P) (the paper's default).
    Parties,
    /// Each compute node adds N_Z(0, sigma^2 / nodes).
    Nodes,
}

/// Compute epsilon (or, with --target-epsilon, sigma) for DP-SGD-style training.
#[derive(Debug, Parser)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["sigma", "target_epsilon"])))]
pub(crate) struct Args {
    /// Noise multiplier: noise standard deviation over the clipping bound.
    #[arg(long, allow_negative_numbers = true)]
    sigma: Option<f64>,
    /// Target epsilon (outside analyst, add/remove); prints the sigma that reaches it.
    #[arg(long, allow_negative_numbers = true)]
    target_epsilon: Option<f64>,
    /// Poisson sampling rate per iteration, in (0, 1]; 1 means full batch.
    #[arg(long, allow_negative_numbers = true)]
    sample_rate: f64,
    /// Number of iterations.
    #[arg(long)]
    steps: u64,
    /// Delta, in (0, 1).
    #[arg(long, allow_negative_numbers = true)]
    delta: f64,
    /// Accountant(s).
    #[arg(long, value_enum, default_value = "all")]
    accountant: AccountantArg,
    /// Number of data-holding parties.
    #[arg(long, default_value_t = 2)]
    parties: u32,
    /// Number of compute nodes.
    #[arg(long, default_value_t = 3)]
    nodes: u32,
    /// Who contributes the noise shares.
    #[arg(long, value_enum, default_value = "parties")]
    noise_by: NoiseByArg,
    /// Clipping bound C (reported; epsilon depends on sigma only).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    clip: f64,
    /// Gradient dimension d, for the distributed discrete Gaussian bound.
    #[arg(long, default_value_t = 1)]
    dimension: u64,
    /// Use the paper's disjoint-minibatch mode with this many batches per epoch instead of
    /// Poisson sampling (no amplification; epochs = ceil(steps / batches)).
    #[arg(long)]
    disjoint_batches: Option<u64>,
    /// Print the privacy.json object instead of a table.
    #[arg(long)]
    json: bool,
}

fn accountants(a: AccountantArg) -> Vec<Accountant> {
    match a {
        AccountantArg::Rdp => vec![Accountant::Rdp],
        AccountantArg::Pld => vec![Accountant::Pld],
        AccountantArg::All => Accountant::ALL.to_vec(),
    }
}

fn check(args: &Args) -> anyhow::Result<()> {
    if !(args.sample_rate > 0.0 && args.sample_rate <= 1.0) {
        bail!("--sample-rate must be in (0, 1], got {}", args.sample_rate);
    }
    if !(args.delta > 0.0 && args.delta < 1.0) {
        bail!("--delta must be in (0, 1), got {}", args.delta);
    }
    if let Some(s) = args.sigma {
        if !(s > 0.0 && s.is_finite()) {
            bail!("--sigma must be positive and finite, got {s}");
        }
    }
    if let Some(e) = args.target_epsilon {
        if !(e > 0.0 && e.is_finite()) {
            bail!("--target-epsilon must be positive and finite, got {e}");
        }
    }
    if args.parties == 0 {
        bail!("--parties must be at least 1");
    }
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    if !(args.clip > 0.0 && args.clip.is_finite()) {
        bail!("--clip must be positive and finite, got {}", args.clip);
    }
    if args.dimension == 0 {
        bail!("--dimension must be at least 1");
    }
    if args.disjoint_batches == Some(0) {
        bail!("--disjoint-batches must be at least 1");
    }
    Ok(())
}

fn fmt_eps(e: Option<f64>) -> String {
    e.map_or_else(|| "unbounded".to_owned(), |v| format!("{v:.6}"))
}

pub(crate) fn run(args: Args) -> anyhow::Result<()> {
    check(&args)?;
    let accs = accountants(args.accountant);
    let sampling = match args.disjoint_batches {
        Some(batches_per_epoch) => Sampling::DisjointEpochs { batches_per_epoch },
        None if args.sample_rate == 1.0 => Sampling::FullBatch,
        None => Sampling::Poisson {
            sample_rate: args.sample_rate,
        },
    };
    let (q, t) = sampling.for_hidden_batches(args.steps);

    let sigma = match (args.sigma, args.target_epsilon) {
        (Some(s), _) => s,
        (None, Some(target)) => {
            let mut best = f64::INFINITY;
            let mut lines = Vec::new();
            for &acc in &accs {
                let s = calibrate_sigma(acc, target, args.delta, q, t, Neighbouring::AddRemove)
                    .with_context(|| {
                        format!("--target-epsilon {target} with the {acc} accountant")
                    })?;
                lines.push(format!("{acc}\tsigma = {s:.6}"));
                best = best.min(s);
            }
            if !args.json {
                println!(
                    "sigma for epsilon {target} at delta {} (outside analyst, add/remove):",
                    args.delta
                );
                for l in lines {
                    println!("{l}");
                }
                return Ok(());
            }
            best
        }
        (None, None) => bail!("give --sigma or --target-epsilon"),
    };

    let setting = PrivacySetting {
        noise_multiplier: sigma,
        clip: args.clip,
        sampling,
        steps: args.steps,
        delta: args.delta,
        parties: args.parties,
        nodes: args.nodes,
        noise_by: match args.noise_by {
            NoiseByArg::Parties => NoiseContributors::Parties,
            NoiseByArg::Nodes => NoiseContributors::Nodes,
        },
        scale_bits: 32,
        dimension: args.dimension,
        accountants: accs,
        // Planning figures: every Poisson opening may overflow the public batch size with
        // probability 2^-40 (vtwin pads batches, so nodes face the analyst's figure); a run's
        // privacy.json also charges each opening's truncation-failure bound.
        truncation_failure: 0.0,
        batch_overflow: match sampling {
            Sampling::Poisson { sample_rate } if sample_rate < 1.0 => {
                args.steps as f64 * vtwin_dp::BATCH_OVERFLOW_TAIL
            }
            _ => 0.0,
        },
        // Needs N, which a plan does not give.
        trim_risk: 0.0,
        padded_batches: true,
    };
    let report = PrivacyReport::build(&setting).context("computing the privacy report")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "epsilon at delta {} for sigma {sigma}, {} steps at rate {}:",
        args.delta, args.steps, args.sample_rate
    );
    println!("observer\taccountant\tadd_remove\treplace_one");
    let mut seen = Vec::new();
    for o in &report.per_observer {
        // Parties (and nodes) share one figure; print each kind once.
        let key = (o.role.clone(), o.epsilon.clone());
        if seen.contains(&key) && o.role != "analyst" {
            continue;
        }
        seen.push(key);
        let who = match o.role.as_str() {
            "party" => "each party".to_owned(),
            "node" => "each node".to_owned(),
            _ => o.observer.clone(),
        };
        for (
            acc,
            EpsilonPair {
                add_remove,
                replace_one,
            },
        ) in &o.epsilon
        {
            println!(
                "{who}\t{acc}\t{}\t{}",
                fmt_eps(*add_remove),
                fmt_eps(*replace_one)
            );
        }
    }
    Ok(())
}
