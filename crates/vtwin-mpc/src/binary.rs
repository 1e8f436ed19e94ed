//! Binary circuits on XOR-shared packed words: AND gates, arithmetic-to-binary conversion
//! with a log-depth (Kogge-Stone) adder, the sign bit, the one-hot most significant bit of a
//! sum (fused into the adder), and bit injection back to arithmetic shares.
//!
//! Every gate layer works on whole 128-bit words (one element per value), so a layer of
//! AND gates costs one round and one ring element per word per node. In the adders of a
//! window below 128 bits, each AND output word is restricted to the bits that can reach the
//! window (bits above it are zero in every share), and the message that carries it gives it
//! the width of its public mask ([`Packing`], `crate::message`): 8 bytes for a 64-bit
//! window, 10 for 80. The widths never depend on the words.

use zeroize::Zeroizing;

use crate::error::MpcError;
use crate::message::{NodeId, Peer};
use crate::packing::Packing;
use crate::runtime::Ctx;
use crate::share::{check_len, zip, BitShared, Shared};

/// Bitwise AND of XOR-shared words: node i computes
/// `z_i = a_i b_i ^ a_i b_{i+1} ^ a_{i+1} b_i ^ zero_i` and sends it to node i-1.
/// 1 round; 1 word sent per node per AND word.
pub async fn and(ctx: &Ctx, a: &BitShared, b: &BitShared) -> Result<BitShared, MpcError> {
    and_within(ctx, a, b, &vec![u128::MAX; a.len()]).await
}

