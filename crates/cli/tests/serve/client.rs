//! `RemoteClient` over a locally started `zstudio serve --stdio` (or a script standing in for a
//! remote shell): the banner found after junk, versions checked, calls matched to replies, the
//! link's failures said with the host's name.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use studio_core::app::{SessionListing, SessionsPage, Studio};
use studio_core::remote::client::{ClientOptions, RemoteClient};
use studio_core::store::StoreLocation;
use studio_core::ErrorCode;

use super::{run_locally, script, Place};

/// The client of the server on `place`, through `command` (the server's arguments appended).
fn connect_through(
    place: &Place,
    command: Command,
    options: ClientOptions,
) -> Result<RemoteClient, studio_core::Error> {
    let mut command = command;
    command
        .args(place.serve_args())
        .env_remove("ZIBBY_STUDIO_DB")
        .env("XDG_DATA_HOME", place.dir.path().join("data"))
        .env("ZSTUDIO", env!("CARGO_BIN_EXE_zstudio"));
    RemoteClient::connect("buildbox", command, options)
}

fn connect(place: &Place) -> RemoteClient {
    connect_through(
        place,
        Command::new(env!("CARGO_BIN_EXE_zstudio")),
        ClientOptions::default(),
    )
    .unwrap()
}

#[test]
fn the_client_lists_what_the_core_lists() {
    let place = Place::create();
    run_locally(&place, &["--nodes", "plan:1,book:1"]);
    run_locally(&place, &["--nodes", "one:1", "--fail", "one"]);
    let client = connect(&place);
    let remote: SessionListing = client.call("sessions_list", &json!({})).unwrap();
    let (studio, _) = Studio::open(Some(&place.workspace()), Ok(StoreLocation::File(place.db())));
    let local = studio.sessions_list().unwrap();
    assert_eq!(remote.sessions.len(), 2);
    assert_eq!(
        serde_json::to_value(&remote).unwrap(),
        serde_json::to_value(&local).unwrap(),
        "the same listing, field for field"
    );
}

/// The window of a remote workspace asks for its table a page at a time: each page is the
/// listing's rows there, in its order, with how many there are, and the total cost the listing's.
#[test]
fn the_client_pages_what_the_core_lists() {
    let place = Place::create();
    for _ in 0..3 {
        run_locally(&place, &["--nodes", "plan:1"]);
    }
    let client = connect(&place);
    let (studio, _) = Studio::open(Some(&place.workspace()), Ok(StoreLocation::File(place.db())));
    let local = studio.sessions_list().unwrap();
    let ids =
        |rows: &[studio_core::store::SessionRow]| rows.iter().map(|r| r.summary.id.to_string()).collect::<Vec<_>>();
    let first: SessionsPage = client.call("sessions_page", &json!({"offset": 0, "limit": 2})).unwrap();
    let rest: SessionsPage = client.call("sessions_page", &json!({"offset": 2, "limit": 2})).unwrap();
    assert_eq!((first.total, rest.total, rest.offset), (3, 3, 2));
    let paged = [ids(&first.sessions), ids(&rest.sessions)].concat();
    assert_eq!(paged, ids(&local.sessions), "the listing's rows, in its order");
    let usage: Option<studio_core::cost::UsageTotal> = client.call("sessions_usage", &json!({})).unwrap();
    assert_eq!(usage, local.usage);
}

