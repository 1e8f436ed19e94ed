//! Binary circuits on XOR-shared packed words: AND gates, arithmetic-to-binary conversion
//! with a log-depth (Kogge-Stone) adder, the sign bit, the one-hot most significant bit of a
//! sum (fused into the adder), and bit injection back to arithmetic shares.
//!
//! Every gate layer works on whole 128-bit words (one element per value), so a layer of
//! AND gates costs one round and one ring element per word per node, whatever the width.

use crate::error::MpcError;
use crate::message::{NodeId, Peer};
use crate::multiply::mul;
use crate::runtime::Ctx;
use crate::share::{check_len, zip, BitShared, Shared};

/// Bitwise AND of XOR-shared words: node i computes
/// `z_i = a_i b_i ^ a_i b_{i+1} ^ a_{i+1} b_i ^ zero_i` and sends it to node i-1.
/// 1 round; 1 word sent per node per AND word.
pub async fn and(ctx: &Ctx, a: &BitShared, b: &BitShared) -> Result<BitShared, MpcError> {
    check_len("and", a.len(), b.len())?;
    let n = a.len();
    let s = ctx.next_stream();
    let zero = zip(&ctx.prg_prev(s, n), &ctx.prg_next(s, n), |x, y| x ^ y);
    let z: Vec<u128> = (0..n)
        .map(|k| (a.own[k] & b.own[k]) ^ (a.own[k] & b.next[k]) ^ (a.next[k] & b.own[k]) ^ zero[k])
        .collect();
    ctx.count(|c| c.and_words += n as u64);
    let me = ctx.id();
    let got = ctx
        .exchange(vec![(Peer::Node(me.prev()), z.clone())], &[(me.next(), n)])
        .await?;
    Ok(BitShared {
        own: z,
        next: got.into_iter().next().unwrap_or_default(),
    })
}

/// The binary sharing of the summand `x_j` of an arithmetic sharing (known to its two holders).
fn summand_bits(me: NodeId, x: &Shared, j: usize) -> BitShared {
    let i = me.index();
    let mine = if i == j {
        x.own.clone()
    } else if (i + 1) % 3 == j {
        x.next.clone()
    } else {
        vec![0; x.len()]
    };
    BitShared::known_at(me, j, &mine)
}

/// The carry-save layer and the generate layer of an adder for `x = x_0 + x_1 + x_2`:
/// returns `(p, g)` with `p = s ^ c`, `g = s & c` for the two operands `s + c = x`
/// (mod 2^128) left by the carry-save layer (`carry = maj(x_0, x_1, x_2)`, `c = carry << 1`).
/// 2 rounds, 2 AND words per value.
async fn carry_save_generate(ctx: &Ctx, x: &Shared) -> Result<(BitShared, BitShared), MpcError> {
    let me = ctx.id();
    let a = summand_bits(me, x, 0);
    let b = summand_bits(me, x, 1);
    let c = summand_bits(me, x, 2);
    let carry = and(ctx, &a.xor(&c), &b.xor(&c)).await?.xor(&c);
    let sum = a.xor(&b).xor(&c);
    let carry = carry.map(|w| w << 1);
    let g = and(ctx, &sum, &carry).await?;
    Ok((sum.xor(&carry), g))
}

/// `levels` Kogge-Stone prefix levels from `(p, g)`: the carry words (bit j = the carry into
/// bit j) of every value, exact below position `2^levels + 1`. Riding in the same AND layers,
/// a suffix-AND from the top on `q` (bit j becomes the AND of the `2^levels` bits from j
/// up, with ones beyond bit 127). Per level: 1 round; 2 AND words per value (1 on the last) plus 1
/// per word of `q`.
async fn prefix_levels(
    ctx: &Ctx,
    p: &BitShared,
    mut g: BitShared,
    mut q: BitShared,
    levels: u32,
) -> Result<(BitShared, BitShared), MpcError> {
    let me = ctx.id();
    let n = p.len();
    let nq = q.len();
    let mut p = p.clone();
    for l in 0..levels {
        let k = 1u32 << l;
        let g_shift = g.map(|w| w << k);
        // The vacated top bits of q >> k are 0 in every share: setting them is public.
        let q_shift = q.map(|w| w >> k).xor_public(me, !(u128::MAX >> k));
        let last = l + 1 == levels;
        let (lhs, rhs) = if last {
            (
                BitShared::concat(&[&p, &q]),
                BitShared::concat(&[&g_shift, &q_shift]),
            )
        } else {
            let p_shift = p.map(|w| w << k);
            (
                BitShared::concat(&[&p, &p, &q]),
                BitShared::concat(&[&g_shift, &p_shift, &q_shift]),
            )
        };
        let r = and(ctx, &lhs, &rhs).await?;
        g = g.xor(&r.slice(0..n));
        if !last {
            p = r.slice(n..2 * n);
        }
        q = r.slice(r.len() - nq..r.len());
    }
    Ok((g.map(|w| w << 1), q))
}

