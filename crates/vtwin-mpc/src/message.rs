//! Messages and their wire format.
//!
//! Every message names its session, sender, addressee and step (the sender's round number
//! between nodes; the input sequence number for a client's input). The payload is a vector
//! of ring elements (`u128`; binary shares are packed 128 bits to an element).
//!
//! Wire format (little endian): `"VTM1"`, session (16 bytes), from (3 bytes), to (3 bytes),
//! step (8 bytes), payload length (4 bytes), payload (16 bytes per element). Header: 38
//! bytes. Decoding rejects any other length, tag or magic with a [`WireError`].

use std::fmt;

use crate::le_bytes::with_le_bytes;

/// Header size in bytes of an encoded message.
pub const HEADER_BYTES: usize = 38;
const MAGIC: &[u8; 4] = b"VTM1";

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
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        HEADER_BYTES + 16 * self.payload.len()
    }

    /// Encodes (format in the module docs). Cost: 38 + 16 n bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.session.0);
        put_peer(&mut out, self.from);
        put_peer(&mut out, self.to);
        out.extend_from_slice(&self.step.to_le_bytes());
        // Payload lengths are bounded by memory; a protocol never sends 2^32 elements.
        let len = u32::try_from(self.payload.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        with_le_bytes(&self.payload, |b| out.extend_from_slice(b));
        out
    }

    /// Decodes, rejecting any malformed input with a [`WireError`] (never panics).
    pub fn decode(bytes: &[u8]) -> Result<Message, WireError> {
        if bytes.len() < HEADER_BYTES {
            return Err(WireError::Length {
                expected: HEADER_BYTES,
                got: bytes.len(),
            });
        }
        if &bytes[0..4] != MAGIC {
            return Err(WireError::Magic);
        }
        let mut session = [0u8; 16];
        session.copy_from_slice(&bytes[4..20]);
        let from = get_peer(&bytes[20..23])?;
        let to = get_peer(&bytes[23..26])?;
        let mut step = [0u8; 8];
        step.copy_from_slice(&bytes[26..34]);
        let mut len = [0u8; 4];
        len.copy_from_slice(&bytes[34..38]);
        let n = u32::from_le_bytes(len) as usize;
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
        let payload = bytes[HEADER_BYTES..]
            .chunks_exact(16)
            .map(|c| {
                let mut w = [0u8; 16];
                w.copy_from_slice(c);
                u128::from_le_bytes(w)
            })
            .collect();
        Ok(Message {
            session: SessionId(session),
            from,
            to,
            step: u64::from_le_bytes(step),
            payload,
        })
    }
}
