//! Bounded barging at the level of the semaphore, driven step by step: a
//! release offers the slot to a waiting thread, a sync newcomer takes it,
//! and after `barging` such offers the waiter is granted its slot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::queue::{DEFAULT_BARGING, Kind, WaiterKey};
use super::semaphore::{Acquired, Enqueued, Semaphore};
use crate::clock::{Clock, ManualClock, Wake};

fn wake() -> Wake {
    Wake::Thread(crate::loom::thread::current())
}

/// A semaphore of one slot, held, and a thread queued for it until
/// `deadline`.
fn held_with_a_waiter(deadline: Option<Instant>) -> (Semaphore, WaiterKey) {
    let semaphore = Semaphore::new(1, true);
    assert_eq!(semaphore.try_acquire(), Acquired::Slot);
    let Enqueued::Queued(key) = semaphore.enqueue(Kind::Thread, wake(), deadline, None) else {
        panic!("the only slot is held");
    };
    (semaphore, key)
}

fn newcomer(semaphore: &Semaphore, kind: Kind, now: Instant) -> Enqueued {
    semaphore.enqueue(kind, wake(), None, Some(now))
}

#[test]
fn a_waiting_thread_loses_at_most_barging_slots_then_gets_one() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    let (semaphore, waiter) = held_with_a_waiter(None);
    for _ in 0..DEFAULT_BARGING {
        semaphore.release(&clock);
        // The offered slot stays counted while the waiter wakes up...
        assert_eq!(semaphore.in_flight(), 1);
        // ...and a sync newcomer takes it instead of queueing.
        assert!(matches!(
            newcomer(&semaphore, Kind::Thread, clock.now()),
            Enqueued::Done(Acquired::Slot)
        ));
        assert_eq!(semaphore.in_flight(), 1);
        assert_eq!(semaphore.waiting(), 1, "the waiter is queued again");
        assert_eq!(semaphore.try_acquire(), Acquired::Full);
        assert_eq!(semaphore.poll_waiter(waiter, false, None), None);
    }
    semaphore.release(&clock);
    // Granted now: the next newcomer queues behind it.
    let Enqueued::Queued(late) = newcomer(&semaphore, Kind::Thread, clock.now()) else {
        panic!("the granted slot is the waiter's");
    };
    assert_eq!(
        semaphore.poll_waiter(waiter, false, None),
        Some(Acquired::Slot)
    );
    semaphore.release(&clock);
    assert_eq!(
        semaphore.poll_waiter(late, false, None),
        Some(Acquired::Slot)
    );
    semaphore.release(&clock);
    assert_eq!((semaphore.in_flight(), semaphore.waiting()), (0, 0));
    assert_eq!(semaphore.try_acquire(), Acquired::Slot);
}

#[test]
fn a_waiter_takes_its_offered_slot_if_no_newcomer_came() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    let (semaphore, waiter) = held_with_a_waiter(None);
    semaphore.release(&clock);
    assert_eq!(
        semaphore.poll_waiter(waiter, false, None),
        Some(Acquired::Slot)
    );
    assert_eq!(semaphore.in_flight(), 1);
    semaphore.release(&clock);
    assert_eq!(semaphore.in_flight(), 0);
}

#[test]
fn no_newcomer_takes_a_slot_offered_before_the_waiters_deadline_once_it_passed() {
    let manual = ManualClock::new();
    let clock: Arc<dyn Clock> = Arc::new(manual.clone());
    let (semaphore, waiter) = held_with_a_waiter(Some(clock.now() + Duration::from_secs(1)));
    semaphore.release(&clock);
    manual.advance(Duration::from_secs(1));
    assert!(matches!(
        newcomer(&semaphore, Kind::Thread, clock.now()),
        Enqueued::Queued(_)
    ));
    // Handed over in time, the slot is the waiter's even now.
    assert_eq!(
        semaphore.poll_waiter(waiter, true, None),
        Some(Acquired::Slot)
    );
}

#[test]
fn async_newcomers_never_take_a_slot_offered_to_a_thread() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    let (semaphore, waiter) = held_with_a_waiter(None);
    semaphore.release(&clock);
    assert!(matches!(
        newcomer(&semaphore, Kind::Task, clock.now()),
        Enqueued::Queued(_)
    ));
    assert_eq!(semaphore.try_acquire(), Acquired::Full);
    assert_eq!(
        semaphore.poll_waiter(waiter, false, None),
        Some(Acquired::Slot)
    );
}

#[test]
fn a_withdrawn_waiter_passes_its_offered_slot_on() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    let (semaphore, waiter) = held_with_a_waiter(None);
    let Enqueued::Queued(next) = semaphore.enqueue(Kind::Thread, wake(), None, None) else {
        panic!("the only slot is held");
    };
    semaphore.release(&clock);
    semaphore.cancel(waiter, &clock);
    assert_eq!(semaphore.in_flight(), 1, "handed to the next waiter");
    assert_eq!(
        semaphore.poll_waiter(next, false, None),
        Some(Acquired::Slot)
    );
}

#[test]
fn without_barging_a_newcomer_queues_behind_a_waking_thread() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new());
    let (semaphore, waiter) = held_with_a_waiter(None);
    semaphore.set_barging(0);
    semaphore.release(&clock);
    assert!(matches!(
        newcomer(&semaphore, Kind::Thread, clock.now()),
        Enqueued::Queued(_)
    ));
    assert_eq!(
        semaphore.poll_waiter(waiter, false, None),
        Some(Acquired::Slot)
    );
}