#[test]
fn concurrent_calls_each_get_their_own_reply() {
    let place = Place::create();
    run_locally(&place, &["--nodes", "plan:1"]);
    let client = connect(&place);
    let root = std::fs::canonicalize(place.workspace()).unwrap().display().to_string();
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let (client, root) = (&client, &root);
            scope.spawn(move || {
                for call in 0..10 {
                    if (thread + call) % 2 == 0 {
                        let info: Value = client.call("workspace_get", &json!({})).unwrap();
                        assert_eq!(info["root"], root.as_str());
                    } else {
                        let listing: Value = client.call("sessions_list", &json!({})).unwrap();
                        assert_eq!(listing["sessions"].as_array().unwrap().len(), 1);
                    }
                }
            });
        }
    });
    let status = client.close(Duration::from_secs(20)).unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn the_banner_is_found_after_what_a_remote_shell_prints_first() {
    let place = Place::create();
    let shell = script(
        &place,
        "shell.sh",
        r#"echo "Welcome to buildbox"
printf '\033[31mYou have mail\033[0m\n'
echo '{"zstudio": "0.0.0", "protocol_version": 2, "nonce": "not-this-clients"}'
exec "$ZSTUDIO" "$@""#,
    );
    let client = connect_through(&place, Command::new(shell), ClientOptions::default()).unwrap();
    assert_eq!(
        client.server().zstudio,
        env!("CARGO_PKG_VERSION"),
        "the real banner, not the fake one"
    );
    let info: Value = client.call("workspace_get", &json!({})).unwrap();
    assert!(info["root"].is_string());
}

#[test]
fn too_much_text_before_the_banner_is_refused_quoting_it() {
    let place = Place::create();
    let shell = script(
        &place,
        "chatty.sh",
        "head -c 70000 /dev/zero | tr '\\0' 'x'; echo; sleep 30",
    );
    let started = Instant::now();
    let error = connect_through(&place, Command::new(shell), ClientOptions::default())
        .err()
        .expect("refused");
    assert_eq!(error.code(), ErrorCode::RemoteLink);
    let message = error.to_string();
    assert!(
        message.starts_with("buildbox: more than 65536 bytes came before"),
        "{message}"
    );
    assert!(message.contains("xxxxxxxx"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not waited for the timeout"
    );
}

#[test]
fn no_banner_in_time_is_said_with_what_the_command_said() {
    let place = Place::create();
    let shell = script(
        &place,
        "silent.sh",
        "echo 'ssh: connect to host buildbox port 2222: Connection timed out' >&2; sleep 30",
    );
    let options = ClientOptions {
        banner_timeout: Duration::from_secs(1),
        ..ClientOptions::default()
    };
    let error = connect_through(&place, Command::new(shell), options)
        .err()
        .expect("refused");
    let message = error.to_string();
    assert_eq!(error.code(), ErrorCode::RemoteLink, "{message}");
    assert!(
        message.contains("buildbox: no studio server banner within 1 s"),
        "{message}"
    );
    assert!(message.contains("Connection timed out"), "{message}");
}

#[test]
fn a_server_of_another_protocol_version_is_refused_naming_both() {
    let place = Place::create();
    let shell = script(
        &place,
        "future.sh",
        r#"for last; do :; done
printf '{"zstudio": "9.9.9", "protocol_version": 999, "nonce": "%s"}\n' "$last"
sleep 30"#,
    );
    let error = connect_through(&place, Command::new(shell), ClientOptions::default())
        .err()
        .expect("refused");
    assert_eq!(error.code(), ErrorCode::ProtocolMismatch);
    let message = error.to_string();
    assert!(
        message.starts_with("buildbox:") && message.contains("999") && message.contains("speaks 2"),
        "{message}"
    );
}

#[test]
fn a_call_unanswered_in_time_fails_naming_the_method() {
    let place = Place::create();
    // Greets as a server does, then answers nothing.
    let shell = script(
        &place,
        "mute.sh",
        r#"for last; do :; done
printf '{"zstudio": "x", "protocol_version": 2, "nonce": "%s"}\n' "$last"
read hello
printf '{"id": 1, "result": {"zstudio": "x", "protocol_version": 2, "nonce": ""}}\n'
sleep 30"#,
    );
    let client = connect_through(&place, Command::new(shell), ClientOptions::default()).unwrap();
    let error = client
        .call_with_timeout::<Value>("sessions_list", &json!({}), Duration::from_millis(300))
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::RemoteLink);
    assert_eq!(error.to_string(), "buildbox: no answer to `sessions_list` within 0.3 s");
}

