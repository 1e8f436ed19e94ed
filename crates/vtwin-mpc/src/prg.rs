//! The PRG: ChaCha12 keyed by a 32-byte seed, addressed by a 64-bit stream number.
//!
//! `expand(seed, stream, n)` is the first `16 n` bytes of the ChaCha12 keystream under key
//! `seed` and nonce `stream || 0u32` (RFC 8439 layout with 12 rounds instead of 20, little
//! endian), read as `n` u128 words (little endian). Twelve rounds, as in `rand`'s `StdRng`:
//! the best published attacks reach 7 rounds, and as ChaCha20 the PRG was 27% of the
//! in-memory MPC's CPU on Adult (protocols/mpc-sharing.md, "PRG"). Every protocol invocation takes a fresh stream number from a
//! counter that all nodes advance identically, so the output is deterministic given the
//! session (through the seed) and the position in the program, and no keystream is reused.
//! The cipher state is zeroized on drop (chacha20's `zeroize` feature); 2^32 blocks per
//! stream (2^34 elements) is far above any vector we expand.

use chacha20::cipher::{KeyIvInit, StreamCipher};
use chacha20::ChaCha12;
use zeroize::Zeroizing;

use crate::le_bytes::words_from_le;

/// A 32-byte PRG seed, zeroized on drop.
pub type Seed = Zeroizing<[u8; 32]>;

/// `n` pseudo-random ring elements from `seed` on stream `stream`. Cost: n/4 ChaCha12 blocks.
pub fn expand(seed: &[u8; 32], stream: u64, n: usize) -> Vec<u128> {
    let mut nonce = [0u8; 12];
    nonce[..8].copy_from_slice(&stream.to_le_bytes());
    let mut cipher = ChaCha12::new(seed.into(), &nonce.into());
    // The keystream straight into the output words (no buffer to copy through: the output
    // is the secret anyway), then each word read as little endian (a no-op on little-endian targets).
    let mut out = vec![0u128; n];
    cipher.apply_keystream(bytemuck::cast_slice_mut(&mut out));
    words_from_le(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_stream_separated() {
        let seed = [7u8; 32];
        assert_eq!(expand(&seed, 3, 5), expand(&seed, 3, 5));
        assert_ne!(expand(&seed, 3, 5), expand(&seed, 4, 5));
        // A prefix of a longer expansion is the shorter expansion (counter addressing).
        assert_eq!(expand(&seed, 9, 10)[..4], expand(&seed, 9, 4)[..]);
        // Past the first 256 elements (a boundary of an earlier chunked version) the stream
        // continues.
        assert_eq!(expand(&seed, 9, 600)[..257], expand(&seed, 9, 257)[..]);
        assert_ne!(expand(&seed, 9, 600)[256], expand(&seed, 9, 600)[0]);
    }

    #[test]
    fn nonce_layout_is_stream_then_zero() {
        // expand(seed, stream) is the ChaCha12 keystream under nonce = stream (LE) || 0u32.
        let key: [u8; 32] = core::array::from_fn(|i| i as u8);
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&0x4a00_0000_0000_0009u64.to_le_bytes());
        let mut c = ChaCha12::new((&key).into(), &nonce.into());
        let mut block = [0u8; 64];
        c.apply_keystream(&mut block);
        let bytes: Vec<u8> = expand(&key, 0x4a00_0000_0000_0009, 4)
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(bytes, block.to_vec());
    }
}
