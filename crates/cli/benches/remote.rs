//! A remote workspace over the loopback sshd (`test_servers::sshd`), against the same folder
//! opened locally, in the same run (docs/benchmarks.md, "A remote workspace over ssh"):
//!
//! - the listing of `BENCH_SESSIONS` sessions (10,000 by default), warm (best of 5, after a
//!   first one), through `Link::call("sessions_list")` (the server's `Studio::sessions_list`,
//!   its JSON over ssh, read back as a `SessionListing`) against `Studio::sessions_list` here;
//!   and one round trip (`workspace_get`, best of 20);
//! - a line printed by an agent reaching the other end: the agent prints each line written to a
//!   FIFO; from its writing to the line's `run_event` notification here (what a window hears
//!   live) and to the `RunFollower` reading it from the host's store, against the local
//!   supervisor's `Output` event (median of 10 lines).
//!
//! `cargo bench -p zstudio --bench remote` (`--profile dev` for a debug build).

#[path = "../../core/benches/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use studio_core::app::{SessionListing, Studio};
use studio_core::remote::follow::RunFollower;
use studio_core::remote::link::{Link, LinkEvent, LinkOptions};
use studio_core::remote::ssh::{ConnectOptions, RemoteTarget};
use studio_core::runner::{RunEvent, StartedRun};
use studio_core::store::StoreLocation;
use test_servers::sshd::Sshd;

/// Lines timed per side.
const LINES: usize = 10;

/// The agent: each line written to the FIFO `$2`, printed at once, until it is closed (nothing
/// with `$1` 0: the run that trusts it).
const AGENT: &str = r#"[ "$1" = 0 ] && exit 0; while IFS= read -r line; do echo "$line"; done < "$2""#;

fn main() {
    // Local runs go through the run keeper too, as the host's do (`zstudio serve` sets it).
    std::env::set_var("ZIBBY_STUDIO_KEEPER", env!("CARGO_BIN_EXE_zstudio"));
    let count: usize = std::env::var("BENCH_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let sshd = Sshd::start();
    let workspace = sshd.home().join("ws");
    std::fs::create_dir_all(workspace.join(".zibby/output/sessions")).unwrap();
    let started = Instant::now();
    common::generate_sessions(&workspace, count);
    eprintln!("{count} sessions generated in {:?}", started.elapsed());
    let triggers = tempfile::tempdir().unwrap();
    let fifo = triggers.path().join("lines");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    std::fs::write(
        workspace.join(".zibby/studio.toml"),
        format!(
            "[[agent]]\nname = \"trigger\"\nrun = [\"sh\", \"-c\", {}, \"sh\", \"{{prompt}}\", \"{}\"]\n",
            toml_string(AGENT),
            fifo.display()
        ),
    )
    .unwrap();
    trust_on_host(&sshd, &workspace);

    let local_store = tempfile::tempdir().unwrap();
    let location = StoreLocation::resolve(Some(local_store.path().join("studio.sqlite")), false).unwrap();
    let (studio, subscriptions) = Studio::open(Some(&workspace), Ok(location));
    let local_events = subscriptions.expect("a store").0;
    let link = open_link(&sshd, &workspace);
    let remote_events = link.events().unwrap();

    listing(&studio, &link, count);
    let local = local_lines(&studio, &local_events, &fifo);
    let (heard, followed) = remote_lines(&link, &remote_events, &fifo);
    println!(
        "line reaching: local event {} ms; remote run_event {} ms ({:.2}x); remote follower {} ms ({:.2}x)",
        ms(local),
        ms(heard),
        heard.as_secs_f64() / local.as_secs_f64(),
        ms(followed),
        followed.as_secs_f64() / local.as_secs_f64()
    );
    studio.shut_down();
    link.close();
}

fn ms(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1000.0)
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// The agent trusted on the host, as its user would (`run --trust` there once, no line asked).
fn trust_on_host(sshd: &Sshd, workspace: &Path) {
    let ran = std::process::Command::new(env!("CARGO_BIN_EXE_zstudio"))
        .args(["run", "--agent", "trigger", "--trust", "--prompt", "0", "-w"])
        .arg(workspace)
        .env("XDG_DATA_HOME", sshd.home().join("data"))
        .env_remove("ZIBBY_STUDIO_DB")
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
}

fn open_link(sshd: &Sshd, workspace: &Path) -> Link {
    let target = RemoteTarget::parse(&format!("{}:{}", sshd.alias(), workspace.display())).unwrap();
    let mut options = LinkOptions::new(PathBuf::from(env!("CARGO_BIN_EXE_zstudio")));
    options.connect = ConnectOptions {
        ssh_config: Some(sshd.ssh_config().to_path_buf()),
        ..ConnectOptions::default()
    };
    Link::open(&target, options).unwrap()
}

fn listing(studio: &Studio, link: &Link, count: usize) {
    let started = Instant::now();
    let first = studio.sessions_list().unwrap();
    let local_first = started.elapsed();
    assert!(
        first.sessions.len() > count,
        "the generated sessions and the trusting run's"
    );
    let (local, _) = common::best_of(5, || studio.sessions_list().unwrap());
    let started = Instant::now();
    let first: SessionListing = link.call("sessions_list", &json!({})).unwrap();
    let remote_first = started.elapsed();
    assert!(
        first.sessions.len() > count,
        "the generated sessions and the trusting run's"
    );
    let (remote, _) = common::best_of(5, || link.call::<SessionListing>("sessions_list", &json!({})).unwrap());
    // What the protocol itself costs here: the listing written as JSON and read back.
    let (json, _) = common::best_of(5, || {
        let bytes = serde_json::to_vec(&first).unwrap();
        serde_json::from_slice::<SessionListing>(&bytes).unwrap()
    });
    let size = serde_json::to_vec(&first).unwrap().len();
    let (round_trip, _) = common::best_of(20, || link.call::<Value>("workspace_get", &json!({})).unwrap());
    println!(
        "listing {count} sessions: local first {} ms, warm {} ms; remote first {} ms, warm {} ms; \
         round trip {} ms; warm ratio {:.2}x, (remote - round trip) / local {:.2}x; \
         the listing as JSON ({} bytes) written and read back here: {} ms",
        ms(local_first),
        ms(local),
        ms(remote_first),
        ms(remote),
        ms(round_trip),
        remote.as_secs_f64() / local.as_secs_f64(),
        (remote.saturating_sub(round_trip)).as_secs_f64() / local.as_secs_f64(),
        size,
        ms(json)
    );
}

/// The FIFO the agent reads, open for writing (once the agent opened it).
fn feed(fifo: &Path) -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open(fifo).unwrap()
}

