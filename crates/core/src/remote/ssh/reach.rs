//! The workspace's kept server (`remote::kept_server`) reached through the kept master, nothing
//! started on the host: [`Connection::reach_kept_server`] forwards a local socket of this
//! process's to the kept server's (what `ssh -O forward -L LOCAL:REMOTE` asks, said to the master
//! on its control socket here: a channel of the login's sshd, no session, no command), connects,
//! then cancels the forward and removes its file (the connection goes on; nothing is left when
//! the command ends).
//!
//! Where the kept server is comes from the command that started it: its start script said the
//! host's home and the workspace's path, kept beside the kept master
//! (`kept-<digest>.ws-<digest of the workspace as given and the build>`, read only through the
//! master it was written through: a new master's first command runs the start script, which
//! finds the kept server or starts one), and its socket is named
//! by the build this machine verified there ([`kept_socket_path`]). Where none answers,
//! the start script runs as without it, and the record says so: the host's sshd may refuse to
//! forward (`AllowTcpForwarding no`, `DisableForwarding`; ssh's master does not say why), so for
//! [`RETRY_FORWARD`] the commands run the start script, whose server relays to the kept one.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::connection::Connection;
use super::sockets::unique_name;
use crate::remote::client::{ClientOptions, RemoteClient};
use crate::remote::protocol::kept_socket_path;

/// The record's last line after a forward that reached no server: `refused <unix seconds>`.
const REFUSED: &str = "refused";

/// How long after a forward that reached no server the commands run the start script instead.
const RETRY_FORWARD: std::time::Duration = std::time::Duration::from_secs(300);

/// A kept server's record, line by line: the kept master it was written through (`master PID`),
/// the host's home, its platform and the workspace's path, then `refused <unix seconds>` once a
/// forward reached no server.
struct KeptRecord<'a> {
    master: &'a str,
    home: &'a str,
    platform: &'a str,
    workspace: &'a str,
    refused_at: Option<u64>,
}

impl<'a> KeptRecord<'a> {
    fn parse(text: &'a str) -> Option<KeptRecord<'a>> {
        let mut lines = text.lines();
        let (master, home, platform, workspace) = (lines.next()?, lines.next()?, lines.next()?, lines.next()?);
        let refused_at = lines
            .next()
            .and_then(|line| line.strip_prefix(REFUSED))
            .and_then(|at| at.trim().parse().ok());
        Some(KeptRecord {
            master,
            home,
            platform,
            workspace,
            refused_at,
        })
    }

    fn text(&self) -> String {
        let (master, home, platform, workspace) = (self.master, self.home, self.platform, self.workspace);
        let refused = self
            .refused_at
            .map(|at| format!("{REFUSED} {at}\n"))
            .unwrap_or_default();
        format!("{master}\n{home}\n{platform}\n{workspace}\n{refused}")
    }

    /// Whether a forward reached no server less than [`RETRY_FORWARD`] ago.
    fn refused_lately(&self) -> bool {
        self.refused_at
            .is_some_and(|at| unix_seconds_now().saturating_sub(at) < RETRY_FORWARD.as_secs())
    }
}

fn unix_seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |now| now.as_secs())
}

impl Connection {
    /// The record of the workspace's kept server of `build`, beside a kept master (none for a
    /// master of this connection's own).
    fn kept_server_record(&self, build: &str) -> Option<PathBuf> {
        let stem = self.control_path().file_stem()?.to_str()?;
        if !stem.starts_with("kept-") {
            return None;
        }
        let mut digest = Sha256::new();
        digest.update(self.target().path.as_bytes());
        digest.update([0]);
        digest.update(build.as_bytes());
        let hex = crate::vocabulary::digest::hex(&digest.finalize()[..8]);
        Some(self.control_path().with_file_name(format!("{stem}.ws-{hex}")))
    }

    /// The record's first line: the kept master it was written through (`master PID`); a record
    /// of an earlier master is not read (its kept server may have ended with it).
    fn master_line(&self) -> String {
        format!("master {}", self.master_pid().unwrap_or_default())
    }

    /// Keeps where the workspace's kept server of `build` is (what the start script said), for
    /// the next command through the kept master; a record saying the forward was refused stays.
    pub(super) fn remember_kept_server(&self, build: &str) {
        let Some(record) = self.kept_server_record(build) else {
            return;
        };
        let master = self.master_line();
        let kept = std::fs::read_to_string(&record).is_ok_and(|text| {
            KeptRecord::parse(&text).is_some_and(|kept| kept.master == master && kept.refused_lately())
        });
        if kept {
            return;
        }
        let text = KeptRecord {
            master: &master,
            home: self.remote_home(),
            platform: self.remote_platform(),
            workspace: self.workspace_path(),
            refused_at: None,
        }
        .text();
        let _ = crate::sessions::private::replace_file(&record, text.as_bytes());
    }

