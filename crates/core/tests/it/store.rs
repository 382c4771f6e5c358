//! The store, on real SQLite files: migrations, pins, runs and output, delete, search, recovery,
//! retention, and two processes at once.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::harness::store_setup;
use rusqlite::Connection;
use studio_core::protocol::Stream;
use studio_core::store::retention::{plan, Rule};
use studio_core::store::{
    Level, NewRun, OutputFilter, OutputFind, RunOutcome, Store, StoreLocation, FIND_BUDGET_LINES, SCHEMA_VERSION,
};
use studio_core::{Error, SessionId, Status, Workspace};

fn id(text: &str) -> SessionId {
    SessionId::parse(text).unwrap()
}

fn make_folder(workspace: &Workspace, session: &str) -> PathBuf {
    let path = workspace.sessions_dir().join(session);
    std::fs::create_dir_all(path.join("plan")).unwrap();
    std::fs::write(
        path.join(".session-info.json"),
        format!(
            r#"{{"sessionPath":"{}","currentNode":"plan","config":{{}}}}"#,
            path.display()
        ),
    )
    .unwrap();
    path
}

fn start_run(store: &Store, workspace: &Workspace, session: &SessionId, prompt: &str) -> String {
    let command = vec!["node".to_owned(), "agent.js".to_owned()];
    store
        .run_insert(
            workspace,
            &NewRun {
                session,
                agent: Some("support"),
                command: &command,
                replayed_node: None,
                prompt: Some(prompt),
                started_at: SystemTime::now(),
            },
        )
        .unwrap()
}

fn finish(store: &Store, run: &str, status: Status) {
    store
        .run_finish(
            run,
            &RunOutcome {
                status,
                exit_code: Some(0),
                error: None,
                stopped_by: None,
                ended_at: SystemTime::now(),
            },
        )
        .unwrap();
}

fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db).unwrap().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn a_new_file_is_created_migrated_and_in_wal_mode() {
    let s = store_setup();
    drop(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
    let conn = Connection::open(&s.db).unwrap();
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    // Opening again changes nothing.
    drop(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
}

#[test]
fn a_store_from_a_newer_studio_is_a_clear_error_and_is_left_alone() {
    let s = store_setup();
    drop(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
    Connection::open(&s.db)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 5)
        .unwrap();
    let err = Store::open(&StoreLocation::File(s.db.clone()))
        .err()
        .expect("a newer schema is refused");
    assert!(matches!(err, Error::StoreTooNew { .. }), "{err}");
    assert!(err.to_string().contains("update Zibby Studio"), "{err}");
    assert!(err.to_string().contains(&s.db.display().to_string()), "{err}");
    assert_eq!(count(&s.db, "SELECT count(*) FROM workspaces"), 0);
}

#[test]
fn pins_survive_a_restart_and_a_folder_recreated_on_disk() {
    let s = store_setup();
    make_folder(&s.workspace, "1795952600000_aaaa");
    make_folder(&s.workspace, "1795952600000_bbbb");
    {
        let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
        store
            .pin(&s.workspace, &id("1795952600000_aaaa"), SystemTime::now())
            .unwrap();
    }
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let pins = store.pins(&s.workspace).unwrap();
    assert_eq!(pins.len(), 1);
    assert_eq!(pins[0].session_id, "1795952600000_aaaa");
    // Pinned first, even though the other folder is newer.
    let later = SystemTime::now() + Duration::from_secs(5);
    std::fs::File::open(s.workspace.sessions_dir().join("1795952600000_bbbb"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    let listed = store.list_sessions(&s.workspace, SystemTime::now()).unwrap();
    assert_eq!(listed[0].summary.id.as_str(), "1795952600000_aaaa");

    std::fs::remove_dir_all(s.workspace.sessions_dir().join("1795952600000_aaaa")).unwrap();
    assert_eq!(store.list_sessions(&s.workspace, SystemTime::now()).unwrap().len(), 1);
    make_folder(&s.workspace, "1795952600000_aaaa");
    let listed = store.list_sessions(&s.workspace, SystemTime::now()).unwrap();
    assert_eq!(
        listed[0].summary.id.as_str(),
        "1795952600000_aaaa",
        "re-created, still pinned"
    );

    store.unpin(&s.workspace, &id("1795952600000_aaaa")).unwrap();
    assert!(store.pins(&s.workspace).unwrap().is_empty());
}

#[test]
fn a_runs_origin_is_kept_and_an_unknown_run_has_none_to_set() {
    let s = store_setup();
    make_folder(&s.workspace, "1795952600000_orig");
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let run = start_run(&store, &s.workspace, &id("1795952600000_orig"), "p");
    assert_eq!(store.run(&run).unwrap().origin, None);
    store.run_set_origin(&run, "mcp").unwrap();
    drop(store);
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    assert_eq!(store.run(&run).unwrap().origin.as_deref(), Some("mcp"));
    assert!(matches!(
        store.run_set_origin("no-such-run", "mcp"),
        Err(studio_core::Error::RunNotFound { .. })
    ));
}

#[test]
fn an_in_memory_store_is_shared_by_its_connections_and_gone_after() {
    let location = StoreLocation::memory();
    let s = store_setup();
    let first = Store::open(&location).unwrap();
    first
        .pin(&s.workspace, &id("1795952600000_mem1"), SystemTime::now())
        .unwrap();
    let second = Store::open(&location).unwrap();
    assert_eq!(second.pins(&s.workspace).unwrap().len(), 1);
    drop((first, second));
    assert!(Store::open(&location).unwrap().pins(&s.workspace).unwrap().is_empty());
    assert!(Store::open(&StoreLocation::memory())
        .unwrap()
        .pins(&s.workspace)
        .unwrap()
        .is_empty());
}

#[test]
fn runs_record_their_output_messages_logs_and_spans() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let session = id("1795952600000_run1");
    store
        .message_append(
            &s.workspace,
            &session,
            "user",
            "Plan a trip to Kyoto",
            SystemTime::now(),
        )
        .unwrap();
    let run = start_run(&store, &s.workspace, &session, "Plan a trip to Kyoto");
    assert_eq!(uuid_version(&run), 7, "run ids are UUID v7: {run}");
    store.run_set_process(&run, 4242, 4242).unwrap();
    let root = store
        .span_start(&run, None, "run", "run", 0, SystemTime::now())
        .unwrap();
    let node = store
        .span_start(&run, Some(root), "plan", "node", 0, SystemTime::now())
        .unwrap();
    {
        let mut writer = store.output_writer(&run).unwrap();
        for i in 1..=5000 {
            writer
                .append(Stream::Stdout, i, Some("plan"), &format!("line {i}"))
                .unwrap();
        }
    }
    store.span_end(node, Status::Success, SystemTime::now()).unwrap();
    store
        .log(
            &s.workspace,
            &session,
            Some(&run),
            Level::Info,
            "node.begin",
            "plan",
            serde_json::json!({"node": "plan"}),
            SystemTime::now(),
        )
        .unwrap();
    finish(&store, &run, Status::Success);

    let runs = store.runs(&s.workspace, Some(&session)).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Success);
    assert_eq!(runs[0].pid, None, "a finished run holds no process");
    assert_eq!(runs[0].command, ["node", "agent.js"]);
    let page = store.output_page(&run, 4999, 10).unwrap();
    assert_eq!(page.iter().map(|l| l.seq).collect::<Vec<_>>(), [4999, 5000]);
    assert_eq!(page[1].text, "line 5000");
    assert_eq!(store.spans(&run).unwrap()[1].parent_id, Some(root));
    assert_eq!(store.logs(&s.workspace, &session).unwrap()[0].event, "node.begin");
    assert_eq!(
        store.session_title(&s.workspace, &session).unwrap().as_deref(),
        Some("Plan a trip to Kyoto")
    );
    let messages = store.messages(&s.workspace, &session).unwrap();
    assert_eq!((messages[0].seq, messages[0].role.as_str()), (1, "user"));
}

#[test]
fn output_pages_filter_by_node_and_stream_and_say_where_to_go_on() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::memory()).unwrap();
    let session = id("1795952600000_pag1");
    let run = start_run(&store, &s.workspace, &session, "page");
    {
        let mut writer = store.output_writer(&run).unwrap();
        for i in 1..=10_000u64 {
            let (stream, node) = match i % 10 {
                0 => (Stream::Stderr, "check"),
                _ => (Stream::Stdout, "plan"),
            };
            writer.append(stream, i, Some(node), &format!("line {i}")).unwrap();
        }
    }
    let all = store
        .output_page_filtered(&run, 1, 3, &OutputFilter::default())
        .unwrap();
    assert_eq!(all.lines.iter().map(|l| l.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!((all.next_seq, all.total), (Some(4), 10_000));

    let stderr = OutputFilter {
        stream: Some(Stream::Stderr),
        node: None,
    };
    let page = store.output_page_filtered(&run, 25, 2, &stderr).unwrap();
    assert_eq!(page.lines.iter().map(|l| l.seq).collect::<Vec<_>>(), [30, 40]);
    assert_eq!(page.next_seq, Some(41));

    let check = OutputFilter {
        node: Some("check".into()),
        stream: None,
    };
    let tail = store.output_page_filtered(&run, 9_981, 100, &check).unwrap();
    assert_eq!(tail.lines.iter().map(|l| l.seq).collect::<Vec<_>>(), [9_990, 10_000]);
    assert_eq!(tail.next_seq, None, "the end of the output");
    let nothing = OutputFilter {
        node: Some("absent".into()),
        stream: None,
    };
    assert!(store
        .output_page_filtered(&run, 1, 10, &nothing)
        .unwrap()
        .lines
        .is_empty());
    let missing = store.output_page_filtered("no-such-run", 1, 10, &check).unwrap_err();
    assert_eq!(missing.code(), "run_not_found");
}

#[test]
fn a_filtered_page_over_a_huge_output_returns_early_and_says_where_to_go_on() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::memory()).unwrap();
    let session = id("1795952600000_big1");
    let run = start_run(&store, &s.workspace, &session, "big");
    let total = 450_000i64;
    {
        let mut writer = store.output_writer(&run).unwrap();
        for i in 1..=total {
            let node = if i == total { "rare" } else { "common" };
            writer.append(Stream::Stdout, 0, Some(node), "x").unwrap();
        }
    }
    let rare = OutputFilter {
        node: Some("rare".into()),
        stream: None,
    };
    // Each page passes over at most 200,000 lines that do not match, then says where to go on.
    let (mut from, mut pages, mut found) = (Some(1), 0, Vec::new());
    while let Some(seq) = from {
        let page = store.output_page_filtered(&run, seq, 10, &rare).unwrap();
        found.extend(page.lines.iter().map(|l| l.seq));
        from = page.next_seq;
        pages += 1;
    }
    assert_eq!(found, [total]);
    assert!((3..=4).contains(&pages), "{pages} pages");
    // Without a filter, a page is as long as asked.
    let all = store.output_page(&run, 1, 300_000).unwrap();
    assert_eq!(all.len(), 300_000);
}

