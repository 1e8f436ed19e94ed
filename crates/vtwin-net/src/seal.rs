//! Sealing a party's input shares to one compute node, so that only that node reads them,
//! whatever carries them: since wire version 15 the party's own TLS link to the node (so the
//! seal is a second, end-to-end layer), before it the coordinator's relay
//! (protocols/sealing.md).
//!
//! X25519 once per (party, node) channel, then HKDF-SHA256 and AES-256-GCM per blob (since
//! wire version 17; before, a fresh X25519 key per blob):
//!
//! ```text
//! channel (once per job and node, and again when its signature is to lapse):
//!   e   <- 32 random bytes (the CSPRNG passed in), E = X25519(e, 9)
//!   dh  = X25519(e, S)                       (S = the node's static seal public key)
//! blob:
//!   n   <- 16 random bytes (the CSPRNG passed in)
//!   ctx = session (16) || iteration (u64 LE) || party (u16 LE) || node (u8)      27 bytes
//!   key = HKDF-SHA256(salt = "vtwin-net/v2 seal salt", ikm = dh,
//!                     info = "vtwin-net/v2 seal" || ctx || E || S || n)        32 bytes
//!   sealed = E || n || AES-256-GCM(key, nonce = 0^96, aad = ctx, plaintext)  (48 + len + 16)
//! ```
//!
//! The nonce is constant because every key encrypts one message: the key depends on the
//! blob's fresh `n` (and its context), so two blobs of one channel share a key only if they
//! share `n` and `ctx`, with probability at most q^2 2^-129 for q blobs. The context is bound
//! twice (HKDF info and AAD): a blob sealed for another session, iteration, party or node,
//! or to another key, fails authentication, as does any changed byte. A non-contributory
//! (low-order) public key is refused on both sides. The channel's `e` is dropped once `dh`
//! is computed; `dh`, our copy of each AES key and the node's static key are zeroized on
//! drop, and the node keeps the `dh` of the channels it has opened ([`SealKey`]) so that a
//! blob costs it no scalar multiplication either. AES-256-GCM is ring's (VAES and VPCLMULQDQ
//! where the CPU has them: about 4x RustCrypto's `aes-gcm` on the Adult uploads), whose
//! expanded key schedule (which contains the key itself) is not wiped on drop;
//! protocols/sealing.md says why that adds no exposure.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use hkdf::Hkdf;
use rand_core::{CryptoRng, RngCore};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use sha2::Sha256;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use vtwin_host::atomic;
use vtwin_host::wipe::WipedBytes;

/// Bytes of a blob's salt `n`.
pub const SALT_BYTES: usize = 16;

/// Bytes of a sealed blob beyond the plaintext: the channel's public key (32), the blob's
/// salt (16) and the GCM tag (16).
pub const SEAL_OVERHEAD: usize = 32 + SALT_BYTES + 16;

/// Bytes before a blob's ciphertext: the channel's public key and the salt.
const HEADER_BYTES: usize = 32 + SALT_BYTES;

/// Bytes of the encoded [`SealContext`] (AAD).
pub const CONTEXT_BYTES: usize = 16 + 8 + 2 + 1;

// v2 since wire version 17 (the per-blob salt): a blob of the earlier construction never
// opens under this one.
const SALT: &[u8] = b"vtwin-net/v2 seal salt";
const INFO: &[u8] = b"vtwin-net/v2 seal";

/// At most this many channels' shared secrets are kept by a node (one per party and job in
/// use); a full table is emptied, so that no sender can grow it.
const OPENED_CAPACITY: usize = 256;

/// What a sealed blob is bound to: it opens only for this session, iteration, party and node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SealContext {
    /// The iteration's session id.
    pub session: [u8; 16],
    /// Training iteration t.
    pub iteration: u64,
    /// The sealing party's index.
    pub party: u16,
    /// The receiving node (0, 1 or 2).
    pub node: u8,
}

