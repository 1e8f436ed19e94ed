//! The clip that provably holds: the largest circuit clip `C'` for which every record's
//! revealed contribution has L2 norm at most the nominal `C`, after every fixed-point error
//! of the gradient circuit (derivation: `protocols/clip-bound.md`).
//!
//! One record's released contribution (exact, from the circuit's fixed-point values) is
//! `u = [w_k - pi_k c ; w_k s_kj]` with `w_k = trunc(c r_k)`, `c` the clip factor and
//! `s_kj = A_kj T_j + b_kj` the record's score from the encoded public maps and its encoded
//! statistics. The circuit clips on
//! `norm2 = trunc(sum_k (r_k - pi_k)^2) + 2^(2L-F) trunc(Z' y2')` ([`crate::score_norm`]) with
//! `Z' > 2^(32+F) sum_(p,k) z_pk^2` (raw), `z_pk = trunc(pm'_k u_pk)`, and `y2' > y^2` (the normalised
//! numerator `pm'_k` and the reciprocal's mantissa `y < 2.91` of `r_k = trunc(pm'_k y)`, so
//! `Z' y2' > sum (y z_pk)^2` and `|y z_pk - r_k u_pk| < 2^-32 (2.91 + u_pk)`, charged as
//! `2^-32 (4 + u_pk)`) and the party's `u_pk >= 2^-L sqrt(sum_j s_pkj^2)` (rounded up,
//! [`crate::score_root`]); `L` = [`NORM_SCALE_BITS`] keeps every truncated value small (so the
//! probabilistic truncation's failure probability stays small) at an absolute error of
//! `2^(2L-32)` on `norm2`.
//!
//! With `V^2 = sum (r - pi)^2 + sum_k r_k^2 S_k` (the exact norm the clip should see):
//! `norm2 >= V^2 - a V - b0`, `a = 2^(L-31) sqrt(P K) (4 + u_max)` (u_max =
//! [`score_root_max`], the parties' public input bound), `b0 = 2^(2L-32) + 2^-32 + a^2 / 4`. Whether or
//! not it clips, `c V <= (1 + 2^-21) (C' + kappa a + kappa b0 / (2 C'))` with
//! `kappa = C' / sqrt(C'^2 - 2^-32)` ([`crate::clip`]'s one-sided factor). The rounding of
//! `w` adds `|delta| <= 2^-32 sqrt(K (1 + P Qmax))`, and the batch-level truncations of the
//! released sums (coupled masks) move a neighbouring output by at most
//! `2^-31 sqrt(K + sum (1 + |A|)^2)`. [`effective_clip`] picks the largest `C'` on the
//! fixed-point grid whose total is at most `C`.
//!
//! Cost: O(1) f64 arithmetic per call.

use crate::value::{Fx, FRAC_BITS};

/// `L`: the score roots are sent scaled by 2^-L, and the second norm sum is scaled back by
/// 2^(2L) (2^(2L-F) after its truncation at scale 2^(32+F), [`crate::score_norm`]: absolute
/// error 2^(2L-32-F) = 2^-16 on |g|^2; 2^-10 before 2026-11-29, which `b0` still charges).
pub const NORM_SCALE_BITS: u32 = 11;

/// Largest squared score norm per party and component, `sum_j s_pkj^2 <= 2^36`: enforced on
/// the public maps (`sum_j (T_MAX |A_kj| + |b_kj|)^2 <= 2^36`), so an honest party never exceeds it.
pub const SCORE_NORM2_MAX: f64 = 68_719_476_736.0;

/// Largest |T| of an encoded sufficient statistic (the codec's bound).
pub const STAT_ABS_MAX: f64 = 14.0;

/// Exclusive bound on `B (14 |A| + |b|)` per public score-map coordinate for batches of B
/// rows: 2^22 (keeps `M_p` and `G_p` inside the fixed-point windows the truncation-failure
/// bound charges). Checked by the coordinator, each party and every node.
pub const MAP_BATCH_LIMIT: f64 = 4_194_304.0;

/// Largest responsibility `r_k` the divide can return for numerators `0 <= pm_k <= den`
/// (1.5 + 2^-20: with the earlier divide a denominator of one ulp rounded the scaled
/// numerator by up to half; `Reciprocal::divide_fraction` stays below 1 + 2^-27 + 2^-31, so this
/// bound is loose and safe).
pub const RESPONSIBILITY_MAX: f64 = 1.5 + 1.0 / 1_048_576.0;

/// Smallest and largest nominal clip accepted.
pub const CLIP_RANGE: (f64, f64) = (0.0625, 1024.0);

/// Largest score root the party sends: `2^-L sqrt(2^36)` plus rounding (raw ulps added).
pub fn score_root_max() -> Fx {
    let raw = (SCORE_NORM2_MAX.sqrt() * f64::from(1u32 << (FRAC_BITS - NORM_SCALE_BITS))) as u128;
    Fx(raw + 2)
}

