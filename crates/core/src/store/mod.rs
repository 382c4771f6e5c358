//! The studio's own memory: a SQLite store of what the session folders do not hold (pins, the
//! runs the studio started and everything they printed, conversation messages, logs, traces) and
//! an index of the folders.
//!
//! One code path, two lifetimes: a file (WAL, so the app and `zstudio` can use it at once) or a
//! named in-memory database that lives as long as its connections. The schema grows only through
//! `migrations` (forward only).

pub mod index;
mod migrations;
mod node_logs;
mod output;
mod output_usage;
mod records;
pub mod retention;
mod search;
mod session_model;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::Serialize;

use crate::sessions::session::{SessionSummary, Timestamp, Workspace};
use crate::status::Status;
use crate::timeline::StoppedBy;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

pub use migrations::SCHEMA_VERSION;
pub use output::{OutputFilter, OutputFind, OutputLine, OutputPage, OutputWriter, StoredLine, FIND_BUDGET_LINES};
pub use output_usage::UsageByNode;
pub use records::{
    Imported, LogRow, MessageRow, OutputRow, RunRow, SessionImport, SessionRecord, SessionRecords, SpanRow,
};
pub use search::{SearchHit, SearchHitKind};
pub use session_model::RunNodesUsage;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    File(PathBuf),
    /// An in-memory database: nothing survives the last connection. Connections opened from the
    /// same `StoreLocation::Memory` value share it.
    Memory {
        name: String,
    },
}

impl StoreLocation {
    /// A fresh in-memory database.
    pub fn memory() -> StoreLocation {
        StoreLocation::Memory {
            name: format!("zibby-studio-{}", uuid::Uuid::now_v7().simple()),
        }
    }

    /// `--memory`, else `--db PATH`, else `$ZIBBY_STUDIO_DB`, else the platform data folder
    /// (`$XDG_DATA_HOME/zibby-studio/studio.sqlite`, or `~/.local/share/...`).
    pub fn resolve(db: Option<PathBuf>, memory: bool) -> Result<StoreLocation, Error> {
        if memory {
            return Ok(StoreLocation::memory());
        }
        if let Some(path) = db.or_else(|| std::env::var_os("ZIBBY_STUDIO_DB").map(PathBuf::from)) {
            return Ok(StoreLocation::File(path));
        }
        let data_home = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
            .ok_or(Error::NoDataFolder)?;
        Ok(StoreLocation::File(
            data_home.join("zibby-studio").join("studio.sqlite"),
        ))
    }

    /// Where the run keeper's folders go: beside the store file, or in the temporary folder for
    /// an in-memory store.
    pub fn runs_dir(&self) -> PathBuf {
        match self {
            StoreLocation::File(path) => path.parent().unwrap_or(Path::new(".")).join("runs"),
            StoreLocation::Memory { name } => std::env::temp_dir().join(name).join("runs"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            StoreLocation::File(path) => path.display().to_string(),
            StoreLocation::Memory { .. } => "in memory".to_owned(),
        }
    }
}

/// A run as the store records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunRecord {
    pub id: String,
    pub session_id: String,
    /// The workspace the session belongs to.
    pub workspace: PathBuf,
    pub agent: Option<String>,
    pub command: Vec<String>,
    pub pid: Option<i64>,
    pub process_group: Option<i64>,
    /// Who the process group's leader is (its id, start time and boot), as recorded when it
    /// started: signals go to the group only while this still matches.
    #[serde(skip)]
    pub process_identity: Option<crate::vocabulary::process::ProcessIdentity>,
    pub status: Status,
    /// A `running` run that no studio process follows (it was left running, or its studio died).
    pub detached: bool,
    /// The studio process that follows the run.
    #[serde(skip)]
    pub owner_pid: Option<i64>,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    pub stopped_by: Option<StoppedBy>,
    /// A stop asked for by another studio process (`graceful` or `forced`).
    pub stop_requested: Option<StoppedBy>,
    /// The run keeper's folder, for a run that can outlive its studio.
    pub keeper_dir: Option<PathBuf>,
    pub replayed_node: Option<String>,
    /// What its nodes used, where asked for (`Store::with_runs_usage`; see `session_model`).
    #[cfg_attr(feature = "ts", ts(optional = nullable))]
    pub usage: Option<crate::sessions::cost::UsageTotal>,
}

/// What a new run is.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub session: &'a SessionId,
    pub agent: Option<&'a str>,
    pub command: &'a [String],
    pub replayed_node: Option<&'a str>,
    /// The first prompt becomes the session's title when it has none.
    pub prompt: Option<&'a str>,
    pub started_at: SystemTime,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome<'a> {
    pub status: Status,
    pub exit_code: Option<i32>,
    pub error: Option<&'a str>,
    pub stopped_by: Option<&'a str>,
    pub ended_at: SystemTime,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Message {
    pub seq: i64,
    pub role: String,
    pub text: String,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    fn parse(text: &str) -> Level {
        match text {
            "debug" => Level::Debug,
            "warn" => Level::Warn,
            "error" => Level::Error,
            _ => Level::Info,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LogLine {
    pub at: Timestamp,
    pub level: Level,
    /// `run.started`, `node.begin`, `run.cancelled`, …
    pub event: String,
    pub message: String,
    pub run_id: Option<String>,
    /// An object, or `null` when the line has none.
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown> | null"))]
    pub fields: serde_json::Value,
}

/// What a span is; the store keeps the same words (`run`, `node`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum SpanKind {
    Run,
    Node,
}

impl SpanKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Run => "run",
            SpanKind::Node => "node",
        }
    }
}

/// A kind compares equal to its word (`span.kind == "node"`), as the wire carries it.
impl PartialEq<&str> for SpanKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for SpanKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl rusqlite::types::FromSql for SpanKind {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<SpanKind> {
        match value.as_str()? {
            "run" => Ok(SpanKind::Run),
            "node" => Ok(SpanKind::Node),
            other => Err(rusqlite::types::FromSqlError::Other(
                format!("unknown span kind `{other}`").into(),
            )),
        }
    }
}

