//! One party's role: a deterministic sans-IO state machine. [`Party::start`] hashes and
//! blinds the party's ids and returns the first message; [`Party::receive`] consumes one
//! decoded message and returns the messages to send; [`Party::finish`] gives the party's
//! rows in the common order. No sockets, threads of its own or clocks (the batch
//! arithmetic runs on rayon's pool); messages may arrive in any order, early ones wait.
//!
//! Schedule for P parties, party i, successor i+1 and predecessor i−1 (mod P),
//! K = Π k_j the product of all parties' keys (`protocols/psi.md` for the reasoning):
//!
//! - Step 1: i sends its ids' points blinded by its first exponent, sorted by encoding, to
//!   i+1. The first exponent is k_i when P = 2 and a one-time mask r_i when P ≥ 3.
//! - Steps 2..=P: i raises the set received at the previous step by k_i and sends it to
//!   i+1: in the same order when P = 2, sorted (a shuffle, whose permutation i keeps) when
//!   P ≥ 3. At step P each set arrives back at its owner, blinded by every other party's
//!   key.
//! - P = 2: the returned set is the owner's tags H(x)·K in its own order; each party also
//!   kept the other's tags (the set it received at step 1, raised and sent back at step 2)
//!   and intersects locally. Two rounds.
//! - P ≥ 3: the owner replaces its mask by its key (k_i / r_i): its tags H(x)·K, in an
//!   order the other parties' shuffles hid from it, so no party can tell which tag is
//!   which of its ids. Step P+1+j (j = 0..=P−2): party j sends the running intersection
//!   (its tags for j = 0, else the filter it received intersected with its tags), sorted,
//!   to j+1; step 2P: party P−1 sends the final intersection's tags, sorted, to every other
//!   party. Steps 2P+1..=3P: each owner sends the positions of the intersection's tags in
//!   its returned set (in the common order) back along the ring, i to i−1; each party
//!   undoes its shuffle of that set, and after P steps the positions arrive at the owner
//!   in terms of its own step-1 order, which it maps to its ids. 3P rounds.
//!
//! The common order is the intersection's tags in increasing byte order; row r of every
//! party is the id whose tag is the r-th.

use std::collections::BTreeMap;

use rand_core::CryptoRng;
use rayon::prelude::*;

use crate::blind::{hash_and_blind, reblind, BlindingKey, Point, PointError};
use crate::message::{Kind, Message, SessionId, MAX_PARTIES};

/// Why a party cannot start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// No ids.
    #[error("no ids")]
    Empty,
    /// The same id twice, at these positions of the party's list (first < second; the pair
    /// with the smallest `second`).
    #[error("id at position {second} repeats the id at position {first}")]
    Duplicate {
        /// Earlier position.
        first: usize,
        /// Later position.
        second: usize,
    },
    /// More than u32::MAX ids (the codec's count).
    #[error("{0} ids, at most u32::MAX")]
    TooMany(usize),
    /// P outside 2..=[`MAX_PARTIES`], or an index not below P.
    #[error("party {index} of {parties}")]
    Parties {
        /// The index given.
        index: u16,
        /// P.
        parties: u16,
    },
}

/// Why a party rejected a message or cannot finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A message of another run.
    #[error("message of another session")]
    Session,
    /// A message addressed to another party or for another number of parties.
    #[error("message for party {to} of {parties}")]
    Misaddressed {
        /// Its addressee.
        to: u16,
        /// Its P.
        parties: u16,
    },
    /// A message this party does not expect from that sender at that step.
    #[error("unexpected message from {from} at step {step}")]
    Unexpected {
        /// Sender.
        from: u16,
        /// Step.
        step: u16,
    },
    /// A second message for a step.
    #[error("second message at step {step}")]
    Duplicate {
        /// Step.
        step: u16,
    },
    /// The party's own set came back with another size.
    #[error("own set returned with {got} points, sent {want}")]
    SetSize {
        /// Points received.
        got: usize,
        /// Points sent.
        want: usize,
    },
    /// Positions out of range, repeated, or of another count than the intersection's.
    #[error("step {step}: invalid positions")]
    Positions {
        /// Step of the message.
        step: u16,
    },
    /// A point that does not decompress.
    #[error("step {step}: point {position} is not a group element")]
    InvalidPoint {
        /// Step of the message.
        step: u16,
        /// Index in the set.
        position: usize,
    },
    /// The announced intersection contains a tag that is not one of this party's.
    #[error("intersection tag {position} is not one of this party's")]
    NotSubset {
        /// Index in the intersection.
        position: usize,
    },
    /// `finish` before the run is complete.
    #[error("run not complete")]
    NotDone,
    /// The parties have no id in common.
    #[error("empty intersection")]
    EmptyIntersection,
}

