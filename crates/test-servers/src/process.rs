//! What every server of this crate shares: its program found (or a panic naming the package), a
//! free port on 127.0.0.1, a wait until the port answers, and the server process itself, ended by
//! its pid when dropped.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// How long a server may take to answer on its port before the test fails: moto (Python) and
/// the emulators (Node, Go) took over 15 s to start at a load of 5 on two cores, and Arize Phoenix
/// (its database migrations first) over 60 s at a load of 14; a server that exits is seen at once,
/// whatever this is.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a server may take to exit after SIGTERM before it gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// The program at `path`, or a panic that says which Debian package installs it.
pub fn require_program(path: &str, package: &str) -> PathBuf {
    let program = PathBuf::from(path);
    if !program.is_file() {
        panic!(
            "{path} is missing: install the Debian package `{package}` (scripts/setup.sh installs it; \
             the tests start it themselves on 127.0.0.1, never as a service)"
        );
    }
    program
}

/// A port on 127.0.0.1 that nothing listened on a moment ago (the kernel's choice), never one
/// this process handed out before.
pub fn free_port() -> u16 {
    // Never the same port twice in one process: the system may hand a port just released to the
    // next asker, and of two servers started at once on it the second fails to bind while its
    // wait finds the first one answering (a test then talks to another test's server).
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        if HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner()).insert(port) {
            return port;
        }
    }
}

/// A process of a server, in a process group of its own (so that a signal reaches the children it
/// forks too), ended by its pid when dropped: SIGTERM to its group, SIGKILL past a grace period,
/// and reaped.
pub struct ServerProcess {
    child: Child,
    name: String,
    log: PathBuf,
}

impl ServerProcess {
    /// Starts `command` in a process group of its own, its stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> ServerProcess {
        let out = std::fs::File::create(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let err = out.try_clone().expect("clone the log file");
        command
            .stdin(std::process::Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = command.spawn().unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        ServerProcess {
            child,
            name: name.to_string(),
            log: log.to_path_buf(),
        }
    }

    /// The server's process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the server's process group.
    pub fn signal(&self, signal: Signal) {
        let group = Pid::from_raw(self.child.id() as i32);
        killpg(group, signal).unwrap_or_else(|e| panic!("{} ({signal}): {e}", self.name));
    }

    /// Waits until `port` on 127.0.0.1 accepts a connection, or panics (with the server's log)
    /// when the server exits first or [`START_TIMEOUT`] passes.
    pub fn wait_for_port(&mut self, port: u16) {
        let deadline = Instant::now() + START_TIMEOUT;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "{} exited ({status}) before answering on port {port}:\n{}",
                    self.name,
                    self.log_text()
                );
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "{} did not answer on port {port} within {START_TIMEOUT:?}:\n{}",
                    self.name,
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the server has exited (and so was reaped).
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_some()
    }

    /// What the server wrote to its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Ends the server: SIGTERM (and SIGCONT, should it be frozen) to its group, SIGKILL past
    /// the grace period, then reaped; then SIGKILL to every process it had forked, found before
    /// it was signalled (sshd's connection processes call `setsid`, so its group does not reach
    /// them, and they would keep a client's ssh master alive). Ending it twice does nothing more.
    pub fn stop(&mut self) {
        if self.has_exited() {
            return;
        }
        let forked = descendants(self.child.id());
        let group = Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let _ = killpg(group, Signal::SIGCONT);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline && !self.has_exited() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
        for pid in forked {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// Every process below `pid` (children, their children, …), from `/proc`'s parent links.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let child: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so after the last `)`.
            let parent = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((child, parent))
        })
        .collect();
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(c, _)| *c));
        next += 1;
    }
    found.split_off(1)
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs the Python `script` with `python`, `spec` as JSON on its stdin (an uploader's), with
/// `env`, and returns what it printed; panics with its error output, naming `what`, when it
/// fails.
pub fn run_python(python: &Path, script: &str, spec: &serde_json::Value, env: &[(&str, &str)], what: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(python)
        .args(["-c", script])
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(spec.to_string().as_bytes())
        .expect("the spec written");
    let output = child.wait_with_output().expect("the script's end");
    assert!(
        output.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
