//! Unit tests of the queue: order, classes, disciplines.
use std::time::Duration;

use super::*;

fn wake() -> Wake {
    Wake::Thread(std::thread::current())
}

fn push(q: &mut WaitQueue, kind: Kind) -> WaiterKey {
    q.push(Arrival::normal(kind, None, None), wake())
}

#[test]
fn each_kind_is_served_in_arrival_order() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let t1 = push(&mut q, Kind::Task);
    let t2 = push(&mut q, Kind::Task);
    assert!(q.grant_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(t1), Status::Granted);
    assert_eq!(q.status(t2), Status::Queued);
    assert!(q.grant_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(t2), Status::Granted);
    assert!(q.grant_next(Some(now), ALL_CLASSES).granted.is_none());
}

#[test]
fn a_move_into_a_pool_tickets_waiters_queued_off_one_in_arrival_order() {
    let mut q = WaitQueue::new();
    let first = push(&mut q, Kind::Thread);
    let second = push(&mut q, Kind::Task);
    let third = push(&mut q, Kind::Thread);
    let mut pool_tickets = 40..;
    q.retick(|| pool_tickets.next().unwrap());
    let ticket = |key: WaiterKey| q.nodes[key.index as usize].ticket;
    assert_eq!((ticket(first), ticket(second), ticket(third)), (40, 41, 42));
    // Queued off a pool again after a move away: behind all of them.
    let fourth = push(&mut q, Kind::Task);
    assert_eq!(q.nodes[fourth.index as usize].ticket, 43);
}

#[test]
fn tasks_and_threads_alternate_when_both_wait() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let tasks: Vec<_> = (0..3).map(|_| push(&mut q, Kind::Task)).collect();
    let threads: Vec<_> = (0..3).map(|_| push(&mut q, Kind::Thread)).collect();
    let mut order = Vec::new();
    for _ in 0..6 {
        let _ = q.grant_next(Some(now), ALL_CLASSES);
        let granted = |keys: &[WaiterKey]| {
            keys.iter()
                .filter(|k| q.status(**k) == Status::Granted)
                .count()
        };
        order.push((granted(&tasks), granted(&threads)));
    }
    assert_eq!(order, [(1, 0), (1, 1), (2, 1), (2, 2), (3, 2), (3, 3)]);
}

#[test]
fn a_removed_waiter_leaves_the_middle_of_its_list() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let a = push(&mut q, Kind::Thread);
    let b = push(&mut q, Kind::Thread);
    let c = push(&mut q, Kind::Thread);
    let (status, wake) = q.remove(b);
    assert_eq!(status, Status::Queued);
    assert!(wake.is_some(), "the waker is handed back, not dropped");
    assert_eq!(q.len(), 2);
    let _ = q.grant_next(Some(now), ALL_CLASSES);
    let _ = q.grant_next(Some(now), ALL_CLASSES);
    assert_eq!(
        (q.status(a), q.status(c)),
        (Status::Granted, Status::Granted)
    );
    assert!(q.is_empty());
}

#[test]
fn a_stale_key_does_not_touch_the_reused_node() {
    let mut q = WaitQueue::new();
    let old = push(&mut q, Kind::Task);
    let _ = q.remove(old);
    let new = push(&mut q, Kind::Task);
    assert_eq!(q.status(old), Status::Gone);
    assert_eq!(q.remove(old).0, Status::Gone);
    assert_eq!(q.status(new), Status::Queued);
    assert_eq!(q.nodes.len(), 1, "the node was reused");
}

#[test]
fn a_hand_off_passes_over_waiters_whose_deadline_has_passed() {
    let start = Instant::now();
    let soon = Some(start + Duration::from_millis(10));
    let later = Some(start + Duration::from_millis(20));
    let mut q = WaitQueue::new();
    let early = q.push(Arrival::normal(Kind::Task, soon, None), wake());
    let patient = q.push(Arrival::normal(Kind::Task, later, None), wake());
    let forever = q.push(Arrival::normal(Kind::Task, None, None), wake());
    // At exactly the first deadline, that waiter is expired.
    assert!(
        q.grant_next(Some(start + Duration::from_millis(10)), ALL_CLASSES)
            .is_granted()
    );
    assert_eq!(q.status(early), Status::Expired);
    assert_eq!(q.status(patient), Status::Granted);
    assert_eq!(q.len(), 1);
    // Long after every deadline, a waiter without one is still served.
    assert!(
        q.grant_next(Some(start + Duration::from_secs(3600)), ALL_CLASSES)
            .is_granted()
    );
    assert_eq!(q.status(forever), Status::Granted);
    // The expired waiter leaves when it notices, with its waker.
    let (status, wake) = q.remove(early);
    assert_eq!(status, Status::Expired);
    assert!(wake.is_some());
    assert_eq!(q.status(early), Status::Gone);
}

