//! A studio server's replies as they are written (`zstudio serve --stdio`, the `server` module
//! beside this one): one writer thread writes every frame whole, and a long reply by pieces as
//! its result is serialised (`ReplyOut`), nothing written between them.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

use serde::Serialize;

use crate::remote::protocol::{data_reply_line, start_reply, REPLY_END};

/// What the writer thread is given: a frame to write, a reply to write as its pieces come (no
/// other frame between them), or the end.
pub(crate) enum Outgoing {
    Frame(Vec<u8>),
    Reply(Receiver<Piece>),
    End,
}

/// A piece of a reply written as it is serialised ([`ReplyOut`]).
pub(crate) enum Piece {
    More(Vec<u8>),
    /// The reply's last bytes, its newline included.
    Last(Vec<u8>),
}

/// How many bytes of a result are serialised before they are handed to the writer: a reply this
/// long or shorter is one frame; a longer one leaves by pieces of about this size while the rest
/// is serialised.
const PIECE_BYTES: usize = 256 * 1024;

/// How many pieces of a reply wait for the writer before its serialisation waits in turn (what
/// bounds a long reply's memory on the server).
const PIECES_AHEAD: usize = 2;

/// A reply being written: `{"id":N,"result":`, then the result's JSON text as it is
/// serialised, then `}` and the newline (the protocol's shape, [`start_reply`]). The first
/// [`PIECE_BYTES`] are kept: a result that ends before is one frame, and one that does not
/// serialise is answered with its error instead. Past them, the reply is handed to the writer by
/// pieces as they fill, so that its first bytes leave while the rest is serialised, and no whole
/// copy of a long result is ever held; one that fails then (or whose worker panics) ends on a
/// broken line, which the client refuses.
pub(crate) struct ReplyOut<'a> {
    id: u64,
    frames: &'a Sender<Outgoing>,
    buffer: Vec<u8>,
    pieces: Option<SyncSender<Piece>>,
    written: bool,
}

/// What a method answers when its result was written to its [`ReplyOut`].
pub(crate) struct Written(());

