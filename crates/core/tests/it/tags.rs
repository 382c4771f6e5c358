//! Tags, notes and saved views (issue 44, points 5, 6 and 8), on a real SQLite file and real
//! session folders: kept per session, listed, found by search, filtered, refused past their rules.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::harness::store_setup;
use studio_core::label::Tag;
use studio_core::store::{Filters, Store, StoreLocation};
use studio_core::{ErrorCode, SessionId, Status, Workspace};

fn id(text: &str) -> SessionId {
    SessionId::parse(text).unwrap()
}

fn tags(names: &[&str]) -> Vec<Tag> {
    names.iter().map(|name| Tag::parse(name).unwrap()).collect()
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

fn open(db: &std::path::Path) -> Store {
    Store::open(&StoreLocation::File(db.to_owned())).unwrap()
}

#[test]
fn tags_are_kept_per_session_in_the_order_added_and_every_surface_lists_them() {
    let s = store_setup();
    make_folder(&s.workspace, "s1");
    make_folder(&s.workspace, "s2");
    let now = SystemTime::now();
    {
        let store = open(&s.db);
        assert_eq!(
            store
                .tag(&s.workspace, &id("s1"), &tags(&["bug", "needs review"]), now)
                .unwrap(),
            ["bug", "needs review"]
        );
        // A tag held already stays where it was.
        assert_eq!(
            store.tag(&s.workspace, &id("s1"), &tags(&["bug", "été"]), now).unwrap(),
            ["bug", "needs review", "été"]
        );
        assert_eq!(
            store
                .untag(&s.workspace, &id("s1"), &tags(&["needs review", "absent"]))
                .unwrap(),
            ["bug", "été"]
        );
    }
    // Another process, the same file.
    let store = open(&s.db);
    let rows = store.list_sessions(&s.workspace, now).unwrap();
    let row = |name: &str| rows.iter().find(|row| row.summary.id.as_str() == name).unwrap();
    assert_eq!(row("s1").tags, ["bug", "été"]);
    assert!(row("s2").tags.is_empty());
    let json = serde_json::to_value(row("s1")).unwrap();
    assert_eq!(json["tags"], serde_json::json!(["bug", "été"]));
    assert_eq!(json["has_note"], false);
    assert_eq!(
        store.read_session(&s.workspace, &id("s1"), now).unwrap().tags,
        ["bug", "été"]
    );
    // Another workspace's session of the same id holds none of them.
    let other = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(other.path().join(".zibby/output/sessions")).unwrap();
    let other = Workspace::open(other.path()).unwrap();
    assert!(store.tags(&other, &id("s1")).unwrap().is_empty());
}

#[test]
fn a_session_takes_at_most_32_tags_and_a_refusal_adds_none() {
    let s = store_setup();
    make_folder(&s.workspace, "s1");
    let store = open(&s.db);
    let thirty: Vec<String> = (0..30).map(|n| format!("t{n}")).collect();
    let thirty: Vec<&str> = thirty.iter().map(String::as_str).collect();
    store
        .tag(&s.workspace, &id("s1"), &tags(&thirty), SystemTime::now())
        .unwrap();
    let error = store
        .tag(
            &s.workspace,
            &id("s1"),
            &tags(&["a", "b", "c", "t0"]),
            SystemTime::now(),
        )
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::TooManyTags);
    assert!(
        error.to_string().contains("33 tags") && error.to_string().contains("at most 32"),
        "{error}"
    );
    assert_eq!(store.tags(&s.workspace, &id("s1")).unwrap().len(), 30);
    store
        .tag(&s.workspace, &id("s1"), &tags(&["a", "b"]), SystemTime::now())
        .unwrap();
    assert_eq!(store.tags(&s.workspace, &id("s1")).unwrap().len(), 32);
}

