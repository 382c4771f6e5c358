//! One agent run, the way the engine prints and writes it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::usage::{self, Format};
use crate::value_of;

const MARKER_PREFIX: &str = "__WORKFLOW_GRAPH_LOG__";
const STOP_FILES: [&str; 2] = [".zibby-stop", ".zibby-studio-stop"];

struct Node {
    name: String,
    millis: u64,
    depth: usize,
}

struct Options {
    nodes: Vec<Node>,
    fail: Option<String>,
    stop_after: Option<String>,
    ignore_stop: bool,
    linger: Duration,
    lines: usize,
    prompt: String,
    documented: bool,
    /// Start a process that ignores SIGTERM and holds stdout open (a runaway tool).
    grandchild: bool,
    /// Start a process that leaves the run's process group and session (`setsid`) and ignores
    /// SIGTERM (a tool that daemonises).
    setsid_grandchild: bool,
    /// Start a daemon: a process whose parent ends at once (a double fork) and that leaves the
    /// run's process group and session (`setsid`), ignoring SIGTERM.
    daemon: bool,
    /// Print this many MB of output lines inside the first node, as fast as possible.
    flood_mb: usize,
    /// Print one line of this many MB inside the first node.
    long_line_mb: usize,
    /// Print raw bytes that are not UTF-8 inside the first node.
    binary: bool,
    /// End stdout without a final newline.
    no_final_newline: bool,
    /// Wait this long after printing the session line, before the first node.
    wait_before: Duration,
    /// Colour the lines printed inside nodes (ANSI SGR), as the engine's output under
    /// `FORCE_COLOR=1` is; markers are never coloured.
    color: bool,
    /// Print these variables of the environment (`env NAME=value`, or `env NAME unset`) in the
    /// first node.
    print_env: Vec<String>,
    /// These nodes print what they used, as these coding agents print it (`--usage`).
    usage: Vec<(String, Format)>,
    /// These nodes print this text too (`--say NODE=TEXT`, its lines).
    say: Vec<(String, String)>,
    /// Why the `--fail` node fails.
    fail_reason: String,
    /// These nodes are custom code nodes (`--custom`): like the engine's, they write no folder.
    custom: Vec<String>,
}

