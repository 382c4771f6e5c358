//! A run's budget set in the Run bar (issue 44; `zstudio run --max-cost` in the window): that run
//! stops after the node that reaches it, shown on the Live runs strip, and the next run has the
//! agent's again; usage that cannot be priced says the budget is not enforced. The budget of
//! `.zibby/studio.toml`, with its desktop notifications, is `notifications.rs`'s.

use fantoccini::{Client, Locator};

use crate::harness::{click, eventually, node_costs, screenshot, spender_args, test_agent, wait_for, App, Workspace};

const PROMPT: &str = "Plan a trip to Kyoto";

/// A workspace whose one agent, `spender`, is the test agent with `args`, trusted, no budget.
fn spender(args: &[String]) -> Workspace {
    let agent = test_agent().display().to_string();
    let run: Vec<&str> = std::iter::once(agent.as_str())
        .chain(args.iter().map(String::as_str))
        .collect();
    Workspace::with_agent("spender", &run)
}

/// Runs the agent on the prompt with `budget` typed in the Run bar's budget field.
async fn run_with_budget(client: &Client, budget: &str) {
    let field = wait_for(client, "#run-max-cost").await;
    field.send_keys(budget).await.expect("type the budget");
    crate::harness::start_run(client, PROMPT).await;
}

/// The nodes the Live runs strip shows for `run` (an element of it).
async fn strip_nodes(run: &fantoccini::elements::Element) -> Vec<String> {
    let mut names = Vec::new();
    for node in run.find_all(Locator::Css(".node")).await.expect("the run's nodes") {
        names.push(node.attr("data-node").await.expect("a node's name").unwrap_or_default());
    }
    names
}

#[tokio::test]
async fn a_budget_typed_in_the_run_bar_stops_that_run_only() {
    let args = spender_args(300, 300, 300);
    let costs = node_costs(&args, PROMPT);
    // The first node spends 90 % of it, the second crosses it.
    let budget = format!("{:.6}", costs[0].1 / 0.9);
    let workspace = spender(&args);
    App::run(&workspace, |client| async move {
        run_with_budget(&client, &budget).await;
        let stopped = wait_for(&client, ".live-run[data-status='cancelled']").await;
        let end = stopped.find(Locator::Css(".live-current-node")).await.unwrap();
        assert_eq!(end.text().await.unwrap(), "stopped by its budget");
        assert_eq!(strip_nodes(&stopped).await, ["plan", "research"], "write never started");
        let badge = stopped.find(Locator::Css(".budget-badge")).await.unwrap();
        assert_eq!(badge.attr("data-budget").await.unwrap().as_deref(), Some("reached"));
        let field = wait_for(&client, "#run-max-cost").await;
        assert_eq!(field.prop("value").await.unwrap().as_deref(), Some(""), "for one run");
        screenshot(&client, "budget-run-bar.png").await;

        // The next run has the agent's budget, which is none: all three nodes run.
        click(&client, ".live-run .dismiss").await;
        crate::harness::start_run(&client, PROMPT).await;
        let done = wait_for(&client, ".live-run[data-status='success']").await;
        assert_eq!(strip_nodes(&done).await, ["plan", "research", "write"]);
    })
    .await;
}

#[tokio::test]
async fn a_budget_over_usage_that_cannot_be_priced_says_it_is_not_enforced() {
    let mut args = spender_args(300, 300, 300);
    args[3] = "plan=codex,research=codex,write=codex".to_owned();
    let workspace = spender(&args);
    App::run(&workspace, |client| async move {
        run_with_budget(&client, "0.01").await;
        let badge = wait_for(&client, ".live-run .budget-badge[data-budget='unpriced']").await;
        let said = badge.text().await.unwrap();
        assert!(said.starts_with("budget not enforced: 0 of "), "{said}");
        assert!(said.ends_with(" nodes priced"), "{said}");
        eventually("the run goes on to its end", || async {
            let done = client
                .find_all(Locator::Css(".live-run[data-status='success']"))
                .await
                .map_err(|e| e.to_string())?;
            (done.len() == 1).then_some(()).ok_or("not yet".to_owned())
        })
        .await;
    })
    .await;
}
