//! A captured log as a side: read as `zstudio parse` reads it, its stderr telling how it failed.

use std::collections::HashMap;
use std::io::Read;

use crate::protocol::{Stream, StreamReader};
use crate::sessions::cost::{NodeUsage, OutputUsageReader};
use crate::sessions::untrusted;
use crate::timeline::{Exit, RunEnd};
use crate::vocabulary::error::Error;

use super::{stream_log, with_usage, CapturedLog, Execution, Hashes, Lines, RunSummary, Side, Target, CHUNK_BYTES};

impl Side {
    pub(super) fn open_log(log: &CapturedLog) -> Result<Side, Error> {
        let path = log.stdout.as_path();
        let mut hashes = Hashes::default();
        let mut printed = OutputUsageReader::<usize>::new();
        let mut fold = stream_log(path, &mut |target, at, text| {
            hashes.push(target, at, text);
            let execution = match target {
                Target::Execution(index) => Some(index),
                Target::Outside => None,
            };
            printed.line(execution.as_ref(), text);
            true
        })?;
        let mut printed = printed.finish();
        // Its stderr tells how it failed (compared are the stdout's lines).
        if let Some(stderr) = &log.stderr {
            let (mut file, _) = untrusted::open_regular(stderr)?;
            let mut reader = StreamReader::new();
            let mut buffer = vec![0u8; CHUNK_BYTES];
            loop {
                let n = match file.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io(stderr, e)),
                };
                reader.push(Stream::Stderr, &buffer[..n], 0, &mut |e| {
                    fold.apply(&e);
                });
            }
            reader.finish(0, &mut |e| {
                fold.apply(&e);
            });
        }
        let end = log.exit_code.map(|status| RunEnd {
            exit: Exit::from_shell_status(status),
            signalled_by_studio: false,
        });
        let timeline = fold.captured_timeline(end);
        let mut kept = timeline.nodes.iter();
        let mut executions = Vec::new();
        for index in 0.. {
            let Some(node) = fold.node(index) else { break };
            let discarded = node.is_discarded();
            // The timeline's nodes are the kept ones, with the statuses the run's end gave them.
            let status = if discarded {
                node.status
            } else {
                kept.next().map_or(node.status, |kept| kept.status)
            };
            executions.push(Execution {
                name: node.name.clone(),
                status,
                started_ms: None,
                elapsed_ms: node.took.as_deref().and_then(took_ms),
                discarded,
                usage: None,
            });
        }
        // A node's usage is the last one its executions printed.
        let mut by_name: HashMap<String, NodeUsage> = HashMap::new();
        for (index, execution) in executions.iter().enumerate() {
            if let Some(usage) = printed.remove(&index) {
                by_name.insert(execution.name.clone(), usage);
            }
        }
        let usage = with_usage(&mut executions, |name| by_name.remove(name));
        Ok(Side {
            summary: RunSummary {
                session_id: None,
                run_id: None,
                status: timeline.status,
                elapsed_ms: None,
                usage,
            },
            executions,
            artifacts: HashMap::new(),
            has_files: false,
            hashes,
            lines: Lines::Log(path.to_owned()),
        })
    }
}

/// The engine's duration text (`2ms`, `1.5s`, `1m 3s`) in milliseconds.
fn took_ms(took: &str) -> Option<u64> {
    let took = took.trim();
    if let Some(ms) = took.strip_suffix("ms") {
        return ms.trim().parse::<f64>().ok().map(|ms| ms.round() as u64);
    }
    if let Some(seconds) = took.strip_suffix('s').filter(|s| !s.contains(' ')) {
        if let Ok(seconds) = seconds.trim().parse::<f64>() {
            return Some((seconds * 1000.0).round() as u64);
        }
    }
    humantime::parse_duration(took).ok().map(|d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::took_ms;

    #[test]
    fn the_engines_durations_read_as_milliseconds() {
        assert_eq!(took_ms("2ms"), Some(2));
        assert_eq!(took_ms("1.5s"), Some(1500));
        assert_eq!(took_ms("1m 3s"), Some(63_000));
        assert_eq!(took_ms("soon"), None);
    }
}
