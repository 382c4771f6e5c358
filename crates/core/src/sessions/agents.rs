//! The agents a workspace declares in `.zibby/studio.toml` (committable, shared by the team).
//!
//! ```toml
//! [[agent]]
//! name = "my-agent"
//! run = ["zibby", "agent", "run", "my-agent", "--session", "{session_id}"]
//! replay = ["zibby", "agent", "run", "my-agent", "--session", "{session_id}", "--node", "{node}"]
//! cwd = "."                       # optional, relative to the workspace
//! env = { MODEL = "small" }       # optional
//! inherit_env = ["PATH", "HOME"]  # optional: "all" (the default) or only these
//! max_cost_usd = 0.50             # optional: a run stops at its next node past this cost
//! max_tokens = 200000             # optional: or past this many tokens
//!
//! [budget]
//! daily_usd = 20.0                # optional: no run starts once the workspace spent this today
//!
//! [watch]
//! sweep_bound = "60s"             # optional: an ended session's change seen within this
//! ```
//!
//! Budgets are read and enforced by [`crate::sessions::budget`]; the sweep's bound is the
//! watcher's (`WatcherOptions::sweep_bound`), given by whoever starts one on the workspace.
//!
//! Commands are argument lists, never shell strings. Placeholders: `{prompt}`, `{session_id}`,
//! `{session_path}`, `{node}`, filled in one pass ([`expand`]: a value that holds `{session_id}`
//! stays as it is). The values of `{session_id}` and `{node}` come from session data (a node name
//! from an imported bundle or log, a session folder's name in a bucket), so they are held to the
//! alphabet of the engine's own ids and node names ([`session_data_problem`]: ASCII letters,
//! digits, `_`, `-`, `.`): whatever wraps the command (`timeout 30 sh -c "… {node}"`, `python3
//! -c`, `busybox sh -c`), such a value cannot be read as code. A value outside it is refused,
//! naming it and the rule ([`Placeholders::problem`]). Besides, a placeholder is never the
//! program, nor in the code of a shell or an interpreter the file names (`sh -c "run {node}"`):
//! such a file is refused as it is read, saying why ([`placeholder_problem`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::vocabulary::error::Error;
pub use crate::vocabulary::launch::{Budget, InheritEnv, Launch, ShownLaunch};
use crate::vocabulary::launch::{LaunchFile, LaunchParts};

pub const AGENTS_FILE: &str = ".zibby/studio.toml";
pub const PLACEHOLDERS: [&str; 4] = ["{prompt}", "{session_id}", "{session_path}", "{node}"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Agent {
    pub name: String,
    pub run: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub replay: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub cwd: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Which of the studio's environment it gets: all of it (when absent), or only the listed
    /// variables; never the studio's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub inherit_env: Option<InheritEnv>,
    /// A run stops at its next node once its priced cost reaches this many US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub max_cost_usd: Option<f64>,
    /// A run stops at its next node once its nodes used this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "number"))]
    pub max_tokens: Option<u64>,
}

// Its budget is a finite number (the file refuses others): equality is total.
impl Eq for Agent {}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    #[serde(default, rename = "agent")]
    agents: Vec<Agent>,
    /// The workspace's own budget (`[budget]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget: Option<WorkspaceBudget>,
    /// Where traces go (`share::otlp`, which reads the table itself); kept as it is on save.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    otlp: Option<toml::Value>,
    /// How the workspace's sessions are watched (`[watch]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    watch: Option<WatchTable>,
}

/// `[watch]` of the agents file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WatchTable {
    /// Seconds (`90`) or a duration (`"90s"`, `"2m"`), as written (kept as it is on save).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sweep_bound: Option<toml::Value>,
}

/// The shortest and longest `[watch] sweep_bound`: the sweep takes a step every 50 ms at most,
/// and past a day an ended session's change would wait longer than anyone looks.
const SWEEP_BOUNDS: std::ops::RangeInclusive<std::time::Duration> =
    std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(86_400);

/// `[watch] sweep_bound`'s value as a duration, or why it is none.
fn sweep_bound_of(value: &toml::Value) -> Result<std::time::Duration, String> {
    let bound = match value {
        toml::Value::Integer(seconds) => std::time::Duration::from_secs((*seconds).max(0) as u64),
        toml::Value::String(text) => humantime::parse_duration(text.trim())
            .map_err(|e| format!("`{text}` is not a duration such as \"60s\" or \"2m\" ({e})"))?,
        other => return Err(format!("`{other}` is neither seconds (60) nor a duration (\"60s\")")),
    };
    match SWEEP_BOUNDS.contains(&bound) {
        true => Ok(bound),
        false => Err(format!("`{value}` is not between 1 s and 24 h")),
    }
}

