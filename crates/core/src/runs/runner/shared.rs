//! What the supervisor and its runs' threads share: the store, the live runs, the subscribers
//! (and how events reach them), and the search indexer that follows the runs' output.

use std::cell::Cell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::events::RunEvent;
use super::live_run::LiveRun;
use super::request::Keeper;
use super::subscription::{taken_place, EventSender, Heard, Queued};
use crate::store::Store;
use crate::vocabulary::said::SaidAtMostEvery;

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
            .any(|subscriber| subscriber.hears(OUTPUT))
    }

    pub(super) fn publish(&self, event: RunEvent) {
        self.publish_all(&mut vec![event]);
    }

    /// Sends each event to every subscriber that hears it, in order, under one lock: a burst of
    /// events wakes a waiting subscriber once rather than once per event. The events of a kind
    /// that several subscribers hear are moved into one burst, shared by them, not copied for
    /// each, and those a subscriber hears in a row reach it as one item of its queue
    /// ([`Heard`]); a subscriber alone hears a publication's events as one item (an item an
    /// event cost a run followed by `zstudio run` alone a tenth of its CPU). `events` is left
    /// empty, its room kept.
    pub(super) fn publish_all(&self, events: &mut Vec<RunEvent>) {
        let mut subscribers = self.subscribers.lock().expect("subscribers lock");
        if subscribers.is_empty() {
            events.clear();
            return;
        }
        let mut gone = vec![false; subscribers.len()];
        let mut deliver = |i: usize, subscriber: &Subscriber, heard: Heard| {
            if gone[i] {
                return;
            }
            if subscriber.lossless {
                // Waits for the subscriber: its run waits, and so does the agent's next write.
                gone[i] = !subscriber.sender.send(heard);
                return;
            }
            match subscriber.sender.try_send(heard) {
                Queued::All => {}
                Queued::Lost(lost) => {
                    let mut said = subscriber.losses_said.get();
                    if let Some(since) = said.due(Instant::now(), subscriber.sender.lost()) {
                        tracing::warn!(
                            run_id = lost[0].run_id(),
                            lost = since,
                            "a subscriber is behind; events were dropped (said at most every {} s)",
                            said.every().as_secs()
                        );
                    }
                    subscriber.losses_said.set(said);
                }
                Queued::Gone => gone[i] = true,
            }
        };
        if let [subscriber] = subscribers.as_slice() {
            // Alone, it hears the events it hears as one item, which nobody else holds: read
            // an event at a time, each is taken, not copied.
            let heard: Vec<RunEvent> = events
                .drain(..)
                .filter(|event| subscriber.hears(kind_of(event)))
                .collect();
            if !heard.is_empty() {
                deliver(0, subscriber, Heard::all(heard));
            }
        } else {
            let bursts = Bursts::of(
                events,
                [OUTPUT, OTHER].map(|kind| subscribers.iter().any(|s| s.hears(kind))),
            );
            // Every item made before any is delivered: a reader then shares a burst only with
            // the items that hold it, never with this publication (an event of a burst nobody
            // else holds is taken, not copied, when read an event at a time).
            let mut items = Vec::new();
            for (i, subscriber) in subscribers.iter().enumerate() {
                bursts.each_heard_by(subscriber, |heard| items.push((i, heard)));
            }
            drop(bursts);
            for (i, heard) in items {
                deliver(i, &subscribers[i], heard);
            }
            events.clear();
        }
        let mut index = 0;
        subscribers.retain(|_| {
            index += 1;
            !gone[index - 1]
        });
    }
}

/// An event's kind: an output line, or any other event (a subscriber hears the others, and the
/// lines if it asked for them).
const OUTPUT: usize = 0;
const OTHER: usize = 1;

fn kind_of(event: &RunEvent) -> usize {
    if matches!(event, RunEvent::Output { .. }) {
        OUTPUT
    } else {
        OTHER
    }
}

