//! Budgets (issue 44): a run stopped at the node that spent its budget, the day's budget that
//! refuses the next run, usage that cannot be priced, and trust that asks again only when a
//! budget is loosened. The test agent prints Claude Code's (or Codex's) usage per node.

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

use super::{agent_binary, json_lines, workspace_with_agents, zstudio};

/// The agent `spender` of a workspace: three nodes, each printing `usage` (`claude-code`,
/// `codex`); `budget` lines added to it, `workspace_budget` at the end of the file.
fn write_agents(root: &Path, usage: &str, budget: &str, workspace_budget: &str) {
    let agent = agent_binary();
    std::fs::create_dir_all(root.join(".zibby")).unwrap();
    std::fs::write(
        root.join(".zibby/studio.toml"),
        format!(
            "[[agent]]\nname = \"spender\"\nrun = [\"{agent}\", \"--nodes\", \"plan:300,research:1500,write:300\", \
             \"--usage\", \"plan={usage},research={usage},write={usage}\"]\n{budget}\n{workspace_budget}\n"
        ),
    )
    .unwrap();
}

fn run_spender(root: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--json",
        "--agent",
        "spender",
        "--prompt",
        "Plan a trip to Kyoto",
        "-w",
        root,
    ];
    args.extend_from_slice(extra);
    zstudio(&args, None)
}

