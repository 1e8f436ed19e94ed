//! Multiplication, truncation and inner products: one layer of the arithmetic circuit.
//!
//! Local step: for `z = x y`, node i computes the 3-out-of-3 additive share
//! `z_i = x_i y_i + x_i y_{i+1} + x_{i+1} y_i` (an inner product sums these over its terms,
//! so it costs what one product costs). Then, in one layer and **one round**:
//!
//! - **Reshare** (products kept at full precision, e.g. integers or bits): node i sends
//!   `z_i + a_i` to node i-1, with `a` a zero-sharing. 1 element per node.
//! - **Probabilistic truncation** (the fixed-point products), `trunc_prob` of vtwin-fixed with
//!   a mask `r` uniform on Z_2^128 known to node 0 **alone** (from its private seed `p_0`,
//!   [`crate::keys`]). With `alpha = F(k_1, .)` (nodes 0, 1), `beta = F(k_0, .)` and
//!   `t_0 = F(k_0, .)` (nodes 2, 0), all on fresh streams:
//!   - node 0 -> node 1: `z_0 + r - beta` and `t_1 = (r >> d) - t_0`;
//!   - node 0 -> node 2: `z_0 + r - alpha`;
//!   - node 2 -> node 1: `z_2 + beta`; node 1 -> node 2: `z_1 + alpha`;
//!
//!   so nodes 1 and 2 both compute `c = z_0 + z_1 + z_2 + r = X + r` and `c >> d` (logical
//!   shift), and the replicated sharing of `y = (c >> d) - (r >> d)` is
//!   `(y_0, y_1, y_2) = (-t_0, -t_1, c >> d)`: node 0 holds `(-t_0, -t_1)`, node 1
//!   `(-t_1, c >> d)`, node 2 `(c >> d, -t_0)`. 5 elements per truncated output.
//!   `y = vtwin_fixed::trunc_prob(X, r, d)` bit for bit for every ring element X, so
//!   `vtwin_fixed::Probabilistic` fed node 0's masks replays the protocol exactly: error in
//!   (-1, 1) ulp, wrap with probability |X| / 2^128 (< 2^-41 for |X| < 2^87), the same `r`
//!   distribution and error analysis as before (only who holds `r` changed).
//!
//! Both kinds travel in the same round (node 0 -> node 2 and node 2 -> node 1 carry the
//! reshare followed by the truncation's element), so every layer costs 1 round.
//!
//! **Privacy** (semi-honest, one curious node; the seeds a node lacks are pseudorandom to
//! it):
//! - node 1 receives `(z_0 + r - beta, z_2 + beta, (r >> d) - t_0)` besides the reshare. It
//!   does not hold `k_0` (so `beta`, `t_0` are unknown and uniform) nor `p_0` (so `r` is
//!   unknown and uniform); for any fixed `z`, `(r, beta, t_0) -> view` is a bijection of
//!   Z_2^128^3, so the view is uniform whatever X. (It learns `c = X + r`, uniform.)
//!   `beta` hides `z_2` from node 1 only in product layers: in a [`truncate`] layer
//!   `z_2 = x_2` is node 1's own input share, so node 1 learns `beta`; privacy there rests
//!   on `r` and `t_0` alone: for fixed z (and so fixed, known `beta`),
//!   `(r, t_0) -> (z_0 + r - beta, (r >> d) - t_0)` is a bijection, still uniform whatever
//!   X, and `beta` (from `k_0`, a fresh stream) is independent of `r` and `t_0`.
//! - node 2 receives `(z_0 + r - alpha, z_1 + alpha)` besides the reshare: `alpha` (from
//!   `k_1`) and `r` are unknown and uniform to it, `(r, alpha) -> view` is a bijection, so
//!   the view is uniform. The `t_0`, `beta` it knows are independent of `r` and X.
//! - node 0 receives nothing but the reshare from node 1, masked by the zero-sharing.
//! - reshares: `z_i + a_i` is masked by `F(k_{i+1}, .)`, which node i-1 does not hold.
//!
//! Each node's output pair is uniform: node 0's is a function of `(r, t_0)` only
//! (independent of X), node 1's and node 2's contain `t_1` or `t_0`, unknown to them.
//! Checked statistically, one element's distribution at a time (and for cleartext values),
//! in `tests/privacy.rs`; the unit tests below check, with the seeds in hand, what those
//! miss: every PRG draw is on a fresh stream (none drawn twice by a node, none shared by
//! two layers, every one allocated by the counter), `r` is node 0's private-seed output and
//! no output nodes 1 or 2 can compute, and no node can compute X, the output y or a share
//! it lacks from its view (combinations of what it receives and holds, minus a PRG output
//! it can compute; differences of a part across layers).

