//! The studio's own memory: a SQLite store of what the session folders do not hold (pins, the
//! runs the studio started and everything they printed, conversation messages, logs, traces) and
//! an index of the folders.
//!
//! One code path, two lifetimes: a file (WAL, so the app and `zstudio` can use it at once) or a
//! named in-memory database that lives as long as its connections. The schema grows only through
//! `migrations` (forward only).
//!
//! One file per table or concern, each a set of functions over a `&Connection` (a table's rows
//! and their types): `workspaces`, `sessions`, `messages`, `runs`, `logs`, `spans`, `output`
//! (output blocks), `output_usage` (`node_usage`), `search` (`search_text`), `trust`
//! (`trusted_launches`), `index` (`folder_index`), `catalogue` (`folder_index` as pages of the listing, `folder_names`), `folder_text` (`folder_text`, `folder_files`:
//! session folders' output files in the search index), `nodes_seen`, `tags` (`session_tags` and
//! notes), `views` (`saved_views`); then what reads several: `node_logs`,
//! `session_model`, `records` (export and import), `recovery`, `retention`. `connection` is the
//! leaf under them all: opening, the lock, transactions and the one conversion of SQLite's errors
//! into the studio's. The methods of [`Store`] below only lock the connection and call them;
//! no file of the store imports this one.

pub mod catalogue;
mod connection;
mod file_text;
mod folder_text;
pub mod index;
mod logs;
mod messages;
mod migrations;
mod node_logs;
mod nodes_seen;
mod output;
mod output_usage;
mod records;
mod recovery;
pub mod retention;
mod runs;
mod search;
mod session_model;
mod sessions;
mod spans;
mod tags;
mod trust;
pub mod views;
mod watched;
mod workspaces;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::sessions::agents::Launch;
use crate::sessions::session::{Session, SessionSummary, Workspace};
use crate::status::Status;
use crate::timeline::StoppedBy;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;
use crate::vocabulary::label::Tag;

pub use connection::{Store, StoreLocation};
pub use logs::{Level, LogLine};
pub use messages::Message;
pub use migrations::SCHEMA_VERSION;
pub use output::{OutputFilter, OutputFind, OutputLine, OutputPage, OutputWriter, StoredLine, FIND_BUDGET_LINES};
pub use output_usage::UsageByNode;
pub use records::{
    Imported, LogRow, MessageRow, OutputRow, RunRow, SessionImport, SessionRecord, SessionRecords, SpanRow,
};
pub use recovery::Recovered;
pub use runs::{NewRun, RunOutcome, RunRecord, RunState};
pub use search::{SearchHit, SearchHitKind};
pub use session_model::RunNodesUsage;
pub use sessions::{Pin, SessionRow};
pub use spans::{Span, SpanKind};
pub use views::{Filters, SavedView, SEARCH_HITS};

// ---- workspaces ----
impl Store {
    /// Records that the window opened `workspace` now (it becomes the most recent).
    pub fn workspace_opened(&self, workspace: &Workspace, now: SystemTime) -> Result<(), Error> {
        self.with_conn(|conn| workspaces::opened(conn, workspace, now))
    }

    /// The workspaces the window opened, most recent first, at most `limit`.
    pub fn recent_workspaces(&self, limit: usize) -> Result<Vec<PathBuf>, Error> {
        self.with_conn(|conn| workspaces::recent(conn, limit))
    }
}

// ---- sessions: pins, names, delete; the listing ----
impl Store {
    pub fn pin(&self, workspace: &Workspace, id: &SessionId, now: SystemTime) -> Result<(), Error> {
        self.with_conn(|conn| sessions::pin(conn, workspace, id, now))
    }

    pub fn unpin(&self, workspace: &Workspace, id: &SessionId) -> Result<(), Error> {
        self.with_conn(|conn| sessions::unpin(conn, workspace, id))
    }

    /// Pinned sessions of a workspace, most recently pinned first.
    pub fn pins(&self, workspace: &Workspace) -> Result<Vec<Pin>, Error> {
        self.with_conn(|conn| sessions::pins(conn, workspace))
    }

