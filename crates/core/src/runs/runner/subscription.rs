//! A subscriber's queue of run events ([`RunEvents`]): it holds up to [`EVENT_BUFFER`] events
//! unread, and only the memory of the events it holds. (A `sync_channel` of that bound allocates
//! and writes every slot when it is made: 9.4 MB a subscriber, three in the app, with no run.)
//! Past the bound a lossy subscriber loses the newest events and a lossless one makes its runs
//! wait until it reads, as a bounded channel did. An event several subscribers hear is shared
//! by them, not copied for each ([`Heard`]).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::events::RunEvent;

/// How many events a subscriber may hold unread: past it a lossy one loses events, a lossless
/// one's runs wait for it.
pub(super) const EVENT_BUFFER: usize = 65_536;

/// An event as a subscriber hears it: its own, or one of a burst of events that several
/// subscribers hear, shared by them (a second subscriber costs a count, not a copy of each
/// event's strings on the run's thread, and the strings are freed once). It reads as the event.
#[derive(Debug, Clone)]
pub struct Heard(Sharing);

#[derive(Debug, Clone)]
enum Sharing {
    Own(RunEvent),
    Shared { burst: Arc<Vec<RunEvent>>, at: usize },
}

impl Heard {
    /// The `at`-th event of `burst`, which several subscribers hear.
    pub(super) fn shared(burst: &Arc<Vec<RunEvent>>, at: usize) -> Heard {
        Heard(Sharing::Shared {
            burst: burst.clone(),
            at,
        })
    }

    /// The event, owned: copied when another subscriber still holds it.
    pub fn into_event(self) -> RunEvent {
        match self.0 {
            Sharing::Own(event) => event,
            Sharing::Shared { mut burst, at } => match Arc::get_mut(&mut burst) {
                // Nobody else holds the burst: the event is taken, an empty one left in its place.
                Some(events) => std::mem::replace(&mut events[at], taken_place()),
                None => burst[at].clone(),
            },
        }
    }
}

/// What stands in an event's place once it was moved out of its burst (no string allocated).
pub(super) fn taken_place() -> RunEvent {
    RunEvent::NodeDiscarded {
        run_id: String::new(),
        node: String::new(),
    }
}

impl From<RunEvent> for Heard {
    fn from(event: RunEvent) -> Heard {
        Heard(Sharing::Own(event))
    }
}

impl Deref for Heard {
    type Target = RunEvent;

    fn deref(&self) -> &RunEvent {
        match &self.0 {
            Sharing::Own(event) => event,
            Sharing::Shared { burst, at } => &burst[*at],
        }
    }
}

/// A subscriber's end of its queue, from `Supervisor::subscribe`
/// and its siblings: the events of every run, in order. Its methods are a `Receiver`'s; those
/// ending in `_heard` give the event as it is shared ([`Heard`]), without a copy.
pub struct RunEvents {
    receiver: mpsc::Receiver<Heard>,
    held: Arc<Held>,
}

/// The runs' end of a subscriber's queue.
pub(crate) struct EventSender {
    sender: mpsc::Sender<Heard>,
    held: Arc<Held>,
}

/// What a queue's two ends share: how many events it holds, and a wake-up for a lossless
/// sender waiting for room.
struct Held {
    bound: usize,
    count: AtomicUsize,
    reader_gone: AtomicBool,
    room_lock: Mutex<()>,
    room: Condvar,
}

/// A queue that holds at most `bound` events unread; it allocates as it holds them (the
/// standard library's unbounded channel, blocks of a few dozen events, freed as they are read).
pub(crate) fn event_queue(bound: usize) -> (EventSender, RunEvents) {
    let (sender, receiver) = mpsc::channel();
    let held = Arc::new(Held {
        bound,
        count: AtomicUsize::new(0),
        reader_gone: AtomicBool::new(false),
        room_lock: Mutex::new(()),
        room: Condvar::new(),
    });
    (
        EventSender {
            sender,
            held: held.clone(),
        },
        RunEvents { receiver, held },
    )
}

