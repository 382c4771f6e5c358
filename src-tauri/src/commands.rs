//! The IPC commands, named noun_verb. Each is one call into `studio-core`.
//!
//! Arguments are snake_case on both sides (`{session_id}`), like the shapes the commands return.
//! Commands that touch the disk or the store run off the main thread (`async`). Every id is
//! parsed and every path checked by the core before it is used: nothing outside the open
//! workspace's sessions folder can be read or deleted through a command.
//!
//! The commands are one list: every one is defined inside `ipc_commands!`, which registers them
//! ([`invoke_handler`]) and gives their signatures to the window's generated `Commands` table
//! (`ui/src/generated/ipc.ts`: each command's arguments and result), so that a renamed or retyped
//! argument fails the window's type check. A new command is one more function in that list.
//!
//! The bodies of the commands that need no window are the app service's
//! (`studio_core::app::operations`): the studio server (`zstudio serve --stdio`) answers its
//! methods of the same names with the same functions; `ipc_types` fails when the two lists differ.
//! While the open workspace is on another machine, those commands are answered there: the macro
//! puts one call before every body (`forward::remote_answer`), which sends the command by name
//! with its arguments and reads the answer back as its result.

use std::path::PathBuf;
use std::time::SystemTime;

use studio_core::agents::Agent;
use studio_core::app::across::LocalSessions;
use studio_core::app::{SessionListing, SessionsPage};
use studio_core::compare::RunDiff;
use studio_core::cost::UsageTotal;
use studio_core::files::{FileChunk, FileEntry};
use studio_core::runner::{OutsideStop, StartedRun};
use studio_core::stop::Stopping;
use studio_core::store::{Filters, LogLine, Message, OutputFind, OutputPage, RunRecord, SavedView, SearchHit, Span};
use studio_core::{Session, SessionId};
use tauri::{AppHandle, State};

use studio_core::app::cloud::{CloudImported, CloudStatus};
use studio_core::app::elsewhere::RemoteStatus;
use studio_core::app::operations::WorkspaceInfo;
use studio_core::share::otlp::TraceSetting;

use crate::opening::Opening;
use crate::{CommandError, Studio};

/// Defines the IPC commands as written, and from their signatures [`invoke_handler`] and (for
/// `ipc_types`, as `ipc_signature`'s) `signatures`: each command's name, arguments (its parameters but the ones Tauri
/// fills in itself, `State` and `AppHandle`) and result.
macro_rules! ipc_commands {
    (@result) => { () };
    (@result $result:ty) => { $result };
    ($(
        $(#[$($attribute:tt)*])*
        $visibility:vis fn $name:ident($($parameter:ident: $type:ty),* $(,)?) $(-> $result:ty)? $body:block
    )*) => {
        $(
            $(#[$($attribute)*])*
            $visibility fn $name($($parameter: $type),*) $(-> $result)? {
                let arguments: &[(&str, &dyn crate::forward::CommandArgument)] =
                    &[$((stringify!($parameter), &$parameter)),*];
                if let Some(answer) = crate::forward::remote_answer(stringify!($name), arguments) {
                    return answer;
                }
                $body
            }
        )*

        /// The shell's handler of the window's `invoke`s: the commands above.
        pub fn invoke_handler() -> impl Fn(tauri::ipc::Invoke) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$($name),*]
        }

        /// Each command's name, arguments and result, in TypeScript (`ui/src/generated/ipc.ts`).
        #[cfg(test)]
        pub(crate) fn signatures(cfg: &ts_rs::Config) -> Vec<crate::ipc_signature::Signature> {
            use crate::ipc_signature::{Argument, Returned};
            vec![$(crate::ipc_signature::Signature {
                name: stringify!($name),
                arguments: {
                    // Typed, so that a command of no parameters is an empty list.
                    let arguments: Vec<(&str, Option<crate::ipc_signature::TsType>)> =
                        vec![$((stringify!($parameter), <$type as Argument>::ts(cfg))),*];
                    arguments.into_iter().filter_map(|(name, ts)| Some((name, ts?))).collect()
                },
                result: <ipc_commands!(@result $($result)?) as Returned>::ts(cfg),
            }),*]
        }
    };
}

