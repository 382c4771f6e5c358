//! How the watcher watches: its coalescing window, which sessions get watches of their own and how
//! often the others are swept, its fallback to polling, its budget of inotify watches, its clock
//! and the store whose runs it reports.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[cfg(doc)]
use crate::sessions::change::Change;
#[cfg(doc)]
use crate::sessions::session::{SessionsFolder, RUNNING_QUIET_WINDOW};
use crate::store::index::IndexedFolder;
use crate::store::Store;
use crate::vocabulary::id::SessionId;

/// The clock the watcher reads sessions with (a session's status depends on how long it was quiet).
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

#[derive(Clone)]
pub struct WatcherOptions {
    /// A session is read again at most once per window.
    pub window: Duration,
    /// How often folders that inotify cannot watch are polled.
    pub poll_interval: Duration,
    /// Poll every workspace instead of using inotify (network filesystems; tests of the fallback).
    pub poll_only: bool,
    /// While a session is `running`, how often the watcher checks whether it went quiet for
    /// [`RUNNING_QUIET_WINDOW`] or its engine's process is gone (its status then changes with no
    /// file changing). Default: 500 ms, so a run that ended outside the studio reads ended on
    /// every surface within a second (issue 41); each check reads the running sessions again.
    pub quiet_check_interval: Duration,
    /// A session keeps watches of its own (its folder and node folders) while it is running or
    /// changed within this long; past it, it is swept instead. Default: 10 minutes.
    pub recent: Duration,
    /// Every session without watches of its own is looked at by metadata (its fingerprint) once
    /// per this bound, the looks spread evenly over it: a change to it is seen within the bound.
    /// Default: 60 s.
    pub sweep_bound: Duration,
    /// The most swept sessions looked at per second: past `sweep_bound × sweep_rate` swept
    /// sessions, the bound is their count / `sweep_rate` seconds instead. Default: 1,000 a second
    /// (a belt: at 100,000 sessions, [`WatcherOptions::sweep_budget`] is what holds the pace;
    /// see docs/benchmarks.md, "A glance, not the whole fingerprint").
    pub sweep_rate: u32,
    /// The most time the sweep's looks take per second, so that an idle watcher costs at most
    /// this share of a core however costly a look is (a look at one of 100,000 sessions costs a
    /// few times one of 1,000: the kernel's lookups of names it holds less of): a step stops
    /// there and the next goes on, and the bound grows instead. Default: 400 µs (0.04 % of a
    /// core; a step looks at one session at least).
    pub sweep_budget: Duration,
    /// A swept session's whole fingerprint is taken at one sweep in this many; at the others,
    /// a glance ([`SessionsFolder::unchanged_at_a_glance`]: the folder's own time and
    /// `.session-info.json`'s, two `fstatat`s of six or more), which sees every file created,
    /// removed or renamed in it and every run of the engine in it, but not a file rewritten in
    /// place by another hand: that is seen within this many bounds. Default: 8.
    pub sweep_whole_every: u32,
    /// The most inotify watches this watcher adds (they are the user's, shared with every other
    /// program): past it, a workspace is polled ([`Change::WatchPolling`]). Default: half of
    /// `fs.inotify.max_user_watches`.
    pub max_watches: usize,
    pub clock: Clock,
    /// The store whose runs' starts and ends are reported as changes of their sessions (a
    /// [`Change::SessionUpdated`], though the folder did not change): a run's end recorded by
    /// any process reaches the watcher within a window (`watch::recorded_runs`); and whose
    /// folder index (kept current with this watcher's changes, `store::index::keeping_current`)
    /// holds the summaries of the sessions it sweeps.
    pub store: Option<Arc<Store>>,
}

impl WatcherOptions {
    /// These options with the sweep's bound `bound` (a workspace's `[watch] sweep_bound`): a
    /// bound shorter than the one set grows the sweep's budget as much (at 2 s against the
    /// default 60 s, 30 times: 12 ms a second, so that the bound asked for holds where the looks
    /// fit in it), a longer one keeps it (fewer looks a second cost less anyway).
    pub fn with_sweep_bound(self, bound: Duration) -> WatcherOptions {
        let shorter_by = (self.sweep_bound.as_secs_f64() / bound.as_secs_f64().max(1e-3)).max(1.0);
        WatcherOptions {
            sweep_bound: bound,
            sweep_budget: self.sweep_budget.mul_f64(shorter_by),
            ..self
        }
    }
}

/// Half of the system's inotify watch limit (8,192 when it cannot be read).
fn default_max_watches() -> usize {
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(8_192);
    limit / 2
}

impl Default for WatcherOptions {
    fn default() -> WatcherOptions {
        WatcherOptions {
            window: Duration::from_millis(100),
            poll_interval: Duration::from_secs(1),
            poll_only: false,
            quiet_check_interval: Duration::from_millis(500),
            recent: Duration::from_secs(600),
            sweep_bound: Duration::from_secs(60),
            sweep_rate: 1_000,
            sweep_budget: Duration::from_micros(400),
            sweep_whole_every: 8,
            max_watches: default_max_watches(),
            clock: Arc::new(SystemTime::now),
            store: None,
        }
    }
}

impl std::fmt::Debug for WatcherOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatcherOptions")
            .field("window", &self.window)
            .field("poll_interval", &self.poll_interval)
            .field("poll_only", &self.poll_only)
            .field("quiet_check_interval", &self.quiet_check_interval)
            .field("recent", &self.recent)
            .field("sweep_bound", &self.sweep_bound)
            .field("sweep_rate", &self.sweep_rate)
            .field("sweep_budget", &self.sweep_budget)
            .field("sweep_whole_every", &self.sweep_whole_every)
            .field("max_watches", &self.max_watches)
            .field("store", &self.store.as_ref().map(|s| s.location().describe()))
            .finish_non_exhaustive()
    }
}

/// What a caller knows of a workspace's session folders when watching starts, by session: each
/// folder's fingerprint, time and whether it was running, as the store's folder index has them
/// ([`crate::store::index::indexed_folders`]). A session whose folder still has that fingerprint
/// is not read again, nor reported, by the initial scan.
pub type Seed = HashMap<SessionId, IndexedFolder>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shorter_bound_grows_the_sweeps_budget_as_much_and_a_longer_one_keeps_it() {
        let defaults = WatcherOptions::default();
        let shorter = WatcherOptions::default().with_sweep_bound(Duration::from_secs(2));
        assert_eq!(shorter.sweep_bound, Duration::from_secs(2));
        assert_eq!(shorter.sweep_budget, defaults.sweep_budget * 30);
        let longer = WatcherOptions::default().with_sweep_bound(Duration::from_secs(600));
        assert_eq!(longer.sweep_bound, Duration::from_secs(600));
        assert_eq!(longer.sweep_budget, defaults.sweep_budget);
    }
}
