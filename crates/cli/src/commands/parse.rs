//! `zstudio parse`: a captured run's stdout (and stderr) read as the studio reads a live run.

use std::io::{Read, Write};

use studio_core::protocol::{Stream, StreamReader};
use studio_core::timeline::{Exit, RunEnd, RunTimeline, TimelineFold};

use crate::cli::{Globals, ParseArgs};
use crate::print;

pub fn parse(args: &ParseArgs, globals: &Globals, out: &mut impl Write) -> anyhow::Result<()> {
    let stderr = match &args.stderr {
        Some(path) => Some(std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?),
        None => None,
    };
    let timeline = parse_stdin(stderr.as_deref(), args.exit_code)?;
    print::emit(out, globals.format(), &timeline, print::timeline)
}

/// Streams stdin through the reader in chunks: a multi-gigabyte log is never held whole.
fn parse_stdin(stderr: Option<&[u8]>, exit_code: Option<i32>) -> anyhow::Result<RunTimeline> {
    let mut reader = StreamReader::new();
    let mut fold = TimelineFold::new();
    let mut stdin = std::io::stdin().lock();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let n = match stdin.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => anyhow::bail!("cannot read standard input: {e}"),
        };
        reader.push(Stream::Stdout, &buffer[..n], 0, &mut |e| {
            fold.apply(&e);
        });
    }
    if let Some(stderr) = stderr {
        reader.push(Stream::Stderr, stderr, 0, &mut |e| {
            fold.apply(&e);
        });
    }
    reader.finish(0, &mut |e| {
        fold.apply(&e);
    });
    // Standard input read to its end: a log whose end was not recorded is not running.
    Ok(fold.captured_timeline(exit_code.map(|status| RunEnd {
        exit: Exit::from_shell_status(status),
        signalled_by_studio: false,
    })))
}
