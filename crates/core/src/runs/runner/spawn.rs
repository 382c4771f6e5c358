//! A run made ready and its child spawned: the first steps of `Supervisor::start`. The session
//! folder (a new session's made), the command with its placeholders filled, the run's rows in the
//! store, the conversation so far written for the agent; then the child in its own process group
//! with the protocol's environment (docs/protocol.md §1). A command that cannot start is not an error
//! here: it is recorded as a run that ended at once with status `error` and a message saying why.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::events::RunEvent;
use super::live_run::LiveRun;
use super::request::{RunRequest, StartedRun};
use super::run_files::{messages_file, remove_stop_files, MESSAGES_FILE};
use super::shared::Shared;
use crate::sessions::agents::{expand, Placeholders};
use crate::sessions::session::Workspace;
use crate::status::Status;
use crate::store::{Level, NewRun, RunOutcome, Store};
use crate::vocabulary::containment::RUN_MARKER;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::launch::InheritEnv;
use crate::vocabulary::process::ProcessIdentity;

/// CI variables that would replace the session id with a constant (docs/protocol.md §1).
const CI_ID_VARIABLES: [&str; 4] = ["CI_JOB_ID", "GITHUB_RUN_ID", "CIRCLE_WORKFLOW_ID", "BUILD_ID"];

fn millis_since_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A new engine-style session id: `<unix_ms>_<4 base-36 chars>`.
pub fn new_session_id() -> SessionId {
    let uuid = uuid::Uuid::now_v7();
    let mut random = u128::from_be_bytes(*uuid.as_bytes()) as u64;
    let suffix: String = (0..4)
        .map(|_| {
            let digit = (random % 36) as u32;
            random /= 36;
            char::from_digit(digit, 36).expect("below 36")
        })
        .collect();
    SessionId::parse(&format!("{}_{suffix}", millis_since_epoch())).expect("generated ids are valid")
}

/// A run recorded in the store, its session folder and conversation file ready: all it needs is
/// its process.
pub(super) struct PreparedRun {
    pub(super) session_id: SessionId,
    pub(super) session_path: PathBuf,
    /// The session folder as text, as the command's placeholders and the run's log have it.
    path_text: String,
    pub(super) run_id: String,
    /// The command, its placeholders filled.
    command: Vec<String>,
    pub(super) started_at: SystemTime,
    keeper_dir: Option<PathBuf>,
    pub(super) messages_file: PathBuf,
}

/// The child's command, and what is needed to say why it could not start.
pub(super) struct ChildCommand {
    program: String,
    cwd: PathBuf,
    command: Command,
}

impl PreparedRun {
    /// The session folder, the command, the run's rows in the store (the prompt as the
    /// conversation's next message) and the conversation before it, written for the agent.
    pub(super) fn prepare(shared: &Shared, request: &RunRequest) -> Result<PreparedRun, Error> {
        let store = &shared.store;
        let workspace = &request.workspace;
        let (session_id, session_path) = open_session_folder(request)?;
        let path_text = session_path.to_string_lossy().into_owned();
        let command = expand(
            &request.command,
            &Placeholders {
                prompt: request.prompt.as_deref().unwrap_or(""),
                session_id: session_id.as_str(),
                session_path: &path_text,
                node: request.node.as_deref().unwrap_or(""),
            },
        )?;
        let started_at = SystemTime::now();
        let earlier_messages = store.messages(workspace, &session_id)?;
        let run_id = record_run(store, request, &session_id, &command, started_at)?;
        let keeper_dir = shared.keeper.as_ref().map(|k| k.runs_dir.join(&run_id));
        let messages_file = write_conversation(keeper_dir.as_deref(), &run_id, &earlier_messages)?;
        Ok(PreparedRun {
            session_id,
            session_path,
            path_text,
            run_id,
            command,
            started_at,
            keeper_dir,
            messages_file,
        })
    }

