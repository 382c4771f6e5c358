//! End-to-end tests of the real desktop app: the built `zibby-studio` binary, driven through
//! `tauri-driver` and `WebKitWebDriver`. They need a display and fail (never skip) without one:
//!
//! ```sh
//! cd ui && npm ci && npm run build && cd ..
//! xvfb-run -a -s "-screen 0 1280x800x24" cargo test -p zibby-studio --test e2e_app
//! ```
//!
//! Desktop notifications (`notifications.rs`) and the system's file dialogs (`dialogs.rs`) are
//! tested in binaries of their own: no other test's window may open while they run.
//!
//! Screenshots of what the tests saw land in `e2e-screenshots/` (gitignored).

mod accessibility;
mod buckets;
mod budget;
mod bundles;
mod cloud;
mod compare;
mod demo;
mod desktop;
mod drag;
mod first_screen;
mod harness;
mod keyboard;
mod labels;
mod layout;
mod phoenix;
mod pins;
mod remote;
mod remote_window;
mod runs;
mod session_view;
mod share;
mod usage;
mod views;
// Shared with the notifications binary, which uses the rest of it.
#[allow(dead_code)]
mod x11;

use std::time::Duration;

use fantoccini::{Client, Locator};
use harness::{screenshot, wait_for, App, Workspace};

pub use harness::{FANOUT, PIPELINE};

const STATUSES: &[&str] = &["running", "success", "error", "cancelled", "interrupted", "unknown"];

/// The texts of the elements `css` finds, read again when the page redrew them in between.
pub async fn texts(client: &Client, css: &str) -> Vec<String> {
    let mut last_error = String::new();
    for _ in 0..50 {
        match read_texts(client, css).await {
            Ok(texts) => return texts,
            Err(error) => last_error = error,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("cannot read the texts of `{css}`: {last_error}")
}

/// The text of every element `css` finds, shown or not (an ellipsis may hide it from `text`).
pub async fn text_contents(client: &Client, css: &str) -> Vec<String> {
    let mut values = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.expect("query the page") {
        values.push(
            element
                .prop("textContent")
                .await
                .expect("read a property")
                .unwrap_or_default(),
        );
    }
    values
}

/// The attribute `name` of every element `css` finds, in page order.
pub async fn attributes(client: &Client, css: &str, name: &str) -> Vec<String> {
    let mut values = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.expect("query the page") {
        values.push(element.attr(name).await.expect("read an attribute").unwrap_or_default());
    }
    values
}

async fn read_texts(client: &Client, css: &str) -> Result<Vec<String>, String> {
    let mut texts = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.map_err(|e| e.to_string())? {
        texts.push(element.text().await.map_err(|e| e.to_string())?);
    }
    Ok(texts)
}

#[tokio::test]
async fn the_window_lists_the_sessions_of_the_workspace() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    let root = workspace.path().canonicalize().unwrap().display().to_string();
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;

        assert_eq!(
            texts(&client, ".session-id").await,
            [FANOUT.id, PIPELINE.id],
            "both captured sessions are listed by id, the one written last first"
        );
        assert_eq!(
            texts(&client, ".workspace-path").await,
            [root],
            "the header names the workspace the app was opened on"
        );

        for id in [FANOUT.id, PIPELINE.id] {
            // Read again if the table is redrawn meanwhile (the watcher's first scan reloads it).
            let (status, label) = harness::eventually(&format!("the status badge of {id}"), || async {
                let badge = client
                    .find(Locator::Css(&format!("tr[data-session-id='{id}'] .badge")))
                    .await
                    .map_err(|e| format!("the row of {id} has no status badge: {e}"))?;
                let status = badge
                    .attr("data-status")
                    .await
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default();
                let label = badge.text().await.map_err(|e| e.to_string())?;
                Ok((status, label))
            })
            .await;
            assert!(
                STATUSES.contains(&status.as_str()),
                "badge of {id} has status `{status}`"
            );
            assert_eq!(label.to_lowercase(), status, "the badge says its status");
        }

        let nodes = attributes(&client, "tr[data-session-id] td.progress", "title").await;
        assert_eq!(
            nodes,
            [
                // A copied folder with no process of its run left: ended, its last node's raw
                // stream written after a successful call (issue 29: not `running` for 120 s).
                "start: success\nleft: success\nleft2: success\nright: success\njoin: success",
                "plan: success\nexecute: success\nreport: success"
            ],
            "each session lists its nodes in the order they ran, with their status"
        );
        assert_eq!(
            texts(&client, "tr[data-session-id] td.progress .progress-count").await,
            ["5/5", "3/3"],
            "progress: the nodes done of the nodes begun"
        );
        assert_eq!(
            text_contents(&client, "tr[data-session-id] td.progress .current-node").await,
            ["join", "report"],
            "the current node is the one .session-info.json names"
        );
        assert_eq!(
            texts(&client, "tr[data-session-id] td.updated").await,
            ["1 min ago", "2 h ago"],
            "the last update is relative to now"
        );

        let path = screenshot(&client, "sessions.png").await;
        eprintln!("screenshot: {}", path.display());
    })
    .await;
}

