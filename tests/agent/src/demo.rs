//! The demo: `fill-demo` fills a workspace with sessions that show what the studio does, and an
//! agent to run, so a new user sees something in every column and view and can press Run (then
//! Stop) at once; `demo` is that agent.
//!
//! The sessions are made the honest way: the studio's own `zstudio` runs the agent `demo` (so the
//! store knows each run's agent, prompts, output and what its nodes used), continues one session
//! with a second prompt, stops one run, lets a budget stop another, pins one session and tags and
//! annotates another; one run is started outside the studio, as from a terminal. Nothing writes
//! the store but `zstudio`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The demo agent's graph: four nodes of one to two seconds (long enough to watch, and to press
/// Stop during one: the node finishes, the next never begins).
const DEMO_NODES: &str = "plan:1500,research:2000,write:1500,review:1000";

/// What the demo agent's nodes report they used, as Claude Code, Gemini CLI and Codex print it:
/// Claude Code says its cost, Gemini CLI's is estimated from the price table, Codex names no model
/// so its cost is not known.
const DEMO_USAGE: &str = "plan=claude-code,research=gemini-cli,write=claude-code,review=codex";

/// Run options the demo agent takes from its environment (a JSON array of strings), after its own
/// and before those on its command line: how `fill-demo` varies the runs it asks the studio for,
/// the agent's command (`.zibby/studio.toml`) staying the one the user runs.
pub const OPTIONS_VARIABLE: &str = "ZIBBY_DEMO_OPTIONS";

