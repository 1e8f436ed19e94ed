//! A plaintext transcription of the node side of `vtwin_model::fixed_backend::fixed_gradient` (the
//! normative reference, which vtwin-mpc cannot depend on) and random instances, shared by
//! the gradient test and bench.

#![allow(dead_code, unreachable_pub)]

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use vtwin_fixed::score_norm::record_norm2;
use vtwin_fixed::{clip_factor_unchecked, Fx, Reciprocal, Truncator, FRAC_BITS};
use vtwin_mpc::gradient::{
    gradient, receive_inputs, upload_messages, CircuitPublic, InputBounds, PartyMap, PlainUpload,
};
use vtwin_mpc::input::reveal_to;
use vtwin_mpc::{
    Counters, InputClient, Message, MpcError, Node, NodeId, Opening, Peer, SessionId, Simulation,
};

const SESSION: SessionId = SessionId(*b"vtwin-mpc-gradnt");

/// One instance in the clear.
#[derive(Clone, Debug)]
pub struct Instance {
    pub public: CircuitPublic,
    pub mat: Vec<Vec<Fx>>,
    pub root: Vec<Vec<Fx>>,
    pub stats: Vec<Vec<Fx>>,
    /// Party 0's raw 0/1 flags (0: a padding row).
    pub flags: Vec<Fx>,
    pub noise: Vec<i128>,
}

