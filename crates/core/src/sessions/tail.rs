//! Reading growing text files (a node's `raw_stream_output.txt`, `events.json`) a piece at a time.
//!
//! - [`FileTail`] follows a file from its last offset and yields only complete new lines; a
//!   half-written last line waits for its newline. A file truncated or replaced (another inode, or
//!   shorter than what was read) is read again from its first byte.
//! - [`last_lines`] and [`read_lines_around`] page through a file of any size: they seek and read
//!   in blocks of [`BLOCK_BYTES`], so memory stays bounded by the lines asked for, never the file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::vocabulary::error::Error;

/// The block size of the backward scans.
pub const BLOCK_BYTES: usize = 64 * 1024;

/// A line longer than this is cut into pieces of this size (so one line cannot hold memory hostage).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// New complete lines of a followed file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewLines {
    /// The byte offset in the file of the first line (0 again after a truncation or a replacement).
    pub offset: u64,
    pub lines: Vec<String>,
    /// The file was truncated or replaced since the last read, and is read again from its start.
    pub restarted: bool,
    /// More bytes were waiting than one read takes: read again for the rest.
    pub more: bool,
}

/// Follows one growing file from its last offset.
#[derive(Debug)]
pub struct FileTail {
    path: PathBuf,
    /// Bytes of complete lines consumed.
    offset: u64,
    /// `(device, inode)` of the file read so far.
    identity: Option<(u64, u64)>,
    /// The bytes of a line still waiting for its newline (they start at `offset`).
    partial: Vec<u8>,
}

impl FileTail {
    /// Follows the file from its first byte (the file need not exist yet).
    pub fn from_start(path: impl Into<PathBuf>) -> FileTail {
        FileTail {
            path: path.into(),
            offset: 0,
            identity: None,
            partial: Vec::new(),
        }
    }