#[tokio::test]
async fn an_empty_workspace_says_how_to_get_sessions() {
    let workspace = Workspace::empty();
    App::run(&workspace, |client| async move {
        let empty = wait_for(&client, ".empty").await;
        let text = empty.text().await.unwrap();
        assert!(text.contains("No sessions yet"), "the empty state says so: {text}");
        assert!(
            text.contains("Run an agent with ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS=1 in this folder"),
            "the empty state says how to get sessions: {text}"
        );
        assert!(text.contains("fill-demo"), "the empty state offers the demo: {text}");
        assert!(
            client.find(Locator::Css("table")).await.is_err(),
            "no empty table is shown"
        );

        screenshot(&client, "empty.png").await;
    })
    .await;
}

#[tokio::test]
async fn a_session_run_from_a_terminal_appears_without_a_refresh() {
    let workspace = Workspace::empty();
    let root = workspace.path().to_owned();
    App::run(&workspace, move |client| async move {
        wait_for(&client, ".empty").await;
        // An agent run outside the studio (a terminal, CI): only its session folder tells.
        let output = std::process::Command::new(harness::test_agent())
            .args(["--nodes", "plan:100,write:100"])
            .current_dir(&root)
            .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
            .output()
            .expect("run the test agent");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let id = stdout
            .lines()
            .find_map(|line| line.split("Session ").nth(1))
            .expect("the agent names its session")
            .trim()
            .to_owned();
        harness::eventually("the new session is listed, nobody pressed Refresh", || async {
            let ids = texts(&client, ".session-id").await;
            if ids == [id.clone()] {
                Ok(())
            } else {
                Err(format!("{ids:?}"))
            }
        })
        .await;
        screenshot(&client, "appeared.png").await;
    })
    .await;
}

#[tokio::test]
async fn a_missing_workspace_shows_the_error_in_the_window() {
    let parent = Workspace::empty();
    let missing = parent.path().join("no-such-project");
    App::run_at(&missing, &parent.db(), |client| async move {
        let error = wait_for(&client, ".error").await;
        assert_eq!(
            error.attr("data-error-code").await.unwrap().as_deref(),
            Some("workspace_not_found"),
            "the UI gets the core's error code"
        );
        let code = texts(&client, ".error .error-code").await;
        assert_eq!(code, ["workspace_not_found"], "the code is shown");
        let message = texts(&client, ".error .error-message").await.concat();
        assert!(
            message.contains("workspace not found") && message.contains("no-such-project"),
            "the message names the missing folder: {message}"
        );

        screenshot(&client, "error.png").await;
    })
    .await;
}

#[tokio::test]
async fn a_store_that_cannot_be_opened_shows_the_error_in_the_window() {
    let workspace = Workspace::with_sessions(&[PIPELINE]);
    // A file where the store's folder should be: nothing can be created under it.
    let not_a_folder = workspace.path().join("not-a-folder");
    std::fs::write(&not_a_folder, "").unwrap();
    let db = not_a_folder.join("studio.sqlite");
    App::run_at(workspace.path(), &db, |client| async move {
        let error = wait_for(&client, ".error").await;
        let code = error.attr("data-error-code").await.unwrap().unwrap_or_default();
        assert!(
            ["store", "io"].contains(&code.as_str()),
            "the UI gets the core's error code for the store: {code}"
        );
        let message = texts(&client, ".error .error-message").await.concat();
        assert!(
            message.contains("store") && message.contains("not-a-folder/studio.sqlite"),
            "the message names the store that could not be opened: {message}"
        );
        assert_eq!(
            texts(&client, ".workspace-path").await.len(),
            1,
            "the workspace itself opened: the header shows it"
        );
        screenshot(&client, "store-error.png").await;
    })
    .await;
}

#[tokio::test]
async fn the_window_is_granted_only_the_tauri_calls_it_uses() {
    let workspace = Workspace::empty();
    App::run(&workspace, |client| async move {
        wait_for(&client, ".empty").await;
        let call = |command: &'static str, args: serde_json::Value| {
            let client = client.clone();
            async move {
                let script = "const [command, args, done] = arguments; \
                              window.__TAURI_INTERNALS__.invoke(command, args).then( \
                                () => done('allowed'), (error) => done(String(error)));";
                client
                    .execute_async(script, vec![serde_json::json!(command), args])
                    .await
                    .unwrap_or_else(|e| panic!("invoke {command} in the page: {e}"))
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            }
        };
        // Granted by Tauri's `core:default`, used by nothing of the window: refused now.
        for command in [
            "plugin:app|version",
            "plugin:window|title",
            "plugin:path|resolve_directory",
        ] {
            let answer = call(command, serde_json::json!({"label": "main", "directory": 1})).await;
            assert!(answer.contains("not allowed"), "{command}: {answer}");
        }
        // What the window does use still works: an app command.
        let answer = call("workspaces_recent", serde_json::json!({})).await;
        assert_eq!(answer, "allowed");
    })
    .await;
}