/// The node side of `vtwin_model::fixed_backend::fixed_gradient`, transcribed (ring values, noise
/// added, canonical order).
pub fn reference<T: Truncator>(inst: &Instance, t: &mut T) -> Vec<u128> {
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
        for (k, pmk) in pm.iter_mut().enumerate() {
            let i = n * k_n + k;
            // Party 0's factor already holds pi_k mat_0 (0 on padding rows).
            let mut m = inst.mat[0][i];
            for up in &inst.mat[1..] {
                m = mul(m, up[i], t);
            }
            *pmk = m;
            den += m;
        }
        let recip = Reciprocal::new_unchecked(den, t);
        let mut pmn = vec![Fx::ZERO; k_n];
        for k in 0..k_n {
            pmn[k] = recip.normalise_fraction(pm[k], t);
            r[k] = recip.times_mantissa(pmn[k], t);
        }
        let norm2 = record_norm2(
            &recip,
            &pmn,
            &r,
            pi,
            inst.root.len(),
            |k, q| inst.root[q][n * k_n + k],
            t,
        );
        let c = clip_factor_unchecked(norm2, p.clip, t);
        sc += Fx(c.0.wrapping_mul(inst.flags[n].0));
        for k in 0..k_n {
            let wk = r[k] + mul(c - Fx::ONE, r[k], t);
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
                // An integer party's T_p is at scale 1: M_p is at 2^32 untruncated.
                let m = if map.integer_stats {
                    Fx(acc)
                } else {
                    Fx(t.trunc(acc, FRAC_BITS))
                };
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

pub fn enc(v: f64) -> Fx {
    Fx::from_f64(v).expect("encodable")
}

pub fn instance(seed: u64, b: usize, k_n: usize, widths: &[usize]) -> Instance {
    instance_with(seed, b, k_n, widths, &vec![false; widths.len()])
}

/// [`instance`] with the parties whose `integer` entry is set inputting T_p as raw integers
/// (the same values, -1..=2, at scale 1).
pub fn instance_with(
    seed: u64,
    b: usize,
    k_n: usize,
    widths: &[usize],
    integer: &[bool],
) -> Instance {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut u = move || {
        use rand_chacha::rand_core::RngCore;
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    };
    let raw_pi: Vec<f64> = (0..k_n).map(|_| 0.2 + u()).collect();
    let s: f64 = raw_pi.iter().sum();
    let parties: Vec<PartyMap> = widths
        .iter()
        .zip(integer)
        .map(|(&wd, &integer_stats)| PartyMap {
            width: wd,
            scale: (0..k_n * wd).map(|_| enc(2.0 * u() - 1.0)).collect(),
            offset: (0..k_n * wd).map(|_| enc(2.0 * u() - 1.0)).collect(),
            integer_stats,
        })
        .collect();
    let mat = widths
        .iter()
        .map(|_| (0..b * k_n).map(|_| enc(u())).collect())
        .collect();
    let root = widths
        .iter()
        .map(|_| (0..b * k_n).map(|_| enc(0.01 * u())).collect())
        .collect();
    let stats = widths
        .iter()
        .zip(integer)
        .map(|(&wd, &int)| {
            (0..b * wd)
                .map(|_| {
                    let v = (4.0 * u()).floor() - 1.0;
                    if int {
                        Fx::from_signed(v as i128)
                    } else {
                        enc(v)
                    }
                })
                .collect()
        })
        .collect();
    let public = CircuitPublic {
        batch: b,
        components: k_n,
        pi: raw_pi.iter().map(|p| enc(p / s)).collect(),
        clip: enc(1.0 * (1.0 - 2f64.powi(-20))),
        parties,
        noise_contributors: 1,
    };
    let noise = (0..public.dim())
        .map(|_| ((u() - 0.5) * 2f64.powi(33)) as i128)
        .collect();
    Instance::real_rows(public, mat, root, stats, noise)
}

impl Instance {
    /// An instance whose every row is a real record (party 0's flags all 1).
    pub fn real_rows(
        public: CircuitPublic,
        mat: Vec<Vec<Fx>>,
        root: Vec<Vec<Fx>>,
        stats: Vec<Vec<Fx>>,
        noise: Vec<i128>,
    ) -> Instance {
        let flags = vec![Fx::from_raw(1); public.batch];
        Instance {
            public,
            mat,
            root,
            stats,
            flags,
            noise,
        }
    }
}

/// The clients' messages of one run: party p (client p) its upload, client P the noise.
pub fn client_messages(inst: &Instance) -> Vec<Message> {
    let parties = inst.public.parties.len();
    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let mut msgs = Vec::new();
    for p in 0..parties {
        let (mut c, setup) = InputClient::new(p as u16, SESSION, &mut rng);
        msgs.extend(setup);
        msgs.extend(upload(&mut c, inst, p));
    }
    let (mut nc, setup) = InputClient::new(parties as u16, SESSION, &mut rng);
    msgs.extend(setup);
    msgs.extend(nc.share_raw(&inst.noise.iter().map(|z| *z as u128).collect::<Vec<_>>()));
    msgs
}

/// Runs the nodes' program of [`run_mpc`] on `msgs` (FIFO, to the end or until every node
/// failed) and returns each node's first error and every message sent to a client.
pub fn run_mpc_on(inst: &Instance, msgs: Vec<Message>) -> (Vec<Option<MpcError>>, Vec<Message>) {
    let coordinator = inst.public.parties.len() as u16 + 1;
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    let seeds = vtwin_mpc::keys::simulated_seeds(&mut rng, SESSION).expect("seeds");
    let mut nodes: Vec<Node<()>> = seeds
        .into_iter()
        .zip(NodeId::ALL)
        .map(|(s, id)| {
            let public = inst.public.clone();
            Node::new(id, SESSION, s, coordinator + 1, move |ctx| {
                let public = public.clone();
                async move {
                    let (uploads, late) = receive_inputs(&ctx, &public).await?;
                    let g = gradient(&ctx, &public, &uploads, late).await?;
                    reveal_to(&ctx, &g, coordinator).await
                }
            })
        })
        .collect();
    let mut queue: std::collections::VecDeque<Message> = msgs.into();
    let mut errors: Vec<Option<MpcError>> = vec![None, None, None];
    for (i, n) in nodes.iter_mut().enumerate() {
        match n.start() {
            Ok(out) => queue.extend(out),
            Err(e) => errors[i] = Some(e),
        }
    }
    let mut to_clients = Vec::new();
    while let Some(m) = queue.pop_front() {
        match m.to {
            Peer::Client(_) => to_clients.push(m),
            Peer::Node(id) if errors[id.index()].is_none() => match nodes[id.index()].handle(m) {
                Ok(out) => queue.extend(out),
                Err(e) => errors[id.index()] = Some(e),
            },
            Peer::Node(_) => {}
        }
    }
    (errors, to_clients)
}

/// Runs the circuit: party p (client p) inputs its upload, client P the noise; the
/// coordinator (client P + 1) receives G.
pub fn run_mpc(inst: &Instance) -> (Vec<u128>, Vec<Vec<u128>>, [Counters; 3]) {
    let parties = inst.public.parties.len();
    let msgs = client_messages(inst);
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
                let (uploads, late) = receive_inputs(&ctx, &public).await?;
                let g = gradient(&ctx, &public, &uploads, late).await?;
                reveal_to(&ctx, &g, public.parties.len() as u16 + 1).await?;
                Ok(ctx.counters())
            }
        })
        .expect("run");
    let mut o = Opening::new(SESSION, coordinator, inst.public.dim());
    for m in rep.to_clients {
        o.handle(m).expect("share");
    }
    (o.result().expect("opened"), rep.masks, rep.outputs)
}

/// The model's fixed-point input ranges.
pub fn bounds() -> InputBounds {
    InputBounds {
        mat: (enc(0.0), enc(1.0)),
        root: (enc(0.0), vtwin_fixed::clip_bound::score_root_max()),
        stats: (enc(-14.0), enc(14.0)),
    }
}

/// Party p's upload in the clear.
pub fn plain(inst: &Instance, p: usize) -> PlainUpload {
    PlainUpload {
        mat: inst.mat[p].clone(),
        root: inst.root[p].clone(),
        stats: inst.stats[p].clone(),
        flags: if p == 0 {
            inst.flags.clone()
        } else {
            Vec::new()
        },
        integer_stats: inst.public.parties[p].integer_stats,
    }
}

/// Party p's validated input messages.
pub fn upload(c: &mut InputClient, inst: &Instance, p: usize) -> Vec<Message> {
    upload_messages(c, &plain(inst, p), bounds())
        .expect("in range")
        .into_iter()
        .collect()
}
