//! Proptests of the compound functions against f64 over each documented range, with both
//! truncation rules. Each prints `MEASURED <name> max=...` (run with `--nocapture`); the
//! figures in protocols/arithmetic.md come from here.

mod common;

use common::{log_uniform, measure, p2, rule, uniform, with_rule};
use proptest::prelude::*;
use vtwin_fixed::{
    clip_factor, compare, divide, exp, inv_sqrt, reciprocal, DomainError, Floor, Fx, InvSqrt,
    Reciprocal, Truncator,
};

const CASES: u32 = 100_000;
const ULP: f64 = 1.0 / 4_294_967_296.0;

/// Magnitude log-uniform in [2^lo, 2^hi] with a random sign.
fn signed_log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = Fx> {
    (log_uniform(lo, hi), any::<bool>()).prop_map(|(v, neg)| if neg { -v } else { v })
}

/// A compound function under test, `1 / g(x)` for some `g`, with the truncator to use.
type Inverse = fn(Fx, &mut dyn Truncator) -> Result<Fx, DomainError>;

/// The relative error |got/want - 1|, failing the case when it exceeds 2^-20 (`what` names
/// the inputs in the failure message).
fn within_2_pow_20(
    got: f64,
    want: f64,
    what: std::fmt::Arguments<'_>,
) -> Result<f64, TestCaseError> {
    let rel = (got / want - 1.0).abs();
    prop_assert!(rel <= p2(-20.0), "{what}: got={got} want={want} rel={rel}");
    Ok(rel)
}

/// Asserts `f(x)` is within relative 2^-20 of `1 / g(x)` for x log-uniform in [2^-30, 2^hi],
/// under both truncation rules; returns the measured maximum relative error.
fn relative_error(name: &str, hi: f64, f: Inverse, g: fn(f64) -> f64) -> f64 {
    measure(
        name,
        file!(),
        CASES,
        (log_uniform(-30.0, hi), rule()),
        |(x, r)| {
            let got = with_rule(r, |t| f(x, t)).unwrap().to_f64();
            let want = 1.0 / g(x.to_f64());
            within_2_pow_20(got, want, format_args!("x={x:?}"))
        },
    )
}

/// Asserts `f(x)` is within relative 2^-20 of `1 / g(x)`, or 2 ulp where the output
/// quantisation dominates, for x log-uniform in [2^-30, 2^hi] under both rules, measuring
/// the ulp error above 2^rel_hi (`names[0]`); then measures the relative error with the
/// quantisation included under floor truncation (`names[1]`).
fn absolute_error(names: [&str; 2], (rel_hi, hi): (f64, f64), f: Inverse, g: fn(f64) -> f64) {
    measure(
        names[0],
        file!(),
        CASES,
        (log_uniform(-30.0, hi), rule()),
        |(x, r)| {
            let got = with_rule(r, |t| f(x, t)).unwrap().to_f64();
            let want = 1.0 / g(x.to_f64());
            let err = (got - want).abs();
            prop_assert!(
                err <= (p2(-20.0) * want).max(2.0 * ULP),
                "x={x:?} got={got} want={want}"
            );
            Ok(if x.to_f64() > p2(rel_hi) {
                err / ULP
            } else {
                0.0
            })
        },
    );
    measure(names[1], file!(), CASES, log_uniform(-30.0, hi), |x| {
        let got = f(x, &mut Floor).unwrap().to_f64();
        Ok((got * g(x.to_f64()) - 1.0).abs())
    });
}

#[test]
fn reciprocal_relative_error_up_to_2_pow_11() {
    let w = relative_error(
        "reciprocal rel [2^-30,2^11]",
        11.0,
        |x, t| reciprocal(x, t),
        |x| x,
    );
    assert!(w > 0.0);
}

#[test]
fn reciprocal_absolute_error_over_the_whole_range() {
    absolute_error(
        [
            "reciprocal abs ulp [2^-30,2^16]",
            "reciprocal rel [2^-30,2^16] (quantisation included)",
        ],
        (11.0, 16.0),
        |x, t| reciprocal(x, t),
        |x| x,
    );
}

