//! Test vectors: `protocols/vectors/arithmetic.json` holds inputs and the exact expected
//! ring outputs (u128 / i64 as decimal strings), for the floor rule and for the
//! probabilistic rule with its masks listed in consumption order. `replay_vectors` checks
//! every case; the MPC engine replays the same file.
//!
//! Regenerate (only when the reference changes on purpose, and say so in the commit):
//! `cargo test -p vtwin-fixed --test vectors -- --ignored generate_vectors`

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::PathBuf;
use vtwin_fixed::{
    clip_factor, compare, divide, dot, exp, inv_sqrt, mask_from_rng, mul, paper, reciprocal, Floor,
    Fx, InvSqrt, Probabilistic, Truncator,
};

#[derive(Debug, Serialize, Deserialize)]
struct File {
    format: String,
    frac_bits: u32,
    ring_bits: u32,
    description: Vec<String>,
    cases: Vec<Case>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Case {
    function: String,
    /// "floor", "probabilistic" or "none" (exact functions).
    truncation: String,
    /// Decimal ring elements (u128), or i64 for paper functions; f64 text for `encode`.
    inputs: Vec<String>,
    /// Masks (u128, decimal) in the order the truncations consume them.
    masks: Vec<String>,
    output: String,
}

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protocols/vectors/arithmetic.json")
}

fn u(s: &str) -> u128 {
    s.parse().expect("u128")
}

fn i(s: &str) -> i64 {
    s.parse().expect("i64")
}

/// Evaluates one case's function with truncator `t`; None for an unknown function name.
fn eval(function: &str, inputs: &[String], t: &mut dyn Truncator) -> Option<String> {
    let x = |k: usize| Fx(u(&inputs[k]));
    let out = match function {
        "encode" => Fx::from_f64(inputs[0].parse().expect("f64"))
            .expect("in range")
            .raw()
            .to_string(),
        "mul" => mul(x(0), x(1), t).raw().to_string(),
        "dot" => {
            let fx: Vec<Fx> = inputs.iter().map(|s| Fx(u(s))).collect();
            let (a, b) = fx.split_at(fx.len() / 2);
            dot(a, b, t).raw().to_string()
        }
        "reciprocal" => reciprocal(x(0), t).expect("domain").raw().to_string(),
        "divide" => divide(x(0), x(1), t).expect("domain").raw().to_string(),
        "inv_sqrt" => inv_sqrt(x(0), t).expect("domain").raw().to_string(),
        "inv_sqrt_mul" => InvSqrt::new(x(1), t)
            .expect("domain")
            .mul(x(0), t)
            .raw()
            .to_string(),
        "clip_factor" => clip_factor(x(0), x(1), t)
            .expect("domain")
            .raw()
            .to_string(),
        "exp" => exp(x(0), t).expect("domain").raw().to_string(),
        "lt" => u8::from(compare::lt(x(0), x(1))).to_string(),
        "paper_algorithm2_mult" => paper::algorithm2_mult(i(&inputs[0]), i(&inputs[1])).to_string(),
        "paper_algorithm3_div" => {
            let t_iter = u32::try_from(i(&inputs[2])).expect("T");
            paper::algorithm3_div(i(&inputs[0]), i(&inputs[1]), t_iter).to_string()
        }
        "paper_algorithm4_closed" => {
            let logs: Vec<i64> = inputs[2..].iter().map(|s| i(s)).collect();
            paper::algorithm4_closed(&logs, i(&inputs[0]), i(&inputs[1]))
                .expect("valid")
                .to_string()
        }
        _ => return None,
    };
    Some(out)
}

fn enc(v: f64) -> String {
    Fx::from_f64(v).expect("in range").raw().to_string()
}

fn penc(v: f64) -> String {
    paper::encode(v).expect("in range").to_string()
}

