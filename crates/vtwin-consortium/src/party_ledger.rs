//! A party's own durable ledger of its uploads ([`PartyLedger`]), and the analyst's epsilon
//! over them.
//!
//! Every upload may be opened (the coordinator cannot prove it was not), so each one is
//! recorded, retries of an iteration included, before the upload leaves the party: the
//! record is appended to the ledger file and synced (`fsync`), and only then is the upload
//! sent. A crash after the sync and before the send over-counts by one; the reverse cannot
//! happen. The file survives restarts; the party stops at its budget across them.
//!
//! File format (text, one record per line, appended):
//! `v1 ITERATION BATCH_SHA256_HEX SIGMA CLIP SAMPLE_RATE\n`, the floats in Rust's shortest
//! round-trip notation. A last line without its newline is a write torn by a crash before
//! the sync, so before the upload: it is dropped (and truncated away) on open. Any other
//! malformed line is an error naming the file and the line.
//!
//! Epsilon (the outside analyst's view, add/remove neighbours, RDP accountant of vtwin-dp,
//! the one that calibrates sigma): uploads on the same batch (same SHA-256 of the batch
//! indices) are openings of one Poisson subsample with independent noise, which together
//! are one Gaussian mechanism with 1/sigma_eff^2 = sum 1/sigma_i^2 on that subsample (at the
//! largest rate recorded for it); distinct batches compose additively in RDP. With one
//! upload per batch this is exactly `vtwin_dp::epsilon` of (sigma, q, uploads). Cost: the
//! ledger keeps how many batches have each (rate, sigma_eff) and each one's per-step RDP
//! curve, computed once (about a millisecond each), so a check is O(distinct (rate,
//! sigma_eff) x orders), independent of the number of uploads; before 2026-11-29 each check
//! copied every batch's group and recomputed the curves (about 0.5 ms per check on Adult,
//! growing with the uploads).

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use vtwin_dp::rdp::{default_orders, rdp_poisson_gaussian, rdp_to_epsilon};
use vtwin_dp::AccountingError;

/// One upload: what the party released and on which batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UploadRecord {
    /// The iteration t of the request.
    pub iteration: u64,
    /// SHA-256 of the batch indices ([`batch_digest`]).
    pub batch: [u8; 32],
    /// The noise multiplier of the upload (> 0).
    pub sigma: f64,
    /// The nominal clip C of the upload.
    pub clip: f64,
    /// The announced Poisson sampling rate q.
    pub sample_rate: f64,
}

/// SHA-256 of a batch's indices (u32 little endian, in order). Cost: O(B).
pub fn batch_digest(batch: &[u32]) -> [u8; 32] {
    let mut h = Sha256::new();
    for i in batch {
        h.update(i.to_le_bytes());
    }
    h.finalize().into()
}

/// The ledger file could not be read, parsed or appended to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerFileError {
    /// Reading, creating or syncing failed.
    #[error("party ledger {file}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a record.
    #[error("party ledger {file}:{line}: not a v1 record")]
    Parse {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
    },
}

#[derive(Clone, Copy, Debug)]
struct Group {
    /// sum of 1 / sigma_i^2 over the group's uploads.
    precision: f64,
    /// Largest sampling rate recorded for the batch.
    rate: f64,
}

/// A group's (rate, sigma_eff), as the bits of the two floats: the key under which identical
/// groups compose as a multiple of one step's RDP.
type StepKey = (u64, u64);

impl Group {
    const EMPTY: Group = Group {
        precision: 0.0,
        rate: 0.0,
    };

    /// The group with one more upload `r` on its batch.
    fn with(self, r: &UploadRecord) -> Group {
        Group {
            precision: self.precision + 1.0 / (r.sigma * r.sigma),
            rate: self.rate.max(r.sample_rate),
        }
    }

    fn key(&self) -> StepKey {
        let sigma = 1.0 / self.precision.sqrt();
        (self.rate.to_bits(), sigma.to_bits())
    }
}

/// One step's RDP at every order of `default_orders` for the key's (rate, sigma_eff).
fn step_rdp(&(q, s): &StepKey) -> Vec<f64> {
    let (q, s) = (f64::from_bits(q), f64::from_bits(s));
    default_orders()
        .iter()
        .map(|&a| rdp_poisson_gaussian(q, s, a))
        .collect()
}

/// A party's uploads so far (module docs), in memory and, unless [`PartyLedger::in_memory`],
/// in its file.
#[derive(Debug)]
pub struct PartyLedger {
    file: Option<(PathBuf, File)>,
    uploads: u64,
    groups: HashMap<[u8; 32], Group>,
    /// How many groups have each key (keys with no group are removed).
    counts: BTreeMap<StepKey, u64>,
    /// [`step_rdp`] of every valid key that ever had a group (at most one per record; about
    /// 1 KB each).
    curves: HashMap<StepKey, Vec<f64>>,
}

