//! A real OpenSSH server on 127.0.0.1 at a free port: `/usr/sbin/sshd -D -e -f <its own config>`,
//! with a throwaway host key, a client key made for it by `ssh-keygen`, its own authorized_keys,
//! `StrictModes no` and no PAM or password login. Its files live in a temporary folder; a login's
//! `HOME` (and `XDG_DATA_HOME`) is a folder in there too (`SetEnv`), so nothing of the user's is
//! read or changed on either side. A client reaches it with the `ssh_config` it writes (`ssh -F`).

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::process::{free_port, require_program, ServerProcess};

/// The host alias the written `ssh_config` gives the server.
pub const ALIAS: &str = "studio-test";

/// How many times a start is tried when another process took the free port in between.
const START_ATTEMPTS: usize = 3;

/// One `Host` entry of an `ssh_config`, with what the tests vary: the port (a relay's), the key,
/// the known hosts, and more options (short keep-alives, say).
#[derive(Clone, Debug)]
pub struct HostEntry {
    pub alias: String,
    pub port: u16,
    pub user: String,
    pub identity: PathBuf,
    pub known_hosts: PathBuf,
    /// More lines, `Option value` each, written as they are before the others (so they win).
    pub extra: Vec<String>,
}

/// A running sshd, ended (with its connections) when dropped.
pub struct Sshd {
    process: ServerProcess,
    dir: TempDir,
    port: u16,
    user: String,
    ssh_config: PathBuf,
}

impl Sshd {
    /// Starts an sshd whose client key has no passphrase.
    pub fn start() -> Sshd {
        Self::start_inner(None, false)
    }

    /// Starts an sshd that opens a client's local forwardings (`AllowTcpForwarding local`: TCP
    /// and Unix sockets), as a host without that restriction does; [`Sshd::start`]'s refuses them.
    pub fn start_forwarding() -> Sshd {
        Self::start_inner(None, true)
    }

    /// Starts an sshd whose client key is protected by `passphrase` (for the askpass path).
    pub fn start_with_key_passphrase(passphrase: &str) -> Sshd {
        Self::start_inner(Some(passphrase), false)
    }

    fn start_inner(passphrase: Option<&str>, forwarding: bool) -> Sshd {
        let sshd = require_program("/usr/sbin/sshd", "openssh-server");
        require_program("/usr/bin/ssh-keygen", "openssh-client");
        require_program("/usr/bin/ssh", "openssh-client");
        ensure_privilege_separation_dir();
        let dir = tempfile::Builder::new()
            .prefix("sshd-")
            .tempdir()
            .expect("temporary folder");
        let root = dir.path();
        keygen(&root.join("host_key"), "");
        keygen(&root.join("client_key"), passphrase.unwrap_or(""));
        std::fs::copy(root.join("client_key.pub"), root.join("authorized_keys")).expect("authorized_keys");
        let host_key = std::fs::read_to_string(root.join("host_key.pub")).expect("host_key.pub");
        std::fs::create_dir_all(root.join("home/data")).expect("home folder");
        let user = current_user();
        for attempt in 1..=START_ATTEMPTS {
            let port = free_port();
            let known = format!("[127.0.0.1]:{port} {host_key}");
            std::fs::write(root.join("known_hosts"), known).expect("known_hosts");
            std::fs::write(root.join("sshd_config"), sshd_config(root, port, forwarding)).expect("sshd_config");
            let mut command = Command::new(&sshd);
            command.arg("-D").arg("-e").arg("-f").arg(root.join("sshd_config"));
            let mut process = ServerProcess::spawn("sshd", command, &root.join("sshd.log"));
            std::thread::sleep(std::time::Duration::from_millis(50));
            if process.has_exited() && process.log_text().contains("Address already in use") && attempt < START_ATTEMPTS
            {
                continue;
            }
            process.wait_for_port(port);
            let ssh_config = root.join("ssh_config");
            let mut server = Sshd {
                process,
                port,
                user: user.clone(),
                ssh_config: ssh_config.clone(),
                dir,
            };
            let entry = server.host_entry();
            server.write_ssh_config("ssh_config", &[entry]);
            server.ssh_config = ssh_config;
            return server;
        }
        unreachable!("the last attempt panics or returns")
    }

    /// The port sshd listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// sshd's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The host alias of [`Sshd::ssh_config`].
    pub fn alias(&self) -> &str {
        ALIAS
    }

    /// The user a client logs in as (the current one).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The `ssh_config` with one entry, [`ALIAS`], that reaches this server with its key and
    /// known host key (`StrictHostKeyChecking yes`).
    pub fn ssh_config(&self) -> &Path {
        &self.ssh_config
    }

