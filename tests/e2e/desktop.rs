//! The app on the desktop: one window per store (a second launch hands over its workspace), the
//! app's own log file, quitting with live runs, and the window's remembered place and size.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{eventually, wait_for, App, Workspace};
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
        // Private (issue 26, point 8: it was 0644 in 0755).
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&logs), 0o700, "the log folder is the user's alone");
        for entry in std::fs::read_dir(&logs).unwrap().flatten() {
            assert_eq!(
                mode(&entry.path()) & 0o077,
                0,
                "{} is the user's alone",
                entry.path().display()
            );
        }
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

/// Closing the window with a live run asks what to do with it; "Keep running" leaves it running
/// (through the run keeper), and the store still shows it live after the app is gone.
#[tokio::test]
async fn quitting_with_a_live_run_asks_and_can_leave_it_running() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:300,write:60000", "--prompt", "{prompt}"]);
    let db = workspace.db();
    let folder = workspace.path().file_name().unwrap().to_string_lossy().into_owned();
    App::run(&workspace, |client| async move {
        crate::harness::start_run(&client, "keep me").await;
        crate::harness::wait_for(&client, ".live-run[data-status='running']").await;
        crate::x11::ask_to_close(&folder).expect("ask the window to close");
        crate::harness::wait_for(&client, "#quit-dialog").await;
        crate::harness::screenshot(&client, "quit-dialog.png").await;
        // The app quits on this click: WebDriver may not hear back.
        let keep = crate::harness::wait_for(&client, "#quit-keep").await;
        let _ = keep.click().await;
    })
    .await;
    assert!(crate::harness::quits(&db).await, "the app quits within 30 s");
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db.clone())).unwrap();
    let runs = store
        .runs(&studio_core::Workspace::open(workspace.path()).unwrap(), None)
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].status,
        studio_core::Status::Running,
        "left running: {:?}",
        runs[0]
    );
    let agent = runs[0].pid.expect("the agent's pid is recorded");
    assert!(Path::new(&format!("/proc/{agent}")).exists(), "the agent still runs");

    // The next launch shows it live; stopping it from there ends it.
    let run_id = runs[0].id.clone();
    App::run(&workspace, move |client| async move {
        crate::harness::wait_for(&client, "tr[data-session-id]").await;
        eventually("the table shows the run live", || async {
            let badge = client
                .find(fantoccini::Locator::Css("tr[data-session-id] .badge"))
                .await
                .map_err(|e| e.to_string())?;
            let status = badge.attr("data-status").await.map_err(|e| e.to_string())?;
            (status.as_deref() == Some("running"))
                .then_some(())
                .ok_or(format!("{status:?}"))
        })
        .await;
        let said = crate::harness::call_backend(
            &client,
            "runStop",
            vec![serde_json::json!(run_id), serde_json::json!(true)],
        )
        .await;
        assert!(said.get("ok").is_some(), "stopped from the next launch: {said}");
    })
    .await;
    let ended = Instant::now();
    while Path::new(&format!("/proc/{agent}")).exists() {
        assert!(ended.elapsed() < Duration::from_secs(20), "the agent ends once stopped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// "Stop runs and quit": the live run is stopped before the app is gone, and recorded so.
#[tokio::test]
async fn quitting_with_a_live_run_can_stop_it_first() {
    // `write` long enough that closing the window, its question and the answer come before it
    // ends on a loaded machine (the run ended `success` first when it was 1.5 s); a graceful stop
    // lands when it ends.
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:300,write:6000,report:6000", "--prompt", "{prompt}"]);
    let db = workspace.db();
    let folder = workspace.path().file_name().unwrap().to_string_lossy().into_owned();
    App::run(&workspace, |client| async move {
        crate::harness::start_run(&client, "stop me on quit").await;
        crate::harness::wait_for(&client, ".live-run .node[data-node='write'][data-status='running']").await;
        crate::x11::ask_to_close(&folder).expect("ask the window to close");
        let stop = crate::harness::wait_for(&client, "#quit-stop").await;
        let _ = stop.click().await;
    })
    .await;
    assert!(crate::harness::quits(&db).await, "the app quits within 30 s");
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(db)).unwrap();
    let runs = store
        .runs(&studio_core::Workspace::open(workspace.path()).unwrap(), None)
        .unwrap();
    assert_eq!(runs[0].status, studio_core::Status::Cancelled, "{:?}", runs[0]);
    assert_eq!(
        runs[0].stopped_by.map(studio_core::timeline::StoppedBy::as_str),
        Some("graceful"),
        "the node finished first"
    );
}

/// The window opens again where it was left and as large (closed as a window manager closes it).
#[tokio::test]
async fn the_window_opens_again_where_and_as_large_as_it_was_left() {
    const LEFT: (u64, u64, u64, u64) = (70, 50, 1000, 640);
    let workspace = Workspace::with_sessions(&[crate::PIPELINE]);
    let db = workspace.db();
    let folder = workspace.path().file_name().unwrap().to_string_lossy().into_owned();
    App::run(&workspace, |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        assert_ne!(
            window_rect(&client).await,
            Ok(LEFT),
            "the first launch has the default place and size"
        );
        let (x, y, width, height) = LEFT;
        client
            .set_window_rect(x as u32, y as u32, width as u32, height as u32)
            .await
            .expect("move and resize the window");
        eventually("the window moved and resized", || async {
            let rect = window_rect(&client).await?;
            (rect == LEFT).then_some(()).ok_or(format!("{rect:?}"))
        })
        .await;
        crate::x11::ask_to_close(&folder).expect("ask the window to close");
    })
    .await;
    assert!(crate::harness::quits(&db).await, "the app quits within 30 s");
    App::run(&workspace, |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        assert_eq!(window_rect(&client).await, Ok(LEFT), "x, y, width, height as left");
    })
    .await;
}

async fn window_rect(client: &fantoccini::Client) -> Result<(u64, u64, u64, u64), String> {
    client.get_window_rect().await.map_err(|e| e.to_string())
}

/// Light and dark follow the desktop: with GTK's dark variant asked for (`GTK_THEME=Adwaita:dark`,
/// as a dark desktop asks for it) the page is told `prefers-color-scheme: dark` and draws dark.
#[tokio::test]
async fn light_and_dark_follow_the_desktop() {
    let workspace = Workspace::with_sessions(&[crate::PIPELINE]);
    for (theme, dark) in [("Adwaita", false), ("Adwaita:dark", true)] {
        let app = App::launch_with_env(
            workspace.path(),
            &workspace.db(),
            workspace.data_home(),
            &[("GTK_THEME", theme)],
        )
        .await;
        wait_for(&app.client, "tr[data-session-id]").await;
        let seen = app
            .client
            .execute(
                "return [matchMedia('(prefers-color-scheme: dark)').matches, \
                 getComputedStyle(document.body).backgroundColor]",
                vec![],
            )
            .await
            .expect("read the colour scheme");
        let background = seen[1].as_str().unwrap_or_default().to_owned();
        let channels: Vec<u32> = background
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        assert_eq!(channels.len(), 3, "the page's background: {background}");
        let brightness = channels.iter().sum::<u32>() / 3;
        assert_eq!(
            seen[0],
            serde_json::json!(dark),
            "GTK_THEME={theme}: prefers-color-scheme dark"
        );
        if dark {
            assert!(
                brightness < 60,
                "GTK_THEME={theme}: a dark background, not {background}"
            );
            crate::harness::screenshot(&app.client, "dark.png").await;
        } else {
            assert!(
                brightness > 200,
                "GTK_THEME={theme}: a light background, not {background}"
            );
        }
        app.close().await;
    }
}