/// One publication's events of each kind a subscriber hears, moved into a burst of their own,
/// shared by the subscribers that hear them (a burst holds only events of one kind, so a
/// subscriber holds alive no event it does not hear).
struct Bursts {
    /// Each kind's burst, when a subscriber hears it.
    shared: [Option<Arc<Vec<RunEvent>>>; 2],
    /// Each event's kind, in order.
    kinds: Vec<u8>,
}

impl Bursts {
    /// The bursts of `events` for each kind `heard` says a subscriber hears: each event of those
    /// moved once into its burst, an empty event left in its place.
    fn of(events: &mut [RunEvent], heard: [bool; 2]) -> Bursts {
        let kinds: Vec<u8> = events.iter().map(|event| kind_of(event) as u8).collect();
        let mut bursts = [OUTPUT, OTHER].map(|kind| {
            let size = kinds.iter().filter(|k| usize::from(**k) == kind).count();
            (heard[kind] && size > 0).then(|| Vec::with_capacity(size))
        });
        for (event, kind) in events.iter_mut().zip(&kinds) {
            if let Some(burst) = &mut bursts[usize::from(*kind)] {
                burst.push(std::mem::replace(event, taken_place()));
            }
        }
        Bursts {
            shared: bursts.map(|burst| burst.map(Arc::new)),
            kinds,
        }
    }

    /// Gives `deliver`, in order, the events `subscriber` hears, those of a kind in a row as one
    /// [`Heard`].
    fn each_heard_by(&self, subscriber: &Subscriber, mut deliver: impl FnMut(Heard)) {
        // Where each kind's next event is in its burst, and the events heard in a row.
        let mut next = [0, 0];
        let mut in_a_row: Option<(usize, Range<usize>)> = None;
        let heard =
            |(kind, at): (usize, Range<usize>)| Heard::shared(self.shared[kind].as_ref().expect("a kind heard"), at);
        for kind in &self.kinds {
            let kind = usize::from(*kind);
            if !subscriber.hears(kind) {
                continue;
            }
            let at = next[kind];
            next[kind] += 1;
            match &mut in_a_row {
                Some((k, range)) if *k == kind && range.end == at => range.end += 1,
                _ => {
                    if let Some(run) = in_a_row.replace((kind, at..at + 1)) {
                        deliver(heard(run));
                    }
                }
            }
        }
        if let Some(run) = in_a_row {
            deliver(heard(run));
        }
    }
}

pub(super) struct Subscriber {
    pub(super) sender: EventSender,
    /// Waits rather than drops when the subscriber is behind (`Supervisor::subscribe_lossless`).
    pub(super) lossless: bool,
    /// Hears output lines (`Supervisor::subscribe_to_nodes` does not).
    pub(super) output: bool,
    /// When its losses were last said in the log: at most every 10 s while they go on (a
    /// subscriber behind a flood loses events at every publication, on the run's thread).
    losses_said: Cell<SaidAtMostEvery>,
}

impl Subscriber {
    pub(super) fn new(sender: EventSender, lossless: bool, output: bool) -> Subscriber {
        Subscriber {
            sender,
            lossless,
            output,
            losses_said: Cell::new(SaidAtMostEvery::new(Duration::from_secs(10))),
        }
    }

