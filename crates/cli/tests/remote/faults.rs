//! What goes wrong reaching a host: nothing answering, a refused key, an unknown or changed host
//! key, a passphrase asked through askpass, a stalled or dropped link. Each error names the host.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use studio_core::remote::ssh::{Connection, SshError};
use test_servers::process::free_port;
use test_servers::relay::Relay;
use test_servers::sshd::{HostEntry, Sshd};

use super::{process_exists, remote_workspace, target, Client};

/// Opens `sshd`'s workspace `ws` with a config of `entry`; the error.
fn open_error(sshd: &Sshd, entry: HostEntry) -> SshError {
    let workspace = remote_workspace(sshd, "ws");
    let config = sshd.write_ssh_config("test_config", &[entry]);
    let client = Client::new(&config);
    Connection::open(&target(sshd, &workspace), &client.options)
        .err()
        .expect("the connection is refused")
}

#[test]
fn a_port_where_nothing_answers_is_reported_as_such() {
    let sshd = Sshd::start();
    let entry = HostEntry {
        port: free_port(),
        ..sshd.host_entry()
    };
    let error = open_error(&sshd, entry);
    assert!(matches!(error, SshError::NotAnswering { .. }), "{error:?}");
    assert!(error.to_string().starts_with("studio-test: not answering"), "{error}");
    assert!(error.to_string().contains("Connection refused"), "{error}");
}

#[test]
fn a_host_that_accepts_but_never_speaks_times_out() {
    let sshd = Sshd::start();
    let relay = Relay::start(sshd.port());
    relay.freeze();
    let entry = HostEntry {
        port: relay.port(),
        ..sshd.host_entry()
    };
    let started = Instant::now();
    let error = open_error(&sshd, entry);
    assert!(matches!(error, SshError::NotAnswering { .. }), "{error:?}");
    assert!(error.to_string().contains("timed out"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn a_key_the_host_does_not_authorize_is_refused() {
    let sshd = Sshd::start();
    let entry = HostEntry {
        identity: sshd.unauthorized_key("stranger"),
        ..sshd.host_entry()
    };
    let error = open_error(&sshd, entry);
    assert!(matches!(error, SshError::KeyRefused { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("studio-test: the key was refused"),
        "{error}"
    );
}

#[test]
fn an_unknown_host_key_is_refused_even_when_the_config_would_accept_it() {
    let sshd = Sshd::start();
    let empty = sshd.dir().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    for weakening in [
        vec![],
        vec!["StrictHostKeyChecking no".to_string()],
        vec!["StrictHostKeyChecking accept-new".into()],
    ] {
        let entry = HostEntry {
            known_hosts: empty.clone(),
            extra: weakening.clone(),
            ..sshd.host_entry()
        };
        let error = open_error(&sshd, entry);
        assert!(
            matches!(error, SshError::HostKeyUnknown { .. }),
            "{weakening:?}: {error:?}"
        );
        assert!(
            error.to_string().starts_with("studio-test: its host key is not known"),
            "{error}"
        );
        assert_eq!(
            std::fs::read_to_string(&empty).unwrap(),
            "",
            "{weakening:?}: the key was recorded"
        );
    }
}

#[test]
fn a_changed_host_key_is_refused() {
    let sshd = Sshd::start();
    let other = sshd.unauthorized_key("other_host_key");
    let other_public = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let changed = sshd.dir().join("changed_known_hosts");
    std::fs::write(&changed, format!("[127.0.0.1]:{} {other_public}", sshd.port())).unwrap();
    let entry = HostEntry {
        known_hosts: changed,
        ..sshd.host_entry()
    };
    let error = open_error(&sshd, entry);
    assert!(matches!(error, SshError::HostKeyChanged { .. }), "{error:?}");
    assert!(error.to_string().contains("CHANGED"), "{error}");
}

/// An askpass program that records each prompt in `prompts.txt` beside it and answers `answer`.
fn askpass(dir: &std::path::Path, answer: &str) -> std::path::PathBuf {
    let path = dir.join("askpass.sh");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\nprintf '%s\\n' '{answer}'\n",
        dir.join("prompts.txt").display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    path
}

#[test]
fn a_key_passphrase_is_asked_through_askpass() {
    let sshd = Sshd::start_with_key_passphrase("open sesame");
    let workspace = remote_workspace(&sshd, "ws");
    let asker = tempfile::tempdir().unwrap();
    let mut client = Client::new(sshd.ssh_config());
    client.options.askpass = Some(askpass(asker.path(), "open sesame"));
    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    assert_eq!(connection.run(&["echo", "in"], None, 64).unwrap(), b"in\n");
    let prompts = std::fs::read_to_string(asker.path().join("prompts.txt")).unwrap();
    assert!(prompts.contains("Enter passphrase for key"), "{prompts}");
    assert!(prompts.contains(sshd.client_key().to_str().unwrap()), "{prompts}");
}

#[test]
fn a_key_with_a_passphrase_and_no_way_to_ask_is_refused() {
    let sshd = Sshd::start_with_key_passphrase("open sesame");
    let error = open_error(&sshd, sshd.host_entry());
    assert!(matches!(error, SshError::KeyRefused { .. }), "{error:?}");

    let asker = tempfile::tempdir().unwrap();
    let workspace = remote_workspace(&sshd, "ws");
    let mut client = Client::new(sshd.ssh_config());
    client.options.askpass = Some(askpass(asker.path(), "wrong"));
    let error = Connection::open(&target(&sshd, &workspace), &client.options)
        .err()
        .unwrap();
    assert!(matches!(error, SshError::KeyRefused { .. }), "{error:?}");
}

/// Waits (at most `limit`) until the connection reports its link lost; the error.
fn lost_within(connection: &Connection, limit: Duration) -> SshError {
    let deadline = Instant::now() + limit;
    loop {
        if let Err(error) = connection.check() {
            return error;
        }
        assert!(
            Instant::now() < deadline,
            "the lost link was not noticed within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_stalled_link_is_noticed_by_the_keep_alives() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let relay = Relay::start(sshd.port());
    sshd.trust_port(relay.port());
    let config = sshd.write_ssh_config(
        "relay_config",
        &[HostEntry {
            port: relay.port(),
            ..sshd.host_entry()
        }],
    );
    let mut client = Client::new(&config);
    client.options.alive_interval = Duration::from_secs(1);
    client.options.alive_count_max = 2;
    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    let master = connection.master_pid().unwrap();
    relay.freeze();
    let error = lost_within(&connection, Duration::from_secs(15));
    assert!(matches!(error, SshError::LinkLost { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("studio-test: the connection was lost"),
        "{error}"
    );
    assert!(error.to_string().contains("not responding"), "{error}");
    assert!(!process_exists(master));
    let failed = connection.run(&["true"], None, 16).err().unwrap();
    assert!(matches!(failed, SshError::LinkLost { .. }), "{failed:?}");
}

#[test]
fn a_dropped_link_is_noticed_at_once() {
    let sshd = Sshd::start();
    let workspace = remote_workspace(&sshd, "ws");
    let mut relay = Relay::start(sshd.port());
    sshd.trust_port(relay.port());
    let config = sshd.write_ssh_config(
        "relay_config",
        &[HostEntry {
            port: relay.port(),
            ..sshd.host_entry()
        }],
    );
    let client = Client::new(&config);
    let connection = Connection::open(&target(&sshd, &workspace), &client.options).unwrap();
    relay.kill();
    let error = lost_within(&connection, Duration::from_secs(5));
    assert!(matches!(error, SshError::LinkLost { .. }), "{error:?}");
}
