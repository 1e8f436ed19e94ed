//! The clip provably holds: over adversarial inputs inside the public ranges, the released
//! sums of two neighbouring batches (one record added or removed) differ by at most the
//! nominal C in exact integer L2 norm, after every rounding of the circuit, with the circuit
//! clip of `vtwin_fixed::clip_bound::effective_clip`. Checked in the plaintext reference
//! (floor truncation, and probabilistic truncation with masks coupled between the two
//! batches, as the sensitivity argument couples them) and through the MPC circuit (one
//! record against the empty batch, fresh masks).
//!
//! Adversarial shapes: public maps at the edge of the public checks
//! (sum_j (14 |A| + |b|)^2 = 2^36 (1 - 2^-12) per component), statistics at +-14, a tiny
//! responsibility beside the largest score norm, denominators of a few ulps (where the
//! divide is least accurate), tiny and extreme mixture weights, nominal clips from 1/16 to 100.

#[path = "common/gradient_ref.rs"]
mod gradient_ref;

use gradient_ref::{enc, reference, run_mpc, Instance};
use num_bigint::BigUint;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::clip_bound::{effective_clip, ClipShape};
use vtwin_fixed::score_root::score_root_raw;
use vtwin_fixed::{trunc_prob, Counting, Floor, Fx, Truncator};
use vtwin_mpc::gradient::{CircuitPublic, PartyMap};

/// Per-component score norm at the edge of the public map check (sqrt(2^36) (1 - 2^-12)).
const EDGE: f64 = 262_080.0;

/// Nominal clips with C 2^32 an integer, so C^2 2^64 is exact.
const CLIPS: [f64; 5] = [0.0625, 0.5, 1.0, 2.75, 100.0];

/// How the adversary shapes the records.
#[derive(Clone, Copy, Debug)]
enum Regime {
    /// Random mat in [0, 1].
    Random,
    /// One component's product far below the others: a tiny responsibility beside a
    /// large score norm.
    TinyResponsibility,
    /// Every mat a few ulps: den of a few ulps, the divide's worst case.
    TinyDenominator,
    /// A target's mask (`vtwin_model::layout`): party 0's mat exactly 0 in every component
    /// of another class than the record's (classes alternate over k and over records), its
    /// first score coordinate's map zero (the pinned target); random elsewhere.
    TargetMask,
    /// Real rows with den = 0: party 0's mat exactly 0 where k and the record's index differ
    /// in parity, party 1's where they agree, so every component's product is 0 (a record
    /// whose class's components all underflow elsewhere); random elsewhere.
    EmptyClass,
}

fn regime() -> impl Strategy<Value = Regime> {
    prop_oneof![
        Just(Regime::Random),
        Just(Regime::TinyResponsibility),
        Just(Regime::TinyDenominator),
        Just(Regime::TargetMask),
        Just(Regime::EmptyClass)
    ]
}