/// Arithmetic-to-binary: the XOR sharing of the bits of `x mod 2^128`, correct in bit
/// positions below `2^levels + 1` (levels = 7 gives all 128 bits).
///
/// A carry-save layer (one AND layer: `carry = maj(x_0, x_1, x_2)`) reduces the three
/// summands to two, then a Kogge-Stone adder: one AND layer for generate, then `levels`
/// layers (2 AND words each, 1 on the last). Rounds: `2 + levels`; AND words per value:
/// `2 + 2 levels - 1`.
pub async fn a2b(ctx: &Ctx, x: &Shared, levels: u32) -> Result<BitShared, MpcError> {
    let (p, g) = carry_save_generate(ctx, x).await?;
    let (carries, _) = prefix_levels(ctx, &p, g, BitShared::default(), levels).await?;
    Ok(p.xor(&carries))
}

/// The sign bit of `x` (two's complement), in bit 0 of each word. 9 rounds (A2B with 7
/// levels); exact.
pub async fn sign_bit(ctx: &Ctx, x: &Shared) -> Result<BitShared, MpcError> {
    Ok(a2b(ctx, x, 7).await?.map(|w| w >> 127))
}

/// The one-hot word of the most significant set bit of `x mod 2^window` (window in
/// `1..=128`) for each value of `x` (zero when `x mod 2^window = 0`), and, in the same rounds, the sign bit (bit 0) of
/// each value of `signed` (two's complement, exact).
///
/// No prefix-OR after the adder: with `s + c = x` from the carry-save layer, `p = s ^ c`,
/// `g = s & c` and `z = !(s | c) = !(p ^ g)`, the sum's bits `j..window` are all zero iff its
/// bit `x_j` is 0 and `e_i = p_(i+1) ^ z_i` is 1 for every `i` in `j..window-1` (given sum bit
/// i is 0, sum bit i+1 is `p_(i+1) ^ !z_i`: the carry into i+1 is `g_i | p_i`). So
/// `T_j = [x mod 2^window < 2^j] = !x_j & Q_j` with `Q` the suffix-AND of `e`, which rides in
/// the Kogge-Stone levels, and `h_j = T_(j+1) ^ T_j` (`T_window = 1`). Rounds:
/// `2 + L + 1` with `L = ceil(log2 window)` (7 if `signed` is not empty), against
/// `2 + 2L` for A2B then a prefix-OR; AND words per value: `3 L + 2` (one more than
/// before).
pub async fn msb_one_hot_and_signs(
    ctx: &Ctx,
    x: &Shared,
    window: u32,
    signed: &Shared,
) -> Result<(BitShared, BitShared), MpcError> {
    assert!(
        (1..=128).contains(&window),
        "window {window} not in 1..=128"
    );
    let me = ctx.id();
    let n = x.len();
    let mask = low_mask(window);
    let mut levels = levels_for(window);
    if !signed.is_empty() {
        levels = levels.max(7);
    }
    let (p, g) = carry_save_generate(ctx, &Shared::concat(&[x, signed])).await?;
    let (px, gx) = (p.slice(0..n), g.slice(0..n));
    let z = px.xor(&gx).xor_public(me, u128::MAX);
    // e_i for i < window - 1, ones above (neutral for the AND).
    let top = low_mask(window - 1);
    let e = px
        .map(|w| w >> 1)
        .xor(&z)
        .map(|w| w & top)
        .xor_public(me, !top);
    let (carries, q) = prefix_levels(ctx, &p, g, e, levels).await?;
    let bits = p.xor(&carries);
    let not_x = bits.slice(0..n).xor_public(me, u128::MAX);
    let t = and(ctx, &not_x, &q).await?.map(|w| w & mask);
    // h_j = T_(j+1) ^ T_j, with T_window = 1.
    let h = t
        .map(|w| (w >> 1) ^ w)
        .xor_public(me, 1u128 << (window - 1))
        .map(|w| w & mask);
    let signs = bits.slice(n..bits.len()).map(|w| w >> 127);
    Ok((h, signs))
}

/// The low `window` bits set (all for 128).
pub(crate) const fn low_mask(window: u32) -> u128 {
    if window >= 128 {
        u128::MAX
    } else {
        (1u128 << window) - 1
    }
}

/// Adder levels for a window of `w` bits: `ceil(log2 w)`.
pub(crate) const fn levels_for(w: u32) -> u32 {
    32 - (w - 1).leading_zeros()
}

/// Bit injection: the arithmetic sharing (0 or 1 in Z_2^128) of bit 0 of each XOR-shared
/// word. With `b = b_0 ^ b_1 ^ b_2` and each `b_j` trivially arithmetic-shared:
/// `t = b_0 + b_1 - 2 b_0 b_1`, `b = t + b_2 - 2 t b_2`. 2 rounds, 2 products per bit.
pub async fn inject(ctx: &Ctx, bits: &BitShared) -> Result<Shared, MpcError> {
    let me = ctx.id();
    let lowest = bits.map(|w| w & 1);
    let as_arith = |j: usize| {
        let s = summand_bits(
            me,
            &Shared {
                own: lowest.own.clone(),
                next: lowest.next.clone(),
            },
            j,
        );
        Shared {
            own: s.own,
            next: s.next,
        }
    };
    let x0 = as_arith(0);
    let x1 = as_arith(1);
    let x2 = as_arith(2);
    let t = x0.add(&x1)?.sub(&mul(ctx, &x0, &x1).await?.mul_public(2))?;
    t.add(&x2)?.sub(&mul(ctx, &t, &x2).await?.mul_public(2))
}
