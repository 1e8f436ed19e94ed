//! Ids to ristretto255 points: the random oracle H of the protocol.
//!
//! `H(id) = RistrettoPoint::from_uniform_bytes(SHA-512(DOMAIN_TAG || LE64(len(id)) || id))`:
//! SHA-512 of the 26 ASCII bytes of [`DOMAIN_TAG`], the id's length in bytes as a
//! little-endian u64, then the id's bytes. The 64-byte digest goes through the RFC 9496
//! one-way map (two Elligator maps, added), the same as libsodium's
//! `crypto_core_ristretto255_from_hash`, so an independent implementation can reproduce
//! every point (`tests/vectors/psi.json`). The tag separates these hashes from any other
//! use of SHA-512 or of the map; the length prefix makes the encoding injective.

use curve25519_dalek::RistrettoPoint;
use sha2::{Digest, Sha512};

/// The domain-separation tag hashed before every id (26 ASCII bytes, no terminator).
pub const DOMAIN_TAG: &[u8] = b"vtwin-psi/v1/hash-to-group";

/// The 64-byte input of the one-way map for `id`: `SHA-512(DOMAIN_TAG || LE64(len) || id)`.
/// Cost: one SHA-512 of 34 + `id.len()` bytes.
pub fn hash_input(id: &[u8]) -> [u8; 64] {
    let mut h = Sha512::new();
    h.update(DOMAIN_TAG);
    h.update((id.len() as u64).to_le_bytes());
    h.update(id);
    h.finalize().into()
}

/// `H(id)`, the point of `id` (module docs). Cost: one SHA-512 and two Elligator maps
/// (two field inverse square roots).
pub fn hash_to_group(id: &[u8]) -> RistrettoPoint {
    RistrettoPoint::from_uniform_bytes(&hash_input(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_prefix_separates_concatenations() {
        // Without the prefix, ("ab") and ("a" then "b" in a longer tag) could collide;
        // with it, ids differing only in length differ in their inputs.
        assert_ne!(hash_input(b"ab"), hash_input(b"ab\0"));
        assert_ne!(hash_input(b""), hash_input(b"\0"));
        assert_eq!(hash_input(b"id7"), hash_input(b"id7"));
    }
}