impl SealContext {
    /// `session || iteration (LE) || party (LE) || node`, the AAD. Cost: O(1).
    pub fn to_bytes(&self) -> [u8; CONTEXT_BYTES] {
        let mut out = [0u8; CONTEXT_BYTES];
        out[..16].copy_from_slice(&self.session);
        out[16..24].copy_from_slice(&self.iteration.to_le_bytes());
        out[24..26].copy_from_slice(&self.party.to_le_bytes());
        out[26] = self.node;
        out
    }
}

/// A channel's shared secret, on the heap so that moving its owner (a table that grows, an
/// array built from parts) copies a pointer, never the secret; zeroized on drop.
type ChannelSecret = Box<Zeroizing<[u8; 32]>>;

/// A node's static X25519 seal key (zeroized on drop; `Debug` prints no secret), with the
/// shared secrets of the channels it has opened (by the channel's public key, zeroized on
/// drop), so that each channel costs it one scalar multiplication, not one per blob.
pub struct SealKey {
    secret: StaticSecret,
    public: [u8; 32],
    opened: Mutex<HashMap<[u8; 32], ChannelSecret>>,
}

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealKey(public {})", hex(&self.public))
    }
}

/// Why a blob did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// Shorter than [`SEAL_OVERHEAD`].
    #[error("sealed blob of {len} bytes is shorter than the {SEAL_OVERHEAD}-byte overhead")]
    TooShort {
        /// Its length.
        len: usize,
    },
    /// A channel's public key (at the node) or the node's seal key (at the party) is of low
    /// order: the shared secret would be known.
    #[error("non-contributory X25519 key: a low-order channel or node key")]
    NonContributory,
    /// Authentication failed: wrong key, wrong context, or a changed byte.
    #[error(
        "sealed blob does not open: wrong key, wrong session/iteration/party/node, or tampered"
    )]
    Authentication,
}

/// A seal key file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealKeyError {
    /// The file could not be read.
    #[error("cannot read seal key {path}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write seal key {path}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not 64 hex digits (optionally followed by a newline).
    #[error("seal key {path}: expected 64 hex digits")]
    Format {
        /// The file.
        path: String,
    },
}

impl SealKey {
    /// A fresh key from a CSPRNG (`OsRng`-seeded ChaCha20Rng in production). Cost: one
    /// scalar multiplication.
    pub fn generate<R: RngCore + CryptoRng>(rng: &mut R) -> SealKey {
        let mut bytes = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(bytes.as_mut());
        SealKey::from_bytes(*bytes)
    }

