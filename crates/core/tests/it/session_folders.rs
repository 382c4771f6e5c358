//! Session folders of both layouts, read from real folders: the captures' own, and hand-made ones
//! with every kind of damage a half-written or foreign folder can have.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use studio_core::session::{read_session_folder, Detail, Layout, RUNNING_QUIET_WINDOW};
use studio_core::{Error, SessionId, Status, Workspace};
use tempfile::TempDir;

use crate::harness::{capture, copy_tree};

fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(24 * 3600)
}

fn set_mtime(path: &Path, time: SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// A workspace holding the session folders of the named captures.
fn workspace_of(captures: &[&str]) -> TempDir {
    let dir = TempDir::new().unwrap();
    for name in captures {
        let sessions = capture(name).join("cwd/.zibby/output/sessions");
        copy_tree(&sessions, &dir.path().join(".zibby/output/sessions"));
    }
    dir
}

#[test]
fn an_engine_session_reads_its_id_current_node_and_node_folders() {
    let dir = workspace_of(&["head-bb10e85-02-pipeline-markers"]);
    let workspace = Workspace::open(dir.path()).unwrap();
    let id = SessionId::parse("1795952464415_3prb").unwrap();
    let session = workspace.read_session(&id, later()).unwrap();
    assert_eq!(session.layout, Layout::Engine);
    assert_eq!(session.current_node.as_deref(), Some("report"));
    let mut names: Vec<_> = session.nodes.iter().map(|n| n.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["execute", "plan", "report"]);
    assert!(
        session.nodes.iter().all(|n| n.status == Status::Success),
        "{:?}",
        session.nodes
    );
    assert_eq!(session.created_at.unwrap().0, 1795952464415);
    assert!(session.problems.is_empty(), "{:?}", session.problems);
    let plan = session.nodes.iter().find(|n| n.name == "plan").unwrap();
    assert!(plan.artifacts.raw_stream.as_ref().unwrap().bytes > 0);
    // Nothing marks the end of an engine run: quiet for a day, it is `unknown`; just written too,
    // when no process that started at its id's time works in the workspace (copied here, it has
    // none): its run is over.
    assert_eq!(session.status, Status::Unknown);
    assert_eq!(
        workspace.read_session(&id, SystemTime::now()).unwrap().status,
        Status::Unknown
    );
}

#[test]
fn an_interrupted_engine_session_names_the_node_it_was_in() {
    let dir = workspace_of(&["head-bb10e85-90-slow-sigterm"]);
    let workspace = Workspace::open(dir.path()).unwrap();
    let session = workspace
        .read_session(&SessionId::parse("1795952520676_54fl").unwrap(), SystemTime::now())
        .unwrap();
    assert_eq!(session.current_node.as_deref(), Some("process"));
    let statuses: Vec<_> = session.nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
    // Its process is not there (the folder was copied): the node it was in did not end well.
    assert_eq!(statuses, [("fetch", Status::Success), ("process", Status::Unknown)]);
}

#[test]
fn a_pinned_session_folder_outside_the_workspace_layout_reads_the_same() {
    let path = capture("head-bb10e85-01-hello-world-pinned-session").join("cwd/studio-sessions/run-42");
    let session = read_session_folder(&path, SessionId::parse("run-42").unwrap(), Detail::Full, later()).unwrap();
    assert_eq!(session.current_node.as_deref(), Some("say_hi"));
    assert_eq!(
        session.created_at.map(|t| t.0),
        session.info.as_ref().unwrap().session_timestamp
    );
}

#[test]
fn the_listing_is_most_recently_updated_first_and_skips_hostile_folder_names() {
    let dir = workspace_of(&[
        "head-bb10e85-01-hello-world-markers",
        "head-bb10e85-93-fanout-markers",
        "head-bb10e85-91-throw-custom-throw",
    ]);
    let sessions = dir.path().join(".zibby/output/sessions");
    let base = SystemTime::now() - Duration::from_secs(3600);
    // Every file and folder gets an old time, then one file per session a distinct newer one.
    for (i, id) in ["1795952522957_vij4", "1795952527924_osmf"].iter().enumerate() {
        set_mtime_tree(&sessions.join(id), base);
        set_mtime(
            &sessions.join(id).join(".session-info.json"),
            base + Duration::from_secs(60 * (i as u64 + 1)),
        );
    }
    let hello = fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n != "1795952522957_vij4" && n != "1795952527924_osmf")
        .unwrap();
    set_mtime_tree(&sessions.join(&hello), base);
    fs::create_dir(sessions.join("a..b")).unwrap();
    fs::write(sessions.join("stray-file.txt"), "not a session").unwrap();

    let listed = Workspace::open(dir.path()).unwrap().list_sessions(later()).unwrap();
    let ids: Vec<_> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["1795952527924_osmf", "1795952522957_vij4", hello.as_str()]);
    let fanout = &listed[0];
    assert_eq!(fanout.nodes.len(), 5);
    assert_eq!(fanout.current_node.as_deref(), Some("join"));
}

