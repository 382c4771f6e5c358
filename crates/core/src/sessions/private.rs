//! Files and folders the studio creates for itself: never written through a symbolic link, and
//! for the owner's eyes only (files 0600, folders 0700), since they hold the user's prompts,
//! agent output and history.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstatat, Mode, SFlag};

use crate::vocabulary::error::Error;

pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;

fn refused(path: &Path) -> Error {
    Error::SymlinkRefused { path: path.to_owned() }
}

/// Creates (or truncates) a file for writing, 0600, refusing a symbolic link in its place. A file
/// that was there already is made 0600 too.
pub fn create_file(path: &Path) -> Result<File, Error> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .custom_flags(libc_flags::NOFOLLOW_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == Errno::ELOOP as i32 => refused(path),
            _ => Error::io_write(path, e),
        })?;
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
        .map_err(|e| Error::io_write(path, e))?;
    Ok(file)
}

/// [`create_file`], then `bytes` in it.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    create_file(path)?
        .write_all(bytes)
        .map_err(|e| Error::io_write(path, e))
}

/// Does `change` to the folder `dir` (files written or removed in it), leaving the folder's own
/// modification time as it was: the studio's own bookkeeping in a session folder (its stop files
/// removed, its run record written), however late after the run's end, is never taken for
/// someone writing there since (issue 41). A folder replaced by a link meanwhile is left alone.
pub fn keeping_folder_time<T>(dir: &Path, change: impl FnOnce() -> T) -> T {
    let before = std::fs::symlink_metadata(dir)
        .ok()
        .filter(|m| m.is_dir())
        .and_then(|m| m.modified().ok());
    let done = change();
    if let Some(modified) = before {
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            if let Ok(folder) = std::fs::File::open(dir) {
                let _ = folder.set_times(std::fs::FileTimes::new().set_modified(modified));
            }
        }
    }
    done
}

/// A file written under another name beside its place (`.NAME.partial-PID-UUID`, private, new)
/// and renamed into place once whole ([`PartialFile::finish`]): a reader never sees half of it.
/// Dropped unfinished (an error, a refusal), it is removed; while it is written, its path is
/// known to [`remove_partials_in_progress`], which a command-line process calls when a signal
/// ends it; and one a process now gone left behind (killed outright) is swept by the next
/// [`PartialFile::beside`] of the same place.
pub struct PartialFile {
    path: std::path::PathBuf,
    out: std::path::PathBuf,
    file: Option<File>,
}

fn partials_in_progress() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    static IN_PROGRESS: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    IN_PROGRESS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes every [`PartialFile`] this process is writing: for a process a signal ends (its
/// writes then go to a file no longer there).
pub fn remove_partials_in_progress() {
    for path in partials_in_progress().drain(..) {
        let _ = std::fs::remove_file(path);
    }
}

impl PartialFile {
    /// A new partial file for `out`, once what a process now gone left for it is swept.
    pub fn beside(out: &Path) -> Result<PartialFile, Error> {
        let name = out
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let prefix = format!(".{name}.partial-");
        sweep_partials(out.parent().unwrap_or(Path::new("")), &prefix);
        let path = out.with_file_name(format!(
            "{prefix}{}-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        ));
        let file = create_new(&path)?;
        partials_in_progress().push(path.clone());
        Ok(PartialFile {
            path,
            out: out.to_owned(),
            file: Some(file),
        })
    }

    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file to write, until [`PartialFile::finish`] or [`PartialFile::take_file`].
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("the partial file is open until finished")
    }

    /// The open file, for a writer that owns it (closed by the time [`PartialFile::finish`] is
    /// called).
    pub fn take_file(&mut self) -> File {
        self.file.take().expect("the partial file is taken once")
    }

    /// Flushes it to disk (when still held here) and renames it into place.
    pub fn finish(mut self) -> Result<(), Error> {
        if let Some(file) = self.file.take() {
            file.sync_all().map_err(|e| Error::io_write(&self.path, e))?;
        }
        std::fs::rename(&self.path, &self.out).map_err(|e| Error::io_write(&self.out, e))?;
        self.forget();
        Ok(())
    }

    fn forget(&self) {
        partials_in_progress().retain(|p| *p != self.path);
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if partials_in_progress().contains(&self.path) {
            self.file.take();
            let _ = std::fs::remove_file(&self.path);
            self.forget();
        }
    }
}

/// Removes the files of `folder` named `PREFIX<pid>-…` whose process is gone.
fn sweep_partials(folder: &Path, prefix: &str) {
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !crate::vocabulary::process::process_alive(pid) && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Creates a new file (0600) holding `bytes`; fails if anything (a symbolic link too) is there.
pub fn create_new_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    create_new(path)?.write_all(bytes).map_err(|e| Error::io_write(path, e))
}

/// Replaces `target` with a file (0600) holding `bytes`: written as a new file of a name nobody
/// can plant a link at in advance (`.NAME.UUID.tmp` beside it, never opened through a link), then
/// renamed over `target` (which replaces a link itself, not what it points to). A reader sees the
/// old file or the new one, never part of one.
pub fn replace_file(target: &Path, bytes: &[u8]) -> Result<(), Error> {
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let temporary = target.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::now_v7().simple()));
    create_new_file(&temporary, bytes)?;
    std::fs::rename(&temporary, target).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        Error::io_write(target, e)
    })
}

