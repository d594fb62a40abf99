//! [`EventBus`], where policies publish their events, and [`EventStream`],
//! a subscriber's end of it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use tokio::sync::broadcast;

use super::Event;

/// Where policies publish their events: cheap to clone, shared by every
/// policy of a registry.
#[derive(Clone)]
pub struct EventBus {
    /// A handle of the one channel; clones share it, and it closes when the
    /// last is dropped.
    sender: broadcast::Sender<Event>,
    /// How many streams are open: what every publisher reads first, one
    /// load away.
    subscribers: Arc<AtomicUsize>,
}

impl EventBus {
    /// The number of events each subscriber may fall behind by default.
    pub const DEFAULT_CAPACITY: usize = 1024;
    /// The largest capacity: larger requests are cut down to it.
    pub const MAX_CAPACITY: usize = 1 << 16;

    /// A bus where each subscriber may fall at least `capacity` events
    /// behind before it starts losing the oldest ones.
    ///
    /// The buffer is allocated up front with room for `capacity` rounded up
    /// to a power of two, between 1 and [`MAX_CAPACITY`](Self::MAX_CAPACITY).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.clamp(1, Self::MAX_CAPACITY));
        EventBus {
            sender,
            subscribers: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Starts receiving every event published from now on.
    pub fn subscribe(&self) -> EventStream {
        self.subscribers.fetch_add(1, Relaxed);
        EventStream {
            receiver: self.sender.subscribe(),
            subscribers: Arc::clone(&self.subscribers),
            missed: 0,
        }
    }

    /// Whether anyone listens; publishers check this before building an event.
    #[inline]
    pub fn has_subscribers(&self) -> bool {
        self.subscribers.load(Relaxed) != 0
    }

    /// Publishes `event` to every current subscriber. Never blocks.
    pub fn publish(&self, event: Event) {
        // An error means nobody subscribed any more: nothing to do.
        let _ = self.sender.send(event);
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(Self::DEFAULT_CAPACITY)
    }
}

impl fmt::Debug for EventBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.subscribers.load(Relaxed))
            .finish()
    }
}

/// A subscription to an [`EventBus`]: the events published since it was
/// created, oldest first.
///
/// Read with [`recv`](EventStream::recv) from async code, or
/// [`try_recv`](EventStream::try_recv) / [`drain`](EventStream::drain) from
/// anywhere. Dropping it unsubscribes.
pub struct EventStream {
    receiver: broadcast::Receiver<Event>,
    /// The bus's subscriber count, not the bus: the stream must not keep the
    /// sender alive, or it would never see the bus close.
    subscribers: Arc<AtomicUsize>,
    missed: u64,
}

impl EventStream {
    /// Waits for the next event. `None` once the bus is gone (the registry
    /// and every policy it made were dropped) and every event was read.
    pub async fn recv(&mut self) -> Option<Event> {
        loop {
            match self.receiver.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(n)) => self.missed += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next event if one is ready, without waiting.
    pub fn try_recv(&mut self) -> Option<Event> {
        loop {
            match self.receiver.try_recv() {
                Ok(event) => return Some(event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.missed += n,
                Err(_) => return None,
            }
        }
    }

    /// Every event ready now, without waiting.
    pub fn drain(&mut self) -> impl Iterator<Item = Event> + '_ {
        std::iter::from_fn(|| self.try_recv())
    }

    /// How many events this subscriber lost by falling more than the bus's
    /// capacity behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Relaxed);
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("pending", &self.receiver.len())
            .field("missed", &self.missed)
            .finish()
    }
}