/// Largest squared norm the circuit can form for P parties and K components:
/// `K R^2 + 2^(2L) R^2 P K u_max^2` (R = [`RESPONSIBILITY_MAX`], u_max = [`score_root_max`]),
/// inflated by 2^-20. The clip factor reads the norm mod 2^80 raw, so it must stay below 2^48
/// ([`crate::clip::CLIP_X_LIMIT`]): P K up to about 1800. Conservative: it bounds every
/// responsibility by R separately, while they sum to about 1 (a bound using that would allow
/// far larger K).
pub fn norm2_max(parties: usize, components: usize) -> f64 {
    let u = score_root_max().to_f64();
    norm2_bound(components, (parties * components) as f64 * u * u)
}

/// Largest squared norm the circuit can form for K components and score roots whose squares
/// sum to at most `roots2` over (party, component): `K R^2 + 2^(2L) R^2 roots2`, inflated by
/// 2^-20. The truncations of the two sums and the score norm's rounded-up factors (up to about
/// 2^-13 on |g|^2, `y z ~ r u`) are inside it through `R`: a responsibility is at most
/// `1 + 2^-27 + 2^-31` (the divide's accuracy), far below `R = 1.5 + 2^-20`, and a den = 0
/// row's norm is at most `sum pi^2 + 0.0088 < K R^2`.
pub fn norm2_bound(components: usize, roots2: f64) -> f64 {
    let r2 = RESPONSIBILITY_MAX * RESPONSIBILITY_MAX;
    (components as f64 * r2 + 2f64.powi(2 * NORM_SCALE_BITS as i32) * r2 * roots2)
        * (1.0 + 2f64.powi(-20))
}

/// The shape of one iteration's circuit as the clip bound needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClipShape {
    /// Components K.
    pub components: usize,
    /// Parties P.
    pub parties: usize,
    /// Output dimension d = K + sum_p K w_p.
    pub dim: usize,
}

/// The circuit clip and the terms of its derivation (all absolute, in gradient units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipBound {
    /// The nominal clip C: the sensitivity the accountant uses.
    pub nominal: f64,
    /// The clip the circuit compares against, C' (on the fixed-point grid).
    pub circuit: Fx,
    /// Upper bound on `c V` (the clipped exact norm), `(1 + 2^-21)(C' + kappa a + kappa b0 / 2C')`.
    pub clipped_norm: f64,
    /// Upper bound on the rounding of `w` carried into the released contribution.
    pub w_rounding: f64,
    /// Upper bound on what the batch-level truncations add between neighbouring outputs.
    pub batch_rounding: f64,
}

impl ClipBound {
    /// Upper bound on the L2 distance between the released sums of two neighbouring batches
    /// (add or remove one record): `clipped_norm + w_rounding + batch_rounding <= nominal`.
    pub fn sensitivity(&self) -> f64 {
        self.clipped_norm + self.w_rounding + self.batch_rounding
    }

    /// Upper bound on one record's own released contribution `|u|`.
    pub fn record_norm(&self) -> f64 {
        self.clipped_norm + self.w_rounding
    }
}

/// Why no circuit clip exists.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClipBoundError {
    /// The nominal clip is outside [`CLIP_RANGE`] or not finite.
    #[error("clip {0} is outside [1/16, 1024]")]
    OutOfRange(f64),
    /// K, P or d is zero or inconsistent.
    #[error("circuit shape K = {components}, P = {parties}, d = {dim} is not valid")]
    Shape {
        /// K.
        components: usize,
        /// P.
        parties: usize,
        /// d.
        dim: usize,
    },
}

/// The coefficient `a = 2^(L-31) sqrt(P K) (4 + u_max)` of the norm's rounding bound
/// `2^(2L) sum (y z)^2 >= Y^2 - a Y` (module docs; `protocols/clip-bound.md`), for P `parties`
/// and K `components`. Cost O(1).
pub fn score_product_slack(parties: usize, components: usize) -> f64 {
    // (y z_pk)^2 >= (r_k u_pk)^2 - 2 eps r_k u_pk with eps = 2^-32 (4 + u_max) (the score
    // norm is formed from pm' and the mantissa, not from r: |y z - r u| < 2^-32 (2.91 + u),
    // charged as before), then Cauchy-Schwarz over the P K terms.
    2f64.powi(NORM_SCALE_BITS as i32 - 31)
        * ((parties * components) as f64).sqrt()
        * (4.0 + score_root_max().to_f64())
}

