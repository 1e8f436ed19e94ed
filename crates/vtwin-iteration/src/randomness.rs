//! Where every secret of one iteration comes from: the session id, each party's client seeds
//! (the PRG seeds of its data input and of its noise input), each node's ephemeral X25519 key,
//! and each party's noise generator.
//!
//! Production ([`SecretRandomness::Os`], `vtwin_model::backend::NoiseRngs::from_os`): every
//! generator is a ChaCha20 seeded from the OS CSPRNG when it is asked for, nothing is ever
//! written down, and a retried iteration draws fresh values.
//!
//! Tests and reproducible simulations ([`SecretRandomness::InsecureSeed`],
//! `vtwin_model::backend::NoiseRngs::seeded`): every generator is a pure function of
//! (seed, role, index, iteration): a ChaCha20 keyed by
//! `SHA-256("vtwin/v1 secret-randomness" || 0x00 || role || 0x00 || seed || index || t)`
//! (the three numbers as 8-byte little-endian, role one of `session`, `party`, `node`,
//! `noise`). Consequences: (a) processes that each hold only their own role draw exactly what
//! the in-memory backend draws for that role, so a network run equals `vtwin train --backend
//! mpc` bit for bit; (b) a retried iteration redraws identical values. **Whoever knows an
//! insecure seed can recompute every share, key and noise value derived from it, so the
//! privacy guarantee is void**: never use one on real data.
//!
//! Batch membership ([`BatchKey`]) is secret too: whoever runs the trainer (the coordinator,
//! or `vtwin train`) holds a 32-byte key from the OS CSPRNG, kept only in its private
//! checkpoint, and the batch of opening `o` at iteration `t` is a ChaCha20 stream keyed by
//! `SHA-256("vtwin/v1 batch" || 0x00 || key || t || o)` (8-byte little-endian numbers). Under an
//! insecure seed the key itself is `derive("batch", seed, 0, 0)` (below), so the batches are
//! reproducible and known to whoever knows the seed.
//!
//! Cost: one SHA-256 of 64 bytes per generator (seeded), or one OS read (production).

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use vtwin_mpc::SessionId;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Domain label of every derived key (versioned: changing the derivation changes the label).
const LABEL: &[u8] = b"vtwin/v1 secret-randomness";

/// The key of the generator for (role, seed, index, t) in the seeded mode (module docs).
fn derive(role: &str, seed: u64, index: u64, t: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(LABEL);
    h.update([0u8]);
    h.update(role.as_bytes());
    h.update([0u8]);
    h.update(seed.to_le_bytes());
    h.update(index.to_le_bytes());
    h.update(t.to_le_bytes());
    h.finalize().into()
}

/// Domain label of the per-opening batch generators (module docs).
const BATCH_LABEL: &[u8] = b"vtwin/v1 batch";

/// The secret key of the batch sampler (module docs): 32 bytes, zeroized on drop, never
/// printed (`Debug` shows nothing of it). Serialisable only so that the trainer's private
/// checkpoint can carry it; it must never reach model.json, synthetic.csv, privacy.json or a
/// log.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Zeroize, ZeroizeOnDrop)]
pub struct BatchKey([u8; 32]);

impl std::fmt::Debug for BatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BatchKey(..)")
    }
}

impl BatchKey {
    /// A fresh key from the OS CSPRNG (production). Cost: one OS read.
    pub fn from_os() -> BatchKey {
        let mut key = [0u8; 32];
        ChaCha20Rng::from_os_rng().fill_bytes(&mut key);
        BatchKey(key)
    }

    /// The key derived from an insecure test seed (reproducible batches; voids privacy).
    pub fn insecure(seed: u64) -> BatchKey {
        BatchKey(derive("batch", seed, 0, 0))
    }

    /// The generator of the batch of opening `opening` at iteration `iteration`: a pure
    /// function of (key, iteration, opening), domain-separated from every other generator.
    /// Cost: one SHA-256 of 62 bytes.
    pub fn rng(&self, iteration: u64, opening: u64) -> ChaCha20Rng {
        let mut h = Sha256::new();
        h.update(BATCH_LABEL);
        h.update([0u8]);
        h.update(self.0);
        h.update(iteration.to_le_bytes());
        h.update(opening.to_le_bytes());
        let seed = Zeroizing::new(<[u8; 32]>::from(h.finalize()));
        ChaCha20Rng::from_seed(*seed)
    }
}

/// The source of the MPC's per-iteration secrets (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretRandomness {
    /// Fresh OS randomness for every request (production).
    Os,
    /// Pure functions of this seed, the role and the iteration. Tests only: voids privacy.
    InsecureSeed(u64),
}

impl SecretRandomness {
    /// Whether the secrets are reproducible from a seed (no privacy).
    pub fn is_insecure(&self) -> bool {
        matches!(self, SecretRandomness::InsecureSeed(_))
    }

