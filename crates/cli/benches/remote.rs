//! A remote workspace over the loopback sshd (`test_servers::sshd`), against the same folder
//! opened locally, in the same run (docs/benchmarks.md, "A remote workspace over ssh"):
//!
//! - the listing of `BENCH_SESSIONS` sessions (10,000 by default), warm (best of 10, in turns with
//!   the local and piped listings, after a first one), through `Link::call("sessions_list")` (the server's `Studio::sessions_list`,
//!   its JSON over ssh, a table since protocol 2, read back as a `SessionListing`) against
//!   `Studio::sessions_list` here; what it is made of: the same call to a server on pipes (no
//!   ssh), the listing's objects as JSON written and read back here (typed, and through a `Value`
//!   tree; read from its whole text and as it comes, its rows read with and without a flattened
//!   summary), the same bytes carried by ssh (`cat`); the listing as the protocol carries it (a
//!   table, `remote::table`: the reply's bytes, written and read back against the objects,
//!   carried by ssh); and one round trip (`workspace_get`, best of 20); both forms carried by a
//!   new ssh connection with compression off and on (`compressed`: issue 42 asked whether the
//!   table still pays once ssh compresses);
//! - a line printed by an agent reaching the other end: the agent prints each line written to a
//!   FIFO; from its writing to the line's `run_event` notification here (what a window hears
//!   live), through ssh and through pipes, and to the `RunFollower` reading it from the host's
//!   store, against the local supervisor's `Output` event (median of 10 lines); and a line's
//!   echo through ssh (`cat` on the host) against one through a local `cat`;
//! - reconnecting after a 10 s stall (`stall`): the relay before the sshd frozen 10 s while a
//!   session is created on the host, then resumed; from its resuming to the new session heard
//!   (a `change`) and listed;
//! - a 1 GB remote output's tail (`tail`, `BENCH_TAIL_MB`, 0 to skip): the window's two calls
//!   (its total, then its last page), their time and the bytes they carried.
//!
//! `cargo bench -p zstudio --bench remote` (`--profile dev` for a debug build). `BENCH_ZSTUDIO`
//! names another `zstudio` build to serve from (a before/after comparison in one run); it must
//! speak this build's protocol version (an older server is compared through its own build of
//! this bench, run with `BENCH_ZSTUDIO` naming its `zstudio`).

#[path = "../../core/benches/common/mod.rs"]
mod common;
#[path = "remote/stall.rs"]
mod stall;
#[path = "remote/tail.rs"]
mod tail;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use studio_core::app::{SessionListing, Studio};
use studio_core::remote::client::{ClientOptions, RemoteClient};
use studio_core::remote::follow::RunFollower;
use studio_core::remote::link::{Link, LinkEvent, LinkOptions};
use studio_core::remote::protocol::Notification;
use studio_core::remote::ssh::{ConnectOptions, Connection, RemoteTarget};
use studio_core::remote::table::{read_result, write_listing};
use studio_core::runner::{RunEvent, RunEvents, StartedRun};
use studio_core::store::StoreLocation;
use test_servers::sshd::Sshd;

/// Lines timed per side.
const LINES: usize = 10;

/// The agent: each line written to the FIFO `$2`, printed at once, until it is closed (nothing
/// with `$1` 0: the run that trusts it).
const AGENT: &str = r#"[ "$1" = 0 ] && exit 0; while IFS= read -r line; do echo "$line"; done < "$2""#;

/// The `zstudio` served from: `BENCH_ZSTUDIO`, else this build's.
pub fn zstudio() -> PathBuf {
    std::env::var_os("BENCH_ZSTUDIO").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zstudio")), PathBuf::from)
}

