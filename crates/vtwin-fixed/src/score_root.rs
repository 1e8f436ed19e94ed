//! A party's score roots `u_pk >= 2^-L sqrt(sum_j s_pkj^2)` (`L` =
//! [`NORM_SCALE_BITS`]), the upper bounds on its scores' norms that the circuit clips on
//! ([`crate::clip_bound`]), computed in exact integer arithmetic.
//!
//! The score of statistic j in component k is `s_kj = A_kj T_j + b_kj` on the encoded
//! values (raw, so the product is exact at scale 2^64). Each `|s_kj|` is rounded up to the
//! 2^-32 grid, `m_kj = ceil(|s_kj| 2^32)`, and the root is
//! `ceil(ceil_sqrt(sum_j m_kj^2) / 2^L)` raw. Every step rounds up, so `u` is an upper bound
//! on the exact `2^-L sqrt(sum_j s_kj^2)` with no floating-point argument, and overshoots it
//! by at most `2^-L sqrt(w) 2^-32 + 2^-32` (one grid step per coordinate, then two ceilings).
//!
//! Sparse form ([`ScoreRoots`]): a statistic that is 0 contributes `m(b_kj)^2`, whatever the
//! record, so `sum_j m_kj^2 = base_k + sum_{j : T_j != 0} (m(s_kj)^2 - m(b_kj)^2)` with
//! `base_k = sum_j m(b_kj)^2` computed once per map. A record of one-hot columns then costs
//! one term per column and component instead of one per statistic, and both forms give the
//! same root to the bit.
//!
//! Ranges: the public map check (`|A|, |b| < 2^22`, `sum_j (14 |A_kj| + |b_kj|)^2 <= 2^36`,
//! `|T| <= 14`) keeps `|s| 2^32 < 2^58`, each `m^2 < 2^116` and their sum over at most 2^12
//! terms below 2^128; every operation is checked, and a root above
//! [`score_root_max`] is refused.

use crate::clip_bound::{score_root_max, NORM_SCALE_BITS};
use crate::value::{Fx, FRAC_BITS};

/// Widest score map a root is computed for (statistics per party).
pub const SCORE_WIDTH_MAX: usize = 4096;

/// `m^2` for one coordinate: `m = ceil(|A T + b| 2^32)`, the score rounded up in magnitude to
/// the 2^-32 grid, squared (scale 2^64). None on overflow (outside every public map bound).
fn grid_square(a: Fx, t: Fx, b: Fx) -> Option<u128> {
    let s = a
        .signed()
        .checked_mul(t.signed())?
        .checked_add(b.signed().checked_mul(1i128 << FRAC_BITS)?)?;
    let mag = s.unsigned_abs();
    let m = (mag >> FRAC_BITS) + u128::from(mag & ((1u128 << FRAC_BITS) - 1) != 0);
    m.checked_mul(m)
}

/// The root `ceil(ceil_sqrt(sum2) / 2^L)` raw of a squared norm `sum2` at scale 2^64, or None
/// above [`score_root_max`].
fn root_of(sum2: u128) -> Option<Fx> {
    let mut r = sum2.isqrt();
    if r * r < sum2 {
        r += 1;
    }
    let l = NORM_SCALE_BITS;
    let u = (r >> l) + u128::from(r & ((1u128 << l) - 1) != 0);
    (u <= score_root_max().0).then_some(Fx(u))
}

/// The party's score root for one record and component from its dense statistics `stats`
/// and the component's rows `scale` (A) and `offset` (b) of the encoded map. None when the
/// lengths differ, w > [`SCORE_WIDTH_MAX`], or the root exceeds [`score_root_max`] (the
/// public map check makes that impossible for |T| <= 14). Cost O(w) integer operations.
pub fn score_root_raw(scale: &[Fx], stats: &[Fx], offset: &[Fx]) -> Option<Fx> {
    if scale.len() != stats.len() || offset.len() != stats.len() || stats.len() > SCORE_WIDTH_MAX {
        return None;
    }
    let mut sum = 0u128;
    for ((&a, &t), &b) in scale.iter().zip(stats).zip(offset) {
        sum = sum.checked_add(grid_square(a, t, b)?)?;
    }
    root_of(sum)
}

/// One party's encoded score map (K rows of w) with each component's `base_k = sum_j
/// m(b_kj)^2`, for roots from a record's nonzero statistics only (module docs).
#[derive(Clone, Debug)]
pub struct ScoreRoots<'a> {
    scale: &'a [Fx],
    offset: &'a [Fx],
    width: usize,
    base: Vec<u128>,
}

