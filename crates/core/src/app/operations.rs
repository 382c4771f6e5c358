//! The operations of the window's IPC commands that need no window, written once: the shell's
//! commands (`src-tauri/src/commands.rs`) are one call each to these, and the studio server
//! (`remote::server`, `zstudio serve --stdio`) dispatches its methods of the same names to them.
//! Their arguments are the commands' own (ids as the window sends them, parsed here).

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::app::across::{AcrossMachines, LocalSessions};
use crate::app::cloud::CloudImported;
use crate::app::{lock, SessionListing, SessionsPage, Studio};
use crate::compare::text::Limits;
use crate::compare::{Options as CompareOptions, RunDiff};
use crate::runs::runner::{OutsideStop, StartedRun};
use crate::runs::stop::Stopping;
use crate::sessions::agents::{self, Agent};
use crate::sessions::cost::UsageTotal;
use crate::sessions::files::{FileChunk, FileEntry};
use crate::sessions::session::{Session, Workspace};
use crate::share::otlp::{self, TraceSetting};
use crate::store::index::NodeDetail;
use crate::store::{
    Filters, LogLine, Message, OutputFilter, OutputFind, OutputPage, RunRecord, SavedView, SearchHit, Span,
};
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::label::Tag;

/// The most lines one output page holds.
pub const MAX_PAGE_LINES: usize = 5_000;

/// The most hits one search returns.
pub const MAX_SEARCH_HITS: usize = 500;

/// The open workspace, as the window's header shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct WorkspaceInfo {
    pub root: String,
    pub sessions_dir: String,
}

impl From<&Workspace> for WorkspaceInfo {
    fn from(workspace: &Workspace) -> WorkspaceInfo {
        WorkspaceInfo {
            root: workspace.root().display().to_string(),
            sessions_dir: workspace.sessions_dir().display().to_string(),
        }
    }
}

/// An optional session id, parsed.
fn parse_optional(session_id: Option<&str>) -> Result<Option<SessionId>, Error> {
    session_id.map(SessionId::parse).transpose()
}

impl Studio {
    /// The open workspace (`workspace_get`).
    pub fn workspace_info(&self) -> Result<WorkspaceInfo, Error> {
        Ok(WorkspaceInfo::from(&self.workspace()?))
    }

    /// A session's folder in the open workspace, once its id is valid and the folder exists.
    pub fn session_folder(&self, session_id: &str) -> Result<PathBuf, Error> {
        self.workspace()?.session_folder(&self.fetched_id(session_id)?)
    }

    /// `session_id` parsed; in a cloud workspace, the session recorded as opened, and fetched
    /// first when its row is a cold open's id alone (`CloudWorkspace::open_session`).
    fn fetched_id(&self, session_id: &str) -> Result<SessionId, Error> {
        let id = SessionId::parse(session_id)?;
        if let Some(cloud) = self.cloud() {
            cloud.open_session(&id)?;
        }
        Ok(id)
    }

    /// The sessions of the workspace, pinned first (`sessions_list`).
    pub fn sessions_list(&self) -> Result<SessionListing, Error> {
        self.sessions(SystemTime::now())
    }

    /// A page of the window's table, `limit` rows from `offset` in `sessions_list`'s order, with
    /// how many sessions there are (`sessions_page`; see `Studio::window_page`).
    pub fn sessions_page(&self, offset: usize, limit: usize) -> Result<SessionsPage, Error> {
        self.window_page(offset, limit)
    }

    /// What all the workspace's sessions cost, as `sessions_list`'s `usage` says it
    /// (`sessions_usage`): from the catalogue without making every row, once it holds the
    /// workspace; a cloud workspace's from its listing.
    pub fn sessions_usage(&self) -> Result<Option<UsageTotal>, Error> {
        let (store, workspace) = (self.store()?, self.workspace()?);
        if self.cloud().is_some() || store.catalogue_len(&workspace)? == 0 {
            return Ok(self.sessions(SystemTime::now())?.usage);
        }
        store.catalogue_usage(&workspace)
    }

    /// A page of the sessions, in `sessions_list`'s order, from the store's catalogue (the
    /// folders outside the page not read: `store::catalogue`), with how many sessions the
    /// catalogue holds; `None` for a cloud workspace, whose rows being fetched are not in it
    /// (`sessions_list` lists those).
    pub fn catalogue_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Option<(Vec<crate::store::SessionRow>, usize)>, Error> {
        if self.cloud().is_some() {
            return Ok(None);
        }
        let (store, workspace) = (self.store()?, self.workspace()?);
        let page = store.sessions_page(&workspace, SystemTime::now(), NodeDetail::TotalsOnly, offset, limit)?;
        Ok(Some((page, store.catalogue_len(&workspace)?)))
    }

