//! What a compute node checks of the coordinator's public side before it runs the circuit:
//! every public bound that the clip's proof (`protocols/clip-bound.md`) and the
//! truncation-failure bound (`protocols/truncation-failure.md`) assume, recomputed exactly
//! from the encoded values the circuit will use. Why at the node: the coordinator builds the
//! public side ([`crate::coordinator::circuit_public`]) under these bounds, but a coordinator
//! that deviates (a clip above the derived C', weights outside [0, 1], an uncapped score map)
//! would void the sensitivity C that every epsilon is computed for, and one honest node
//! suffices to stop it. An honest coordinator's public side always passes (the in-memory
//! `mpc` backend runs this check on every iteration).

use vtwin_fixed::clip::CLIP_X_LIMIT;
use vtwin_fixed::clip_bound::{
    effective_clip, norm2_max, ClipBoundError, ClipShape, MAP_BATCH_LIMIT, SCORE_NORM2_MAX,
    STAT_ABS_MAX,
};
use vtwin_fixed::{Fx, FRAC_BITS};
use vtwin_mpc::gradient::CircuitPublic;

/// [`MAP_BATCH_LIMIT`] (exclusive bound on `B (14 |A| + |b|)`, 2^22) raw, at scale 2^32.
const MAP_ENTRY_LIMIT_RAW: u128 = (MAP_BATCH_LIMIT as u128) << FRAC_BITS;
/// [`SCORE_NORM2_MAX`] (largest `sum_j (14 |A| + |b|)^2` per party and component, 2^36) raw,
/// at scale 2^64.
const MAP_NORM2_LIMIT_RAW: u128 = (SCORE_NORM2_MAX as u128) << (2 * FRAC_BITS);
/// [`STAT_ABS_MAX`] (largest |T| of an encoded statistic) as an integer.
const STAT_ABS: u128 = STAT_ABS_MAX as u128;

/// A public side outside the bounds the clip's proof assumes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BoundsError {
    /// The nominal clip or the shape is outside what the proof covers.
    #[error(transparent)]
    Clip(#[from] ClipBoundError),
    /// The circuit clip is not the C' derived from the nominal clip and the shape.
    #[error(
        "circuit clip {got} (raw) is not the derived clip {want} (raw) for nominal C {nominal}"
    )]
    CircuitClip {
        /// The public side's raw C'.
        got: u128,
        /// `effective_clip(C, shape)`'s raw C'.
        want: u128,
        /// The nominal clip C.
        nominal: f64,
    },
    /// The shape's squared norm could leave the clip factor's 80-bit window.
    #[error("{parties} parties x {components} components: the squared norm could leave the clip's window")]
    NormWindow {
        /// P.
        parties: usize,
        /// K.
        components: usize,
    },
    /// A mixture weight outside [0, 1].
    #[error("mixture weight {component} is outside [0, 1]")]
    Weight {
        /// k.
        component: usize,
    },
    /// The weights sum to more than 1 plus the encoding's K ulps.
    #[error("the mixture weights sum to more than 1 (+ K ulps)")]
    WeightSum,
    /// A score-map coordinate with `B (14 |A| + |b|) >= 2^22`.
    #[error("party {party}, coordinate {index}: B (14 |A| + |b|) is not below 2^22")]
    MapEntry {
        /// p.
        party: usize,
        /// The coordinate's index in the K x w_p map.
        index: usize,
    },
    /// A party and component with `sum_j (14 |A| + |b|)^2 > 2^36`.
    #[error("party {party}, component {component}: sum_j (14 |A| + |b|)^2 is above 2^36")]
    MapNorm {
        /// p.
        party: usize,
        /// k.
        component: usize,
    },
}

/// |x| of a raw ring value read as a signed integer.
fn magnitude(x: Fx) -> u128 {
    x.signed().unsigned_abs()
}

