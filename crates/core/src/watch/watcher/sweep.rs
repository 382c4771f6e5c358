//! Which sessions have watches of their own, and the sweep that looks at every other one.
//!
//! A session is *watched* (its folder and node folders, as `layout` says, and its followed files
//! tailed) while it is `running` or changed within [`WatcherOptions::recent`]: at start, by its
//! files' newest time (its summary's `updated_at`); after, by when the watcher last read it after
//! a change. Once it is neither, its watches and tails are released and it is *swept*: looked
//! at again once per [`WatcherOptions::sweep_bound`] (metadata alone: at a glance, the folder's own
//! time and `.session-info.json`'s; at one pass in [`WatcherOptions::sweep_whole_every`], a hash
//! of its id says which, its whole fingerprint), a slice of the sessions at each
//! step so that the looks are spread evenly over the bound, and never more than
//! [`WatcherOptions::sweep_rate`] sessions a second, nor for longer than
//! [`WatcherOptions::sweep_budget`] a second (past either, the bound grows with the sessions, and
//! the sweep's cost does not). A swept session whose fingerprint changed is read and reported
//! like any other, and watched again.

use std::collections::HashSet;
use std::ops::Bound;
use std::time::{Duration, Instant};

#[cfg(doc)]
use super::options::WatcherOptions;
use super::reading::tails_from_end;
use super::state::{mark_pending, KnownSession, SessionKey, WatchLoop};
use crate::sessions::session::{SessionsFolder, Timestamp};
use crate::vocabulary::id::SessionId;

/// The sweep takes this many steps per bound (fewer when a step would come sooner than
/// [`SHORTEST_SWEEP_STEP`]): at the default bound, one step a second.
const SWEEP_STEPS: u32 = 60;

/// The shortest time between two steps of the sweep.
const SHORTEST_SWEEP_STEP: Duration = Duration::from_millis(50);

impl WatchLoop {
    /// Whether a session known as `known` at start gets watches of its own: running, or changed
    /// within [`WatcherOptions::recent`].
    pub(super) fn is_recent(&self, known: &KnownSession) -> bool {
        let now = Timestamp::from_system_time((self.options.clock)());
        known.quiet_for(now).is_none_or(|quiet| quiet < self.options.recent)
    }

    /// After the initial scan, before anything is watched: the sessions of a workspace that are
    /// running or changed recently are the watched ones, each as if it had been seen to change
    /// when its files last did, and their followed files are tailed from their end (what is there
    /// is not news).
    pub(super) fn mark_recent_watched(&mut self, index: usize) {
        let now = Instant::now();
        let clock_now = Timestamp::from_system_time((self.options.clock)());
        let recent: Vec<(SessionKey, Instant)> = self.workspaces[index]
            .sessions
            .iter()
            .filter(|(_, known)| self.is_recent(known))
            .map(|(id, known)| {
                let quiet = known.quiet_for(clock_now).unwrap_or_default();
                ((index, id.clone()), now.checked_sub(quiet).unwrap_or(now))
            })
            .collect();
        let workspace = &mut self.workspaces[index];
        // The swept ones' summaries are not held (an initial scan without a seed read them all).
        let watched: HashSet<&SessionId> = recent.iter().map(|((_, id), _)| id).collect();
        for (_, known) in workspace.sessions.iter_mut().filter(|(id, _)| !watched.contains(id)) {
            known.summary = None;
        }
        for ((_, id), _) in &recent {
            if let Some(known) = workspace.sessions.get_mut(id) {
                known.tails = tails_from_end(&workspace.sessions_dir.join(id.as_str()));
            }
        }
        self.watched.extend(recent);
    }

    /// A session read after a change: watched from now on. One that was swept has its followed
    /// files tailed from their end first (what they hold is in its summary; what is appended from
    /// now on is sent), then its folders watched.
    pub(super) fn keep_watched(&mut self, index: usize, id: &SessionId) {
        let key = (index, id.clone());
        if self.watched.insert(key, Instant::now()).is_none() {
            let workspace = &mut self.workspaces[index];
            let dir = workspace.sessions_dir.join(id.as_str());
            if let Some(known) = workspace.sessions.get_mut(id) {
                known.tails = tails_from_end(&dir);
            }
        }
        self.watch_session(index, id);
    }

    /// The ids of a workspace's watched sessions.
    pub(super) fn watched_ids(&self, index: usize) -> HashSet<&SessionId> {
        self.watched
            .keys()
            .filter(|(of, _)| *of == index)
            .map(|(_, id)| id)
            .collect()
    }

    /// A session gone: neither watched nor swept.
    pub(super) fn forget_watched(&mut self, index: usize, id: &SessionId) {
        self.watched.remove(&(index, id.clone()));
        self.unwatch_session(index, id);
    }

