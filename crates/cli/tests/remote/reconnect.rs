//! A link that stalls past its keep-alives and comes back: `studio_core::remote::link::Link`
//! notices, says so, connects again (subscribed again to changes) and a `RunFollower` reads on
//! from the line it holds: every line of the run once, none twice.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::json;
use studio_core::remote::follow::RunFollower;
use studio_core::remote::link::{Link, LinkEvent, LinkOptions, LinkState};
use studio_core::runner::{RunEvent, StartedRun};
use studio_core::Status;
use test_servers::relay::Relay;
use test_servers::sshd::HostEntry;

use super::follow::Host;
use super::{target, Client};

/// A link to `host` through `relay`, its keep-alives 1 s × 2, retried every 200 ms to 1 s for
/// `give_up` at most.
fn link_through(host: &Host, relay: &Relay, give_up: Duration) -> (Link, Client) {
    host.sshd.trust_port(relay.port());
    let config = host.sshd.write_ssh_config(
        "relay_config",
        &[HostEntry {
            port: relay.port(),
            ..host.sshd.host_entry()
        }],
    );
    let mut client = Client::new(&config);
    client.options.alive_interval = Duration::from_secs(1);
    client.options.alive_count_max = 2;
    let mut options = LinkOptions::new(PathBuf::from(env!("CARGO_BIN_EXE_zstudio")));
    options.connect = client.options.clone();
    options.first_retry = Duration::from_millis(200);
    options.max_retry = Duration::from_secs(1);
    options.give_up_after = Some(give_up);
    let link = Link::open(&target(&host.sshd, &host.workspace), options).unwrap();
    (link, client)
}

