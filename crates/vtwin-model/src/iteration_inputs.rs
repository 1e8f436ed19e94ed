//! The model's values as the iteration protocol's public parameters and inputs
//! (vtwin-iteration's roles know no layout): the public input bounds, a party's upload as the
//! circuit's plaintext input, the circuit's public side from theta, and the canonical order of
//! the circuit's outputs in this model's parameter layout. Used by the party's side
//! ([`crate::party_upload`]), the in-memory backend ([`crate::mpc`]) and a consortium's
//! coordinator.

use vtwin_fixed::Fx;
use vtwin_iteration::coordinator::{self, ScoreMap};
use vtwin_iteration::party::ShardError;
use vtwin_iteration::CanonicalOrder;
use vtwin_mpc::gradient::{CircuitPublic, InputBounds, PartyMap, PlainUpload};
use vtwin_mpc::input::InputError;

use crate::backend::{softmax, BackendError, GradientInput};
use crate::fixed_backend::{PartyUpload, Renormalise};
use crate::kernels::PartyMaps;
use crate::layout::Layout;

/// The public ranges every party checks before sharing: mat in [0, [`crate::fixed_backend::mat_max`]],
/// score roots in [0, [`vtwin_fixed::clip_bound::score_root_max`]] (2^7 plus 2 ulp), T in
/// [-14, 14] ([`crate::fixed`]'s bounds).
pub fn input_bounds(renormalise: Renormalise, parties: usize) -> InputBounds {
    let mat_max = Fx::from_f64(crate::fixed_backend::mat_max(renormalise, parties))
        .expect("a power of two below 2^16 encodes");
    InputBounds {
        mat: (Fx::ZERO, mat_max),
        root: (Fx::ZERO, vtwin_fixed::clip_bound::score_root_max()),
        stats: (Fx::from_int(-14), Fx::from_int(14)),
    }
}

/// Party `party`'s fixed-backend upload as the circuit's plaintext input (same encoded
/// values, but an integer party's T_p as raw integers: [`integer_stats`]); party 0 also
/// inputs the padding flags.
pub fn plain_upload(up: &PartyUpload, party: usize) -> PlainUpload {
    let integer = up.map.integer_stats;
    PlainUpload {
        mat: up.mat.clone(),
        root: up.root.clone(),
        stats: if integer {
            integer_stats(&up.stats)
        } else {
            up.stats.clone()
        },
        integer_stats: integer,
        flags: if party == 0 {
            up.flags.clone()
        } else {
            Vec::new()
        },
    }
}

/// Statistics encoded at scale 2^32 as raw integers (scale 1): exact for the one-hot
/// statistics of an integer party ([`Layout::integer_stats`]), which are 0 or 1 (a value
/// off the integers would be floored). Cost O(len).
pub fn integer_stats(stats: &[Fx]) -> Vec<Fx> {
    stats
        .iter()
        .map(|v| {
            debug_assert_eq!(v.raw() % vtwin_fixed::ONE_RAW, 0, "an integer statistic");
            Fx::from_signed(v.signed() >> vtwin_fixed::FRAC_BITS)
        })
        .collect()
}

/// The circuit's public side for `input` and a batch of `b` rows:
/// [`circuit_public_for`]`(input.layout, input.theta, input.clip, b)`.
pub fn circuit_public(input: &GradientInput<'_>, b: usize) -> Result<CircuitPublic, BackendError> {
    circuit_public_for(input.layout, input.theta, input.clip, b)
}

