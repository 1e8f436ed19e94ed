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
