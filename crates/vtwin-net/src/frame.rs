//! The wire format: versioned, length-prefixed postcard frames with a hard size limit, and
//! the per-link sequence guard (protocols/wire-format.md).
//!
//! On the wire a frame is `len (u32 LE) || postcard(Frame)` with `len <= MAX_FRAME_BYTES`.
//! The length is checked before anything is allocated, the first byte of the body is the
//! version (postcard writes a `u8` as one raw byte) and is checked before the rest is
//! parsed, and trailing bytes are refused, so every byte string has at most one meaning.
//! Decoding never panics and allocates at most a small multiple of its input (serde caps
//! length-prefixed pre-allocation; every element costs at least one input byte).
//!
//! Every frame carries the session, the coordinator's attempt at it, iteration, step and
//! sender; the link adds a sequence
//! number per direction that must be exactly the previous one plus one ([`SeqGuard`]), which
//! rejects duplicates, replays and reordering, and the sender must equal the role the TLS
//! handshake authenticated. Session and iteration are checked by the protocol state
//! machines (vtwin-consortium), which know which session is current.

use serde::{Deserialize, Serialize};
use vtwin_fixed::Fx;
use vtwin_mpc::gradient::{CircuitPublic, PartyMap};

pub use crate::role::Role;

/// The wire version this build speaks; a frame with another version is refused.
pub const WIRE_VERSION: u8 = 20;

/// Hard limit on one frame's body (the bytes after the length prefix): 64 MiB.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// Bytes of the length prefix (u32 little endian).
pub const LENGTH_PREFIX_BYTES: usize = 4;

/// One message on a link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Wire version, [`WIRE_VERSION`]; first so that it is checked before the rest parses.
    pub version: u8,
    /// Per-link, per-direction sequence number: 0 for the first frame, then +1 each
    /// ([`SeqGuard`]). Filled in by the link on send.
    pub seq: u64,
    /// Session id of the iteration (fresh random 16 bytes per iteration; with insecure test
    /// seeds a pure function of the seed and the iteration, so a resumed job reuses it).
    pub session: [u8; 16],
    /// The coordinator's attempt at the session: 8 bytes it draws from the OS for each
    /// `Start`, echoed by every frame of that attempt. Public; it only tells a retried
    /// session's frames from a previous attempt's (same session id, insecure seeds), so a
    /// node never drops a new attempt's early frame as a late one of the old attempt.
    pub attempt: [u8; 8],
    /// Training iteration t.
    pub iteration: u64,
    /// Protocol step within the session (the protocol's own counter).
    pub step: u64,
    /// The sender; must equal the role of the peer's verified certificate.
    pub sender: Role,
    /// The payload.
    pub body: Body,
}

impl Frame {
    /// A frame of the current version with `seq = 0` (the link fills `seq` in on send) and
    /// attempt 0 (set [`Frame::attempt`] for frames of a session attempt).
    pub fn new(session: [u8; 16], iteration: u64, step: u64, sender: Role, body: Body) -> Frame {
        Frame {
            version: WIRE_VERSION,
            seq: 0,
            session,
            attempt: [0; 8],
            iteration,
            step,
            sender,
            body,
        }
    }
}

