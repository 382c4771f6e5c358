//! A subscriber's queue of run events ([`RunEvents`]): it holds up to [`EVENT_BUFFER`] events
//! unread, and only the memory of the events it holds. (A `sync_channel` of that bound allocates
//! and writes every slot when it is made: 9.4 MB a subscriber, three in the app, with no run.)
//! Past the bound a lossy subscriber loses the newest events and a lossless one makes its runs
//! wait until it reads, as a bounded channel did. An event several subscribers hear is shared
//! by them, not copied for each, and the events of a burst a subscriber hears in a row reach it
//! as one item of its queue ([`Heard`]).

use std::cell::RefCell;
use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvError, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::events::RunEvent;

/// How many events a subscriber may hold unread: past it a lossy one loses events, a lossless
/// one's runs wait for it.
pub(super) const EVENT_BUFFER: usize = 65_536;

/// Events as a subscriber hears them, in order: several in a row of a burst. With several
/// subscribers a burst is the events of one publication of a kind (output lines, or the others),
/// shared by those that hear them (a second subscriber costs a count a burst, not a copy of each
/// event's strings on the run's thread, nor a queue item and a count per event; the strings are
/// freed once); a subscriber alone hears a publication's events as one burst of its own (a queue
/// item, and a wake-up, a publication rather than an event). It reads as the slice of its events
/// (never empty).
#[derive(Debug, Clone)]
pub struct Heard {
    burst: Arc<Vec<RunEvent>>,
    /// Never empty.
    at: Range<usize>,
}

impl Heard {
    /// The events `at` of `burst` (a range not empty).
    pub(super) fn shared(burst: &Arc<Vec<RunEvent>>, at: Range<usize>) -> Heard {
        debug_assert!(!at.is_empty() && at.end <= burst.len());
        Heard {
            burst: burst.clone(),
            at,
        }
    }

    /// The first event, owned (copied when another subscriber still holds it), and the rest.
    fn take_first(self) -> (RunEvent, Option<Heard>) {
        let Heard { mut burst, at } = self;
        let first = match Arc::get_mut(&mut burst) {
            // Nobody else holds the burst: the event is taken, an empty one left in its place.
            Some(events) => std::mem::replace(&mut events[at.start], taken_place()),
            None => burst[at.start].clone(),
        };
        let rest = at.start + 1..at.end;
        let rest = (!rest.is_empty()).then_some(Heard { burst, at: rest });
        (first, rest)
    }

    /// The events from the `n`-th on, taken off (`None` when there are `n` or fewer).
    fn split_off(&mut self, n: usize) -> Option<Heard> {
        if self.at.len() <= n {
            return None;
        }
        let rest = self.at.start + n..self.at.end;
        self.at.end = rest.start;
        Some(Heard {
            burst: self.burst.clone(),
            at: rest,
        })
    }
}

/// What stands in an event's place once it was moved out of its burst (no string allocated).
pub(super) fn taken_place() -> RunEvent {
    RunEvent::NodeDiscarded {
        run_id: String::new(),
        node: String::new(),
        execution: 0,
    }
}

impl Heard {
    /// `events` (not empty), heard by one subscriber alone.
    pub(super) fn all(events: Vec<RunEvent>) -> Heard {
        debug_assert!(!events.is_empty());
        let at = 0..events.len();
        Heard {
            burst: Arc::new(events),
            at,
        }
    }
}

#[cfg(test)]
impl From<RunEvent> for Heard {
    /// One event, heard alone.
    fn from(event: RunEvent) -> Heard {
        Heard::all(vec![event])
    }
}

impl Deref for Heard {
    type Target = [RunEvent];

    fn deref(&self) -> &[RunEvent] {
        &self.burst[self.at.clone()]
    }
}

/// A subscriber's end of its queue, from `Supervisor::subscribe`
/// and its siblings: the events of every run, in order. Its methods are a `Receiver`'s, an event
/// at a time; those ending in `_heard` give the events as they are shared ([`Heard`]: several in
/// a row, without a copy).
pub struct RunEvents {
    receiver: mpsc::Receiver<Heard>,
    held: Arc<Held>,
    /// What is left of the last item read an event at a time.
    rest: RefCell<Option<Heard>>,
}