/// An adversarial instance with honest score roots (the tightest the party may send); the
/// parties whose `integer` entry is set have integer statistics (each rounded to an integer
/// in [-14, 14]) and input them at scale 1, the others at scale 2^32.
#[allow(clippy::too_many_arguments)]
fn adversarial_with(
    seed: u64,
    b: usize,
    k_n: usize,
    widths: &[usize],
    regime: Regime,
    clip: f64,
    score_norm: f64,
    integer: &[bool],
) -> Instance {
    let integer = |p: usize| integer.get(p).copied().unwrap_or(false);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    // Weights: some tiny, renormalised to sum to 1 (as softmax does).
    let raw_pi: Vec<f64> = (0..k_n)
        .map(|_| if u() < 0.3 { 2f64.powi(-20) } else { 0.1 + u() })
        .collect();
    let s: f64 = raw_pi.iter().sum();
    let masked = matches!(regime, Regime::TargetMask);
    let parties: Vec<PartyMap> = widths
        .iter()
        .enumerate()
        .map(|(p, &wd)| {
            let mut scale = Vec::new();
            let mut offset = Vec::new();
            for _ in 0..k_n {
                // Per component: sum_j (14 |A| + |b|)^2 at the edge of 2^36, and each
                // coordinate below 2^22 / B.
                let weights: Vec<f64> = (0..wd).map(|_| 0.05 + u()).collect();
                let norm: f64 = weights.iter().map(|w| w * w).sum::<f64>().sqrt();
                let budget = score_norm;
                for w in &weights {
                    let coord = (budget * w / norm).min(4_194_303.0 / (b as f64 + 1.0));
                    let share = u();
                    let (sa, sb) = (u() < 0.5, u() < 0.5);
                    let signed = |neg: bool, v: f64| if neg { -v } else { v };
                    scale.push(enc(signed(sa, coord * share / 14.0)));
                    offset.push(enc(signed(sb, coord * (1.0 - share))));
                }
                if masked && p == 0 {
                    let first = scale.len() - wd;
                    scale[first] = Fx::ZERO;
                    offset[first] = Fx::ZERO;
                }
            }
            PartyMap {
                width: wd,
                scale,
                offset,
                integer_stats: integer(p),
            }
        })
        .collect();
    let mat: Vec<Vec<Fx>> = widths
        .iter()
        .enumerate()
        .map(|(p, _)| {
            (0..b * k_n)
                .map(|i| match regime {
                    Regime::Random => enc(u()),
                    Regime::TargetMask => {
                        if p == 0 && (i % k_n) % 2 != (i / k_n) % 2 {
                            Fx::ZERO
                        } else {
                            enc(u())
                        }
                    }
                    Regime::TinyResponsibility => {
                        if i % k_n == 0 {
                            enc(2f64.powi(-16) * u())
                        } else {
                            enc(0.5 + 0.5 * u())
                        }
                    }
                    Regime::TinyDenominator => Fx::from_raw(1 + (u() * 3.0) as u128),
                    Regime::EmptyClass => {
                        let same = (i % k_n) % 2 == (i / k_n) % 2;
                        if (p == 0 && !same) || (p == 1 && same) {
                            Fx::ZERO
                        } else {
                            enc(u())
                        }
                    }
                })
                .collect()
        })
        .collect();
    let stats: Vec<Vec<Fx>> = widths
        .iter()
        .enumerate()
        .map(|(p, &wd)| {
            (0..b * wd)
                .map(|_| {
                    let v = if u() < 0.7 { 14.0 } else { 28.0 * u() - 14.0 };
                    let v = if integer(p) { v.round() } else { v };
                    enc(if u() < 0.5 { -v } else { v })
                })
                .collect()
        })
        .collect();
    let root: Vec<Vec<Fx>> = parties
        .iter()
        .zip(&stats)
        .map(|(map, st)| {
            let wd = map.width;
            (0..b * k_n)
                .map(|i| {
                    let (n, k) = (i / k_n, i % k_n);
                    let cols = k * wd..(k + 1) * wd;
                    score_root_raw(
                        &map.scale[cols.clone()],
                        &st[n * wd..(n + 1) * wd],
                        &map.offset[cols],
                    )
                    .expect("inside the public map bound")
                })
                .collect()
        })
        .collect();
    // The roots are computed from T at scale 2^32; an integer party inputs the integers.
    let stats: Vec<Vec<Fx>> = stats
        .into_iter()
        .enumerate()
        .map(|(p, st)| {
            if integer(p) {
                st.iter()
                    .map(|v| Fx::from_signed(v.signed() >> 32))
                    .collect()
            } else {
                st
            }
        })
        .collect();
    let pi: Vec<Fx> = raw_pi.iter().map(|p| enc(p / s)).collect();
    // Party 0 folds the public weights into its factor, as
    // `vtwin_model::fixed_backend::fold_weights` does: floor(pi_k mat_0[n][k]).
    let mut mat = mat;
    for (i, m) in mat[0].iter_mut().enumerate() {
        *m = Fx(vtwin_fixed::trunc_floor(
            pi[i % k_n].raw().wrapping_mul(m.raw()),
            32,
        ));
    }
    if matches!(regime, Regime::TinyDenominator) {
        // Folding pi into 1-3 ulps floors to 0: instead party 0's folded factor is 1 ulp on
        // one to three components (the record's den of 1-3 ulps), the others' factors 1.
        for n in 0..b {
            let live = 1 + (u() * 3.0) as usize;
            for k in 0..k_n {
                mat[0][n * k_n + k] = Fx::from_raw(u128::from(k < live));
            }
            for m in &mut mat[1..] {
                m[n * k_n..(n + 1) * k_n].fill(Fx::ONE);
            }
        }
    }
    let public = public_at_clip(b, pi, parties, clip);
    let noise = vec![0; public.dim()];
    Instance::real_rows(public, mat, root, stats, noise)
}

/// The public side of a batch of `batch` rows with weights `pi` and `parties`' maps, one
/// noise contributor, and the circuit clip derived for the nominal `clip`.
fn public_at_clip(batch: usize, pi: Vec<Fx>, parties: Vec<PartyMap>, clip: f64) -> CircuitPublic {
    let mut public = CircuitPublic {
        batch,
        components: pi.len(),
        pi,
        clip: Fx::ONE,
        parties,
        noise_contributors: 1,
    };
    let shape = ClipShape {
        components: public.components,
        parties: public.parties.len(),
        dim: public.dim(),
    };
    public.clip = effective_clip(clip, shape).expect("clip in range").circuit;
    public
}

/// The instance restricted to the records `keep` (in order).
fn subset(inst: &Instance, keep: &[usize]) -> Instance {
    let k_n = inst.public.components;
    let rows = |v: &Vec<Fx>, w: usize| -> Vec<Fx> {
        keep.iter()
            .flat_map(|&n| v[n * w..(n + 1) * w].iter().copied())
            .collect()
    };
    let mut out = inst.clone();
    out.public.batch = keep.len();
    out.flags = keep.iter().map(|&n| inst.flags[n]).collect();
    out.mat = inst.mat.iter().map(|m| rows(m, k_n)).collect();
    out.root = inst.root.iter().map(|m| rows(m, k_n)).collect();
    out.stats = inst
        .stats
        .iter()
        .zip(&inst.public.parties)
        .map(|(s, p)| rows(s, p.width))
        .collect();
    out
}

