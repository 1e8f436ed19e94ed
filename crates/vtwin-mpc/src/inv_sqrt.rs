//! Normalised inverse square root and the DP-SGD clip factor: the MPC twins of
//! `vtwin_fixed::InvSqrt` and `vtwin_fixed::clip_factor`.
//!
//! Same algorithm, constants and truncation order as the reference (vtwin-fixed
//! `inv_sqrt.rs`, `clip.rs`): an 80-bit normalisation gives `p = 2^(s+48)`,
//! `scale_int = 2^(s/2)` (s >= 0) and `scale_frac = 2^(32+s/2)` (s < 0) with
//! `s = 31 - e` rounded down to even; `h = trunc(x p, 49)`, `y = A - trunc(B h)`, three
//! Newton-Raphson steps (2 layers each; two in the clip factor), scale-back. Given the same masks, equal to the
//! reference bit for bit for every ring element; range and error are the reference's.
//!
//! Clip factor `min(1, C/sqrt(x))` for public C: the sign of `floor(C^2) - x` is computed in
//! the same adder levels as the normalisation of x, injected with the one-hot bits, and
//! applied as `1 + over (s - gamma - 1)` (one product, no truncation; [`clip_parts`] leaves
//! that product to the caller's next layer).

use vtwin_fixed::clip::CLIP_RSQRT_ITERATIONS;
use vtwin_fixed::inv_sqrt::{RSQRT_ITERATIONS, RSQRT_WINDOW_BITS, RSQRT_Y0_A_RAW, RSQRT_Y0_B_RAW};
use vtwin_fixed::{Fx, FRAC_BITS, ONE_RAW};

use crate::binary::msb_one_hot_and_signs;
use crate::error::MpcError;
use crate::multiply::{local_products, mul, mul_and_mul_trunc, mul_trunc, truncate, truncate_many};
use crate::normalise::{scale_back, select_from_one_hot};
use crate::runtime::Ctx;
use crate::share::{check_len, Shared};

const THREE_HALVES_RAW: u128 = 3 * ONE_RAW / 2;
const NORM_SHIFT: u32 = 49;

/// The shared normalised inverse square root (see `vtwin_fixed::InvSqrt`).
#[derive(Clone, Debug)]
pub struct SharedInvSqrt {
    /// Mantissa `y ~ 1/sqrt(m)`.
    pub mantissa: Shared,
    /// `2^(s/2)` if s >= 0, else 0.
    pub scale_int: Shared,
    /// `2^(32+s/2)` if s < 0, else 0.
    pub scale_frac: Shared,
}

fn tables() -> [Vec<u128>; 3] {
    let w = RSQRT_WINDOW_BITS as i32;
    let mut p = Vec::new();
    let mut int = Vec::new();
    let mut frac = Vec::new();
    for e in 0..w {
        let mut s = 31 - e;
        if s % 2 != 0 {
            s -= 1;
        }
        let j = s / 2;
        p.push(1u128 << (s + 48));
        int.push(if j >= 0 { 1u128 << j } else { 0 });
        frac.push(if j < 0 { 1u128 << (32 + j) } else { 0 });
    }
    [p, int, frac]
}

/// Products of each value's injected sign bit with further sharings, computed without
/// truncation in the first layer after the normalisation (no round of their own):
/// `values[i]` is multiplied by the bit of value `owner[i]`.
struct Riders<'a> {
    values: &'a Shared,
    owner: &'a [usize],
}

/// Normalisation of `x` and the Newton-Raphson mantissa (`steps` steps). The adder of `x` is
/// batched with that of `extra_a2b`, whose sign bits are injected with the one-hot bits and
/// returned, with their products with the `riders`.
async fn normalised(
    ctx: &Ctx,
    x: &Shared,
    extra_a2b: Option<&Shared>,
    steps: u32,
    riders: Riders<'_>,
) -> Result<(SharedInvSqrt, Shared, Shared), MpcError> {
    let me = ctx.id();
    let w = RSQRT_WINDOW_BITS;
    let no_signs = Shared::default();
    let (h, extra) = msb_one_hot_and_signs(ctx, x, w, extra_a2b.unwrap_or(&no_signs)).await?;
    let [tp, ti, tf] = tables();
    let (scales, extra_arith) = select_from_one_hot(ctx, &h, w, &[&tp, &ti, &tf], &extra).await?;
    let [p, scale_int, scale_frac]: [Shared; 3] =
        scales.try_into().map_err(|_| MpcError::LengthMismatch {
            protocol: "inv_sqrt tables",
            left: 3,
            right: 0,
        })?;
    debug_assert!(riders.owner.is_empty() || extra_a2b.is_some());
    let rider_bits = extra_arith.map_linear(|v| riders.owner.iter().map(|&i| v[i]).collect());
    let (ridden, hh) =
        mul_and_mul_trunc(ctx, (&rider_bits, riders.values), (x, &p), NORM_SHIFT).await?;
    let bh = truncate(ctx, &hh.mul_public(RSQRT_Y0_B_RAW), FRAC_BITS).await?;
    let mut y = bh.public_minus(me, RSQRT_Y0_A_RAW);
    // Each step y (1.5 - h y^2) as 1.5 y - (h y) y^2: two layers instead of three.
    for _ in 0..steps {
        let parts = [
            local_products(&y, &y),
            local_products(&hh, &y),
            y.mul_public(THREE_HALVES_RAW).own().to_vec(),
        ];
        ctx.count(|c| c.mults += 2 * y.len() as u64);
        let [a, b, c] = truncate_many(ctx, parts, FRAC_BITS).await?;
        y = c.sub(&mul_trunc(ctx, &b, &a, FRAC_BITS).await?)?;
    }
    Ok((
        SharedInvSqrt {
            mantissa: y,
            scale_int,
            scale_frac,
        },
        extra_arith,
        ridden,
    ))
}

