//! [`Connection::attach`]: a master of the connection's own, or one kept between processes
//! (`zstudio --keep-connection`, 60 s by default), so that a sequence of
//! `zstudio --remote …` commands pays ssh's handshake once, not once a command.
//!
//! Its control socket is named by what it reaches and how (`kept-<digest>.sock` in the private
//! runtime folder (`sockets::runtime_dir`): the host, user, port, ssh program, config file and
//! askpass program), so only a process that would connect the same way uses it. The first process
//! starts it with `ssh -f -M -N -o ControlPersist=SECS`: ssh forks it to the background once
//! logged in, and ends it itself once no command has used it for SECS. Its process (id, start
//! time, boot) is kept beside the socket (`kept-<digest>.pid`): a later process uses the master
//! when that process still runs and its socket takes a connection, without an `ssh -O check` of
//! its own (a process started and a round trip through the master, each command); where there
//! is no such file (a master of an older build), `ssh -O check` says its pid; where neither
//! answers, a new master is started. A file lock on that folder makes two processes starting at
//! once share one master. A process ended by a signal ends the kept master too
//! ([`end_open_masters`](super::connection::end_open_masters)): what is left behind is left only
//! by a command that ended normally, and only for SECS.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::connection::{master_command, register_master, ssh_base, ConnectOptions, Connection, Master};
use super::errors::{io, SshError};
use super::sockets::{pid_file, private_dir, runtime_dir, sweep_leftovers};
use super::target::RemoteTarget;
use crate::vocabulary::process::ProcessIdentity;

impl Connection {
    /// Connects to `target`'s host (one ControlMaster, or the kept one) without looking at the
    /// host yet: [`Connection::start_server`] probes it with the server's start, in one command.
    pub fn attach(target: &RemoteTarget, options: &ConnectOptions) -> Result<Connection, SshError> {
        let dir = match &options.runtime_dir {
            Some(dir) => private_dir(dir)?,
            None => runtime_dir()?,
        };
        sweep_leftovers(&dir);
        if let Some(keep_for) = options.keep_for {
            return open_kept(target, options, &dir, keep_for);
        }
        Connection::open_own(target, options, &dir)
    }
}

/// Opens a connection through the kept master of `target` in `dir`, started when none answers.
fn open_kept(
    target: &RemoteTarget,
    options: &ConnectOptions,
    dir: &Path,
    keep_for: Duration,
) -> Result<Connection, SshError> {
    let name = kept_name(target, options);
    let control_path = dir.join(format!("{name}.sock"));
    let log_path = dir.join(format!("{name}.log"));
    // The folder itself is the lock (nothing left behind): two processes never start two.
    let lock = std::fs::File::open(dir).map_err(|source| io("open", dir, source))?;
    lock.lock().map_err(|source| io("lock", dir, source))?;
    let pid = match known_master(&control_path) {
        Some(pid) => pid,
        None => {
            let pid = match answering_master(target, options, &control_path) {
                Some(pid) => pid,
                None => start(target, options, &control_path, &log_path, keep_for)?,
            };
            remember_master(&control_path, pid);
            pid
        }
    };
    drop(lock);
    register_master(pid, &control_path, &log_path);
    Connection::ready(target, options, control_path, log_path, Master::Kept { pid })
}

/// Starts the kept master and waits until ssh put it in the background (logged in): its pid.
fn start(
    target: &RemoteTarget,
    options: &ConnectOptions,
    control_path: &Path,
    log_path: &Path,
    keep_for: Duration,
) -> Result<u32, SshError> {
    let _ = std::fs::remove_file(control_path);
    let log = std::fs::File::create(log_path).map_err(|source| io("create", log_path, source))?;
    let persist = format!("{}s", keep_for.as_secs().max(1));
    // `-f`: ssh forks once logged in, and this first process exits.
    let mut first = master_command(target, options, control_path, &persist, true, log)?
        .spawn()
        .map_err(|source| io("start", &options.ssh_program, source))?;
    let limit = options.connect_timeout + options.login_timeout;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = first
            .try_wait()
            .map_err(|source| io("wait for", &options.ssh_program, source))?
        {
            break status;
        }
        if Instant::now() > deadline {
            let _ = first.kill();
            let _ = first.wait();
            return Err(SshError::NotAnswering {
                host: target.label(),
                detail: format!("no login within {}s", limit.as_secs()),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let said = || String::from_utf8_lossy(&std::fs::read(log_path).unwrap_or_default()).into_owned();
    if !status.success() {
        return Err(SshError::from_ssh_stderr(&target.label(), &said()));
    }
    answering_master(target, options, control_path).ok_or_else(|| SshError::Ssh {
        host: target.label(),
        detail: format!("the kept connection does not answer once started: {}", said().trim()),
    })
}

/// Keeps master `pid`'s identity beside its socket (`pid start-time boot-id`) for the next process.
fn remember_master(control_path: &Path, pid: u32) {
    if let Some(process) = ProcessIdentity::of(pid) {
        let line = format!("{} {} {}", process.pid, process.start_time, process.boot_id);
        let _ = crate::sessions::private::replace_file(&pid_file(control_path), line.as_bytes());
    }
}

/// The pid of the master this machine started on `control_path`, when that very process still
/// runs (its id, start time and boot are the ones kept) and its socket takes a connection.
fn known_master(control_path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(pid_file(control_path)).ok()?;
    let mut fields = text.split_whitespace();
    let process = ProcessIdentity {
        pid: fields.next()?.parse().ok()?,
        start_time: fields.next()?.parse().ok()?,
        boot_id: fields.next()?.to_owned(),
    };
    let answers = fields.next().is_none()
        && process.is_current()
        && std::os::unix::net::UnixStream::connect(control_path).is_ok();
    answers.then_some(process.pid)
}

/// The pid of the master answering on `control_path` (`ssh -O check` says `Master running
/// (pid=N)`), if one does.
fn answering_master(target: &RemoteTarget, options: &ConnectOptions, control_path: &Path) -> Option<u32> {
    if !control_path.exists() {
        return None;
    }
    let mut check = ssh_base(target, options);
    check
        .arg("-S")
        .arg(control_path)
        .args(["-O", "check", "--"])
        .arg(&target.host);
    let output = check.stdin(Stdio::null()).stdout(Stdio::null()).output().ok()?;
    if !output.status.success() {
        let _ = std::fs::remove_file(control_path);
        let _ = std::fs::remove_file(pid_file(control_path));
        return None;
    }
    let said = String::from_utf8_lossy(&output.stderr);
    said.split("pid=").nth(1)?.split(')').next()?.trim().parse().ok()
}

/// `kept-<16 hex digits>`: the SHA-256 of everything that decides where and how ssh connects.
pub(super) fn kept_name(target: &RemoteTarget, options: &ConnectOptions) -> String {
    let mut digest = Sha256::new();
    let parts = [
        target.host.clone(),
        target.user.clone().unwrap_or_default(),
        target.port.map(|p| p.to_string()).unwrap_or_default(),
        options.ssh_program.display().to_string(),
        options
            .ssh_config
            .as_ref()
            .map(|c| c.display().to_string())
            .unwrap_or_default(),
        options
            .askpass
            .as_ref()
            .map(|a| a.display().to_string())
            .unwrap_or_default(),
    ];
    for part in parts {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    let hex = crate::vocabulary::digest::hex(&digest.finalize()[..8]);
    format!("kept-{hex}")
}