fn main() {
    // Local runs go through the run keeper too, as the host's do (`zstudio serve` sets it).
    std::env::set_var("ZIBBY_STUDIO_KEEPER", zstudio());
    let count: usize = std::env::var("BENCH_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let wanted = |part: &str| only.is_empty() || only.split(',').any(|p| p == part);
    eprintln!("serving from {}", zstudio().display());
    let sshd = Sshd::start();
    let workspace = sshd.home().join("ws");
    std::fs::create_dir_all(workspace.join(".zibby/output/sessions")).unwrap();
    let started = Instant::now();
    common::generate_sessions(&workspace, count);
    eprintln!("{count} sessions generated in {:?}", started.elapsed());
    let triggers = tempfile::tempdir().unwrap();
    let fifo = triggers.path().join("lines");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
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
    let link = open_link(&sshd, &workspace, ConnectOptions::default());
    let remote_events = link.events().unwrap();
    let piped = serve_on_pipes(&sshd, &workspace);
    let connection = Connection::open(&target(&sshd, &workspace), &connect_options(&sshd)).unwrap();

    if wanted("listing") {
        listing(&studio, &link, &piped, &connection, count);
        compressed(&sshd, &studio);
    }
    if wanted("lines") {
        let local = local_lines(&studio, &local_events, &fifo);
        let piped_line = piped_lines(&piped, &fifo);
        let over_ssh = serve_over_ssh(&connection, &workspace);
        let ssh_line = piped_lines(&over_ssh, &fifo);
        drop(over_ssh);
        let (heard, followed) = remote_lines(&link, &remote_events, &fifo);
        let (ssh_echo, cat_echo) = echoes(&connection);
        println!(
            "line reaching: local event {} ms; remote run_event {} ms ({:.2}x); through pipes (no ssh) {} ms \
             ({:.2}x); through ssh without the Link's thread {} ms; remote follower {} ms ({:.2}x); an echo through ssh (`cat` on the host) {} ms, \
             through a local `cat` {} ms",
            ms(local),
            ms(heard),
            heard.as_secs_f64() / local.as_secs_f64(),
            ms(piped_line),
            piped_line.as_secs_f64() / local.as_secs_f64(),
            ms(ssh_line),
            ms(followed),
            followed.as_secs_f64() / local.as_secs_f64(),
            ms(ssh_echo),
            ms(cat_echo),
        );
    }
    drop(piped);
    if wanted("stall") {
        stall::stall(&sshd, &workspace);
    }
    if wanted("tail") {
        tail::tail(&sshd, &workspace, &link);
    }
    studio.shut_down();
    link.close();
    let _ = connection.close();
}

pub fn ms(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1000.0)
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `zstudio` as the host runs it: its data (its store) in the host's folder.
pub fn on_host(sshd: &Sshd) -> Command {
    let mut command = Command::new(zstudio());
    command
        .env("XDG_DATA_HOME", sshd.home().join("data"))
        .env_remove("ZIBBY_STUDIO_DB");
    command
}

/// The agent trusted on the host, as its user would (`run --trust` there once, no line asked).
fn trust_on_host(sshd: &Sshd, workspace: &Path) {
    let ran = on_host(sshd)
        .args(["run", "--agent", "trigger", "--trust", "--prompt", "0", "-w"])
        .arg(workspace)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
}

pub fn target(sshd: &Sshd, workspace: &Path) -> RemoteTarget {
    RemoteTarget::parse(&format!("{}:{}", sshd.alias(), workspace.display())).unwrap()
}

fn connect_options(sshd: &Sshd) -> ConnectOptions {
    ConnectOptions {
        ssh_config: Some(sshd.ssh_config().to_path_buf()),
        ..ConnectOptions::default()
    }
}

/// A link to the host; `connect`'s `ssh_config` is the sshd's when it names none.
pub fn open_link(sshd: &Sshd, workspace: &Path, mut connect: ConnectOptions) -> Link {
    let mut options = LinkOptions::new(zstudio());
    if connect.ssh_config.is_none() {
        connect.ssh_config = Some(sshd.ssh_config().to_path_buf());
    }
    options.connect = connect;
    Link::open(&target(sshd, workspace), options).unwrap()
}

/// The host's server on pipes: `zstudio serve --stdio` here, on the host's workspace and store.
fn serve_on_pipes(sshd: &Sshd, workspace: &Path) -> RemoteClient {
    let mut command = on_host(sshd);
    command.args(["serve", "--stdio", "-w"]).arg(workspace);
    RemoteClient::connect("pipes", command, ClientOptions::default()).unwrap()
}

/// The host's server through ssh, its client read directly (no `Link` and its thread).
fn serve_over_ssh(connection: &Connection, workspace: &Path) -> RemoteClient {
    let server = zstudio().display().to_string();
    let workspace = workspace.display().to_string();
    let command = connection
        .command([server.as_str(), "serve", "--stdio", "-w", workspace.as_str()])
        .unwrap();
    RemoteClient::connect("ssh", command, ClientOptions::default()).unwrap()
}

fn listing(studio: &Studio, link: &Link, piped: &RemoteClient, connection: &Connection, count: usize) {
    let started = Instant::now();
    let first = studio.sessions_list().unwrap();
    let local_first = started.elapsed();
    assert!(
        first.sessions.len() > count,
        "the generated sessions and the trusting run's"
    );
    let started = Instant::now();
    let first: SessionListing = link.call("sessions_list", &json!({})).unwrap();
    let remote_first = started.elapsed();
    assert!(
        first.sessions.len() > count,
        "the generated sessions and the trusting run's"
    );
    let _: SessionListing = piped.call("sessions_list", &json!({})).unwrap();
    // Best of 10 each, taken in turns: the machine's load weighs on the three alike.
    let (mut local, mut remote, mut pipes) = (Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..10 {
        local = local.min(common::best_of(1, || studio.sessions_list().unwrap()).0);
        remote = remote.min(common::best_of(1, || link.call::<SessionListing>("sessions_list", &json!({})).unwrap()).0);
        pipes = pipes.min(common::best_of(1, || piped.call::<SessionListing>("sessions_list", &json!({})).unwrap()).0);
    }
    // What the protocol itself costs here: the listing written as JSON and read back.
    let (json, _) = common::best_of(5, || {
        let bytes = serde_json::to_vec(&first).unwrap();
        serde_json::from_slice::<SessionListing>(&bytes).unwrap()
    });
    // The same through a `Value` tree at each end (as frames were read and written before).
    let (tree, _) = common::best_of(5, || {
        let bytes = serde_json::to_vec(&serde_json::to_value(&first).unwrap()).unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        serde_json::from_value::<SessionListing>(value).unwrap()
    });
    let bytes = serde_json::to_vec(&first).unwrap();
    // The same bytes read typed as they come (`from_reader` over a buffered pipe's worth at a
    // time), against from the whole text: what reading a reply as it arrives would cost.
    let (parsed, _) = common::best_of(5, || serde_json::from_slice::<SessionListing>(&bytes).unwrap());
    // The rows read as they were before, the summary a flattened field (serde's tree of each
    // row's values first), in turns with the rows' own reading.
    let (mut rows, mut flattened) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        rows = rows.min(common::best_of(1, || serde_json::from_slice::<SessionListing>(&bytes).unwrap()).0);
        flattened = flattened.min(common::best_of(1, || serde_json::from_slice::<FlattenedListing>(&bytes).unwrap()).0);
    }
    let (streamed, _) = common::best_of(5, || {
        let input = std::io::BufReader::with_capacity(64 * 1024, bytes.as_slice());
        serde_json::from_reader::<_, SessionListing>(input).unwrap()
    });
    let carried = ssh_carries(connection, &bytes);
    // The listing as the protocol carries it (a table, `remote::table`): its bytes as one reply
    // brought them, the same written and read back here, against the objects' (the window's
    // form, what the protocol carried before), and carried by ssh.
    let before = piped.bytes_received();
    let _: SessionListing = piped.call("sessions_list", &json!({})).unwrap();
    let reply_bytes = piped.bytes_received() - before;
    let as_table = || {
        let mut text = Vec::new();
        write_listing(&first, &mut text).unwrap();
        text
    };
    let table = as_table();
    let (mut table_written, mut table_read) = (Duration::MAX, Duration::MAX);
    let (mut objects_written, mut objects_read) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        table_written = table_written.min(common::best_of(1, as_table).0);
        objects_written = objects_written.min(common::best_of(1, || serde_json::to_vec(&first).unwrap()).0);
        table_read =
            table_read.min(common::best_of(1, || read_result::<SessionListing>("sessions_list", &table).unwrap()).0);
        objects_read =
            objects_read.min(common::best_of(1, || serde_json::from_slice::<SessionListing>(&bytes).unwrap()).0);
    }
    let table_carried = ssh_carries(connection, &table);
    let (round_trip, _) = common::best_of(20, || link.call::<Value>("workspace_get", &json!({})).unwrap());
    let (pipes_trip, _) = common::best_of(20, || piped.call::<Value>("workspace_get", &json!({})).unwrap());
    println!(
        "listing {count} sessions: local first {} ms, warm {} ms; remote first {} ms, warm {} ms; \
         round trip {} ms; warm ratio {:.2}x, (remote - round trip) / local {:.2}x; \
         through pipes (no ssh) warm {} ms ({:.2}x; round trip {} ms); \
         the listing as JSON ({} bytes) written and read back here: {} ms typed, {} ms through a Value tree, \
         read typed from the whole text {} ms, as it comes (`from_reader`) {} ms; its rows read {} ms, \
         through a flattened summary (as before) {} ms; \
         the same bytes carried by ssh (`cat` on the host, less a `true`): {} ms",
        ms(local_first),
        ms(local),
        ms(remote_first),
        ms(remote),
        ms(round_trip),
        remote.as_secs_f64() / local.as_secs_f64(),
        (remote.saturating_sub(round_trip)).as_secs_f64() / local.as_secs_f64(),
        ms(pipes),
        pipes.as_secs_f64() / local.as_secs_f64(),
        ms(pipes_trip),
        bytes.len(),
        ms(json),
        ms(tree),
        ms(parsed),
        ms(streamed),
        ms(rows),
        ms(flattened),
        ms(carried),
    );
    println!(
        "the listing on the wire: a reply of {reply_bytes} bytes; as a table {} bytes against {} as objects \
         ({:.1}x fewer); written {} ms against {} ms, read typed {} ms against {} ms; \
         carried by ssh (`cat`, less a `true`) {} ms against {} ms",
        table.len(),
        bytes.len(),
        bytes.len() as f64 / table.len() as f64,
        ms(table_written),
        ms(objects_written),
        ms(table_read),
        ms(objects_read),
        ms(table_carried),
        ms(carried),
    );
}

