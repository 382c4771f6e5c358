//! Runs started from the window: the Run bar, the Live runs strip, Stop; and the studio stopping
//! its live runs when it exits.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use serde_json::json;
use studio_core::runner::RunEvent;
use studio_core::store::{Store, StoreLocation};
use studio_core::Status;
use zibby_studio_shell::Studio;

use crate::harness::{call_backend, click, eventually, screenshot, start_run, wait_for, App, Workspace};
use crate::texts;

/// Three nodes: time to see the first end, and to press Stop during the second even on a busy
/// machine (a Stop during the last one would let the run succeed).
const THREE_NODES: &[&str] = &["--nodes", "plan:1500,write:5000,report:1500", "--prompt", "{prompt}"];

async fn text_of(client: &Client, css: &str) -> Result<String, String> {
    let element = client
        .find(Locator::Css(css))
        .await
        .map_err(|e| format!("no `{css}`: {e}"))?;
    element.text().await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_run_started_from_the_window_is_followed_live_and_stopped() {
    let workspace = Workspace::with_test_agent(THREE_NODES);
    App::run(&workspace, |client| async move {
        wait_for(&client, "#run-agent option").await;
        let options = texts(&client, "#run-agent option").await;
        assert_eq!(
            options,
            ["test-agent"],
            "the Run bar offers the agent of .zibby/studio.toml"
        );
        let started = Instant::now();
        start_run(&client, "write a haiku").await;

        wait_for(&client, ".live-run .node[data-node='plan'][data-status='success']").await;
        eprintln!("first node shown done {:?} after Run", started.elapsed());
        assert_eq!(
            text_of(&client, ".live-run .live-current-node").await.unwrap(),
            "▸ write",
            "once plan ends, the strip shows the node that began next"
        );
        screenshot(&client, "live-run.png").await;

        click(&client, ".live-run .stop").await;
        let stopping = eventually("Stop turns into a waiting label, with Force stop beside it", || async {
            let label = text_of(&client, ".live-run .stop").await?;
            client
                .find(Locator::Css(".live-run .force-stop"))
                .await
                .map_err(|e| format!("no Force stop yet ({label}): {e}"))?;
            (label == "Stopping: the current node finishes first")
                .then_some(label.clone())
                .ok_or(label)
        })
        .await;
        eprintln!("stop pressed, the button reads `{stopping}`");
        screenshot(&client, "stopping.png").await;

        let finished = wait_for(&client, ".live-run[data-status='cancelled']").await;
        eprintln!("run finished cancelled {:?} after Run", started.elapsed());
        let nodes = finished.find_all(Locator::Css(".node")).await.unwrap();
        let mut seen = Vec::new();
        for node in nodes {
            seen.push((
                node.attr("data-node").await.unwrap().unwrap_or_default(),
                node.attr("data-status").await.unwrap().unwrap_or_default(),
            ));
        }
        assert_eq!(
            seen,
            [("plan".into(), "success".into()), ("write".into(), "success".into())],
            "a graceful stop lets the current node finish and starts no other"
        );

        let session_id = text_of(&client, ".live-run .live-session-id").await.unwrap();
        let row_css = format!("tr[data-session-id='{session_id}']");
        // The table is redrawn as the session's folder changes: read it until it holds still.
        eventually("the session the run made is listed, titled by its prompt", || async {
            let title = text_of(&client, &format!("{row_css} .session-title")).await?;
            (title == "write a haiku").then_some(()).ok_or(title)
        })
        .await;
        // The table shows its progress column when no session view is open beside it.
        if client.find(Locator::Css("#session-close")).await.is_ok() {
            click(&client, "#session-close").await;
        }
        eventually("the table says how the run ended, not `running`", || async {
            let seen = row_story(&client, &row_css).await?;
            (seen == "cancelled / plan: success\nwrite: success")
                .then_some(())
                .ok_or(seen)
        })
        .await;
        screenshot(&client, "run-finished.png").await;

        let runs = call_backend(&client, "runsList", vec![json!(session_id)]).await;
        assert_eq!(
            runs["ok"][0]["status"], "cancelled",
            "the store recorded the run's end: {runs}"
        );
        assert_eq!(runs["ok"][0]["stopped_by"], "graceful", "{runs}");
    })
    .await;
}

#[tokio::test]
async fn force_stop_stops_an_agent_that_ignores_stop() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:60000", "--ignore-stop", "--prompt", "{prompt}"]);
    App::run(&workspace, |client| async move {
        start_run(&client, "ignore me").await;
        wait_for(&client, ".live-run .node[data-node='plan'][data-status='running']").await;
        click(&client, ".live-run .stop").await;
        let pressed = Instant::now();
        click(&client, ".live-run .force-stop").await;
        wait_for(&client, ".live-run[data-status='cancelled']").await;
        eprintln!("force-stopped {:?} after Stop", pressed.elapsed());
        let session_id = text_of(&client, ".live-run .live-session-id").await.unwrap();
        let runs = call_backend(&client, "runsList", vec![json!(session_id)]).await;
        assert_eq!(runs["ok"][0]["status"], "cancelled", "{runs}");
        assert_eq!(runs["ok"][0]["stopped_by"], "forced", "signals ended it: {runs}");
        assert!(
            pressed.elapsed() < Duration::from_secs(10),
            "Force stop does not wait for the node (60 s) nor the grace period (30 s)"
        );
    })
    .await;
}

