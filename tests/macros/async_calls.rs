//! Async methods through a generated wrapper: B6, B8 (async), cancellation,
//! and B11 for a free slot. Futures are polled by hand with a no-op waker,
//! so every step is deterministic.

use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use crate::support::{AsyncHold, Service, assert_full, id, manual, poll, service};

#[test]
fn b6_a_call_takes_its_slot_on_first_poll_not_when_the_method_returns() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_async(AsyncHold)")).unwrap();
    let (hold, release) = AsyncHold::until_released();
    let mut call = pin!(service.call_async(hold));
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "nothing happens before the first poll"
    );
    assert_eq!(service.runs(), 0);
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(handle.concurrent_calls(), 1);
    assert_eq!(service.runs(), 1);
    release.send(()).unwrap();
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(1))));
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b6_a_call_holds_its_slot_until_its_future_completes() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_async(AsyncHold)")).unwrap();
    let (a, release_a) = AsyncHold::until_released();
    let (b, release_b) = AsyncHold::until_released();
    let mut a = pin!(service.call_async(a));
    let mut b = pin!(service.call_async(b));
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());
    assert_eq!(handle.concurrent_calls(), 2);
    release_a.send(()).unwrap();
    assert!(poll(a.as_mut()).is_ready());
    assert_eq!(handle.concurrent_calls(), 1);
    release_b.send(()).unwrap();
    assert!(poll(b.as_mut()).is_ready());
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b6_without_max_wait_a_full_bulkhead_resolves_to_bulkhead_full_on_first_poll() {
    let (_, registry) = manual();
    let service = service(&registry);
    let (hold, _release) = AsyncHold::until_released();
    let mut holder = pin!(service.call_async_no_wait(hold));
    assert!(poll(holder.as_mut()).is_pending());
    let mut rejected = pin!(service.call_async_no_wait(AsyncHold::none()));
    match poll(rejected.as_mut()) {
        Poll::Ready(result) => assert_full(result, &id("call_async_no_wait(AsyncHold)")),
        Poll::Pending => panic!("a full bulkhead without max_wait must not queue"),
    }
    assert_eq!(service.runs(), 1, "the rejected call never ran");
}

#[test]
fn b6_b8_a_queued_call_fails_when_the_clock_passes_max_wait() {
    let (clock, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_async(AsyncHold)")).unwrap();
    let (a, _release_a) = AsyncHold::until_released();
    let (b, _release_b) = AsyncHold::until_released();
    let mut a = pin!(service.call_async(a));
    let mut b = pin!(service.call_async(b));
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());
    let mut c = pin!(service.call_async(AsyncHold::none()));
    assert!(
        poll(c.as_mut()).is_pending(),
        "a full bulkhead with max_wait queues"
    );
    assert_eq!(handle.concurrent_calls(), 2);
    assert_eq!(handle.waiting_calls(), 1);

    clock.advance(Duration::from_millis(999));
    assert!(
        poll(c.as_mut()).is_pending(),
        "the clock has not passed max_wait yet"
    );
    clock.advance(Duration::from_millis(1));
    match poll(c.as_mut()) {
        Poll::Ready(result) => assert_full(result, &id("call_async(AsyncHold)")),
        Poll::Pending => panic!("max_wait has passed on the clock"),
    }
    assert_eq!(handle.waiting_calls(), 0);
    assert_eq!(service.runs(), 2);
}

#[test]
fn b6_b8_the_oldest_queued_call_gets_the_next_released_slot() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_async(AsyncHold)")).unwrap();
    let (a, release_a) = AsyncHold::until_released();
    let (b, _release_b) = AsyncHold::until_released();
    let mut a = pin!(service.call_async(a));
    let mut b = pin!(service.call_async(b));
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());
    let (older, release_older) = AsyncHold::until_released();
    let mut older = pin!(service.call_async(older));
    let mut newer = pin!(service.call_async(AsyncHold::none()));
    assert!(poll(older.as_mut()).is_pending());
    assert!(poll(newer.as_mut()).is_pending());
    assert_eq!(handle.waiting_calls(), 2);

    release_a.send(()).unwrap();
    assert!(poll(a.as_mut()).is_ready());
    // The slot went to the older waiter, not to a newcomer or the newer one.
    assert!(poll(newer.as_mut()).is_pending());
    let mut newcomer = pin!(service.call_async(AsyncHold::none()));
    assert!(poll(newcomer.as_mut()).is_pending());
    assert!(
        poll(older.as_mut()).is_pending(),
        "runs, held open by its AsyncHold"
    );
    assert_eq!(service.runs(), 3);
    assert_eq!(handle.waiting_calls(), 2);

    release_older.send(()).unwrap();
    assert!(poll(older.as_mut()).is_ready());
    assert!(matches!(poll(newer.as_mut()), Poll::Ready(Ok(4))));
}

#[test]
fn b6_dropping_a_running_call_frees_its_slot_at_once() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_async(AsyncHold)")).unwrap();
    let (hold, _release) = AsyncHold::until_released();
    let mut call = Box::pin(service.call_async(hold));
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(handle.concurrent_calls(), 1);
    drop(call);
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b6_a_cancelled_queued_call_leaves_the_queue_and_never_runs() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_async(AsyncHold)")).unwrap();
    let (a, release_a) = AsyncHold::until_released();
    let (b, release_b) = AsyncHold::until_released();
    let mut a = pin!(service.call_async(a));
    let mut b = pin!(service.call_async(b));
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());

    let mut queued = Box::pin(service.call_async(AsyncHold::none()));
    assert!(poll(queued.as_mut()).is_pending());
    assert_eq!(handle.waiting_calls(), 1);
    drop(queued);
    assert_eq!(handle.waiting_calls(), 0);

    release_a.send(()).unwrap();
    release_b.send(()).unwrap();
    assert!(poll(a.as_mut()).is_ready());
    assert!(poll(b.as_mut()).is_ready());
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "no slot was kept for the dropped call"
    );
    assert_eq!(service.runs(), 2, "the cancelled call never ran");
}

#[test]
fn b6_an_async_call_runs_on_a_tokio_runtime() {
    let (_, registry) = manual();
    let service = service(&registry);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let n = runtime
        .block_on(service.call_async(AsyncHold::none()))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn b1_b6_an_async_call_that_panics_gives_its_slot_back() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("panics_async()")).unwrap();
    for _ in 0..2 {
        let mut call = Box::pin(service.panics_async());
        let unwound =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll(call.as_mut())));
        assert!(unwound.is_err(), "the panic reaches the poller");
        drop(call);
        assert_eq!(handle.concurrent_calls(), 0);
    }
    assert_eq!(
        service.runs(),
        2,
        "the second call was admitted: the slot came back"
    );
}
