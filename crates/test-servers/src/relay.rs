//! A relay between a client and a server on 127.0.0.1 (`socat`), that a test freezes (SIGSTOP:
//! a stalled link, nothing passes and nothing closes), resumes (SIGCONT) or kills (the link
//! drops: every connection through it closes).

use std::process::Command;

use nix::sys::signal::Signal;
use tempfile::TempDir;

use crate::process::{free_port, require_program, ServerProcess};

/// A running relay from [`Relay::port`] to a port on 127.0.0.1, ended when dropped.
pub struct Relay {
    process: ServerProcess,
    port: u16,
    target_port: u16,
    dir: TempDir,
}

impl Relay {
    /// Starts a relay listening on a free port of 127.0.0.1 and forwarding each connection to
    /// `target_port` on 127.0.0.1.
    pub fn start(target_port: u16) -> Relay {
        let dir = tempfile::Builder::new()
            .prefix("relay-")
            .tempdir()
            .expect("temporary folder");
        let port = free_port();
        let process = listen(port, target_port, dir.path());
        Relay {
            process,
            port,
            target_port,
            dir,
        }
    }

    /// Starts a killed relay again on the same port (the link can come back).
    pub fn restart(&mut self) {
        self.process.stop();
        self.process = listen(self.port, self.target_port, self.dir.path());
    }

    /// The port the relay listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// socat's process id (its connections' processes are in its process group).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Freezes the relay and every connection through it (SIGSTOP to its process group).
    pub fn freeze(&self) {
        self.process.signal(Signal::SIGSTOP);
    }

    /// Resumes a frozen relay (SIGCONT).
    pub fn resume(&self) {
        self.process.signal(Signal::SIGCONT);
    }

    /// Ends the relay and its connections (they close at once) and reaps it.
    pub fn kill(&mut self) {
        self.process.signal(Signal::SIGCONT);
        self.process.signal(Signal::SIGKILL);
        self.process.stop();
    }
}

/// socat listening on `port` of 127.0.0.1, forwarding each connection to `target_port` there.
fn listen(port: u16, target_port: u16, dir: &std::path::Path) -> ServerProcess {
    let socat = require_program("/usr/bin/socat", "socat");
    let mut command = Command::new(socat);
    command
        .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
        .arg(format!("TCP:127.0.0.1:{target_port}"));
    let mut process = ServerProcess::spawn("socat", command, &dir.join("socat.log"));
    process.wait_for_port(port);
    process
}
