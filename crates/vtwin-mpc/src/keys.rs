//! Node keys and the pairwise seeds of the correlated randomness, without a dealer.
//!
//! Each node holds an X25519 static key. For the pair of nodes (j-1, j) (indices mod 3) the
//! seed `k_j` is
//! `HKDF-SHA256(salt = "vtwin-mpc/v1 salt", ikm = X25519(sk_{j-1}, pk_j),
//! info = "vtwin-mpc/v1 pair-seed" || session || [j-1, j])`, 32 bytes. Node i therefore holds
//! `k_i` (shared with node i-1) and `k_{i+1}` (shared with node i+1), exactly the key layout
//! of replicated sharing: with `F` the PRG ([`crate::prg`]),
//! - a random replicated sharing is `r_j = F(k_j, c)` (node i holds `r_i, r_{i+1}`);
//! - a zero-sharing is `a_i = F(k_i, c) - F(k_{i+1}, c)` (sums to 0; XOR form for bits);
//! - a value known to exactly one pair is `F(k_j, c)`.
//!
//! Each node also derives a **private seed** `p_i` that no other node can compute, from its
//! own X25519 secret:
//! `HKDF-SHA256(salt = "vtwin-mpc/v1 salt", ikm = sk_i,
//! info = "vtwin-mpc/v1 private-mask" || session || [i])`, 32 bytes. `F(p_i, c)` is a value
//! known to node i alone (node 0's truncation masks, [`crate::multiply`]); `sk_i` comes from
//! a CSPRNG, so `p_i` is as secret as the key itself.
//!
//! Secrets (the X25519 key, the shared secret and the seeds) are zeroized on drop.

use hkdf::Hkdf;
use rand_core::{CryptoRng, RngCore};
use sha2::Sha256;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::{Zeroize, Zeroizing};

use crate::error::MpcError;
use crate::message::{NodeId, Peer, SessionId};
use crate::prg::Seed;

const SALT: &[u8] = b"vtwin-mpc/v1 salt";
const PAIR_INFO: &[u8] = b"vtwin-mpc/v1 pair-seed";
const PRIVATE_INFO: &[u8] = b"vtwin-mpc/v1 private-mask";

/// A node's long-term X25519 key (zeroized on drop by x25519-dalek).
pub struct NodeKey {
    secret: StaticSecret,
}

impl std::fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeKey(..)")
    }
}

impl NodeKey {
    /// A fresh key from a CSPRNG (`OsRng`-seeded ChaCha20Rng in production).
    pub fn generate<R: RngCore + CryptoRng>(rng: &mut R) -> NodeKey {
        let mut bytes = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(bytes.as_mut());
        NodeKey {
            secret: StaticSecret::from(*bytes),
        }
    }

    /// A key from its 32 secret bytes (e.g. loaded from a key file; clamped as X25519
    /// requires when used).
    pub fn from_bytes(bytes: [u8; 32]) -> NodeKey {
        NodeKey {
            secret: StaticSecret::from(bytes),
        }
    }

    /// The public key to publish to the other nodes.
    pub fn public(&self) -> [u8; 32] {
        PublicKey::from(&self.secret).to_bytes()
    }
}

/// The two pairwise seeds of node i: `prev = k_i` (with node i-1), `next = k_{i+1}` (with
/// node i+1), and its private seed `p_i` (known to node i alone). Zeroized on drop.
pub struct PairSeeds {
    pub(crate) prev: Seed,
    pub(crate) next: Seed,
    pub(crate) private: Seed,
}

impl std::fmt::Debug for PairSeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PairSeeds(..)")
    }
}