/// The payloads of the consortium protocol (vtwin-consortium gives their meaning).
///
/// Byte strings are encoded as postcard byte arrays (length + raw bytes), so a 1 MB payload
/// is one copy, not one call per byte. New variants are appended at the end only (the
/// variant index is on the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Body {
    /// Coordinator -> party: who are you, how many rows.
    Hello,
    /// Party -> coordinator: rows and SHA-256 of the id column.
    PartyInfo {
        /// Number of records.
        rows: u64,
        /// SHA-256 of the id column (consistency check across parties).
        ids_digest: [u8; 32],
    },
    /// Coordinator -> node: start a session with these public parameters.
    Start {
        /// The public side of the circuit (its clip is the reduced circuit clip).
        public: WirePublic,
        /// The job's public terms (nominal C, sigma), checked by the node against its policy.
        terms: JobTerms,
    },
    /// Node -> node: the node's ephemeral X25519 public key for this session, and its
    /// digest of the session's `Start` (the public side, the terms, the session attempt and
    /// the iteration), which every node requires to equal its own before it uses any input:
    /// the nodes compute on one public side, whatever the coordinator sent each.
    NodeKey {
        /// X25519 public key.
        public: [u8; 32],
        /// SHA-256 of the node's `Start` (`vtwin-consortium` `node::start_digest`).
        start: [u8; 32],
    },
    /// Coordinator -> party: compute and upload the shares for this batch.
    Request {
        /// Batch indices (record numbers; the real ones, then padding up to the public size),
        /// each written as 4 bytes: varints would be shorter for real indices than for the
        /// padding, and the frame's size would tell the real batch size.
        #[serde(with = "fixed_width_indices")]
        batch: Vec<u32>,
        /// theta_t.
        theta: Vec<f64>,
        /// The job's public terms, checked by the party against its policy and budget.
        terms: JobTerms,
    },
    /// Party -> node i, on the party's own link to the node: one part of the party's inputs
    /// sealed to node i (see [`mod@crate::seal`]) on the party's sealing channel to the node,
    /// with the party's signature of that channel ([`crate::relay_signature`], the same for
    /// every blob of the channel). Two per request: part 0, what the circuit's
    /// first layers need, then part 1, what it takes only later (`vtwin-consortium`
    /// `upload::UploadPart`).
    Upload {
        /// Which part: 0 or 1.
        part: u8,
        /// The sealed blob.
        #[serde(with = "serde_bytes")]
        sealed: Vec<u8>,
        /// The party's leaf certificate, DER.
        #[serde(with = "serde_bytes")]
        certificate: Vec<u8>,
        /// The party's signature of its channel's statement
        /// (`vtwin-consortium` `upload::channel_statement`).
        #[serde(with = "serde_bytes")]
        signature: Vec<u8>,
        /// When the channel's signature lapses (Unix seconds; in the signed statement).
        expires: u64,
    },
    /// Party -> coordinator: the party has handed its six `Upload`s to its node links (so
    /// a timeout names the parties that did not get that far).
    Uploaded,
    /// Party -> coordinator: the party refuses this request (nothing was shared).
    Refused {
        /// Which check failed; typed and free of private values.
        refusal: Refusal,
    },
    /// Node <-> node, node -> coordinator: one encoded `vtwin_mpc::Message`.
    Mpc {
        /// `Message::encode()`.
        #[serde(with = "serde_bytes")]
        message: Vec<u8>,
    },
    /// Coordinator -> all: drop the session.
    Abort {
        /// Why.
        reason: String,
    },
    /// Node or party -> coordinator: this peer failed the session.
    Failed {
        /// Why.
        reason: String,
    },
    /// Coordinator -> party: align the parties' records by private set intersection before
    /// training (the frame's session field is the alignment's session id).
    AlignStart {
        /// Parties P taking part (every party of the job).
        parties: u16,
    },
    /// Party -> coordinator -> party: one encoded `vtwin_psi::Message`, relayed by the
    /// coordinator to the party its header addresses, signed end to end by its sender
    /// ([`crate::relay_signature`]) so that the relay can neither change nor forge it.
    Align {
        /// `Message::encode()`.
        #[serde(with = "serde_bytes")]
        message: Vec<u8>,
        /// The sender's leaf certificate, DER.
        #[serde(with = "serde_bytes")]
        certificate: Vec<u8>,
        /// The sender's signature of the message ([`crate::relay_signature::DOMAIN`] first,
        /// `Purpose::Alignment`).
        #[serde(with = "serde_bytes")]
        signature: Vec<u8>,
    },
    /// Node -> coordinator: this node lost its link to `peer` during the session; party ->
    /// coordinator: this party lost its link to node `peer` after its upload of the frame's
    /// attempt (so the coordinator names the lost peer, not the one that noticed).
    LinkLost {
        /// The peer whose link was lost.
        peer: Role,
    },
}

impl Body {
    /// Bytes in the body's byte strings, which make up nearly all of an `Mpc`, `Upload` or
    /// `Align` frame (0 for the other bodies). Cost O(1).
    fn byte_strings_len(&self) -> usize {
        match self {
            Body::Mpc { message } => message.len(),
            Body::Upload {
                sealed,
                certificate,
                signature,
                ..
            } => sealed.len() + certificate.len() + signature.len(),
            Body::Align {
                message,
                certificate,
                signature,
            } => message.len() + certificate.len() + signature.len(),
            _ => 0,
        }
    }
}

