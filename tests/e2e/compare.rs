//! Comparing runs in the real window (issue 16): two sessions marked in the table and compared,
//! and a session's last run compared with the run before it, from the session view.

use fantoccini::Client;
use serde_json::json;

use crate::harness::{call_backend, click, eventually, screenshot, wait_for, App, Workspace};
use crate::{text_contents, FANOUT, PIPELINE};

/// The nodes the compare view lists, as `change name`.
async fn compared_nodes(client: &Client) -> Vec<String> {
    let changes = text_contents(client, "#compare-view .compare-change").await;
    let names = text_contents(client, "#compare-view .compare-node-name").await;
    changes
        .into_iter()
        .zip(names)
        .map(|(c, n)| format!("{c} {n}"))
        .collect()
}

#[tokio::test]
async fn two_sessions_marked_in_the_table_are_compared_node_by_node() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    App::run(&workspace, move |client| async move {
        wait_for(&client, &format!("tr[data-session-id='{}']", PIPELINE.id)).await;
        click(
            &client,
            &format!("tr[data-session-id='{}'] [data-testid='mark']", PIPELINE.id),
        )
        .await;
        click(
            &client,
            &format!("tr[data-session-id='{}'] [data-testid='mark']", FANOUT.id),
        )
        .await;
        click(&client, "#compare-marked").await;
        wait_for(&client, "#compare-count").await;
        let nodes = eventually("the compare view lists both runs' nodes", || async {
            let nodes = compared_nodes(&client).await;
            if nodes.len() == 8 {
                Ok(nodes)
            } else {
                Err(format!("{nodes:?}"))
            }
        })
        .await;
        for name in PIPELINE.nodes_in_order {
            assert!(
                nodes.contains(&format!("removed {name}")),
                "{name} only in A: {nodes:?}"
            );
        }
        for name in FANOUT.nodes_in_order {
            assert!(nodes.contains(&format!("added {name}")), "{name} only in B: {nodes:?}");
        }
        let count = text_contents(&client, "#compare-count").await.join("");
        assert!(count.contains("8 of 8 nodes differ"), "{count}");
        screenshot(&client, "compare-two-sessions").await;
        // n goes to the next changed node.
        let first = text_contents(&client, "[role='option'][aria-selected='true'] .compare-node-name").await;
        wait_for(&client, "#compare-view [role='listbox']")
            .await
            .send_keys("n")
            .await
            .expect("press n");
        eventually("n selects the next changed node", || async {
            let now = text_contents(&client, "[role='option'][aria-selected='true'] .compare-node-name").await;
            if now != first {
                Ok(())
            } else {
                Err(format!("still {now:?}"))
            }
        })
        .await;
        click(&client, "#compare-close").await;
        eventually("the compare view closes", || async {
            match text_contents(&client, "#compare-view").await.len() {
                0 => Ok(()),
                n => Err(format!("{n} compare views")),
            }
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn a_run_is_compared_with_the_run_before_it_from_the_session_view() {
    let workspace = Workspace::with_test_agent(&["--nodes", "plan:50,write:50", "--prompt", "{prompt}"]);
    App::run(&workspace, move |client| async move {
        wait_for(&client, "#run-agent option").await;
        let first = call_backend(
            &client,
            "runStart",
            vec![json!({"agent": "test-agent", "prompt": "first draft"})],
        )
        .await;
        let session = first["ok"]["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{first}"))
            .to_owned();
        let ended = |wanted: usize| {
            let client = client.clone();
            let session = session.clone();
            async move {
                eventually("the session's runs ended", || async {
                    let runs = call_backend(&client, "runsList", vec![json!(session)]).await;
                    let runs = runs["ok"].as_array().cloned().unwrap_or_default();
                    if runs.len() == wanted && runs.iter().all(|r| r["status"] != "running") {
                        Ok(())
                    } else {
                        Err(format!("{runs:?}"))
                    }
                })
                .await
            }
        };
        ended(1).await;
        let again = json!({"agent": "test-agent", "prompt": "second draft", "session_id": session});
        call_backend(&client, "runStart", vec![again]).await;
        ended(2).await;
        click(&client, &format!("tr[data-session-id='{session}'] .session-id")).await;
        wait_for(&client, &format!("#session-view[data-session-id='{session}']")).await;
        eventually("Compare runs is enabled", || async {
            let button = wait_for(&client, "#session-compare-previous").await;
            match button.attr("disabled").await.map_err(|e| e.to_string())? {
                None => Ok(()),
                Some(_) => Err("disabled".to_owned()),
            }
        })
        .await;
        click(&client, "#session-compare-previous").await;
        wait_for(&client, "#compare-count").await;
        let nodes = eventually("both runs' nodes are compared", || async {
            let nodes = compared_nodes(&client).await;
            if nodes.len() == 2 {
                Ok(nodes)
            } else {
                Err(format!("{nodes:?}"))
            }
        })
        .await;
        // The prompt is printed in the first node: it changed; the second node is the same.
        assert_eq!(nodes, ["changed plan", "same write"]);
        let lines = text_contents(&client, "#compare-view .diff-line.added")
            .await
            .join("\n");
        assert!(lines.contains("second draft"), "{lines}");
        screenshot(&client, "compare-previous-run").await;
        click(&client, "#compare-close").await;
        wait_for(&client, &format!("#session-view[data-session-id='{session}']")).await;
    })
    .await;
}