    /// How long between two steps of the sweep, how many steps make a bound, and the most
    /// sessions a step looks at ([`WatcherOptions::sweep_rate`]).
    pub(super) fn sweep_step(&self) -> (Duration, u32, usize) {
        let bound = self.options.sweep_bound.max(SHORTEST_SWEEP_STEP);
        let step = (bound / SWEEP_STEPS).max(SHORTEST_SWEEP_STEP);
        let steps = (bound.as_nanos() / step.as_nanos()).clamp(1, u128::from(SWEEP_STEPS)) as u32;
        let most = (f64::from(self.options.sweep_rate) * step.as_secs_f64())
            .ceil()
            .max(1.0) as usize;
        (step, steps, most)
    }

    /// When the sweep's next step is due: only while some session is known.
    pub(super) fn sweep_due_at(&self) -> Option<Instant> {
        self.workspaces
            .iter()
            .any(|w| !w.sessions.is_empty())
            .then_some(self.next_sweep)
    }

    /// A step of the sweep, when due: the watched sessions gone quiet are released, and a slice of
    /// each workspace's swept sessions looked at (those whose fingerprint changed are read).
    pub(super) fn check_sweep(&mut self) {
        let now = Instant::now();
        if self.sweep_due_at().is_none_or(|at| now < at) {
            return;
        }
        let (step, steps, most) = self.sweep_step();
        self.next_sweep = now + step;
        self.release_quiet_sessions(now);
        // The step's share of the budget, for every workspace's looks together.
        let until = now + self.options.sweep_budget.mul_f64(step.as_secs_f64());
        for index in 0..self.workspaces.len() {
            // A polled workspace's sessions are all looked at by the poll.
            if !self.workspaces[index].polling {
                self.sweep_slice(index, (steps, most), until, now);
            }
        }
    }

    /// The watched sessions neither running nor changed within [`WatcherOptions::recent`] (nor
    /// due to be read) lose their watches and tails: they are swept from now on.
    fn release_quiet_sessions(&mut self, now: Instant) {
        let recent = self.options.recent;
        let quiet: Vec<SessionKey> = self
            .watched
            .iter()
            .filter(|(key, changed)| {
                now.saturating_duration_since(**changed) >= recent
                    && !self.running.contains(*key)
                    && !self.pending.contains_key(*key)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for (index, id) in quiet {
            self.forget_watched(index, &id);
            if let Some(known) = self.workspaces[index].sessions.get_mut(&id) {
                known.tails = Default::default();
                known.summary = None;
            }
        }
    }

    /// Looks at the next `1/steps` of a workspace's sessions, at most `most`, and none once
    /// `until` has passed but the first (going on where the last step stopped): each swept one
    /// whose fingerprint changed is marked to be read.
    fn sweep_slice(&mut self, index: usize, (steps, most): (u32, usize), until: Instant, now: Instant) {
        let watched: HashSet<&SessionId> = self
            .watched
            .keys()
            .filter(|(of, _)| *of == index)
            .map(|(_, id)| id)
            .collect();
        let workspace = &mut self.workspaces[index];
        let looks = &mut self.sweep_looks;
        // Gone or moved: the sessions folder's own watch tells (the next step looks again).
        let Ok(folder) = SessionsFolder::open(&workspace.sessions_dir) else {
            return;
        };
        let count = workspace.sessions.len().div_ceil(steps as usize).min(most);
        let full_every = self.options.sweep_whole_every.max(1);
        let full_turn = workspace.sweep_passes % u64::from(full_every);
        let after = match &workspace.sweep_cursor {
            Some(id) => Bound::Excluded(id),
            None => Bound::Unbounded,
        };
        let mut changed = Vec::new();
        let mut last = None;
        for (id, known) in workspace.sessions.range((after, Bound::Unbounded)).take(count) {
            last = Some(id);
            if watched.contains(id) {
                continue;
            }
            let whole = full_turn == turn_of(id, full_every);
            let unchanged = match &known.fingerprint {
                Some(print) if !whole => {
                    looks.glances += 1;
                    folder.unchanged_at_a_glance(id.as_str(), print)
                }
                print => {
                    looks.whole += 1;
                    folder.fingerprint(id.as_str(), print.as_deref()) == *print
                }
            };
            if !unchanged {
                changed.push(id.clone());
            }
            if Instant::now() >= until {
                break;
            }
        }
        // The end of the sessions reached: the next step starts again from the first.
        let at_end = last.is_none_or(|id| {
            workspace
                .sessions
                .range((Bound::Excluded(id), Bound::Unbounded))
                .next()
                .is_none()
        });
        workspace.sweep_cursor = if at_end { None } else { last.cloned() };
        workspace.sweep_passes += u64::from(at_end);
        for id in changed {
            mark_pending(&mut self.pending, (index, id), None, now);
        }
    }
}

/// Which of `every` passes of the sweep takes session `id`'s whole fingerprint: the same pass
/// for the same id (a hash of it), the sessions spread evenly over the passes.
fn turn_of(id: &SessionId, every: u32) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(id.as_str()) % u64::from(every)
}
