//! Atomic file writes: a temporary file in the same directory, created with its final
//! permissions (0600 for secrets, so a key is never readable by others even for an
//! instant), synced, then renamed over the target.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Permissions of a written file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 0644: certificates, configs, public keys.
    Public,
    /// 0600: private keys and seal keys.
    Secret,
}

impl Mode {
    /// The Unix permission bits.
    pub fn bits(self) -> u32 {
        match self {
            Mode::Public => 0o644,
            Mode::Secret => 0o600,
        }
    }
}

/// Writes `bytes` to `path` atomically with permissions `mode` (whatever the umask
/// allows less of: the mode is set explicitly after creation too). Either the old content
/// or the new one is visible, never a partial file. Cost: one write, one fsync, one rename.
pub fn write(path: &Path, bytes: &[u8], mode: Mode) -> std::io::Result<()> {
    write_with(path, mode, |w| w.write_all(bytes))
}

/// [`write`] for content produced as a stream: `fill` writes into a buffered temporary file
/// in `path`'s directory, which is then synced and renamed over `path`. If `fill` fails,
/// the temporary file is removed and `path` is untouched. Cost: `fill`, one fsync, one
/// rename.
pub fn write_with<F>(path: &Path, mode: Mode, fill: F) -> std::io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    // Unique per process and call, so concurrent writers of one path never share a
    // temporary file (the rename decides which content wins).
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name")
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".tmp{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode.bits())
            .open(&tmp)?;
        // The umask may have removed bits we want for public files; never adds any to secrets.
        std::fs::set_permissions(
            &tmp,
            std::os::unix::fs::PermissionsExt::from_mode(mode.bits()),
        )?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn writes_with_the_mode_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("key.pem");
        write(&secret, b"one", Mode::Secret).unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"one");
        assert_eq!(mode_of(&secret), 0o600);
        write(&secret, b"two", Mode::Secret).unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"two");
        let public = dir.path().join("cert.pem");
        write(&public, b"cert", Mode::Public).unwrap();
        assert_eq!(mode_of(&public), 0o644);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.json");
        write(&target, b"old", Mode::Public).unwrap();
        // Renaming a file over a non-empty directory fails after the temporary is written.
        let blocker = dir.path().join("sub");
        std::fs::create_dir(&blocker).unwrap();
        std::fs::write(blocker.join("x"), b"x").unwrap();
        assert!(write(&blocker, b"new", Mode::Public).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(write(Path::new("/"), b"x", Mode::Public).is_err());
    }

    #[test]
    fn a_failing_stream_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("rows.csv");
        write_with(&target, Mode::Public, |w| w.write_all(b"a,b\n")).unwrap();
        let err = write_with(&target, Mode::Public, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("row 7: bad value"))
        });
        assert_eq!(err.unwrap_err().to_string(), "row 7: bad value");
        assert_eq!(std::fs::read(&target).unwrap(), b"a,b\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
