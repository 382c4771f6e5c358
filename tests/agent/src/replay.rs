//! Replays a captured engine run (`stream_chunks.jsonl`) with its original timing.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::value_of;

pub fn main(args: &[String]) -> Result<u8, String> {
    let mut capture = None;
    let mut speed = 1.0f64;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--speed" => {
                let value = value_of(args, &mut i, "--speed")?;
                speed = value
                    .parse()
                    .map_err(|_| format!("--speed: `{value}` is not a number"))?;
                if speed <= 0.0 {
                    return Err("--speed must be above 0".into());
                }
            }
            other if capture.is_none() => capture = Some(other.to_owned()),
            other => return Err(format!("unknown argument `{other}`")),
        }
        i += 1;
    }
    let capture = capture.ok_or("replay needs a capture folder")?;
    replay(Path::new(&capture), speed)
}

fn replay(capture: &Path, speed: f64) -> Result<u8, String> {
    let chunks_path = capture.join("stream_chunks.jsonl");
    let chunks =
        std::fs::read_to_string(&chunks_path).map_err(|e| format!("cannot read {}: {e}", chunks_path.display()))?;
    let exit_path = capture.join("exit_code.txt");
    let exit_text =
        std::fs::read_to_string(&exit_path).map_err(|e| format!("cannot read {}: {e}", exit_path.display()))?;
    let status: i32 = exit_text
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{}: no exit status", exit_path.display()))?;

    let start = Instant::now();
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    for (number, line) in chunks.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let chunk: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{} line {}: {e}", chunks_path.display(), number + 1))?;
        let at = Duration::from_secs_f64(chunk["t"].as_f64().unwrap_or(0.0) / speed);
        if let Some(wait) = at.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let text = chunk["text"].as_str().unwrap_or_default().as_bytes();
        let written = match chunk["stream"].as_str() {
            Some("stderr") => stderr.write_all(text).and_then(|_| stderr.flush()),
            _ => stdout.write_all(text).and_then(|_| stdout.flush()),
        };
        if written.is_err() {
            return Ok(141); // the reader went away (SIGPIPE's status)
        }
    }
    if status > 128 {
        // The run was killed by a signal: end the same way.
        let signal = status - 128;
        let _ = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(std::process::id().to_string())
            .status();
        std::thread::sleep(Duration::from_secs(5));
    }
    Ok(u8::try_from(status).unwrap_or(1))
}