/// One span of a trace: a run, or one node execution inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Span {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub run_id: String,
    pub name: String,
    pub kind: SpanKind,
    pub depth: i64,
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub status: Status,
}

/// A session as the studio lists it: what its folder says, and what the studio knows of it (its
/// `agent` and `title` are the summary's, named by `session_model::name_session`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionRow {
    #[serde(flatten)]
    pub summary: SessionSummary,
    pub pinned: bool,
    pub pinned_at: Option<Timestamp>,
    /// The messages of its conversation.
    pub messages: i64,
    /// The id of its run that is live now (started by this or another studio process).
    pub live_run: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pin {
    pub session_id: String,
    pub pinned_at: Timestamp,
}

/// What [`Store::recover`] decided about a run left `running` by a studio that died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovered {
    pub run_id: String,
    pub session_id: String,
    /// `interrupted` (its process group is gone) or `running` (detached, still alive).
    pub status: Status,
}

/// A write transaction of its own, or a part of the [`Store::batch`] under way.
pub(crate) enum WriteTransaction<'c> {
    Own(rusqlite::Transaction<'c>),
    Batched(&'c Connection),
}

impl WriteTransaction<'_> {
    pub(crate) fn commit(self) -> rusqlite::Result<()> {
        match self {
            WriteTransaction::Own(tx) => tx.commit(),
            WriteTransaction::Batched(_) => Ok(()),
        }
    }
}

impl std::ops::Deref for WriteTransaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            WriteTransaction::Own(tx) => tx,
            WriteTransaction::Batched(conn) => conn,
        }
    }
}
/// What the store knows of a session for its row: pinned time, title (the beginning of its first
/// prompt), agent, message count.
type SessionFacts = (Option<i64>, Option<String>, Option<String>, i64);

/// The SQLite store.
pub struct Store {
    /// One connection, shared by the threads of a process (runs write from their own threads);
    /// reentrant so that a method holding it can call another.
    conn: ReentrantMutex<Connection>,
    location: StoreLocation,
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn timestamp(ms: i64) -> Timestamp {
    Timestamp(ms.max(0) as u64)
}

/// A recorded leader identity, when all of it was recorded.
fn identity(
    pgid: Option<i64>,
    start_time: Option<i64>,
    boot_id: Option<String>,
) -> Option<crate::vocabulary::process::ProcessIdentity> {
    Some(crate::vocabulary::process::ProcessIdentity {
        pid: u32::try_from(pgid?).ok()?,
        start_time: u64::try_from(start_time?).ok()?,
        boot_id: boot_id?,
    })
}

/// Whether the studio process that owns a run lives: not when the run was started in another
/// boot (the owner's id names someone else now), nor when that id answers no more.
fn owner_alive(owner: Option<i64>, boot: Option<&str>, is_alive: impl Fn(u32) -> bool) -> bool {
    let same_boot = boot.is_none_or(|boot| Some(boot) == crate::vocabulary::process::boot_id());
    same_boot && owner.is_some_and(|pid| u32::try_from(pid).is_ok_and(|pid| pid == std::process::id() || is_alive(pid)))
}

fn parse_status(text: &str) -> Status {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).unwrap_or(Status::Unknown)
}