/// A new file (0600) to write, open; fails if anything (a symbolic link too) is there.
pub fn create_new(path: &Path) -> Result<std::fs::File, Error> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc_flags::NOFOLLOW_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io_write(path, e))
}

/// Creates a folder and its missing parents; the ones it creates are 0700.
pub fn create_dir_all(path: &Path) -> Result<(), Error> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| Error::io_write(path, e))
}

/// Opens a folder by an absolute path that has no symbolic link in it, at any level.
pub fn open_dir_no_symlinks(path: &Path) -> Result<OwnedFd, Error> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return Err(Error::io_write(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an absolute path"),
        ));
    }
    let mut dir = nix::fcntl::open("/", flags, Mode::empty()).map_err(|e| Error::io_write(path, e.into()))?;
    let mut walked = std::path::PathBuf::from("/");
    for component in components {
        let Component::Normal(name) = component else {
            return Err(Error::io_write(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "`.` or `..` in the path"),
            ));
        };
        walked.push(name);
        dir = match openat(&dir, name, flags, Mode::empty()) {
            Ok(next) => next,
            // O_NOFOLLOW on a symbolic link: ELOOP (ENOTDIR when it leads to no folder).
            Err(Errno::ELOOP | Errno::ENOTDIR) if is_symlink_at(&dir, name) => return Err(refused(&walked)),
            Err(e) => return Err(Error::io_write(&walked, e.into())),
        };
    }
    Ok(dir)
}

fn is_symlink_at(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
}

/// Creates `dir/name` (0600) holding `bytes` unless a file of that name is there already (it is
/// left as it is). A symbolic link in its place, or anywhere in `dir`, is refused: nothing is
/// written through one. Returns whether it created the file.
pub fn create_new_in(dir: &Path, name: &str, bytes: &[u8]) -> Result<bool, Error> {
    let path = dir.join(name);
    let folder = open_dir_no_symlinks(dir)?;
    // O_EXCL never follows a link: a link in the file's place is EEXIST, told apart below.
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(&folder, name, flags, Mode::from_bits_truncate(FILE_MODE)) {
        Ok(fd) => {
            File::from(fd).write_all(bytes).map_err(|e| Error::io_write(&path, e))?;
            Ok(true)
        }
        Err(Errno::EEXIST) if is_symlink_at(&folder, name.as_ref()) => Err(refused(&path)),
        Err(Errno::EEXIST) => Ok(false),
        Err(e) => Err(Error::io_write(&path, e.into())),
    }
}

mod libc_flags {
    /// `O_NOFOLLOW | O_CLOEXEC`, as `OpenOptionsExt::custom_flags` takes them.
    pub const NOFOLLOW_CLOEXEC: i32 = nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_CLOEXEC.bits();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_and_folders_are_the_owners_alone() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a/b");
        create_dir_all(&folder).unwrap();
        assert_eq!((mode(&dir.path().join("a")), mode(&folder)), (0o700, 0o700));
        write_file(&folder.join("f"), b"x").unwrap();
        assert_eq!(mode(&folder.join("f")), 0o600);
        assert!(create_new_in(&folder, "s", b"stop").unwrap());
        assert!(!create_new_in(&folder, "s", b"again").unwrap(), "left as it is");
        assert_eq!(std::fs::read(folder.join("s")).unwrap(), b"stop");
        assert_eq!(mode(&folder.join("s")), 0o600);
    }

    #[test]
    fn nothing_is_written_through_a_symbolic_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("link");
        symlink(&target, &link).unwrap();
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("nowhere"), &dangling).unwrap();
        for path in [&link, &dangling] {
            let error = write_file(path, b"x").unwrap_err();
            assert!(
                matches!(&error, Error::SymlinkRefused { path: p } if p == path),
                "{error}"
            );
        }
        let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_owned();
        for path in [&link, &dangling] {
            let error = create_new_in(dir.path(), &name(path), b"x").unwrap_err();
            assert!(error.to_string().contains(&path.display().to_string()), "{error}");
        }
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        // A linked folder, at the end or on the way.
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        symlink(&real, dir.path().join("folder")).unwrap();
        let error = create_new_in(&dir.path().join("folder"), "s", b"x").unwrap_err();
        assert!(
            matches!(&error, Error::SymlinkRefused { path } if path.ends_with("folder")),
            "{error}"
        );
        std::fs::create_dir(real.join("inner")).unwrap();
        let error = create_new_in(&dir.path().join("folder/inner"), "s", b"x").unwrap_err();
        assert!(
            matches!(&error, Error::SymlinkRefused { path } if path.ends_with("folder")),
            "{error}"
        );
        assert!(!real.join("s").exists() && !real.join("inner/s").exists());
    }
}
