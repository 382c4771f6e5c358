//! The demo a new user opens first (issue 30), in the real window: a workspace filled by
//! `zibby-test-agent fill-demo` as `scripts/open-studio.sh` fills it (the studio's `zstudio` runs
//! the agent `demo` into the store the app then opens), where every column and view has something
//! real in it: agents, messages and costs in the table, a pin, tags and a note, a run stopped by
//! its budget, search, a compare view with a changed node, and a run started from the window with
//! a cost badge.

use fantoccini::Client;
use serde_json::Value;

use crate::harness::{self, click, eventually, screenshot, wait_for, App, Workspace};
use crate::text_contents;

/// One row of the sessions table as the window shows it.
#[derive(Debug)]
struct Row {
    id: String,
    title: String,
    agent: String,
    messages: String,
    cost: String,
    pinned: bool,
}

/// The table's rows, read in one go (the watcher may redraw the table between two queries).
async fn rows(client: &Client) -> Result<Vec<Row>, String> {
    let script = "return [...document.querySelectorAll('tr[data-session-id]')].map((row) => ({ \
        id: row.dataset.sessionId, \
        title: row.querySelector('.session-title')?.textContent ?? '', \
        agent: row.querySelector('td.agent')?.textContent.trim() ?? '', \
        messages: row.querySelector('td.messages')?.textContent.trim() ?? '', \
        cost: row.querySelector(\"[data-testid='cost']\")?.textContent.trim() ?? '', \
        pinned: row.classList.contains('pinned') }));";
    let value = client.execute(script, Vec::new()).await.map_err(|e| e.to_string())?;
    let text = |row: &Value, key: &str| row[key].as_str().unwrap_or_default().to_owned();
    Ok(value
        .as_array()
        .ok_or_else(|| format!("not an array: {value}"))?
        .iter()
        .map(|row| Row {
            id: text(row, "id"),
            title: text(row, "title"),
            agent: text(row, "agent"),
            messages: text(row, "messages"),
            cost: text(row, "cost"),
            pinned: row["pinned"] == true,
        })
        .collect())
}

/// A cost as the table shows a known one: `$0.0123`, or `≥ $0.0123` when not every node is priced.
fn is_a_cost(text: &str) -> bool {
    let figure = text.strip_prefix("≥ ").unwrap_or(text);
    figure
        .strip_prefix('$')
        .is_some_and(|number| number.parse::<f64>().is_ok_and(|n| n > 0.0))
}

