//! Messages and their wire format.
//!
//! Every message names its session, sender, addressee and step (the sender's round number
//! between nodes; the input sequence number for a client's input). The payload is a vector
//! of ring elements (`u128`; binary shares are packed 128 bits to an element).
//!
//! Wire format (little endian): magic (4 bytes), session (16 bytes), from (3 bytes), to (3
//! bytes), step (8 bytes), payload length n (4 bytes, in elements), payload. Header: 38
//! bytes. Two payload forms, one per message (`protocols/wire-format.md`):
//!
//! - `"VTM1"`: every element in 16 bytes. Arithmetic shares are uniform on Z_2^128, so this
//!   is their form.
//! - `"VTM2"` (since wire version 20): the elements in blocks of [`BLOCK`] (the last may be
//!   shorter), each block a width byte `W` in `8..=16` followed by its elements' low `W`
//!   bytes. The binary layers of a window below 128 bits send words whose bits above the
//!   window are zero in every share (`crate::binary`), 8 to 11 bytes each.
//!
//! The encoding is canonical: a block's `W` is the byte length of its largest element, but at
//! least 8 (so a payload decodes into at most twice its bytes), and `"VTM2"` is used exactly
//! when some block's `W` is below 16. Decoding rejects any other length, tag, magic, width or
//! form with a [`WireError`], so every decoded message re-encodes to its input.

use std::fmt;

use crate::le_bytes::with_le_bytes;

/// Header size in bytes of an encoded message.
pub const HEADER_BYTES: usize = 38;
const MAGIC: &[u8; 4] = b"VTM1";
const MAGIC_PACKED: &[u8; 4] = b"VTM2";

/// Elements per block of the packed form.
pub const BLOCK: usize = 32;

/// The narrowest element width of the packed form, in bytes: it bounds what a decoder
/// allocates per byte received (16 bytes per element in memory).
const MIN_WIDTH: usize = 8;

/// The width of one block of the packed form: its largest element's byte length, at least
/// [`MIN_WIDTH`]. Branches on share words only through their length, which is public
/// (the window of the layer that sends them).
fn block_width(block: &[u128]) -> usize {
    let top = block.iter().fold(0u128, |acc, &w| acc | w);
    let bytes = (128 - top.leading_zeros() as usize).div_ceil(8);
    bytes.max(MIN_WIDTH)
}

/// The widths of the packed form's blocks, or `None` when every block is 16 bytes wide
/// (then the message travels in the plain form).
fn packed_widths(payload: &[u128]) -> Option<Vec<u8>> {
    let widths: Vec<u8> = payload
        .chunks(BLOCK)
        .map(|b| block_width(b) as u8)
        .collect();
    widths.iter().any(|&w| w < 16).then_some(widths)
}

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
}

