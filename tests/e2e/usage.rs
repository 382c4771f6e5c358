//! What sessions cost, in the real window: the table's Cost column (sortable), the session
//! header's total (a lower bound says so) and a badge per node on the Timeline, each checked by
//! axe-core in light and dark; and two runs' costs side by side in the compare view.

use fantoccini::Client;

use crate::accessibility::{assert_none, check, THEMES};
use crate::harness::{click, eventually, repo_root, screenshot, wait_for, App, Workspace};
use crate::{text_contents, FANOUT, PIPELINE};

async fn cost_cells(client: &Client) -> Vec<(String, String)> {
    let ids = text_contents(client, "tr[data-session-id] .session-id").await;
    let costs = text_contents(client, "tr[data-session-id] [data-testid='cost']").await;
    ids.into_iter()
        .zip(costs.into_iter().map(|c| c.trim().to_owned()))
        .collect()
}

#[tokio::test]
async fn costs_show_in_the_table_the_session_header_and_on_the_timeline() {
    let workspace = Workspace::with_sessions(&[PIPELINE, FANOUT]);
    // The pipeline's `plan` printed Claude Code's `json` result, `execute` a Gemini CLI stream
    // with a model no price table knows; `report` printed no usage.
    let session = workspace.path().join(".zibby/output/sessions").join(PIPELINE.id);
    let fixtures = repo_root().join("tests/fixtures/usage");
    for (node, fixture) in [
        ("plan", "claude-code-json.json"),
        ("execute", "gemini-cli-stream-json-unknown-model.jsonl"),
    ] {
        std::fs::copy(fixtures.join(fixture), session.join(node).join("raw_stream_output.txt")).unwrap();
    }
    let mut found = Vec::new();
    for (theme, gtk_theme) in THEMES {
        let (tx, rx) = std::sync::mpsc::channel();
        App::run_with_env(&workspace, &[("GTK_THEME", gtk_theme)], move |client| async move {
            let mut found = Vec::new();
            wait_for(&client, "tr[data-session-id]").await;
            let expected = |first: &str, second: &str| {
                let cost = |id: &str| if id == PIPELINE.id { "≥ $0.0123" } else { "–" };
                vec![
                    (first.to_owned(), cost(first).to_owned()),
                    (second.to_owned(), cost(second).to_owned()),
                ]
            };
            eventually("the table's Cost column", || async {
                let seen = cost_cells(&client).await;
                (seen == expected(FANOUT.id, PIPELINE.id))
                    .then_some(())
                    .ok_or(format!("{seen:?}"))
            })
            .await;

            // The workspace's total: every node of both sessions, one of them priced.
            let nodes = PIPELINE.nodes_in_order.len() + FANOUT.nodes_in_order.len();
            eventually("the workspace's total beside the count", || async {
                let seen = text_contents(&client, "#sessions-cost").await;
                (seen == ["≥ $0.0123 in all"]).then_some(()).ok_or(format!("{seen:?}"))
            })
            .await;
            let title = client
                .find(fantoccini::Locator::Css("#sessions-cost"))
                .await
                .expect("the total")
                .attr("title")
                .await
                .expect("its title")
                .unwrap_or_default();
            assert!(
                title.starts_with(&format!("All sessions: ≥ $0.0123 (1 of {nodes} nodes priced)")),
                "{title}"
            );
            click(&client, "#sort-by-cost").await;
            eventually("the costliest session first", || async {
                let seen = cost_cells(&client).await;
                (seen == expected(PIPELINE.id, FANOUT.id))
                    .then_some(())
                    .ok_or(format!("{seen:?}"))
            })
            .await;
            check(&client, theme, "cost column", &mut found).await;

            click(&client, &format!("tr[data-session-id='{}'] .session-id", PIPELINE.id)).await;
            wait_for(&client, &format!("#session-view[data-session-id='{}']", PIPELINE.id)).await;
            eventually("the header's total", || async {
                let seen = text_contents(&client, "#session-cost").await;
                (seen == ["≥ $0.0123 (1 of 3 nodes priced)"])
                    .then_some(())
                    .ok_or(format!("{seen:?}"))
            })
            .await;
            click(&client, "[data-tab='timeline']").await;
            wait_for(&client, "[data-panel='timeline']").await;
            eventually("a badge per node that reported usage", || async {
                let seen = text_contents(&client, "[data-panel='timeline'] [data-testid='usage-badge']").await;
                let ok = seen.len() == 2 && seen[0] == "$0.0123 · 2.1k tok" && seen[1].starts_with("– · ");
                ok.then_some(()).ok_or(format!("{seen:?}"))
            })
            .await;
            check(&client, theme, "usage badges", &mut found).await;
            let path = screenshot(&client, &format!("usage-timeline-{theme}.png")).await;
            eprintln!("screenshot: {}", path.display());
            tx.send(found).expect("hand back the findings");
        })
        .await;
        found.extend(rx.recv().expect("the findings"));
    }
    assert_none(&found);
}