#[tokio::test]
async fn an_agent_that_cannot_start_says_why() {
    let workspace = Workspace::with_agent("broken", &["/nonexistent/zibby-agent", "{prompt}"]);
    App::run(&workspace, |client| async move {
        // Enter in the prompt runs it, as the Run button does.
        let field = wait_for(&client, "#run-prompt").await;
        field
            .send_keys("anything\u{E007}")
            .await
            .expect("type the prompt and Enter");
        wait_for(&client, ".live-run[data-status='error']").await;
        assert_eq!(
            field.prop("value").await.unwrap().as_deref(),
            Some(""),
            "the prompt is cleared once sent"
        );
        let message = text_of(&client, ".live-run .live-run-error").await.unwrap();
        assert!(
            message.contains("/nonexistent/zibby-agent") && message.contains("command not found"),
            "the strip says which command could not start, and why: {message}"
        );
        screenshot(&client, "run-error.png").await;
    })
    .await;
}

/// What the app does as it exits (`Studio::shut_down`, from Tauri's `RunEvent::Exit`), without the
/// window: WebDriver ends a session by killing the app, so it cannot show this.
#[test]
fn shutting_the_studio_down_stops_its_live_runs() {
    // The second node would run for a minute: only a stop ends the run sooner.
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:1500,write:60000", "--prompt", "{prompt}"]);
    let (studio, started) = studio_with_a_live_run(&workspace);

    let shutting_down = Instant::now();
    studio.shut_down();
    let took = shutting_down.elapsed();
    eprintln!("shut down in {took:?}");

    let store = Store::open(&StoreLocation::File(workspace.db())).expect("open the store again");
    let run = store.run(&started.run_id).expect("the run is in the store");
    assert_eq!(
        run.status,
        Status::Cancelled,
        "shutting down stops the live runs: {run:?}"
    );
    assert_eq!(
        run.stopped_by.map(studio_core::timeline::StoppedBy::as_str),
        Some("graceful"),
        "the node running finishes first: {run:?}"
    );
    assert!(
        took < Duration::from_secs(10),
        "a graceful stop waits for the current node (1.5 s), not for the next: {took:?}"
    );
    assert!(
        studio.supervisor().is_err_and(|error| error.code() == "shutting_down"),
        "no run starts once the studio is shutting down"
    );
}

/// A studio opened on `workspace` (as the app opens it, without the window) whose agent is in its
/// first node.
fn studio_with_a_live_run(workspace: &Workspace) -> (Studio, studio_core::runner::StartedRun) {
    let (studio, events) = Studio::open(Some(workspace.path()), Ok(StoreLocation::File(workspace.db())));
    let (events, _output) = events.expect("the store opens, so there is a supervisor to subscribe to");
    let started = studio
        .run_agent("test-agent", Some("never finishes".into()), None, None)
        .expect("the agent is in .zibby/studio.toml, and the run starts");
    let plan_began = events
        .iter()
        .find(|event| matches!(event, RunEvent::NodeBegin { node, .. } if node == "plan"));
    assert!(plan_began.is_some(), "the run's first node begins");
    (studio, started)
}