    /// Follows only what is appended from now on. A last line without its newline is part of what
    /// comes: it is yielded once complete. A file that does not exist yet is read from its start.
    pub fn from_end(path: impl Into<PathBuf>) -> Result<FileTail, Error> {
        let path = path.into();
        let file = match open_regular(&path) {
            Ok(file) => file,
            Err(e) if crate::sessions::untrusted::is_not_found(&e) => return Ok(FileTail::from_start(path)),
            Err(e) => return Err(e),
        };
        let metadata = file.metadata().map_err(|e| Error::io(&path, e))?;
        let offset = line_start(&file, metadata.len()).map_err(|e| Error::io(&path, e))?;
        Ok(FileTail {
            identity: Some((metadata.dev(), metadata.ino())),
            path,
            offset,
            partial: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The byte offset just after the last complete line yielded.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads what was appended since the last call, at most `max_bytes` (and at least one line's
    /// worth); a file that is gone yields nothing and is read from its start when it comes back.
    pub fn read_new_lines(&mut self, max_bytes: usize) -> Result<NewLines, Error> {
        let file = match open_regular(&self.path) {
            Ok(file) => file,
            Err(e) if crate::sessions::untrusted::is_not_found(&e) => {
                self.restart();
                return Ok(NewLines::default());
            }
            Err(e) => return Err(e),
        };
        let metadata = file.metadata().map_err(|e| Error::io(&self.path, e))?;
        let identity = (metadata.dev(), metadata.ino());
        let read_to = self.offset + self.partial.len() as u64;
        let mut restarted = false;
        if self.identity.is_some_and(|known| known != identity) || metadata.len() < read_to {
            self.restart();
            restarted = true;
        }
        self.identity = Some(identity);
        let read_from = self.offset + self.partial.len() as u64;
        let waiting = metadata.len().saturating_sub(read_from);
        let take = waiting.min(max_bytes.max(1) as u64);
        let start = self.partial.len();
        self.partial.resize(start + take as usize, 0);
        let got = read_at_most(&file, &mut self.partial[start..], read_from).map_err(|e| Error::io(&self.path, e))?;
        self.partial.truncate(start + got);
        let more = (got as u64) < waiting;

        let offset = self.offset;
        let mut lines = Vec::new();
        let complete = match memchr::memrchr(b'\n', &self.partial) {
            Some(last) => last + 1,
            // A line too long to wait for is yielded in pieces.
            None if self.partial.len() >= MAX_LINE_BYTES => self.partial.len(),
            None => 0,
        };
        if complete > 0 {
            let bytes: Vec<u8> = self.partial.drain(..complete).collect();
            let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            lines.extend(body.split(|b| *b == b'\n').map(line_text));
            self.offset += complete as u64;
        }
        Ok(NewLines {
            offset,
            lines,
            restarted,
            more,
        })
    }

    /// Whether the file changed since the last read (grown, shrunk, replaced, or gone), by its
    /// metadata alone: the file is not opened (opening a watched file is itself an inotify event).
    pub fn has_changed(&self) -> bool {
        match std::fs::metadata(&self.path) {
            Ok(m) => Some((m.dev(), m.ino())) != self.identity || m.len() != self.offset + self.partial.len() as u64,
            Err(_) => self.identity.is_some(),
        }
    }

    fn restart(&mut self) {
        self.offset = 0;
        self.partial.clear();
        self.identity = None;
    }
}

/// A run of consecutive lines of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page {
    /// The byte offset of the first line.
    pub offset: u64,
    /// The byte offset just after the last line (its newline included, when it has one).
    pub end: u64,
    pub lines: Vec<String>,
    /// The last line has no newline yet (the file is still being written, or ends without one).
    pub last_line_partial: bool,
}

/// A regular file of a session, opened without following a link or blocking.
fn open_regular(path: &Path) -> Result<File, Error> {
    crate::sessions::untrusted::open_regular(path).map(|(file, _)| file)
}

/// The last `count` lines of a file (the last one may lack its newline), read backwards in blocks.
pub fn last_lines(path: &Path, count: usize) -> Result<Page, Error> {
    let file = open_regular(path)?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let (start, _) = lines_back(&file, size, count).map_err(|e| Error::io(path, e))?;
    read_page(&file, start, size, usize::MAX).map_err(|e| Error::io(path, e))
}

/// The line holding byte `offset`, with up to `before` lines before it and `after` lines after it.
pub fn read_lines_around(path: &Path, offset: u64, before: usize, after: usize) -> Result<Page, Error> {
    let file = open_regular(path)?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let read = || -> std::io::Result<Page> {
        let here = line_start(&file, offset.min(size))?;
        let (start, went_back) = lines_back(&file, here, before)?;
        let wanted = went_back.saturating_add(after).saturating_add(1);
        read_page(&file, start, size, wanted)
    };
    read().map_err(|e| Error::io(path, e))
}

/// Reads up to `wanted` lines from `start` (a line start), stopping at `size`.
fn read_page(file: &File, start: u64, size: u64, wanted: usize) -> std::io::Result<Page> {
    let mut reader = BufReader::with_capacity(BLOCK_BYTES, file);
    reader.seek(SeekFrom::Start(start))?;
    let mut reader = reader.take(size - start);
    let mut lines = Vec::new();
    let mut end = start;
    let mut last_line_partial = false;
    let mut buffer = Vec::new();
    while lines.len() < wanted {
        buffer.clear();
        let read = reader.read_until(b'\n', &mut buffer)?;
        if read == 0 {
            break;
        }
        end += read as u64;
        last_line_partial = buffer.last() != Some(&b'\n');
        lines.push(line_text(buffer.strip_suffix(b"\n").unwrap_or(&buffer)));
    }
    Ok(Page {
        offset: start,
        end,
        lines,
        last_line_partial,
    })
}

/// The start of the line that holds the byte before `position` (or `position` itself when that
/// byte is a newline): the offset just after the last newline before `position`.
fn line_start(file: &File, position: u64) -> std::io::Result<u64> {
    let mut found = None;
    scan_back(file, position, |index, byte| {
        if byte == b'\n' {
            found = Some(index + 1);
            false
        } else {
            true
        }
    })?;
    Ok(found.unwrap_or(0))
}

/// Where the `count` lines that end at `end` start (`end` is a line start or the end of the file;
/// a last line without newline counts as a line), and how many lines that is (fewer than `count`
/// at the start of the file).
fn lines_back(file: &File, end: u64, count: usize) -> std::io::Result<(u64, usize)> {
    if count == 0 || end == 0 {
        return Ok((end, 0));
    }
    let mut newlines = 0;
    let mut found = None;
    let mut first = true;
    scan_back(file, end, |index, byte| {
        // The newline that ends the last line does not start another one.
        if std::mem::take(&mut first) && byte == b'\n' {
            return true;
        }
        if byte == b'\n' {
            newlines += 1;
            if newlines == count {
                found = Some(index + 1);
                return false;
            }
        }
        true
    })?;
    Ok(match found {
        Some(start) => (start, count),
        None => (0, newlines + 1),
    })
}

/// Visits the bytes before `position` from the last to the first, a block at a time, until `visit`
/// returns false.
fn scan_back(file: &File, position: u64, mut visit: impl FnMut(u64, u8) -> bool) -> std::io::Result<()> {
    let mut block = vec![0u8; BLOCK_BYTES];
    let mut end = position;
    while end > 0 {
        let start = end.saturating_sub(BLOCK_BYTES as u64);
        let part = &mut block[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        for (i, byte) in part.iter().enumerate().rev() {
            if !visit(start + i as u64, *byte) {
                return Ok(());
            }
        }
        end = start;
    }
    Ok(())
}

fn read_at_most(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buffer.len() {
        match file.read_at(&mut buffer[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn line_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes.strip_suffix(b"\r").unwrap_or(bytes)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn last_lines_counts_a_final_line_without_newline() {
        let (_dir, path) = file_with("a\nb\nc");
        let page = last_lines(&path, 2).unwrap();
        assert_eq!(page.lines, ["b", "c"]);
        assert!(page.last_line_partial);
        assert_eq!((page.offset, page.end), (2, 5));
        let (_dir, path) = file_with("a\nb\nc\n");
        assert_eq!(last_lines(&path, 2).unwrap().lines, ["b", "c"]);
        assert_eq!(last_lines(&path, 10).unwrap().lines, ["a", "b", "c"]);
        assert_eq!(last_lines(&path, 0).unwrap().lines, Vec::<String>::new());
    }

    #[test]
    fn lines_around_an_offset() {
        let (_dir, path) = file_with("zero\none\ntwo\nthree\nfour\n");
        // Offset 10 is inside "two".
        let page = read_lines_around(&path, 10, 1, 1).unwrap();
        assert_eq!(page.lines, ["one", "two", "three"]);
        assert_eq!(read_lines_around(&path, 0, 3, 0).unwrap().lines, ["zero"]);
        // The offset of a newline belongs to the line it ends.
        assert_eq!(read_lines_around(&path, 4, 0, 0).unwrap().lines, ["zero"]);
    }

    #[test]
    fn a_tail_waits_for_the_newline() {
        let (_dir, path) = file_with("one\ntw");
        let mut tail = FileTail::from_start(&path);
        assert_eq!(tail.read_new_lines(1 << 20).unwrap().lines, ["one"]);
        std::fs::write(&path, "one\ntwo\nthr").unwrap();
        let new = tail.read_new_lines(1 << 20).unwrap();
        assert_eq!((new.offset, new.lines.as_slice()), (4, ["two".to_owned()].as_slice()));
        let mut from_end = FileTail::from_end(&path).unwrap();
        assert_eq!(
            from_end.offset(),
            8,
            "a tail from the end starts at the half-written line"
        );
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        assert_eq!(from_end.read_new_lines(1 << 20).unwrap().lines, ["three"]);
    }
}
