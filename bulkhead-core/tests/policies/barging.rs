//! Bounded barging: a blocked thread handed a slot may lose it to a sync
//! newcomer while it wakes up, never more than the barging limit in a row.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::thread;
use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadConfig};

fn one_slot(barging: u32) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(3600))
        .build()
        .unwrap();
    let bulkhead = Bulkhead::new("barging", config);
    bulkhead.set_barging(barging);
    bulkhead
}

/// A thread that takes and gives back the only slot in a tight loop, and
/// one that wants it once: the slots the first gets from the moment it
/// sees the other queued until the other is served.
fn slots_taken_from_a_waiter(bulkhead: &Bulkhead) -> u32 {
    let served = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let permit = bulkhead.enter().expect("the clock never reaches an hour");
            served.store(true, SeqCst);
            drop(permit);
        });
        let mut taken = 0;
        loop {
            let permit = bulkhead.enter().expect("the clock never reaches an hour");
            if served.load(SeqCst) {
                break;
            }
            // Once the waiter is queued, every slot this thread gets (the
            // slot is the only one) is one the waiter was handed and lost.
            if taken > 0 || bulkhead.waiting_calls() > 0 {
                taken += 1;
            }
            drop(permit);
        }
        taken
    })
}

#[test]
fn no_waiting_thread_starves_behind_a_thread_that_keeps_coming_back() {
    for barging in [0, 1, 4, 16] {
        let bulkhead = one_slot(barging);
        for _ in 0..50 {
            let taken = slots_taken_from_a_waiter(&bulkhead);
            // The slot during which the loop first saw the waiter queued,
            // and at most `barging` slots handed to the waiter after it.
            assert!(
                taken <= barging + 1,
                "with barging {barging}, a newcomer took the slot {taken} times in a row"
            );
        }
        assert_eq!(bulkhead.concurrent_calls(), 0);
        assert_eq!(bulkhead.waiting_calls(), 0);
    }
}