/// A method's result as its reply writes it: through serde, or as its own JSON text.
pub(crate) trait Answer {
    fn write_to(&self, out: &mut ReplyOut<'_>) -> Result<Written, serde_json::Error>;
}

impl<T: Serialize> Answer for T {
    fn write_to(&self, out: &mut ReplyOut<'_>) -> Result<Written, serde_json::Error> {
        out.write_result(self)
    }
}

impl<'a> ReplyOut<'a> {
    pub(crate) fn new(id: u64, frames: &'a Sender<Outgoing>) -> ReplyOut<'a> {
        let mut buffer = Vec::with_capacity(4096);
        start_reply(id, &mut buffer);
        ReplyOut {
            id,
            frames,
            buffer,
            pieces: None,
            written: false,
        }
    }

    /// Writes `result` as the reply's, and ends the reply.
    pub(crate) fn write_result(&mut self, result: &impl Serialize) -> Result<Written, serde_json::Error> {
        self.write_result_text(|out| serde_json::to_writer(out, result).map_err(io::Error::from))
    }

    /// Writes the result's JSON text as `write` writes it (a result written without serde's
    /// help: the listing as a table), and ends the reply.
    pub(crate) fn write_result_text(
        &mut self,
        write: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> Result<Written, serde_json::Error> {
        assert!(!self.written, "a reply has one result");
        self.written = true;
        write(self).map_err(serde_json::Error::io)?;
        self.buffer.extend_from_slice(REPLY_END);
        let last = std::mem::take(&mut self.buffer);
        let sent = match self.pieces.take() {
            None => self.frames.send(Outgoing::Frame(last)).is_ok(),
            Some(pieces) => pieces.send(Piece::Last(last)).is_ok(),
        };
        match sent {
            true => Ok(Written(())),
            false => Err(serde_json::Error::io(output_closed())),
        }
    }

    /// Answers with `data`, raw bytes after the reply's line (a file's chunk: one frame, no
    /// JSON text).
    pub(crate) fn write_data(&mut self, data: &[u8]) -> Result<Written, serde_json::Error> {
        assert!(!self.written && self.pieces.is_none(), "a reply has one result");
        self.written = true;
        let mut frame = data_reply_line(self.id, data.len());
        frame.extend_from_slice(data);
        match self.frames.send(Outgoing::Frame(frame)) {
            Ok(()) => Ok(Written(())),
            Err(_) => Err(serde_json::Error::io(output_closed())),
        }
    }

    /// Whether part of the reply left already (an error cannot be answered in its place).
    pub(crate) fn started(&self) -> bool {
        self.pieces.is_some()
    }

    /// Hands what was serialised so far to the writer: the first time, the reply's place among
    /// the frames.
    fn hand_on(&mut self) -> io::Result<()> {
        let pieces = match &self.pieces {
            Some(pieces) => pieces,
            None => {
                let (pieces, reply) = mpsc::sync_channel(PIECES_AHEAD);
                self.frames.send(Outgoing::Reply(reply)).map_err(|_| output_closed())?;
                self.pieces.insert(pieces)
            }
        };
        let piece = std::mem::replace(&mut self.buffer, Vec::with_capacity(PIECE_BYTES + PIECE_BYTES / 8));
        pieces.send(Piece::More(piece)).map_err(|_| output_closed())
    }
}

impl Write for ReplyOut<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= PIECE_BYTES {
            self.hand_on()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn output_closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the server's output closed")
}

/// Writes each frame whole, and each reply by pieces as they come (nothing between them),
/// flushing when none waits; stops at the end or when the output closes.
pub(crate) fn write_frames(mut output: impl Write, outgoing: &Receiver<Outgoing>) {
    let mut next = outgoing.recv();
    loop {
        let written = match next {
            Ok(Outgoing::Frame(frame)) => output.write_all(&frame),
            Ok(Outgoing::Reply(pieces)) => write_pieces(&mut output, &pieces),
            Ok(Outgoing::End) | Err(_) => break,
        };
        if written.is_err() {
            return;
        }
        next = match outgoing.try_recv() {
            Ok(more) => Ok(more),
            Err(_) => {
                if output.flush().is_err() {
                    return;
                }
                outgoing.recv()
            }
        };
    }
    let _ = output.flush();
}

/// Writes a reply's pieces as they come, each flushed (the client reads it as it is written); a
/// reply given up before its last piece ends its line there: a broken frame, not one run into
/// the next.
fn write_pieces(output: &mut impl Write, pieces: &Receiver<Piece>) -> io::Result<()> {
    loop {
        match pieces.recv() {
            Ok(Piece::More(piece)) => {
                output.write_all(&piece)?;
                output.flush()?;
            }
            Ok(Piece::Last(piece)) => return output.write_all(&piece),
            Err(_) => {
                tracing::warn!("a reply given up as it was written: its line ends unfinished");
                return output.write_all(b"\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::protocol::{error_frame, parse_server_frame, ServerFrame, WireError};
    use crate::vocabulary::error::Error;
    use serde_json::Value;

    /// A result longer than a few pieces: rows of text with characters JSON escapes.
    fn long_result() -> Vec<String> {
        (0..40_000)
            .map(|i| format!("row {i}: \"quoted\"\tand tabbed"))
            .collect()
    }

    /// A reply as one frame: `{"id":N,"result":…}` and its newline.
    fn reply_line(id: u64, result: &impl Serialize) -> Vec<u8> {
        let mut line = format!(r#"{{"id":{id},"result":"#).into_bytes();
        line.extend_from_slice(&serde_json::to_vec(result).unwrap());
        line.extend_from_slice(b"}\n");
        line
    }

    #[test]
    fn a_short_reply_is_one_frame_of_the_protocols_shape() {
        let (frames, outgoing) = mpsc::channel();
        let mut out = ReplyOut::new(3, &frames);
        out.write_result(&serde_json::json!({"a": [1, "b\nc"]})).unwrap();
        assert!(!out.started());
        let Ok(Outgoing::Frame(frame)) = outgoing.try_recv() else {
            panic!("not one frame")
        };
        assert_eq!(
            frame,
            br#"{"id":3,"result":{"a":[1,"b\nc"]}}"#.iter().chain(b"\n").copied().collect::<Vec<u8>>()
        );
        assert!(outgoing.try_recv().is_err(), "nothing more");
    }

    #[test]
    fn a_long_reply_leaves_by_pieces_whole_with_no_frame_between_them() {
        let result = long_result();
        let expected = reply_line(9, &result);
        assert!(expected.len() > 4 * PIECE_BYTES, "{} bytes", expected.len());
        let (frames, outgoing) = mpsc::channel();
        frames
            .send(Outgoing::Frame(b"{\"method\":\"a\",\"params\":1}\n".to_vec()))
            .unwrap();
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let mut out = ReplyOut::new(9, &frames);
                out.write_result(&result).map(|_| ()).unwrap();
            });
            // The notification before, then the reply's place: a frame queued now, while the
            // reply's pieces are still being serialised (its worker waits for the writer), is
            // written after its last piece.
            let before = outgoing.recv().unwrap();
            let reply = outgoing.recv().unwrap();
            assert!(matches!(reply, Outgoing::Reply(_)), "the reply leaves by pieces");
            assert!(!worker.is_finished(), "its worker waits for the writer");
            let (queue, queued) = mpsc::channel();
            for frame in [
                before,
                reply,
                Outgoing::Frame(b"{\"method\":\"b\",\"params\":2}\n".to_vec()),
                Outgoing::End,
            ] {
                queue.send(frame).unwrap();
            }
            let mut output = Vec::new();
            write_frames(&mut output, &queued);
            worker.join().unwrap();
            let mut lines = output.split_inclusive(|b| *b == b'\n');
            assert_eq!(lines.next().unwrap(), b"{\"method\":\"a\",\"params\":1}\n");
            let line = lines.next().unwrap();
            assert!(line == expected.as_slice(), "the reply is not its frame, whole");
            let ServerFrame::Reply {
                id: 9,
                outcome: Ok(text),
            } = parse_server_frame(&line[..line.len() - 1]).unwrap()
            else {
                panic!("not read as reply 9")
            };
            assert_eq!(serde_json::from_slice::<Vec<String>>(text).unwrap(), result);
            assert_eq!(lines.next().unwrap(), b"{\"method\":\"b\",\"params\":2}\n");
            assert_eq!(lines.next(), None);
        });
    }

    /// A result that fails to serialise once `after` bytes of it are written.
    struct FailsAfter(usize);

    impl Serialize for FailsAfter {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{Error as _, SerializeSeq};
            let mut seq = serializer.serialize_seq(None)?;
            seq.serialize_element(&"x".repeat(self.0))?;
            drop(seq);
            Err(S::Error::custom("a result that does not serialise"))
        }
    }

    #[test]
    fn a_reply_given_up_as_it_is_written_ends_its_line_and_the_next_frame_reads() {
        // Before any piece left: nothing is sent, the error can be answered in its place.
        let (frames, outgoing) = mpsc::channel();
        let mut out = ReplyOut::new(4, &frames);
        assert!(out.write_result(&FailsAfter(100)).is_err());
        assert!(!out.started());
        drop(out);
        assert!(outgoing.try_recv().is_err(), "nothing sent");
        // After: the pieces that left end on a line of their own, which does not read.
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || {
                let mut output = Vec::new();
                write_frames(&mut output, &outgoing);
                output
            });
            let mut out = ReplyOut::new(5, &frames);
            assert!(out.write_result(&FailsAfter(3 * PIECE_BYTES)).is_err());
            assert!(out.started());
            drop(out);
            let error = WireError::from(&Error::RunNotLive { id: "r".into() });
            frames.send(Outgoing::Frame(error_frame(Some(5), &error))).unwrap();
            frames.send(Outgoing::End).unwrap();
            let output = writer.join().unwrap();
            let lines: Vec<&[u8]> = output.split(|b| *b == b'\n').collect();
            assert_eq!(
                lines.len(),
                3,
                "the broken reply, the error, nothing after the last newline"
            );
            let broken = match parse_server_frame(lines[0]) {
                Ok(ServerFrame::Reply { outcome: Ok(text), .. }) => serde_json::from_slice::<Value>(text).is_err(),
                other => other.is_err(),
            };
            assert!(broken, "the given-up reply reads as a reply");
            assert!(matches!(
                parse_server_frame(lines[1]),
                Ok(ServerFrame::Reply { id: 5, outcome: Err(ref e) }) if e.code == "run_not_live"
            ));
            assert_eq!(lines[2], b"");
        });
    }
}
