//! Shared helpers: range strategies and a proptest runner that records the worst error.
#![allow(dead_code, unreachable_pub)] // each test binary uses a subset

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{probabilistic_from_rng, Floor, Fx, Probabilistic, Truncator};

/// 2^k as f64.
pub fn p2(k: f64) -> f64 {
    k.exp2()
}

/// A value log-uniform in [2^lo, 2^hi], encoded (so the exact reference is `to_f64()`).
pub fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = Fx> {
    (lo..=hi).prop_map(|k| Fx::from_f64(k.exp2()).expect("in range"))
}

/// A value uniform in [lo, hi], encoded.
pub fn uniform(lo: f64, hi: f64) -> impl Strategy<Value = Fx> {
    (lo..=hi).prop_map(|v| Fx::from_f64(v).expect("in range"))
}

/// Which truncation rule a case uses: exact floor, or probabilistic with masks from a seed.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// [`Floor`].
    Floor,
    /// [`Probabilistic`] with ChaCha20 masks from this seed.
    Prob(u64),
}

pub fn rule() -> impl Strategy<Value = Rule> {
    prop_oneof![Just(Rule::Floor), any::<u64>().prop_map(Rule::Prob)]
}

/// Runs `f` with the truncator for `rule`.
pub fn with_rule<R>(rule: Rule, f: impl FnOnce(&mut dyn Truncator) -> R) -> R {
    match rule {
        Rule::Floor => f(&mut Floor),
        Rule::Prob(seed) => {
            let mut t: Probabilistic<_> = probabilistic_from_rng(ChaCha20Rng::seed_from_u64(seed));
            f(&mut t)
        }
    }
}

/// Runs a property over `cases` cases with failure persistence next to the calling test
/// file (`tests/<name>.proptest-regressions`, where proptest's default also lands for tests). `check` returns the error measure of one case (or fails it); the maximum is
/// returned and printed as `MEASURED <name> max=<v> (2^<log2>)`.
pub fn measure<S: Strategy>(
    name: &str,
    source_file: &'static str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<f64, TestCaseError>,
) -> f64 {
    let config = Config {
        cases,
        source_file: Some(source_file),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let worst = std::cell::Cell::new(0.0f64);
    let result = runner.run(&strategy, |v| {
        let e = check(v)?;
        worst.set(worst.get().max(e));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let w = worst.get();
    println!("MEASURED {name} max={w:.3e} (2^{:.2})", w.log2());
    w
}
