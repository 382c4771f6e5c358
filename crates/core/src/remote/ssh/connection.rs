//! One ControlMaster to a host ([`Connection`]), how it is made ([`ConnectOptions`]), commands
//! through it, and the private folder of its socket ([`runtime_dir`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::errors::{io, last_lines, SshError};
use super::sockets::unique_name;
use super::target::RemoteTarget;

/// How a connection is made; [`Default`] is what the studio uses.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The `ssh` program (default: `ssh` on the PATH).
    pub ssh_program: PathBuf,
    /// An ssh config file given to ssh with `-F` (`--ssh-config`, `ZIBBY_STUDIO_SSH_CONFIG`);
    /// without it ssh reads the user's and the system's as usual.
    pub ssh_config: Option<PathBuf>,
    /// A program that asks the user (`SSH_ASKPASS`, forced); without it ssh runs in batch mode.
    pub askpass: Option<PathBuf>,
    /// `ConnectTimeout`: how long a host may take to answer.
    pub connect_timeout: Duration,
    /// `ServerAliveInterval`: how often a quiet link is probed.
    pub alive_interval: Duration,
    /// `ServerAliveCountMax`: how many probes may go unanswered before the link is dropped.
    pub alive_count_max: u32,
    /// How long the login may take once the host answered (a passphrase typed, say).
    pub login_timeout: Duration,
    /// The folder of the control sockets (default: [`runtime_dir`](super::sockets::runtime_dir)).
    pub runtime_dir: Option<PathBuf>,
    /// Keep the master for this long after its last use (`ControlPersist`), for the next
    /// process that connects to the same host with the same options to use (`zstudio
    /// --keep-connection`); `None`: the master ends when the connection closes.
    pub keep_for: Option<Duration>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            ssh_program: PathBuf::from("ssh"),
            ssh_config: None,
            askpass: None,
            connect_timeout: Duration::from_secs(15),
            alive_interval: Duration::from_secs(15),
            alive_count_max: 3,
            login_timeout: Duration::from_secs(120),
            runtime_dir: None,
            keep_for: None,
        }
    }
}

/// How a connection holds its master.
pub(super) enum Master {
    /// Started by this connection, ended when it closes.
    Own(Child),
    /// Kept for [`ConnectOptions::keep_for`] after its last use: started by this process or an
    /// earlier one (the `kept` module), ended by ssh once idle that long, or at once when a signal
    /// ends this process.
    Kept { pid: u32 },
    /// A kept master this connection no longer uses (closed here, left for the next process).
    Left,
    /// Closed, or found ended.
    Gone,
}

/// One ControlMaster to a host, and the workspace folder there.
pub struct Connection {
    target: RemoteTarget,
    options: ConnectOptions,
    control_path: PathBuf,
    log_path: PathBuf,
    /// The master, until it ends or is closed (behind a lock: any holder may check the link).
    master: parking_lot::Mutex<Master>,
    workspace_path: String,
    remote_home: String,
    remote_platform: String,
}

impl Connection {
    /// Connects to `target`'s host (one ControlMaster), checks its workspace folder and learns the
    /// host's home and platform. Errors name the host and say what failed.
    pub fn open(target: &RemoteTarget, options: &ConnectOptions) -> Result<Connection, SshError> {
        let mut connection = Connection::attach(target, options)?;
        connection.probe()?;
        Ok(connection)
    }

    /// Starts a master of this connection's own (ended when it closes), in `dir`.
    pub(super) fn open_own(
        target: &RemoteTarget,
        options: &ConnectOptions,
        dir: &Path,
    ) -> Result<Connection, SshError> {
        let name = unique_name();
        let control_path = dir.join(format!("{name}.sock"));
        let log_path = dir.join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path).map_err(|source| io("create", &log_path, source))?;
        let master = master_command(target, options, &control_path, "no", false, log)?
            .spawn()
            .map_err(|source| io("start", &options.ssh_program, source))?;
        register_master(master.id(), &control_path, &log_path);
        Connection::ready(target, options, control_path, log_path, Master::Own(master))
    }

    /// The connection of a master that is up or starting, once it is ready.
    pub(super) fn ready(
        target: &RemoteTarget,
        options: &ConnectOptions,
        control_path: PathBuf,
        log_path: PathBuf,
        master: Master,
    ) -> Result<Connection, SshError> {
        let connection = Connection {
            target: target.clone(),
            options: options.clone(),
            control_path,
            log_path,
            master: parking_lot::Mutex::new(master),
            workspace_path: String::new(),
            remote_home: String::new(),
            remote_platform: String::new(),
        };
        connection.wait_until_ready()?;
        Ok(connection)
    }
}

