//! Atomic file writes: a temporary file in the same directory, created with its final
//! permissions (0600 for secrets, so a key is never readable by others even for an
//! instant), synced, then renamed over the target.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name")
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode.bits())
            .open(&tmp)?;
        // The umask may have removed bits we want for public files; never adds any to secrets.
        std::fs::set_permissions(
            &tmp,
            std::os::unix::fs::PermissionsExt::from_mode(mode.bits()),
        )?;
        file.write_all(bytes)?;
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
}
