//! How files move between this machine and a host: one way for the three of them (a session's
//! bundle exported from the host's server, a bundle or a log uploaded to it for an import, and
//! the server itself put on a host that lacks it).
//!
//! A file is read here in chunks of at most [`MAX_CHUNK`] bytes ([`send_file`]: a regular file,
//! never through a link, its size said first and held to) and taken on the other end by a
//! [`Receiving`], which holds the chunks to the offset the file has reached and to the size it
//! was said to have, and says which file when it refuses one. Over a studio server's stream a
//! chunk is raw bytes after the line of its frame (`"data": N`, as `remote::protocol` says),
//! not base64 inside JSON; the server's own upload, made before any server runs there, is the
//! same chunks gzipped into the standard input of an `ssh` command (`ssh::bootstrap`).

use std::io::{self, Read};
use std::path::Path;

use crate::vocabulary::error::Error;

/// The most bytes one chunk carries (an `export_read`'s answer, an `import_write`'s data).
pub const MAX_CHUNK: usize = 1 << 20;

/// Reads exactly `len` bytes of a frame's data from `input` (the input ended before them: an
/// error).
pub fn read_data(input: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut data = vec![0u8; len];
    input.read_exact(&mut data)?;
    Ok(data)
}

/// Skips `len` bytes of `input` (the data of a frame that was refused), holding none of them.
pub fn skip_data(input: &mut impl Read, len: u64) -> io::Result<()> {
    let skipped = io::copy(&mut input.take(len), &mut io::sink())?;
    match skipped == len {
        true => Ok(()),
        false => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the data of a frame was cut short",
        )),
    }
}

/// Reads `size` bytes of `reader` (the file `file`, as [`open_file`] opened it) in chunks of at
/// most [`MAX_CHUNK`] bytes, handing each to `send` with its offset. A file that gets shorter
/// while it is read is an error naming it; one that grows is sent as it was when it was opened.
pub fn send_file(
    file: &Path,
    mut reader: impl Read,
    size: u64,
    mut send: impl FnMut(u64, &[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut buffer = vec![0u8; MAX_CHUNK.min(usize::try_from(size).unwrap_or(MAX_CHUNK))];
    let mut offset = 0u64;
    while offset < size {
        let want = usize::try_from(size - offset).map_or(buffer.len(), |left| left.min(buffer.len()));
        let n = reader.read(&mut buffer[..want]).map_err(|e| Error::io(file, e))?;
        if n == 0 {
            return Err(Error::io(
                file,
                io::Error::new(io::ErrorKind::UnexpectedEof, "it got shorter while it was sent"),
            ));
        }
        send(offset, &buffer[..n])?;
        offset += n as u64;
    }
    Ok(())
}

/// The regular file `file` opened to be sent (never through a link), and its size.
pub fn open_file(file: &Path) -> Result<(std::fs::File, u64), Error> {
    let (reader, _) = crate::sessions::untrusted::open_regular(file)?;
    let size = reader.metadata().map_err(|e| Error::io(file, e))?.len();
    Ok((reader, size))
}

/// One file being taken in by chunks: each at the offset the file has reached, never past the
/// size it was said to have, never larger than [`MAX_CHUNK`]. Its refusals name the file (`what`)
/// and are the caller's to wrap (an invalid request on a server, a link's error on a client).
#[derive(Debug)]
pub struct Receiving {
    what: String,
    size: u64,
    received: u64,
}

impl Receiving {
    /// The file `what` (as errors name it), said to be `size` bytes.
    pub fn new(what: impl Into<String>, size: u64) -> Receiving {
        Receiving {
            what: what.into(),
            size,
            received: 0,
        }
    }

    /// How many bytes came so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The size the file was said to have.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Takes a chunk of `len` bytes at `offset` (to be written where the file goes once this
    /// answers), or says why not.
    pub fn take(&mut self, offset: u64, len: usize) -> Result<(), String> {
        if len > MAX_CHUNK {
            return Err(format!("a chunk of {} of {len} bytes: at most {MAX_CHUNK}", self.what));
        }
        if offset != self.received {
            return Err(format!(
                "a chunk of {} at offset {offset} where the upload is at {}",
                self.what, self.received
            ));
        }
        if self.received + len as u64 > self.size {
            return Err(format!(
                "{} would be longer than the {} bytes it was declared as: a chunk past the {} bytes",
                self.what, self.size, self.size
            ));
        }
        self.received += len as u64;
        Ok(())
    }

    /// Whether every byte said came, or what is missing.
    pub fn whole(&self) -> Result<(), String> {
        match self.received == self.size {
            true => Ok(()),
            false => Err(format!(
                "{} holds {} of its {} bytes",
                self.what, self.received, self.size
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_taken_in_order_within_its_size_and_refusals_name_it() {
        let mut receiving = Receiving::new("`run.log`", 6);
        receiving.take(0, 3).unwrap();
        let skipped = receiving.take(5, 1).unwrap_err();
        assert!(
            skipped.contains("`run.log` at offset 5 where the upload is at 3"),
            "{skipped}"
        );
        let past = receiving.take(3, 4).unwrap_err();
        assert!(past.contains("past the 6 bytes"), "{past}");
        let missing = receiving.whole().unwrap_err();
        assert_eq!(missing, "`run.log` holds 3 of its 6 bytes");
        let large = Receiving::new("x", u64::MAX).take(0, MAX_CHUNK + 1).unwrap_err();
        assert!(large.contains("at most"), "{large}");
        receiving.take(3, 3).unwrap();
        receiving.whole().unwrap();
    }

    #[test]
    fn a_file_is_sent_in_bounded_chunks_and_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big.zip");
        let bytes: Vec<u8> = (0..(2 * MAX_CHUNK + 10)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &bytes).unwrap();
        let mut sent = Vec::new();
        let mut offsets = Vec::new();
        let (reader, size) = open_file(&file).unwrap();
        send_file(&file, reader, size, |offset, chunk| {
            assert!(chunk.len() <= MAX_CHUNK);
            offsets.push(offset);
            sent.extend_from_slice(chunk);
            Ok(())
        })
        .unwrap();
        assert_eq!(size, bytes.len() as u64);
        assert_eq!(offsets, [0, MAX_CHUNK as u64, 2 * MAX_CHUNK as u64]);
        assert!(sent == bytes, "the bytes sent are the file's");
        let link = dir.path().join("link.zip");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_file(&link).is_err(), "a link is not followed");
        let (reader, _) = open_file(&file).unwrap();
        let shorter = send_file(&file, reader, bytes.len() as u64 + 1, |_, _| Ok(())).unwrap_err();
        assert!(shorter.to_string().contains("got shorter"), "{shorter}");
        assert!(shorter.to_string().contains("big.zip"), "{shorter}");
    }

    #[test]
    fn data_is_read_whole_or_refused_and_skipped_without_being_held() {
        let mut input = &b"abcdefgh"[..];
        assert_eq!(read_data(&mut input, 3).unwrap(), b"abc");
        skip_data(&mut input, 2).unwrap();
        assert_eq!(read_data(&mut input, 3).unwrap(), b"fgh");
        assert!(read_data(&mut &b"ab"[..], 3).is_err());
        assert!(skip_data(&mut &b"ab"[..], 3).is_err());
    }
}
