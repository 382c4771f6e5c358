//! A bucket prefix open in the window as a read-only workspace ([`CloudWorkspace`]): its mirror
//! (`bucket::Mirror`, a folder of the studio's cache, one per source) is opened as a local
//! workspace, and a poller thread refreshes the mirror every [`POLL_INTERVAL`] and when asked
//! ([`CloudWorkspace::refresh_soon`], the window gaining focus). The files a refresh writes into
//! the mirror's folder reach the window as any workspace's changes do, through the watcher.
//!
//! **A warm mirror opens at once** (stale while revalidating): when the mirror holds the listing
//! of an earlier refresh, the workspace opens on it without asking the bucket, and the poller
//! refreshes it once the window has listed it ([`CloudWorkspace::listed`]); meanwhile the status
//! says the listing is being checked ([`CloudStatus::checking`]), and a refresh that fails (offline, access refused) is the
//! status's error, not the open's. A cold mirror (its first fill never ran to its end) opens on
//! the ids, page by page: the poller lists the prefix's folders (a request a thousand sessions)
//! and the open returns once the first page is in hand (a failure before it, such as access
//! refused, is the open's); each later page's ids are told as it is answered
//! ([`CloudStatus::listing`], `listed`), the window listing them again. The sessions not fetched
//! yet are listed as rows that say so ([`CloudWorkspace::fetching`]), beside those a fill cut
//! short fetched, and the first refresh, started as for a warm mirror once the window has listed
//! the last page's, fetches them newest first (`Mirror::refresh`, a chunk at a time, its progress
//! told: [`CloudStatus::fetched`]), each arriving as any change does. Closed during that fill,
//! the workspace stops it after its chunk.
//!
//! Read-only: the window's commands that would start, stop, continue or delete a run, or write
//! the agents file, are refused by the app service (`Studio::forward`) while one is
//! open ([`READ_ONLY_REFUSED`]), naming the source. Pins are kept in the local store, keyed by
//! the mirror's folder (one per source). A page of a large output not yet fetched is fetched
//! before it is read ([`CloudWorkspace::ensure_range`]): never shown as the sparse file's zeros;
//! a session exported or compared is fetched whole first ([`CloudWorkspace::fetch_whole`]).

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::bucket::{FillProgress, Mirror, MirrorOptions, Source};
use crate::sessions::session::Workspace;
use crate::sessions::session::RAW_STREAM_FILE;
use crate::share::{self, ImportedSession};
use crate::store::Store;
use crate::vocabulary::error::Error;
use crate::vocabulary::id::SessionId;

/// How often the poller refreshes the mirror.
pub const POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The window's commands a cloud workspace refuses (run, replay and continue are `run_start` and
/// `run_replay`; stop; delete; the agents file).
pub const READ_ONLY_REFUSED: &[&str] = &[
    "run_start",
    "run_replay",
    "run_stop",
    "session_stop_outside",
    "session_delete",
    "agent_save",
    "traces_setting_save",
];

/// A cloud workspace as the window shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CloudStatus {
    /// The source's URL (`s3://bucket/prefix`), which names it.
    pub url: String,
    /// The endpoint given in the form, when one was.
    pub endpoint: Option<String>,
    /// The credential chain's profile given in the form, when one was (a name, no secret).
    pub profile: Option<String>,
    /// What opens it again (Open Recent): the URL with the endpoint and profile given
    /// (`s3://bucket/prefix?endpoint=…&profile=…`).
    pub target: String,
    /// Why the last refresh failed, while it does (the source named); `None` once one succeeds.
    pub error: Option<String>,
    /// The first refresh since this open is under way: the listing shown is the mirror's as
    /// fetched before (a warm mirror) or the prefix's ids with nothing fetched yet (a cold one);
    /// what it changes arrives as any change does.
    pub checking: bool,
    /// A cold open's ids are still being listed, a page at a time: the rows shown are those of
    /// the pages answered so far, and a status is told as each next page is (`listed` grown).
    pub listing: bool,
    /// How many ids a cold open has listed so far (each a row, being fetched until its files are in).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub listed: u64,
    /// A cold mirror's first fetch under way: how many of the `to_fetch` sessions it fetches
    /// are in (told after each chunk); both 0 when none is.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub fetched: u64,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub to_fetch: u64,
    /// Grows with each status told, of any cloud workspace of this process: of two statuses of
    /// one target (a reply and an event sent at about the same time), the higher is the newer.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub revision: u64,
}

