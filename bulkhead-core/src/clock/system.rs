//! The real clock, and the one timer thread that wakes async sleepers on it.
//!
//! Async waits on the system clock do not depend on any runtime's timer: a
//! single lazily started thread (`bulkhead-timer`) keeps the deadlines of
//! pending [`Sleep`]s in a heap and wakes each task when its deadline passes.
//! It only has work while some caller is waiting with a deadline, which is
//! never the case on a fast path. If the thread cannot be started, sleeps
//! complete at once: a waiter is then rejected rather than hung.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::{Clock, Sleep};

/// Real monotonic time ([`std::time::Instant`]); the default clock.
///
/// [`now`](Clock::now) is `Instant::now()`. [`recent`](Clock::recent) is the
/// time a background thread (`bulkhead-clock`) read last: it reads the clock
/// every millisecond while anyone uses its readings, and parks after about
/// 100 ms without a reader. A reading costs an atomic load; it is never
/// later than `Instant::now()`, and at most [`resolution`](Clock::resolution)
/// (5 ms; about 1 ms typically) earlier while that thread gets the CPU soon
/// after it wakes up. A thread starved of CPU for longer leaves older
/// readings: see each policy for what that can change. Until it
/// runs, or if it cannot be started, `recent` is `Instant::now()`.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Clock, SystemClock};
///
/// let clock = SystemClock;
/// assert!(clock.now() <= std::time::Instant::now());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    #[inline]
    fn recent(&self) -> Instant {
        #[cfg(not(loom))]
        return super::recent::recent();
        #[cfg(loom)]
        return Instant::now();
    }

    fn resolution(&self) -> Duration {
        super::recent::RESOLUTION
    }

    fn recent_time(&self) -> Option<super::RecentTime> {
        #[cfg(not(loom))]
        return Some(super::recent::recent_time());
        #[cfg(loom)]
        return None;
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        SystemSleep { deadline, id: None }.into()
    }

    fn park_until(&self, deadline: Instant) {
        let now = Instant::now();
        if deadline > now {
            std::thread::park_timeout(deadline - now);
        }
    }
}

pub(super) struct SystemSleep {
    deadline: Instant,
    /// Our entry in the timer, once registered.
    id: Option<u64>,
}

impl Future for SystemSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            self.deregister();
            return Poll::Ready(());
        }
        let Some(timer) = Timer::get() else {
            return Poll::Ready(());
        };
        let mut state = timer.lock();
        match self.id {
            Some(id) => match state.wakers.get_mut(&id) {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                Some(waker) => {
                    // Dropped after unlocking: a waker's drop may run
                    // arbitrary code, such as dropping another sleep.
                    let replaced = std::mem::replace(waker, cx.waker().clone());
                    drop(state);
                    drop(replaced);
                    return Poll::Pending;
                }
                // The timer fired between our clock check and the lock.
                None => return Poll::Ready(()),
            },
            None => {
                let id = state.next_id;
                state.next_id += 1;
                let earliest = state
                    .heap
                    .peek()
                    .is_none_or(|Reverse((first, _))| self.deadline < *first);
                state.heap.push(Reverse((self.deadline, id)));
                state.wakers.insert(id, cx.waker().clone());
                self.id = Some(id);
                if earliest {
                    timer.changed.notify_one();
                }
            }
        }
        Poll::Pending
    }
}

impl SystemSleep {
    fn deregister(&mut self) {
        if let Some(id) = self.id.take()
            && let Some(timer) = Timer::get()
        {
            let mut state = timer.lock();
            let removed = state.wakers.remove(&id);
            state.compact();
            drop(state);
            drop(removed);
        }
    }
}

impl Drop for SystemSleep {
    fn drop(&mut self) {
        self.deregister();
    }
}

struct Timer {
    state: Mutex<TimerState>,
    changed: Condvar,
}

#[derive(Default)]
struct TimerState {
    /// Deadlines, earliest first; entries whose sleep was dropped stay until
    /// they expire or the heap is compacted.
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    /// The live sleeps.
    wakers: HashMap<u64, Waker>,
    next_id: u64,
}

impl TimerState {
    /// Drops the heap entries of sleeps that were dropped, once they make up
    /// more than half of it (amortised O(1) per dropped sleep).
    fn compact(&mut self) {
        if self.heap.len() > 64 && self.heap.len() > 2 * self.wakers.len() {
            let TimerState { heap, wakers, .. } = self;
            heap.retain(|Reverse((_, id))| wakers.contains_key(id));
        }
    }
}

impl Timer {
    /// The process-wide timer, started on first use; `None` if its thread
    /// could not be spawned.
    fn get() -> Option<&'static Timer> {
        static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
        *TIMER.get_or_init(|| {
            let timer: &'static Timer = Box::leak(Box::new(Timer {
                state: Mutex::new(TimerState::default()),
                changed: Condvar::new(),
            }));
            std::thread::Builder::new()
                .name("bulkhead-timer".into())
                .spawn(move || timer.run())
                .ok()
                .map(|_| timer)
        })
    }

    fn lock(&self) -> MutexGuard<'_, TimerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn run(&self) {
        let mut due = Vec::new();
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            while let Some(Reverse((deadline, id))) = state.heap.peek().copied() {
                if deadline > now {
                    break;
                }
                state.heap.pop();
                due.extend(state.wakers.remove(&id));
            }
            state.compact();
            if !due.is_empty() {
                drop(state);
                for waker in due.drain(..) {
                    // A waker runs executor code; one that panics must not
                    // take the process's only timer down with it.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| waker.wake()));
                }
                state = self.lock();
                continue;
            }
            state = match state.heap.peek() {
                Some(Reverse((deadline, _))) => {
                    let timeout = deadline.saturating_duration_since(now);
                    self.changed
                        .wait_timeout(state, timeout)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn dropped_sleeps_do_not_pile_up_in_the_timer() {
        let clock = SystemClock;
        let far = Instant::now() + Duration::from_secs(3600);
        let mut keep = clock.sleep_until(far + Duration::from_secs(1));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut keep).poll(&mut cx).is_pending());
        for _ in 0..10_000 {
            let mut sleep = clock.sleep_until(far);
            assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        }
        let state = Timer::get().unwrap().lock();
        assert!(
            state.heap.len() <= 2 * state.wakers.len() + 64,
            "heap {}",
            state.heap.len()
        );
    }

    #[test]
    fn a_panicking_waker_does_not_stop_the_timer() {
        struct Panics;
        impl std::task::Wake for Panics {
            fn wake(self: std::sync::Arc<Self>) {
                panic!("a waker that panics");
            }
        }
        let waker = Waker::from(std::sync::Arc::new(Panics));
        let clock = SystemClock;
        let mut first = clock.sleep_until(Instant::now() + Duration::from_millis(1));
        assert!(
            Pin::new(&mut first)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        // A later sleep is still woken by the timer thread.
        let (tx, rx) = std::sync::mpsc::channel();
        struct Send(std::sync::Mutex<std::sync::mpsc::Sender<()>>);
        impl std::task::Wake for Send {
            fn wake(self: std::sync::Arc<Self>) {
                let _ = self.0.lock().unwrap().send(());
            }
        }
        let waker = Waker::from(std::sync::Arc::new(Send(std::sync::Mutex::new(tx))));
        std::thread::sleep(Duration::from_millis(20));
        let mut second = clock.sleep_until(Instant::now() + Duration::from_millis(5));
        assert!(
            Pin::new(&mut second)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the timer thread still wakes sleepers");
    }
}