/// A party's secret exponents for one run: its key k and, for P ≥ 3, a one-time mask r.
/// Both zeroized on drop. Use fresh ones per run.
#[derive(Debug)]
pub struct PartyKeys {
    /// k.
    pub key: BlindingKey,
    /// r (unused when P = 2).
    pub mask: BlindingKey,
}

impl PartyKeys {
    /// Fresh keys from `rng` (the OS CSPRNG in production): k then r.
    pub fn random<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let key = BlindingKey::random(rng);
        let mask = BlindingKey::random(rng);
        Self { key, mask }
    }
}

/// A party's traffic in one run (encoded message bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes of messages sent.
    pub bytes_sent: u64,
    /// Bytes of messages received.
    pub bytes_received: u64,
    /// Messages sent.
    pub messages_sent: u64,
    /// Messages received.
    pub messages_received: u64,
    /// Sequential rounds of the run (2 for P = 2, 3P for P ≥ 3), the same for every party.
    pub rounds: u16,
}

/// A party's result: its rows in the common order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alignment {
    /// `rows[r]` is the position, in the party's input list, of the id that is row r of the
    /// common order (the r-th intersection tag in increasing byte order).
    pub rows: Vec<usize>,
    /// The intersection's tags H(x)·K in the common order: identical at every party,
    /// pseudorandom without all the run's keys, unrelated between runs (fresh keys).
    pub tags: Vec<Point>,
    /// The party's traffic.
    pub stats: Stats,
}

impl Alignment {
    /// SHA-256 of the intersection's tags in the common order, with a domain tag and the
    /// count: equal at two parties exactly when they hold the same people in the same
    /// order (the tags are H(id)·K under one K). Unlike a digest of the ids it adds nothing
    /// to what a relay of the messages sees (the tags). Cost O(len).
    pub fn digest(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"vtwin-psi/v1/aligned-tags");
        h.update((self.tags.len() as u64).to_le_bytes());
        for t in &self.tags {
            h.update(t);
        }
        h.finalize().into()
    }
}

/// Number of sequential rounds for P parties (2..=[`MAX_PARTIES`]; saturates above).
pub fn rounds(parties: u16) -> u16 {
    if parties == 2 {
        2
    } else {
        parties.saturating_mul(3)
    }
}

/// One party of a run (module docs).
#[derive(Debug)]
pub struct Party {
    index: u16,
    parties: u16,
    session: SessionId,
    keys: PartyKeys,
    /// `order[s]` = input position of the id at sorted position s of the step-1 set.
    order: Vec<u32>,
    /// Own tags as returned at step P: in the step-1 order when P = 2, in the predecessor's
    /// shuffled order when P ≥ 3.
    tags: Vec<Point>,
    /// P = 2: the other party's tags (the set this party raised at step 2).
    kept: Vec<Point>,
    /// P ≥ 3: by origin, this party's shuffle of that set (output position → input
    /// position); empty for its own.
    perms: Vec<Vec<u32>>,
    /// P ≥ 3: the rows, once the positions came back (step 3P).
    rows: Option<Vec<usize>>,
    /// The next step this party processes (steps it receives nothing at are skipped; u32
    /// because past the last step, 3P, may be 65536).
    next: u32,
    /// Early messages by step.
    pending: BTreeMap<u16, Message>,
    stats: Stats,
    result: Option<Vec<Point>>,
}

