//! Normalised reciprocal and division: the MPC twin of `vtwin_fixed::Reciprocal`.
//!
//! Same algorithm, constants and truncation order as the reference (vtwin-fixed
//! `reciprocal.rs`): a 64-bit normalisation gives the shared scales `scale_int = 2^(31-e)`
//! (e <= 31) and `scale_frac = 2^(63-e)` (e >= 32), and `p = 2^32 scale_int + scale_frac =
//! 2^(63-e)` locally; then `m = trunc(x p)`, `y = Y0 - 2m`, `e = 1 - trunc(m y)`, three Goldschmidt factors (the value of three Newton-Raphson steps),
//! and the scale-back `y scale_int + trunc(y scale_frac)`. Given the same truncation masks the
//! result equals `Reciprocal::new_unchecked(x).value()` bit for bit for every ring element
//! `x`; range and error are the reference's (accurate on [2^-30, 2^16]).
//!
//! Cost per value: normalisation (one-hot MSB 9 rounds, conversion 2) then 8 truncations
//! in 6 layers (1 round each: `m`, `e`, three Goldschmidt factors with `e^2` beside the first
//! two, the scale-back): 17 rounds. Measured bytes in
//! `protocols/mpc-reciprocal.md`.

use vtwin_fixed::reciprocal::{RECIP_ITERATIONS, RECIP_WINDOW_BITS, RECIP_Y0_RAW};
use vtwin_fixed::score_norm::SCORE_NORM_FINE_BITS;
use vtwin_fixed::{FRAC_BITS, ONE_RAW};

use crate::error::MpcError;
use crate::multiply::{local_dots, local_products, mul_trunc, truncate_many};
use crate::normalise::{msb_one_hot, scale_back, select_from_one_hot};
use crate::runtime::Ctx;
use crate::share::{check_len, repeat_each, BitShared, Shared};

/// The shared normalised reciprocal of a vector (see `vtwin_fixed::Reciprocal`).
#[derive(Clone, Debug)]
pub struct SharedReciprocal {
    /// Mantissa `y ~ 1/m`, m in [0.5, 1].
    pub mantissa: Shared,
    /// `2^(31-e)` if e <= 31, else 0.
    pub scale_int: Shared,
    /// `2^(63-e)` if e >= 32, else 0.
    pub scale_frac: Shared,
}

fn tables() -> (Vec<u128>, Vec<u128>) {
    let w = RECIP_WINDOW_BITS as usize;
    let int = (0..w)
        .map(|e| if e <= 31 { 1u128 << (31 - e) } else { 0 })
        .collect();
    let frac = (0..w)
        .map(|e| if e >= 32 { 1u128 << (63 - e) } else { 0 })
        .collect();
    (int, frac)
}

/// Normalisation and Goldschmidt mantissa for each element of `x` (positive, below 2^32).
/// 16 rounds; 7 truncations per value.
pub async fn reciprocal_normalised(ctx: &Ctx, x: &Shared) -> Result<SharedReciprocal, MpcError> {
    Ok(reciprocal_and_fractions(ctx, x, &Shared::default(), 0)
        .await?
        .0)
}

/// [`reciprocal_normalised`] of `x`, and the quotients `a/x` of `per` fractions
/// `0 <= a <= x` for each value (`a` value-major): `a' = trunc(a p)` in the layer of
/// `m = trunc(x p)`, then `trunc(a' y)` (twin of `vtwin_fixed::Reciprocal::divide_fraction`).
/// 17 rounds; 2 truncations per fraction.
pub async fn reciprocal_and_fractions(
    ctx: &Ctx,
    x: &Shared,
    a: &Shared,
    per: usize,
) -> Result<(SharedReciprocal, Shared), MpcError> {
    let (recip, quotients, _, _) =
        reciprocal_fractions_and_norm_factors(ctx, x, a, per, &Shared::default(), 0).await?;
    Ok((recip, quotients))
}

