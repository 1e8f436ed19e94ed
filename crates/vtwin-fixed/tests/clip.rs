//! The clip factor's one-sided bound, checked exactly (big integers) over every exponent
//! branch of the inverse square root: for x > C^2 the factor c satisfies
//! c sqrt(x) <= (1 + 2^-21) C, and for x <= C^2 it is exactly 1. This is the inequality
//! `vtwin_fixed::clip_bound` builds the provable clip on.

use num_bigint::BigUint;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::clip::CLIP_REL_EXCESS;
use vtwin_fixed::{clip_factor, probabilistic_from_rng, Floor, Fx, Truncator};

/// c^2 x <= (1 + 2^-21)^2 C^2 on raw values: c^2 x 2^42 <= (2^21 + 1)^2 C^2 2^32.
fn within(c: Fx, x: Fx, clip: Fx) -> bool {
    assert_eq!(CLIP_REL_EXCESS, 2f64.powi(-21));
    let big = |v: u128| BigUint::from(v);
    let c_abs = c.signed().unsigned_abs();
    let lhs = (big(c_abs) * big(c_abs) * big(x.raw())) << 42u32;
    let one_plus = big((1u128 << 21) + 1);
    let rhs = (&one_plus * &one_plus * big(clip.raw()) * big(clip.raw())) << 32u32;
    lhs <= rhs
}

fn check(x: Fx, clip: Fx, t: &mut dyn Truncator) {
    let c = clip_factor(x, clip, t).expect("domain");
    let threshold = (clip.raw() * clip.raw()) >> 32;
    if x.raw() <= threshold {
        assert_eq!(c, Fx::ONE, "x {x:?} C {clip:?}");
    } else {
        assert!(
            within(c, x, clip),
            "x {x:?} C {clip:?}: |c| {c:?} too large"
        );
        // Rounding down by the slack can only make a factor below ~(slack) ulps negative;
        // the gradient circuit's norms (< 2^42) keep C / sqrt(x) above 2^-25 (128 ulps).
        if clip.to_f64() / x.to_f64().sqrt() >= 2f64.powi(-25) {
            assert!(c.signed() > 0, "x {x:?} C {clip:?}: c {c:?} not positive");
        }
    }
}

/// The probabilistic truncation returns floor or floor + 1 (the latter only when bits are
/// cut off). This one picks, call by call, the locally larger choice: h and the initial line
/// down (a larger y), in each Newton-Raphson step `y^2` and `h y` down, `1.5 y` up and
/// `(h y) y^2` down, then the product by C and the scale-back up. (Locally, not globally: an
/// iterate pushed above the root lowers the next one; `every_rounding_pattern` below tries
/// all of them where rounding matters most.)
struct Adversarial(u32);

impl Truncator for Adversarial {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        let i = self.0;
        self.0 += 1;
        let steps = 4 * vtwin_fixed::clip::CLIP_RSQRT_ITERATIONS;
        let up = match i {
            0 | 1 => false,
            i if i < 2 + steps => (i - 2) % 4 == 2,
            _ => true,
        };
        let floor = vtwin_fixed::trunc_floor(x, d);
        let cut = x & ((1u128 << d) - 1) != 0;
        if up && cut {
            floor.wrapping_add(1)
        } else {
            floor
        }
    }
}

/// Rounds up (when bits are cut) exactly at the truncations whose bit is set in the pattern.
struct Pattern(u32, u32);

impl Truncator for Pattern {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        let up = self.0 >> self.1 & 1 == 1;
        self.1 += 1;
        let floor = vtwin_fixed::trunc_floor(x, d);
        if up && x & ((1u128 << d) - 1) != 0 {
            floor.wrapping_add(1)
        } else {
            floor
        }
    }
}

/// Every floor / floor + 1 choice of all the clip factor's truncations, at the mantissas
/// where the initial line is exact (m near 0.3374 and 0.8706: there the approximation error
/// is 0 and rounding alone decides), at several exponents and clips.
#[test]
fn every_rounding_pattern() {
    let sites = vtwin_fixed::cost::CLIP_FACTOR.truncations;
    assert!(sites <= 16);
    let mut cases = 0u64;
    for clip in [0.0625, 1.0, 37.0].map(|c| Fx::from_f64(c).unwrap()) {
        for m in [0.3374, 0.8706] {
            for e in [20i32, 36, 47, 60, 75] {
                let x = Fx((m * 2f64.powi(e)) as u128);
                if x.raw() <= (clip.raw() * clip.raw()) >> 32 {
                    continue;
                }
                for pattern in 0..1u32 << sites {
                    check(x, clip, &mut Pattern(pattern, 0));
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 50_000, "{cases}");
}

#[test]
fn clip_factor_never_exceeds_its_bound_on_any_exponent() {
    let clips = [
        0.0625, 0.1, 0.37, 0.5, 0.999, 1.0, 1.7, 3.0, 64.5, 1000.0, 1024.0,
    ];
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let mut cases = 0u64;
    for clip in clips.map(|c| Fx::from_f64(c).unwrap()) {
        // Every raw exponent of x in the 80-bit window (x from 2^-32 to 2^48), with the
        // mantissa's edges and random mantissas, under floor and probabilistic truncation.
        for e in 0..80u32 {
            let lo = 1u128 << e;
            let mut xs = vec![lo, (lo << 1) - 1, lo + (lo >> 1)];
            for _ in 0..6 {
                xs.push(
                    lo + (u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()))
                        % lo.max(1),
                );
            }
            for x in xs.into_iter().map(Fx) {
                check(x, clip, &mut Floor);
                let mut t = probabilistic_from_rng(ChaCha20Rng::seed_from_u64(rng.next_u64()));
                check(x, clip, &mut t);
                check(x, clip, &mut Adversarial(0));
                cases += 3;
            }
        }
        // Just above the threshold, where the factor is closest to 1.
        let thr = (clip.raw() * clip.raw()) >> 32;
        for dx in [0u128, 1, 2, 3, 1000, 1 << 20] {
            check(Fx(thr + dx), clip, &mut Floor);
            check(Fx(thr + dx), clip, &mut Adversarial(0));
        }
    }
    assert!(cases > 1000);
}