impl<'a> ScoreRoots<'a> {
    /// Precomputes the bases of the map `scale` (A) and `offset` (b), both K x `width`
    /// row-major. None when the shapes disagree, `width` is 0 or above [`SCORE_WIDTH_MAX`],
    /// or a base overflows. Cost O(K w).
    pub fn new(scale: &'a [Fx], offset: &'a [Fx], width: usize) -> Option<ScoreRoots<'a>> {
        if width == 0
            || width > SCORE_WIDTH_MAX
            || scale.len() != offset.len()
            || !scale.len().is_multiple_of(width)
        {
            return None;
        }
        let base = offset
            .chunks_exact(width)
            .map(|row| {
                row.iter().try_fold(0u128, |acc, &b| {
                    acc.checked_add(grid_square(Fx::ZERO, Fx::ZERO, b)?)
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ScoreRoots {
            scale,
            offset,
            width,
            base,
        })
    }

    /// Number of components K.
    pub fn components(&self) -> usize {
        self.base.len()
    }

    /// The root of component `k` for a record given by `entries` `(j, T_j)`: every nonzero
    /// statistic of the record exactly once, and any number of `(j, 0)` entries (they add
    /// nothing, so a caller pads every record to the same count and the work does not depend
    /// on which statistics are set). Equal to [`score_root_raw`] on the dense record. None
    /// when k or a j is out of range, or as [`score_root_raw`]. Cost O(entries).
    pub fn root(&self, k: usize, entries: &[(usize, Fx)]) -> Option<Fx> {
        let row = k.checked_mul(self.width)?;
        let mut sum = *self.base.get(k)?;
        let mut zero_part = 0u128;
        for &(j, t) in entries {
            if j >= self.width {
                return None;
            }
            let (a, b) = (self.scale[row + j], self.offset[row + j]);
            sum = sum.checked_add(grid_square(a, t, b)?)?;
            zero_part = zero_part.checked_add(grid_square(Fx::ZERO, Fx::ZERO, b)?)?;
        }
        // The base counted m(b_kj)^2 for every listed j; each is replaced by m(s_kj)^2 (the
        // same for T_j = 0), so the difference is exact and never negative.
        root_of(sum.checked_sub(zero_part)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> Fx {
        Fx::from_f64(v).unwrap()
    }

    #[test]
    fn roots_round_up_and_stay_tight() {
        // s = A T + b = 3 * 2 + 4 = 10 and 0 * 1 + 0: |s| = 10, root >= 10 / 2^L.
        let root = score_root_raw(&[f(3.0), f(0.0)], &[f(2.0), f(1.0)], &[f(4.0), f(0.0)]).unwrap();
        let exact = 10.0 / f64::from(1u32 << NORM_SCALE_BITS);
        // 10 2^(32 - L) is an integer: exactly representable, so no rounding at all.
        assert_eq!(root.to_f64(), exact);
        // sqrt(2) is not: rounded up by less than 2 ulps.
        let root = score_root_raw(&[f(1.0), f(1.0)], &[f(1.0), f(1.0)], &[f(0.0), f(0.0)]).unwrap();
        let exact = 2f64.sqrt() / f64::from(1u32 << NORM_SCALE_BITS);
        assert!(root.to_f64() >= exact && root.to_f64() < exact + 2.0 * 2f64.powi(-32));
        // Above the public maximum: refused.
        assert!(score_root_raw(&[f(1e6)], &[f(14.0)], &[f(0.0)]).is_none());
        assert!(score_root_max().to_f64() >= 2f64.powi(7));
        // A negative score rounds up in magnitude too: |-(1 + 2^-33)| -> 1 + 2^-32 on the grid.
        let s = grid_square(
            Fx::ONE,
            Fx::from_signed(-(1i128 << 32)),
            Fx::from_signed(-1),
        );
        assert_eq!(s, Some(((1u128 << 32) + 1).pow(2)));
    }

    #[test]
    fn sparse_roots_equal_dense_roots() {
        // K 2, w 4: a one-hot column (j 0..3) and a free coordinate (j 3).
        let scale = [1.0, 1.0, 1.0, 2.5, 1.0, 1.0, 1.0, -0.75].map(f);
        let offset = [-0.2, -0.5, -0.3, 0.125, -0.6, -0.1, -0.3, -1.5].map(f);
        let roots = ScoreRoots::new(&scale, &offset, 4).unwrap();
        assert_eq!(roots.components(), 2);
        for (dense, sparse) in [
            (vec![0.0, 1.0, 0.0, -3.25], vec![(1, 1.0), (3, -3.25)]),
            (vec![0.0, 0.0, 0.0, 0.0], vec![(0, 0.0), (0, 0.0)]),
            (vec![1.0, 0.0, 0.0, 0.0], vec![(0, 1.0), (2, 0.0)]),
        ] {
            let dense: Vec<Fx> = dense.into_iter().map(f).collect();
            let sparse: Vec<(usize, Fx)> = sparse.into_iter().map(|(j, v)| (j, f(v))).collect();
            for k in 0..2 {
                let cols = k * 4..(k + 1) * 4;
                let want = score_root_raw(&scale[cols.clone()], &dense, &offset[cols]).unwrap();
                assert_eq!(roots.root(k, &sparse), Some(want));
            }
        }
        // Out of range: a component or a statistic index.
        assert_eq!(roots.root(2, &[]), None);
        assert_eq!(roots.root(0, &[(4, Fx::ONE)]), None);
        assert!(ScoreRoots::new(&scale, &offset[..7], 4).is_none());
        assert!(ScoreRoots::new(&scale, &offset, 3).is_none());
    }
}