fn inputs_for(rng: &mut ChaCha20Rng) -> Vec<(&'static str, Vec<String>)> {
    let mut uni = |lo: f64, hi: f64| lo + (hi - lo) * (rng.next_u64() as f64 / u64::MAX as f64);
    let mut v: Vec<(&'static str, Vec<String>)> = Vec::new();
    for x in [
        0.0,
        1.0,
        -1.0,
        0.1,
        -2.5e-10,
        1.5 * 2f64.powi(-32),
        2.5 * 2f64.powi(-32),
        123456.789,
        -9.2e18,
    ] {
        v.push(("encode", vec![format!("{x:e}")]));
    }
    for (a, b) in [
        (1.5, -2.25),
        (-1e-9, 3.0),
        (1000.1, -2000.2),
        (uni(-8.0, 8.0), uni(-8.0, 8.0)),
    ] {
        v.push(("mul", vec![enc(a), enc(b)]));
    }
    let n = 5;
    let dot_in: Vec<String> = (0..2 * n).map(|_| enc(uni(-8.0, 8.0))).collect();
    v.push(("dot", dot_in));
    for x in [
        2f64.powi(-30),
        2f64.powi(-32),
        0.3,
        1.0,
        1.7,
        2047.0,
        65536.0,
        uni(1.0, 100.0),
        4e9,
    ] {
        v.push(("reciprocal", vec![enc(x)]));
    }
    for (a, b) in [
        (1.0, 3.0),
        (-5.5, 2f64.powi(-30)),
        (1e6, 60000.0),
        (0.25, 1e-6),
    ] {
        v.push(("divide", vec![enc(a), enc(b)]));
    }
    for x in [
        2f64.powi(-30),
        2f64.powi(-32),
        0.5,
        1.0,
        2.0,
        3.0,
        1e6,
        2f64.powi(40),
        2.8e14,
    ] {
        v.push(("inv_sqrt", vec![enc(x)]));
    }
    for (a, x) in [(1.0, 2f64.powi(40)), (-3.0, 0.01)] {
        v.push(("inv_sqrt_mul", vec![enc(a), enc(x)]));
    }
    for (x, c) in [
        (0.0, 1.0),
        (0.5, 1.0),
        (1.0, 1.0),
        (4.0, 1.0),
        (1e12, 3.0),
        (2f64.powi(-30), 0.001),
    ] {
        v.push(("clip_factor", vec![enc(x), enc(c)]));
    }
    for x in [
        0.0,
        -1e-9,
        -0.5,
        -1.0,
        -7.6,
        -22.0,
        -23.0,
        -64.0,
        uni(-10.0, 0.0),
    ] {
        v.push(("exp", vec![enc(x)]));
    }
    for (a, b) in [(1.0, 2.0), (2.0, 1.0), (-1.0, -1.0), (-9e18, 9e18)] {
        v.push(("lt", vec![enc(a), enc(b)]));
    }
    v
}

fn paper_cases() -> Vec<Case> {
    let none = |function: &str, inputs: Vec<String>| {
        let output = eval(function, &inputs, &mut Floor).expect("known");
        Case {
            function: function.into(),
            truncation: "none".into(),
            inputs,
            masks: vec![],
            output,
        }
    };
    let mut v = Vec::new();
    for (a, b) in [
        (1.5, 1.5),
        (0.75, 0.75),
        (-0.75, 0.75),
        (3.75, 2.75),
        (100.25, -3.0),
    ] {
        v.push(none("paper_algorithm2_mult", vec![penc(a), penc(b)]));
    }
    for (b, t) in [
        (0.5, 10),
        (2.0, 10),
        (0.001, 10),
        (300.0, 10),
        (700.0, 10),
        (0.35, 10),
    ] {
        v.push(none(
            "paper_algorithm3_div",
            vec![penc(1.0), penc(b), t.to_string()],
        ));
    }
    let t = paper::encode(-20.0).expect("ok");
    for max in [
        t,
        t - 1,
        t - paper::ALG4_STEP,
        t - paper::ALG4_STEP - 1,
        paper::encode(-35.123).expect("ok"),
    ] {
        v.push(none(
            "paper_algorithm4_closed",
            vec![
                t.to_string(),
                paper::ALG4_STEP.to_string(),
                max.to_string(),
                (max - (3 << 32)).to_string(),
            ],
        ));
    }
    v
}

#[test]
#[ignore = "writes protocols/vectors/arithmetic.json; run on purpose"]
fn generate_vectors() {
    let mut rng = ChaCha20Rng::seed_from_u64(20_260_000);
    let mut cases = Vec::new();
    for (function, inputs) in inputs_for(&mut rng) {
        let exact = matches!(function, "encode" | "lt");
        let floor = eval(function, &inputs, &mut Floor).expect("known");
        let truncation = if exact { "none" } else { "floor" };
        cases.push(Case {
            function: function.into(),
            truncation: truncation.into(),
            inputs: inputs.clone(),
            masks: vec![],
            output: floor,
        });
        if exact {
            continue;
        }
        let recorded = RefCell::new(Vec::new());
        let mut t = Probabilistic::new(|| {
            let m = mask_from_rng(&mut rng);
            recorded.borrow_mut().push(m.to_string());
            m
        });
        let output = eval(function, &inputs, &mut t).expect("known");
        cases.push(Case {
            function: function.into(),
            truncation: "probabilistic".into(),
            inputs,
            masks: recorded.into_inner(),
            output,
        });
    }
    cases.extend(paper_cases());
    let file = File {
        format: "vtwin arithmetic test vectors v1".into(),
        frac_bits: vtwin_fixed::FRAC_BITS,
        ring_bits: vtwin_fixed::RING_BITS,
        description: vec![
            "Reference outputs of crates/vtwin-fixed, replayed by its test `vectors` and by the MPC engine.".into(),
            "Ring elements are u128 in decimal (two's complement, scale 2^32); paper_* use i64 on the 64-bit ring.".into(),
            "truncation: floor = exact floor; probabilistic = trunc_prob with `masks` consumed in order; none = exact.".into(),
            "Inputs per function: encode [f64]; mul/divide [a, b]; dot [a_1..a_n, b_1..b_n]; reciprocal/inv_sqrt/exp [x];".into(),
            "inv_sqrt_mul [a, x] (a/sqrt(x)); clip_factor [x, C]; lt [a, b] -> 1/0; paper_algorithm3_div [a, b, T];".into(),
            "paper_algorithm4_closed [t, c, log densities...] -> the constant.".into(),
            "Generated by `cargo test -p vtwin-fixed --test vectors -- --ignored generate_vectors` (ChaCha20 seed 20260000).".into(),
        ],
        cases,
    };
    let target = path();
    std::fs::create_dir_all(target.parent().expect("dir")).expect("mkdir");
    let tmp = target.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_string_pretty(&file).expect("json") + "\n",
    )
    .expect("write");
    std::fs::rename(&tmp, &target).expect("rename");
}

#[test]
fn replay_vectors() {
    let text = std::fs::read_to_string(path()).expect("protocols/vectors/arithmetic.json");
    let file: File = serde_json::from_str(&text).expect("valid vectors file");
    assert_eq!((file.frac_bits, file.ring_bits), (32, 128));
    assert!(file.cases.len() > 50, "{} cases", file.cases.len());
    let mut probabilistic = 0;
    for (n, case) in file.cases.iter().enumerate() {
        let got = match case.truncation.as_str() {
            "floor" | "none" => eval(&case.function, &case.inputs, &mut Floor),
            "probabilistic" => {
                probabilistic += 1;
                let mut masks = case.masks.iter().map(|m| u(m));
                let mut t = Probabilistic::new(|| masks.next().expect("case lists too few masks"));
                let out = eval(&case.function, &case.inputs, &mut t);
                assert_eq!(
                    t.calls() as usize,
                    case.masks.len(),
                    "case {n}: masks left over"
                );
                out
            }
            other => panic!("case {n}: unknown truncation {other}"),
        };
        assert_eq!(
            got.as_deref(),
            Some(case.output.as_str()),
            "case {n}: {case:?}"
        );
    }
    assert!(probabilistic > 20);
}