/// The revision of the next status (`CloudStatus::revision`).
static NEXT_REVISION: AtomicU64 = AtomicU64::new(1);

/// Where the poller left the status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Refreshed {
    error: Option<String>,
    checking: bool,
    listing: bool,
    listed: u64,
    fetched: u64,
    to_fetch: u64,
    revision: u64,
}

/// Told each time a cloud workspace's status changes (the first refresh of an open is done, a
/// refresh failed, or one succeeded after one failed), from the poller's thread.
pub type StatusSink = Box<dyn Fn(CloudStatus) + Send + 'static>;

/// An open cloud workspace: its mirror and the poller that keeps it current.
pub struct CloudWorkspace {
    /// Taken out only when dropped (off any async runtime: the mirror owns one).
    mirror: Option<Arc<Mirror>>,
    /// The status but for what the refreshes change (the source as given).
    named: CloudStatus,
    refreshed: Arc<Mutex<Refreshed>>,
    /// Wakes the poller (a refresh now); dropped, it ends the poller.
    wake: Mutex<Option<Sender<()>>>,
    /// The first check waits for the window's first listing ([`CloudWorkspace::listed`]) after
    /// the ids' last page.
    first_check_waits: AtomicBool,
    /// A cold open's ids not fetched yet, in the prefix's order; emptied by the first refresh
    /// that succeeds.
    fetching: Arc<Mutex<Vec<SessionId>>>,
}

impl CloudWorkspace {
    /// Opens the mirror of `source` and starts its poller, which tells `on_status` each time the
    /// status changes. A warm mirror (one that holds an earlier listing) is opened as it is; of a
    /// cold one the poller lists the prefix's ids a page at a time, and the open returns with the
    /// first page's (an error there, such as access refused, is the caller's), each later page's
    /// told as it is answered (`CloudStatus::listing`, `listed`). Either is refreshed by the
    /// poller once listed ([`CloudWorkspace::listed`]; a cold one once its last page is), a
    /// failure then the status's error.
    pub fn open(source: &Source, options: MirrorOptions, on_status: StatusSink) -> Result<Arc<CloudWorkspace>, Error> {
        let (mirror, cold) = off_runtime(|| {
            let mirror = Mirror::open(source, options)?;
            let cold = !mirror.holds_listing()?;
            Ok::<_, Error>((mirror, cold))
        })?;
        let mirror = Arc::new(mirror);
        let named = CloudStatus {
            url: source.to_string(),
            endpoint: source.endpoint.clone(),
            profile: source.profile.clone(),
            target: source.target(),
            error: None,
            checking: false,
            listing: false,
            listed: 0,
            fetched: 0,
            to_fetch: 0,
            revision: 0,
        };
        let (wake, woken) = mpsc::channel::<()>();
        let refreshed = Arc::new(Mutex::new(Refreshed {
            checking: true,
            listing: cold,
            revision: NEXT_REVISION.fetch_add(1, Ordering::Relaxed),
            ..Refreshed::default()
        }));
        let poller = Poller {
            mirror: Arc::clone(&mirror),
            said: Arc::clone(&refreshed),
            told: named.clone(),
            on_status,
            woken,
            fetching: Arc::new(Mutex::new(Vec::new())),
        };
        let fetching = Arc::clone(&poller.fetching);
        let (first_page, first_page_in) = mpsc::sync_channel::<Result<(), Error>>(1);
        std::thread::Builder::new()
            .name("cloud-poller".into())
            .spawn(move || poller.run(cold.then_some(first_page)))
            .map_err(|e| Error::io_spawn("the cloud workspace's poller", e))?;
        if cold {
            let first = first_page_in
                .recv()
                .unwrap_or_else(|_| Err(source.error("", "the cloud workspace's poller ended before the first page")));
            match first {
                Ok(()) => {}
                // A first fill cut short, and the bucket out of reach: the sessions it fetched,
                // as a warm mirror's are shown (the poller's refresh says why).
                Err(_) if mirror.holds_any() => {}
                Err(error) => return Err(error),
            }
        }
        Ok(Arc::new(CloudWorkspace {
            mirror: Some(mirror),
            named,
            refreshed,
            wake: Mutex::new(Some(wake)),
            first_check_waits: AtomicBool::new(true),
            fetching,
        }))
    }

