//! A master kept between processes (`zstudio --keep-connection`, 60 s by default): a sequence of
//! `zstudio --remote …` commands pays ssh's handshake once, not once a command.
//!
//! Its control socket is named by what it reaches and how (`kept-<digest>.sock` in the private
//! [`runtime_dir`](super::runtime_dir): the host, user, port, ssh program, config file and askpass
//! program), so only a process that would connect the same way uses it. The first process starts
//! it with `ssh -f -M -N -o ControlPersist=SECS`: ssh forks it to the background once logged in,
//! and ends it itself once no command has used it for SECS; each later process checks it answers
//! (`ssh -O check`, which says its pid) and uses it, or starts a new one where it does not. A file
//! lock on that folder makes two processes starting at once share one master. A process ended
//! by a signal ends the kept master too ([`end_open_masters`](super::end_open_masters)): what is
//! left behind is left only by a command that ended normally, and only for SECS.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::connection::{master_command, register_master, ssh_base, ConnectOptions, Connection, Master};
use super::errors::{io, SshError};
use super::target::RemoteTarget;

/// Opens a connection through the kept master of `target` in `dir`, started when none answers.
pub(super) fn open(
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
    let pid = match answering_master(target, options, &control_path) {
        Some(pid) => pid,
        None => start(target, options, &control_path, &log_path, keep_for)?,
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
    let hex: String = digest.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("kept-{hex}")
}