/// `demo [RUN OPTIONS]`: a run of [`DEMO_NODES`] with coloured output, the documented layout
/// (prompt files, a result) and usage reported ([`DEMO_USAGE`]); then the options of
/// [`OPTIONS_VARIABLE`], then those given after it, each winning over what came before
/// (`--nodes write:1500` for a replay).
pub fn agent(args: &[String]) -> Result<u8, String> {
    let mut all: Vec<String> = [
        "--nodes",
        DEMO_NODES,
        "--lines",
        "4",
        "--color",
        "--layout",
        "documented",
        "--usage",
        DEMO_USAGE,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if let Ok(options) = std::env::var(OPTIONS_VARIABLE) {
        let options: Vec<String> = serde_json::from_str(&options)
            .map_err(|e| format!("${OPTIONS_VARIABLE}: not a JSON array of strings: {e}"))?;
        all.extend(options);
    }
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

/// The demo's Kyoto session: run, then continued with a second prompt (two messages, two runs to
/// compare), and pinned. A nested graph; its nodes report usage in all three formats.
const KYOTO: &[&str] = &[
    "--nodes",
    "plan:100,research:120,>search:80,>read:100,write:120,review:80",
    "--usage",
    "plan=claude-code,search=gemini-cli,read=gemini-cli,write=claude-code,review=codex",
];
const KYOTO_PROMPTS: [&str; 2] = [
    "Plan a three-day trip to Kyoto",
    "Make day two about temples and gardens",
];

/// The demo's runs the studio starts and lets end, oldest first: a prompt and the agent's options.
const FINISHED_RUNS: &[(&str, &[&str])] = &[
    (
        "Summarise last week's support tickets",
        &[
            "--nodes",
            "fetch:80,classify:120,summarise:150",
            "--usage",
            "classify=codex,summarise=claude-code",
        ],
    ),
    (
        "Draft release notes for v2.1",
        &[
            "--nodes",
            "collect:80,draft:150,review:100",
            "--usage",
            "draft=claude-code,review=claude-code",
            "--fail",
            "review",
            "--fail-reason",
            "the notes cite issue #412, which does not exist",
        ],
    ),
];

/// The run the studio stops (gracefully: the node under way finishes, the next never begins).
const STOPPED_RUN: (&str, &[&str]) = (
    "Translate the onboarding guide into German",
    &[
        "--nodes",
        "split:150,translate:1200,merge:150",
        "--usage",
        "split=gemini-cli,translate=claude-code,merge=claude-code",
    ],
);
/// The stopped run is stopped once this node began.
const STOP_DURING: &str = "translate";

/// The run its budget stops (`zstudio run --max-cost`, as the Run bar's "Max $"): every node priced
/// (Claude Code's usage), the budget between what the first node and the first two cost.
const BUDGET_PROMPT: &str = "Compare three hosting providers for the docs site";
const BUDGET_RUN: &[&str] = &[
    "--nodes",
    "gather:120,compare:150,recommend:120",
    "--usage",
    "gather=claude-code,compare=claude-code,recommend=claude-code",
];

/// The budget of [`BUDGET_RUN`]: the first node spends 85 % of it (`budget.warning`), the second
/// crosses it (`budget.reached`: the run stops after it, the third never begins). The test agent's
/// figures depend only on the node and the prompt, so they are known before the run.
fn stopping_budget() -> f64 {
    let cost = |node: &str| {
        let printed = crate::usage::stream(crate::usage::Format::ClaudeCode, node, BUDGET_PROMPT, 0);
        let result: serde_json::Value =
            serde_json::from_str(printed.last().map_or("", String::as_str)).unwrap_or_default();
        result["total_cost_usd"].as_f64().unwrap_or_default()
    };
    let (first, second) = (cost("gather"), cost("compare"));
    (first / 0.85).min(first + second / 2.0)
}

/// The session tagged and annotated: the failed release notes, tagged for the release and a review,
/// with a note of what to do before running it again.
const TAGS: &[&str] = &["release-2.1", "needs-review"];
const NOTE: &str = "The draft cites issue #412, which does not exist: check the changelog before running it again.";

/// The run with a long output (a link check of a few hundred pages) that search finds words in.
const LINKS_PROMPT: &str = "Check the docs for broken links";
const LINKS: &[&str] = &[
    "--nodes",
    "crawl:150,check:200,report:100",
    "--usage",
    "crawl=gemini-cli,report=claude-code",
];

/// The run outside the studio, as from a terminal: the plain test agent, its session folder its
/// own; the studio knows only what the folder says (its prompt, in `result.json`; its nodes and
/// what they used), not its agent nor its messages, and the prompt says so.
const OUTSIDE_PROMPT: &str = "Run in a terminal: its agent and messages unknown";
const OUTSIDE: &[&str] = &[
    "--nodes",
    "fetch:80,answer:120",
    "--layout",
    "documented",
    "--usage",
    "answer=gemini-cli",
];

/// The long output of the link check: a line per page, a few of them broken.
fn link_report() -> String {
    const TOPICS: [&str; 8] = [
        "install", "agents", "sessions", "compare", "export", "search", "pins", "cost",
    ];
    let mut report = String::new();
    for page in 0..480 {
        let topic = TOPICS[page % TOPICS.len()];
        let url = format!("https://docs.example.com/guide/{topic}-{}", page / TOPICS.len() + 1);
        if page % 97 == 41 {
            report.push_str(&format!(
                "broken link: {url}#proxy-settings (404 Not Found), linked from /guide/{topic}\n"
            ));
        } else {
            report.push_str(&format!("checked {url}: 200 OK\n"));
        }
    }
    report
}

/// `fill-demo WORKSPACE [--db PATH] [--zstudio PATH]`, idempotent: the demo sessions when the
/// workspace has none, and the agents file (`.zibby/studio.toml`) when it has none; what is there
/// is left alone. The runs go into the store `--db` names, else `zstudio`'s default (the app's);
/// `zstudio` is `--zstudio`, else the one beside this program, else the one on the PATH.
pub fn main(args: &[String]) -> Result<u8, String> {
    let mut workspace = None;
    let mut db = None;
    let mut zstudio = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--db" => db = Some(PathBuf::from(crate::value_of(args, &mut i, "--db")?)),
            "--zstudio" => zstudio = Some(PathBuf::from(crate::value_of(args, &mut i, "--zstudio")?)),
            other if workspace.is_none() && !other.starts_with("--") => workspace = Some(PathBuf::from(other)),
            other => {
                return Err(format!(
                    "fill-demo: unexpected `{other}` (fill-demo WORKSPACE [--db PATH] [--zstudio PATH])"
                ))
            }
        }
        i += 1;
    }
    let workspace = workspace.ok_or("fill-demo needs a workspace folder")?;
    std::fs::create_dir_all(&workspace).map_err(|e| format!("cannot create {}: {e}", workspace.display()))?;
    // The agent runs in the workspace: a relative path would point elsewhere from there.
    let workspace =
        std::fs::canonicalize(&workspace).map_err(|e| format!("cannot find {}: {e}", workspace.display()))?;
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
        println!(
            "{}: has sessions already, left as they are (remove the folder for a new demo)",
            workspace.display()
        );
        return Ok(0);
    }
    let studio = Zstudio {
        program: match zstudio {
            Some(program) => program,
            None => find_zstudio(&agent)?,
        },
        workspace: workspace.clone(),
        db,
    };

    let outside = run_outside(&agent, &workspace)?;
    println!("{outside}  run outside the studio: named by its folder, no agent or messages known");
    for (prompt, options) in FINISHED_RUNS {
        let run = studio.run(prompt, None, options)?;
        println!("{}  {}: {prompt}", run.session_id, run.said());
        if run.status == "error" {
            let tag: Vec<&str> = ["tag", run.session_id.as_str()].iter().chain(TAGS).copied().collect();
            studio.zstudio(&tag)?;
            studio.zstudio(&["note", &run.session_id, NOTE])?;
            println!("{}  tagged {} and annotated", run.session_id, TAGS.join(", "));
        }
    }
    let (prompt, options) = STOPPED_RUN;
    let stopped = studio.run_stopped_during(prompt, options, STOP_DURING)?;
    println!("{}  {}: {prompt}", stopped.session_id, stopped.said());
    let budget = format!("{:.6}", stopping_budget());
    let capped = studio.run_with(BUDGET_PROMPT, &["--max-cost", &budget], BUDGET_RUN)?;
    if capped.status != "cancelled" {
        return Err(format!(
            "the run with a budget of ${budget} was not stopped by it: {}",
            capped.said()
        ));
    }
    println!(
        "{}  stopped by its budget (${budget}): {BUDGET_PROMPT}",
        capped.session_id
    );
    let links = studio.run(
        LINKS_PROMPT,
        None,
        &[LINKS, &["--say", &format!("check={}", link_report())]].concat(),
    )?;
    println!(
        "{}  {}: {LINKS_PROMPT} (a long output: search it)",
        links.session_id,
        links.said()
    );
    let kyoto = studio.run(KYOTO_PROMPTS[0], None, KYOTO)?;
    studio.run(KYOTO_PROMPTS[1], Some(&kyoto.session_id), KYOTO)?;
    studio.zstudio(&["pin", &kyoto.session_id])?;
    println!(
        "{}  continued, pinned: {} / {}",
        kyoto.session_id, KYOTO_PROMPTS[0], KYOTO_PROMPTS[1]
    );
    Ok(0)
}

