//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bulkhead_core::{Bulkhead, BulkheadConfig};
use bulkhead_registry::Registry;

/// Spins (yielding) until `condition` holds. Not a timing assertion: the
/// bound only turns a hang into a failure with a message.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < give_up, "gave up waiting until {what}");
        std::thread::yield_now();
    }
}

/// A waker that counts how often it was woken.
#[derive(Default)]
pub struct CountingWaker(AtomicUsize);

impl CountingWaker {
    pub fn new() -> (Arc<Self>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&counter));
        (counter, waker)
    }

    pub fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `future` once with `waker`.
pub fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// Polls `future` once with a waker that does nothing.
pub fn poll_noop<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    poll_once(future, Waker::noop())
}

/// A bulkhead `id` of `registry` with `max` slots and `max_wait`.
pub fn bulkhead(registry: &Registry, id: &str, max: u32, max_wait: Duration) -> Bulkhead {
    registry
        .bulkhead_policy(
            id,
            "test",
            &BulkheadConfig::builder()
                .max_concurrent(max)
                .max_wait(max_wait),
        )
        .unwrap()
}
