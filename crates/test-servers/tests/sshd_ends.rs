//! An ended `Sshd` leaves no connection behind: its connection processes call `setsid`, so a
//! signal to its process group alone would leave them, and with them a client's ssh master.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use test_servers::sshd::Sshd;

#[test]
fn a_client_master_ends_when_its_sshd_is_dropped() {
    let sshd = Sshd::start();
    let socket = sshd.dir().join("master.sock");
    let mut master = Command::new("ssh")
        .arg("-F")
        .arg(sshd.ssh_config())
        .args(["-M", "-N", "-o", "BatchMode=yes", "-S"])
        .arg(&socket)
        .arg(sshd.alias())
        .stdin(Stdio::null())
        .spawn()
        .expect("start an ssh master");
    let connected = Instant::now() + Duration::from_secs(15);
    while !socket.exists() {
        assert!(
            master.try_wait().expect("try_wait").is_none(),
            "the master exited before connecting"
        );
        assert!(Instant::now() < connected, "the master did not connect within 15 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(sshd);
    let ended = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = master.try_wait().expect("try_wait") {
            break Some(status);
        }
        if Instant::now() > ended {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if status.is_none() {
        let _ = master.kill();
        let _ = master.wait();
    }
    assert!(
        status.is_some(),
        "the ssh master still runs 10 s after its sshd was dropped"
    );
}