#[test]
fn a_reply_over_the_frame_bound_closes_the_link_naming_the_bound() {
    let place = Place::create();
    // Greets, answers a first call with 1 MiB, the next with one byte more than a frame may hold.
    let shell = script(
        &place,
        "huge.sh",
        r#"for last; do :; done
printf '{"zstudio": "x", "protocol_version": 2, "nonce": "%s"}\n' "$last"
read hello
printf '{"id": 1, "result": {"zstudio": "x", "protocol_version": 2, "nonce": ""}}\n'
read first
printf '{"id": 2, "result": "'; head -c 1048576 /dev/zero | tr '\0' x; printf '"}\n'
read second
printf '{"id": 3, "result": "'; head -c 67108864 /dev/zero | tr '\0' x; printf '"}\n'
read rest"#,
    );
    let client = connect_through(&place, Command::new(shell), ClientOptions::default()).unwrap();
    let under: String = client.call("workspace_get", &json!({})).unwrap();
    assert_eq!(under.len(), 1 << 20);
    let error = client.call::<Value>("workspace_get", &json!({})).unwrap_err();
    assert_eq!(error.code(), ErrorCode::RemoteLink);
    assert!(
        error
            .to_string()
            .starts_with("buildbox: the studio server sent a frame larger than 67108864 bytes"),
        "{error}"
    );
}

#[test]
fn a_server_that_dies_fails_the_calls_saying_so() {
    let place = Place::create();
    let pid_file = place.dir.path().join("server.pid");
    let shell = script(
        &place,
        "pid.sh",
        &format!("echo $$ > '{}'; exec \"$ZSTUDIO\" \"$@\"", pid_file.display()),
    );
    let client = connect_through(&place, Command::new(shell), ClientOptions::default()).unwrap();
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    let killed = Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    assert!(killed.success());
    let error = client.call::<Value>("workspace_get", &json!({})).unwrap_err();
    assert_eq!(error.code(), ErrorCode::RemoteLink);
    let message = error.to_string();
    assert!(message.starts_with("buildbox: "), "{message}");
    assert!(
        message.contains("closed the link") || message.contains("cannot write"),
        "{message}"
    );
    assert!(client.closed().is_some() || message.contains("cannot write"));
}

#[test]
fn a_remote_session_is_exported_into_a_local_bundle() {
    let place = Place::create();
    run_locally(&place, &["--nodes", "plan:1,book:1"]);
    let client = connect(&place);
    let listing: Value = client.call("sessions_list", &json!({})).unwrap();
    let session = listing["sessions"][0]["id"]
        .as_str()
        .or_else(|| listing["sessions"][0]["summary"]["id"].as_str())
        .unwrap_or_else(|| panic!("{listing}"))
        .to_owned();
    let out = place.dir.path().join("local.zip");
    let exported = client.export_session(&session, false, &out).unwrap();
    assert_eq!(exported.path, out);
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&out).unwrap()).unwrap();
    assert!(archive.by_name("manifest.json").is_ok(), "a bundle has its manifest");
    // The server's copy is gone once read.
    let error = client
        .call::<Value>("export_read", &json!({"export_id": "nope", "offset": 0, "limit": 10}))
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidRequest);
}

