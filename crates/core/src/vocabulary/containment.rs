//! A run's processes held together, so that all of them can be ended whoever dies first (the
//! agent, its keeper or the studio):
//!
//! - **a cgroup of its own** ([`RunCgroup`]), where cgroup v2 is mounted and this process may
//!   create a cgroup below its own and move processes into it (root, or a user session whose
//!   cgroup is delegated to the user, as systemd's `user@.service` is). No process can leave a
//!   cgroup on its own, `setsid` and double forks included, and `cgroup.kill` ends all of them at
//!   once;
//! - **the run's mark** in every process's environment (`ZIBBY_STUDIO_RUN_ID=<run id>`, which the
//!   studio sets for the agent and its children inherit): found again by [`marked_processes`]
//!   after the keeper that was their subreaper died. A run id is a UUID v7: no stranger carries
//!   it. A process that clears its environment before `exec` loses the mark (only the cgroup then
//!   holds it).

use std::path::{Component, Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The variable that marks a run's processes: the run's id.
pub const RUN_MARKER: &str = "ZIBBY_STUDIO_RUN_ID";

/// What a run's cgroup is called below the cgroup of the process that made it.
const CGROUP_PREFIX: &str = "zibby-run-";

/// Where the unified (v2) cgroup hierarchy is mounted, and the path of its root within it
/// (`/proc/self/mountinfo`: mount point, field 5; root, field 4; file system type after ` - `).
fn cgroup2_mount() -> Option<(PathBuf, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        if fs.split_whitespace().next() != Some("cgroup2") {
            return None;
        }
        let fields: Vec<&str> = mount.split_whitespace().collect();
        let (root, point) = (fields.get(3)?, fields.get(4)?);
        // Escaped characters (`\040` for a space) are not worth decoding: no containment then.
        (!point.contains('\\') && !root.contains('\\')).then(|| (PathBuf::from(point), (*root).to_owned()))
    })
}

/// The cgroup v2 folder this process is in (`/proc/self/cgroup`, its `0::` line).
fn own_cgroup() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|line| line.strip_prefix("0::"))?;
    let (mount, root) = cgroup2_mount()?;
    let relative = path.strip_prefix(root.trim_end_matches('/')).unwrap_or(path);
    let dir = mount.join(relative.trim_start_matches('/'));
    dir.join("cgroup.procs").is_file().then_some(dir)
}

/// A run's cgroup: a folder of the unified hierarchy named after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCgroup(PathBuf);

impl RunCgroup {
    /// A new cgroup for run `run_id` below this process's own; `None` where the platform does not
    /// allow it (no cgroup v2, no `cgroup.kill` (Linux before 5.14), or no right to create it and
    /// to move processes into it).
    pub fn create(run_id: &str) -> Option<RunCgroup> {
        if run_id.is_empty() || run_id.contains(['/', '\0']) || run_id.starts_with('.') {
            return None;
        }
        let own = own_cgroup()?;
        // Moving a process from this cgroup into the new one needs write access to this one's
        // `cgroup.procs` (the common ancestor's).
        nix::unistd::access(&own.join("cgroup.procs"), nix::unistd::AccessFlags::W_OK).ok()?;
        let dir = own.join(format!("{CGROUP_PREFIX}{run_id}"));
        if let Err(error) = std::fs::create_dir(&dir) {
            if error.kind() != std::io::ErrorKind::AlreadyExists {
                return None;
            }
        }
        let usable = dir.join("cgroup.kill").is_file()
            && nix::unistd::access(&dir.join("cgroup.procs"), nix::unistd::AccessFlags::W_OK).is_ok();
        if !usable {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(RunCgroup(dir))
    }

    /// A run's cgroup as recorded at `path`, if it is one: inside the unified hierarchy, named
    /// after run `run_id`, no `..` on the way, and still there.
    pub fn at(path: &Path, run_id: &str) -> Option<RunCgroup> {
        let (mount, _) = cgroup2_mount()?;
        let inside = path.strip_prefix(&mount).ok()?;
        let plain = inside.components().all(|c| matches!(c, Component::Normal(_)));
        let named = path.file_name()? == format!("{CGROUP_PREFIX}{run_id}").as_str();
        (plain && named && path.join("cgroup.kill").is_file()).then(|| RunCgroup(path.to_owned()))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Moves the calling process into the cgroup (its children from now on are born there).
    pub fn join(&self) -> std::io::Result<()> {
        std::fs::write(self.0.join("cgroup.procs"), b"0")
    }

    /// How many processes are in it now.
    pub fn processes(&self) -> usize {
        std::fs::read_to_string(self.0.join("cgroup.procs"))
            .map(|text| text.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0)
    }

    /// Ends every process in it at once (`cgroup.kill`: SIGKILL, which no fork outruns), waits
    /// (up to 2 s) until it is empty and removes it. Returns how many processes it held.
    pub fn kill(&self) -> usize {
        let count = self.processes();
        if count > 0 {
            let _ = std::fs::write(self.0.join("cgroup.kill"), b"1");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while self.processes() > 0 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        self.remove();
        count
    }

    /// Removes it when it is empty (a cgroup that still holds a process stays).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Whether a process's environment (`/proc/<pid>/environ`) holds `marker` as a whole entry.
fn carries(pid: u32, marker: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| environ.split(|b| *b == 0).any(|e| e == marker))
}

/// Every process but this one whose environment marks it as run `run_id`'s (see the module
/// notes), wherever it is now: in another session, or an orphan adopted by init.
pub fn marked_processes(run_id: &str) -> Vec<u32> {
    if run_id.is_empty() {
        return Vec::new();
    }
    let marker = format!("{RUN_MARKER}={run_id}").into_bytes();
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|&pid| pid != me && carries(pid, &marker))
        .collect()
}

/// Ends what is left of run `run_id`: its cgroup, when it has one, then every process that
/// carries its mark (looked for again until none is left: a fork in flight may add one).
/// Returns how many processes were sent SIGKILL.
pub fn end_run(run_id: &str, cgroup: Option<&RunCgroup>) -> usize {
    let mut ended = cgroup.map_or(0, RunCgroup::kill);
    for _ in 0..5 {
        let marked = marked_processes(run_id);
        if marked.is_empty() {
            break;
        }
        for &pid in &marked {
            if let Ok(pid) = i32::try_from(pid) {
                if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                    ended += 1;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_cgroup_outside_the_hierarchy_or_of_another_run_is_refused() {
        assert_eq!(RunCgroup::at(Path::new("/tmp/zibby-run-abc"), "abc"), None);
        if let Some((mount, _)) = cgroup2_mount() {
            assert_eq!(RunCgroup::at(&mount.join("zibby-run-other"), "abc"), None);
            assert_eq!(RunCgroup::at(&mount.join("x/../zibby-run-abc"), "abc"), None);
        }
    }

    #[test]
    fn a_process_is_found_by_the_mark_in_its_environment() {
        let run_id = format!("test-{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(RUN_MARKER, &run_id)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !marked_processes(&run_id).contains(&child.id()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(marked_processes(&run_id), vec![child.id()]);
        assert!(marked_processes(&format!("{run_id}0")).is_empty());
        assert_eq!(end_run(&run_id, None), 1);
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    }
}
