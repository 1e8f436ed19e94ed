//! `vtwin arith`: evaluate one function of the fixed-point reference (vtwin-fixed) from the
//! shell, with its f64 value and relative error, so reviewers can probe the reference.

use anyhow::{bail, Context};
use clap::ValueEnum;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{paper, Floor, Fx, Truncator};

/// Evaluate a reference arithmetic function on decimal inputs.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The function.
    function: Function,
    /// Its arguments, as decimal numbers (see the function list for their order).
    #[arg(allow_negative_numbers = true, required = true)]
    args: Vec<String>,
    /// Use the probabilistic truncation with masks from ChaCha20 seeded with this value
    /// (default: exact floor truncation).
    #[arg(long, value_name = "SEED")]
    prob_seed: Option<u64>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Function {
    /// x: encode and decode.
    Encode,
    /// a b: a * b.
    Mul,
    /// x: 1/x, x in (0, 2^32).
    Reciprocal,
    /// a b: a / b (normalised divide).
    Divide,
    /// x: 1/sqrt(x), x in (0, 2^48).
    InvSqrt,
    /// x c: min(1, c / sqrt(x)).
    ClipFactor,
    /// x: exp(x), x in [-64, 0].
    Exp,
    /// a b: a < b (1 or 0).
    Lt,
    /// a b: paper Algorithm 2 split multiply on the 64-bit ring.
    PaperMult,
    /// a b [T]: paper Algorithm 3 a / b (CrypTen initial guess, T iterations, default 10).
    PaperDiv,
}

impl Function {
    /// Argument names, required then optional.
    fn arg_names(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Function::Encode | Function::Reciprocal | Function::InvSqrt | Function::Exp => {
                (&["x"], &[])
            }
            Function::Mul | Function::Divide | Function::Lt | Function::PaperMult => {
                (&["a", "b"], &[])
            }
            Function::ClipFactor => (&["x", "c"], &[]),
            Function::PaperDiv => (&["a", "b"], &["T"]),
        }
    }
}

fn parse(names: &[&str], raw: &[String]) -> anyhow::Result<Vec<f64>> {
    names
        .iter()
        .zip(raw)
        .map(|(name, s)| {
            let v: f64 = s
                .trim()
                .parse()
                .with_context(|| format!("argument {name} = {s:?} is not a decimal number"))?;
            if !v.is_finite() {
                bail!("argument {name} = {s:?} is not finite");
            }
            Ok(v)
        })
        .collect()
}

fn encode(name: &str, v: f64) -> anyhow::Result<Fx> {
    Fx::from_f64(v).with_context(|| format!("argument {name}"))
}

fn raw(x: Fx) -> String {
    format!("{} (raw {} = {:#x})", x.to_f64(), x.signed(), x.raw())
}