/// A listing read as its rows were before: the summary a flattened field.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // read, not used
struct FlattenedListing {
    sessions: Vec<FlattenedRow>,
    usage: Option<Value>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct FlattenedRow {
    #[serde(flatten)]
    summary: studio_core::SessionSummary,
    pinned: bool,
    pinned_at: Option<String>,
    messages: i64,
    live_run: Option<String>,
}

/// How long ssh takes to carry `bytes` from the host: `cat` of a file of them through the
/// master (best of 5), less a `true` through it (best of 5).
fn ssh_carries(connection: &Connection, bytes: &[u8]) -> Duration {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let path = file.path().display().to_string();
    let run = |argv: &[&str]| {
        let out = connection
            .command(argv)
            .unwrap()
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout.len()
    };
    let (cat, size) = common::best_of(5, || run(&["cat", &path]));
    assert_eq!(size, bytes.len());
    let (nothing, _) = common::best_of(5, || run(&["true"]));
    cat.saturating_sub(nothing)
}

/// A line's echo, median of 20: through ssh (`cat` on the host, through the master), and through
/// a local `cat`.
fn echoes(connection: &Connection) -> (Duration, Duration) {
    let through_ssh = connection.command(["cat"]).unwrap();
    (echo(through_ssh), echo(Command::new("cat")))
}

fn echo(mut command: Command) -> Duration {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut times = Vec::new();
    let mut line = String::new();
    for i in 0..21 {
        let at = Instant::now();
        writeln!(input, "line {i}").unwrap();
        input.flush().unwrap();
        line.clear();
        output.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), format!("line {i}"));
        if i > 0 {
            times.push(at.elapsed());
        }
    }
    drop(input);
    let _ = child.wait();
    common::median(times)
}