/// Bytes that are not a valid encoded message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A block of the packed form whose width byte is not its canonical width
    /// (`protocols/wire-format.md`), or a plain message that has a canonical packed form.
    #[error("block {block}: width {width} is not the canonical one")]
    Width {
        /// The block's index (0 for a plain message).
        block: usize,
        /// The width byte found (16 for a plain message).
        width: u8,
    },
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
    /// Encoded size in bytes: `38 + 16 n` in the plain form, `38 + sum (1 + W b)` over the
    /// packed form's blocks of b elements and width W. Cost O(n).
    pub fn encoded_len(&self) -> usize {
        match packed_widths(&self.payload) {
            None => HEADER_BYTES + 16 * self.payload.len(),
            Some(widths) => {
                let body: usize = self
                    .payload
                    .chunks(BLOCK)
                    .zip(&widths)
                    .map(|(b, &w)| 1 + usize::from(w) * b.len())
                    .sum();
                HEADER_BYTES + body
            }
        }
    }

    /// Encodes (format in the module docs). Cost: O(n), at most `38 + 16 n + n / 32 + 1`
    /// bytes.
    pub fn encode(&self) -> Vec<u8> {
        let widths = packed_widths(&self.payload);
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(if widths.is_some() {
            MAGIC_PACKED
        } else {
            MAGIC
        });
        out.extend_from_slice(&self.session.0);
        put_peer(&mut out, self.from);
        put_peer(&mut out, self.to);
        out.extend_from_slice(&self.step.to_le_bytes());
        // Payload lengths are bounded by memory; a protocol never sends 2^32 elements.
        let len = u32::try_from(self.payload.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        match widths {
            None => with_le_bytes(&self.payload, |b| out.extend_from_slice(b)),
            Some(widths) => {
                for (block, &w) in self.payload.chunks(BLOCK).zip(&widths) {
                    out.push(w);
                    for e in block {
                        out.extend_from_slice(&e.to_le_bytes()[..usize::from(w)]);
                    }
                }
            }
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
        let mut len = [0u8; 4];
        len.copy_from_slice(&bytes[34..38]);
        let n = u32::from_le_bytes(len) as usize;
        let body = &bytes[HEADER_BYTES..];
        let payload = if packed {
            decode_packed(body, n)?
        } else {
            let expected = n
                .checked_mul(16)
                .and_then(|p| p.checked_add(HEADER_BYTES))
                .unwrap_or(usize::MAX);
            if bytes.len() != expected {
                return Err(WireError::Length {
                    expected,
                    got: bytes.len(),
                });
            }
            let payload: Vec<u128> = body
                .chunks_exact(16)
                .map(|c| {
                    let mut w = [0u8; 16];
                    w.copy_from_slice(c);
                    u128::from_le_bytes(w)
                })
                .collect();
            if packed_widths(&payload).is_some() {
                return Err(WireError::Width {
                    block: 0,
                    width: 16,
                });
            }
            payload
        };
        Ok(Message {
            session: SessionId(session),
            from,
            to,
            step: u64::from_le_bytes(step),
            payload,
        })
    }
}

/// The payload of the packed form: `n` elements in blocks, each a width byte then its
/// elements' low bytes; the body must end with the last block.
fn decode_packed(body: &[u8], n: usize) -> Result<Vec<u128>, WireError> {
    // At least 1 + 8 b bytes per block of b: a length the body cannot hold is refused
    // before anything is allocated.
    let least = n
        .checked_mul(MIN_WIDTH)
        .and_then(|b| b.checked_add(n.div_ceil(BLOCK)))
        .unwrap_or(usize::MAX);
    if body.len() < least {
        return Err(WireError::Length {
            expected: HEADER_BYTES.saturating_add(least),
            got: HEADER_BYTES + body.len(),
        });
    }
    let mut payload = Vec::with_capacity(n);
    let mut widths_below_16 = false;
    let mut at = 0;
    for block in 0..n.div_ceil(BLOCK) {
        let count = BLOCK.min(n - block * BLOCK);
        let width = body[at];
        let w = usize::from(width);
        at += 1;
        let need = at + w * count;
        if !(MIN_WIDTH..=16).contains(&w) || body.len() < need {
            if (MIN_WIDTH..=16).contains(&w) {
                return Err(WireError::Length {
                    expected: HEADER_BYTES + need,
                    got: HEADER_BYTES + body.len(),
                });
            }
            return Err(WireError::Width { block, width });
        }
        let start = payload.len();
        payload.extend(body[at..need].chunks_exact(w).map(|c| {
            let mut e = [0u8; 16];
            e[..w].copy_from_slice(c);
            u128::from_le_bytes(e)
        }));
        at = need;
        if block_width(&payload[start..]) != w {
            return Err(WireError::Width { block, width });
        }
        widths_below_16 |= w < 16;
    }
    if at != body.len() {
        return Err(WireError::Length {
            expected: HEADER_BYTES + at,
            got: HEADER_BYTES + body.len(),
        });
    }
    if !widths_below_16 {
        // Every block 16 wide: the plain form is the canonical one.
        return Err(WireError::Width {
            block: 0,
            width: 16,
        });
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    //! The two payload forms: sizes, round trips, and every non-canonical encoding refused.

    use proptest::prelude::*;

    use super::*;

    fn msg(payload: Vec<u128>) -> Message {
        Message {
            session: SessionId([3; 16]),
            from: Peer::Node(NodeId::ALL[1]),
            to: Peer::Node(NodeId::ALL[0]),
            step: 7,
            payload,
        }
    }

    /// Words of `bits` bits: the top one set, so each has exactly `bits.div_ceil(8)` bytes.
    fn words(n: usize, bits: u32, seed: u128) -> Vec<u128> {
        (0..n as u128)
            .map(|k| {
                let w = (k + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ seed;
                let low = if bits == 128 {
                    w
                } else {
                    w & ((1 << bits) - 1)
                };
                low | (1u128 << (bits - 1))
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
    fn uniform_elements_travel_whole_and_window_words_packed() {
        // Empty and uniform payloads: the plain form, 38 + 16 n.
        let empty = round_trip(&msg(Vec::new()));
        assert_eq!((&empty[..4], empty.len()), (&b"VTM1"[..], 38));
        let whole = round_trip(&msg(words(70, 128, 1)));
        assert_eq!((&whole[..4], whole.len()), (&b"VTM1"[..], 38 + 16 * 70));
        // 80- and 64-bit words: blocks of 32, 32 and 6, one width byte each.
        let w80 = round_trip(&msg(words(70, 80, 2)));
        assert_eq!((&w80[..4], w80.len()), (&b"VTM2"[..], 38 + 3 + 10 * 70));
        assert_eq!(
            (w80[38], w80[38 + 1 + 320], w80[38 + 2 + 640]),
            (10, 10, 10)
        );
        let w64 = round_trip(&msg(words(33, 64, 3)));
        assert_eq!(w64.len(), 38 + 2 + 8 * 33);
        // Narrower words and zeros take the 8-byte minimum.
        let small = round_trip(&msg(vec![0, 1, 255, 0]));
        assert_eq!(small.len(), 38 + 1 + 8 * 4);
        // One whole word widens only its own block: [80-bit x 40, 128-bit, 80-bit x 30].
        let mut mixed = words(40, 80, 4);
        mixed.push(u128::MAX);
        mixed.extend(words(30, 80, 5));
        let m = round_trip(&msg(mixed));
        assert_eq!(m.len(), 38 + 3 + 10 * 32 + 16 * 32 + 10 * 7);
    }

    #[test]
    fn non_canonical_and_short_encodings_are_refused() {
        let good = msg(words(40, 80, 6)).encode();
        // A width byte wider than the block's largest element, below 8, above 16.
        for (at, width) in [(38, 11u8), (38, 7), (38, 17), (38 + 1 + 320, 0)] {
            let mut b = good.clone();
            b[at] = width;
            assert!(
                matches!(
                    Message::decode(&b),
                    Err(WireError::Width { .. } | WireError::Length { .. })
                ),
                "width {width} at {at}"
            );
        }
        // Re-laid out at width 11, the block's bytes are all present: refused for the width.
        let mut relaid = good[..38].to_vec();
        relaid.push(11);
        for w in &words(40, 80, 6)[..32] {
            relaid.extend_from_slice(&w.to_le_bytes()[..11]);
        }
        relaid.extend_from_slice(&good[38 + 1 + 320..]);
        assert_eq!(
            Message::decode(&relaid),
            Err(WireError::Width {
                block: 0,
                width: 11
            })
        );
        // Truncated, extended.
        for b in [
            good[..good.len() - 1].to_vec(),
            [good.clone(), vec![0]].concat(),
        ] {
            assert!(matches!(Message::decode(&b), Err(WireError::Length { .. })));
        }
        // Every block 16 wide in the packed form, and a packable payload in the plain form.
        let whole = words(3, 128, 7);
        let mut packed16 = msg(whole.clone()).encode();
        packed16[..4].copy_from_slice(b"VTM2");
        packed16.insert(38, 16);
        assert_eq!(
            Message::decode(&packed16),
            Err(WireError::Width {
                block: 0,
                width: 16
            })
        );
        let narrow = msg(words(3, 80, 8));
        let mut plain = narrow.encode()[..38].to_vec();
        plain[..4].copy_from_slice(b"VTM1");
        for w in &narrow.payload {
            plain.extend_from_slice(&w.to_le_bytes());
        }
        assert_eq!(
            Message::decode(&plain),
            Err(WireError::Width {
                block: 0,
                width: 16
            })
        );
        // A length the body cannot hold is refused before anything is allocated.
        let mut huge = good[..38].to_vec();
        huge[..4].copy_from_slice(b"VTM2");
        huge[34..38].copy_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&[8; 64]);
        assert!(matches!(
            Message::decode(&huge),
            Err(WireError::Length { .. })
        ));
    }

    proptest! {
        /// Any payload of words restricted to random byte widths round-trips, its encoding
        /// is the one `encoded_len` predicts, and what decodes holds at most twice the bytes
        /// received.
        #[test]
        fn packed_messages_round_trip(
            parts in prop::collection::vec((0usize..80, 0u32..=16, any::<u128>()), 0..6),
        ) {
            let mut payload = Vec::new();
            for (n, bytes, seed) in parts {
                let mask = if bytes == 16 { u128::MAX } else { (1u128 << (8 * bytes)) - 1 };
                payload.extend(words(n, 128, seed).into_iter().map(|w| w & mask));
            }
            let m = msg(payload);
            let bytes = m.encode();
            prop_assert_eq!(bytes.len(), m.encoded_len());
            let back = Message::decode(&bytes).expect("decode");
            prop_assert!(16 * back.payload.len() <= 2 * bytes.len());
            prop_assert_eq!(back, m);
        }
    }
}
