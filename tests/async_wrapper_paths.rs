#![allow(missing_docs, missing_debug_implementations)]
//! The generated async method of a bulkhead-only method decides on its
//! first poll, inline, what `Bulkhead::enter_at_once` can (a free slot, a
//! quiet rejection) and leaves everything else to `enter_async`
//! (`__private::guard_async`, issue 33): both paths against the bulkhead
//! rules as an `async` block awaiting `enter_async` kept them. Futures are
//! polled by hand with a no-op waker, so every step is deterministic.

use std::future::{Future, pending};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead::events::{BulkheadEvent, BulkheadEventKind, Event};
use bulkhead::{ManualClock, Registry, Rejection, resilient};

#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    Rejected(Rejection),
    Backend,
}

impl From<Rejection> for Error {
    fn from(r: Rejection) -> Self {
        Error::Rejected(r)
    }
}

/// Records, when it is dropped, what `read` then says (the bulkhead's
/// calls in flight).
pub struct Probe {
    read: Box<dyn Fn() -> u32 + Send + Sync>,
    seen: Arc<Mutex<Vec<u32>>>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.seen.lock().unwrap().push((self.read)());
    }
}

#[resilient]
#[allow(async_fn_in_trait)] // a test's own trait: no `Send` bound needed
pub trait Svc: Send + Sync {
    #[bulkhead(name = "quiet", max_concurrent = 1)]
    async fn quiet(&self, hold: bool) -> Result<u32, Error>;

    #[bulkhead(name = "waits", max_concurrent = 1, max_wait = "1s")]
    async fn waits(&self, hold: bool) -> Result<u32, Error>;

    #[bulkhead(name = "off", max_concurrent = 1, enabled = false)]
    async fn off(&self, hold: bool) -> Result<u32, Error>;

    #[bulkhead(name = "probed", max_concurrent = 1)]
    async fn probed(&self, probe: Probe) -> Result<u32, Error>;

    #[bulkhead(name = "panics", max_concurrent = 1)]
    async fn panics(&self) -> Result<u32, Error>;
}

#[derive(Default)]
pub struct Backend {
    runs: std::sync::atomic::AtomicU32,
}

impl Backend {
    fn run(&self) -> u32 {
        self.runs
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .wrapping_add(1)
    }

    fn runs(&self) -> u32 {
        self.runs.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn held(&self, hold: bool) -> Result<u32, Error> {
        let n = self.run();
        if hold {
            pending::<()>().await;
        }
        Ok(n)
    }
}

impl Svc for Backend {
    async fn quiet(&self, hold: bool) -> Result<u32, Error> {
        self.held(hold).await
    }

    async fn waits(&self, hold: bool) -> Result<u32, Error> {
        self.held(hold).await
    }

    async fn off(&self, hold: bool) -> Result<u32, Error> {
        self.held(hold).await
    }

    async fn probed(&self, probe: Probe) -> Result<u32, Error> {
        let _probe = probe;
        self.run();
        pending::<()>().await;
        Err(Error::Backend)
    }

    async fn panics(&self) -> Result<u32, Error> {
        self.run();
        panic!("the async backend fell over");
    }
}

fn poll<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn full(instance: &'static str) -> Error {
    Error::Rejected(Rejection::from(bulkhead::rejection::BulkheadFull::new(
        instance,
    )))
}

fn manual() -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    (clock, registry)
}

/// The bulkhead events of `instance` drained from `events`.
fn rejections(events: &mut bulkhead::events::EventStream, instance: &str) -> Vec<(u32, bool)> {
    let mut got = Vec::new();
    while let Some(event) = events.try_recv() {
        if let Event::Bulkhead(BulkheadEvent {
            instance: of,
            kind:
                BulkheadEventKind::Rejected {
                    max_concurrent,
                    waited,
                },
            ..
        }) = event
            && of == instance
        {
            got.push((max_concurrent, waited));
        }
    }
    got
}

/// B6: a full bulkhead without `max_wait` and nobody listening rejects on
/// the first poll, with the bulkhead's error, and the method never runs;
/// the slot's return admits the next call.
#[test]
fn a_quiet_rejection_is_the_bulkheads_error_on_first_poll() {
    let (_, registry) = manual();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("quiet").unwrap();
    let mut holder = Box::pin(service.quiet(true));
    assert!(poll(holder.as_mut()).is_pending());
    assert_eq!(handle.concurrent_calls(), 1);
    for _ in 0..3 {
        let rejected = pin!(service.quiet(false));
        let got = poll(rejected);
        assert_eq!(got, Poll::Ready(Err(full("quiet"))));
        assert_eq!(got.map(|r| r.unwrap_err()), Poll::Ready(full("quiet")));
    }
    assert_eq!(service.delegate().runs(), 1, "the rejected calls never ran");
    drop(holder);
    assert_eq!(handle.concurrent_calls(), 0);
    assert_eq!(poll(pin!(service.quiet(false))), Poll::Ready(Ok(2)));
}

/// B12: with a listener, the rejection is published (not waited), and the
/// error is the same.
#[test]
fn a_rejection_with_a_listener_is_published_and_the_same_error() {
    let (_, registry) = manual();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("quiet").unwrap();
    let held = handle.bulkhead().try_enter_owned().unwrap();
    assert_eq!(
        poll(pin!(service.quiet(false))),
        Poll::Ready(Err(full("quiet")))
    );
    let mut events = registry.subscribe();
    assert_eq!(
        poll(pin!(service.quiet(false))),
        Poll::Ready(Err(full("quiet")))
    );
    assert_eq!(rejections(&mut events, "quiet"), [(1, false)]);
    drop(held);
    assert_eq!(poll(pin!(service.quiet(false))), Poll::Ready(Ok(1)));
    assert!(
        rejections(&mut events, "quiet").is_empty(),
        "an admitted call publishes no rejection"
    );
    assert_eq!(service.delegate().runs(), 1);
}