    /// Adds `tags` to a session (checked by [`Tag::parse`]); refused, nothing added, past
    /// `label::MAX_TAGS_PER_SESSION`. Returns its tags after, in the order added.
    pub fn tag(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        tags: &[Tag],
        now: SystemTime,
    ) -> Result<Vec<String>, Error> {
        self.with_conn(|conn| tags::add(conn, workspace, id, tags, now))
    }

    /// Removes `tags` from a session. Returns its tags after.
    pub fn untag(&self, workspace: &Workspace, id: &SessionId, tags: &[Tag]) -> Result<Vec<String>, Error> {
        self.with_conn(|conn| tags::remove(conn, workspace, id, tags))
    }

    /// A session's tags, in the order added.
    pub fn tags(&self, workspace: &Workspace, id: &SessionId) -> Result<Vec<String>, Error> {
        self.with_conn(|conn| tags::of_session(conn, workspace, id))
    }

    /// The tags of every tagged session of a workspace, by session id.
    pub fn tags_of_workspace(&self, workspace: &Workspace) -> Result<HashMap<String, Vec<String>>, Error> {
        self.with_conn(|conn| tags::of_workspace(conn, workspace))
    }

    /// Sets a session's note (`None` or empty removes it); refused over `label::MAX_NOTE_BYTES`.
    pub fn set_note(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        note: Option<&str>,
        now: SystemTime,
    ) -> Result<(), Error> {
        self.with_conn(|conn| tags::set_note(conn, workspace, id, note, now))
    }