/// `zstudio` beside this program (`cargo build` puts both in one folder), else on the PATH.
fn find_zstudio(me: &Path) -> Result<PathBuf, String> {
    let beside = me.with_file_name("zstudio");
    if beside.is_file() {
        return Ok(beside);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("zstudio"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            format!(
                "fill-demo runs the demo through zstudio, which is neither beside {} nor on the PATH: \
                 build it first (`cargo build -p zstudio`) or name it with --zstudio PATH",
                me.display()
            )
        })
}

/// The plain test agent run in the workspace as from a terminal (the engine's markers on, its
/// session folder its own): the studio hears of it from the folder alone. Returns its session id.
fn run_outside(agent: &Path, workspace: &Path) -> Result<String, String> {
    let output = Command::new(agent)
        .arg("run")
        .args(OUTSIDE)
        .args(["--prompt", OUTSIDE_PROMPT])
        .current_dir(workspace)
        .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
        .env_remove(OPTIONS_VARIABLE)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", agent.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "the run outside the studio failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    stdout
        .lines()
        .find_map(|line| line.split("◆ Session ").nth(1))
        .map(|id| id.trim().to_owned())
        .ok_or_else(|| "the run outside the studio named no session".into())
}

/// The studio's command line on the demo workspace and its store.
struct Zstudio {
    program: PathBuf,
    workspace: PathBuf,
    db: Option<PathBuf>,
}

/// How a run the studio followed ended (`run_finished` of `zstudio run --json`).
struct Finished {
    session_id: String,
    status: String,
    error: Option<String>,
}