use crate::error::MpcError;
use crate::message::{NodeId, Peer};
use crate::runtime::Ctx;
use crate::share::{check_len, zip, Shared};
use zeroize::Zeroizing;

const N0: NodeId = NodeId::ALL[0];
const N1: NodeId = NodeId::ALL[1];
const N2: NodeId = NodeId::ALL[2];

/// Node i's additive share of the element-wise products `x * y`.
pub(crate) fn local_products(x: &Shared, y: &Shared) -> Vec<u128> {
    (0..x.len())
        .map(|k| {
            let (a, b, c, d) = (x.own[k], x.next[k], y.own[k], y.next[k]);
            a.wrapping_mul(c)
                .wrapping_add(a.wrapping_mul(d))
                .wrapping_add(b.wrapping_mul(c))
        })
        .collect()
}

/// Node i's additive share of the inner products of consecutive groups of `len` elements.
pub(crate) fn local_dots(x: &Shared, y: &Shared, len: usize) -> Vec<u128> {
    if len == 0 {
        return Vec::new();
    }
    let p = local_products(x, y);
    p.chunks(len)
        .map(|c| c.iter().fold(0u128, |s, v| s.wrapping_add(*v)))
        .collect()
}

/// Resolves one layer: `plain` additive shares are reshared as they are, `trunc` additive
/// shares are truncated by `d` bits. Returns the two replicated sharings. 1 round (also when
/// both are empty: every node steps through it, so round numbers agree); elements in all:
/// 3 per reshared value, 5 per truncated value.
pub(crate) async fn layer(
    ctx: &Ctx,
    plain: Vec<u128>,
    trunc: Vec<u128>,
    d: u32,
) -> Result<(Shared, Shared), MpcError> {
    let me = ctx.id();
    let np = plain.len();
    let nt = trunc.len();
    let s_zero = ctx.next_stream();
    let s_alpha = ctx.next_stream();
    let s_beta = ctx.next_stream();
    let s_t0 = ctx.next_stream();
    let s_r = ctx.next_stream();
    let zero = Zeroizing::new(zip(
        &Zeroizing::new(ctx.prg_prev(s_zero, np)),
        &Zeroizing::new(ctx.prg_next(s_zero, np)),
        u128::wrapping_sub,
    ));
    let reshared = zip(&plain, &zero, u128::wrapping_add);
    ctx.count(|c| c.truncations += nt as u64);

    // The one round. Empty messages are not sent. Payloads: reshares first, then the
    // truncation's part.
    let mut sends: Vec<(Peer, Vec<u128>)> = Vec::new();
    let mut recvs: Vec<(NodeId, usize)> = Vec::new();
    // Node 0's output shares of the truncation, (y_0, y_1) = (-t_0, -t_1).
    let mut node0_out = Shared::default();
    match me.index() {
        0 => {
            // r from node 0's private seed; alpha from k_1 (nodes 0, 1); beta and t_0 from
            // k_0 (nodes 2, 0).
            // Secret vectors are zeroized on drop (the messages and outputs are not: they
            // leave this function).
            let r = Zeroizing::new(ctx.prg_private(s_r, nt));
            let alpha = Zeroizing::new(ctx.prg_key(1, s_alpha, nt).unwrap_or_default());
            let beta = Zeroizing::new(ctx.prg_key(0, s_beta, nt).unwrap_or_default());
            let t0 = Zeroizing::new(ctx.prg_key(0, s_t0, nt).unwrap_or_default());
            if nt > 0 {
                ctx.log_masks(&r);
            }
            let masked = Zeroizing::new(zip(&trunc, &r, u128::wrapping_add));
            let t1 = Zeroizing::new(zip(&r, &t0, |r, t0| (r >> d).wrapping_sub(t0)));
            let mut to1 = zip(&masked, &beta, u128::wrapping_sub);
            to1.extend_from_slice(&t1);
            let mut to2 = reshared.to_vec();
            to2.extend(zip(&masked, &alpha, u128::wrapping_sub));
            if !to2.is_empty() {
                sends.push((Peer::Node(N2), to2));
            }
            if nt > 0 {
                sends.push((Peer::Node(N1), to1));
            }
            if np > 0 {
                recvs.push((N1, np));
            }
            node0_out = Shared {
                own: t0.iter().map(|v| v.wrapping_neg()).collect(),
                next: t1.iter().map(|v| v.wrapping_neg()).collect(),
            };
        }
        1 => {
            let alpha = Zeroizing::new(ctx.prg_key(1, s_alpha, nt).unwrap_or_default());
            if np > 0 {
                sends.push((Peer::Node(N0), reshared.clone()));
            }
            if nt > 0 {
                sends.push((Peer::Node(N2), zip(&trunc, &alpha, u128::wrapping_add)));
            }
            if np + nt > 0 {
                recvs.push((N2, np + nt));
            }
            if nt > 0 {
                recvs.push((N0, 2 * nt));
            }
        }
        _ => {
            let beta = Zeroizing::new(ctx.prg_key(0, s_beta, nt).unwrap_or_default());
            let mut to1 = reshared.to_vec();
            to1.extend(zip(&trunc, &beta, u128::wrapping_add));
            if !to1.is_empty() {
                sends.push((Peer::Node(N1), to1));
            }
            if np + nt > 0 {
                recvs.push((N0, np + nt));
            }
            if nt > 0 {
                recvs.push((N1, nt));
            }
        }
    }
    let got = ctx.exchange(sends, &recvs).await?;
    let first = got.first().map(Vec::as_slice).unwrap_or(&[]);
    let plain_shared = Shared {
        next: first.get(..np).map(<[u128]>::to_vec).unwrap_or_default(),
        own: reshared,
    };
    if nt == 0 {
        return Ok((plain_shared, Shared::default()));
    }
    let truncated = match me.index() {
        0 => node0_out,
        1 => {
            // c = (z_0 + r - beta) + (z_2 + beta) + z_1 = X + r.
            let from2 = &first[np..];
            let from0 = got.get(1).map(Vec::as_slice).unwrap_or(&[]);
            let (masked, t1) = from0.split_at(nt);
            let high = (0..nt)
                .map(|k| {
                    let c = masked[k].wrapping_add(from2[k]).wrapping_add(trunc[k]);
                    c >> d
                })
                .collect();
            Shared {
                own: t1.iter().map(|v| v.wrapping_neg()).collect(),
                next: high,
            }
        }
        _ => {
            // c = (z_0 + r - alpha) + (z_1 + alpha) + z_2 = X + r.
            let from0 = &first[np..];
            let from1 = got.get(1).map(Vec::as_slice).unwrap_or(&[]);
            let t0 = Zeroizing::new(ctx.prg_key(0, s_t0, nt).unwrap_or_default());
            let high = (0..nt)
                .map(|k| {
                    let c = from0[k].wrapping_add(from1[k]).wrapping_add(trunc[k]);
                    c >> d
                })
                .collect();
            Shared {
                own: high,
                next: t0.iter().map(|v| v.wrapping_neg()).collect(),
            }
        }
    };
    Ok((plain_shared, truncated))
}