    fn rng(&self, role: &str, index: u64, t: u64) -> ChaCha20Rng {
        match *self {
            SecretRandomness::Os => ChaCha20Rng::from_os_rng(),
            SecretRandomness::InsecureSeed(seed) => {
                ChaCha20Rng::from_seed(derive(role, seed, index, t))
            }
        }
    }

    /// The batch key of a fresh run: from the OS, or [`BatchKey::insecure`] of the seed.
    pub fn batch_key(&self) -> BatchKey {
        match *self {
            SecretRandomness::Os => BatchKey::from_os(),
            SecretRandomness::InsecureSeed(seed) => BatchKey::insecure(seed),
        }
    }

    /// The session id of iteration `t` (public, 16 bytes, fresh per iteration; it
    /// domain-separates every seed the nodes derive, so iterations never share randomness).
    pub fn session(&self, t: u64) -> SessionId {
        let mut id = [0u8; 16];
        self.rng("session", 0, t).fill_bytes(&mut id);
        SessionId(id)
    }

    /// Party `p`'s client generator for iteration `t`: the PRG seeds of its data input
    /// (client p) and then of its noise input (client P + p), drawn in that order by
    /// [`crate::party::Party::shard`].
    pub fn party(&self, p: usize, t: u64) -> ChaCha20Rng {
        self.rng("party", p as u64, t)
    }

    /// Node `i`'s generator for iteration `t`: its ephemeral X25519 key
    /// (`vtwin_mpc::NodeKey::generate`, 32 bytes).
    pub fn node(&self, i: usize, t: u64) -> ChaCha20Rng {
        self.rng("node", i as u64, t)
    }
}

/// Party `p`'s noise generator for iteration `t` under the insecure noise seed `seed` (a pure
/// function; see the module docs). `vtwin_model::backend::NoiseRngs::seeded` positions its
/// generators with it, and a party process builds its own with it.
pub fn seeded_noise_rng(seed: u64, p: usize, t: u64) -> ChaCha20Rng {
    ChaCha20Rng::from_seed(derive("noise", seed, p as u64, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_generators_are_pure_and_separated() {
        let r = SecretRandomness::InsecureSeed(7);
        assert_eq!(r.session(3), r.session(3));
        assert_ne!(r.session(3), r.session(4));
        assert_ne!(r.session(3), SecretRandomness::InsecureSeed(8).session(3));
        let word = |mut g: ChaCha20Rng| g.next_u64();
        assert_eq!(word(r.party(1, 2)), word(r.party(1, 2)));
        assert_ne!(word(r.party(1, 2)), word(r.party(0, 2)));
        assert_ne!(word(r.party(1, 2)), word(r.party(1, 3)));
        // Roles are domain-separated: party 1 and node 1 of the same iteration differ.
        assert_ne!(word(r.party(1, 2)), word(r.node(1, 2)));
        assert_ne!(word(seeded_noise_rng(7, 1, 2)), word(r.party(1, 2)));
        assert_eq!(
            word(seeded_noise_rng(7, 1, 2)),
            word(seeded_noise_rng(7, 1, 2))
        );
    }

    #[test]
    fn batch_generators_are_keyed_pure_and_separated() {
        let word = |mut g: ChaCha20Rng| g.next_u64();
        let k = BatchKey::insecure(7);
        assert_eq!(word(k.rng(3, 3)), word(BatchKey::insecure(7).rng(3, 3)));
        assert_ne!(
            word(k.rng(3, 3)),
            word(k.rng(3, 4)),
            "the opening must matter"
        );
        assert_ne!(
            word(k.rng(3, 3)),
            word(k.rng(4, 3)),
            "the iteration must matter"
        );
        assert_ne!(word(k.rng(3, 3)), word(BatchKey::insecure(8).rng(3, 3)));
        assert_eq!(SecretRandomness::InsecureSeed(7).batch_key(), k);
        let os = SecretRandomness::Os.batch_key();
        assert_ne!(os, BatchKey::from_os());
        assert_eq!(format!("{os:?}"), "BatchKey(..)");
    }

    #[test]
    fn os_generators_differ() {
        let r = SecretRandomness::Os;
        assert!(!r.is_insecure());
        assert_ne!(r.session(0), r.session(0));
        assert_ne!(r.node(0, 0).next_u64(), r.node(0, 0).next_u64());
    }

    /// The derivation is fixed: values computed independently (Python `hashlib` and the
    /// `cryptography` package's ChaCha20 with a zero nonce and counter, which is
    /// `ChaCha20Rng`'s block 0 of stream 0) guard against silent changes, which would break
    /// the equality of processes built from different versions.
    #[test]
    fn derivation_known_answer() {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(
            hex(&derive("session", 5, 0, 9)),
            "95b7a2736389abff26961fbace2d821f833f4f39ff8bd8e8ecb7776d3533671b"
        );
        assert_eq!(
            hex(&SecretRandomness::InsecureSeed(5).session(9).0),
            "a64acf6f9526c86462274bcf38db9e9c"
        );
    }
}
