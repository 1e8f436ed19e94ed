//! A party's score roots `u_pk >= 2^-L sqrt(sum_j s_pkj^2)` (`L` =
//! [`NORM_SCALE_BITS`]), the upper bounds on its scores' norms that the circuit clips on
//! ([`crate::clip_bound`]), computed in exact integer arithmetic.
//!
//! The score of statistic j in component k is `s_kj = A_kj T_j + b_kj` on the encoded
//! values (raw, so the product is exact at scale 2^64). Each `|s_kj|` is rounded up to the
//! 2^-32 grid, `m_kj = ceil(|s_kj| 2^32)`, and the root is
//! `ceil(ceil_sqrt(sum_j m_kj^2) / 2^L)` raw. Every step rounds up, so `u` is an upper bound
//! on the exact `2^-L sqrt(sum_j s_kj^2)` with no floating-point argument, and overshoots it
//! by less than `2^-L (sqrt(w) + 1) 2^-32 + 2^-32` (one grid step per coordinate, the ceiled
//! square root, then the ceiled division): under 2 ulps for w <= 2^12.
//!
//! Sparse form ([`ScoreRoots`]): a statistic that is 0 contributes `m(b_kj)^2`, whatever the
//! record, so `sum_j m_kj^2 = base_k + sum_{j : T_j != 0} (m(s_kj)^2 - m(b_kj)^2)` with
//! `base_k = sum_j m(b_kj)^2` computed once per map. A record of one-hot columns then costs
//! one term per column and component instead of one per statistic, and both forms give the
//! same root to the bit.
//!
//! Ranges: the public map check (`|A|, |b| < 2^22`, `sum_j (14 |A_kj| + |b_kj|)^2 <= 2^36`,
//! `|T| <= 14`) keeps `|s| 2^32 < 2^58`, each `m^2 < 2^116`, the dense sum over at most 2^12
//! terms below 2^128 and, by the second bound, every sum here (the sparse form's base plus
//! its slots' terms included) below 2^113; every operation is checked all the same (an
//! overflow refuses, it never under-bounds), and a root above
//! [`crate::clip_bound::score_root_max`] is refused.

use crate::clip_bound::NORM_SCALE_BITS;
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

/// [`crate::clip_bound::score_root_max`] raw, once (`2^39 + 2`; a test checks it against
/// the function).
const ROOT_MAX_RAW: u128 = (1 << 39) + 2;

/// The root `ceil(ceil_sqrt(sum2) / 2^L)` raw of a squared norm `sum2` at scale 2^64, or None
/// above [`crate::clip_bound::score_root_max`].
fn root_of(sum2: u128) -> Option<Fx> {
    let mut r = sum2.isqrt();
    if r * r < sum2 {
        r += 1;
    }
    let l = NORM_SCALE_BITS;
    let u = (r >> l) + u128::from(r & ((1u128 << l) - 1) != 0);
    (u <= ROOT_MAX_RAW).then_some(Fx(u))
}

/// The party's score root for one record and component from its dense statistics `stats`
/// and the component's rows `scale` (A) and `offset` (b) of the encoded map. None when the
/// lengths differ, w > [`SCORE_WIDTH_MAX`], or the root exceeds
/// [`crate::clip_bound::score_root_max`] (the public map check makes that impossible for
/// |T| <= 14). Cost O(w) integer operations.
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

/// One record's statistics as [`ScoreRoots::root`] reads them: its nonzero statistics
/// `(j, T_j)` in increasing j, then `(0, 0)` entries up to a fixed number of slots, so that
/// every record (a padding row's zero statistics included) takes the same work. Built only
/// from the dense row ([`SparseRow::set`]), so no nonzero statistic can be left out or
/// counted twice.
#[derive(Clone)]
pub struct SparseRow {
    entries: Vec<(usize, Fx)>,
    slots: usize,
    width: usize,
}

impl std::fmt::Debug for SparseRow {
    /// Shape only: the entries are a record's statistics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseRow")
            .field("slots", &self.slots)
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}

impl SparseRow {
    /// An empty row of `slots` entries (the most nonzero statistics a record can have).
    pub fn with_slots(slots: usize) -> SparseRow {
        SparseRow {
            entries: Vec::with_capacity(slots),
            slots,
            width: 0,
        }
    }

    /// Sets the row from the dense statistics `stats` (w values). Errs with the number of
    /// nonzero statistics when it exceeds the slots (the row is then empty, and every root
    /// of it refused). Cost O(w).
    pub fn set(&mut self, stats: &[Fx]) -> Result<(), usize> {
        self.entries.clear();
        self.width = stats.len();
        self.entries.extend(
            stats
                .iter()
                .enumerate()
                .filter(|(_, t)| t.raw() != 0)
                .map(|(j, &t)| (j, t)),
        );
        let nonzero = self.entries.len();
        if nonzero > self.slots {
            self.entries.clear();
            self.width = usize::MAX;
            return Err(nonzero);
        }
        self.entries.resize(self.slots, (0, Fx::ZERO));
        Ok(())
    }
}

/// One party's encoded score map (K rows of w) with each coordinate's zero-statistic term
/// `m(b_kj)^2` and each component's `base_k = sum_j m(b_kj)^2`, for roots from a record's
/// nonzero statistics only (module docs).
#[derive(Clone, Debug)]
pub struct ScoreRoots<'a> {
    scale: &'a [Fx],
    offset: &'a [Fx],
    width: usize,
    /// `m(b_kj)^2`, K x w.
    zero: Vec<u128>,
    base: Vec<u128>,
}

