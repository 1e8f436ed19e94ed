//! Multiplication, truncation and inner products: one layer of the arithmetic circuit.
//!
//! Local step: for `z = x y`, node i computes the 3-out-of-3 additive share
//! `z_i = x_i y_i + x_i y_{i+1} + x_{i+1} y_i` (an inner product sums these over its terms,
//! so it costs what one product costs). Then, in one layer:
//!
//! - **Reshare** (products kept at full precision, e.g. integers or bits): node i sends
//!   `z_i + a_i` to node i-1, with `a` a zero-sharing. 1 round, 1 element per node.
//! - **Probabilistic truncation** (the fixed-point products), `trunc_prob` of vtwin-fixed with
//!   a mask `r` uniform on Z_2^128, known to nodes 0 and 1 (from their pair seed `k_1`),
//!   node 2 opening the masked value:
//!   - round A: node 0 sends `z_0 + m` and node 1 sends `z_1 + r - m` to node 2 (`m` from
//!     `k_1` hides the split); node 2 computes `c = z_0 + z_1 + z_2 + r = X + r`, uniform;
//!   - node 2 computes `a = c >> d`, nodes 0 and 1 `b = r >> d` (logical shifts);
//!   - round B: node 2 sends `a - rho` to node 0 (`rho` from `k_2`, nodes 1 and 2), giving
//!     the replicated sharing `(y_0, y_1, y_2) = (a - rho, -b, rho)` of
//!     `(c >> d) - (r >> d) = trunc_prob(X, r, d)`.
//!
//!   2 rounds, 3 elements per truncated output. The result equals
//!   `vtwin_fixed::trunc_prob(X, r, d)` bit for bit for every ring element X, so
//!   `vtwin_fixed::Probabilistic` fed the same masks replays the protocol exactly: error in
//!   (-1, 1) ulp, wrap with probability |X| / 2^128 (< 2^-41 for |X| < 2^87).
//!   Privacy: node 2 sees `(z_0 + m, c)`, uniform; node 0 sees `a - rho`, uniform; node 1
//!   receives nothing.
//!
//! Both kinds share round A, so a layer mixing them costs 2 rounds.

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
/// shares are truncated by `d` bits. Returns the two replicated sharings. 1 round if `trunc`
/// is empty, else 2.
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
    let s_m = ctx.next_stream();
    let s_r = ctx.next_stream();
    let s_rho = ctx.next_stream();
    let zero = zip(
        &ctx.prg_prev(s_zero, np),
        &ctx.prg_next(s_zero, np),
        u128::wrapping_sub,
    );
    let reshared = zip(&plain, &zero, u128::wrapping_add);
    ctx.count(|c| c.truncations += nt as u64);

    // Round A. Empty messages are not sent.
    let mut sends: Vec<(Peer, Vec<u128>)> = Vec::new();
    let mut recvs: Vec<(NodeId, usize)> = Vec::new();
    let mut r_mask = Vec::new();
    match me.index() {
        0 => {
            let m = ctx.prg_key(1, s_m, nt).unwrap_or_default();
            r_mask = ctx.prg_key(1, s_r, nt).unwrap_or_default();
            if nt > 0 {
                ctx.log_masks(&r_mask);
            }
            let mut p = reshared.clone();
            p.extend(zip(&trunc, &m, u128::wrapping_add));
            if !p.is_empty() {
                sends.push((Peer::Node(N2), p));
            }
            if np > 0 {
                recvs.push((N1, np));
            }
        }
        1 => {
            let m = ctx.prg_key(1, s_m, nt).unwrap_or_default();
            r_mask = ctx.prg_key(1, s_r, nt).unwrap_or_default();
            if np > 0 {
                sends.push((Peer::Node(N0), reshared.clone()));
                recvs.push((N2, np));
            }
            if nt > 0 {
                let t: Vec<u128> = (0..nt)
                    .map(|k| trunc[k].wrapping_add(r_mask[k]).wrapping_sub(m[k]))
                    .collect();
                sends.push((Peer::Node(N2), t));
            }
        }
        _ => {
            if np > 0 {
                sends.push((Peer::Node(N1), reshared.clone()));
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

    // Round B.
    let truncated = match me.index() {
        0 => {
            let got = ctx.exchange(Vec::new(), &[(N2, nt)]).await?;
            let y0 = got.into_iter().next().unwrap_or_default();
            let y1 = r_mask.iter().map(|r| (r >> d).wrapping_neg()).collect();
            Shared { own: y0, next: y1 }
        }
        1 => {
            ctx.exchange(Vec::new(), &[]).await?;
            let rho = ctx.prg_key(2, s_rho, nt).unwrap_or_default();
            let y1 = r_mask.iter().map(|r| (r >> d).wrapping_neg()).collect();
            Shared { own: y1, next: rho }
        }
        _ => {
            let from0 = &first[np..];
            let from1 = got.get(1).map(Vec::as_slice).unwrap_or(&[]);
            let rho = ctx.prg_key(2, s_rho, nt).unwrap_or_default();
            let y0: Vec<u128> = (0..nt)
                .map(|k| {
                    let c = from0[k].wrapping_add(from1[k]).wrapping_add(trunc[k]);
                    (c >> d).wrapping_sub(rho[k])
                })
                .collect();
            ctx.exchange(vec![(Peer::Node(N0), y0.clone())], &[])
                .await?;
            Shared { own: rho, next: y0 }
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
/// probabilistic truncation. 2 rounds; 3 elements in all per product.
pub async fn mul_trunc(ctx: &Ctx, x: &Shared, y: &Shared, d: u32) -> Result<Shared, MpcError> {
    check_len("mul_trunc", x.len(), y.len())?;
    ctx.count(|c| c.mults += x.len() as u64);
    Ok(layer(ctx, Vec::new(), local_products(x, y), d).await?.1)
}

/// `x * y` and `trunc(u * v, d)` in one layer (2 rounds).
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
/// constant). 2 rounds.
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
/// the sum: the twin of `vtwin_fixed::dot`. One reshare per output element (3 elements per
/// output, 2 rounds), whatever `len`.
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

/// Several [`inner_products`] with their own group lengths in one layer (one reshare per
/// output, 2 rounds for all): `parts[i] = (x, y, len)`; outputs concatenated in order.
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