/// Quitting with "keep them running": the run goes on without the app, through the run keeper,
/// and the next launch shows it live, then stops it.
#[test]
fn quitting_can_leave_live_runs_running_for_the_next_launch() {
    let keeper = crate::harness::repo_root().join("target/debug/zstudio");
    assert!(
        keeper.is_file(),
        "{} is built by `cargo test --workspace`",
        keeper.display()
    );
    // Only this test opens a studio in this process; the apps other tests start get the same.
    std::env::set_var("ZIBBY_STUDIO_KEEPER", &keeper);
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:1500,write:60000", "--prompt", "{prompt}"]);
    let (studio, started) = studio_with_a_live_run(&workspace);
    assert!(studio.can_keep_runs(), "runs go through the keeper");
    studio.keep_runs_on_exit(true);
    studio.shut_down();
    drop(studio);

    let (next, _) = Studio::open(Some(workspace.path()), Ok(StoreLocation::File(workspace.db())));
    let run = next.store().unwrap().run(&started.run_id).unwrap();
    assert_eq!(run.status, Status::Running, "left running: {run:?}");
    // The next launch adopts it: it follows its output live, and owns it.
    assert_eq!(
        next.supervisor().unwrap().live_runs(),
        vec![started.run_id.clone()],
        "adopted"
    );
    let pid = started.pid.expect("the agent started") as i32;
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the agent still runs"
    );
    let rows = next.sessions(std::time::SystemTime::now()).unwrap().sessions;
    let row = rows
        .iter()
        .find(|row| row.summary.id.as_str() == started.session_id)
        .unwrap();
    assert_eq!(row.live_run.as_deref(), Some(started.run_id.as_str()), "shown live");

    let session_path = workspace
        .path()
        .join(".zibby/output/sessions")
        .join(&started.session_id);
    let run = studio_core::runner::stop_elsewhere_and_wait(
        next.store().unwrap(),
        &started.run_id,
        &session_path,
        true,
        Duration::from_secs(5),
        |said| eprintln!("{said:?}"),
    )
    .expect("the next launch stops it");
    assert_eq!(run.status, Status::Cancelled, "{run:?}");
    next.shut_down();
}

