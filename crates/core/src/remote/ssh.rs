//! A remote workspace reached through the system's `ssh`, so that the user's `~/.ssh/config`
//! (aliases, ProxyJump, IdentityFile, certificates), agent and known_hosts work as in a terminal.
//!
//! [`Connection::open`] starts one ControlMaster for the host (its socket in a private 0700
//! folder, [`runtime_dir`], where each open first removes the logs and dead sockets of studios
//! that were killed before they closed their links), with keep-alives (`ServerAliveInterval` ×
//! `ServerAliveCountMax`, 15 s × 3 by default: a dead link is noticed within 45 s, and at once
//! when the socket closes) and a `ConnectTimeout`. Host keys are checked strictly: a config that says
//! `StrictHostKeyChecking no` or `accept-new` is overridden (to `ask` with an askpass program, to
//! `yes` without). ssh runs in a process group of its own, so a Ctrl-C meant for the studio never
//! reaches it; its prompts (a key's passphrase, an unknown host key) go through `SSH_ASKPASS` with
//! `SSH_ASKPASS_REQUIRE=force` when [`ConnectOptions::askpass`] names a program, and without one
//! ssh runs in batch mode (keys from the agent or without a passphrase).
//!
//! [`Connection::command`] runs a command on the host through the master, each argument quoted
//! for the remote shell (a POSIX shell: sh, bash, zsh, dash). [`Connection::close`] (or drop)
//! runs `ssh -O exit` and reaps the master: nothing is left running here. With
//! [`ConnectOptions::keep_for`] (the CLI's `--keep-connection`), the master is kept that long
//! after its last use instead, for the next process to use (`kept`).
//!
//! [`Connection::ensure_server`] (in `bootstrap`) finds or uploads the same `zstudio` build on the
//! host; [`Connection::start_server`] (in `start`) probes the host, checks the server there and
//! starts it in one command through the master (after [`Connection::attach`], which connects
//! without probing), what the host says before the server's banner read strictly; with a kept
//! master, the workspace's kept server is reached through it instead when it waits there
//! ([`Connection::reach_kept_server`], in `reach`).

mod bootstrap;
mod connection;
mod errors;
mod kept;
mod reach;
mod sockets;
mod start;
mod target;

pub use bootstrap::{build_id, local_platform, BuildInfo, RemoteServer, SERVER_DIR};
pub use connection::{
    end_masters_on_signals, end_open_masters, wait_while_a_signal_ends_this_process, ConnectOptions, Connection,
};
pub use errors::{last_lines, SshError, STDERR_KEPT};
pub use sockets::{private_dir, runtime_dir};
pub use target::RemoteTarget;

/// The environment variable naming an ssh config file for `-F` (as `--ssh-config` does).
pub const SSH_CONFIG_ENV: &str = "ZIBBY_STUDIO_SSH_CONFIG";
