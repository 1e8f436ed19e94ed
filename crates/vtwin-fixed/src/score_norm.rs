//! The squared norm the gradient circuit clips on, per record, as the nodes compute it:
//!
//! ```text
//! norm2 = trunc(sum_k (r_k - pi_k)^2) + 2^(2L - F) trunc(Z' y2')
//! z_pk  = trunc(pm'_k u_pk)                          (P K products)
//! Z'    = trunc(2^F sum_(p,k) z_pk^2) + 1 ulp         (one inner product; scale 2^(32 + F))
//! y2'   = trunc(y^2) + 1 ulp                          (the reciprocal's mantissa squared)
//! ```
//!
//! with `pm'_k` the normalised numerators and `y` the mantissa of `r_k = trunc(pm'_k y)`
//! ([`Reciprocal::divide_fraction`]), `u_pk` the parties' score roots (scaled by 2^-L,
//! [`crate::score_root`]), `L` = [`NORM_SCALE_BITS`] and `F` = [`SCORE_NORM_FINE_BITS`].
//! Since `y` is one value per record, `sum_(p,k) (y z_pk)^2 = y^2 sum z_pk^2`: one product per
//! record instead of one per (party, component) (`trunc(z_pk y)` before 2026-11-29).
//!
//! Why it bounds the norm from below: a truncation errs by less than one ulp either way, so
//! adding one ulp rounds each factor up: `Z' > 2^(32+F) sum z^2` and `y2' > 2^32 y^2` (raw),
//! hence `Z' y2' > 2^(64+F) sum (y z_pk)^2` exactly, and the last truncation loses less than
//! one ulp at scale `2^(32+F)`: the second term is above `2^(2L) sum (y z_pk)^2 -
//! 2^(2L-32-F)`. `y z_pk` is within `2^-32 (u_pk + y)` of `r_k u_pk` (`protocols/clip-bound.md`
//! charges `2^-32 (4 + u_pk)`).
//!
//! Why `F`: the ulp added to `Z'` over-estimates the norm by up to `2^(2L-31-F) y2'` (on
//! average `2^(2L-32-F) y^2`), and the final truncation by up to `2^(2L-32-F)` more: with
//! `F = 0` that is about `2^-10 y^2`, a bias that would shrink records near a small clip (at
//! C = 1/16, `C'^2` is 0.0027); with `F = 6`, `2^-16 y^2`. The price is the two truncated
//! values `2^F` times larger (`truncation-failure.md`: their sites scale with the squared
//! score roots, 0.13 at the shipped Adult schema's maps, about 6,000 for the paper's Adult
//! model with its Beta parameters at their cap, against the clip's normalisation site of
//! 2^16): with `F = 6` the latter's truncation failures over 20000
//! openings stay below 1e-6 (`vtwin-model/tests/failure_bound.rs`; `F = 8` would not). A
//! record with `den = 0` has `pm' = 0`, so `z = 0` and `Z'` is one ulp: its second term is at
//! most `2^(2L-32-F) 577` (y = 23.3 there).
//!
//! MPC: `z` in the reciprocal's layer of `e`, `Z'` in its last Goldschmidt layer, `y2'` in
//! the quotients' layer, both sums in the layer after: no round of its own; per record
//! `5 P K + 15` ring elements between nodes for this part (`10 P K + 5` before).

use crate::clip_bound::NORM_SCALE_BITS;
use crate::reciprocal::Reciprocal;
use crate::trunc::Truncator;
use crate::value::{Fx, FRAC_BITS};

/// `F`: extra fraction bits of `Z'` and of `Z' y2'` (module docs). At most `2 L`.
pub const SCORE_NORM_FINE_BITS: u32 = 6;

// The second term is scaled back by 2^(2L - F).
const _: () = assert!(SCORE_NORM_FINE_BITS <= 2 * NORM_SCALE_BITS);