/// `x * y` element-wise, no truncation (integers, bits, or a product kept at scale 2^64).
/// 1 round; 1 element sent per node per product.
pub async fn mul(ctx: &Ctx, x: &Shared, y: &Shared) -> Result<Shared, MpcError> {
    check_len("mul", x.len(), y.len())?;
    ctx.count(|c| c.mults += x.len() as u64);
    Ok(layer(ctx, local_products(x, y), Vec::new(), 0).await?.0)
}

/// `trunc(x * y, d)` element-wise: the MPC twin of `vtwin_fixed::mul` (d = 32) with
/// probabilistic truncation. 1 round; 5 elements in all per product.
pub async fn mul_trunc(ctx: &Ctx, x: &Shared, y: &Shared, d: u32) -> Result<Shared, MpcError> {
    check_len("mul_trunc", x.len(), y.len())?;
    ctx.count(|c| c.mults += x.len() as u64);
    Ok(layer(ctx, Vec::new(), local_products(x, y), d).await?.1)
}

/// `x * y` and `trunc(u * v, d)` in one layer (1 round).
pub async fn mul_and_mul_trunc(
    ctx: &Ctx,
    (x, y): (&Shared, &Shared),
    (u, v): (&Shared, &Shared),
    d: u32,
) -> Result<(Shared, Shared), MpcError> {
    check_len("mul_and_mul_trunc", x.len(), y.len())?;
    check_len("mul_and_mul_trunc", u.len(), v.len())?;
    ctx.count(|c| c.mults += (x.len() + u.len()) as u64);
    layer(ctx, local_products(x, y), local_products(u, v), d).await
}

