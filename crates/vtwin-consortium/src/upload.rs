//! The plaintext a party seals to each node ([`SealedInputs`]): its vtwin-mpc input messages
//! for that node and the noise terms it used, so the node can check them against the
//! session's announced terms (a coordinator that told the party a smaller sigma or clip than
//! it told the nodes is caught: the AEAD authenticates the party's statement), together with
//! the rows and the batch it was asked for, which every node requires to be the same at every
//! party (a coordinator that gave the parties different rows or batches would join different
//! people into one record, and one person into two), and the score map its clip inputs were
//! computed with, which must be the map the nodes apply ([`map_statement`]).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use vtwin_mpc::gradient::PartyMap;

/// The party's statement of the batch it was asked for in session `session`, iteration `t`:
/// SHA-256 over a domain tag, the session, t and the indices (little-endian u32). Equal at
/// every party exactly when the batches are equal; a node learns only that equality (the
/// indices of a 100-of-30000 batch cannot be guessed from the digest). Cost: one SHA-256
/// over 4 B bytes.
pub fn batch_statement(session: &[u8; 16], t: u64, batch: &[u32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"vtwin batch statement v1\0");
    h.update(session);
    h.update(t.to_le_bytes());
    for i in batch {
        h.update(i.to_le_bytes());
    }
    h.finalize().into()
}

/// The party's statement of the score map it computed its score roots with: SHA-256 over a
/// domain tag, the width w_p, whether T_p is input as integers (one byte), the number of
/// entries and every raw fixed-point entry of A and then b (little-endian u128). Why: the clip's proof (`protocols/clip-bound.md`) needs each
/// root to bound the norm of the scores under the maps the nodes apply; a party derives its
/// map from theta and its own schema, the nodes take theirs from the coordinator, so the nodes
/// compare the two (a coordinator that sent a party another theta, or whose schema models a
/// column differently with the same widths, is caught). Public values only. Cost: one SHA-256
/// over 32 K w_p bytes.
pub fn map_statement(map: &PartyMap) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"vtwin score map statement v2\0");
    h.update((map.width as u64).to_le_bytes());
    // The scale the party inputs T_p at: a node that read another would misscale G_p.
    h.update([u8::from(map.integer_stats)]);
    h.update((map.scale.len() as u64).to_le_bytes());
    // One update over the entries' bytes: the same stream as one update per entry, at the
    // hash's block speed.
    let entries: Vec<u8> = map
        .scale
        .iter()
        .chain(&map.offset)
        .flat_map(|v| v.raw().to_le_bytes())
        .collect();
    h.update(&entries);
    h.finalize().into()
}

/// The two uploads a party sends each node per request, in this order (wire
/// `Body::Upload::part`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum UploadPart {
    /// Part 0: the data client's seeds and `[mat | root | flags]`, which the circuit's first
    /// layers need.
    First = 0,
    /// Part 1: T_p and the noise contribution, which the circuit takes only at its `M_p`
    /// layer (`vtwin_iteration::party::NodeMessages`).
    Late = 1,
}

impl UploadPart {
    /// Both parts, in sending order.
    pub const ALL: [UploadPart; 2] = [UploadPart::First, UploadPart::Late];

    /// The part a wire byte names, if any.
    pub fn from_wire(part: u8) -> Option<UploadPart> {
        UploadPart::ALL.into_iter().find(|p| *p as u8 == part)
    }
}

/// How long a party's channel signature lasts ([`channel_statement`]'s `expires`, set by the
/// party to its clock plus this): one hour. A party makes new channels once less than
/// [`CHANNEL_RENEW_SECS`] remain. A leaked channel secret forges blobs in the party's name
/// until the node's clock passes the signed expiry: at most [`CHANNEL_MAX_AHEAD_SECS`]
/// (`protocols/sealing.md`, "Origin").
pub const CHANNEL_LIFETIME_SECS: u64 = 3600;

/// A party renews its channels when less than this remains of their lifetime: 30 minutes,
/// which is also how far its clock may lag a node's.
pub const CHANNEL_RENEW_SECS: u64 = 1800;

/// The latest expiry a node accepts, past its own clock: the lifetime plus 30 minutes for a
/// party clock that runs ahead. A signature for longer is refused, so an honest party's
/// channel cannot outlive the bound (a party can always sign its key again).
pub const CHANNEL_MAX_AHEAD_SECS: u64 = CHANNEL_LIFETIME_SECS + 1800;

