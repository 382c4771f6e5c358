//! The text of a session folder's output file as the search index holds it (`folder_text`) and
//! reads it back for a hit (`search`): its last [`TEXT_BYTES`], from its first whole line, never
//! through a link, `None` for what is not text.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::sessions::session::Workspace;

/// Of each output file, at most its last this many bytes are indexed (and read for a hit).
pub const TEXT_BYTES: u64 = 1024 * 1024;

/// The last [`TEXT_BYTES`] of a file of `bytes` bytes, from its first whole line when cut:
/// where that text begins, and the text (`None` when it holds a NUL byte: not text, or a bucket
/// mirror's range not fetched). `None` when it cannot be read as a regular file (a link is not
/// followed).
pub(super) fn read_tail(path: &Path, bytes: u64) -> Option<(u64, Option<String>)> {
    let start = bytes.saturating_sub(TEXT_BYTES);
    let buffer = read_range(path, start, TEXT_BYTES)?;
    let skip = if start == 0 {
        0
    } else {
        memchr::memchr(b'\n', &buffer).map_or(buffer.len(), |at| at + 1)
    };
    let text = &buffer[skip..];
    let first_byte = start + skip as u64;
    if memchr::memchr(0, text).is_some() {
        return Some((first_byte, None));
    }
    Some((first_byte, Some(String::from_utf8_lossy(text).into_owned())))
}

/// At most `limit` bytes of a regular file from `offset`, never through a link.
fn read_range(path: &Path, offset: u64, limit: u64) -> Option<Vec<u8>> {
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    file.seek(SeekFrom::Start(offset)).ok()?;
    let mut buffer = Vec::new();
    file.take(limit).read_to_end(&mut buffer).ok()?;
    Some(buffer)
}

/// The text of an indexed file, for a hit: from where it was indexed, at most [`TEXT_BYTES`]
/// (`None` when it is gone or not text any more).
pub(super) fn indexed_text(workspace: &Workspace, session_id: &str, path: &str, first_byte: u64) -> Option<String> {
    let folder = workspace.sessions_folder().ok()??.join(session_id);
    let buffer = read_range(&folder.join(path), first_byte, TEXT_BYTES)?;
    if memchr::memchr(0, &buffer).is_some() {
        return None;
    }
    Some(String::from_utf8_lossy(&buffer).into_owned())
}