/// Probabilistic truncation whose masks are a function of (record id, position within the
/// record's block) for the per-record calls and of the position for the batch-level calls,
/// so two neighbouring batches share every mask they have in common.
struct Coupled {
    seed: u64,
    ids: Vec<usize>,
    per_record: usize,
    calls: usize,
}

impl Truncator for Coupled {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        let i = self.calls;
        self.calls += 1;
        let split = self.ids.len() * self.per_record;
        let (id, pos) = if i < split {
            (self.ids[i / self.per_record] as u64, i % self.per_record)
        } else {
            (u64::MAX, i - split)
        };
        let key = self
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(id.wrapping_mul(0xD6E8_FEB8_6659_FD93))
            .wrapping_add(pos as u64);
        let mut rng = ChaCha20Rng::seed_from_u64(key);
        let r = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        trunc_prob(x, r, d)
    }
}

/// Truncations per record of the reference (its per-record block is contiguous).
fn calls_per_record(inst: &Instance) -> usize {
    let count = |inst: &Instance| {
        let mut t = Counting {
            inner: Floor,
            count: 0,
        };
        reference(inst, &mut t);
        t.count as usize
    };
    let one = count(&subset(inst, &[0]));
    let none = count(&subset(inst, &[]));
    one - none
}

/// ||a - b||^2 on the raw ring values (signed differences), exactly.
fn dist2(a: &[u128], b: &[u128]) -> BigUint {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let d = x.wrapping_sub(*y) as i128;
            BigUint::from(d.unsigned_abs()).pow(2)
        })
        .sum()
}

/// C^2 on the raw scale (C 2^32 is an integer for every clip in [`CLIPS`]).
fn clip2(clip: f64) -> BigUint {
    let raw = clip * 2f64.powi(32);
    assert_eq!(raw.fract(), 0.0);
    BigUint::from(raw as u128).pow(2)
}

/// Every neighbour pair (the batch and the batch without record j) under `rule`, returning
/// the largest distance as a fraction of C.
fn check_neighbours(inst: &Instance, clip: f64, rule: Option<u64>) -> Result<f64, TestCaseError> {
    let b = inst.public.batch;
    let per_record = calls_per_record(inst);
    let run = |ids: &[usize]| -> Vec<u128> {
        let sub = subset(inst, ids);
        match rule {
            None => reference(&sub, &mut Floor),
            Some(seed) => reference(
                &sub,
                &mut Coupled {
                    seed,
                    ids: ids.to_vec(),
                    per_record,
                    calls: 0,
                },
            ),
        }
    };
    let all: Vec<usize> = (0..b).collect();
    let full = run(&all);
    let limit = clip2(clip);
    let mut worst = 0.0f64;
    for j in 0..b {
        let others: Vec<usize> = all.iter().copied().filter(|&n| n != j).collect();
        let d2 = dist2(&full, &run(&others));
        prop_assert!(
            d2 <= limit,
            "record {j}: |G(D) - G(D - j)|^2 = {d2} > C^2 = {limit} (raw), rule {rule:?}"
        );
        let ratio = (d2.to_string().parse::<f64>().unwrap()).sqrt() / (clip * 2f64.powi(32));
        worst = worst.max(ratio);
    }
    Ok(worst)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/clip_bound.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// The reference: every record's removal moves the released sum by at most C.
    #[test]
    fn neighbouring_released_sums_differ_by_at_most_c_in_the_reference(
        seed in any::<u64>(),
        b in 1usize..6,
        k in 1usize..5,
        w1 in 1usize..4,
        w2 in 1usize..4,
        regime in regime(),
        clip in 0usize..CLIPS.len(),
        mask_seed in any::<u64>(),
        ints in any::<[bool; 2]>(),
    ) {
        let clip = CLIPS[clip];
        let inst = adversarial_with(seed, b, k, &[w1, w2], regime, clip, EDGE, &ints);
        check_neighbours(&inst, clip, None)?;
        check_neighbours(&inst, clip, Some(mask_seed))?;
    }

    /// The MPC circuit: one record against the empty batch (whose release is exactly 0).
    #[test]
    fn one_records_release_through_the_circuit_is_at_most_c(
        seed in any::<u64>(),
        k in 1usize..5,
        w1 in 1usize..4,
        w2 in 1usize..4,
        regime in regime(),
        clip in 0usize..CLIPS.len(),
        ints in any::<[bool; 2]>(),
    ) {
        let clip = CLIPS[clip];
        let inst = adversarial_with(seed, 1, k, &[w1, w2], regime, clip, EDGE, &ints);
        let (got, _, _) = run_mpc(&inst);
        let d2 = dist2(&got, &vec![0; got.len()]);
        prop_assert!(d2 <= clip2(clip), "|G|^2 = {d2} > C^2 (raw), {regime:?}");
    }
}