/// The public terms of a training job, sent with every `Request` (to the parties) and every
/// `Start` (to the nodes), so that each checks them against its own policy: a party against
/// its privacy budget, a node against its noise floor and clip cap. All are public (they are
/// what privacy.json reports).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobTerms {
    /// Noise multiplier sigma: the noise standard deviation is sigma C.
    pub sigma: f64,
    /// Nominal clip bound C (the sensitivity the noise is scaled to). The circuit clips to a
    /// reduced clip `WirePublic::clip`, which must be positive and at most C.
    pub clip: f64,
    /// Mixture components K.
    pub components: u32,
    /// Poisson sampling rate q = B / N of the batches.
    pub sample_rate: f64,
    /// Iterations T the job plans to release.
    pub iterations: u64,
    /// delta of the job's (epsilon, delta) claim.
    pub delta: f64,
    /// The digest of the rows the job trains on, as every party reported it in `PartyInfo`
    /// (after a record alignment: of the intersection's tags in the common order; otherwise
    /// of the ids). A party refuses a job whose digest is not its own, so a coordinator
    /// cannot make parties train on rows that are not the same people.
    pub rows: [u8; 32],
    /// The responsibilities' inverse temperature at iteration 0, in (0, 1] (1: no
    /// tempering). The party's local computation of iteration t uses beta rising linearly
    /// from it to 1 at `tempering_iterations` (vtwin-model `tempering`); public, and
    /// outside the privacy analysis (every record's gradient is clipped whatever beta is).
    pub tempering_start: f64,
    /// The iteration from which beta is 1.
    pub tempering_iterations: u64,
}

/// A request term a party's policy bounds ([`Refusal::Policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Term {
    /// The noise multiplier sigma.
    Sigma,
    /// The nominal clip C.
    Clip,
    /// The number of components K.
    Components,
    /// The sampling rate q.
    SampleRate,
    /// The planned iterations T.
    Iterations,
    /// The job's delta.
    Delta,
    /// The analyst's epsilon of the announced plan (sigma, q, T, delta).
    Epsilon,
}

impl std::fmt::Display for Term {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Term::Sigma => "sigma",
            Term::Clip => "clip",
            Term::Components => "components",
            Term::SampleRate => "sample rate",
            Term::Iterations => "iterations",
            Term::Delta => "delta",
            Term::Epsilon => "plan epsilon",
        })
    }
}

/// The public range a policy allows for a [`Term`] (the party's own bound, not a data value).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Allowed {
    /// At least this.
    AtLeast(f64),
    /// At most this.
    AtMost(f64),
    /// Exactly this.
    Exactly(f64),
}

impl std::fmt::Display for Allowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allowed::AtLeast(x) => write!(f, ">= {x}"),
            Allowed::AtMost(x) => write!(f, "<= {x}"),
            Allowed::Exactly(x) => write!(f, "= {x}"),
        }
    }
}

/// Which of a party's budgets an upload would exceed ([`Refusal::Budget`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Budget {
    /// The number of uploads (possible openings) it agreed to.
    Openings {
        /// The agreed number.
        agreed: u64,
    },
    /// The analyst's epsilon over every upload in its ledger.
    Epsilon {
        /// The agreed epsilon.
        agreed: f64,
    },
}

/// Why a party refused a request: which check, which quantity and the public range, never
/// a value of the party's data (the coordinator must learn nothing private from a refusal).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Refusal {
    /// A term of the request is outside the party's policy.
    Policy {
        /// The term.
        term: Term,
        /// What the policy allows.
        allowed: Allowed,
    },
    /// The upload would exceed the party's budget (its ledger is unchanged).
    Budget {
        /// Which budget.
        budget: Budget,
    },
    /// A value computed from the party's own rows of this batch is outside the public
    /// fixed-point range, so nothing was shared. Names the quantity and the range only.
    Range {
        /// The quantity (a fixed name from the code, e.g. `T`).
        quantity: String,
        /// The public range, e.g. `[-14, 14]`.
        range: String,
    },
    /// The job's rows (`JobTerms::rows`) are not the rows this party holds now (another
    /// alignment, or one still running).
    Rows,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Policy { term, allowed } => {
                write!(f, "{term} outside the party's policy (allowed: {allowed})")
            }
            Refusal::Budget {
                budget: Budget::Openings { agreed },
            } => write!(f, "budget spent: it agreed to {agreed} uploads"),
            Refusal::Budget {
                budget: Budget::Epsilon { agreed },
            } => write!(
                f,
                "budget spent: one more upload would take its ledger past epsilon {agreed}"
            ),
            Refusal::Rows => f.write_str(
                "the job's rows are not this party's current rows (align again or restart the job)",
            ),
            Refusal::Range { quantity, range } => write!(
                f,
                "a value of {quantity} from its own rows is outside the public range {range}"
            ),
        }
    }
}