/// The FIFO the agent reads, open for writing (once the agent opened it).
fn feed(fifo: &Path) -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open(fifo).unwrap()
}

/// Writes line `i` to the agent; when it was written.
fn send(feed: &mut std::fs::File, i: usize) -> Instant {
    let at = Instant::now();
    writeln!(feed, "line {i}").unwrap();
    at
}

/// The local supervisor's `Output` event of each line, from its writing.
fn local_lines(studio: &Studio, events: &RunEvents, fifo: &Path) -> Duration {
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
    common::median(times)
}

/// The local run: the agent trusted here first, as the window asks.
fn start_local(studio: &Studio) -> StartedRun {
    let start = || studio.run_start("trigger", LINES.to_string(), None, None);
    match start() {
        Err(studio_core::Error::AgentsUntrusted { launch }) => {
            let workspace = studio.workspace().unwrap();
            studio
                .store()
                .unwrap()
                .trust_launch(&workspace, &launch, SystemTime::now())
                .unwrap();
            start().unwrap()
        }
        started => started.unwrap(),
    }
}

fn run_start_params() -> Value {
    json!({ "agent": "trigger", "prompt": LINES.to_string(), "session_id": null })
}

/// Each line's `run_event` notification from a server on pipes, from its writing.
fn piped_lines(piped: &RemoteClient, fifo: &Path) -> Duration {
    let notifications: Receiver<Notification> = piped.notifications().unwrap();
    let _: StartedRun = piped.call("run_start", &run_start_params()).unwrap();
    let mut lines = feed(fifo);
    let mut times = Vec::new();
    for i in 1..=LINES {
        let at = send(&mut lines, i);
        loop {
            let notification = notifications.recv_timeout(Duration::from_secs(30)).unwrap();
            if let Some(RunEvent::Output { line, .. }) = notification.run_event() {
                if line.trim() == format!("line {i}") {
                    times.push(at.elapsed());
                    break;
                }
            }
        }
    }
    common::median(times)
}