/// The runs' end of a subscriber's queue.
pub(crate) struct EventSender {
    sender: mpsc::Sender<Heard>,
    held: Arc<Held>,
}

/// What a queue's two ends share: how many events it holds (and lost, a lossy one), and a
/// wake-up for a lossless sender waiting for room.
struct Held {
    bound: usize,
    count: AtomicUsize,
    /// Events not queued because the queue was full (a lossy subscriber's), in all.
    lost: AtomicU64,
    reader_gone: AtomicBool,
    room_lock: Mutex<()>,
    room: Condvar,
}

/// A queue that holds at most `bound` events unread; it allocates as it holds them (the
/// standard library's unbounded channel, blocks of a few dozen items, freed as they are read).
pub(crate) fn event_queue(bound: usize) -> (EventSender, RunEvents) {
    let (sender, receiver) = mpsc::channel();
    let held = Arc::new(Held {
        bound,
        count: AtomicUsize::new(0),
        lost: AtomicU64::new(0),
        reader_gone: AtomicBool::new(false),
        room_lock: Mutex::new(()),
        room: Condvar::new(),
    });
    (
        EventSender {
            sender,
            held: held.clone(),
        },
        RunEvents {
            receiver,
            held,
            rest: RefCell::new(None),
        },
    )
}

impl Held {
    /// `n` events were read: a sender waiting for room is woken when there is room again.
    fn taken(&self, n: usize) {
        if self.count.fetch_sub(n, Ordering::SeqCst) >= self.bound {
            // Under the lock: a sender that saw the queue full is waiting by now, not about to.
            let _room = self.room_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            self.room.notify_all();
        }
    }