fn parse_nodes(spec: &str) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        let depth = part.chars().take_while(|&c| c == '>').count();
        let part = &part[depth..];
        let (name, millis) = part.split_once(':').unwrap_or((part, "100"));
        let millis = millis
            .parse()
            .map_err(|_| format!("--nodes: `{millis}` is not milliseconds"))?;
        if name.is_empty() {
            return Err(format!("--nodes: empty node name in `{spec}`"));
        }
        let parent_depth = nodes.last().map_or(0, |n: &Node| n.depth);
        if depth > parent_depth + 1 || (nodes.is_empty() && depth > 0) {
            return Err(format!("--nodes: `{name}` nests deeper than the node before it"));
        }
        nodes.push(Node {
            name: name.to_owned(),
            millis,
            depth,
        });
    }
    Ok(nodes)
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        nodes: parse_nodes("plan:300,research:600,write:400")?,
        fail: None,
        stop_after: None,
        ignore_stop: false,
        linger: Duration::ZERO,
        lines: 2,
        prompt: std::env::var("ZIBBY_STUDIO_PROMPT").unwrap_or_default(),
        documented: false,
        grandchild: false,
        setsid_grandchild: false,
        daemon: false,
        flood_mb: 0,
        long_line_mb: 0,
        binary: false,
        no_final_newline: false,
        wait_before: Duration::ZERO,
        color: false,
        print_env: Vec::new(),
        usage: Vec::new(),
        say: Vec::new(),
        fail_reason: "boom: simulated failure".to_owned(),
        custom: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--nodes" => options.nodes = parse_nodes(value_of(args, &mut i, "--nodes")?)?,
            "--fail" => options.fail = Some(value_of(args, &mut i, "--fail")?.to_owned()),
            "--custom" => {
                let names = value_of(args, &mut i, "--custom")?;
                options.custom = names.split(',').filter(|n| !n.is_empty()).map(str::to_owned).collect();
            }
            "--fail-reason" => options.fail_reason = value_of(args, &mut i, "--fail-reason")?.to_owned(),
            "--usage" => options.usage = usage::parse_spec(value_of(args, &mut i, "--usage")?)?,
            "--say" => {
                let said = value_of(args, &mut i, "--say")?;
                let (node, text) = said
                    .split_once('=')
                    .ok_or_else(|| format!("--say: `{said}` is not NODE=TEXT"))?;
                options.say.push((node.to_owned(), text.to_owned()));
            }
            "--stop-after" => options.stop_after = Some(value_of(args, &mut i, "--stop-after")?.to_owned()),
            "--ignore-stop" => options.ignore_stop = true,
            "--spawn-grandchild" => options.grandchild = true,
            "--spawn-setsid-grandchild" => options.setsid_grandchild = true,
            "--spawn-daemon" => options.daemon = true,
            "--binary" => options.binary = true,
            "--color" => options.color = true,
            "--wait-before-ms" => {
                let ms = value_of(args, &mut i, "--wait-before-ms")?;
                options.wait_before =
                    Duration::from_millis(ms.parse().map_err(|_| format!("--wait-before-ms: `{ms}`"))?);
            }
            "--no-final-newline" => options.no_final_newline = true,
            "--flood-mb" => {
                let n = value_of(args, &mut i, "--flood-mb")?;
                options.flood_mb = n.parse().map_err(|_| format!("--flood-mb: `{n}`"))?;
            }
            "--long-line-mb" => {
                let n = value_of(args, &mut i, "--long-line-mb")?;
                options.long_line_mb = n.parse().map_err(|_| format!("--long-line-mb: `{n}`"))?;
            }
            "--linger-ms" => {
                let ms = value_of(args, &mut i, "--linger-ms")?;
                options.linger = Duration::from_millis(ms.parse().map_err(|_| format!("--linger-ms: `{ms}`"))?);
            }
            "--lines" => {
                let n = value_of(args, &mut i, "--lines")?;
                options.lines = n.parse().map_err(|_| format!("--lines: `{n}`"))?;
            }
            "--prompt" => options.prompt = value_of(args, &mut i, "--prompt")?.to_owned(),
            "--print-env" => options
                .print_env
                .push(value_of(args, &mut i, "--print-env")?.to_owned()),
            "--layout" => match value_of(args, &mut i, "--layout")? {
                "engine" => options.documented = false,
                "documented" => options.documented = true,
                other => return Err(format!("--layout: `{other}` is not engine or documented")),
            },
            other => return Err(format!("unknown argument `{other}` (see --help)")),
        }
        i += 1;
    }
    Ok(options)
}

fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `<unix_ms>_<4 base-36 chars>`, like the engine's ids.
pub fn new_session_id() -> String {
    let ms = unix_ms();
    let mut seed = ms ^ (u64::from(std::process::id()) << 20) ^ Instant::now().elapsed().as_nanos() as u64;
    let suffix: String = (0..4)
        .map(|_| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            char::from_digit(((seed >> 33) % 36) as u32, 36).unwrap()
        })
        .collect();
    format!("{ms}_{suffix}")
}

/// The session folder: pinned from the environment, or the agent's own under the working folder.
fn session_folder() -> Result<(String, PathBuf), String> {
    if flag("ZIBBY_PIN_SESSION_PATH") {
        if let Ok(path) = std::env::var("ZIBBY_SESSION_PATH") {
            let path = PathBuf::from(path);
            let id = std::env::var("ZIBBY_SESSION_ID")
                .ok()
                .or_else(|| path.file_name().map(|n| n.to_string_lossy().into_owned()))
                .ok_or("ZIBBY_SESSION_PATH has no folder name")?;
            return Ok((id, path));
        }
    }
    let id = new_session_id();
    let cwd = std::env::current_dir().map_err(|e| format!("no working folder: {e}"))?;
    Ok((id.clone(), cwd.join(".zibby/output/sessions").join(id)))
}

/// Prints like the engine: every line prefixed by the bars of the inner graphs run so far.
struct Printer {
    bars: usize,
    markers: bool,
}

impl Printer {
    fn line(&self, extra_bars: usize, text: &str) {
        let prefix = "│ ".repeat(self.bars + extra_bars);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{prefix}{text}");
        let _ = out.flush();
    }