#[test]
fn find_in_output_reads_forward_or_back_ignoring_case_and_escapes_and_goes_on_past_its_budget() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::memory()).unwrap();
    let session = id("1795952600000_fnd1");
    let run = start_run(&store, &s.workspace, &session, "find");
    let total = FIND_BUDGET_LINES as i64 * 2 + 1_000;
    {
        let mut writer = store.output_writer(&run).unwrap();
        for i in 1..=total {
            let text = match i {
                10 => "the \x1b[31mNeedle\x1b[0m in red".to_owned(),
                20 => "needle".to_owned(),
                _ if i == total - 5 => "Ünïcode NEEDLE at the end".to_owned(),
                // A word split by an escape.
                30 => "nee\x1b[1mdle".to_owned(),
                // An escape cut short at the line's end, then a match on the next line.
                40 => "cut short \x1b[".to_owned(),
                41 => "a needle after it".to_owned(),
                // Letters whose lower case is ASCII: the Kelvin sign, and İ.
                _ if i == total - 50 => "\u{212A}ELVIN and \u{130}stanbul".to_owned(),
                _ => format!("line {i}"),
            };
            writer.append(Stream::Stdout, i as u64, None, &text).unwrap();
        }
    }
    let find = |from: i64, backward: bool, query: &str| store.output_find(&run, from, backward, query).unwrap();
    assert_eq!(find(1, false, "NEEDLE").seq, Some(10), "case and colours ignored");
    assert_eq!(find(11, false, "needle").seq, Some(20));
    assert_eq!(
        find(21, false, "needle").seq,
        Some(30),
        "an escape inside the word does not hide it"
    );
    assert_eq!(
        find(31, false, "needle").seq,
        Some(41),
        "an escape cut short does not swallow the next line"
    );
    assert_eq!(find(29, true, "needle").seq, Some(20), "backward, from the line before");
    assert_eq!(find(9, true, "needle").seq, None, "nothing above line 10");
    assert_eq!(find(1, false, "[31m").seq, None, "the escapes themselves are not text");
    assert_eq!(find(1, false, "ünïcode").seq, None, "not within the first budget");

    // Past the budget: each call says where to go on, until the line near the end.
    let (mut from, mut calls) = (42, 0);
    let found = loop {
        let step = find(from, false, "ünïcode needle");
        calls += 1;
        assert!(step.scanned <= FIND_BUDGET_LINES + 4_096, "{step:?}");
        match (step.seq, step.next_seq) {
            (Some(seq), _) => break seq,
            (None, Some(next)) => from = next,
            (None, None) => panic!("not found"),
        }
    };
    assert_eq!(found, total - 5);
    assert!(
        calls >= 2,
        "a million lines are more than one call reads: {calls} calls"
    );
    assert_eq!(
        find(total - 4, false, "needle"),
        OutputFind {
            seq: None,
            next_seq: None,
            scanned: 5
        }
    );
    // In a block without escapes (searched whole): from the line itself, backward, across lines.
    assert_eq!(find(total - 5, false, "needle").seq, Some(total - 5));
    assert_eq!(find(total, true, "NEEDLE AT").seq, Some(total - 5));
    let back = find(total - 6, true, "ünïcode");
    assert_eq!(
        (back.seq, back.next_seq.is_some()),
        (None, true),
        "backward, on past the budget: {back:?}"
    );
    assert_eq!(
        find(total - 200, false, "0901\nline 1000902").seq,
        None,
        "a match never spans two lines"
    );
    assert_eq!(find(total - 100, false, "line 1000901").seq, Some(total - 99));
    assert_eq!(
        find(total - 100, false, "kelvin").seq,
        Some(total - 50),
        "as JavaScript lowers the Kelvin sign"
    );
    assert_eq!(find(total - 100, false, "stanbul").seq, Some(total - 50));
    assert_eq!(
        find(total - 100, false, "i\u{307}stanbul").seq,
        Some(total - 50),
        "İ lowers to i and a dot"
    );
    assert_eq!(
        store.output_find("no-such-run", 1, false, "x").unwrap_err().code(),
        "run_not_found"
    );
}