impl PartyLedger {
    /// A ledger that is never written (tests and the in-process demo, whose parties live
    /// only as long as one job).
    pub fn in_memory() -> PartyLedger {
        PartyLedger {
            file: None,
            uploads: 0,
            groups: HashMap::new(),
            counts: BTreeMap::new(),
            curves: HashMap::new(),
        }
    }

    /// Opens (or creates, mode 0600, with its directory entry synced) the ledger at `path`
    /// and reads every record. Cost: one pass over the file.
    pub fn open(path: &Path) -> Result<PartyLedger, LedgerFileError> {
        let name = path.display().to_string();
        let io = |source| LedgerFileError::Io {
            file: name.clone(),
            source,
        };
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        if !existed {
            // The file's existence must be as durable as its first record.
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io)?;
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        if complete < text.len() {
            tracing::warn!(file = %name, "dropping a torn last record (written before a crash, never uploaded)");
            file.set_len(complete as u64).map_err(io)?;
            file.sync_all().map_err(io)?;
            file.seek(SeekFrom::End(0)).map_err(io)?;
        }
        let mut ledger = PartyLedger::in_memory();
        for (i, line) in text[..complete].lines().enumerate() {
            let record = parse_line(line).ok_or_else(|| LedgerFileError::Parse {
                file: name.clone(),
                line: i + 1,
            })?;
            ledger.add(&record);
        }
        ledger.file = Some((path.to_owned(), file));
        Ok(ledger)
    }

    /// Uploads recorded so far.
    pub fn uploads(&self) -> u64 {
        self.uploads
    }

    fn add(&mut self, r: &UploadRecord) {
        self.uploads += 1;
        let g = recount(&mut self.counts, self.groups.get(&r.batch).copied(), r);
        self.groups.insert(r.batch, g);
        let key = g.key();
        // Only for a key the accountant takes (`epsilon` refuses the others before any
        // curve is used).
        if check_key(&key).is_ok() {
            self.curves.entry(key).or_insert_with(|| step_rdp(&key));
        }
    }

    /// The analyst's epsilon at `delta` over every recorded upload plus `extra` (module
    /// docs). Errors: a record with sigma 0 (never accepted by a policy), a rate outside
    /// [0, 1], or delta outside (0, 1).
    pub fn epsilon(
        &self,
        extra: Option<&UploadRecord>,
        delta: f64,
    ) -> Result<f64, AccountingError> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(AccountingError::Delta(delta));
        }
        let mut counts = self.counts.clone();
        if let Some(r) = extra {
            recount(&mut counts, self.groups.get(&r.batch).copied(), r);
        }
        // Every group's key (one per group), checked before any curve is used.
        counts.keys().try_for_each(check_key)?;
        if counts.is_empty() {
            return Ok(0.0);
        }
        // Each key's curve: kept, or (only for an extra upload that makes a new key) computed.
        let curves: Vec<(std::borrow::Cow<'_, [f64]>, u64)> = counts
            .iter()
            .map(|(key, &n)| {
                let curve = match self.curves.get(key) {
                    Some(c) => std::borrow::Cow::Borrowed(c.as_slice()),
                    None => std::borrow::Cow::Owned(step_rdp(key)),
                };
                (curve, n)
            })
            .collect();
        // Identical (rate, sigma_eff) compose as a multiple of one step's RDP; summed in key
        // order, as the groups' counts always were.
        let orders = default_orders();
        let rdp: Vec<f64> = (0..orders.len())
            .map(|i| curves.iter().map(|(c, n)| c[i] * *n as f64).sum())
            .collect();
        Ok(rdp_to_epsilon(&orders, &rdp, delta).0)
    }

    /// Records `r`: appends it to the file and syncs it (the caller uploads only after this
    /// returns `Ok`), then counts it. Cost: one small write and one `fdatasync`.
    pub fn record(&mut self, r: &UploadRecord) -> Result<(), LedgerFileError> {
        if let Some((path, file)) = self.file.as_mut() {
            let line = format!(
                "v1 {} {} {} {} {}\n",
                r.iteration,
                vtwin_net::seal::hex(&r.batch),
                r.sigma,
                r.clip,
                r.sample_rate
            );
            file.write_all(line.as_bytes())
                .and_then(|()| file.sync_data())
                .map_err(|source| LedgerFileError::Io {
                    file: path.display().to_string(),
                    source,
                })?;
        }
        self.add(r);
        Ok(())
    }
}