    fn marker(&self, depth: usize, phase: &str, node: &str) {
        if self.markers {
            let node = serde_json::Value::from(node);
            let marker = format!(r#"{MARKER_PREFIX}{{"phase":"{phase}","node":{node}}}"#);
            self.line(depth.saturating_sub(self.bars), &marker);
        }
    }
}

fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn stop_requested(session: &Path) -> bool {
    STOP_FILES.iter().any(|name| session.join(name).exists())
}

pub fn main(args: &[String]) -> Result<u8, String> {
    let options = parse(args)?;
    let (id, session) = session_folder()?;
    std::fs::create_dir_all(&session).map_err(|e| format!("cannot create {}: {e}", session.display()))?;
    let timestamp = id
        .split('_')
        .next()
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or_else(unix_ms);
    let mut printer = Printer {
        bars: 0,
        markers: flag("ZIBBY_EMIT_GRAPH_MARKERS") || flag("ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS"),
    };
    printer.line(1, &format!(" ◆ Session {id}"));
    std::thread::sleep(options.wait_before);
    let mut events = Vec::new();
    let mut executed = Vec::new();
    let mut open: Vec<OpenNode> = Vec::new();

    for (index, node) in options.nodes.iter().enumerate() {
        // Nodes deeper than this one have ended: close them before it begins.
        close_nodes(
            &mut open,
            node.depth,
            &options.nodes,
            &mut printer,
            &session,
            &mut events,
        )?;
        if !options.ignore_stop && stop_requested(&session) {
            // The current engine deletes the name it knows; the legacy name stays for the studio.
            let _ = std::fs::remove_file(session.join(STOP_FILES[0]));
            printer.line(1, " ◆ Workflow stopped externally");
            printer.line(0, "");
            printer.line(
                0,
                &format!(
                    "RESULT {}",
                    json!({"success": true, "stoppedExternally": true, "executed": executed})
                ),
            );
            eprintln!("\n🛑 External stop requested — ending workflow.");
            if options.documented {
                write_file(
                    &session.join("result.json"),
                    json!({"success": true, "stoppedExternally": true}).to_string(),
                )?;
            }
            std::thread::sleep(options.linger);
            return Ok(0);
        }
        let info = json!({
            "sessionPath": session.display().to_string(),
            "sessionTimestamp": timestamp,
            "currentNode": node.name,
            "createdAt": humantime_now(),
            "config": {},
        });
        write_file(&session.join(".session-info.json"), info.to_string())?;
        if node.depth > printer.bars {
            printer.bars = node.depth;
        }
        printer.marker(node.depth, "node_begin", &node.name);
        printer.line(0, &format!("┌ {}", node.name));
        printer.line(0, &format!("◆ node: {}", node.name));
        events.push(json!({"type": "node_start", "node": node.name, "timestamp": humantime_now()}));
        if index == 0 {
            first_node_extras(&printer, &options)?;
        }
        let started = Instant::now();
        // Line i is due at (i + 1) / (lines + 1) of the node's time. A line due already is printed
        // at once: on a busy machine a sleep overshoots, and the rate asked for still holds.
        let node_time = Duration::from_millis(node.millis);
        let sleep_until = |due: Duration| {
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        };
        for line in 0..options.lines {
            sleep_until(node_time.mul_f64((line + 1) as f64 / (options.lines + 1) as f64));
            printer.line(1, &work_line(&node.name, line, options.lines, options.color));
        }
        let raw_stream = said_and_used(&printer, node, &options);
        sleep_until(node_time);
        if options.fail.as_deref() == Some(node.name.as_str()) {
            return fail(&printer, node, started, &session, &mut events, &options);
        }
        executed.push(node.name.clone());
        let has_children = options.nodes.get(index + 1).is_some_and(|next| next.depth > node.depth);
        // A node with an inner graph writes only its raw stream (as before the inner graph ran).
        let documented = (options.documented && !has_children).then(|| options.prompt.clone());
        let finished = OpenNode {
            index,
            started,
            raw_stream,
            documented,
            custom: options.custom.contains(&node.name),
        };
        if has_children {
            open.push(finished);
        } else {
            finish_node(&printer, node, &finished, &session, &mut events)?;
        }
        if options.stop_after.as_deref() == Some(node.name.as_str()) {
            write_file(&session.join(STOP_FILES[0]), "stop")?;
        }
    }
    close_nodes(&mut open, 0, &options.nodes, &mut printer, &session, &mut events)?;
    printer.line(0, "");
    let result = json!({"success": true, "executed": executed, "prompt": options.prompt});
    if options.no_final_newline {
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "RESULT {result}");
        let _ = out.flush();
    } else {
        printer.line(0, &format!("RESULT {result}"));
    }
    if options.documented {
        write_file(
            &session.join("result.json"),
            serde_json::to_string_pretty(&result).unwrap(),
        )?;
        write_events(&session, &events)?;
    }
    Ok(0)
}

