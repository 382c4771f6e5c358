//! Sharing in the real window: `zstudio open` brings the running window to a session (the
//! single-instance hand-over with `--session`), a `zibby-studio://` link does too, a session
//! imported by `zstudio import` shows in the window like any other, and a bundle, a session
//! folder or a captured log dragged onto the window (by an XDND drag source: drag.rs) is
//! imported and opens. Export… and File > Import… go through the system's file dialogs, typed
//! into on the keyboard: they are tested in a binary of their own (dialogs.rs).

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::bundles::{pipeline_bundle, shows_imported};
use crate::harness::{app_binary, click, eventually, wait_for, zstudio, App, Workspace};
use crate::{text_contents, FANOUT, PIPELINE};

/// `zstudio open <id>` while the window runs: the window comes to that session. Needs a session
/// bus (the single-instance hand-over), as the second-launch test does.
#[tokio::test]
async fn zstudio_open_brings_the_running_window_to_the_session() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run the tests under `dbus-run-session` (scripts/run-tests.sh does)"
    );
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    let (db, data_home) = (workspace.db(), workspace.data_home().to_path_buf());
    let root = workspace.path().to_path_buf();
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        let opened = Command::new(zstudio())
            .args(["open", PIPELINE.id, "--json", "--db"])
            .arg(&db)
            .arg("-w")
            .arg(&root)
            .env("ZIBBY_STUDIO_APP", app_binary())
            .env("XDG_DATA_HOME", &data_home)
            .env("XDG_CONFIG_HOME", data_home.join("config"))
            .stdin(Stdio::null())
            .output()
            .expect("run zstudio open");
        assert!(
            opened.status.success(),
            "zstudio open: {}",
            String::from_utf8_lossy(&opened.stderr)
        );
        let css = format!("#session-view[data-session-id='{}']", PIPELINE.id);
        eventually("the running window shows the session zstudio asked for", || async {
            match client.find(fantoccini::Locator::Css(&css)).await {
                Ok(_) => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    })
    .await;
}

/// A bundle exported from another workspace and imported into the open one with `zstudio import`
/// appears in the window's table, and opens with its nodes.
#[tokio::test]
async fn a_session_imported_from_a_bundle_shows_in_the_window() {
    let (_elsewhere, bundle) = pipeline_bundle();
    let workspace = Workspace::with_sessions(&[FANOUT]);
    let (db, root) = (workspace.db(), workspace.path().to_path_buf());
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        crate::harness::zstudio_in(&db, &root, &["import".as_ref(), bundle.as_os_str()]);
        let row = format!("tr[data-session-id='{}']", PIPELINE.id);
        wait_for(&client, &row).await;
        crate::harness::click(&client, &format!("{row} .session-id")).await;
        // The header says it was imported, and from what.
        shows_imported(&client, PIPELINE.id, "pipeline.zip").await;
        let meta = crate::texts(&client, ".sv-meta").await;
        assert!(meta.iter().any(|m| m.contains("3/3 nodes")), "{meta:?}");
    })
    .await;
}

/// The app started by `zstudio open` (no window running) is started with `--session ID`: its
/// window opens on that session.
#[tokio::test]
async fn the_app_started_on_a_session_opens_it() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    App::run_with_args(&workspace, &["--session", FANOUT.id], |client| async move {
        wait_for(&client, &format!("#session-view[data-session-id='{}']", FANOUT.id)).await;
    })
    .await;
}