/// `[budget]` of the agents file: what the workspace may spend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkspaceBudget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    daily_usd: Option<f64>,
}

/// What fills a command's placeholders.
#[derive(Debug, Clone, Default)]
pub struct Placeholders<'a> {
    pub prompt: &'a str,
    pub session_id: &'a str,
    pub session_path: &'a str,
    pub node: &'a str,
}

impl Placeholders<'_> {
    /// The value of `placeholder` (`{node}`, ...), or `None` for text that is no placeholder.
    fn value(&self, placeholder: &str) -> Option<&str> {
        match placeholder {
            "{prompt}" => Some(self.prompt),
            "{session_id}" => Some(self.session_id),
            "{session_path}" => Some(self.session_path),
            "{node}" => Some(self.node),
            _ => None,
        }
    }

    /// Why these values cannot fill a command, or `None`: the session id and the node name come
    /// from session data and are held to [`session_data_problem`]'s alphabet (an empty one is
    /// not filled, so it is not checked).
    pub fn problem(&self) -> Option<Error> {
        if let Some(reason) = (!self.session_id.is_empty())
            .then(|| session_data_problem(self.session_id))
            .flatten()
        {
            return Some(Error::InvalidSessionId {
                id: crate::vocabulary::visible::shown(self.session_id),
                reason,
            });
        }
        if let Some(reason) = (!self.node.is_empty()).then(|| node_name_problem(self.node)).flatten() {
            return Some(Error::InvalidNodeName {
                name: crate::vocabulary::visible::shown(self.node),
                reason,
            });
        }
        None
    }
}

/// Replaces the placeholders in each argument, in one pass: a value is never read for
/// placeholders again (the result is never handed to a shell). Refused when a value from session
/// data is outside its alphabet ([`Placeholders::problem`]).
pub fn expand(command: &[String], values: &Placeholders<'_>) -> Result<Vec<String>, Error> {
    if let Some(problem) = values.problem() {
        return Err(problem);
    }
    Ok(fill(command, |placeholder| values.value(placeholder)))
}

