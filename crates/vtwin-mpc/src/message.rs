//! Messages and their wire format.
//!
//! Every message names its session, sender, addressee and step (the sender's round number
//! between nodes; the input sequence number for a client's input). The payload is a vector
//! of ring elements (`u128`; binary shares are packed 128 bits to an element).
//!
//! Wire format (little endian): magic (4 bytes), session (16 bytes), from (3 bytes), to (3
//! bytes), step (8 bytes), payload length n (4 bytes, in elements), payload. Header: 38
//! bytes. Two payload forms, chosen by the message's [`Packing`] (the sender's public
//! layout, never the values; `protocols/mpc-sharing.md`):
//!
//! - `"VTM1"` (whole packing): every element in 16 bytes.
//! - `"VTM2"` (since wire version 20): the number of runs r (4 bytes), the runs (elements,
//!   4 bytes; width W in `8..=16`, 1 byte), then each element of each run in its low W
//!   bytes and the elements after the runs in 16. The binary layers of a window below 128
//!   bits send their words so (`crate::binary`): 8 bytes for 64 bits, 10 for 80.
//!
//! Decoding rejects any other length, tag, magic or packing that is not normalised
//! ([`Packing`]) with a [`WireError`], so every decoded message re-encodes to its input, and
//! holds at most twice the bytes it came in.

use std::fmt;

use crate::le_bytes::with_le_bytes;
use crate::packing::{Packing, MIN_WIDTH};

/// Header size in bytes of an encoded message.
pub const HEADER_BYTES: usize = 38;
const MAGIC: &[u8; 4] = b"VTM1";
const MAGIC_PACKED: &[u8; 4] = b"VTM2";
/// Bytes of one run in the packed form's table.
const RUN_BYTES: usize = 5;

/// A 128-bit session identifier, public, unique per protocol run (it domain-separates every
/// derived seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionId(pub [u8; 16]);

/// One of the three compute nodes, 0, 1 or 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(u8);

impl NodeId {
    /// All three nodes.
    pub const ALL: [NodeId; 3] = [NodeId(0), NodeId(1), NodeId(2)];

    /// Node `i` for `i < 3`.
    pub const fn new(i: u8) -> Option<NodeId> {
        if i < 3 {
            Some(NodeId(i))
        } else {
            None
        }
    }

    /// The index 0, 1 or 2.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Node `i + 1 mod 3` (holds share `x_{i+1}` as its own).
    pub const fn next(self) -> NodeId {
        NodeId((self.0 + 1) % 3)
    }

    /// Node `i - 1 mod 3`.
    pub const fn prev(self) -> NodeId {
        NodeId((self.0 + 2) % 3)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// A protocol participant: a compute node, or a client (a party, a noise contributor or the
/// coordinator; clients input values and receive openings but never hold replicated shares).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    /// A compute node.
    Node(NodeId),
    /// A client, by its session-wide number.
    Client(u16),
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Node(n) => write!(f, "{n}"),
            Peer::Client(c) => write!(f, "client {c}"),
        }
    }
}

/// One message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The session.
    pub session: SessionId,
    /// The sender.
    pub from: Peer,
    /// The addressee.
    pub to: Peer,
    /// Round number (node to node) or input sequence number (client to node).
    pub step: u64,
    /// Ring elements.
    pub payload: Vec<u128>,
    /// The widths the elements travel in (public layout; [`Packing::whole`] for 16 bytes
    /// each). Each element must fit its width: the encoding keeps only those bytes.
    pub packing: Packing,
}

/// Bytes that are not a valid encoded message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A packed form whose runs are not normalised ([`Packing`]: an empty run, a width
    /// outside 8..=16, two adjacent runs of one width, a last run of 16, no run) or cover
    /// more elements than the message has.
    #[error("packing not normalised or longer than the payload")]
    Packing,
    /// Shorter than a header, or the length field disagrees with the byte count.
    #[error("message of {got} bytes, expected {expected}")]
    Length {
        /// Bytes expected from the header (or the header size).
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// Wrong magic/version.
    #[error("bad magic (not a vtwin-mpc v1 message)")]
    Magic,
    /// A peer field with an unknown tag or a node index >= 3.
    #[error("bad peer field {tag:#x}/{id}")]
    Peer {
        /// The tag byte.
        tag: u8,
        /// The id.
        id: u16,
    },
}