#[test]
fn a_listed_session_counts_its_messages_and_names_its_live_run() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let session = id("1795952600000_liv1");
    make_folder(&s.workspace, session.as_str());
    for text in ["first", "second"] {
        store
            .message_append(&s.workspace, &session, "user", text, SystemTime::now())
            .unwrap();
    }
    let run = start_run(&store, &s.workspace, &session, "first");
    let row = |store: &Store| store.list_sessions(&s.workspace, SystemTime::now()).unwrap().remove(0);
    assert_eq!(
        (row(&store).messages, row(&store).live_run.as_deref()),
        (2, Some(run.as_str()))
    );
    finish(&store, &run, Status::Success);
    assert_eq!(row(&store).live_run, None, "an ended run is not live");
}

#[test]
fn recent_workspaces_are_the_opened_ones_most_recent_first() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let other_dir = tempfile::TempDir::new().unwrap();
    let other = Workspace::open(other_dir.path()).unwrap();
    let t0 = SystemTime::now();
    assert!(store.recent_workspaces(10).unwrap().is_empty());
    // A workspace the store knows only through a session was never opened in the window.
    store
        .message_append(&other, &id("1795952600000_msg9"), "user", "hi", t0)
        .unwrap();
    assert!(store.recent_workspaces(10).unwrap().is_empty());
    store.workspace_opened(&s.workspace, t0).unwrap();
    store.workspace_opened(&other, t0 + Duration::from_secs(1)).unwrap();
    assert_eq!(
        store.recent_workspaces(10).unwrap(),
        [other.root().to_path_buf(), s.workspace.root().to_path_buf()]
    );
    store
        .workspace_opened(&s.workspace, t0 + Duration::from_secs(2))
        .unwrap();
    drop(store);
    let reopened = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    assert_eq!(
        reopened.recent_workspaces(1).unwrap(),
        [s.workspace.root().to_path_buf()]
    );
}

fn uuid_version(id: &str) -> u32 {
    id.chars().nth(14).and_then(|c| c.to_digit(16)).unwrap()
}

#[test]
fn delete_removes_every_row_of_the_session_and_moves_its_folder() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let doomed = id("1795952600000_del1");
    let kept = id("1795952600000_keep");
    let folder = make_folder(&s.workspace, doomed.as_str());
    for session in [&doomed, &kept] {
        store
            .message_append(&s.workspace, session, "user", "hello there", SystemTime::now())
            .unwrap();
        let run = start_run(&store, &s.workspace, session, "hello there");
        let span = store
            .span_start(&run, None, "plan", "node", 0, SystemTime::now())
            .unwrap();
        store.span_end(span, Status::Success, SystemTime::now()).unwrap();
        store
            .output_writer(&run)
            .unwrap()
            .append(Stream::Stdout, 1, None, "uniqueword output")
            .unwrap();
        store
            .log(
                &s.workspace,
                session,
                Some(&run),
                Level::Info,
                "run.started",
                "go",
                serde_json::Value::Null,
                SystemTime::now(),
            )
            .unwrap();
        finish(&store, &run, Status::Success);
    }
    store.pin(&s.workspace, &doomed, SystemTime::now()).unwrap();
    while store.index_pending(10).unwrap() > 0 {}
    let trash = s.db.parent().unwrap().join("trash");
    std::fs::create_dir_all(&trash).unwrap();
    store
        .session_delete(&s.workspace, &doomed, |path| {
            std::fs::rename(path, trash.join(path.file_name().unwrap())).map_err(|e| Error::io_write(path, e))
        })
        .unwrap();
    assert!(
        !folder.exists() && trash.join(doomed.as_str()).exists(),
        "the folder was moved, not destroyed"
    );
    // Checked in SQL, not through the API: nothing of the deleted session is left anywhere.
    for (table, sql) in [
        (
            "sessions",
            "SELECT count(*) FROM sessions WHERE session_id = '1795952600000_del1'",
        ),
        (
            "runs",
            "SELECT count(*) FROM runs WHERE session_key NOT IN (SELECT key FROM sessions)",
        ),
        (
            "messages",
            "SELECT count(*) FROM messages WHERE session_key NOT IN (SELECT key FROM sessions)",
        ),
        (
            "logs",
            "SELECT count(*) FROM logs WHERE session_key NOT IN (SELECT key FROM sessions)",
        ),
        (
            "output_blocks",
            "SELECT count(*) FROM output_blocks WHERE run_key NOT IN (SELECT key FROM runs)",
        ),
        (
            "spans",
            "SELECT count(*) FROM spans WHERE run_id NOT IN (SELECT id FROM runs)",
        ),
        (
            "search",
            "SELECT count(*) FROM search_text WHERE search_text MATCH 'uniqueword'",
        ),
    ] {
        let expected = if table == "search" { 1 } else { 0 };
        assert_eq!(count(&s.db, sql), expected, "{table}");
    }
    assert_eq!(
        count(&s.db, "SELECT count(*) FROM runs"),
        1,
        "the other session keeps its run"
    );
    assert_eq!(count(&s.db, "SELECT count(*) FROM output_blocks"), 1);
    let err = store.session_delete(&s.workspace, &doomed, |_| Ok(())).unwrap_err();
    assert!(matches!(err, Error::SessionNotFound { .. }), "{err}");
}

