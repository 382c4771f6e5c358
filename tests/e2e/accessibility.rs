//! Accessibility in the real window: axe-core (ui/node_modules/axe-core, the version
//! ui/package.json pins) run over every view, in light and in dark (GTK's dark variant, as a dark
//! desktop asks for it), and no violation allowed. The views: the empty workspace and its agent
//! form, the trust prompt, the sessions table with a search, two sessions compared (the compare
//! view), a session's view and each of its tabs, the file viewer, the delete dialog, a live run in Live runs and in its view, the quit
//! dialog, the workspace menu, a run stopping and a run ended.

use std::fs;
use std::time::Duration;

use fantoccini::Client;
use serde_json::{json, Value};

use crate::harness::{click, repo_root, screenshot, start_run, wait_for, App, Workspace};

pub(crate) const THEMES: [(&str, &str); 2] = [("light", "Adwaita"), ("dark", "Adwaita:dark")];

/// What axe found wrong in one view: a line per rule, with the elements it names.
async fn violations(client: &Client, view: &str) -> Vec<String> {
    let axe = fs::read_to_string(repo_root().join("ui/node_modules/axe-core/axe.min.js"))
        .expect("read ui/node_modules/axe-core/axe.min.js (run `npm ci` in ui/)");
    // Loaded once per page: the script defines `window.axe`.
    let loaded = client
        .execute(
            &format!("if (!window.axe) {{ {axe} }} return typeof window.axe;"),
            vec![],
        )
        .await
        .expect("load axe-core into the page");
    assert_eq!(loaded, json!("object"), "axe-core is loaded");
    let script = "const done = arguments[arguments.length - 1]; \
                  requestAnimationFrame(() => requestAnimationFrame(() => \
                    window.axe.run(document, { resultTypes: ['violations'] }).then( \
                      (result) => done({ ok: result.violations.map((v) => ({ \
                        id: v.id, impact: v.impact, help: v.help, \
                        nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary })) \
                      })) }), \
                      (error) => done({ error: String(error) }))));";
    let result = client.execute_async(script, vec![]).await.expect("run axe-core");
    let found = match result.get("ok") {
        Some(Value::Array(found)) => found.clone(),
        _ => panic!("axe-core failed in {view}: {result}"),
    };
    found
        .iter()
        .map(|violation| {
            let nodes = violation["nodes"].as_array().cloned().unwrap_or_default();
            let elements: Vec<String> = nodes
                .iter()
                .take(4)
                .map(|node| {
                    let summary = node["summary"].as_str().unwrap_or_default().replace('\n', " ");
                    format!("      {} ({summary})", node["target"].as_str().unwrap_or_default())
                })
                .collect();
            format!(
                "  {view}: {} [{}] {}: {} element(s)\n{}",
                violation["id"].as_str().unwrap_or_default(),
                violation["impact"].as_str().unwrap_or_default(),
                violation["help"].as_str().unwrap_or_default(),
                nodes.len(),
                elements.join("\n")
            )
        })
        .collect()
}

/// Checks one view and keeps what axe found (all views are checked before the test fails, so one
/// run reports everything).
pub(crate) async fn check(client: &Client, theme: &str, view: &str, found: &mut Vec<String>) {
    let name = format!("{view} ({theme})");
    screenshot(client, &format!("a11y-{theme}-{}.png", view.replace(' ', "-"))).await;
    found.extend(violations(client, &name).await);
}

