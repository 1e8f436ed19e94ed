//! The gradient circuit against a plaintext replica of `vtwin_model::fixed::fixed_gradient`
//! (same products and truncations, in that function's order), bit for bit given the
//! MPC's masks, revealed to the coordinator only.

mod common;

use common::SESSION;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::{clip_factor_unchecked, Fx, Probabilistic, Reciprocal, Truncator, FRAC_BITS};
use vtwin_mpc::gradient::{gradient, CircuitPublic, PartyMap, SharedUpload};
use vtwin_mpc::input::{accept_client, input, reveal_to};
use vtwin_mpc::{InputClient, Opening, Simulation};

/// One instance in the clear.
#[derive(Clone, Debug)]
struct Instance {
    public: CircuitPublic,
    mat: Vec<Vec<Fx>>,
    q: Vec<Vec<Fx>>,
    stats: Vec<Vec<Fx>>,
    noise: Vec<i128>,
}

/// The node side of `vtwin_model::fixed::fixed_gradient`, transcribed (ring values, noise
/// added, canonical order).
fn reference<T: Truncator>(inst: &Instance, t: &mut T) -> Vec<u128> {
    let p = &inst.public;
    let (b, k_n) = (p.batch, p.components);
    let pi = &p.pi;
    let mul = |a: Fx, c: Fx, t: &mut T| Fx(t.trunc(a.0.wrapping_mul(c.0), FRAC_BITS));
    let mut w = vec![Fx::ZERO; b * k_n];
    let mut sw = vec![Fx::ZERO; k_n];
    let mut sc = Fx::ZERO;
    let mut pm = vec![Fx::ZERO; k_n];
    let mut r = vec![Fx::ZERO; k_n];
    for n in 0..b {
        let mut den = Fx::ZERO;
        for k in 0..k_n {
            let i = n * k_n + k;
            let mut m = inst.mat[0][i];
            for up in &inst.mat[1..] {
                m = mul(m, up[i], t);
            }
            pm[k] = mul(pi[k], m, t);
            den += pm[k];
        }
        let recip = Reciprocal::new_unchecked(den, t);
        for k in 0..k_n {
            r[k] = recip.divide(pm[k], t);
        }
        let mut acc_a = 0u128;
        let mut acc_b = 0u128;
        for k in 0..k_n {
            let e = r[k] - pi[k];
            acc_a = acc_a.wrapping_add(e.0.wrapping_mul(e.0));
            let r2 = mul(r[k], r[k], t);
            let q = inst.q.iter().fold(Fx::ZERO, |s, up| s + up[n * k_n + k]);
            acc_b = acc_b.wrapping_add(r2.0.wrapping_mul(q.0));
        }
        let norm2 = Fx(t.trunc(acc_a, FRAC_BITS)) + Fx(t.trunc(acc_b, FRAC_BITS));
        let c = clip_factor_unchecked(norm2, p.clip, t);
        sc += c;
        for k in 0..k_n {
            let wk = mul(c, r[k], t);
            w[n * k_n + k] = wk;
            sw[k] += wk;
        }
    }
    let mut g: Vec<Fx> = (0..k_n).map(|k| sw[k] - mul(pi[k], sc, t)).collect();
    for (pp, map) in p.parties.iter().enumerate() {
        let wd = map.width;
        for k in 0..k_n {
            for j in 0..wd {
                let mut acc = 0u128;
                for n in 0..b {
                    acc = acc
                        .wrapping_add(w[n * k_n + k].0.wrapping_mul(inst.stats[pp][n * wd + j].0));
                }
                let m = Fx(t.trunc(acc, FRAC_BITS));
                let raw = map.scale[k * wd + j]
                    .0
                    .wrapping_mul(m.0)
                    .wrapping_add(map.offset[k * wd + j].0.wrapping_mul(sw[k].0));
                g.push(Fx(t.trunc(raw, FRAC_BITS)));
            }
        }
    }
    g.iter()
        .zip(&inst.noise)
        .map(|(v, z)| (*v + Fx::from_signed(*z)).0)
        .collect()
}

/// The MPC's masks rearranged into the reference's call order (layer list in
/// `vtwin_mpc::gradient` docs).
fn replay_order(inst: &Instance, layers: &[Vec<u128>]) -> Vec<u128> {
    let p = &inst.public;
    let (b, k_n, parties) = (p.batch, p.components, p.parties.len());
    assert_eq!(layers.len(), parties + 29, "truncation layers");
    let mut it = layers.iter();
    let mut take =
        |n: usize| -> Vec<&Vec<u128>> { (0..n).map(|_| it.next().expect("layer")).collect() };
    let mat = take(parties - 1);
    let pm = take(1)[0];
    let recip = take(7);
    let div = take(2);
    let r2 = take(1)[0];
    let acc = take(2);
    let clip = take(13);
    let w = take(1)[0];
    let pisc = take(1)[0];
    let m = take(1)[0];
    let g = take(1)[0];
    let mut out = Vec::new();
    for n in 0..b {
        for k in 0..k_n {
            let i = n * k_n + k;
            out.extend(mat.iter().map(|l| l[i]));
            out.push(pm[i]);
        }
        out.extend(recip.iter().map(|l| l[n]));
        for k in 0..k_n {
            out.push(div[0][n * k_n + k]);
            out.push(div[1][n * k_n + k]);
        }
        out.extend((0..k_n).map(|k| r2[n * k_n + k]));
        out.extend(acc.iter().map(|l| l[n]));
        out.extend(clip.iter().map(|l| l[n]));
        out.extend((0..k_n).map(|k| w[n * k_n + k]));
    }
    out.extend(pisc.iter().copied());
    for i in 0..m.len() {
        out.push(m[i]);
        out.push(g[i]);
    }
    out
}