// A party renews before its channel lapses, and a node accepts any channel a party makes,
// with room for the clocks to differ.
const _: () = assert!(CHANNEL_RENEW_SECS < CHANNEL_LIFETIME_SECS);
const _: () = assert!(CHANNEL_LIFETIME_SECS + CHANNEL_RENEW_SECS <= CHANNEL_MAX_AHEAD_SECS);

/// Whether a party keeps sealing on a channel whose signature expires at `expires`, at its
/// clock `now`: while more than [`CHANNEL_RENEW_SECS`] remain.
pub fn channel_lasts(expires: u64, now: u64) -> bool {
    now.saturating_add(CHANNEL_RENEW_SECS) < expires
}

/// Whether a node takes a channel signature that lapses at `expires`, at its clock `now`:
/// not lapsed, and at most [`CHANNEL_MAX_AHEAD_SECS`] ahead.
pub fn expiry_acceptable(expires: u64, now: u64) -> bool {
    now <= expires && expires <= now.saturating_add(CHANNEL_MAX_AHEAD_SECS)
}

/// The wall clock in Unix seconds (0 before 1970), what channel expiries are set and checked
/// against.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a party signs for its sealing channel to `node`, at a job's start and then whenever
/// less than [`CHANNEL_RENEW_SECS`] of the last signature remain (every 30 minutes): the party (u16 LE), the node, the channel's
/// public key `channel` (`E`, the first 32 bytes of each of its blobs), the node's seal
/// public key `node_public` and the Unix second `expires` after which the signature is void
/// (u64 LE; signed under `vtwin_net::relay_signature::CHANNEL_DOMAIN`; 75 bytes). Why: sealing is anonymous
/// (anyone can seal to a node's public key), so the signature is what ties a channel to its
/// party whatever link carries its blobs; a blob opens only under the channel's shared
/// secret, which only the party that made `E` and the node hold, so a blob that opens on a
/// signed channel is the party's. What a blob answers (the attempt, the part) is inside it
/// ([`SealedInputs`]), and its session, iteration, party and node are in its sealing
/// context. Before wire version 18 the party signed every blob (its digest, the session,
/// attempt, iteration, party, node and part): one ECDSA signature per blob at the party and
/// one verification per blob at the node, with BLAKE3 over each blob at both
/// (`protocols/sealing.md`, "Origin"). Cost: none beyond the bytes.
pub fn channel_statement(
    party: u16,
    node: u8,
    channel: &[u8; 32],
    node_public: &[u8; 32],
    expires: u64,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(2 + 1 + 32 + 32 + 8);
    m.extend_from_slice(&party.to_le_bytes());
    m.push(node);
    m.extend_from_slice(channel);
    m.extend_from_slice(node_public);
    m.extend_from_slice(&expires.to_le_bytes());
    m
}

/// What is inside one sealed blob: postcard of this struct (a node reads it in place,
/// [`SealedInputsView`]). The messages carry PRG seeds, so the whole struct is zeroized on
/// drop.
#[derive(Serialize)]
pub struct SealedInputs {
    /// The session attempt the party answered (the request's; a node refuses the blob in
    /// any other attempt).
    pub attempt: [u8; 8],
    /// Which part of the upload this is ([`UploadPart`] as its wire byte; a node refuses it
    /// as the other part).
    pub part: u8,
    /// The noise multiplier the party's noise share was drawn with.
    pub sigma: f64,
    /// The nominal clip C its noise share was scaled with.
    pub clip: f64,
    /// The digest of the rows it trains on (its `PartyInfo` digest; the request's
    /// `JobTerms::rows`).
    pub rows: [u8; 32],
    /// [`batch_statement`] of the batch it was asked for.
    pub batch: [u8; 32],
    /// [`map_statement`] of the score map its score roots were computed with.
    pub maps: [u8; 32],
    /// `Message::encode()` of each message to this node, in order.
    #[serde(with = "byte_strings")]
    pub messages: Vec<Vec<u8>>,
}

/// `Vec<Vec<u8>>` as a sequence of byte strings: in postcard the same bytes as serde's
/// default (a length, then each byte raw), written in bulk instead of one serde call per
/// byte (most of a party's upload is these messages).
mod byte_strings {
    use serde::ser::SerializeSeq;
    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(blobs: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(blobs.len()))?;
        for blob in blobs {
            seq.serialize_element(serde_bytes::Bytes::new(blob))?;
        }
        seq.end()
    }
}