fn terms(c_prime: f64, shape: ClipShape) -> (f64, f64, f64) {
    let (k, p, d) = (
        shape.components as f64,
        shape.parties as f64,
        shape.dim as f64,
    );
    let ulp = 2f64.powi(-(FRAC_BITS as i32));
    let l = NORM_SCALE_BITS as i32;
    let a = score_product_slack(shape.parties, shape.components);
    // a^2 / 4: the roots are rounded up, so the Cauchy-Schwarz step bounds Y^2 - a Y with
    // Y >= V (not V itself); y^2 - a y >= V^2 - a V - a^2 / 4 for y >= V.
    let b0 = 2f64.powi(2 * l - 32) + ulp + a * a / 4.0;
    let kappa = c_prime / (c_prime * c_prime - ulp).sqrt();
    let clipped =
        (1.0 + crate::clip::CLIP_REL_EXCESS) * (c_prime + kappa * a + kappa * b0 / (2.0 * c_prime));
    let w_rounding = ulp * (k * (1.0 + p * SCORE_NORM2_MAX)).sqrt();
    // sum_(p,k,j) (1 + |A|)^2 <= 2 (d - K) + 2 sum A^2, and per (p, k)
    // sum_j A^2 <= Qmax / T_MAX^2 (from the public map check).
    let a2 = p * k * SCORE_NORM2_MAX / (STAT_ABS_MAX * STAT_ABS_MAX);
    let batch = 2.0 * ulp * (k + 2.0 * (d - k) + 2.0 * a2).sqrt();
    // f64 rounding in the lines above is far below 2^-40 relative: inflate by that.
    let up = 1.0 + 2f64.powi(-40);
    (clipped * up, w_rounding * up, batch * up)
}

/// The largest circuit clip `C'` (a multiple of 2^-32) whose sensitivity bound is at most
/// `nominal` for this shape (module docs). Typical margin at C = 1, K = 20, P = 2,
/// d = 3000: about 1.75e-3 (C' ~ 0.99825).
pub fn effective_clip(nominal: f64, shape: ClipShape) -> Result<ClipBound, ClipBoundError> {
    if !(nominal >= CLIP_RANGE.0 && nominal <= CLIP_RANGE.1) {
        return Err(ClipBoundError::OutOfRange(nominal));
    }
    if shape.components == 0 || shape.parties == 0 || shape.dim < shape.components {
        return Err(ClipBoundError::Shape {
            components: shape.components,
            parties: shape.parties,
            dim: shape.dim,
        });
    }
    let bound_for = |c_raw: u128| {
        let c = Fx(c_raw).to_f64();
        let (clipped_norm, w_rounding, batch_rounding) = terms(c, shape);
        ClipBound {
            nominal,
            circuit: Fx(c_raw),
            clipped_norm,
            w_rounding,
            batch_rounding,
        }
    };
    // A first guess from the linearised bound, then step down until the exact bound holds.
    let (clipped, w, b) = terms(nominal, shape);
    let guess = nominal - (clipped - nominal) - w - b;
    let mut raw = (guess * 2f64.powi(FRAC_BITS as i32)).floor() as u128;
    loop {
        let bound = bound_for(raw);
        if bound.sensitivity() <= nominal {
            return Ok(bound);
        }
        // Each step removes a relative 2^-24; the guess is within a few steps.
        raw -= (raw >> 24).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADULT: ClipShape = ClipShape {
        components: 20,
        parties: 2,
        dim: 3000,
    };

    #[test]
    fn the_circuit_clip_is_the_largest_grid_value_whose_bound_holds() {
        for c in [0.0625, 0.5, 1.0, 3.0, 1024.0] {
            let b = effective_clip(c, ADULT).unwrap();
            assert!(b.sensitivity() <= c, "C = {c}: {b:?}");
            // One step up the grid breaks the bound or is within 2^-20 relative of it.
            let (up, _, _) = terms(
                Fx(b.circuit.raw() + (b.circuit.raw() >> 20)).to_f64(),
                ADULT,
            );
            assert!(up + b.w_rounding + b.batch_rounding > c * (1.0 - 2f64.powi(-19)));
            println!(
                "C = {c}: C' = {:.9} (margin {:.3e}), clipped {:.3e}, w {:.3e}, batch {:.3e}",
                b.circuit.to_f64(),
                c - b.circuit.to_f64(),
                b.clipped_norm,
                b.w_rounding,
                b.batch_rounding
            );
        }
        // The margin is small: 1.75e-3 at C = 1 (9.6e-4 before the score-root products were
        // formed beside the divide's quotients).
        let one = effective_clip(1.0, ADULT).unwrap();
        assert!(1.0 - one.circuit.to_f64() < 2e-3, "{one:?}");
    }

    #[test]
    fn out_of_range_clips_and_shapes_are_refused() {
        assert!(matches!(
            effective_clip(0.01, ADULT),
            Err(ClipBoundError::OutOfRange(_))
        ));
        assert!(effective_clip(f64::NAN, ADULT).is_err());
        assert!(effective_clip(2000.0, ADULT).is_err());
        let bad = ClipShape {
            components: 0,
            ..ADULT
        };
        assert!(matches!(
            effective_clip(1.0, bad),
            Err(ClipBoundError::Shape { .. })
        ));
    }
}
