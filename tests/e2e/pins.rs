//! Pins: kept in the store, so they outlive the app; and ids that are not session ids are refused.

use fantoccini::{Client, Locator};
use serde_json::json;

use crate::harness::{call_backend, eventually, screenshot, tooltip_of, wait_for, App, Workspace};
use crate::{texts, FANOUT, PIPELINE};

/// The stars of the table, top row first: (session id, aria-pressed, tooltip). The tooltip is the
/// window's own (`aria-describedby`), not a native `title`, which WebKitGTK can leave on screen.
async fn stars(client: &Client) -> Result<Vec<(String, String, String)>, String> {
    let mut stars = Vec::new();
    let rows = client
        .find_all(Locator::Css("tr[data-session-id]"))
        .await
        .map_err(|e| e.to_string())?;
    for row in rows {
        let id = row.attr("data-session-id").await.map_err(|e| e.to_string())?;
        let star = row
            .find(Locator::Css("[data-testid='pin']"))
            .await
            .map_err(|e| e.to_string())?;
        let pressed = star.attr("aria-pressed").await.map_err(|e| e.to_string())?;
        let title = tooltip_of(client, &star).await?;
        stars.push((id.unwrap_or_default(), pressed.unwrap_or_default(), title));
    }
    Ok(stars)
}

fn star(id: &str, pinned: bool) -> (String, String, String) {
    let title = if pinned { "Unpin" } else { "Pin" };
    (id.to_owned(), pinned.to_string(), title.to_owned())
}

#[tokio::test]
async fn a_pinned_session_stays_pinned_and_first_after_a_restart() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    App::run(&workspace, |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        assert_eq!(
            stars(&client).await.unwrap(),
            [star(FANOUT.id, false), star(PIPELINE.id, false)],
            "nothing is pinned yet: the most recent session comes first"
        );
        let pin = format!("tr[data-session-id='{}'] [data-testid='pin']", PIPELINE.id);
        wait_for(&client, &pin)
            .await
            .click()
            .await
            .expect("click the star of the older session");
        eventually("the pinned session moves to the top, its star pressed", || async {
            let now = stars(&client).await?;
            if now == [star(PIPELINE.id, true), star(FANOUT.id, false)] {
                Ok(())
            } else {
                Err(format!("{now:?}"))
            }
        })
        .await;
        screenshot(&client, "pinned.png").await;
    })
    .await;

    // The same workspace and store, a new app process.
    App::run(&workspace, |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        assert_eq!(
            stars(&client).await.unwrap(),
            [star(PIPELINE.id, true), star(FANOUT.id, false)],
            "the pin is in the store, so the relaunched app lists the session pinned and first"
        );
        assert_eq!(texts(&client, ".session-id").await, [PIPELINE.id, FANOUT.id]);
    })
    .await;
}

#[tokio::test]
async fn a_session_id_that_is_a_path_is_refused() {
    let workspace = Workspace::with_sessions(&[PIPELINE]);
    App::run(&workspace, |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        for id in ["../x", "a/b", ""] {
            let answer = call_backend(&client, "pinAdd", vec![json!(id)]).await;
            assert_eq!(
                answer["error"]["code"], "invalid_session_id",
                "pin_add must refuse `{id}` before it reaches the store: {answer}"
            );
        }
        let answer = call_backend(&client, "pinRemove", vec![json!("../x")]).await;
        assert_eq!(
            answer["error"]["code"], "invalid_session_id",
            "pin_remove too: {answer}"
        );
        let answer = call_backend(&client, "runsList", vec![json!("..")]).await;
        assert_eq!(answer["error"]["code"], "invalid_session_id", "runs_list too: {answer}");
        let answer = call_backend(&client, "pinAdd", vec![json!(PIPELINE.id)]).await;
        assert_eq!(answer, json!({ "ok": null }), "a real id is pinned");
    })
    .await;
}

#[tokio::test]
async fn delete_asks_first_then_moves_the_folder_to_the_trash() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    let folder = workspace.path().join(".zibby/output/sessions").join(PIPELINE.id);
    let trash = workspace.data_home().join("Trash/files").join(PIPELINE.id);
    App::run(&workspace, move |client| async move {
        let delete = format!("tr[data-session-id='{}'] [data-testid='delete']", PIPELINE.id);
        crate::harness::click(&client, &delete).await;
        let dialog = wait_for(&client, "[data-testid='delete-dialog']").await;
        let text = dialog.text().await.unwrap();
        assert!(
            text.contains(PIPELINE.id) && text.contains("cannot be undone"),
            "{text}"
        );
        screenshot(&client, "delete-dialog.png").await;
        crate::harness::click(&client, "[data-testid='cancel-delete']").await;
        eventually("Cancel closes the dialog and keeps the session", || async {
            let open = client
                .find_all(Locator::Css("[data-testid='delete-dialog']"))
                .await
                .map_err(|e| e.to_string())?;
            if open.is_empty() {
                Ok(())
            } else {
                Err("the dialog is still open".into())
            }
        })
        .await;
        assert!(folder.is_dir(), "nothing deleted on Cancel");

        crate::harness::click(&client, &delete).await;
        crate::harness::click(&client, "[data-testid='confirm-delete']").await;
        eventually("the session leaves the table", || async {
            let ids = texts(&client, ".session-id").await;
            if ids == [FANOUT.id] {
                Ok(())
            } else {
                Err(format!("{ids:?}"))
            }
        })
        .await;
        assert!(!folder.exists(), "the folder left the sessions folder");
        assert!(trash.is_dir(), "and is in the trash: {}", trash.display());
    })
    .await;
}
