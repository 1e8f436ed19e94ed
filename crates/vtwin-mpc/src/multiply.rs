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
//! - node 2 receives `(z_0 + r - alpha, z_1 + alpha)` besides the reshare: `alpha` (from
//!   `k_1`) and `r` are unknown and uniform to it, `(r, alpha) -> view` is a bijection, so
//!   the view is uniform. The `t_0`, `beta` it knows are independent of `r` and X.
//! - node 0 receives nothing but the reshare from node 1, masked by the zero-sharing.
//! - reshares: `z_i + a_i` is masked by `F(k_{i+1}, .)`, which node i-1 does not hold.
//!
//! Each node's output pair is uniform: node 0's is a function of `(r, t_0)` only
//! (independent of X), node 1's and node 2's contain `t_1` or `t_0`, unknown to them.
//! Checked statistically (and for cleartext values) in `tests/privacy.rs`.

use crate::error::MpcError;
use crate::message::{NodeId, Peer};
use crate::runtime::Ctx;
use crate::share::{check_len, zip, Shared};

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
    let zero = zip(
        &ctx.prg_prev(s_zero, np),
        &ctx.prg_next(s_zero, np),
        u128::wrapping_sub,
    );
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
            let r = ctx.prg_private(s_r, nt);
            let alpha = ctx.prg_key(1, s_alpha, nt).unwrap_or_default();
            let beta = ctx.prg_key(0, s_beta, nt).unwrap_or_default();
            let t0 = ctx.prg_key(0, s_t0, nt).unwrap_or_default();
            if nt > 0 {
                ctx.log_masks(&r);
            }
            let masked: Vec<u128> = zip(&trunc, &r, u128::wrapping_add);
            let t1: Vec<u128> = zip(&r, &t0, |r, t0| (r >> d).wrapping_sub(t0));
            let mut to1 = zip(&masked, &beta, u128::wrapping_sub);
            to1.extend_from_slice(&t1);
            let mut to2 = reshared.clone();
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
            let alpha = ctx.prg_key(1, s_alpha, nt).unwrap_or_default();
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
            let beta = ctx.prg_key(0, s_beta, nt).unwrap_or_default();
            let mut to1 = reshared.clone();
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
            let t0 = ctx.prg_key(0, s_t0, nt).unwrap_or_default();
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