/// Normalisation and Newton-Raphson for each element of `x` (positive, below 2^48).
/// 20 rounds; 14 truncations per value.
pub async fn inv_sqrt_normalised(ctx: &Ctx, x: &Shared) -> Result<SharedInvSqrt, MpcError> {
    let none = Riders {
        values: &Shared::default(),
        owner: &[],
    };
    Ok(normalised(ctx, x, None, RSQRT_ITERATIONS, none).await?.0)
}

impl SharedInvSqrt {
    /// `1/sqrt(x)`. 1 round.
    pub async fn value(&self, ctx: &Ctx) -> Result<Shared, MpcError> {
        scale_back(ctx, &self.mantissa, &self.scale_int, &self.scale_frac).await
    }

    /// `a/sqrt(x)` for a shared |a| < 2^22. 2 rounds.
    pub async fn mul(&self, ctx: &Ctx, a: &Shared) -> Result<Shared, MpcError> {
        let z = mul_trunc(ctx, a, &self.mantissa, FRAC_BITS).await?;
        scale_back(ctx, &z, &self.scale_int, &self.scale_frac).await
    }

    /// `c/sqrt(x)` for a public |c| < 2^22. 2 rounds.
    pub async fn mul_public(&self, ctx: &Ctx, c: Fx) -> Result<Shared, MpcError> {
        let z = truncate(ctx, &self.mantissa.mul_public(c.raw()), FRAC_BITS).await?;
        scale_back(ctx, &z, &self.scale_int, &self.scale_frac).await
    }
}

/// `1/sqrt(x)` element-wise (twin of `vtwin_fixed::inv_sqrt`). 21 rounds.
pub async fn inv_sqrt(ctx: &Ctx, x: &Shared) -> Result<Shared, MpcError> {
    inv_sqrt_normalised(ctx, x).await?.value(ctx).await
}

/// `min(1, c/sqrt(x))` element-wise for x in [0, 2^48) and a public c in (0, 2^22), rounded
/// down by the public slack of `vtwin_fixed::clip::clip_rounding_slack` (twin of
/// `vtwin_fixed::clip_factor_unchecked`; exactly 1 when x <= c^2). 21 rounds (2 Newton-Raphson steps,
/// `vtwin_fixed::clip::CLIP_RSQRT_ITERATIONS`).
pub async fn clip_factor(ctx: &Ctx, x: &Shared, c: Fx) -> Result<Shared, MpcError> {
    let me = ctx.id();
    let (over, s_minus_one, _) = clip_parts(ctx, x, c, &Shared::default(), &[]).await?;
    Ok(mul(ctx, &over, &s_minus_one).await?.add_public(me, ONE_RAW))
}

/// The clip factor's two parts, `c = 1 + over (s - gamma - 1)`: the arithmetic 0/1
/// `over = [x > floor(c^2)]` and `s - gamma - 1`, plus the untruncated products
/// `over[owner[i]] values[i]`, which ride in the first layer after the normalisation. Lets a
/// caller fold the selection into its own next layer: `a c = a + (s - gamma - 1) (over a)`
/// exactly (over is 0 or 1). 20 rounds.
pub async fn clip_parts(
    ctx: &Ctx,
    x: &Shared,
    c: Fx,
    values: &Shared,
    owner: &[usize],
) -> Result<(Shared, Shared, Shared), MpcError> {
    check_len("clip riders", values.len(), owner.len())?;
    if let Some(&bad) = owner.iter().find(|&&i| i >= x.len()) {
        return Err(MpcError::LengthMismatch {
            protocol: "clip rider owner",
            left: bad,
            right: x.len(),
        });
    }
    let me = ctx.id();
    let threshold = ((c.raw().wrapping_mul(c.raw()) as i128) >> FRAC_BITS) as u128;
    let diff = x.public_minus(me, threshold);
    let riders = Riders { values, owner };
    let (r, over, ridden) = normalised(ctx, x, Some(&diff), CLIP_RSQRT_ITERATIONS, riders).await?;
    let s = r.mul_public(ctx, c).await?;
    // s - gamma - 1: the public slack is a local subtraction.
    let slack = vtwin_fixed::clip::clip_rounding_slack(c);
    let s_minus_one = s.add_public(me, ONE_RAW.wrapping_add(slack).wrapping_neg());
    Ok((over, s_minus_one, ridden))
}
