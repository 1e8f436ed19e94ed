//! Every primitive against vtwin-fixed, bit for bit, given the MPC's truncation masks.

mod common;

use common::{open, replay, run_on};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vtwin_fixed::{Floor, Fx, InvSqrt, Reciprocal};
use vtwin_mpc::{binary, compare, inv_sqrt, multiply, reciprocal, Delivery};

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: 12,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/equivalence.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// Raw values of |v| < 2^11.5 (so |a b| < 2^23) and some arbitrary ring elements.
fn fx_in(bits: u32) -> impl Strategy<Value = u128> {
    let lim = 1i128 << (bits + 32);
    (-lim..lim).prop_map(|v| v as u128)
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn mul_trunc_equals_reference(
        pairs in prop::collection::vec((fx_in(11), fx_in(11)), 1..64),
        wild in prop::collection::vec((any::<u128>(), any::<u128>()), 0..8),
    ) {
        let all: Vec<(u128, u128)> = pairs.into_iter().chain(wild).collect();
        let a: Vec<u128> = all.iter().map(|p| p.0).collect();
        let b: Vec<u128> = all.iter().map(|p| p.1).collect();
        let rep = run_on(vec![a.clone(), b.clone()], Delivery::Fifo, |ctx, v| async move {
            multiply::mul_trunc(&ctx, &v[0], &v[1], 32).await
        }).expect("run");
        let got = open(&rep);
        prop_assert_eq!(rep.masks.len(), 1);
        for k in 0..a.len() {
            let want = vtwin_fixed::mul(Fx(a[k]), Fx(b[k]), &mut replay(&rep.masks, k));
            prop_assert_eq!(got[k], want.0, "element {}", k);
            if k < a.len() && (Fx(a[k]).signed().abs() < 1 << 43) && (Fx(b[k]).signed().abs() < 1 << 43) {
                // Within range: at most one ulp from the exact floor product.
                let floor = vtwin_fixed::mul_floor(Fx(a[k]), Fx(b[k]));
                prop_assert!((want.signed() - floor.signed()).abs() <= 1);
            }
        }
    }

    #[test]
    fn inner_products_equal_reference(
        xs in prop::collection::vec(fx_in(5), 24),
        ys in prop::collection::vec(fx_in(5), 24),
        len in prop::sample::select(vec![1usize, 2, 3, 4, 6, 8, 12, 24]),
    ) {
        let rep = run_on(vec![xs.clone(), ys.clone()], Delivery::Fifo, move |ctx, v| async move {
            multiply::inner_products(&ctx, &v[0], &v[1], len).await
        }).expect("run");
        let got = open(&rep);
        prop_assert_eq!(got.len(), 24 / len);
        for (k, g) in got.iter().enumerate() {
            let a: Vec<Fx> = xs[k * len..(k + 1) * len].iter().map(|&v| Fx(v)).collect();
            let b: Vec<Fx> = ys[k * len..(k + 1) * len].iter().map(|&v| Fx(v)).collect();
            let want = vtwin_fixed::dot(&a, &b, &mut replay(&rep.masks, k));
            prop_assert_eq!(*g, want.0);
        }
    }

    #[test]
    fn a2b_gives_the_bits(
        xs in prop::collection::vec(any::<u128>(), 1..32),
        levels in 0u32..=7,
    ) {
        // Exact in bits 0..=2^levels (all 128 at 7), though every AND word is restricted to
        // the low 2^levels bits: bit 2^levels takes only the carry out of the bits below.
        // Carry chains through the restricted top: runs of ones below 2^levels.
        let top = 1u32 << levels.min(6);
        let mut xs = xs;
        xs.extend([0, 1, u128::MAX, (1u128 << top) - 1, 1u128 << top, (1u128 << top.min(127)) | 1]);
        let rep = run_on(vec![xs.clone()], Delivery::Fifo, move |ctx, v| async move {
            binary::a2b(&ctx, &v[0], levels).await
        }).expect("run");
        let exact = if levels >= 7 { u128::MAX } else { (1u128 << ((1u32 << levels) + 1)) - 1 };
        for (k, x) in xs.iter().enumerate() {
            let bits = rep.outputs[0].own()[k] ^ rep.outputs[1].own()[k] ^ rep.outputs[2].own()[k];
            prop_assert_eq!(bits & exact, x & exact, "x {:#x} levels {}", x, levels);
        }
    }

    #[test]
    fn msb_one_hot_and_signs_give_the_msb_and_the_sign(
        xs in prop::collection::vec(any::<u128>(), 1..24),
        shifts in prop::collection::vec(0u32..128, 24),
        signed in prop::collection::vec(any::<u128>(), 0..8),
        window in prop::sample::select(vec![8u32, 9, 17, 33, 40, 64, 65, 80, 127, 128]),
    ) {
        // Random words, the same shifted down to every magnitude, and the edges of the window.
        let mask = if window == 128 { u128::MAX } else { (1u128 << window) - 1 };
        let mut xs: Vec<u128> = xs.iter().zip(&shifts).map(|(&x, &s)| x >> s).chain(xs.clone()).collect();
        xs.extend([0, 1, mask, mask.wrapping_add(1), 1u128 << (window - 1), u128::MAX]);
        let signed: Vec<u128> = signed.into_iter().chain([0, 1 << 127, (1 << 127) - 1, u128::MAX]).collect();
        let rep = run_on(vec![xs.clone(), signed.clone()], Delivery::Fifo, move |ctx, v| async move {
            binary::msb_one_hot_and_signs(&ctx, &v[0], window, &v[1]).await
        }).expect("run");
        let word = |k: usize, sign: bool| {
            let o = |i: usize| if sign { rep.outputs[i].1.own()[k] } else { rep.outputs[i].0.own()[k] };
            o(0) ^ o(1) ^ o(2)
        };
        for (k, x) in xs.iter().enumerate() {
            let w = x & mask;
            let want = if w == 0 { 0 } else { 1u128 << (127 - w.leading_zeros()) };
            prop_assert_eq!(word(k, false), want, "x {:#x} window {}", x, window);
        }
        for (k, x) in signed.iter().enumerate() {
            prop_assert_eq!(word(k, true), x >> 127);
        }
    }

    #[test]
    fn less_than_equals_reference(
        a in prop::collection::vec(fx_in(40), 1..32),
        b in prop::collection::vec(fx_in(40), 32),
    ) {
        let b = b[..a.len()].to_vec();
        let rep = run_on(vec![a.clone(), b.clone()], Delivery::Fifo, |ctx, v| async move {
            compare::less_than(&ctx, &v[0], &v[1]).await
        }).expect("run");
        let got = open(&rep);
        for k in 0..a.len() {
            let want = vtwin_fixed::compare::lt(Fx(a[k]), Fx(b[k]));
            prop_assert_eq!(got[k], u128::from(want));
        }
    }

    #[test]
    fn reciprocal_equals_reference(
        xs in prop::collection::vec(1u128..(1u128 << 64), 1..24),
        wild in prop::collection::vec(any::<u128>(), 0..4),
    ) {
        let xs: Vec<u128> = xs.into_iter().chain(wild).collect();
        let rep = run_on(vec![xs.clone()], Delivery::Fifo, |ctx, v| async move {
            reciprocal::reciprocal(&ctx, &v[0]).await
        }).expect("run");
        let got = open(&rep);
        // 8 truncations in 6 layers (two Goldschmidt layers hold 2 parts each).
        prop_assert_eq!(rep.masks.len(), 6, "truncation layers");
        for (k, &x) in xs.iter().enumerate() {
            let mut t = replay(&rep.masks, k);
            let want = Reciprocal::new_unchecked(Fx(x), &mut t).value(&mut t);
            prop_assert_eq!(got[k], want.0, "x = {:#x}", x);
        }
    }

    #[test]
    fn divide_equals_reference(
        xs in prop::collection::vec(1u128..(1u128 << 64), 1..16),
        a in prop::collection::vec(fx_in(21), 16),
    ) {
        let a = a[..xs.len()].to_vec();
        let rep = run_on(vec![xs.clone(), a.clone()], Delivery::Fifo, |ctx, v| async move {
            let r = reciprocal::reciprocal_normalised(&ctx, &v[0]).await?;
            r.divide(&ctx, &v[1]).await
        }).expect("run");
        let got = open(&rep);
        for k in 0..xs.len() {
            let mut t = replay(&rep.masks, k);
            let want = Reciprocal::new_unchecked(Fx(xs[k]), &mut t).divide(Fx(a[k]), &mut t);
            prop_assert_eq!(got[k], want.0);
        }
    }

    #[test]
    fn divide_fraction_equals_reference(
        xs in prop::collection::vec(1u128..(1u128 << 64), 1..12),
        parts in prop::collection::vec(0u128..=1000, 36),
        wild in prop::collection::vec(any::<u128>(), 0..4),
    ) {
        // Fractions 0 <= a <= x (per 3 for each x, as pm for den), then arbitrary ring elements.
        const PER: usize = 3;
        let n = xs.len() + wild.len() / 2;
        let xs: Vec<u128> = xs.iter().copied().chain(wild.iter().take(wild.len() / 2).copied()).collect();
        let a: Vec<u128> = (0..n * PER)
            .map(|i| {
                let x = xs[i / PER];
                match wild.get(wild.len() / 2 + i / PER) {
                    Some(&w) if i % PER == 0 => w,
                    _ => if x < 1 << 64 { x / 1000 * parts[i % 36] } else { x },
                }
            })
            .collect();
        let rep = run_on(vec![xs.clone(), a.clone()], Delivery::Fifo, |ctx, v| async move {
            Ok(reciprocal::reciprocal_and_fractions(&ctx, &v[0], &v[1], PER).await?.1)
        }).expect("run");
        let got = open(&rep);
        // Layers: [m | a'] (n + n PER), e, [y | e], [y | e], y, the quotients (n PER); the
        // reference takes m, the Goldschmidt masks part by part, then (a', r) per fraction.
        prop_assert_eq!(rep.masks.len(), 6, "truncation layers");
        let m = &rep.masks;
        for k in 0..n {
            let mut seq = vec![m[0][k], m[1][k], m[2][k], m[2][n + k], m[3][k], m[3][n + k], m[4][k]];
            for j in 0..PER {
                seq.extend([m[0][n + k * PER + j], m[5][k * PER + j]]);
            }
            let mut it = seq.into_iter();
            let mut t = vtwin_fixed::Probabilistic::new(move || it.next().expect("mask"));
            let recip = Reciprocal::new_unchecked(Fx(xs[k]), &mut t);
            for j in 0..PER {
                let want = recip.divide_fraction(Fx(a[k * PER + j]), &mut t);
                prop_assert_eq!(got[k * PER + j], want.0, "x {:#x} a {:#x}", xs[k], a[k * PER + j]);
            }
        }
    }

    #[test]
    fn inv_sqrt_equals_reference(
        xs in prop::collection::vec(1u128..(1u128 << 80), 1..24),
        wild in prop::collection::vec(any::<u128>(), 0..4),
    ) {
        let xs: Vec<u128> = xs.into_iter().chain(wild).collect();
        let rep = run_on(vec![xs.clone()], Delivery::Fifo, |ctx, v| async move {
            inv_sqrt::inv_sqrt(&ctx, &v[0]).await
        }).expect("run");
        let got = open(&rep);
        // 15 truncations in 9 layers (each Newton-Raphson step: 3 parts, then 1).
        prop_assert_eq!(rep.masks.len(), 9, "truncation layers");
        for (k, &x) in xs.iter().enumerate() {
            let mut t = replay(&rep.masks, k);
            let want = InvSqrt::new_unchecked(Fx(x), &mut t).value(&mut t);
            prop_assert_eq!(got[k], want.0, "x = {:#x}", x);
        }
    }

    #[test]
    fn exp_equals_reference(
        xs in prop::collection::vec(-(64i128 << 32)..=0, 1..32),
    ) {
        let mut xs: Vec<u128> = xs.into_iter().map(|v| v as u128).collect();
        xs.extend([0, (-(64i128 << 32)) as u128, (-(32i128 << 32)) as u128, u128::MAX]);
        let rep = run_on(vec![xs.clone()], Delivery::Fifo, |ctx, v| async move {
            vtwin_mpc::exp::exp(&ctx, &v[0]).await
        }).expect("run");
        let got = open(&rep);
        prop_assert_eq!(rep.masks.len(), 9, "reference truncation count");
        for (k, &x) in xs.iter().enumerate() {
            let mut t = replay(&rep.masks, k);
            let want = vtwin_fixed::exp(Fx(x), &mut t).expect("domain");
            prop_assert_eq!(got[k], want.0, "x = {}", Fx(x));
        }
    }

    #[test]
    fn clip_factor_equals_reference(
        xs in prop::collection::vec(0u128..(1u128 << 80), 1..24),
        c in 1u128..(1u128 << 40),
    ) {
        let rep = run_on(vec![xs.clone()], Delivery::Fifo, move |ctx, v| async move {
            inv_sqrt::clip_factor(&ctx, &v[0], Fx(c)).await
        }).expect("run");
        let got = open(&rep);
        for (k, &x) in xs.iter().enumerate() {
            let mut t = replay(&rep.masks, k);
            let want = vtwin_fixed::clip_factor_unchecked(Fx(x), Fx(c), &mut t);
            prop_assert_eq!(got[k], want.0, "x = {:#x}", x);
        }
    }
}

