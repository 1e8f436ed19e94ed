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

/// What a party signs for the sealed blob `sealed` it made for `node` in answer to
/// attempt `attempt` at session `session`, iteration `t`, as upload `part`: the session, the
/// attempt, t, the party, the node, the part and the BLAKE3 hash of the blob (signed under
/// `vtwin_net::relay_signature::UPLOAD_DOMAIN`). Why: sealing is anonymous
/// (anyone can seal to a node's public key) and its context has no attempt, so the signature
/// is what ties a blob to its party, attempt and node whatever link carries it: before wire
/// version 15 the coordinator relayed the blobs and could otherwise have forged a whole
/// upload in a party's name (no noise share, roots out of range, any statement) or moved one
/// into another attempt; since then the party's own TLS link carries them, and the signature
/// stays as a check that does not rest on the link. The node verifies the party's signature,
/// from a certificate under the consortium CA naming the party whose link it came on,
/// before it unseals. Why BLAKE3: a party's blobs to
/// nodes 1 and 2 carry its share corrections (about 0.5 MB each per iteration on Adult),
/// hashed once by the party and once by the node, and BLAKE3 takes about a quarter of
/// SHA-256's time on this project's VM (`protocols/sealing.md`); the binding rests on its
/// collision resistance as it did on SHA-256's. Cost: one BLAKE3 over the blob.
pub fn upload_payload(
    session: &[u8; 16],
    attempt: &[u8; 8],
    t: u64,
    party: u16,
    node: u8,
    part: UploadPart,
    sealed: &[u8],
) -> Vec<u8> {
    let mut m = Vec::with_capacity(16 + 8 + 8 + 2 + 1 + 1 + 32);
    m.extend_from_slice(session);
    m.extend_from_slice(attempt);
    m.extend_from_slice(&t.to_le_bytes());
    m.extend_from_slice(&party.to_le_bytes());
    m.push(node);
    m.push(part as u8);
    m.extend_from_slice(blake3::hash(sealed).as_bytes());
    m
}

/// What is inside one sealed blob: postcard of this struct (a node reads it in place,
/// [`SealedInputsView`]). The messages carry PRG seeds, so the whole struct is zeroized on
/// drop.
#[derive(Serialize)]
pub struct SealedInputs {
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
        let plain = (1.25f64, 0.5f64, [1u8; 32], [2u8; 32], [3u8; 32], &messages);
        assert_eq!(bytes, postcard::to_allocvec(&plain).unwrap());
        // The node's in-place view reads the same fields back.
        let view: SealedInputsView<'_> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(
            view.messages,
            messages.iter().map(Vec::as_slice).collect::<Vec<_>>()
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

    /// The signed payload byte for byte: session, attempt, t (LE), party (LE), node, part,
    /// then BLAKE3 of the blob (its published test vector for the empty input); another part
    /// or a changed blob changes the payload.
    #[test]
    fn the_upload_payload_is_its_fields_then_blake3_of_the_blob() {
        let p = upload_payload(&[1; 16], &[2; 8], 0x0304, 0x0506, 7, UploadPart::Late, b"");
        let mut want = vec![1u8; 16];
        want.extend([2u8; 8]);
        want.extend(0x0304u64.to_le_bytes());
        want.extend(0x0506u16.to_le_bytes());
        want.extend([7, 1]);
        let empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262";
        want.extend(*vtwin_net::seal::parse_hex32(empty).unwrap());
        assert_eq!(p, want);
        let q = upload_payload(&[1; 16], &[2; 8], 0x0304, 0x0506, 7, UploadPart::Late, b"x");
        assert_eq!(q[..36], p[..36]);
        assert_ne!(q[36..], p[36..]);
        let first = upload_payload(&[1; 16], &[2; 8], 0x0304, 0x0506, 7, UploadPart::First, b"");
        assert_eq!(first[35], 0);
        assert_eq!((&first[..35], &first[36..]), (&p[..35], &p[36..]));
    }

    #[test]
    fn upload_parts_are_0_and_1_on_the_wire() {
        assert_eq!(UploadPart::from_wire(0), Some(UploadPart::First));
        assert_eq!(UploadPart::from_wire(1), Some(UploadPart::Late));
        assert_eq!(UploadPart::from_wire(2), None);
    }
}