/// `trunc(x, d)` of a replicated sharing (e.g. after a multiplication by a public
/// constant). 1 round.
pub async fn truncate(ctx: &Ctx, x: &Shared, d: u32) -> Result<Shared, MpcError> {
    // x_i is an additive share of x held by node i.
    Ok(layer(ctx, Vec::new(), x.own.clone(), d).await?.1)
}

/// N truncations by `d` bits in one layer (1 round): each part is node i's additive shares
/// of its values (e.g. [`local_products`], or a replicated sharing's `own` after a public
/// product). Outputs in the order of `parts`; the layer's masks are one vector, the parts
/// concatenated. 5 elements per value.
pub(crate) async fn truncate_many<const N: usize>(
    ctx: &Ctx,
    parts: [Vec<u128>; N],
    d: u32,
) -> Result<[Shared; N], MpcError> {
    let out = layer(ctx, Vec::new(), parts.concat(), d).await?.1;
    let mut at = 0;
    Ok(parts.map(|p| {
        let s = out.slice(at..at + p.len());
        at += p.len();
        s
    }))
}

/// `x` and `y` have the same length, a whole number of groups of `len` (> 0) elements.
fn check_groups(
    protocol: &'static str,
    x: &Shared,
    y: &Shared,
    len: usize,
) -> Result<(), MpcError> {
    check_len(protocol, x.len(), y.len())?;
    if len == 0 || !x.len().is_multiple_of(len) {
        return Err(MpcError::LengthMismatch {
            protocol,
            left: x.len(),
            right: len,
        });
    }
    Ok(())
}

/// Inner products of consecutive groups of `len` elements, truncated once by 32 bits after
/// the sum: the twin of `vtwin_fixed::dot`. One truncation per output element (5 elements
/// per output, 1 round), whatever `len`.
pub async fn inner_products(
    ctx: &Ctx,
    x: &Shared,
    y: &Shared,
    len: usize,
) -> Result<Shared, MpcError> {
    check_groups("inner_products", x, y, len)?;
    ctx.count(|c| c.mults += x.len() as u64);
    Ok(layer(
        ctx,
        Vec::new(),
        local_dots(x, y, len),
        vtwin_fixed::FRAC_BITS,
    )
    .await?
    .1)
}

/// Several [`inner_products`] with their own group lengths in one layer (one truncation per
/// output, 1 round for all): `parts[i] = (x, y, len)`; outputs concatenated in order.
pub async fn inner_products_many(
    ctx: &Ctx,
    parts: &[(&Shared, &Shared, usize)],
) -> Result<Shared, MpcError> {
    let mut dots = Vec::new();
    for &(x, y, len) in parts {
        check_groups("inner_products_many", x, y, len)?;
        ctx.count(|c| c.mults += x.len() as u64);
        dots.extend(local_dots(x, y, len));
    }
    Ok(layer(ctx, Vec::new(), dots, vtwin_fixed::FRAC_BITS)
        .await?
        .1)
}