/// The bound is tight: large-norm records are released at nearly C (so the margin is not
/// hiding a much smaller effective clip); a circuit clip above C by half the margin
/// `C - C'` releases records whose norm is near C above C (the check has power); and without
/// the margin (clipping at the nominal C) the record that stresses the score products'
/// rounding is released above C. (Until 2026-11-29 random records near C exceeded C at the
/// nominal clip too: the second norm sum's last truncation could fall 2^-10 short. Since
/// the score norm's factors are rounded up and its product kept at 2^-(32+F),
/// `vtwin_fixed::score_norm`, that shortfall is 2^-16, and what the margin covers is the
/// worst case the proof bounds, which random records do not reach.)
#[test]
fn the_bound_is_tight_and_the_margin_is_needed() {
    let mut worst = 0.0f64;
    let mut exceeded = 0;
    for seed in 0..60u64 {
        let regime = [Regime::Random, Regime::TinyResponsibility][seed as usize % 2];
        let inst = adversarial_with(seed, 3, 3, &[2, 3], regime, 1.0, EDGE, &[]);
        worst = worst.max(check_neighbours(&inst, 1.0, Some(seed)).expect("bound holds"));
        // Scores of norm ~1, so |g| is near C, clipped half the margin above C.
        let mut naive = adversarial_with(seed, 3, 3, &[2, 3], Regime::Random, 1.0, 0.9, &[]);
        let margin = 1.0 - inst.public.clip.to_f64();
        naive.public.clip = enc(1.0 + margin / 2.0);
        if check_neighbours(&naive, 1.0, Some(seed)).is_err() {
            exceeded += 1;
        }
    }
    // The margin is needed: the record that stresses the score products' rounding, clipped
    // at the nominal C itself, is released above C.
    let mut stressed_exceeded = 0;
    for m in [0.7, 0.75, 0.8, 0.9] {
        let mut inst = stressed(20, m);
        inst.public.clip = Fx::ONE;
        for seed in 0..20u64 {
            let g = reference(
                &inst,
                &mut vtwin_fixed::probabilistic_from_rng(ChaCha20Rng::seed_from_u64(seed)),
            );
            if dist2(&g, &vec![0; g.len()]) > clip2(1.0) {
                stressed_exceeded += 1;
            }
        }
    }
    println!(
        "MEASURED largest neighbour distance / C = {worst:.6}; {exceeded} of 60 naive instances \
         exceed C; {stressed_exceeded} of 80 stressed releases exceed C without the margin"
    );
    assert!(worst > 0.99, "large-norm records are released at {worst} C");
    assert!(
        exceeded > 0,
        "clipping above C never exceeded C: the check lacks power"
    );
    assert!(
        stressed_exceeded > 0,
        "without the margin no stressed record exceeded C"
    );
}

/// The `EmptyClass` checks see a den = 0 row's release: its responsibilities are 0, so it
/// contributes the weight term -c pi, of norm c |pi| >= c / sqrt(K). With the circuit's clip
/// raised to 1 for a nominal C of 1/16 (K = 3, so |pi| >= 0.57) each such record exceeds C,
/// and both the reference's neighbour check and the circuit's one-record check fail.
#[test]
fn real_rows_with_zero_denominator_are_released_and_checked() {
    for seed in 0..6u64 {
        let inst = adversarial_with(seed, 3, 3, &[2, 3], Regime::EmptyClass, CLIPS[0], EDGE, &[]);
        check_neighbours(&inst, CLIPS[0], Some(seed)).expect("bound holds");
        let mut loose = inst.clone();
        loose.public.clip = Fx::ONE;
        assert!(
            check_neighbours(&loose, CLIPS[0], Some(seed)).is_err(),
            "seed {seed}: a den = 0 row above C passed the reference check"
        );
        let (got, _, _) = run_mpc(&subset(&loose, &[0]));
        assert!(
            dist2(&got, &vec![0; got.len()]) > clip2(CLIPS[0]),
            "seed {seed}: a den = 0 row above C passed the circuit check"
        );
    }
}

/// Floor truncation that also sums |X| / 2^128, the wrap probability of the probabilistic
/// truncation for the same pre-truncation value.
struct Recording {
    wrap: f64,
}

impl Truncator for Recording {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        self.wrap += (x as i128).unsigned_abs() as f64 * 2f64.powi(-128);
        vtwin_fixed::trunc_floor(x, d)
    }
}

/// Largest |X| / 2^64 of every truncation call, in call order.
struct Sites(Vec<f64>);

impl Truncator for Sites {
    fn trunc(&mut self, x: u128, d: u32) -> u128 {
        self.0
            .push((x as i128).unsigned_abs() as f64 * 2f64.powi(-64));
        vtwin_fixed::trunc_floor(x, d)
    }
}