#[test]
fn a_session_with_a_live_run_cannot_be_deleted() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let session = id("1795952600000_live");
    let folder = make_folder(&s.workspace, session.as_str());
    let run = start_run(&store, &s.workspace, &session, "go");
    let err = store
        .session_delete(&s.workspace, &session, |_| panic!("must not touch the folder"))
        .unwrap_err();
    assert!(matches!(err, Error::SessionLive { .. }));
    assert!(err.to_string().contains("stop it first"), "{err}");
    assert!(folder.exists());
    assert_eq!(store.runs(&s.workspace, Some(&session)).unwrap()[0].id, run);
}

/// A run the studio did not start (the agent from a terminal) is not in the store: its session
/// is refused as a studio run's is while its folder reads `running`, and its folder is untouched.
#[test]
fn a_session_running_outside_the_studio_cannot_be_deleted() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let mut terminal = Command::new(crate::harness::agent_binary())
        .args(["run", "--nodes", "plan:100,write:60000"])
        .current_dir(s.workspace.root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sessions = s.workspace.sessions_dir();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let session = loop {
        let found = std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .find(|e| e.path().join("plan").is_dir());
        if let Some(entry) = found {
            break id(&entry.file_name().to_string_lossy());
        }
        assert!(std::time::Instant::now() < deadline, "the agent ended its first node");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = store
        .session_delete(&s.workspace, &session, |_| panic!("must not touch the folder"))
        .unwrap_err();
    terminal.kill().unwrap();
    terminal.wait().unwrap();
    assert!(matches!(err, Error::SessionRunningOutside { .. }), "{err}");
    assert_eq!(err.code().as_str(), "session_live");
    assert!(err.to_string().contains("stop it first"), "{err}");
    assert!(
        s.workspace.session_folder(&session).is_ok(),
        "the folder is still there"
    );
}

#[test]
fn search_finds_words_of_any_language_and_names_where() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let session = id("1795952600000_srch");
    store
        .message_append(
            &s.workspace,
            &session,
            "user",
            "Réserve un hôtel à Kyōto",
            SystemTime::now(),
        )
        .unwrap();
    let run = start_run(&store, &s.workspace, &session, "go");
    store
        .span_start(&run, None, "research_hotels", "node", 0, SystemTime::now())
        .unwrap();
    {
        let mut writer = store.output_writer(&run).unwrap();
        writer
            .append(Stream::Stdout, 1, Some("research_hotels"), "nothing here")
            .unwrap();
        writer
            .append(
                Stream::Stderr,
                2,
                Some("research_hotels"),
                "Ошибка: гостиница не найдена",
            )
            .unwrap();
    }
    let other = Workspace::open(s.db.parent().unwrap()).unwrap();
    store
        .message_append(
            &other,
            &id("1795952600000_othr"),
            "user",
            "гостиница elsewhere",
            SystemTime::now(),
        )
        .unwrap();

    let hits = store.search(&s.workspace, "гостиница", 10).unwrap();
    assert_eq!(hits.len(), 1, "only this workspace: {hits:?}");
    let hit = &hits[0];
    assert_eq!(
        (hit.kind.as_str(), hit.session_id.as_str(), hit.line),
        ("output", "1795952600000_srch", 2)
    );
    assert_eq!(hit.run_id.as_deref(), Some(run.as_str()));
    assert_eq!(hit.node.as_deref(), Some("research_hotels"));
    // Accents folded, prefixes matched, node names found.
    let hotel = store.search(&s.workspace, "hotel", 10).unwrap();
    assert!(hotel.iter().any(|h| h.kind == "message" && h.line == 1), "{hotel:?}");
    assert_eq!(store.search(&s.workspace, "kyoto", 10).unwrap().len(), 1);
    assert_eq!(store.search(&s.workspace, "research_hot", 10).unwrap()[0].kind, "node");
    // Query syntax is text, not an error.
    assert!(store.search(&s.workspace, "\"unbalanced AND (", 10).unwrap().is_empty());
}

