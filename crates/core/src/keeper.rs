//! The run keeper: a small process between the studio and an agent, so that a run can outlive
//! the studio that started it ("leave it running" on quit) and still be accounted for.
//!
//! The keeper is started in the run's own process group, starts the agent as its child, copies
//! the agent's stdout and stderr both to its own (the studio's pipes, for live following) and to
//! files in the run folder, waits for the agent, and writes the agent's exit status to
//! `<run folder>/exit`. When the studio goes away, writes to its pipes fail and the keeper carries
//! on with the files alone. It survives SIGTERM/SIGINT/SIGHUP sent to the group (the agent gets
//! them too and ends as it will; the keeper then records how); SIGKILL ends it with the group.
//!
//! `zstudio keep --run-dir DIR -- COMMAND [ARGS...]` runs [`keep`].

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub const STDOUT_FILE: &str = "stdout";
pub const STDERR_FILE: &str = "stderr";
pub const EXIT_FILE: &str = "exit";

/// How the agent ended, as the keeper writes it to its `exit` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptExit {
    Code(i32),
    Signal(i32),
}

/// Reads the `exit` file of a run folder, if the agent has ended.
pub fn read_exit(run_dir: &Path) -> Option<KeptExit> {
    let text = std::fs::read_to_string(run_dir.join(EXIT_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The keeper's main: returns the exit status to end with (the agent's, shell-style).
pub fn keep(run_dir: &Path, command: &[String]) -> i32 {
    match keep_inner(run_dir, command) {
        Ok(status) => status,
        Err(message) => {
            eprintln!("zibby run keeper: {message}");
            let _ = std::fs::write(run_dir.join(EXIT_FILE), r#"{"code":127}"#);
            127
        }
    }
}

fn keep_inner(run_dir: &Path, command: &[String]) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt;
    std::fs::create_dir_all(run_dir).map_err(|e| format!("cannot create {}: {e}", run_dir.display()))?;
    // Signals to the run's group are for the agent; the keeper stays to record how it ended.
    let noticed = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, noticed.clone())
            .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
    }
    let (program, args) = command.split_first().ok_or("no command to keep")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("cannot start `{program}`: command not found"),
            std::io::ErrorKind::PermissionDenied => {
                format!("cannot start `{program}`: not executable (permission denied)")
            }
            _ => format!("cannot start `{program}`: {e}"),
        })?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out_file = std::fs::File::create(run_dir.join(STDOUT_FILE)).map_err(|e| e.to_string())?;
    let err_file = std::fs::File::create(run_dir.join(STDERR_FILE)).map_err(|e| e.to_string())?;
    let copiers = [
        std::thread::spawn(move || copy(stdout, out_file, std::io::stdout())),
        std::thread::spawn(move || copy(stderr, err_file, std::io::stderr())),
    ];
    let status = child.wait().map_err(|e| format!("cannot wait for `{program}`: {e}"))?;
    // Something the agent started may hold its pipes: give the copies a moment, no more.
    let deadline = Instant::now() + Duration::from_secs(2);
    while copiers.iter().any(|c| !c.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let exit = match (status.code(), status.signal()) {
        (Some(code), _) => KeptExit::Code(code),
        (None, Some(signal)) => KeptExit::Signal(signal),
        (None, None) => KeptExit::Code(-1),
    };
    let text = serde_json::to_string(&exit).expect("exits serialise");
    std::fs::write(run_dir.join(EXIT_FILE), text).map_err(|e| format!("cannot record the exit: {e}"))?;
    Ok(match exit {
        KeptExit::Code(code) => code,
        KeptExit::Signal(signal) => 128 + signal,
    })
}

/// Copies a pipe to a file (always) and to the keeper's own stream (while someone reads it).
fn copy(mut from: impl Read, mut file: std::fs::File, mut live: impl Write) {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut live_open = true;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if file.write_all(&buffer[..n]).is_err() {
            break;
        }
        if live_open && live.write_all(&buffer[..n]).and_then(|_| live.flush()).is_err() {
            // The studio went away: the file alone carries the output from here.
            live_open = false;
        }
    }
}