#[test]
fn a_hand_off_finding_only_expired_waiters_serves_nobody() {
    let start = Instant::now();
    let mut q = WaitQueue::new();
    let task = q.push(Arrival::normal(Kind::Task, Some(start), None), wake());
    let thread = q.push(Arrival::normal(Kind::Thread, Some(start), None), wake());
    assert!(q.grant_next(Some(start), ALL_CLASSES).granted.is_none());
    assert!(q.is_empty());
    assert_eq!(q.status(task), Status::Expired);
    assert_eq!(q.status(thread), Status::Expired);
}

#[test]
fn a_thread_is_offered_its_slot_and_a_newcomer_may_take_it() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let waiter = push(&mut q, Kind::Thread);
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(waiter), Status::Offered);
    assert!(q.is_empty(), "an offered waiter is out of its list");
    assert!(q.take_offer(Some(now), NORMAL));
    assert_eq!(q.status(waiter), Status::Queued);
    assert_eq!(q.len(), 1, "back in its list");
    assert!(
        !q.take_offer(Some(now), NORMAL),
        "nothing is offered any more"
    );
    // Served again, it still has its waker.
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    let (status, wake) = q.remove(waiter);
    assert_eq!(status, Status::Offered);
    assert!(wake.is_some());
}

#[test]
fn a_waiter_loses_at_most_barging_offers_in_a_row() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let waiter = push(&mut q, Kind::Thread);
    for _ in 0..DEFAULT_BARGING {
        assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
        assert!(
            q.take_offer(Some(now), NORMAL),
            "a newcomer takes the offer"
        );
    }
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(waiter), Status::Granted);
    assert!(
        !q.take_offer(Some(now), NORMAL),
        "a granted slot is the waiter's"
    );
}

#[test]
fn a_passed_over_waiter_goes_back_ahead_of_later_ones() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let first = push(&mut q, Kind::Thread);
    let second = push(&mut q, Kind::Thread);
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    assert!(q.take_offer(Some(now), NORMAL));
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(first), Status::Offered);
    assert_eq!(q.status(second), Status::Queued);
}

#[test]
fn no_offer_is_taken_once_the_waiters_deadline_has_passed() {
    let start = Instant::now();
    let deadline = start + Duration::from_millis(10);
    let mut q = WaitQueue::new();
    let waiter = q.push(Arrival::normal(Kind::Thread, Some(deadline), None), wake());
    assert!(q.serve_next(Some(start), ALL_CLASSES).is_granted());
    assert!(!q.take_offer(Some(deadline), NORMAL));
    assert_eq!(q.status(waiter), Status::Offered, "the slot stays its own");
}

#[test]
fn tasks_are_granted_their_slot_never_offered_it() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let task = push(&mut q, Kind::Task);
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(task), Status::Granted);
    assert!(!q.take_offer(Some(now), NORMAL));
}

#[test]
fn one_offer_is_outstanding_at_a_time() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let first = push(&mut q, Kind::Thread);
    let second = push(&mut q, Kind::Thread);
    let _ = q.serve_next(Some(now), ALL_CLASSES);
    let _ = q.serve_next(Some(now), ALL_CLASSES);
    assert_eq!(q.status(first), Status::Offered);
    assert_eq!(q.status(second), Status::Granted);
    // Once the offered waiter took its slot, the next one may be offered.
    let _ = q.remove(first);
    let third = push(&mut q, Kind::Thread);
    let _ = q.serve_next(Some(now), ALL_CLASSES);
    assert_eq!(q.status(third), Status::Offered);
}

#[test]
fn without_barging_every_slot_is_granted() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    q.set_barging(0);
    let waiter = push(&mut q, Kind::Thread);
    let _ = q.serve_next(Some(now), ALL_CLASSES);
    assert_eq!(q.status(waiter), Status::Granted);
}