/// The reciprocal's per-site maxima that `truncation_failure_bound` charges (normalisation
/// 1, each later truncation, `e`, the Goldschmidt factors and the squarings of `e`, 24) hold for den = 0, which every padding row has (party
/// 0 zeroes its factor there) and so may a real row (`Regime::EmptyClass`), and for
/// denominators across the range.
#[test]
fn reciprocal_truncation_sites_stay_within_the_charged_maxima() {
    let mut dens = vec![Fx::ZERO, Fx(1), Fx(3), Fx::ONE, Fx(u64::MAX as u128)];
    dens.extend((0..64).map(|e| Fx(1u128 << e)));
    for den in dens {
        let mut t = Sites(Vec::new());
        let recip = vtwin_fixed::Reciprocal::new_unchecked(den, &mut t);
        assert!(t.0[0] <= 1.0, "{den:?}: normalisation {}", t.0[0]);
        // divide_fraction of every 0 <= pm <= den: pm p below 1, pm' y below 3.
        for pm in [0, 1, den.raw() / 3, den.raw() / 2, den.raw()] {
            let mut d = Sites(Vec::new());
            let r = recip.divide_fraction(Fx(pm.min(den.raw())), &mut d);
            assert!(d.0[0] <= 1.0 && d.0[1] <= 3.0, "{den:?} / {pm}: {:?}", d.0);
            assert!(
                r.to_f64() <= 1.0 + 2f64.powi(-27) + 2f64.powi(-31),
                "{den:?} / {pm}: r {r:?}"
            );
        }
        for (i, &x) in t.0.iter().enumerate().skip(1) {
            assert!(x <= 24.0, "{den:?}: site {i}: {x}");
            if den != Fx::ZERO {
                assert!(x <= 4.0, "{den:?}: site {i}: {x}");
            }
        }
    }
    // The zero denominator is where the larger maximum is needed.
    let mut t = Sites(Vec::new());
    let _ = vtwin_fixed::Reciprocal::new_unchecked(Fx::ZERO, &mut t);
    assert!(t.0.iter().any(|&x| x > 20.0), "{:?}", t.0);
}

/// The score norm's per-site maxima that `truncation_failure_bound` charges
/// (`vtwin_fixed::score_norm::ScoreNormSites`, the same values; in units of 2^64 raw): `z` 1.01 u, `2^F sum z^2`
/// 2^F (1.03 S2 + 2^-30 S1), `y^2` 576, the first sum K R^2 and `Z' y2'`
/// 2^F (2.26 S2 + 2^-28 S1 + 2^-28), for den = 0 and denominators across the range, every
/// fraction 0 <= pm <= den and score roots up to the public maximum.
#[test]
fn score_norm_truncation_sites_stay_within_the_charged_maxima() {
    use vtwin_fixed::clip_bound::{score_root_max, RESPONSIBILITY_MAX};
    use vtwin_fixed::score_norm::{record_norm2, ScoreNormSites};
    let k_n = 4;
    let mut dens = vec![Fx::ZERO, Fx(1), Fx(3), Fx::ONE, Fx(u64::MAX as u128)];
    dens.extend((0..64).step_by(3).map(|e| Fx(1u128 << e)));
    // Odd: a single fraction, with m near 1 for 2^e - 1.
    dens.extend((2..64).step_by(5).map(|e| Fx((1u128 << e) - 1)));
    let u_max = score_root_max();
    let (mut z2_used, mut prod_used) = (0f64, 0f64);
    let root_sets: [[Fx; 4]; 3] = [[u_max; 4], [Fx::ZERO, Fx(1), Fx::ONE, u_max], [Fx::ZERO; 4]];
    let mut largest_y2 = 0f64;
    for den in dens {
        let recip = vtwin_fixed::Reciprocal::new_unchecked(den, &mut Floor);
        // Fractions that sum to den (the last takes the rest), and their quotients.
        let d = den.raw();
        // Four fractions that sum to den, or one that is den (pm' y near 1: with the largest
        // root on the same component, the sites near their charges).
        let pm = if d % 2 == 0 {
            [d / 2, d / 3, d / 7, d - d / 2 - d / 3 - d / 7]
        } else {
            [0, 0, 0, d]
        };
        let pmn: Vec<Fx> = pm
            .iter()
            .map(|&a| recip.normalise_fraction(Fx(a), &mut Floor))
            .collect();
        let r: Vec<Fx> = pmn
            .iter()
            .map(|&a| recip.times_mantissa(a, &mut Floor))
            .collect();
        let pi = [Fx::from_f64(0.25).expect("pi"); 4];
        for roots in &root_sets {
            let s1: f64 = 2.0 * roots.iter().map(|u| u.to_f64()).sum::<f64>();
            let s2: f64 = 2.0 * roots.iter().map(|u| u.to_f64().powi(2)).sum::<f64>();
            // The maxima truncation_failure_bound charges.
            let charged = ScoreNormSites::for_roots(s1, s2);
            let mut t = Sites(Vec::new());
            let _ = record_norm2(&recip, &pmn, &r, &pi, 2, |k, _| roots[k], &mut t);
            let sites = &t.0;
            assert_eq!(sites.len(), 2 * k_n + 4);
            for (i, &x) in sites[..2 * k_n].iter().enumerate() {
                let u = roots[i / 2].to_f64();
                assert!(
                    x <= charged.z_per_root * u + 2f64.powi(-31),
                    "{den:?}: z site {i}: {x} > 1.01 u = {u}"
                );
            }
            let [z2, y2, first, prod] = [
                sites[2 * k_n],
                sites[2 * k_n + 1],
                sites[2 * k_n + 2],
                sites[2 * k_n + 3],
            ];
            assert!(z2 <= charged.sum_z2, "{den:?}: 2^F sum z^2 {z2}");
            assert!(y2 <= charged.y2, "{den:?}: y^2 {y2}");
            if den != Fx::ZERO {
                assert!(y2 <= 4.01, "{den:?}: y^2 {y2} with den > 0");
            }
            largest_y2 = largest_y2.max(y2);
            let r2 = RESPONSIBILITY_MAX * RESPONSIBILITY_MAX;
            assert!(first <= k_n as f64 * r2, "{den:?}: first sum {first}");
            assert!(
                prod <= charged.product,
                "{den:?}: Z' y2' {prod} > {}",
                charged.product
            );
            if s2 > 1.0 {
                z2_used = z2_used.max(z2 / charged.sum_z2);
                prod_used = prod_used.max(prod / charged.product);
            }
        }
    }
    // The zero denominator is where y^2's larger maximum is needed; a single fraction with m
    // near 1 takes the other two sites near their charges (R = 1.5 in the product's charge:
    // about 1 / 2.26 of it at most).
    assert!(largest_y2 > 500.0, "{largest_y2}");
    println!("MEASURED largest site / charge: 2^F sum z^2 {z2_used:.3}, Z' y2' {prod_used:.3}");
    assert!(z2_used > 0.9 && prod_used > 0.4, "{z2_used} {prod_used}");
}