/// The same pipeline run twice (the markers and the plain capture), its `plan` node's agent
/// reporting $0.0123 in one and $0.0483 in the other: the compare view gives each run's total,
/// each side's cost of the node and what one cost more than the other.
#[tokio::test]
async fn the_compare_view_puts_both_runs_costs_side_by_side() {
    const PLAIN: crate::harness::CapturedSession = crate::harness::CapturedSession {
        capture: "head-bb10e85-02-pipeline-plain",
        id: "1795952465061_2lkm",
        nodes_in_order: &["plan", "execute", "report"],
        quiet_for: std::time::Duration::from_secs(60 * 60),
    };
    let workspace = Workspace::with_sessions(&[PIPELINE, PLAIN]);
    let fixtures = repo_root().join("tests/fixtures/usage");
    let sessions = workspace.path().join(".zibby/output/sessions");
    for (id, fixture) in [
        (PIPELINE.id, "claude-code-json.json"),
        (PLAIN.id, "claude-code-stream-json.jsonl"),
    ] {
        std::fs::copy(
            fixtures.join(fixture),
            sessions.join(id).join("plan/raw_stream_output.txt"),
        )
        .unwrap();
    }
    App::run(&workspace, move |client| async move {
        for id in [PIPELINE.id, PLAIN.id] {
            wait_for(&client, &format!("tr[data-session-id='{id}']")).await;
            click(&client, &format!("tr[data-session-id='{id}'] [data-testid='mark']")).await;
        }
        click(&client, "#compare-marked").await;
        wait_for(&client, "#compare-count").await;
        let mut totals = eventually("each run's total", || async {
            let a = text_contents(&client, "#compare-cost-a").await;
            let b = text_contents(&client, "#compare-cost-b").await;
            (a.len() == 1 && b.len() == 1)
                .then(|| vec![a[0].clone(), b[0].clone()])
                .ok_or(format!("{a:?} {b:?}"))
        })
        .await;
        // A is whichever was marked first: the change's sign goes with it.
        let cheaper_first = totals[0].contains("$0.0123");
        totals.sort();
        assert_eq!(
            totals,
            ["≥ $0.0123 (1 of 3 nodes priced)", "≥ $0.0483 (1 of 3 nodes priced)"]
        );
        let plan = eventually("the plan node in the list", || async {
            let names = text_contents(&client, "#compare-view .compare-node-name").await;
            names.iter().position(|n| n == "plan").ok_or(format!("{names:?}"))
        })
        .await;
        click(&client, &format!("#compare-node-{plan}")).await;
        let (a, b, change) = if cheaper_first {
            ("$0.0123 · 2.1k tok", "$0.0483 · 33.2k tok", "+$0.0360, +31,147 tokens")
        } else {
            ("$0.0483 · 33.2k tok", "$0.0123 · 2.1k tok", "−$0.0360, −31,147 tokens")
        };
        eventually("both sides' cost of plan and the change", || async {
            let seen = (
                text_contents(&client, "#compare-side-a [data-testid='usage-badge']").await,
                text_contents(&client, "#compare-side-b [data-testid='usage-badge']").await,
                text_contents(&client, "#compare-node-cost-change").await,
            );
            (seen.0 == [a] && seen.1 == [b] && seen.2 == [change])
                .then_some(())
                .ok_or(format!("{seen:?}"))
        })
        .await;
        let mut found = Vec::new();
        check(&client, "light", "compare costs", &mut found).await;
        assert_none(&found);
    })
    .await;
}