pub(crate) fn run(args: Args) -> anyhow::Result<()> {
    let (required, optional) = args.function.arg_names();
    let n = args.args.len();
    if n < required.len() || n > required.len() + optional.len() {
        let all: Vec<&str> = required.iter().chain(optional).copied().collect();
        bail!(
            "{} takes {} argument(s) ({}), got {n}",
            args.function.to_possible_value().map_or_else(
                || format!("{:?}", args.function),
                |v| v.get_name().to_string()
            ),
            required.len(),
            all.join(", ")
        );
    }
    let names: Vec<&str> = required.iter().chain(optional).copied().collect();
    let v = parse(&names, &args.args)?;
    let mut floor = Floor;
    let mut prob;
    let t: &mut dyn Truncator = match args.prob_seed {
        None => &mut floor,
        Some(seed) => {
            prob = vtwin_fixed::probabilistic_from_rng(ChaCha20Rng::seed_from_u64(seed));
            &mut prob
        }
    };
    // (reference value, its description, exact f64 value on the encoded inputs)
    let (value, shown, exact): (f64, String, f64) = match args.function {
        Function::PaperMult | Function::PaperDiv => {
            let a = paper::encode(v[0]).context("argument a")?;
            let b = paper::encode(v[1]).context("argument b")?;
            let (out, exact) = if let Function::PaperMult = args.function {
                (
                    paper::algorithm2_mult(a, b),
                    paper::decode(a) * paper::decode(b),
                )
            } else {
                let iters = v.get(2).copied().unwrap_or(f64::from(paper::DEFAULT_T));
                if iters.fract() != 0.0 || !(0.0..=64.0).contains(&iters) {
                    bail!("argument T = {iters} must be an integer in [0, 64]");
                }
                (
                    paper::algorithm3_div(a, b, iters as u32),
                    paper::decode(a) / paper::decode(b),
                )
            };
            (
                paper::decode(out),
                format!("{} (raw i64 {out})", paper::decode(out)),
                exact,
            )
        }
        Function::Lt => {
            let (a, b) = (encode("a", v[0])?, encode("b", v[1])?);
            let out = vtwin_fixed::compare::lt(a, b);
            let exact = f64::from(u8::from(a.to_f64() < b.to_f64()));
            (f64::from(u8::from(out)), u8::from(out).to_string(), exact)
        }
        f => {
            let x = encode(names[0], v[0])?;
            let y = match v.get(1) {
                Some(&w) => Some(encode(names[1], w)?),
                None => None,
            };
            let y0 = y.unwrap_or(Fx::ZERO);
            let (xf, yf) = (x.to_f64(), y0.to_f64());
            let (out, exact) = match f {
                Function::Encode => (x, v[0]),
                Function::Mul => (vtwin_fixed::mul(x, y0, t), xf * yf),
                Function::Reciprocal => (vtwin_fixed::reciprocal(x, t)?, 1.0 / xf),
                Function::Divide => (vtwin_fixed::divide(x, y0, t)?, xf / yf),
                Function::InvSqrt => (vtwin_fixed::inv_sqrt(x, t)?, 1.0 / xf.sqrt()),
                Function::ClipFactor => (
                    vtwin_fixed::clip_factor(x, y0, t)?,
                    (yf / xf.sqrt()).min(1.0),
                ),
                Function::Exp => (vtwin_fixed::exp(x, t)?, xf.exp()),
                _ => unreachable!("handled above"),
            };
            (out.to_f64(), raw(out), exact)
        }
    };
    let rel = if exact == 0.0 {
        (value - exact).abs()
    } else {
        (value / exact - 1.0).abs()
    };
    let name = args.function.to_possible_value().map_or_else(
        || format!("{:?}", args.function),
        |v| v.get_name().to_string(),
    );
    println!("function   {name}");
    for (name, s) in names.iter().zip(&args.args) {
        println!("input      {name} = {s}");
    }
    let truncates = !matches!(
        args.function,
        Function::Encode | Function::Lt | Function::PaperMult | Function::PaperDiv
    );
    let rule = match (truncates, args.prob_seed) {
        (false, _) => "none (exact, or the paper's own integer division)".to_string(),
        (true, None) => "floor".to_string(),
        (true, Some(s)) => format!("probabilistic (ChaCha20 seed {s})"),
    };
    println!("truncation {rule}");
    println!("reference  {shown}");
    println!("f64        {exact:e}  (on the encoded inputs)");
    let note = if exact == 0.0 {
        " (absolute: exact value is 0)".to_string()
    } else if rel == 0.0 {
        String::new()
    } else {
        format!(" (2^{:.2})", rel.log2())
    };
    println!("rel_error  {rel:.3e}{note}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(function: Function, args: &[&str]) -> anyhow::Result<()> {
        run(Args {
            function,
            args: args.iter().map(|s| s.to_string()).collect(),
            prob_seed: None,
        })
    }

    fn err(function: Function, args: &[&str]) -> String {
        format!("{:#}", run_with(function, args).unwrap_err())
    }

    #[test]
    fn bad_input_names_the_argument() {
        assert!(err(Function::Reciprocal, &["abc"]).starts_with("argument x = \"abc\""));
        assert!(
            err(Function::Divide, &["1", "inf"]).starts_with("argument b = \"inf\" is not finite")
        );
        assert!(err(Function::Mul, &["1e30", "1"]).starts_with("argument a: cannot encode"));
        assert!(err(Function::PaperDiv, &["1", "2", "2.5"]).starts_with("argument T = 2.5"));
        assert!(err(Function::PaperMult, &["3e9", "1"]).starts_with("argument a"));
        assert!(err(Function::Reciprocal, &["0"]).starts_with("reciprocal: x = 0 is outside"));
        assert_eq!(
            err(Function::Mul, &["1"]),
            "mul takes 2 argument(s) (a, b), got 1"
        );
        assert_eq!(
            err(Function::PaperDiv, &["1", "2", "3", "4"]),
            "paper-div takes 2 argument(s) (a, b, T), got 4"
        );
    }

    #[test]
    fn good_input_runs() {
        run_with(Function::ClipFactor, &["1e6", "2"]).unwrap();
        run_with(Function::PaperDiv, &["1", "0.5", "12"]).unwrap();
        run_with(Function::Lt, &["-1", "2"]).unwrap();
    }
}