impl<'a> ScoreRoots<'a> {
    /// Precomputes the zero-statistic terms and bases of the map `scale` (A) and `offset` (b),
    /// both `components` x `width` row-major. None when the shapes disagree, `width` is above
    /// [`SCORE_WIDTH_MAX`], or a base overflows. Cost O(K w).
    pub fn new(
        scale: &'a [Fx],
        offset: &'a [Fx],
        components: usize,
        width: usize,
    ) -> Option<ScoreRoots<'a>> {
        if width > SCORE_WIDTH_MAX
            || scale.len() != components.checked_mul(width)?
            || offset.len() != scale.len()
        {
            return None;
        }
        let zero = offset
            .iter()
            .map(|&b| grid_square(Fx::ZERO, Fx::ZERO, b))
            .collect::<Option<Vec<_>>>()?;
        let base = (0..components)
            .map(|k| {
                zero[k * width..(k + 1) * width]
                    .iter()
                    .try_fold(0u128, |acc, &z| acc.checked_add(z))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ScoreRoots {
            scale,
            offset,
            width,
            zero,
            base,
        })
    }

    /// Number of components K.
    pub fn components(&self) -> usize {
        self.base.len()
    }

    /// The root of component `k` for the record `row`: equal to [`score_root_raw`] on its
    /// dense statistics. None when k is out of range, the row is not of this map's width (or
    /// was refused by [`SparseRow::set`]), or as [`score_root_raw`]. Cost O(slots).
    pub fn root(&self, k: usize, row: &SparseRow) -> Option<Fx> {
        if row.width != self.width {
            return None;
        }
        let at = k.checked_mul(self.width)?;
        let mut sum = *self.base.get(k)?;
        let mut zero_part = 0u128;
        for &(j, t) in &row.entries {
            let (a, b) = (*self.scale.get(at + j)?, *self.offset.get(at + j)?);
            // Bounded by the public map check (sum_j (14 |A| + |b|)^2 <= 2^36, so below
            // 2^113 with the slots' terms); checked all the same.
            sum = sum.checked_add(grid_square(a, t, b)?)?;
            zero_part = zero_part.checked_add(self.zero[at + j])?;
        }
        // The base counted m(b_kj)^2 for every listed j; each is replaced by m(s_kj)^2 (the
        // same for T_j = 0), so the difference is exact and never negative.
        root_of(sum.checked_sub(zero_part)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clip_bound::score_root_max;

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
        assert_eq!(score_root_max().raw(), ROOT_MAX_RAW);
        // A score off the 2^-32 grid rounds up in magnitude, negative or not: 2^-32 * -(1/2)
        // = -2^-33 -> 2^-32 (m = 1), and 2^-32 * (1/2) - 1 = -(1 - 2^-33) -> 1 (m = 2^32).
        let half = Fx::from_signed(1i128 << 31);
        let minus_half = Fx::from_signed(-(1i128 << 31));
        assert_eq!(grid_square(Fx::from_raw(1), minus_half, Fx::ZERO), Some(1));
        assert_eq!(grid_square(Fx::from_raw(1), half, Fx::ZERO), Some(1));
        assert_eq!(
            grid_square(Fx::from_raw(1), half, Fx::from_signed(-(1i128 << 32))),
            Some(1u128 << 64)
        );
    }

    #[test]
    fn sparse_roots_equal_dense_roots() {
        // K 2, w 4: a one-hot column (j 0..3) and a free coordinate (j 3).
        let scale = [1.0, 1.0, 1.0, 2.5, 1.0, 1.0, 1.0, -0.75].map(f);
        let offset = [-0.2, -0.5, -0.3, 0.125, -0.6, -0.1, -0.3, -1.5].map(f);
        let roots = ScoreRoots::new(&scale, &offset, 2, 4).unwrap();
        assert_eq!(roots.components(), 2);
        let mut row = SparseRow::with_slots(2);
        for dense in [
            [0.0, 1.0, 0.0, -3.25],
            [0.0, 0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0, 0.0],
        ] {
            let dense = dense.map(f);
            row.set(&dense).unwrap();
            for k in 0..2 {
                let cols = k * 4..(k + 1) * 4;
                let want = score_root_raw(&scale[cols.clone()], &dense, &offset[cols]).unwrap();
                assert_eq!(roots.root(k, &row), Some(want));
            }
        }
        // Out of range: a component; a row of another width; more nonzeros than slots.
        assert_eq!(roots.root(2, &row), None);
        row.set(&[Fx::ONE; 3]).unwrap_err();
        assert_eq!(roots.root(0, &row), None);
        row.set(&[f(1.0), f(0.0), f(2.0)]).unwrap();
        assert_eq!(roots.root(0, &row), None);
        assert_eq!(row.set(&[Fx::ONE; 4]), Err(4));
        assert_eq!(roots.root(0, &row), None);
        assert!(ScoreRoots::new(&scale, &offset[..7], 2, 4).is_none());
        assert!(ScoreRoots::new(&scale, &offset, 3, 3).is_none());
        // A party without statistics: every root 0; slots padded past the map: refused.
        let empty = ScoreRoots::new(&[], &[], 3, 0).unwrap();
        let mut row = SparseRow::with_slots(0);
        row.set(&[]).unwrap();
        assert_eq!(empty.root(2, &row), Some(Fx::ZERO));
        let mut row = SparseRow::with_slots(2);
        row.set(&[]).unwrap();
        assert_eq!(empty.root(0, &row), None);
    }
}
