//! B7: sync and async methods sharing one bulkhead by `name`, and B9's
//! rule that shared names share one instance.

use std::pin::pin;
use std::task::Poll;
use std::thread;

use crate::support::{AsyncHold, Hold, Service, manual, poll, service, wait_until};

#[test]
fn b7_b9_methods_with_one_name_share_one_instance() {
    let (_, registry) = manual();
    let _service = service(&registry);
    let shared: Vec<_> = registry
        .snapshot()
        .bulkheads()
        .iter()
        .filter(|b| b.instance == "shared")
        .cloned()
        .collect();
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0].max_concurrent, 1);
}

#[test]
fn b7_a_sync_call_holding_the_shared_slot_makes_an_async_call_queue() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead("shared").unwrap();
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let sync = s.spawn(|| service.shared_sync(hold));
        wait_until("the sync call holds the slot", || {
            handle.concurrent_calls() == 1
        });
        let mut call = pin!(service.shared_async(AsyncHold::none()));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(handle.waiting_calls(), 1);
        release.release();
        assert_eq!(sync.join().unwrap().unwrap(), 1);
        // The released slot was handed to the queued async call.
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(2))));
    });
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b7_an_async_call_holding_the_shared_slot_makes_a_sync_call_wait() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead("shared").unwrap();
    let (hold, release) = AsyncHold::until_released();
    let mut call = pin!(service.shared_async(hold));
    assert!(poll(call.as_mut()).is_pending());
    thread::scope(|s| {
        let sync = s.spawn(|| service.shared_sync(Hold::none()));
        wait_until("the sync call waits", || handle.waiting_calls() == 1);
        release.send(()).unwrap();
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(1))));
        assert_eq!(sync.join().unwrap().unwrap(), 2);
    });
}

#[test]
fn b7_when_both_kinds_wait_neither_starves() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead("shared").unwrap();
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let holder = s.spawn(|| service.shared_sync(hold));
        wait_until("the holder runs", || handle.concurrent_calls() == 1);
        let blocked = s.spawn(|| service.shared_sync(Hold::none()));
        wait_until("a thread waits", || handle.waiting_calls() == 1);
        let mut queued = pin!(service.shared_async(AsyncHold::none()));
        assert!(poll(queued.as_mut()).is_pending());
        assert_eq!(handle.waiting_calls(), 2);

        release.release();
        holder.join().unwrap().unwrap();
        // Whichever got the slot first hands it to the other when it is done.
        let mut async_done = false;
        wait_until("both waiters ran", || {
            if !async_done {
                async_done = matches!(poll(queued.as_mut()), Poll::Ready(Ok(_)));
            }
            async_done && blocked.is_finished()
        });
        assert!(blocked.join().unwrap().is_ok());
    });
    assert_eq!(service.runs(), 3);
    assert_eq!(handle.concurrent_calls(), 0);
}