/// The clip factor's per-site maxima that `truncation_failure_bound` charges: normalisation
/// 2^16, line 1.22, per Newton-Raphson step 24, 1, 8, 4, scale-back 8 C' and 2 C' (in units
/// of 2^64 raw), for a zero norm and for norms across the 80-bit window.
#[test]
fn clip_factor_truncation_sites_stay_within_the_charged_maxima() {
    let c = Fx::from_f64(0.999).expect("C");
    let step = [24.0, 1.0, 8.0, 4.0];
    let mut max: Vec<f64> = vec![2f64.powi(16), 1.22];
    for _ in 0..vtwin_fixed::clip::CLIP_RSQRT_ITERATIONS {
        max.extend(step);
    }
    max.extend([8.0 * 0.999, 2.0 * 0.999]);
    let mut xs = vec![Fx::ZERO, Fx(1), Fx(3)];
    xs.extend((0..80).map(|e| Fx(1u128 << e)));
    xs.extend((0..80).map(|e| Fx((1u128 << e) * 3 / 2)));
    for x in xs {
        let mut t = Sites(Vec::new());
        let _ = vtwin_fixed::clip_factor_unchecked(x, c, &mut t);
        assert_eq!(t.0.len(), max.len(), "{x:?}: truncation count");
        for (i, (&got, &m)) in t.0.iter().zip(&max).enumerate() {
            assert!(got <= m, "{x:?}: site {i}: {got} > {m}");
        }
    }
}

/// `CircuitPublic::truncation_failure_bound` (charged to delta) covers the actual wrap
/// probability of every adversarial run, and is not vacuous (within 2^12 of it).
#[test]
fn truncation_failure_bound_covers_adversarial_runs() {
    let bounds = gradient_ref::bounds();
    let mut worst_ratio = 0.0f64;
    let mut largest = 0.0f64;
    let cycle = [
        Regime::Random,
        Regime::TinyResponsibility,
        Regime::TinyDenominator,
        Regime::TargetMask,
    ];
    // Seeds 30..40: real rows with den = 0, over every clip.
    let runs = (0..30u64)
        .map(|seed| (seed, cycle[seed as usize % 4]))
        .chain((30..40).map(|seed| (seed, Regime::EmptyClass)));
    for (seed, regime) in runs {
        // Integer statistics for party 1 on odd seeds, for party 0 on seeds 2 mod 4.
        let ints = [seed % 4 == 2, seed % 2 == 1];
        let clip = CLIPS[seed as usize % 5];
        let inst = adversarial_with(seed, 5, 4, &[3, 2], regime, clip, EDGE, &ints);
        // Every third instance padded (den = 0 rows, as the parties write them).
        let inst = if seed % 3 == 1 {
            padded(&inst, 3, seed + 300)
        } else {
            inst
        };
        let mut t = Recording { wrap: 0.0 };
        reference(&inst, &mut t);
        let bound = inst.public.truncation_failure_bound(&bounds);
        assert!(
            t.wrap <= bound,
            "seed {seed}: wrap {} > bound {bound}",
            t.wrap
        );
        worst_ratio = worst_ratio.max(t.wrap / bound);
        largest = largest.max(bound);
    }
    println!("MEASURED actual / bound up to {worst_ratio:.3e}; largest bound {largest:.3e}");
    assert!(worst_ratio > 2f64.powi(-12), "bound vacuous: {worst_ratio}");
}

/// `inst` with `extra` padding rows appended: flag 0, party 0's mat 0 (as
/// `vtwin_model::fixed_backend::fold_weights` writes it), every other value arbitrary (random).
fn padded(inst: &Instance, extra: usize, seed: u64) -> Instance {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let k_n = inst.public.components;
    let mut out = inst.clone();
    out.public.batch += extra;
    for p in 0..out.mat.len() {
        let wd = inst.public.parties[p].width;
        let zero = p == 0;
        out.mat[p].extend((0..extra * k_n).map(|_| if zero { Fx::ZERO } else { enc(u()) }));
        out.root[p].extend((0..extra * k_n).map(|_| enc(100.0 * u())));
        let integer = inst.public.parties[p].integer_stats;
        out.stats[p].extend((0..extra * wd).map(|_| {
            let v = 28.0 * u() - 14.0;
            if integer {
                Fx::from_signed(v.round() as i128)
            } else {
                enc(v)
            }
        }));
    }
    out.flags.extend(vec![Fx::ZERO; extra]);
    out
}