impl Party {
    /// Party `index` of `parties` in run `session` with its `ids` (any byte strings, each
    /// at most once) and fresh `keys`: the party and its step-1 message. Errors:
    /// [`InputError`]. Cost: hash-and-blind of every id (parallel) and one sort.
    pub fn start<T: AsRef<[u8]> + Sync>(
        index: u16,
        parties: u16,
        session: SessionId,
        ids: &[T],
        keys: PartyKeys,
    ) -> Result<(Party, Message), InputError> {
        if !(2..=MAX_PARTIES).contains(&parties) || index >= parties {
            return Err(InputError::Parties { index, parties });
        }
        if ids.is_empty() {
            return Err(InputError::Empty);
        }
        if u32::try_from(ids.len()).is_err() {
            return Err(InputError::TooMany(ids.len()));
        }
        let first = if parties == 2 { &keys.key } else { &keys.mask };
        let blinded = hash_and_blind(ids, first);
        let mut order: Vec<u32> = (0..ids.len() as u32).collect();
        // Ties broken by position: copies of an id then sit in input order, so each id's
        // first two occurrences are adjacent.
        order.par_sort_unstable_by_key(|&i| (blinded[i as usize], i));
        // Equal points at adjacent sorted positions are equal ids (a collision of distinct
        // ids would break SHA-512 or the discrete logarithm); compare the ids to be exact.
        let dup = order
            .windows(2)
            .filter(|w| blinded[w[0] as usize] == blinded[w[1] as usize])
            .map(|w| (w[0] as usize, w[1] as usize))
            .filter(|&(a, b)| ids[a].as_ref() == ids[b].as_ref())
            .min_by_key(|&(_, b)| b);
        if let Some((first, second)) = dup {
            return Err(InputError::Duplicate { first, second });
        }
        let points: Vec<Point> = order.iter().map(|&i| blinded[i as usize]).collect();
        let mut party = Party {
            index,
            parties,
            session,
            keys,
            order,
            tags: Vec::new(),
            kept: Vec::new(),
            perms: vec![Vec::new(); usize::from(parties)],
            rows: None,
            next: 1,
            pending: BTreeMap::new(),
            stats: Stats {
                rounds: rounds(parties),
                ..Stats::default()
            },
            result: None,
        };
        let msg = party.message(party.succ(), Kind::Blinded, 1, points);
        Ok((party, msg))
    }

    /// This party's index.
    pub fn index(&self) -> u16 {
        self.index
    }

    /// Whether the run is complete for this party ([`Party::finish`] then succeeds or
    /// reports an empty intersection).
    pub fn is_done(&self) -> bool {
        if self.parties == 2 {
            self.result.is_some()
        } else {
            self.rows.is_some()
        }
    }

    /// Traffic so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Consumes one message addressed to this party and returns the messages to send
    /// (possibly none; several when it unblocks buffered ones). Errors: [`ProtocolError`].
    /// A message rejected by the checks before it is buffered (session, addressing,
    /// sender, step, duplicate) leaves the party unchanged; an error while processing a
    /// buffered set (invalid point, wrong size) loses the run for this party. Cost: at most
    /// one re-blinding of the received set (parallel) and one sort per step.
    pub fn receive(&mut self, msg: Message) -> Result<Vec<Message>, ProtocolError> {
        if msg.session != self.session {
            return Err(ProtocolError::Session);
        }
        if msg.to != self.index || msg.parties != self.parties {
            return Err(ProtocolError::Misaddressed {
                to: msg.to,
                parties: msg.parties,
            });
        }
        if Some(msg.from) != self.sender_of(msg.step)
            || Kind::of_step(self.parties, msg.step) != Some(msg.kind)
        {
            return Err(ProtocolError::Unexpected {
                from: msg.from,
                step: msg.step,
            });
        }
        if u32::from(msg.step) < self.next || self.pending.contains_key(&msg.step) {
            return Err(ProtocolError::Duplicate { step: msg.step });
        }
        self.stats.messages_received += 1;
        self.stats.bytes_received += msg.encoded_len() as u64;
        self.pending.insert(msg.step, msg);
        let mut out = Vec::new();
        while let Some(m) = u16::try_from(self.next)
            .ok()
            .and_then(|s| self.pending.remove(&s))
        {
            self.next = self.next_expected(u32::from(m.step) + 1);
            out.extend(self.step(m)?);
        }
        Ok(out)
    }