fn put_peer(out: &mut Vec<u8>, p: Peer) {
    let (tag, id) = match p {
        Peer::Node(n) => (0u8, u16::from(n.0)),
        Peer::Client(c) => (1u8, c),
    };
    out.push(tag);
    out.extend_from_slice(&id.to_le_bytes());
}

fn get_peer(b: &[u8]) -> Result<Peer, WireError> {
    let tag = b[0];
    let id = u16::from_le_bytes([b[1], b[2]]);
    match tag {
        0 => u8::try_from(id)
            .ok()
            .and_then(NodeId::new)
            .map(Peer::Node)
            .ok_or(WireError::Peer { tag, id }),
        1 => Ok(Peer::Client(id)),
        _ => Err(WireError::Peer { tag, id }),
    }
}

impl Message {
    /// Encoded size in bytes: `38 + 16 n` in the plain form, `38 + 4 + 5 r` plus the
    /// elements' widths in the packed form. Cost O(r).
    pub fn encoded_len(&self) -> usize {
        encoded_len_with(&self.packing.fit(self.payload.len()), self.payload.len())
    }

    /// Encodes (format in the module docs). Cost O(n); at most `38 + 16 n + 4 + 5 r` bytes.
    /// The packing is first cut to the payload ([`Packing::fit`]), so messages that differ
    /// only in a packing longer than their payload encode alike.
    ///
    /// # Panics
    /// If an element has bits above its run's width (the sender's masks must restrict it).
    pub fn encode(&self) -> Vec<u8> {
        let n = self.payload.len();
        let packing = self.packing.fit(n);
        let mut out = Vec::with_capacity(encoded_len_with(&packing, n));
        out.extend_from_slice(if packing.is_whole() {
            MAGIC
        } else {
            MAGIC_PACKED
        });
        out.extend_from_slice(&self.session.0);
        put_peer(&mut out, self.from);
        put_peer(&mut out, self.to);
        out.extend_from_slice(&self.step.to_le_bytes());
        // Payload lengths are bounded by memory; a protocol never sends 2^32 elements.
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        if packing.is_whole() {
            with_le_bytes(&self.payload, |b| out.extend_from_slice(b));
            return out;
        }
        put_run_table(&mut out, packing.runs());
        let mut at = 0;
        for (count, w) in packing.segments(n).into_iter().flatten() {
            let w = usize::from(w);
            for e in &self.payload[at..at + count] {
                // Dropping the bits would corrupt a share without a trace: a sender that
                // declares a width its words exceed is a bug, not an input.
                assert!(
                    w == 16 || e >> (8 * w) == 0,
                    "an element wider than its run"
                );
                out.extend_from_slice(&e.to_le_bytes()[..w]);
            }
            at += count;
        }
        out
    }

