//! Checkpoints: everything a resumed run needs to continue bit for bit, written atomically.
//!
//! Contents: the run's public settings (to refuse resuming a different run), the DPVI
//! state (mu, log_sigma, both Adam states, the iterate average, the public generator's exact
//! position, the **secret batch key** and the number of openings charged), the privacy ledger, the
//! training history, and the noise generators' states only when they
//! were seeded from a number (OS-seeded secret generators are never written: a resumed
//! production run draws fresh noise, see [`crate::backend::NoiseRngs`]).
//!
//! Encoding: `MAGIC (8 bytes, with the format version) || postcard(Checkpoint) ||
//! SHA-256(MAGIC || body)`. postcard stores f64 values exactly (JSON would not guarantee it);
//! the digest makes a damaged file (a flipped bit, a truncated copy, trailing bytes) fail to
//! load with a clear error instead of resuming from silently wrong parameters. The file is
//! private to whoever runs the trainer (it holds the batch key): never publish it. Writes are
//! atomic and private (mode 0600: it holds the batch key; [`vtwin_host::atomic::write`]), so a crash never leaves a half-written checkpoint. Cost: one
//! SHA-256 pass over the file per save and per load.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::dpvi::{DpviConfig, DpviState};
use crate::layout::Layout;
use crate::rng_state::RngState;

/// File magic; the last byte is the format version (2: with the trailing digest; 3: with
/// the batch key and the opening count; 4: with the iterate average; 5: with Adam's step-size
/// schedule; 6: with the responsibilities' tempering schedule; 7: with the layout's target).
pub const MAGIC: &[u8; 8] = b"VTWINCK\x07";

/// Bytes of the trailing SHA-256 digest.
const DIGEST_BYTES: usize = 32;

fn digest(magic_and_body: &[u8]) -> [u8; DIGEST_BYTES] {
    Sha256::digest(magic_and_body).into()
}

/// The public identity of a run: a checkpoint resumes only a run with equal settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Backend name.
    pub backend: String,
    /// Renormalisation mode (fixed backend), as on the command line.
    pub renormalise: String,
    /// The layout (schema-derived, with K).
    pub layout: Layout,
    /// Loop settings (rate, clip, sigma, Adam, seed).
    pub config: DpviConfig,
    /// Number of training records N.
    pub train_rows: usize,
    /// Target iterations when the checkpoint was written.
    pub iters: u64,
    /// delta of the privacy report.
    pub delta: f64,
    /// The insecure test seeds in use, by kind (`"mpc"`, `"noise"`; empty in production).
    /// Any one of them voids the privacy guarantee (privacy.json says so); a resume must use
    /// the same kinds.
    pub insecure_seeds: Vec<String>,
}

/// One line of `train.csv`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRow {
    /// Completed iterations.
    pub iteration: u64,
    /// Epsilon spent so far (outside analyst, add/remove, RDP).
    pub epsilon: f64,
    /// Mean test NLL per record at the released model's mu (the iterate average when the run
    /// averages, else the last iterate), when a test set is given.
    pub test_nll: Option<f64>,
}

/// A checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Settings of the run.
    pub settings: RunSettings,
    /// DPVI state after `state.iteration` iterations, with the privacy ledger.
    pub state: DpviState,
    /// Seeded noise generators' states (None for OS-seeded generators).
    pub noise: Option<Vec<RngState>>,
    /// History so far.
    pub history: Vec<HistoryRow>,
}

/// Checkpoint I/O errors, naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Reading or writing failed.
    #[error("checkpoint {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The checkpoint could not be encoded (nothing was written).
    #[error("{}: cannot encode the checkpoint", path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: postcard::Error,
    },
    /// Not a checkpoint, or a corrupt one.
    #[error("{}: not a vtwin checkpoint or corrupt", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        problem: Corruption,
    },
}

/// What is wrong with a checkpoint file's bytes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// Shorter than the header.
    #[error("shorter than the header")]
    Short,
    /// The header is not a vtwin checkpoint's.
    #[error("bad header")]
    Header,
    /// Another format version.
    #[error("format version {found}, this vtwin reads version {reads}")]
    Version {
        /// The file's version.
        found: u8,
        /// The version this build reads.
        reads: u8,
    },
    /// Too short to hold the digest.
    #[error("truncated: no digest")]
    NoDigest,
    /// The digest does not match the content.
    #[error("digest mismatch: the file is damaged or truncated")]
    Digest,
    /// The content does not decode.
    #[error("content does not decode")]
    Decode(#[source] postcard::Error),
    /// Bytes after the content.
    #[error("{0} trailing bytes")]
    Trailing(usize),
}

impl Checkpoint {
    /// Saves atomically.
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        let body = postcard::to_allocvec(self).map_err(|source| CheckpointError::Encode {
            path: path.into(),
            source,
        })?;
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&body);
        let d = digest(&bytes);
        bytes.extend_from_slice(&d);
        vtwin_host::atomic::write(path, &bytes, vtwin_host::atomic::Mode::Secret).map_err(
            |source| CheckpointError::Io {
                path: path.into(),
                source,
            },
        )
    }

    /// Loads, checking the header, the format version and the digest (module docs).
    pub fn load(path: &Path) -> Result<Checkpoint, CheckpointError> {
        let bytes = std::fs::read(path).map_err(|source| CheckpointError::Io {
            path: path.into(),
            source,
        })?;
        Checkpoint::decode(&bytes).map_err(|problem| CheckpointError::Corrupt {
            path: path.into(),
            problem,
        })
    }

    /// Decodes a checkpoint file's bytes; the error says what is wrong. Never panics.
    fn decode(bytes: &[u8]) -> Result<Checkpoint, Corruption> {
        let magic = bytes.get(..MAGIC.len()).ok_or(Corruption::Short)?;
        if magic[..MAGIC.len() - 1] != MAGIC[..MAGIC.len() - 1] {
            return Err(Corruption::Header);
        }
        let version = magic[MAGIC.len() - 1];
        if version != MAGIC[MAGIC.len() - 1] {
            return Err(Corruption::Version {
                found: version,
                reads: MAGIC[MAGIC.len() - 1],
            });
        }
        let split = bytes
            .len()
            .checked_sub(DIGEST_BYTES)
            .filter(|&n| n >= MAGIC.len())
            .ok_or(Corruption::NoDigest)?;
        let (content, stored) = bytes.split_at(split);
        if digest(content) != stored {
            return Err(Corruption::Digest);
        }
        let (ck, rest) =
            postcard::take_from_bytes(&content[MAGIC.len()..]).map_err(Corruption::Decode)?;
        if !rest.is_empty() {
            return Err(Corruption::Trailing(rest.len()));
        }
        Ok(ck)
    }
}
