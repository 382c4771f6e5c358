//! Connecting, running commands through the master, closing, and the workspace folder's checks.

use std::io::Write;
use std::process::Stdio;

use studio_core::remote::ssh::{Connection, RemoteTarget, SshError};
use test_servers::sshd::Sshd;

use super::{process_exists, remote_workspace, target, Client};

#[test]
fn a_command_runs_through_the_master_with_its_arguments_quoted() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let client = Client::new(sshd.ssh_config());
    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    assert_eq!(connection.workspace_path(), workspace.to_str().unwrap());
    assert_eq!(connection.remote_home(), sshd.home().to_str().unwrap());
    assert_eq!(connection.remote_platform(), studio_core::remote::ssh::local_platform());

    let said = connection
        .run(&["printf", "%s|", "two words", "$HOME", "it's; rm -rf x"], None, 1024)
        .unwrap();
    assert_eq!(String::from_utf8(said).unwrap(), "two words|$HOME|it's; rm -rf x|");

    let mut cat = connection.command(["cat"]).unwrap();
    let mut child = cat.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"through the master\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.stdout, b"through the master\n");
    // One login: the commands went through the master's connection.
    assert_eq!(sshd.log().matches("Accepted publickey").count(), 1, "{}", sshd.log());

    let master = connection.master_pid().unwrap();
    let socket = connection.control_path().to_path_buf();
    assert!(process_exists(master) && socket.exists());
    connection.close().unwrap();
    assert!(!process_exists(master), "the master {master} still runs after close");
    assert!(!socket.exists(), "{} is left behind", socket.display());
}

#[test]
fn dropping_a_connection_ends_its_master() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let client = Client::new(sshd.ssh_config());
    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    let master = connection.master_pid().unwrap();
    drop(connection);
    assert!(!process_exists(master), "the master {master} still runs after drop");
}

#[test]
fn opening_a_connection_sweeps_what_studios_that_are_gone_left_in_the_socket_folder() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let client = Client::new(sshd.ssh_config());
    let dir = client.options.runtime_dir.clone().unwrap();
    // Above any pid_max (2^22): a process that cannot exist.
    let gone = 4_194_305;
    let file = |name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, "Connection to 127.0.0.1 closed by remote host.\n").unwrap();
        path
    };
    let gone_log = file(&format!("{gone}-0.log"));
    let stale_socket = dir.join(format!("{gone}-1.sock"));
    drop(std::os::unix::net::UnixListener::bind(&stale_socket).unwrap());
    let answering_socket = dir.join(format!("{gone}-2.sock"));
    let _answering = std::os::unix::net::UnixListener::bind(&answering_socket).unwrap();
    let living_log = file(&format!("{}-900.log", std::process::id()));
    let others = [
        file("notes.txt"),
        file(&format!("{gone}-x.log")),
        file(&format!("{gone}-3.txt")),
    ];
    // A kept master's files: gone with its socket (after a while), kept while it answers.
    let aged = |path: &std::path::Path, days: u64| {
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 24 * 3600);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(then)
            .unwrap();
    };
    let ended_master = [file("kept-00000000000000aa.log"), file("kept-00000000000000aa.pid")];
    let just_started = file("kept-00000000000000bb.log");
    let living_master = file("kept-00000000000000cc.log");
    let _living_socket = std::os::unix::net::UnixListener::bind(dir.join("kept-00000000000000cc.sock")).unwrap();
    let (old_verified, new_verified) = (file("verified-00000000000000dd"), file("verified-00000000000000ee"));
    for path in ended_master.iter().chain([&living_master, &old_verified]) {
        aged(path, 40);
    }

    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    assert!(!gone_log.exists(), "the log of a studio that is gone is left");
    assert!(!stale_socket.exists(), "a socket no master answers is left");
    assert!(answering_socket.exists(), "a socket still answered was removed");
    assert!(living_log.exists(), "the log of a living process was removed");
    for other in &others {
        assert!(other.exists(), "{} is not the studio's, yet removed", other.display());
    }
    for ended in &ended_master {
        assert!(!ended.exists(), "{} of a master that ended is left", ended.display());
    }
    assert!(just_started.exists(), "the log of a master starting was removed");
    assert!(
        living_master.exists(),
        "the log of a kept master still answering was removed"
    );
    assert!(!old_verified.exists(), "a verified line unwritten for 40 days is left");
    assert!(new_verified.exists(), "a fresh verified line was removed");
    connection.close().unwrap();
}

#[test]
fn a_workspace_in_the_remote_home_is_found_there() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "in-home");
    let client = Client::new(sshd.ssh_config());
    let target = RemoteTarget::parse(&format!("{}:~/in-home", sshd.alias())).unwrap();
    let connection = Connection::open(&target, &client.options).unwrap();
    assert_eq!(connection.workspace_path(), workspace.to_str().unwrap());
}

#[test]
fn a_missing_or_linked_remote_workspace_is_refused_naming_the_host() {
    let sshd = Sshd::start();
    let client = Client::new(sshd.ssh_config());
    let real = remote_workspace(&sshd, "real");
    let linked = sshd.home().join("linked");
    std::os::unix::fs::symlink(&real, &linked).unwrap();
    let escaping = sshd.home().join("escaping");
    std::fs::create_dir_all(&escaping).unwrap();
    std::os::unix::fs::symlink(sshd.dir(), escaping.join(".zibby")).unwrap();
    let file = sshd.home().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let cases = [
        (sshd.home().join("nowhere"), "does not exist"),
        (linked, "is a symbolic link"),
        (escaping, "has .zibby as a symbolic link"),
        (file, "is not a folder"),
    ];
    for (path, reason) in cases {
        let error = Connection::open(&target(&sshd, &path), &client.options).err().unwrap();
        assert!(matches!(error, SshError::RemotePath { .. }), "{path:?}: {error:?}");
        let message = error.to_string();
        assert!(message.starts_with("studio-test: the workspace "), "{message}");
        assert!(
            message.contains(path.to_str().unwrap()) && message.contains(reason),
            "{message}"
        );
    }
}