/// Inner products without truncation (integer coefficients, one-hot selections). 1 round,
/// one reshare per output.
pub async fn inner_products_int(
    ctx: &Ctx,
    x: &Shared,
    y: &Shared,
    len: usize,
) -> Result<Shared, MpcError> {
    check_groups("inner_products_int", x, y, len)?;
    ctx.count(|c| c.mults += x.len() as u64);
    Ok(layer(ctx, local_dots(x, y, len), Vec::new(), 0).await?.0)
}

#[cfg(test)]
mod tests {
    //! Privacy of the layer against one curious node, checked on the values themselves with
    //! the seeds in hand (the statistical tests in `tests/privacy.rs` look at one element's
    //! distribution at a time and miss correlations between elements, streams or layers).

    use std::collections::{BTreeMap, HashSet, VecDeque};

    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    use super::*;
    use crate::keys::simulated_seeds;
    use crate::message::SessionId;
    use crate::prg;
    use crate::runtime::{Node, PrgKey};
    use crate::view_search::first_found;

    const N: usize = 4;
    const D: u32 = 32;
    const S: SessionId = SessionId([7; 16]);
    const SEED: u64 = 21;

    /// A layer of the test program: a truncated product of two sharings, or the truncation
    /// of one.
    enum Kind {
        Mul(usize, usize),
        Trunc(usize),
    }
    const LAYERS: [Kind; 5] = [
        Kind::Mul(0, 1),
        Kind::Mul(2, 3),
        Kind::Trunc(4),
        Kind::Mul(0, 5),
        Kind::Trunc(5),
    ];

    type Triple = [Vec<u128>; 3];
    type Log = Vec<(PrgKey, u64, u64)>;
    /// Per round: (sender, payload) received from other nodes.
    type View = BTreeMap<u64, Vec<(usize, Vec<u128>)>>;

    fn random(rng: &mut ChaCha20Rng) -> Vec<u128> {
        (0..N)
            .map(|_| (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64()))
            .collect()
    }

    fn shared(t: &Triple, i: usize) -> Shared {
        Shared {
            own: t[i].clone(),
            next: t[(i + 1) % 3].clone(),
        }
    }

    struct Run {
        inputs: Vec<Triple>,
        /// Per node, per layer: each node's output sharing.
        outputs: [Vec<Shared>; 3],
        /// Per node, its PRG draws (seed, stream, round).
        logs: [Log; 3],
        /// Per node, per round: (sender, payload) received from other nodes.
        views: [View; 3],
        /// Node 0's truncation masks, per layer.
        masks: Vec<Vec<u128>>,
    }

    fn run() -> Run {
        let mut rng = ChaCha20Rng::seed_from_u64(SEED);
        let inputs: Vec<Triple> = (0..6)
            .map(|_| [random(&mut rng), random(&mut rng), random(&mut rng)])
            .collect();
        let seeds = simulated_seeds(&mut ChaCha20Rng::seed_from_u64(SEED), S).expect("seeds");
        let mut nodes: Vec<Node<(Vec<Shared>, Log)>> = seeds
            .into_iter()
            .zip(NodeId::ALL)
            .map(|(s, id)| {
                let inputs = inputs.clone();
                Node::new(id, S, s, 0, move |ctx| async move {
                    let i = ctx.id().index();
                    let mut out = Vec::new();
                    for kind in LAYERS {
                        out.push(match kind {
                            Kind::Mul(a, b) => {
                                let (x, y) = (shared(&inputs[a], i), shared(&inputs[b], i));
                                mul_trunc(&ctx, &x, &y, D).await?
                            }
                            Kind::Trunc(a) => truncate(&ctx, &shared(&inputs[a], i), D).await?,
                        });
                    }
                    Ok((out, ctx.prg_log()))
                })
            })
            .collect();
        nodes[0].record_truncation_masks();
        let mut queue = VecDeque::new();
        for n in nodes.iter_mut() {
            queue.extend(n.start().expect("start"));
        }
        let mut views: [View; 3] = Default::default();
        while let Some(m) = queue.pop_front() {
            let (Peer::Node(to), Peer::Node(from)) = (m.to, m.from) else {
                panic!("only nodes talk here");
            };
            views[to.index()]
                .entry(m.step)
                .or_default()
                .push((from.index(), m.payload.clone()));
            queue.extend(nodes[to.index()].handle(m).expect("handle"));
        }
        let masks = nodes[0].truncation_masks();
        let mut done = nodes
            .into_iter()
            .map(|mut n| n.take_output().expect("done"));
        let mut next = || done.next().expect("three nodes");
        let ((o0, l0), (o1, l1), (o2, l2)) = (next(), next(), next());
        for v in views.iter_mut() {
            for msgs in v.values_mut() {
                msgs.sort();
            }
        }
        Run {
            inputs,
            outputs: [o0, o1, o2],
            logs: [l0, l1, l2],
            views,
            masks,
        }
    }