#[test]
fn a_note_is_kept_found_by_search_and_forgotten_with_its_session() {
    let s = store_setup();
    make_folder(&s.workspace, "s1");
    // s2 has no folder (a folder just written reads as running, and a running session is not
    // deleted): the store's row alone.
    let store = open(&s.db);
    let now = SystemTime::now();
    store
        .set_note(
            &s.workspace,
            &id("s1"),
            Some("first line\nthe flaky ocelot test again"),
            now,
        )
        .unwrap();
    assert_eq!(
        store.note(&s.workspace, &id("s1")).unwrap().as_deref(),
        Some("first line\nthe flaky ocelot test again")
    );
    let hits = store.search(&s.workspace, "ocelot flaky", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        (hits[0].kind, hits[0].session_id.as_str(), hits[0].line),
        (studio_core::store::SearchHitKind::Note, "s1", 2)
    );
    assert_eq!(hits[0].text, "the flaky ocelot test again");
    let row = store.list_sessions(&s.workspace, now).unwrap();
    assert!(row.iter().any(|row| row.summary.id.as_str() == "s1" && row.has_note));
    // A new note replaces the old one in the index too.
    store
        .set_note(&s.workspace, &id("s1"), Some("a pangolin now"), now)
        .unwrap();
    assert!(store.search(&s.workspace, "ocelot", 10).unwrap().is_empty());
    assert_eq!(store.search(&s.workspace, "pangolin", 10).unwrap().len(), 1);
    // Too large: refused, the note as it was.
    let error = store
        .set_note(&s.workspace, &id("s1"), Some(&"x".repeat(64 * 1024 + 1)), now)
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::NoteTooLarge);
    assert_eq!(
        store.note(&s.workspace, &id("s1")).unwrap().as_deref(),
        Some("a pangolin now")
    );
    store
        .set_note(&s.workspace, &id("s1"), Some(&"x".repeat(64 * 1024)), now)
        .unwrap();
    store
        .set_note(&s.workspace, &id("s2"), Some("the pangolin of s2"), now)
        .unwrap();
    // Removing a note: none, and not found.
    store.set_note(&s.workspace, &id("s1"), None, now).unwrap();
    assert_eq!(store.note(&s.workspace, &id("s1")).unwrap(), None);
    // Deleting a session takes its note out of the index.
    store.session_delete(&s.workspace, &id("s2"), |_| Ok(())).unwrap();
    assert!(store.search(&s.workspace, "pangolin", 10).unwrap().is_empty());
}

#[test]
fn tag_words_in_a_search_keep_the_hits_of_sessions_so_tagged() {
    let s = store_setup();
    for session in ["s1", "s2", "s3"] {
        make_folder(&s.workspace, session);
    }
    let store = open(&s.db);
    let now = SystemTime::now();
    for session in ["s1", "s2", "s3"] {
        store
            .set_note(&s.workspace, &id(session), Some("a lynx was seen"), now)
            .unwrap();
    }
    store
        .tag(&s.workspace, &id("s1"), &tags(&["bug", "prod"]), now)
        .unwrap();
    store.tag(&s.workspace, &id("s2"), &tags(&["bug"]), now).unwrap();
    let sessions = |query: &str| -> Vec<String> {
        let mut found: Vec<String> = store
            .search(&s.workspace, query, 10)
            .unwrap()
            .into_iter()
            .map(|hit| hit.session_id)
            .collect();
        found.sort();
        found
    };
    assert_eq!(sessions("lynx"), ["s1", "s2", "s3"]);
    assert_eq!(sessions("lynx tag:bug"), ["s1", "s2"]);
    assert_eq!(sessions("tag:prod lynx tag:bug"), ["s1"]);
    assert!(sessions("lynx tag:nobody").is_empty());
    // Tags alone: the sessions holding them, one hit each.
    let hits = store.search(&s.workspace, "tag:bug", 10).unwrap();
    assert_eq!(hits.len(), 2);
    assert!(
        hits.iter()
            .all(|hit| hit.kind == studio_core::store::SearchHitKind::Tag),
        "{hits:?}"
    );
    assert_eq!(sessions("tag:bug tag:prod"), ["s1"]);
}

