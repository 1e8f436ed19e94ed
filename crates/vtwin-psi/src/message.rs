//! The protocol's messages and their canonical byte codec (version 1).
//!
//! Layout, integers little-endian (30-byte header, then the entries):
//!
//! | bytes | field |
//! |---|---|
//! | 1 | version, [`VERSION`] |
//! | 1 | kind: 1 blinded set, 2 filter, 3 intersection, 4 positions ([`Kind`]) |
//! | 16 | session id |
//! | 2 | P, the number of parties (2..=[`MAX_PARTIES`]) |
//! | 2 | sender, < P |
//! | 2 | addressee, < P, not the sender |
//! | 2 | step (the round), consistent with the kind ([`Kind::of_step`]) |
//! | 4 | n, the number of entries |
//! | 32 n | kinds 1 to 3: points, canonical compressed ristretto255 encodings |
//! | 4 n | kind 4: positions, u32 |
//!
//! [`Message::decode`] accepts exactly the outputs of [`Message::encode`]: it rejects a wrong
//! version or kind, impossible addressing or steps, a length other than 30 + 32 n (30 + 4 n
//! for positions; truncated or trailing bytes), point encodings that are not canonical field
//! elements (s ≥ p or s negative, the two cheap checks of RFC 9496 decoding), and, for the
//! sets that must be sorted (every blinded set when P ≥ 3, the first when P = 2, filters,
//! the intersection), points not in strictly increasing byte order. Positions are checked
//! by the party (it knows the set they index). Whether a canonical s is a group element at all costs a square
//! root; it is checked where a point is decompressed (re-blinding), and a tag that is not a
//! group element can never equal an honest tag.

use crate::blind::Point;

/// The codec version this crate writes and reads.
pub const VERSION: u8 = 1;

/// Bytes before the points.
pub const HEADER_BYTES: usize = 30;

/// The most parties a run may have: its last step, 3P, must fit the 16-bit step field.
pub const MAX_PARTIES: u16 = u16::MAX / 3;

/// A run's 16-byte identifier (chosen by whoever starts the run, e.g. at random); every
/// message carries it and parties reject other runs' messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub [u8; 16]);

/// What a message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A set on its way around the ring (steps 1..=P).
    Blinded = 1,
    /// The running intersection of fully blinded tags (P ≥ 3), sorted.
    Filter = 2,
    /// The final intersection's tags in the common order (P ≥ 3), sorted.
    Intersection = 3,
    /// The intersection's positions in a set, in the common order, on their way back to
    /// the set's owner (P ≥ 3).
    Positions = 4,
}

impl Kind {
    /// The kind of step `step` of a run of `parties` parties, `None` if there is no such
    /// step (or P is outside 2..=[`MAX_PARTIES`]). Steps: 1..=P blinded; for P ≥ 3,
    /// P+1..=2P−1 filters, 2P the intersection and 2P+1..=3P positions.
    pub fn of_step(parties: u16, step: u16) -> Option<Kind> {
        let p = u32::from(parties);
        let s = u32::from(step);
        if p < 2 || parties > MAX_PARTIES || s == 0 {
            None
        } else if s <= p {
            Some(Kind::Blinded)
        } else if p >= 3 && s < 2 * p {
            Some(Kind::Filter)
        } else if p >= 3 && s == 2 * p {
            Some(Kind::Intersection)
        } else if p >= 3 && s <= 3 * p {
            Some(Kind::Positions)
        } else {
            None
        }
    }

    /// Whether sets of this kind at `step` of a run of `parties` must be strictly
    /// increasing: every blinded set when P ≥ 3 (each hop shuffles by sorting), the first
    /// when P = 2 (sorting hides the owner's input order), filters and the intersection.
    pub fn sorted(self, parties: u16, step: u16) -> bool {
        match self {
            Kind::Blinded => parties >= 3 || step == 1,
            Kind::Filter | Kind::Intersection => true,
            Kind::Positions => false,
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Blinded),
            2 => Some(Kind::Filter),
            3 => Some(Kind::Intersection),
            4 => Some(Kind::Positions),
            _ => None,
        }
    }
}