    fn mirror(&self) -> &Mirror {
        self.mirror.as_ref().expect("the mirror is taken out only when dropped")
    }

    /// The mirror's folder, opened as the workspace.
    pub fn workspace_root(&self) -> PathBuf {
        self.mirror().workspace_root()
    }

    pub fn source(&self) -> &Source {
        self.mirror().source()
    }

    pub fn status(&self) -> CloudStatus {
        lock(&self.refreshed).status_of(&self.named)
    }

    /// The ids of a cold open's sessions that are not in `listed` (the mirror's listing), while
    /// its first refresh has not fetched them: the window shows them as rows being fetched.
    pub fn fetching(&self, listed: &std::collections::HashSet<&str>) -> Vec<SessionId> {
        lock(&self.fetching)
            .iter()
            .filter(|id| !listed.contains(id.as_str()))
            .cloned()
            .collect()
    }

    /// Session `id` is being opened (read, shown, exported, compared, imported): recorded as
    /// such (the cache's bound keeps the sessions used most recently: `Mirror::record_opened`),
    /// and fetched now when it is a cold open's row not fetched yet (opened before the first
    /// refresh came to it; `Mirror::fetch_now`).
    pub fn open_session(&self, id: &SessionId) -> Result<(), Error> {
        self.mirror().record_opened(id, SystemTime::now());
        if lock(&self.fetching).contains(id) {
            off_runtime(|| self.mirror().fetch_now(id, SystemTime::now()))?;
        }
        Ok(())
    }

    /// The mirror's sessions were listed: the first check starts now, once the rows are
    /// in hand rather than beside their listing (on two cores the check's requests and the
    /// bucket's answers slowed the listing by a third at 1,000 sessions). While a cold open's ids
    /// are still being listed, it waits for the listing after the last page's.
    pub fn listed(&self) {
        if lock(&self.refreshed).listing {
            return;
        }
        if self.first_check_waits.swap(false, Ordering::SeqCst) {
            self.refresh_soon();
        }
    }

    /// Asks the poller for a refresh now (the window gained focus).
    pub fn refresh_soon(&self) {
        if let Some(wake) = &*lock(&self.wake) {
            let _ = wake.send(());
        }
    }

    /// The error a write command `method` gets: the source is read-only.
    pub fn read_only_error(&self, method: &str) -> Error {
        self.source().error(
            "",
            format!("a cloud workspace is read-only: `{method}` (run, stop, continue, delete) is refused"),
        )
    }

    /// Makes bytes `offset..offset + limit` of `path` of session `session_id` present in the
    /// mirror (fetched by range when missing): only a raw stream may be partly fetched.
    pub fn ensure_range(&self, session_id: &str, path: &str, offset: u64, limit: usize) -> Result<(), Error> {
        let id = SessionId::parse(session_id)?;
        let is_raw_stream = std::path::Path::new(path).file_name() == Some(std::ffi::OsStr::new(RAW_STREAM_FILE));
        if is_raw_stream && self.mirror().holds(&id) {
            let range = offset..offset.saturating_add(limit as u64);
            off_runtime(|| self.mirror().read_range(&id, path, range))?;
        }
        Ok(())
    }