    /// Decodes, rejecting any malformed or non-canonical input with a [`WireError`] (never
    /// panics). Allocates at most twice the input's size. Cost O(n).
    pub fn decode(bytes: &[u8]) -> Result<Message, WireError> {
        if bytes.len() < HEADER_BYTES {
            return Err(WireError::Length {
                expected: HEADER_BYTES,
                got: bytes.len(),
            });
        }
        let packed = match &bytes[0..4] {
            m if m == MAGIC => false,
            m if m == MAGIC_PACKED => true,
            _ => return Err(WireError::Magic),
        };
        let mut session = [0u8; 16];
        session.copy_from_slice(&bytes[4..20]);
        let from = get_peer(&bytes[20..23])?;
        let to = get_peer(&bytes[23..26])?;
        let mut step = [0u8; 8];
        step.copy_from_slice(&bytes[26..34]);
        let n = le_u32(&bytes[34..38]) as usize;
        let (packing, body) = if packed {
            packed_table(bytes, n)?
        } else {
            (Packing::whole(), &bytes[HEADER_BYTES..])
        };
        // Checked before anything is allocated: at least 8 bytes per element.
        let expected = packing
            .payload_bytes(n)
            .map_or(usize::MAX, |b| b.saturating_add(bytes.len() - body.len()));
        if bytes.len() != expected {
            return Err(WireError::Length {
                expected,
                got: bytes.len(),
            });
        }
        let mut payload = Vec::with_capacity(n);
        let mut at = 0;
        for (count, w) in packing.segments(n).into_iter().flatten() {
            let w = usize::from(w);
            let end = at + count * w;
            payload.extend(body[at..end].chunks_exact(w).map(|c| {
                let mut e = [0u8; 16];
                e[..w].copy_from_slice(c);
                u128::from_le_bytes(e)
            }));
            at = end;
        }
        Ok(Message {
            session: SessionId(session),
            from,
            to,
            step: u64::from_le_bytes(step),
            payload,
            packing,
        })
    }
}

