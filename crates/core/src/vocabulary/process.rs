//! Questions about processes the studio does not own any more (after a restart): are they alive,
//! and are they still the ones it started?
//!
//! A process id alone names nothing for long: once its process is gone and reaped, the id is
//! free for any other (pid_max is often 32768, and every boot starts again from 1). A run's
//! processes are therefore known by a [`ProcessIdentity`]: the id together with the moment that
//! process started (`/proc/<pid>/stat` field 22, in clock ticks since boot) and the boot it
//! started in (`/proc/sys/kernel/random/boot_id`). No signal goes to a run whose identity does
//! not match the process that holds its id now.

use std::collections::HashMap;

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

fn answers(pid: i32) -> bool {
    // EPERM: it exists, but belongs to someone else.
    matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// Whether a process with this id exists.
pub fn process_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|pid| pid > 0 && answers(pid))
}

/// Whether any process of this process group exists.
pub fn group_alive(process_group: u32) -> bool {
    i32::try_from(process_group).is_ok_and(|group| group > 1 && answers(-group))
}

/// This boot of the machine (`/proc/sys/kernel/random/boot_id`), read once.
pub fn boot_id() -> Option<&'static str> {
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|id| id.trim().to_owned())
            .filter(|id| !id.is_empty())
    })
    .as_deref()
}

/// What `/proc/<pid>/stat` says of a process that this module needs.
#[derive(Debug, Clone, Copy)]
struct Stat {
    zombie: bool,
    parent: u32,
    start_time: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Fields after the command (which may hold spaces and parentheses, hence the last `)`):
/// state (field 3), parent (4), ..., start time (22).
fn parse_stat(text: &str) -> Option<Stat> {
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    Some(Stat {
        zombie: *fields.first()? == "Z",
        parent: fields.get(1)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// One process as it was when the studio started it: it is that process only while the id,
/// the start time and the boot all match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// `/proc/<pid>/stat` field 22: clock ticks since boot.
    pub start_time: u64,
    pub boot_id: String,
}

impl ProcessIdentity {
    /// The identity of the process that has this id now (a zombie, not yet reaped, counts).
    /// Ask as its parent before waiting for it, and the answer is that child's.
    pub fn of(pid: u32) -> Option<ProcessIdentity> {
        if pid == 0 {
            return None;
        }
        Some(ProcessIdentity {
            pid,
            start_time: stat(pid)?.start_time,
            boot_id: boot_id()?.to_owned(),
        })
    }

    /// Whether the process holding this id now is this one.
    pub fn is_current(&self) -> bool {
        ProcessIdentity::of(self.pid).as_ref() == Some(self)
    }
}

/// `/proc`'s clock ticks per second (`USER_HZ`: 100 on every architecture Linux runs the studio
/// on; `sysconf(_SC_CLK_TCK)` says the same).
const TICKS_PER_SECOND: u64 = 100;

/// When the machine booted, in milliseconds since the epoch (`/proc/stat`'s `btime`, to the
/// second).
fn boot_time_ms() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let seconds: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(seconds * 1000)
}

/// The programs a run of the engine can be: the JavaScript runtimes the engine (an npm package)
/// runs on, and the project's test agent, which stands in for the engine in the studio's tests.
/// A shell, `sleep`, an editor working in the workspace are never a run (issue 41).
const ENGINE_PROGRAMS: &[&str] = &["node", "nodejs", "bun", "deno", "zibby-test-agent"];

/// The studio's own programs: a `zstudio watch` or the window reading a session is never its run.
const STUDIO_PROGRAMS: &[&str] = &["zstudio", "zibby-studio"];

/// The file name of the program process `pid` runs (`/proc/<pid>/exe`), when it can be read.
fn program_of(process: &std::path::Path) -> Option<String> {
    let exe = std::fs::read_link(process.join("exe")).ok()?;
    // A program replaced on disk while it runs reads `node (deleted)`.
    let name = exe.file_name()?.to_str()?;
    Some(name.trim_end_matches(" (deleted)").to_owned())
}

/// Whether `program` can be a run of the engine (see [`ENGINE_PROGRAMS`]): `node`, `nodejs`, a
/// versioned `node20`, ...
fn can_be_engine(program: &str) -> bool {
    ENGINE_PROGRAMS
        .iter()
        .any(|engine| program == *engine || (*engine == "node" && program.starts_with("node")))
}

/// Whether a run's process may still be there, as `/proc` says (`None` when it cannot tell): a
/// live process (not a zombie) of a program that can be the engine (`ENGINE_PROGRAMS`) that
/// works in `workspace` (its working folder is it or below it) and started between `from_ms` and
/// `to_ms` (milliseconds since the epoch, to about a second), or one that has a file of `session`
/// open. How a run the studio did not start is told to be going on: the engine runs in its
/// workspace, makes its session as it starts, and keeps a node's output file open while the node
/// runs. The studio's own processes (this one, a `zstudio watch`, the window: `STUDIO_PROGRAMS`)
/// never count, nor does another user's process.
pub fn run_process_present(
    workspace: &std::path::Path,
    session: &std::path::Path,
    from_ms: u64,
    to_ms: u64,
) -> Option<bool> {
    let boot = boot_time_ms()?;
    let entries = std::fs::read_dir("/proc").ok()?;
    let me = std::process::id();
    let mut others = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            continue;
        };
        let Some(stat) = stat(pid).filter(|s| !s.zombie) else {
            continue;
        };
        let started = boot + stat.start_time * 1000 / TICKS_PER_SECOND;
        // Its program is read only for a process that could be the run by its folder and time.
        if cwd.starts_with(workspace)
            && (from_ms..=to_ms).contains(&started)
            && program_of(&entry.path()).is_some_and(|program| can_be_engine(&program))
        {
            return Some(true);
        }
        others.push(entry.path());
    }
    // Slower, and only when the above did not tell: the open files of every other process that
    // is none of the studio's own.
    let has_open = |process: &std::path::PathBuf| {
        std::fs::read_dir(process.join("fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(session)))
        }) && program_of(process).is_some_and(|program| !STUDIO_PROGRAMS.contains(&program.as_str()))
    };
    Some(others.iter().any(has_open))
}

