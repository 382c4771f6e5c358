//! The run keeper: a small process between the studio and an agent, so that a run can outlive
//! the studio that started it ("leave it running" on quit) and still be accounted for.
//!
//! The keeper is started in the run's own process group, starts the agent as its child, copies
//! the agent's stdout and stderr both to its own (the studio's pipes, for live following) and to
//! files in the run folder (with the time it saw each piece, [`TIMES_FILE`]), waits for the
//! agent, and writes the agent's exit status to `<run folder>/exit`. When the studio goes away, writes to its pipes fail and the keeper carries
//! on with the files alone. It survives SIGTERM/SIGINT/SIGHUP sent to the group (the agent gets
//! them too and ends as it will; the keeper then records how); SIGKILL ends it with the group.
//!
//! Nothing of a run outlives a stop, and nothing of it is out of reach:
//! - the keeper is a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever the agent starts stays
//!   below the keeper, also when it leaves the run's group with `setsid` or its parent ends (the
//!   keeper reaps those orphans), so a stop finds it by walking the keeper's descendants;
//! - once told of a stop (SIGTERM/SIGINT/SIGHUP to the group, or SIGUSR1 to the keeper alone,
//!   which a graceful stop sends), the keeper ends every descendant left when the agent exits;
//! - the agent dies with its keeper (`PR_SET_PDEATHSIG`, SIGKILL): the keeper starts itself
//!   again as a trampoline ([`AGENT_OF`] set) that sets it on itself and then `exec`s the
//!   agent, so that no `pre_exec` closure (unsafe code) is needed;
//! - where the platform allows it, the run has a cgroup of its own
//!   ([`crate::vocabulary::containment::RunCgroup`], its path in [`CGROUP_FILE`]): the
//!   trampoline moves into it before the agent starts, so nothing the agent starts can leave it,
//!   and a stop, a killed keeper or a run settled as interrupted ends it whole (`cgroup.kill`);
//!   the keeper itself stays out of it, to record how the agent ended. Elsewhere, and as well,
//!   the run's processes carry its id in their environment and are found by it once the keeper
//!   that was their subreaper is gone.
//!
//! On a full disk the keeper still reads both pipes to their end (the agent is never ended by
//! SIGPIPE), says once on the run's stderr which file is incomplete, and exits with the agent's
//! status even when it cannot record it.
//!
//! When the studio that followed a run is gone, another studio process can take the run over
//! while it goes on (`runner::Supervisor::adopt`): it reads these files from what the store
//! already has and follows them as they grow (their `times` file says in which order the two
//! streams came), then records the end from `exit`.
//!
//! Known gaps: without a cgroup, a process that leaves the run's group and clears its
//! environment escapes once its keeper is gone; a detached run's keeper killed while no studio
//! follows it takes its agent along at once, and the agent's own children when a studio process
//! next settles the run (or `zstudio stop` is asked); what the agent leaves running when it ends
//! by itself (not stopped) is left; runs recorded by older builds have no process identity and
//! are never signalled.
//!
//! `zstudio keep --run-dir DIR -- COMMAND [ARGS...]` runs [`keep`].

#![allow(
    clippy::print_stderr,
    reason = "the keeper is a process of its own: its stderr is the run's, where its troubles belong"
)]

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
/// When the keeper saw each piece of output and the agent's end (see [`read_start_and_exit`]).
pub const TIMES_FILE: &str = "times";
/// The run's cgroup, when the keeper made one (its path, one line).
pub const CGROUP_FILE: &str = "cgroup";
/// Set (to the keeper's pid) in the environment of the trampoline that becomes the agent.
pub const AGENT_OF: &str = "ZIBBY_KEEPER_AGENT_OF";
/// Set (to the run's cgroup) in the environment of the trampoline, which moves into it.
const AGENT_CGROUP: &str = "ZIBBY_KEEPER_CGROUP";

/// How the agent ended, as the keeper writes it to its `exit` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptExit {
    Code(i32),
    Signal(i32),
}

/// The run's cgroup its keeper recorded in `run_dir`, if it is one (see
/// [`RunCgroup::at`](crate::vocabulary::containment::RunCgroup::at)).
pub fn recorded_cgroup(run_dir: &Path, run_id: &str) -> Option<crate::vocabulary::containment::RunCgroup> {
    let bytes = crate::sessions::untrusted::read_bounded(&run_dir.join(CGROUP_FILE), 4096).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    crate::vocabulary::containment::RunCgroup::at(Path::new(text.trim_end()), run_id)
}

