//! Desktop notifications, end to end: the real app, a real notification daemon (dunst) on the
//! tests' session bus, and the X keyboard focus moved as a window manager moves it. A test binary of
//! its own: without a window manager, GTK takes a window that has the pointer over it for the
//! focused one whenever the focus falls back to the root window (as it does when another test's
//! window closes), so no other window may come or go while this test runs.
//!
//! ```sh
//! xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test -p zibby-studio --test e2e_notifications
//! ```

// The harness serves both end-to-end binaries; this one uses part of it.
#[allow(dead_code)]
mod harness;
#[allow(dead_code)]
mod x11;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{eventually, wait_for, App, Workspace};

/// A run that finishes while the window is not focused is a desktop notification (shown by a real
/// notification daemon, dunst, on the test's session bus); one that finishes while the window is
/// focused is not.
#[tokio::test]
async fn a_run_that_finishes_while_the_window_is_not_focused_is_a_notification() {
    let _daemon = NotificationDaemon::start();
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:1500", "--prompt", "{prompt}"]);
    let folder = workspace.path().file_name().unwrap().to_string_lossy().into_owned();
    App::run(&workspace, |client| async move {
        harness::start_run(&client, "while focused").await;
        x11::focus(Some(&folder)).expect("focus the window");
        wait_for(&client, ".live-run[data-status='success']").await;
        harness::start_run(&client, "while away").await;
        x11::focus(None).expect("take the focus from every window");
        eventually("both runs succeeded", || async {
            let done = client
                .find_all(fantoccini::Locator::Css(".live-run[data-status='success']"))
                .await
                .map_err(|e| e.to_string())?;
            (done.len() == 2).then_some(()).ok_or(format!("{} of 2", done.len()))
        })
        .await;
    })
    .await;
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(workspace.db())).unwrap();
    let mut runs = store
        .runs(&studio_core::Workspace::open(workspace.path()).unwrap(), None)
        .unwrap();
    runs.sort_by_key(|run| run.started_at);
    let [focused, away] = [&runs[0].session_id, &runs[1].session_id];
    let shown = eventually(
        "the daemon shows a notification for the run that ended away",
        || async {
            let shown = notifications()?;
            shown
                .iter()
                .any(|(_, body)| body.contains(away.as_str()))
                .then_some(shown.clone())
                .ok_or(format!("{shown:?}"))
        },
    )
    .await;
    assert!(
        shown
            .iter()
            .any(|(summary, body)| summary == "Run success" && body.starts_with(&format!("Session {away}, after "))),
        "says how the run ended, which session and after how long: {shown:?}"
    );
    assert!(
        !shown.iter().any(|(_, body)| body.contains(focused.as_str())),
        "no notification for the run that ended while the window was focused: {shown:?}"
    );
}

/// dunst, a notification daemon, on the session bus and the X display of the tests.
struct NotificationDaemon {
    /// The dunst this test started, if the bus did not have one already.
    started: Option<std::process::Child>,
}

impl NotificationDaemon {
    /// The session bus's dunst: one that runs already, or that the bus starts on the first call
    /// (the dunst package makes it the bus's notification service), else one started here.
    fn start() -> NotificationDaemon {
        if notifications().is_ok() {
            return NotificationDaemon { started: None };
        }
        let mut child = Command::new("dunst")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start dunst, the notification daemon the test needs (apt-get install dunst): {e}")
            });
        let started = Instant::now();
        while let Err(last) = notifications() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("dunst exited at start ({status}); dunstctl said: {last}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "dunst answers on the session bus: {last}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        NotificationDaemon { started: Some(child) }
    }
}

impl Drop for NotificationDaemon {
    fn drop(&mut self) {
        if let Some(child) = &mut self.started {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every notification dunst was sent, as (summary, body): the ones on screen are closed into its
/// history first.
fn notifications() -> Result<Vec<(String, String)>, String> {
    let dunstctl = |args: &[&str]| {
        let out = Command::new("dunstctl")
            .args(args)
            .output()
            .map_err(|e| format!("dunstctl (apt-get install dunst): {e}"))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(format!("dunstctl {args:?}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    dunstctl(&["close-all"])?;
    let history: serde_json::Value =
        serde_json::from_slice(&dunstctl(&["history"])?).map_err(|e| format!("dunstctl history: {e}"))?;
    let field = |notification: &serde_json::Value, name: &str| {
        notification[name]["data"].as_str().unwrap_or_default().to_owned()
    };
    Ok(history["data"][0]
        .as_array()
        .map(|all| all.iter().map(|n| (field(n, "summary"), field(n, "body"))).collect())
        .unwrap_or_default())
}