    /// Whether it hears events of `kind` ([`OUTPUT`] or [`OTHER`]).
    fn hears(&self, kind: usize) -> bool {
        kind == OTHER || self.output
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Stream;
    use crate::runs::runner::subscription::event_queue;
    use crate::store::StoreLocation;

    fn node(n: usize) -> RunEvent {
        RunEvent::NodeDiscarded {
            run_id: "r".into(),
            node: format!("n{n}"),
            execution: n,
        }
    }

    fn line(n: usize) -> RunEvent {
        RunEvent::Output {
            run_id: "r".into(),
            stream: Stream::Stdout,
            line: format!("line {n}"),
            t_ms: 0,
        }
    }

    /// Where an event's name or line is in memory (the same after a move, not after a copy).
    fn name_at(event: &RunEvent) -> *const u8 {
        match event {
            RunEvent::NodeDiscarded { node, .. } => node.as_ptr(),
            RunEvent::Output { line, .. } => line.as_ptr(),
            other => panic!("not an event of these tests: {other:?}"),
        }
    }

    /// The events of what was heard, in order.
    fn flat(heard: &[Heard]) -> Vec<RunEvent> {
        heard.iter().flat_map(|h| h.iter().cloned()).collect()
    }

    /// Two subscribers, one of them without output lines: each hears its events in order; the
    /// events both hear are the same ones in memory (shared, not copied), and those one hears in
    /// a row are one item of its queue; the lines only one hears are in a burst of their own;
    /// and a subscriber alone hears a publication's events in a row as one item too.
    #[test]
    fn events_several_subscribers_hear_are_shared_not_copied() {
        let store = Arc::new(Store::open(&StoreLocation::memory()).unwrap());
        let shared = Shared::start(store, None);
        let subscribe = |lossless, output| {
            let (sender, events) = event_queue(16);
            let subscriber = Subscriber::new(sender, lossless, output);
            shared.subscribers.lock().unwrap().push(subscriber);
            events
        };
        let alone = subscribe(true, true);
        shared.publish_all(&mut vec![node(0), line(1), node(90)]);
        let heard: Vec<Heard> = alone.try_iter_heard();
        assert_eq!(flat(&heard), [node(0), line(1), node(90)]);
        // Alone, a publication is one item, and read an event at a time each is taken (its
        // strings are the ones published), not copied.
        assert_eq!(heard.len(), 1);
        drop(heard);
        let published = vec![node(91), line(92), node(93)];
        let at: Vec<*const u8> = published.iter().map(name_at).collect();
        shared.publish_all(&mut { published });
        for (i, at) in at.into_iter().enumerate() {
            assert_eq!(name_at(&alone.try_recv().unwrap()), at, "event {i} taken");
        }

        let nodes = subscribe(false, false);
        let events = [node(2), line(3), node(4), line(5)];
        let mut published = events.to_vec();
        shared.publish_all(&mut published);
        assert!(published.is_empty());
        let all = alone.try_iter_heard();
        let only_nodes = nodes.try_iter_heard();
        assert_eq!(flat(&all), events);
        assert_eq!(flat(&only_nodes), [node(2), node(4)]);
        // The node events are one burst both hold: one item for the subscriber that hears them in
        // a row, one each between the lines (its own) for the other.
        assert_eq!(only_nodes.len(), 1);
        assert_eq!(all.iter().map(|h| h.len()).collect::<Vec<_>>(), [1, 1, 1, 1]);
        assert!(std::ptr::eq(&all[0][0], &only_nodes[0][0]));
        assert!(std::ptr::eq(&all[2][0], &only_nodes[0][1]));
        // The lines, which one subscriber alone hears, are one burst of their own.
        assert!(std::ptr::eq(std::ptr::from_ref(&all[1][0]).wrapping_add(1), &all[3][0]));
        drop((all, only_nodes));

        // Read an event at a time, a shared event is copied while the other subscriber holds
        // it, taken after; the rest of an item is kept for the next read.
        let published = vec![node(6), node(7), node(8)];
        let at: Vec<*const u8> = published.iter().map(name_at).collect();
        shared.publish_all(&mut { published });
        let six = alone.try_recv().unwrap();
        assert_eq!(six, node(6));
        assert_ne!(name_at(&six), at[0], "copied: the other subscriber's queue holds it");
        drop(nodes.try_iter_heard());
        assert_eq!(
            name_at(&alone.try_recv().unwrap()),
            at[1],
            "taken: nobody else holds it"
        );
        assert_eq!(flat(&alone.try_iter_heard()), [node(8)]);
        *shared.subscribers.lock().unwrap() = Vec::new();
        shared.shutting_down.store(true, Ordering::SeqCst);
        shared.index_wanted.nudge();
    }
}