#[tokio::test]
async fn the_demo_shows_agents_messages_costs_a_pin_search_and_a_changed_node() {
    let workspace = Workspace::empty();
    // Made as a user's is: fill-demo with the zstudio built beside it, into the app's store.
    harness::succeeded(
        std::process::Command::new(harness::test_agent())
            .arg("fill-demo")
            .arg(workspace.path())
            .arg("--db")
            .arg(workspace.db())
            .output(),
        "fill-demo",
    );
    App::run(&workspace, move |client| async move {
        wait_for(&client, "tr[data-session-id]").await;
        let rows = eventually("the demo's seven sessions, their agent, messages and cost", || async {
            let rows = rows(&client).await?;
            let ready = rows.len() == 7 && rows.iter().all(|row| !row.cost.is_empty());
            if ready {
                Ok(rows)
            } else {
                Err(format!("{} rows: {rows:?}", rows.len()))
            }
        })
        .await;

        // The studio's runs: named by their agent, their prompts counted, what they used priced.
        let (ran, outside): (Vec<&Row>, Vec<&Row>) = rows.iter().partition(|row| row.agent == "demo");
        assert_eq!(ran.len(), 6, "{rows:#?}");
        for row in &ran {
            assert!(
                row.messages.parse::<u32>().is_ok_and(|n| n >= 1),
                "a message count: {row:?}"
            );
            assert!(is_a_cost(&row.cost), "a cost: {row:?}");
        }
        // The run outside the studio: named by its folder, its agent and messages not known.
        let [outside] = outside.as_slice() else {
            panic!("one run outside the studio: {rows:#?}")
        };
        assert!(outside.title.starts_with("Run in a terminal"), "{outside:?}");
        assert_eq!((outside.agent.as_str(), outside.messages.as_str()), ("—", "—"));

        // Pinned, listed first: the session continued with a second prompt.
        let pinned: Vec<&Row> = rows.iter().filter(|row| row.pinned).collect();
        assert_eq!(pinned.len(), 1, "{rows:#?}");
        let kyoto = pinned[0];
        assert_eq!(rows[0].id, kyoto.id, "the pinned session first");
        assert_eq!(
            (kyoto.title.as_str(), kyoto.messages.as_str()),
            ("Plan a three-day trip to Kyoto", "2")
        );
        let total = text_contents(&client, "#sessions-cost").await.join("");
        assert!(total.starts_with("≥ $") && total.ends_with(" in all"), "{total}");
        screenshot(&client, "demo-sessions.png").await;

        // Tagged and annotated: the failed release notes, its tags chips in its row and a filter.
        let failed = rows
            .iter()
            .find(|row| row.title == "Draft release notes for v2.1")
            .unwrap_or_else(|| panic!("the release notes: {rows:#?}"));
        let chips = format!("tr[data-session-id='{}'] .row-tags .tag-chip", failed.id);
        assert_eq!(text_contents(&client, &chips).await, ["release-2.1", "needs-review"]);
        wait_for(&client, "#filter-tag").await;
        let offered = crate::attributes(&client, "#filter-tag option", "value").await;
        assert_eq!(offered, ["", "needs-review", "release-2.1"]);
        // Stopped by its budget: cancelled after its second node.
        let capped = rows
            .iter()
            .find(|row| row.title == "Compare three hosting providers for the docs site")
            .unwrap_or_else(|| panic!("the run stopped by its budget: {rows:#?}"));
        let status = format!("tr[data-session-id='{}'] [data-status]", capped.id);
        assert_eq!(crate::attributes(&client, &status, "data-status").await, ["cancelled"]);
        click(&client, &format!("tr[data-session-id='{}'] .session-id", failed.id)).await;
        let note = wait_for(&client, "#session-note .sv-note-text").await;
        assert!(note.text().await.unwrap().contains("issue #412"), "the note");
        screenshot(&client, "demo-tagged.png").await;
        click(&client, "#session-close").await;

        // Search finds words in the long output of the link check.
        let links = rows
            .iter()
            .find(|row| row.title == "Check the docs for broken links")
            .unwrap_or_else(|| panic!("the link check: {rows:#?}"));
        let search = wait_for(&client, "#search").await;
        search.send_keys("proxy settings").await.expect("type a search");
        eventually("the broken links found in its output", || async {
            let hits = crate::attributes(&client, ".search-hit", "data-session-id").await;
            (hits.len() >= 4 && hits.iter().all(|id| *id == links.id))
                .then_some(())
                .ok_or(format!("{hits:?}"))
        })
        .await;
        search.send_keys("\u{E00C}").await.expect("press Escape");

        // Its last run against the one before: the plan node printed the new prompt.
        click(&client, &format!("tr[data-session-id='{}'] .session-id", kyoto.id)).await;
        wait_for(&client, &format!("#session-view[data-session-id='{}']", kyoto.id)).await;
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
        let nodes = eventually("both runs' nodes, plan changed", || async {
            let changes = text_contents(&client, "#compare-view .compare-change").await;
            let names = text_contents(&client, "#compare-view .compare-node-name").await;
            let nodes: Vec<String> = changes.iter().zip(&names).map(|(c, n)| format!("{c} {n}")).collect();
            (nodes.len() == 6).then_some(nodes.clone()).ok_or(format!("{nodes:?}"))
        })
        .await;
        assert!(nodes.contains(&"changed plan".to_owned()), "{nodes:?}");
        let costs = (
            text_contents(&client, "#compare-cost-a").await.join(""),
            text_contents(&client, "#compare-cost-b").await.join(""),
        );
        assert!(
            costs.0.contains("(4 of 6 nodes priced)") && costs.1.contains("(4 of 6 nodes priced)"),
            "both runs' totals: {costs:?}"
        );
        screenshot(&client, "demo-compare.png").await;
        click(&client, "#compare-close").await;

        // A run started from the window: the demo agent reports usage, so its first node gets a
        // cost badge on the Timeline; no trust asked (fill-demo ran it trusted in this store).
        harness::start_run(&client, "Plan a picnic").await;
        wait_for(&client, ".live-run .node[data-node='plan'][data-status='success']").await;
        click(&client, "[data-tab='timeline']").await;
        let badge = wait_for(&client, "[data-panel='timeline'] [data-testid='usage-badge']").await;
        let badge = badge.text().await.expect("the badge's text");
        assert!(badge.starts_with('$') && badge.contains("tok"), "{badge}");
        click(&client, "#session-stop").await;
        wait_for(&client, ".live-run[data-status='cancelled']").await;
    })
    .await;
}
