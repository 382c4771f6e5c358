//! The window's keys, pressed in the real window: ↑/↓ and Enter in the table, `/` to search, `P`
//! pin, `S` stop (again: force), `Delete` delete (after a confirmation), Escape to close.

use fantoccini::Client;
use serde_json::json;

use crate::harness::{eventually, wait_for, App, Workspace};
use crate::{FANOUT, PIPELINE};

const UP: &str = "\u{E013}";
const DOWN: &str = "\u{E015}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";
const DELETE: &str = "\u{E017}";

/// Presses `keys` where the keyboard focus is (the page itself when no field has it).
async fn press(client: &Client, keys: &str) {
    client
        .active_element()
        .await
        .expect("the focused element")
        .send_keys(keys)
        .await
        .unwrap_or_else(|e| panic!("press {keys:?}: {e}"));
}

/// Takes the focus out of any field, as a click on the page does.
async fn leave_fields(client: &Client) {
    client
        .execute("document.activeElement?.blur(); return null;", vec![])
        .await
        .expect("blur the focused field");
}

/// What a script returns in the page.
async fn evaluate(client: &Client, script: &str) -> Result<serde_json::Value, String> {
    client.execute(script, vec![]).await.map_err(|e| e.to_string())
}

async fn selected_row(client: &Client) -> Result<String, String> {
    let value = evaluate(
        client,
        "return document.querySelector('tr.selected[data-session-id]')?.dataset.sessionId ?? null",
    )
    .await?;
    value
        .as_str()
        .map(str::to_owned)
        .ok_or(format!("no row selected: {value}"))
}

async fn is_there(client: &Client, css: &str) -> bool {
    client
        .execute("return document.querySelector(arguments[0]) !== null", vec![json!(css)])
        .await
        .map(|found| found == json!(true))
        .unwrap_or(false)
}

#[tokio::test]
async fn the_keys_select_open_pin_search_and_delete() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    let folder = workspace.path().join(".zibby/output/sessions").join(PIPELINE.id);
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        leave_fields(&client).await;
        // The most recent (FANOUT) first.
        for (key, expected) in [
            (DOWN, FANOUT.id),
            (DOWN, PIPELINE.id),
            (UP, FANOUT.id),
            (DOWN, PIPELINE.id),
        ] {
            press(&client, key).await;
            eventually("the arrow moves the selection", || async {
                let selected = selected_row(&client).await?;
                (selected == expected).then_some(()).ok_or(selected)
            })
            .await;
        }

        press(&client, "p").await;
        let star = format!(
            "tr[data-session-id='{}'] [data-testid='pin'][aria-pressed='true']",
            PIPELINE.id
        );
        wait_for(&client, &star).await;

        press(&client, ENTER).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
        leave_fields(&client).await;
        press(&client, ESCAPE).await;
        eventually("Escape closes the session view", || async {
            (!is_there(&client, "#session-view").await)
                .then_some(())
                .ok_or("still open".to_owned())
        })
        .await;

        press(&client, "/").await;
        eventually("/ puts the keyboard in the search box", || async {
            let id = evaluate(&client, "return document.activeElement?.id ?? null").await?;
            (id == json!("search")).then_some(()).ok_or(format!("{id}"))
        })
        .await;
        leave_fields(&client).await;

        press(&client, DELETE).await;
        let dialog = wait_for(&client, "[data-testid='delete-dialog']").await;
        let text = dialog.text().await.unwrap();
        assert!(
            text.contains(PIPELINE.id) && text.contains("cannot be undone"),
            "{text}"
        );
        press(&client, ESCAPE).await;
        eventually("Escape closes the dialog", || async {
            (!is_there(&client, "[data-testid='delete-dialog']").await)
                .then_some(())
                .ok_or("still open".to_owned())
        })
        .await;
        assert!(folder.is_dir(), "nothing deleted when the dialog was closed");
    })
    .await;
}

#[tokio::test]
async fn s_stops_the_selected_run_and_s_again_forces_it() {
    // One long node: a graceful stop would wait for it.
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:60000", "--prompt", "{prompt}"]);
    App::run(&workspace, |client| async move {
        crate::harness::start_run(&client, "stop me by key").await;
        wait_for(&client, ".live-run[data-status='running']").await;
        wait_for(&client, "tr[data-session-id]").await;
        leave_fields(&client).await;
        press(&client, DOWN).await;
        eventually("the live session is selected", || async { selected_row(&client).await }).await;
        press(&client, "s").await;
        eventually("S asks the run to stop: the current node finishes first", || async {
            let label = evaluate(
                &client,
                "return document.querySelector('.live-run .stop')?.textContent ?? null",
            )
            .await?;
            (label == json!("Stopping: the current node finishes first"))
                .then_some(())
                .ok_or(format!("{label}"))
        })
        .await;
        press(&client, "s").await;
        wait_for(&client, ".live-run[data-status='cancelled']").await;
        let runs = crate::harness::call_backend(&client, "runsList", vec![json!(null)]).await;
        assert_eq!(runs["ok"][0]["stopped_by"], "forced", "S again forced it: {runs}");
    })
    .await;
}
