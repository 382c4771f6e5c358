//! The app on the desktop: one window per store (a second launch hands over its workspace), and
//! the app's own log file.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{eventually, App, Workspace};
use crate::texts;

/// A second `zibby-studio` on the same store exits at once and the running window opens the
/// workspace it was given. Needs a session bus (CI runs the tests under `dbus-run-session`).
#[tokio::test]
async fn a_second_launch_hands_its_workspace_to_the_running_window() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run the tests under `dbus-run-session` (scripts/run-tests.sh does)"
    );
    let first = Workspace::empty();
    let second = Workspace::empty();
    let (db, data_home) = (first.db(), first.data_home().to_path_buf());
    let second_root = second.path().canonicalize().unwrap().display().to_string();
    App::run(&first, move |client| async move {
        crate::harness::wait_for(&client, ".workspace-path").await;
        let first_root = texts(&client, ".workspace-path").await;
        assert_eq!(first_root.len(), 1, "{first_root:?}");

        let launched = Instant::now();
        let mut again = Command::new(env!("CARGO_BIN_EXE_zibby-studio"))
            .arg("--db")
            .arg(&db)
            .arg(&second_root)
            .env("XDG_DATA_HOME", &data_home)
            .env("XDG_CONFIG_HOME", data_home.join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("launch the app again");
        let status = loop {
            if let Some(status) = again.try_wait().unwrap() {
                break status;
            }
            if launched.elapsed() > Duration::from_secs(60) {
                let _ = again.kill();
                panic!("the second launch did not exit within 60 s: it opened a second app");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(status.success(), "the second launch exits cleanly: {status}");
        eprintln!("second launch handed over in {:?}", launched.elapsed());

        eventually("the running window shows the second workspace", || async {
            let mut shown = Vec::new();
            for element in client
                .find_all(fantoccini::Locator::Css(".workspace-path"))
                .await
                .map_err(|e| e.to_string())?
            {
                shown.push(element.text().await.map_err(|e| e.to_string())?);
            }
            (shown == [second_root.clone()])
                .then_some(())
                .ok_or(format!("{shown:?}"))
        })
        .await;
    })
    .await;
}

/// The app writes its log to a file a day in `$XDG_DATA_HOME/dev.zibby.studio/logs`.
#[tokio::test]
async fn the_app_writes_its_log_to_a_file() {
    let workspace = Workspace::empty();
    let logs = workspace.data_home().join("dev.zibby.studio/logs");
    let root = workspace.path().canonicalize().unwrap().display().to_string();
    App::run(&workspace, move |client| async move {
        crate::harness::wait_for(&client, ".workspace-path").await;
        let text = eventually("a log file names the workspace opened", || async {
            let files: Vec<_> = std::fs::read_dir(&logs)
                .map_err(|e| format!("{}: {e}", logs.display()))?
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with("zibby-studio"))
                .collect();
            let text = files
                .iter()
                .map(|entry| std::fs::read_to_string(entry.path()).unwrap_or_default())
                .collect::<String>();
            text.contains("workspace opened").then_some(text.clone()).ok_or(text)
        })
        .await;
        assert!(text.contains(&root), "the log names the workspace: {text}");
    })
    .await;
}

/// The switcher lists the recent workspaces (most recent first) and opens the one chosen.
#[tokio::test]
async fn the_workspace_switcher_opens_a_recent_workspace() {
    let first = Workspace::empty();
    let other = Workspace::empty();
    let other_root = other.path().canonicalize().unwrap().display().to_string();
    {
        let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(first.db())).unwrap();
        let workspace = studio_core::Workspace::open(other.path()).unwrap();
        store
            .workspace_opened(&workspace, std::time::SystemTime::now() - Duration::from_secs(60))
            .unwrap();
    }
    App::run(&first, move |client| async move {
        crate::harness::wait_for(&client, ".workspace-path").await;
        crate::harness::click(&client, "#workspace-switcher").await;
        let recent = crate::harness::wait_for(&client, ".recent-workspace[data-path]").await;
        let listed = recent.attr("data-path").await.unwrap().unwrap_or_default();
        assert!(!listed.is_empty());
        crate::harness::click(&client, &format!(".recent-workspace[data-path='{other_root}']")).await;
        eventually("the window shows the workspace chosen", || async {
            let shown = texts(&client, ".workspace-path").await;
            (shown == [other_root.clone()])
                .then_some(())
                .ok_or(format!("{shown:?}"))
        })
        .await;
    })
    .await;
}