/// Words written at a fixed width, little endian, as one byte string (postcard: a varint
/// length, then the bytes): the encoding's length depends only on the number of words, and
/// it is one copy instead of one varint per word.
trait LeWord: Sized {
    /// Bytes per word.
    const BYTES: usize;
    /// Appends the word's little-endian bytes.
    fn put(&self, out: &mut Vec<u8>);
    /// The word of exactly [`LeWord::BYTES`] little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! le_word {
    ($($t:ty),*) => {$(
        impl LeWord for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("one word"))
            }
        }
    )*};
}

le_word!(u32, u128);

fn serialize_words<S: serde::Serializer, W: LeWord>(words: &[W], s: S) -> Result<S::Ok, S::Error> {
    let mut bytes = Vec::with_capacity(W::BYTES * words.len());
    for w in words {
        w.put(&mut bytes);
    }
    s.serialize_bytes(&bytes)
}

fn deserialize_words<'de, D: serde::Deserializer<'de>, W: LeWord>(
    d: D,
    what: &str,
) -> Result<Vec<W>, D::Error> {
    use serde::de::Error;
    let bytes = serde_bytes::ByteBuf::deserialize(d)?;
    if bytes.len() % W::BYTES != 0 {
        return Err(D::Error::custom(format!(
            "{what}: {} bytes, not a whole number of {}-byte words",
            bytes.len(),
            W::BYTES
        )));
    }
    Ok(bytes.chunks_exact(W::BYTES).map(W::get).collect())
}

/// `Vec<u32>` as one byte string of 4-byte little-endian words: its length depends only on
/// the number of indices, never on their values.
mod fixed_width_indices {
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(indices: &[u32], s: S) -> Result<S::Ok, S::Error> {
        super::serialize_words(indices, s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        super::deserialize_words(d, "batch indices")
    }
}

/// `Vec<u128>` ring elements as one byte string of 16-byte little-endian words (since wire
/// version 17; varints before, which took 19 bytes for a negative value and one loop per
/// element to write, read and check).
mod fixed_width_elements {
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(elements: &[u128], s: S) -> Result<S::Ok, S::Error> {
        super::serialize_words(elements, s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u128>, D::Error> {
        super::deserialize_words(d, "ring elements")
    }
}

/// [`CircuitPublic`] on the wire: sizes as `u32`, ring elements as raw `u128`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WirePublic {
    /// Batch size B.
    pub batch: u32,
    /// Components K.
    pub components: u32,
    /// Mixture weights pi (K), raw fixed point.
    #[serde(with = "fixed_width_elements")]
    pub pi: Vec<u128>,
    /// Clip bound as used by the circuit, raw fixed point.
    pub clip: u128,
    /// Per party the public affine score map.
    pub parties: Vec<WirePartyMap>,
    /// Number m >= 1 of noise contributors.
    pub noise_contributors: u32,
}

/// [`PartyMap`] on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WirePartyMap {
    /// w_p = |T_p|.
    pub width: u32,
    /// A, K x w_p row-major, raw fixed point.
    #[serde(with = "fixed_width_elements")]
    pub scale: Vec<u128>,
    /// b, K x w_p row-major, raw fixed point.
    #[serde(with = "fixed_width_elements")]
    pub offset: Vec<u128>,
    /// [`PartyMap::integer_stats`]: the party inputs T_p as raw integers.
    pub integer_stats: bool,
}

/// A [`WirePublic`] / [`CircuitPublic`] whose sizes do not agree or do not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PublicError {
    /// A length differs from what the sizes imply.
    #[error("public parameters: {field} has length {got}, expected {want}")]
    Length {
        /// The field, e.g. `parties[1].scale`.
        field: String,
        /// Its length.
        got: usize,
        /// The length implied by batch, components and widths.
        want: usize,
    },
    /// A size is zero where it must not be, or does not fit u32 / usize.
    #[error("public parameters: {field} = {value} is out of range ({bound})")]
    Range {
        /// The field.
        field: String,
        /// Its value.
        value: u64,
        /// The accepted range.
        bound: &'static str,
    },
}