    /// A client of the workspace's kept server of `build`, reached through the kept master
    /// without starting anything on the host; `None` where there is none to reach (the caller
    /// runs the start script).
    pub fn reach_kept_server(&mut self, build: &str, client: &ClientOptions) -> Option<RemoteClient> {
        let record = self.kept_server_record(build)?;
        let text = std::fs::read_to_string(&record).ok()?;
        let mut kept = KeptRecord::parse(&text)?;
        if kept.master != self.master_line() || kept.refused_lately() {
            return None;
        }
        let remote = kept_socket_path(kept.home, build, kept.workspace);
        let local = self.control_path().with_file_name(format!("{}.fwd", unique_name()));
        if remote.contains(':') || local.to_string_lossy().contains(':') {
            return None;
        }
        let local_path = local.to_string_lossy().into_owned();
        let mut mux = Mux::open(self.control_path()).ok();
        let forwarded = mux
            .as_mut()
            .is_some_and(|mux| mux.forward(MUX_C_OPEN_FWD, &local_path, &remote).is_ok());
        if !forwarded {
            let _ = std::fs::remove_file(&local);
            let _ = std::fs::remove_file(&record);
            return None;
        }
        let reached = UnixStream::connect(&local)
            .ok()
            .and_then(|stream| RemoteClient::attach(self.host(), stream, client.clone()).ok());
        // Cancelled once the server greeted (the master took the connection: one still waiting
        // to be taken would be dropped with the listener); the connection made goes on.
        if let Some(mux) = mux.as_mut() {
            let _ = mux.forward(MUX_C_CLOSE_FWD, &local_path, &remote);
        }
        let _ = std::fs::remove_file(&local);
        match reached {
            Some(reached) => {
                self.set_host_facts(kept.home, kept.platform, kept.workspace);
                Some(reached)
            }
            None => {
                kept.refused_at = Some(unix_seconds_now());
                let _ = crate::sessions::private::replace_file(&record, kept.text().as_bytes());
                None
            }
        }
    }
}

/// `MUX_MSG_HELLO`, `MUX_C_OPEN_FWD`, `MUX_C_CLOSE_FWD`, `MUX_S_OK` of OpenSSH's control
/// protocol (its `PROTOCOL.mux`), version 4.
const MUX_MSG_HELLO: u32 = 0x0000_0001;
const MUX_C_OPEN_FWD: u32 = 0x1000_0006;
const MUX_C_CLOSE_FWD: u32 = 0x1000_0007;
const MUX_S_OK: u32 = 0x8000_0001;
/// A local forward (`-L`); a port of -2: the host is a Unix socket's path.
const MUX_FWD_LOCAL: u32 = 1;
const PORT_STREAMLOCAL: u32 = 0xffff_fffe;

/// A client of the master's control socket, speaking its protocol: the forward of `-O forward
/// -L` opened and closed in this process, no `ssh` started (each costs milliseconds).
struct Mux {
    socket: UnixStream,
    next_id: u32,
}

impl Mux {
    /// Connected to the master on `control`, the hellos said.
    fn open(control: &Path) -> std::io::Result<Mux> {
        let socket = UnixStream::connect(control)?;
        socket.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
        let mut mux = Mux { socket, next_id: 1 };
        mux.send(&[MUX_MSG_HELLO.to_be_bytes(), 4u32.to_be_bytes()].concat())?;
        let hello = mux.receive()?;
        if hello.get(..4) != Some(&MUX_MSG_HELLO.to_be_bytes()[..]) {
            return Err(std::io::Error::other("the master did not say hello"));
        }
        Ok(mux)
    }

    /// Opens (`MUX_C_OPEN_FWD`) or closes (`MUX_C_CLOSE_FWD`) the forward of the socket `local`
    /// here to the socket `remote` on the host; an error unless the master said it is done.
    fn forward(&mut self, request: u32, local: &str, remote: &str) -> std::io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = Vec::new();
        for word in [request, id, MUX_FWD_LOCAL] {
            message.extend(word.to_be_bytes());
        }
        for path in [local, remote] {
            message.extend((path.len() as u32).to_be_bytes());
            message.extend(path.as_bytes());
            message.extend(PORT_STREAMLOCAL.to_be_bytes());
        }
        self.send(&message)?;
        let reply = self.receive()?;
        let ok = [MUX_S_OK.to_be_bytes(), id.to_be_bytes()].concat();
        match reply.get(..8) == Some(&ok[..]) {
            true => Ok(()),
            false => Err(std::io::Error::other("the master refused the forward")),
        }
    }

    fn send(&mut self, payload: &[u8]) -> std::io::Result<()> {
        self.socket.write_all(&(payload.len() as u32).to_be_bytes())?;
        self.socket.write_all(payload)
    }

    /// One message of the master (at most 64 KiB).
    fn receive(&mut self) -> std::io::Result<Vec<u8>> {
        let mut length = [0; 4];
        self.socket.read_exact(&mut length)?;
        let length = u32::from_be_bytes(length) as usize;
        if length > 64 * 1024 {
            return Err(std::io::Error::other("a message of the master too long"));
        }
        let mut message = vec![0; length];
        self.socket.read_exact(&mut message)?;
        Ok(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_what_it_wrote_and_when_a_forward_was_refused() {
        let mut kept = KeptRecord {
            master: "master 41",
            home: "/home/ci",
            platform: "linux-x86_64",
            workspace: "/srv/agents",
            refused_at: None,
        };
        let text = kept.text();
        assert_eq!(text, "master 41\n/home/ci\nlinux-x86_64\n/srv/agents\n");
        let read = KeptRecord::parse(&text).expect("four lines");
        assert_eq!(
            (read.master, read.home, read.platform, read.workspace, read.refused_at),
            ("master 41", "/home/ci", "linux-x86_64", "/srv/agents", None)
        );
        assert!(!read.refused_lately());

        kept.refused_at = Some(unix_seconds_now() - 10);
        let refused = kept.text();
        assert!(KeptRecord::parse(&refused).expect("five lines").refused_lately());
        kept.refused_at = Some(unix_seconds_now() - RETRY_FORWARD.as_secs() - 1);
        assert!(!KeptRecord::parse(&kept.text()).expect("five lines").refused_lately());
        assert!(
            KeptRecord::parse("master 41\n/home/ci\n").is_none(),
            "a record cut short is none"
        );
    }
}