/// Sizing counts every rejection and admission made through the async
/// wrapper (a bulkhead that counts never rejects quietly).
#[test]
fn sizing_counts_rejections_and_admissions_through_the_async_wrapper() {
    let registry = Registry::builder().track_sizing(true).build();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("quiet").unwrap();
    assert_eq!(poll(pin!(service.quiet(false))), Poll::Ready(Ok(1)));
    let held = handle.bulkhead().try_enter_owned().unwrap();
    for _ in 0..3 {
        assert_eq!(
            poll(pin!(service.quiet(false))),
            Poll::Ready(Err(full("quiet")))
        );
    }
    drop(held);
    let traffic = handle.snapshot().traffic.unwrap();
    assert_eq!(traffic.rejected, 3, "{traffic:?}");
    assert_eq!(traffic.admitted, 2, "{traffic:?}");
}

/// B6, B8: a full bulkhead with `max_wait` queues the call (which does not
/// run), admits it when a slot frees, and runs it then; a call still
/// queued when the clock passes `max_wait` is rejected as waited.
#[test]
fn a_full_bulkhead_with_max_wait_queues_then_admits_or_rejects_as_waited() {
    let (clock, registry) = manual();
    let mut events = registry.subscribe();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("waits").unwrap();
    let mut holder = Box::pin(service.waits(true));
    assert!(poll(holder.as_mut()).is_pending());
    let mut queued = Box::pin(service.waits(false));
    assert!(poll(queued.as_mut()).is_pending(), "it waits for a slot");
    assert!(poll(queued.as_mut()).is_pending(), "and keeps waiting");
    assert_eq!(service.delegate().runs(), 1, "a queued call does not run");
    drop(holder);
    assert_eq!(poll(queued.as_mut()), Poll::Ready(Ok(2)));
    assert_eq!(handle.concurrent_calls(), 0);
    assert!(rejections(&mut events, "waits").is_empty());

    let mut holder = Box::pin(service.waits(true));
    assert!(poll(holder.as_mut()).is_pending());
    let mut late = Box::pin(service.waits(false));
    assert!(poll(late.as_mut()).is_pending());
    clock.advance(Duration::from_secs(2));
    assert_eq!(poll(late.as_mut()), Poll::Ready(Err(full("waits"))));
    assert_eq!(rejections(&mut events, "waits"), [(1, true)]);
    assert_eq!(service.delegate().runs(), 3);
    drop(holder);
    assert_eq!(handle.concurrent_calls(), 0);
}

/// A queued call dropped leaves the queue: the slot it would have had goes
/// to the next caller.
#[test]
fn a_queued_call_dropped_leaves_the_queue() {
    let (_, registry) = manual();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("waits").unwrap();
    let mut holder = Box::pin(service.waits(true));
    assert!(poll(holder.as_mut()).is_pending());
    let mut queued = Box::pin(service.waits(false));
    assert!(poll(queued.as_mut()).is_pending());
    drop(queued);
    drop(holder);
    assert_eq!(handle.concurrent_calls(), 0);
    assert_eq!(poll(pin!(service.waits(false))), Poll::Ready(Ok(2)));
    assert_eq!(service.delegate().runs(), 2);
}

/// B5: a disabled bulkhead admits every call, uncounted (the first poll's
/// inline path leaves it to `enter_async`).
#[test]
fn a_disabled_bulkhead_admits_every_async_call() {
    let (_, registry) = manual();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("off").unwrap();
    let mut a = Box::pin(service.off(true));
    let mut b = Box::pin(service.off(true));
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());
    assert_eq!(service.delegate().runs(), 2);
    assert_eq!(handle.concurrent_calls(), 0);
}

/// A running call dropped drops the method's future while it still holds
/// its slot, then gives the slot back; an unpolled call drops its
/// arguments holding nothing.
#[test]
fn a_dropped_call_drops_the_methods_future_before_its_slot() {
    let (_, registry) = manual();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("probed").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let probe = || {
        let handle = handle.clone();
        Probe {
            read: Box::new(move || handle.concurrent_calls()),
            seen: seen.clone(),
        }
    };
    let mut running = Box::pin(service.probed(probe()));
    assert!(poll(running.as_mut()).is_pending());
    assert_eq!(handle.concurrent_calls(), 1);
    drop(running);
    assert_eq!(*seen.lock().unwrap(), [1], "dropped while holding the slot");
    assert_eq!(handle.concurrent_calls(), 0);
    drop(service.probed(probe()));
    assert_eq!(*seen.lock().unwrap(), [1, 0]);
}

/// B1: a method that panics gives its slot back as it unwinds, before its
/// future is dropped, and the next call is admitted.
#[test]
fn a_panicking_method_gives_its_slot_back_as_it_unwinds() {
    let (_, registry) = manual();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("panics").unwrap();
    for _ in 0..2 {
        let mut call = Box::pin(service.panics());
        let unwound = catch_unwind(AssertUnwindSafe(|| poll(call.as_mut())));
        assert!(unwound.is_err(), "the panic reaches the poller");
        assert_eq!(handle.concurrent_calls(), 0, "given back while unwinding");
        drop(call);
    }
    assert_eq!(service.delegate().runs(), 2);
}