fn to_u32(field: &str, value: usize) -> Result<u32, PublicError> {
    u32::try_from(value).map_err(|_| PublicError::Range {
        field: field.to_string(),
        value: value as u64,
        bound: "< 2^32",
    })
}

/// Checks the shapes shared by both representations: K, B, m >= 1, at least one party,
/// |pi| = K, |scale| = |offset| = K w_p.
fn check_shapes(
    batch: u64,
    components: usize,
    pi: usize,
    widths_and_lens: impl Iterator<Item = (usize, usize, usize)>,
    parties: usize,
    noise_contributors: u64,
) -> Result<(), PublicError> {
    for (field, value) in [
        ("batch", batch),
        ("components", components as u64),
        ("parties", parties as u64),
        ("noise_contributors", noise_contributors),
    ] {
        if value == 0 {
            return Err(PublicError::Range {
                field: field.to_string(),
                value,
                bound: ">= 1",
            });
        }
    }
    if pi != components {
        return Err(PublicError::Length {
            field: "pi".into(),
            got: pi,
            want: components,
        });
    }
    for (p, (width, scale, offset)) in widths_and_lens.enumerate() {
        let want = components
            .checked_mul(width)
            .ok_or_else(|| PublicError::Range {
                field: format!("parties[{p}].width"),
                value: width as u64,
                bound: "K w_p < 2^64",
            })?;
        for (name, got) in [("scale", scale), ("offset", offset)] {
            if got != want {
                return Err(PublicError::Length {
                    field: format!("parties[{p}].{name}"),
                    got,
                    want,
                });
            }
        }
    }
    Ok(())
}

impl TryFrom<&CircuitPublic> for WirePublic {
    type Error = PublicError;

    /// Checks the shapes (as [`TryFrom<WirePublic>`] does) and that sizes fit u32.
    /// Cost: one copy of the parameters.
    fn try_from(c: &CircuitPublic) -> Result<WirePublic, PublicError> {
        check_shapes(
            c.batch as u64,
            c.components,
            c.pi.len(),
            c.parties
                .iter()
                .map(|p| (p.width, p.scale.len(), p.offset.len())),
            c.parties.len(),
            c.noise_contributors as u64,
        )?;
        let raw = |v: &[Fx]| v.iter().map(|x| x.raw()).collect::<Vec<u128>>();
        let parties = c
            .parties
            .iter()
            .enumerate()
            .map(|(p, m)| {
                Ok(WirePartyMap {
                    width: to_u32(&format!("parties[{p}].width"), m.width)?,
                    scale: raw(&m.scale),
                    offset: raw(&m.offset),
                    integer_stats: m.integer_stats,
                })
            })
            .collect::<Result<Vec<_>, PublicError>>()?;
        Ok(WirePublic {
            batch: to_u32("batch", c.batch)?,
            components: to_u32("components", c.components)?,
            pi: raw(&c.pi),
            clip: c.clip.raw(),
            parties,
            noise_contributors: to_u32("noise_contributors", c.noise_contributors)?,
        })
    }
}

impl TryFrom<WirePublic> for CircuitPublic {
    type Error = PublicError;

    /// Checks that batch, components, parties and noise contributors are >= 1, |pi| = K
    /// and |scale| = |offset| = K w_p for every party, so the node's circuit never sees
    /// inconsistent sizes from the network. Cost: O(size), no copy of the vectors' heap.
    fn try_from(w: WirePublic) -> Result<CircuitPublic, PublicError> {
        let components = w.components as usize;
        check_shapes(
            u64::from(w.batch),
            components,
            w.pi.len(),
            w.parties
                .iter()
                .map(|p| (p.width as usize, p.scale.len(), p.offset.len())),
            w.parties.len(),
            u64::from(w.noise_contributors),
        )?;
        let fx = |v: Vec<u128>| v.into_iter().map(Fx::from_raw).collect::<Vec<Fx>>();
        Ok(CircuitPublic {
            batch: w.batch as usize,
            components,
            pi: fx(w.pi),
            clip: Fx::from_raw(w.clip),
            parties: w
                .parties
                .into_iter()
                .map(|p| PartyMap {
                    width: p.width as usize,
                    scale: fx(p.scale),
                    offset: fx(p.offset),
                    integer_stats: p.integer_stats,
                })
                .collect(),
            noise_contributors: w.noise_contributors as usize,
        })
    }
}