#[test]
fn an_expired_waiter_does_not_take_its_kinds_turn() {
    let start = Instant::now();
    let mut q = WaitQueue::new();
    let expired_task = q.push(Arrival::normal(Kind::Task, Some(start), None), wake());
    let task = q.push(Arrival::normal(Kind::Task, None, None), wake());
    let thread = q.push(Arrival::normal(Kind::Thread, None, None), wake());
    // Tasks go first; the expired task is passed over and the next task
    // is served in its place.
    assert!(q.grant_next(Some(start), ALL_CLASSES).is_granted());
    assert_eq!(q.status(expired_task), Status::Expired);
    assert_eq!(q.status(task), Status::Granted);
    assert_eq!(q.status(thread), Status::Queued);
}

fn push_class(q: &mut WaitQueue, kind: Kind, class: u8) -> WaiterKey {
    let arrival = Arrival {
        kind,
        class,
        deadline: None,
        since: None,
    };
    q.push(arrival, wake())
}

#[test]
fn the_highest_class_is_served_first_then_arrival_order() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let sheddable = push_class(&mut q, Kind::Task, 0);
    let normal = push_class(&mut q, Kind::Thread, NORMAL);
    let critical = push_class(&mut q, Kind::Task, 3);
    let high_first = push_class(&mut q, Kind::Thread, 2);
    let high_second = push_class(&mut q, Kind::Thread, 2);
    let mut order = Vec::new();
    for _ in 0..5 {
        let next = q.next_order(ALL_CLASSES).map(|order| order.class);
        assert!(q.grant_next(Some(now), ALL_CLASSES).is_granted());
        let served = [sheddable, normal, critical, high_first, high_second]
            .into_iter()
            .position(|key| q.status(key) == Status::Granted)
            .unwrap();
        order.push((served, next));
        let _ = q.remove([sheddable, normal, critical, high_first, high_second][served]);
    }
    assert_eq!(
        order,
        [
            (2, Some(3)),
            (3, Some(2)),
            (4, Some(2)),
            (1, Some(1)),
            (0, Some(0))
        ]
    );
    assert!(q.is_empty());
    assert_eq!(q.next_order(ALL_CLASSES), None);
}

#[test]
fn a_hand_off_serves_only_the_classes_it_is_told_are_eligible() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let sheddable = push_class(&mut q, Kind::Task, 0);
    let normal = push_class(&mut q, Kind::Task, NORMAL);
    // Only Sheddable may take this slot: the Normal waiter stays queued.
    assert!(q.has_eligible(0b0001));
    assert!(!q.has_eligible(0b1100));
    assert!(q.grant_next(Some(now), 0b0001).is_granted());
    assert_eq!(q.status(sheddable), Status::Granted);
    assert_eq!(q.status(normal), Status::Queued);
    // Nobody eligible: nobody served, the queue unchanged.
    assert!(!q.grant_next(Some(now), 0b1101).is_granted());
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting_per_class(), [0, 1, 0, 0]);
}

#[test]
fn tasks_and_threads_alternate_within_each_class() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let low_task = push_class(&mut q, Kind::Task, 0);
    let low_thread = push_class(&mut q, Kind::Thread, 0);
    let high_task = push_class(&mut q, Kind::Task, 2);
    let high_thread = push_class(&mut q, Kind::Thread, 2);
    let mut served = Vec::new();
    for _ in 0..4 {
        assert!(q.grant_next(Some(now), ALL_CLASSES).is_granted());
        let keys = [low_task, low_thread, high_task, high_thread];
        let index = keys
            .iter()
            .position(|key| q.status(*key) == Status::Granted)
            .unwrap();
        let _ = q.remove(keys[index]);
        served.push(index);
    }
    // Each class starts with a task, as a queue of one class does.
    assert_eq!(served, [2, 3, 0, 1]);
}

#[test]
fn a_newcomer_takes_an_offer_only_from_its_class_or_below() {
    let now = Instant::now();
    let mut q = WaitQueue::new();
    let high = push_class(&mut q, Kind::Thread, 2);
    assert!(q.serve_next(Some(now), ALL_CLASSES).is_granted());
    assert_eq!(q.status(high), Status::Offered);
    assert!(!q.take_offer(Some(now), NORMAL), "a lower class may not");
    assert!(q.take_offer(Some(now), 2), "its own class may");
    assert_eq!(q.status(high), Status::Queued);
}

