//! `exp(x)` for x in [-64, 0]: the MPC twin of `vtwin_fixed::exp`.
//!
//! Same algorithm, constants and truncation order as the reference (vtwin-fixed `exp.rs`):
//! 1. `u = trunc(x log2(e))` (a public product, then the truncation protocol);
//! 2. the bits of `v = u + 128 * 2^32` (in [0, 2^39] for x in the domain; a 40-bit A2B):
//!    its bits 32..39 are `k = floor(u) + 128` in [35, 128]. The 8 bits of `k` are injected
//!    (1 round), so `k`, `n = k - 128` and the fractional part `f = u - n 2^32` are local;
//! 3. `q = 2^(32+n)` for n in [-32, 0], else 0, equals
//!    `k_7 2^32 + k_5 k_6 prod_{j<5} (1 + (2^(2^j) - 1) k_j)` (k = 128 is the only value with
//!    bit 7; k in [96, 127] are those with bits 5 and 6): a product tree of 7 factors, 3
//!    rounds, no truncation;
//! 4. Horner for `P(f) ~ 2^f`, degree 7 (7 truncations), then `exp(x) = trunc(P q)`.
//!
//! Given the same masks the result equals `vtwin_fixed::exp` bit for bit for every x in
//! [-64, 0] (outside, both compute garbage, differently). Cost: 1 + 8 + 1 + 3 + 7 + 1 =
//! 21 rounds (each truncated layer 1 round); 9 truncations.

use vtwin_fixed::exp::{EXP2_COEFFS_RAW, LOG2E_RAW};
use vtwin_fixed::{FRAC_BITS, ONE_RAW};

use crate::binary::{a2b, inject};
use crate::error::MpcError;
use crate::multiply::{mul, mul_trunc, truncate};
use crate::runtime::Ctx;
use crate::share::{BitShared, Shared};

/// Bits of `u + 128` examined (k has 8 bits, above the 32 fractional ones).
const WINDOW: u32 = 40;
const OFFSET_RAW: u128 = 128 << FRAC_BITS;

/// `exp(x)` element-wise for x in [-64, 0] (the client validates the range before
/// sharing, or the circuit guarantees it). 21 rounds.
pub async fn exp(ctx: &Ctx, x: &Shared) -> Result<Shared, MpcError> {
    let me = ctx.id();
    let n = x.len();
    let u = truncate(ctx, &x.mul_public(LOG2E_RAW), FRAC_BITS).await?;
    let v = u.add_public(me, OFFSET_RAW);
    let bits = a2b(ctx, &v, crate::binary::levels_for(WINDOW)).await?;
    // Eight words per value, bit j of k in bit 0 of word j.
    let kbits = BitShared {
        own: bits
            .own
            .iter()
            .flat_map(|&w| (0..8).map(move |j| (w >> (32 + j)) & 1))
            .collect(),
        next: bits
            .next
            .iter()
            .flat_map(|&w| (0..8).map(move |j| (w >> (32 + j)) & 1))
            .collect(),
    };
    let kb = inject(ctx, &kbits).await?;
    let bit = |j: usize| Shared {
        own: (0..n).map(|i| kb.own[8 * i + j]).collect(),
        next: (0..n).map(|i| kb.next[8 * i + j]).collect(),
    };
    // k = sum 2^j k_j; f = v - k 2^32 (the fractional part, exactly).
    let mut k = Shared::public(me, &vec![0; n]);
    for j in 0..8 {
        k = k.add(&bit(j).mul_public(1 << j))?;
    }
    let f = v.sub(&k.mul_public(ONE_RAW))?;

    // q = k7 2^32 + k5 k6 prod_{j<5} (1 + (2^(2^j) - 1) k_j).
    let factor = |j: usize| bit(j).mul_public((1u128 << (1 << j)) - 1).add_public(me, 1);
    let left = Shared::concat(&[&factor(0), &factor(2), &factor(4)]);
    let right = Shared::concat(&[&factor(1), &factor(3), &bit(5)]);
    let l1 = mul(ctx, &left, &right).await?;
    let left = Shared::concat(&[&l1.slice(0..n), &l1.slice(2 * n..3 * n)]);
    let right = Shared::concat(&[&l1.slice(n..2 * n), &bit(6)]);
    let l2 = mul(ctx, &left, &right).await?;
    let low = mul(ctx, &l2.slice(0..n), &l2.slice(n..2 * n)).await?;
    let q = low.add(&bit(7).mul_public(ONE_RAW))?;

    // Horner, highest degree first, as the reference.
    let last = EXP2_COEFFS_RAW.len() - 1;
    let mut p = Shared::public(me, &vec![EXP2_COEFFS_RAW[last]; n]);
    for (idx, &c) in EXP2_COEFFS_RAW.iter().enumerate().rev().skip(1) {
        // The first step multiplies a public constant: a local product then the truncation.
        p = if idx + 1 == last {
            truncate(ctx, &f.mul_public(EXP2_COEFFS_RAW[last]), FRAC_BITS).await?
        } else {
            mul_trunc(ctx, &p, &f, FRAC_BITS).await?
        }
        .add_public(me, c);
    }
    mul_trunc(ctx, &p, &q, FRAC_BITS).await
}