#[test]
fn saved_views_are_kept_per_workspace_and_filter_a_listing() {
    let s = store_setup();
    for session in ["s1", "s2", "s3"] {
        make_folder(&s.workspace, session);
    }
    let store = open(&s.db);
    let now = SystemTime::now();
    store.tag(&s.workspace, &id("s1"), &tags(&["bug"]), now).unwrap();
    store.tag(&s.workspace, &id("s2"), &tags(&["bug"]), now).unwrap();
    store.pin(&s.workspace, &id("s2"), now).unwrap();
    store
        .set_note(&s.workspace, &id("s3"), Some("the marmot run"), now)
        .unwrap();
    let bugs = Filters {
        tags: tags(&["bug"]),
        ..Filters::default()
    };
    store.view_save(&s.workspace, "bugs", &bugs, now).unwrap();
    store
        .view_save(
            &s.workspace,
            "pinned bugs",
            &Filters {
                pinned: true,
                ..bugs.clone()
            },
            now,
        )
        .unwrap();
    let marmot = Filters {
        search: Some("marmot".to_owned()),
        ..Filters::default()
    };
    store.view_save(&s.workspace, "marmot", &marmot, now).unwrap();
    let names: Vec<String> = store
        .views(&s.workspace)
        .unwrap()
        .into_iter()
        .map(|view| view.name)
        .collect();
    assert_eq!(names, ["bugs", "marmot", "pinned bugs"]);
    let through = |name: &str| -> Vec<String> {
        let filters = store.view(&s.workspace, name).unwrap().filters;
        let rows = store.list_sessions(&s.workspace, now).unwrap();
        let mut ids: Vec<String> = store
            .filter_sessions(&s.workspace, rows, &filters)
            .unwrap()
            .into_iter()
            .map(|row| row.summary.id.to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(through("bugs"), ["s1", "s2"]);
    assert_eq!(through("pinned bugs"), ["s2"]);
    assert_eq!(through("marmot"), ["s3"]);
    // A status: the sessions of that status (the folders, all alike, read the same).
    let listed = store.list_sessions(&s.workspace, now).unwrap();
    let status = listed[0].summary.status;
    assert!(listed.iter().all(|row| row.summary.status == status));
    let filters = Filters {
        status: Some(status),
        ..bugs.clone()
    };
    store.view_save(&s.workspace, "bugs", &filters, now).unwrap();
    assert_eq!(through("bugs"), ["s1", "s2"]);
    let other = if status == Status::Cancelled {
        Status::Error
    } else {
        Status::Cancelled
    };
    store
        .view_save(
            &s.workspace,
            "bugs",
            &Filters {
                status: Some(other),
                ..bugs
            },
            now,
        )
        .unwrap();
    assert!(through("bugs").is_empty());
    store.view_delete(&s.workspace, "bugs").unwrap();
    assert_eq!(
        store.view(&s.workspace, "bugs").unwrap_err().code(),
        ErrorCode::ViewNotFound
    );
    assert_eq!(
        store.view_delete(&s.workspace, "bugs").unwrap_err().code(),
        ErrorCode::ViewNotFound
    );
    let error = store
        .view_save(&s.workspace, " padded", &Filters::default(), now)
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidViewName);
    // Another workspace has none of them.
    let other = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(other.path().join(".zibby/output/sessions")).unwrap();
    assert!(store.views(&Workspace::open(other.path()).unwrap()).unwrap().is_empty());
}

/// `zstudio tag`, `note` and `view` go through the app service's methods (`Methods`), answered
/// here by `Studio::for_command`: the store's answers, and nothing started or written besides.
#[test]
fn the_app_service_for_one_command_answers_its_methods_from_the_store_and_starts_nothing() {
    use studio_core::app::Studio;
    use studio_core::remote::methods::Methods;
    let s = store_setup();
    make_folder(&s.workspace, "s1");
    let studio = Studio::for_command(s.workspace.clone(), open(&s.db));
    assert_eq!(
        Methods::tags_add(&studio, "s1".into(), tags(&["bug", "flaky"])).unwrap(),
        ["bug", "flaky"]
    );
    assert_eq!(
        Methods::tags_remove(&studio, "s1".into(), tags(&["bug"])).unwrap(),
        ["flaky"]
    );
    Methods::note_set(&studio, "s1".into(), Some("the wombat run".into())).unwrap();
    assert_eq!(
        Methods::note_get(&studio, "s1".into()).unwrap().as_deref(),
        Some("the wombat run")
    );
    let filters = Filters {
        tags: tags(&["flaky"]),
        ..Filters::default()
    };
    let views = Methods::view_save(&studio, "flaky".into(), filters.clone()).unwrap();
    assert_eq!(
        (views.len(), &views[0].name, &views[0].filters),
        (1, &"flaky".to_owned(), &filters)
    );
    // What the store holds, as a command opening it again reads it.
    let store = open(&s.db);
    assert_eq!(
        store.note(&s.workspace, &id("s1")).unwrap().as_deref(),
        Some("the wombat run")
    );
    assert_eq!(store.views(&s.workspace).unwrap(), views);

    // A session neither the store nor a folder knows is named.
    let missing = Methods::note_get(&studio, "s9".into()).unwrap_err();
    assert_eq!(missing.code(), ErrorCode::SessionNotFound, "{missing}");
    // No supervisor: a run is neither started nor stopped through it.
    let refused = Methods::run_stop(&studio, "0b7e4c4e-0000-4000-8000-000000000000".into(), false).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::ShuttingDown, "{refused}");
    // The workspace is not recorded as a recent one (the window's `Studio::open` records it).
    assert!(store.recent_workspaces(10).unwrap().is_empty());
}