/// Issue 40, point 4: a hostile host declared a bundle of a few bytes and then sent export chunks
/// for ever (1.87 GB written, the partial file left when killed). The copy stops at the declared
/// size, writes nothing past it, leaves no partial file, and sweeps one a killed export left.
#[test]
fn an_export_longer_than_it_was_declared_is_cut_off_and_leaves_nothing() {
    let place = Place::create();
    // Greets, opens an export declared as 10 bytes, then answers every read with 768 KiB.
    let shell = script(
        &place,
        "endless-export.sh",
        r#"for last; do :; done
printf '{"zstudio": "x", "protocol_version": 2, "nonce": "%s"}\n' "$last"
read hello
printf '{"id": 1, "result": {"zstudio": "x", "protocol_version": 2, "nonce": ""}}\n'
reads=0
while read line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
  case "$line" in
    *export_open*) printf '{"id": %s, "result": {"export_id": "e", "size": 10, "exported": {"session_id": "s", "path": "/x.zip", "members": 1, "bytes": 10, "config_included": false, "redaction": {"home_as_tilde": false, "looked_at": [], "secrets": []}}}}\n' "$id" ;;
    *export_read*) reads=$((reads + 1)); printf '{"id": %s, "data": 786432}\n' "$id"; head -c 786432 /dev/zero
      if [ "$reads" -gt 50 ]; then echo "read on and on" >&2; exit 1; fi ;;
    *) printf '{"id": %s, "result": null}\n' "$id" ;;
  esac
done"#,
    );
    let client = connect_through(&place, Command::new(shell), ClientOptions::default()).unwrap();
    let folder = place.dir.path().join("exports");
    std::fs::create_dir_all(&folder).unwrap();
    // What an export killed part-way by a process now gone left behind.
    let left = folder.join(".bundle.zip.partial-999999999-0123456789abcdef");
    std::fs::write(&left, "half a bundle").unwrap();
    let out = folder.join("bundle.zip");
    let error = client.export_session("s", false, &out).unwrap_err();
    assert_eq!(error.code(), ErrorCode::RemoteLink, "{error}");
    assert!(error.to_string().contains("longer than the 10 bytes"), "{error}");
    let names: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(names.is_empty(), "nothing is left: {names:?}");
}

/// Issue 40, point 4: a hostile host's notifications grew a client that never read them by
/// 1.25 GB. None is queued before the notifications are taken, and one over
/// `MAX_NOTIFICATION_BYTES` is dropped.
#[test]
fn notifications_are_queued_only_once_taken_and_each_is_bounded() {
    let place = Place::create();
    let shell = script(
        &place,
        "noisy.sh",
        r#"for last; do :; done
printf '{"zstudio": "x", "protocol_version": 2, "nonce": "%s"}\n' "$last"
read hello
printf '{"id": 1, "result": {"zstudio": "x", "protocol_version": 2, "nonce": ""}}\n'
read first
printf '{"method": "change", "params": {"n": "before"}}\n'
printf '{"id": 2, "result": "ok"}\n'
read second
printf '{"method": "change", "params": {"n": "'; head -c 300000 /dev/zero | tr '\0' x; printf '"}}\n'
printf '{"method": "change", "params": {"n": "after"}}\n'
printf '{"id": 3, "result": "ok"}\n'
read rest"#,
    );
    let client = connect_through(&place, Command::new(shell), ClientOptions::default()).unwrap();
    let _: String = client.call("workspace_get", &json!({})).unwrap();
    let notifications = client.notifications().expect("taken once");
    let _: String = client.call("workspace_get", &json!({})).unwrap();
    let first = notifications.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first.params["n"], "after", "{first:?}");
    assert!(notifications.try_recv().is_err(), "nothing else was queued");
}

