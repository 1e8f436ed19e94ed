//! Cost counters, kept by every node for its own traffic and work.

use std::ops::Sub;

/// What one node did. Rounds count communication steps of the program (every node steps
/// through the same rounds); bytes count encoded messages this node sent ([`crate::message`]
/// format, header included). Take two snapshots and subtract to cost one protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Communication rounds (node-to-node steps) executed.
    pub rounds: u64,
    /// Messages sent to other nodes.
    pub messages: u64,
    /// Bytes sent to other nodes (encoded, headers included).
    pub bytes: u64,
    /// Ring elements sent to other nodes.
    pub elements: u64,
    /// Bytes sent to clients (openings).
    pub bytes_to_clients: u64,
    /// Secret-by-secret arithmetic products (element-wise; an inner product of length L
    /// counts L).
    pub mults: u64,
    /// Probabilistic truncations (element-wise).
    pub truncations: u64,
    /// Binary AND gates on packed 128-bit words (element-wise words).
    pub and_words: u64,
}

impl Sub for Counters {
    type Output = Counters;
    fn sub(self, o: Counters) -> Counters {
        Counters {
            rounds: self.rounds - o.rounds,
            messages: self.messages - o.messages,
            bytes: self.bytes - o.bytes,
            elements: self.elements - o.elements,
            bytes_to_clients: self.bytes_to_clients - o.bytes_to_clients,
            mults: self.mults - o.mults,
            truncations: self.truncations - o.truncations,
            and_words: self.and_words - o.and_words,
        }
    }
}

impl Counters {
    /// Element-wise sum (e.g. of the three nodes).
    pub fn plus(self, o: Counters) -> Counters {
        Counters {
            rounds: self.rounds.max(o.rounds),
            messages: self.messages + o.messages,
            bytes: self.bytes + o.bytes,
            elements: self.elements + o.elements,
            bytes_to_clients: self.bytes_to_clients + o.bytes_to_clients,
            mults: self.mults + o.mults,
            truncations: self.truncations + o.truncations,
            and_words: self.and_words + o.and_words,
        }
    }
}