fn set_mtime_tree(path: &Path, time: SystemTime) {
    for entry in fs::read_dir(path).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            set_mtime_tree(&entry.path(), time);
        } else {
            set_mtime(&entry.path(), time);
        }
    }
    fs::File::open(path).unwrap().set_modified(time).unwrap();
}

/// A session in the documented layout, written the way the `zibby` CLI lays it out.
fn documented_session(root: &Path, events: &str) -> std::path::PathBuf {
    let session = root.join(".zibby/output/sessions/1795952600000_doc1");
    for node in ["plan", "write"] {
        fs::create_dir_all(session.join("nodes").join(node)).unwrap();
    }
    fs::write(session.join("nodes/plan/prompt.txt"), "Plan a trip to Kyoto").unwrap();
    fs::write(session.join("nodes/plan/raw_output.txt"), "day 1: temples").unwrap();
    fs::write(session.join("nodes/plan/result.json"), r#"{"days": 3}"#).unwrap();
    fs::write(session.join("nodes/write/prompt.txt"), "Write it up").unwrap();
    fs::write(session.join("events.json"), events).unwrap();
    fs::write(session.join("raw_stream_output.txt"), "everything\n").unwrap();
    fs::write(
        session.join(".session-info.json"),
        r#"{"sessionPath":"/x","sessionTimestamp":1795952600000,"currentNode":"write","createdAt":"2026-11-29T12:00:00.000Z","config":{"apiKey":"sk-secret"}}"#,
    )
    .unwrap();
    session
}

#[test]
fn events_json_reads_in_all_three_shapes() {
    let jsonl = "{\"type\":\"node_start\",\"node\":\"plan\"}\n{\"type\":\"node_end\",\"node\":\"plan\"}\n\
                 {\"type\":\"node_start\",\"node\":\"write\"}\n{\"type\":\"node_failed\",\"node\":\"write\"}\n";
    let array = r#"[{"type":"node_start","node":"plan"},{"type":"node_end","node":"plan"},{"type":"node_start","node":"write"},{"type":"node_failed","node":"write"}]"#;
    let wrapped = format!("{{\"events\": {array}}}");
    for shape in [jsonl.to_owned(), array.to_owned(), wrapped] {
        let dir = TempDir::new().unwrap();
        let path = documented_session(dir.path(), &shape);
        let session = read_session_folder(
            &path,
            SessionId::parse("1795952600000_doc1").unwrap(),
            Detail::Full,
            later(),
        )
        .unwrap();
        assert_eq!(session.layout, Layout::Documented);
        assert_eq!(session.events.len(), 4, "{shape}");
        let statuses: Vec<_> = session.nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
        assert_eq!(
            statuses,
            [("plan", Status::Success), ("write", Status::Error)],
            "{shape}"
        );
        assert!(session.problems.is_empty(), "{:?}", session.problems);
        let plan = &session.nodes[0].artifacts;
        assert_eq!(plan.prompt_preview.as_deref(), Some("Plan a trip to Kyoto"));
        assert_eq!(plan.result_value, Some(serde_json::json!({"days": 3})));
        assert_eq!(plan.raw_output.as_ref().unwrap().bytes, 14);
    }
}

#[test]
fn a_result_file_says_how_the_session_ended() {
    let dir = TempDir::new().unwrap();
    let path = documented_session(dir.path(), "");
    let id = SessionId::parse("1795952600000_doc1").unwrap();
    for (result, status) in [
        (r#"{"success":true,"executed":["plan"]}"#, Status::Success),
        (r#"{"success":true,"stoppedExternally":true}"#, Status::Cancelled),
        (r#"{"success":false,"error":"boom"}"#, Status::Error),
    ] {
        fs::write(path.join("result.json"), result).unwrap();
        let session = read_session_folder(&path, id.clone(), Detail::Summary, SystemTime::now()).unwrap();
        assert_eq!(session.status, status, "{result}");
    }
}

#[test]
fn damaged_files_degrade_one_field_each_and_say_why() {
    let dir = TempDir::new().unwrap();
    let path = documented_session(
        dir.path(),
        "{\"type\":\"node_start\",\"node\":\"plan\"}\nnot json at all\n{\"type\":\"node_end\",\"node\":\"pl",
    );
    fs::write(path.join(".session-info.json"), "{\"sessionPath\":\"/x\",\"currentNo").unwrap();
    fs::write(path.join("result.json"), [0xff, 0x00, 0x9c, 0x12]).unwrap();
    fs::write(path.join("nodes/plan/result.json"), "").unwrap();
    let session = read_session_folder(
        &path,
        SessionId::parse("1795952600000_doc1").unwrap(),
        Detail::Full,
        later(),
    )
    .unwrap();
    let files: Vec<_> = session.problems.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(
        files,
        [
            ".session-info.json",
            "result.json",
            "events.json",
            "nodes/plan/result.json"
        ],
        "{:?}",
        session.problems
    );
    assert!(
        session.problems[2].reason.contains("line 2"),
        "{:?}",
        session.problems[2]
    );
    // What could be read still is: the half-written last event is waited for, the nodes are listed.
    assert_eq!(session.events.len(), 1);
    assert_eq!(session.nodes.len(), 2);
    assert!(session.info.is_none() && session.result.is_none());
}

#[test]
fn config_may_hold_secrets_and_can_be_dropped() {
    let dir = TempDir::new().unwrap();
    let path = documented_session(dir.path(), "");
    let session = read_session_folder(
        &path,
        SessionId::parse("1795952600000_doc1").unwrap(),
        Detail::Full,
        later(),
    )
    .unwrap();
    assert!(serde_json::to_string(&session).unwrap().contains("sk-secret"));
    assert!(!serde_json::to_string(&session.without_config())
        .unwrap()
        .contains("sk-secret"));
}

#[test]
fn bad_workspaces_and_ids_get_errors_that_name_them() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("nope");
    let err = Workspace::open(&missing).unwrap_err();
    assert!(matches!(err, Error::WorkspaceNotFound { .. }));
    assert!(err.to_string().contains("nope"), "{err}");

    let file = dir.path().join("file");
    fs::write(&file, "").unwrap();
    assert!(matches!(Workspace::open(&file).unwrap_err(), Error::NotAFolder { .. }));

    let workspace = Workspace::open(dir.path()).unwrap();
    assert!(
        workspace.list_sessions(SystemTime::now()).unwrap().is_empty(),
        "no sessions folder yet: no sessions"
    );
    let err = workspace
        .read_session(&SessionId::parse("1795952600000_none").unwrap(), SystemTime::now())
        .unwrap_err();
    assert!(matches!(err, Error::SessionNotFound { .. }));
    assert!(err.to_string().contains("1795952600000_none"), "{err}");
}

/// Issue 12: node folders last written in the same instant (a copied or touched session) are
/// listed in the order they were made, never by name.
#[test]
fn node_folders_with_one_time_are_listed_in_the_order_they_were_made() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("1777678254000_same");
    for name in ["write", "check", "plan"] {
        fs::create_dir_all(path.join(name)).unwrap();
        fs::write(path.join(name).join("raw_stream_output.txt"), name).unwrap();
        // Apart by more than any file system's birth-time resolution.
        std::thread::sleep(Duration::from_millis(20));
    }
    let at = SystemTime::now() - Duration::from_secs(3600);
    for name in ["write", "check", "plan"] {
        fs::File::open(path.join(name)).unwrap().set_modified(at).unwrap();
    }
    let names = || -> Vec<String> {
        read_session_folder(
            &path,
            SessionId::parse("1777678254000_same").unwrap(),
            Detail::Summary,
            later(),
        )
        .unwrap()
        .nodes
        .into_iter()
        .map(|n| n.name)
        .collect()
    };
    assert_eq!(names(), ["write", "check", "plan"]);
    assert_eq!(names(), names(), "read again, the same");
}

/// Every capture's session folders, in every era: the engine alone names neither a workflow nor
/// a prompt, so a session from such a folder has no agent and no title (its id is shown), and
/// nothing is made up.
#[test]
fn the_engine_alone_names_no_agent_and_no_title_in_any_era() {
    let mut read = 0;
    for entry in fs::read_dir(crate::harness::captures_dir()).unwrap() {
        let sessions = entry.unwrap().path().join("cwd/.zibby/output/sessions");
        let Ok(folders) = fs::read_dir(&sessions) else { continue };
        for folder in folders {
            let folder = folder.unwrap();
            let id = SessionId::parse(folder.file_name().to_str().unwrap()).unwrap();
            for detail in [Detail::Summary, Detail::Full] {
                let session = read_session_folder(&folder.path(), id.clone(), detail, later()).unwrap();
                assert_eq!(
                    (&session.agent, &session.title),
                    (&None, &None),
                    "{}",
                    folder.path().display()
                );
            }
            read += 1;
        }
    }
    assert!(read >= 16, "every capture with a sessions folder: {read}");

    // The engine writes no prompt files: one in an engine-layout folder is not even looked at.
    let dir = workspace_of(&["head-bb10e85-01-hello-world-markers"]);
    let session = dir.path().join(".zibby/output/sessions/1795952462692_17h6");
    fs::write(session.join("say_hi/prompt.txt"), "Say hi").unwrap();
    let id = SessionId::parse("1795952462692_17h6").unwrap();
    let summary = studio_core::session::read_summary(&session, &id, later()).unwrap();
    assert_eq!(summary.title, None);
}

/// A capture's folder with what the documented layout adds (the `zibby` CLI, the cloud): what it
/// names the session, by the module's precedence, one line each.
#[test]
fn a_documented_folder_names_its_workflow_and_first_prompt_one_line_each() {
    let dir = workspace_of(&["head-bb10e85-02-pipeline-markers"]);
    let id = SessionId::parse("1795952464415_3prb").unwrap();
    let session = dir.path().join(".zibby/output/sessions").join(id.as_str());
    let read = || {
        let summary = studio_core::session::read_summary(&session, &id, later()).unwrap();
        let full = read_session_folder(&session, id.clone(), Detail::Full, later()).unwrap();
        assert_eq!(
            (&summary.agent, &summary.title),
            (&full.agent, &full.title),
            "a listing and show agree"
        );
        (summary.agent, summary.title)
    };
    // The order the nodes ran in (folder times may be equal).
    let events = ["plan", "execute", "report"].map(|n| format!("{{\"type\":\"node_end\",\"node\":\"{n}\"}}\n"));
    fs::write(session.join("events.json"), events.concat()).unwrap();
    // The first node's prompt, at `nodes/<node>/` or `<node>/`; the first line with text, its
    // escape sequences (a window title, colours) and control characters dropped.
    fs::create_dir_all(session.join("nodes/plan")).unwrap();
    fs::write(
        session.join("nodes/plan/prompt.txt"),
        "\n   \n  \x1b]0;pwned\x07\x1b[1;32mPlan\x1b[0m the tasks for:\tship v2  \nthe rest of the prompt\n",
    )
    .unwrap();
    fs::write(session.join("execute/prompt.txt"), "Execute the plan").unwrap();
    assert_eq!(read(), (None, Some("Plan the tasks for: ship v2".to_owned())));

    // A long one is cut at a word, with an ellipsis.
    let long = format!("Summarise {}", "every ticket of the week ".repeat(20));
    fs::write(session.join("nodes/plan/prompt.txt"), &long).unwrap();
    let (_, title) = read();
    let title = title.unwrap();
    assert!(title.ends_with('…') && title.chars().count() <= 80, "{title}");
    assert!(title.starts_with("Summarise every ticket of the week every"), "{title}");
    assert!(!title.trim_end_matches('…').ends_with(' '), "{title}");

    // result.json's prompt wins over the nodes' files; its workflow names the agent.
    fs::write(
        session.join("result.json"),
        r#"{"success": true, "workflow": "pipeline", "prompt": "Ship version two"}"#,
    )
    .unwrap();
    assert_eq!(read(), (Some("pipeline".into()), Some("Ship version two".into())));
    // .session-info.json's name wins over result.json's.
    let info = fs::read_to_string(session.join(".session-info.json")).unwrap();
    let info = info.replacen('{', r#"{"workflowName": "release-pipeline", "#, 1);
    fs::write(session.join(".session-info.json"), info).unwrap();
    assert_eq!(
        read(),
        (Some("release-pipeline".into()), Some("Ship version two".into()))
    );
}

/// The prompt file is untrusted like every other: a link is not followed, a FIFO not opened, a
/// huge one read only as far as its first 4 KiB; each a problem naming the file where it is not
/// read.
#[test]
fn a_hostile_prompt_file_is_never_followed_nor_read_whole() {
    let dir = workspace_of(&["head-bb10e85-02-pipeline-markers"]);
    let outside = TempDir::new().unwrap();
    fs::write(outside.path().join("secret.txt"), "the secret").unwrap();
    let id = SessionId::parse("1795952464415_3prb").unwrap();
    let session = dir.path().join(".zibby/output/sessions").join(id.as_str());
    // The documented layout's (a result without a prompt), whose prompt files are looked at.
    fs::write(session.join("result.json"), r#"{"success": true}"#).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), session.join("plan/prompt.txt")).unwrap();
    nix::unistd::mkfifo(&session.join("execute/prompt.txt"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    // No node gives a title: each prompt file is tried, and said.
    let summary = studio_core::session::read_summary(&session, &id, later()).unwrap();
    assert_eq!(summary.title, None);
    assert!(!format!("{summary:?}").contains("the secret"));
    for file in ["plan/prompt.txt", "execute/prompt.txt"] {
        assert!(
            summary
                .problems
                .iter()
                .any(|p| p.file == file && p.reason.contains("not read")),
            "{file}: {:?}",
            summary.problems
        );
    }
    fs::write(session.join("report/prompt.txt"), "x".repeat(10 * 1024 * 1024)).unwrap();
    let summary = studio_core::session::read_summary(&session, &id, later()).unwrap();
    let title = summary.title.expect("the huge one's first 4 KiB");
    assert_eq!(title.chars().count(), 80, "{title}");
}

/// Through the store, as every surface reads it: the folder's names, kept by the folder index,
/// and a session the studio ran named by what the studio recorded.
#[test]
fn the_listing_names_sessions_from_the_store_else_the_folder() {
    let dir = workspace_of(&["head-bb10e85-02-pipeline-markers", "head-bb10e85-93-fanout-markers"]);
    let documented = dir.path().join(".zibby/output/sessions/1795952464415_3prb");
    fs::write(
        documented.join("result.json"),
        r#"{"success": true, "agentName": "planner", "prompt": "Plan the week"}"#,
    )
    .unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::memory()).unwrap();
    let names = |store: &studio_core::store::Store| {
        let rows = store.list_sessions(&workspace, later()).unwrap();
        rows.into_iter()
            .map(|r| (r.summary.id.to_string(), r.summary.agent, r.summary.title))
            .collect::<Vec<_>>()
    };
    let expected = vec![
        ("1795952527924_osmf".to_owned(), None, None),
        (
            "1795952464415_3prb".to_owned(),
            Some("planner".to_owned()),
            Some("Plan the week".to_owned()),
        ),
    ];
    let mut listed = names(&store);
    listed.sort_by(|a, b| b.0.cmp(&a.0));
    assert_eq!(listed, expected);
    let mut again = names(&store);
    again.sort_by(|a, b| b.0.cmp(&a.0));
    assert_eq!(again, expected, "the same from the folder index");

    // The studio's own word wins: the agent it ran, the prompt it sent (one line).
    let fanout = SessionId::parse("1795952527924_osmf").unwrap();
    let run = studio_core::store::NewRun {
        session: &fanout,
        agent: Some("my-agent"),
        command: &["x".to_owned()],
        prompt: Some("  Fan the work out\nto everyone"),
        started_at: SystemTime::now(),
        replayed_node: None,
    };
    store.run_insert(&workspace, &run).unwrap();
    let mut listed = names(&store);
    listed.sort_by(|a, b| b.0.cmp(&a.0));
    assert_eq!(
        listed[0],
        (
            "1795952527924_osmf".to_owned(),
            Some("my-agent".to_owned()),
            Some("Fan the work out".to_owned())
        )
    );
    let mut summary = studio_core::session::read_summary(
        &dir.path().join(".zibby/output/sessions/1795952527924_osmf"),
        &fanout,
        later(),
    )
    .unwrap();
    store.as_recorded(&workspace, &mut summary).unwrap();
    assert_eq!(
        summary.title.as_deref(),
        Some("Fan the work out"),
        "watch and show say the same"
    );
}

/// A session just written is `running` while a process has one of its files open (the engine
/// keeps a node's output open while the node runs, wherever it was started from), and `unknown`
/// once no process of it is left: its end is known at once, not two minutes later.
#[test]
fn a_fresh_session_is_running_while_a_process_holds_its_files_and_ended_after() {
    let dir = TempDir::new().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let id = SessionId::parse(&format!("{now_ms}_open")).unwrap();
    let session = dir.path().join(".zibby/output/sessions").join(id.as_str());
    fs::create_dir_all(session.join("plan")).unwrap();
    fs::write(session.join(".session-info.json"), r#"{"currentNode":"plan"}"#).unwrap();
    // A process that started long before the id's time and works elsewhere (`sleep`, no engine):
    // only the file it holds open says the run is there. The process asking is never the run
    // (issue 41), so the file is held by a child.
    let output = session.join("plan/raw_stream_output.txt");
    fs::File::create(&output).unwrap();
    let mut holder = std::process::Command::new("sleep")
        .arg("60")
        .stdin(fs::File::open(&output).unwrap())
        .spawn()
        .unwrap();
    let status = || workspace.read_session(&id, SystemTime::now()).unwrap().status;
    assert_eq!(status(), Status::Running);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(status(), Status::Unknown, "no process of it is left");
}

/// Issue 29: a terminal run's session, from the engine's own folder (the captured three-node
/// pipeline), whose node folders were written in one tick of the file system's clock: the node
/// `.session-info.json` names began last, the others are marked as a guess (when their folders'
/// times tie), the session says once what is not known and how to get the full story, and all of
/// it reads the same right after the run, past the two-minute quiet window, and a day later.
#[test]
fn a_terminal_runs_tied_nodes_are_marked_and_read_the_same_after_two_minutes() {
    let dir = workspace_of(&["head-bb10e85-02-pipeline-plain"]);
    let session = dir.path().join(".zibby/output/sessions/1795952465061_2lkm");
    // One tick after the folders were made, as a run writes its folders after making them (a
    // time set before their making is a copy's: issue 41, point 4).
    std::thread::sleep(Duration::from_millis(20));
    let tick = SystemTime::now();
    for node in ["plan", "execute", "report"] {
        fs::File::open(session.join(node)).unwrap().set_modified(tick).unwrap();
    }
    let id = SessionId::parse("1795952465061_2lkm").unwrap();
    let read = |now: SystemTime| read_session_folder(&session, id.clone(), Detail::Summary, now).unwrap();
    let right_after = read(SystemTime::now());
    let nodes: Vec<(&str, bool)> = right_after
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.order_uncertain))
        .collect();
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    assert_eq!(nodes[2], ("report", false), "the current node began last: {nodes:?}");
    // plan and execute are a guess exactly when their folders' times (written, made) tie.
    let made = |node: &str| fs::metadata(session.join(node)).unwrap().created().ok();
    let tied = made("plan") == made("execute");
    assert_eq!(
        nodes[..2].iter().map(|(_, guessed)| *guessed).collect::<Vec<_>>(),
        [tied, tied],
        "{nodes:?}"
    );
    if !tied {
        let first = if made("plan") < made("execute") {
            "plan"
        } else {
            "execute"
        };
        assert_eq!(nodes[0].0, first, "made apart: the making orders them");
    }
    assert_eq!(
        right_after.status,
        Status::Unknown,
        "its process is gone, how it ended is not recorded"
    );
    let note = right_after.not_known.clone().expect("it says what is not known");
    assert!(note.contains("zstudio run -- "), "{note}");
    assert_eq!(note.contains("marked `?`"), tied, "{note}");

    for later in [
        SystemTime::now() + RUNNING_QUIET_WINDOW + Duration::from_secs(1),
        later(),
    ] {
        let again = read(later);
        assert_eq!(
            again.summary(),
            right_after.summary(),
            "nothing happened: nothing changed"
        );
    }
}

/// Where the files say a run failed, a session the studio did not run reads `error` without a
/// `result.json` of its own: a node's `result.json` (the documented layout), or a `status` in
/// `.session-info.json`.
#[test]
fn a_failed_outside_run_reads_error_where_its_files_say_so() {
    let dir = TempDir::new().unwrap();
    let session = dir.path().join(".zibby/output/sessions/1795952600000_fail");
    fs::create_dir_all(session.join("nodes/plan")).unwrap();
    fs::create_dir_all(session.join("nodes/write")).unwrap();
    fs::write(session.join("nodes/plan/result.json"), r#"{"ok": true}"#).unwrap();
    fs::write(
        session.join("nodes/write/result.json"),
        r#"{"success": false, "error": "the model refused"}"#,
    )
    .unwrap();
    let id = SessionId::parse("1795952600000_fail").unwrap();
    let read = || read_session_folder(&session, id.clone(), Detail::Summary, later()).unwrap();
    let failed = read();
    assert_eq!(failed.status, Status::Error);
    let statuses: Vec<_> = failed.nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
    assert!(statuses.contains(&("write", Status::Error)), "{statuses:?}");
    assert!(statuses.contains(&("plan", Status::Success)), "{statuses:?}");
    assert_eq!(failed.not_known, None, "the documented layout says how it ended");

    let dir = TempDir::new().unwrap();
    let session = dir.path().join(".zibby/output/sessions/1795952600000_info");
    fs::create_dir_all(session.join("plan")).unwrap();
    fs::write(
        session.join(".session-info.json"),
        r#"{"sessionTimestamp":1795952600000,"currentNode":"plan","status":"failed"}"#,
    )
    .unwrap();
    let id = SessionId::parse("1795952600000_info").unwrap();
    let said = read_session_folder(&session, id, Detail::Summary, SystemTime::now()).unwrap();
    assert_eq!(said.status, Status::Error);
    assert_eq!(said.not_known, None);
}
