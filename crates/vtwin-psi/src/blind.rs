//! Blinding keys and the batch operations of the protocol: hash-and-blind a party's ids,
//! and re-blind a set received from another party.
//!
//! Both run on rayon's pool in chunks of [`CHUNK`] points. Compression, which would cost a
//! field inverse square root per point, is batched: `double_and_compress_batch` compresses
//! 2·Q for a whole chunk with one field inversion, so each point is multiplied by k/2
//! (mod ℓ) and the batch compresses 2·(k/2)·P = k·P exactly.

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::Scalar;
use rand_core::CryptoRng;
use rayon::prelude::*;
use zeroize::{Zeroize, Zeroizing};

use crate::hash_to_group::hash_to_group;

/// Points per parallel chunk (one batched inversion each).
pub const CHUNK: usize = 2048;

/// A compressed ristretto255 point as sent on the wire (canonical 32-byte encoding).
pub type Point = [u8; 32];

/// A secret exponent: a uniformly random non-zero scalar mod ℓ, zeroized on drop.
pub struct BlindingKey {
    scalar: Scalar,
}

impl std::fmt::Debug for BlindingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlindingKey(..)")
    }
}

impl Drop for BlindingKey {
    fn drop(&mut self) {
        self.scalar.zeroize();
    }
}

impl zeroize::ZeroizeOnDrop for BlindingKey {}

impl BlindingKey {
    /// A fresh key: 64 bytes from `rng` (the OS CSPRNG in production) reduced mod ℓ, so
    /// its bias is below 2^-250; redrawn in the (2^-252) case of zero. Cost: one wide
    /// reduction.
    pub fn random<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        loop {
            let mut wide = Zeroizing::new([0u8; 64]);
            rng.fill_bytes(wide.as_mut());
            let scalar = Scalar::from_bytes_mod_order_wide(&wide);
            if scalar != Scalar::ZERO {
                return Self { scalar };
            }
        }
    }

    /// A key from its canonical encoding (32 bytes little-endian, below ℓ, non-zero):
    /// for test vectors and stored keys. `None` for non-canonical or zero encodings.
    pub fn from_canonical_bytes(bytes: [u8; 32]) -> Option<Self> {
        let scalar: Option<Scalar> = Scalar::from_canonical_bytes(bytes).into();
        scalar
            .filter(|s| *s != Scalar::ZERO)
            .map(|scalar| Self { scalar })
    }

    /// The canonical encoding (32 bytes little-endian, reduced), zeroized on drop.
    pub fn to_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.scalar.to_bytes())
    }

    /// The key k·m⁻¹ (mod ℓ) that turns a point blinded by `mask` into one blinded by
    /// `self`. Cost: one scalar inversion.
    pub fn over(&self, mask: &BlindingKey) -> BlindingKey {
        BlindingKey {
            scalar: self.scalar * mask.scalar.invert(),
        }
    }

    /// k/2 mod ℓ, for the doubling batch compression (module docs).
    fn half(&self) -> Zeroizing<Scalar> {
        Zeroizing::new(self.scalar * Scalar::from(2u8).invert())
    }

    /// `k·P` for one point, compressed (the unbatched reference of the batch operations).
    pub fn blind_point(&self, p: &RistrettoPoint) -> Point {
        (self.scalar * p).compress().to_bytes()
    }
}

/// Why a received point could not be re-blinded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PointError {
    /// The 32 bytes at this position are not the canonical encoding of a group element.
    #[error("point {position} is not a canonical ristretto255 encoding")]
    Invalid {
        /// Index of the point in its set.
        position: usize,
    },
}

/// `k·H(id)` for every id, compressed, in input order. Cost per id: one SHA-512, the
/// hash-to-group map, one variable-base scalar multiplication and a share of a batched
/// inversion; parallel over [`CHUNK`]s.
pub fn hash_and_blind<T: AsRef<[u8]> + Sync>(ids: &[T], key: &BlindingKey) -> Vec<Point> {
    let half = key.half();
    ids.par_chunks(CHUNK)
        .flat_map_iter(|chunk| {
            let pts: Vec<RistrettoPoint> = chunk
                .iter()
                .map(|id| *half * hash_to_group(id.as_ref()))
                .collect();
            compress_doubled(&pts)
        })
        .collect()
}

/// `k·P` for every received point P, compressed, in input order. Errors: the first
/// position (in order) whose bytes do not decompress. Cost per point: one decompression
/// (an inverse square root), one scalar multiplication and a share of a batched inversion.
pub fn reblind(points: &[Point], key: &BlindingKey) -> Result<Vec<Point>, PointError> {
    let half = key.half();
    let chunks: Vec<Result<Vec<Point>, PointError>> = points
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut pts = Vec::with_capacity(chunk.len());
            for (i, bytes) in chunk.iter().enumerate() {
                let p = CompressedRistretto(*bytes)
                    .decompress()
                    .ok_or(PointError::Invalid {
                        position: c * CHUNK + i,
                    })?;
                pts.push(*half * p);
            }
            Ok(compress_doubled(&pts))
        })
        .collect();
    let mut out = Vec::with_capacity(points.len());
    for c in chunks {
        out.extend(c?);
    }
    Ok(out)
}

/// Compressions of 2·Q for each Q, with one inversion for the batch.
fn compress_doubled(pts: &[RistrettoPoint]) -> Vec<Point> {
    RistrettoPoint::double_and_compress_batch(pts)
        .into_iter()
        .map(|c| c.to_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn batch_equals_unbatched() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let k = BlindingKey::random(&mut rng);
        let ids: Vec<Vec<u8>> = (0..CHUNK + 5)
            .map(|i| format!("x{i}").into_bytes())
            .collect();
        let b = hash_and_blind(&ids, &k);
        for (id, got) in ids.iter().zip(&b).step_by(97) {
            assert_eq!(*got, k.blind_point(&hash_to_group(id)));
        }
        let k2 = BlindingKey::random(&mut rng);
        let bb = reblind(&b, &k2).unwrap();
        let both = hash_and_blind(
            &ids,
            &BlindingKey {
                scalar: k.scalar * k2.scalar,
            },
        );
        assert_eq!(bb, both);
    }

    #[test]
    fn reblind_names_the_bad_point() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let k = BlindingKey::random(&mut rng);
        let mut pts = hash_and_blind(&vec![b"a".to_vec(); CHUNK + 3], &k);
        pts[CHUNK + 1] = [0xff; 32];
        assert_eq!(
            reblind(&pts, &k),
            Err(PointError::Invalid {
                position: CHUNK + 1
            })
        );
    }

    #[test]
    fn over_moves_a_mask_to_a_key() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let (k, m) = (BlindingKey::random(&mut rng), BlindingKey::random(&mut rng));
        let masked = hash_and_blind(&[b"id"], &m);
        assert_eq!(
            reblind(&masked, &k.over(&m)).unwrap(),
            hash_and_blind(&[b"id"], &k)
        );
    }
}