/// Each argument with every known placeholder replaced by what `value_of` gives it (`None`: left
/// as written), scanning the argument once, left to right.
fn fill<'v>(command: &[String], value_of: impl Fn(&str) -> Option<&'v str>) -> Vec<String> {
    command
        .iter()
        .map(|arg| {
            let mut filled = String::with_capacity(arg.len());
            let mut rest = arg.as_str();
            while let Some(open) = rest.find('{') {
                filled.push_str(&rest[..open]);
                let candidate = rest[open..].find('}').map(|close| &rest[open..=open + close]);
                match candidate.and_then(|placeholder| Some((placeholder, value_of(placeholder)?))) {
                    Some((placeholder, value)) => {
                        filled.push_str(value);
                        rest = &rest[open + placeholder.len()..];
                    }
                    None => {
                        filled.push('{');
                        rest = &rest[open + 1..];
                    }
                }
            }
            filled.push_str(rest);
            filled
        })
        .collect()
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The agents of a workspace; none when it has no `.zibby/studio.toml`.
/// The file is read only as a regular file (never through a link) of at most
/// [`MAX_AGENTS_FILE_BYTES`].
pub fn load(workspace_root: &Path) -> Result<Vec<Agent>, Error> {
    Ok(load_file(workspace_root)?.agents)
}

/// The workspace's daily budget (`[budget] daily_usd`), if its agents file sets one.
pub fn daily_usd(workspace_root: &Path) -> Result<Option<f64>, Error> {
    Ok(load_file(workspace_root)?.budget.and_then(|budget| budget.daily_usd))
}

/// How soon the sweep sees a change to one of the workspace's ended sessions (`[watch]
/// sweep_bound`), if its agents file says.
pub fn sweep_bound(workspace_root: &Path) -> Result<Option<std::time::Duration>, Error> {
    let watch = load_file(workspace_root)?.watch.unwrap_or_default();
    // Checked as the file was read.
    Ok(watch.sweep_bound.as_ref().and_then(|value| sweep_bound_of(value).ok()))
}

/// [`load`], the whole file.
fn load_file(workspace_root: &Path) -> Result<AgentsFile, Error> {
    let path = workspace_root.join(AGENTS_FILE);
    if crate::sessions::untrusted::confined_folder(workspace_root, &[".zibby"])?.is_none() {
        return Ok(AgentsFile::default());
    }
    let bytes = match crate::sessions::untrusted::read_bounded(&path, MAX_AGENTS_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if crate::sessions::untrusted::is_not_found(&e) => return Ok(AgentsFile::default()),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8(bytes).map_err(|e| Error::AgentsFile {
        path: path.clone(),
        line: line_of(&String::from_utf8_lossy(e.as_bytes()), e.utf8_error().valid_up_to()),
        field: "-".to_owned(),
        message: "not valid UTF-8".to_owned(),
    })?;
    parse_file(&path, &text)
}

/// An agent of the workspace's agents file, with the command a run or a replay uses and what
/// running it would do ([`Launch`], to check against what the user trusted).
#[derive(Debug, Clone)]
pub struct Found {
    pub agent: Agent,
    pub command: Vec<String>,
    pub launch: Launch,
}

/// The agent `name`, with its run command, or with `replay` its replay command.
pub fn find(workspace_root: &Path, name: &str, replay: bool) -> Result<Found, Error> {
    find_for(workspace_root, name, replay, &Placeholders::default())
}

/// [`find`], its [`Launch`] showing the command as it will run with `this_run`'s values (the
/// ones that are empty stay placeholders).
pub fn find_for(workspace_root: &Path, name: &str, replay: bool, this_run: &Placeholders<'_>) -> Result<Found, Error> {
    let path = workspace_root.join(AGENTS_FILE);
    let file = load_file(workspace_root)?;
    let daily_usd = file.budget.and_then(|budget| budget.daily_usd);
    let agent = file
        .agents
        .into_iter()
        .find(|candidate| candidate.name == name)
        .ok_or_else(|| Error::AgentNotFound {
            name: name.to_owned(),
            path: path.clone(),
        })?;
    let command = if replay {
        agent.replay.clone().ok_or_else(|| Error::NoReplayCommand {
            name: name.to_owned(),
            path,
        })?
    } else {
        agent.run.clone()
    };
    let cwd = agent
        .cwd
        .as_ref()
        .map_or_else(|| workspace_root.to_owned(), |cwd| workspace_root.join(cwd));
    let env = agent.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let launch = Launch::new(LaunchParts {
        agent: agent.name.clone(),
        argv_for_this_run: expand_known(&command, this_run),
        argv: command.clone(),
        files: named_files(workspace_root, &cwd, &command)?,
        cwd,
        env,
        inherit_env: agent.inherit_env.clone().unwrap_or_default(),
        agents_file: workspace_root.join(AGENTS_FILE),
        workspace_identity: workspace_identity(workspace_root)?,
        budget: Budget {
            max_cost_usd: agent.max_cost_usd,
            max_tokens: agent.max_tokens,
            daily_usd,
        },
    });
    Ok(Found { agent, command, launch })
}

/// [`expand`] of the placeholders `values` knows (the empty ones stay as they are written), for
/// showing: nothing is refused here.
fn expand_known(command: &[String], values: &Placeholders<'_>) -> Vec<String> {
    fill(command, |placeholder| {
        values.value(placeholder).filter(|value| !value.is_empty())
    })
}

/// Who the workspace folder is, beyond its path: its device, inode and creation time. A folder
/// removed and cloned again at the same path is another (a new inode, a new creation time).
pub fn workspace_identity(workspace_root: &Path) -> Result<String, Error> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(workspace_root).map_err(|e| Error::io(workspace_root, e))?;
    // To the nanosecond, as the filesystem keeps it: a folder made anew in the same second differs.
    let created = metadata.created().map_or_else(
        |_| "at an unknown time".to_owned(),
        |t| humantime::format_rfc3339_nanos(t).to_string(),
    );
    Ok(format!(
        "device {}, inode {}, created {created}",
        metadata.dev(),
        metadata.ino()
    ))
}

/// Files of at most this size that a command names are covered by their content; a larger one by
/// its size and modification time.
const MAX_HASHED_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// At most this many files of a command are covered.
const MAX_NAMED_FILES: usize = 16;

/// The regular files inside the workspace that `command` names, each with its content's SHA-256:
/// trust covers what a script says, not only its name. A file is named by an argument (relative
/// to `cwd`, `../` included while it stays in the workspace, or absolute), or by a word of code a
/// shell or an interpreter runs (`sh -c "sh ./agent.sh"`); a link is followed to what it points
/// to, which is the file covered (its path inside the workspace and its content). A name inside
/// the workspace that leads outside it (a link to `/tmp/x.sh`), or to a file that cannot be read,
/// is refused: trust could not cover what would run. An argument with a placeholder names no file.
fn named_files(workspace_root: &Path, cwd: &Path, command: &[String]) -> Result<Vec<LaunchFile>, Error> {
    use sha2::Digest;
    let real_root = std::fs::canonicalize(workspace_root).map_err(|e| Error::io(workspace_root, e))?;
    let mut files: Vec<LaunchFile> = Vec::new();
    let words = command.iter().flat_map(|arg| {
        let mut words = vec![arg.clone()];
        if arg.contains(char::is_whitespace) {
            words.extend(scripts_in_code(arg));
        }
        words
    });
    for word in words {
        if files.len() == MAX_NAMED_FILES {
            break;
        }
        if word.is_empty() || word.contains('{') || word.starts_with('-') || word.contains(char::is_whitespace) {
            continue;
        }
        let Some(named) = lexically_inside(workspace_root, &cwd.join(&word)) else {
            continue; // a program or a file outside the workspace: not covered, as said
        };
        if std::fs::symlink_metadata(&named).is_err() {
            continue; // no such file: a word, not a file
        }
        let refuse = |why: &str| Error::AgentsFile {
            path: workspace_root.join(AGENTS_FILE),
            line: 1,
            field: "run".to_owned(),
            message: format!(
                "`{}` {why}: trust could not cover what would run",
                crate::vocabulary::visible::shown(&word)
            ),
        };
        let real = std::fs::canonicalize(&named).map_err(|_| refuse("leads to nothing that can be read"))?;
        let Ok(relative) = real.strip_prefix(&real_root) else {
            return Err(refuse("leads outside the workspace (through a link)"));
        };
        if !real.is_file() {
            continue; // a folder
        }
        let (mut file, bytes) =
            crate::sessions::untrusted::open_regular(&real).map_err(|_| refuse("is a file that cannot be read"))?;
        if files.iter().any(|f| f.path == relative) {
            continue;
        }
        let sha256 = if bytes <= MAX_HASHED_FILE_BYTES {
            let mut hasher = sha2::Sha256::new();
            std::io::copy(&mut file, &mut hasher).map_err(|_| refuse("is a file that cannot be read"))?;
            crate::vocabulary::digest::hex(&hasher.finalize())
        } else {
            let modified = file.metadata().and_then(|m| m.modified()).ok();
            let stamp = format!("{bytes} bytes, modified {modified:?}");
            crate::vocabulary::digest::sha256_hex(stamp.as_bytes(), 32)
        };
        files.push(LaunchFile {
            path: relative.to_owned(),
            bytes,
            sha256,
        });
    }
    Ok(files)
}

/// The words of shell code (`sh -c "sh ./agent.sh && ./next.sh"`) that name a script it runs: what
/// follows a shell, an interpreter, `source`, `.` or `exec`, and a path that starts with `./`,
/// `../` or `/`; never the target of a redirection (`> out.log`), which a run rewrites.
fn scripts_in_code(code: &str) -> Vec<String> {
    let words = shlex::split(code).unwrap_or_default();
    let mut scripts = Vec::new();
    for (index, word) in words.iter().enumerate() {
        let previous = index.checked_sub(1).map(|i| words[i].as_str()).unwrap_or("");
        if previous.ends_with('>') || previous.ends_with('<') {
            continue;
        }
        let runner = base_name(previous);
        let runs_it = SHELLS.contains(&runner)
            || INTERPRETERS.contains(&runner)
            || runner.starts_with("python3.")
            || matches!(runner, "source" | "." | "exec");
        if runs_it || word.starts_with("./") || word.starts_with("../") || word.starts_with('/') {
            scripts.push(word.clone());
        }
    }
    scripts
}

/// `path` with its `.` and `..` taken away by their text alone, when it stays inside `root`.
fn lexically_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    let relative = path.strip_prefix(root).ok()?;
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.iter().fold(root.to_owned(), |path, part| path.join(part)))
}