#[test]
fn a_move_into_a_pool_tickets_every_class_in_arrival_order() {
    let mut q = WaitQueue::new();
    let first = push_class(&mut q, Kind::Thread, 0);
    let second = push_class(&mut q, Kind::Task, 3);
    let third = push_class(&mut q, Kind::Thread, NORMAL);
    let mut pool_tickets = 10..;
    q.retick(|| pool_tickets.next().unwrap());
    let ticket = |key: WaiterKey| q.nodes[key.index as usize].ticket;
    assert_eq!((ticket(first), ticket(second), ticket(third)), (10, 11, 12));
    assert_eq!(
        q.next_order(ALL_CLASSES),
        Some(Order {
            class: 3,
            ticket: 11
        })
    );
    assert!(
        Order {
            class: 3,
            ticket: 11
        } < Order {
            class: 0,
            ticket: 10
        }
    );
}

const MS: Duration = Duration::from_millis(1);

fn disciplined(queue: QueueDiscipline) -> WaitQueue {
    let mut q = WaitQueue::new();
    q.set_discipline(Discipline {
        queue,
        target: 5 * MS,
        interval: 100 * MS,
    });
    q
}

/// A waiter of `kind` and class Normal that arrived at `since`.
fn arrived(q: &mut WaitQueue, kind: Kind, since: Instant) -> WaiterKey {
    q.push(Arrival::normal(kind, None, Some(since)), wake())
}

/// Grants the next slot at `now`; which of `keys` got it.
fn granted_at(q: &mut WaitQueue, now: Instant, keys: &[WaiterKey]) -> Option<usize> {
    let served = q.grant_next(Some(now), ALL_CLASSES);
    assert!(served.refused.is_empty(), "nobody is refused here");
    served.granted?;
    let index = keys
        .iter()
        .position(|key| q.status(*key) == Status::Granted);
    if let Some(index) = index {
        let _ = q.remove(keys[index]);
    }
    index
}

#[test]
fn lifo_serves_the_oldest_until_it_has_waited_longer_than_the_target() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Lifo);
    let keys: Vec<_> = (0..4)
        .map(|i| arrived(&mut q, Kind::Task, start + i * MS))
        .collect();
    // The oldest has waited exactly the target: still first come, first
    // served.
    assert_eq!(granted_at(&mut q, start + 5 * MS, &keys), Some(0));
    // The oldest now (keys[1]) has waited exactly 5 ms: the same.
    assert_eq!(granted_at(&mut q, start + 6 * MS, &keys), Some(1));
    // One nanosecond more and the newest goes first.
    let past = start + 7 * MS + Duration::from_nanos(1);
    assert_eq!(granted_at(&mut q, past, &keys), Some(3));
    assert_eq!(granted_at(&mut q, past, &keys), Some(2));
    assert!(q.is_empty());
}

#[test]
fn lifo_without_a_reading_of_the_clock_serves_the_oldest() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Lifo);
    let old = arrived(&mut q, Kind::Task, start);
    let _new = arrived(&mut q, Kind::Task, start + MS);
    assert!(q.grant_next(None, ALL_CLASSES).is_granted());
    assert_eq!(q.status(old), Status::Granted);
    // A waiter whose arrival is unknown counts as just arrived.
    let mut q = disciplined(QueueDiscipline::Lifo);
    let unknown = q.push(Arrival::normal(Kind::Task, None, None), wake());
    let _new = arrived(&mut q, Kind::Task, start);
    assert!(
        q.grant_next(Some(start + MS * 60), ALL_CLASSES)
            .is_granted()
    );
    assert_eq!(q.status(unknown), Status::Granted);
}

#[test]
fn lifo_keeps_the_class_order_and_serves_the_newest_within_a_class() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Lifo);
    let old_high = push_class_at(&mut q, 2, start);
    let new_high = push_class_at(&mut q, 2, start + MS);
    let newest_low = push_class_at(&mut q, 0, start + 2 * MS);
    let keys = [old_high, new_high, newest_low];
    let late = start + 20 * MS;
    assert_eq!(granted_at(&mut q, late, &keys), Some(1));
    assert_eq!(granted_at(&mut q, late, &keys), Some(0));
    assert_eq!(granted_at(&mut q, late, &keys), Some(2));
}

fn push_class_at(q: &mut WaitQueue, class: u8, since: Instant) -> WaiterKey {
    let arrival = Arrival {
        kind: Kind::Task,
        class,
        deadline: None,
        since: Some(since),
    };
    q.push(arrival, wake())
}