/// Whether a process has ended (gone, or a zombie its parent has not reaped yet).
fn process_ended(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

#[tokio::test]
async fn the_app_told_to_exit_stops_its_live_runs_first() {
    // The second node would run for a minute: only a stop ends the run sooner.
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:2000,write:60000", "--prompt", "{prompt}"]);
    let db = workspace.db();
    let app_db = db.clone();
    App::run(&workspace, |client| async move {
        start_run(&client, "never finishes").await;
        wait_for(&client, ".live-run .node[data-node='plan']").await;
        // The app itself: the agent's parent is the run keeper, which the app started.
        let apps = crate::harness::app_processes(&app_db);
        assert_eq!(apps.len(), 1, "one app on this store: {apps:?}");
        let app_pid = u64::from(apps[0]);

        let signalled = Instant::now();
        let kill = std::process::Command::new("kill")
            .args(["-TERM", &app_pid.to_string()])
            .status();
        assert!(kill.is_ok_and(|status| status.success()), "send SIGTERM to the app");
        eventually("the app exits after stopping its run", || async {
            process_ended(app_pid)
                .then_some(())
                .ok_or(format!("pid {app_pid} still runs"))
        })
        .await;
        eprintln!("the app exited {:?} after SIGTERM", signalled.elapsed());
    })
    .await;

    let store = Store::open(&StoreLocation::File(db)).expect("open the app's store");
    let workspace_in_store = studio_core::Workspace::open(workspace.path()).unwrap();
    let runs = store.runs(&workspace_in_store, None).expect("list the runs");
    assert_eq!(runs.len(), 1, "one run: {runs:?}");
    assert_eq!(
        (
            runs[0].status,
            runs[0].stopped_by.map(studio_core::timeline::StoppedBy::as_str)
        ),
        (Status::Cancelled, Some("graceful")),
        "the app stopped its run before exiting (the node running finished first): {:?}",
        runs[0]
    );
}

/// The texts of the elements `css` finds, or why not (the page may redraw under the query).
async fn try_texts(client: &Client, css: &str) -> Result<Vec<String>, String> {
    let mut texts = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.map_err(|e| e.to_string())? {
        texts.push(element.text().await.map_err(|e| e.to_string())?);
    }
    Ok(texts)
}

/// Untrusted text: a prompt, the agent's output and its node names are shown as text.
#[tokio::test]
async fn markup_in_a_prompt_and_in_node_names_is_shown_as_text() {
    const XSS: &str = "<img src=x onerror=alert(1)>";
    let workspace = Workspace::with_test_agent(&["--nodes", "<b>bold</b>:100", "--prompt", "{prompt}"]);
    App::run(&workspace, |client| async move {
        wait_for(&client, "#run-agent option").await;
        start_run(&client, XSS).await;
        let title = eventually("the session's title is the prompt, as text", || async {
            let titles = try_texts(&client, ".session-title").await?;
            match titles.first() {
                Some(title) if title == XSS => Ok(title.clone()),
                _ => Err(format!("{titles:?}")),
            }
        })
        .await;
        assert_eq!(title, XSS);
        eventually("the node named with markup is listed by its name", || async {
            let nodes = try_texts(&client, ".live-run .node").await?;
            if nodes.iter().any(|n| n.contains("<b>bold</b>")) {
                Ok(())
            } else {
                Err(format!("{nodes:?}"))
            }
        })
        .await;
        let images = client.find_all(Locator::Css("img")).await.expect("query the page");
        assert!(images.is_empty(), "no element was made from the markup");
        let bold = client.find_all(Locator::Css("b")).await.expect("query the page");
        assert!(bold.is_empty(), "no element was made from the node name");
        screenshot(&client, "markup-as-text.png").await;
    })
    .await;
}

#[tokio::test]
async fn an_agents_file_not_trusted_yet_asks_once_showing_what_would_run() {
    let agent = crate::harness::test_agent().display().to_string();
    let workspace =
        Workspace::with_untrusted_agent("test-agent", &[&agent, "--nodes", "plan:10", "--prompt", "{prompt}"]);
    let db = workspace.db();
    App::run(&workspace, move |client| async move {
        start_run(&client, "first").await;
        wait_for(&client, "#trust-dialog").await;
        assert_eq!(
            text_of(&client, "#trust-command").await.unwrap(),
            format!(
                "[{}, \"--nodes\", \"plan:10\", \"--prompt\", \"first\"]",
                serde_json::json!(agent)
            ),
            "the dialog shows the exact command as it will run for this prompt"
        );
        assert_eq!(text_of(&client, "#trust-env").await.unwrap(), "no variable of its own");
        assert!(
            text_of(&client, "#trust-inherits")
                .await
                .unwrap()
                .contains("all of the studio's environment"),
            "what the agent inherits is said"
        );
        let runs = |db: std::path::PathBuf| {
            let store = Store::open(&StoreLocation::File(db)).unwrap();
            store
                .runs(&studio_core::Workspace::open(workspace_root(&store)).unwrap(), None)
                .unwrap()
                .len()
        };
        assert_eq!(runs(db.clone()), 0, "nothing runs before the answer");
        screenshot(&client, "trust.png").await;
        // Trust and run asks the shell, which asks the user in the system's own dialog: the page
        // cannot trust by itself (issue 26, point 4). Closed unanswered, it trusts nothing.
        click(&client, "#trust-run").await;
        eventually("the system's trust dialog comes up", || async {
            crate::x11::has_window("Trust this agent")
                .then_some(())
                .ok_or_else(|| "not yet".to_owned())
        })
        .await;
        assert_eq!(runs(db.clone()), 0, "nothing runs while the system's dialog asks");
        crate::x11::ask_to_close("Trust this agent").expect("close the system's dialog");
        wait_for(&client, "[data-error-code='agents_untrusted']").await;
        assert_eq!(runs(db.clone()), 0, "nothing ran without the user's yes");
        // Still untrusted: the next run asks again (answering yes: tests/e2e/dialogs.rs).
        start_run(&client, "second").await;
        wait_for(&client, "#trust-dialog").await;
        click(&client, "#trust-cancel").await;
    })
    .await;
}

/// Issue 26, point 1: no value of the agents file can forge the prompt. A newline in a variable
/// cannot draw lines of its own, a bidirectional control cannot reverse the command, and a long
/// value is folded with its length, so the command and "Trust and run" stay in view.
#[tokio::test]
async fn the_trust_prompt_shows_every_value_escaped_and_the_command_in_view() {
    let agent = crate::harness::test_agent().display().to_string();
    let workspace = Workspace::with_untrusted_agent(
        "test-agent",
        &[
            &agent,
            "--nodes",
            "plan:10",
            "--say",
            "\u{202E}txt.exe",
            "--prompt",
            "{prompt}",
        ],
    );
    let file = workspace.path().join(".zibby/studio.toml");
    let long = "k".repeat(5000);
    let mut toml = std::fs::read_to_string(&file).unwrap();
    toml.push_str(&format!(
        "env = {{ MODEL = \"small\\n  File  /elsewhere/studio.toml\\n(only MODEL is set)\", TOKEN = \"{long}\" }}\n"
    ));
    std::fs::write(&file, toml).unwrap();
    App::run(&workspace, move |client| async move {
        start_run(&client, "Plan a trip").await;
        wait_for(&client, "#trust-dialog").await;
        let command = text_of(&client, "#trust-command").await.unwrap();
        assert!(
            command.contains("\"\\u202etxt.exe\"") && !command.contains('\u{202E}'),
            "the bidi control is shown as its escape: {command}"
        );
        assert!(
            command.contains("\"Plan a trip\""),
            "as it will run for this prompt: {command}"
        );
        let variables = crate::texts(&client, "#trust-env li").await;
        assert_eq!(variables.len(), 2, "one line per variable: {variables:?}");
        assert!(
            variables.iter().all(|v| !v.contains('\n')),
            "no value draws a line: {variables:?}"
        );
        assert!(variables[0].starts_with("MODEL=small\\n  File"), "{variables:?}");
        assert!(variables[1].ends_with("(5,006 characters in all)"), "{variables:?}");
        let in_view = client
            .execute(
                "const inView = (css) => { const r = document.querySelector(css).getBoundingClientRect(); \
                 return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }; \
                 return inView('#trust-command') && inView('#trust-run');",
                Vec::new(),
            )
            .await
            .unwrap();
        assert_eq!(in_view, json!(true), "the command and Trust and run are in view");
        screenshot(&client, "trust-hostile.png").await;
        click(&client, "#trust-cancel").await;
    })
    .await;
}

/// The one workspace a test's store knows.
fn workspace_root(store: &Store) -> std::path::PathBuf {
    store
        .recent_workspaces(1)
        .unwrap()
        .into_iter()
        .next()
        .expect("the app opened a workspace")
}

/// Issue 12's cross-surface check in the window: the table row, the session header and the
/// Timeline give what the store's listing (`zstudio sessions`) gives, for a run with a failing
/// node and for one stopped after its first node by a stop file from outside; and the header's
/// elapsed time is the Live runs strip's.
#[tokio::test]
async fn the_table_the_header_and_the_timeline_tell_the_same_story() {
    the_same_story(
        &["--nodes", "plan:200,write:200,check:200", "--fail", "write"],
        Status::Error,
        Some(&[("plan", "success"), ("write", "error")]),
        Ending::OnItsOwn,
    )
    .await;
    the_same_story(
        &["--nodes", "plan:200,write:200,check:200", "--stop-after", "plan"],
        Status::Cancelled,
        Some(&[("plan", "success")]),
        Ending::OnItsOwn,
    )
    .await;
    // Stop, then Force stop, pressed in the window: the node that ignores the stop is cut short.
    the_same_story(
        &["--nodes", "plan:200,write:60000", "--ignore-stop"],
        Status::Cancelled,
        None,
        Ending::ForceStopped,
    )
    .await;
    // An engine run without markers, replayed: its nodes come from its human timeline and write no
    // folder; the window must say what the listing says.
    let capture = crate::harness::repo_root().join("tests/fixtures/zibby-captures/head-bb10e85-02-pipeline-plain");
    the_same_story(
        &["replay", capture.to_str().unwrap(), "--speed", "20"],
        Status::Success,
        None,
        Ending::OnItsOwn,
    )
    .await;
}

/// How a run of [`the_same_story`] ends.
#[derive(Clone, Copy)]
enum Ending {
    OnItsOwn,
    /// Stop, then Force stop, once its second node runs.
    ForceStopped,
}

/// Issue 12's cross-surface check for a run started from a terminal (the agent alone, printing
/// markers), which the window sees only through the watcher: the table row, the header and the
/// Timeline say what the store's listing says, now and an hour later.
#[tokio::test]
async fn a_run_from_a_terminal_tells_the_same_story_in_the_window() {
    terminal_story(&["--nodes", "plan:100,write:100,check:100"], 0, "terminal-run.png").await;
}

/// Issue 29: a failed run from a terminal. The engine records neither that its last node failed
/// nor how, so every surface says `unknown` and, once, what is not known and how to get the full
/// story (the Timeline's note), and says the same an hour later.
#[tokio::test]
async fn a_failed_run_from_a_terminal_says_what_is_not_known_in_the_window() {
    let told = terminal_story(
        &["--nodes", "plan:100,write:100,check:100", "--fail", "check"],
        1,
        "terminal-run-failed.png",
    )
    .await;
    assert_eq!(told.status, Status::Unknown);
    assert!(
        told.not_known.as_deref().is_some_and(|n| n.contains("zstudio run -- ")),
        "{:?}",
        told.not_known
    );
}

/// Issue 29: a terminal run whose middle node is a custom code node (it writes no folder, as the
/// engine's do). The window's watch saw it begin; the store keeps what it saw, so the table, the
/// header and the Timeline name it as the listing (`sessions`) does, now and an hour later. (The
/// node lasts long enough for the watch to see it begin, whatever the machine's load.)
#[tokio::test]
async fn a_node_that_wrote_no_folder_seen_live_is_named_in_the_window() {
    let told = terminal_story(
        &["--nodes", "plan:300,write:800,check:300", "--custom", "write"],
        0,
        "terminal-run-folderless.png",
    )
    .await;
    assert_eq!(
        told.listed[1],
        ("write".to_owned(), "unknown".to_owned()),
        "how it ended is not recorded"
    );
}

/// A terminal run of the test agent with `agent_args` (markers on; it exits with `exit_code`), seen by the window: the table
/// row, header, Timeline and its note say what the listing says, now and an hour later (a
/// screenshot of the session view, named `screenshot_name`). Returns what the listing said.
async fn terminal_story(agent_args: &'static [&'static str], exit_code: i32, screenshot_name: &'static str) -> Told {
    let workspace = Workspace::empty();
    let db = workspace.db();
    let root = workspace.path().to_owned();
    let told = std::sync::Arc::new(std::sync::Mutex::new(None));
    let kept = told.clone();
    App::run(&workspace, move |client| async move {
        wait_for(&client, ".empty").await;
        let ran = std::process::Command::new(crate::harness::test_agent())
            .args(agent_args)
            .current_dir(&root)
            .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
            .output()
            .unwrap();
        assert_eq!(ran.status.code(), Some(exit_code), "the agent ran as asked");
        wait_for(&client, "tr[data-session-id]").await;
        let store = Store::open(&StoreLocation::File(db)).unwrap();
        let listing = |when: &str| {
            let rows = store
                .list_sessions(
                    &studio_core::Workspace::open(&root).unwrap(),
                    std::time::SystemTime::now(),
                )
                .unwrap();
            assert_eq!(rows.len(), 1, "one session, {when}");
            Told::of(&rows[0].summary, None)
        };
        let told = listing("now");
        let names = |told: &Told| told.listed.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&told), ["plan", "write", "check"]);
        told.in_the_window(&client, "now").await;
        screenshot(&client, screenshot_name).await;

        crate::harness::set_times_under(
            &root.join(".zibby/output/sessions").join(&told.session_id),
            std::time::SystemTime::now() - Duration::from_secs(3600),
        );
        let later = listing("an hour later");
        assert_eq!(names(&later), names(&told), "the same nodes an hour later");
        assert_eq!(later.status, told.status, "the same status an hour later");
        assert_eq!(later.not_known, told.not_known, "the same words an hour later");
        click(&client, "#refresh").await;
        later.in_the_window(&client, "an hour later").await;
        *kept.lock().unwrap() = Some(later);
    })
    .await;
    let told = told.lock().unwrap().take();
    told.expect("the window's story was told")
}