/// Why a frame was refused (encoding, decoding or the link's guard).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The length prefix (or an encoded frame) exceeds [`MAX_FRAME_BYTES`].
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Announced or encoded body length.
        len: u64,
        /// [`MAX_FRAME_BYTES`].
        max: usize,
    },
    /// An empty frame body.
    #[error("empty frame")]
    Empty,
    /// A version other than [`WIRE_VERSION`].
    #[error("wire version {got}, this build speaks {want}")]
    Version {
        /// The frame's version byte.
        got: u8,
        /// [`WIRE_VERSION`].
        want: u8,
    },
    /// The body does not parse as a frame.
    #[error("malformed frame")]
    Malformed(#[source] postcard::Error),
    /// Bytes left after a complete frame.
    #[error("{extra} trailing bytes after the frame")]
    Trailing {
        /// How many.
        extra: usize,
    },
    /// The body decodes but is not the canonical encoding of what it decodes to (an
    /// over-long varint).
    #[error("frame is not canonically encoded")]
    NonCanonical,
    /// The frame could not be serialised.
    #[error("cannot encode frame")]
    Encode(#[source] postcard::Error),
    /// Sequence number other than the previous one + 1 (duplicate, replay, reordering, gap).
    #[error(
        "sequence number {got} from {peer}, expected {expected} (duplicate, replay or reordering)"
    )]
    Sequence {
        /// The authenticated peer.
        peer: Role,
        /// The number the link expected.
        expected: u64,
        /// The frame's number.
        got: u64,
    },
    /// The frame claims a sender other than the authenticated peer.
    #[error("frame claims sender {claimed} but the link is authenticated as {authenticated}")]
    Sender {
        /// `frame.sender`.
        claimed: Role,
        /// The role of the peer's verified certificate.
        authenticated: Role,
    },
}

/// Bytes an encoded frame takes beyond its body's byte strings: the prefix, the header's
/// fields (at most 70 bytes with every varint at its longest) and the byte strings' length
/// varints.
const ENCODE_SLACK: usize = 96;

/// Encodes `frame` as `len (u32 LE) || postcard(frame)`.
///
/// Errors: [`FrameError::TooLarge`] if the body exceeds [`MAX_FRAME_BYTES`]. Cost: one pass
/// over the frame; the output is allocated once for a frame whose size is its byte strings
/// (`Mpc`, `Upload`, `Align`: the bulk of the traffic), and grown geometrically for the
/// others.
pub fn encode(frame: &Frame) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::with_capacity(ENCODE_SLACK + frame.body.byte_strings_len());
    out.extend_from_slice(&[0u8; LENGTH_PREFIX_BYTES]);
    let out = postcard::to_extend(frame, out).map_err(FrameError::Encode)?;
    let len = out.len() - LENGTH_PREFIX_BYTES;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge {
            len: len as u64,
            max: MAX_FRAME_BYTES,
        });
    }
    let mut out = out;
    out[..LENGTH_PREFIX_BYTES].copy_from_slice(&(len as u32).to_le_bytes());
    Ok(out)
}

/// The body length announced by a length prefix, checked against [`MAX_FRAME_BYTES`]
/// (before the reader allocates anything). Errors: [`FrameError::TooLarge`],
/// [`FrameError::Empty`] for 0. Cost: O(1).
pub fn body_len(prefix: [u8; LENGTH_PREFIX_BYTES]) -> Result<usize, FrameError> {
    let len = u32::from_le_bytes(prefix) as u64;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > MAX_FRAME_BYTES as u64 {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME_BYTES,
        });
    }
    Ok(len as usize)
}