    /// The server's temporary folder (keys, configs, its log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A login's `HOME` on the server side (a folder of [`Sshd::dir`]).
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The client's private key (authorized by the server).
    pub fn client_key(&self) -> PathBuf {
        self.dir.path().join("client_key")
    }

    /// The known_hosts file holding the server's host key at its port.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    /// Records the server's host key for `port` too in [`Sshd::known_hosts`] (a relay's port:
    /// ssh looks a host key up by the port it connects to).
    pub fn trust_port(&self, port: u16) {
        use std::io::Write;
        let key = std::fs::read_to_string(self.dir.path().join("host_key.pub")).expect("host_key.pub");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.known_hosts())
            .expect("known_hosts");
        write!(file, "[127.0.0.1]:{port} {key}").expect("known_hosts");
    }

    /// What sshd logged so far (`-e`: its log goes to a file of [`Sshd::dir`]).
    pub fn log(&self) -> String {
        self.process.log_text()
    }

    /// The [`ALIAS`] entry of [`Sshd::ssh_config`], for a test to change and write anew.
    pub fn host_entry(&self) -> HostEntry {
        HostEntry {
            alias: ALIAS.to_string(),
            port: self.port,
            user: self.user.clone(),
            identity: self.client_key(),
            known_hosts: self.known_hosts(),
            extra: Vec::new(),
        }
    }

    /// A new key pair named `name` in [`Sshd::dir`] that the server does not authorize; its
    /// private key's path.
    pub fn unauthorized_key(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        keygen(&path, "");
        path
    }

    /// Writes an `ssh_config` named `file_name` in [`Sshd::dir`] with `entries`; its path.
    pub fn write_ssh_config(&self, file_name: &str, entries: &[HostEntry]) -> PathBuf {
        let path = self.dir.path().join(file_name);
        let text: String = entries.iter().map(host_entry_text).collect();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }
}

/// The text of one `Host` entry: nothing outside the test's folder is read (no agent, no global
/// known hosts), and a host key is checked strictly. Its `extra` lines come first: ssh takes an
/// option's first value, so they override the others.
fn host_entry_text(entry: &HostEntry) -> String {
    let mut text = format!("Host {}\n", entry.alias);
    for line in &entry.extra {
        text.push_str(&format!("  {line}\n"));
    }
    text.push_str(&format!(
        "  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
         IdentityAgent none\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  \
         StrictHostKeyChecking yes\n  UpdateHostKeys no\n",
        entry.port,
        entry.user,
        entry.identity.display(),
        entry.known_hosts.display()
    ));
    text
}

/// sshd's own config: loopback only, its own keys and files, public keys only; local forwardings
/// opened with `forwarding`.
fn sshd_config(root: &Path, port: u16, forwarding: bool) -> String {
    let home = root.join("home");
    format!(
        "ListenAddress 127.0.0.1\nPort {port}\nHostKey {host_key}\nAuthorizedKeysFile {authorized}\n\
         PidFile {pid}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
         KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
         AllowTcpForwarding {forwarding}\nX11Forwarding no\nPrintMotd no\nLogLevel VERBOSE\n\
         SetEnv HOME={home} XDG_DATA_HOME={data}\n",
        host_key = root.join("host_key").display(),
        authorized = root.join("authorized_keys").display(),
        pid = root.join("sshd.pid").display(),
        home = home.display(),
        data = home.join("data").display(),
        forwarding = if forwarding { "local" } else { "no" },
    )
}

/// A new ed25519 key pair at `path` (and `path.pub`).
fn keygen(path: &Path, passphrase: &str) {
    let output = Command::new("/usr/bin/ssh-keygen")
        .args(["-q", "-t", "ed25519", "-C", "studio-test", "-N", passphrase, "-f"])
        .arg(path)
        .output()
        .expect("run ssh-keygen");
    assert!(
        output.status.success(),
        "ssh-keygen: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The name of the user the tests run as.
fn current_user() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|user| user.name)
        .unwrap_or_else(|| panic!("user {uid} has no name in the password database"))
}

/// sshd started as root needs its privilege separation folder, `/run/sshd`, which the system's
/// service would create (Debian's unit: `RuntimeDirectory=sshd`). Made when missing, as that unit
/// makes it (0755, empty); not needed when the tests run as another user.
fn ensure_privilege_separation_dir() {
    let dir = Path::new("/run/sshd");
    if nix::unistd::geteuid().is_root() && !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        // Two tests starting their first sshd at once both find it missing: one makes it.
        match std::fs::DirBuilder::new().mode(0o755).create(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                panic!("{}: {e} (sshd needs it when run as root)", dir.display())
            }
            _ => {}
        }
    }
}
