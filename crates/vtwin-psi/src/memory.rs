//! The in-memory driver: runs P parties of one session to completion, passing every
//! message through the byte codec (so the traffic counted is the traffic a network driver
//! sends). This is what a single process holding every party's ids would run, and what the
//! tests and the benchmark run; a consortium runs the same [`Party`] roles in separate
//! processes.

use std::collections::VecDeque;

use rand_core::{OsRng, TryRngCore};

use crate::message::{DecodeError, Message, SessionId, MAX_PARTIES};
use crate::party::{rounds, Alignment, InputError, Party, PartyKeys, ProtocolError, Stats};

/// Why an in-memory alignment failed, with the party concerned (its index in the input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AlignError {
    /// Fewer than 2 or more than [`MAX_PARTIES`] parties, or ([`run`]) not one key pair per
    /// party.
    #[error("{0} parties, need 2 to 32767, each with keys")]
    Parties(usize),
    /// A party's ids are unusable (empty, duplicated).
    #[error("party {party}: {source}")]
    Input {
        /// The party.
        party: usize,
        /// What is wrong.
        source: InputError,
    },
    /// A party rejected a message or could not finish.
    #[error("party {party}: {source}")]
    Protocol {
        /// The party.
        party: usize,
        /// What is wrong.
        source: ProtocolError,
    },
    /// A message did not decode (a bug of an encoder).
    #[error("party {party}: {source}")]
    Decode {
        /// The addressee.
        party: usize,
        /// What is wrong.
        source: DecodeError,
    },
    /// The parties have no id in common.
    #[error("empty intersection")]
    EmptyIntersection,
    /// The operating system's random generator failed.
    #[error("OS random generator failed")]
    Rng,
}

/// The result of an in-memory alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aligned {
    /// `rows[p][r]`: position in party p's id list of the id in row r of the common order.
    /// Every party's list has the intersection's size.
    pub rows: Vec<Vec<usize>>,
    /// Traffic per party.
    pub stats: Vec<Stats>,
    /// Sequential rounds of the run.
    pub rounds: u16,
}

impl Aligned {
    /// The intersection's size.
    pub fn len(&self) -> usize {
        self.rows.first().map_or(0, Vec::len)
    }

    /// Whether the intersection is empty (never, for a successful alignment).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Aligns `parties` (party p's ids at index p; each id at most once per party) with fresh
/// keys and session id from the OS CSPRNG. Errors: [`AlignError`]. Cost: per party, about
/// 2 (P = 2) or P + 1 (P ≥ 3) scalar multiplications per id of the sets it handles
/// (`protocols/psi.md`), parallel over rayon's pool.
pub fn align<T: AsRef<[u8]> + Sync>(parties: &[Vec<T>]) -> Result<Aligned, AlignError> {
    let mut rng = OsRng.unwrap_err();
    let mut session = [0u8; 16];
    OsRng
        .try_fill_bytes(&mut session)
        .map_err(|_| AlignError::Rng)?;
    let keys = parties
        .iter()
        .map(|_| PartyKeys::random(&mut rng))
        .collect();
    run(SessionId(session), parties, keys)
}

/// Runs one session with the given `keys` (one per party, fresh). [`align`] with chosen
/// keys and session: for tests and vectors.
pub fn run<T: AsRef<[u8]> + Sync>(
    session: SessionId,
    parties: &[Vec<T>],
    keys: Vec<PartyKeys>,
) -> Result<Aligned, AlignError> {
    let p = u16::try_from(parties.len())
        .ok()
        .filter(|&p| (2..=MAX_PARTIES).contains(&p) && keys.len() == parties.len())
        .ok_or(AlignError::Parties(parties.len()))?;
    let mut roles = Vec::with_capacity(parties.len());
    let mut queue = VecDeque::new();
    for (i, (ids, k)) in parties.iter().zip(keys).enumerate() {
        let (party, first) = Party::start(i as u16, p, session, ids, k)
            .map_err(|source| AlignError::Input { party: i, source })?;
        roles.push(party);
        queue.push_back(first.encode());
    }
    while let Some(bytes) = queue.pop_front() {
        let msg = Message::decode(&bytes).map_err(|source| AlignError::Decode {
            // The addressee field (bytes 22..24), when the header is there at all.
            party: bytes
                .get(22..24)
                .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]]))),
            source,
        })?;
        let to = usize::from(msg.to);
        let out = roles[to]
            .receive(msg)
            .map_err(|source| AlignError::Protocol { party: to, source })?;
        queue.extend(out.iter().map(Message::encode));
    }
    let mut rows = Vec::with_capacity(roles.len());
    let mut stats = Vec::with_capacity(roles.len());
    for (i, r) in roles.into_iter().enumerate() {
        match r.finish() {
            Ok(Alignment {
                rows: r, stats: s, ..
            }) => {
                rows.push(r);
                stats.push(s);
            }
            Err(ProtocolError::EmptyIntersection) => return Err(AlignError::EmptyIntersection),
            Err(source) => return Err(AlignError::Protocol { party: i, source }),
        }
    }
    Ok(Aligned {
        rows,
        stats,
        rounds: rounds(p),
    })
}