/// Decodes one frame body (the bytes after the length prefix).
///
/// Checks, in order: size (<= [`MAX_FRAME_BYTES`], non-empty), version byte, postcard
/// parse, no trailing bytes, canonical encoding (re-serialised and compared, so exactly one
/// byte string encodes each frame). Never panics, for any input. Sequence and sender are the
/// link's checks ([`SeqGuard`]). Cost: two passes (parse, canonical check); allocation
/// bounded by a small multiple of `bytes.len()`.
pub fn decode(bytes: &[u8]) -> Result<Frame, FrameError> {
    if bytes.len() > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge {
            len: bytes.len() as u64,
            max: MAX_FRAME_BYTES,
        });
    }
    match bytes.first() {
        None => return Err(FrameError::Empty),
        Some(&v) if v != WIRE_VERSION => {
            return Err(FrameError::Version {
                got: v,
                want: WIRE_VERSION,
            })
        }
        Some(_) => {}
    }
    let (frame, rest) = postcard::take_from_bytes::<Frame>(bytes).map_err(FrameError::Malformed)?;
    if !rest.is_empty() {
        return Err(FrameError::Trailing { extra: rest.len() });
    }
    // postcard accepts over-long varints; re-serialising against the input (no allocation)
    // makes the encoding canonical: one frame, one byte string.
    if postcard::serialize_with_flavor(&frame, Compare { expected: bytes }).is_err() {
        return Err(FrameError::NonCanonical);
    }
    Ok(frame)
}

/// A postcard output "flavor" that compares the serialised bytes with `expected` instead
/// of storing them; fails at the first difference or if the lengths differ.
struct Compare<'a> {
    expected: &'a [u8],
}

impl postcard::ser_flavors::Flavor for Compare<'_> {
    type Output = ();

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        match self.expected.split_at_checked(data.len()) {
            Some((head, tail)) if head == data => {
                self.expected = tail;
                Ok(())
            }
            _ => Err(postcard::Error::SerializeBufferFull),
        }
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.try_extend(&[data])
    }

    fn finalize(self) -> postcard::Result<()> {
        if self.expected.is_empty() {
            Ok(())
        } else {
            Err(postcard::Error::SerializeBufferFull)
        }
    }
}

/// Numbers the frames one side sends on a link: 0, 1, 2, ...
#[derive(Debug, Default, Clone)]
pub struct SeqCounter {
    next: u64,
}

impl SeqCounter {
    /// A counter starting at 0.
    pub fn new() -> SeqCounter {
        SeqCounter::default()
    }

    /// Stamps `frame` with the next number and advances. Cost: O(1).
    pub fn stamp(&mut self, frame: &mut Frame) {
        frame.seq = self.next;
        // 2^64 frames is out of reach; wrapping would be caught by the receiver's guard.
        self.next = self.next.wrapping_add(1);
    }
}

/// The receiving side's check of one direction of one link.
///
/// Accepts a frame only if its version is [`WIRE_VERSION`], its sender is the authenticated
/// peer, and its sequence number is exactly the previous accepted one + 1 (0 first): a
/// duplicate, a replayed old frame, a reordered or a missing frame is refused. A refused
/// frame does not advance the guard (the link closes the connection anyway).
#[derive(Debug, Clone)]
pub struct SeqGuard {
    peer: Role,
    next: u64,
}

impl SeqGuard {
    /// A guard for frames from `peer` (the role of its verified certificate).
    pub fn new(peer: Role) -> SeqGuard {
        SeqGuard { peer, next: 0 }
    }

    /// The authenticated peer.
    pub fn peer(&self) -> Role {
        self.peer
    }

    /// The sequence number the next frame must carry.
    pub fn expected(&self) -> u64 {
        self.next
    }

    /// Checks `frame` and advances on success. Cost: O(1).
    pub fn check(&mut self, frame: &Frame) -> Result<(), FrameError> {
        if frame.version != WIRE_VERSION {
            return Err(FrameError::Version {
                got: frame.version,
                want: WIRE_VERSION,
            });
        }
        if frame.sender != self.peer {
            return Err(FrameError::Sender {
                claimed: frame.sender,
                authenticated: self.peer,
            });
        }
        if frame.seq != self.next {
            return Err(FrameError::Sequence {
                peer: self.peer,
                expected: self.next,
                got: frame.seq,
            });
        }
        self.next = self.next.checked_add(1).ok_or(FrameError::Sequence {
            peer: self.peer,
            expected: self.next,
            got: frame.seq,
        })?;
        Ok(())
    }
}
