//! Any bytes, cut into chunks at the places the first bytes choose, on either stream: the reader
//! and the timeline fold must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use studio_protocol::protocol::{Stream, StreamReader};
use studio_protocol::timeline::{Exit, RunEnd, TimelineFold};

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut reader = StreamReader::new();
    let mut fold = TimelineFold::new();
    let step = usize::from(control % 61) + 1;
    for (i, chunk) in rest.chunks(step).enumerate() {
        let stream = if (control >> 6) != 0 && i % 3 == 2 {
            Stream::Stderr
        } else {
            Stream::Stdout
        };
        reader.push(stream, chunk, i as u64, &mut |event| {
            fold.apply(&event);
        });
    }
    reader.finish(u64::MAX, &mut |event| {
        fold.apply(&event);
    });
    let end = RunEnd {
        exit: Exit::from_shell_status(i32::from(control)),
        signalled_by_studio: control & 1 == 1,
    };
    let _ = fold.timeline(Some(end));
});