fn pair_seed(
    key: &NodeKey,
    other: NodeId,
    other_public: &[u8; 32],
    session: SessionId,
    low: NodeId,
    high: NodeId,
) -> Result<Seed, MpcError> {
    let shared = key.secret.diffie_hellman(&PublicKey::from(*other_public));
    if !shared.was_contributory() {
        return Err(MpcError::NonContributoryKey {
            peer: Peer::Node(other),
        });
    }
    let hk = Hkdf::<Sha256>::new(Some(SALT), shared.as_bytes());
    let mut info = Vec::with_capacity(PAIR_INFO.len() + 18);
    info.extend_from_slice(PAIR_INFO);
    info.extend_from_slice(&session.0);
    info.push(low.index() as u8);
    info.push(high.index() as u8);
    let mut seed = Zeroizing::new([0u8; 32]);
    // 32 bytes is far below HKDF-SHA256's 8160-byte limit: expand cannot fail.
    hk.expand(&info, seed.as_mut())
        .map_err(|_| MpcError::NonContributoryKey {
            peer: Peer::Node(other),
        })?;
    Ok(seed)
}

/// Node `me`'s private seed `p_i`: HKDF-SHA256 of its own X25519 secret (see the module
/// docs). Only the node holding `key` can compute it.
fn private_seed(key: &NodeKey, session: SessionId, me: NodeId) -> Result<Seed, MpcError> {
    // The PRK that `extract` returns (a copy of the HKDF key) is wiped at once; the HMAC
    // state inside `hk` (hkdf 0.12 has no zeroize support) is dropped as soon as the seed
    // is expanded.
    let (mut prk, hk) = Hkdf::<Sha256>::extract(Some(SALT), key.secret.as_bytes());
    prk.as_mut_slice().zeroize();
    let mut info = Vec::with_capacity(PRIVATE_INFO.len() + 17);
    info.extend_from_slice(PRIVATE_INFO);
    info.extend_from_slice(&session.0);
    info.push(me.index() as u8);
    let mut seed = Zeroizing::new([0u8; 32]);
    // 32 bytes is far below HKDF-SHA256's 8160-byte limit: expand cannot fail.
    hk.expand(&info, seed.as_mut())
        .map_err(|_| MpcError::NonContributoryKey {
            peer: Peer::Node(me),
        })?;
    Ok(seed)
}

impl PairSeeds {
    /// Derives node `me`'s seeds from its key and the three nodes' public keys (indexed by
    /// node), and its private seed from its key. Errors if a peer's public key gives a
    /// non-contributory shared secret.
    /// Cost: 2 X25519 scalar multiplications, 3 HKDF.
    pub fn derive(
        me: NodeId,
        key: &NodeKey,
        publics: &[[u8; 32]; 3],
        session: SessionId,
    ) -> Result<PairSeeds, MpcError> {
        let p = me.prev();
        let n = me.next();
        // k_i is the seed of the pair (i-1, i); k_{i+1} of (i, i+1).
        let prev = pair_seed(key, p, &publics[p.index()], session, p, me)?;
        let next = pair_seed(key, n, &publics[n.index()], session, me, n)?;
        let private = private_seed(key, session, me)?;
        Ok(PairSeeds {
            prev,
            next,
            private,
        })
    }
}