/// One protocol message (module docs for the encoding).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The run.
    pub session: SessionId,
    /// P.
    pub parties: u16,
    /// Sender's party index.
    pub from: u16,
    /// Addressee's party index.
    pub to: u16,
    /// What the points are.
    pub kind: Kind,
    /// The step (round) that sends it.
    pub step: u16,
    /// The points (kinds 1 to 3; empty for positions).
    pub points: Vec<Point>,
    /// The positions (kind 4; empty for the other kinds).
    pub positions: Vec<u32>,
}

/// Why bytes are not a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than the header, or than the header's point count announces.
    #[error("truncated message: {got} bytes, {need} needed")]
    Truncated {
        /// Bytes needed.
        need: u64,
        /// Bytes given.
        got: u64,
    },
    /// Bytes after the last announced point.
    #[error("{extra} bytes after the message")]
    Trailing {
        /// Extra bytes.
        extra: u64,
    },
    /// A version this crate does not read.
    #[error("message version {0}, this codec reads {VERSION}")]
    Version(u8),
    /// An unknown kind byte.
    #[error("unknown message kind {0}")]
    Kind(u8),
    /// P outside 2..=[`MAX_PARTIES`], a sender or addressee out of range, or a message to
    /// oneself.
    #[error("message from {from} to {to} among {parties} parties")]
    Addressing {
        /// P.
        parties: u16,
        /// Sender.
        from: u16,
        /// Addressee.
        to: u16,
    },
    /// A step that does not exist for P parties or that sends another kind.
    #[error("step {step} does not send kind {kind}")]
    Step {
        /// The step.
        step: u16,
        /// The kind byte.
        kind: u8,
    },
    /// A point whose 32 bytes are not a canonical encoding (s ≥ p, or s odd).
    #[error("point {position} is not a canonical encoding")]
    NonCanonicalPoint {
        /// Index of the point.
        position: usize,
    },
    /// A set that must be strictly increasing is not, at this position.
    #[error("point {position} is out of order or repeated")]
    Unsorted {
        /// Index of the first point not above its predecessor.
        position: usize,
    },
}

/// Whether 32 bytes are a canonical non-negative field element, the cheap half of
/// ristretto255 decoding: s < p = 2^255 − 19 and s even.
pub fn canonical_field_encoding(s: &Point) -> bool {
    if s[0] & 1 == 1 || s[31] & 0x80 != 0 {
        return false;
    }
    // s ≥ p only for 2^255 − 19 ..= 2^255 − 1: top byte 0x7f, middle 0xff, low ≥ 0xed.
    let at_least_p = s[31] == 0x7f && s[1..31].iter().all(|&b| b == 0xff) && s[0] >= 0xed;
    !at_least_p
}

impl Message {
    /// Bytes of the encoding: 30 + 32 n for points, 30 + 4 n for positions.
    pub fn encoded_len(&self) -> usize {
        HEADER_BYTES + 32 * self.points.len() + 4 * self.positions.len()
    }

