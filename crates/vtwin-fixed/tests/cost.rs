//! The documented truncation counts (= masks the MPC consumes) match the code, and the
//! probabilistic rule replays a recorded mask sequence bit for bit.

use std::cell::RefCell;
use vtwin_fixed::{
    clip_factor, cost, exp, inv_sqrt, mul, Counting, Floor, Fx, InvSqrt, Probabilistic, Reciprocal,
    Truncator,
};

fn count<R>(f: impl FnOnce(&mut dyn Truncator) -> R) -> u32 {
    let mut t = Counting {
        inner: Floor,
        count: 0,
    };
    let _ = f(&mut t);
    u32::try_from(t.count).unwrap()
}

#[test]
fn truncation_counts_match_the_cost_model() {
    let x = Fx::from_f64(37.25).unwrap();
    let c = Fx::from_f64(2.0).unwrap();
    assert_eq!(count(|t| mul(x, x, t)), cost::MUL.truncations);
    assert_eq!(
        count(|t| Reciprocal::new(x, t).unwrap().value(t)),
        cost::RECIPROCAL.truncations
    );
    let r = Reciprocal::new(x, &mut Floor).unwrap();
    assert_eq!(count(|t| r.divide(c, t)), cost::DIVIDE_EXTRA.truncations);
    assert_eq!(
        count(|t| r.divide_fraction(c, t)),
        cost::DIVIDE_FRACTION.truncations
    );
    assert_eq!(
        count(|t| inv_sqrt(x, t).unwrap()),
        cost::INV_SQRT.truncations
    );
    // The clip factor always runs the whole pipeline, also when no clipping happens or x = 0.
    for x in [x, Fx::ONE, Fx::ZERO] {
        assert_eq!(
            count(|t| clip_factor(x, c, t).unwrap()),
            cost::CLIP_FACTOR.truncations
        );
    }
    assert_eq!(count(|t| exp(-x, t).unwrap()), cost::EXP.truncations);
    let s = InvSqrt::new(x, &mut Floor).unwrap();
    assert_eq!(count(|t| s.mul(c, t)), 2);
}

#[test]
fn binary_costs_are_as_documented() {
    // Numbers quoted in protocols/arithmetic.md.
    assert_eq!(
        cost::normalisation(64),
        (
            cost::a2b_and_gates(64) + cost::msb_scan_and_gates(64),
            8 + 1,
            64
        )
    );
    assert_eq!(cost::a2b_and_gates(64), 128 + 2 * (6 * 64 - 63));
    assert_eq!(cost::msb_scan_and_gates(64), (6 * 63 - 63) + 64);
    assert_eq!(cost::a2b_and_gates(80), 160 + 2 * (7 * 80 - 127));
    assert_eq!(cost::msb_scan_and_gates(80), (7 * 79 - 127) + 80);
    assert_eq!(cost::normalisation(80).1, 9 + 1);
    println!(
        "normalisation 64: {:?}, 80: {:?}, 39-bit a2b: {} ANDs depth {}; MSB: {:?}",
        cost::normalisation(64),
        cost::normalisation(80),
        cost::a2b_and_gates(39),
        cost::a2b_depth(39),
        cost::MSB
    );
}

#[test]
fn probabilistic_rule_replays_recorded_masks() {
    // Record the masks an RNG-driven run consumes, then replay them: identical output.
    use rand_chacha::rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    let recorded = RefCell::new(Vec::new());
    let mut live = Probabilistic::new(|| {
        let m = vtwin_fixed::mask_from_rng(&mut rng);
        recorded.borrow_mut().push(m);
        m
    });
    let x = Fx::from_f64(1234.567).unwrap();
    let c = Fx::from_f64(3.0).unwrap();
    let out = clip_factor(x, c, &mut live).unwrap();
    let n = live.calls();
    let masks = recorded.into_inner();
    assert_eq!(masks.len() as u64, n);
    let mut it = masks.iter().copied();
    let mut replay = Probabilistic::new(|| it.next().expect("enough masks"));
    assert_eq!(clip_factor(x, c, &mut replay).unwrap(), out);
    // A different mask sequence gives a (slightly) different result: masks matter.
    let mut zeros = Probabilistic::new(|| 0u128);
    let floor_like = clip_factor(x, c, &mut zeros).unwrap();
    // With r = 0 the rule is the logical shift: floor for the nonnegative intermediates here.
    assert_eq!(floor_like, clip_factor(x, c, &mut Floor).unwrap());
}
