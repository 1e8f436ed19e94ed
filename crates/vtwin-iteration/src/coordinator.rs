//! The coordinator's role in one iteration: the circuit's public parameters, encoded from
//! public values only (it holds no party data), and the opening of G + Z from the three
//! nodes' reveal messages. The model supplies the mixture weights and each party's public
//! score map; the coordinator never sees a record.

use vtwin_fixed::clip_bound::{effective_clip, ClipBound, ClipBoundError, ClipShape};
use vtwin_fixed::encode::EncodeError;
use vtwin_fixed::Fx;
use vtwin_mpc::gradient::{CircuitPublic, PartyMap};
use vtwin_mpc::{Message, MpcError, Opening, SessionId};

/// Why the public parameters could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublicError {
    /// A public value does not encode at scale 2^32.
    #[error("public {what}: {source}")]
    Encode {
        /// Which value ("weight", "score map").
        what: &'static str,
        /// The encoding error.
        source: EncodeError,
    },
    /// The nominal clip is outside the supported range.
    #[error(transparent)]
    Clip(#[from] ClipBoundError),
    /// A shape whose squared norm could leave the clip factor's 80-bit window
    /// (`vtwin_fixed::clip_bound::norm2_max` at least 2^48).
    #[error(
        "{parties} parties x {components} components: the squared norm could reach {max:.3e}, \
         beyond the clip factor's window of 2^48 (P K at most about 1800)"
    )]
    NormWindow {
        /// P.
        parties: usize,
        /// K.
        components: usize,
        /// `norm2_max(P, K)`.
        max: f64,
    },
    /// A score map whose scale or offset is not K x width.
    #[error("score map of {got} values, K x width is {want}")]
    MapShape {
        /// Values given.
        got: usize,
        /// K x width.
        want: usize,
    },
}

/// One party's public score map before encoding: `scale` and `offset`, K x `width`
/// row-major.
#[derive(Clone, Copy, Debug)]
pub struct ScoreMap<'a> {
    /// w_p = |T_p|.
    pub width: usize,
    /// A, K x w_p.
    pub scale: &'a [f64],
    /// b, K x w_p.
    pub offset: &'a [f64],
    /// Every statistic of the party is an integer (one-hot columns only): it inputs T_p
    /// at scale 1 ([`PartyMap::integer_stats`]).
    pub integer_stats: bool,
}

fn encode(v: f64, what: &'static str) -> Result<Fx, PublicError> {
    Fx::from_f64(v).map_err(|source| PublicError::Encode { what, source })
}

/// The mixture weights as the circuit takes them, each encoded at 2^32: the one encoding that
/// the circuit's public side and party 0's folded factor
/// (`vtwin_model::fixed_backend::fold_weights`) share. Cost O(K).
pub fn encode_weights(pi: &[f64]) -> Result<Vec<Fx>, PublicError> {
    pi.iter().map(|&p| encode(p, "weight")).collect()
}

/// The circuit clip C' for a nominal clip C and this shape, with its derivation
/// ([`effective_clip`]: the largest C' for which the released sums provably move by at most
/// C). Errors on C outside [1/16, 1024].
pub fn circuit_clip(clip: f64, shape: ClipShape) -> Result<ClipBound, PublicError> {
    Ok(effective_clip(clip, shape)?)
}

/// One party's public score map encoded at scale 2^32 (what the circuit and the party's
/// score roots use). Cost O(K w_p).
pub fn encode_party_map(map: ScoreMap<'_>) -> Result<PartyMap, PublicError> {
    let enc = |v: &[f64]| {
        v.iter()
            .map(|&x| encode(x, "score map"))
            .collect::<Result<Vec<_>, _>>()
    };
    if map.scale.len() != map.offset.len() {
        return Err(PublicError::MapShape {
            got: map.offset.len(),
            want: map.scale.len(),
        });
    }
    Ok(PartyMap {
        width: map.width,
        scale: enc(map.scale)?,
        offset: enc(map.offset)?,
        integer_stats: map.integer_stats,
    })
}

/// The circuit's public side for a batch of `batch` rows: the mixture weights `pi` (K)
/// encoded, the circuit clip of [`circuit_clip`] for the nominal `clip`, every party's map
/// encoded ([`encode_party_map`]; each K x w_p), and one noise contributor per party (each
/// party inputs its own share, so no single party knows Z). Cost O(d).
pub fn circuit_public(
    batch: usize,
    pi: &[f64],
    clip: f64,
    maps: &[ScoreMap<'_>],
) -> Result<CircuitPublic, PublicError> {
    let k = pi.len();
    let shape = ClipShape {
        components: k,
        parties: maps.len(),
        dim: k + maps.iter().map(|m| k * m.width).sum::<usize>(),
    };
    let max = vtwin_fixed::clip_bound::norm2_max(maps.len(), k);
    if max >= vtwin_fixed::clip::CLIP_X_LIMIT {
        return Err(PublicError::NormWindow {
            parties: maps.len(),
            components: k,
            max,
        });
    }
    let pi = encode_weights(pi)?;
    let clip = circuit_clip(clip, shape)?.circuit;
    let parties = maps
        .iter()
        .map(|m| {
            if m.scale.len() != k * m.width {
                return Err(PublicError::MapShape {
                    got: m.scale.len(),
                    want: k * m.width,
                });
            }
            encode_party_map(*m)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CircuitPublic {
        batch,
        components: k,
        pi,
        clip,
        parties,
        noise_contributors: maps.len(),
    })
}

/// The coordinator's opening of G + Z in `session` from the nodes' messages to it: d raw
/// ring elements in canonical order. Errors: a bad or foreign message, or an opening that did
/// not complete ([`MpcError::Stalled`]). Cost O(d).
pub fn open(
    session: SessionId,
    public: &CircuitPublic,
    to_coordinator: impl IntoIterator<Item = Message>,
) -> Result<Vec<u128>, MpcError> {
    let mut opening = Opening::new(session, public.coordinator(), public.dim());
    for m in to_coordinator {
        opening.handle(m)?;
    }
    opening.result().ok_or(MpcError::Stalled { node: 0 })
}