/// The events of `kind` (`node_begin`, `budget_warning`, ...).
fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The events `zstudio run --json` printed for a run that ended cancelled (exit 2).
fn cancelled(output: &std::process::Output) -> Vec<Value> {
    assert_eq!(
        output.status.code(),
        Some(2),
        "cancelled: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(output)
}

/// The nodes the run began, in order.
fn nodes_begun(events: &[Value]) -> Vec<&str> {
    of_type(events, "node_begin")
        .iter()
        .map(|e| e["node"].as_str().unwrap())
        .collect()
}

/// The events of the session's log, in order.
fn log_events(root: &str, session: &str) -> Vec<String> {
    let output = zstudio(&["logs", session, "--json", "-w", root], None);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let logs: Value = serde_json::from_slice(&output.stdout).unwrap();
    logs.as_array()
        .unwrap()
        .iter()
        .map(|l| l["event"].as_str().unwrap().to_owned())
        .collect()
}

/// Each node's cost as `show` reports it.
fn node_costs(root: &str, session: &str) -> Vec<(String, f64)> {
    let shown: Value = serde_json::from_slice(&zstudio(&["show", session, "--json", "-w", root], None).stdout).unwrap();
    shown["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_owned(),
                n["usage"]["cost_usd"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_run_past_its_budget_stops_after_the_node_that_crossed_it_and_trust_asks_only_when_raised() {
    // What each node costs with this prompt (the test agent's figures are steady), learnt in
    // another workspace.
    let learning = TempDir::new().unwrap();
    let learnt = learning.path().to_str().unwrap();
    write_agents(learning.path(), "claude-code", "", "");
    let free = json_lines(&run_spender(learnt, &["--trust"]));
    let costs = node_costs(learnt, free[0]["session_id"].as_str().unwrap());
    assert_eq!(
        costs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["plan", "research", "write"]
    );
    // Crossed by the second node: the first alone stays below it.
    let limit = (costs[0].1 + costs[1].1) * 0.999;
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    write_agents(workspace.path(), "claude-code", &format!("max_cost_usd = {limit}"), "");

    let output = run_spender(root, &["--trust"]);
    let events = cancelled(&output);
    let begun = nodes_begun(&events);
    assert_eq!(begun, ["plan", "research"], "no node starts past the budget");
    let ended = of_type(&events, "node_end");
    assert!(
        ended
            .iter()
            .any(|e| e["node"] == "research" && e["status"] == "success"),
        "{ended:?}"
    );
    let finished = of_type(&events, "run_finished")[0];
    assert_eq!(finished["status"], "cancelled");
    assert_eq!(finished["stopped_by"], "budget");
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind);
    let (warning, reached) = (position("budget_warning").unwrap(), position("budget_reached").unwrap());
    assert!(warning < reached, "the warning comes first");
    assert_eq!(events[reached]["spend"]["limit"], "max_cost_usd");
    assert!(events[reached]["spend"]["cost_usd"].as_f64().unwrap() >= limit);
    // The crossing node's work is kept: its folder and its usage.
    let stopped = events[0]["session_id"].as_str().unwrap();
    let folder = workspace.path().join(".zibby/output/sessions").join(stopped);
    assert!(folder.join("research/raw_stream_output.txt").is_file());
    assert!(!folder.join("write").exists(), "write never ran");
    let logged = log_events(root, stopped);
    let at = |event: &str| {
        logged
            .iter()
            .position(|e| e == event)
            .unwrap_or_else(|| panic!("{event}: {logged:?}"))
    };
    assert!(at("budget.warning") < at("budget.reached"), "{logged:?}");

    // Lowered: no question. Raised or removed: asked again.
    write_agents(
        workspace.path(),
        "claude-code",
        &format!("max_cost_usd = {}", limit / 2.0),
        "",
    );
    let lowered = run_spender(root, &[]);
    assert_eq!(
        lowered.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&lowered.stderr)
    );
    for raised in [format!("max_cost_usd = {}", limit * 2.0), String::new()] {
        write_agents(workspace.path(), "claude-code", &raised, "");
        let refused = run_spender(root, &[]);
        let said: Value = serde_json::from_slice(&refused.stderr).unwrap();
        assert_eq!(said["error"]["code"], "agents_untrusted", "{raised:?}: {said}");
    }
}

#[test]
fn the_daily_budget_refuses_the_next_run_and_over_budget_starts_it_anyway() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    write_agents(workspace.path(), "claude-code", "", "[budget]\ndaily_usd = 0.0001");
    // Nothing spent today yet: it starts, and spends past the day's budget.
    let first = run_spender(root, &["--trust"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let refused = run_spender(root, &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty(), "nothing ran");
    let said: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(said["error"]["code"], "budget_exceeded", "{said}");
    let message = said["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("daily budget of $0.0001") && message.contains("spent $"),
        "{message}"
    );
    assert!(message.contains("--over-budget"), "{message}");

    let over = run_spender(root, &["--over-budget"]);
    assert!(over.status.success(), "{}", String::from_utf8_lossy(&over.stderr));
    let session = json_lines(&over)[0]["session_id"].as_str().unwrap().to_owned();
    assert!(log_events(root, &session).contains(&"budget.over_budget".to_owned()));
}

#[test]
fn usage_that_cannot_be_priced_is_said_once_and_never_counted_as_nothing() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    write_agents(workspace.path(), "codex", "max_cost_usd = 0.01", "");
    let output = run_spender(root, &["--trust"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let events = json_lines(&output);
    let unpriced = of_type(&events, "budget_unpriced");
    assert_eq!(unpriced.len(), 1, "said once: {unpriced:?}");
    assert_eq!(unpriced[0]["nodes_priced"], 0);
    assert!(of_type(&events, "budget_warning").is_empty(), "no guessed cost");
    let session = events[0]["session_id"].as_str().unwrap();
    let logged = log_events(root, session);
    assert_eq!(
        logged.iter().filter(|e| *e == "budget.unpriced").count(),
        1,
        "{logged:?}"
    );

    // Its tokens can be limited instead.
    write_agents(workspace.path(), "codex", "max_cost_usd = 0.01\nmax_tokens = 10", "");
    let capped = run_spender(root, &[]);
    let events = json_lines(&capped);
    assert_eq!(of_type(&events, "run_finished")[0]["stopped_by"], "budget");
    assert_eq!(of_type(&events, "budget_reached")[0]["spend"]["limit"], "max_tokens");
    let begun = of_type(&events, "node_begin");
    assert_eq!(begun.len(), 1, "stopped after the first node: {begun:?}");
}

#[test]
fn max_cost_overrides_the_agents_budget_for_one_run_and_a_bad_one_is_refused() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    write_agents(workspace.path(), "claude-code", "", "");
    let output = run_spender(root, &["--trust", "--max-cost", "0.000001"]);
    let events = json_lines(&output);
    assert_eq!(of_type(&events, "run_finished")[0]["stopped_by"], "budget");
    assert_eq!(of_type(&events, "node_begin").len(), 1);
    let refused = run_spender(root, &["--max-cost=0"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--max-cost"));
}

/// A run the studio did not start, seen in the workspace (listed once), counts toward the day.
#[test]
fn a_run_the_studio_did_not_start_but_saw_counts_toward_the_day() {
    let workspace = TempDir::new().unwrap();
    let root = workspace.path().to_str().unwrap();
    write_agents(workspace.path(), "claude-code", "", "[budget]\ndaily_usd = 0.0001");
    // Started from a terminal, not by the studio: its nodes print Claude Code's usage.
    let outside = std::process::Command::new(agent_binary())
        .args([
            "--nodes",
            "plan:10",
            "--usage",
            "plan=claude-code",
            "--prompt",
            "elsewhere",
        ])
        .current_dir(workspace.path())
        .output()
        .unwrap();
    assert!(outside.status.success(), "{}", String::from_utf8_lossy(&outside.stderr));
    let listed = zstudio(&["sessions", "--json", "-w", root], None);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    // The first run the studio starts here: the day's spend is the session it saw.
    let refused = run_spender(root, &["--trust"]);
    let said: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(said["error"]["code"], "budget_exceeded", "{said}");
}

/// An agent that never looks at the stop files: the budget's stop escalates past the grace, as
/// Stop's does, and the run is still said to be stopped by its budget.
#[test]
fn a_budget_stop_the_agent_ignores_escalates_past_the_grace() {
    // `research` reaches the budget as it begins (its usage first), then ignores the stop.
    let agent = agent_binary();
    let workspace = workspace_with_agents(&format!(
        "[[agent]]\nname = \"spender\"\nrun = [\"{agent}\", \"--nodes\", \"plan:100,research:20000\", \
         \"--lines\", \"0\", \"--usage\", \"research=claude-code\", \"--ignore-stop\"]\nmax_cost_usd = 0.000001\n"
    ));
    let root = workspace.path().to_str().unwrap();
    let started = std::time::Instant::now();
    let output = run_spender(root, &["--trust", "--grace", "1"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "not the 20 s node"
    );
    let events = json_lines(&output);
    let finished = of_type(&events, "run_finished")[0];
    assert_eq!(finished["status"], "cancelled");
    assert_eq!(finished["stopped_by"], "budget");
    let session = events[0]["session_id"].as_str().unwrap();
    let logged = log_events(root, session);
    assert!(logged.contains(&"run.signalled".to_owned()), "{logged:?}");
}

/// A node whose usage reaches the budget and that ends at once races the stop file: the next node
/// may begin before the studio wrote it (the engine looks before each node). That node is then
/// stopped at once, forced (`budget.overrun`), never let run to its end; no later node begins.
#[test]
fn a_node_that_races_the_budgets_stop_is_stopped_at_once() {
    let agent = agent_binary();
    // `plan` prints its usage and ends at once; any usage is past one token.
    let workspace = workspace_with_agents(&format!(
        "[[agent]]\nname = \"racer\"\nrun = [\"{agent}\", \"--nodes\", \"plan:0,research:20000,write:0\", \
         \"--usage\", \"plan=claude-code\"]\nmax_tokens = 1\n"
    ));
    let root = workspace.path().to_str().unwrap();
    let output = zstudio(&["run", "--json", "--agent", "racer", "--trust", "-w", root], None);
    let events = cancelled(&output);
    let begun = nodes_begun(&events);
    assert!(!begun.contains(&"write"), "{begun:?}");
    let ended = of_type(&events, "node_end");
    assert!(
        !ended
            .iter()
            .any(|e| e["node"] == "research" && e["status"] == "success"),
        "research began past the budget and ran to its end: {ended:?}"
    );
    let finished = of_type(&events, "run_finished")[0];
    assert_eq!(
        (&finished["status"], &finished["stopped_by"]),
        (&Value::from("cancelled"), &Value::from("budget"))
    );
    // When research began, the log says so.
    let session = events[0]["session_id"].as_str().unwrap();
    if begun.contains(&"research") {
        assert!(log_events(root, session).contains(&"budget.overrun".to_owned()));
    }
}
