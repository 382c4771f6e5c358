//! The text of a session folder's output file as the search index holds it (`folder_text`) and
//! reads it back for a hit (`search`): its last [`TEXT_BYTES`], from its first whole line, never
//! through a link, `None` for what is not text.

use std::path::Path;

use crate::sessions::session::Workspace;
use crate::sessions::untrusted;

/// Of each output file, at most its last this many bytes are indexed (and read for a hit).
pub const TEXT_BYTES: u64 = 1024 * 1024;

/// The last [`TEXT_BYTES`] of a file of `bytes` bytes, from its first whole line when cut:
/// where that text begins, and the text (`None` when it holds a NUL byte: not text, or a bucket
/// mirror's range not fetched). `None` when it cannot be read as a regular file (a link is not
/// followed).
pub(super) fn read_tail(path: &Path, bytes: u64) -> Option<(u64, Option<String>)> {
    let start = bytes.saturating_sub(TEXT_BYTES);
    let buffer = untrusted::read_range(path, start, TEXT_BYTES).ok()?;
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

/// The text of an indexed file, for a hit: from where it was indexed, at most [`TEXT_BYTES`]
/// (`None` when it is gone or not text any more).
pub(super) fn indexed_text(workspace: &Workspace, session_id: &str, path: &str, first_byte: u64) -> Option<String> {
    let folder = workspace.sessions_folder().ok()??.join(session_id);
    let buffer = untrusted::read_range(&folder.join(path), first_byte, TEXT_BYTES).ok()?;
    if memchr::memchr(0, &buffer).is_some() {
        return None;
    }
    Some(String::from_utf8_lossy(&buffer).into_owned())
}
