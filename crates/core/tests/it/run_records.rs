//! The studio's record of a run in its session folder (`.zibby-studio-run.json`, issue 41 point
//! 5): a run the studio started, its folder copied anywhere (a bucket, a download, a colleague's
//! folder) and read with no store record of it, reads as the original; a hostile record is a
//! named problem; the studio's own write never reads as the folder written after the run.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use studio_core::runner::{RunEvent, StartedRun};
use studio_core::session::{self, read_run_record, SessionSummary, RUN_RECORD_FILE};
use studio_core::store::{Store, StoreLocation};
use studio_core::timeline::StoppedBy;
use studio_core::{SessionId, Status, Workspace};

use crate::harness::{self, copy_tree, wait_for, Bench};

const PROMPT: &str = "Plan a trip to Kyoto\nin May, for two";

fn bench() -> Bench {
    harness::bench("studio.sqlite", false)
}

fn start(b: &Bench, args: &[&str]) -> StartedRun {
    let mut request = harness::request(b, args);
    request.agent = Some("test-agent".into());
    request.prompt = Some(PROMPT.into());
    b.supervisor.start(request).unwrap()
}

fn until_finished(b: &Bench, run: &StartedRun) {
    wait_for(
        &b.events,
        |e| matches!(e, RunEvent::RunFinished { run_id, .. } if *run_id == run.run_id),
    );
}

/// What every surface compares: status, names, nodes in order with their statuses and marks.
type Seen = (Status, Option<String>, Option<String>, Vec<(String, Status, bool)>);

fn seen(summary: &SessionSummary) -> Seen {
    let nodes = summary
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.status, n.order_uncertain))
        .collect();
    (summary.status, summary.agent.clone(), summary.title.clone(), nodes)
}

/// The session as `zstudio sessions` lists it, from `store` (and its `read_session`, as `show`).
fn listed(store: &Store, workspace: &Workspace, id: &str) -> Seen {
    let rows = store.list_sessions(workspace, SystemTime::now()).unwrap();
    let row = rows.iter().find(|r| r.summary.id.as_str() == id).expect("listed");
    let shown = store
        .read_session(workspace, &SessionId::parse(id).unwrap(), SystemTime::now())
        .unwrap();
    assert_eq!(
        seen(&shown.summary()),
        seen(&row.summary),
        "show says what sessions says"
    );
    seen(&row.summary)
}

/// A fresh workspace and a fresh store, the session folder copied into it as `cp -r` copies
/// (every file's time the time of the copy).
struct Copy {
    _dir: tempfile::TempDir,
    workspace: Workspace,
    store: Store,
    path: PathBuf,
}

fn copy_elsewhere(original: &Path, id: &str) -> Copy {
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
    let workspace = Workspace::open(dir.path().join("elsewhere")).unwrap();
    let store = Store::open(&StoreLocation::File(dir.path().join("other.sqlite"))).unwrap();
    let path = workspace.session_path(&SessionId::parse(id).unwrap());
    copy_tree(original, &path);
    Copy {
        _dir: dir,
        workspace,
        store,
        path,
    }
}

fn set_modified(path: &Path, at: SystemTime) {
    let file = std::fs::File::open(path).unwrap();
    file.set_times(std::fs::FileTimes::new().set_modified(at)).unwrap();
}