    /// One session folder read in full, without `.session-info.json`'s config: it may hold
    /// secrets (`session_get`).
    pub fn session_get(&self, session_id: &str) -> Result<Session, Error> {
        let id = self.fetched_id(session_id)?;
        Ok(self
            .store()?
            .read_session(&self.workspace()?, &id, SystemTime::now())?
            .without_config())
    }

    pub fn session_messages(&self, session_id: &str) -> Result<Vec<Message>, Error> {
        self.store()?
            .messages(&self.workspace()?, &self.fetched_id(session_id)?)
    }

    pub fn session_logs(&self, session_id: &str) -> Result<Vec<LogLine>, Error> {
        self.store()?.logs(&self.workspace()?, &self.fetched_id(session_id)?)
    }

    /// The files of a session folder, by path.
    pub fn session_files(&self, session_id: &str) -> Result<Vec<FileEntry>, Error> {
        crate::sessions::files::list(&self.session_folder(session_id)?)
    }

    /// A page of one file of a session folder (a path inside the folder only).
    pub fn session_file_read(
        &self,
        session_id: &str,
        path: &str,
        offset: u64,
        limit: usize,
    ) -> Result<FileChunk, Error> {
        let folder = self.session_folder(session_id)?;
        if let Some(cloud) = self.cloud() {
            cloud.ensure_range(session_id, path, offset, limit)?;
        }
        crate::sessions::files::read(&folder, session_id, path, offset, limit)
    }

    /// Deletes a session: its records, and its folder (to the system trash). Refused while one of
    /// its runs is live, the studio's or one it did not start whose folder reads `running`
    /// (`session_live`).
    pub fn session_delete(&self, session_id: &str) -> Result<(), Error> {
        let id = SessionId::parse(session_id)?;
        self.store()?
            .session_delete(&self.workspace()?, &id, crate::vocabulary::process::move_to_trash)
    }

    pub fn pin_add(&self, session_id: &str) -> Result<(), Error> {
        self.store()?
            .pin(&self.workspace()?, &SessionId::parse(session_id)?, SystemTime::now())
    }

    pub fn pin_remove(&self, session_id: &str) -> Result<(), Error> {
        self.store()?.unpin(&self.workspace()?, &SessionId::parse(session_id)?)
    }

    /// Adds tags to a session the workspace has; answers its tags after.
    pub fn tags_add(&self, session_id: &str, tags: &[Tag]) -> Result<Vec<String>, Error> {
        let (store, workspace, id) = (self.store()?, self.workspace()?, SessionId::parse(session_id)?);
        self.require_session(&workspace, &id)?;
        store.tag(&workspace, &id, tags, SystemTime::now())
    }

    /// Removes tags from a session; answers its tags after.
    pub fn tags_remove(&self, session_id: &str, tags: &[Tag]) -> Result<Vec<String>, Error> {
        self.store()?
            .untag(&self.workspace()?, &SessionId::parse(session_id)?, tags)
    }

    /// A session's note, if it has one.
    pub fn note_get(&self, session_id: &str) -> Result<Option<String>, Error> {
        let (workspace, id) = (self.workspace()?, SessionId::parse(session_id)?);
        self.require_session(&workspace, &id)?;
        self.store()?.note(&workspace, &id)
    }

    /// Sets a session's note (`None` or empty removes it).
    pub fn note_set(&self, session_id: &str, note: Option<&str>) -> Result<(), Error> {
        let (workspace, id) = (self.workspace()?, SessionId::parse(session_id)?);
        self.require_session(&workspace, &id)?;
        self.store()?.set_note(&workspace, &id, note, SystemTime::now())
    }

    /// The workspace's saved views (the table's filters under a name), by name: the same ones
    /// `zstudio view` lists.
    pub fn views_list(&self) -> Result<Vec<SavedView>, Error> {
        self.store()?.views(&self.workspace()?)
    }

    /// Saves the table's `filters` under `name` (a view of that name is replaced); answers the
    /// views after.
    pub fn view_save(&self, name: &str, filters: &Filters) -> Result<Vec<SavedView>, Error> {
        let (store, workspace) = (self.store()?, self.workspace()?);
        store.view_save(&workspace, name, filters, SystemTime::now())?;
        store.views(&workspace)
    }

    /// Deletes the saved view `name` (`view_not_found` when there is none); answers the views after.
    pub fn view_delete(&self, name: &str) -> Result<Vec<SavedView>, Error> {
        let (store, workspace) = (self.store()?, self.workspace()?);
        store.view_delete(&workspace, name)?;
        store.views(&workspace)
    }