/// Padding rows (flag 0, party 0's mat 0) add exactly nothing, whatever values the other
/// parties and party 0's other inputs carry: the padded batch
/// releases exactly what the real records release, in the reference; through the circuit a
/// batch of padding only releases exactly zero.
#[test]
fn padding_rows_add_exactly_nothing() {
    for seed in 0..12u64 {
        let inst = adversarial_with(seed, 4, 3, &[2, 3], Regime::Random, 1.0, EDGE, &[]);
        let pad = padded(&inst, 3, seed + 100);
        assert_eq!(reference(&inst, &mut Floor), reference(&pad, &mut Floor));
        let only_padding = padded(&subset(&inst, &[]), 4, seed + 200);
        let (got, _, _) = run_mpc(&only_padding);
        assert!(
            got.iter().all(|&g| g == 0),
            "seed {seed}: padding released {got:?}"
        );
    }
}

/// The divide's sites are charged only while den provably fits the reciprocal's window
/// (M^P below 2^31): public ranges beyond it get no finite bound.
#[test]
fn truncation_failure_bound_refuses_ranges_beyond_the_reciprocal_window() {
    let inst = gradient_ref::instance(3, 4, 3, &[2, 3]);
    let mut b = gradient_ref::bounds();
    assert!(inst.public.truncation_failure_bound(&b).is_finite());
    b.mat.1 = Fx::from_f64(2f64.powi(15)).expect("M");
    assert!(inst.public.truncation_failure_bound(&b).is_finite());
    b.mat.1 = Fx::from_f64(2f64.powi(16)).expect("M");
    assert_eq!(inst.public.truncation_failure_bound(&b), f64::INFINITY);
}

/// The clip's normalisation site is charged only while the largest squared norm the public
/// maps allow stays inside its 80-bit window (below 2^48): a shape with P K far beyond
/// Adult's, every score map at the edge of the public check, gets no finite bound.
#[test]
fn truncation_failure_bound_refuses_norms_beyond_the_clip_window() {
    let b = gradient_ref::bounds();
    let edge = |k_n: usize| {
        let mut inst = gradient_ref::instance(5, 2, k_n, &[1]);
        // |A| 14 + |b| = 2^18 (1 - 2^-12): the score map check's edge for one column.
        let a = (2f64.powi(18) * (1.0 - 2f64.powi(-12)) - 1.0) / 14.0;
        inst.public.parties[0].scale = vec![enc(a); k_n];
        inst.public.parties[0].offset = vec![enc(1.0); k_n];
        inst.public.truncation_failure_bound(&b)
    };
    assert!(edge(40).is_finite(), "{}", edge(40));
    assert_eq!(edge(4000), f64::INFINITY);
}

/// The record that stresses the score-root products' rounding (`protocols/clip-bound.md`):
/// K components, two parties of width 1; component 0 holds almost all the responsibility and a
/// zero score map (u = 0), every other component a responsibility of about `m 2^-20` and the
/// largest score the public maps allow (u near 2^7), so that many terms `r_k u_pk` near one ulp
/// each carry the products' error; the norm crosses C' between m 0.7 and 0.9.
fn stressed(k_n: usize, m: f64) -> Instance {
    let tiny = 2f64.powi(-20);
    let mut pi = vec![tiny; k_n];
    pi[0] = 1.0 - tiny * (k_n - 1) as f64;
    let pi: Vec<Fx> = pi.iter().map(|&p| enc(p)).collect();
    // 14 |A| + |b| = 2^18 - 64 per component: sum_j (14 |A| + |b|)^2 just below 2^36.
    let edge = 262_080.0;
    let map = |k: usize| if k == 0 { 0.0 } else { edge * 0.5 };
    let parties: Vec<PartyMap> = (0..2)
        .map(|_| PartyMap {
            width: 1,
            scale: (0..k_n).map(|k| enc(map(k) / 14.0)).collect(),
            offset: (0..k_n).map(|k| enc(map(k))).collect(),
            integer_stats: false,
        })
        .collect();
    // Party 0's factor with pi folded in (floor(pi_k mat_0)), party 1's 1.
    let mat0 = (0..k_n)
        .map(|k| {
            let v = enc(if k == 0 { 1.0 } else { m });
            Fx(vtwin_fixed::trunc_floor(
                pi[k].raw().wrapping_mul(v.raw()),
                32,
            ))
        })
        .collect();
    let stats = vec![vec![enc(14.0)]; 2];
    let root = parties
        .iter()
        .map(|p| {
            (0..k_n)
                .map(|k| score_root_raw(&p.scale[k..=k], &stats[0], &p.offset[k..=k]).unwrap())
                .collect()
        })
        .collect();
    let public = public_at_clip(1, pi, parties, 1.0);
    let noise = vec![0; public.dim()];
    Instance::real_rows(public, vec![mat0, vec![Fx::ONE; k_n]], root, stats, noise)
}