/// `.zibby/studio.toml` is read up to this size (a few agents take a few KiB).
pub const MAX_AGENTS_FILE_BYTES: u64 = 1024 * 1024;

pub fn parse(path: &Path, text: &str) -> Result<Vec<Agent>, Error> {
    Ok(parse_file(path, text)?.agents)
}

fn parse_file(path: &Path, text: &str) -> Result<AgentsFile, Error> {
    let invalid = |line: usize, field: &str, message: String| Error::AgentsFile {
        path: path.to_owned(),
        line,
        field: field.to_owned(),
        message,
    };
    let file: AgentsFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        let message = e.message().to_owned();
        let field = message
            .split('`')
            .nth(1)
            .filter(|_| message.contains("field"))
            .unwrap_or("-")
            .to_owned();
        invalid(line, &field, message)
    })?;
    // Where each agent's table starts, for errors about its fields.
    let starts: Vec<usize> = text.match_indices("[[agent]]").map(|(i, _)| line_of(text, i)).collect();
    let mut seen = std::collections::HashSet::new();
    for (index, agent) in file.agents.iter().enumerate() {
        let at = |field: &str| {
            let start = starts.get(index).copied().unwrap_or(1);
            text.lines()
                .enumerate()
                .skip(start)
                .take_while(|(_, l)| !l.trim_start().starts_with("[[agent]]"))
                .find(|(_, l)| l.trim_start().starts_with(field))
                .map_or(start, |(n, _)| n + 1)
        };
        if agent.name.trim().is_empty() {
            return Err(invalid(at("name"), "name", "an agent needs a name".into()));
        }
        if !seen.insert(agent.name.as_str()) {
            return Err(invalid(
                at("name"),
                "name",
                format!("two agents are named `{}`", agent.name),
            ));
        }
        for (field, command) in [("run", Some(&agent.run)), ("replay", agent.replay.as_ref())] {
            let Some(command) = command else { continue };
            if command.first().is_none_or(|program| program.trim().is_empty()) {
                return Err(invalid(
                    at(field),
                    field,
                    format!("`{}`: the command is empty", agent.name),
                ));
            }
            if let Some(problem) = placeholder_problem(command) {
                return Err(invalid(at(field), field, format!("`{}`: {problem}", agent.name)));
            }
            for arg in command {
                if let Some(unknown) = unknown_placeholder(arg) {
                    return Err(invalid(
                        at(field),
                        field,
                        format!(
                            "`{}`: unknown placeholder `{unknown}` (known: {})",
                            agent.name,
                            PLACEHOLDERS.join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(replay) = &agent.replay {
            if !replay.iter().any(|arg| arg.contains("{node}")) {
                return Err(invalid(
                    at("replay"),
                    "replay",
                    format!("`{}`: a replay command needs `{{node}}`", agent.name),
                ));
            }
        }
        if let Some((field, problem)) = crate::sessions::budget::agent_problem(agent.max_cost_usd, agent.max_tokens) {
            return Err(invalid(at(field), field, format!("`{}`: {problem}", agent.name)));
        }
    }
    if let Some(problem) = file
        .budget
        .and_then(|budget| crate::sessions::budget::usd_problem(budget.daily_usd?))
    {
        return Err(invalid(line_of_key(text, "daily_usd"), "daily_usd", problem));
    }
    if let Some(Err(problem)) = file
        .watch
        .as_ref()
        .and_then(|w| w.sweep_bound.as_ref())
        .map(sweep_bound_of)
    {
        return Err(invalid(line_of_key(text, "sweep_bound"), "sweep_bound", problem));
    }
    Ok(file)
}

/// The first line of `text` (from 1) that sets `key`, or 1: where a table's value is said wrong.
fn line_of_key(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with(key))
        .map_or(1, |n| n + 1)
}

/// Programs that run the string after `-c` (shells) or `-e` and its kin (interpreters) as code.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "csh", "tcsh",
];
const INTERPRETERS: &[&str] = &[
    "python",
    "python3",
    "python2",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "pwsh",
    "osascript",
    "Rscript",
    "lua",
    "tclsh",
];
const CODE_OPTIONS: &[&str] = &[
    "-c",
    "-e",
    "-E",
    "-p",
    "-r",
    "--eval",
    "--print",
    "--command",
    "-Command",
];

/// Why a placeholder of `command` could be parsed as code, or `None`: a placeholder is never the
/// program, nor in the code a shell or an interpreter runs (`sh -c "run {node}"`, `node -e
/// {prompt}`, `--eval={node}`). Elsewhere it is part of one argument, whatever its value: the
/// command is never handed to a shell.
pub fn placeholder_problem(command: &[String]) -> Option<String> {
    let has_placeholder = |arg: &str| PLACEHOLDERS.iter().any(|p| arg.contains(p));
    // The program, past `env` and its assignments and options.
    let mut rest = command.iter().map(String::as_str).peekable();
    let mut program = rest.next()?;
    while base_name(program) == "env" {
        while rest.peek().is_some_and(|arg| arg.starts_with('-') || arg.contains('=')) {
            rest.next();
        }
        program = rest.next()?;
    }
    if has_placeholder(program) {
        return Some(format!(
            "the program {program:?} holds a placeholder; a placeholder's value can come from session \
             data (a node name, a session folder's name), so it is an argument, never the program"
        ));
    }
    let name = base_name(program);
    let is_shell = SHELLS.contains(&name);
    let is_interpreter = INTERPRETERS.contains(&name) || name.starts_with("python3.");
    if !is_shell && !is_interpreter {
        return None;
    }
    let mut code_follows = false;
    for arg in rest {
        if code_follows {
            return has_placeholder(arg).then(|| {
                format!(
                    "`{program}` runs the argument {arg:?} as code, and a placeholder's value can come \
                     from session data: pass it as an argument of its own after the code \
                     (\"sh\", \"-c\", \"agent --node \\\"$1\\\"\", \"sh\", \"{{node}}\") instead"
                )
            });
        }
        let inline_code = is_interpreter
            && arg
                .split_once('=')
                .is_some_and(|(option, _)| CODE_OPTIONS.contains(&option));
        if inline_code && has_placeholder(arg) {
            return Some(format!(
                "`{program}` runs the option {arg:?} as code, and a placeholder's value can come from \
                 session data: pass it as an argument of its own after the code instead"
            ));
        }
        let shell_code_option = is_shell && arg.starts_with('-') && !arg.starts_with("--") && arg.contains('c');
        code_follows = shell_code_option || (is_interpreter && CODE_OPTIONS.contains(&arg));
        if !arg.starts_with('-') && !code_follows {
            // A script file: what follows are its arguments.
            return None;
        }
    }
    None
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Why `value`, from session data (a session id, a node name), cannot fill a command's
/// placeholder, or `None` when it can: the alphabet of the engine's own ids (`<ms>_<base36>`) and
/// node names (identifiers), ASCII letters, digits, `_`, `-` and `.`, not starting with `-` (it
/// would read as an option) nor `.`, without `..`, at most 255 bytes. Nothing in it is code to a
/// shell or an interpreter, however the command wraps it.
pub fn session_data_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("it is empty")
    } else if value.starts_with('-') {
        Some("it starts with `-`, so a command would read it as an option")
    } else if value.starts_with('.') || value.contains("..") {
        Some("it starts with `.` or contains `..`")
    } else if value.len() > 255 {
        Some("it is longer than 255 bytes")
    } else if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        Some(
            "a value from session data fills a command only when it is made of ASCII letters, \
             digits, `_`, `-` and `.`",
        )
    } else {
        None
    }
}

/// Why `name` cannot be a node's name that fills `{node}` (it comes from session data: a folder's
/// name, a bundle's `events.json`), or `None`: [`session_data_problem`]'s alphabet.
pub fn node_name_problem(name: &str) -> Option<&'static str> {
    session_data_problem(name)
}