/// Checks `public` against the nominal clip C of the job's terms, exactly on the encoded
/// values: C' equals `effective_clip(C, shape)`, the shape keeps the squared norm in the clip
/// factor's window, every weight is in [0, 1] and they sum to at most 1 + K ulps, and every
/// party's map satisfies `B (14 |A| + |b|) < 2^22` per coordinate and
/// `sum_j (14 |A| + |b|)^2 <= 2^36` per component. Cost O(d) integer operations.
pub fn check(public: &CircuitPublic, nominal: f64) -> Result<(), BoundsError> {
    let (k, parties) = (public.components, public.parties.len());
    let shape = ClipShape {
        components: k,
        parties,
        dim: public.dim(),
    };
    let want = effective_clip(nominal, shape)?.circuit;
    if want != public.clip {
        return Err(BoundsError::CircuitClip {
            got: public.clip.raw(),
            want: want.raw(),
            nominal,
        });
    }
    if norm2_max(parties, k) >= CLIP_X_LIMIT {
        return Err(BoundsError::NormWindow {
            parties,
            components: k,
        });
    }
    let one = Fx::ONE.raw();
    let mut sum: u128 = 0;
    for (component, w) in public.pi.iter().enumerate() {
        // Raw values at or above 2^127 are negative in the ring.
        if w.raw() > one {
            return Err(BoundsError::Weight { component });
        }
        sum += w.raw();
    }
    if sum > one + k as u128 {
        return Err(BoundsError::WeightSum);
    }
    let b = public.batch as u128;
    for (party, map) in public.parties.iter().enumerate() {
        let mut norm2: u128 = 0;
        for (index, (a, o)) in map.scale.iter().zip(&map.offset).enumerate() {
            let entry = STAT_ABS
                .checked_mul(magnitude(*a))
                .and_then(|v| v.checked_add(magnitude(*o)))
                .filter(|v| v.checked_mul(b).is_some_and(|x| x < MAP_ENTRY_LIMIT_RAW));
            let Some(v) = entry else {
                return Err(BoundsError::MapEntry { party, index });
            };
            // v < 2^54, so v^2 < 2^108 and a row of w_p < 2^19 coordinates sums below 2^127.
            norm2 = norm2.saturating_add(v * v);
            if map.width > 0 && (index + 1) % map.width == 0 {
                if norm2 > MAP_NORM2_LIMIT_RAW {
                    return Err(BoundsError::MapNorm {
                        party,
                        component: index / map.width,
                    });
                }
                norm2 = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::{circuit_public, ScoreMap};

    /// An honest public side for K = 2, two parties of widths 2 and 3, B = 10.
    fn honest() -> CircuitPublic {
        let scale = [vec![1.0, -2.0, 0.5, 3.0], vec![1.0; 6]];
        let offset = [vec![-0.25, 0.5, 1.0, -1.0], vec![-0.5; 6]];
        let maps: Vec<ScoreMap<'_>> = [2, 3]
            .iter()
            .enumerate()
            .map(|(p, &width)| ScoreMap {
                width,
                scale: &scale[p],
                offset: &offset[p],
                integer_stats: p == 1,
            })
            .collect();
        circuit_public(10, &[0.3, 0.7], 1.0, &maps).unwrap()
    }

    #[test]
    fn an_honest_public_side_passes() {
        check(&honest(), 1.0).unwrap();
    }

    #[test]
    fn a_clip_other_than_the_derived_one_is_refused() {
        let mut p = honest();
        // The nominal C itself (no margin): the proof does not hold there.
        p.clip = Fx::from_f64(1.0).unwrap();
        assert!(matches!(
            check(&p, 1.0),
            Err(BoundsError::CircuitClip { .. })
        ));
        // One ulp below the derived clip is refused too: only the derived value is accepted.
        let mut p = honest();
        p.clip = Fx::from_raw(p.clip.raw() - 1);
        assert!(matches!(
            check(&p, 1.0),
            Err(BoundsError::CircuitClip { .. })
        ));
        // A nominal clip outside the proof's range.
        assert!(matches!(
            check(&honest(), 4096.0),
            Err(BoundsError::Clip(_))
        ));
    }

    #[test]
    fn weights_outside_the_simplex_are_refused() {
        let mut p = honest();
        p.pi[0] = Fx::from_f64(1.5).unwrap();
        assert_eq!(check(&p, 1.0), Err(BoundsError::Weight { component: 0 }));
        let mut p = honest();
        p.pi[1] = Fx::from_f64(-0.1).unwrap();
        assert_eq!(check(&p, 1.0), Err(BoundsError::Weight { component: 1 }));
        let mut p = honest();
        p.pi = vec![Fx::from_f64(0.9).unwrap(); 2];
        assert_eq!(check(&p, 1.0), Err(BoundsError::WeightSum));
    }

    #[test]
    fn a_map_beyond_the_public_bounds_is_refused() {
        // One coordinate with B (14 |A| + |b|) = 10 (14 * 29960 + 0) >= 2^22.
        let mut p = honest();
        p.parties[1].scale[4] = Fx::from_f64(29960.0).unwrap();
        assert_eq!(
            check(&p, 1.0),
            Err(BoundsError::MapEntry { party: 1, index: 4 })
        );
        // A negative offset counts by its magnitude.
        let mut p = honest();
        p.parties[0].offset[1] = Fx::from_f64(-420_000.0).unwrap();
        assert_eq!(
            check(&p, 1.0),
            Err(BoundsError::MapEntry { party: 0, index: 1 })
        );
        // Every coordinate below 2^22 / B but a row whose squares sum past 2^36: three
        // coordinates of 14 * 9000 = 126000 give 3 * 126000^2 = 4.8e10 <= 2^36 = 6.9e10,
        // plus a fourth of 150000 (2.25e10) passes it.
        let mut p = honest();
        p.batch = 20;
        p.parties[1].width = 4;
        p.parties[1].scale = vec![Fx::from_f64(9000.0).unwrap(); 8];
        p.parties[1].offset = vec![Fx::ZERO; 8];
        p.parties[1].offset[7] = Fx::from_f64(150_000.0 - 126_000.0).unwrap();
        // Keep d as the clip's shape expects it (K + K w_0 + K w_1): only the map changed.
        let want = effective_clip(
            1.0,
            ClipShape {
                components: 2,
                parties: 2,
                dim: p.dim(),
            },
        )
        .unwrap()
        .circuit;
        p.clip = want;
        assert_eq!(
            check(&p, 1.0),
            Err(BoundsError::MapNorm {
                party: 1,
                component: 1
            })
        );
        p.parties[1].offset[7] = Fx::ZERO;
        check(&p, 1.0).unwrap();
    }
}