/// [`reciprocal_and_fractions`], and per value the two factors of the gradient circuit's
/// score norm (`vtwin_fixed::score_norm`): with the multipliers `u` (`q` per fraction,
/// fraction-major) and `z = trunc(a' u)` in the layer of `e`, `Z' = trunc(2^FINE sum z^2) +
/// 1 ulp` (scale `2^(32 + FINE)`, `FINE` = `vtwin_fixed::score_norm::SCORE_NORM_FINE_BITS`)
/// over the value's `per q` products in the last Goldschmidt layer, and `y2' = trunc(y^2) +
/// 1 ulp` in the quotients' layer: no round of their own. 17 rounds; 2 truncations per
/// fraction, 1 per product and 2 per value. Returns the reciprocal, the quotients, `Z'` and
/// `y2'` (both empty when `q = 0`).
pub async fn reciprocal_fractions_and_norm_factors(
    ctx: &Ctx,
    x: &Shared,
    a: &Shared,
    per: usize,
    u: &Shared,
    q: usize,
) -> Result<(SharedReciprocal, Shared, Shared, Shared), MpcError> {
    check_len("reciprocal fractions", x.len() * per, a.len())?;
    check_len("reciprocal products", a.len() * q, u.len())?;
    let me = ctx.id();
    let h = msb_one_hot(ctx, x, RECIP_WINDOW_BITS).await?;
    let (t_int, t_frac) = tables();
    let (scales, _) = select_from_one_hot(
        ctx,
        &h,
        RECIP_WINDOW_BITS,
        &[&t_int, &t_frac],
        &BitShared::default(),
    )
    .await?;
    let scale_int = scales[0].clone();
    let scale_frac = scales[1].clone();
    let p = scale_int.mul_public(1u128 << 32).add(&scale_frac)?;
    let [m, scaled] = truncate_many(
        ctx,
        [
            local_products(x, &p),
            local_products(a, &repeat_each(&p, per)),
        ],
        FRAC_BITS,
    )
    .await?;
    ctx.count(|c| c.mults += (x.len() + a.len()) as u64);
    let mut y = m.mul_public(2).public_minus(me, RECIP_Y0_RAW);
    let [me_y, z] = truncate_many(
        ctx,
        [
            local_products(&m, &y),
            local_products(&repeat_each(&scaled, q), u),
        ],
        FRAC_BITS,
    )
    .await?;
    ctx.count(|c| c.mults += (m.len() + u.len()) as u64);
    let mut e = me_y.public_minus(me, ONE_RAW);
    // Goldschmidt factors: y (1 + e) and the next e = e^2 in one layer; the last e is not
    // needed.
    for _ in 1..RECIP_ITERATIONS {
        let parts = [
            local_products(&y, &e.add_public(me, ONE_RAW)),
            local_products(&e, &e),
        ];
        ctx.count(|c| c.mults += 2 * y.len() as u64);
        [y, e] = truncate_many(ctx, parts, FRAC_BITS).await?;
    }
    // The last factor, and sum z^2 per value riding beside it.
    let with_z = q > 0 && per > 0;
    // At scale 2^(32 + FINE) after the truncation (vtwin_fixed::score_norm).
    let sum_z2 = if with_z {
        local_dots(&z, &z, per * q)
            .into_iter()
            .map(|v| v.wrapping_mul(1u128 << SCORE_NORM_FINE_BITS))
            .collect()
    } else {
        Vec::new()
    };
    let [y_last, z2] = truncate_many(
        ctx,
        [local_products(&y, &e.add_public(me, ONE_RAW)), sum_z2],
        FRAC_BITS,
    )
    .await?;
    ctx.count(|c| c.mults += (y.len() + z.len()) as u64);
    y = y_last;
    let (quotients, z_up, y2_up) = if per == 0 {
        (Shared::default(), Shared::default(), Shared::default())
    } else {
        let y2 = if with_z {
            local_products(&y, &y)
        } else {
            Vec::new()
        };
        let [quotients, y2] = truncate_many(
            ctx,
            [local_products(&scaled, &repeat_each(&y, per)), y2],
            FRAC_BITS,
        )
        .await?;
        ctx.count(|c| c.mults += (scaled.len() + y2.len()) as u64);
        // Rounded up: a truncation errs by less than one ulp (vtwin_fixed::score_norm).
        (quotients, z2.add_public(me, 1), y2.add_public(me, 1))
    };
    Ok((
        SharedReciprocal {
            mantissa: y,
            scale_int,
            scale_frac,
        },
        quotients,
        z_up,
        y2_up,
    ))
}

impl SharedReciprocal {
    /// `1/x`. 1 round, 1 truncation per value.
    pub async fn value(&self, ctx: &Ctx) -> Result<Shared, MpcError> {
        scale_back(ctx, &self.mantissa, &self.scale_int, &self.scale_frac).await
    }

    /// `a/x` for |a| < 2^22 (the reference's `Reciprocal::divide`). 2 rounds, 2
    /// truncations per value.
    pub async fn divide(&self, ctx: &Ctx, a: &Shared) -> Result<Shared, MpcError> {
        let z = mul_trunc(ctx, a, &self.mantissa, FRAC_BITS).await?;
        scale_back(ctx, &z, &self.scale_int, &self.scale_frac).await
    }
}

/// `1/x` element-wise (twin of `vtwin_fixed::reciprocal`). 17 rounds.
pub async fn reciprocal(ctx: &Ctx, x: &Shared) -> Result<Shared, MpcError> {
    reciprocal_normalised(ctx, x).await?.value(ctx).await
}
