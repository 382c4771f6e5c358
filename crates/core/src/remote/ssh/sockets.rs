//! The private folder of the control sockets ([`runtime_dir`]) and what studios that are gone
//! left in it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::errors::{io, SshError};

/// The private folder of the control sockets: `$XDG_RUNTIME_DIR/zstudio-ssh`, else
/// `/tmp/zstudio-ssh-UID`; made 0700, and refused when it is a link or another user's.
pub fn runtime_dir() -> Result<PathBuf, SshError> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("zstudio-ssh"),
        None => std::env::temp_dir().join(format!("zstudio-ssh-{}", nix::unistd::getuid())),
    };
    private_dir(&dir)
}

/// `dir`, made 0700 (when missing, or open to others); an error when it is a link or not ours.
pub fn private_dir(dir: &Path) -> Result<PathBuf, SshError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if let Err(source) = std::fs::DirBuilder::new().mode(0o700).create(dir) {
        if source.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(io("create", dir, source));
        }
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|source| io("read", dir, source))?;
    let unsafe_reason = if !meta.is_dir() {
        Some("is not a folder (or is a link)")
    } else if meta.uid() != nix::unistd::getuid().as_raw() {
        Some("belongs to another user")
    } else if meta.permissions().mode() & 0o077 != 0 {
        // Ours and a folder: closed to others before a socket goes in.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|source| io("make private", dir, source))?;
        None
    } else {
        None
    };
    match unsafe_reason {
        Some(reason) => Err(io(
            "use",
            dir,
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, reason.to_string()),
        )),
        None => Ok(dir.to_path_buf()),
    }
}

/// How long a kept master's log and pid file stay after its socket is gone (a master starting
/// writes its log before its socket exists).
const KEPT_FILES_OUTLIVE: Duration = Duration::from_secs(10 * 60);

/// How long a verified line (`bootstrap::Verified`) is kept unwritten: one older is verified
/// again when next asked (a SHA-256 read), and the folder does not grow with every host and
/// build ever reached.
const VERIFIED_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// Removes from `dir` what studios that are gone left there (killed before they closed their
/// links): the logs named `<pid>-<n>.log` ([`unique_name`]) whose process is gone, and such
/// processes' control sockets that no master answers any more; a kept master's log and pid file
/// (`kept-<digest>.log`, `.pid`, `.ws-<digest>`) once its socket is gone, after [`KEPT_FILES_OUTLIVE`]; verified
/// lines (`verified-<digest>`) not written for [`VERIFIED_KEPT`]. Anything else is left alone,
/// and so is a file whose process id is taken again by another process (it goes with that one).
pub(super) fn sweep_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let older_than = |path: &Path, age: Duration| {
        std::fs::symlink_metadata(path)
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|elapsed| elapsed > age))
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_str().unwrap_or_default();
        // A kept master's log, pid file and kept servers' records (`reach`).
        if let Some((stem, _)) = name
            .strip_prefix("kept-")
            .and_then(|rest| rest.split_once('.'))
            .filter(|(_, kind)| matches!(*kind, "log" | "pid") || kind.starts_with("ws-"))
        {
            if !dir.join(format!("kept-{stem}.sock")).exists() && older_than(&path, KEPT_FILES_OUTLIVE) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if name.starts_with("verified-") {
            if older_than(&path, VERIFIED_KEPT) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        let Some((pid, kind)) = leftover_of(&path) else {
            continue;
        };
        if crate::vocabulary::process::process_alive(pid) {
            continue;
        }
        // A socket is a master's still when one answers on it (its studio killed, it lives on).
        let stale = kind == "log" || std::os::unix::net::UnixStream::connect(&path).is_err();
        if stale {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The process id and kind (`log`, `sock`, `fwd`: a forwarded socket, `reach`) of a file named as [`unique_name`] names them.
fn leftover_of(path: &Path) -> Option<(u32, &str)> {
    let name = path.file_name()?.to_str()?;
    let (stem, kind) = name.rsplit_once('.')?;
    let (pid, n) = stem.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (matches!(kind, "log" | "sock" | "fwd") && digits(pid) && digits(n)).then_some((pid.parse().ok()?, kind))
}

/// The file beside a kept master's socket that names its process (`kept`).
pub(super) fn pid_file(control_path: &Path) -> PathBuf {
    control_path.with_extension("pid")
}

/// A short name for a connection's files, unique in this process and among processes.
pub(super) fn unique_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}
