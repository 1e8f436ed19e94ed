//! Binary circuits on XOR-shared packed words: AND gates, arithmetic-to-binary conversion
//! with a log-depth (Kogge-Stone) adder, the sign bit, the one-hot most significant bit, and
//! bit injection back to arithmetic shares.
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

/// Arithmetic-to-binary: the XOR sharing of the bits of `x mod 2^128`, correct in bit
/// positions below `2^levels + 1` (levels = 7 gives all 128 bits).
///
/// A carry-save layer (one AND layer: `carry = maj(x_0, x_1, x_2)`) reduces the three
/// summands to two, then a Kogge-Stone adder: one AND layer for generate, then `levels`
/// layers (2 AND words each, 1 on the last). Rounds: `2 + levels`; AND words per value:
/// `2 + 2 levels - 1`.
pub async fn a2b(ctx: &Ctx, x: &Shared, levels: u32) -> Result<BitShared, MpcError> {
    let me = ctx.id();
    let a = summand_bits(me, x, 0);
    let b = summand_bits(me, x, 1);
    let c = summand_bits(me, x, 2);
    let ac = a.xor(&c);
    let bc = b.xor(&c);
    let carry = and(ctx, &ac, &bc).await?.xor(&c);
    let sum = a.xor(&b).xor(&c);
    let carry = carry.map(|w| w << 1);
    let p0 = sum.xor(&carry);
    let mut g = and(ctx, &sum, &carry).await?;
    let mut p = p0.clone();
    let n = x.len();
    for l in 0..levels {
        let k = 1u32 << l;
        let g_shift = g.map(|w| w << k);
        if l + 1 == levels {
            g = g.xor(&and(ctx, &p, &g_shift).await?);
        } else {
            let p_shift = p.map(|w| w << k);
            let lhs = BitShared::concat(&[&p, &p]);
            let rhs = BitShared::concat(&[&g_shift, &p_shift]);
            let r = and(ctx, &lhs, &rhs).await?;
            g = g.xor(&r.slice(0..n));
            p = r.slice(n..2 * n);
        }
    }
    Ok(p0.xor(&g.map(|w| w << 1)))
}

/// The sign bit of `x` (two's complement), in bit 0 of each word. 9 rounds (A2B with 7
/// levels); exact.
pub async fn sign_bit(ctx: &Ctx, x: &Shared) -> Result<BitShared, MpcError> {
    Ok(a2b(ctx, x, 7).await?.map(|w| w >> 127))
}

/// One-hot vector of the most significant set bit of each word (already masked to its
/// window of `window` bits): a prefix-OR from the top, `ceil(log2 window)` AND layers,
/// then `o ^ (o >> 1)`. A zero word gives zero.
pub async fn one_hot_msb(ctx: &Ctx, v: &BitShared, window: u32) -> Result<BitShared, MpcError> {
    let mut o = v.clone();
    let mut k = 1u32;
    while k < window {
        let s = o.map(|w| w >> k);
        // a | b = a ^ b ^ (a & b)
        let ab = and(ctx, &o, &s).await?;
        o = o.xor(&s).xor(&ab);
        k *= 2;
    }
    Ok(o.xor(&o.map(|w| w >> 1)))
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