#[test]
fn a_copy_of_a_studio_runs_folder_reads_as_the_original() {
    let b = bench();
    let run = start(&b, &["--nodes", "prep:10,boom:10,last:10", "--fail", "boom"]);
    until_finished(&b, &run);
    // `prep` writes no folder (a custom code node): only the run's record names it.
    std::fs::remove_dir_all(run.session_path.join("prep")).unwrap();
    let store = b.supervisor.store();
    let original = listed(store, &b.workspace, &run.session_id);
    let expected_nodes = vec![
        ("prep".to_owned(), Status::Success, false),
        ("boom".to_owned(), Status::Error, false),
    ];
    assert_eq!(
        original,
        (
            Status::Error,
            Some("test-agent".to_owned()),
            Some("Plan a trip to Kyoto".to_owned()),
            expected_nodes
        )
    );

    let copy = copy_elsewhere(&run.session_path, &run.session_id);
    assert!(
        copy.store.runs(&copy.workspace, None).unwrap().is_empty(),
        "no record of it here"
    );
    assert_eq!(
        listed(&copy.store, &copy.workspace, &run.session_id),
        original,
        "listed"
    );
    let id = SessionId::parse(&run.session_id).unwrap();
    let read = session::read_summary(&copy.path, &id, SystemTime::now()).unwrap();
    assert_eq!(seen(&read), original, "read_summary");
    assert!(read.not_known.is_none(), "the studio ran it: nothing is missing");
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    // An hour later, the same.
    let later = session::read_summary(&copy.path, &id, SystemTime::now() + Duration::from_secs(3600)).unwrap();
    assert_eq!(seen(&later), original, "an hour later");

    // Imported as a folder (`zstudio import DIR`), the record comes along and reads the same.
    let imported_into = copy_elsewhere(&run.session_path, &run.session_id);
    let target = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(target.path().join("ws")).unwrap();
    let workspace = Workspace::open(target.path().join("ws")).unwrap();
    let store = Store::open(&StoreLocation::File(target.path().join("s.sqlite"))).unwrap();
    let imported = studio_core::share::import(
        &store,
        &workspace,
        &imported_into.path,
        &Default::default(),
        SystemTime::now(),
    )
    .unwrap();
    assert!(imported.path.join(RUN_RECORD_FILE).is_file());
    assert_eq!(listed(&store, &workspace, &run.session_id), original, "imported");

    // Exported as a bundle and imported elsewhere: the record travels in it.
    let bundle = target.path().join("session.zip");
    let exported = studio_core::share::export_session(
        b.supervisor.store(),
        &b.workspace,
        &id,
        &bundle,
        false,
        SystemTime::now(),
    );
    exported.unwrap();
    let other = tempfile::TempDir::new().unwrap();
    let workspace = Workspace::open(other.path()).unwrap();
    let store = Store::open(&StoreLocation::File(other.path().join("s.sqlite"))).unwrap();
    let imported = studio_core::share::import(&store, &workspace, &bundle, &Default::default(), SystemTime::now());
    assert!(imported.unwrap().path.join(RUN_RECORD_FILE).is_file());
    assert_eq!(listed(&store, &workspace, &run.session_id), original, "from a bundle");

    // A run outside the studio continues the session (the engine rewrites `.session-info.json`
    // before its node): the folder tells again, the names stay the session's.
    std::fs::write(
        copy.path.join(".session-info.json"),
        r#"{"currentNode": "later", "createdAt": "2030-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let after = session::read_summary(&copy.path, &id, SystemTime::now() + Duration::from_secs(3600)).unwrap();
    assert_eq!(after.status, Status::Unknown, "{after:?}");
    assert!(after.nodes.iter().any(|n| n.name == "later"));
    assert_eq!(
        (after.agent.as_deref(), after.title.as_deref()),
        (Some("test-agent"), Some("Plan a trip to Kyoto"))
    );
}

#[test]
fn a_stopped_runs_copy_keeps_cancelled_and_how_it_was_stopped() {
    let b = bench();
    let run = start(&b, &["--nodes", "first:700,second:700,third:700"]);
    wait_for(
        &b.events,
        |e| matches!(e, RunEvent::NodeBegin { node, .. } if node == "first"),
    );
    b.supervisor.stop(&run.run_id, false).unwrap();
    until_finished(&b, &run);
    let original = listed(b.supervisor.store(), &b.workspace, &run.session_id);
    assert_eq!(original.0, Status::Cancelled);

    let copy = copy_elsewhere(&run.session_path, &run.session_id);
    assert_eq!(listed(&copy.store, &copy.workspace, &run.session_id), original);
    let record = read_run_record(&copy.path).unwrap().expect("a record");
    assert_eq!(
        (record.status, record.stopped_by, record.run_id.as_str()),
        (Status::Cancelled, Some(StoppedBy::Graceful), run.run_id.as_str())
    );
    let recorded = b.supervisor.store().run(&run.run_id).unwrap();
    assert_eq!(
        (record.exit_code, Some(record.ended_at), record.started_at),
        (recorded.exit_code, recorded.ended_at, recorded.started_at)
    );
    assert_eq!(record.nodes.len(), 1);
    assert_eq!(
        (record.nodes[0].name.as_str(), record.nodes[0].status),
        ("first", Status::Success)
    );
    assert!(record.nodes[0]
        .ended_at
        .is_some_and(|end| end >= record.nodes[0].started_at));
}

#[test]
fn a_hostile_record_is_a_named_problem_never_a_crash() {
    let dir = tempfile::TempDir::new().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let id = SessionId::parse("1796000000000_host").unwrap();
    let folder = workspace.create_session_folder(&id).unwrap();
    std::fs::create_dir(folder.join("plan")).unwrap();
    std::fs::write(folder.join("plan/raw_stream_output.txt"), "x\n").unwrap();
    let valid = || {
        serde_json::json!({
            "format": "zibby-studio-run", "version": 1, "run_id": "r", "agent": "a", "title": "t",
            "status": "success", "stopped_by": null, "exit_code": 0,
            "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:01Z",
            "nodes": [], "folder_at_end": {"current_node": null, "created_at": null}
        })
    };
    // A million nodes, written as text (about 66 MB).
    let node = r#"{"name":"n","status":"success","started_at":"2026-01-01T00:00:00Z"}"#;
    let head = serde_json::to_string(&valid())
        .unwrap()
        .replace(r#""nodes":[]"#, r#""nodes":["#);
    let (before, after) = head.split_once(r#""nodes":["#).unwrap();
    let million = format!("{before}\"nodes\":[{}]{after}", vec![node; 1_000_000].join(","));
    let mut bell = valid();
    bell["nodes"] = serde_json::json!([{"name": "pl\u{7}an\u{1b}[31m", "status": "success",
        "started_at": "2026-01-01T00:00:00Z"}]);
    let mut word = valid();
    word["status"] = "exploded".into();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("huge", vec![b' '; 2 * 1024 * 1024], "larger than a run record can be"),
        (
            "bad JSON",
            b"{\"format\": \"zibby-studio-run\", ".to_vec(),
            "not a valid run record",
        ),
        ("deep", "[".repeat(100_000).into_bytes(), "not a valid run record"),
        ("1e6 nodes", million.into_bytes(), "larger than a run record can be"),
        (
            "control characters",
            serde_json::to_vec(&bell).unwrap(),
            "control characters",
        ),
        ("a status word", serde_json::to_vec(&word).unwrap(), "unknown variant"),
    ];
    for (what, bytes, says) in cases {
        std::fs::write(folder.join(RUN_RECORD_FILE), bytes).unwrap();
        let started = std::time::Instant::now();
        let summary = session::read_summary(&folder, &id, SystemTime::now() + Duration::from_secs(3600)).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what}: took {:?}",
            started.elapsed()
        );
        let problem = summary
            .problems
            .iter()
            .find(|p| p.file == RUN_RECORD_FILE)
            .unwrap_or_else(|| panic!("{what}: no problem named {RUN_RECORD_FILE}: {:?}", summary.problems));
        assert!(problem.reason.contains(says), "{what}: {}", problem.reason);
        assert!(
            problem.reason.len() < 400,
            "{what}: a bounded reason: {}",
            problem.reason.len()
        );
        // The folder alone tells, as if there were no record.
        assert_eq!(summary.status, Status::Unknown, "{what}");
        assert_eq!((summary.agent.as_deref(), summary.nodes.len()), (None, 1), "{what}");
    }
    // A FIFO in its place is never opened (no hang).
    std::fs::remove_file(folder.join(RUN_RECORD_FILE)).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(folder.join(RUN_RECORD_FILE))
        .status()
        .unwrap();
    assert!(status.success());
    let summary = session::read_summary(&folder, &id, SystemTime::now()).unwrap();
    assert!(summary
        .problems
        .iter()
        .any(|p| p.file == RUN_RECORD_FILE && p.reason.contains("not a regular file")));
}

