//! Model checks of the queue's class order with loom: a release racing
//! the cancellation of the higher class's waiter never hands the slot to
//! the lower class while the higher one is owed it, and never loses it.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=4 cargo test -p
//! bulkhead-core --release --lib --target-dir target/loom queue`.

use std::sync::Arc;
use std::task::Waker;

use loom::thread;

use super::{Arrival, Kind};
use crate::bulkhead::semaphore::{Acquired, Enqueued, Semaphore};
use crate::clock::{Clock, ManualClock, Wake};

fn task(class: u8) -> (Arrival, Wake) {
    let arrival = Arrival {
        kind: Kind::Task,
        class,
        deadline: None,
        since: None,
    };
    (arrival, Wake::Task(Waker::noop().clone()))
}

#[test]
fn a_critical_waiter_is_served_before_an_older_sheddable_one_even_racing_its_cancel() {
    loom::model(|| {
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
        let semaphore = Arc::new(Semaphore::new(1, true));
        assert_eq!(semaphore.try_acquire(), Acquired::Slot);
        let queue = |class| {
            let (arrival, wake) = task(class);
            match semaphore.enqueue_as(arrival, wake, None) {
                Enqueued::Queued(key) => key,
                Enqueued::Done(acquired) => panic!("the only slot is held: {acquired:?}"),
            }
        };
        let sheddable = queue(0);
        let critical = queue(3);
        let releaser = {
            let (semaphore, clock) = (Arc::clone(&semaphore), Arc::clone(&clock));
            thread::spawn(move || {
                semaphore.release(&clock);
            })
        };
        match semaphore.poll_waiter(critical, false, None) {
            // The release came first: the slot went to Critical, and
            // Sheddable, older, still waits. Critical's call ends.
            Some(Acquired::Slot) => {
                assert_eq!(semaphore.poll_waiter(sheddable, false, None), None);
                semaphore.release(&clock);
            }
            // Still queued when it looked: it gives up, passing on a slot
            // handed to it meanwhile.
            None => semaphore.cancel(critical, &clock),
            other => panic!("a waiter without a deadline got {other:?}"),
        }
        releaser.join().unwrap();
        // Whatever the order, the slot reached Sheddable: never lost, never
        // duplicated.
        assert_eq!(
            semaphore.poll_waiter(sheddable, false, None),
            Some(Acquired::Slot)
        );
        assert_eq!((semaphore.in_flight(), semaphore.waiting()), (1, 0));
        semaphore.release(&clock);
        assert_eq!(semaphore.in_flight(), 0);
        assert_eq!(semaphore.try_acquire(), Acquired::Slot);
    });
}