/// One run of `agent_args` in the window, then the table row, the header and the Timeline against
/// the store's listing (whose nodes are `nodes`, when given).
async fn the_same_story(agent_args: &[&str], status: Status, nodes: Option<&'static [(&str, &str)]>, ending: Ending) {
    let workspace = Workspace::with_test_agent(agent_args);
    let db = workspace.db();
    let root = workspace.path().to_owned();
    App::run(&workspace, move |client| async move {
        start_run(&client, "the story").await;
        if let Ending::ForceStopped = ending {
            wait_for(&client, ".live-run .node[data-node='write'][data-status='running']").await;
            click(&client, ".live-run .stop").await;
            click(&client, ".live-run .force-stop").await;
        }
        wait_for(&client, &format!(".live-run[data-status='{status}']")).await;
        let session_id = text_of(&client, ".live-run .live-session-id").await.unwrap();
        let strip_elapsed = text_of(&client, ".live-run .elapsed").await.unwrap();

        // The store's listing, as `zstudio sessions` reads it.
        let store = Store::open(&StoreLocation::File(db)).unwrap();
        let rows = store
            .list_sessions(
                &studio_core::Workspace::open(&root).unwrap(),
                std::time::SystemTime::now(),
            )
            .unwrap();
        let row = rows.iter().find(|r| r.summary.id.as_str() == session_id).unwrap();
        let told = Told::of(&row.summary, Some(strip_elapsed));
        assert_eq!(told.status, status);
        assert!(!told.listed.is_empty(), "the run has nodes");
        if let Some(nodes) = nodes {
            let expected: Vec<(String, String)> = nodes.iter().map(|(n, s)| ((*n).into(), (*s).into())).collect();
            assert_eq!(told.listed, expected);
        }
        told.in_the_window(&client, "now").await;

        // An hour later, nothing happened: the listing and the window say the same.
        crate::harness::set_times_under(
            &root.join(".zibby/output/sessions").join(&session_id),
            std::time::SystemTime::now() - Duration::from_secs(3600),
        );
        let rows = store
            .list_sessions(
                &studio_core::Workspace::open(&root).unwrap(),
                std::time::SystemTime::now(),
            )
            .unwrap();
        let later = rows.iter().find(|r| r.summary.id.as_str() == session_id).unwrap();
        assert_eq!(later.summary.status, status, "an hour later");
        click(&client, "#session-close").await;
        click(&client, "#refresh").await;
        told.in_the_window(&client, "an hour later").await;
    })
    .await;
}