/// Whether the accountant takes a group's (rate, sigma_eff): sigma positive and finite, the
/// rate in [0, 1].
fn check_key(&(q, s): &StepKey) -> Result<(), AccountingError> {
    let (rate, sigma) = (f64::from_bits(q), f64::from_bits(s));
    if !(sigma > 0.0 && sigma.is_finite()) {
        return Err(AccountingError::NoiseMultiplier(sigma));
    }
    if !(0.0..=1.0).contains(&rate) {
        return Err(AccountingError::SampleRate(rate));
    }
    Ok(())
}

/// Moves a batch's group in `counts` from its key before upload `r` (`old`, none for a new
/// batch) to its key with `r`; returns the group with `r`.
fn recount(counts: &mut BTreeMap<StepKey, u64>, old: Option<Group>, r: &UploadRecord) -> Group {
    // Only the old key can reach zero: it alone is removed then.
    if let Some(key) = old.map(|g| g.key()) {
        if let Some(n) = counts.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&key);
            }
        }
    }
    let g = old.unwrap_or(Group::EMPTY).with(r);
    *counts.entry(g.key()).or_default() += 1;
    g
}

fn parse_line(line: &str) -> Option<UploadRecord> {
    let mut f = line.split(' ');
    if f.next()? != "v1" {
        return None;
    }
    let iteration = f.next()?.parse().ok()?;
    let batch = *vtwin_net::seal::parse_hex32(f.next()?)?;
    let mut float = || f.next()?.parse::<f64>().ok();
    let (sigma, clip, sample_rate) = (float()?, float()?, float()?);
    // A rate outside (0, 1] (NaN included) is no record a party makes; as a group's rate
    // NaN would count as 0 (`max`), a free upload.
    if f.next().is_some()
        || !(sigma > 0.0 && sigma.is_finite())
        || !(sample_rate > 0.0 && sample_rate <= 1.0)
    {
        return None;
    }
    Some(UploadRecord {
        iteration,
        batch,
        sigma,
        clip,
        sample_rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vtwin_dp::{epsilon, Accountant, Composition, Neighbouring};

    fn upload(t: u64, batch: &[u32]) -> UploadRecord {
        UploadRecord {
            iteration: t,
            batch: batch_digest(batch),
            sigma: 1.2,
            clip: 1.0,
            sample_rate: 0.01,
        }
    }

    /// The epsilon of `records` plus `extra` as the ledger computed it before it kept its
    /// counts and curves: every group rebuilt, every curve recomputed.
    fn recomputed(records: &[UploadRecord], extra: Option<&UploadRecord>, delta: f64) -> f64 {
        let mut groups: HashMap<[u8; 32], Group> = HashMap::new();
        for r in records.iter().chain(extra) {
            let g = groups.entry(r.batch).or_insert(Group::EMPTY);
            g.precision += 1.0 / (r.sigma * r.sigma);
            g.rate = g.rate.max(r.sample_rate);
        }
        let mut counts: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for g in groups.values() {
            let sigma = 1.0 / g.precision.sqrt();
            *counts
                .entry((g.rate.to_bits(), sigma.to_bits()))
                .or_default() += 1;
        }
        let orders = default_orders();
        let rdp: Vec<f64> = orders
            .iter()
            .map(|&a| {
                counts
                    .iter()
                    .map(|(&(q, s), &n)| {
                        rdp_poisson_gaussian(f64::from_bits(q), f64::from_bits(s), a) * n as f64
                    })
                    .sum()
            })
            .collect();
        rdp_to_epsilon(&orders, &rdp, delta).0
    }

    /// The kept counts and curves give the recomputed epsilon bit for bit, after every
    /// record of random ledgers (batches repeated, so groups change key; several sigmas and
    /// rates), with no extra upload, one on a batch already recorded and one on a new batch.
    #[test]
    fn kept_counts_and_curves_give_the_recomputed_epsilon_exactly() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(18);
        for _ in 0..6 {
            let mut l = PartyLedger::in_memory();
            let mut records = Vec::new();
            for t in 0..40u64 {
                let r = UploadRecord {
                    iteration: t,
                    batch: batch_digest(&[rng.random_range(0..12u32)]),
                    sigma: [0.9, 1.2, 1.52566][rng.random_range(0..3usize)],
                    clip: 1.0,
                    sample_rate: [0.01, 0.0033][rng.random_range(0..2usize)],
                };
                l.record(&r).unwrap();
                records.push(r);
                let again = UploadRecord {
                    iteration: t + 1,
                    ..records[rng.random_range(0..records.len())]
                };
                let fresh = UploadRecord {
                    batch: batch_digest(&[1000 + t as u32]),
                    ..r
                };
                for extra in [None, Some(&again), Some(&fresh)] {
                    let got = l.epsilon(extra, 1e-5).unwrap();
                    let want = recomputed(&records, extra, 1e-5);
                    assert_eq!(got.to_bits(), want.to_bits(), "t {t}: {got} against {want}");
                }
            }
            assert!(l.counts.values().sum::<u64>() == l.groups.len() as u64);
        }
    }

    /// An upload the accountant cannot take (an infinite sigma, which adds no precision, or a
    /// rate above 1) makes epsilon an error, recorded or as the extra upload, on a new batch
    /// or on one already recorded; never a figure (sigma infinite alone would count as free).
    #[test]
    fn an_upload_the_accountant_cannot_take_is_an_error() {
        let bad_sigma = UploadRecord {
            sigma: f64::INFINITY,
            ..upload(0, &[1])
        };
        let bad_rate = UploadRecord {
            sample_rate: 1.5,
            ..upload(0, &[2])
        };
        let l = PartyLedger::in_memory();
        assert!(matches!(
            l.epsilon(Some(&bad_sigma), 1e-5),
            Err(AccountingError::NoiseMultiplier(_))
        ));
        assert!(matches!(
            l.epsilon(Some(&bad_rate), 1e-5),
            Err(AccountingError::SampleRate(_))
        ));
        let mut l = PartyLedger::in_memory();
        l.record(&bad_sigma).unwrap();
        assert!(l.epsilon(None, 1e-5).is_err());
        assert!(l.epsilon(Some(&upload(1, &[3])), 1e-5).is_err());
        let mut l = PartyLedger::in_memory();
        l.record(&upload(0, &[2])).unwrap();
        assert!(l.epsilon(None, 1e-5).unwrap() > 0.0);
        // The extra upload on the batch already recorded, at a rate above 1.
        assert!(matches!(
            l.epsilon(Some(&bad_rate), 1e-5),
            Err(AccountingError::SampleRate(_))
        ));
    }

    /// A ledger line with a rate outside (0, 1] is refused when the file is read.
    #[test]
    fn a_line_with_a_rate_outside_the_unit_interval_is_refused() {
        let batch = "00".repeat(32);
        assert!(parse_line(&format!("v1 0 {batch} 1.2 1 0.01")).is_some());
        for rate in ["NaN", "0", "-0.5", "1.5", "inf"] {
            assert!(
                parse_line(&format!("v1 0 {batch} 1.2 1 {rate}")).is_none(),
                "{rate}"
            );
        }
    }

    #[test]
    fn distinct_batches_match_the_accountant() {
        let mut l = PartyLedger::in_memory();
        for t in 0..50 {
            l.record(&upload(t, &[t as u32])).unwrap();
        }
        let want = epsilon(
            Accountant::Rdp,
            &Composition {
                noise_multiplier: 1.2,
                sample_rate: 0.01,
                steps: 50,
            },
            1e-5,
            Neighbouring::AddRemove,
        )
        .unwrap();
        let got = l.epsilon(None, 1e-5).unwrap();
        assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    }

    #[test]
    fn a_retry_on_the_same_batch_costs_more_than_nothing() {
        let mut l = PartyLedger::in_memory();
        l.record(&upload(0, &[1, 2])).unwrap();
        let once = l.epsilon(None, 1e-5).unwrap();
        let twice = l.epsilon(Some(&upload(0, &[1, 2])), 1e-5).unwrap();
        assert!(twice > once, "{twice} <= {once}");
    }

    #[test]
    fn the_file_survives_a_reopen_and_a_torn_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("party.ledger");
        let mut l = PartyLedger::open(&path).unwrap();
        l.record(&upload(0, &[1])).unwrap();
        l.record(&upload(1, &[2])).unwrap();
        let eps = l.epsilon(None, 1e-5).unwrap();
        drop(l);
        // A crash in the middle of the third record's write.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"v1 2 00").unwrap();
        drop(f);
        let mut l = PartyLedger::open(&path).unwrap();
        assert_eq!(l.uploads(), 2);
        assert_eq!(l.epsilon(None, 1e-5).unwrap(), eps);
        l.record(&upload(2, &[3])).unwrap();
        drop(l);
        assert_eq!(PartyLedger::open(&path).unwrap().uploads(), 3);
        std::fs::write(&path, "v1 0 zz 1 1 0.1\n").unwrap();
        assert!(matches!(
            PartyLedger::open(&path),
            Err(LedgerFileError::Parse { line: 1, .. })
        ));
    }
}