    /// The party's rows in the common order and its traffic. Errors:
    /// [`ProtocolError::NotDone`] before the end, [`ProtocolError::EmptyIntersection`].
    /// Cost: one sort of the party's tags (P = 2).
    pub fn finish(self) -> Result<Alignment, ProtocolError> {
        if !self.is_done() {
            return Err(ProtocolError::NotDone);
        }
        let Some(inter) = self.result else {
            return Err(ProtocolError::NotDone);
        };
        if inter.is_empty() {
            return Err(ProtocolError::EmptyIntersection);
        }
        if let Some(rows) = self.rows {
            return Ok(Alignment {
                rows,
                tags: inter,
                stats: self.stats,
            });
        }
        let labelled = self.tags.iter().zip(&self.order).map(|(t, &o)| (*t, o));
        let rows = locate(labelled.collect(), &inter)?
            .into_iter()
            .map(|r| r as usize)
            .collect();
        Ok(Alignment {
            rows,
            tags: inter,
            stats: self.stats,
        })
    }

    fn succ(&self) -> u16 {
        (self.index + 1) % self.parties
    }

    fn pred(&self) -> u16 {
        (self.index + self.parties - 1) % self.parties
    }

    /// Who sends this party its message of `step`, `None` if it gets none.
    fn sender_of(&self, step: u16) -> Option<u16> {
        match Kind::of_step(self.parties, step)? {
            Kind::Blinded => Some(self.pred()),
            // Party j receives the filter of step P + j from j − 1.
            Kind::Filter => {
                (self.index >= 1 && step == self.parties + self.index).then(|| self.index - 1)
            }
            Kind::Intersection => (self.index != self.parties - 1).then_some(self.parties - 1),
            Kind::Positions => Some(self.succ()),
        }
    }

    /// The first step ≥ `from` at which this party receives a message (past the end when
    /// none is left).
    fn next_expected(&self, from: u32) -> u32 {
        let end = u32::from(rounds(self.parties));
        (from..=end)
            .find(|&s| u16::try_from(s).is_ok_and(|s| self.sender_of(s).is_some()))
            .unwrap_or(end + 1)
    }

    fn message(&mut self, to: u16, kind: Kind, step: u16, points: Vec<Point>) -> Message {
        self.send(Message {
            session: self.session,
            parties: self.parties,
            from: self.index,
            to,
            kind,
            step,
            points,
            positions: Vec::new(),
        })
    }

    fn positions_message(&mut self, step: u16, positions: Vec<u32>) -> Message {
        self.send(Message {
            session: self.session,
            parties: self.parties,
            from: self.index,
            to: self.pred(),
            kind: Kind::Positions,
            step,
            points: Vec::new(),
            positions,
        })
    }

    fn send(&mut self, m: Message) -> Message {
        self.stats.messages_sent += 1;
        self.stats.bytes_sent += m.encoded_len() as u64;
        m
    }

