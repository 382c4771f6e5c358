//! The window's sessions table a page at a time (issue 46): its first page read ahead as the
//! window starts (`first_listing`), each next one asked for as the table is scrolled, and the
//! count and total cost without making every row.
//!
//! On a next launch a page is the store's catalogue as it last saw the folders (no file read but
//! the running sessions'), the rows whose folder differs marked `checking` until the watcher,
//! seeded with the same index, read them. On a first launch (the catalogue does not hold the
//! workspace) the read-ahead makes the catalogue newest first, a chunk at a time (ids begin with
//! their creation time): the first page is served once its folders are read, and the window is
//! told after each next chunk (it reads its rows again); watching starts once every folder is in.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::app::first_listing::{SessionsPage, FILL_CHUNK, FIRST_PAGE, MAX_PAGE};
use crate::app::{lock, Studio};
use crate::sessions::session::Workspace;
use crate::store::index::NodeDetail;
use crate::vocabulary::error::Error;

impl Studio {
    /// Reads the open workspace's first page of sessions ([`FIRST_PAGE`] rows) for the window's
    /// first [`Studio::sessions_page`] call, as the window starts (see
    /// [`crate::app::first_listing`]). On a first launch it goes on making the catalogue newest
    /// first, calling `told` after each chunk read, the first page's too (the window reads its
    /// rows again). Blocks
    /// while it reads: call it off the main thread.
    pub fn read_sessions_ahead(&self, told: impl Fn()) {
        let Ok(workspace) = self.workspace() else { return };
        let root = workspace.root().to_path_buf();
        let started = std::time::Instant::now();
        let first_launch = self.cloud().is_none()
            && self
                .store()
                .and_then(|store| store.catalogue_holds(&workspace))
                .is_ok_and(|holds| !holds);
        if first_launch && self.first_listing.begin(root.clone()) {
            self.fill_catalogue(&workspace, root, told);
        } else {
            self.first_listing
                .read_ahead(root, || self.first_rows(&workspace, SystemTime::now(), (0, FIRST_PAGE)));
        }
        tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, "sessions read ahead");
    }

    /// A first launch's catalogue, made newest first: the first page served once read, `told`
    /// after each chunk and at the end.
    fn fill_catalogue(&self, workspace: &Workspace, root: PathBuf, told: impl Fn()) {
        let mut served = false;
        let filled = self.store().and_then(|store| {
            let sizes = (FIRST_PAGE, FILL_CHUNK);
            store.fill_catalogue(workspace, SystemTime::now(), sizes, |total| {
                self.filling.set(Some(total));
                if !served {
                    let page = self.recorded_page(workspace, (0, FIRST_PAGE), total);
                    self.first_listing.finish(&root, page);
                    served = true;
                }
                told();
            })
        });
        self.filling.set(None);
        match (served, filled) {
            (false, result) => self.first_listing.finish(
                &root,
                result.and_then(|()| self.first_rows(workspace, SystemTime::now(), (0, FIRST_PAGE))),
            ),
            (true, Err(error)) => tracing::warn!(%error, "the catalogue was not made whole"),
            (true, Ok(())) => told(),
        }
    }

    /// A page of the window's table, `limit` rows from `offset` (at most [`MAX_PAGE`]), in the
    /// listing's order, with how many sessions there are. Its first page is the one read ahead
    /// ([`Studio::read_sessions_ahead`]); while a watcher runs (or a first launch makes the
    /// catalogue), each is the catalogue as recorded (the watcher reconciles it and tells the
    /// window); with no watcher (a studio server, before watching started), the catalogue's page
    /// checked against its folders (`store::catalogue`). A cloud workspace's rows being fetched
    /// are not in the catalogue: its full listing, cut (the first listing served, not read ahead).
    pub(crate) fn window_page(&self, offset: usize, limit: usize) -> Result<SessionsPage, Error> {
        let (workspace, limit, now) = (self.workspace()?, limit.min(MAX_PAGE), SystemTime::now());
        if self.cloud().is_some() {
            // The window's first listing all the same: watching starts after it, and only the
            // watcher tells the window of the rows the poller fetches behind it.
            self.first_listing.served();
            let listing = self.sessions(now)?;
            let total = listing.sessions.len();
            let sessions = listing.sessions.into_iter().skip(offset).take(limit).collect();
            return Ok(SessionsPage {
                sessions,
                offset,
                total,
                checking: Vec::new(),
            });
        }
        let page = |(offset, limit)| {
            if let Some(total) = self.filling.total() {
                return self.recorded_page(&workspace, (offset, limit), total);
            }
            if lock(&self.watcher).is_some() {
                return self.first_rows(&workspace, now, (offset, limit));
            }
            let store = self.store()?;
            let sessions = store.sessions_page(&workspace, now, NodeDetail::TotalsOnly, offset, limit)?;
            Ok(SessionsPage {
                sessions,
                offset,
                total: store.catalogue_len(&workspace)?,
                checking: Vec::new(),
            })
        };
        if offset == 0 && limit <= FIRST_PAGE {
            let mut first = self
                .first_listing
                .serve(&workspace.root().to_path_buf(), || page((0, FIRST_PAGE)))?;
            first.sessions.truncate(limit);
            return Ok(first);
        }
        page((offset, limit))
    }

    /// The window's rows from `offset`, at most `limit`: its first page, read ahead, and each
    /// while its watcher runs. On a next launch (the store's catalogue holds the workspace), the
    /// catalogue as the store last saw the folders, no file read but the running sessions', the
    /// rows whose folder differs marked `checking`: the watcher, started from the same folder
    /// index, reads what differs behind it and tells the window ([`Studio::watch`]). With no
    /// catalogue (a workspace opened after the window started), every folder read first.
    pub(crate) fn first_rows(
        &self,
        workspace: &Workspace,
        now: SystemTime,
        (offset, limit): (usize, usize),
    ) -> Result<SessionsPage, Error> {
        let store = self.store()?;
        if !store.catalogue_holds(workspace)? {
            store.list_sessions_as(workspace, now, NodeDetail::TotalsOnly)?;
        }
        self.recorded_page(workspace, (offset, limit), store.catalogue_len(workspace)?)
    }

    /// The catalogue's page as recorded, saying there are `total` sessions.
    fn recorded_page(
        &self,
        workspace: &Workspace,
        (offset, limit): (usize, usize),
        total: usize,
    ) -> Result<SessionsPage, Error> {
        // A page's folders are looked at for its "checking" marks; the whole listing's are not.
        let look = limit <= MAX_PAGE;
        let page = self.store()?.sessions_as_recorded(
            workspace,
            SystemTime::now(),
            NodeDetail::TotalsOnly,
            (offset, limit),
            look,
        )?;
        Ok(SessionsPage {
            sessions: page.rows,
            offset,
            total,
            checking: page.checking,
        })
    }

    /// Whether the read-ahead (or the window's first page) has begun: a page asked for from
    /// then on waits for the read-ahead rather than reading on its own.
    pub fn read_ahead_begun(&self) -> bool {
        self.first_listing.begun()
    }

    /// Waits until the window's first listing was served, at most `timeout`: watching starts
    /// after it, so that it does not slow the first listing down.
    pub fn wait_first_listing(&self, timeout: Duration) -> bool {
        self.first_listing.wait_served(timeout)
    }
}