/// Keys and seeds for three nodes generated from one RNG (simulation and tests).
pub fn simulated_seeds<R: RngCore + CryptoRng>(
    rng: &mut R,
    session: SessionId,
) -> Result<[PairSeeds; 3], MpcError> {
    let keys = [
        NodeKey::generate(rng),
        NodeKey::generate(rng),
        NodeKey::generate(rng),
    ];
    let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
    let [a, b, c] = NodeId::ALL;
    Ok([
        PairSeeds::derive(a, &keys[0], &publics, session)?,
        PairSeeds::derive(b, &keys[1], &publics, session)?,
        PairSeeds::derive(c, &keys[2], &publics, session)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn neighbours_agree_and_pairs_differ() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let s = simulated_seeds(&mut rng, SessionId([1; 16])).expect("keys");
        for i in 0..3 {
            let n = (i + 1) % 3;
            assert_eq!(*s[i].next, *s[n].prev, "pair ({i},{n}) must agree");
        }
        assert_ne!(*s[0].prev, *s[0].next);
        assert_ne!(*s[1].prev, *s[2].prev);
        // Private seeds: one per node, equal to no pair seed and to no other node's.
        for i in 0..3 {
            for j in 0..3 {
                assert_ne!(*s[i].private, *s[j].prev, "p_{i} vs k_{j}");
                if i != j {
                    assert_ne!(*s[i].private, *s[j].private);
                }
            }
        }
    }

    #[test]
    fn private_seed_is_the_documented_hkdf() {
        // HKDF-SHA256(salt, ikm = the node's own secret, info = label || session || [i]),
        // recomputed here from the definition, and separated by session.
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let keys = [
            NodeKey::generate(&mut rng),
            NodeKey::generate(&mut rng),
            NodeKey::generate(&mut rng),
        ];
        let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
        let session = SessionId([9; 16]);
        for id in NodeId::ALL {
            let s = PairSeeds::derive(id, &keys[id.index()], &publics, session).expect("d");
            let hk = Hkdf::<Sha256>::new(
                Some(b"vtwin-mpc/v1 salt"),
                keys[id.index()].secret.as_bytes(),
            );
            let mut info = b"vtwin-mpc/v1 private-mask".to_vec();
            info.extend_from_slice(&session.0);
            info.push(id.index() as u8);
            let mut want = [0u8; 32];
            hk.expand(&info, &mut want).expect("expand");
            assert_eq!(*s.private, want, "p_{}", id.index());
            let other =
                PairSeeds::derive(id, &keys[id.index()], &publics, SessionId([8; 16])).expect("d");
            assert_ne!(*other.private, *s.private);
        }
    }

    #[test]
    fn session_separates_seeds() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let keys = [
            NodeKey::generate(&mut rng),
            NodeKey::generate(&mut rng),
            NodeKey::generate(&mut rng),
        ];
        let publics = [keys[0].public(), keys[1].public(), keys[2].public()];
        let id = NodeId::ALL[0];
        let a = PairSeeds::derive(id, &keys[0], &publics, SessionId([1; 16])).expect("a");
        let b = PairSeeds::derive(id, &keys[0], &publics, SessionId([2; 16])).expect("b");
        assert_ne!(*a.next, *b.next);
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
            .collect()
    }

    fn arr(s: &str) -> [u8; 32] {
        hex(s).try_into().expect("32 bytes")
    }

    fn u128_hex(v: &serde_json::Value) -> u128 {
        let s = v.as_str().expect("string");
        u128::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex u128")
    }

    /// Replays protocols/vectors/mpc-keys.json, generated by an independent implementation
    /// (Python `cryptography` + RFC 5869 HKDF; the AES-128-CTR PRG by
    /// tests/vectors/gen_prg_vectors.py with `cryptography`'s AES-CTR, checked against NIST
    /// SP 800-38A).
    #[test]
    fn replays_independent_vectors() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../protocols/vectors/mpc-keys.json"))
                .expect("json");
        let session = SessionId(
            hex(v["session"].as_str().expect("s"))
                .try_into()
                .expect("16"),
        );
        let keys: Vec<NodeKey> = (0..3)
            .map(|i| NodeKey::from_bytes(arr(v["node_secrets"][i].as_str().expect("k"))))
            .collect();
        let publics: [[u8; 32]; 3] =
            core::array::from_fn(|i| arr(v["node_publics"][i].as_str().expect("p")));
        for i in 0..3 {
            assert_eq!(keys[i].public(), publics[i], "public key {i}");
        }
        let seeds: Vec<PairSeeds> = NodeId::ALL
            .iter()
            .map(|&id| PairSeeds::derive(id, &keys[id.index()], &publics, session).expect("d"))
            .collect();
        let k = |j: usize| arr(v["pair_seed_list"][j].as_str().expect("seed"));
        for (i, s) in seeds.iter().enumerate() {
            assert_eq!(*s.prev, k(i), "k_{i} at node {i}");
            assert_eq!(*s.next, k((i + 1) % 3), "k_{} at node {i}", (i + 1) % 3);
        }
        // Both PRG vectors: the short one, and the long one over a stream that fills the
        // stream word and 656 bytes (five 8-block AES-NI batches and a single tail block).
        for name in ["prg", "prg_long"] {
            let p = &v[name];
            assert_eq!(p["cipher"], "AES-128-CTR");
            let (stream, n) = (
                p["stream"].as_u64().expect("stream"),
                p["n"].as_u64().expect("n"),
            );
            for j in 0..3 {
                let want: Vec<u128> = (0..n as usize)
                    .map(|t| u128_hex(&p["outputs_by_key"][j][t]))
                    .collect();
                assert_eq!(
                    crate::prg::expand(&k(j), stream, n as usize),
                    want,
                    "{name} F(k_{j})"
                );
            }
        }
        let (long, long_n) = (
            v["prg_long"]["stream"].as_u64().expect("stream"),
            v["prg_long"]["n"].as_u64().expect("n") as usize,
        );
        for (i, s) in seeds.iter().enumerate() {
            let a = crate::prg::expand(&s.prev, long, long_n);
            let b = crate::prg::expand(&s.next, long, long_n);
            for t in 0..long_n {
                let want = u128_hex(&v["xor_zero_sharing_by_node"][i][t]);
                assert_eq!(a[t] ^ b[t], want, "binary zero-sharing at node {i}");
            }
        }
        let stream = v["prg"]["stream"].as_u64().expect("stream");
        let n = v["prg"]["n"].as_u64().expect("n") as usize;
        for (i, s) in seeds.iter().enumerate() {
            let a = crate::prg::expand(&s.prev, stream, n);
            let b = crate::prg::expand(&s.next, stream, n);
            for t in 0..n {
                let want = u128_hex(&v["zero_sharing_by_node"][i][t]);
                assert_eq!(a[t].wrapping_sub(b[t]), want);
            }
        }
        let m = &v["wire"]["message"];
        let msg = crate::message::Message {
            session,
            from: Peer::Node(NodeId::ALL[1]),
            to: Peer::Client(7),
            step: m["step"].as_u64().expect("step"),
            payload: vec![u128_hex(&m["payload"][0]), u128_hex(&m["payload"][1])],
            packing: crate::packing::Packing::whole(),
        };
        let enc = hex(v["wire"]["encoded"].as_str().expect("enc"));
        assert_eq!(msg.encode(), enc);
        assert_eq!(crate::message::Message::decode(&enc).expect("decode"), msg);
        // The packed form, from the runs' masks.
        let m = &v["wire_packed"]["message"];
        let payload: Vec<u128> = (0..4).map(|i| u128_hex(&m["payload"][i])).collect();
        let masks = [u64::MAX as u128, u64::MAX as u128, (1 << 80) - 1, u128::MAX];
        let packing = crate::packing::Packing::for_masks(&masks);
        let runs: Vec<(u32, u8)> = m["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| {
                (
                    r[0].as_u64().expect("n") as u32,
                    r[1].as_u64().expect("w") as u8,
                )
            })
            .collect();
        assert_eq!(packing.runs(), &runs[..]);
        let msg = crate::message::Message {
            payload,
            packing,
            step: m["step"].as_u64().expect("step"),
            ..msg
        };
        let enc = hex(v["wire_packed"]["encoded"].as_str().expect("enc"));
        assert_eq!(msg.encode(), enc);
        assert_eq!(crate::message::Message::decode(&enc).expect("decode"), msg);
    }

    #[test]
    fn low_order_public_key_is_rejected() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let key = NodeKey::generate(&mut rng);
        let publics = [key.public(), [0u8; 32], key.public()];
        let err = PairSeeds::derive(NodeId::ALL[0], &key, &publics, SessionId([0; 16]));
        assert!(matches!(err, Err(MpcError::NonContributoryKey { .. })));
    }
}