#[test]
fn reciprocal_mantissa_relative_error() {
    measure(
        "reciprocal mantissa rel [2^-30,2^16]",
        file!(),
        CASES,
        (log_uniform(-30.0, 16.0), rule()),
        |(x, r)| {
            let inv = with_rule(r, |t| Reciprocal::new(x, t)).unwrap();
            // y ~ 1/m with m = x 2^(31-e): compare y * x * 2^(31-e) with 1.
            let e = 127 - x.raw().leading_zeros() as i32;
            let rel =
                ((inv.mantissa as f64 * ULP) * x.to_f64() * p2(f64::from(31 - e)) - 1.0).abs();
            prop_assert!(rel <= p2(-27.0), "x={x:?} rel={rel}");
            Ok(rel)
        },
    );
}

#[test]
fn inv_sqrt_mantissa_relative_error() {
    measure(
        "inv_sqrt mantissa rel [2^-30,2^40]",
        file!(),
        CASES,
        (log_uniform(-30.0, 40.0), rule()),
        |(x, r)| {
            let inv = with_rule(r, |t| InvSqrt::new(x, t)).unwrap();
            // y ~ 1/sqrt(m) with m = x 2^s, s = 31 - e rounded down to even.
            let e = 127 - x.raw().leading_zeros() as i32;
            let s = if (31 - e) % 2 == 0 { 31 - e } else { 30 - e };
            let m = x.to_f64() * p2(f64::from(s));
            let rel = ((inv.mantissa as f64 * ULP) * m.sqrt() - 1.0).abs();
            prop_assert!(rel <= p2(-22.0), "x={x:?} rel={rel}");
            Ok(rel)
        },
    );
}

#[test]
fn divide_relative_error() {
    let strategy = (
        signed_log_uniform(-11.0, 21.9),
        log_uniform(-30.0, 16.0),
        rule(),
    )
        .prop_filter("quotient >= 2^-11", |(a, b, _)| {
            (a.to_f64() / b.to_f64()).abs() >= p2(-11.0)
        });
    measure(
        "divide rel (|a|,|a/b| >= 2^-11)",
        file!(),
        CASES,
        strategy,
        |(a, b, r)| {
            let got = with_rule(r, |t| divide(a, b, t)).unwrap().to_f64();
            let want = a.to_f64() / b.to_f64();
            within_2_pow_20(got, want, format_args!("a={a:?} b={b:?}"))
        },
    );
}

#[test]
fn divide_fraction_absolute_error() {
    // A fraction 0 <= a <= b of the denominator (b over the reciprocal's whole accurate range
    // and beyond, down to one ulp, up to the window's 2^32): the quotient in [0, 1] within
    // 2^-27 + 2^-31 absolute (the mantissa's relative error and two roundings), never above
    // 1 + 2^-27 + 2^-31.
    let strategy = (log_uniform(-32.0, 31.9), 0.0f64..=1.0, rule());
    measure(
        "divide_fraction abs (0 <= a <= b, b in [2^-32, 2^31.9])",
        file!(),
        CASES,
        strategy,
        |(b, frac, r)| {
            let a = Fx(((b.raw() as f64 * frac) as u128).min(b.raw()));
            let got =
                with_rule(r, |t| Reciprocal::new_unchecked(b, t).divide_fraction(a, t)).to_f64();
            let want = a.to_f64() / b.to_f64();
            let err = (got - want).abs();
            let bound = p2(-27.0) + p2(-31.0);
            prop_assert!(err <= bound, "a={a:?} b={b:?} got={got} want={want}");
            prop_assert!(got <= 1.0 + bound);
            Ok(err)
        },
    );
}

#[test]
fn inv_sqrt_relative_error_up_to_2_pow_22() {
    relative_error(
        "inv_sqrt rel [2^-30,2^22]",
        22.0,
        |x, t| inv_sqrt(x, t),
        f64::sqrt,
    );
}

#[test]
fn inv_sqrt_absolute_error_over_the_whole_range() {
    absolute_error(
        [
            "inv_sqrt abs ulp (2^22,2^40]",
            "inv_sqrt rel [2^-30,2^40] (quantisation included)",
        ],
        (22.0, 40.0),
        |x, t| inv_sqrt(x, t),
        f64::sqrt,
    );
}