#[test]
fn recovery_interrupts_runs_whose_processes_are_gone_and_detaches_live_ones() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    // A real process group that outlives "the studio": a sleep in its own group.
    let mut sleeper = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
    let live_session = id("1795952600000_detc");
    let dead_session = id("1795952600000_dead");
    let live = start_run(&store, &s.workspace, &live_session, "go");
    store.run_set_process(&live, sleeper.id(), sleeper.id()).unwrap();
    let dead = start_run(&store, &s.workspace, &dead_session, "go");
    // A process group id no process has (beyond pid_max).
    store.run_set_process(&dead, 4_194_000, 4_194_000).unwrap();
    // The studio process that owned both runs died: point their owner at a pid that is gone.
    Connection::open(&s.db)
        .unwrap()
        .execute("UPDATE runs SET owner_pid = 4194001", [])
        .unwrap();

    let recovered = store
        .recover(
            studio_core::process::process_alive,
            studio_core::process::group_alive,
            SystemTime::now(),
        )
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let status_of = |run: &str| recovered.iter().find(|r| r.run_id == run).map(|r| r.status);
    assert_eq!(status_of(&dead), Some(Status::Interrupted));
    assert_eq!(status_of(&live), Some(Status::Running));
    let dead_run = store.run(&dead).unwrap();
    assert_eq!(dead_run.status, Status::Interrupted);
    assert!(dead_run.ended_at.is_some());
    let live_run = store.run(&live).unwrap();
    assert!(live_run.detached && live_run.status == Status::Running);
    assert_eq!(live_run.process_group, Some(i64::from(sleeper.id())));
    let logs = store.logs(&s.workspace, &dead_session).unwrap();
    assert_eq!(logs.last().unwrap().event, "run.interrupted");
    // Runs of this very process are its own, not a dead studio's.
    let mine = start_run(&store, &s.workspace, &live_session, "again");
    let again = store.recover(|_| false, |_| false, SystemTime::now()).unwrap();
    assert!(again.iter().all(|r| r.run_id != mine), "{again:?}");
}