/// `(D, Y)` for the single record of `inst`: `Y^2 = 2^(2L) sum_(p,k) (r_k u_pk)^2` and
/// `D = Y^2 - 2^(2L) Z' y2'` (the score norm before its last truncation,
/// `vtwin_fixed::score_norm`), exactly (big integers at scale 2^128), with the circuit's
/// `r = trunc(pm' y)`, `z = trunc(pm' u)`, `Z' = trunc(2^F sum z^2) + 1 ulp` and
/// `y2' = trunc(y^2) + 1 ulp` (`score_norm_factors`) rounded by `rule`: `None` rounds every
/// `r` up and every other truncation down (each truncation may round either way),
/// `Some(seed)` draws the probabilistic truncation's masks.
fn score_product_deficit(inst: &Instance, rule: Option<u64>) -> (f64, f64) {
    use num_bigint::BigInt;
    use vtwin_fixed::score_norm::{score_norm_factors, SCORE_NORM_FINE_BITS};
    let k_n = inst.public.components;
    let mut prob = rule.map(|s| vtwin_fixed::probabilistic_from_rng(ChaCha20Rng::seed_from_u64(s)));
    let mut trunc = |x: u128, up: bool| match prob.as_mut() {
        Some(t) => t.trunc(x, 32),
        None => vtwin_fixed::trunc_floor(x, 32) + u128::from(up && x & 0xffff_ffff != 0),
    };
    // One party's factor is 1, so pm is party 0's folded factor.
    let pm: Vec<Fx> = (0..k_n)
        .map(|k| {
            Fx(trunc(
                inst.mat[0][k].0.wrapping_mul(inst.mat[1][k].0),
                false,
            ))
        })
        .collect();
    let den = pm.iter().fold(Fx::ZERO, |s, v| s + *v);
    let recip = vtwin_fixed::Reciprocal::new_unchecked(den, &mut Floor);
    let pmn: Vec<Fx> = pm
        .iter()
        .map(|&a| recip.normalise_fraction(a, &mut Floor))
        .collect();
    let mut ru2 = BigInt::from(0);
    for (k, &a) in pmn.iter().enumerate() {
        let r = trunc(a.0.wrapping_mul(recip.mantissa), true);
        for root in &inst.root {
            ru2 += BigInt::from(r * root[k].0).pow(2);
        }
    }
    // The score norm's factors as the circuit forms them (the production code), rounded
    // down everywhere but for the added ulps (adversarial) or by the masks.
    let root = |k: usize, p: usize| inst.root[p][k];
    let (z_up, y2_up) = match prob.as_mut() {
        Some(t) => score_norm_factors(&recip, &pmn, inst.root.len(), root, t),
        None => score_norm_factors(&recip, &pmn, inst.root.len(), root, &mut Floor),
    };
    // Z' y2' at scale 2^(64 + F), to 2^128.
    let norm = (BigInt::from(z_up) * BigInt::from(y2_up)) << (64 - SCORE_NORM_FINE_BITS);
    let scale = 2f64.powi(2 * vtwin_fixed::clip_bound::NORM_SCALE_BITS as i32 - 128);
    let to_f64 = |v: &BigInt| v.to_string().parse::<f64>().unwrap();
    let big_y = (to_f64(&ru2) * scale).sqrt();
    (to_f64(&(ru2 - norm)) * scale, big_y)
}

/// The score norm's rounding stays within the clip proof's charge
/// (`2^(2L) Z' y2' >= Y^2 - a Y`, `vtwin_fixed::clip_bound::score_product_slack`) on the
/// record that stresses it, under adversarial and probabilistic rounding, and the record is
/// released at most C; and the check has power: adversarial rounding uses most of `a`, more
/// than ten times the charge of the earlier `trunc(r u)` (`2^(L-31) sqrt(P K)`), which would
/// not have covered it.
#[test]
fn the_score_products_rounding_is_within_its_charge_and_needs_it() {
    let k_n = 20;
    let a = vtwin_fixed::clip_bound::score_product_slack(2, k_n);
    let a_before = 2f64.powi(11 - 31) * ((2 * k_n) as f64).sqrt();
    let (mut adversarial, mut random, mut released) = (0.0f64, 0.0f64, 0.0f64);
    for m in [0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9] {
        let inst = stressed(k_n, m);
        let (d, y) = score_product_deficit(&inst, None);
        assert!(d <= a * y, "m {m}: deficit {d:e} > a Y = {:e}", a * y);
        adversarial = adversarial.max(d / (a * y));
        for seed in 0..200 {
            let (d, y) = score_product_deficit(&inst, Some(seed));
            assert!(d <= a * y, "m {m}, seed {seed}: deficit {d:e} > a Y");
            random = random.max(d / (a * y));
        }
        for seed in 0..50u64 {
            let g = reference(
                &inst,
                &mut vtwin_fixed::probabilistic_from_rng(ChaCha20Rng::seed_from_u64(seed)),
            );
            let d2 = dist2(&g, &vec![0; g.len()]);
            assert!(d2 <= clip2(1.0), "m {m}, seed {seed}: |G|^2 = {d2} > C^2");
            released = released.max(d2.to_string().parse::<f64>().unwrap().sqrt() / 2f64.powi(32));
        }
    }
    println!(
        "MEASURED deficit / (a Y): adversarial rounding {adversarial:.3}, probabilistic {random:.3}; \
         largest release {released:.6} C"
    );
    assert!(
        adversarial * a > 10.0 * a_before,
        "the stressed record does not need the charge"
    );
}
