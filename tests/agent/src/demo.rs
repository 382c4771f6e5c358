//! Fills a workspace with a few real sessions, so a new user sees something in the studio.

use std::path::Path;
use std::process::Command;

/// Each demo run: a prompt and the agent's arguments.
const DEMO_RUNS: &[(&str, &[&str])] = &[
    (
        "Plan a three-day trip to Kyoto",
        &[
            "--nodes",
            "plan:150,research:250,>search:100,>read:120,write:200",
            "--layout",
            "documented",
        ],
    ),
    // The engine alone writes no result: the studio can tell only that this one went quiet.
    (
        "Summarise the support tickets from last week",
        &["--nodes", "fetch:120,classify:150,summarise:200"],
    ),
    (
        "Draft release notes for v2.1",
        &[
            "--nodes",
            "collect:100,draft:150,review:120",
            "--fail",
            "review",
            "--layout",
            "documented",
        ],
    ),
    (
        "Translate the onboarding guide",
        &[
            "--nodes",
            "split:100,translate:200,merge:100",
            "--stop-after",
            "translate",
            "--layout",
            "documented",
        ],
    ),
    (
        "Check the docs for broken links",
        &["--nodes", "crawl:150,check:150,report:100", "--layout", "documented"],
    ),
];

pub fn main(args: &[String]) -> Result<u8, String> {
    let [workspace] = args else {
        return Err("fill-demo needs exactly one workspace folder".into());
    };
    let workspace = Path::new(workspace);
    std::fs::create_dir_all(workspace).map_err(|e| format!("cannot create {}: {e}", workspace.display()))?;
    // The agent runs in the workspace: a relative path would point elsewhere from there.
    let workspace =
        &std::fs::canonicalize(workspace).map_err(|e| format!("cannot find {}: {e}", workspace.display()))?;
    let agent = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    for (prompt, agent_args) in DEMO_RUNS {
        let id = crate::run::new_session_id();
        let session = workspace.join(".zibby/output/sessions").join(&id);
        let status = Command::new(&agent)
            .args(*agent_args)
            .args(["--prompt", prompt])
            .current_dir(workspace)
            .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
            .env("ZIBBY_PIN_SESSION_PATH", "1")
            .env("ZIBBY_SESSION_PATH", &session)
            .env("ZIBBY_SESSION_ID", &id)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map_err(|e| format!("cannot run {}: {e}", agent.display()))?;
        println!("{id}  {prompt}  (exit {})", status.code().unwrap_or(-1));
        // Distinct millisecond ids, and distinct update times for a stable order.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(0)
}
