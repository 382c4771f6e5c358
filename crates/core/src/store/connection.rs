//! The store's one connection: where it lives, opening and migrating it, the lock every thread
//! of a process takes, transactions, and the one conversion of SQLite's errors into the studio's
//! ([`QueryError`], turned into [`Error::Store`] by [`Store::with_conn`]).
//!
//! The tables' files are functions over a `&Connection` that return a [`QueryResult`]; `Store`'s
//! methods (`store/mod.rs`) call them through [`Store::with_conn`].

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};
use rusqlite::{Connection, OpenFlags};

use super::migrations::{self, SCHEMA_VERSION};
use crate::sessions::session::Timestamp;
use crate::status::Status;
use crate::vocabulary::error::Error;

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
    /// (`$XDG_DATA_HOME/zibby-studio/studio.sqlite`, or `~/.local/share/...`). A path given is
    /// made absolute now, once, its folder's links resolved: the run keeper (which runs in the
    /// agent's folder) and a later `cd` read the same store, and no link planted afterwards
    /// redirects it.
    pub fn resolve(db: Option<PathBuf>, memory: bool) -> Result<StoreLocation, Error> {
        if memory {
            return Ok(StoreLocation::memory());
        }
        if let Some(path) = db.or_else(|| std::env::var_os("ZIBBY_STUDIO_DB").map(PathBuf::from)) {
            return Ok(StoreLocation::File(absolute_store_path(&path)?));
        }
        Ok(StoreLocation::File(default_store_path().ok_or(Error::NoDataFolder)?))
    }

    /// Where the run keeper's folders go. Beside the default store; for a store elsewhere (which
    /// could be inside a workspace, where the workspace could plant a link), in the studio's data
    /// folder, one folder per store; in the temporary folder for an in-memory store. Never inside
    /// a workspace.
    pub fn runs_dir(&self) -> PathBuf {
        match self {
            StoreLocation::File(path) if Some(path) == default_store_path().as_ref() => {
                path.parent().unwrap_or(Path::new("/")).join("runs")
            }
            StoreLocation::File(path) => {
                let name = crate::vocabulary::digest::sha256_hex(path.as_os_str().as_encoded_bytes(), 8);
                data_home()
                    .unwrap_or_else(std::env::temp_dir)
                    .join("zibby-studio")
                    .join("runs-of-stores")
                    .join(name)
            }
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

/// `$XDG_DATA_HOME` when absolute, else `~/.local/share`.
fn data_home() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
}

/// The store when none is given: `<data home>/zibby-studio/studio.sqlite`.
fn default_store_path() -> Option<PathBuf> {
    Some(data_home()?.join("zibby-studio").join("studio.sqlite"))
}

/// `path` absolute, its folder's links resolved when the folder exists (else the store makes it).
fn absolute_store_path(path: &Path) -> Result<PathBuf, Error> {
    let absolute = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let resolved = match (absolute.parent(), absolute.file_name()) {
        (Some(folder), Some(name)) => folder.canonicalize().map(|folder| folder.join(name)).ok(),
        _ => None,
    };
    Ok(resolved.unwrap_or(absolute))
}

/// What a table's function fails with: SQLite's error (`?` converts it), or the studio's own (a
/// run not found, a session live, a folder that cannot be read).
#[derive(Debug)]
pub(crate) enum QueryError {
    Sql(rusqlite::Error),
    Studio(Error),
}

pub(crate) type QueryResult<T> = Result<T, QueryError>;

impl From<rusqlite::Error> for QueryError {
    fn from(error: rusqlite::Error) -> QueryError {
        QueryError::Sql(error)
    }
}

impl From<Error> for QueryError {
    fn from(error: Error) -> QueryError {
        QueryError::Studio(error)
    }
}

impl QueryError {
    /// The one conversion of SQLite's errors into the studio's: [`Error::Store`], naming the store.
    fn at(self, location: &StoreLocation) -> Error {
        match self {
            QueryError::Sql(source) => Error::Store {
                path: location.describe(),
                source,
            },
            QueryError::Studio(error) => error,
        }
    }
}

/// The SQLite store.
pub struct Store {
    /// One connection, shared by the threads of a process (runs write from their own threads);
    /// reentrant so that a method holding it can call another.
    conn: ReentrantMutex<Connection>,
    location: StoreLocation,
    /// The workspaces watched in this process, and whether their folders' text changed since it
    /// was last indexed (`folder_text`).
    pub(super) watched: super::watched::Watched,
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

impl Store {
    /// Opens (creating if needed) and migrates the store. Opening can find the file locked for a
    /// moment (another process switching it to WAL, migrating it, or checkpointing as it closes),
    /// cases SQLite's busy timeout does not cover: those are retried for up to 10 s.
    pub fn open(location: &StoreLocation) -> Result<Store, Error> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match open_once(location) {
                Err(QueryError::Sql(source)) if is_busy(&source) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                result => {
                    return result
                        .map(|conn| Store {
                            conn: ReentrantMutex::new(conn),
                            location: location.clone(),
                            watched: Default::default(),
                        })
                        .map_err(|e| e.at(location))
                }
            }
        }
    }

    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// The connection, locked for this thread until the guard drops.
    pub(crate) fn conn(&self) -> ReentrantMutexGuard<'_, Connection> {
        self.conn.lock()
    }

    /// Runs `query` with the connection locked for this thread, its error the studio's.
    pub(crate) fn with_conn<T>(&self, query: impl FnOnce(&Connection) -> QueryResult<T>) -> Result<T, Error> {
        let conn = self.conn();
        query(&conn).map_err(|e| self.error(e))
    }

    fn error(&self, error: impl Into<QueryError>) -> Error {
        error.into().at(&self.location)
    }

    /// Runs `work` (store calls from this thread) in one transaction: many small writes, one
    /// commit. Other threads wait for the batch.
    pub fn batch<T>(&self, work: impl FnOnce() -> T) -> Result<T, Error> {
        let conn = self.conn();
        if !conn.is_autocommit() {
            return Ok(work());
        }
        let tx = immediate(&conn).map_err(|e| self.error(e))?;
        let value = work();
        tx.commit().map_err(|e| self.error(e))?;
        Ok(value)
    }

    /// Runs `work` (store calls from this thread) in one write transaction: committed when it
    /// returns `Ok`, rolled back when it returns an error, so that nothing of it is stored.
    pub fn atomically<T>(&self, work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        let conn = self.conn();
        let tx = immediate(&conn).map_err(|e| self.error(e))?;
        let value = work()?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(value)
    }
}