    /// A key from its 32 secret bytes (clamped as X25519 requires when used).
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        let secret = StaticSecret::from(bytes);
        let public = PublicKey::from(&secret).to_bytes();
        SealKey {
            secret,
            public,
            opened: Mutex::default(),
        }
    }

    /// The AES key of a blob of the channel whose public key is `channel`: from the
    /// remembered secret (derived under the table's lock, no copy of the secret), or from
    /// one scalar multiplication (outside the lock; refused if non-contributory), whose
    /// secret is returned too, for [`SealKey::remember`] once the blob has opened.
    fn open_key(
        &self,
        channel: &[u8; 32],
        ctx: &SealContext,
        salt: &[u8; SALT_BYTES],
    ) -> Result<(Zeroizing<[u8; 32]>, Option<ChannelSecret>), SealError> {
        if let Some(shared) = self.opened().get(channel) {
            return Ok((blob_key(channel, &self.public, shared, ctx, salt), None));
        }
        let shared = self.secret.diffie_hellman(&PublicKey::from(*channel));
        if !shared.was_contributory() {
            return Err(SealError::NonContributory);
        }
        let shared: ChannelSecret = Box::new(Zeroizing::new(shared.to_bytes()));
        Ok((
            blob_key(channel, &self.public, &shared, ctx, salt),
            Some(shared),
        ))
    }

    /// Keeps `shared` as the secret of `channel` (a blob opened with it).
    fn remember(&self, channel: &[u8; 32], shared: ChannelSecret) {
        let mut opened = self.opened();
        if opened.len() >= OPENED_CAPACITY {
            opened.clear();
        }
        opened.insert(*channel, shared);
    }

    fn opened(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], ChannelSecret>> {
        self.opened.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The 32 secret bytes, zeroized when dropped.
    pub fn to_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.secret.to_bytes())
    }

    /// The public key that parties seal to.
    pub fn public(&self) -> [u8; 32] {
        self.public
    }

    /// Reads a key file: 64 lower- or upper-case hex digits, optionally followed by a
    /// newline. Errors name the file.
    pub fn read_file(path: &Path) -> Result<SealKey, SealKeyError> {
        let text =
            Zeroizing::new(
                std::fs::read_to_string(path).map_err(|source| SealKeyError::Read {
                    path: path.display().to_string(),
                    source,
                })?,
            );
        let bytes = parse_hex32(text.trim_end_matches(['\n', '\r'])).ok_or_else(|| {
            SealKeyError::Format {
                path: path.display().to_string(),
            }
        })?;
        Ok(SealKey::from_bytes(*bytes))
    }

    /// Writes the key file (64 hex digits and a newline) atomically with mode 0600.
    pub fn write_file(&self, path: &Path) -> Result<(), SealKeyError> {
        let mut text = Zeroizing::new(hex(self.to_bytes().as_ref()));
        text.push('\n');
        atomic::write(path, text.as_bytes(), atomic::Mode::Secret).map_err(|source| {
            SealKeyError::Write {
                path: path.display().to_string(),
                source,
            }
        })
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// 32 bytes from exactly 64 hex digits; `None` otherwise.
pub fn parse_hex32(text: &str) -> Option<Zeroizing<[u8; 32]>> {
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Zeroizing::new([0u8; 32]);
    for (o, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// The AES key of one blob from its channel's shared secret.
fn blob_key(
    channel_public: &[u8; 32],
    node_public: &[u8; 32],
    shared: &[u8; 32],
    ctx: &SealContext,
    salt: &[u8; SALT_BYTES],
) -> Zeroizing<[u8; 32]> {
    let hk = Hkdf::<Sha256>::new(Some(SALT), shared);
    let mut key = Zeroizing::new([0u8; 32]);
    let ctx = ctx.to_bytes();
    hk.expand_multi_info(
        &[INFO, &ctx, channel_public, node_public, salt],
        key.as_mut(),
    )
    .expect("32 bytes is a valid HKDF-SHA256 output length");
    key
}

/// A party's sealing channel to one node: its public key `E` and the shared secret with the
/// node's seal key (zeroized on drop; `Debug` prints no secret). The party makes one per
/// node and job ([`SealChannel::new`]) and seals every blob of the job to that node through
/// it ([`SealChannel::seal`]).
pub struct SealChannel {
    public: [u8; 32],
    node_public: [u8; 32],
    shared: ChannelSecret,
}

impl std::fmt::Debug for SealChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SealChannel(public {}, node {})",
            hex(&self.public),
            hex(&self.node_public)
        )
    }
}

impl SealChannel {
    /// A channel to the node whose seal public key is `node_public`, from 32 bytes of `rng`
    /// (a CSPRNG). Errors: [`SealError::NonContributory`] for a low-order node key (which no
    /// honest keygen produces). Cost: two X25519 scalar multiplications.
    pub fn new<R: RngCore + CryptoRng>(
        node_public: &[u8; 32],
        rng: &mut R,
    ) -> Result<SealChannel, SealError> {
        let mut secret = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(secret.as_mut());
        SealChannel::with_secret(node_public, &secret)
    }

    /// [`SealChannel::new`] with the channel's secret given (deterministic; test vectors).
    fn with_secret(node_public: &[u8; 32], secret: &[u8; 32]) -> Result<SealChannel, SealError> {
        let secret = StaticSecret::from(*secret);
        let public = PublicKey::from(&secret).to_bytes();
        let shared = secret.diffie_hellman(&PublicKey::from(*node_public));
        if !shared.was_contributory() {
            return Err(SealError::NonContributory);
        }
        Ok(SealChannel {
            public,
            node_public: *node_public,
            shared: Box::new(Zeroizing::new(shared.to_bytes())),
        })
    }