#[test]
fn the_studios_own_write_never_reads_as_the_folder_written_after_the_run() {
    let b = bench();
    let run = start(&b, &["--nodes", "plan:10,act:10"]);
    until_finished(&b, &run);
    let store = b.supervisor.store();
    let recorded = store.run(&run.run_id).unwrap();
    let record_path = run.session_path.join(RUN_RECORD_FILE);
    assert!(record_path.is_file(), "the run's end wrote its record");
    let folder_time = std::fs::metadata(&run.session_path).unwrap().modified().unwrap();
    let ended_at = recorded.ended_at.unwrap().to_system_time();
    assert!(
        folder_time <= ended_at + Duration::from_secs(2),
        "the folder's time is the run's, not the record's"
    );
    let original = listed(store, &b.workspace, &run.session_id);
    assert_eq!(original.0, Status::Success);

    // Written again much later (a recovery, a late settle): the folder's time stays, and the
    // record's own time is never the session's.
    let record = read_run_record(&run.session_path).unwrap().unwrap();
    let an_hour_later = SystemTime::now() + Duration::from_secs(3600);
    studio_core::session::write_run_record(&run.session_path, &record).unwrap();
    set_modified(&record_path, an_hour_later);
    assert_eq!(
        std::fs::metadata(&run.session_path).unwrap().modified().unwrap(),
        folder_time
    );
    let id = SessionId::parse(&run.session_id).unwrap();
    let read = session::read_summary(&run.session_path, &id, SystemTime::now()).unwrap();
    assert!(read.updated_at.to_system_time() < an_hour_later - Duration::from_secs(60));
    assert_eq!(
        listed(store, &b.workspace, &run.session_id),
        original,
        "the store's word stands"
    );
    let runs = store.runs(&b.workspace, Some(&id)).unwrap();
    assert_eq!(runs[0].status, Status::Success);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&record_path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

/// A run left running (`zstudio run --detach`) and settled later from its keeper's files
/// (`reconcile`) gets its record too, and its copy reads as the original.
#[test]
fn a_detached_run_settled_later_writes_its_record_too() {
    let b = harness::bench("studio.sqlite", true);
    let run = start(&b, &["--nodes", "first:200,second:200"]);
    wait_for(
        &b.events,
        |e| matches!(e, RunEvent::RunStarted { run_id, .. } if *run_id == run.run_id),
    );
    assert_eq!(b.supervisor.detach(), vec![run.run_id.clone()]);
    let store = b.supervisor.store();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while store.run(&run.run_id).unwrap().status == Status::Running {
        assert!(std::time::Instant::now() < deadline, "the detached run never ended");
        studio_core::runner::reconcile(store, SystemTime::now()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let record = read_run_record(&run.session_path).unwrap().expect("a record");
    assert_eq!((record.status, record.nodes.len()), (Status::Success, 2));
    let original = listed(store, &b.workspace, &run.session_id);
    let copy = copy_elsewhere(&run.session_path, &run.session_id);
    assert_eq!(listed(&copy.store, &copy.workspace, &run.session_id), original);
}