fn unknown_placeholder(arg: &str) -> Option<&str> {
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let candidate = &rest[open..open + close + 1];
        let inner = &candidate[1..candidate.len() - 1];
        if !inner.is_empty()
            && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !PLACEHOLDERS.contains(&candidate)
        {
            return Some(candidate);
        }
        rest = &rest[open + close + 1..];
    }
    None
}

/// Writes the agents back to `.zibby/studio.toml` (the app's agent form). The file's other
/// tables (`[budget]`, `[otlp]`) are kept as they are (a file that cannot be read, a link say,
/// has none to keep: it is replaced).
pub fn save(workspace_root: &Path, agents: &[Agent]) -> Result<(), Error> {
    let kept = load_file(workspace_root).unwrap_or_default();
    write_file(
        workspace_root,
        &AgentsFile {
            agents: agents.to_vec(),
            ..kept
        },
    )
}

/// Writes `otlp` as the `[otlp]` table of `.zibby/studio.toml` (`None`: the table removed), the
/// agents and the budget kept (the window's Traces setting; `share::otlp` reads and checks the
/// table). A file whose agents do not read is refused, naming it, and left as it is.
pub fn save_otlp(workspace_root: &Path, otlp: Option<toml::Value>) -> Result<(), Error> {
    let kept = load_file(workspace_root)?;
    write_file(workspace_root, &AgentsFile { otlp, ..kept })
}