    /// The channel's public key `E`, the first 32 bytes of each of its blobs.
    pub fn public(&self) -> [u8; 32] {
        self.public
    }

    /// Seals `plaintext` for `ctx` with a fresh 16-byte salt from `rng` (a CSPRNG).
    ///
    /// Output: `SEAL_OVERHEAD + plaintext.len()` bytes. Cost: one HKDF, AES-256-GCM over the
    /// plaintext (linear in its length; measured in docs/component-costs.md); no scalar
    /// multiplication.
    pub fn seal<R: RngCore + CryptoRng>(
        &self,
        ctx: &SealContext,
        plaintext: &[u8],
        rng: &mut R,
    ) -> Result<Vec<u8>, SealError> {
        let mut salt = [0u8; SALT_BYTES];
        rng.fill_bytes(&mut salt);
        self.seal_with_salt(ctx, plaintext, &salt)
    }

    /// [`SealChannel::seal`] with the salt given (deterministic; test vectors).
    fn seal_with_salt(
        &self,
        ctx: &SealContext,
        plaintext: &[u8],
        salt: &[u8; SALT_BYTES],
    ) -> Result<Vec<u8>, SealError> {
        let key = blob_key(&self.public, &self.node_public, &self.shared, ctx, salt);
        // E || n || plaintext, encrypted in place after the header, then the tag: one copy
        // of the plaintext, in a buffer wiped if the encryption fails (ring refuses only
        // lengths above 64 GiB).
        let mut out = WipedBytes::with_capacity(SEAL_OVERHEAD + plaintext.len());
        out.extend_from_slice(&self.public);
        out.extend_from_slice(salt);
        out.extend_from_slice(plaintext);
        let tag = blob_cipher(&key)
            .seal_in_place_separate_tag(
                nonce(),
                Aad::from(ctx.to_bytes()),
                &mut out[HEADER_BYTES..],
            )
            .map_err(|_| SealError::Authentication)?;
        out.extend_from_slice(tag.as_ref());
        // Ciphertext now: handed out without the wipe.
        Ok(out.into_unwiped())
    }
}

/// The public key `E` of the channel a blob was sealed on (its first 32 bytes), or `None` for
/// a blob too short to be sealed. Says nothing of the blob's authenticity: a node checks the
/// party's signature of `E` before it unseals, and the unsealing authenticates the rest.
pub fn channel_of(sealed: &[u8]) -> Option<[u8; 32]> {
    if sealed.len() < SEAL_OVERHEAD {
        return None;
    }
    sealed[..32].try_into().ok()
}

/// Seals one blob on a channel of its own ([`SealChannel::new`] then
/// [`SealChannel::seal`]): for a one-off message; a party sealing every iteration keeps its
/// channels. Cost: two X25519 scalar multiplications, one HKDF, AES-256-GCM.
pub fn seal<R: RngCore + CryptoRng>(
    node_public: &[u8; 32],
    ctx: &SealContext,
    plaintext: &[u8],
    rng: &mut R,
) -> Result<Vec<u8>, SealError> {
    SealChannel::new(node_public, rng)?.seal(ctx, plaintext, rng)
}

/// The blob's one-time AES-256-GCM key.
fn blob_cipher(key: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("32-byte AES-256 key"))
}

/// The constant nonce: every blob key encrypts exactly one message (module docs).
fn nonce() -> Nonce {
    Nonce::assume_unique_for_key([0u8; 12])
}

/// A blob's plaintext, opened in the buffer that held the blob (the bytes after its header),
/// wiped on drop with the whole buffer. Dereferences to the plaintext.
pub struct Opened {
    buf: WipedBytes,
    len: usize,
}

impl std::ops::Deref for Opened {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[HEADER_BYTES..HEADER_BYTES + self.len]
    }
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opened({} bytes)", self.len)
    }
}

/// Opens a blob sealed to `key` for `ctx`: [`unseal_owned`] on a copy of `sealed`.
pub fn unseal(key: &SealKey, ctx: &SealContext, sealed: &[u8]) -> Result<Opened, SealError> {
    unseal_owned(key, ctx, sealed.to_vec())
}