    /// Waits while the queue is full; the room there is then (0: the reader is gone).
    fn wait_for_room(&self) -> usize {
        let mut room = self.room_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        loop {
            if self.reader_gone.load(Ordering::SeqCst) {
                return 0;
            }
            let count = self.count.load(Ordering::SeqCst);
            if count < self.bound {
                return self.bound - count;
            }
            room = self.room.wait(room).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

/// What became of events given to a lossy subscriber's queue.
#[derive(Debug)]
pub(crate) enum Queued {
    /// All of them queued.
    All,
    /// These, the newest, were lost: the queue was full (the others queued).
    Lost(Heard),
    /// The reader is gone: none queued.
    Gone,
}

impl EventSender {
    /// The events the queue lost, in all ([`QueueGauge::lost`]).
    pub(crate) fn lost(&self) -> u64 {
        self.held.lost.load(Ordering::SeqCst)
    }

    /// Queues the events as far as the queue's bound allows, the newest past it lost: a lossy
    /// subscriber's.
    pub(crate) fn try_send(&self, mut heard: Heard) -> Queued {
        if self.held.reader_gone.load(Ordering::SeqCst) {
            return Queued::Gone;
        }
        let n = heard.len();
        let before = self.held.count.fetch_add(n, Ordering::SeqCst);
        let room = self.held.bound.saturating_sub(before).min(n);
        if room < n {
            self.held.count.fetch_sub(n - room, Ordering::SeqCst);
            self.held.lost.fetch_add((n - room) as u64, Ordering::SeqCst);
            if room == 0 {
                return Queued::Lost(heard);
            }
        }
        let lost = heard.split_off(room);
        if self.sender.send(heard).is_err() {
            self.held.count.fetch_sub(room, Ordering::SeqCst);
            return Queued::Gone;
        }
        lost.map_or(Queued::All, Queued::Lost)
    }

    /// Queues the events, waiting while the queue holds its bound (in parts as room is made): a
    /// lossless subscriber's. False when the reader is gone.
    pub(crate) fn send(&self, heard: Heard) -> bool {
        let mut next = Some(heard);
        while let Some(mut heard) = next {
            let room = self.held.wait_for_room();
            if room == 0 {
                return false;
            }
            next = heard.split_off(room);
            let n = heard.len();
            self.held.count.fetch_add(n, Ordering::SeqCst);
            if self.sender.send(heard).is_err() {
                self.held.count.fetch_sub(n, Ordering::SeqCst);
                return false;
            }
        }
        true
    }
}

/// How a subscriber's queue stands, read from any thread ([`RunEvents::gauge`]).
pub struct QueueGauge(Arc<Held>);

impl QueueGauge {
    /// The events the queue lost, in all: it was full (a lossy subscriber fell behind).
    pub fn lost(&self) -> u64 {
        self.0.lost.load(Ordering::SeqCst)
    }

    /// The events queued and not read yet.
    pub fn unread(&self) -> usize {
        self.0.count.load(Ordering::SeqCst)
    }
}

impl RunEvents {
    /// What another thread reads of this queue: the events it lost and those still unread.
    pub fn gauge(&self) -> QueueGauge {
        QueueGauge(self.held.clone())
    }

    /// The next event, waiting for it; an error once the supervisor is gone and every event read.
    pub fn recv(&self) -> Result<RunEvent, RecvError> {
        let heard = self.recv_heard()?;
        Ok(self.first_of(heard))
    }

    /// The next event, waiting for it at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<RunEvent, RecvTimeoutError> {
        let heard = self.recv_timeout_heard(timeout)?;
        Ok(self.first_of(heard))
    }

    /// The next event if one is there.
    pub fn try_recv(&self) -> Result<RunEvent, TryRecvError> {
        let heard = self.try_recv_heard()?;
        Ok(self.first_of(heard))
    }

    /// `heard`'s first event, owned; the rest kept for the next read.
    fn first_of(&self, heard: Heard) -> RunEvent {
        let (first, rest) = heard.take_first();
        *self.rest.borrow_mut() = rest;
        first
    }

    /// The next events in a row, as they are shared ([`RunEvents::recv`]'s wait).
    pub fn recv_heard(&self) -> Result<Heard, RecvError> {
        self.read(|| self.receiver.recv())
    }

    /// [`RunEvents::recv_heard`] waiting at most `timeout`.
    pub fn recv_timeout_heard(&self, timeout: Duration) -> Result<Heard, RecvTimeoutError> {
        self.read(|| self.receiver.recv_timeout(timeout))
    }

    /// [`RunEvents::recv_heard`] if any is there.
    pub fn try_recv_heard(&self) -> Result<Heard, TryRecvError> {
        self.read(|| self.receiver.try_recv())
    }

    /// What is left of the last item read an event at a time, else the next item `receive` gives.
    fn read<E>(&self, receive: impl FnOnce() -> Result<Heard, E>) -> Result<Heard, E> {
        if let Some(rest) = self.rest.borrow_mut().take() {
            return Ok(rest);
        }
        let heard = receive()?;
        self.held.taken(heard.len());
        Ok(heard)
    }

    /// The events waiting now, as they are shared.
    #[cfg(test)]
    pub(super) fn try_iter_heard(&self) -> Vec<Heard> {
        std::iter::from_fn(|| self.try_recv_heard().ok()).collect()
    }

    /// The events as they come, until the supervisor is gone.
    pub fn iter(&self) -> impl Iterator<Item = RunEvent> + '_ {
        std::iter::from_fn(|| self.recv().ok())
    }
}

impl Drop for RunEvents {
    fn drop(&mut self) {
        self.held.reader_gone.store(true, Ordering::SeqCst);
        let _room = self
            .held
            .room_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.held.room.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;

    fn discarded(n: usize) -> RunEvent {
        RunEvent::NodeDiscarded {
            run_id: "r".to_owned(),
            node: n.to_string(),
            execution: n,
        }
    }

    fn event(n: usize) -> Heard {
        discarded(n).into()
    }

    /// Events `from..to` as one shared item.
    fn burst(from: usize, to: usize) -> Heard {
        let events = Arc::new((from..to).map(discarded).collect::<Vec<_>>());
        Heard::shared(&events, 0..to - from)
    }

    /// How many events a lossy queue lost of those given it.
    fn lost(queued: Queued) -> usize {
        match queued {
            Queued::All => 0,
            Queued::Lost(lost) => lost.len(),
            Queued::Gone => panic!("the reader is there"),
        }
    }

    fn node(event: RunEvent) -> String {
        match event {
            RunEvent::NodeDiscarded { node, .. } => node,
            other => panic!("not a test event: {other:?}"),
        }
    }

    #[test]
    fn a_lossy_queue_holds_its_bound_and_loses_the_newest_past_it() {
        let (sender, events) = event_queue(EVENT_BUFFER);
        for n in 0..EVENT_BUFFER {
            assert_eq!(lost(sender.try_send(event(n))), 0, "room up to the bound");
        }
        assert_eq!(lost(sender.try_send(event(EVENT_BUFFER))), 1);
        assert_eq!(node(events.try_recv().unwrap()), "0");
        assert_eq!(
            lost(sender.try_send(event(EVENT_BUFFER + 1))),
            0,
            "one read, one more room"
        );
        assert_eq!(lost(sender.try_send(event(EVENT_BUFFER + 2))), 1);
        let rest: Vec<String> = std::iter::from_fn(|| events.try_recv().ok()).map(node).collect();
        assert_eq!(rest.len(), EVENT_BUFFER);
        assert_eq!(rest.first().map(String::as_str), Some("1"));
        assert_eq!(rest.last().map(String::as_str), Some(&*(EVENT_BUFFER + 1).to_string()));
        drop(events);
        assert!(matches!(sender.try_send(event(0)), Queued::Gone));
    }

    /// A burst is one item of the queue but counts as its events: past the bound its newest
    /// events are lost, the others queued; read an event at a time, it gives them in order.
    #[test]
    fn a_burst_counts_as_its_events_and_is_cut_at_the_bound() {
        let (sender, events) = event_queue(10);
        assert_eq!(lost(sender.try_send(burst(0, 4))), 0);
        assert_eq!(lost(sender.try_send(event(4))), 0);
        match sender.try_send(burst(5, 12)) {
            Queued::Lost(lost) => assert_eq!(
                lost.iter().cloned().map(node).collect::<Vec<_>>(),
                ["10", "11"],
                "room for 5 of 7: the newest 2 lost"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(lost(sender.try_send(burst(12, 14))), 2);
        let gauge = events.gauge();
        assert_eq!(
            (gauge.unread(), gauge.lost()),
            (10, 4),
            "what another thread reads of it"
        );
        let first = events.try_recv_heard().unwrap();
        assert_eq!(first.len(), 4);
        assert_eq!((gauge.unread(), gauge.lost()), (6, 4));
        // An event at a time: the rest of an item is kept for the next read, of either kind.
        assert_eq!(node(events.try_recv().unwrap()), "4");
        assert_eq!(node(events.try_recv().unwrap()), "5");
        let rest = events.try_recv_heard().unwrap();
        assert_eq!(rest.iter().cloned().map(node).collect::<Vec<_>>(), ["6", "7", "8", "9"]);
        assert!(matches!(events.try_recv_heard(), Err(TryRecvError::Empty)));
        assert_eq!(events.held.count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_lossless_sender_waits_at_the_bound_until_an_event_is_read() {
        let (sender, events) = event_queue(3);
        let sending = thread::spawn(move || {
            assert!(sender.send(burst(0, 2)), "the reader is there");
            // Room for one of these two: the other waits.
            assert!(sender.send(burst(2, 4)), "the reader is there");
            for n in 4..6 {
                assert!(sender.send(event(n)), "the reader is there");
            }
            sender
        });
        // The sender fills the queue and waits: nothing past the bound is queued meanwhile.
        while events.held.count.load(Ordering::SeqCst) < 3 {
            thread::yield_now();
        }
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            events.held.count.load(Ordering::SeqCst),
            3,
            "the sender waits at the bound"
        );
        assert!(!sending.is_finished());
        let heard: Vec<String> = (0..6)
            .map(|_| {
                node(
                    events
                        .recv_timeout(Duration::from_secs(10))
                        .expect("the sender goes on"),
                )
            })
            .collect();
        assert_eq!(heard, ["0", "1", "2", "3", "4", "5"]);
        let sender = sending.join().unwrap();
        // A sender waiting for a reader that is gone is let go, with an error.
        for n in 0..3 {
            assert!(sender.send(event(n)));
        }
        let waiting = thread::spawn(move || !sender.send(event(3)));
        thread::sleep(Duration::from_millis(100));
        drop(events);
        assert!(waiting.join().unwrap(), "the send failed once the reader was gone");
    }
}