#[test]
fn random_delivery_gives_the_fifo_result() {
    let xs: Vec<u128> = (1..40u128).map(|k| k * 0x1234_5678_9abc).collect();
    let fifo = run_on(vec![xs.clone()], Delivery::Fifo, |ctx, v| async move {
        reciprocal::reciprocal(&ctx, &v[0]).await
    })
    .expect("fifo");
    for seed in [1, 2, 3] {
        let rnd = run_on(
            vec![xs.clone()],
            Delivery::Random(seed),
            |ctx, v| async move { reciprocal::reciprocal(&ctx, &v[0]).await },
        )
        .expect("random");
        assert_eq!(open(&fifo), open(&rnd), "seed {seed}");
        assert_eq!(fifo.total(), rnd.total());
    }
}

#[test]
fn reciprocal_is_accurate_in_its_range() {
    // Documented range of the reference: the MPC result, decoded, within its bound.
    let xs: Vec<f64> = (0..46).map(|k| 2f64.powf(-30.0 + k as f64)).collect();
    let raw: Vec<u128> = xs
        .iter()
        .map(|&x| Fx::from_f64(x).expect("enc").0)
        .collect();
    let rep = run_on(vec![raw.clone()], Delivery::Fifo, |ctx, v| async move {
        reciprocal::reciprocal(&ctx, &v[0]).await
    })
    .expect("run");
    let got = open(&rep);
    for (k, &x) in xs.iter().enumerate() {
        let y = Fx(got[k]).to_f64();
        let exact = 1.0 / Fx(raw[k]).to_f64();
        let err = (y - exact).abs();
        assert!(
            err <= exact * 2f64.powi(-20) || err <= 2f64.powi(-31),
            "x = {x}: {y} vs {exact}"
        );
    }
    // And against the floor-truncation reference: same bound (relative 2^-19 or 4 ulp).
    for (k, &r) in raw.iter().enumerate() {
        let f = vtwin_fixed::reciprocal(Fx(r), &mut Floor).expect("domain");
        let d = (f.signed() - Fx(got[k]).signed()).abs();
        assert!(
            d <= 4 || (d as f64) <= f.signed() as f64 * 2f64.powi(-19),
            "k = {k}"
        );
    }
}