/// Opens a blob sealed to `key` for `ctx`, decrypting it in place in `sealed`.
///
/// Errors: [`SealError::TooShort`], [`SealError::NonContributory`], and
/// [`SealError::Authentication`] for a wrong key, a wrong context or any changed byte
/// (AES-GCM forgery probability <= 2^-100 per attempt for blobs under 2^32 blocks). Never
/// panics. The plaintext stays in the blob's own buffer, wiped on drop ([`Opened`]). Cost: one
/// HKDF and AES-256-GCM over the blob (no copy), plus one X25519 scalar multiplication until
/// a blob of its channel has opened under `key`.
pub fn unseal_owned(
    key: &SealKey,
    ctx: &SealContext,
    sealed: Vec<u8>,
) -> Result<Opened, SealError> {
    if sealed.len() < SEAL_OVERHEAD {
        return Err(SealError::TooShort { len: sealed.len() });
    }
    let channel: [u8; 32] = sealed[..32].try_into().expect("at least 32 bytes");
    let salt: [u8; SALT_BYTES] = sealed[32..HEADER_BYTES]
        .try_into()
        .expect("at least the header");
    let (aes_key, new_channel) = key.open_key(&channel, ctx, &salt)?;
    // Decrypted in place in a buffer that is zeroizing from here on, so no heap copy of the
    // plaintext is left behind (ring passes a last partial block through stack
    // temporaries); on a tag that does not verify ring zeroes the body, and the drop wipes
    // the buffer again.
    let mut buf = WipedBytes::from(sealed);
    let len = blob_cipher(&aes_key)
        .open_in_place(nonce(), Aad::from(ctx.to_bytes()), &mut buf[HEADER_BYTES..])
        .map_err(|_| SealError::Authentication)?
        .len();
    // Kept only for a channel whose blob authenticated (and the node unseals only blobs
    // whose channel's party signature verified), so forged or garbled blobs never fill the table.
    if let Some(shared) = new_channel {
        key.remember(&channel, shared);
    }
    Ok(Opened { buf, len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn ctx() -> SealContext {
        SealContext {
            session: [7; 16],
            iteration: 12,
            party: 1,
            node: 2,
        }
    }

    /// Replays protocols/vectors/net-sealing.json, generated independently (Python
    /// `cryptography`): the fixed channel secret and salt must give the recorded blob, and
    /// the blob must open to the recorded plaintext.
    #[test]
    fn vectors_replay() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../protocols/vectors/net-sealing.json"
        );
        let text = std::fs::read_to_string(path).expect("vector file");
        let json: serde_json::Value = serde_json::from_str(&text).expect("json");
        let h = |v: &serde_json::Value| -> Vec<u8> {
            let s = v.as_str().expect("hex string");
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect()
        };
        let cases = json["cases"].as_array().expect("cases");
        assert_eq!(cases.len(), 5);
        // One case is a second blob on another case's channel: the same E, another salt and
        // another blob for the same context and plaintext.
        assert!(cases
            .iter()
            .enumerate()
            .any(|(i, a)| cases[..i].iter().any(|b| {
                a["channel_public"] == b["channel_public"]
                    && a["aad"] == b["aad"]
                    && a["plaintext"] == b["plaintext"]
                    && a["salt"] != b["salt"]
                    && a["aes_key"] != b["aes_key"]
                    && a["sealed"].as_str().unwrap()[2 * HEADER_BYTES..]
                        != b["sealed"].as_str().unwrap()[2 * HEADER_BYTES..]
            })));
        // One node key per node secret, so that the second blob on a channel opens through
        // the secret its node remembered from the first.
        let mut keys: HashMap<[u8; 32], SealKey> = HashMap::new();
        for case in cases {
            let node_secret: [u8; 32] = h(&case["node_secret"]).try_into().unwrap();
            let channel_secret: [u8; 32] = h(&case["channel_secret"]).try_into().unwrap();
            let salt: [u8; SALT_BYTES] = h(&case["salt"]).try_into().unwrap();
            let key = keys
                .entry(node_secret)
                .or_insert_with(|| SealKey::from_bytes(node_secret));
            assert_eq!(key.public().to_vec(), h(&case["node_public"]));
            let c = &case["context"];
            let ctx = SealContext {
                session: h(&c["session"]).try_into().unwrap(),
                iteration: c["iteration"].as_u64().unwrap(),
                party: c["party"].as_u64().unwrap() as u16,
                node: c["node"].as_u64().unwrap() as u8,
            };
            assert_eq!(ctx.to_bytes().to_vec(), h(&case["aad"]));
            let plaintext = h(&case["plaintext"]);
            let channel = SealChannel::with_secret(&key.public(), &channel_secret).unwrap();
            assert_eq!(channel.public().to_vec(), h(&case["channel_public"]));
            assert_eq!(channel.shared.to_vec(), h(&case["shared_secret"]));
            let c = &ctx;
            let aes_key = blob_key(&channel.public(), &key.public(), &channel.shared, c, &salt);
            assert_eq!(aes_key.to_vec(), h(&case["aes_key"]));
            let sealed = channel.seal_with_salt(&ctx, &plaintext, &salt).unwrap();
            assert_eq!(sealed, h(&case["sealed"]), "{}", case["name"]);
            assert_eq!(*unseal(key, &ctx, &sealed).unwrap(), plaintext);
            assert!(key.opened.lock().unwrap().contains_key(&channel.public()));
        }
        assert_eq!(keys.len(), cases.len() - 1);
    }

    /// ring's AES-256-GCM against RustCrypto's `aes-gcm` (the sealing's cipher before
    /// 2026-11-28) over every length 0..600 and a few large ones: the same blobs, byte for
    /// byte, and each opens the other's.
    #[test]
    fn ring_and_rustcrypto_seal_alike() {
        use aes_gcm::aead::{Aead, KeyInit, Payload};
        let key = SealKey::from_bytes([5; 32]);
        let mut lengths: Vec<usize> = (0..600).collect();
        lengths.extend([4095, 4096, 4097, 65_536 + 3, 1 << 20]);
        for n in lengths {
            let pt: Vec<u8> = (0..n).map(|i| (i * 31 + n) as u8).collect();
            let channel =
                SealChannel::with_secret(&key.public(), &[(n % 251) as u8 + 1; 32]).unwrap();
            let salt = [(n % 13) as u8; SALT_BYTES];
            let sealed = channel.seal_with_salt(&ctx(), &pt, &salt).unwrap();
            let k = blob_key(
                &channel.public(),
                &key.public(),
                &channel.shared,
                &ctx(),
                &salt,
            );
            let other = aes_gcm::Aes256Gcm::new_from_slice(k.as_ref()).unwrap();
            let aad = ctx().to_bytes();
            let body = other
                .encrypt(
                    &[0u8; 12].into(),
                    Payload {
                        msg: &pt,
                        aad: &aad,
                    },
                )
                .unwrap();
            assert_eq!(&sealed[HEADER_BYTES..], &body[..], "length {n}");
            let opened = other
                .decrypt(
                    &[0u8; 12].into(),
                    Payload {
                        msg: &sealed[HEADER_BYTES..],
                        aad: &aad,
                    },
                )
                .unwrap();
            assert_eq!(opened, pt);
            assert_eq!(*unseal(&key, &ctx(), &sealed).unwrap(), pt);
        }
    }

    #[test]
    fn round_trip_and_size() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let key = SealKey::generate(&mut rng);
        for n in [0usize, 1, 15, 16, 17, 1000] {
            let pt: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            let sealed = seal(&key.public(), &ctx(), &pt, &mut rng).unwrap();
            assert_eq!(sealed.len(), n + SEAL_OVERHEAD);
            assert_eq!(*unseal(&key, &ctx(), &sealed).unwrap(), pt);
        }
    }

    /// The owned form opens in the blob's own buffer, spare capacity or not, and refuses a
    /// truncated blob, a changed tag byte and a changed header byte as `unseal` does.
    #[test]
    fn unseal_owned_opens_in_place_and_refuses_what_unseal_refuses() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let key = SealKey::generate(&mut rng);
        let pt = b"shares of party 0".to_vec();
        let sealed = seal(&key.public(), &ctx(), &pt, &mut rng).unwrap();
        let mut roomy = Vec::with_capacity(sealed.len() + 4096);
        roomy.extend_from_slice(&sealed);
        let opened = unseal_owned(&key, &ctx(), roomy).unwrap();
        assert_eq!(&*opened, &pt[..]);
        assert_eq!(format!("{opened:?}"), format!("Opened({} bytes)", pt.len()));
        let short = sealed[..sealed.len() - 1].to_vec();
        assert_eq!(
            unseal_owned(&key, &ctx(), short).unwrap_err(),
            SealError::Authentication
        );
        for at in [sealed.len() - 1, 0, HEADER_BYTES - 1] {
            let mut t = sealed.clone();
            t[at] ^= 1;
            assert!(unseal_owned(&key, &ctx(), t).is_err(), "byte {at}");
        }
        assert_eq!(
            unseal_owned(&key, &ctx(), sealed[..SEAL_OVERHEAD - 1].to_vec()).unwrap_err(),
            SealError::TooShort {
                len: SEAL_OVERHEAD - 1
            }
        );
    }

    #[test]
    fn wrong_key_context_or_any_byte_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let key = SealKey::generate(&mut rng);
        let other = SealKey::generate(&mut rng);
        let sealed = seal(&key.public(), &ctx(), b"shares of party 1", &mut rng).unwrap();
        assert_eq!(
            unseal(&other, &ctx(), &sealed).unwrap_err(),
            SealError::Authentication
        );
        let variants = [
            SealContext {
                session: [8; 16],
                ..ctx()
            },
            SealContext {
                iteration: 13,
                ..ctx()
            },
            SealContext { party: 0, ..ctx() },
            SealContext { node: 1, ..ctx() },
        ];
        for wrong in variants {
            assert_eq!(
                unseal(&key, &wrong, &sealed).unwrap_err(),
                SealError::Authentication,
                "{wrong:?}"
            );
        }
        for i in 0..sealed.len() {
            for bit in [0x01u8, 0x80] {
                let mut t = sealed.clone();
                t[i] ^= bit;
                assert!(unseal(&key, &ctx(), &t).is_err(), "byte {i} bit {bit:#x}");
            }
        }
        assert_eq!(
            unseal(&key, &ctx(), &sealed[..sealed.len() - 1]).unwrap_err(),
            SealError::Authentication
        );
        let short = SEAL_OVERHEAD - 1;
        assert_eq!(
            unseal(&key, &ctx(), &sealed[..short]).unwrap_err(),
            SealError::TooShort { len: short }
        );
    }

    /// One channel seals many blobs: each with its own salt (so the same plaintext and
    /// context give different blobs, under different keys), each opening at the node, which
    /// computes the channel's shared secret once and keeps it per channel.
    #[test]
    fn a_channel_seals_many_blobs_and_the_node_keeps_its_secret() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let key = SealKey::generate(&mut rng);
        let a = SealChannel::new(&key.public(), &mut rng).unwrap();
        let b = SealChannel::new(&key.public(), &mut rng).unwrap();
        assert_ne!(a.public(), b.public());
        let mut blobs = Vec::new();
        for (i, channel) in [&a, &a, &a, &b, &b].into_iter().enumerate() {
            let c = SealContext {
                iteration: i as u64 / 2,
                ..ctx()
            };
            let blob = channel.seal(&c, b"the same shares", &mut rng).unwrap();
            assert_eq!(blob[..32], channel.public());
            blobs.push((c, blob));
        }
        // Blobs 0 and 1 (a retried attempt looks like this): one channel, one context, one
        // plaintext, different salts, so different keys and different ciphertexts.
        assert_eq!(blobs[0].0, blobs[1].0);
        let salt = |b: &[u8]| -> [u8; SALT_BYTES] { b[32..HEADER_BYTES].try_into().unwrap() };
        let (s0, s1) = (salt(&blobs[0].1), salt(&blobs[1].1));
        assert_ne!(s0, s1);
        let k = |s: &[u8; SALT_BYTES]| blob_key(&a.public(), &key.public(), &a.shared, &ctx(), s);
        assert_ne!(*k(&s0), *k(&s1));
        assert_ne!(blobs[0].1[HEADER_BYTES..], blobs[1].1[HEADER_BYTES..]);
        for (c, blob) in &blobs {
            assert_eq!(&*unseal(&key, c, blob).unwrap(), b"the same shares");
        }
        let opened = key.opened.lock().unwrap();
        assert_eq!(opened.len(), 2);
        assert_eq!(***opened.get(&a.public()).unwrap(), **a.shared);
        assert_eq!(***opened.get(&b.public()).unwrap(), **b.shared);
        drop(opened);
        // Another node's key does not open them, and keeps nothing of a channel whose blob
        // did not authenticate.
        let other = SealKey::generate(&mut rng);
        assert_eq!(
            unseal(&other, &blobs[0].0, &blobs[0].1).unwrap_err(),
            SealError::Authentication
        );
        assert!(other.opened.lock().unwrap().is_empty());
        let mut forged = blobs[3].1.clone();
        *forged.last_mut().unwrap() ^= 1;
        let fresh = SealKey::from_bytes(*key.to_bytes());
        assert_eq!(
            unseal(&fresh, &blobs[3].0, &forged).unwrap_err(),
            SealError::Authentication
        );
        assert!(fresh.opened.lock().unwrap().is_empty());
        // A full table is emptied; its channels open again (one multiplication each).
        for i in 0..OPENED_CAPACITY {
            let mut secret = [1u8; 32];
            secret[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let channel = SealChannel::with_secret(&key.public(), &secret).unwrap();
            let blob = channel.seal(&ctx(), b"x", &mut rng).unwrap();
            unseal(&key, &ctx(), &blob).unwrap();
        }
        assert!(key.opened.lock().unwrap().len() < OPENED_CAPACITY);
        for (c, blob) in &blobs {
            assert_eq!(&*unseal(&key, c, blob).unwrap(), b"the same shares");
        }
    }

    #[test]
    fn low_order_points_refused() {
        let key = SealKey::from_bytes([9; 32]);
        // The all-zero point has order 1: X25519 with it is 0 whatever the scalar.
        let mut blob = vec![0u8; SEAL_OVERHEAD + 4];
        assert_eq!(
            unseal(&key, &ctx(), &blob).unwrap_err(),
            SealError::NonContributory
        );
        blob[0] = 1; // the point u = 1 has order 4
        assert_eq!(
            unseal(&key, &ctx(), &blob).unwrap_err(),
            SealError::NonContributory
        );
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        assert_eq!(
            seal(&[0u8; 32], &ctx(), b"x", &mut rng),
            Err(SealError::NonContributory)
        );
        assert!(matches!(
            SealChannel::new(&[0u8; 32], &mut rng),
            Err(SealError::NonContributory)
        ));
        // A refused channel is not remembered.
        assert!(key.opened.lock().unwrap().is_empty());
    }

    #[test]
    fn key_file_round_trip_mode_and_errors() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node-0.seal");
        let key = SealKey::generate(&mut ChaCha20Rng::seed_from_u64(4));
        key.write_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(SealKey::read_file(&path).unwrap().public(), key.public());
        std::fs::write(&path, "abc\n").unwrap();
        let err = SealKey::read_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("node-0.seal") && err.contains("64 hex"),
            "{err}"
        );
        let missing = dir.path().join("missing.seal");
        let err = SealKey::read_file(&missing).unwrap_err().to_string();
        assert!(err.contains("missing.seal"), "{err}");
        assert!(!format!("{key:?}").contains(&hex(key.to_bytes().as_ref())));
    }
}
