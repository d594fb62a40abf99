//! A clock that moves only when a test moves it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{Clock, Sleep, Wake};
use crate::loom::{Mutex, lock, thread};

/// A clock for tests: time stands still until [`advance`](ManualClock::advance)
/// moves it.
///
/// Its [`recent`](Clock::recent) reading is its exact time (the resolution
/// is zero), so every policy decides on exact readings.
///
/// Clones share one time line, so a test keeps a clone and hands another to
/// `Registry::builder().clock(..)`. Advancing wakes every sync and async
/// waiter whose deadline the new time has reached; a waiter whose deadline is
/// still ahead keeps waiting, however much real time passes.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_millis(250));
/// assert_eq!(clock.now() - start, Duration::from_millis(250));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    origin: Instant,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    elapsed: Duration,
    /// Everyone waiting for a deadline on this clock.
    sleepers: Vec<Sleeper>,
    next_id: u64,
}

#[derive(Debug)]
struct Sleeper {
    id: u64,
    deadline: Instant,
    wake: Wake,
}

impl State {
    fn now(&self, origin: Instant) -> Instant {
        origin + self.elapsed
    }

    fn register(&mut self, deadline: Instant, wake: Wake) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.sleepers.push(Sleeper { id, deadline, wake });
        id
    }

    /// Takes a sleeper out, for the caller to drop after unlocking: a
    /// waker's drop may run arbitrary code, such as releasing a bulkhead slot
    /// (which reads this clock).
    #[must_use = "drop the sleeper after unlocking"]
    fn remove(&mut self, id: u64) -> Option<Sleeper> {
        let at = self.sleepers.iter().position(|s| s.id == id)?;
        Some(self.sleepers.remove(at))
    }
}

impl ManualClock {
    /// A clock whose time starts at the moment of creation and then stands
    /// still.
    pub fn new() -> Self {
        ManualClock {
            shared: Arc::new(Shared {
                origin: Instant::now(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// How far a manual clock can move from its creation: 100 years. Larger
    /// advances stop there, so that every `Instant` it returns is valid.
    pub const MAX_ELAPSED: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

    /// Moves time forward by `by` (at most up to
    /// [`MAX_ELAPSED`](Self::MAX_ELAPSED) after creation) and wakes every
    /// waiter whose deadline is now reached.
    pub fn advance(&self, by: Duration) {
        let due: Vec<Sleeper> = {
            let mut state = lock(&self.shared.state);
            state.elapsed = state.elapsed.saturating_add(by).min(Self::MAX_ELAPSED);
            let now = state.now(self.shared.origin);
            let (due, waiting) = std::mem::take(&mut state.sleepers)
                .into_iter()
                .partition(|s| s.deadline <= now);
            state.sleepers = waiting;
            due
        };
        super::wake_all(due.into_iter().map(|sleeper| sleeper.wake));
    }

    /// How far this clock has been advanced since it was created.
    pub fn elapsed(&self) -> Duration {
        lock(&self.shared.state).elapsed
    }

    /// How many sleeps and parked threads wait for a deadline on this clock.
    ///
    /// Lets a test know that a waiter is in place before it advances time.
    pub fn sleepers(&self) -> usize {
        lock(&self.shared.state).sleepers.len()
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        lock(&self.shared.state).now(self.shared.origin)
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        ManualSleep {
            shared: Arc::clone(&self.shared),
            deadline,
            id: None,
        }
        .into()
    }

    fn park_until(&self, deadline: Instant) {
        let id = {
            let mut state = lock(&self.shared.state);
            if state.now(self.shared.origin) >= deadline {
                return;
            }
            state.register(deadline, Wake::Thread(thread::current()))
        };
        thread::park();
        let removed = lock(&self.shared.state).remove(id);
        drop(removed);
    }
}

pub(super) struct ManualSleep {
    shared: Arc<Shared>,
    deadline: Instant,
    id: Option<u64>,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut state = lock(&this.shared.state);
        if state.now(this.shared.origin) >= this.deadline {
            let removed = this.id.take().and_then(|id| state.remove(id));
            drop(state);
            drop(removed);
            return Poll::Ready(());
        }
        let registered = this
            .id
            .and_then(|id| state.sleepers.iter_mut().find(|s| s.id == id));
        let replaced = match registered {
            Some(sleeper) => sleeper.wake.update(cx),
            None => {
                this.id = Some(state.register(this.deadline, Wake::Task(cx.waker().clone())));
                None
            }
        };
        drop(state);
        drop(replaced);
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let removed = lock(&self.shared.state).remove(id);
            drop(removed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_huge_advance_stops_at_the_largest_elapsed_time_instead_of_panicking() {
        let clock = ManualClock::new();
        let start = clock.now();
        clock.advance(Duration::MAX);
        clock.advance(Duration::MAX);
        assert_eq!(clock.now() - start, ManualClock::MAX_ELAPSED);
        assert_eq!(clock.elapsed(), ManualClock::MAX_ELAPSED);
    }
}