/// The largest `|X| / 2^64` at each of the score norm's truncation sites, per record, for
/// score roots bounded by `u_pk` with `s1 = sum_(p,k) u_pk` and `s2 = sum_(p,k) u_pk^2`: what
/// the truncation-failure bound charges (`protocols/truncation-failure.md`). Cost O(1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreNormSites {
    /// `z_pk = trunc(pm' u_pk)`, in units of its `u_pk`: 1.01 (pm' < 1 + 2^-31; exactly 0
    /// when den = 0).
    pub z_per_root: f64,
    /// `2^F sum z^2`: `2^F (1.03 s2 + 2^-30 s1)`.
    pub sum_z2: f64,
    /// `y^2`: 576 (y <= 24, reached when den = 0).
    pub y2: f64,
    /// `Z' y2'`: `2^F (2.26 s2 + 2^-28 s1 + 2^-28)` (`y z = pm' y u + y e0` with
    /// `pm' y <= R + 2^-32`, R = 1.5 + 2^-20 the largest responsibility, and y < 2.91, when
    /// den > 0; `Z'` is one ulp and `y2' <= 577` when den = 0).
    pub product: f64,
}

impl ScoreNormSites {
    /// The maxima for roots summing to `s1` with squares summing to `s2`.
    pub fn for_roots(s1: f64, s2: f64) -> ScoreNormSites {
        let fine = f64::from(1u32 << SCORE_NORM_FINE_BITS);
        ScoreNormSites {
            z_per_root: 1.01,
            sum_z2: fine * (1.03 * s2 + 2f64.powi(-30) * s1),
            y2: 576.0,
            product: fine * (2.26 * s2 + 2f64.powi(-28) * s1 + 2f64.powi(-28)),
        }
    }

    /// Their sum over one record's sites (the P K products `z` included).
    pub fn total(&self, s1: f64) -> f64 {
        self.z_per_root * s1 + self.sum_z2 + self.y2 + self.product
    }
}

/// `Z'` (raw, scale `2^(32 + F)`) and `y2'` (raw, scale 2^32) of one record (module docs),
/// with `pmn` its K normalised numerators and `root(k, p)` party p's score root for
/// component k. Truncations in this order: `z_pk` per component, the parties in order;
/// `Z'`; `y2'`. Cost: P K + 2 truncations.
pub fn score_norm_factors<T: Truncator + ?Sized>(
    recip: &Reciprocal,
    pmn: &[Fx],
    parties: usize,
    root: impl Fn(usize, usize) -> Fx,
    t: &mut T,
) -> (u128, u128) {
    let mut acc_z = 0u128;
    for (k, pk) in pmn.iter().enumerate() {
        for p in 0..parties {
            let z = t.trunc(pk.0.wrapping_mul(root(k, p).0), FRAC_BITS);
            acc_z = acc_z.wrapping_add(z.wrapping_mul(z));
        }
    }
    let z_up = t
        .trunc(acc_z.wrapping_mul(1u128 << SCORE_NORM_FINE_BITS), FRAC_BITS)
        .wrapping_add(1);
    (z_up, recip.mantissa_squared_up(t).0)
}

