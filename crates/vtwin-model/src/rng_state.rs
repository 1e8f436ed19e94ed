//! The exact, serialisable state of a ChaCha20 stream (key, stream id, word position), so
//! that a checkpointed run resumes the very same random sequence.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

/// The abstract state of a [`ChaCha20Rng`]: restoring it continues the stream exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RngState {
    /// The 256-bit key.
    pub seed: [u8; 32],
    /// The 64-bit stream id.
    pub stream: u64,
    /// Position in the stream, in 32-bit words.
    pub word_pos: u128,
}

impl RngState {
    /// Captures `rng`'s state. Cost O(1).
    pub fn of(rng: &ChaCha20Rng) -> RngState {
        RngState {
            seed: rng.get_seed(),
            stream: rng.get_stream(),
            word_pos: rng.get_word_pos(),
        }
    }

    /// A generator positioned exactly where the captured one was.
    pub fn restore(&self) -> ChaCha20Rng {
        let mut rng = ChaCha20Rng::from_seed(self.seed);
        rng.set_stream(self.stream);
        rng.set_word_pos(self.word_pos);
        rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn restore_continues_the_stream() {
        let mut a = ChaCha20Rng::seed_from_u64(3);
        a.set_stream(9);
        // An odd number of u32 words, so the position is mid-block and mid-u64.
        for _ in 0..37 {
            a.next_u32();
        }
        let mut b = RngState::of(&a).restore();
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