/// Each line's `run_event` notification here (as the window hears it: nothing else done between
/// two events), then, for as many lines more, the follower reading each from the host's store
/// (as `zstudio --remote run` prints it), from its writing.
fn remote_lines(link: &Link, events: &Receiver<LinkEvent>, fifo: &Path) -> (Duration, Duration) {
    let started: StartedRun = link.call("run_start", &run_start_params()).unwrap();
    let mut lines = feed(fifo);
    let mut heard = Vec::new();
    for i in 1..=LINES {
        let want = format!("line {i}");
        let at = send(&mut lines, i);
        loop {
            match events.recv_timeout(Duration::from_secs(30)).unwrap() {
                LinkEvent::Notification(notification) => {
                    if let Some(RunEvent::Output { line, .. }) = notification.run_event() {
                        if line.trim() == want {
                            heard.push(at.elapsed());
                            break;
                        }
                    }
                }
                event => panic!("{event:?}"),
            }
        }
    }
    let mut follower = RunFollower::new(&started);
    let mut followed = Vec::new();
    for i in LINES + 1..=2 * LINES {
        let want = format!("line {i}");
        let at = send(&mut lines, i);
        loop {
            // As `zstudio --remote run` waits (`commands::run`).
            let wait = Duration::from_millis(if follower.behind() { 20 } else { 250 });
            let event = match events.recv_timeout(wait) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => panic!("the link ended"),
            };
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
    (common::median(heard), common::median(followed))
}

/// Issue 42's question about the table (`remote::table`): with ssh's compression on, do the
/// listing's objects cost ssh no more than its table? Both forms' bytes carried by `cat` through a
/// new ssh connection (its own, not the master's, so `Compression` is the one asked), compression
/// off and on, best of 5 each, less a `true` through the same kind of connection.
fn compressed(sshd: &Sshd, studio: &Studio) {
    let listing = studio.sessions_list().unwrap();
    let objects = serde_json::to_vec(&listing).unwrap();
    let mut table = Vec::new();
    write_listing(&listing, &mut table).unwrap();
    let mut figures = Vec::new();
    for compression in ["no", "yes"] {
        let carried = |bytes: &[u8]| fresh_ssh_carries(sshd, bytes, compression);
        // In turns, the better of two rounds each.
        let (table_first, objects_first) = (carried(&table), carried(&objects));
        let (table_then, objects_then) = (carried(&table), carried(&objects));
        figures.push(format!(
            "compression {compression}: table {} ms, objects {} ms",
            ms(table_first.min(table_then)),
            ms(objects_first.min(objects_then))
        ));
    }
    println!(
        "the listing ({} bytes as objects, {} as a table; gzip -6: {} and {}) carried by a new ssh connection \
         (`cat`, less a `true`): {}",
        objects.len(),
        table.len(),
        gzipped_size(&objects),
        gzipped_size(&table),
        figures.join("; ")
    );
}

/// The size of `bytes` once `gzip -6` (zlib's level, as ssh's compression) compressed them.
fn gzipped_size(bytes: &[u8]) -> usize {
    let mut gzip = Command::new("gzip")
        .arg("-6")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = gzip.stdin.take().unwrap();
    let owned = bytes.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&owned).unwrap());
    let out = gzip.wait_with_output().unwrap();
    writer.join().unwrap();
    out.stdout.len()
}

/// How long a new ssh connection (no master) with `Compression` `compression` takes to carry
/// `bytes` from the host: `cat` of a file of them 10 times in one connection (best of 3), less a
/// `true` (best of 5), over 10: the transfer, not the connection's set-up, is what is timed.
fn fresh_ssh_carries(sshd: &Sshd, bytes: &[u8], compression: &str) -> Duration {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let path = file.path().display().to_string();
    let run = |argv: &[&str]| {
        let out = Command::new("ssh")
            .arg("-F")
            .arg(sshd.ssh_config())
            .args(["-o", "ControlMaster=no", "-o", "ControlPath=none", "-o"])
            .arg(format!("Compression={compression}"))
            .arg(sshd.alias())
            .args(argv)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "ssh {argv:?}");
        out.stdout.len()
    };
    let cats = format!("for i in 1 2 3 4 5 6 7 8 9 10; do cat '{path}'; done");
    let (cat, size) = common::best_of(3, || run(&[&cats]));
    assert_eq!(size, 10 * bytes.len());
    let (nothing, _) = common::best_of(5, || run(&["true"]));
    cat.saturating_sub(nothing) / 10
}
