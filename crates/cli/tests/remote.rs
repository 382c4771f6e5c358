//! Remote workspaces over a real OpenSSH server on 127.0.0.1 (`test_servers::sshd`), reached with
//! the real `ssh` through a per-test `ssh_config`; the remote end is this machine, another folder
//! and another `HOME`. sshd and socat missing fail these tests with the package to install.

#[path = "remote/bootstrap.rs"]
mod bootstrap;
#[path = "remote/cli.rs"]
mod cli;
// The captures and the test agent.
mod common;
#[path = "remote/connect.rs"]
mod connect;
#[path = "remote/faults.rs"]
mod faults;
#[path = "remote/follow.rs"]
mod follow;
#[path = "remote/kept.rs"]
mod kept;
#[path = "remote/mcp.rs"]
mod mcp;
// The official Python MCP SDK's client, running `mcp_client/drive.py`.
#[path = "mcp_client/python.rs"]
mod mcp_python_client;
// The MCP SDK's own client.
#[path = "mcp_client/rust.rs"]
mod mcp_rust_client;
// The injection fixture.
#[path = "mcp_client/injection.rs"]
mod mcp_injection;
#[path = "remote/reconnect.rs"]
mod reconnect;

use std::path::{Path, PathBuf};
use std::time::Duration;

use studio_core::remote::ssh::{ConnectOptions, RemoteTarget};
use tempfile::TempDir;
use test_servers::sshd::Sshd;

/// What a test connects with: its sshd's config, short timeouts, a socket folder of its own.
pub struct Client {
    pub options: ConnectOptions,
    _sockets: TempDir,
}

impl Client {
    /// Options reaching `sshd` with the config at `ssh_config`.
    pub fn new(ssh_config: &Path) -> Client {
        let sockets = tempfile::Builder::new().prefix("ctl-").tempdir().unwrap();
        let options = ConnectOptions {
            ssh_config: Some(ssh_config.to_path_buf()),
            connect_timeout: Duration::from_secs(5),
            login_timeout: Duration::from_secs(20),
            runtime_dir: Some(sockets.path().to_path_buf()),
            ..ConnectOptions::default()
        };
        Client {
            options,
            _sockets: sockets,
        }
    }
}

/// A workspace folder on the "remote" side: under the sshd's login HOME.
pub fn remote_workspace(sshd: &Sshd, name: &str) -> PathBuf {
    let path = sshd.home().join(name);
    std::fs::create_dir_all(path.join(".zibby/output/sessions")).unwrap();
    path
}

/// `studio-test:PATH`.
pub fn target(sshd: &Sshd, path: &Path) -> RemoteTarget {
    RemoteTarget::parse(&format!("{}:{}", sshd.alias(), path.display())).unwrap()
}

/// Whether a process with `pid` exists (reaped ones do not).
pub fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