/// The replicated sharings a layer returns are consistent (node i's `next` is node i+1's
/// `own`), for the truncated and the reshared outputs of one mixed layer, and open to the
/// reference.
#[test]
fn mixed_layer_shares_are_replicated_consistently() {
    let x: Vec<u128> = (0..50)
        .map(|k| Fx::from_f64(k as f64 * 0.37 - 9.0).expect("x").0)
        .collect();
    let y: Vec<u128> = (0..50)
        .map(|k| Fx::from_f64(3.5 - k as f64 * 0.11).expect("y").0)
        .collect();
    let rep = run_on(
        vec![x.clone(), y.clone()],
        Delivery::Random(3),
        |ctx, v| async move {
            multiply::mul_and_mul_trunc(&ctx, (&v[0], &v[1]), (&v[0], &v[1]), 32).await
        },
    )
    .expect("run");
    for i in 0..3 {
        let n = (i + 1) % 3;
        assert_eq!(
            rep.outputs[i].0.next(),
            rep.outputs[n].0.own(),
            "plain, {i}"
        );
        assert_eq!(
            rep.outputs[i].1.next(),
            rep.outputs[n].1.own(),
            "trunc, {i}"
        );
    }
    let [a, b, c] = &rep.outputs;
    let plain = vtwin_mpc::sim::reconstruct(&[a.0.clone(), b.0.clone(), c.0.clone()]);
    let trunc = vtwin_mpc::sim::reconstruct(&[a.1.clone(), b.1.clone(), c.1.clone()]);
    assert_eq!(rep.masks.len(), 1);
    for k in 0..x.len() {
        assert_eq!(plain[k], x[k].wrapping_mul(y[k]));
        let want = vtwin_fixed::mul(Fx(x[k]), Fx(y[k]), &mut replay(&rep.masks, k));
        assert_eq!(trunc[k], want.0, "element {k}");
    }
}