    /// Node i's additive share z_i of layer `l`'s input.
    fn z(run: &Run, l: usize, i: usize) -> Vec<u128> {
        match LAYERS[l] {
            Kind::Mul(a, b) => {
                local_products(&shared(&run.inputs[a], i), &shared(&run.inputs[b], i))
            }
            Kind::Trunc(a) => run.inputs[a][i].clone(),
        }
    }

    /// The secrets node j must not learn in layer `l`, at position k: X, the truncated
    /// output y, and the other nodes' additive shares it does not hold (in a `truncate`
    /// layer node j holds z_j and z_{j+1}, its two input shares).
    fn secrets(run: &Run, l: usize, j: usize, k: usize) -> Vec<(&'static str, u128)> {
        let zs: Vec<u128> = (0..3).map(|i| z(run, l, i)[k]).collect();
        let x = zs.iter().fold(0u128, |s, v| s.wrapping_add(*v));
        let y = (0..3).fold(0u128, |s, i| s.wrapping_add(run.outputs[i][l].own[k]));
        let mut out = vec![("X", x), ("y", y)];
        for (i, name) in [(0, "z_0"), (1, "z_1"), (2, "z_2")] {
            let held = i == j || (matches!(LAYERS[l], Kind::Trunc(_)) && i == (j + 1) % 3);
            if !held {
                out.push((name, zs[i]));
            }
        }
        out
    }

    /// Every PRG output node j can compute at position k, on every stream up to `streams`,
    /// with its negation and 0.
    fn computable(j: usize, streams: u64, k: usize) -> HashSet<u128> {
        let seeds = simulated_seeds(&mut ChaCha20Rng::seed_from_u64(SEED), S).expect("seeds");
        crate::view_search::computable(&seeds[j], streams, N, k..k + 1)
    }

    /// Streams to try: every allocated one and a few beyond (a draw on a stream never
    /// allocated fails `streams_are_fresh_per_draw_and_never_shared_across_layers`).
    fn max_stream(run: &Run) -> u64 {
        let allocated = run.logs.iter().flatten().filter(|e| e.2 != u64::MAX);
        allocated.map(|e| e.1).max().unwrap_or(0) + 8
    }

    #[test]
    fn streams_are_fresh_per_draw_and_never_shared_across_layers() {
        let run = run();
        let mut by_layer: BTreeMap<u64, HashSet<u64>> = BTreeMap::new();
        for (i, log) in run.logs.iter().enumerate() {
            let mut seen = HashSet::new();
            for &(key, stream, round) in log {
                assert_ne!(
                    round,
                    u64::MAX,
                    "node {i}: stream {stream} was never allocated"
                );
                assert!(
                    seen.insert((key, stream)),
                    "node {i} draws {key:?} on stream {stream} twice (round {round})"
                );
                by_layer.entry(round).or_default().insert(stream);
            }
        }
        assert_eq!(by_layer.len(), LAYERS.len());
        let layers: Vec<&HashSet<u64>> = by_layer.values().collect();
        for (a, sa) in layers.iter().enumerate() {
            // zero-sharing, alpha, beta, t_0, r: five distinct streams per layer.
            assert_eq!(sa.len(), 5, "layer {a} streams {sa:?}");
            for (b, sb) in layers.iter().enumerate().skip(a + 1) {
                assert!(sa.is_disjoint(sb), "layers {a} and {b} share a stream");
            }
        }
    }

