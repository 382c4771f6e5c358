//! The window's first listing, read ahead (and the types of its pages, `app::pages`): the app
//! starts reading the workspace's sessions as it opens, while the web view starts (about half a
//! second), and the window's first `sessions_page` call takes what was read instead of reading
//! again. Only that first call: every later one
//! reads anew. The watcher, started once the first listing is served, starts from the folder
//! index that listing left (each folder is read once at start-up) and tells the window only of
//! what changed in between. On a next launch the first listing is the store's catalogue as it
//! last saw the folders (`Studio::first_rows`: no folder read), which the watcher, seeded with
//! the same index, reconciles behind the first screen.

use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::store::SessionRow;
use crate::vocabulary::error::Error;

enum State<T> {
    /// Nobody read ahead.
    NotRead,
    /// Being read ahead, for this workspace.
    Reading(PathBuf),
    /// Read ahead for this workspace, not served yet.
    Read(PathBuf, Result<T, Error>),
    /// The first listing was served (read ahead or not): every listing reads anew.
    Served,
}

/// The first listing (`T`: what the window's first call is answered with) of a workspace.
pub struct FirstListing<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Default for FirstListing<T> {
    fn default() -> FirstListing<T> {
        FirstListing {
            state: Mutex::new(State::NotRead),
            changed: Condvar::new(),
        }
    }
}

impl<T> FirstListing<T> {
    fn state(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the first listing of `root` ahead with `read`, unless it was served already.
    pub fn read_ahead(&self, root: PathBuf, read: impl FnOnce() -> Result<T, Error>) {
        if self.begin(root.clone()) {
            self.finish(&root, read());
        }
    }

    /// Starts reading the first listing of `root` ahead, unless it was served already (false):
    /// a `serve` for `root` waits for its [`FirstListing::finish`] from now on.
    pub fn begin(&self, root: PathBuf) -> bool {
        let mut state = self.state();
        if !matches!(*state, State::NotRead) {
            return false;
        }
        *state = State::Reading(root);
        true
    }

    /// Whether the first listing was begun (read ahead, being read, or served).
    pub fn begun(&self) -> bool {
        !matches!(*self.state(), State::NotRead)
    }

    /// The first listing of `root` read ahead (after [`FirstListing::begin`]).
    pub fn finish(&self, root: &PathBuf, rows: Result<T, Error>) {
        let mut state = self.state();
        if matches!(&*state, State::Reading(reading) if reading == root) {
            *state = State::Read(root.clone(), rows);
        }
        self.changed.notify_all();
    }

    /// The listing of `root`, for the caller to serve: the one read ahead if it is `root`'s (waited
    /// for while it is being read), else `read`'s. Every call after the first reads anew.
    pub fn serve(&self, root: &PathBuf, read: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        let mut state = self.state();
        while matches!(&*state, State::Reading(reading) if reading == root) {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        let ahead = std::mem::replace(&mut *state, State::Served);
        self.changed.notify_all();
        drop(state);
        match ahead {
            State::Read(read_for, rows) if read_for == *root => rows,
            _ => read(),
        }
    }

    /// The first listing was served otherwise (a listing read ahead would not do): every listing
    /// reads anew from now on.
    pub fn served(&self) {
        *self.state() = State::Served;
        self.changed.notify_all();
    }

    /// Waits until the first listing was served, at most `timeout`; true if it was.
    pub fn wait_served(&self, timeout: Duration) -> bool {
        let state = self.state();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |state| !matches!(state, State::Served))
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        matches!(*state, State::Served)
    }
}

/// The rows of the window's first page, read ahead as the window starts.
pub const FIRST_PAGE: usize = 200;

/// The most rows one page of the window's table holds.
pub const MAX_PAGE: usize = 5_000;

/// How many folders a first launch reads between two notices to the window.
pub(crate) const FILL_CHUNK: usize = 5_000;

/// A page of the sessions as the window's table asks for them (`Studio::sessions_page`):
/// `sessions` are the listing's rows from `offset`, in its order (pinned first, then most
/// recently updated).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SessionsPage {
    pub sessions: Vec<SessionRow>,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub offset: usize,
    /// How many sessions the listing holds in all (on a first launch, the folders found, some
    /// still being read).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub total: usize,
    /// The ids of the page's rows shown as the store last saw them while their folder, which
    /// differs, is read again (the window marks them "checking").
    pub checking: Vec<String>,
}

/// A first launch's catalogue being made: how many folders it will hold, while it is.
#[derive(Default)]
pub(crate) struct Filling {
    total: Mutex<Option<usize>>,
    done: Condvar,
}

impl Filling {
    fn held(&self) -> std::sync::MutexGuard<'_, Option<usize>> {
        self.total.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn set(&self, total: Option<usize>) {
        *self.held() = total;
        self.done.notify_all();
    }

    pub(crate) fn total(&self) -> Option<usize> {
        *self.held()
    }

    /// Waits until no catalogue is being made.
    pub(crate) fn wait_done(&self) {
        let total = self.held();
        drop(
            self.done
                .wait_while(total, |total| total.is_some())
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn rows(n: usize) -> Result<Vec<SessionRow>, Error> {
        Ok(Vec::with_capacity(n))
    }

    #[test]
    fn the_first_listing_is_the_one_read_ahead_and_the_next_ones_read_anew() {
        let listing = FirstListing::<Vec<SessionRow>>::default();
        let root = PathBuf::from("/w");
        listing.read_ahead(root.clone(), || Ok(Vec::with_capacity(7)));
        let first = listing.serve(&root, || panic!("the first listing was read ahead"));
        assert_eq!(first.unwrap().capacity(), 7);
        let mut read = false;
        listing
            .serve(&root, || {
                read = true;
                rows(0)
            })
            .unwrap();
        assert!(read, "the second listing reads anew");
        assert!(listing.wait_served(Duration::ZERO));
    }

    #[test]
    fn a_listing_asked_while_read_ahead_waits_for_it_and_another_workspace_reads_its_own() {
        let listing = Arc::new(FirstListing::<Vec<SessionRow>>::default());
        let root = PathBuf::from("/w");
        let (started_tx, started) = std::sync::mpsc::channel();
        let reading = {
            let listing = listing.clone();
            let root = root.clone();
            std::thread::spawn(move || {
                listing.read_ahead(root, || {
                    started_tx.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                    Ok(Vec::with_capacity(3))
                })
            })
        };
        started.recv().unwrap();
        assert!(!listing.wait_served(Duration::from_millis(10)));
        let served = listing.serve(&root, || panic!("waits for the read ahead"));
        assert_eq!(served.unwrap().capacity(), 3);
        reading.join().unwrap();

        let other = FirstListing::<Vec<SessionRow>>::default();
        other.read_ahead(PathBuf::from("/a"), || Ok(Vec::with_capacity(5)));
        let served = other.serve(&PathBuf::from("/b"), || rows(1)).unwrap();
        assert_eq!(served.capacity(), 1, "read for its own workspace");
        // Read ahead after the first listing was served: nothing is kept for later.
        other.read_ahead(PathBuf::from("/b"), || panic!("not read after the first listing"));
    }
}