/// A `zibby-studio://open?workspace=…&session=…` link opened while the app runs (the desktop
/// starts `zibby-studio <link>`) reaches the running window: it opens that workspace and session.
/// (A workspace opened before: another folder is asked about first, tests/e2e/dialogs.rs.)
#[tokio::test]
async fn a_link_opens_its_workspace_and_session_in_the_running_window() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run the tests under `dbus-run-session` (scripts/run-tests.sh does)"
    );
    let first = Workspace::with_sessions(&[FANOUT]);
    let second = Workspace::with_sessions(&[PIPELINE]);
    let (db, data_home) = (first.db(), first.data_home().to_path_buf());
    let second_root = second.path().canonicalize().unwrap();
    {
        let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.clone())).unwrap();
        let opened = studio_core::Workspace::open(&second_root).unwrap();
        store
            .workspace_opened(
                &opened,
                std::time::SystemTime::now() - std::time::Duration::from_secs(60),
            )
            .unwrap();
    }
    let mut link = url::Url::parse("zibby-studio://open").unwrap();
    link.query_pairs_mut()
        .append_pair("workspace", second_root.to_str().unwrap())
        .append_pair("session", PIPELINE.id);
    let link = link.to_string();
    App::run(&first, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        // The desktop gives the link alone; the store is the app's usual one (here: the test's).
        let status = Command::new(app_binary())
            .arg(&link)
            .env("ZIBBY_STUDIO_DB", &db)
            .env("XDG_DATA_HOME", &data_home)
            .env("XDG_CONFIG_HOME", data_home.join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("open the link");
        assert!(status.success(), "the link's launch hands over and exits: {status}");
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        let shown = crate::texts(&client, ".workspace-path").await;
        assert_eq!(shown, [second_root.display().to_string()]);
    })
    .await;
}

/// Drags `path` from outside the app (as a file manager does) onto the window titled `title`,
/// and drops it there.
fn drop_onto(title: &str, path: &std::path::Path) {
    crate::drag::drop_files(title, &[path]).unwrap_or_else(|e| panic!("drop {} onto the window: {e}", path.display()));
}

/// A bundle exported by `zstudio export`, dragged from outside (a file manager) and dropped onto
/// the window: it is imported, and the window opens it, marked imported, with its nodes.
#[tokio::test]
async fn a_bundle_dropped_onto_the_window_opens_imported() {
    let (_elsewhere, bundle) = pipeline_bundle();
    let workspace = Workspace::with_sessions(&[FANOUT]);
    let title = workspace.window_title();
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        drop_onto(&title, &bundle);
        shows_imported(&client, PIPELINE.id, "pipeline.zip").await;
        let meta = crate::texts(&client, ".sv-meta").await;
        assert!(meta.iter().any(|m| m.contains("3/3 nodes")), "{meta:?}");
        crate::harness::screenshot(&client, "share-bundle-dropped.png").await;
    })
    .await;
}

/// A session folder (as `zibby agent download` leaves one) dropped onto the window is imported
/// as it was, and opens.
#[tokio::test]
async fn a_session_folder_dropped_onto_the_window_opens_imported() {
    let downloads = Workspace::with_sessions(&[PIPELINE]);
    let folder = downloads.path().join(".zibby/output/sessions").join(PIPELINE.id);
    let workspace = Workspace::with_sessions(&[FANOUT]);
    let title = workspace.window_title();
    let imported_into = workspace.path().join(".zibby/output/sessions").join(PIPELINE.id);
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        drop_onto(&title, &folder);
        shows_imported(&client, PIPELINE.id, PIPELINE.id).await;
        let meta = crate::texts(&client, ".sv-meta").await;
        assert!(meta.iter().any(|m| m.contains("3/3 nodes")), "{meta:?}");
        assert!(
            imported_into.join(".session-info.json").is_file(),
            "the folder is copied into the workspace's sessions"
        );
    })
    .await;
}