/// [`and`] with each output word restricted to the bits of its public mask: the sharing of
/// `a & b & mask` (every share word of it has zeros outside the mask). Restricting a share
/// word is XOR-linear, and the zero-sharing restricted to the mask is still a zero-sharing
/// that hides the sent word's bits inside it. 1 round; 1 word sent per node per AND word, of
/// the mask's width on the wire.
pub(crate) async fn and_within(
    ctx: &Ctx,
    a: &BitShared,
    b: &BitShared,
    masks: &[u128],
) -> Result<BitShared, MpcError> {
    check_len("and", a.len(), b.len())?;
    check_len("and masks", a.len(), masks.len())?;
    let n = a.len();
    let s = ctx.next_stream();
    let zero = zip(&ctx.prg_prev(s, n), &ctx.prg_next(s, n), |x, y| x ^ y);
    let z: Vec<u128> = (0..n)
        .map(|k| {
            let t = (a.own[k] & b.own[k]) ^ (a.own[k] & b.next[k]) ^ (a.next[k] & b.own[k]);
            (t ^ zero[k]) & masks[k]
        })
        .collect();
    ctx.count(|c| c.and_words += n as u64);
    let me = ctx.id();
    // The widths on the wire follow the public masks, never the words.
    let packing = Packing::for_masks(masks);
    let got = ctx
        .exchange_packed(
            vec![(Peer::Node(me.prev()), z.clone(), packing)],
            &[(me.next(), n)],
        )
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
/// Each AND output is restricted to its value's mask (`masks`, low bits: the bits below a
/// window depend only on the bits below it), so `g` and the carry are exact inside it.
/// 2 rounds, 2 AND words per value.
async fn carry_save_generate(
    ctx: &Ctx,
    x: &Shared,
    masks: &[u128],
) -> Result<(BitShared, BitShared), MpcError> {
    let me = ctx.id();
    let a = summand_bits(me, x, 0);
    let b = summand_bits(me, x, 1);
    let c = summand_bits(me, x, 2);
    let carry = and_within(ctx, &a.xor(&c), &b.xor(&c), masks)
        .await?
        .xor(&c);
    let sum = a.xor(&b).xor(&c);
    let carry = carry.map(|w| w << 1);
    let g = and_within(ctx, &sum, &carry, masks).await?;
    Ok((sum.xor(&carry), g))
}

/// `levels` Kogge-Stone prefix levels from `(p, g)`: the carry words (bit j = the carry into
/// bit j) of every value, exact below position `2^levels + 1` and inside its mask (`masks`,
/// low bits, one per value). Riding in the same AND layers, a suffix-AND from the top on
/// `q` (bit j becomes the AND of the `2^levels` bits from j up), whose words stand for ones
/// above their masks (`q_masks`) and above bit 127, and are zero there in every share. Per
/// level: 1 round; 2 AND words per value (1 on the last) plus 1 per word of `q`.
async fn prefix_levels(
    ctx: &Ctx,
    p: &BitShared,
    mut g: BitShared,
    mut q: BitShared,
    levels: u32,
    (masks, q_masks): (&[u128], &[u128]),
) -> Result<(BitShared, BitShared), MpcError> {
    let me = ctx.id();
    let n = p.len();
    let nq = q.len();
    let mut p = p.clone();
    // The same in every level: the masks of [p, p, q] (of [p, q] on the last) and q's ones.
    let layer_masks = |copies: usize| -> Vec<u128> {
        let mut m = masks.repeat(copies);
        m.extend_from_slice(q_masks);
        m
    };
    let (masks_pq, masks_ppq) = (layer_masks(1), layer_masks(2));
    let q_ones: Vec<u128> = q_masks.iter().map(|m| !m).collect();
    let q_ones = BitShared::known_at(me, 0, &q_ones);
    for l in 0..levels {
        let k = 1u32 << l;
        let g_shift = g.map(|w| w << k);
        // q's bits above its mask are 1 (zero in every share: restored by a public XOR),
        // and so are the vacated top bits of q >> k.
        let q_shift = q
            .xor(&q_ones)
            .map(|w| w >> k)
            .xor_public(me, !(u128::MAX >> k));
        let last = l + 1 == levels;
        let (lhs, rhs, layer) = if last {
            (
                BitShared::concat(&[&p, &q]),
                BitShared::concat(&[&g_shift, &q_shift]),
                &masks_pq,
            )
        } else {
            let p_shift = p.map(|w| w << k);
            (
                BitShared::concat(&[&p, &p, &q]),
                BitShared::concat(&[&g_shift, &p_shift, &q_shift]),
                &masks_ppq,
            )
        };
        let r = and_within(ctx, &lhs, &rhs, layer).await?;
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
/// `2 + 2 levels - 1`, each restricted to the low `2^levels` bits (all that the exact
/// positions need: bit `2^levels` takes the carry out of the bits below it; 8 bytes on the
/// wire for `levels` up to 6, 16 for 7).
pub async fn a2b(ctx: &Ctx, x: &Shared, levels: u32) -> Result<BitShared, MpcError> {
    let masks = vec![low_mask(1u32 << levels.min(7)); x.len()];
    let (p, g) = carry_save_generate(ctx, x, &masks).await?;
    let (carries, _) =
        prefix_levels(ctx, &p, g, BitShared::default(), levels, (&masks, &[])).await?;
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
    // The words of x restricted to the window, those of the signed values whole.
    let x_masks = vec![mask; n];
    let mut masks = x_masks.clone();
    masks.resize(n + signed.len(), u128::MAX);
    let (p, g) = carry_save_generate(ctx, &Shared::concat(&[x, signed]), &masks).await?;
    let (px, gx) = (p.slice(0..n), g.slice(0..n));
    let z = px.xor(&gx).xor_public(me, u128::MAX);
    // e_i for i < window - 1, ones from window - 1 up (neutral for the AND): bit
    // window - 1 public, those above the window zero in every share (`prefix_levels`).
    let top = low_mask(window - 1);
    let e = px
        .map(|w| w >> 1)
        .xor(&z)
        .map(|w| w & top)
        .xor_public(me, !top)
        .map(|w| w & mask);
    let (carries, q) = prefix_levels(ctx, &p, g, e, levels, (&masks, &x_masks)).await?;
    let bits = p.xor(&carries);
    let not_x = bits.slice(0..n).xor_public(me, u128::MAX);
    let t = and_within(ctx, &not_x, &q, &x_masks).await?;
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
/// word, in one round: a three-party oblivious transfer per bit (`protocols/mpc-binary.md`).
///
/// For bit k the sender is node `j = k mod 3`, which holds `b_j` and `b_(j+1)` and so knows
/// `u = b_j ^ b_(j+1)`; `b = u ^ c` with `c = b_(j+2)`, held by nodes j+1 and j+2. The output
/// shares are `y_j = rho = F(k_j)`, `y_(j+1) = sigma = F(k_(j+1))` and
/// `y_(j+2) = (u ^ c) - rho - sigma`. The sender sends `m_0 + w_0, m_1 + w_1` (with
/// `m_v = (u ^ v) - rho - sigma`) to node j+1, masked by `w_v = F(k_j)` (nodes j and j+2),
/// and the same under `w'_v = F(k_(j+1))` (nodes j and j+1) to node j+2; node j+2 sends
/// node j+1 its `w_c`, node j+1 sends node j+2 its `w'_c`, and both unmask `m_c = y_(j+2)`.
/// Rotating the sender with k balances the links: 6 elements per bit in all, 2 sent by each
/// node on average. 1 round; 3 PRG streams, on which each node expands its two pair keys
/// for the two thirds of the bits each serves: 4 AES blocks per bit and node.
pub async fn inject(ctx: &Ctx, bits: &BitShared) -> Result<Shared, MpcError> {
    let me = ctx.id();
    let i = me.index();
    let n = bits.len();
    // The role of this node for bit k: 0 sender, 1 node j+1, 2 node j+2.
    let role = |k: usize| (i + 3 - k % 3) % 3;
    // Bits below n whose sender is j (k mod 3 = j), so the bits of each role here.
    let sent_by = |j: usize| (n + 2 - j) / 3;
    let (n0, n1, n2) = (sent_by(i), sent_by((i + 2) % 3), sent_by((i + 1) % 3));
    // Node i holds k_i (`prg_prev`), which serves the bits of roles 0 and 1 here (and of
    // roles 2 and 0 at node i-1, its other holder: the same bits), and k_(i+1)
    // (`prg_next`), which serves roles 0 and 2. Each key's outputs are taken in bit order
    // over the bits it serves, so both holders index them alike. Stream a: rho and sigma;
    // streams b and c: the masks of m_0 and m_1.
    let streams = [ctx.next_stream(), ctx.next_stream(), ctx.next_stream()];
    // Zeroized on drop like the truncation's masks: the unchosen mask of each bit must not
    // outlive the round.
    let [ka, kb, kc] = streams.map(|s| Zeroizing::new(ctx.prg_prev(s, n0 + n1)));
    let [na, nb, nc] = streams.map(|s| Zeroizing::new(ctx.prg_next(s, n0 + n2)));
    // The chosen of two masked values without a branch on the secret bit `c`.
    let pick = |v0: u128, v1: u128, c: u128| v0.wrapping_add(c.wrapping_mul(v1.wrapping_sub(v0)));
    let mut to_next = Vec::with_capacity(2 * n0 + n1);
    let mut to_prev = Vec::with_capacity(2 * n0 + n2);
    let (mut help_next, mut help_prev) = (Vec::with_capacity(n1), Vec::with_capacity(n2));
    let (mut p, mut q) = (0, 0);
    for k in 0..n {
        match role(k) {
            0 => {
                // rho = F(k_j) = F(k_i), sigma = F(k_(i+1)).
                let u = (bits.own[k] ^ bits.next[k]) & 1;
                let m0 = u.wrapping_sub(ka[p]).wrapping_sub(na[q]);
                let m1 = (1 - u).wrapping_sub(ka[p]).wrapping_sub(na[q]);
                to_next.extend([m0.wrapping_add(kb[p]), m1.wrapping_add(kc[p])]);
                to_prev.extend([m0.wrapping_add(nb[q]), m1.wrapping_add(nc[q])]);
                p += 1;
                q += 1;
            }
            // Node j+1: c = b_(j+2) is its `next` bit; w'_c = F(k_(j+1)) = F(k_i) for node j+2.
            1 => {
                help_next.push(pick(kb[p], kc[p], bits.next[k] & 1));
                p += 1;
            }
            // Node j+2: c = b_(j+2) is its `own` bit; w_c = F(k_j) = F(k_(i+1)) for node j+1.
            _ => {
                help_prev.push(pick(nb[q], nc[q], bits.own[k] & 1));
                q += 1;
            }
        }
    }
    to_next.extend(help_next);
    to_prev.extend(help_prev);
    // From node i-1: its pairs (bits where it sends: role 1 here), then its help (role 2
    // here); from node i+1: its pairs (role 2 here), then its help (role 1 here).
    let got = ctx
        .exchange(
            vec![
                (Peer::Node(me.next()), to_next),
                (Peer::Node(me.prev()), to_prev),
            ],
            &[(me.prev(), 2 * n1 + n2), (me.next(), 2 * n2 + n1)],
        )
        .await?;
    let (from_prev, from_next) = (&got[0], &got[1]);
    let (mut p1, mut h2) = (0, 2 * n1);
    let (mut p2, mut h1) = (0, 2 * n2);
    let (mut p, mut q) = (0, 0);
    let mut own = Vec::with_capacity(n);
    let mut next = Vec::with_capacity(n);
    for k in 0..n {
        match role(k) {
            // (y_j, y_(j+1)) = (rho, sigma).
            0 => {
                own.push(ka[p]);
                next.push(na[q]);
                p += 1;
                q += 1;
            }
            // (y_(j+1), y_(j+2)): sigma = F(k_i); the pair from node j = i-1, w_c from i+1.
            1 => {
                let c = bits.next[k] & 1;
                let m = pick(from_prev[p1], from_prev[p1 + 1], c).wrapping_sub(from_next[h1]);
                p1 += 2;
                h1 += 1;
                own.push(ka[p]);
                next.push(m);
                p += 1;
            }
            // (y_(j+2), y_j): rho = F(k_(i+1)); the pair from node j = i+1, w'_c from i-1.
            _ => {
                let c = bits.own[k] & 1;
                let m = pick(from_next[p2], from_next[p2 + 1], c).wrapping_sub(from_prev[h2]);
                p2 += 2;
                h2 += 1;
                own.push(m);
                next.push(na[q]);
                q += 1;
            }
        }
    }
    Ok(Shared { own, next })
}

#[cfg(test)]
mod tests {
    //! The injection's exactness, PRG streams and views with the seeds in hand (as
    //! `multiply.rs` does for the truncation): the statistical tests in `tests/privacy.rs`
    //! look at one element at a time.

    use std::collections::HashSet;

    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    use super::*;
    use crate::keys::simulated_seeds;
    use crate::message::{Message, SessionId};
    use crate::prg;
    use crate::runtime::PrgKey;
    use crate::sim::Simulation;
    use crate::view_search::{computable, first_found};

    const S: SessionId = SessionId([9; 16]);
    const SEED: u64 = 33;

    type Log = Vec<(PrgKey, u64, u64)>;

    struct Run {
        /// The XOR summands b_0, b_1, b_2 of every word.
        bits: [Vec<u128>; 3],
        outputs: [Shared; 3],
        logs: [Log; 3],
        /// Per (sender, addressee): the payload sent (the injection is one round).
        sent: [[Vec<u128>; 3]; 3],
    }

    impl Run {
        /// Every element node `j` received.
        fn received(&self, j: usize) -> Vec<u128> {
            self.sent
                .iter()
                .flat_map(|to| to[j].iter().copied())
                .collect()
        }
    }

    /// Random XOR summands of `n` words.
    fn random_bits(n: usize, salt: u64) -> [Vec<u128>; 3] {
        let mut rng = ChaCha20Rng::seed_from_u64(SEED + 1000 * salt + n as u64);
        let mut word = || (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        core::array::from_fn(|_| (0..n).map(|_| word()).collect())
    }

    fn run(n: usize, salt: u64) -> Run {
        run_on(random_bits(n, salt))
    }

    /// Three bits, one per sender: bit k's `u` and `c` are bits 2k and 2k + 1 of `salt`,
    /// bit 6 chooses how each u splits into `b_j ^ b_(j+1)`; random above bit 0.
    fn run_with(salt: u64) -> Run {
        let mut bits = random_bits(3, salt);
        for k in 0..3 {
            let (u, c, split) = (
                u128::from(salt >> (2 * k) & 1),
                u128::from(salt >> (2 * k + 1) & 1),
                u128::from(salt >> 6 & 1),
            );
            let low = |w: u128, v: u128| (w & !1) | v;
            bits[k % 3][k] = low(bits[k % 3][k], split);
            bits[(k + 1) % 3][k] = low(bits[(k + 1) % 3][k], split ^ u);
            bits[(k + 2) % 3][k] = low(bits[(k + 2) % 3][k], c);
        }
        run_on(bits)
    }

    fn run_on(bits: [Vec<u128>; 3]) -> Run {
        let program = |ctx: Ctx| {
            let bits = bits.clone();
            async move {
                let i = ctx.id().index();
                let shared = BitShared {
                    own: bits[i].clone(),
                    next: bits[(i + 1) % 3].clone(),
                };
                Ok((inject(&ctx, &shared).await?, ctx.prg_log()))
            }
        };
        let rep = Simulation::new(S, SEED)
            .expect("seeds")
            .record_views()
            .run(program)
            .expect("run");
        let mut sent: [[Vec<u128>; 3]; 3] = Default::default();
        for (to, view) in rep.views.iter().enumerate() {
            for bytes in view {
                let m = Message::decode(bytes).expect("decode");
                let Peer::Node(from) = m.from else {
                    panic!("only nodes talk here")
                };
                sent[from.index()][to].extend(&m.payload);
            }
        }
        let [(o0, l0), (o1, l1), (o2, l2)] = rep.outputs;
        Run {
            bits,
            outputs: [o0, o1, o2],
            logs: [l0, l1, l2],
            sent,
        }
    }

    #[test]
    fn injection_gives_bit_zero_as_a_consistent_replicated_sharing() {
        for n in [0, 1, 2, 3, 4, 5, 7, 30] {
            let r = run(n, 0);
            for k in 0..n {
                let b = (r.bits[0][k] ^ r.bits[1][k] ^ r.bits[2][k]) & 1;
                let y = (0..3).fold(0u128, |s, i| s.wrapping_add(r.outputs[i].own[k]));
                assert_eq!(y, b, "n {n}, bit {k}");
                for i in 0..3 {
                    assert_eq!(
                        r.outputs[i].next[k],
                        r.outputs[(i + 1) % 3].own[k],
                        "n {n}, bit {k}: node {i}'s pair"
                    );
                }
            }
            // 6 elements per bit in all.
            assert_eq!(
                (0..3).map(|j| r.received(j).len()).sum::<usize>(),
                6 * n,
                "n {n}"
            );
        }
    }

    #[test]
    fn three_fresh_streams_each_drawn_once_per_key() {
        let r = run(7, 0);
        let mut streams = HashSet::new();
        for (i, log) in r.logs.iter().enumerate() {
            let mut seen = HashSet::new();
            for &(key, stream, round) in log {
                assert_ne!(round, u64::MAX, "node {i}: stream {stream} never allocated");
                assert!(
                    seen.insert((key, stream)),
                    "node {i}: {key:?} on {stream} twice"
                );
                assert!(
                    matches!(key, PrgKey::Pair(j) if j == i || j == (i + 1) % 3),
                    "node {i} draws {key:?}"
                );
                streams.insert(stream);
            }
        }
        assert_eq!(streams.len(), 3);
    }

    /// Every message and output share is the one `protocols/mpc-binary.md` defines, derived
    /// here from the seeds: key `k_m`'s output index for bit k is the number of earlier bits
    /// it serves (senders m and m - 1), on streams a < b < c. So each of the 6 n PRG values of
    /// the layer is drawn once, which is also checked directly.
    #[test]
    fn messages_and_shares_are_the_specified_prg_outputs() {
        let seeds = simulated_seeds(&mut ChaCha20Rng::seed_from_u64(SEED), S).expect("seeds");
        for (n, salt) in [(1, 0), (2, 1), (4, 2), (30, 3), (31, 4)] {
            let r = run(n, salt);
            let mut streams: Vec<u64> = r.logs.iter().flatten().map(|e| e.1).collect();
            streams.sort_unstable();
            streams.dedup();
            let f = |m: usize, s: usize, k: usize| {
                let idx = (0..k).filter(|x| x % 3 == m || (x + 1) % 3 == m).count();
                prg::expand(&seeds[m].prev, streams[s], n)[idx]
            };
            let mut want: [[Vec<u128>; 3]; 3] = Default::default();
            let mut helps: [[Vec<u128>; 3]; 3] = Default::default();
            let mut drawn = HashSet::new();
            for k in 0..n {
                let j = k % 3;
                let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
                let bit = |i: usize| r.bits[i][k] & 1;
                let (u, c) = (bit(j) ^ bit(j1), bit(j2));
                let (rho, sigma) = (f(j, 0, k), f(j1, 0, k));
                assert_eq!(r.outputs[j].own[k], rho, "n {n}, bit {k}: rho");
                assert_eq!(r.outputs[j].next[k], sigma, "n {n}, bit {k}: sigma");
                let m = |v: u128| (u ^ v).wrapping_sub(rho).wrapping_sub(sigma);
                let w = [f(j, 1, k), f(j, 2, k)];
                let w2 = [f(j1, 1, k), f(j1, 2, k)];
                want[j][j1].extend([m(0).wrapping_add(w[0]), m(1).wrapping_add(w[1])]);
                want[j][j2].extend([m(0).wrapping_add(w2[0]), m(1).wrapping_add(w2[1])]);
                helps[j2][j1].push(w[c as usize]);
                helps[j1][j2].push(w2[c as usize]);
                for v in [rho, sigma, w[0], w[1], w2[0], w2[1]] {
                    assert!(drawn.insert(v), "n {n}, bit {k}: a PRG value drawn twice");
                }
            }
            for from in 0..3 {
                for to in 0..3 {
                    let mut msg = std::mem::take(&mut want[from][to]);
                    msg.extend(std::mem::take(&mut helps[from][to]));
                    assert_eq!(r.sent[from][to], msg, "n {n}: node {from} to node {to}");
                }
            }
        }
    }

    /// For each receiver j of bit k: no combination with coefficients -1, 0, 1 of what j
    /// received and holds for k (its output pair), minus at most one PRG output j can
    /// compute, equals the message it must not unmask, `m_(1-c) = m_c + 1 - 2 b` (with `m_c`,
    /// its share, it gives the bit). The share a node lacks is no such test (it is `b` minus
    /// the two it holds, so a linear search finds it whenever `b = 0`), but this search
    /// guards it too: when `b = 1`, `m_(1-c) = -(rho + sigma)`, so a non-random `rho` or
    /// `sigma`, or a mask equal to either, fails it (`tests/privacy.rs` does not see those).
    /// The sender receives nothing.
    #[test]
    fn no_receiver_unmasks_the_other_message() {
        // Every (u, c) for each of the three bits at once (so that bits differ in c, where a
        // mask shared by two bits would unmask one), both splits of u: 128 runs of three bits.
        for salt in 0..128 {
            no_node_computes_a_secret_in(&run_with(salt));
        }
    }

    fn no_node_computes_a_secret_in(r: &Run) {
        let n = r.outputs[0].len();
        let seeds = simulated_seeds(&mut ChaCha20Rng::seed_from_u64(SEED), S).expect("seeds");
        let streams = r.logs.iter().flatten().map(|e| e.1).max().unwrap_or(0) + 8;
        for (j, seed) in seeds.iter().enumerate() {
            // Every position: each key's outputs are indexed by the bits it serves, not by k.
            let g = computable(seed, streams, n, 0..n);
            for k in 0..n {
                let y: Vec<u128> = (0..3).map(|i| r.outputs[i].own[k]).collect();
                let mut secrets = Vec::new();
                let sender = k % 3;
                if j != sender {
                    // m_v = (u ^ v) - rho - sigma with rho = y_sender, sigma = y_(sender+1).
                    let u = (r.bits[sender][k] ^ r.bits[(sender + 1) % 3][k]) & 1;
                    let c = r.bits[(sender + 2) % 3][k] & 1;
                    let m = (u ^ c ^ 1)
                        .wrapping_sub(y[sender])
                        .wrapping_sub(y[(sender + 1) % 3]);
                    secrets.push(("m_(1-c)", m));
                }
                let mut basis = r.received(j);
                basis.extend([r.outputs[j].own[k], r.outputs[j].next[k]]);
                if let Some(name) = first_found(&basis, &g, &secrets) {
                    panic!("node {j}, bit {k}: computes {name}");
                }
            }
        }
    }

    /// The packings every windowed layer declares: from the public masks alone, the same for
    /// any words (the view tests of `tests/privacy.rs` check the lengths end to end).
    #[test]
    fn windowed_layers_declare_their_masks_widths() {
        let packings = |levels: Option<u32>, x: Vec<u128>, signed: Vec<u128>| {
            let program = move |ctx: Ctx| {
                let (x, signed) = (x.clone(), signed.clone());
                async move {
                    let me = ctx.id();
                    let x = Shared::known_at(me, 0, &x);
                    let signed = Shared::known_at(me, 0, &signed);
                    match levels {
                        Some(l) => a2b(&ctx, &x, l).await.map(|_| ()),
                        None => msb_one_hot_and_signs(&ctx, &x, 80, &signed)
                            .await
                            .map(|_| ()),
                    }
                }
            };
            let rep = Simulation::new(S, SEED)
                .expect("seeds")
                .record_views()
                .run(program)
                .expect("run");
            let mut all: Vec<(usize, Vec<(u32, u8)>)> = rep.views[0]
                .iter()
                .map(|b| {
                    let m = Message::decode(b).expect("decode");
                    (m.payload.len(), m.packing.runs().to_vec())
                })
                .collect();
            all.sort();
            all.dedup();
            all
        };
        let (n, m) = (5u32, 2u32);
        let (nu, mu) = (n as usize, m as usize);
        let x = |seed: u128| {
            (0..u128::from(n))
                .map(|k| (k + 1) * seed)
                .collect::<Vec<_>>()
        };
        // exp's a2b (6 levels): every word in 8 bytes (1 or 2 per value a layer); 7 levels:
        // whole.
        for seed in [1, u128::MAX / 7] {
            let want = vec![(nu, vec![(n, 8)]), (2 * nu, vec![(2 * n, 8)])];
            assert_eq!(packings(Some(6), x(seed), vec![]), want);
            let whole = vec![(nu, vec![]), (2 * nu, vec![])];
            assert_eq!(packings(Some(7), x(seed), vec![]), whole);
        }
        // The clip's adder: x's words in 10 bytes, the sign words whole, in each layer's
        // order (carry-save and generate: [x, s]; levels: [p, p, q] and the last [p, q]; T:
        // [x]). A run of whole words at the end is left to the plain tail.
        let s = |seed: u128| {
            (0..u128::from(m))
                .map(|k| (k + 3) * seed)
                .collect::<Vec<_>>()
        };
        let want = vec![
            (nu, vec![(n, 10)]),
            (nu + mu, vec![(n, 10)]),
            (2 * nu + mu, vec![(n, 10), (m, 16), (n, 10)]),
            (
                3 * nu + 2 * mu,
                vec![(n, 10), (m, 16), (n, 10), (m, 16), (n, 10)],
            ),
        ];
        for seed in [1, u128::MAX / 7] {
            assert_eq!(packings(None, x(seed), s(seed)), want, "seed {seed}");
        }
    }
}
