//! The write-ahead opening log: every opening of G + Z is recorded durably before it is
//! used, so a crash between an opening and the next checkpoint cannot lose its charge.
//!
//! The trainer's checkpoint carries the privacy ledger only up to the checkpoint; the
//! iterations after it are re-run by `--resume`, and their openings have already been seen
//! (by the coordinator, which combined them, and through theta by the parties). So the
//! driver (`vtwin coordinator`, `vtwin train`) appends one record per opening to this log and
//! syncs it to disk *before* the opening shares are combined (or, in one process, before the
//! gradient is used); a resume charges every opening of the log ([`crate::trainer::Trainer::
//! charge_recorded`]) and continues with fresh opening numbers, so each replayed iteration
//! gets a fresh batch and is charged again.
//!
//! Format (text, append-only): the line `vtwin opening log v1`, then one line
//! `<opening> <iteration> <truncation failure>` per opening (decimal integers, then the
//! opening's truncation-failure bound as a shortest round-trip float), opening numbers
//! strictly increasing. An
//! unterminated last line is an append cut by a crash: it was never synced, so its opening
//! was never used; [`OpeningLog::open`] drops it. The log holds no secret (opening and
//! iteration numbers only).
//!
//! Cost: one `write` and one `fdatasync` per opening (storage-dependent; measured in
//! docs/component-costs.md), one read of the file at resume.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use vtwin_host::atomic::{self, Mode};

/// The first line of every log (with the format version).
pub const HEADER: &str = "vtwin opening log v1";

/// One opening.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpeningRecord {
    /// The opening number o (0, 1, 2, ... over the whole job, replays included).
    pub opening: u64,
    /// The iteration t it belonged to.
    pub iteration: u64,
    /// The bound on the probability that a probabilistic truncation of this opening wrapped
    /// (`protocols/truncation-failure.md`; 0 for exact arithmetic), charged to delta.
    pub truncation_failure: f64,
}

/// The log could not be written or read, naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpeningLogError {
    /// Reading, writing or syncing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not an opening log, or a damaged one.
    #[error("{}: line {line}: {problem}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0: the record being appended).
        line: usize,
        /// Why.
        problem: LogProblem,
    },
}

/// What is wrong with an opening log's line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogProblem {
    /// Bytes that are not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// The first line is not the header.
    #[error("expected the header `{HEADER}`")]
    Header,
    /// A line without exactly three fields.
    #[error("expected `<opening> <iteration> <truncation failure>`, got `{0}`")]
    Fields(String),
    /// An opening or iteration number that does not parse.
    #[error("{what} `{text}`")]
    Number {
        /// "opening" or "iteration".
        what: &'static str,
        /// The field.
        text: String,
        /// The parser's error.
        #[source]
        source: std::num::ParseIntError,
    },
    /// A truncation failure that is not a finite non-negative number.
    #[error("truncation failure `{0}`")]
    TruncationFailure(String),
    /// Openings not strictly increasing.
    #[error("opening {opening} after opening {after}")]
    NotIncreasing {
        /// The opening.
        opening: u64,
        /// The one before it.
        after: u64,
    },
}

/// An open log, appending (module docs).
#[derive(Debug)]
pub struct OpeningLog {
    path: PathBuf,
    file: File,
    last: Option<u64>,
}