fn write_file(workspace_root: &Path, file: &AgentsFile) -> Result<(), Error> {
    let path = workspace_root.join(AGENTS_FILE);
    let text = toml::to_string_pretty(file).expect("agents serialise to TOML");
    parse(&path, &text)?;
    // Never written through a link: `.zibby` is checked, and the file is replaced by a rename
    // (which replaces a link itself, not what it points to).
    let folder = match crate::sessions::untrusted::confined_folder(workspace_root, &[".zibby"])? {
        Some(folder) => folder,
        None => {
            let folder = workspace_root.join(".zibby");
            std::fs::create_dir_all(&folder).map_err(|e| Error::io_write(&folder, e))?;
            folder
        }
    };
    crate::sessions::private::replace_file(&folder.join("studio.toml"), text.as_bytes())
}

/// Adds `agent` to `.zibby/studio.toml`, or replaces the one named `previous_name`, and returns
/// the agents as saved. A name another agent has already is refused.
pub fn save_one(workspace_root: &Path, agent: Agent, previous_name: Option<&str>) -> Result<Vec<Agent>, Error> {
    let mut agents = load(workspace_root)?;
    if agents
        .iter()
        .any(|a| a.name == agent.name && Some(a.name.as_str()) != previous_name)
    {
        return Err(Error::AgentExists {
            name: agent.name,
            path: workspace_root.join(AGENTS_FILE),
        });
    }
    match previous_name.and_then(|name| agents.iter().position(|a| a.name == name)) {
        Some(index) => agents[index] = agent,
        None => agents.push(agent),
    }
    save(workspace_root, &agents)?;
    load(workspace_root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_one_adds_renames_and_refuses_a_taken_name() {
        let dir = tempfile::tempdir().unwrap();
        let agent = |name: &str| Agent {
            name: name.to_owned(),
            run: vec!["node".into(), "{prompt}".into()],
            replay: None,
            cwd: None,
            env: BTreeMap::new(),
            inherit_env: None,
            max_cost_usd: None,
            max_tokens: None,
        };
        let names = |agents: Vec<Agent>| agents.into_iter().map(|a| a.name).collect::<Vec<_>>();
        assert_eq!(names(save_one(dir.path(), agent("a"), None).unwrap()), ["a"]);
        assert_eq!(names(save_one(dir.path(), agent("b"), None).unwrap()), ["a", "b"]);
        assert_eq!(names(save_one(dir.path(), agent("c"), Some("a")).unwrap()), ["c", "b"]);
        assert_eq!(names(save_one(dir.path(), agent("c"), Some("c")).unwrap()), ["c", "b"]);
        let taken = save_one(dir.path(), agent("b"), Some("c")).unwrap_err();
        assert_eq!(taken.code(), "agent_exists", "{taken}");
        assert!(taken.to_string().contains("studio.toml"), "{taken}");
        assert_eq!(
            names(load(dir.path()).unwrap()),
            ["c", "b"],
            "a refused save changes nothing"
        );
    }

    const GOOD: &str = r#"
[[agent]]
name = "my-agent"
run = ["zibby", "agent", "run", "my-agent", "--session", "{session_id}"]
replay = ["zibby", "agent", "run", "my-agent", "--session", "{session_id}", "--node", "{node}"]

[[agent]]
name = "support"
run = ["node", "agents/support.js"]
cwd = "agents"
env = { MODEL = "small" }
"#;

    #[test]
    fn agents_read_with_their_commands_and_placeholders_expand() {
        let agents = parse(Path::new("studio.toml"), GOOD).unwrap();
        assert_eq!(agents.len(), 2);
        assert_eq!(agents[1].env["MODEL"], "small");
        let values = Placeholders {
            session_id: "1_abcd",
            node: "plan",
            ..Default::default()
        };
        assert_eq!(
            expand(agents[0].replay.as_ref().unwrap(), &values).unwrap()[5..],
            ["1_abcd".to_owned(), "--node".into(), "plan".into()]
        );
    }

    #[test]
    fn placeholders_are_filled_in_one_pass() {
        let command: Vec<String> = [
            "agent",
            "--prompt={prompt}",
            "{session_path}/{node}",
            "{{node}}",
            "{nod",
        ]
        .map(String::from)
        .to_vec();
        let values = Placeholders {
            prompt: "say {session_id} and {node}",
            session_id: "1700000000000_ab",
            session_path: "/w/{node}",
            node: "plan",
        };
        assert_eq!(
            expand(&command, &values).unwrap(),
            [
                "agent",
                "--prompt=say {session_id} and {node}",
                "/w/{node}/plan",
                "{plan}",
                "{nod"
            ]
        );
    }

    #[test]
    fn values_from_session_data_are_held_to_the_engines_alphabet() {
        for good in ["1777678254943_ymcw", "plan", "analyze_ticket", "ci-build-42", "v2.1"] {
            assert_eq!(session_data_problem(good), None, "{good}");
        }
        let command = vec![
            "timeout".to_owned(),
            "30".into(),
            "sh".into(),
            "-c".into(),
            "run {node}".into(),
        ];
        for bad in [
            "plan;touch PWNED;",
            "1700000000000_x;touch PWNED;",
            "$(touch x)",
            "a b",
            "séance",
            "-rf",
            ".hidden",
            "../up",
            "a\u{202E}b",
            "",
        ] {
            assert!(session_data_problem(bad).is_some(), "{bad:?}");
            let as_node = Placeholders {
                node: bad,
                ..Default::default()
            };
            let as_id = Placeholders {
                session_id: bad,
                ..Default::default()
            };
            if bad.is_empty() {
                // An empty value is not filled, so nothing is refused for it.
                assert!(expand(&command, &as_node).is_ok());
                continue;
            }
            let node_error = expand(&command, &as_node).unwrap_err();
            assert_eq!(node_error.code(), "invalid_node_name", "{bad:?}: {node_error}");
            let id_error = expand(&command, &as_id).unwrap_err();
            assert_eq!(id_error.code(), "invalid_session_id", "{bad:?}: {id_error}");
            for error in [node_error.to_string(), id_error.to_string()] {
                assert!(!error.contains('\n') && !error.contains('\u{202E}'), "{error}");
            }
        }
    }

    #[test]
    fn a_bad_file_names_its_line_and_field() {
        let cases = [
            ("[[agent]]\nname = \"a\"\nrun = []\n", 3, "run", "empty"),
            (
                "[[agent]]\nname = \"a\"\nrun = [\"x\", \"{sesion_id}\"]\n",
                3,
                "run",
                "{sesion_id}",
            ),
            (
                "[[agent]]\nname = \"a\"\nrun = [\"x\"]\nreplay = [\"x\"]\n",
                4,
                "replay",
                "{node}",
            ),
            (
                "[[agent]]\nname = \"a\"\nrun = [\"x\"]\n\n[[agent]]\nname = \"a\"\nrun = [\"y\"]\n",
                6,
                "name",
                "two agents",
            ),
            ("[[agent]]\nname = \"a\"\nrun = \"node agent.js\"\n", 3, "-", "sequence"),
            ("[[agent]]\nname = \"a\"\n", 1, "run", "missing field"),
        ];
        for (text, line, field, says) in cases {
            let err = parse(Path::new("/w/.zibby/studio.toml"), text).unwrap_err();
            let Error::AgentsFile {
                line: l,
                field: f,
                message,
                ..
            } = &err
            else {
                panic!("{err}")
            };
            assert_eq!((*l, f.as_str()), (line, field), "{text}: {err}");
            assert!(message.contains(says), "{text}: {err}");
            assert!(err.to_string().contains("/w/.zibby/studio.toml"), "{err}");
        }
    }

    #[test]
    fn the_sweep_bound_reads_seconds_or_a_duration_and_refuses_others_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".zibby")).unwrap();
        let file = dir.path().join(AGENTS_FILE);
        assert_eq!(sweep_bound(dir.path()).unwrap(), None, "no file");
        for (value, seconds) in [("90", 90), ("\"2s\"", 2), ("\"2m\"", 120), ("\" 1h \"", 3_600)] {
            std::fs::write(
                &file,
                format!("[budget]\ndaily_usd = 1.0\n\n[watch]\nsweep_bound = {value}\n"),
            )
            .unwrap();
            let bound = sweep_bound(dir.path()).unwrap();
            assert_eq!(bound, Some(std::time::Duration::from_secs(seconds)), "{value}");
        }
        std::fs::write(&file, "[watch]\n").unwrap();
        assert_eq!(sweep_bound(dir.path()).unwrap(), None, "an empty table");
        let cases = [
            ("0", "sweep_bound", "between 1 s and 24 h"),
            ("\"500ms\"", "sweep_bound", "between 1 s and 24 h"),
            ("\"2d\"", "sweep_bound", "between 1 s and 24 h"),
            ("-5", "sweep_bound", "between 1 s and 24 h"),
            ("\"soon\"", "sweep_bound", "not a duration"),
            ("1.5", "sweep_bound", "neither seconds"),
        ];
        for (value, field, says) in cases {
            let text = format!("[[agent]]\nname = \"a\"\nrun = [\"x\"]\n\n[watch]\nsweep_bound = {value}\n");
            std::fs::write(&file, &text).unwrap();
            let err = sweep_bound(dir.path()).unwrap_err();
            let Error::AgentsFile {
                line,
                field: f,
                message,
                ..
            } = &err
            else {
                panic!("{err}")
            };
            assert_eq!((*line, f.as_str()), (6, field), "{value}: {err}");
            assert!(message.contains(says), "{value}: {err}");
            assert!(err.to_string().contains("studio.toml:6: sweep_bound:"), "{err}");
        }
        std::fs::write(&file, "[watch]\nsweep_bund = 5\n").unwrap();
        let err = sweep_bound(dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("studio.toml:2: sweep_bund:"),
            "an unknown key named: {err}"
        );
        // Kept as written when the agents are saved.
        std::fs::write(&file, "[watch]\nsweep_bound = \"90s\"\n").unwrap();
        save(dir.path(), &[]).unwrap();
        assert_eq!(
            sweep_bound(dir.path()).unwrap(),
            Some(std::time::Duration::from_secs(90))
        );
    }
}