    /// A session's note, if it has one.
    pub fn note(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<String>, Error> {
        self.with_conn(|conn| tags::note(conn, workspace, id))
    }

    /// Saves the table's `filters` under `name` in the workspace (replacing a view of that name).
    pub fn view_save(
        &self,
        workspace: &Workspace,
        name: &str,
        filters: &Filters,
        now: SystemTime,
    ) -> Result<(), Error> {
        self.with_conn(|conn| views::save(conn, workspace, name, filters, now))
    }

    /// The saved views of a workspace, by name.
    pub fn views(&self, workspace: &Workspace) -> Result<Vec<SavedView>, Error> {
        self.with_conn(|conn| views::list(conn, workspace))
    }

    /// The saved view `name` of a workspace (`view_not_found` when there is none).
    pub fn view(&self, workspace: &Workspace, name: &str) -> Result<SavedView, Error> {
        self.with_conn(|conn| views::get(conn, workspace, name))
    }

    /// Deletes the saved view `name` (`view_not_found` when there is none).
    pub fn view_delete(&self, workspace: &Workspace, name: &str) -> Result<(), Error> {
        self.with_conn(|conn| views::delete(conn, workspace, name))
    }

    /// The rows of a listing that pass `filters`, in their order ([`Filters::apply`] through
    /// [`Store::search`]).
    pub fn filter_sessions(
        &self,
        workspace: &Workspace,
        rows: Vec<SessionRow>,
        filters: &Filters,
    ) -> Result<Vec<SessionRow>, Error> {
        filters.apply(rows, |text, limit| self.search(workspace, text, limit))
    }

    /// What the store calls a session: the beginning of its first prompt (`title`) and the agent
    /// the studio ran it with, each when recorded (`session_model::name_session` decides).
    pub fn session_names(
        &self,
        workspace: &Workspace,
        id: &SessionId,
    ) -> Result<(Option<String>, Option<String>), Error> {
        self.with_conn(|conn| sessions::names(conn, workspace, id))
    }

    /// The session's title: the beginning of its first prompt, else the agent's name.
    pub fn session_title(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<String>, Error> {
        self.with_conn(|conn| sessions::title(conn, workspace, id))
    }

    /// Whether a session is known to the store or has a folder: pins and deletes need one.
    pub fn session_exists(&self, workspace: &Workspace, id: &SessionId) -> Result<bool, Error> {
        self.with_conn(|conn| sessions::exists(conn, workspace, id))
    }

    /// Deletes a session: its rows in one transaction (messages, runs, output, logs, traces), then
    /// its folder, moved by `discard` (the system trash in the app and the CLI). Refused while a
    /// run of the session is live.
    pub fn session_delete(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        discard: impl FnOnce(&Path) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.with_conn(|conn| sessions::delete(conn, workspace, id, discard))
    }

    /// The listing of a workspace through the index (a session whose folder did not change is
    /// not read again): pinned sessions first, most recently pinned first, then most recently
    /// updated first. A session the studio runs or ran is `running` while its run lives, and
    /// takes its last run's status when its files cannot tell. Each node with its usage.
    pub fn list_sessions(&self, workspace: &Workspace, now: SystemTime) -> Result<Vec<SessionRow>, Error> {
        index::listing(self, workspace, now, index::NodeDetail::WithUsage)
    }

    /// [`Store::list_sessions`], with as much of each node as `detail` says.
    pub fn list_sessions_as(
        &self,
        workspace: &Workspace,
        now: SystemTime,
        detail: index::NodeDetail,
    ) -> Result<Vec<SessionRow>, Error> {
        index::listing(self, workspace, now, detail)
    }

    /// A page of the listing ([`Store::list_sessions`]'s order) from the folder index, `limit`
    /// rows from `offset`, without reading the folders outside it: see [`catalogue`] for what is
    /// checked against the folders first.
    pub fn sessions_page(
        &self,
        workspace: &Workspace,
        now: SystemTime,
        detail: index::NodeDetail,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<SessionRow>, Error> {
        catalogue::page(self, workspace, now, detail, offset, limit)
    }

    /// The whole listing, given to `emit` `chunk` rows at a time as they are checked against
    /// their folders ([`catalogue`]): the first rows are out before the last folder is read.
    pub fn stream_sessions(
        &self,
        workspace: &Workspace,
        now: SystemTime,
        detail: index::NodeDetail,
        chunk: usize,
        emit: impl FnMut(Vec<SessionRow>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        catalogue::stream(self, workspace, now, detail, chunk, emit)
    }

    /// A page of the catalogue of `workspace` as the store last saw its folders, no file read but
    /// the running sessions' ([`catalogue`]), with the ids of its rows whose folder differs
    /// (`look`: else none is looked at): what a watcher seeded with the folder index reconciles.
    pub fn sessions_as_recorded(
        &self,
        workspace: &Workspace,
        now: SystemTime,
        detail: index::NodeDetail,
        (offset, limit): (usize, usize),
        look: bool,
    ) -> Result<catalogue::RecordedPage, Error> {
        catalogue::recorded_page(self, workspace, now, detail, (offset, limit), look)
    }

    /// A first launch's catalogue of `workspace`, made newest first, `first` folders then `chunk`
    /// at a time, `each` told after each with how many there are ([`catalogue`]).
    pub fn fill_catalogue(
        &self,
        workspace: &Workspace,
        now: SystemTime,
        sizes: (usize, usize),
        each: impl FnMut(usize),
    ) -> Result<(), Error> {
        catalogue::fill(self, workspace, now, sizes, each)
    }

    /// What the catalogue's sessions of `workspace` cost in all, without making their rows.
    pub fn catalogue_usage(&self, workspace: &Workspace) -> Result<Option<crate::sessions::cost::UsageTotal>, Error> {
        catalogue::usage(self, workspace)
    }

    /// Whether the catalogue holds any session of `workspace`.
    pub fn catalogue_holds(&self, workspace: &Workspace) -> Result<bool, Error> {
        catalogue::holds(self, workspace)
    }

    /// How many sessions the catalogue holds for `workspace`, as the last page or listing left it.
    pub fn catalogue_len(&self, workspace: &Workspace) -> Result<usize, Error> {
        catalogue::len(self, workspace)
    }

    /// One session's summary as every surface shows it: its folder's, with its last recorded run
    /// laid over it as the listing lays them: `show`, `watch` and the listing agree.
    pub fn as_recorded(&self, workspace: &Workspace, summary: &mut SessionSummary) -> Result<(), Error> {
        session_model::as_recorded(self, workspace, summary)
    }

    /// A watcher's change of a session as every surface shows it: its summary
    /// [`Store::as_recorded`], with its tags. Any other change is left as it is.
    pub fn as_recorded_change(&self, change: &mut crate::sessions::change::Change) -> Result<(), Error> {
        use crate::sessions::change::Change;
        if let Change::SessionAdded {
            workspace,
            session_id,
            summary,
            tags,
        }
        | Change::SessionUpdated {
            workspace,
            session_id,
            summary,
            tags,
        } = change
        {
            let workspace = Workspace::from_canonical_root(workspace.clone());
            self.as_recorded(&workspace, summary)?;
            *tags = self.tags(&workspace, session_id)?;
        }
        Ok(())
    }

    /// One session in full: its folder, with what the store knows laid over it as the listing
    /// lays it (`session_model`).
    pub fn read_session(&self, workspace: &Workspace, id: &SessionId, now: SystemTime) -> Result<Session, Error> {
        session_model::read_session(self, workspace, id, now)
    }
}

// ---- messages ----
impl Store {
    pub fn message_append(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        role: &str,
        text: &str,
        now: SystemTime,
    ) -> Result<i64, Error> {
        self.with_conn(|conn| messages::append(conn, workspace, id, role, text, now))
    }

    pub fn messages(&self, workspace: &Workspace, id: &SessionId) -> Result<Vec<Message>, Error> {
        self.with_conn(|conn| messages::of_session(conn, workspace, id))
    }
}

// ---- runs ----
impl Store {
    /// Records a new run (`running`) and returns its id, a UUID v7.
    pub fn run_insert(&self, workspace: &Workspace, run: &NewRun<'_>) -> Result<String, Error> {
        self.with_conn(|conn| runs::insert(conn, workspace, run))
    }

    /// The run's process and process group, recorded while it lives (for stop and recovery),
    /// with the identity of the group's leader as it is now ([`crate::vocabulary::process::ProcessIdentity`]):
    /// call it as the leader's parent before waiting for it, so the identity is the child's.
    /// A leader that cannot be identified gets none, and no signal ever.
    pub fn run_set_process(&self, run_id: &str, pid: u32, process_group: u32) -> Result<(), Error> {
        self.with_conn(|conn| runs::set_process(conn, run_id, pid, process_group))
    }

    /// Records the run keeper's folder of a run.
    pub fn run_set_keeper_dir(&self, run_id: &str, dir: &Path) -> Result<(), Error> {
        self.with_conn(|conn| runs::set_keeper_dir(conn, run_id, dir))
    }

    /// Records the limits a run was started with, for a studio that adopts it.
    pub fn run_set_budget(&self, run_id: &str, budget: &crate::vocabulary::launch::Budget) -> Result<(), Error> {
        self.with_conn(|conn| runs::set_budget(conn, run_id, budget))
    }

    /// Records where a run was asked for, when not by the studio's own faces (`mcp`).
    pub fn run_set_origin(&self, run_id: &str, origin: &str) -> Result<(), Error> {
        self.with_conn(|conn| runs::set_origin(conn, run_id, origin))
    }

    /// The studio lets a live run go on without it: nobody owns it until a studio takes it back.
    /// Claims a run no live studio process owns (`owner` as it was read: none, or a dead one) for
    /// this process, so that one process alone settles it; `false` when another got there first.
    pub fn claim_run(&self, run_id: &str, owner: Option<i64>) -> Result<bool, Error> {
        self.with_conn(|conn| runs::claim(conn, run_id, owner))
    }

    pub fn run_detach(&self, run_id: &str) -> Result<(), Error> {
        self.with_conn(|conn| runs::detach(conn, run_id))
    }

    /// Runs nobody owns any more that have a keeper folder (candidates to finish from its files).
    pub fn detached_kept_runs(&self) -> Result<Vec<RunRecord>, Error> {
        self.with_conn(runs::detached_kept)
    }

    /// Records that another studio process asked the run to stop, and how.
    pub fn run_request_stop(&self, run_id: &str, how: StoppedBy) -> Result<(), Error> {
        self.with_conn(|conn| runs::request_stop(conn, run_id, how))
    }

    pub fn run_finish(&self, run_id: &str, outcome: &RunOutcome<'_>) -> Result<(), Error> {
        self.with_conn(|conn| runs::finish(conn, run_id, outcome))
    }

    /// Runs of a workspace (or of one session), newest first.
    pub fn runs(&self, workspace: &Workspace, session: Option<&SessionId>) -> Result<Vec<RunRecord>, Error> {
        self.with_conn(|conn| runs::of_workspace(conn, workspace, session))
    }

    /// The runs still `running` and those recorded after `after_key` ([`RunState::key`]), in
    /// every workspace: how a watcher tells the runs that started or ended since it last looked.
    pub fn runs_running_or_newer(&self, after_key: i64) -> Result<Vec<RunState>, Error> {
        self.with_conn(|conn| runs::running_or_newer(conn, after_key))
    }

    /// One run by its id, in any workspace.
    pub fn run(&self, run_id: &str) -> Result<RunRecord, Error> {
        self.with_conn(|conn| runs::by_id(conn, run_id))
    }

    /// Fills each run's `usage`: the total over the nodes it ran ([`Store::runs_nodes_usage`]).
    pub fn with_runs_usage(&self, workspace: &Workspace, runs: &mut [RunRecord], now: SystemTime) -> Result<(), Error> {
        session_model::with_runs_usage(self, workspace, runs, now)
    }

    /// For each run (in the order given), the nodes it ran (its node spans' names, once each, in
    /// the order they began), each with its usage: what its session's folder says (the raw
    /// streams hold what the node's last execution printed), unless a later run of the session
    /// ran the node again (it was overwritten since), else what the run's own output printed
    /// (`node_usage`). `zstudio runs`, `diff` and the window's compare view read this.
    pub fn runs_nodes_usage(
        &self,
        workspace: &Workspace,
        runs: &[RunRecord],
        now: SystemTime,
    ) -> Result<Vec<RunNodesUsage>, Error> {
        session_model::runs_nodes_usage(self, workspace, runs, now)
    }

    /// Reconciles runs left `running` by studio processes that are gone: a run whose process group
    /// is gone becomes `interrupted` (with a log line); one whose group still lives is detached
    /// (still `running`, stoppable by its stop files and process group).
    pub fn recover(
        &self,
        is_alive: impl Fn(u32) -> bool,
        is_group_alive: impl Fn(u32) -> bool,
        now: SystemTime,
    ) -> Result<Vec<Recovered>, Error> {
        self.with_conn(|conn| recovery::recover(conn, is_alive, is_group_alive, now))
    }

    /// Reconciles the runs of studio processes that died, asking the system which processes live.
    pub fn recover_dead_studios(&self, now: SystemTime) -> Result<Vec<Recovered>, Error> {
        self.recover(
            crate::vocabulary::process::process_alive,
            crate::vocabulary::process::group_alive,
            now,
        )
    }
}

// ---- output ----
impl Store {
    /// A writer that appends a run's output lines in batches.
    pub fn output_writer(&self, run_id: &str) -> Result<OutputWriter<'_>, Error> {
        OutputWriter::new(self, run_id)
    }

    /// Lines `from_seq..` of a run's output (1-based), at most `limit`.
    pub fn output_page(&self, run_id: &str, from_seq: i64, limit: usize) -> Result<Vec<OutputLine>, Error> {
        Ok(self
            .output_page_filtered(run_id, from_seq, limit, &OutputFilter::default())?
            .lines)
    }

    /// Lines `from_seq..` of a run's output that pass `filter`, at most `limit`, with where to
    /// go on from and how many lines the run has. A scan stops after a bounded number of lines
    /// (a rare node in a huge output): `next_seq` then says where to go on.
    pub fn output_page_filtered(
        &self,
        run_id: &str,
        from_seq: i64,
        limit: usize,
        filter: &OutputFilter,
    ) -> Result<OutputPage, Error> {
        self.with_conn(|conn| output::page(conn, run_id, from_seq, limit, filter))
    }

    /// The first line from `from_seq` (or back from it) whose text contains `query`, ignoring case
    /// and ANSI escapes; a find reads at most [`FIND_BUDGET_LINES`] lines per call.
    pub fn output_find(&self, run_id: &str, from_seq: i64, backward: bool, query: &str) -> Result<OutputFind, Error> {
        if query.is_empty() {
            return Err(Error::EmptyQuery);
        }
        self.with_conn(|conn| output::find(conn, run_id, from_seq, backward, query))
    }

    /// Every line of a run's output in order (borrowed), until `line` returns false: one pass
    /// over a whole output without pages.
    pub fn output_each_line(&self, run_id: &str, line: &mut dyn FnMut(StoredLine<'_>) -> bool) -> Result<(), Error> {
        self.with_conn(|conn| output::each_line(conn, run_id, line))
    }

    /// How many stdout and stderr lines of a run are stored.
    pub fn output_line_counts(&self, run_id: &str) -> Result<(i64, i64), Error> {
        self.with_conn(|conn| output::line_counts(conn, run_id))
    }

    /// How many lines of output a run has stored.
    pub fn output_line_count(&self, run_id: &str) -> Result<i64, Error> {
        self.with_conn(|conn| output::line_count(conn, run_id))
    }

    /// How many bytes a run's stored output is, each line with its newline.
    pub fn output_byte_count(&self, run_id: &str) -> Result<u64, Error> {
        self.with_conn(|conn| output::byte_count(conn, run_id))
    }

    /// Keeps what a run's nodes printed that they used (in place of what was kept for the run).
    pub fn record_output_usage(&self, run_id: &str, usage: &UsageByNode) -> Result<(), Error> {
        output_usage::record_for_run(self, run_id, usage)
    }

    /// What a run's nodes printed that they used.
    pub fn output_usage(&self, run_id: &str) -> Result<UsageByNode, Error> {
        self.with_conn(|conn| output_usage::of_run(conn, run_id))
    }

    /// Per session of a workspace (or the one given), per node, what the newest run that printed
    /// the node's usage on stdout says it used.
    pub fn sessions_output_usage(
        &self,
        workspace: &Workspace,
        session: Option<&SessionId>,
    ) -> Result<HashMap<String, UsageByNode>, Error> {
        self.with_conn(|conn| output_usage::of_sessions(conn, workspace, session))
    }
}

// ---- logs and traces ----
impl Store {
    /// [`Store::log`] for a run the store knows: its session comes from the run (one statement;
    /// a run logs a line or two per node).
    pub fn run_log(
        &self,
        run_id: &str,
        level: Level,
        event: &str,
        message: &str,
        fields: serde_json::Value,
        now: SystemTime,
    ) -> Result<(), Error> {
        let entry = logs::Entry {
            level,
            event,
            message,
            fields: &fields,
            at: now,
        };
        self.with_conn(|conn| logs::append_for_run(conn, run_id, entry))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn log(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        run_id: Option<&str>,
        level: Level,
        event: &str,
        message: &str,
        fields: serde_json::Value,
        now: SystemTime,
    ) -> Result<(), Error> {
        let entry = logs::Entry {
            level,
            event,
            message,
            fields: &fields,
            at: now,
        };
        self.with_conn(|conn| logs::append(conn, workspace, id, run_id, entry))
    }

    /// A session's log lines, with its nodes' `node.begin` / `node.end` lines read from their
    /// spans (`node_logs`).
    pub fn logs(&self, workspace: &Workspace, id: &SessionId) -> Result<Vec<LogLine>, Error> {
        self.with_conn(|conn| node_logs::of_session(conn, workspace, id))
    }

    /// Opens a span (a run, or a node inside it) and returns its id.
    pub fn span_start(
        &self,
        run_id: &str,
        parent: Option<i64>,
        name: &str,
        kind: &str,
        depth: usize,
        at: SystemTime,
    ) -> Result<i64, Error> {
        let span = spans::NewSpan {
            parent,
            name,
            kind,
            depth,
            at,
        };
        self.with_conn(|conn| spans::start(conn, run_id, span))
    }

    /// Forgets a span recorded for what turned out not to be a node (and its search entry).
    pub fn span_forget(&self, span_id: i64) -> Result<(), Error> {
        self.with_conn(|conn| spans::forget(conn, span_id))
    }

    pub fn span_end(&self, span_id: i64, status: Status, at: SystemTime) -> Result<(), Error> {
        self.with_conn(|conn| spans::end(conn, span_id, status, at))
    }

    pub fn spans(&self, run_id: &str) -> Result<Vec<Span>, Error> {
        self.with_conn(|conn| spans::of_run(conn, run_id))
    }
}

// ---- search ----
impl Store {
    /// Full-text search over run output, messages, node names and logs of a workspace, and its
    /// session folders' node output files (what runs the studio did not start printed).
    /// Output not yet indexed is indexed first, and the session folders that changed since the
    /// last search (`folder_text`), so every line ever stored or written can be found.
    pub fn search(&self, workspace: &Workspace, query: &str, limit: usize) -> Result<Vec<SearchHit>, Error> {
        while self.index_pending(64)? > 0 {}
        self.index_folder_text(workspace)?;
        self.with_conn(|conn| search::search(conn, workspace, query, limit))
    }

    /// Brings the search index of the workspace's session folders' output files up to date (what
    /// [`Store::search`] does first); returns how many folders were indexed again.
    pub fn index_folder_text(&self, workspace: &Workspace) -> Result<usize, Error> {
        folder_text::index_workspace(self, workspace)
    }

    /// Adds up to `max_blocks` output blocks (and up to 64 times as many log lines) to the search
    /// index, oldest first; returns how many. Output and logs are stored at once and indexed behind
    /// them, so a flood of output or of nodes is never slowed by indexing.
    pub fn index_pending(&self, max_blocks: usize) -> Result<usize, Error> {
        self.with_conn(|conn| search::index_pending(conn, max_blocks))
    }
}

// ---- trusted launches ----
impl Store {
    /// Whether the user trusted this launch of an agent in the workspace (by
    /// [`Launch::trust_key`], with a budget it keeps within).
    pub fn launch_trusted(&self, workspace: &Workspace, launch: &Launch) -> Result<bool, Error> {
        self.with_conn(|conn| trust::trusted(conn, workspace, launch))
    }

    /// Records that the user trusts this launch of an agent in the workspace, its budget as the
    /// ceiling from now on.
    pub fn trust_launch(&self, workspace: &Workspace, launch: &Launch, now: SystemTime) -> Result<(), Error> {
        self.with_conn(|conn| trust::trust(conn, workspace, launch, now))
    }

    /// `Ok` when `launch` is trusted, else [`Error::AgentsUntrusted`] with what it would run, for
    /// the window or the CLI to show before asking.
    pub fn require_trusted(&self, workspace: &Workspace, launch: Launch) -> Result<(), Error> {
        self.with_conn(|conn| trust::require(conn, workspace, launch))
    }
}

// ---- a session's records: export and import (bundles) ----
impl Store {
    /// The session's records (not its output, which [`Store::export_output`] streams), or `None`
    /// when the store knows nothing of it.
    pub fn export_records(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<SessionRecords>, Error> {
        self.with_conn(|conn| records::export(conn, workspace, id))
    }

    /// Every output line of a run, in order, to `each` (read a page at a time: a run of a
    /// million lines is never held whole).
    pub fn export_output(&self, run_id: &str, each: impl FnMut(OutputRow) -> Result<(), Error>) -> Result<(), Error> {
        records::export_output(self, run_id, each)
    }

    /// What the session was imported from, if it was.
    pub fn imported(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<Imported>, Error> {
        self.with_conn(|conn| records::imported(conn, workspace, id))
    }

    /// Gives a session being imported (inside [`Store::atomically`]) the id it turned out to have.
    pub fn imported_session_rename(
        &self,
        workspace: &Workspace,
        from: &SessionId,
        to: &SessionId,
    ) -> Result<(), Error> {
        self.with_conn(|conn| records::rename_imported(conn, workspace, from, to))
    }

    /// Begins importing session `id`: its row, marked as imported from `source`. Refused when the
    /// store knows the session already ([`Error::SessionExists`]). Call it, and everything of
    /// the import after it, inside [`Store::atomically`].
    pub fn import_begin<'s>(
        &'s self,
        workspace: &Workspace,
        id: &SessionId,
        record: &SessionRecord,
        source: &Path,
        now: SystemTime,
    ) -> Result<SessionImport<'s>, Error> {
        records::import_begin(self, workspace, id, record, source, now)
    }
}