/// Each method's result reads back as the core's own type, and says what the core says here.
#[test]
fn every_result_reads_back_as_the_cores_type() {
    use studio_core::compare::RunDiff;
    use studio_core::files::{FileChunk, FileEntry};
    use studio_core::store::{LogLine, Message, OutputFind, OutputPage, RunRecord, SearchHit, Span};
    use studio_core::Session;
    let place = Place::create();
    let a = run_locally(&place, &["--nodes", "plan:1,book:1"]);
    let b = run_locally(&place, &["--nodes", "plan:1,book:1", "--fail", "book"]);
    let client = connect(&place);
    let (studio, _) = Studio::open(Some(&place.workspace()), Ok(StoreLocation::File(place.db())));
    let runs: Vec<RunRecord> = client.call("runs_list", &json!({"session_id": null})).unwrap();
    assert_eq!(runs.len(), 2);
    let session = runs[0].session_id.clone();
    let same = |remote: Value, local: Value, what: &str| assert_eq!(remote, local, "{what}");
    let session_read: Session = client.call("session_get", &json!({"session_id": session})).unwrap();
    same(
        value(&session_read),
        value(&studio.session_get(&session).unwrap()),
        "session_get",
    );
    let files: Vec<FileEntry> = client.call("session_files", &json!({"session_id": session})).unwrap();
    same(
        value(&files),
        value(&studio.session_files(&session).unwrap()),
        "session_files",
    );
    let path = files
        .iter()
        .find(|f| f.path.ends_with(".json"))
        .map(|f| f.path.clone())
        .unwrap();
    let chunk: FileChunk = client
        .call(
            "session_file_read",
            &json!({"session_id": session, "path": path, "offset": 0, "limit": 64}),
        )
        .unwrap();
    same(
        value(&chunk),
        value(&studio.session_file_read(&session, &path, 0, 64).unwrap()),
        "session_file_read",
    );
    let logs: Vec<LogLine> = client.call("session_logs", &json!({"session_id": session})).unwrap();
    assert!(!logs.is_empty());
    let messages: Vec<Message> = client
        .call("session_messages", &json!({"session_id": session}))
        .unwrap();
    same(
        value(&messages),
        value(&studio.session_messages(&session).unwrap()),
        "session_messages",
    );
    let spans: Vec<Span> = client.call("run_spans", &json!({"run_id": a})).unwrap();
    same(value(&spans), value(&studio.run_spans(&a).unwrap()), "run_spans");
    let page: OutputPage = client
        .call("run_output", &json!({"run_id": a, "from_seq": 1, "limit": 10}))
        .unwrap();
    same(
        value(&page),
        value(&studio.run_output(&a, 1, 10, None, None).unwrap()),
        "run_output",
    );
    let found: OutputFind = client
        .call(
            "run_output_find",
            &json!({"run_id": a, "from_seq": 1, "backward": false, "query": "book"}),
        )
        .unwrap();
    same(
        value(&found),
        value(&studio.run_output_find(&a, 1, false, "book").unwrap()),
        "run_output_find",
    );
    let hits: Vec<SearchHit> = client.call("search", &json!({"query": "book", "limit": 5})).unwrap();
    assert!(!hits.is_empty());
    let diff: RunDiff = client
        .call("runs_compare", &json!({"a": a, "b": b, "skip_hunks": 0}))
        .unwrap();
    same(
        value(&diff),
        value(&studio.runs_compare(&a, &b, None, None, 0).unwrap()),
        "runs_compare",
    );
}

/// A value as JSON, to compare values of different types.
fn value<T: serde::Serialize>(x: &T) -> Value {
    serde_json::to_value(x).unwrap()
}

#[test]
fn a_run_started_through_the_client_is_heard_as_typed_events() {
    use studio_core::runner::{RunEvent, StartedRun};
    let place = Place::create();
    place.trusted_agent(50);
    let client = connect(&place);
    let notifications = client.notifications().expect("taken once");
    assert!(client.notifications().is_none());
    let started: StartedRun = client
        .call(
            "run_start",
            &json!({"agent": "trip", "prompt": "Kyoto", "session_id": null}),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut nodes = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let notification = notifications.recv_timeout(left).expect("the run's end within 30 s");
        match notification.run_event() {
            Some(RunEvent::NodeBegin { node, run_id, .. }) if run_id == started.run_id => nodes.push(node),
            Some(RunEvent::RunFinished { run_id, status, .. }) if run_id == started.run_id => {
                assert_eq!(status, studio_core::Status::Success);
                break;
            }
            _ => {}
        }
    }
    assert_eq!(nodes, ["plan", "book"]);
}