    /// The agent (through the keeper when the supervisor has one) in its working folder, its
    /// pipes, its own process group and the protocol's environment.
    pub(super) fn child_command(&self, shared: &Shared, request: &RunRequest) -> ChildCommand {
        let cwd = match &request.cwd {
            Some(dir) if dir.is_absolute() => dir.clone(),
            Some(dir) => request.workspace.root().join(dir),
            None => request.workspace.root().to_owned(),
        };
        let program = self.command.first().cloned().unwrap_or_default();
        let mut command = match (&shared.keeper, &self.keeper_dir) {
            (Some(keeper), Some(dir)) => {
                let mut keep = Command::new(&keeper.program);
                keep.arg("keep").arg("--run-dir").arg(dir).arg("--").args(&self.command);
                keep
            }
            _ => {
                let mut direct = Command::new(&program);
                direct.args(self.command.iter().skip(1));
                direct
            }
        };
        command
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let hidden = shared.hidden_variables.lock().expect("hidden variables lock");
        self.set_environment(&mut command, &hidden, request);
        ChildCommand { program, cwd, command }
    }

    /// The protocol's variables (docs/protocol.md §1) and the request's own; of the studio's
    /// environment, what the request inherits, never the studio's own variables (`ZIBBY_STUDIO_*`,
    /// and the `hidden` ones the app set for its window), nor the CI variables that would replace
    /// the session id.
    fn set_environment(&self, command: &mut Command, hidden: &[String], request: &RunRequest) {
        if let InheritEnv::Only(_) = request.inherit_env {
            command.env_clear();
        }
        for (name, value) in std::env::vars_os() {
            let passes = name.to_str().is_some_and(|name| request.inherit_env.passes(name));
            match (&request.inherit_env, passes) {
                (InheritEnv::Only(_), true) => {
                    command.env(name, value);
                }
                (InheritEnv::All, false) => {
                    command.env_remove(name);
                }
                _ => {}
            }
        }
        for variable in CI_ID_VARIABLES {
            command.env_remove(variable);
        }
        for variable in hidden {
            command.env_remove(variable);
        }
        command
            .env("ZIBBY_RUN_SOURCE", "studio")
            .env("ZIBBY_EMIT_GRAPH_MARKERS", "1")
            .env("ZIBBY_WORKFLOW_GRAPH_LOG_MARKERS", "1")
            .env("ZIBBY_PIN_SESSION_PATH", "1")
            .env("ZIBBY_SESSION_PATH", &self.session_path)
            .env("ZIBBY_SESSION_ID", self.session_id.as_str())
            .env("ZIBBY_NO_DEPRECATION_WARNINGS", "1")
            .env("DOTENV_CONFIG_QUIET", "true")
            .env("ZIBBY_STUDIO_PROMPT", request.prompt.as_deref().unwrap_or(""))
            .env("ZIBBY_STUDIO_MESSAGES", &self.messages_file);
        for (key, value) in &request.env {
            command.env(key, value);
        }
        // Last, so that nothing replaces it: the mark every process of the run inherits
        // (`crate::vocabulary::containment`).
        command.env(RUN_MARKER, &self.run_id);
    }

    /// A run whose command could not start: recorded as ended at once with status `error` and
    /// `message`, and announced as started and finished.
    pub(super) fn record_failure(
        self,
        shared: &Shared,
        workspace: &Workspace,
        message: String,
    ) -> Result<StartedRun, Error> {
        let store = &shared.store;
        let _ = std::fs::remove_file(&self.messages_file);
        let ended_at = SystemTime::now();
        store.run_finish(
            &self.run_id,
            &RunOutcome {
                status: Status::Error,
                exit_code: None,
                error: Some(&message),
                stopped_by: None,
                ended_at,
            },
        )?;
        store.log(
            workspace,
            &self.session_id,
            Some(&self.run_id),
            Level::Error,
            "run.failed",
            &message,
            serde_json::json!({ "command": self.command }),
            ended_at,
        )?;
        super::run_record::record_run_in_folder(store, &self.run_id);
        shared.publish(RunEvent::RunStarted {
            run_id: self.run_id.clone(),
            session_id: self.session_id.to_string(),
            pid: None,
        });
        shared.publish(RunEvent::RunFinished {
            run_id: self.run_id.clone(),
            session_id: self.session_id.to_string(),
            status: Status::Error,
            exit_code: None,
            elapsed_ms: 0,
            stopped_by: None,
            error: Some(message),
        });
        Ok(self.started(None))
    }

