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
//! ```
//!
//! Commands are argument lists, never shell strings. Placeholders: `{prompt}`, `{session_id}`,
//! `{session_path}`, `{node}`. Their values can come from session data (a node name from an
//! imported bundle, a session folder's name), so a placeholder is never the program, nor in the
//! code of a shell or an interpreter (`sh -c "run {node}"`): such a file is refused as it is read,
//! saying why ([`placeholder_problem`]). Elsewhere a value stays inside its one argument.
//! A node name is checked before it fills `{node}` ([`node_name_problem`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::vocabulary::error::Error;
pub use crate::vocabulary::launch::{InheritEnv, Launch, ShownLaunch};
use crate::vocabulary::launch::{LaunchFile, LaunchParts};

pub const AGENTS_FILE: &str = ".zibby/studio.toml";
pub const PLACEHOLDERS: [&str; 4] = ["{prompt}", "{session_id}", "{session_path}", "{node}"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    #[serde(default, rename = "agent")]
    agents: Vec<Agent>,
}

/// What fills a command's placeholders.
#[derive(Debug, Clone, Default)]
pub struct Placeholders<'a> {
    pub prompt: &'a str,
    pub session_id: &'a str,
    pub session_path: &'a str,
    pub node: &'a str,
}

/// Replaces the placeholders in each argument (the result is never handed to a shell).
pub fn expand(command: &[String], values: &Placeholders<'_>) -> Vec<String> {
    command
        .iter()
        .map(|arg| {
            arg.replace("{prompt}", values.prompt)
                .replace("{session_id}", values.session_id)
                .replace("{session_path}", values.session_path)
                .replace("{node}", values.node)
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
    let path = workspace_root.join(AGENTS_FILE);
    if crate::sessions::untrusted::confined_folder(workspace_root, &[".zibby"])?.is_none() {
        return Ok(Vec::new());
    }
    let bytes = match crate::sessions::untrusted::read_bounded(&path, MAX_AGENTS_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if crate::sessions::untrusted::is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8(bytes).map_err(|e| Error::AgentsFile {
        path: path.clone(),
        line: line_of(&String::from_utf8_lossy(e.as_bytes()), e.utf8_error().valid_up_to()),
        field: "-".to_owned(),
        message: "not valid UTF-8".to_owned(),
    })?;
    parse(&path, &text)
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
    let agent = load(workspace_root)?
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
        files: named_files(workspace_root, &cwd, &command),
        cwd,
        env,
        inherit_env: agent.inherit_env.clone().unwrap_or_default(),
        agents_file: workspace_root.join(AGENTS_FILE),
        workspace_identity: workspace_identity(workspace_root)?,
    });
    Ok(Found { agent, command, launch })
}

/// [`expand`] of the placeholders `values` knows (the empty ones stay as they are written).
fn expand_known(command: &[String], values: &Placeholders<'_>) -> Vec<String> {
    command
        .iter()
        .map(|arg| {
            let mut arg = arg.clone();
            for (placeholder, value) in [
                ("{prompt}", values.prompt),
                ("{session_id}", values.session_id),
                ("{session_path}", values.session_path),
                ("{node}", values.node),
            ] {
                if !value.is_empty() {
                    arg = arg.replace(placeholder, value);
                }
            }
            arg
        })
        .collect()
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

/// The regular files inside the workspace that `command` names (relative to `cwd`, or absolute),
/// each with its content's SHA-256: trust covers what a script says, not only its name. Read
/// without following a link; an argument with a placeholder names no file.
fn named_files(workspace_root: &Path, cwd: &Path, command: &[String]) -> Vec<LaunchFile> {
    use sha2::Digest;
    let mut files: Vec<LaunchFile> = Vec::new();
    for arg in command {
        if files.len() == MAX_NAMED_FILES {
            break;
        }
        if arg.is_empty() || arg.contains('{') || arg.starts_with('-') {
            continue;
        }
        let candidate = cwd.join(arg);
        let Ok(relative) = candidate.strip_prefix(workspace_root) else {
            continue;
        };
        if relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let Ok((mut file, bytes)) = crate::sessions::untrusted::open_regular(&candidate) else {
            continue;
        };
        if files.iter().any(|f| f.path == relative) {
            continue;
        }
        let sha256 = if bytes <= MAX_HASHED_FILE_BYTES {
            let mut hasher = sha2::Sha256::new();
            if std::io::copy(&mut file, &mut hasher).is_err() {
                continue;
            }
            hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
        } else {
            let modified = file.metadata().and_then(|m| m.modified()).ok();
            let stamp = format!("{bytes} bytes, modified {modified:?}");
            sha2::Sha256::digest(stamp.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        files.push(LaunchFile {
            path: relative.to_owned(),
            bytes,
            sha256,
        });
    }
    files
}

/// `.zibby/studio.toml` is read up to this size (a few agents take a few KiB).
pub const MAX_AGENTS_FILE_BYTES: u64 = 1024 * 1024;

pub fn parse(path: &Path, text: &str) -> Result<Vec<Agent>, Error> {
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
    }
    Ok(file.agents)
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

/// Why `name` cannot be a node's name that fills `{node}` (it comes from session data: a folder's
/// name, a bundle's `events.json`), or `None`: the rules of a folder name of the session layout,
/// and no leading `-` (it would read as an option).
pub fn node_name_problem(name: &str) -> Option<&'static str> {
    if let Some(problem) = crate::vocabulary::id::folder_name_problem(name) {
        return Some(problem);
    }
    if name.starts_with('-') {
        return Some("it starts with `-`, so a command would read it as an option");
    }
    if name.chars().any(crate::vocabulary::visible::is_zero_width) {
        return Some("it contains a zero-width character");
    }
    None
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

/// Writes the agents back to `.zibby/studio.toml` (the app's agent form).
pub fn save(workspace_root: &Path, agents: &[Agent]) -> Result<(), Error> {
    let path = workspace_root.join(AGENTS_FILE);
    let text = toml::to_string_pretty(&AgentsFile {
        agents: agents.to_vec(),
    })
    .expect("agents serialise to TOML");
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
            expand(agents[0].replay.as_ref().unwrap(), &values)[5..],
            ["1_abcd".to_owned(), "--node".into(), "plan".into()]
        );
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
}
