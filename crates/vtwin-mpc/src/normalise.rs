//! Range normalisation by the most significant bit: from a positive shared `x`, the shared
//! powers of two that reciprocal and inverse square root need (vtwin-fixed `normalise`).
//!
//! 1. [`msb_one_hot_and_signs`]: the XOR-shared one-hot word `h` with `h_e = 1` iff
//!    `e = msb(x mod 2^window)`, from the adder of `x`'s summands and a suffix-AND riding in
//!    its levels (`3 + ceil(log2 window)` rounds).
//! 2. Every quantity needed is `sum_e h_e c[e]` for a public table `c`. The one-hot index is
//!    split as `e = 8 a + b`: the one-hot vectors `A` (a in `0..ceil(window/8)`) and `B`
//!    (b in `0..8`) are XOR folds of `h` (local). Their bits are injected ([`inject`], 1
//!    round), and then `sum_e h_e c[e] = sum_a A_a (sum_b B_b c[8a+b])`: the inner sum is
//!    local (public coefficients), the outer one is an inner product of length
//!    `ceil(window/8)` with one reshare per output (1 round). A zero `x mod 2^window` gives
//!    all zeros, as in the reference.
//!
//! Cost for `window` w and T tables: `3 + ceil(log2 w)` rounds for the one-hot word (it was
//! `2 + 2 ceil(log2 w)` as A2B then a prefix-OR, before 2026-11-24), 2 rounds for the
//! conversion (3 before the one-round injection of 2026-11-29); `ceil(w/8) + 8` bit
//! injections (6 elements each in all) and T outputs per value.
//!
//! [`scale_back`] undoes the normalisation once the mantissa is computed.

use vtwin_fixed::FRAC_BITS;

use crate::binary::{inject, msb_one_hot_and_signs};
use crate::error::MpcError;
use crate::multiply::{inner_products_int, mul_and_mul_trunc};
use crate::runtime::Ctx;
use crate::share::{BitShared, Shared};

fn parity(w: u128) -> u128 {
    u128::from(w.count_ones() & 1)
}

/// The one-hot MSB word of `x mod 2^window` ([`msb_one_hot_and_signs`]). `3 + L` rounds.
pub(crate) async fn msb_one_hot(ctx: &Ctx, x: &Shared, window: u32) -> Result<BitShared, MpcError> {
    Ok(msb_one_hot_and_signs(ctx, x, window, &Shared::default())
        .await?
        .0)
}

/// `sum_e h_e table[e]` for each table and each one-hot word of `h` (window bits), plus the
/// arithmetic injection of bit 0 of each word of `extra` (batched into the same rounds).
/// Returns (one sharing per table, the injected extra bits). 2 rounds.
pub(crate) async fn select_from_one_hot(
    ctx: &Ctx,
    h: &BitShared,
    window: u32,
    tables: &[&[u128]],
    extra: &BitShared,
) -> Result<(Vec<Shared>, Shared), MpcError> {
    let n = h.len();
    let na = window.div_ceil(8) as usize;
    let per = na + 8;
    // Bits to inject, one per word: for each value, A_0..A_{na-1}, B_0..B_7 (written in
    // place: a vector per value was a measurable share of this layer's time).
    let fold = |words: &[u128]| -> Vec<u128> {
        let mut out = Vec::with_capacity(words.len() * per);
        for &w in words {
            let mut byte = 0u128;
            for a in 0..na {
                let part = (w >> (8 * a)) & 0xff;
                out.push(parity(part));
                byte ^= part;
            }
            out.extend((0..8).map(|b| (byte >> b) & 1));
        }
        out
    };
    let bits = BitShared {
        own: fold(&h.own),
        next: fold(&h.next),
    };
    let all = BitShared::concat(&[&bits, extra]);
    let injected = inject(ctx, &all).await?;
    let ab = injected.slice(0..n * per);
    let extra_arith = injected.slice(n * per..injected.len());

    // For each table: x = A (per value), y = L_a = sum_b B_b table[8a+b] (local).
    let mut xs = Vec::with_capacity(tables.len());
    let mut ys = Vec::with_capacity(tables.len());
    for table in tables {
        // The table's public coefficients by byte, zeros left out (scale tables are mostly
        // zero in any one byte): the same sums with fewer ring products.
        let coefs: Vec<Vec<(usize, u128)>> = (0..na)
            .map(|a| {
                (0..8)
                    .filter_map(|b| {
                        let c = table.get(8 * a + b).copied().unwrap_or(0);
                        (c != 0).then_some((na + b, c))
                    })
                    .collect()
            })
            .collect();
        let mut y_own = Vec::with_capacity(n * na);
        let mut y_next = Vec::with_capacity(n * na);
        let mut x_own = Vec::with_capacity(n * na);
        let mut x_next = Vec::with_capacity(n * na);
        for v in 0..n {
            let base = v * per;
            for (a, byte) in coefs.iter().enumerate() {
                x_own.push(ab.own[base + a]);
                x_next.push(ab.next[base + a]);
                let (mut so, mut sn) = (0u128, 0u128);
                for &(i, c) in byte {
                    so = so.wrapping_add(ab.own[base + i].wrapping_mul(c));
                    sn = sn.wrapping_add(ab.next[base + i].wrapping_mul(c));
                }
                y_own.push(so);
                y_next.push(sn);
            }
        }
        xs.push(Shared {
            own: x_own,
            next: x_next,
        });
        ys.push(Shared {
            own: y_own,
            next: y_next,
        });
    }
    let x = Shared::concat(&xs.iter().collect::<Vec<_>>());
    let y = Shared::concat(&ys.iter().collect::<Vec<_>>());
    let out = inner_products_int(ctx, &x, &y, na).await?;
    let per_table = (0..tables.len())
        .map(|t| out.slice(t * n..(t + 1) * n))
        .collect();
    Ok((per_table, extra_arith))
}

/// `z 2^k` for the secret scale `2^k` held as two shared one-hot-derived terms, exactly one
/// of them non-zero (`scale_int = 2^k` when k >= 0, `scale_frac = 2^(32+k)` when k < 0):
/// `z scale_int + trunc(z scale_frac, 32)`, both formed since the nodes cannot branch on
/// which is live (vtwin-fixed `normalise::scale_back`). 1 round, 1 truncation per value.
pub(crate) async fn scale_back(
    ctx: &Ctx,
    z: &Shared,
    scale_int: &Shared,
    scale_frac: &Shared,
) -> Result<Shared, MpcError> {
    let (hi, lo) = mul_and_mul_trunc(ctx, (z, scale_int), (z, scale_frac), FRAC_BITS).await?;
    hi.add(&lo)
}