    /// The run's child `pid` started: its process recorded, the run live and announced. The
    /// agent runs from here on: the studio's own trouble recording it (a full disk) is logged,
    /// never a reason to drop its pipes (it would die of SIGPIPE) or leave it unfollowed.
    pub(super) fn record_start(
        &self,
        shared: &Shared,
        workspace: &Workspace,
        pid: u32,
        grace: Duration,
    ) -> Arc<LiveRun> {
        let store = &shared.store;
        // Not waited for yet: the process with this id is the child, whatever its start time.
        let leader = ProcessIdentity::of(pid);
        let recorded = store
            .run_set_process(&self.run_id, pid, pid)
            .and_then(|()| match &self.keeper_dir {
                Some(dir) => store.run_set_keeper_dir(&self.run_id, dir),
                None => Ok(()),
            })
            .and_then(|()| {
                store.log(
                    workspace,
                    &self.session_id,
                    Some(&self.run_id),
                    Level::Info,
                    "run.started",
                    &format!("started {}", self.command.join(" ")),
                    serde_json::json!({ "pid": pid, "process_group": pid, "command": self.command, "session_path": self.path_text }),
                    self.started_at,
                )
            });
        if let Err(error) = recorded {
            tracing::error!(run_id = %self.run_id, %error, "cannot record a run's start; following it anyway");
        }
        let live = Arc::new(LiveRun::new(
            &self.run_id,
            self.session_path.clone(),
            leader,
            Vec::new(),
            grace,
            self.keeper_dir.clone(),
        ));
        shared
            .live
            .lock()
            .expect("live lock")
            .insert(self.run_id.clone(), live.clone());
        shared.publish(RunEvent::RunStarted {
            run_id: self.run_id.clone(),
            session_id: self.session_id.to_string(),
            pid: Some(pid),
        });
        live
    }

    /// What `Supervisor::start` answers for this run, its child `pid` if it started.
    pub(super) fn started(&self, pid: Option<u32>) -> StartedRun {
        StartedRun {
            run_id: self.run_id.clone(),
            session_id: self.session_id.to_string(),
            session_path: self.session_path.clone(),
            pid,
        }
    }
}

impl ChildCommand {
    /// Spawns the child; when it cannot start, why not, in words.
    pub(super) fn spawn(mut self) -> Result<Child, String> {
        let program = &self.program;
        if program.is_empty() {
            Err("cannot start: the command is empty".to_owned())
        } else if !self.cwd.is_dir() {
            Err(format!(
                "cannot start `{program}`: working folder {} does not exist",
                self.cwd.display()
            ))
        } else {
            self.command.spawn().map_err(|e| spawn_error(program, &e))
        }
    }
}

/// The run's session, its folder made if it is new, without a stop file left from an earlier run
/// (it would end this one before its first node).
fn open_session_folder(request: &RunRequest) -> Result<(SessionId, PathBuf), Error> {
    let session_id = match &request.session {
        Some(id) => id.clone(),
        None => new_session_id(),
    };
    let session_path = request.workspace.create_session_folder(&session_id)?;
    remove_stop_files(&session_path);
    Ok((session_id, session_path))
}

/// The run's row, and its prompt (if any) as the session's next user message.
fn record_run(
    store: &Store,
    request: &RunRequest,
    session_id: &SessionId,
    command: &[String],
    started_at: SystemTime,
) -> Result<String, Error> {
    let run_id = store.run_insert(
        &request.workspace,
        &NewRun {
            session: session_id,
            agent: request.agent.as_deref(),
            command,
            replayed_node: request.node.as_deref(),
            prompt: request.prompt.as_deref(),
            started_at,
        },
    )?;
    store.run_set_budget(&run_id, &request.budget)?;
    if let Some(prompt) = request.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        store.message_append(&request.workspace, session_id, "user", prompt, started_at)?;
    }
    Ok(run_id)
}

/// Writes the conversation so far for the agent, 0600, and returns its file: beside the keeper's
/// files when there is a keeper (removed with them by whichever studio process settles the run),
/// else in the temp folder (removed when the run ends).
fn write_conversation(keeper_dir: Option<&Path>, run_id: &str, messages: &impl Serialize) -> Result<PathBuf, Error> {
    let messages_file = match keeper_dir {
        Some(dir) => {
            crate::sessions::private::create_dir_all(dir)?;
            dir.join(MESSAGES_FILE)
        }
        None => messages_file(run_id),
    };
    crate::sessions::private::create_new_file(
        &messages_file,
        &serde_json::to_vec(messages).expect("messages serialise"),
    )?;
    Ok(messages_file)
}

fn spawn_error(program: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!("cannot start `{program}`: command not found"),
        std::io::ErrorKind::PermissionDenied => format!("cannot start `{program}`: not executable (permission denied)"),
        _ => format!("cannot start `{program}`: {error}"),
    }
}