fn open_once(location: &StoreLocation) -> QueryResult<Connection> {
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
                    return Err(Error::SymlinkRefused { path: path.clone() }.into());
                }
                match crate::sessions::private::create_new_file(path, b"") {
                    // Another process created it a moment ago: it is theirs to fill.
                    Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {}
                    created => created?,
                }
            }
            Connection::open(path)?
        }
        StoreLocation::Memory { name } => Connection::open_with_flags(
            format!("file:{name}?mode=memory&cache=shared"),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_URI,
        )?,
    };
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    if let StoreLocation::File(_) = location {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    let mut conn = conn;
    migrations::migrate(&mut conn).map_err(|e| match e {
        migrations::MigrateError::TooNew { found } => QueryError::Studio(Error::StoreTooNew {
            path: location.describe(),
            found,
            known: SCHEMA_VERSION,
        }),
        migrations::MigrateError::Sql(source) => QueryError::Sql(source),
    })?;
    Ok(conn)
}

/// A transaction that takes the write lock at once.
fn immediate(conn: &Connection) -> QueryResult<rusqlite::Transaction<'_>> {
    Ok(rusqlite::Transaction::new_unchecked(
        conn,
        rusqlite::TransactionBehavior::Immediate,
    )?)
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

/// A write transaction that takes the write lock at once (`BEGIN IMMEDIATE`), so that it waits
/// for another writer (the app, a `zstudio` command) instead of failing on a stale read.
/// Inside [`Store::batch`] it is part of the batch's transaction.
pub(crate) fn write_transaction(conn: &Connection) -> QueryResult<WriteTransaction<'_>> {
    if !conn.is_autocommit() {
        return Ok(WriteTransaction::Batched(conn));
    }
    Ok(WriteTransaction::Own(immediate(conn)?))
}

/// A time as the store keeps it: milliseconds since the epoch.
pub(crate) fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// A stored time.
pub(crate) fn timestamp(ms: i64) -> Timestamp {
    Timestamp(ms.max(0) as u64)
}

/// A stored status word.
pub(crate) fn parse_status(text: &str) -> Status {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).unwrap_or(Status::Unknown)
}