/// What the store's listing says of a session, to find in the window.
struct Told {
    session_id: String,
    status: Status,
    /// The table row's progress title: `node: status` lines.
    as_title: String,
    /// The header's `N/M nodes`.
    progress: String,
    /// The Live runs strip's elapsed time, which the header's must match (none for a run the
    /// window did not start).
    strip_elapsed: Option<String>,
    /// The nodes and their statuses, in order.
    listed: Vec<(String, String)>,
    /// What the session says is not known (the Timeline's note).
    not_known: Option<String>,
}

impl Told {
    fn of(summary: &studio_core::session::SessionSummary, strip_elapsed: Option<String>) -> Told {
        let listed: Vec<(String, String)> = summary
            .nodes
            .iter()
            .map(|n| (n.name.clone(), n.status.to_string()))
            .collect();
        let (ended, begun) = summary.nodes_progress();
        Told {
            session_id: summary.id.as_str().to_owned(),
            status: summary.status,
            as_title: listed
                .iter()
                .map(|(n, s)| format!("{n}: {s}"))
                .collect::<Vec<_>>()
                .join("\n"),
            progress: format!("{ended}/{begun} nodes"),
            strip_elapsed,
            listed,
            not_known: summary.not_known.clone(),
        }
    }
}

impl Told {
    /// The table row, the session header and the Timeline say it.
    async fn in_the_window(&self, client: &Client, when: &str) {
        let Told {
            session_id,
            status,
            as_title,
            progress,
            strip_elapsed,
            listed,
            not_known,
        } = self;
        if client.find(Locator::Css("#session-close")).await.is_ok() {
            click(client, "#session-close").await;
        }
        let row_css = format!("tr[data-session-id='{session_id}']");
        eventually(
            &format!("the table row lists the listing's nodes and status, {when}"),
            || async {
                let seen = row_story(client, &row_css).await?;
                (seen == format!("{status} / {as_title}")).then_some(()).ok_or(seen)
            },
        )
        .await;

        click(client, &format!("{row_css} .session-id")).await;
        wait_for(client, &format!("#session-view[data-session-id='{session_id}']")).await;
        eventually(
            &format!("the header counts the listing's nodes, and its elapsed time is the strip's, {when}"),
            || async {
                let meta = text_of(client, "#session-view .sv-meta").await?;
                let elapsed = text_of(client, "#session-elapsed").await?;
                let seconds = |label: &str| -> Option<i64> {
                    let (m, s) = label.rsplit_once(':')?;
                    Some(m.parse::<i64>().ok()? * 60 + s.parse::<i64>().ok()?)
                };
                let close = strip_elapsed.as_deref().is_none_or(|strip| {
                    seconds(&elapsed)
                        .zip(seconds(strip))
                        .is_some_and(|(a, b)| (a - b).abs() <= 1)
                });
                // An ended session is at no node: the header names none.
                let no_node_once_ended = *status == Status::Running || !meta.contains('▸');
                (meta.contains(progress.as_str()) && close && no_node_once_ended)
                    .then_some(())
                    .ok_or(format!("{meta} | {elapsed} against {strip_elapsed:?}"))
            },
        )
        .await;
        eventually(
            &format!("the Timeline draws the listing's nodes with their statuses, {when}"),
            || async {
                let names = crate::attributes(client, ".timeline-node", "data-node").await;
                let statuses = crate::attributes(client, ".timeline-node", "data-status").await;
                let drawn: Vec<(String, String)> = names.into_iter().zip(statuses).collect();
                (drawn == *listed).then_some(()).ok_or(format!("{drawn:?}"))
            },
        )
        .await;
        eventually(
            &format!("the Timeline's note says what the listing does not know, commands as code, {when}"),
            || async {
                let note = text_of(client, "#session-view .timeline-note.not-known").await.ok();
                let code = crate::texts(client, "#session-view .timeline-note.not-known code").await;
                // The listing's words, their `inline code` drawn as code rather than backticks.
                let words = not_known.as_deref().map(|n| n.replace('`', ""));
                let spans: Vec<String> = not_known
                    .as_deref()
                    .map(|n| n.split('`').skip(1).step_by(2).map(str::to_owned).collect())
                    .unwrap_or_default();
                (note == words && code == spans)
                    .then_some(())
                    .ok_or(format!("{note:?}, code {code:?}"))
            },
        )
        .await;
    }
}

/// A table row's status badge and node list (its progress column's title): `status / nodes`.
async fn row_story(client: &Client, row_css: &str) -> Result<String, String> {
    let attribute = |css: String, name: &'static str| async move {
        client
            .find(Locator::Css(&css))
            .await
            .map_err(|e| e.to_string())?
            .attr(name)
            .await
            .map_err(|e| e.to_string())
            .map(Option::unwrap_or_default)
    };
    let status = attribute(format!("{row_css} .badge"), "data-status").await?;
    let nodes = attribute(format!("{row_css} td.progress"), "title").await?;
    Ok(format!("{status} / {nodes}"))
}