    #[test]
    fn the_mask_comes_from_node_0s_private_seed_alone() {
        let run = run();
        let seeds = simulated_seeds(&mut ChaCha20Rng::seed_from_u64(SEED), S).expect("seeds");
        let streams = max_stream(&run);
        assert_eq!(run.masks.len(), LAYERS.len());
        let rounds: Vec<u64> = run.views[1].keys().copied().collect();
        for (l, r) in run.masks.iter().enumerate() {
            // Drawn on node 0's private seed in this layer, and that draw is r.
            let private: Vec<u64> = run.logs[0]
                .iter()
                .filter(|e| e.0 == PrgKey::Private(0) && e.2 == rounds[l])
                .map(|e| e.1)
                .collect();
            assert_eq!(private.len(), 1, "layer {l}: one private draw");
            assert_eq!(
                *r,
                prg::expand(&seeds[0].private, private[0], N),
                "layer {l}"
            );
            // Equal to nothing nodes 1 or 2 can compute: no pair seed's output on any
            // stream, nor their own private seeds'.
            for key in [
                &seeds[0].prev,
                &seeds[0].next,
                &seeds[1].next,
                &seeds[1].private,
                &seeds[2].private,
            ] {
                for stream in 0..=streams {
                    let g = prg::expand(key, stream, N);
                    for k in 0..N {
                        assert_ne!(r[k], g[k], "layer {l}: r is a PRG output others compute");
                    }
                }
            }
        }
    }

    /// What node j holds in layer `l` at position k besides what it receives: its additive
    /// share, its other input share in a `truncate` layer, and its two output shares.
    fn held(run: &Run, l: usize, j: usize, k: usize) -> Vec<u128> {
        let mut out = vec![z(run, l, j)[k]];
        if let Kind::Trunc(a) = LAYERS[l] {
            out.push(run.inputs[a][(j + 1) % 3][k]);
        }
        out.push(run.outputs[j][l].own[k]);
        out.push(run.outputs[j][l].next[k]);
        out
    }

    /// Every element node j received in layer `l` (each message cut into its parts of N), at
    /// position k, named by (sender, part).
    fn received(run: &Run, l: usize, j: usize, k: usize) -> Vec<((usize, usize), u128)> {
        let round = *run.views[1].keys().nth(l).expect("round");
        run.views[j]
            .get(&round)
            .map(|msgs| {
                msgs.iter()
                    .flat_map(|(from, p)| {
                        p.chunks(N)
                            .enumerate()
                            .map(move |(part, c)| ((*from, part), c[k]))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn no_node_computes_a_secret_from_its_view() {
        let run = run();
        let streams = max_stream(&run);
        for j in 0..3 {
            for k in 0..N {
                let g = computable(j, streams, k);
                for l in 0..LAYERS.len() {
                    // Every combination with coefficients -1, 0, 1 of what node j received
                    // and holds, minus at most one PRG output it can compute.
                    let mut basis: Vec<u128> =
                        received(&run, l, j, k).into_iter().map(|e| e.1).collect();
                    basis.extend(held(&run, l, j, k));
                    let secrets = secrets(&run, l, j, k);
                    if let Some(name) = first_found(&basis, &g, &secrets) {
                        panic!("node {j}, layer {l}, position {k}: computes {name}");
                    }
                }
                // Differences of the same received part across two layers.
                for l in 0..LAYERS.len() {
                    for m in l + 1..LAYERS.len() {
                        let (a, b) = (received(&run, l, j, k), received(&run, m, j, k));
                        let (sa, sb) = (secrets(&run, l, j, k), secrets(&run, m, j, k));
                        for (part, va) in &a {
                            let Some((_, vb)) = b.iter().find(|e| e.0 == *part) else {
                                continue;
                            };
                            let d = va.wrapping_sub(*vb);
                            for (name, x) in &sa {
                                let Some((_, y)) = sb.iter().find(|e| e.0 == *name) else {
                                    continue;
                                };
                                let t = x.wrapping_sub(*y);
                                assert!(
                                    d != t && d != t.wrapping_neg(),
                                    "node {j}, layers {l} and {m}, part {part:?}: {name} difference"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
