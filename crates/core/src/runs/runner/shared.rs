//! What the supervisor and its runs' threads share: the store, the live runs, the subscribers
//! (and how events reach them), and the search indexer that follows the runs' output.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::events::RunEvent;
use super::live_run::LiveRun;
use super::request::Keeper;
use super::subscription::EventSender;
use crate::store::Store;

pub(super) struct Shared {
    pub(super) store: Arc<Store>,
    pub(super) keeper: Option<Keeper>,
    pub(super) shutting_down: AtomicBool,
    pub(super) live: Mutex<HashMap<String, Arc<LiveRun>>>,
    pub(super) subscribers: Mutex<Vec<Subscriber>>,
    pub(super) threads: Mutex<Vec<JoinHandle<()>>>,
    pub(super) indexer: Mutex<Option<JoinHandle<()>>>,
    /// Wakes the search indexer: output was stored, or the supervisor shuts down.
    pub(super) index_wanted: Nudge,
    /// Variables of the studio's own environment the agents do not get.
    pub(super) hidden_variables: Mutex<Vec<String>>,
}

impl Shared {
    /// The state of a supervisor with no run yet, its search indexer started.
    pub(super) fn start(store: Arc<Store>, keeper: Option<Keeper>) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            store,
            keeper,
            shutting_down: AtomicBool::new(false),
            live: Mutex::new(HashMap::new()),
            subscribers: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            indexer: Mutex::new(None),
            index_wanted: Nudge::default(),
            hidden_variables: Mutex::new(Vec::new()),
        });
        let indexer = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("search-indexer".into())
            .spawn(move || index_behind(&indexer));
        match spawned {
            Ok(thread) => *shared.indexer.lock().expect("indexer lock") = Some(thread),
            Err(error) => tracing::error!(%error, "cannot start the search indexer; search indexes when it is used"),
        }
        shared
    }

    /// Whether a subscriber hears output lines (else they are not made into events).
    pub(super) fn wants_output(&self) -> bool {
        self.subscribers
            .lock()
            .expect("subscribers lock")
            .iter()
            .any(|subscriber| subscriber.output)
    }

    pub(super) fn publish(&self, event: RunEvent) {
        self.publish_all(std::iter::once(event));
    }

    /// Sends each event to every subscriber, in order, under one lock: a burst of events wakes a
    /// waiting subscriber once rather than once per event.
    pub(super) fn publish_all(&self, events: impl Iterator<Item = RunEvent>) {
        let mut subscribers = self.subscribers.lock().expect("subscribers lock");
        if subscribers.is_empty() {
            return;
        }
        let mut gone = vec![false; subscribers.len()];
        for event in events {
            let mut event = Some(event);
            let is_output = matches!(event, Some(RunEvent::Output { .. }));
            let last = subscribers.len() - 1;
            for (i, subscriber) in subscribers.iter().enumerate() {
                if gone[i] || (is_output && !subscriber.output) {
                    continue;
                }
                let sent = if i == last { event.take() } else { event.clone() };
                let Some(sent) = sent else { continue };
                if subscriber.lossless {
                    // Waits for the subscriber: its run waits, and so does the agent's next write.
                    if !subscriber.sender.send(sent) {
                        gone[i] = true;
                    }
                    continue;
                }
                match subscriber.sender.try_send(sent).map_err(|unsent| *unsent) {
                    Ok(()) => {}
                    Err(mpsc::TrySendError::Full(dropped)) => {
                        tracing::warn!(
                            run_id = dropped.run_id(),
                            "a subscriber is behind; an event was dropped"
                        );
                    }
                    Err(mpsc::TrySendError::Disconnected(_)) => gone[i] = true,
                }
            }
        }
        let mut index = 0;
        subscribers.retain(|_| {
            index += 1;
            !gone[index - 1]
        });
    }
}

pub(super) struct Subscriber {
    pub(super) sender: EventSender,
    /// Waits rather than drops when the subscriber is behind (`Supervisor::subscribe_lossless`).
    pub(super) lossless: bool,
    /// Hears output lines (`Supervisor::subscribe_to_nodes` does not).
    pub(super) output: bool,
}

/// A wake-up call that is kept until it is heard (a nudge while nobody waits is not lost).
#[derive(Default)]
pub(super) struct Nudge {
    given: Mutex<bool>,
    heard: Condvar,
}

impl Nudge {
    pub(super) fn nudge(&self) {
        *self.given.lock().expect("nudge lock") = true;
        self.heard.notify_one();
    }

    /// Blocks until nudged (at once if nudged since the last wait).
    fn wait(&self) {
        let mut given = self.given.lock().expect("nudge lock");
        while !*given {
            given = self.heard.wait(given).expect("nudge lock");
        }
        *given = false;
    }
}

/// Indexes stored output behind the runs, a few blocks at a time with a pause between, so that
/// a run's writes never wait long for it and a flood keeps the CPU for itself (the index
/// catches up afterwards; a search catches it up at once). With nothing left to index it sleeps
/// until a run stores output (an idle studio wakes for nothing).
fn index_behind(shared: &Shared) {
    while !shared.shutting_down.load(Ordering::SeqCst) {
        match shared.store.index_pending(4) {
            Ok(0) => shared.index_wanted.wait(),
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => {
                tracing::error!(%error, "search indexing failed; it is retried");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}