#[test]
fn inv_sqrt_mul_relative_error_over_the_whole_range() {
    let strategy = (
        signed_log_uniform(-11.0, 21.9),
        log_uniform(-30.0, 40.0),
        rule(),
    )
        .prop_filter("result >= 2^-11", |(a, x, _)| {
            (a.to_f64() / x.to_f64().sqrt()).abs() >= p2(-11.0)
        });
    measure(
        "inv_sqrt mul a/sqrt(x) rel [2^-30,2^40]",
        file!(),
        CASES,
        strategy,
        |(a, x, r)| {
            let got = with_rule(r, |t| InvSqrt::new(x, t).map(|s| s.mul(a, t)))
                .unwrap()
                .to_f64();
            let want = a.to_f64() / x.to_f64().sqrt();
            within_2_pow_20(got, want, format_args!("a={a:?} x={x:?}"))
        },
    );
}

#[test]
fn clip_factor_matches_min_one_c_over_sqrt() {
    let x = prop_oneof![1 => Just(Fx::ZERO), 20 => log_uniform(-30.0, 40.0)];
    let strategy = (x, log_uniform(-4.0, 10.0), rule())
        .prop_filter("factor >= 2^-11", |(x, c, _)| {
            c.to_f64() / x.to_f64().sqrt() >= p2(-11.0)
        });
    measure(
        "clip_factor rel (x in [0,2^40], C in [2^-4,2^10])",
        file!(),
        CASES,
        strategy,
        |(x, c, r)| {
            let got = with_rule(r, |t| clip_factor(x, c, t)).unwrap();
            let (xf, cf) = (x.to_f64(), c.to_f64());
            if xf <= cf * cf {
                prop_assert_eq!(got, Fx::ONE, "x={:?} c={:?}", x, c);
                return Ok(0.0);
            }
            // One-sided: never above (1 + 2^-21) C/sqrt(x) (exact check in tests/clip.rs),
            // and below it by at most 2^-12 relative (2 Newton-Raphson steps, whose
            // approximation error is all below) plus the public slack.
            let want = cf / xf.sqrt();
            let slack = vtwin_fixed::clip::clip_rounding_slack(c) as f64 * p2(-32.0);
            let (g, rel) = (got.to_f64(), (got.to_f64() / want - 1.0).abs());
            prop_assert!(
                g <= want * (1.0 + p2(-21.0)),
                "x={x:?} c={c:?} got={got:?} want={want}"
            );
            prop_assert!(
                g >= want * (1.0 - p2(-12.0)) - slack,
                "x={x:?} c={c:?} got={got:?} want={want}"
            );
            Ok(rel)
        },
    );
}

#[test]
fn clip_factor_threshold_is_exact() {
    for c in [1.0, 0.1, 3.7, 1000.0] {
        let cf = Fx::from_f64(c).unwrap();
        let thr = (cf.signed() * cf.signed()) >> 32; // floor(C_raw^2 / 2^32)
        assert_eq!(
            clip_factor(Fx::from_signed(thr), cf, &mut Floor).unwrap(),
            Fx::ONE
        );
        let above = clip_factor(Fx::from_signed(thr + 1), cf, &mut Floor).unwrap();
        // Just above C^2 the factor is C/sqrt(x) ~ 1, rounded down: within 2^-12 (2^20 ulp,
        // the 2 Newton-Raphson steps) plus the slack below 1, and never above 1 + 2^-21
        // (tests/clip.rs).
        assert!(
            (above.signed() - Fx::ONE.signed()).abs() < 1 << 20,
            "{above:?}"
        );
        assert_eq!(clip_factor(Fx::ZERO, cf, &mut Floor).unwrap(), Fx::ONE);
    }
}

#[test]
fn exp_relative_error_above_minus_7_6() {
    measure(
        "exp rel [-7.6,0]",
        file!(),
        CASES,
        (uniform(-7.6, 0.0), rule()),
        |(x, r)| {
            let got = with_rule(r, |t| exp(x, t)).unwrap().to_f64();
            let want = x.to_f64().exp();
            within_2_pow_20(got, want, format_args!("x={x:?}"))
        },
    );
}

