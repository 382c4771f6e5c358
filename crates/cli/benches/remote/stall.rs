//! Reconnecting after a 10 s stall: a link through a relay before the sshd
//! (`test_servers::relay`), subscribed to changes; the relay frozen (SIGSTOP) 10 s while a session
//! is created in the host's workspace, then resumed. From the resuming: the new session heard (its
//! `change`), and listed by a `sessions_list` asked again until it lists it (as a window re-reads
//! its listing once the link lets it). Twice: with the default keep-alives (15 s × 3: the stall is
//! not noticed, the connection goes on) and with 2 s × 2 (noticed: the link drops, and connects
//! again with its backoff).

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use studio_core::app::SessionListing;
use studio_core::remote::link::{LinkEvent, LinkState};
use studio_core::remote::ssh::ConnectOptions;
use test_servers::relay::Relay;
use test_servers::sshd::{HostEntry, Sshd};

use crate::{ms, open_link};

/// How long the relay stays frozen.
const STALL: Duration = Duration::from_secs(10);

pub fn stall(sshd: &Sshd, workspace: &Path) {
    let variants = [
        ("keep-alives 15 s x 3 (the default): the stall unnoticed", None),
        (
            "keep-alives 2 s x 2: the stall noticed, the link connected again",
            Some((Duration::from_secs(2), 2)),
        ),
    ];
    for (n, (label, alive)) in variants.into_iter().enumerate() {
        let stalled = one_stall(sshd, workspace, alive, n);
        println!(
            "after a {} s stall, {label}: from the link's return, the new session heard (its change) {}, \
             listed {} ms; link events from the freeze: {} (the first changes_subscribe took {} ms)",
            STALL.as_secs(),
            stalled
                .heard
                .map_or_else(|| "never (not subscribed then)".to_owned(), |d| format!("{} ms", ms(d))),
            ms(stalled.listed),
            stalled.events.join(", "),
            ms(stalled.subscribed)
        );
    }
}

struct Stalled {
    /// How long the first `changes_subscribe` took (the host's watcher started on its sessions).
    subscribed: Duration,
    heard: Option<Duration>,
    listed: Duration,
    events: Vec<String>,
}

fn one_stall(sshd: &Sshd, workspace: &Path, alive: Option<(Duration, u32)>, n: usize) -> Stalled {
    let relay = Relay::start(sshd.port());
    sshd.trust_port(relay.port());
    let config = sshd.write_ssh_config(
        &format!("relay_config_{n}"),
        &[HostEntry {
            port: relay.port(),
            ..sshd.host_entry()
        }],
    );
    let mut connect = ConnectOptions {
        ssh_config: Some(config),
        ..ConnectOptions::default()
    };
    if let Some((interval, count)) = alive {
        connect.alive_interval = interval;
        connect.alive_count_max = count;
    }
    let link = open_link(sshd, workspace, connect);
    let events = link.events().unwrap();
    // Listed first, as a window opens a workspace: the folder index the host's watcher starts from.
    let _: SessionListing = link.call("sessions_list", &json!({})).unwrap();
    let subscribing = Instant::now();
    link.subscribe_changes().unwrap();
    let subscribed = subscribing.elapsed();
    let id = format!("1799000000000_{:04}", n + 1);
    // What the link says, stamped as it comes.
    let (stamp, stamps) = mpsc::channel::<(String, Instant)>();
    let heard_id = id.clone();
    let listener = std::thread::spawn(move || {
        for event in events {
            let now = Instant::now();
            let said = match event {
                LinkEvent::Notification(notification) => match notification.change() {
                    Some(change) if format!("{change:?}").contains(&heard_id) => "heard".to_owned(),
                    _ => continue,
                },
                LinkEvent::State(LinkState::Reconnecting { attempts, .. }) => format!("reconnecting ({attempts})"),
                LinkEvent::State(state) => format!("{state:?}"),
                LinkEvent::Reconnected => "reconnected".to_owned(),
            };
            let _ = stamp.send((said, now));
        }
    });
    relay.freeze();
    let frozen = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    new_session(workspace, &id);
    std::thread::sleep(STALL.saturating_sub(frozen.elapsed()));
    relay.resume();
    let resumed = Instant::now();
    let listed = loop {
        match link.call::<SessionListing>("sessions_list", &json!({})) {
            Ok(listing) if listing.sessions.iter().any(|row| row.summary.id.as_str() == id) => {
                break resumed.elapsed();
            }
            Ok(_) => {}
            Err(error) if link.dropped(&error) => std::thread::sleep(Duration::from_millis(20)),
            Err(error) => panic!("{error}"),
        }
        assert!(resumed.elapsed() < Duration::from_secs(120), "not listed in 2 minutes");
    };
    // A change may come after the listing.
    let heard_by = Instant::now() + Duration::from_secs(2);
    let mut said = Vec::new();
    let mut heard = None;
    while let Ok((what, at)) = stamps.recv_timeout(heard_by.saturating_duration_since(Instant::now())) {
        if what == "heard" && heard.is_none() {
            heard = Some(at.saturating_duration_since(resumed));
        }
        let since = at.saturating_duration_since(frozen).as_secs_f64();
        said.push(format!("{what} at {since:.2} s"));
    }
    link.close();
    let _ = listener.join();
    drop(relay);
    Stalled {
        subscribed,
        heard,
        listed,
        events: said,
    }
}

/// A finished session `id` in the workspace, as an engine writes one.
fn new_session(workspace: &Path, id: &str) {
    let dir = workspace.join(".zibby/output/sessions").join(id);
    std::fs::create_dir_all(dir.join("plan")).unwrap();
    std::fs::write(dir.join("plan/raw_stream_output.txt"), "plan output\n").unwrap();
    let info = format!(
        r#"{{"sessionPath":"{}","sessionTimestamp":1799000000000,"currentNode":"plan","createdAt":"2026-12-02T12:00:00.000Z","config":{{}}}}"#,
        dir.display()
    );
    std::fs::write(dir.join(".session-info.json"), info).unwrap();
}