/// The master's command: `ssh -M -N -S CONTROL_PATH` with `ControlPersist=persist` (forked to the
/// background once logged in with `background`: `-f`), no forwardings, the timeouts and
/// keep-alives of `options`, host keys checked strictly, its stderr to `log`.
pub(super) fn master_command(
    target: &RemoteTarget,
    options: &ConnectOptions,
    control_path: &Path,
    persist: &str,
    background: bool,
    log: std::fs::File,
) -> Result<Command, SshError> {
    let strict = strict_host_key_option(target, options)?;
    let mut command = ssh_base(target, options);
    command
        .args(["-M", "-N", "-S"])
        .arg(control_path)
        .args(["-o", &format!("ControlPersist={persist}")])
        // None of the user's forwardings (`ForwardAgent`, `RemoteForward`, ... of the config)
        // ride on the studio's link: the host could use the user's key agent or reach this
        // machine through them (issue 40). The command line's value wins over the config's.
        .args([
            "-o",
            "ClearAllForwardings=yes",
            "-o",
            "ForwardAgent=no",
            "-o",
            "ForwardX11=no",
        ])
        .args([
            "-o",
            &format!("ConnectTimeout={}", options.connect_timeout.as_secs().max(1)),
        ])
        .args([
            "-o",
            &format!("ServerAliveInterval={}", options.alive_interval.as_secs().max(1)),
        ])
        .args(["-o", &format!("ServerAliveCountMax={}", options.alive_count_max.max(1))]);
    if let Some(strict) = strict {
        command.args(["-o", &format!("StrictHostKeyChecking={strict}")]);
    }
    match &options.askpass {
        Some(program) => {
            command.env("SSH_ASKPASS", program).env("SSH_ASKPASS_REQUIRE", "force");
        }
        None => {
            command.args(["-o", "BatchMode=yes"]);
        }
    }
    if background {
        command.arg("-f");
    }
    command
        .arg("--")
        .arg(&target.host)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    Ok(command)
}

/// Remembers master `pid` (of `control_path`, logging to `log_path`) as this process's until it
/// is closed: a signal ending this process ends it ([`end_open_masters`]).
pub(super) fn register_master(pid: u32, control_path: &Path, log_path: &Path) {
    if let Some(process) = crate::vocabulary::process::ProcessIdentity::of(pid) {
        open_masters().push(OpenMaster {
            process,
            control_path: control_path.to_owned(),
            log_path: log_path.to_owned(),
        });
    }
}

impl Connection {
    /// How it was made.
    pub(super) fn options(&self) -> &ConnectOptions {
        &self.options
    }

    /// The target this connection reaches.
    pub fn target(&self) -> &RemoteTarget {
        &self.target
    }

    /// The host as errors name it.
    pub fn host(&self) -> String {
        self.target.label()
    }

    /// The workspace folder on the host, absolute (`~` expanded with the remote's `$HOME`).
    pub fn workspace_path(&self) -> &str {
        &self.workspace_path
    }

    /// The remote login's `$HOME`.
    pub fn remote_home(&self) -> &str {
        &self.remote_home
    }

    /// Keeps what the host said of itself (its probe): its `$HOME`, `uname -sm`, and the
    /// workspace folder as an absolute path.
    pub(super) fn set_host_facts(&mut self, home: &str, platform: &str, workspace: &str) {
        home.clone_into(&mut self.remote_home);
        platform.clone_into(&mut self.remote_platform);
        workspace.clone_into(&mut self.workspace_path);
    }

    /// The host's `uname -sm` (`Linux x86_64`).
    pub fn remote_platform(&self) -> &str {
        &self.remote_platform
    }

    /// The control socket of the master.
    pub fn control_path(&self) -> &Path {
        &self.control_path
    }

    /// The master's process id, while it runs.
    pub fn master_pid(&self) -> Option<u32> {
        match &*self.master.lock() {
            Master::Own(child) => Some(child.id()),
            Master::Kept { pid } => Some(*pid),
            Master::Left | Master::Gone => None,
        }
    }