impl Held {
    /// An event was read: a sender waiting for room is woken when there is room again.
    fn taken(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) >= self.bound {
            // Under the lock: a sender that saw the queue full is waiting by now, not about to.
            let _room = self.room_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            self.room.notify_all();
        }
    }

    fn wait_for_room(&self) {
        let mut room = self.room_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while self.count.load(Ordering::SeqCst) >= self.bound && !self.reader_gone.load(Ordering::SeqCst) {
            room = self.room.wait(room).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

impl EventSender {
    /// Queues the event unless the queue holds its bound already (then the event is handed
    /// back as `Full`): a lossy subscriber's.
    pub(crate) fn try_send(&self, event: Heard) -> Result<(), Box<TrySendError<Heard>>> {
        if self.held.reader_gone.load(Ordering::SeqCst) {
            return Err(Box::new(TrySendError::Disconnected(event)));
        }
        if self.held.count.fetch_add(1, Ordering::SeqCst) >= self.held.bound {
            self.held.count.fetch_sub(1, Ordering::SeqCst);
            return Err(Box::new(TrySendError::Full(event)));
        }
        self.sender.send(event).map_err(|SendError(event)| {
            self.held.count.fetch_sub(1, Ordering::SeqCst);
            Box::new(TrySendError::Disconnected(event))
        })
    }

    /// Queues the event, first waiting while the queue holds its bound: a lossless subscriber's.
    /// False when the reader is gone.
    pub(crate) fn send(&self, event: Heard) -> bool {
        self.held.wait_for_room();
        if self.held.reader_gone.load(Ordering::SeqCst) {
            return false;
        }
        self.held.count.fetch_add(1, Ordering::SeqCst);
        let sent = self.sender.send(event).is_ok();
        if !sent {
            self.held.count.fetch_sub(1, Ordering::SeqCst);
        }
        sent
    }
}

impl RunEvents {
    /// The next event, waiting for it; an error once the supervisor is gone and every event read.
    pub fn recv(&self) -> Result<RunEvent, RecvError> {
        self.recv_heard().map(Heard::into_event)
    }

    /// The next event, waiting for it at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<RunEvent, RecvTimeoutError> {
        self.recv_timeout_heard(timeout).map(Heard::into_event)
    }

    /// The next event if one is there.
    pub fn try_recv(&self) -> Result<RunEvent, TryRecvError> {
        self.try_recv_heard().map(Heard::into_event)
    }

    /// [`RunEvents::recv`], the event as it is shared.
    pub fn recv_heard(&self) -> Result<Heard, RecvError> {
        let event = self.receiver.recv()?;
        self.held.taken();
        Ok(event)
    }

    /// [`RunEvents::recv_timeout`], the event as it is shared.
    pub fn recv_timeout_heard(&self, timeout: Duration) -> Result<Heard, RecvTimeoutError> {
        let event = self.receiver.recv_timeout(timeout)?;
        self.held.taken();
        Ok(event)
    }

    /// [`RunEvents::try_recv`], the event as it is shared.
    pub fn try_recv_heard(&self) -> Result<Heard, TryRecvError> {
        let event = self.receiver.try_recv()?;
        self.held.taken();
        Ok(event)
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

    fn event(n: usize) -> Heard {
        RunEvent::NodeDiscarded {
            run_id: "r".to_owned(),
            node: n.to_string(),
        }
        .into()
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
            sender.try_send(event(n)).expect("room up to the bound");
        }
        assert!(matches!(
            sender.try_send(event(EVENT_BUFFER)).map_err(|e| *e),
            Err(TrySendError::Full(_))
        ));
        assert_eq!(node(events.try_recv().unwrap()), "0");
        sender
            .try_send(event(EVENT_BUFFER + 1))
            .expect("one read, one more room");
        assert!(matches!(
            sender.try_send(event(EVENT_BUFFER + 2)).map_err(|e| *e),
            Err(TrySendError::Full(_))
        ));
        let rest: Vec<String> = std::iter::from_fn(|| events.try_recv().ok()).map(node).collect();
        assert_eq!(rest.len(), EVENT_BUFFER);
        assert_eq!(rest.first().map(String::as_str), Some("1"));
        assert_eq!(rest.last().map(String::as_str), Some(&*(EVENT_BUFFER + 1).to_string()));
        drop(events);
        assert!(matches!(
            sender.try_send(event(0)).map_err(|e| *e),
            Err(TrySendError::Disconnected(_))
        ));
    }

    #[test]
    fn a_lossless_sender_waits_at_the_bound_until_an_event_is_read() {
        let (sender, events) = event_queue(3);
        let sending = thread::spawn(move || {
            for n in 0..6 {
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