/// [`SealedInputs`] decoded in place: the same postcard bytes, its messages borrowed from the
/// unsealed plaintext instead of copied out of it, so that a node copies (and zeroizes) a
/// party's upload once less. The plaintext buffer, which the caller zeroizes, holds every
/// secret byte.
#[derive(Deserialize)]
pub struct SealedInputsView<'a> {
    /// [`SealedInputs::attempt`].
    pub attempt: [u8; 8],
    /// [`SealedInputs::part`].
    pub part: u8,
    /// [`SealedInputs::sigma`].
    pub sigma: f64,
    /// [`SealedInputs::clip`].
    pub clip: f64,
    /// [`SealedInputs::rows`].
    pub rows: [u8; 32],
    /// [`SealedInputs::batch`].
    pub batch: [u8; 32],
    /// [`SealedInputs::maps`].
    pub maps: [u8; 32],
    /// [`SealedInputs::messages`], borrowed.
    #[serde(borrow)]
    pub messages: Vec<&'a [u8]>,
}

impl std::fmt::Debug for SealedInputsView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_inputs(
            f,
            "SealedInputsView",
            (self.sigma, self.clip),
            self.messages.len(),
        )
    }
}

/// The public terms and the number of messages: the messages hold secret seeds and shares,
/// and are never printed.
fn debug_inputs(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    (sigma, clip): (f64, f64),
    messages: usize,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("sigma", &sigma)
        .field("clip", &clip)
        .field("messages", &messages)
        .finish()
}

impl Drop for SealedInputs {
    fn drop(&mut self) {
        // Word-speed volatile wipes (vtwin_host::wipe), contents and spare capacity.
        self.messages
            .iter_mut()
            .for_each(vtwin_host::wipe::wipe_vec);
        self.messages.clear();
    }
}