/// A captured log of a run (a CI job's stdout, saved as `ci-job.log`) dropped onto the window is
/// imported as `zstudio import` imports it: the session its `◆ Session` line names, with the
/// nodes its markers give.
#[tokio::test]
async fn a_captured_log_dropped_onto_the_window_opens_imported() {
    let logs = tempfile::tempdir().expect("a folder for the log");
    let log = logs.path().join("ci-job.log");
    let capture = crate::harness::repo_root().join("tests/fixtures/zibby-captures/head-bb10e85-02-pipeline-markers");
    std::fs::copy(capture.join("stdout.txt"), &log).expect("copy the captured log");
    let workspace = Workspace::empty();
    let title = workspace.window_title();
    App::run(&workspace, move |client| async move {
        wait_for(&client, ".empty").await;
        drop_onto(&title, &log);
        // The run's own session id, from the log.
        shows_imported(&client, PIPELINE.id, "ci-job.log").await;
        let nodes = crate::texts(&client, ".sv-meta").await;
        assert!(nodes.iter().any(|m| m.contains("3/3 nodes")), "{nodes:?}");
    })
    .await;
}

/// What is not a session, dropped onto the window: a zip archive that is not a bundle, a
/// picture, a folder of notes. The window says why each was not imported, naming it (and the
/// archive's entry); nothing is written into the workspace, no session is added.
#[tokio::test]
async fn a_drop_that_is_not_a_session_is_refused_and_nothing_is_written() {
    let elsewhere = tempfile::tempdir().expect("a folder for what is dropped");
    let archive = elsewhere.path().join("holiday-photos.zip");
    write_zip(&archive, "beach.jpg", b"not really a photo");
    let picture = elsewhere.path().join("screenshot.png");
    std::fs::copy(crate::harness::repo_root().join("icons/128x128.png"), &picture).expect("copy a picture");
    let notes = elsewhere.path().join("notes");
    std::fs::create_dir_all(&notes).expect("create a folder of notes");
    std::fs::write(notes.join("todo.txt"), "write the report\n").expect("write a note");
    let workspace = Workspace::with_sessions(&[FANOUT]);
    let title = workspace.window_title();
    let output = workspace.path().join(".zibby/output");
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        let before = folder_listing(&output);
        let refused = [
            (
                &archive,
                vec!["holiday-photos.zip", "beach.jpg", "not a part of a session bundle"],
            ),
            (&picture, vec!["screenshot.png", "not text"]),
            (&notes, vec!["notes", "not a session's"]),
        ];
        for (dropped, named) in refused {
            drop_onto(&title, dropped);
            eventually(
                &format!("the window says why {} was not imported", dropped.display()),
                || async {
                    let said = wait_for(&client, "#import-error")
                        .await
                        .text()
                        .await
                        .map_err(|e| e.to_string())?;
                    let says_all = said.contains("The session could not be imported")
                        && said.contains(&dropped.display().to_string())
                        && named.iter().all(|part| said.contains(part));
                    says_all.then_some(()).ok_or(said)
                },
            )
            .await;
            if dropped == &archive {
                crate::harness::screenshot(&client, "share-drop-refused.png").await;
            }
            assert_eq!(
                folder_listing(&output),
                before,
                "{}: nothing written into the workspace",
                dropped.display()
            );
        }
        let rows = crate::attributes(&client, "tr[data-session-id]", "data-session-id").await;
        assert_eq!(rows, [FANOUT.id], "no session added");
        // Nothing else clears a refused import's error: the user dismisses it.
        click(&client, "#import-error .error-dismiss").await;
        eventually("the import's error is dismissed", || async {
            let left = text_contents(&client, "#import-error").await;
            left.is_empty().then_some(()).ok_or(format!("{left:?}"))
        })
        .await;
    })
    .await;
}

/// Every path under `folder`, relative, sorted.
fn folder_listing(folder: &std::path::Path) -> Vec<String> {
    let mut paths = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("list a workspace folder") {
            let path = entry.expect("list a workspace folder").path();
            paths.push(path.strip_prefix(folder).unwrap().display().to_string());
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// A zip archive at `path` holding one file, `name`.
fn write_zip(path: &std::path::Path, name: &str, bytes: &[u8]) {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).expect("create the archive"));
    zip.start_file(name, zip::write::SimpleFileOptions::default())
        .expect("start the archive's file");
    zip.write_all(bytes).expect("write the archive's file");
    zip.finish().expect("finish the archive");
}