ipc_commands! {
    #[tauri::command]
    pub fn workspace_get(studio: State<'_, Studio>) -> Result<WorkspaceInfo, CommandError> {
        Ok(studio.workspace_info()?)
    }

    /// The workspaces the window opened, most recent first (the open one among them).
    #[tauri::command(async)]
    pub fn workspaces_recent(studio: State<'_, Studio>) -> Result<Vec<String>, CommandError> {
        Ok(studio
            .recent_workspaces()?
            .into_iter()
            .map(|root| root.display().to_string())
            .collect())
    }

    /// Opens another workspace (the window hears `workspace-changed`): one of the recent ones at
    /// once, any other folder once the user said yes in the system's dialog (`None`: they said no).
    #[tauri::command(async)]
    pub fn workspace_open(app: AppHandle, path: String) -> Result<Option<WorkspaceInfo>, CommandError> {
        crate::desktop::switch_workspace_asking(&app, &PathBuf::from(path))
    }

    /// Opens a workspace on another machine, `HOST:PATH` or `ssh://HOST/PATH`, over the system's
    /// ssh (the window hears `workspace-changed`) once the user allowed it (one not in Open Recent
    /// is asked about natively; `None`: they said no); errors name the host and what failed.
    #[tauri::command(async)]
    pub fn workspace_open_remote(app: AppHandle, target: String) -> Result<Option<RemoteStatus>, CommandError> {
        let opening = Opening::Host(studio_core::remote::window::parse_target(target.trim())?);
        if !crate::desktop::allowed_to_open(&app, &opening)? {
            return Ok(None);
        }
        crate::remote::open_remote(&app, target.trim()).map(Some)
    }

    /// The open workspace's host and path when it is on another machine, and whether its link was
    /// lost; `None` for a workspace here.
    #[tauri::command]
    pub fn workspace_remote(studio: State<'_, Studio>) -> Option<RemoteStatus> {
        studio.remote().map(|remote| remote.status())
    }

    /// Opens a bucket prefix (`s3://bucket/prefix`, at `endpoint` and with the credential
    /// chain's `profile` when given) as the workspace, read-only (the window hears
    /// `workspace-changed`), once the user allowed it (one not in Open Recent is asked about
    /// natively, naming the endpoint its credentials would go to; `None`: they said no); errors
    /// name the source. `cache_limit` (a size: `500M`, `2G`), when given, becomes every source's
    /// limit; `clear_cache` empties this source's folder first.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn workspace_open_cloud(
        app: AppHandle,
        url: String,
        endpoint: Option<String>,
        profile: Option<String>,
        cache_limit: Option<String>,
        clear_cache: bool,
    ) -> Result<Option<WorkspaceInfo>, CommandError> {
        let source = crate::cloud::source_of(&url, endpoint, profile)?;
        if !crate::desktop::allowed_to_open(&app, &Opening::Bucket(source.clone()))? {
            return Ok(None);
        }
        let choice = crate::cloud::CacheChoice {
            limit: cache_limit,
            clear: clear_cache,
        };
        crate::cloud::open_cloud(&app, source, choice).map(Some)
    }

    /// The limit of each bucket's mirror in the cache, as a size (`2G`): the one set in the
    /// Open Cloud Workspace form, else the default.
    #[tauri::command]
    pub fn cloud_cache_limit() -> Result<String, CommandError> {
        use studio_core::bucket::cache::{self, DEFAULT_MAX_BYTES};
        let limit = cache::default_cache_root().map_or(DEFAULT_MAX_BYTES, |root| cache::limit(&root));
        Ok(studio_args::format_size(limit))
    }

    /// Copies a session of the open cloud workspace into the local workspace opened last (else
    /// one asked for; `None`: cancelled) and its store.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn cloud_session_import(app: AppHandle, session_id: String) -> Result<Option<CloudImported>, CommandError> {
        crate::cloud::import_session(&app, &session_id)
    }

    /// The open workspace's bucket URL when it is a bucket prefix (read-only); `None` otherwise.
    #[tauri::command]
    pub fn workspace_cloud(studio: State<'_, Studio>) -> Option<CloudStatus> {
        studio.cloud().map(|cloud| cloud.status())
    }

    /// The remote workspace being connected to (`host:path` as given), while one is.
    #[tauri::command]
    pub fn workspace_connecting(settings: State<'_, crate::remote::SshSettings>) -> Option<String> {
        settings.connecting()
    }

    /// Asks for a folder with the system's folder picker and opens it; `None` when cancelled.
    #[tauri::command(async)]
    pub fn workspace_pick(app: AppHandle) -> Result<Option<WorkspaceInfo>, CommandError> {
        match crate::window::pick_folder(&app) {
            Some(path) => crate::desktop::switch_workspace(&app, &path).map(Some),
            None => Ok(None),
        }
    }

    /// The sessions of the workspace, pinned first, with what the store knows of them.
    #[tauri::command(async)]
    pub fn sessions_list(studio: State<'_, Studio>) -> Result<SessionListing, CommandError> {
        Ok(studio.sessions_list()?)
    }

    /// A page of the sessions table, `limit` rows from `offset` in `sessions_list`'s order, with
    /// how many there are and which of its rows are being checked against their folders.
    #[tauri::command(async)]
    pub fn sessions_page(studio: State<'_, Studio>, offset: usize, limit: usize) -> Result<SessionsPage, CommandError> {
        Ok(studio.sessions_page(offset, limit)?)
    }

    /// What all the workspace's sessions cost (`sessions_list`'s `usage`), without listing them.
    #[tauri::command(async)]
    pub fn sessions_usage(studio: State<'_, Studio>) -> Result<Option<UsageTotal>, CommandError> {
        Ok(studio.sessions_usage()?)
    }

    /// One session folder read in full (without `.session-info.json`'s config: it may hold secrets).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_get(studio: State<'_, Studio>, session_id: String) -> Result<Session, CommandError> {
        Ok(studio.session_get(&session_id)?)
    }

    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_messages(studio: State<'_, Studio>, session_id: String) -> Result<Vec<Message>, CommandError> {
        Ok(studio.session_messages(&session_id)?)
    }

    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_logs(studio: State<'_, Studio>, session_id: String) -> Result<Vec<LogLine>, CommandError> {
        Ok(studio.session_logs(&session_id)?)
    }

    /// The files of a session folder, by path.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_files(studio: State<'_, Studio>, session_id: String) -> Result<Vec<FileEntry>, CommandError> {
        Ok(studio.session_files(&session_id)?)
    }

    /// A page of one file of a session folder (a path inside the folder only).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_file_read(
        studio: State<'_, Studio>,
        session_id: String,
        path: String,
        offset: u64,
        limit: usize,
    ) -> Result<FileChunk, CommandError> {
        Ok(studio.session_file_read(&session_id, &path, offset, limit)?)
    }

    /// Opens a session's folder in the file manager (a workspace here only: the window offers
    /// "Copy remote path" for one on another machine).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_reveal(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
        crate::desktop::reveal(&studio.session_folder(&session_id)?)
    }

    /// Deletes a session: the store's records of it, and its folder (to the system trash). Refused
    /// while a run of it is live, the studio's or one it did not start (code `session_live`).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_delete(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
        Ok(studio.session_delete(&session_id)?)
    }

    #[tauri::command(async, rename_all = "snake_case")]
    pub fn pin_add(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
        Ok(studio.pin_add(&session_id)?)
    }

    #[tauri::command(async, rename_all = "snake_case")]
    pub fn pin_remove(studio: State<'_, Studio>, session_id: String) -> Result<(), CommandError> {
        Ok(studio.pin_remove(&session_id)?)
    }

    /// Adds tags to a session (each held to the tag rules, `invalid_tag` naming the first that is
    /// not); answers its tags after.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn tags_add(studio: State<'_, Studio>, session_id: String, tags: Vec<String>) -> Result<Vec<String>, CommandError> {
        Ok(studio.tags_add(&session_id, &parse_tags(&tags)?)?)
    }

    /// Removes tags from a session; answers its tags after.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn tags_remove(
        studio: State<'_, Studio>,
        session_id: String,
        tags: Vec<String>,
    ) -> Result<Vec<String>, CommandError> {
        Ok(studio.tags_remove(&session_id, &parse_tags(&tags)?)?)
    }

    /// A session's note, if it has one.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn note_get(studio: State<'_, Studio>, session_id: String) -> Result<Option<String>, CommandError> {
        Ok(studio.note_get(&session_id)?)
    }

    /// Sets a session's note (null or empty removes it; at most 64 KiB).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn note_set(studio: State<'_, Studio>, session_id: String, note: Option<String>) -> Result<(), CommandError> {
        Ok(studio.note_set(&session_id, note.as_deref())?)
    }

    /// The workspace's saved views (the table's filters under a name), by name.
    #[tauri::command(async)]
    pub fn views_list(studio: State<'_, Studio>) -> Result<Vec<SavedView>, CommandError> {
        Ok(studio.views_list()?)
    }

    /// Saves the table's filters under `name` (replacing a view of that name; `invalid_view_name`
    /// names the rule a name breaks); answers the views after.
    #[tauri::command(async)]
    pub fn view_save(studio: State<'_, Studio>, name: String, filters: Filters) -> Result<Vec<SavedView>, CommandError> {
        Ok(studio.view_save(&name, &filters)?)
    }

    /// Deletes the saved view `name`; answers the views after.
    #[tauri::command(async)]
    pub fn view_delete(studio: State<'_, Studio>, name: String) -> Result<Vec<SavedView>, CommandError> {
        Ok(studio.view_delete(&name)?)
    }

    /// Full-text search over the workspace's run output, messages, node names and logs.
    #[tauri::command(async)]
    pub fn search(studio: State<'_, Studio>, query: String, limit: usize) -> Result<Vec<SearchHit>, CommandError> {
        Ok(studio.search(&query, limit)?)
    }

    /// The agents of the workspace's `.zibby/studio.toml` (none without the file).
    #[tauri::command(async)]
    pub fn agents_list(studio: State<'_, Studio>) -> Result<Vec<Agent>, CommandError> {
        Ok(studio.agents_list()?)
    }

    /// Adds an agent to `.zibby/studio.toml`, or replaces the one named `previous_name`; returns the
    /// agents as saved (in a remote workspace, the host's file, written by its studio server). What
    /// the page writes is not trusted: its first run asks, as any file's.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn agent_save(
        studio: State<'_, Studio>,
        agent: Agent,
        previous_name: Option<String>,
    ) -> Result<Vec<Agent>, CommandError> {
        Ok(studio.agent_save(agent, previous_name.as_deref())?)
    }

    /// Where the open workspace's runs are sent as traces: the exporter's variables, which win,
    /// else the workspace's `[otlp]` table (in a remote workspace, the host's).
    #[tauri::command(async)]
    pub fn traces_setting(studio: State<'_, Studio>) -> Result<TraceSetting, CommandError> {
        Ok(studio.traces_setting()?)
    }

    /// Writes the workspace's `[otlp]` table: `endpoint` (a collector's base URL) and `protocol`,
    /// or none (blank: runs are no longer sent). A new endpoint is asked about in the system's
    /// dialog first, naming it and what is sent (`None`: the user said no, nothing written).
    /// Refused in a cloud workspace (read-only) and in a remote one (its host's file is its own).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn traces_setting_save(
        app: AppHandle,
        studio: State<'_, Studio>,
        endpoint: Option<String>,
        protocol: Option<String>,
    ) -> Result<Option<TraceSetting>, CommandError> {
        if let Some(remote) = studio.remote() {
            return Err(studio_core::Error::LocalOnly {
                host: remote.status().host,
                what: "the Traces setting (set [otlp] in the host's .zibby/studio.toml)".to_owned(),
            }
            .into());
        }
        let endpoint = endpoint.map(|endpoint| endpoint.trim().to_owned()).filter(|e| !e.is_empty());
        if let Some(endpoint) = &endpoint {
            let new = studio.traces_setting()?.endpoint.as_deref() != Some(endpoint.as_str());
            if new
                && !crate::window::ask_natively(
                    &app,
                    crate::consent::TRACES_TITLE,
                    &crate::consent::traces_question(endpoint),
                    "_Send traces",
                )
            {
                return Ok(None);
            }
        }
        Ok(Some(studio.traces_setting_save(endpoint.as_deref(), protocol.as_deref())?))
    }

    /// Asks the user, in the system's dialog, to trust the launch of the run the window wants to
    /// start (after it was refused as `agents_untrusted`): the shell works the launch out itself
    /// from the agents file (`node`: the replay of that node), shows it, and records trust only on
    /// the user's yes (in a remote workspace, the host's server works it out and records it in
    /// the host's store). Returns whether the launch is trusted now.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn agents_trust(
        app: AppHandle,
        studio: State<'_, Studio>,
        agent: String,
        prompt: Option<String>,
        session_id: Option<String>,
        node: Option<String>,
    ) -> Result<bool, CommandError> {
        let wanted = crate::consent::WantedRun {
            agent,
            prompt,
            session: session_id.as_deref().map(SessionId::parse).transpose()?,
            node,
        };
        let remote = studio.remote();
        let host = remote.as_ref().map(|remote| remote.status().host);
        let ask = |shown: &studio_core::launch::ShownLaunch| {
            crate::window::ask_natively(
                &app,
                crate::consent::TRUST_TITLE,
                &crate::consent::trust_question(shown, host.as_deref()),
                "_Trust and run",
            )
        };
        // A workspace on another machine: its host works the launch out and records the trust.
        if let Some(remote) = remote {
            return Ok(crate::consent::trust_on_host(&*remote, wanted, ask)?);
        }
        let trusted = crate::consent::trust_after_asking(
            studio.store()?,
            &studio.workspace()?,
            wanted,
            SystemTime::now(),
            ask,
        )?;
        Ok(trusted)
    }

    /// Runs an agent of `.zibby/studio.toml` on a prompt, in a new session or in `session_id`
    /// (continuing its conversation); `max_cost_usd` is this run's budget instead of the agent's.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn run_start(
        studio: State<'_, Studio>,
        agent: String,
        prompt: String,
        session_id: Option<String>,
        max_cost_usd: Option<f64>,
    ) -> Result<StartedRun, CommandError> {
        Ok(studio.run_start(&agent, prompt, session_id.as_deref(), max_cost_usd)?)
    }

    /// Runs one node of a session again, with the agent's replay command.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn run_replay(
        studio: State<'_, Studio>,
        session_id: String,
        node: String,
        agent: String,
    ) -> Result<StartedRun, CommandError> {
        Ok(studio.run_replay(&session_id, node, &agent)?)
    }

    /// Stops a live run: gracefully (the current node finishes first), or by force. A run another
    /// studio process started (a `zstudio run`) is stopped through its session folder and process
    /// group. Returns how it stops (`graceful` or `forced`: a second stop of a stopping run is forced).
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn run_stop(studio: State<'_, Studio>, run_id: String, force: bool) -> Result<Stopping, CommandError> {
        Ok(studio.run_stop(&run_id, force)?)
    }

    /// Asks the run of a session the studio did not start (its folder reads `running`, no live run
    /// of the studio's) to stop before its next node: its stop files only, never a signal, so
    /// there is no forced stop of it.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_stop_outside(studio: State<'_, Studio>, session_id: String) -> Result<OutsideStop, CommandError> {
        Ok(studio.session_stop_outside(&session_id)?)
    }

    /// The runs of the workspace (or of one session), newest first.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn runs_list(studio: State<'_, Studio>, session_id: Option<String>) -> Result<Vec<RunRecord>, CommandError> {
        Ok(studio.runs_list(session_id.as_deref())?)
    }

    /// The trace of a run: one span for the run, one per node execution.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn run_spans(studio: State<'_, Studio>, run_id: String) -> Result<Vec<Span>, CommandError> {
        Ok(studio.run_spans(&run_id)?)
    }

    /// A page of a run's output: lines `from_seq..` that pass the filters, at most `limit`.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn run_output(
        studio: State<'_, Studio>,
        run_id: String,
        from_seq: i64,
        limit: usize,
        node: Option<String>,
        stream: Option<String>,
    ) -> Result<OutputPage, CommandError> {
        Ok(studio.run_output(&run_id, from_seq, limit, node, stream.as_deref())?)
    }

    /// Find in a run's output: the first line from `from_seq` (or back from it) whose text contains
    /// `query`, ignoring case and ANSI escapes. A call reads a bounded number of lines and says where
    /// to go on, so the window shows progress and can stop.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn run_output_find(
        studio: State<'_, Studio>,
        run_id: String,
        from_seq: i64,
        backward: bool,
        query: String,
    ) -> Result<OutputFind, CommandError> {
        Ok(studio.run_output_find(&run_id, from_seq, backward, &query)?)
    }

    /// Two runs compared node by node (`a`, `b`: run or session ids): the first hunks of each node
    /// at once; with `node` and `occurrence`, that one execution alone from hunk `skip_hunks` on
    /// ("more").
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn runs_compare(
        studio: State<'_, Studio>,
        a: String,
        b: String,
        node: Option<String>,
        occurrence: Option<usize>,
        skip_hunks: usize,
    ) -> Result<RunDiff, CommandError> {
        Ok(studio.runs_compare(&a, &b, node, occurrence, skip_hunks)?)
    }

    /// The sessions of the workspace on this machine the window had open before its remote one:
    /// what a remote session can be compared with.
    #[tauri::command(async)]
    pub fn sessions_local(studio: State<'_, Studio>) -> Result<LocalSessions, CommandError> {
        Ok(studio.local_sessions(SystemTime::now())?)
    }

    /// Session `a` of the open remote workspace compared with session `b` of the workspace here
    /// (`sessions_local`), each its last run, as `runs_compare` compares two runs (`node`,
    /// `occurrence`, `skip_hunks`: its "more"). Both are brought here as bundles, into a scratch
    /// copy: neither workspace changes.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn runs_compare_across(
        studio: State<'_, Studio>,
        a: String,
        b: String,
        node: Option<String>,
        occurrence: Option<usize>,
        skip_hunks: usize,
    ) -> Result<RunDiff, CommandError> {
        let options = studio_core::compare::Options {
            node,
            occurrence,
            limits: studio_core::compare::text::Limits {
                skip_hunks,
                ..Default::default()
            },
        };
        Ok(studio.compare_across(&a, &b, &options)?)
    }

    /// What quitting does with the live runs: stop them, or leave them running; then quits.
    #[tauri::command(rename_all = "snake_case")]
    pub fn app_quit(app: AppHandle, studio: State<'_, Studio>, keep_runs: bool) {
        studio.keep_runs_on_exit(keep_runs);
        crate::desktop::quit_now(&app);
    }

    /// Export…: the system's save dialog, then the session written there as a bundle; `None` when
    /// cancelled.
    #[tauri::command(async, rename_all = "snake_case")]
    pub fn session_export(
        app: AppHandle,
        session_id: String,
    ) -> Result<Option<crate::share::ExportedBundle>, CommandError> {
        crate::share::export_with_dialog(&app, &session_id)
    }

    /// The session the app's command line asked for (`--session`, `zstudio open`), once.
    #[tauri::command]
    pub fn session_requested(requested: State<'_, crate::share::RequestedSession>) -> Option<String> {
        requested.take()
    }
}

/// Tags as the window typed them, each held to the tag rules (`invalid_tag` names the first that
/// is not one).
fn parse_tags(tags: &[String]) -> Result<Vec<studio_core::label::Tag>, CommandError> {
    Ok(tags
        .iter()
        .map(|tag| studio_core::label::Tag::parse(tag))
        .collect::<Result<_, _>>()?)
}