/// The circuit's public side for a batch of `b` rows, from public values only (the
/// coordinator needs no party data): pi = softmax(theta[0..K]) and every party's score maps
/// ([`PartyMaps::new`], with the public map checks of [`crate::fixed_backend::check_score_map_bound`],
/// [`BackendError::Range`] naming the party), encoded by
/// [`vtwin_iteration::coordinator::circuit_public`] (the circuit clip C' of
/// [`vtwin_fixed::clip_bound::effective_clip`] for the nominal `clip`; P noise contributors).
/// Errors also on theta of the wrong length or not finite, and C not positive and finite.
/// Cost O(d).
pub fn circuit_public_for(
    layout: &Layout,
    theta: &[f64],
    clip: f64,
    b: usize,
) -> Result<CircuitPublic, BackendError> {
    if theta.len() != layout.dim() {
        return Err(BackendError::ThetaLength {
            got: theta.len(),
            expected: layout.dim(),
        });
    }
    if let Some(i) = theta.iter().position(|t| !t.is_finite()) {
        return Err(BackendError::ThetaNotFinite { index: i });
    }
    if !(clip.is_finite() && clip > 0.0) {
        return Err(BackendError::Clip(clip));
    }
    let pi = softmax(&theta[..layout.components]);
    // The clip's range before the maps' checks, as the errors have always come.
    circuit_clip(layout, clip)?;
    let mut maps = Vec::with_capacity(layout.n_parties());
    for p in 0..layout.n_parties() {
        let m = PartyMaps::new(theta, layout, p);
        crate::fixed_backend::check_score_map_bound(&m, b, &layout.parties[p])?;
        maps.push(m);
    }
    let maps: Vec<ScoreMap<'_>> = maps
        .iter()
        .enumerate()
        .map(|(p, m)| ScoreMap {
            width: layout.stat_width(p),
            scale: &m.scale,
            offset: &m.offset,
            integer_stats: layout.integer_stats(p),
        })
        .collect();
    Ok(coordinator::circuit_public(b, &pi, clip, &maps)?)
}

/// The circuit clip for a nominal clip C and this layout's shape, with its derivation
/// ([`vtwin_fixed::clip_bound::effective_clip`]). Errors on C outside [1/16, 1024].
pub fn circuit_clip(
    layout: &Layout,
    clip: f64,
) -> Result<vtwin_fixed::clip_bound::ClipBound, BackendError> {
    let shape = vtwin_fixed::clip_bound::ClipShape {
        components: layout.components,
        parties: layout.n_parties(),
        dim: layout.dim(),
    };
    Ok(coordinator::circuit_clip(clip, shape)?)
}

/// Party `party`'s public score maps encoded at scale 2^32 (what the circuit and the party's
/// score roots use), with the layout's [`Layout::integer_stats`]. Cost O(K w_p).
pub fn encoded_party_map(
    maps: &PartyMaps,
    layout: &Layout,
    party: usize,
) -> Result<PartyMap, BackendError> {
    Ok(coordinator::encode_party_map(ScoreMap {
        width: layout.stat_width(party),
        scale: &maps.scale,
        offset: &maps.offset,
        integer_stats: layout.integer_stats(party),
    })?)
}

/// The layout index of every canonical output position of the circuit:
/// `[weights (K); for each party p, (k, j) row-major]`, as `fixed_gradient` writes g.
pub fn canonical_indices(layout: &Layout) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..layout.components)
        .map(|k| layout.weight_index(k))
        .collect();
    for p in 0..layout.n_parties() {
        for k in 0..layout.components {
            for j in 0..layout.stat_width(p) {
                idx.push(layout.param_index(p, k, j));
            }
        }
    }
    idx
}

/// The circuit's canonical order in this layout ([`canonical_indices`]).
pub fn canonical_order(layout: &Layout) -> CanonicalOrder {
    // The layout is exactly the weights and every party's (k, j) block, so the indices are
    // a permutation of 0..d by construction.
    CanonicalOrder::new(canonical_indices(layout)).expect("the layout's canonical permutation")
}

/// Noise in layout order (raw integers at scale 2^32) to the circuit's canonical order.
pub fn noise_to_canonical(layout: &Layout, noise: &[i128]) -> Vec<u128> {
    canonical_order(layout).to_canonical(noise)
}

/// The opened G + Z (canonical order, raw ring elements) decoded into layout order.
pub fn gradient_from_canonical(layout: &Layout, opened: &[u128]) -> Vec<f64> {
    canonical_order(layout).decode(opened)
}

/// A party's refusal of its own upload as a backend error naming the party and quantity.
pub(crate) fn input_error(layout: &Layout, b: usize, party: usize, e: &InputError) -> BackendError {
    let k = layout.components;
    match *e {
        InputError::OutOfRange { index, value, .. } => {
            let (what, range) = if index < b * k {
                ("mat", "[0, 2^31)")
            } else if index < 2 * b * k {
                ("q", "[0, 2^40]")
            } else {
                ("T", "[-14, 14]")
            };
            BackendError::Range {
                party: layout.parties[party].clone(),
                what,
                value,
                range,
            }
        }
        _ => BackendError::Shard {
            party: layout.parties[party].clone(),
            source: ShardError::Input(e.clone()),
        },
    }
}