    /// The canonical encoding (module docs): the points, or for [`Kind::Positions`] the
    /// positions. Panics if there are more than u32::MAX entries or entries of the other
    /// field (a party never makes such a message). Cost: one copy.
    pub fn encode(&self) -> Vec<u8> {
        let n = if self.kind == Kind::Positions {
            assert!(self.points.is_empty(), "points in a positions message");
            self.positions.len()
        } else {
            assert!(self.positions.is_empty(), "positions in a points message");
            self.points.len()
        };
        let n = u32::try_from(n).expect("at most u32::MAX entries");
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(VERSION);
        out.push(self.kind as u8);
        out.extend_from_slice(&self.session.0);
        out.extend_from_slice(&self.parties.to_le_bytes());
        out.extend_from_slice(&self.from.to_le_bytes());
        out.extend_from_slice(&self.to.to_le_bytes());
        out.extend_from_slice(&self.step.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        for p in &self.points {
            out.extend_from_slice(p);
        }
        for q in &self.positions {
            out.extend_from_slice(&q.to_le_bytes());
        }
        out
    }

    /// Decodes exactly one message (module docs for what is rejected). Cost: one pass over
    /// the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let got = bytes.len() as u64;
        if bytes.len() < HEADER_BYTES {
            return Err(DecodeError::Truncated {
                need: HEADER_BYTES as u64,
                got,
            });
        }
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        if bytes[0] != VERSION {
            return Err(DecodeError::Version(bytes[0]));
        }
        let kind = Kind::from_byte(bytes[1]).ok_or(DecodeError::Kind(bytes[1]))?;
        let mut session = [0u8; 16];
        session.copy_from_slice(&bytes[2..18]);
        let (parties, from, to, step) = (u16_at(18), u16_at(20), u16_at(22), u16_at(24));
        if !(2..=MAX_PARTIES).contains(&parties) || from >= parties || to >= parties || from == to {
            return Err(DecodeError::Addressing { parties, from, to });
        }
        if Kind::of_step(parties, step) != Some(kind) {
            return Err(DecodeError::Step {
                step,
                kind: bytes[1],
            });
        }
        let n = u32::from_le_bytes([bytes[26], bytes[27], bytes[28], bytes[29]]);
        let width: u64 = if kind == Kind::Positions { 4 } else { 32 };
        let need = HEADER_BYTES as u64 + width * u64::from(n);
        if got < need {
            return Err(DecodeError::Truncated { need, got });
        }
        if got > need {
            return Err(DecodeError::Trailing { extra: got - need });
        }
        let body = &bytes[HEADER_BYTES..];
        let (points, positions) = if kind == Kind::Positions {
            let positions = body
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            (Vec::new(), positions)
        } else {
            let mut points = Vec::with_capacity(n as usize);
            for (position, chunk) in body.chunks_exact(32).enumerate() {
                let mut p = [0u8; 32];
                p.copy_from_slice(chunk);
                if !canonical_field_encoding(&p) {
                    return Err(DecodeError::NonCanonicalPoint { position });
                }
                if kind.sorted(parties, step) && points.last().is_some_and(|q: &Point| *q >= p) {
                    return Err(DecodeError::Unsorted { position });
                }
                points.push(p);
            }
            (points, Vec::new())
        };
        Ok(Message {
            session: SessionId(session),
            parties,
            from,
            to,
            kind,
            step,
            points,
            positions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::ristretto::CompressedRistretto;
    use proptest::prelude::*;

    #[test]
    fn steps_have_one_kind() {
        assert_eq!(Kind::of_step(2, 0), None);
        assert_eq!(Kind::of_step(2, 2), Some(Kind::Blinded));
        assert_eq!(Kind::of_step(2, 3), None);
        assert_eq!(Kind::of_step(3, 3), Some(Kind::Blinded));
        assert_eq!(Kind::of_step(3, 4), Some(Kind::Filter));
        assert_eq!(Kind::of_step(3, 5), Some(Kind::Filter));
        assert_eq!(Kind::of_step(3, 6), Some(Kind::Intersection));
        assert_eq!(Kind::of_step(3, 7), Some(Kind::Positions));
        assert_eq!(Kind::of_step(3, 9), Some(Kind::Positions));
        assert_eq!(Kind::of_step(3, 10), None);
        assert_eq!(
            Kind::of_step(MAX_PARTIES, 3 * MAX_PARTIES),
            Some(Kind::Positions)
        );
        assert_eq!(Kind::of_step(MAX_PARTIES + 1, 1), None);
        assert_eq!(Kind::of_step(1, 1), None);
    }

    #[test]
    fn field_encoding_bounds() {
        let mut p_minus_1 = [0xffu8; 32];
        p_minus_1[0] = 0xec;
        p_minus_1[31] = 0x7f;
        assert!(canonical_field_encoding(&p_minus_1));
        p_minus_1[0] = 0xee; // p + 1: even but not reduced
        assert!(!canonical_field_encoding(&p_minus_1));
        assert!(canonical_field_encoding(&[0; 32]));
    }

    proptest! {
        // The cheap check never rejects what full decoding accepts, and rejects what
        // decoding rejects for being non-canonical.
        #[test]
        fn cheap_check_is_implied_by_decompression(s in any::<[u8; 32]>()) {
            if CompressedRistretto(s).decompress().is_some() {
                prop_assert!(canonical_field_encoding(&s));
            }
            let valid = crate::hash_to_group::hash_to_group(&s).compress().to_bytes();
            prop_assert!(canonical_field_encoding(&valid));
            if !canonical_field_encoding(&s) {
                prop_assert!(CompressedRistretto(s).decompress().is_none());
            }
        }
    }
}