/// Every process below `root` (children, their children, ...), zombies left out. A child
/// subreaper (the run keeper) has every process it started below it, `setsid` or not.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(stat) = stat(pid).filter(|s| !s.zombie) {
            children.entry(stat.parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            if child != root && !found.contains(&child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found
}

fn send(pid: u32, signal: Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// Signals one process, only while it is `process`.
pub fn signal_process(process: &ProcessIdentity, signal: Signal) -> bool {
    if process.pid <= 1 || !process.is_current() {
        return false;
    }
    send(process.pid, signal);
    true
}

/// Signals a run: every process below its leader (those that left its group with `setsid`
/// too), the processes `seen` below it by an earlier call that still are who they were (their
/// parent may have ended since: they are out of the tree, not out of reach), then its whole
/// process group (the leader's id). Nothing is sent, and `false` comes back, when the process
/// holding the leader's id is not `leader` any more.
pub fn signal_run(leader: &ProcessIdentity, signal: Signal, seen: &mut Vec<ProcessIdentity>) -> bool {
    let (Ok(group), true) = (i32::try_from(leader.pid), leader.pid > 1) else {
        return false;
    };
    if !leader.is_current() {
        return false;
    }
    // SIGKILL cannot be outrun by a fork more than a few times: look again until nothing is left.
    let passes = if signal == Signal::SIGKILL { 3 } else { 1 };
    for _ in 0..passes {
        let below = descendants(leader.pid);
        if below.is_empty() {
            break;
        }
        for pid in below {
            if let Some(identity) = ProcessIdentity::of(pid) {
                if !seen.contains(&identity) {
                    seen.push(identity);
                }
            }
            send(pid, signal);
        }
    }
    seen.retain(ProcessIdentity::is_current);
    for process in seen.iter() {
        send(process.pid, signal);
    }
    // ESRCH: the group is already gone, which is what a signal wants anyway.
    let _ = killpg(Pid::from_raw(group), signal);
    true
}

/// Notes the processes below a live leader in `seen` without signalling any (so that a later
/// [`signal_run`] reaches them even after they leave the tree).
pub fn note_run(leader: &ProcessIdentity, seen: &mut Vec<ProcessIdentity>) {
    if !leader.is_current() {
        return;
    }
    for pid in descendants(leader.pid) {
        if let Some(identity) = ProcessIdentity::of(pid) {
            if !seen.contains(&identity) {
                seen.push(identity);
            }
        }
    }
    seen.retain(ProcessIdentity::is_current);
}

/// Moves a file or folder to the system trash (the freedesktop.org trash on Linux).
pub fn move_to_trash(path: &std::path::Path) -> Result<(), crate::vocabulary::error::Error> {
    trash::delete(path).map_err(|e| crate::vocabulary::error::Error::Trash {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let line = "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let stat = parse_stat(line).unwrap();
        assert_eq!((stat.zombie, stat.parent, stat.start_time), (false, 17, 987654));
    }

    #[test]
    fn this_process_is_itself_and_a_wrong_start_time_is_a_stranger() {
        let me = ProcessIdentity::of(std::process::id()).unwrap();
        assert!(me.is_current());
        let forged = ProcessIdentity {
            start_time: me.start_time + 1,
            ..me.clone()
        };
        assert!(!forged.is_current());
        let other_boot = ProcessIdentity {
            boot_id: "another boot".into(),
            ..me
        };
        assert!(!other_boot.is_current());
    }
}