/// A node begun and not ended yet: its inner graph runs.
struct OpenNode {
    index: usize,
    started: Instant,
    /// What its coding agent printed (`--usage`), its `raw_stream_output.txt`.
    raw_stream: Option<String>,
    /// The run's prompt, with the documented layout: the node's folder gets its files.
    documented: Option<String>,
    /// A custom code node: it writes no folder.
    custom: bool,
}

/// What a node prints after its progress: its `--say` text, then its coding agent's stream
/// (`--usage`), which it returns to be written as its raw stream.
fn said_and_used(printer: &Printer, node: &Node, options: &Options) -> Option<String> {
    for (_, text) in options.say.iter().filter(|(name, _)| *name == node.name) {
        for line in text.lines() {
            printer.line(1, line);
        }
    }
    let (_, format) = options.usage.iter().find(|(name, _)| *name == node.name)?;
    let lines = usage::stream(*format, &node.name, &options.prompt, node.millis);
    for line in &lines {
        printer.line(1, line);
    }
    Some(lines.iter().map(|line| format!("{line}\n")).collect())
}

/// What the first node prints besides its progress: the prompt, the conversation so far, and
/// whatever hostile output the options ask for.
fn first_node_extras(printer: &Printer, options: &Options) -> Result<(), String> {
    if !options.prompt.is_empty() {
        printer.line(1, &format!("prompt: {}", options.prompt));
    }
    for name in &options.print_env {
        match std::env::var(name) {
            Ok(value) => printer.line(1, &format!("env {name}={value}")),
            Err(_) => printer.line(1, &format!("env {name} unset")),
        }
    }
    if let Ok(path) = std::env::var("ZIBBY_STUDIO_MESSAGES") {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let messages: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| format!("{path}: not a JSON array of messages: {e}"))?;
        let last = messages.last().and_then(|m| m["text"].as_str()).unwrap_or("-");
        printer.line(1, &format!("earlier messages: {} (last: {last})", messages.len()));
    }
    let mut out = std::io::stdout().lock();
    if options.grandchild {
        // The shell ignores SIGTERM, and so does the sleep it becomes; it inherits stdout.
        let child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; exec sleep 600"])
            .spawn()
            .map_err(|e| format!("cannot start the grandchild: {e}"))?;
        let _ = writeln!(out, "│ grandchild pid {}", child.id());
    }
    if options.setsid_grandchild {
        // Not a group leader, so `setsid` execs in place: the pid is the final sleep's. Its
        // output goes nowhere, so it holds none of the run's pipes.
        let child = std::process::Command::new("setsid")
            .args(["sh", "-c", "trap '' TERM; exec sleep 600"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the setsid grandchild: {e}"))?;
        let _ = writeln!(out, "│ setsid grandchild pid {}", child.id());
    }
    if options.daemon {
        // The shell starts the daemon in the background, prints its pid and ends: the daemon's
        // parent is gone before the run is stopped or its keeper killed.
        let _ = out.flush();
        std::process::Command::new("sh")
            .args([
                "-c",
                "setsid sh -c 'trap \"\" TERM; exec sleep 600' </dev/null >/dev/null 2>&1 & echo \"│ daemon pid $!\"",
            ])
            .status()
            .map_err(|e| format!("cannot start the daemon: {e}"))?;
    }
    if options.flood_mb > 0 {
        let line = format!("│ {}\n", "flood ".repeat(16));
        let count = options.flood_mb * 1_000_000 / line.len();
        let mut buffer = String::with_capacity(64 * 1024);
        for _ in 0..count {
            buffer.push_str(&line);
            if buffer.len() >= 60 * 1024 {
                out.write_all(buffer.as_bytes()).map_err(|e| e.to_string())?;
                buffer.clear();
            }
        }
        out.write_all(buffer.as_bytes()).map_err(|e| e.to_string())?;
        let _ = writeln!(out, "│ flood done: {count} lines");
    }
    if options.long_line_mb > 0 {
        // Written a megabyte at a time: the agent itself holds one, whatever the line's length.
        let megabyte = vec![b'L'; 1_000_000];
        for _ in 0..options.long_line_mb {
            out.write_all(&megabyte).map_err(|e| e.to_string())?;
        }
        out.write_all(b"\n").map_err(|e| e.to_string())?;
    }
    if options.binary {
        out.write_all(b"\x00\xff\xfe binary \x80\x81 output \xc3\x28 end\n")
            .map_err(|e| e.to_string())?;
    }
    let _ = out.flush();
    Ok(())
}

/// A line of a node's pretend work: `plan: working (1/2)`, or with `--color` a coloured one.
fn work_line(node: &str, line: usize, lines: usize, color: bool) -> String {
    if !color {
        return format!("{node}: working ({}/{lines})", line + 1);
    }
    const STEPS: [(&str, u8); 4] = [("reading", 36), ("thinking", 33), ("writing", 35), ("checking", 32)];
    let (step, colour) = STEPS[line % STEPS.len()];
    let tick = if line + 1 == lines { " \x1b[32m✓\x1b[39m" } else { "" };
    format!(
        "\x1b[1;{colour}m{step}\x1b[0m {node} \x1b[2m({}/{lines})\x1b[22m{tick}",
        line + 1
    )
}

fn close_nodes(
    open: &mut Vec<OpenNode>,
    depth: usize,
    nodes: &[Node],
    printer: &mut Printer,
    session: &Path,
    events: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    while open.last().is_some_and(|last| nodes[last.index].depth >= depth) {
        let last = open.pop().expect("a node is open");
        finish_node(printer, &nodes[last.index], &last, session, events)?;
    }
    Ok(())
}

fn took(started: Instant) -> String {
    let ms = started.elapsed().as_millis();
    if ms >= 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{ms}ms")
    }
}

