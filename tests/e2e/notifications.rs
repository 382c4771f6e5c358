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
    let _one_window = ONE_WINDOW.lock().await;
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

/// A run whose agent's `max_cost_usd` (in `.zibby/studio.toml`) is below what its nodes cost:
/// the Live runs strip shows the warning at 80 %, the run stops after the node that reaches the
/// limit and ends `cancelled`, "stopped by its budget"; the window being away, both the warning
/// and the end are desktop notifications, read back from the daemon.
#[tokio::test]
async fn a_budget_warns_on_the_strip_and_the_desktop_and_stops_the_run() {
    let _one_window = ONE_WINDOW.lock().await;
    let _daemon = NotificationDaemon::start();
    const PROMPT: &str = "Plan a trip to Kyoto";
    let args = harness::spender_args(2500, 4000, 300);
    let costs = harness::node_costs(&args, PROMPT);
    // The first node spends 85 % of it, the second crosses it.
    let limit = costs[0].1 / 0.85;
    assert!(costs[0].1 + costs[1].1 > limit, "{costs:?}");
    let agent = harness::test_agent().display().to_string();
    let run: Vec<&str> = std::iter::once(agent.as_str())
        .chain(args.iter().map(String::as_str))
        .collect();
    let workspace = Workspace::with_untrusted_agent("spender", &run);
    let toml = workspace.path().join(".zibby/studio.toml");
    let agents = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{agents}max_cost_usd = {limit}\n")).unwrap();
    workspace.trust_agents_file();
    let folder = workspace.path().file_name().unwrap().to_string_lossy().into_owned();
    App::run(&workspace, |client| async move {
        x11::focus(Some(&folder)).expect("focus the window");
        harness::start_run(&client, PROMPT).await;
        x11::focus(None).expect("take the focus from every window");
        let badge = wait_for(&client, ".live-run .budget-badge[data-budget='warning']").await;
        let said = badge.text().await.unwrap();
        assert!(
            said.starts_with("budget: $") && said.ends_with("spent (80 %)"),
            "{said}"
        );
        harness::screenshot(&client, "budget-warning.png").await;
        let ended = wait_for(&client, ".live-run[data-status='cancelled']").await;
        let end = ended
            .find(fantoccini::Locator::Css(".live-current-node"))
            .await
            .unwrap();
        assert_eq!(end.text().await.unwrap(), "stopped by its budget");
        let nodes = ended.find_all(fantoccini::Locator::Css(".node")).await.unwrap();
        let mut names = Vec::new();
        for node in nodes {
            names.push(node.attr("data-node").await.unwrap().unwrap_or_default());
        }
        assert_eq!(names, ["plan", "research"], "write never started");
        harness::screenshot(&client, "budget-stopped.png").await;
    })
    .await;
    let store = studio_core::store::Store::open(&studio_core::store::StoreLocation::File(workspace.db())).unwrap();
    let runs = store
        .runs(&studio_core::Workspace::open(workspace.path()).unwrap(), None)
        .unwrap();
    let session = runs[0].session_id.to_string();
    let shown = eventually("the daemon shows the budget's warning and the run's end", || async {
        let shown = notifications()?;
        let warned = shown.iter().any(|(summary, body)| {
            summary == "Budget 80 % spent"
                && body.starts_with(&format!("Session {session}: $"))
                && body.contains(" spent; it stops after the node that reaches the limit")
        });
        let ended = shown.iter().any(|(summary, body)| {
            summary == "Run cancelled"
                && body.starts_with(&format!("Session {session}, after "))
                && body.ends_with(": stopped by its budget")
        });
        (warned && ended).then_some(shown.clone()).ok_or(format!("{shown:?}"))
    })
    .await;
    let about_the_run = shown.iter().filter(|(_, body)| body.contains(session.as_str())).count();
    assert_eq!(about_the_run, 2, "one warning, one end: {shown:?}");
}

/// The tests of this binary, one at a time: no other window may come or go while one runs.
static ONE_WINDOW: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