    /// Fetches whole the session `id` names when the bucket holds it (else it is a local session
    /// or a run id, left to the caller): export and compare read sessions whole.
    pub fn fetch_whole(&self, id: &str) -> Result<(), Error> {
        if let Ok(id) = SessionId::parse(id) {
            self.open_session(&id)?;
            if self.mirror().holds(&id) {
                off_runtime(|| self.mirror().fetch_session(&id, u64::MAX))?;
            }
        }
        Ok(())
    }

    /// Copies session `id` of the bucket into the local workspace `local` and its store, as
    /// `zstudio --source URL import ID` does: fetched whole into the mirror (at most
    /// [`share::DEFAULT_MAX_BYTES`]), then imported from the mirror's folder (one copy, the
    /// import's; its id kept, refused when the workspace has a session of that id).
    pub fn import_into(&self, store: &Store, local: &Workspace, id: &str) -> Result<ImportedSession, Error> {
        let id = SessionId::parse(id)?;
        self.open_session(&id)?;
        let folder = off_runtime(|| self.mirror().fetch_session(&id, share::DEFAULT_MAX_BYTES))?;
        share::import(
            store,
            local,
            &folder,
            &share::ImportOptions::default(),
            SystemTime::now(),
        )
    }

    /// Stops the poller (a first fill under way after its chunk).
    pub fn close(&self) {
        lock(&self.wake).take();
        if let Some(mirror) = &self.mirror {
            mirror.stop();
        }
    }
}

impl Drop for CloudWorkspace {
    /// The mirror's runtime cannot be dropped on an async runtime's thread (the window's commands
    /// switch workspaces there): the last handle of it goes on a thread of its own then.
    fn drop(&mut self) {
        self.close();
        let mirror = self.mirror.take();
        off_runtime(move || drop(mirror));
    }
}

impl Refreshed {
    fn status_of(&self, named: &CloudStatus) -> CloudStatus {
        CloudStatus {
            error: self.error.clone(),
            checking: self.checking,
            listing: self.listing,
            listed: self.listed,
            fetched: self.fetched,
            to_fetch: self.to_fetch,
            revision: self.revision,
            ..named.clone()
        }
    }
}

/// The poller's thread: a cold open's ids page by page, then the refreshes (see the module's
/// documentation).
struct Poller {
    mirror: Arc<Mirror>,
    said: Arc<Mutex<Refreshed>>,
    /// The status but for what the poller changes.
    told: CloudStatus,
    on_status: StatusSink,
    /// Wakes the poller; disconnected once the workspace is closed.
    woken: mpsc::Receiver<()>,
    fetching: Arc<Mutex<Vec<SessionId>>>,
}