#[test]
fn lifo_a_newcomer_taking_an_offer_puts_the_waiter_back_at_the_newest_end() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Lifo);
    let old = arrived(&mut q, Kind::Thread, start);
    let new = arrived(&mut q, Kind::Thread, start + MS);
    let late = Some(start + 20 * MS);
    assert!(q.serve_next(late, ALL_CLASSES).is_granted());
    assert_eq!(q.status(new), Status::Offered);
    assert!(q.take_offer(late, NORMAL));
    // Back where it came from: the newest again, served again.
    assert!(q.serve_next(late, ALL_CLASSES).is_granted());
    assert_eq!(q.status(new), Status::Offered);
    assert_eq!(q.status(old), Status::Queued);
}

#[test]
fn lifo_a_cancelled_newest_waiter_leaves_the_next_newest_to_be_served() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Lifo);
    let keys: Vec<_> = (0..3)
        .map(|i| arrived(&mut q, Kind::Task, start + i * MS))
        .collect();
    let (status, wake) = q.remove(keys[2]);
    assert_eq!(status, Status::Queued);
    assert!(wake.is_some());
    assert_eq!(granted_at(&mut q, start + 30 * MS, &keys), Some(1));
    assert_eq!(q.len(), 1);
}

/// A codel hand-off at `start + at`: the keys granted and refused.
fn codel_at(
    q: &mut WaitQueue,
    start: Instant,
    at: Duration,
    keys: &[WaiterKey],
) -> (Option<usize>, Vec<usize>) {
    let served = q.grant_next(Some(start + at), ALL_CLASSES);
    let mut refused: Vec<usize> = keys
        .iter()
        .enumerate()
        .filter(|(_, key)| q.status(**key) == Status::Refused)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(served.refused.len(), refused.len(), "one wake per refusal");
    let granted = keys
        .iter()
        .position(|key| q.status(*key) == Status::Granted);
    for index in refused.iter().copied().chain(granted) {
        let (_, wake) = q.remove(keys[index]);
        assert!(wake.is_none(), "the wake left with the hand-off");
    }
    refused.sort_unstable();
    (granted, refused)
}

#[test]
fn codel_refuses_only_once_an_interval_stood_above_the_target() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Codel);
    let mut keys: Vec<_> = (0..6).map(|_| arrived(&mut q, Kind::Task, start)).collect();
    // The first hand-off opens an interval (to 110 ms): served.
    assert_eq!(codel_at(&mut q, start, 10 * MS, &keys), (Some(0), vec![]));
    assert!(!q.codel.is_overloaded());
    // Within it, nobody is refused however long they waited.
    assert_eq!(codel_at(&mut q, start, 109 * MS, &keys), (Some(1), vec![]));
    // At its end, its shortest wait (10 ms) was above the target: the
    // queue is overloaded, but the hand-off that opens the next interval
    // (to 210 ms) serves.
    assert_eq!(codel_at(&mut q, start, 110 * MS, &keys), (Some(2), vec![]));
    assert!(q.codel.is_overloaded());
    // Then waiters past twice the target are refused, until one that has
    // not waited that long is found.
    keys.push(arrived(&mut q, Kind::Task, start + 118 * MS));
    assert_eq!(
        codel_at(&mut q, start, 120 * MS, &keys),
        (Some(6), vec![3, 4, 5])
    );
    assert_eq!(q.refused(), [0, 3, 0, 0]);
    assert!(q.is_empty());
    // The interval's shortest wait was 2 ms: at its end the queue is no
    // longer overloaded, and an old waiter is served again.
    keys.push(arrived(&mut q, Kind::Task, start + 150 * MS));
    keys.push(arrived(&mut q, Kind::Task, start + 150 * MS));
    assert_eq!(codel_at(&mut q, start, 210 * MS, &keys), (Some(7), vec![]));
    assert!(!q.codel.is_overloaded());
    assert_eq!(codel_at(&mut q, start, 211 * MS, &keys), (Some(8), vec![]));
}