/// When the keeper saw things, so that a run no studio followed keeps its timing: its `times`
/// file, one line each: `start UNIX_MS` (the keeper's start, its first line), `stdout END MS` /
/// `stderr END MS` (the stream's file held END bytes at MS milliseconds after the start) and
/// `exit MS` (its last line, once the agent ended). Read as it grows by the runner's `kept_tail`.
///
/// The keeper's start and the agent's end (ms after the start) as the `times` file of a run
/// folder says them: its first line, and the last `exit` line of its last 64 KiB (the copies may
/// add a few lines after it while they drain the pipes), so that a file of millions of lines is
/// not read for two numbers. `None` for what it does not say (an older keeper's has no file;
/// an `exit` buried under more than 64 KiB of drained chunks is not found: the caller then
/// takes the `exit` file's time, written at most 2 s later).
pub fn read_start_and_exit(run_dir: &Path) -> (Option<std::time::SystemTime>, Option<u64>) {
    use std::io::{Read, Seek, SeekFrom};
    /// More than the `start` line takes (`start ` and 20 digits).
    const HEAD: u64 = 64;
    /// Where the `exit` line is looked for, from the end.
    const TAIL: u64 = 64 * 1024;
    let Ok((mut file, size)) = crate::sessions::untrusted::open_regular(&run_dir.join(TIMES_FILE)) else {
        return (None, None);
    };
    let mut edge = |from: u64, length: u64| -> String {
        let mut bytes = Vec::new();
        let _ = file
            .seek(SeekFrom::Start(from))
            .and_then(|_| (&mut file).take(length).read_to_end(&mut bytes));
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let head = edge(0, HEAD);
    let start = head
        .lines()
        .next()
        .and_then(TimesLine::parse)
        .and_then(|line| match line {
            TimesLine::Start(start) => Some(start),
            _ => None,
        });
    let tail = edge(size.saturating_sub(TAIL), TAIL);
    let exit_ms = tail.lines().rev().find_map(|line| match TimesLine::parse(line) {
        Some(TimesLine::Exit(ms)) => Some(ms),
        _ => None,
    });
    (start, exit_ms)
}

/// One line of a `times` file (see [`read_start_and_exit`]); the stream's file name is `STDOUT_FILE` or
/// `STDERR_FILE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimesLine<'a> {
    Start(std::time::SystemTime),
    Chunk(&'a str, u64, u64),
    Exit(u64),
}

impl<'a> TimesLine<'a> {
    /// The line read, `None` when it is none of them.
    pub fn parse(line: &'a str) -> Option<TimesLine<'a>> {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields.as_slice() {
            ["start", ms] => ms
                .parse()
                .ok()
                .map(|ms| TimesLine::Start(std::time::UNIX_EPOCH + Duration::from_millis(ms))),
            ["exit", ms] => ms.parse().ok().map(TimesLine::Exit),
            [name, end, ms] if [STDOUT_FILE, STDERR_FILE].contains(name) => {
                Some(TimesLine::Chunk(name, end.parse().ok()?, ms.parse().ok()?))
            }
            _ => None,
        }
    }
}

/// The keeper's `times` file, written by both copies and the keeper (a line at a time).
struct Times {
    file: std::sync::Mutex<Option<std::fs::File>>,
    start: Instant,
}

impl Times {
    fn create(run_dir: &Path) -> Times {
        let file = crate::sessions::private::create_file(&run_dir.join(TIMES_FILE)).ok();
        let times = Times {
            file: std::sync::Mutex::new(file),
            start: Instant::now(),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        times.line(&format!("start {now}"));
        times
    }

    fn elapsed_ms(&self) -> u128 {
        self.start.elapsed().as_millis()
    }

    /// Writes one line; on the first failure (a full disk) the file is given up.
    fn line(&self, text: &str) {
        let mut file = self.file.lock().expect("times lock");
        if let Some(f) = file.as_mut() {
            if f.write_all(format!("{text}\n").as_bytes()).is_err() {
                *file = None;
            }
        }
    }
}

/// Reads the `exit` file of a run folder, if the agent has ended.
pub fn read_exit(run_dir: &Path) -> Option<KeptExit> {
    let text = std::fs::read_to_string(run_dir.join(EXIT_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The keeper's main: returns the exit status to end with (the agent's, shell-style).
pub fn keep(run_dir: &Path, command: &[String]) -> i32 {
    if let Some(keeper) = std::env::var_os(AGENT_OF) {
        return become_agent(&keeper.to_string_lossy(), command);
    }
    match keep_inner(run_dir, command) {
        Ok(status) => status,
        Err(message) => {
            eprintln!("zibby run keeper: {message}");
            let _ = crate::sessions::private::write_file(&run_dir.join(EXIT_FILE), br#"{"code":127}"#);
            127
        }
    }
}

fn start_error(program: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("cannot start `{program}`: command not found"),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot start `{program}`: not executable (permission denied)")
        }
        _ => format!("cannot start `{program}`: {e}"),
    }
}

/// The trampoline: dies with the keeper from now on, then becomes the agent.
fn become_agent(keeper: &str, command: &[String]) -> i32 {
    use std::os::unix::process::CommandExt;
    let fail = |message: String| {
        eprintln!("zibby run keeper: {message}");
        127
    };
    if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL) {
        return fail(format!("cannot tie the agent to its keeper: {e}"));
    }
    // The keeper may have died before the line above: then this is an orphan already.
    if nix::unistd::getppid().to_string() != keeper {
        return 128 + 9;
    }
    // Into the run's cgroup before the agent starts: whatever it starts is born there.
    if let Some(cgroup) = std::env::var_os(AGENT_CGROUP) {
        if let Err(e) = std::fs::write(Path::new(&cgroup).join("cgroup.procs"), b"0") {
            eprintln!(
                "zibby run keeper: the run is not contained in its cgroup {}: {e}",
                Path::new(&cgroup).display()
            );
        }
    }
    std::env::remove_var(AGENT_OF);
    std::env::remove_var(AGENT_CGROUP);
    let Some((program, args)) = command.split_first() else {
        return fail("no command to keep".into());
    };
    // Through std's exec: it gives the agent the default SIGPIPE (Rust ignores it in this process;
    // an ignored signal would stay ignored across a bare execvp, and `cmd | head` would go on).
    let error = Command::new(program).args(args).exec();
    fail(start_error(program, &error))
}

fn keep_inner(run_dir: &Path, command: &[String]) -> Result<i32, String> {
    // Signals to the run's group are for the agent; the keeper stays to record how it ended.
    // Handled first of all: a stop asked right after the start (SIGUSR1) must not end the keeper.
    let noticed = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGUSR1,
    ] {
        signal_hook::flag::register(signal, noticed.clone())
            .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
    }
    crate::sessions::private::create_dir_all(run_dir)
        .map_err(|e| format!("cannot create {}: {e}", run_dir.display()))?;
    // Orphans of the run come to the keeper (and so stay within a stop's reach), not to init.
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("cannot become a subreaper: {e}"))?;
    let (program, _) = command.split_first().ok_or("no command to keep")?;
    // A cgroup of the run's own where the platform allows one (see the module notes).
    let run_id = std::env::var(crate::vocabulary::containment::RUN_MARKER).unwrap_or_else(|_| {
        run_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let cgroup = crate::vocabulary::containment::RunCgroup::create(&run_id);
    let mut trampoline = Command::new("/proc/self/exe");
    if let Some(cgroup) = &cgroup {
        let recorded = format!("{}\n", cgroup.path().display());
        if crate::sessions::private::write_file(&run_dir.join(CGROUP_FILE), recorded.as_bytes()).is_ok() {
            trampoline.env(AGENT_CGROUP, cgroup.path());
        }
    }
    // This very program again, as the trampoline that becomes the agent (see the module notes).
    let mut child = trampoline
        .arg("keep")
        .arg("--run-dir")
        .arg(run_dir)
        .arg("--")
        .args(command)
        .env(AGENT_OF, std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| start_error(program, &e))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out_file = crate::sessions::private::create_file(&run_dir.join(STDOUT_FILE)).map_err(|e| e.to_string())?;
    let err_file = crate::sessions::private::create_file(&run_dir.join(STDERR_FILE)).map_err(|e| e.to_string())?;
    let times = Arc::new(Times::create(run_dir));
    let copiers = [
        std::thread::spawn({
            let times = times.clone();
            move || copy(stdout, out_file, STDOUT_FILE, std::io::stdout(), &times)
        }),
        std::thread::spawn({
            let times = times.clone();
            move || copy(stderr, err_file, STDERR_FILE, std::io::stderr(), &times)
        }),
    ];
    let agent = nix::unistd::Pid::from_raw(child.id() as i32);
    // Every child is reaped here, the agent and the orphans that came to the keeper alike.
    let exit = loop {
        match nix::sys::wait::waitpid(None, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(pid, code)) if pid == agent => break KeptExit::Code(code),
            Ok(nix::sys::wait::WaitStatus::Signaled(pid, signal, _)) if pid == agent => {
                break KeptExit::Signal(signal as i32)
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(format!("cannot wait for `{program}`: {e}")),
        }
    };
    times.line(&format!("exit {}", times.elapsed_ms()));
    if noticed.load(std::sync::atomic::Ordering::SeqCst) {
        // Stopped: whatever the agent left behind ends with it.
        if let Some(cgroup) = &cgroup {
            cgroup.kill();
        }
        end_descendants();
    }
    // Something the agent started may hold its pipes: give the copies a moment, no more.
    let deadline = Instant::now() + Duration::from_secs(2);
    while copiers.iter().any(|c| !c.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // An empty cgroup goes (one that still holds what the agent left stays, for a stop to end).
    if let Some(cgroup) = &cgroup {
        cgroup.remove();
    }
    let text = serde_json::to_string(&exit).expect("exits serialise");
    if let Err(error) = crate::sessions::private::write_file(&run_dir.join(EXIT_FILE), text.as_bytes()) {
        // The keeper's own exit status still says how the agent ended (a full disk is no
        // reason to report another outcome).
        eprintln!("zibby run keeper: cannot record the exit: {error}");
    }
    Ok(match exit {
        KeptExit::Code(code) => code,
        KeptExit::Signal(signal) => 128 + signal,
    })
}

/// SIGKILL to every process below the keeper, looked for again until none is left (a fork in
/// flight may add one), reaping them as they come.
fn end_descendants() {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    for _ in 0..5 {
        let below = crate::vocabulary::process::descendants(std::process::id());
        if below.is_empty() {
            break;
        }
        for pid in below {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        while let Ok(status) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Copies a pipe to a file (while it can be written) and to the keeper's own stream (while
/// someone reads it), and reads the pipe to its end whatever fails: the agent is never ended by
/// the studio's own trouble (a full disk would otherwise close its pipe: SIGPIPE).
fn copy(mut from: impl Read, mut file: std::fs::File, name: &str, mut live: impl Write, times: &Times) {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut live_open = true;
    let mut file_open = true;
    let mut written: u64 = 0;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if file_open {
            match file.write_all(&buffer[..n]) {
                Ok(()) => {
                    written += n as u64;
                    times.line(&format!("{name} {written} {}", times.elapsed_ms()));
                }
                Err(error) => {
                    // Said where the studio sees it (the run's stderr), once; the output still
                    // reaches the studio live.
                    eprintln!("zibby run keeper: the run's {name} file is incomplete after {written} bytes: {error}");
                    file_open = false;
                }
            }
        }
        if live_open && live.write_all(&buffer[..n]).and_then(|_| live.flush()).is_err() {
            // The studio went away: the file alone carries the output from here.
            live_open = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start is the first line, the end the last `exit` line, also when the copies wrote
    /// after it and when the file is far longer than what is read of it.
    #[test]
    fn the_start_and_the_agents_end_are_read_from_the_times_files_edges() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut text = String::from("start 1000\n");
        for ms in 0..200_000u64 {
            text.push_str(&format!("stdout {} {ms}\n", ms * 10));
        }
        text.push_str("exit 200000\nstdout 2000010 200001\nstderr 7 200002\n");
        std::fs::write(dir.path().join(TIMES_FILE), text).unwrap();
        assert_eq!(
            read_start_and_exit(dir.path()),
            (Some(std::time::UNIX_EPOCH + Duration::from_millis(1000)), Some(200_000))
        );
        // A run still going: no end yet; no file: nothing known.
        std::fs::write(dir.path().join(TIMES_FILE), "start 5\nstdout 3 1\n").unwrap();
        assert_eq!(read_start_and_exit(dir.path()).1, None);
        std::fs::remove_file(dir.path().join(TIMES_FILE)).unwrap();
        assert_eq!(read_start_and_exit(dir.path()), (None, None));
    }
}