    fn step(&mut self, m: Message) -> Result<Vec<Message>, ProtocolError> {
        let p = self.parties;
        let invalid = |step| {
            move |e: PointError| match e {
                PointError::Invalid { position } => ProtocolError::InvalidPoint { step, position },
            }
        };
        match m.kind {
            Kind::Blinded if m.step < p => {
                let mut raised = reblind(&m.points, &self.keys.key).map_err(invalid(m.step))?;
                if p == 2 {
                    // The other party's tags: kept for the local intersection.
                    self.kept.clone_from(&raised);
                } else {
                    // Shuffle by sorting, so that no later holder (the owner included) can
                    // link positions to the owner's order; keep the permutation to undo it.
                    let mut perm: Vec<u32> = (0..raised.len() as u32).collect();
                    perm.par_sort_unstable_by_key(|&j| raised[j as usize]);
                    raised = perm.iter().map(|&j| raised[j as usize]).collect();
                    let origin = (self.index + p - m.step) % p;
                    self.perms[usize::from(origin)] = perm;
                }
                Ok(vec![self.message(
                    self.succ(),
                    Kind::Blinded,
                    m.step + 1,
                    raised,
                )])
            }
            Kind::Blinded => {
                if m.points.len() != self.order.len() {
                    return Err(ProtocolError::SetSize {
                        got: m.points.len(),
                        want: self.order.len(),
                    });
                }
                if p == 2 {
                    self.tags = m.points;
                    let mut own = self.tags.clone();
                    own.par_sort_unstable();
                    let mut other = std::mem::take(&mut self.kept);
                    other.par_sort_unstable();
                    self.result = Some(intersect_sorted(&own, &other));
                    return Ok(Vec::new());
                }
                let unmask = self.keys.key.over(&self.keys.mask);
                self.tags = reblind(&m.points, &unmask).map_err(invalid(m.step))?;
                if self.index != 0 {
                    return Ok(Vec::new());
                }
                let mut sorted = self.tags.clone();
                sorted.par_sort_unstable();
                Ok(vec![self.message(1, Kind::Filter, p + 1, sorted)])
            }
            Kind::Filter => {
                let mut own = self.tags.clone();
                own.par_sort_unstable();
                let running = intersect_sorted(&m.points, &own);
                if self.index + 1 < p {
                    return Ok(vec![self.message(
                        self.index + 1,
                        Kind::Filter,
                        m.step + 1,
                        running,
                    )]);
                }
                let mut out: Vec<Message> = (0..p - 1)
                    .map(|to| self.message(to, Kind::Intersection, 2 * p, running.clone()))
                    .collect();
                out.push(self.own_positions(running)?);
                Ok(out)
            }
            Kind::Intersection => Ok(vec![self.own_positions(m.points)?]),
            Kind::Positions => {
                // Step 2P + h carries owner i + h's positions (h ≤ P keeps the sum in u16).
                let origin = (self.index + (m.step - 2 * p)) % p;
                let count = self.result.as_ref().map_or(0, Vec::len);
                let bad = ProtocolError::Positions { step: m.step };
                if m.positions.len() != count {
                    return Err(bad);
                }
                if origin == self.index {
                    let rows = translate(&m.positions, &self.order).ok_or(bad)?;
                    self.rows = Some(rows.into_iter().map(|r| r as usize).collect());
                    return Ok(Vec::new());
                }
                let back = translate(&m.positions, &self.perms[usize::from(origin)]).ok_or(bad)?;
                Ok(vec![self.positions_message(m.step + 1, back)])
            }
        }
    }

    /// P ≥ 3, once the intersection is known: records it and returns the message (step
    /// 2P+1, to the predecessor) with the positions of its tags in this party's returned
    /// set, in the common order.
    fn own_positions(&mut self, inter: Vec<Point>) -> Result<Message, ProtocolError> {
        let labelled = self.tags.iter().enumerate().map(|(j, t)| (*t, j as u32));
        let positions = locate(labelled.collect(), &inter)?;
        self.result = Some(inter);
        Ok(self.positions_message(2 * self.parties + 1, positions))
    }
}

/// The label of each tag of `inter` (sorted, strictly increasing) among `labelled` (tag,
/// label) pairs; a tag of `inter` that is not among them is [`ProtocolError::NotSubset`].
/// Cost O(n log n): one sort and one merge.
fn locate(mut labelled: Vec<(Point, u32)>, inter: &[Point]) -> Result<Vec<u32>, ProtocolError> {
    labelled.par_sort_unstable();
    let mut out = Vec::with_capacity(inter.len());
    let mut j = 0;
    for (position, t) in inter.iter().enumerate() {
        while j < labelled.len() && labelled[j].0 < *t {
            j += 1;
        }
        if j == labelled.len() || labelled[j].0 != *t {
            return Err(ProtocolError::NotSubset { position });
        }
        out.push(labelled[j].1);
    }
    Ok(out)
}

/// `map[q]` for each position q, or `None` if one is out of range or repeated.
fn translate(positions: &[u32], map: &[u32]) -> Option<Vec<u32>> {
    let mut seen = vec![false; map.len()];
    positions
        .iter()
        .map(|&q| {
            let slot = seen.get_mut(q as usize)?;
            if std::mem::replace(slot, true) {
                return None;
            }
            Some(map[q as usize])
        })
        .collect()
}

/// The common elements of two strictly increasing lists, increasing.
fn intersect_sorted(a: &[Point], b: &[Point]) -> Vec<Point> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}