    /// `session_not_found` for a session neither the store nor a folder knows.
    fn require_session(&self, workspace: &Workspace, id: &SessionId) -> Result<(), Error> {
        if self.store()?.session_exists(workspace, id)? {
            return Ok(());
        }
        Err(Error::SessionNotFound {
            id: id.to_string(),
            sessions_dir: workspace.sessions_dir(),
        })
    }

    /// Full-text search over the workspace's run output, messages, node names and logs, at most
    /// [`MAX_SEARCH_HITS`] hits.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, Error> {
        self.store()?
            .search(&self.workspace()?, query, limit.min(MAX_SEARCH_HITS))
    }

    /// The agents of the workspace's `.zibby/studio.toml` (none without the file).
    pub fn agents_list(&self) -> Result<Vec<Agent>, Error> {
        agents::load(self.workspace()?.root())
    }

    /// Adds `agent` to the workspace's `.zibby/studio.toml`, or replaces the one named
    /// `previous_name`, and returns the agents as saved (`agent_save`; validated as any file's).
    pub fn agent_save(&self, agent: Agent, previous_name: Option<&str>) -> Result<Vec<Agent>, Error> {
        agents::save_one(self.workspace()?.root(), agent, previous_name)
    }

    /// Where the open workspace's runs are sent as traces (the window's Traces setting): the
    /// exporter's variables of this process, which win, else the workspace's `[otlp]` table.
    pub fn traces_setting(&self) -> Result<TraceSetting, Error> {
        otlp::trace_setting(|name| std::env::var(name).ok(), self.workspace()?.root())
    }

    /// Writes the open workspace's `[otlp]` table (`endpoint` blank or `None`: removed; the
    /// agents, the budget and the table's headers kept) and answers the setting after. Runs
    /// started from then on are sent there.
    pub fn traces_setting_save(&self, endpoint: Option<&str>, protocol: Option<&str>) -> Result<TraceSetting, Error> {
        otlp::save_trace_setting(self.workspace()?.root(), endpoint, protocol)?;
        self.traces_setting()
    }

    /// Runs an agent on a prompt, in a new session or in `session_id` (`run_start`); with
    /// `max_cost_usd`, that run's budget in dollars instead of the agent's (as `zstudio run
    /// --max-cost`: for this run only).
    pub fn run_start(
        &self,
        agent: &str,
        prompt: String,
        session_id: Option<&str>,
        max_cost_usd: Option<f64>,
    ) -> Result<StartedRun, Error> {
        if let Some(problem) = max_cost_usd.and_then(crate::sessions::budget::usd_problem) {
            return Err(Error::InvalidRequest {
                reason: format!("the run's budget: {problem}"),
            });
        }
        let (store, workspace) = (self.store()?, self.workspace()?);
        let mut request = crate::app::agent_run_request(
            store,
            &workspace,
            agent,
            Some(prompt),
            parse_optional(session_id)?,
            None,
        )?;
        request.budget.max_cost_usd = max_cost_usd.or(request.budget.max_cost_usd);
        self.supervisor()?.start(request)
    }

    /// Runs one node of a session again, with the agent's replay command (`run_replay`).
    pub fn run_replay(&self, session_id: &str, node: String, agent: &str) -> Result<StartedRun, Error> {
        self.run_agent(agent, None, Some(SessionId::parse(session_id)?), Some(node))
    }

    /// Asks the run of a session the studio did not start to stop before its next node.
    pub fn session_stop_outside(&self, session_id: &str) -> Result<OutsideStop, Error> {
        self.stop_outside(&SessionId::parse(session_id)?)
    }

    /// The runs of the workspace (or of one session), newest first.
    pub fn runs_list(&self, session_id: Option<&str>) -> Result<Vec<RunRecord>, Error> {
        let session = parse_optional(session_id)?;
        self.store()?.runs(&self.workspace()?, session.as_ref())
    }

    /// A session's runs as OpenTelemetry traces (`share::otlp`), read from the store and its
    /// folder here, for a client to write or send (`otlp_traces` of the studio server).
    pub fn otlp_traces(
        &self,
        session_id: &str,
        include_output: bool,
    ) -> Result<opentelemetry_proto::tonic::trace::v1::TracesData, Error> {
        let id = SessionId::parse(session_id)?;
        let options = crate::share::otlp::TraceOptions { include_output };
        crate::share::otlp::session_traces(self.store()?, &self.workspace()?, &id, options, SystemTime::now())
    }

    /// The trace of a run: one span for the run, one per node execution.
    pub fn run_spans(&self, run_id: &str) -> Result<Vec<Span>, Error> {
        self.store()?.spans(run_id)
    }

    /// A page of a run's output: lines `from_seq..` that pass the filters, at most `limit` (and
    /// at most [`MAX_PAGE_LINES`]).
    pub fn run_output(
        &self,
        run_id: &str,
        from_seq: i64,
        limit: usize,
        node: Option<String>,
        stream: Option<&str>,
    ) -> Result<OutputPage, Error> {
        let filter = OutputFilter::named(node, stream)?;
        self.store()?
            .output_page_filtered(run_id, from_seq, limit.min(MAX_PAGE_LINES), &filter)
    }

    /// Find in a run's output from `from_seq` (or back from it), a bounded number of lines a call.
    pub fn run_output_find(
        &self,
        run_id: &str,
        from_seq: i64,
        backward: bool,
        query: &str,
    ) -> Result<OutputFind, Error> {
        self.store()?.output_find(run_id, from_seq, backward, query)
    }

    /// Two runs compared node by node; with `node` and `occurrence`, that one execution alone
    /// from hunk `skip_hunks` on (`runs_compare`).
    pub fn runs_compare(
        &self,
        a: &str,
        b: &str,
        node: Option<String>,
        occurrence: Option<usize>,
        skip_hunks: usize,
    ) -> Result<RunDiff, Error> {
        let options = CompareOptions {
            node,
            occurrence,
            limits: Limits {
                skip_hunks,
                ..Limits::default()
            },
        };
        self.compare(a, b, &options)
    }

    /// Stops a live run, gracefully or by force (`run_stop`).
    pub fn run_stop(&self, run_id: &str, force: bool) -> Result<Stopping, Error> {
        self.stop(run_id, force)
    }
}