/// The packed form's run table: r (u32 LE), then each run's count (u32 LE) and width.
fn put_run_table(out: &mut Vec<u8>, runs: &[(u32, u8)]) {
    out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
    for &(count, w) in runs {
        out.extend_from_slice(&count.to_le_bytes());
        out.push(w);
    }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The packed form's run table (normalised, covering at most `n` elements) and the body
/// after it.
fn packed_table(bytes: &[u8], n: usize) -> Result<(Packing, &[u8]), WireError> {
    let short = |expected: usize| WireError::Length {
        expected,
        got: bytes.len(),
    };
    let rest = &bytes[HEADER_BYTES..];
    let r = le_u32(rest.get(..4).ok_or(short(HEADER_BYTES + 4))?) as usize;
    let table_end = r
        .checked_mul(RUN_BYTES)
        .and_then(|t| t.checked_add(4))
        .unwrap_or(usize::MAX);
    let table = rest
        .get(4..table_end)
        .ok_or(short(HEADER_BYTES.saturating_add(table_end)))?;
    let runs = table
        .chunks_exact(RUN_BYTES)
        .map(|c| (le_u32(&c[..4]), c[4]))
        .collect();
    let packing = Packing::from_runs(runs)
        .filter(|p| !p.is_whole() && p.covered() <= n)
        .ok_or(WireError::Packing)?;
    Ok((packing, &rest[table_end..]))
}

/// Encoded size of `n` elements under a packing already fitted to them.
fn encoded_len_with(packing: &Packing, n: usize) -> usize {
    let table = if packing.is_whole() {
        0
    } else {
        4 + RUN_BYTES * packing.runs().len()
    };
    // A payload in memory has a size that fits.
    HEADER_BYTES + table + packing.payload_bytes(n).unwrap_or(usize::MAX)
}

// Every width is at least 8: what bounds a decoder's allocation by twice its input.
const _: () = assert!(MIN_WIDTH >= 8);

#[cfg(test)]
mod tests {
    //! The two payload forms: sizes, round trips, and every non-canonical or short encoding
    //! refused without a panic.

    use proptest::prelude::*;

    use super::*;

    fn msg(payload: Vec<u128>, packing: Packing) -> Message {
        Message {
            session: SessionId([3; 16]),
            from: Peer::Node(NodeId::ALL[1]),
            to: Peer::Node(NodeId::ALL[0]),
            step: 7,
            payload,
            packing,
        }
    }

    /// Words restricted to `bits` low bits, pseudo-random.
    fn words(n: usize, bits: u32, seed: u128) -> Vec<u128> {
        (0..n as u128)
            .map(|k| {
                let w = (k + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ seed;
                if bits == 128 {
                    w
                } else {
                    w & ((1 << bits) - 1)
                }
            })
            .collect()
    }

    fn round_trip(m: &Message) -> Vec<u8> {
        let bytes = m.encode();
        assert_eq!(bytes.len(), m.encoded_len());
        assert_eq!(Message::decode(&bytes).expect("decode"), *m);
        bytes
    }

    #[test]
    fn the_packing_not_the_values_sets_the_form_and_the_widths() {
        let whole = Packing::whole();
        let empty = round_trip(&msg(Vec::new(), whole.clone()));
        assert_eq!((&empty[..4], empty.len()), (&b"VTM1"[..], 38));
        // Small values, whole packing: still 16 bytes each.
        let small = round_trip(&msg(vec![0, 1, 2], whole.clone()));
        assert_eq!((&small[..4], small.len()), (&b"VTM1"[..], 38 + 48));
        // 80-bit words: one run of 10 bytes, whatever their values (zeros included).
        let m80 = (1u128 << 80) - 1;
        let p = Packing::for_masks(&[m80; 70]);
        for payload in [words(70, 80, 2), vec![0; 70]] {
            let b = round_trip(&msg(payload, p.clone()));
            assert_eq!((&b[..4], b.len()), (&b"VTM2"[..], 38 + 4 + 5 + 10 * 70));
        }
        // Mixed: 40 words of 80 bits, 1 whole, 30 of 64 bits, 2 whole.
        let mut masks = vec![m80; 40];
        masks.push(u128::MAX);
        masks.extend([u64::MAX as u128; 30]);
        masks.extend([u128::MAX; 2]);
        let mut payload = words(40, 80, 4);
        payload.extend(words(1, 128, 5));
        payload.extend(words(30, 64, 6));
        payload.extend(words(2, 128, 7));
        let p = Packing::for_masks(&masks);
        assert_eq!(p.runs(), &[(40, 10), (1, 16), (30, 8)]);
        let b = round_trip(&msg(payload, p));
        assert_eq!(b.len(), 38 + 4 + 15 + 400 + 16 + 240 + 32);
        // A packing longer than the payload is cut to it.
        let long = msg(words(3, 64, 8), Packing::for_masks(&[u64::MAX as u128; 9]));
        let back = Message::decode(&long.encode()).expect("decode");
        assert_eq!(back.packing, long.packing.fit(3));
    }

    /// A packed encoding of `payload` under `runs` as given (checked or not), each element
    /// in its run's low bytes (a width above 16 pads with zeros), the rest whole: the body
    /// length always matches the runs, so only the run table can be at fault.
    fn encode_runs(payload: &[u128], runs: &[(u32, u8)]) -> Vec<u8> {
        let mut b = msg(payload.to_vec(), Packing::whole()).encode()[..HEADER_BYTES].to_vec();
        b[..4].copy_from_slice(b"VTM2");
        put_run_table(&mut b, runs);
        let mut at = 0;
        for &(count, w) in runs {
            for e in payload.iter().skip(at).take(count as usize) {
                let mut bytes = e.to_le_bytes().to_vec();
                bytes.resize(usize::from(w).max(16), 0);
                b.extend_from_slice(&bytes[..usize::from(w)]);
            }
            at += count as usize;
        }
        for e in payload.iter().skip(at) {
            b.extend_from_slice(&e.to_le_bytes());
        }
        b
    }

    #[test]
    fn non_canonical_and_short_encodings_are_refused() {
        let p = words(6, 64, 9);
        // The writer agrees with the encoder on a normalised table.
        let good = encode_runs(&p, &[(3, 8), (1, 16), (2, 8)]);
        let packing = Packing::for_masks(&[
            u64::MAX as u128,
            u64::MAX as u128,
            u64::MAX as u128,
            u128::MAX,
            u64::MAX as u128,
            u64::MAX as u128,
        ]);
        assert_eq!(good, msg(p.clone(), packing).encode());
        for (what, bad) in [
            ("no run", encode_runs(&p, &[])),
            ("one whole run", encode_runs(&p, &[(6, 16)])),
            ("a whole run last", encode_runs(&p, &[(3, 8), (3, 16)])),
            ("adjacent equal widths", encode_runs(&p, &[(3, 8), (3, 8)])),
            ("an empty run", encode_runs(&p, &[(0, 8), (6, 9)])),
            ("width 7", encode_runs(&p, &[(6, 7)])),
            ("width 0", encode_runs(&p, &[(6, 0)])),
            ("width 17", encode_runs(&p, &[(6, 17)])),
            ("runs past the payload", encode_runs(&p, &[(7, 8)])),
            ("a run on no payload", encode_runs(&[], &[(1, 8)])),
        ] {
            assert_eq!(Message::decode(&bad), Err(WireError::Packing), "{what}");
        }
        // Truncated anywhere, extended: an error, never a panic.
        for cut in 0..good.len() {
            assert!(Message::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert!(matches!(
            Message::decode(&[good.clone(), vec![0]].concat()),
            Err(WireError::Length { .. })
        ));
        // A run table or a length the body cannot hold is refused before allocating.
        let mut huge = good[..HEADER_BYTES].to_vec();
        huge[34..38].copy_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&1u32.to_le_bytes());
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.push(8);
        huge.extend_from_slice(&[0; 64]);
        assert!(matches!(
            Message::decode(&huge),
            Err(WireError::Length { .. })
        ));
        let mut runs = good[..HEADER_BYTES].to_vec();
        runs.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Message::decode(&runs),
            Err(WireError::Length { .. })
        ));
    }

    #[test]
    #[should_panic(expected = "an element wider than its run")]
    fn a_word_wider_than_its_run_is_a_bug_not_a_silent_cut() {
        let _ = msg(vec![1 << 64], Packing::for_masks(&[u64::MAX as u128])).encode();
    }

    proptest! {
        /// Any payload of words restricted to random byte widths round-trips under the
        /// packing of its masks, its encoding is as long as `encoded_len` says, and what
        /// decodes holds at most twice the bytes received.
        #[test]
        fn packed_messages_round_trip(
            parts in prop::collection::vec((0usize..40, 0u32..=16, any::<u128>()), 0..6),
        ) {
            let (mut payload, mut masks) = (Vec::new(), Vec::new());
            for (n, bytes, seed) in parts {
                let mask = if bytes == 16 { u128::MAX } else { (1u128 << (8 * bytes)) - 1 };
                payload.extend(words(n, 128, seed).into_iter().map(|w| w & mask));
                masks.extend(std::iter::repeat_n(mask, n));
            }
            let m = msg(payload, Packing::for_masks(&masks));
            let bytes = m.encode();
            prop_assert_eq!(bytes.len(), m.encoded_len());
            let back = Message::decode(&bytes).expect("decode");
            prop_assert!(16 * back.payload.len() <= 2 * bytes.len());
            prop_assert_eq!(back, m);
        }

        /// Arbitrary run tables (counts and widths near the edges) over a body of about the
        /// length they call for: never a panic, and what decodes re-encodes to its input.
        #[test]
        fn arbitrary_run_tables_decode_canonically(
            n in 0u32..40,
            runs in prop::collection::vec((0u32..20, 6u8..18), 0..5),
            slack in -2i64..3,
            fill in any::<u8>(),
        ) {
            let mut b = msg(Vec::new(), Packing::whole()).encode();
            b[..4].copy_from_slice(b"VTM2");
            b[34..38].copy_from_slice(&n.to_le_bytes());
            b.extend_from_slice(&(runs.len() as u32).to_le_bytes());
            let mut body = 0i64;
            let mut covered = 0i64;
            for &(count, w) in &runs {
                b.extend_from_slice(&count.to_le_bytes());
                b.push(w);
                body += i64::from(count) * i64::from(w);
                covered += i64::from(count);
            }
            body += 16 * (i64::from(n) - covered).max(0) + slack;
            b.extend(std::iter::repeat_n(fill, body.max(0) as usize));
            if let Ok(m) = Message::decode(&b) {
                prop_assert!(16 * m.payload.len() <= 2 * b.len());
                prop_assert_eq!(m.encode(), b);
            }
        }
    }
}
