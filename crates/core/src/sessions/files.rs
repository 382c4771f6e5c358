//! The files of one session folder, listed and read in pages, for a window that shows them in
//! place. Every path is checked to stay inside the session's folder (a `..`, an absolute path
//! elsewhere, or a symbolic link out of the folder is refused) before anything is read.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::sessions::session::Timestamp;
use crate::vocabulary::error::Error;

/// A listing stops here: a session folder with more files is not one a person reads file by file.
pub const MAX_LISTED_FILES: usize = 10_000;

/// A page of a file is at most this long.
pub const MAX_CHUNK_BYTES: usize = 1 << 20;

/// One file of a session folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileEntry {
    /// Relative to the session folder, `/`-separated.
    pub path: String,
    pub bytes: u64,
    pub modified_at: Timestamp,
}

/// A page of a file: `text` holds the bytes `offset..next_offset` (or to the end).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FileChunk {
    pub path: String,
    pub offset: u64,
    pub bytes_total: u64,
    pub text: String,
    /// Where the next page starts; `None` at the end of the file.
    pub next_offset: Option<u64>,
    /// The page holds NUL bytes: `text` is empty, the file is not text.
    pub binary: bool,
}

/// The files under `folder` (not following symbolic links), sorted by path, at most
/// [`MAX_LISTED_FILES`].
pub fn list(folder: &Path) -> Result<Vec<FileEntry>, Error> {
    let mut files = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else { continue };
            let path = entry.path();
            if metadata.is_dir() {
                pending.push(path);
            } else if metadata.is_file() && files.len() < MAX_LISTED_FILES {
                let relative = path.strip_prefix(folder).unwrap_or(&path);
                files.push(FileEntry {
                    path: relative
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy())
                        .collect::<Vec<_>>()
                        .join("/"),
                    bytes: metadata.len(),
                    modified_at: Timestamp::from_system_time(metadata.modified().unwrap_or(std::time::UNIX_EPOCH)),
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Reads about `limit` bytes (4 to [`MAX_CHUNK_BYTES`]) of the file `path` of the session
/// `session` (folder `folder`) from `offset`. `path` is relative to the folder, or absolute inside
/// it. Text pages end on a character boundary, so that pages join into the file's text.
pub fn read(folder: &Path, session: &str, path: &str, offset: u64, limit: usize) -> Result<FileChunk, Error> {
    let file = resolve(folder, session, path)?;
    let mut handle = fs::File::open(&file).map_err(|e| Error::io(&file, e))?;
    let bytes_total = handle.metadata().map_err(|e| Error::io(&file, e))?.len();
    let offset = offset.min(bytes_total);
    handle.seek(SeekFrom::Start(offset)).map_err(|e| Error::io(&file, e))?;
    let mut buffer = Vec::new();
    handle
        // At least one whole character (4 bytes), so that every page moves on.
        .take(limit.clamp(4, MAX_CHUNK_BYTES) as u64)
        .read_to_end(&mut buffer)
        .map_err(|e| Error::io(&file, e))?;
    let binary = memchr::memchr(0, &buffer).is_some();
    let end_of_file = offset + buffer.len() as u64 >= bytes_total;
    if !binary && !end_of_file {
        buffer.truncate(buffer.len() - cut_utf8_tail(&buffer));
    }
    let next = offset + buffer.len() as u64;
    Ok(FileChunk {
        path: path.to_owned(),
        offset,
        bytes_total,
        text: if binary {
            String::new()
        } else {
            String::from_utf8_lossy(&buffer).into_owned()
        },
        next_offset: (next < bytes_total).then_some(next),
        binary,
    })
}

/// How many bytes at the end of `bytes` are the start of a character cut by the page's end.
fn cut_utf8_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0b1100_0000 != 0b1000_0000 {
            // The lead byte of the last character: is the character complete?
            let width = match byte {
                0x00..=0x7f => 1,
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                _ => return 0,
            };
            return if width > back { back } else { 0 };
        }
    }
    0
}

/// The file `path` names, once it is known to be inside `folder`.
fn resolve(folder: &Path, session: &str, path: &str) -> Result<PathBuf, Error> {
    let refuse = |reason| Error::OutsideSession {
        session: session.to_owned(),
        path: path.to_owned(),
        reason,
    };
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        given
            .strip_prefix(folder)
            .map_err(|_| refuse("not inside the session folder"))?
    } else {
        given
    };
    if path.is_empty() || relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(refuse("only plain names below the session folder are allowed"));
    }
    let joined = folder.join(relative);
    let real_folder = folder.canonicalize().map_err(|e| Error::io(folder, e))?;
    let real_file = joined.canonicalize().map_err(|e| Error::io(&joined, e))?;
    if !real_file.starts_with(&real_folder) {
        return Err(refuse("a link out of the session folder"));
    }
    if !real_file.is_file() {
        return Err(refuse("not a file"));
    }
    Ok(real_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("plan")).unwrap();
        fs::write(dir.path().join("result.json"), b"{\"ok\":true}").unwrap();
        fs::write(dir.path().join("plan/raw_stream_output.txt"), "héllo wörld\n".repeat(3)).unwrap();
        fs::write(dir.path().join("blob.bin"), [1u8, 0, 2, 3]).unwrap();
        dir
    }

    #[test]
    fn lists_every_file_below_the_folder_by_path() {
        let dir = folder();
        let paths: Vec<String> = list(dir.path()).unwrap().into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["blob.bin", "plan/raw_stream_output.txt", "result.json"]);
    }

    #[test]
    fn pages_join_into_the_text_even_when_a_page_ends_inside_a_character() {
        let dir = folder();
        let whole = fs::read_to_string(dir.path().join("plan/raw_stream_output.txt")).unwrap();
        for page in 0..12 {
            let (mut text, mut offset) = (String::new(), Some(0));
            while let Some(at) = offset {
                let chunk = read(dir.path(), "s", "plan/raw_stream_output.txt", at, page).unwrap();
                assert!(!chunk.binary);
                assert!(
                    !chunk.text.contains('\u{fffd}'),
                    "page {page} at {at}: {:?}",
                    chunk.text
                );
                text.push_str(&chunk.text);
                offset = chunk.next_offset;
            }
            assert_eq!(text, whole, "pages of {page} bytes");
        }
    }

    #[test]
    fn an_absolute_path_inside_the_folder_reads_like_a_relative_one() {
        let dir = folder();
        let absolute = dir.path().join("result.json");
        let chunk = read(dir.path(), "s", absolute.to_str().unwrap(), 0, 100).unwrap();
        assert_eq!(chunk.text, "{\"ok\":true}");
        assert_eq!((chunk.bytes_total, chunk.next_offset), (11, None));
    }

    #[test]
    fn a_binary_file_says_so_instead_of_showing_bytes() {
        let dir = folder();
        let chunk = read(dir.path(), "s", "blob.bin", 0, 100).unwrap();
        assert!(chunk.binary);
        assert_eq!((chunk.text.as_str(), chunk.bytes_total), ("", 4));
    }

    #[test]
    fn nothing_outside_the_folder_can_be_read() {
        let dir = folder();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        let escape = format!("{}/secret", outside.path().display());
        for path in [
            "../secret",
            "plan/../../secret",
            "",
            "/etc/passwd",
            escape.as_str(),
            "link",
            "plan",
        ] {
            let error = read(dir.path(), "s1", path, 0, 10).unwrap_err();
            assert_eq!(error.code(), "outside_session", "{path}: {error}");
            assert!(error.to_string().contains("session `s1`"), "{error}");
        }
        let missing = read(dir.path(), "s1", "nope.txt", 0, 10).unwrap_err();
        assert!(missing.to_string().contains("nope.txt"), "{missing}");
    }
}