impl Studio {
    /// The last workspace on this machine the window had open (the one it holds while a remote
    /// workspace is open), whatever is open now.
    pub fn local_workspace(&self) -> Result<Workspace, Error> {
        match &*self.workspace.read().unwrap_or_else(|poisoned| poisoned.into_inner()) {
            Ok(workspace) => Ok(workspace.clone()),
            Err(error) => Err(error.kept(None)),
        }
    }

    /// The sessions of [`Studio::local_workspace`], newest first, to compare a remote session with.
    pub fn local_sessions(&self, now: SystemTime) -> Result<LocalSessions, Error> {
        let workspace = self.local_workspace()?;
        let sessions = self
            .store()?
            .list_sessions_as(&workspace, now, NodeDetail::TotalsOnly)?;
        Ok(LocalSessions {
            root: workspace.root().display().to_string(),
            sessions,
        })
    }

    /// Session `remote_id` of the open remote workspace compared with session `local_id` of
    /// [`Studio::local_workspace`] ([`AcrossMachines`]); the sessions are brought together once
    /// and kept for the next call on the same two (a node's "more"). Reads both whole: call it
    /// off the main thread.
    pub fn compare_across(&self, remote_id: &str, local_id: &str, options: &CompareOptions) -> Result<RunDiff, Error> {
        let remote = self.remote().ok_or_else(|| Error::InvalidRequest {
            reason: "comparing across machines needs a remote workspace open".to_owned(),
        })?;
        let kept = lock(&self.across)
            .clone()
            .filter(|kept| kept.is_of(remote_id, local_id));
        let across = match kept {
            Some(kept) => kept,
            None => {
                let (remote_session, local_session) = (SessionId::parse(remote_id)?, SessionId::parse(local_id)?);
                let prepared = AcrossMachines::prepare(
                    |bundle| remote.export_session(remote_id, false, bundle),
                    &remote_session,
                    self.store()?,
                    &self.local_workspace()?,
                    &local_session,
                    SystemTime::now(),
                )?;
                let prepared = std::sync::Arc::new(prepared);
                *lock(&self.across) = Some(prepared.clone());
                prepared
            }
        };
        across.compare(options)
    }
}

// ---- a cloud workspace's session imported ----

impl Studio {
    /// The local workspace a cloud session is imported into: the one opened last (the first
    /// folder of the recent list, a bucket or another host's being no folder here).
    pub fn last_local_workspace(&self) -> Result<Option<Workspace>, Error> {
        Ok(self
            .recent_workspaces()?
            .into_iter()
            .filter(|root| root.is_absolute() && root.is_dir())
            .find_map(|root| Workspace::open(&root).ok()))
    }

    /// Imports session `session_id` of the open cloud workspace into the local workspace `local`
    /// and the store ([`crate::app::cloud::CloudWorkspace::import_into`]).
    pub fn cloud_import(&self, session_id: &str, local: &Workspace) -> Result<CloudImported, Error> {
        let cloud = self.cloud().ok_or_else(|| Error::InvalidRequest {
            reason: "no cloud workspace is open: only a bucket's session is imported".to_owned(),
        })?;
        let imported = cloud.import_into(self.store()?, local, session_id)?;
        Ok(CloudImported {
            session_id: imported.session_id.to_string(),
            workspace: local.root().display().to_string(),
        })
    }
}
