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
pub use message::{DecodeError, Kind, Message, SessionId};
pub use party::{Alignment, InputError, Party, PartyKeys, ProtocolError, Stats};