impl Poller {
    /// Lists a cold open's ids when `first_page` is given (told there once their first page is in
    /// hand, or the listing failed before it), then refreshes when woken or every
    /// [`POLL_INTERVAL`], until the workspace is closed.
    fn run(self, first_page: Option<mpsc::SyncSender<Result<(), Error>>>) {
        // The first check is asked when the window has listed the mirror (`CloudWorkspace::listed`,
        // after a cold open's last page), at the latest a POLL_INTERVAL away.
        let mut asked = false;
        if let Some(first_page) = first_page {
            match self.list_ids(first_page) {
                ControlFlow::Break(()) => return,
                ControlFlow::Continue(asked_meanwhile) => asked = asked_meanwhile,
            }
        }
        loop {
            if !asked {
                match self.woken.recv_timeout(POLL_INTERVAL) {
                    Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            let mut told_progress = |progress: FillProgress| {
                self.tell(|said| (said.fetched, said.to_fetch) = (progress.fetched as u64, progress.planned as u64))
            };
            let refreshed = self.mirror.refresh_telling(SystemTime::now(), &mut told_progress);
            let failed = refreshed.err().map(|e| e.to_string());
            match &failed {
                Some(failure) => {
                    tracing::warn!(source = %self.mirror.source(), "the cloud workspace's refresh failed: {failure}")
                }
                None => lock(&self.fetching).clear(),
            }
            // Closed meanwhile: its status is told no more (the same source may be open
            // again, its own status newer).
            let Some(asked_meanwhile) = asked_during(&self.woken) else {
                return;
            };
            asked = asked_meanwhile;
            let unchanged = {
                let said = lock(&self.said);
                said.error == failed && !said.checking && said.to_fetch == 0
            };
            if !unchanged {
                self.tell(|said| {
                    (said.error, said.checking) = (failed, false);
                    (said.fetched, said.to_fetch) = (0, 0);
                });
            }
        }
    }

    /// A cold open's ids, a page at a time into `fetching`: the first page's told to the open
    /// through `first_page`, each later one's to the window (`listed`), then the end of the
    /// listing (`listing` false; its failure the status's error, after the first page). Whether a
    /// refresh was asked meanwhile (the window gained focus); Break: the workspace was closed.
    fn list_ids(&self, first_page: mpsc::SyncSender<Result<(), Error>>) -> ControlFlow<(), bool> {
        let mut first_page = Some(first_page);
        let (mut closed, mut asked) = (false, false);
        let listed = self.mirror.list_ids_by_page(|ids, last| {
            let listed = {
                let mut fetching = lock(&self.fetching);
                fetching.extend(ids);
                fetching.len() as u64
            };
            match first_page.take() {
                Some(first_page) => {
                    let mut said = lock(&self.said);
                    (said.listed, said.listing) = (listed, !last);
                    drop(said);
                    let _ = first_page.send(Ok(()));
                }
                None => self.tell(|said| (said.listed, said.listing) = (listed, !last)),
            }
            match asked_during(&self.woken) {
                None => closed = true,
                Some(asked_now) => asked |= asked_now,
            }
            if closed {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        match (listed, first_page.take()) {
            (Ok(()), Some(first_page)) => drop(first_page.send(Ok(()))),
            // The open says it, or opens on what a fill cut short fetched (its refresh says why).
            (Err(error), Some(first_page)) => drop(first_page.send(Err(error))),
            (Ok(()), None) => {}
            (Err(error), None) => {
                tracing::warn!(source = %self.mirror.source(), "the cloud workspace's listing failed: {error}");
                self.tell(|said| (said.error, said.listing) = (Some(error.to_string()), false));
            }
        }
        let Some(asked_now) = asked_during(&self.woken).filter(|_| !closed) else {
            return ControlFlow::Break(());
        };
        // The window lists the last page's rows once told; the check waits for that listing.
        if lock(&self.said).listing {
            self.tell(|said| said.listing = false);
        }
        ControlFlow::Continue(asked || asked_now)
    }

    /// Changes the status by `change` and tells it, with the next revision; told no more once
    /// the workspace is closed (the same source may be open again, its own status newer).
    fn tell(&self, change: impl FnOnce(&mut Refreshed)) {
        if self.mirror.stopped() {
            return;
        }
        let status = {
            let mut said = lock(&self.said);
            change(&mut said);
            said.revision = NEXT_REVISION.fetch_add(1, Ordering::Relaxed);
            said.status_of(&self.told)
        };
        (self.on_status)(status);
    }
}

/// A cloud session copied into a local workspace (`Studio::cloud_import`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CloudImported {
    /// The session's id in the local workspace (the bucket's).
    pub session_id: String,
    /// The local workspace's folder it went into.
    pub workspace: String,
}

/// Whether a refresh was asked for (`wake`) while the poller was refreshing, every such ask taken;
/// `None` once the workspace is closed.
fn asked_during(woken: &mpsc::Receiver<()>) -> Option<bool> {
    let mut asked = false;
    loop {
        match woken.try_recv() {
            Ok(()) => asked = true,
            Err(TryRecvError::Empty) => return Some(asked),
            Err(TryRecvError::Disconnected) => return None,
        }
    }
}

/// The value behind `mutex`, a poisoned one too (a panic elsewhere leaves the data usable here).
/// Not `app::lock`: `app` uses this module, and a use back would be an import cycle.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `work` (which blocks on the mirror's own runtime) on a thread of its own when called on
/// an async runtime's thread (the window's async commands run there: a runtime cannot be blocked
/// on from inside another), else here.
fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|scope| match scope.spawn(work).join() {
        Ok(done) => done,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}
