//! Sharing in the real window: `zstudio open` brings the running window to a session (the
//! single-instance hand-over with `--session`), and a session imported by `zstudio import` shows
//! in the window like any other. Export… and File > Import… open the system's native dialogs,
//! which WebDriver cannot reach: they are not driven here.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::{app_binary, eventually, wait_for, App, Workspace};
use crate::{FANOUT, PIPELINE};

/// `zstudio`, built into the same target folder as the app (`cargo build -p zstudio`).
fn zstudio() -> std::path::PathBuf {
    let zstudio = std::path::Path::new(env!("CARGO_BIN_EXE_zibby-studio")).with_file_name("zstudio");
    assert!(
        zstudio.is_file(),
        "zstudio is not built at {}: run `cargo build -p zstudio` with the same target folder",
        zstudio.display()
    );
    zstudio
}

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
    let elsewhere = Workspace::with_sessions(&[PIPELINE]);
    let bundle = elsewhere.data_home().join("pipeline.zip");
    let exported = Command::new(zstudio())
        .args(["export", PIPELINE.id, "-o"])
        .arg(&bundle)
        .arg("--db")
        .arg(elsewhere.db())
        .arg("-w")
        .arg(elsewhere.path())
        .output()
        .expect("run zstudio export");
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let workspace = Workspace::with_sessions(&[FANOUT]);
    let (db, root) = (workspace.db(), workspace.path().to_path_buf());
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        let imported = Command::new(zstudio())
            .arg("import")
            .arg(&bundle)
            .arg("--db")
            .arg(&db)
            .arg("-w")
            .arg(&root)
            .output()
            .expect("run zstudio import");
        assert!(
            imported.status.success(),
            "{}",
            String::from_utf8_lossy(&imported.stderr)
        );
        let row = format!("tr[data-session-id='{}']", PIPELINE.id);
        wait_for(&client, &row).await;
        crate::harness::click(&client, &format!("{row} .session-id")).await;
        let view = format!("#session-view[data-session-id='{}']", PIPELINE.id);
        wait_for(&client, &view).await;
        let meta = crate::texts(&client, ".sv-meta").await;
        assert!(meta.iter().any(|m| m.contains("3/3 nodes")), "{meta:?}");
        // The header says it was imported, and from what.
        crate::harness::eventually("the header says imported from the bundle", || async {
            let imported = crate::texts(&client, "#session-imported").await;
            (imported == ["imported from pipeline.zip"])
                .then_some(())
                .ok_or(format!("{imported:?}"))
        })
        .await;
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

/// Export… asks where with the system's save dialog, from the shell (the window gets no dialog
/// API); closing the dialog cancels, and the session view says nothing was exported. (Typing a
/// name into the GTK dialog needs input injection the tests do not have: the export itself is
/// `Studio::export_session`, tested through `zstudio export`.)
#[tokio::test]
async fn export_asks_where_with_the_native_save_dialog() {
    let workspace = Workspace::with_sessions(&[PIPELINE]);
    App::run(&workspace, |client| async move {
        crate::harness::click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        crate::harness::click(&client, "#session-export").await;
        eventually("the save dialog comes up, titled Export session", || async {
            crate::x11::ask_to_close("Export session")
        })
        .await;
        // Cancelled: nothing said, nothing refused, and the view goes on working.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(client.find(fantoccini::Locator::Css(".sv-exported")).await.is_err());
        assert!(client.find(fantoccini::Locator::Css(".sv-form-slot")).await.is_err());
        crate::harness::click(&client, "[data-tab='logs']").await;
        wait_for(&client, "[data-panel='logs']").await;
    })
    .await;
}

/// A `zibby-studio://open?workspace=…&session=…` link opened while the app runs (the desktop
/// starts `zibby-studio <link>`) reaches the running window: it opens that workspace and session.
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
    let link = format!(
        "zibby-studio://open?workspace={}&session={}",
        url_encoded(second_root.to_str().unwrap()),
        PIPELINE.id
    );
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

/// `text` percent-encoded for a link's query.
fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