/// What a follow to the end sees: each event of the link, and each output line shown.
enum Seen<'a> {
    Link(&'a LinkEvent),
    Line(&'a str),
}

/// Follows a run with `follower` to its end, telling `seen` of each event of the link (before the
/// follower reads on) and each output line shown; its status and lines.
fn follow_to_the_end(
    link: &Link,
    events: &Receiver<LinkEvent>,
    mut follower: RunFollower,
    mut seen: impl FnMut(Seen<'_>),
) -> (Status, Vec<String>) {
    let mut lines = Vec::new();
    loop {
        let event = match events.recv_timeout(Duration::from_millis(250)) {
            Ok(event) => Some(event),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the link ended: {lines:#?}"),
        };
        if let Some(event) = &event {
            seen(Seen::Link(event));
        }
        let shown = match follower.on(link, event.as_ref()) {
            Ok(shown) => shown,
            Err(error) if link.dropped(&error) => continue,
            Err(error) => panic!("{error}"),
        };
        for event in shown {
            match event {
                RunEvent::Output { line, .. } => {
                    seen(Seen::Line(&line));
                    lines.push(line);
                }
                RunEvent::RunFinished { status, .. } => return (status, lines),
                _ => {}
            }
        }
    }
}

#[test]
fn a_stalled_link_comes_back_and_no_output_line_is_lost_or_doubled() {
    let host = Host::start();
    let relay = Relay::start(host.sshd.port());
    let (link, _client) = link_through(&host, &relay, Duration::from_secs(60));
    let events = link.events().unwrap();
    link.subscribe_changes().unwrap();
    let started: StartedRun = link
        .call(
            "run_start",
            &json!({ "agent": "slow", "prompt": "plan:4000,book:3000", "session_id": null }),
        )
        .unwrap();
    let mut states = Vec::new();
    let (mut frozen, mut resumed, mut reconnected) = (false, false, false);
    let (finished, lines) = follow_to_the_end(&link, &events, RunFollower::new(&started), |seen| match seen {
        Seen::Link(LinkEvent::State(state)) => {
            states.push(state.clone());
            assert!(!matches!(state, LinkState::Failed { .. }), "{states:?}");
            // Noticed by the keep-alives: the link comes back.
            if frozen && !resumed && matches!(state, LinkState::Reconnecting { .. }) {
                relay.resume();
                resumed = true;
            }
        }
        Seen::Link(LinkEvent::Reconnected) => reconnected = true,
        Seen::Line(line) if !frozen && line.contains("plan: working (2/8)") => {
            relay.freeze();
            frozen = true;
        }
        _ => {}
    });
    assert!(reconnected, "{states:?}");
    assert_eq!(states.last(), Some(&LinkState::Connected), "{states:?}");
    assert_eq!(finished, Status::Success, "{lines:#?}");
    for node in ["plan", "book"] {
        for i in 1..=8 {
            let line = format!("{node}: working ({i}/8)");
            let count = lines.iter().filter(|l| l.contains(&line)).count();
            assert_eq!(count, 1, "{line} in {lines:#?}");
        }
    }
    // Subscribed again: the run's session changed on the host after the reconnection.
    let change = loop {
        match events.recv_timeout(Duration::from_secs(30)) {
            Ok(LinkEvent::Notification(notification)) => {
                if let Some(change) = notification.change() {
                    break change;
                }
            }
            Ok(_) => {}
            Err(error) => panic!("no change after the reconnection: {error}"),
        }
    };
    assert!(format!("{change:?}").contains(&started.session_id), "{change:?}");
    link.close();
}

#[test]
fn a_link_given_up_says_why_and_calls_fail_as_remote_link() {
    let host = Host::start();
    let mut relay = Relay::start(host.sshd.port());
    let (link, _client) = link_through(&host, &relay, Duration::from_secs(3));
    let events = link.events().unwrap();
    relay.kill();
    let mut states = Vec::new();
    loop {
        match events.recv_timeout(Duration::from_secs(30)) {
            Ok(LinkEvent::State(state)) => {
                let failed = matches!(state, LinkState::Failed { .. });
                states.push(state);
                if failed {
                    break;
                }
            }
            Ok(_) => {}
            Err(error) => panic!("{error}: {states:?}"),
        }
    }
    let LinkState::Reconnecting { reason, .. } = &states[0] else {
        panic!("{states:?}")
    };
    assert!(reason.starts_with("studio-test: "), "{reason}");
    let LinkState::Failed { reason } = states.last().unwrap() else {
        unreachable!()
    };
    assert!(reason.contains("not connected again within"), "{reason}");
    let error = link.call::<serde_json::Value>("sessions_list", &json!({})).unwrap_err();
    assert_eq!(error.code(), studio_core::ErrorCode::RemoteLink);
    assert!(error.to_string().contains("the link failed"), "{error}");
}

/// Issue 27: a run still going when a dropped link is back is followed live again. The server
/// that started it ended with the link; the new one adopts it (the keeper's files read on from
/// what the host's store has), so the lines the agent prints after the reconnect are read while
/// the run goes on, not only once it ended, each once.
#[test]
fn a_run_still_going_when_a_dropped_link_is_back_is_followed_live_again() {
    let host = Host::start();
    let mut relay = Relay::start(host.sshd.port());
    let (link, _client) = link_through(&host, &relay, Duration::from_secs(60));
    let events = link.events().unwrap();
    let started: StartedRun = link
        .call(
            "run_start",
            &json!({ "agent": "slow", "prompt": "plan:2000,book:6000", "session_id": null }),
        )
        .unwrap();
    let running_on_the_host = || {
        let runs: Result<Vec<studio_core::store::RunRecord>, _> =
            link.call("runs_list", &json!({ "session_id": started.session_id }));
        runs.is_ok_and(|runs| {
            runs.iter()
                .any(|run| run.id == started.run_id && run.status == Status::Running)
        })
    };
    let mut live_after_reconnect = Vec::new();
    let (mut killed, mut reconnected) = (false, false);
    let (finished, lines) = follow_to_the_end(&link, &events, RunFollower::new(&started), |seen| match seen {
        Seen::Link(LinkEvent::Reconnected) => reconnected = true,
        Seen::Line(line) => {
            if !killed && line.contains("plan: working (2/8)") {
                // The link dies (its server on the host ends with it) and can come back.
                relay.kill();
                relay.restart();
                killed = true;
            }
            if reconnected && line.contains("book: working") && running_on_the_host() {
                live_after_reconnect.push(line.to_owned());
            }
        }
        _ => {}
    });
    assert!(reconnected, "{lines:#?}");
    assert_eq!(finished, Status::Success, "{lines:#?}");
    assert!(
        !live_after_reconnect.is_empty(),
        "no line printed after the reconnect was read while the run went on: {lines:#?}"
    );
    for node in ["plan", "book"] {
        for i in 1..=8 {
            let line = format!("{node}: working ({i}/8)");
            let count = lines.iter().filter(|l| l.contains(&line)).count();
            assert_eq!(count, 1, "{line} in {lines:#?}");
        }
    }
    link.close();
}
