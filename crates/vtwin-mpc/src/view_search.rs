//! Test support: a curious node's linear search of its view, with the seeds in hand.
//!
//! The statistical view tests (`tests/privacy.rs`) look at one element's distribution at a
//! time; these searches catch the correlations they miss (a mask reused, a mask a node can
//! compute, a message it can unmask), for the protocols whose messages are not plain
//! reshares (`multiply.rs`, `binary.rs`).

use std::collections::HashSet;

use crate::keys::PairSeeds;
use crate::prg;

/// Every PRG output a node with `seeds` can compute at the `positions` of expansions of
/// `n`, on every stream up to `streams`, with its negation, and 0. (A protocol that indexes
/// a key's outputs other than by position, as the injection does, needs every position.)
pub(crate) fn computable(
    seeds: &PairSeeds,
    streams: u64,
    n: usize,
    positions: impl Iterator<Item = usize> + Clone,
) -> HashSet<u128> {
    let mut out = HashSet::from([0u128]);
    for key in [&seeds.prev, &seeds.next, &seeds.private] {
        for stream in 0..=streams {
            let g = prg::expand(key, stream, n);
            for k in positions.clone() {
                out.extend([g[k], g[k].wrapping_neg()]);
            }
        }
    }
    out
}

/// The first of `secrets` that some combination with coefficients -1, 0, 1 of `basis` (what
/// the node received and holds), minus one element of `computable`, equals. Cost: 3^|basis|
/// combinations.
pub(crate) fn first_found<'a>(
    basis: &[u128],
    computable: &HashSet<u128>,
    secrets: &[(&'a str, u128)],
) -> Option<&'a str> {
    let mut combos = vec![0u128];
    for b in basis {
        combos = combos
            .iter()
            .flat_map(|c| [*c, c.wrapping_add(*b), c.wrapping_sub(*b)])
            .collect();
    }
    combos.iter().find_map(|v| {
        secrets
            .iter()
            .find(|(_, s)| computable.contains(&s.wrapping_sub(*v)))
            .map(|(name, _)| *name)
    })
}