#[test]
fn codel_refuses_a_waiter_only_past_twice_the_target() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Codel);
    let first: Vec<_> = (0..2).map(|_| arrived(&mut q, Kind::Task, start)).collect();
    assert_eq!(codel_at(&mut q, start, 10 * MS, &first), (Some(0), vec![]));
    assert_eq!(codel_at(&mut q, start, 110 * MS, &first), (Some(1), vec![]));
    assert!(q.codel.is_overloaded());
    // Exactly twice the target: served; a nanosecond more: refused.
    let at = 120 * MS;
    let exactly = arrived(&mut q, Kind::Task, start + at - 10 * MS);
    let keys = [exactly];
    assert_eq!(codel_at(&mut q, start, at, &keys), (Some(0), vec![]));
    let past = arrived(
        &mut q,
        Kind::Task,
        start + at - 10 * MS - Duration::from_nanos(1),
    );
    let keys = [past];
    assert_eq!(codel_at(&mut q, start, at, &keys), (None, vec![0]));
    assert_eq!(q.refused(), [0, 1, 0, 0]);
}

#[test]
fn codel_refuses_nobody_without_a_reading_of_the_clock() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Codel);
    let keys: Vec<_> = (0..3)
        .map(|_| arrived(&mut q, Kind::Thread, start))
        .collect();
    assert_eq!(codel_at(&mut q, start, 10 * MS, &keys), (Some(0), vec![]));
    assert_eq!(codel_at(&mut q, start, 110 * MS, &keys), (Some(1), vec![]));
    assert!(q.codel.is_overloaded());
    assert!(q.grant_next(None, ALL_CLASSES).is_granted());
    assert_eq!(q.status(keys[2]), Status::Granted);
}

#[test]
fn codel_passes_over_an_expired_waiter_without_counting_it() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Codel);
    let keys: Vec<_> = (0..2).map(|_| arrived(&mut q, Kind::Task, start)).collect();
    assert_eq!(codel_at(&mut q, start, 10 * MS, &keys), (Some(0), vec![]));
    assert_eq!(codel_at(&mut q, start, 110 * MS, &keys), (Some(1), vec![]));
    let deadline = Some(start + 115 * MS);
    let expired = q.push(Arrival::normal(Kind::Task, deadline, Some(start)), wake());
    assert!(
        !q.grant_next(Some(start + 120 * MS), ALL_CLASSES)
            .is_granted()
    );
    assert_eq!(q.status(expired), Status::Expired);
    assert_eq!(q.refused(), [0; CLASSES]);
}

#[test]
fn a_refused_waiter_leaves_with_its_status_and_without_its_waker() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Codel);
    let keys: Vec<_> = (0..3)
        .map(|_| arrived(&mut q, Kind::Thread, start))
        .collect();
    assert_eq!(codel_at(&mut q, start, 10 * MS, &keys), (Some(0), vec![]));
    assert_eq!(codel_at(&mut q, start, 110 * MS, &keys), (Some(1), vec![]));
    let served = q.serve_next(Some(start + 120 * MS), ALL_CLASSES);
    assert!(!served.is_granted());
    let mut wakes = Vec::new();
    assert!(!served.into_wakes(&mut wakes));
    assert_eq!(wakes.len(), 1, "the refused waiter is to be woken");
    assert_eq!(q.remove(keys[2]).0, Status::Refused);
    assert_eq!(q.status(keys[2]), Status::Gone);
}

#[test]
fn a_new_discipline_starts_codel_afresh() {
    let start = Instant::now();
    let mut q = disciplined(QueueDiscipline::Codel);
    let keys: Vec<_> = (0..3).map(|_| arrived(&mut q, Kind::Task, start)).collect();
    assert_eq!(codel_at(&mut q, start, 10 * MS, &keys), (Some(0), vec![]));
    assert_eq!(codel_at(&mut q, start, 110 * MS, &keys), (Some(1), vec![]));
    assert!(q.codel.is_overloaded());
    q.set_discipline(Discipline {
        queue: QueueDiscipline::Codel,
        target: 6 * MS,
        interval: 100 * MS,
    });
    assert!(!q.codel.is_overloaded());
    assert_eq!(codel_at(&mut q, start, 120 * MS, &keys), (Some(2), vec![]));
}

#[test]
fn fifo_reads_no_arrival_time() {
    let start = Instant::now();
    let mut q = WaitQueue::new();
    let keys: Vec<_> = (0..2)
        .map(|i| arrived(&mut q, Kind::Task, start + i * MS))
        .collect();
    assert_eq!(granted_at(&mut q, start + 60 * MS, &keys), Some(0));
}