/// `norm2` of one record (module docs), with `r` its K responsibilities, `pi` the public
/// weights and the rest as in [`score_norm_factors`]. Truncations in this order: those of
/// [`score_norm_factors`]; the first sum; `Z' y2'`. Cost: P K + 4 truncations.
pub fn record_norm2<T: Truncator + ?Sized>(
    recip: &Reciprocal,
    pmn: &[Fx],
    r: &[Fx],
    pi: &[Fx],
    parties: usize,
    root: impl Fn(usize, usize) -> Fx,
    t: &mut T,
) -> Fx {
    debug_assert!(pmn.len() == r.len() && r.len() == pi.len(), "K differs");
    let (z_up, y2_up) = score_norm_factors(recip, pmn, parties, root, t);
    let acc_a = r.iter().zip(pi).fold(0u128, |acc, (rk, pk)| {
        let e = (*rk - *pk).0;
        acc.wrapping_add(e.wrapping_mul(e))
    });
    let norm_a = t.trunc(acc_a, FRAC_BITS);
    let norm_b = t.trunc(z_up.wrapping_mul(y2_up), FRAC_BITS);
    Fx(norm_a
        .wrapping_add(norm_b.wrapping_mul(1u128 << (2 * NORM_SCALE_BITS - SCORE_NORM_FINE_BITS))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trunc::{mask_from_rng, Floor, Probabilistic};
    use num_bigint::BigUint;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// A truncator that rounds up whenever it can (`floor + 1` unless exact): with [`Floor`]
    /// the two extremes of every legal rounding.
    struct Ceil;
    impl Truncator for Ceil {
        fn trunc(&mut self, x: u128, d: u32) -> u128 {
            (x >> d) + u128::from(x & ((1u128 << d) - 1) != 0)
        }
    }

    /// Records every truncation's output (the `z_pk` come first).
    struct Recording<'a> {
        inner: &'a mut dyn Truncator,
        out: Vec<u128>,
    }
    impl Truncator for Recording<'_> {
        fn trunc(&mut self, x: u128, d: u32) -> u128 {
            let v = self.inner.trunc(x, d);
            self.out.push(v);
            v
        }
    }

    fn big(v: u128) -> BigUint {
        BigUint::from(v)
    }

    fn to_f64(v: &BigUint) -> f64 {
        v.to_string().parse().expect("a number")
    }

    /// [`score_norm_factors`] under `t`, its `Z' y2'` (raw, scale `2^(64+F)`) against the
    /// exact `2^(64+F) y^2 sum z^2` for the `z` it produced, in big integers: whether it is
    /// above, the over-estimate of `2^(2L) sum (y z)^2` and `sum z^2`, in real units.
    fn check(
        recip: &Reciprocal,
        pmn: &[Fx],
        roots: &[Vec<Fx>],
        t: &mut dyn Truncator,
    ) -> (bool, f64, f64) {
        let mut rec = Recording {
            inner: t,
            out: Vec::new(),
        };
        let (z_up, y2_up) =
            score_norm_factors(recip, pmn, roots.len(), |k, p| roots[p][k], &mut rec);
        let zs = &rec.out[..pmn.len() * roots.len()];
        let s: BigUint = zs.iter().map(|&z| big(z) * big(z)).sum();
        let s_real = to_f64(&s) * 2f64.powi(-64);
        let exact = (s * big(recip.mantissa) * big(recip.mantissa)) << SCORE_NORM_FINE_BITS;
        let got = (big(z_up) * big(y2_up)) << 64;
        let over = (to_f64(&got) - to_f64(&exact))
            * 2f64.powi(2 * NORM_SCALE_BITS as i32 - 128 - SCORE_NORM_FINE_BITS as i32);
        (got > exact, over, s_real)
    }

    fn instance(rng: &mut ChaCha20Rng) -> (Reciprocal, Vec<Fx>, Vec<Vec<Fx>>) {
        let k_n = 1 + (rng.next_u32() % 20) as usize;
        let parties = 1 + (rng.next_u32() % 3) as usize;
        // Numerators of a den inside the reciprocal's window (below 2^32), score roots up to
        // 2^7 (some exactly 0).
        let pm: Vec<Fx> = (0..k_n)
            .map(|_| Fx(u128::from(rng.next_u64() >> (5 + rng.next_u32() % 59))))
            .collect();
        let den = pm.iter().fold(Fx::ZERO, |a, b| a + *b);
        let recip =
            Reciprocal::new_unchecked(if den == Fx::ZERO { Fx(1) } else { den }, &mut Floor);
        let pmn = pm
            .iter()
            .map(|&a| recip.normalise_fraction(a, &mut Floor))
            .collect();
        let roots = (0..parties)
            .map(|_| {
                (0..k_n)
                    .map(|_| match rng.next_u32() % 4 {
                        0 => Fx::ZERO,
                        _ => Fx(u128::from(rng.next_u64() >> (25 + rng.next_u32() % 39))),
                    })
                    .collect()
            })
            .collect();
        (recip, pmn, roots)
    }

    /// Both factors rounded up put `Z' y2'` strictly above `y^2 sum z^2` under the extremes
    /// of legal rounding (every truncation down, every one up) and under random masks; and
    /// the check has power: without the added ulps, rounding down falls below.
    #[test]
    fn rounded_up_factors_bound_the_score_norm_from_below() {
        let mut rng = ChaCha20Rng::seed_from_u64(29);
        let mut below_without = 0;
        let mut worst_over = 0f64;
        for case in 0..2000 {
            let (recip, pmn, roots) = instance(&mut rng);
            let mut mask_rng = ChaCha20Rng::seed_from_u64(case);
            let mut prob = Probabilistic::new(|| mask_from_rng(&mut mask_rng));
            for t in [&mut Floor as &mut dyn Truncator, &mut Ceil, &mut prob] {
                let (above, over, s) = check(&recip, &pmn, &roots, t);
                assert!(above, "case {case}: Z' y2' not above y^2 sum z^2");
                // Each factor at most 2 ulps above (a truncation errs by less than one):
                // 2^(2L) (2^-(31+F) y2' + 2^-31 sum z^2), the second relative 2^-31 / y^2 to
                // the term itself; y2' < 4.01 for den > 0.
                let bound = 2f64.powi(2 * NORM_SCALE_BITS as i32 - 31)
                    * (4.01 * 2f64.powi(-(SCORE_NORM_FINE_BITS as i32)) + s + 2f64.powi(-30));
                assert!(
                    over <= bound,
                    "case {case}: over-estimate {over:e} > {bound:e}"
                );
                worst_over = worst_over.max(over / bound);
            }
            // Without the added ulps, floor rounding leaves the product at or below the
            // exact one (the same z as Floor's).
            let z2: u128 = pmn
                .iter()
                .enumerate()
                .flat_map(|(k, pk)| roots.iter().map(move |r| (pk.0 * r[k].0) >> 32))
                .map(|z| z * z)
                .sum();
            let exact =
                (big(z2) * big(recip.mantissa) * big(recip.mantissa)) << SCORE_NORM_FINE_BITS;
            let floor_z = (z2 << SCORE_NORM_FINE_BITS) >> 32;
            let floor_y2 = (recip.mantissa * recip.mantissa) >> 32;
            if ((big(floor_z) * big(floor_y2)) << 64) < exact {
                below_without += 1;
            }
        }
        assert!(
            below_without > 1000,
            "only {below_without} of 2000 fall below without the ulps"
        );
        // The bound on the over-estimate is not loose by orders of magnitude.
        assert!(
            worst_over > 0.25,
            "largest over-estimate / bound {worst_over}"
        );
    }

    /// The whole norm against the two factors: the second term is `trunc(Z' y2')` scaled back
    /// by `2^(2L-F)`, the first the truncated sum of `(r - pi)^2`; a zero score root and a
    /// den = 0 record give the documented small second terms.
    #[test]
    fn record_norm2_assembles_the_two_terms() {
        let recip = Reciprocal::new_unchecked(Fx::from_f64(0.75).unwrap(), &mut Floor);
        let pmn = [Fx::from_f64(0.3).unwrap(), Fx::from_f64(0.45).unwrap()];
        let r: Vec<Fx> = pmn
            .iter()
            .map(|&a| recip.times_mantissa(a, &mut Floor))
            .collect();
        let pi = [Fx::from_f64(0.5).unwrap(); 2];
        let roots = [Fx::from_f64(0.25).unwrap(), Fx::ZERO];
        let got = record_norm2(&recip, &pmn, &r, &pi, 1, |k, _| roots[k], &mut Floor).to_f64();
        let want: f64 = r.iter().map(|v| (v.to_f64() - 0.5).powi(2)).sum::<f64>()
            + 2f64.powi(2 * NORM_SCALE_BITS as i32) * (r[0].to_f64() * 0.25).powi(2);
        // y z is within 2^-32 (u + y) of r u, amplified by 2^(2L).
        assert!((got - want).abs() < 1e-3, "{got} against {want}");
        // den = 0: z = 0, Z' one ulp, y = 23.3: at most 2^(2L-32-F) 577 beyond the first sum.
        let zero = Reciprocal::new_unchecked(Fx::ZERO, &mut Floor);
        let pmn0 = [Fx::ZERO; 2];
        let norm0 = record_norm2(
            &zero,
            &pmn0,
            &[Fx::ZERO; 2],
            &pi,
            1,
            |k, _| roots[k],
            &mut Floor,
        );
        let second = norm0.to_f64() - 0.5;
        assert!(
            second > 0.0
                && second
                    <= 544.0
                        * 2f64.powi(2 * NORM_SCALE_BITS as i32 - 32 - SCORE_NORM_FINE_BITS as i32),
            "{second}"
        );
    }
}