#[test]
fn a_writer_killed_mid_output_loses_nothing_it_committed() {
    let s = store_setup();
    drop(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
    let writer = example_binary("store_writer");
    let mut child = Command::new(&writer)
        .arg(&s.db)
        .arg(s.workspace.root())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", writer.display()));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let run = lines.next().unwrap().unwrap().strip_prefix("run ").unwrap().to_owned();
    let mut committed = 0;
    while committed < 20_000 {
        let line = lines.next().unwrap().unwrap();
        committed = line.strip_prefix("committed ").unwrap().parse::<i64>().unwrap();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let stored = count(
        &s.db,
        &format!("SELECT COALESCE(SUM(line_count), 0) FROM output_blocks WHERE run_key = (SELECT key FROM runs WHERE id = '{run}')"),
    );
    assert!(stored >= committed, "{stored} lines stored, {committed} were committed");
    let last = store.output_page(&run, stored, 1).unwrap();
    assert_eq!(last[0].text, format!("line {stored} of a run that never ends"));
    let recovered = store
        .recover(
            studio_core::process::process_alive,
            studio_core::process::group_alive,
            SystemTime::now(),
        )
        .unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(
        store.run(&run).unwrap().status,
        Status::Interrupted,
        "never shown running forever"
    );
    count(
        &s.db,
        "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'",
    );
}

/// Built by `cargo test` alongside the tests (`crates/core/examples/`).
fn example_binary(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_owned();
    let path = deps.parent().unwrap().join("examples").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test`, which builds the examples",
        path.display()
    );
    path
}

#[test]
fn two_processes_write_the_same_file_at_once() {
    let s = store_setup();
    drop(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
    let writer = example_binary("store_writer");
    // Two writer processes on one file (as the app and a `zstudio run` are), each committing
    // batches of output while the other does.
    let mut children: Vec<_> = (0..2)
        .map(|_| {
            let mut child = Command::new(&writer)
                .arg(&s.db)
                .arg(s.workspace.root())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let lines = BufReader::new(child.stdout.take().unwrap()).lines();
            (child, lines)
        })
        .collect();
    let mut runs = Vec::new();
    for (_, lines) in &mut children {
        runs.push(lines.next().unwrap().unwrap().strip_prefix("run ").unwrap().to_owned());
    }
    let mut committed = [0i64; 2];
    while committed.iter().any(|&c| c < 10_000) {
        for (i, (_, lines)) in children.iter_mut().enumerate() {
            if committed[i] < 10_000 {
                let line = lines.next().unwrap().unwrap();
                committed[i] = line.strip_prefix("committed ").unwrap().parse().unwrap();
            }
        }
    }
    for (child, _) in &mut children {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    for (run, committed) in runs.iter().zip(committed) {
        assert!(
            store.output_line_count(run).unwrap() >= committed,
            "run {run} kept its committed lines"
        );
    }
}

#[test]
fn search_finds_one_word_in_a_hundred_megabytes_of_output() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let session = id("1795952600000_big1");
    let run = start_run(&store, &s.workspace, &session, "go");
    let mut bytes = 0usize;
    let mut line = 0i64;
    {
        let mut writer = store.output_writer(&run).unwrap();
        while bytes < 100_000_000 {
            line += 1;
            let text = if line == 654_321 {
                "the needle is a quokkaphant, once".to_owned()
            } else {
                format!(
                    "line {line}: the agent read src/module_{}.rs and found {} symbols",
                    line % 97,
                    line % 13
                )
            };
            bytes += text.len() + 1;
            writer.append(Stream::Stdout, line as u64, Some("work"), &text).unwrap();
        }
    }
    let hits = store.search(&s.workspace, "quokkaphant", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!((hits[0].line, hits[0].node.as_deref()), (654_321, Some("work")));
    assert_eq!(store.output_line_count(&run).unwrap(), line);
    let page = store.output_page(&run, 654_320, 3).unwrap();
    assert_eq!(page[1].text, "the needle is a quokkaphant, once");
}

#[test]
fn retention_keeps_pinned_sessions_and_says_what_it_would_delete() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let now = SystemTime::now();
    for (i, age_days) in [0u64, 2, 5, 10, 40].iter().enumerate() {
        let path = make_folder(&s.workspace, &format!("1795952600000_age{i}"));
        let time = now - Duration::from_secs(age_days * 86_400);
        for file in [path.join(".session-info.json"), path.join("plan"), path.clone()] {
            std::fs::File::open(&file).unwrap().set_modified(time).unwrap();
        }
    }
    store.pin(&s.workspace, &id("1795952600000_age4"), now).unwrap();
    let sessions = store.list_sessions(&s.workspace, now).unwrap();
    let ids = |rule, include_tagged| {
        plan(&sessions, rule, now, include_tagged)
            .doomed
            .into_iter()
            .map(|d| d.session_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(Rule::KeepDays(7), false),
        ["1795952600000_age3"],
        "the 40-day-old one is pinned"
    );
    assert_eq!(
        ids(Rule::KeepLast(2), false),
        ["1795952600000_age2", "1795952600000_age3"]
    );
    assert!(ids(Rule::KeepLast(10), false).is_empty());
    // A tag or a note keeps a session too, unless asked; a pin, always.
    let tag = [studio_core::label::Tag::parse("keep me").unwrap()];
    store.tag(&s.workspace, &id("1795952600000_age2"), &tag, now).unwrap();
    store
        .set_note(&s.workspace, &id("1795952600000_age3"), Some("why it failed"), now)
        .unwrap();
    let sessions = store.list_sessions(&s.workspace, now).unwrap();
    let kept = plan(&sessions, Rule::KeepLast(1), now, false);
    let doomed: Vec<&str> = kept.doomed.iter().map(|d| d.session_id.as_str()).collect();
    assert_eq!(doomed, ["1795952600000_age1"]);
    assert_eq!((kept.kept_pinned, kept.kept_tagged), (1, 2));
    let all = plan(&sessions, Rule::KeepLast(1), now, true);
    let doomed: Vec<&str> = all.doomed.iter().map(|d| d.session_id.as_str()).collect();
    assert_eq!(
        doomed,
        ["1795952600000_age1", "1795952600000_age2", "1795952600000_age3"]
    );
    assert_eq!((all.kept_pinned, all.kept_tagged), (1, 0));
}

#[test]
fn the_index_rereads_only_changed_folders() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let folder = make_folder(&s.workspace, "1795952600000_idx1");
    let old = SystemTime::now() - Duration::from_secs(3600);
    for path in [folder.join(".session-info.json"), folder.join("plan"), folder.clone()] {
        std::fs::File::open(&path).unwrap().set_modified(old).unwrap();
    }
    let first = store.list_sessions(&s.workspace, SystemTime::now()).unwrap();
    assert_eq!(first[0].summary.current_node.as_deref(), Some("plan"));
    assert_eq!(count(&s.db, "SELECT count(*) FROM folder_index"), 1);
    // Tamper with the cached summary: an unchanged folder is served from the index...
    Connection::open(&s.db)
        .unwrap()
        .execute(
            "UPDATE folder_index SET summary = replace(summary, '\"plan\"', '\"cached\"')",
            [],
        )
        .unwrap();
    let second = store.list_sessions(&s.workspace, SystemTime::now()).unwrap();
    assert_eq!(
        second[0].summary.current_node.as_deref(),
        Some("cached"),
        "served from the index"
    );
    // ...and a changed one is read again.
    std::fs::write(folder.join(".session-info.json"), r#"{"currentNode":"write"}"#).unwrap();
    let third = store.list_sessions(&s.workspace, SystemTime::now()).unwrap();
    assert_eq!(third[0].summary.current_node.as_deref(), Some("write"));
    std::fs::remove_dir_all(&folder).unwrap();
    assert!(store.list_sessions(&s.workspace, SystemTime::now()).unwrap().is_empty());
    assert_eq!(
        count(&s.db, "SELECT count(*) FROM folder_index"),
        0,
        "a folder that is gone leaves the index"
    );
}

#[test]
fn a_new_store_opened_by_many_at_once_is_migrated_once_without_errors() {
    for _ in 0..5 {
        let s = store_setup();
        let location = StoreLocation::File(s.db.clone());
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    barrier.wait();
                    // Each its own connection, as separate app and CLI processes have.
                    Store::open(&location).expect("opening a new store at the same time as others");
                });
            }
        });
        assert_eq!(count(&s.db, "SELECT count(*) FROM pragma_user_version"), 1);
        let version: i64 = Connection::open(&s.db)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }
}

#[test]
fn the_watcher_keeps_the_index_current() {
    use studio_core::watcher::{Watcher, WatcherOptions};
    let s = store_setup();
    let store = std::sync::Arc::new(Store::open(&StoreLocation::File(s.db.clone())).unwrap());
    let watcher = Watcher::start(
        vec![s.workspace.clone()],
        studio_core::store::index::keeping_current(store.clone(), &[], std::sync::Arc::new(|_| {})),
        WatcherOptions::default(),
    )
    .unwrap();
    let indexed = |id: &str| {
        count(
            &s.db,
            &format!("SELECT count(*) FROM folder_index WHERE session_id = '{id}'"),
        )
    };
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting: {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let folder = make_folder(&s.workspace, "1795952600000_wat1");
    wait("the new session in the index", &|| indexed("1795952600000_wat1") == 1);
    std::fs::write(folder.join(".session-info.json"), r#"{"currentNode":"write"}"#).unwrap();
    wait("the change in the index", &|| {
        count(
            &s.db,
            "SELECT count(*) FROM folder_index WHERE session_id = '1795952600000_wat1' AND summary LIKE '%\"write\"%'",
        ) == 1
    });
    std::fs::remove_dir_all(&folder).unwrap();
    wait("the removal in the index", &|| indexed("1795952600000_wat1") == 0);
    drop(watcher);
}

#[test]
fn a_listed_session_takes_the_status_of_its_last_run_not_an_earlier_one() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let session = id("1795952600000_last");
    make_folder(&s.workspace, session.as_str());
    let status = || {
        store.list_sessions(&s.workspace, SystemTime::now()).unwrap()[0]
            .summary
            .status
    };
    let first = start_run(&store, &s.workspace, &session, "first");
    finish(&store, &first, Status::Cancelled);
    assert_eq!(
        status(),
        Status::Cancelled,
        "the folder cannot tell; the ended run does"
    );
    std::thread::sleep(Duration::from_millis(5));
    let second = start_run(&store, &s.workspace, &session, "again");
    assert_eq!(status(), Status::Running, "the later run is live");
    finish(&store, &second, Status::Error);
    assert_eq!(status(), Status::Error, "the last run decides, not the first");
}

#[test]
fn a_run_left_to_settle_is_claimed_by_one_process_alone() {
    let s = store_setup();
    let store = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    let run = start_run(&store, &s.workspace, &id("1777678254943_clm1"), "go");
    store.run_detach(&run).unwrap();
    // Two studio processes find it: one claims it, the other leaves it.
    let other = Store::open(&StoreLocation::File(s.db.clone())).unwrap();
    assert!(store.claim_run(&run, None).unwrap());
    assert!(!other.claim_run(&run, None).unwrap());
    finish(&store, &run, Status::Success);
    assert!(
        !store.claim_run(&run, Some(i64::from(std::process::id()))).unwrap(),
        "an ended run is nobody's to settle"
    );
}

/// The catalogue's counts are reads: asked about a workspace the store never saw, while another
/// process holds the store's write lock (a `zstudio` writing), they answer at once and make no
/// row (they once inserted the workspace's row first, waiting the store's 10 s busy time for the
/// lock and then failing "database is locked").
#[test]
fn the_catalogues_counts_read_without_writing() {
    let setup = store_setup();
    let store = Store::open(&StoreLocation::File(setup.db.clone())).unwrap();
    let writer = Connection::open(&setup.db).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert_eq!(store.catalogue_len(&setup.workspace).unwrap(), 0);
    assert!(!store.catalogue_holds(&setup.workspace).unwrap());
    assert_eq!(store.catalogue_usage(&setup.workspace).unwrap(), None);
    writer.execute_batch("ROLLBACK").unwrap();
    let rows: i64 = writer
        .query_row("SELECT count(*) FROM workspaces", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0, "no workspace row made by a read");
}
