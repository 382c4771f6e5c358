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
use super::subscription::{taken_place, EventSender, Heard};
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
        self.publish_all(&mut vec![event]);
    }

    /// Sends each event to every subscriber that hears it, in order, under one lock: a burst of
    /// events wakes a waiting subscriber once rather than once per event. The events of the
    /// burst that several subscribers hear are shared by them ([`Heard`]), not copied for each.
    /// `events` is left empty, its room kept.
    pub(super) fn publish_all(&self, events: &mut Vec<RunEvent>) {
        let mut subscribers = self.subscribers.lock().expect("subscribers lock");
        if subscribers.is_empty() {
            events.clear();
            return;
        }
        let hearing_output = subscribers.iter().filter(|s| s.output).count();
        let mut gone = vec![false; subscribers.len()];
        let mut deliver = |heard: Heard| {
            let is_output = matches!(*heard, RunEvent::Output { .. });
            let hears = |subscriber: &Subscriber| !is_output || subscriber.output;
            let Some(last) = subscribers.iter().rposition(hears) else {
                return;
            };
            let mut heard = Some(heard);
            for (i, subscriber) in subscribers.iter().enumerate() {
                if gone[i] || !hears(subscriber) {
                    continue;
                }
                let sent = if i == last { heard.take() } else { heard.clone() };
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
        };
        let (share_output, share_others) = (hearing_output > 1, subscribers.len() > 1);
        if share_output || share_others {
            shared_bursts(events, share_output, share_others).for_each(&mut deliver);
        } else {
            events.drain(..).map(Heard::from).for_each(&mut deliver);
        }
        let mut index = 0;
        subscribers.retain(|_| {
            index += 1;
            !gone[index - 1]
        });
    }
}

/// `events` as subscribers hear them, in order (`events` left empty): the output lines shared
/// (one burst of them) when `share_output`, the other events (another) when `share_others`, the
/// rest each its own. Each event is moved once, into its burst or its own [`Heard`]. A burst
/// holds only events of one kind, so a subscriber holds alive no event it does not hear.
fn shared_bursts(
    events: &mut Vec<RunEvent>,
    share_output: bool,
    share_others: bool,
) -> impl Iterator<Item = Heard> + '_ {
    const OWN: u8 = 2;
    let shares = [share_output, share_others];
    // 0: an output line, 1: any other event.
    let kind_of = |event: &RunEvent| usize::from(!matches!(event, RunEvent::Output { .. }));
    let mut sizes = [0, 0];
    for event in events.iter() {
        sizes[kind_of(event)] += 1;
    }
    let mut bursts = [0, 1].map(|kind| Vec::with_capacity(if shares[kind] { sizes[kind] } else { 0 }));
    // Each event's kind, or OWN when it is not shared: its place in `events` is taken by an
    // empty event once it is in its burst.
    let kinds: Vec<u8> = events
        .iter_mut()
        .map(|event| {
            let kind = kind_of(event);
            if !shares[kind] {
                return OWN;
            }
            bursts[kind].push(std::mem::replace(event, taken_place()));
            kind as u8
        })
        .collect();
    let bursts = bursts.map(Arc::new);
    let mut next = [0, 0];
    events.drain(..).zip(kinds).map(move |(event, kind)| match kind {
        OWN => Heard::from(event),
        kind => {
            let kind = usize::from(kind);
            next[kind] += 1;
            Heard::shared(&bursts[kind], next[kind] - 1)
        }
    })
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

    /// Two subscribers, one of them without output lines: each hears its events in order; the
    /// events both hear are the same ones in memory (shared, not copied), the lines only one
    /// hears are its own; and a subscriber alone hears its events as its own.
    #[test]
    fn events_several_subscribers_hear_are_shared_not_copied() {
        let store = Arc::new(Store::open(&StoreLocation::memory()).unwrap());
        let shared = Shared::start(store, None);
        let subscribe = |lossless, output| {
            let (sender, events) = event_queue(16);
            let subscriber = Subscriber {
                sender,
                lossless,
                output,
            };
            shared.subscribers.lock().unwrap().push(subscriber);
            events
        };
        let alone = subscribe(true, true);
        shared.publish_all(&mut vec![node(0), line(1)]);
        let heard: Vec<Heard> = alone.try_iter_heard();
        assert_eq!(
            heard.iter().map(|h| (**h).clone()).collect::<Vec<_>>(),
            [node(0), line(1)]
        );
        // Alone, its events are its own: a copy is another event.
        assert!(!std::ptr::eq(&*heard[0].clone(), &*heard[0]));

        let nodes = subscribe(false, false);
        let events = [node(2), line(3), node(4), line(5)];
        let mut published = events.to_vec();
        shared.publish_all(&mut published);
        assert!(published.is_empty());
        let all = alone.try_iter_heard();
        let only_nodes = nodes.try_iter_heard();
        assert_eq!(all.iter().map(|h| (**h).clone()).collect::<Vec<_>>(), events);
        assert_eq!(
            only_nodes.iter().map(|h| (**h).clone()).collect::<Vec<_>>(),
            [node(2), node(4)]
        );
        // The node events are one burst both hold; the lines, heard by one, its own.
        assert!(std::ptr::eq(&*all[0], &*only_nodes[0]));
        assert!(std::ptr::eq(&*all[2], &*only_nodes[1]));
        assert!(std::ptr::eq(&*all[2], (&*all[0] as *const RunEvent).wrapping_add(1)));
        assert!(!std::ptr::eq(&*all[1].clone(), &*all[1]));
        // Owned, a shared event is copied while the other subscriber holds it, taken after.
        let mut all = all.into_iter();
        assert_eq!(all.next().unwrap().into_event(), node(2));
        drop(only_nodes);
        assert_eq!(all.nth(1).unwrap().into_event(), node(4));
        *shared.subscribers.lock().unwrap() = Vec::new();
        shared.shutting_down.store(true, Ordering::SeqCst);
        shared.index_wanted.nudge();
    }
}