/// Syncs the directory holding `path`, so that a created or renamed entry survives a crash
/// (POSIX; elsewhere the rename's own durability is relied on).
fn sync_dir(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

impl OpeningLog {
    /// A new, empty log at `path` (replacing any file there: a fresh run), synced with its
    /// directory entry. Cost: two syncs.
    pub fn create(path: &Path) -> Result<OpeningLog, OpeningLogError> {
        let io = |source| OpeningLogError::Io {
            path: path.into(),
            source,
        };
        atomic::write(path, format!("{HEADER}\n").as_bytes(), Mode::Public).map_err(io)?;
        sync_dir(path).map_err(io)?;
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        Ok(OpeningLog {
            path: path.into(),
            file,
            last: None,
        })
    }

    /// Opens an existing log for appending and returns its records. A torn last line (no
    /// newline) is cut off the file first (module docs). Errors name the line: a bad header,
    /// a malformed record, opening numbers not strictly increasing.
    pub fn open(path: &Path) -> Result<(OpeningLog, Vec<OpeningRecord>), OpeningLogError> {
        let io = |source| OpeningLogError::Io {
            path: path.into(),
            source,
        };
        let bytes = std::fs::read(path).map_err(io)?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let text =
            std::str::from_utf8(&bytes[..complete]).map_err(|e| OpeningLogError::Corrupt {
                path: path.into(),
                line: 1 + bytes[..e.valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count(),
                problem: LogProblem::NotUtf8,
            })?;
        let corrupt = |line: usize, problem: LogProblem| OpeningLogError::Corrupt {
            path: path.into(),
            line,
            problem,
        };
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(corrupt(1, LogProblem::Header));
        }
        let mut records = Vec::new();
        let mut last: Option<u64> = None;
        for (i, l) in lines.enumerate() {
            let line = i + 2;
            let mut parts = l.split(' ');
            let (Some(o), Some(t), Some(f), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(corrupt(line, LogProblem::Fields(l.to_owned())));
            };
            let num = |s: &str, what: &'static str| {
                s.parse::<u64>().map_err(|source| {
                    corrupt(
                        line,
                        LogProblem::Number {
                            what,
                            text: s.to_owned(),
                            source,
                        },
                    )
                })
            };
            let truncation_failure = f
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| corrupt(line, LogProblem::TruncationFailure(f.to_owned())))?;
            let r = OpeningRecord {
                opening: num(o, "opening")?,
                iteration: num(t, "iteration")?,
                truncation_failure,
            };
            if last.is_some_and(|p| r.opening <= p) {
                return Err(corrupt(
                    line,
                    LogProblem::NotIncreasing {
                        opening: r.opening,
                        after: last.unwrap_or(0),
                    },
                ));
            }
            last = Some(r.opening);
            records.push(r);
        }
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        if complete < bytes.len() {
            // The torn append was never synced, so its opening was never used.
            file.set_len(complete as u64).map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        Ok((
            OpeningLog {
                path: path.into(),
                file,
                last,
            },
            records,
        ))
    }

    /// Appends `record` and syncs it to disk; only then may the opening be used. Errors: an
    /// opening number not above the last one, or an I/O failure (the opening must then not
    /// be used). Cost: one write and one `fdatasync`.
    pub fn append(&mut self, record: OpeningRecord) -> Result<(), OpeningLogError> {
        if self.last.is_some_and(|p| record.opening <= p) {
            return Err(OpeningLogError::Corrupt {
                path: self.path.clone(),
                line: 0,
                problem: LogProblem::NotIncreasing {
                    opening: record.opening,
                    after: self.last.unwrap_or(0),
                },
            });
        }
        let io = |source| OpeningLogError::Io {
            path: self.path.clone(),
            source,
        };
        // `{:e}` prints the shortest text that parses back to the same f64.
        let line = format!(
            "{} {} {:e}\n",
            record.opening, record.iteration, record.truncation_failure
        );
        self.file.write_all(line.as_bytes()).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.last = Some(record.opening);
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(opening: u64, iteration: u64) -> OpeningRecord {
        // An awkward float, to check that it survives the text round trip exactly.
        OpeningRecord {
            opening,
            iteration,
            truncation_failure: 1.0e-13 / 3.0 * (opening + 1) as f64,
        }
    }

    #[test]
    fn appended_records_are_read_back_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("openings.log");
        let mut log = OpeningLog::create(&path).unwrap();
        for r in [rec(0, 0), rec(1, 1), rec(2, 1)] {
            log.append(r).unwrap();
        }
        assert!(log.append(rec(2, 2)).is_err(), "openings must increase");
        drop(log);
        // A crash in the middle of the next append.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"3 ").unwrap();
        drop(f);
        let (mut log, got) = OpeningLog::open(&path).unwrap();
        assert_eq!(got, vec![rec(0, 0), rec(1, 1), rec(2, 1)]);
        log.append(rec(3, 2)).unwrap();
        let (_, got) = OpeningLog::open(&path).unwrap();
        assert_eq!(got.last(), Some(&rec(3, 2)));
        assert_eq!(got.len(), 4);
        // A fresh run starts an empty log.
        OpeningLog::create(&path).unwrap();
        assert!(OpeningLog::open(&path).unwrap().1.is_empty());
    }

    #[test]
    fn damaged_logs_are_refused_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("openings.log");
        for (text, line) in [
            ("not a log\n", 1),
            ("vtwin opening log v1\n0 0 0\nx 1 0\n", 3),
            ("vtwin opening log v1\n0 0 0\n1 1 1 1\n", 3),
            ("vtwin opening log v1\n0 0 0\n1 1\n", 3),
            ("vtwin opening log v1\n0 0 0\n1 1 -1e-9\n", 3),
            ("vtwin opening log v1\n0 0 0\n1 1 NaN\n", 3),
            ("vtwin opening log v1\n4 0 0\n4 1 0\n", 3),
        ] {
            std::fs::write(&path, text).unwrap();
            match OpeningLog::open(&path) {
                Err(OpeningLogError::Corrupt { line: l, .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(
            OpeningLog::open(&dir.path().join("missing")),
            Err(OpeningLogError::Io { .. })
        ));
    }
}
