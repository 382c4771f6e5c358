//! A kept run's output as its keeper's files hold it ([`crate::runs::keeper`]), read from where
//! the last read stopped: each piece with the time the keeper saw it (its `times` file: the two
//! streams in the order they came), in bounded pieces. Read once to the end for a run that ended
//! while no studio followed it, and as it grows for a run a studio adopted
//! (`adopted`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::protocol::Stream;
use crate::runs::keeper::{TimesLine, STDERR_FILE, STDOUT_FILE, TIMES_FILE};
use crate::vocabulary::error::Error;

/// The most bytes read at once (a piece handed on is never larger).
const PIECE: usize = 64 * 1024;

/// One of the keeper's output files, and how much of it was read.
struct TailedFile {
    stream: Stream,
    name: &'static str,
    path: PathBuf,
    /// Opened once it is there.
    file: Option<std::fs::File>,
    done: u64,
}

impl TailedFile {
    /// The file, opened when it was not yet (`None` while it is not there).
    fn opened(&mut self) -> Result<Option<&mut std::fs::File>, Error> {
        if self.file.is_none() {
            match crate::sessions::untrusted::open_regular(&self.path) {
                Ok((file, _)) => self.file = Some(file),
                Err(e) if crate::sessions::untrusted::is_not_found(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(self.file.as_mut())
    }

    /// Reads up to `limit` more bytes (to the file's end at most), handing them on at `ms`.
    fn read(&mut self, limit: u64, ms: u64, push: &mut dyn FnMut(Stream, &[u8], u64)) -> Result<(), Error> {
        let (stream, path) = (self.stream, self.path.clone());
        let Some(file) = self.opened()? else { return Ok(()) };
        let read = read_to(file, &path, limit, &mut |bytes| push(stream, bytes, ms))?;
        self.done += read;
        Ok(())
    }
}

/// A kept run's files, read on from where the last read stopped.
pub(super) struct KeptTail {
    files: [TailedFile; 2],
    times_path: PathBuf,
    times: Option<std::fs::File>,
    /// The end of the `times` file not read as a line yet (a line being written).
    partial: Vec<u8>,
    /// When the keeper started (its output's times count from there), once read.
    pub(super) start: Option<SystemTime>,
    /// The last time known, in ms from `start`.
    last_ms: u64,
    exit_ms: Option<u64>,
}

impl KeptTail {
    /// The files of keeper folder `dir`, none read yet.
    pub(super) fn new(dir: &Path) -> KeptTail {
        let file = |stream, name: &'static str| TailedFile {
            stream,
            name,
            path: dir.join(name),
            file: None,
            done: 0,
        };
        KeptTail {
            files: [file(Stream::Stdout, STDOUT_FILE), file(Stream::Stderr, STDERR_FILE)],
            times_path: dir.join(TIMES_FILE),
            times: None,
            partial: Vec::new(),
            start: None,
            last_ms: 0,
            exit_ms: None,
        }
    }

    /// Hands on what the `times` file says was written since the last read, piece by piece, each
    /// with the time the keeper saw it. Without a `times` file (an older keeper's) nothing is
    /// read here: [`KeptTail::read_rest`] reads it all.
    pub(super) fn read_new(&mut self, push: &mut dyn FnMut(Stream, &[u8], u64)) -> Result<(), Error> {
        if self.times.is_none() {
            match crate::sessions::untrusted::open_regular(&self.times_path) {
                Ok((file, _)) => self.times = Some(file),
                Err(e) if crate::sessions::untrusted::is_not_found(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        let mut buffer = vec![0u8; PIECE];
        loop {
            let Some(times) = self.times.as_mut() else {
                return Ok(());
            };
            let n = times.read(&mut buffer).map_err(|e| Error::io(&self.times_path, e))?;
            if n == 0 {
                return Ok(());
            }
            self.partial.extend_from_slice(&buffer[..n]);
            let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            let lines: Vec<u8> = self.partial.drain(..=last_newline).collect();
            for line in String::from_utf8_lossy(&lines).lines() {
                self.take_line(line, push)?;
            }
        }
    }

    fn take_line(&mut self, line: &str, push: &mut dyn FnMut(Stream, &[u8], u64)) -> Result<(), Error> {
        match TimesLine::parse(line) {
            Some(TimesLine::Start(start)) => self.start = Some(start),
            Some(TimesLine::Exit(ms)) => self.exit_ms = Some(ms),
            Some(TimesLine::Chunk(name, end, ms)) => {
                self.last_ms = ms;
                if let Some(file) = self.files.iter_mut().find(|f| f.name == name) {
                    if end > file.done {
                        file.read(end - file.done, ms, push)?;
                    }
                }
            }
            None => {}
        }
        Ok(())
    }

    /// Reads everything the files hold now: what the `times` file covers, then the rest of each
    /// file at the last time known (the agent's end, when the keeper saw it). Returns that time.
    pub(super) fn read_rest(&mut self, push: &mut dyn FnMut(Stream, &[u8], u64)) -> Result<u64, Error> {
        self.read_new(push)?;
        let last_ms = self.exit_ms.unwrap_or(self.last_ms).max(self.last_ms);
        for file in &mut self.files {
            file.read(u64::MAX, last_ms, push)?;
        }
        Ok(last_ms)
    }
}

/// Reads up to `limit` bytes of `file` (to its end at most), handing them on piece by piece.
pub(super) fn read_to(
    file: &mut std::fs::File,
    path: &Path,
    limit: u64,
    push: &mut dyn FnMut(&[u8]),
) -> Result<u64, Error> {
    let mut buffer = vec![0u8; PIECE];
    let mut done = 0u64;
    while done < limit {
        let want = usize::try_from((limit - done).min(buffer.len() as u64)).unwrap_or(buffer.len());
        let n = file.read(&mut buffer[..want]).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        done += n as u64;
        push(&buffer[..n]);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(path: &Path, bytes: &[u8]) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    /// What the files held, as `(stream, text, ms)` pieces handed on.
    fn read(tail: &mut KeptTail, rest: bool) -> Vec<(Stream, String, u64)> {
        let mut pieces = Vec::new();
        let mut push =
            |stream, bytes: &[u8], ms| pieces.push((stream, String::from_utf8_lossy(bytes).into_owned(), ms));
        if rest {
            tail.read_rest(&mut push).unwrap();
        } else {
            tail.read_new(&mut push).unwrap();
        }
        pieces
    }

    #[test]
    fn a_growing_keeper_folder_is_read_in_the_order_its_times_say_each_byte_once() {
        let dir = tempfile::TempDir::new().unwrap();
        let (out, err, times) = (
            dir.path().join(STDOUT_FILE),
            dir.path().join(STDERR_FILE),
            dir.path().join(TIMES_FILE),
        );
        let mut tail = KeptTail::new(dir.path());
        assert!(read(&mut tail, false).is_empty(), "nothing there yet");
        append(&out, b"one\n");
        append(&err, b"warn\n");
        // A line of the times file being written is read once it is whole.
        append(&times, b"start 1000\nstdout 4 10\nstderr 5 12\nstdout 8 2");
        assert_eq!(
            read(&mut tail, false),
            [
                (Stream::Stdout, "one\n".into(), 10),
                (Stream::Stderr, "warn\n".into(), 12)
            ]
        );
        assert_eq!(
            tail.start,
            Some(std::time::UNIX_EPOCH + std::time::Duration::from_millis(1000))
        );
        append(&out, b"two\nthr");
        append(&times, b"0\n");
        assert_eq!(read(&mut tail, false), [(Stream::Stdout, "two\n".into(), 20)]);
        // Past the times file (the keeper ended): the rest, at the agent's end.
        append(&times, b"exit 30\n");
        assert_eq!(read(&mut tail, true), [(Stream::Stdout, "thr".into(), 30)]);
        assert!(read(&mut tail, true).is_empty(), "each byte once");
    }
}