fn enc(v: f64) -> Fx {
    Fx::from_f64(v).expect("encodable")
}

fn instance(seed: u64, b: usize, k_n: usize, widths: &[usize]) -> Instance {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut u = move || {
        use rand_chacha::rand_core::RngCore;
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    };
    let raw_pi: Vec<f64> = (0..k_n).map(|_| 0.2 + u()).collect();
    let s: f64 = raw_pi.iter().sum();
    let parties: Vec<PartyMap> = widths
        .iter()
        .map(|&wd| PartyMap {
            width: wd,
            scale: (0..k_n * wd).map(|_| enc(2.0 * u() - 1.0)).collect(),
            offset: (0..k_n * wd).map(|_| enc(2.0 * u() - 1.0)).collect(),
        })
        .collect();
    let mat = widths
        .iter()
        .map(|_| (0..b * k_n).map(|_| enc(u())).collect())
        .collect();
    let q = widths
        .iter()
        .map(|_| (0..b * k_n).map(|_| enc(8.0 * u())).collect())
        .collect();
    let stats = widths
        .iter()
        .map(|&wd| {
            (0..b * wd)
                .map(|_| enc((4.0 * u()).floor() - 1.0))
                .collect()
        })
        .collect();
    let public = CircuitPublic {
        batch: b,
        components: k_n,
        pi: raw_pi.iter().map(|p| enc(p / s)).collect(),
        clip: enc(1.0 * (1.0 - 2f64.powi(-20))),
        parties,
    };
    let d = public.dim();
    let noise = (0..d)
        .map(|_| ((u() - 0.5) * 2f64.powi(33)) as i128)
        .collect();
    Instance {
        public,
        mat,
        q,
        stats,
        noise,
    }
}

/// Runs the circuit: party p (client p) inputs its upload, client P the noise; the
/// coordinator (client P + 1) receives G.
fn run_mpc(inst: &Instance) -> (Vec<u128>, Vec<Vec<u128>>) {
    let parties = inst.public.parties.len();
    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let mut msgs = Vec::new();
    for p in 0..parties {
        let (mut c, setup) = InputClient::new(p as u16, SESSION, &mut rng);
        msgs.extend(setup);
        msgs.extend(c.share_raw(&inst.mat[p].iter().map(|v| v.0).collect::<Vec<_>>()));
        msgs.extend(c.share_raw(&inst.q[p].iter().map(|v| v.0).collect::<Vec<_>>()));
        msgs.extend(c.share_raw(&inst.stats[p].iter().map(|v| v.0).collect::<Vec<_>>()));
    }
    let (mut nc, setup) = InputClient::new(parties as u16, SESSION, &mut rng);
    msgs.extend(setup);
    msgs.extend(nc.share_raw(&inst.noise.iter().map(|z| *z as u128).collect::<Vec<_>>()));
    let coordinator = parties as u16 + 1;
    let public = inst.public.clone();
    let rep = Simulation::new(SESSION, 23)
        .expect("sim")
        .clients(coordinator + 1)
        .record_masks()
        .inject(msgs)
        .run(move |ctx| {
            let public = public.clone();
            async move {
                let (b, k_n) = (public.batch, public.components);
                let mut uploads = Vec::new();
                for (p, map) in public.parties.iter().enumerate() {
                    let s = accept_client(&ctx, p as u16).await?;
                    uploads.push(SharedUpload {
                        mat: input(&ctx, &s, 1, b * k_n).await?,
                        q: input(&ctx, &s, 2, b * k_n).await?,
                        stats: input(&ctx, &s, 3, b * map.width).await?,
                    });
                }
                let s = accept_client(&ctx, public.parties.len() as u16).await?;
                let z = input(&ctx, &s, 1, public.dim()).await?;
                let g = gradient(&ctx, &public, &uploads, &z).await?;
                reveal_to(&ctx, &g, public.parties.len() as u16 + 1).await?;
                Ok(ctx.counters())
            }
        })
        .expect("run");
    let mut o = Opening::new(SESSION, coordinator, inst.public.dim());
    for m in rep.to_clients {
        o.handle(m).expect("share");
    }
    (o.result().expect("opened"), rep.masks)
}

fn check(inst: &Instance) -> Result<(), TestCaseError> {
    let (got, masks) = run_mpc(inst);
    let mut seq = replay_order(inst, &masks).into_iter();
    let mut t = Probabilistic::new(move || seq.next().expect("enough masks"));
    let want = reference(inst, &mut t);
    prop_assert_eq!(
        t.calls() as usize,
        masks.iter().map(Vec::len).sum::<usize>()
    );
    prop_assert_eq!(got, want);
    Ok(())
}

#[test]
fn gradient_matches_the_fixed_backend_order_bit_for_bit() {
    check(&instance(1, 6, 3, &[2, 3])).expect("P = 2");
    check(&instance(2, 4, 2, &[1, 2, 2])).expect("P = 3");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 6,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/gradient.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn gradient_equivalence(seed in any::<u64>(), b in 1usize..8, k in 1usize..5, w1 in 1usize..4, w2 in 1usize..4) {
        check(&instance(seed, b, k, &[w1, w2]))?;
    }
}
