//! The demo: `fill-demo` fills a workspace with a few real sessions and an agent to run, so a new
//! user sees something in the studio and can press Run (then Stop) at once; `demo` is that agent.

use std::path::Path;
use std::process::Command;

/// The demo agent's graph: four nodes of one to two seconds (long enough to watch, and to press
/// Stop during one: the node finishes, the next never begins).
const DEMO_NODES: &str = "plan:1500,research:2000,write:1500,review:1000";

/// `demo [RUN OPTIONS]`: a run of [`DEMO_NODES`] with coloured output and the documented layout
/// (prompt files, a result); options given after it win (`--nodes write:1500` for a replay).
pub fn agent(args: &[String]) -> Result<u8, String> {
    let mut all: Vec<String> = [
        "--nodes",
        DEMO_NODES,
        "--lines",
        "4",
        "--color",
        "--layout",
        "documented",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    all.extend_from_slice(args);
    crate::run::main(&all)
}

/// The agents file `fill-demo` writes: the agent `demo`, run by this very program.
pub fn agents_file(program: &Path) -> String {
    let program = serde_json::Value::from(program.display().to_string());
    format!(
        "# Written by `zibby-test-agent fill-demo`: the demo agent, a stand-in for a Zibby agent.\n\
         [[agent]]\n\
         name = \"demo\"\n\
         run = [{program}, \"demo\", \"--prompt\", \"{{prompt}}\"]\n\
         replay = [{program}, \"demo\", \"--nodes\", \"{{node}}:1500\"]\n"
    )
}

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

/// `fill-demo WORKSPACE`, idempotent: the demo sessions when the workspace has none, and the
/// agents file (`.zibby/studio.toml`) when it has none; what is there is left alone.
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
    let agents = workspace.join(".zibby/studio.toml");
    if std::fs::symlink_metadata(&agents).is_err() {
        let folder = workspace.join(".zibby");
        std::fs::create_dir_all(&folder).map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
        std::fs::write(&agents, agents_file(&agent)).map_err(|e| format!("cannot write {}: {e}", agents.display()))?;
        println!("{}: the agent `demo`", agents.display());
    }
    let sessions = workspace.join(".zibby/output/sessions");
    let has_sessions = std::fs::read_dir(&sessions).is_ok_and(|mut entries| entries.next().is_some());
    if has_sessions {
        return Ok(0);
    }
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