impl std::fmt::Debug for SealedInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_inputs(
            f,
            "SealedInputs",
            (self.sigma, self.clip),
            self.messages.len(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_inputs_keep_their_wire_format_and_round_trip() {
        let messages = vec![vec![], vec![7u8], (0..=255u8).cycle().take(1000).collect()];
        let s = SealedInputs {
            attempt: [9; 8],
            part: 1,
            sigma: 1.25,
            clip: 0.5,
            rows: [1; 32],
            batch: [2; 32],
            maps: [3; 32],
            messages: messages.clone(),
        };
        let bytes = postcard::to_allocvec(&s).unwrap();
        // postcard writes a struct as the tuple of its fields: these are the same fields with
        // serde's default `Vec<Vec<u8>>`, the wire format before the bulk byte strings.
        let plain = (
            [9u8; 8], 1u8, 1.25f64, 0.5f64, [1u8; 32], [2u8; 32], [3u8; 32], &messages,
        );
        assert_eq!(bytes, postcard::to_allocvec(&plain).unwrap());
        // The node's in-place view reads the same fields back.
        let view: SealedInputsView<'_> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(
            view.messages,
            messages.iter().map(Vec::as_slice).collect::<Vec<_>>()
        );
        assert_eq!(
            (view.attempt, view.part),
            ([9; 8], 1),
            "what the blob answers"
        );
        assert_eq!(
            (view.sigma, view.clip, view.rows, view.batch, view.maps),
            (1.25, 0.5, [1; 32], [2; 32], [3; 32])
        );
        // Truncated anywhere, it does not decode.
        for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(postcard::from_bytes::<SealedInputsView<'_>>(&bytes[..cut]).is_err());
        }
    }

    /// The map statement is SHA-256 of its documented byte string: the tag, w_p (u64 LE), the
    /// integer flag, the entry count (u64 LE), then every raw entry of A and then b (u128
    /// LE); a changed entry, flag or width changes it.
    #[test]
    fn the_map_statement_is_sha256_of_its_documented_bytes() {
        use vtwin_fixed::Fx;
        let map = PartyMap {
            width: 3,
            scale: (0..6u128)
                .map(|i| Fx::from_raw((i * 0x1_0000_0001).wrapping_sub(2)))
                .collect(),
            offset: (0..6u128)
                .map(|i| Fx::from_raw((i << 40).wrapping_neg()))
                .collect(),
            integer_stats: true,
        };
        let mut bytes = b"vtwin score map statement v2\0".to_vec();
        bytes.extend(3u64.to_le_bytes());
        bytes.push(1);
        bytes.extend(6u64.to_le_bytes());
        for v in map.scale.iter().chain(&map.offset) {
            bytes.extend(v.raw().to_le_bytes());
        }
        let want: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(map_statement(&map), want);
        // The same digest computed outside Rust (Python hashlib over the bytes above).
        let independent = "1196b0f0cfe9b9bc2f8556e93bc1f6c37c2cee2d2d3eccd0baa30971de115501";
        assert_eq!(vtwin_net::seal::hex(&want), independent);
        let mut other = map.clone();
        other.offset[5] = Fx::from_raw(1);
        assert_ne!(map_statement(&other), want);
        let flag = PartyMap {
            integer_stats: false,
            ..map.clone()
        };
        assert_ne!(map_statement(&flag), want);
        let width = PartyMap { width: 2, ..map };
        assert_ne!(map_statement(&width), want);
    }

    /// The signed statement byte for byte: party (LE), node, the channel key, the node's
    /// key, the expiry (LE); each field changes it.
    #[test]
    fn the_channel_statement_is_its_fields() {
        let p = channel_statement(0x0506, 7, &[1; 32], &[2; 32], 0x0102_0304);
        let mut want = vec![0x06, 0x05, 7];
        want.extend([1u8; 32]);
        want.extend([2u8; 32]);
        want.extend([4, 3, 2, 1, 0, 0, 0, 0]);
        assert_eq!(p, want);
        for other in [
            channel_statement(0x0507, 7, &[1; 32], &[2; 32], 0x0102_0304),
            channel_statement(0x0506, 6, &[1; 32], &[2; 32], 0x0102_0304),
            channel_statement(0x0506, 7, &[3; 32], &[2; 32], 0x0102_0304),
            channel_statement(0x0506, 7, &[1; 32], &[3; 32], 0x0102_0304),
            channel_statement(0x0506, 7, &[1; 32], &[2; 32], 0x0102_0305),
        ] {
            assert_ne!(other, p);
        }
    }

    /// A node takes an expiry from its clock to the bound ahead, inclusive, and no other;
    /// the sum cannot overflow.
    #[test]
    fn a_node_takes_expiries_from_its_clock_to_the_bound_ahead() {
        let now = 1_800_000_000;
        assert!(expiry_acceptable(now, now));
        assert!(expiry_acceptable(now + CHANNEL_MAX_AHEAD_SECS, now));
        assert!(!expiry_acceptable(now - 1, now), "lapsed");
        assert!(
            !expiry_acceptable(now + CHANNEL_MAX_AHEAD_SECS + 1, now),
            "too long"
        );
        assert!(!expiry_acceptable(0, now) && !expiry_acceptable(u64::MAX, now));
        assert!(expiry_acceptable(u64::MAX, u64::MAX - 5));
        // What a party signs is taken by a node whose clock is within the renewal margin.
        let signed = now + CHANNEL_LIFETIME_SECS;
        assert!(expiry_acceptable(signed, now - CHANNEL_RENEW_SECS));
        assert!(expiry_acceptable(signed, signed - CHANNEL_RENEW_SECS));
    }

    /// A party seals on a channel until less than the renewal margin remains, then makes new
    /// ones: a fresh channel lasts, one at the margin does not.
    #[test]
    fn a_channel_is_renewed_before_its_signature_lapses() {
        let made = 1_800_000_000;
        let expires = made + CHANNEL_LIFETIME_SECS;
        assert!(channel_lasts(expires, made));
        let renew_at = expires - CHANNEL_RENEW_SECS;
        assert!(channel_lasts(expires, renew_at - 1));
        assert!(!channel_lasts(expires, renew_at));
        assert!(!channel_lasts(expires, expires + 1));
        assert!(!channel_lasts(0, u64::MAX), "no overflow");
    }

    #[test]
    fn upload_parts_are_0_and_1_on_the_wire() {
        assert_eq!(UploadPart::from_wire(0), Some(UploadPart::First));
        assert_eq!(UploadPart::from_wire(1), Some(UploadPart::Late));
        assert_eq!(UploadPart::from_wire(2), None);
    }
}