impl Store {
    /// Opens (creating if needed) and migrates the store. Opening can find the file locked for a
    /// moment (another process switching it to WAL, migrating it, or checkpointing as it closes),
    /// cases SQLite's busy timeout does not cover: those are retried for up to 10 s.
    pub fn open(location: &StoreLocation) -> Result<Store, Error> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match Store::open_once(location) {
                Err(Error::Store { source, .. }) if is_busy(&source) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                result => return result,
            }
        }
    }

    fn open_once(location: &StoreLocation) -> Result<Store, Error> {
        let sql_error = |source| Error::Store {
            path: location.describe(),
            source,
        };
        let conn = match location {
            StoreLocation::File(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    crate::sessions::private::create_dir_all(parent)?;
                }
                // Created here, 0600, so that SQLite does not create it 0644 (its journal and
                // WAL files take the database file's mode). An empty file is an empty database.
                if !path.exists() {
                    // (A file another process made a moment ago is not one: it is theirs to fill.)
                    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                        // A link to nowhere: SQLite would create the file at the other end.
                        return Err(Error::SymlinkRefused { path: path.clone() });
                    }
                    match crate::sessions::private::create_new_file(path, b"") {
                        // Another process created it a moment ago: it is theirs to fill.
                        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {}
                        created => created?,
                    }
                }
                Connection::open(path).map_err(sql_error)?
            }
            StoreLocation::Memory { name } => Connection::open_with_flags(
                format!("file:{name}?mode=memory&cache=shared"),
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(sql_error)?,
        };
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(sql_error)?;
        if let StoreLocation::File(_) = location {
            conn.pragma_update(None, "journal_mode", "WAL").map_err(sql_error)?;
            conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql_error)?;
        }
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql_error)?;
        let mut conn = conn;
        migrations::migrate(&mut conn).map_err(|e| match e {
            migrations::MigrateError::TooNew { found } => Error::StoreTooNew {
                path: location.describe(),
                found,
                known: SCHEMA_VERSION,
            },
            migrations::MigrateError::Sql(source) => sql_error(source),
        })?;
        Ok(Store {
            conn: ReentrantMutex::new(conn),
            location: location.clone(),
        })
    }

    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    fn err(&self, source: rusqlite::Error) -> Error {
        Error::Store {
            path: self.location.describe(),
            source,
        }
    }

    /// The key of a workspace, created on first use.
    fn workspace_key(&self, workspace: &Workspace) -> Result<i64, Error> {
        let conn = self.conn();
        let root = workspace.root().to_string_lossy();
        conn.prepare_cached("INSERT INTO workspaces (root) VALUES (?1) ON CONFLICT (root) DO NOTHING")
            .and_then(|mut insert| insert.execute([&root]))
            .map_err(|e| self.err(e))?;
        conn.prepare_cached("SELECT id FROM workspaces WHERE root = ?1")
            .and_then(|mut select| select.query_row([&root], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// The key of a session row, created on first use.
    fn session_key(&self, workspace: &Workspace, id: &SessionId, now: SystemTime) -> Result<i64, Error> {
        let conn = self.conn();
        let workspace_key = self.workspace_key(workspace)?;
        let now = millis(now);
        conn.prepare_cached(
            "INSERT INTO sessions (workspace_id, session_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT (workspace_id, session_id) DO NOTHING",
        )
        .and_then(|mut insert| insert.execute(params![workspace_key, id.as_str(), now]))
        .map_err(|e| self.err(e))?;
        conn.prepare_cached("SELECT key FROM sessions WHERE workspace_id = ?1 AND session_id = ?2")
            .and_then(|mut select| select.query_row(params![workspace_key, id.as_str()], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    fn existing_session_key(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<i64>, Error> {
        let conn = self.conn();
        conn.query_row(
            "SELECT s.key FROM sessions s JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND s.session_id = ?2",
            params![workspace.root().to_string_lossy(), id.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| self.err(e))
    }

    // ---- workspaces ----

    /// Records that the window opened `workspace` now (it becomes the most recent).
    pub fn workspace_opened(&self, workspace: &Workspace, now: SystemTime) -> Result<(), Error> {
        let key = self.workspace_key(workspace)?;
        self.conn()
            .execute(
                "UPDATE workspaces SET opened_at = ?2 WHERE id = ?1",
                params![key, millis(now)],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The workspaces the window opened, most recent first, at most `limit`.
    pub fn recent_workspaces(&self, limit: usize) -> Result<Vec<PathBuf>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT root FROM workspaces WHERE opened_at IS NOT NULL ORDER BY opened_at DESC, id DESC LIMIT ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([limit as i64], |r| r.get::<_, String>(0).map(PathBuf::from))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    // ---- pins ----

    pub fn pin(&self, workspace: &Workspace, id: &SessionId, now: SystemTime) -> Result<(), Error> {
        let conn = self.conn();
        let key = self.session_key(workspace, id, now)?;
        conn.execute(
            "UPDATE sessions SET pinned_at = COALESCE(pinned_at, ?2) WHERE key = ?1",
            params![key, millis(now)],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn unpin(&self, workspace: &Workspace, id: &SessionId) -> Result<(), Error> {
        let conn = self.conn();
        if let Some(key) = self.existing_session_key(workspace, id)? {
            conn.execute("UPDATE sessions SET pinned_at = NULL WHERE key = ?1", [key])
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Pinned sessions of a workspace, most recently pinned first.
    pub fn pins(&self, workspace: &Workspace) -> Result<Vec<Pin>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT s.session_id, s.pinned_at FROM sessions s JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND s.pinned_at IS NOT NULL ORDER BY s.pinned_at DESC, s.session_id",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([workspace.root().to_string_lossy()], |r| {
                Ok(Pin {
                    session_id: r.get(0)?,
                    pinned_at: timestamp(r.get(1)?),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// What the studio knows of each session of a workspace, by id.
    fn session_facts(&self, workspace: &Workspace) -> Result<std::collections::HashMap<String, SessionFacts>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT s.session_id, s.pinned_at, s.title, s.agent,
                        (SELECT count(*) FROM messages m WHERE m.session_key = s.key)
                 FROM sessions s JOIN workspaces w ON w.id = s.workspace_id WHERE w.root = ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([workspace.root().to_string_lossy()], |r| {
                Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    // ---- messages ----

    pub fn message_append(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        role: &str,
        text: &str,
        now: SystemTime,
    ) -> Result<i64, Error> {
        let key = self.session_key(workspace, id, now)?;
        let conn = self.conn();
        let tx = self.write_transaction(&conn)?;
        let seq: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_key = ?1",
                [key],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT INTO messages (session_key, seq, role, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key, seq, role, text, millis(now)],
        )
        .map_err(|e| self.err(e))?;
        let message_id = tx.last_insert_rowid();
        search::index(&tx, search::Kind::Message, message_id, text).map_err(|e| self.err(e))?;
        if role == "user" {
            tx.execute(
                "UPDATE sessions SET title = COALESCE(title, substr(?2, 1, 120)), updated_at = ?3 WHERE key = ?1",
                params![key, text.trim(), millis(now)],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(seq)
    }

    pub fn messages(&self, workspace: &Workspace, id: &SessionId) -> Result<Vec<Message>, Error> {
        let conn = self.conn();
        let Some(key) = self.existing_session_key(workspace, id)? else {
            return Ok(Vec::new());
        };
        let mut statement = conn
            .prepare_cached("SELECT seq, role, text, created_at FROM messages WHERE session_key = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([key], |r| {
                Ok(Message {
                    seq: r.get(0)?,
                    role: r.get(1)?,
                    text: r.get(2)?,
                    created_at: timestamp(r.get(3)?),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// What the store calls a session: the beginning of its first prompt (`title`) and the agent
    /// the studio ran it with, each when recorded (`session_model::name_session` decides).
    pub fn session_names(
        &self,
        workspace: &Workspace,
        id: &SessionId,
    ) -> Result<(Option<String>, Option<String>), Error> {
        let conn = self.conn();
        let Some(key) = self.existing_session_key(workspace, id)? else {
            return Ok((None, None));
        };
        conn.query_row("SELECT title, agent FROM sessions WHERE key = ?1", [key], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .map_err(|e| self.err(e))
    }

    /// The session's title: the beginning of its first prompt, else the agent's name.
    pub fn session_title(&self, workspace: &Workspace, id: &SessionId) -> Result<Option<String>, Error> {
        let conn = self.conn();
        let Some(key) = self.existing_session_key(workspace, id)? else {
            return Ok(None);
        };
        conn.query_row(
            "SELECT COALESCE(title, agent) FROM sessions WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .map_err(|e| self.err(e))
    }

    // ---- runs ----

    /// Records a new run (`running`) and returns its id, a UUID v7.
    pub fn run_insert(&self, workspace: &Workspace, run: &NewRun<'_>) -> Result<String, Error> {
        let key = self.session_key(workspace, run.session, run.started_at)?;
        let id = uuid::Uuid::now_v7().to_string();
        let command = serde_json::to_string(run.command).expect("strings serialise");
        let conn = self.conn();
        let tx = self.write_transaction(&conn)?;
        tx.execute(
            "INSERT INTO runs (id, session_key, agent, command, status, started_at, replayed_node, owner_pid)
             VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)",
            params![
                id,
                key,
                run.agent,
                command,
                millis(run.started_at),
                run.replayed_node,
                std::process::id()
            ],
        )
        .map_err(|e| self.err(e))?;
        tx.execute(
            "UPDATE sessions SET agent = COALESCE(agent, ?2), title = COALESCE(title, substr(?3, 1, 120)),
             updated_at = ?4 WHERE key = ?1",
            params![key, run.agent, run.prompt.map(str::trim), millis(run.started_at)],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// The run's process and process group, recorded while it lives (for stop and recovery),
    /// with the identity of the group's leader as it is now ([`crate::vocabulary::process::ProcessIdentity`]):
    /// call it as the leader's parent before waiting for it, so the identity is the child's.
    /// A leader that cannot be identified gets none, and no signal ever.
    pub fn run_set_process(&self, run_id: &str, pid: u32, process_group: u32) -> Result<(), Error> {
        let identity = crate::vocabulary::process::ProcessIdentity::of(process_group);
        let conn = self.conn();
        conn.execute(
            "UPDATE runs SET pid = ?2, pgid = ?3, pgid_start_time = ?4, boot_id = ?5 WHERE id = ?1",
            params![
                run_id,
                pid,
                process_group,
                identity.as_ref().map(|i| i.start_time as i64),
                identity.as_ref().map(|i| i.boot_id.as_str())
            ],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records the run keeper's folder of a run.
    pub fn run_set_keeper_dir(&self, run_id: &str, dir: &Path) -> Result<(), Error> {
        let conn = self.conn();
        conn.execute(
            "UPDATE runs SET keeper_dir = ?2 WHERE id = ?1",
            params![run_id, dir.to_string_lossy()],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The studio lets a live run go on without it: nobody owns it until a studio takes it back.
    /// Claims a run no live studio process owns (`owner` as it was read: none, or a dead one) for
    /// this process, so that one process alone settles it; `false` when another got there first.
    pub fn claim_run(&self, run_id: &str, owner: Option<i64>) -> Result<bool, Error> {
        let changed = self
            .conn()
            .execute(
                "UPDATE runs SET owner_pid = ?3 WHERE id = ?1 AND status = 'running' AND owner_pid IS ?2",
                params![run_id, owner, std::process::id()],
            )
            .map_err(|e| self.err(e))?;
        Ok(changed == 1)
    }

    pub fn run_detach(&self, run_id: &str) -> Result<(), Error> {
        let conn = self.conn();
        conn.execute("UPDATE runs SET owner_pid = NULL WHERE id = ?1", [run_id])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Runs nobody owns any more that have a keeper folder (candidates to finish from its files).
    pub fn detached_kept_runs(&self) -> Result<Vec<RunRecord>, Error> {
        let conn = self.conn();
        let sql = format!(
            "SELECT {} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE r.status = 'running' AND r.keeper_dir IS NOT NULL",
            Self::RUN_COLUMNS
        );
        let mut statement = conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = statement.query_map([], Self::run_from_row).map_err(|e| self.err(e))?;
        let runs: Vec<RunRecord> = rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?;
        let owned = |run: &RunRecord| {
            owner_alive(
                run.owner_pid,
                run.process_identity.as_ref().map(|i| i.boot_id.as_str()),
                crate::vocabulary::process::process_alive,
            )
        };
        Ok(runs.into_iter().filter(|r| !owned(r)).collect())
    }

    /// Records that another studio process asked the run to stop, and how.
    pub fn run_request_stop(&self, run_id: &str, how: StoppedBy) -> Result<(), Error> {
        let conn = self.conn();
        conn.execute(
            "UPDATE runs SET stop_requested = ?2 WHERE id = ?1",
            params![run_id, how.as_str()],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn run_finish(&self, run_id: &str, outcome: &RunOutcome<'_>) -> Result<(), Error> {
        let conn = self.conn();
        let changed = conn
            .execute(
                "UPDATE runs SET status = ?2, exit_code = ?3, error = ?4, stopped_by = ?5, ended_at = ?6,
                 pid = NULL, pgid = NULL, pgid_start_time = NULL WHERE id = ?1",
                params![
                    run_id,
                    outcome.status.as_str(),
                    outcome.exit_code,
                    outcome.error,
                    outcome.stopped_by,
                    millis(outcome.ended_at)
                ],
            )
            .map_err(|e| self.err(e))?;
        if changed == 0 {
            return Err(Error::RunNotFound { id: run_id.to_owned() });
        }
        Ok(())
    }

    const RUN_COLUMNS: &'static str = "r.id, s.session_id, r.agent, r.command, r.pid, r.pgid, r.status, r.started_at,
        r.ended_at, r.exit_code, r.error, r.stopped_by, r.replayed_node, r.owner_pid, r.stop_requested, w.root,
        r.keeper_dir, r.pgid_start_time, r.boot_id";

    fn run_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
        let command: String = row.get(3)?;
        let status = parse_status(&row.get::<_, String>(6)?);
        let owner: Option<i64> = row.get(13)?;
        Ok(RunRecord {
            id: row.get(0)?,
            session_id: row.get(1)?,
            agent: row.get(2)?,
            command: serde_json::from_str(&command).unwrap_or_default(),
            pid: row.get(4)?,
            process_group: row.get(5)?,
            process_identity: identity(row.get(5)?, row.get(17)?, row.get(18)?),
            status,
            detached: status == Status::Running && owner.is_none(),
            owner_pid: owner,
            started_at: timestamp(row.get(7)?),
            ended_at: row.get::<_, Option<i64>>(8)?.map(timestamp),
            exit_code: row.get(9)?,
            error: row.get(10)?,
            stopped_by: row.get::<_, Option<String>>(11)?.as_deref().and_then(StoppedBy::parse),
            stop_requested: row.get::<_, Option<String>>(14)?.as_deref().and_then(StoppedBy::parse),
            workspace: PathBuf::from(row.get::<_, String>(15)?),
            keeper_dir: row.get::<_, Option<String>>(16)?.map(PathBuf::from),
            replayed_node: row.get(12)?,
            usage: None,
        })
    }

    /// Runs of a workspace (or of one session), newest first.
    pub fn runs(&self, workspace: &Workspace, session: Option<&SessionId>) -> Result<Vec<RunRecord>, Error> {
        let conn = self.conn();
        let sql = format!(
            "SELECT {} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE w.root = ?1 AND (?2 IS NULL OR s.session_id = ?2) ORDER BY r.started_at DESC, r.id DESC",
            Self::RUN_COLUMNS
        );
        let mut statement = conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = statement
            .query_map(
                params![workspace.root().to_string_lossy(), session.map(SessionId::as_str)],
                Self::run_from_row,
            )
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The last run of each session of a workspace (what a listing needs; not every run ever).
    fn last_runs(&self, workspace: &Workspace) -> Result<Vec<RunRecord>, Error> {
        let conn = self.conn();
        let sql = format!(
            "SELECT {} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE w.root = ?1
               AND r.started_at = (SELECT MAX(started_at) FROM runs WHERE session_key = r.session_key)
             ORDER BY r.started_at DESC, r.id DESC",
            Self::RUN_COLUMNS
        );
        let mut statement = conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([workspace.root().to_string_lossy()], Self::run_from_row)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// One run by its id, in any workspace.
    pub fn run(&self, run_id: &str) -> Result<RunRecord, Error> {
        let conn = self.conn();
        let sql = format!(
            "SELECT {} FROM runs r JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
             WHERE r.id = ?1",
            Self::RUN_COLUMNS
        );
        conn.query_row(&sql, [run_id], Self::run_from_row)
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or_else(|| Error::RunNotFound { id: run_id.to_owned() })
    }

    // ---- output ----

    /// A writer that appends a run's output lines in batches.
    pub fn output_writer(&self, run_id: &str) -> Result<OutputWriter<'_>, Error> {
        OutputWriter::new(self, run_id)
    }

    /// Lines `from_seq..` of a run's output (1-based), at most `limit`.
    pub fn output_page(&self, run_id: &str, from_seq: i64, limit: usize) -> Result<Vec<OutputLine>, Error> {
        Ok(output::page(self, run_id, from_seq, limit, &OutputFilter::default())?.lines)
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
        output::page(self, run_id, from_seq, limit, filter)
    }

    /// The first line from `from_seq` (or back from it) whose text contains `query`, ignoring case
    /// and ANSI escapes; a find reads at most [`FIND_BUDGET_LINES`] lines per call.
    pub fn output_find(&self, run_id: &str, from_seq: i64, backward: bool, query: &str) -> Result<OutputFind, Error> {
        if query.is_empty() {
            return Err(Error::EmptyQuery);
        }
        output::find(self, run_id, from_seq, backward, query)
    }

    /// Every line of a run's output in order (borrowed), until `line` returns false: one pass
    /// over a whole output without pages.
    pub fn output_each_line(&self, run_id: &str, line: &mut dyn FnMut(StoredLine<'_>) -> bool) -> Result<(), Error> {
        output::each_line(self, run_id, line)
    }

    /// How many stdout and stderr lines of a run are stored.
    pub fn output_line_counts(&self, run_id: &str) -> Result<(i64, i64), Error> {
        output::line_counts(self, run_id)
    }

    /// How many lines of output a run has stored.
    pub fn output_line_count(&self, run_id: &str) -> Result<i64, Error> {
        output::line_count(self, run_id)
    }

    // ---- logs and traces ----

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
        let conn = self.conn();
        let written = conn
            .prepare_cached(
                "INSERT INTO logs (session_key, run_id, at, level, event, message, fields, indexed)
                 SELECT session_key, id, ?2, ?3, ?4, ?5, ?6, 0 FROM runs WHERE id = ?1",
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    run_id,
                    millis(now),
                    level.as_str(),
                    event,
                    message,
                    fields.to_string()
                ])
            })
            .map_err(|e| self.err(e))?;
        if written == 0 {
            return Err(Error::RunNotFound { id: run_id.to_owned() });
        }
        Ok(())
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
        let key = self.session_key(workspace, id, now)?;
        let conn = self.conn();
        let tx = self.write_transaction(&conn)?;
        // Indexed for search behind the run ([`Store::index_pending`]).
        tx.prepare_cached(
            "INSERT INTO logs (session_key, run_id, at, level, event, message, fields, indexed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0)",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                key,
                run_id,
                millis(now),
                level.as_str(),
                event,
                message,
                fields.to_string()
            ])
        })
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// A session's log lines as stored, in the order written (without the node lines its spans
    /// make: [`Store::logs`] adds them).
    fn stored_logs(&self, session_key: i64) -> Result<Vec<LogLine>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT at, level, event, message, run_id, fields FROM logs WHERE session_key = ?1 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let lines = statement
            .query_map([session_key], |r| {
                let fields: Option<String> = r.get(5)?;
                Ok(LogLine {
                    at: timestamp(r.get(0)?),
                    level: Level::parse(&r.get::<_, String>(1)?),
                    event: r.get(2)?,
                    message: r.get(3)?,
                    run_id: r.get(4)?,
                    fields: fields.and_then(|f| serde_json::from_str(&f).ok()).unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(lines)
    }

    pub fn logs(&self, workspace: &Workspace, id: &SessionId) -> Result<Vec<LogLine>, Error> {
        let conn = self.conn();
        let Some(key) = self.existing_session_key(workspace, id)? else {
            return Ok(Vec::new());
        };
        let stored = self.stored_logs(key)?;
        // A node's log lines are read from its span (see [`node_logs`]).
        let spans = conn
            .prepare_cached(
                "SELECT s.id, s.parent_id, s.run_id, s.name, s.kind, s.depth, s.started_at, s.ended_at, s.status
                 FROM spans s JOIN runs r ON r.id = s.run_id
                 WHERE r.session_key = ?1 AND s.kind = 'node' ORDER BY s.id",
            )
            .and_then(|mut select| select.query_map([key], span_from_row)?.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        Ok(node_logs::with_node_lines(stored, &spans))
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
        let conn = self.conn();
        // A node's name is indexed for search behind the run ([`Store::index_pending`]).
        conn.prepare_cached(
            "INSERT INTO spans (run_id, parent_id, name, kind, depth, started_at, status, indexed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?4 <> 'node')",
        )
        .and_then(|mut insert| insert.execute(params![run_id, parent, name, kind, depth as i64, millis(at)]))
        .map_err(|e| self.err(e))?;
        Ok(conn.last_insert_rowid())
    }

    /// Forgets a span recorded for what turned out not to be a node (and its search entry).
    pub fn span_forget(&self, span_id: i64) -> Result<(), Error> {
        let conn = self.conn();
        let tx = self.write_transaction(&conn)?;
        let indexed: Option<bool> = tx
            .query_row("SELECT indexed FROM spans WHERE id = ?1", [span_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        if indexed == Some(true) {
            tx.execute("DELETE FROM search_text WHERE rowid = ?1 * 4 + 3", [span_id])
                .map_err(|e| self.err(e))?;
        }
        tx.execute("DELETE FROM spans WHERE id = ?1", [span_id])
            .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    pub fn span_end(&self, span_id: i64, status: Status, at: SystemTime) -> Result<(), Error> {
        let conn = self.conn();
        conn.prepare_cached("UPDATE spans SET status = ?2, ended_at = ?3 WHERE id = ?1")
            .and_then(|mut update| update.execute(params![span_id, status.as_str(), millis(at)]))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn spans(&self, run_id: &str) -> Result<Vec<Span>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT id, parent_id, run_id, name, kind, depth, started_at, ended_at, status FROM spans
                 WHERE run_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement.query_map([run_id], span_from_row).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The node spans of each session's last run in a workspace, by run id: one query for a whole
    /// listing (it lays them over every session the studio ran).
    fn last_runs_node_spans(
        &self,
        workspace: &Workspace,
    ) -> Result<std::collections::HashMap<String, Vec<Span>>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT sp.id, sp.parent_id, sp.run_id, sp.name, sp.kind, sp.depth, sp.started_at, sp.ended_at, sp.status
                 FROM spans sp JOIN runs r ON r.id = sp.run_id JOIN sessions s ON s.key = r.session_key
                 JOIN workspaces w ON w.id = s.workspace_id
                 WHERE w.root = ?1 AND sp.kind = 'node'
                   AND r.started_at = (SELECT MAX(started_at) FROM runs WHERE session_key = r.session_key)
                 ORDER BY sp.id",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([workspace.root().to_string_lossy()], span_from_row)
            .map_err(|e| self.err(e))?;
        let mut by_run: std::collections::HashMap<String, Vec<Span>> = std::collections::HashMap::new();
        for span in rows {
            let span = span.map_err(|e| self.err(e))?;
            by_run.entry(span.run_id.clone()).or_default().push(span);
        }
        Ok(by_run)
    }

    // ---- search ----

    /// Full-text search over run output, messages, node names and logs of a workspace.
    /// Output not yet indexed is indexed first, so every line ever stored can be found.
    pub fn search(&self, workspace: &Workspace, query: &str, limit: usize) -> Result<Vec<SearchHit>, Error> {
        while self.index_pending(64)? > 0 {}
        search::search(self, workspace, query, limit)
    }

    // ---- trusted launches ----

    /// Whether the user trusted this launch of an agent (by [`crate::sessions::agents::Launch::digest`]) in
    /// the workspace.
    pub fn launch_trusted(&self, workspace: &Workspace, digest: &str) -> Result<bool, Error> {
        let workspace_key = self.workspace_key(workspace)?;
        self.conn()
            .query_row(
                "SELECT 1 FROM trusted_launches WHERE workspace_id = ?1 AND digest = ?2",
                params![workspace_key, digest],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| self.err(e))
    }

    /// Records that the user trusts this launch of an agent in the workspace.
    pub fn trust_launch(&self, workspace: &Workspace, digest: &str, now: SystemTime) -> Result<(), Error> {
        let workspace_key = self.workspace_key(workspace)?;
        self.conn()
            .execute(
                "INSERT INTO trusted_launches (workspace_id, digest, trusted_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
                params![workspace_key, digest, millis(now)],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// `Ok` when `launch` is trusted, else [`Error::AgentsUntrusted`] with what it would run, for
    /// the window or the CLI to show before asking.
    pub fn require_trusted(&self, workspace: &Workspace, launch: crate::sessions::agents::Launch) -> Result<(), Error> {
        if self.launch_trusted(workspace, &launch.digest)? {
            Ok(())
        } else {
            Err(Error::AgentsUntrusted {
                launch: Box::new(launch),
            })
        }
    }

    /// Saves one agent to the agents file ([`crate::sessions::agents::save_one`]). What the user writes in
    /// the studio's form is theirs: the saved agent's run and replay launches are trusted.
    pub fn agent_save(
        &self,
        workspace: &Workspace,
        agent: crate::sessions::agents::Agent,
        previous_name: Option<&str>,
        now: SystemTime,
    ) -> Result<Vec<crate::sessions::agents::Agent>, Error> {
        let name = agent.name.clone();
        let saved = crate::sessions::agents::save_one(workspace.root(), agent, previous_name)?;
        for replay in [false, true] {
            match crate::sessions::agents::find(workspace.root(), &name, replay) {
                Ok(found) => self.trust_launch(workspace, &found.launch.digest, now)?,
                Err(Error::NoReplayCommand { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(saved)
    }

    // ---- delete ----

    /// Deletes a session: its rows in one transaction (messages, runs, output, logs, traces), then
    /// its folder, moved by `discard` (the system trash in the app and the CLI). Refused while a
    /// run of the session is live.
    pub fn session_delete(
        &self,
        workspace: &Workspace,
        id: &SessionId,
        discard: impl FnOnce(&Path) -> Result<(), Error>,
    ) -> Result<(), Error> {
        // Only ever a real folder inside the workspace's sessions folder (links are refused).
        let folder = match workspace.session_folder(id) {
            Ok(folder) => Some(folder),
            Err(Error::SessionNotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let key = self.existing_session_key(workspace, id)?;
        if key.is_none() && folder.is_none() {
            return Err(Error::SessionNotFound {
                id: id.to_string(),
                sessions_dir: workspace.sessions_dir(),
            });
        }
        let conn = self.conn();
        let tx = self.write_transaction(&conn)?;
        if let Some(key) = key {
            let live: Option<String> = tx
                .query_row(
                    "SELECT id FROM runs WHERE session_key = ?1 AND status = 'running' LIMIT 1",
                    [key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            if let Some(run_id) = live {
                return Err(Error::SessionLive {
                    id: id.to_string(),
                    run_id,
                });
            }
            search::unindex_session(&tx, key).map_err(|e| self.err(e))?;
            tx.execute("DELETE FROM sessions WHERE key = ?1", [key])
                .map_err(|e| self.err(e))?;
        }
        tx.execute(
            "DELETE FROM folder_index WHERE workspace_id = (SELECT id FROM workspaces WHERE root = ?1) AND session_id = ?2",
            params![workspace.root().to_string_lossy(), id.as_str()],
        )
        .map_err(|e| self.err(e))?;
        // The folder goes last: if moving it fails, the rows come back with the rollback.
        if let Some(folder) = folder {
            discard(&folder)?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    // ---- crash recovery ----

    /// Reconciles runs left `running` by studio processes that are gone: a run whose process group
    /// is gone becomes `interrupted` (with a log line); one whose group still lives is detached
    /// (still `running`, stoppable by its stop files and process group).
    pub fn recover(
        &self,
        is_alive: impl Fn(u32) -> bool,
        is_group_alive: impl Fn(u32) -> bool,
        now: SystemTime,
    ) -> Result<Vec<Recovered>, Error> {
        let conn = self.conn();
        let mut statement = conn
            .prepare(
                "SELECT r.id, s.session_id, w.root, r.pgid, r.owner_pid, r.stop_requested, r.pgid_start_time,
                 r.boot_id FROM runs r
                 JOIN sessions s ON s.key = r.session_key JOIN workspaces w ON w.id = s.workspace_id
                 WHERE r.status = 'running'",
            )
            .map_err(|e| self.err(e))?;
        type Row = (
            String,
            String,
            String,
            Option<i64>,
            Option<i64>,
            Option<String>,
            Option<crate::vocabulary::process::ProcessIdentity>,
            Option<String>,
        );
        let rows: Vec<Row> = statement
            .query_map([], |r| {
                let boot: Option<String> = r.get(7)?;
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    identity(r.get(3)?, r.get(6)?, boot.clone()),
                    boot,
                ))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        let mut recovered = Vec::new();
        for (run_id, session_id, root, pgid, owner, stop_requested, leader, boot) in rows {
            if owner_alive(owner, boot.as_deref(), &is_alive) {
                continue;
            }
            // A group whose leader is not the process the run started (its id was reused, or
            // was never identified) is not the run's, alive or not.
            let group_alive = pgid.is_some_and(|g| is_group_alive(g as u32))
                && leader
                    .as_ref()
                    .is_some_and(crate::vocabulary::process::ProcessIdentity::is_current);
            let workspace = Workspace::from_canonical_root(PathBuf::from(&root));
            let id = SessionId::parse(&session_id)?;
            if group_alive {
                conn.execute("UPDATE runs SET owner_pid = NULL WHERE id = ?1", [&run_id])
                    .map_err(|e| self.err(e))?;
                recovered.push(Recovered {
                    run_id,
                    session_id,
                    status: Status::Running,
                });
                continue;
            }
            // A run someone asked to stop, whose processes are gone, was cancelled.
            let (status, event, message) = match &stop_requested {
                Some(_) => (
                    Status::Cancelled,
                    "run.cancelled",
                    "The run was stopped; the studio process that supervised it had ended.",
                ),
                None => (
                    Status::Interrupted,
                    "run.interrupted",
                    "The studio process that supervised this run ended, and the run's processes are gone.",
                ),
            };
            conn.execute(
                "UPDATE runs SET status = ?3, ended_at = ?2, pid = NULL, pgid = NULL, pgid_start_time = NULL,
                 owner_pid = NULL,
                 stopped_by = stop_requested,
                 error = CASE WHEN ?3 = 'interrupted' THEN 'the studio that ran it stopped, and so did its processes' END
                 WHERE id = ?1",
                params![run_id, millis(now), status.as_str()],
            )
            .map_err(|e| self.err(e))?;
            conn.execute(
                "UPDATE spans SET status = ?3, ended_at = ?2 WHERE run_id = ?1 AND ended_at IS NULL",
                params![run_id, millis(now), status.as_str()],
            )
            .map_err(|e| self.err(e))?;
            self.log(
                &workspace,
                &id,
                Some(&run_id),
                Level::Warn,
                event,
                message,
                serde_json::json!({ "process_group": pgid, "stopped_by": stop_requested }),
                now,
            )?;
            recovered.push(Recovered {
                run_id,
                session_id,
                status,
            });
        }
        Ok(recovered)
    }

    // ---- folder index ----

    /// Reconciles the runs of studio processes that died, asking the system which processes live.
    pub fn recover_dead_studios(&self, now: SystemTime) -> Result<Vec<Recovered>, Error> {
        self.recover(
            crate::vocabulary::process::process_alive,
            crate::vocabulary::process::group_alive,
            now,
        )
    }

    /// Whether a session is known to the store or has a folder: pins and deletes need one.
    pub fn session_exists(&self, workspace: &Workspace, id: &SessionId) -> Result<bool, Error> {
        match workspace.session_folder(id) {
            Ok(_) => Ok(true),
            Err(Error::SessionNotFound { .. }) => Ok(self.existing_session_key(workspace, id)?.is_some()),
            // A link in its place (or on the way) is said, not taken as "no such session".
            Err(e) => Err(e),
        }
    }

    /// A write transaction that takes the write lock at once (`BEGIN IMMEDIATE`), so that it waits
    /// for another writer (the app, a `zstudio` command) instead of failing on a stale read.
    /// Inside [`Store::batch`] it is part of the batch's transaction.
    pub(crate) fn write_transaction<'c>(&self, conn: &'c Connection) -> Result<WriteTransaction<'c>, Error> {
        if !conn.is_autocommit() {
            return Ok(WriteTransaction::Batched(conn));
        }
        rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
            .map(WriteTransaction::Own)
            .map_err(|e| self.err(e))
    }

    /// Runs `work` (store calls from this thread) in one transaction: many small writes, one
    /// commit. Other threads wait for the batch.
    pub fn batch<T>(&self, work: impl FnOnce() -> T) -> Result<T, Error> {
        let conn = self.conn();
        if !conn.is_autocommit() {
            return Ok(work());
        }
        let tx = rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let value = work();
        tx.commit().map_err(|e| self.err(e))?;
        Ok(value)
    }

    /// Adds up to `max_blocks` output blocks (and up to 64 times as many log lines) to the search
    /// index, oldest first; returns how many. Output and logs are stored at once and indexed behind
    /// them, so a flood of output or of nodes is never slowed by indexing.
    pub fn index_pending(&self, max_blocks: usize) -> Result<usize, Error> {
        let rows = max_blocks.saturating_mul(64);
        Ok(self.index_pending_rows(
            "SELECT id, text FROM output_blocks WHERE indexed = 0 ORDER BY id LIMIT ?1",
            "UPDATE output_blocks SET indexed = 1 WHERE indexed = 0 AND id <= ?1",
            search::Kind::Output,
            max_blocks,
        )? + self.index_pending_rows(
            "SELECT id, event || ' ' || message FROM logs WHERE indexed = 0 ORDER BY id LIMIT ?1",
            "UPDATE logs SET indexed = 1 WHERE indexed = 0 AND id <= ?1",
            search::Kind::Log,
            rows,
        )? + self.index_pending_rows(
            "SELECT id, name FROM spans WHERE indexed = 0 ORDER BY id LIMIT ?1",
            "UPDATE spans SET indexed = 1 WHERE indexed = 0 AND id <= ?1",
            search::Kind::Node,
            rows,
        )?)
    }

    /// Indexes up to `max` rows that `select` (id, text) finds not indexed yet, then marks them.
    fn index_pending_rows(&self, select: &str, mark: &str, kind: search::Kind, max: usize) -> Result<usize, Error> {
        let conn = self.conn();
        let tx = self.write_transaction(&conn)?;
        let pending: Vec<(i64, String)> = tx
            .prepare_cached(select)
            .and_then(|mut select| {
                select
                    .query_map([max as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()
            })
            .map_err(|e| self.err(e))?;
        for (id, text) in &pending {
            search::index(&tx, kind, *id, text).map_err(|e| self.err(e))?;
        }
        if let Some((last, _)) = pending.last() {
            tx.prepare_cached(mark)
                .and_then(|mut update| update.execute([last]))
                .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(pending.len())
    }

    /// The connection, locked for this thread until the guard drops.
    pub(crate) fn conn(&self) -> ReentrantMutexGuard<'_, Connection> {
        self.conn.lock()
    }

    pub(crate) fn workspace_key_for(&self, workspace: &Workspace) -> Result<i64, Error> {
        self.workspace_key(workspace)
    }

    pub(crate) fn sql_error(&self, source: rusqlite::Error) -> Error {
        self.err(source)
    }
}

fn span_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Span> {
    Ok(Span {
        id: r.get(0)?,
        parent_id: r.get(1)?,
        run_id: r.get(2)?,
        name: r.get(3)?,
        kind: r.get(4)?,
        depth: r.get(5)?,
        started_at: timestamp(r.get(6)?),
        ended_at: r.get::<_, Option<i64>>(7)?.map(timestamp),
        status: parse_status(&r.get::<_, String>(8)?),
    })
}