pub(crate) fn assert_none(found: &[String]) {
    assert!(
        found.is_empty(),
        "axe-core found {} violation(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The first launch on an empty folder, its agent form, and a workspace's agents not trusted yet.
#[tokio::test]
async fn the_empty_workspace_the_agent_form_and_the_trust_prompt_have_no_axe_violations() {
    let mut found = Vec::new();
    for (theme, gtk_theme) in THEMES {
        let workspace = Workspace::empty();
        let (tx, rx) = std::sync::mpsc::channel();
        App::run_with_env(&workspace, &[("GTK_THEME", gtk_theme)], move |client| async move {
            let mut found = Vec::new();
            wait_for(&client, ".empty #agent-add").await;
            check(&client, theme, "empty workspace", &mut found).await;
            click(&client, "#agent-add").await;
            wait_for(&client, "#agent-form #agent-name").await;
            check(&client, theme, "agent form", &mut found).await;
            tx.send(found).expect("hand back the findings");
        })
        .await;
        found.extend(rx.recv().expect("the findings"));

        let workspace = Workspace::with_untrusted_agent("echo", &["echo", "{prompt}"]);
        let (tx, rx) = std::sync::mpsc::channel();
        App::run_with_env(&workspace, &[("GTK_THEME", gtk_theme)], move |client| async move {
            let mut found = Vec::new();
            start_run(&client, "hello").await;
            wait_for(&client, "#trust-dialog").await;
            check(&client, theme, "trust prompt", &mut found).await;
            tx.send(found).expect("hand back the findings");
        })
        .await;
        found.extend(rx.recv().expect("the findings"));
    }
    assert_none(&found);
}

/// The table with sessions, a session's view with each tab, the delete dialog, a run live in Live
/// runs and in its view, a search, the dialog of quitting with that run live, the workspace menu,
/// and the run stopping, then ended.
#[tokio::test]
async fn the_table_the_session_view_its_tabs_and_the_dialogs_have_no_axe_violations() {
    let mut found = Vec::new();
    for (theme, gtk_theme) in THEMES {
        let workspace = Workspace::with_test_agent(&["--nodes", "plan:300,write:60000", "--prompt", "{prompt}"]);
        workspace.add_sessions(&[crate::PIPELINE, crate::FANOUT]);
        let folder = workspace.path().file_name().unwrap().to_string_lossy().into_owned();
        let pipeline = crate::PIPELINE.id;
        let (tx, rx) = std::sync::mpsc::channel();
        App::run_with_env(&workspace, &[("GTK_THEME", gtk_theme)], move |client| async move {
            let mut found = Vec::new();
            wait_for(&client, &format!("tr[data-session-id='{pipeline}']")).await;
            check(&client, theme, "table", &mut found).await;

            let fanout = crate::FANOUT.id;
            click(
                &client,
                &format!("tr[data-session-id='{pipeline}'] [data-testid='mark']"),
            )
            .await;
            click(&client, &format!("tr[data-session-id='{fanout}'] [data-testid='mark']")).await;
            click(&client, "#compare-marked").await;
            wait_for(&client, "#compare-count").await;
            check(&client, theme, "compare view", &mut found).await;
            click(&client, "#compare-close").await;

            click(&client, &format!("tr[data-session-id='{pipeline}'] .session-id")).await;
            wait_for(&client, &format!("#session-view[data-session-id='{pipeline}']")).await;
            for tab in ["timeline", "output", "nodes", "logs", "conversation", "files"] {
                click(&client, &format!("[data-tab='{tab}']")).await;
                wait_for(&client, &format!("[data-panel='{tab}']")).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                check(&client, theme, &format!("session view, {tab} tab"), &mut found).await;
            }
            click(&client, ".file-entry[data-path]").await;
            wait_for(&client, "#file-viewer").await;
            check(&client, theme, "file viewer", &mut found).await;

            click(&client, "#session-delete").await;
            wait_for(&client, "[data-testid='delete-dialog']").await;
            check(&client, theme, "delete dialog", &mut found).await;
            click(&client, "[data-testid='cancel-delete']").await;

            start_run(&client, "kyotoplan").await;
            wait_for(&client, ".live-run .node[data-node='write'][data-status='running']").await;
            check(&client, theme, "live run", &mut found).await;
            let live = crate::harness::eventually("the live run has a session", || async {
                let ids = crate::text_contents(&client, ".live-run .live-session-id").await;
                ids.into_iter()
                    .find(|id| !id.is_empty())
                    .ok_or("no session yet".to_owned())
            })
            .await;
            click(&client, &format!("tr[data-session-id='{live}'] .session-id")).await;
            wait_for(&client, "#session-stop").await;
            check(&client, theme, "session view of a live run", &mut found).await;

            wait_for(&client, "#search")
                .await
                .send_keys("kyotoplan")
                .await
                .expect("type a search");
            wait_for(&client, ".search-hit[data-session-id]").await;
            check(&client, theme, "search hits", &mut found).await;

            crate::x11::ask_to_close(&folder).expect("ask the window to close");
            wait_for(&client, "#quit-dialog").await;
            check(&client, theme, "quit dialog", &mut found).await;
            click(&client, "#quit-cancel").await;

            click(&client, "#workspace-switcher").await;
            wait_for(&client, ".recent-workspace").await;
            check(&client, theme, "workspace menu", &mut found).await;
            click(&client, "#workspace-open-cloud").await;
            wait_for(&client, "#cloud-clear-cache").await;
            check(&client, theme, "cloud form", &mut found).await;
            click(&client, "[data-testid='cancel-cloud']").await;

            click(&client, ".live-run .stop").await;
            wait_for(&client, ".live-run .force-stop").await;
            check(&client, theme, "stopping", &mut found).await;
            click(&client, ".live-run .force-stop").await;
            wait_for(&client, ".live-run[data-status='cancelled']").await;
            check(&client, theme, "ended run", &mut found).await;
            tx.send(found).expect("hand back the findings");
        })
        .await;
        found.extend(rx.recv().expect("the findings"));
    }
    assert_none(&found);
}
