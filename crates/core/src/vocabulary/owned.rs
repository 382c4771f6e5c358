//! Scratch folders named by the process that owns them, so that those of a process that was
//! killed before it could remove them (SIGKILL, a power cut, WebDriver ending the app) are found
//! and removed later by any studio process.
//!
//! A folder is named `<prefix><boot>-<pid>-<start time>-<uuid>` (the boot id's first 8 hex
//! characters, the process's start time in clock ticks since boot: [`ProcessIdentity`]), or
//! `<prefix><uuid>` when the process cannot be told (no `/proc`), which is never swept.
//! [`sweep_orphans`] removes the folders whose process is gone: a live process's folder is never
//! swept, since its process is still the one its name says.

use std::path::{Path, PathBuf};

use super::process::{boot_id, ProcessIdentity};

/// How much of the boot id a folder's name holds.
const BOOT_PREFIX_LEN: usize = 8;

/// A new name, starting with `prefix`, for a folder owned by this process.
pub fn owned_name(prefix: &str) -> String {
    let unique = uuid::Uuid::now_v7().simple();
    match ProcessIdentity::of(std::process::id()) {
        Some(owner) => format!(
            "{prefix}{}-{}-{}-{unique}",
            boot_prefix(&owner.boot_id),
            owner.pid,
            owner.start_time
        ),
        None => format!("{prefix}{unique}"),
    }
}

fn boot_prefix(boot: &str) -> String {
    boot.chars()
        .filter(char::is_ascii_hexdigit)
        .take(BOOT_PREFIX_LEN)
        .collect()
}

/// Whether the process that the folder's `name` says owns it is gone (`None`: the name does not
/// start with `prefix` or says no process, so whether it is gone cannot be told).
fn owner_gone(name: &str, prefix: &str) -> Option<bool> {
    let rest = name.strip_prefix(prefix)?;
    let mut parts = rest.splitn(4, '-');
    let (boot, pid, start_time) = (parts.next()?, parts.next()?, parts.next()?);
    parts.next()?;
    let pid: u32 = pid.parse().ok()?;
    let start_time: u64 = start_time.parse().ok()?;
    if boot.len() != BOOT_PREFIX_LEN {
        return None;
    }
    // Another boot: every process of it is gone.
    if boot_prefix(boot_id()?) != boot {
        return Some(true);
    }
    Some(ProcessIdentity::of(pid).is_none_or(|now| now.start_time != start_time))
}

/// Removes the folders in `parent` named with `prefix` whose owning process is gone; returns
/// those removed. Never follows a link: a name that is a link or a file is left alone, as is a
/// folder named otherwise.
pub fn sweep_orphans(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut swept = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if owner_gone(name, prefix) != Some(true) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "removed the scratch folder of a process that is gone");
                swept.push(path);
            }
            Err(error) => tracing::warn!(path = %path.display(), %error, "cannot remove a stale scratch folder"),
        }
    }
    swept
}