    /// A command that runs `remote_argv` on the host through the master: each argument quoted for
    /// the remote shell, ssh in a process group of its own, never prompting, and failing (exit
    /// 255) rather than connecting on its own when the master is gone. The caller sets its
    /// stdin, stdout and stderr.
    pub fn command<I, S>(&self, remote_argv: I) -> Result<Command, SshError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let words: Vec<String> = remote_argv.into_iter().map(|s| s.as_ref().to_string()).collect();
        let line = shlex::try_join(words.iter().map(String::as_str)).map_err(|e| SshError::Ssh {
            host: self.host(),
            detail: format!("a remote command's argument cannot be quoted: {e}"),
        })?;
        let mut command = ssh_base(&self.target, &self.options);
        command
            .arg("-S")
            .arg(&self.control_path)
            .args(["-o", "ControlMaster=no", "-o", "BatchMode=yes"])
            // Never a connection of its own when the master is gone: ssh would fall back to one.
            .args(["-o", "ProxyCommand=false", "-T", "--"])
            .arg(&self.target.host)
            .arg(line);
        Ok(command)
    }

    /// Runs `remote_argv` on the host with `input` as its stdin, keeping at most `max_output`
    /// bytes of its stdout; its exit status must be 0. Bounded by the keep-alives.
    pub fn run(&self, remote_argv: &[&str], input: Option<Feed<'_>>, max_output: u64) -> Result<Vec<u8>, SshError> {
        let mut command = self.command(remote_argv)?;
        let stdin = match input {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        };
        command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|source| io("start", &self.options.ssh_program, source))?;
        let (pipes, stdout) = (
            child.stdin.take().zip(input),
            child.stdout.take().expect("piped stdout"),
        );
        let stderr_pipe = child.stderr.take();
        let (stdout, stderr, fed) = std::thread::scope(|scope| {
            // The input is written while the output is read: neither waits for the other.
            let feeding = pipes.map(|(mut pipe, feed)| scope.spawn(move || feed(&mut pipe)));
            let stderr = stderr_pipe.map(|pipe| scope.spawn(move || read_bounded(pipe, 64 * 1024)));
            let stdout = read_bounded(stdout, max_output);
            let fed = feeding.map_or(Ok(()), |t| t.join().unwrap_or_else(|_| Err("its writer failed".into())));
            let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
            (stdout, stderr, fed)
        });
        let status = child
            .wait()
            .map_err(|source| io("wait for", &self.options.ssh_program, source))?;
        if status.success() {
            return match fed {
                Ok(()) => Ok(stdout),
                Err(what) => Err(SshError::Ssh {
                    host: self.host(),
                    detail: format!("cannot send `{}` its input: {what}", command_line(remote_argv)),
                }),
            };
        }
        let stderr = String::from_utf8_lossy(&stderr).into_owned();
        match status.code() {
            // 255: ssh itself failed (the link, the master); else the remote command did.
            Some(255) | None => Err(self.link_error(&stderr)),
            Some(code) => Err(SshError::Ssh {
                host: self.host(),
                detail: format!(
                    "`{}` exited with {code}: {}",
                    command_line(remote_argv),
                    last_lines(&stderr)
                ),
            }),
        }
    }

    /// Whether the master still runs; when it stopped (the link dropped, the keep-alives went
    /// unanswered), the error it ended with.
    pub fn check(&self) -> Result<(), SshError> {
        let mut guard = self.master.lock();
        let ended = match &mut *guard {
            Master::Left | Master::Gone => {
                return Err(SshError::LinkLost {
                    host: self.host(),
                    detail: "the connection was closed".into(),
                })
            }
            Master::Own(master) => !matches!(master.try_wait(), Ok(None)),
            // A kept master (not this process's child) lives while its socket answers.
            Master::Kept { .. } => std::os::unix::net::UnixStream::connect(&self.control_path).is_err(),
        };
        match ended {
            false => Ok(()),
            true => {
                *guard = Master::Gone;
                drop(guard);
                let stderr = self.master_stderr();
                Err(match SshError::from_ssh_stderr(&self.host(), &stderr) {
                    SshError::Ssh { host, detail } => SshError::LinkLost { host, detail },
                    other => other,
                })
            }
        }
    }

    /// Closes the master (`ssh -O exit`), waits for it to end (ended by its pid past 5 s) and
    /// removes its socket and log.
    pub fn close(mut self) -> Result<(), SshError> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<(), SshError> {
        open_masters().retain(|open| open.control_path != self.control_path);
        let mut held = self.master.lock();
        let mut master = match std::mem::replace(&mut *held, Master::Gone) {
            Master::Own(master) => master,
            // Left for the next command: ssh ends it once idle for `keep_for`.
            Master::Kept { .. } | Master::Left => {
                *held = Master::Left;
                return Ok(());
            }
            Master::Gone => {
                self.remove_files();
                return Ok(());
            }
        };
        drop(held);
        if matches!(master.try_wait(), Ok(None)) {
            let mut exit = ssh_base(&self.target, &self.options);
            exit.arg("-S")
                .arg(&self.control_path)
                .args(["-O", "exit", "--"])
                .arg(&self.target.host);
            let _ = exit
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(master.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if matches!(master.try_wait(), Ok(None)) {
            let _ = master.kill();
        }
        let _ = master.wait();
        self.remove_files();
        Ok(())
    }

    fn remove_files(&self) {
        let _ = std::fs::remove_file(&self.control_path);
        let _ = std::fs::remove_file(&self.log_path);
    }

    /// Waits until the master's socket appears (logged in) or the master exits (failed).
    fn wait_until_ready(&self) -> Result<(), SshError> {
        let limit = self.options.connect_timeout + self.options.login_timeout;
        let deadline = Instant::now() + limit;
        loop {
            if let Err(error) = self.check() {
                return Err(match error {
                    SshError::LinkLost { host, detail } => SshError::Ssh { host, detail },
                    other => other,
                });
            }
            if self.control_path.exists() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(SshError::NotAnswering {
                    host: self.host(),
                    detail: format!("no login within {}s", limit.as_secs()),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The error of a command that failed in ssh itself: the master's own words when it ended.
    fn link_error(&self, stderr: &str) -> SshError {
        // The master may take a moment to exit after the link dropped.
        std::thread::sleep(Duration::from_millis(50));
        match self.check() {
            Err(error) => error,
            Ok(()) => SshError::from_ssh_stderr(&self.host(), stderr),
        }
    }

    /// The master's stderr so far (an error keeps its last lines).
    fn master_stderr(&self) -> String {
        std::fs::read(&self.log_path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }
}

/// A remote command as an error names it: a script (`sh -c` code: several lines, or long) is
/// `<script>`, not its text.
fn command_line(remote_argv: &[&str]) -> String {
    let words: Vec<&str> = remote_argv
        .iter()
        .map(|arg| {
            if arg.contains('\n') || arg.len() > 120 {
                "<script>"
            } else {
                arg
            }
        })
        .collect();
    crate::vocabulary::visible::shown(&words.join(" "))
}

/// A master this process started and has not closed yet.
struct OpenMaster {
    process: crate::vocabulary::process::ProcessIdentity,
    control_path: PathBuf,
    log_path: PathBuf,
}

/// The masters of this process that are not closed yet (a master has a process group of its
/// own, so the terminal's Ctrl-C never reaches it).
fn open_masters() -> std::sync::MutexGuard<'static, Vec<OpenMaster>> {
    static OPEN: std::sync::Mutex<Vec<OpenMaster>> = std::sync::Mutex::new(Vec::new());
    OPEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ends every master this process started and has not closed (SIGTERM, each only while it is
/// the process that was started) and removes their sockets and logs: for a process told to end
/// by a signal, whose connections are never dropped (a `zstudio --remote … watch` ended by
/// Ctrl-C, SIGTERM or SIGHUP left its master running, an idle login on the host).
pub fn end_open_masters() {
    let masters = std::mem::take(&mut *open_masters());
    for master in masters {
        crate::vocabulary::process::signal_process(&master.process, nix::sys::signal::Signal::SIGTERM);
        let _ = std::fs::remove_file(&master.control_path);
        let _ = std::fs::remove_file(&master.log_path);
        let _ = std::fs::remove_file(super::sockets::pid_file(&master.control_path));
    }
}

/// From now on, SIGTERM and SIGHUP (and SIGINT, with `interrupt`: a command that takes Ctrl-C
/// as its own passes `false`) end this process as they would (their default action), but with
/// its open masters ended first ([`end_open_masters`]) and the files it was writing through a
/// partial file removed ([`remove_partials_in_progress`]: an export from a host, ended part-way).
/// For a command-line process; the app closes its connections on quit itself.
///
/// [`remove_partials_in_progress`]: crate::sessions::private::remove_partials_in_progress
pub fn end_masters_on_signals(interrupt: bool) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let signals: &[i32] = if interrupt {
        &[SIGINT, SIGTERM, SIGHUP]
    } else {
        &[SIGTERM, SIGHUP]
    };
    // Marked in the handler itself, as the signal arrives: a signal sent to every process of
    // the group (the masters too) may break a link before the thread below wakes.
    for &signal in signals {
        signal_hook::flag::register(signal, ending_on_a_signal().clone())?;
    }
    let mut received = signal_hook::iterator::Signals::new(signals)?;
    std::thread::Builder::new()
        .name("ssh-masters-on-signal".into())
        .spawn(move || {
            if let Some(signal) = received.forever().next() {
                crate::sessions::private::remove_partials_in_progress();
                end_open_masters();
                // Ends the process (by the signal's default action, else by abort).
                let _ = signal_hook::low_level::emulate_default_handler(signal);
            }
        })?;
    Ok(())
}

/// Set once a signal of [`end_masters_on_signals`] arrived: the process is being ended by it.
fn ending_on_a_signal() -> &'static std::sync::Arc<std::sync::atomic::AtomicBool> {
    static ENDING: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> = std::sync::OnceLock::new();
    ENDING.get_or_init(Default::default)
}

/// Blocks while a signal of [`end_masters_on_signals`] is ending this process, so that the
/// signal, not this thread, ends it. Ending the masters breaks the links a command is
/// reading, and the command's thread would otherwise report that and exit 1 before the signal
/// thread raises the signal (a `zstudio export` from a host ended by SIGTERM once exited 1).
/// Call it before reporting an error or returning from `main`.
pub fn wait_while_a_signal_ends_this_process() {
    while ending_on_a_signal().load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}

/// `ssh` with the options every call shares: `-F` when given, the user and port when the target
/// names them, and a process group of its own.
pub(super) fn ssh_base(target: &RemoteTarget, options: &ConnectOptions) -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(&options.ssh_program);
    if let Some(config) = &options.ssh_config {
        command.arg("-F").arg(config);
    }
    if let Some(user) = &target.user {
        command.arg("-l").arg(user);
    }
    if let Some(port) = target.port {
        command.arg("-p").arg(port.to_string());
    }
    command.process_group(0);
    command
}

/// The `StrictHostKeyChecking` to force, when the user's config weakens it (`no`, `off`,
/// `accept-new`): `ask` with an askpass program, else `yes`. Read with `ssh -G`.
fn strict_host_key_option(target: &RemoteTarget, options: &ConnectOptions) -> Result<Option<&'static str>, SshError> {
    let mut command = ssh_base(target, options);
    command.arg("-G").arg("--").arg(&target.host);
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|source| io("start", &options.ssh_program, source))?;
    if !output.status.success() {
        return Err(SshError::from_ssh_stderr(
            &target.label(),
            &String::from_utf8_lossy(&output.stderr),
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let value = text
        .lines()
        .find_map(|line| line.strip_prefix("stricthostkeychecking "))
        .unwrap_or("ask");
    let weak = matches!(value.trim(), "false" | "no" | "off" | "accept-new");
    Ok(match (weak, options.askpass.is_some()) {
        (false, _) => None,
        (true, true) => Some("ask"),
        (true, false) => Some("yes"),
    })
}

/// At most `limit` bytes of `reader` (the rest read and dropped, so the writer never blocks).
/// What writes a remote command's standard input ([`Connection::run`]), on a thread of its own
/// while the command's output is read; its error says what failed.
pub type Feed<'a> = &'a (dyn Fn(&mut dyn std::io::Write) -> Result<(), String> + Sync);

fn read_bounded(mut reader: impl Read, limit: u64) -> Vec<u8> {
    let mut kept = Vec::new();
    let _ = (&mut reader).take(limit).read_to_end(&mut kept);
    let _ = std::io::copy(&mut reader, &mut std::io::sink());
    kept
}