/// Writes line `i` to the agent; when it was written.
fn send(feed: &mut std::fs::File, i: usize) -> Instant {
    use std::io::Write;
    let at = Instant::now();
    writeln!(feed, "line {i}").unwrap();
    at
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The local supervisor's `Output` event of each line, from its writing.
fn local_lines(studio: &Studio, events: &Receiver<RunEvent>, fifo: &Path) -> Duration {
    let started = start_local(studio);
    let mut lines = feed(fifo);
    let mut times = Vec::new();
    for i in 1..=LINES {
        let at = send(&mut lines, i);
        loop {
            let event = events.recv_timeout(Duration::from_secs(30)).unwrap();
            if let RunEvent::Output { run_id, line, .. } = &event {
                if *run_id == started.run_id && line.trim() == format!("line {i}") {
                    times.push(at.elapsed());
                    break;
                }
            }
        }
    }
    median(times)
}

/// The local run: the agent trusted here first, as the window asks.
fn start_local(studio: &Studio) -> StartedRun {
    let start = || studio.run_start("trigger", LINES.to_string(), None);
    match start() {
        Err(studio_core::Error::AgentsUntrusted { launch }) => {
            let workspace = studio.workspace().unwrap();
            studio
                .store()
                .unwrap()
                .trust_launch(&workspace, &launch.digest, SystemTime::now())
                .unwrap();
            start().unwrap()
        }
        started => started.unwrap(),
    }
}

/// Each line's `run_event` notification here, and the follower reading it, from its writing.
fn remote_lines(link: &Link, events: &Receiver<LinkEvent>, fifo: &Path) -> (Duration, Duration) {
    let started: StartedRun = link
        .call(
            "run_start",
            &json!({ "agent": "trigger", "prompt": LINES.to_string(), "session_id": null }),
        )
        .unwrap();
    let mut follower = RunFollower::new(&started);
    let mut lines = feed(fifo);
    let (mut heard, mut followed) = (Vec::new(), Vec::new());
    for i in 1..=LINES {
        let want = format!("line {i}");
        let at = send(&mut lines, i);
        let mut was_heard = false;
        loop {
            // As `zstudio --remote run` waits (`remote_follow`).
            let wait = Duration::from_millis(if follower.behind() { 20 } else { 250 });
            let event = match events.recv_timeout(wait) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => panic!("the link ended"),
            };
            if let Some(LinkEvent::Notification(notification)) = &event {
                if let Some(RunEvent::Output { line, .. }) = notification.run_event() {
                    if !was_heard && line.trim() == want {
                        heard.push(at.elapsed());
                        was_heard = true;
                    }
                }
            }
            let shown = follower.on(link, event.as_ref()).unwrap();
            let read = shown
                .iter()
                .any(|e| matches!(e, RunEvent::Output { line, .. } if line.trim() == want));
            if read {
                followed.push(at.elapsed());
                break;
            }
        }
    }
    (median(heard), median(followed))
}
