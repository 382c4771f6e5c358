//! The sessions table's tags and saved views in the window (issue 44): a session tagged with
//! `zstudio tag` shows its tag as a chip in its row, the tag filter narrows the table, and a view
//! saved in the sidebar is the store's (`zstudio view list` lists it, the relaunched window
//! applies it) until deleted there.

use std::ffi::OsStr;

use fantoccini::{key::Key, Client};

use crate::harness::{click, eventually, screenshot, wait_for, zstudio_in, App, Workspace};
use crate::{FANOUT, PIPELINE};

/// The ids of the table's rows, sorted (read in one go: a filter redraws them).
async fn rows(client: &Client) -> Vec<String> {
    let script = "return [...document.querySelectorAll('tr[data-session-id]')].map((tr) => tr.dataset.sessionId)";
    let ids = client.execute(script, vec![]).await.expect("read the rows");
    let mut ids: Vec<String> = serde_json::from_value(ids).expect("the rows' ids");
    ids.sort();
    ids
}

async fn rows_are(client: &Client, what: &str, expected: &[&str]) {
    let mut expected = expected.to_vec();
    expected.sort();
    let expected = &expected;
    eventually(what, || async {
        let ids = rows(client).await;
        if ids == *expected {
            Ok(())
        } else {
            Err(format!("{ids:?}"))
        }
    })
    .await;
}

/// The text of every element `css` finds, read in one go (a listing may redraw the table).
async fn contents(client: &Client, css: &str) -> Vec<String> {
    let script = "return [...document.querySelectorAll(arguments[0])].map((element) => element.textContent)";
    let read = client
        .execute(script, vec![serde_json::json!(css)])
        .await
        .expect("read the page");
    serde_json::from_value(read).expect("texts")
}

/// The saved views `zstudio view list --json` lists: each one's name and filters.
fn views_listed(workspace: &Workspace) -> serde_json::Value {
    let args = ["view", "list", "--json"].map(OsStr::new);
    serde_json::from_slice(&zstudio_in(&workspace.db(), workspace.path(), &args)).expect("view list is JSON")
}

#[tokio::test]
async fn the_table_filters_by_tag_and_views_are_saved_applied_and_deleted() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    let tag = ["tag", PIPELINE.id, "nightly", "<i>raw</i>"].map(OsStr::new);
    zstudio_in(&workspace.db(), workspace.path(), &tag);
    App::run(&workspace, |client| async move {
        let chips = format!("tr[data-session-id='{}'] .row-tags .tag-chip", PIPELINE.id);
        eventually("the tags are chips in the row, as text", || async {
            let shown = contents(&client, &chips).await;
            if shown == ["nightly", "<i>raw</i>"] {
                Ok(())
            } else {
                Err(format!("{shown:?}"))
            }
        })
        .await;
        rows_are(&client, "both sessions", &[PIPELINE.id, FANOUT.id]).await;

        let select = wait_for(&client, "#filter-tag").await;
        select.select_by_value("nightly").await.expect("choose the tag");
        rows_are(&client, "the tag filter keeps the tagged session", &[PIPELINE.id]).await;
        wait_for(&client, ".filters .filter-tag[data-tag='nightly']").await;

        click(&client, "#view-save-start").await;
        wait_for(&client, "#view-name")
            .await
            .send_keys(&format!("nightly runs{}", char::from(Key::Enter)))
            .await
            .expect("name the view");
        wait_for(
            &client,
            ".saved-view[data-view='nightly runs'] .view-apply[aria-current='true']",
        )
        .await;
        screenshot(&client, "saved-views.png").await;
    })
    .await;

    let listed = views_listed(&workspace);
    assert_eq!(listed[0]["name"], "nightly runs", "{listed}");
    assert_eq!(listed[0]["filters"]["tags"], serde_json::json!(["nightly"]), "{listed}");

    // A new app: the view is the store's, and applies its filter to an unfiltered table.
    App::run(&workspace, |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        rows_are(&client, "no filter at launch", &[PIPELINE.id, FANOUT.id]).await;
        click(&client, ".saved-view[data-view='nightly runs'] .view-apply").await;
        rows_are(&client, "the view's tag filter", &[PIPELINE.id]).await;
        click(&client, "[aria-label='Delete the view nightly runs']").await;
        eventually("the view is gone from the sidebar", || async {
            let left = contents(&client, ".saved-view").await;
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        })
        .await;
    })
    .await;
    assert_eq!(views_listed(&workspace), serde_json::json!([]));
}