/// Ends a node as the engine does, and writes its folder (its raw stream: what its coding agent
/// printed, else a line); with the documented layout (the run's prompt, which each node's prompt
/// file begins with) its files too.
fn finish_node(
    printer: &Printer,
    node: &Node,
    finished: &OpenNode,
    session: &Path,
    events: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    printer.line(0, &format!("└ done {}", took(finished.started)));
    printer.marker(node.depth, "node_end", &node.name);
    printer.line(0, "");
    let output = format!("{} finished: {} ms of pretend work\n", node.name, node.millis);
    let raw_stream = finished.raw_stream.as_deref().unwrap_or(&output);
    if !finished.custom {
        write_file(&session.join(&node.name).join("raw_stream_output.txt"), raw_stream)?;
    }
    events.push(json!({"type": "node_end", "node": node.name, "status": "success", "timestamp": humantime_now()}));
    if let Some(prompt) = finished.documented.as_deref() {
        let dir = session.join("nodes").join(&node.name);
        let step = format!("You are the {} step. Do your part.", node.name);
        let text = if prompt.trim().is_empty() {
            step
        } else {
            format!("{prompt}\n\n{step}")
        };
        write_file(&dir.join("prompt.txt"), text)?;
        write_file(&dir.join("raw_output.txt"), &output)?;
        write_file(
            &dir.join("result.json"),
            json!({"node": node.name, "ok": true}).to_string(),
        )?;
    }
    Ok(())
}

fn fail(
    printer: &Printer,
    node: &Node,
    started: Instant,
    session: &Path,
    events: &mut Vec<serde_json::Value>,
    options: &Options,
) -> Result<u8, String> {
    let reason = &options.fail_reason;
    let message = format!("Node '{}' failed after 1 attempt(s): {reason}", node.name);
    printer.line(1, &format!("{}: about to fail", node.name));
    printer.line(0, &format!("◆ {reason}"));
    printer.line(0, &format!("└ failed {}", took(started)));
    printer.marker(node.depth, "node_end", &node.name);
    printer.line(0, "");
    printer.line(0, &format!("◆ {message}"));
    printer.line(0, &format!("└ failed {}", took(started)));
    printer.marker(node.depth, "node_end", &node.name);
    printer.line(0, "");
    eprintln!("│ [workflow] [workflow] node '{}' failed: {reason}", node.name);
    eprintln!("\nError: {message}\n    at run (zibby-test-agent)\n");
    events.push(json!({"type": "node_failed", "node": node.name, "status": "failed", "timestamp": humantime_now()}));
    if options.documented {
        write_file(
            &session.join("result.json"),
            json!({"success": false, "error": message}).to_string(),
        )?;
        write_events(session, events)?;
    }
    Ok(1)
}

fn write_events(session: &Path, events: &[serde_json::Value]) -> Result<(), String> {
    let jsonl: String = events.iter().map(|e| format!("{e}\n")).collect();
    write_file(&session.join("events.json"), jsonl)
}

/// The current time as RFC 3339 UTC with milliseconds, like JavaScript's `toISOString()`.
fn humantime_now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