#[test]
fn exp_absolute_error_over_minus_64_to_0() {
    measure(
        "exp abs ulp [-64,0]",
        file!(),
        CASES,
        (uniform(-64.0, 0.0), rule()),
        |(x, r)| {
            let got = with_rule(r, |t| exp(x, t)).unwrap().to_f64();
            let want = x.to_f64().exp();
            let ulps = (got - want).abs() / ULP;
            prop_assert!(ulps <= 4.0, "x={x:?} got={got} want={want}");
            Ok(ulps)
        },
    );
}

#[test]
fn exp_exact_points() {
    assert_eq!(exp(Fx::ZERO, &mut Floor).unwrap(), Fx::ONE);
    assert_eq!(exp(Fx::from_int(-64), &mut Floor).unwrap(), Fx::ZERO);
    assert_eq!(exp(Fx::from_int(-23), &mut Floor).unwrap(), Fx::ZERO); // e^-23 < 2^-33
}

proptest! {
    #[test]
    fn comparisons_agree_with_f64(a in -1e12f64..1e12, b in -1e12f64..1e12) {
        let (x, y) = (Fx::from_f64(a).unwrap(), Fx::from_f64(b).unwrap());
        let (xa, yb) = (x.to_f64(), y.to_f64());
        prop_assert_eq!(compare::lt(x, y), xa < yb);
        prop_assert_eq!(compare::le(x, y), xa <= yb);
        prop_assert_eq!(compare::is_negative(x), xa < 0.0);
        prop_assert_eq!(compare::sign(x), if xa < 0.0 { -1 } else if xa > 0.0 { 1 } else { 0 });
        prop_assert_eq!(compare::min(x, y).to_f64(), xa.min(yb));
        prop_assert_eq!(compare::max(x, y).to_f64(), xa.max(yb));
    }
}

#[test]
fn comparisons_at_the_encoding_extremes() {
    let top = Fx::from_f64(9.2e18).unwrap();
    assert!(compare::lt(-top, top));
    assert!(!compare::lt(top, -top));
    assert_eq!(compare::sign(Fx::ZERO), 0);
    assert!(compare::le(top, top));
}

#[test]
fn domain_errors_name_function_and_argument() {
    let cases: Vec<(Result<Fx, DomainError>, &str)> = vec![
        (reciprocal(Fx::ZERO, &mut Floor), "reciprocal: x = 0"),
        (
            reciprocal(Fx::from_int(-2), &mut Floor),
            "reciprocal: x = -2",
        ),
        (
            reciprocal(Fx::from_f64(2f64.powi(32)).unwrap(), &mut Floor),
            "reciprocal: x = 4294967296",
        ),
        (
            divide(Fx::from_f64(2f64.powi(22)).unwrap(), Fx::ONE, &mut Floor),
            "divide: a = 4194304",
        ),
        (divide(Fx::ONE, Fx::ZERO, &mut Floor), "reciprocal: x = 0"),
        (inv_sqrt(Fx::ZERO, &mut Floor), "inv_sqrt: x = 0"),
        (
            inv_sqrt(Fx::from_f64(2f64.powi(48)).unwrap(), &mut Floor),
            "inv_sqrt: x = 281474976710656",
        ),
        (
            clip_factor(Fx::from_int(-1), Fx::ONE, &mut Floor),
            "clip_factor: x = -1",
        ),
        (
            clip_factor(Fx::ONE, Fx::ZERO, &mut Floor),
            "clip_factor: c = 0",
        ),
        (
            clip_factor(Fx::ONE, Fx::from_f64(2f64.powi(22)).unwrap(), &mut Floor),
            "clip_factor: c = 4194304",
        ),
        (exp(Fx::from_f64(0.5).unwrap(), &mut Floor), "exp: x = 0.5"),
        (
            exp(Fx::from_f64(-64.5).unwrap(), &mut Floor),
            "exp: x = -64.5",
        ),
    ];
    for (result, want) in cases {
        let msg = result.unwrap_err().to_string();
        assert!(msg.starts_with(want), "{msg:?} should start with {want:?}");
    }
    // Edges of the domains are accepted.
    assert!(reciprocal(Fx(1), &mut Floor).is_ok());
    assert!(reciprocal(Fx((1 << 64) - 1), &mut Floor).is_ok());
    assert!(inv_sqrt(Fx((1 << 80) - 1), &mut Floor).is_ok());
    assert!(exp(Fx::from_int(-64), &mut Floor).is_ok());
}