impl Finished {
    fn said(&self) -> String {
        match &self.error {
            Some(error) => format!("{} ({error})", self.status),
            None => self.status.clone(),
        }
    }
}

impl Zstudio {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command.args(args).arg("--workspace").arg(&self.workspace);
        if let Some(db) = &self.db {
            command.arg("--db").arg(db);
        }
        command.stdin(Stdio::null());
        command
    }

    /// `zstudio ARGS --json`, the demo agent it runs given `options`.
    fn json_command(&self, args: &[&str], options: &[&str]) -> Command {
        let mut command = self.command(args);
        let options = serde_json::to_string(options).expect("strings serialise");
        command.arg("--json").env(OPTIONS_VARIABLE, options);
        command
    }

    /// `zstudio ARGS --json`: what it printed, one JSON value a line; an error with what it said
    /// when it exits with `ok_codes` not holding its status.
    fn json_lines(&self, args: &[&str], options: &[&str], ok_codes: &[i32]) -> Result<Vec<serde_json::Value>, String> {
        let output = self
            .json_command(args, options)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        if !output.status.code().is_some_and(|code| ok_codes.contains(&code)) {
            return Err(format!(
                "`zstudio {}` failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    /// `zstudio ARGS`, which must succeed.
    fn zstudio(&self, args: &[&str]) -> Result<(), String> {
        self.json_lines(args, &[], &[0]).map(drop)
    }

    /// Runs the agent `demo` on `prompt` (in `session`, continuing it) with these options, to its
    /// end; trusted, since this is the user's own demo.
    fn run(&self, prompt: &str, session: Option<&str>, options: &[&str]) -> Result<Finished, String> {
        match session {
            Some(session) => self.run_with(prompt, &["--session", session], options),
            None => self.run_with(prompt, &[], options),
        }
    }

    /// [`Zstudio::run`] in a new session, with more of `zstudio run`'s options (`--max-cost`).
    fn run_with(&self, prompt: &str, more: &[&str], options: &[&str]) -> Result<Finished, String> {
        let mut args = vec!["run", "--agent", "demo", "--trust", "--prompt", prompt];
        args.extend_from_slice(more);
        // 0 success, 1 error, 2 cancelled: each a way for a demo run to end.
        let events = self.json_lines(&args, options, &[0, 1, 2])?;
        finished(prompt, events.iter())
    }

    /// Runs the agent `demo` on `prompt` as [`Zstudio::run`] does, and stops it from another
    /// process as a user would (`zstudio stop`, as the window's Stop) once `node` began: the node
    /// finishes, the next never begins.
    fn run_stopped_during(&self, prompt: &str, options: &[&str], node: &str) -> Result<Finished, String> {
        use std::io::BufRead;
        let args = ["run", "--agent", "demo", "--trust", "--prompt", prompt];
        let mut child = self
            .json_command(&args, options)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let mut events = std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(&line).ok());
        let mut session = None;
        let begun = events.by_ref().find_map(|event| {
            if event["type"] == "run_started" {
                session = event["session_id"].as_str().map(str::to_owned);
            }
            (event["type"] == "node_begin" && event["node"] == node).then_some(())
        });
        let stop = match (begun, &session) {
            (Some(()), Some(session)) => self.zstudio(&["stop", session]),
            _ => Err(format!("`zstudio run` on “{prompt}” ended before {node} began")),
        };
        let ended = finished(prompt, events.collect::<Vec<_>>().iter());
        let _ = child.wait();
        stop.and(ended)
    }
}

/// How a run ended, from the events of `zstudio run --json`.
fn finished<'a>(prompt: &str, mut events: impl Iterator<Item = &'a serde_json::Value>) -> Result<Finished, String> {
    let finished = events
        .find(|event| event["type"] == "run_finished")
        .ok_or_else(|| format!("`zstudio run` on “{prompt}” did not say how the run ended"))?;
    Ok(Finished {
        session_id: finished["session_id"].as_str().unwrap_or_default().to_owned(),
        status: finished["status"].as_str().unwrap_or_default().to_owned(),
        error: finished["error"].as_str().map(str::to_owned),
    })
}
