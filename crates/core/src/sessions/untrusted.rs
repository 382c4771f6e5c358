//! Reading a workspace's files, which the studio does not trust: a repository can ship any
//! `.zibby/` it likes (links out of it, FIFOs, devices, endless files).
//!
//! - [`confined_folder`] walks a path below a root one component at a time and refuses any
//!   component that is a symbolic link, so nothing below it can lead outside the root.
//! - [`open_regular`] opens a file without following a symbolic link and without blocking (a FIFO
//!   opens at once and is then refused), and accepts regular files only.
//! - [`read_bounded`] reads a whole regular file of at most a given size; a file that grows past
//!   it while read is refused too, so memory stays bounded whatever the file claims.
//!
//! Known gap: folders are checked, then used by path. A link swapped in between (a local process
//! racing the studio) is not caught; what is guarded against is what a repository ships.

use std::fs::{self, File, FileType};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use crate::vocabulary::error::Error;

/// What kind of thing a directory entry is, in words, for errors that refuse it.
pub fn kind_of(file_type: FileType) -> &'static str {
    if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_dir() {
        "a folder"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// `root` joined with `components`, checked one component at a time without following links:
/// `Ok(None)` when a component does not exist; an error when one is a symbolic link or not a
/// folder. `root` itself is trusted (the user chose it).
pub fn confined_folder(root: &Path, components: &[&str]) -> Result<Option<PathBuf>, Error> {
    let mut path = root.to_path_buf();
    for component in components {
        path.push(component);
        match fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.file_type().is_symlink() => return Err(Error::SymlinkRefused { path }),
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => return Err(Error::NotAFolder { path }),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(Some(path))
}

/// Opens a regular file for reading: never through a symbolic link, never blocking; returns it
/// with its size. `NotFound` is an [`Error::Io`] whose source has that kind.
pub fn open_regular(path: &Path) -> Result<(File, u64), Error> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a link: ELOOP.
            Some(code) if code == nix::errno::Errno::ELOOP as i32 => Error::SymlinkRefused { path: path.into() },
            _ => Error::io(path, e),
        })?;
    let metadata = file.metadata().map_err(|e| Error::io(path, e))?;
    if !metadata.is_file() {
        return Err(Error::NotARegularFile {
            path: path.into(),
            kind: kind_of(metadata.file_type()),
        });
    }
    Ok((file, metadata.len()))
}

/// The whole of a regular file of at most `limit` bytes (see [`open_regular`]).
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let (file, bytes) = open_regular(path)?;
    let too_large = |bytes| Error::FileTooLarge {
        path: path.into(),
        bytes,
        limit,
    };
    if bytes > limit {
        return Err(too_large(bytes));
    }
    let mut content = Vec::with_capacity(bytes as usize);
    file.take(limit + 1)
        .read_to_end(&mut content)
        .map_err(|e| Error::io(path, e))?;
    if content.len() as u64 > limit {
        return Err(too_large(content.len() as u64));
    }
    Ok(content)
}

/// At most the first `max` bytes of a regular file (see [`open_regular`]).
pub fn read_prefix(path: &Path, max: u64) -> Result<Vec<u8>, Error> {
    read_range(path, 0, max)
}

/// At most `max` bytes of a regular file from `offset` (see [`open_regular`]).
pub fn read_range(path: &Path, offset: u64, max: u64) -> Result<Vec<u8>, Error> {
    let (file, _) = open_regular(path)?;
    read_from(path, file, offset, max)
}

/// At most the last `max` bytes of a regular file (see [`open_regular`]), and whether they are
/// the whole file (else the first of them is somewhere inside a line).
pub fn read_suffix(path: &Path, max: u64) -> Result<(Vec<u8>, bool), Error> {
    let (file, bytes) = open_regular(path)?;
    let start = bytes.saturating_sub(max);
    Ok((read_from(path, file, start, max)?, start == 0))
}

/// At most `max` bytes of `file` (opened from `path`) from `offset`.
fn read_from(path: &Path, mut file: File, offset: u64, max: u64) -> Result<Vec<u8>, Error> {
    use std::io::{Seek, SeekFrom};
    if offset > 0 {
        file.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(path, e))?;
    }
    let mut content = Vec::new();
    file.take(max)
        .read_to_end(&mut content)
        .map_err(|e| Error::io(path, e))?;
    Ok(content)
}

/// Whether an error is "there is no such file" (it went away, or never was).
pub fn is_not_found(error: &Error) -> bool {
    matches!(error, Error::Io { source, .. } if source.kind() == ErrorKind::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_regular_file_is_read_whole_and_a_larger_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.json");
        fs::write(&file, b"{\"ok\":true}").unwrap();
        assert_eq!(read_bounded(&file, 11).unwrap(), b"{\"ok\":true}");
        let error = read_bounded(&file, 10).unwrap_err();
        assert_eq!(error.code(), "file_too_large");
        assert!(error.to_string().contains("result.json"), "{error}");
        assert_eq!(read_prefix(&file, 3).unwrap(), b"{\"o");
    }

    #[test]
    fn links_fifos_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        symlink("/dev/zero", &link).unwrap();
        assert_eq!(read_bounded(&link, 1 << 20).unwrap_err().code(), "symlink_refused");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = read_bounded(&fifo, 1 << 20).unwrap_err();
        assert_eq!(error.code(), "not_a_regular_file");
        assert!(error.to_string().contains("a FIFO"), "{error}");
        let error = read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(error.to_string().contains("a device"), "{error}");
        assert!(is_not_found(&read_bounded(&dir.path().join("missing"), 1).unwrap_err()));
    }

    #[test]
    fn a_confined_folder_refuses_a_link_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".zibby")).unwrap();
        assert_eq!(confined_folder(dir.path(), &[".zibby", "output"]).unwrap(), None);
        symlink(outside.path(), dir.path().join(".zibby/output")).unwrap();
        let error = confined_folder(dir.path(), &[".zibby", "output", "sessions"]).unwrap_err();
        assert_eq!(error.code(), "symlink_refused");
        assert!(error.to_string().contains(".zibby/output"), "{error}");
        fs::create_dir_all(dir.path().join("a/b")).unwrap();
        assert_eq!(
            confined_folder(dir.path(), &["a", "b"]).unwrap(),
            Some(dir.path().join("a/b"))
        );
    }
}
