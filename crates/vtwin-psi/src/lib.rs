//! Private set intersection for record alignment: parties holding different columns about
//! partly the same people, keyed by ids they must not reveal to one another, find the
//! people all of them hold and agree on one order of them, so that row r is the same
//! person at every party.
//!
//! The protocol is Diffie-Hellman ("double blinding") PSI over ristretto255, semi-honest,
//! secure under DDH in the random-oracle model; `protocols/psi.md` has the schedule, the
//! messages, the costs and exactly what each party learns.
//!
//! - [`hash_to_group`]: ids to points, domain-separated (the random oracle).
//! - [`blind`]: secret exponents and the parallel batch arithmetic.
//! - [`message`]: the versioned canonical codec of the messages.
//! - [`party`]: a party's role as a sans-IO state machine ([`Party::start`],
//!   [`Party::receive`], [`Party::finish`]); a network driver moves [`Message`]s (encoded
//!   with [`Message::encode`], addressed by `to`) between the processes.
//! - [`memory`]: the in-memory driver, [`align`]: every party's ids in, every party's
//!   rows in the common order and traffic out.
//!
//! A network driver runs one [`Party`] per process: [`Party::start`] with the party's ids,
//! index, P, the run's [`SessionId`] (the same at every party) and fresh
//! [`PartyKeys::random`]; it sends each returned [`Message`] (encoded) to party `to`,
//! passes every received byte string through [`Message::decode`] to [`Party::receive`],
//! sends what that returns, and calls [`Party::finish`] once [`Party::is_done`]: the
//! party's row positions in the common order and its traffic. Errors are typed:
//! [`InputError`] (empty or duplicated ids, with the positions), [`DecodeError`],
//! [`ProtocolError`] (including the empty intersection).
//!
//! What a party learns beyond its output: every party's set size, and for P ≥ 3 the sizes
//! of the intersections X_0 ∩ … ∩ X_j along the filter chain, never which of its ids they
//! contain (`protocols/psi.md`, "What each party learns"). Two parties learn nothing more.
//!
//! ```
//! let a: Vec<Vec<u8>> = ["ann", "bob", "cy"].iter().map(|s| s.as_bytes().to_vec()).collect();
//! let b: Vec<Vec<u8>> = ["cy", "dee", "ann"].iter().map(|s| s.as_bytes().to_vec()).collect();
//! let aligned = vtwin_psi::align(&[a.clone(), b.clone()]).unwrap();
//! assert_eq!(aligned.len(), 2);
//! for r in 0..aligned.len() {
//!     assert_eq!(a[aligned.rows[0][r]], b[aligned.rows[1][r]]);
//! }
//! ```

pub mod blind;
pub mod hash_to_group;
pub mod memory;
pub mod message;
pub mod party;

pub use blind::{BlindingKey, Point};
pub use memory::{align, AlignError, Aligned};
pub use message::{DecodeError, Kind, Message, SessionId, MAX_PARTIES};
pub use party::{Alignment, InputError, Party, PartyKeys, ProtocolError, Stats};
