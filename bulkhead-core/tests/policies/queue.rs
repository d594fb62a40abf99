//! The queue disciplines through real bulkheads on a `ManualClock`: async
//! tasks polled by hand, and blocked threads, served `lifo` and refused by
//! `codel` as the clock says, every refused waiter woken and counted.
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadEventKind, BulkheadFull, BulkheadPermit, Enter, Event,
    EventBus, ManualClock, PolicyContext, QueueDiscipline, SharedPool,
};

const MS: Duration = Duration::from_millis(1);

fn bulkhead(clock: &ManualClock, queue: QueueDiscipline, events: Option<&EventBus>) -> Bulkhead {
    let config = config(queue);
    let mut context = PolicyContext::new(Arc::new(clock.clone()));
    if let Some(events) = events {
        context = context.with_events(events.clone());
    }
    Bulkhead::with_context("queue", config, context)
}

fn config(queue: QueueDiscipline) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(3600))
        .queue(queue)
        .queue_target(5 * MS)
        .queue_interval(100 * MS)
        .build()
        .unwrap()
}

/// Counts its wake-ups.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

struct Panics;

impl Wake for Panics {
    fn wake(self: Arc<Self>) {
        panic!("a waker that panics");
    }
}

/// An `enter_async` future polled by hand with a waker of its own.
struct Task<'a> {
    future: Pin<Box<Enter<'a>>>,
    waker: Waker,
    woken: Arc<Counter>,
}

impl<'a> Task<'a> {
    /// Queues a task on `bulkhead` (which must be full).
    fn queued(bulkhead: &'a Bulkhead) -> Self {
        let woken = Arc::new(Counter::default());
        let mut task = Task {
            future: Box::pin(bulkhead.enter_async()),
            waker: Waker::from(Arc::clone(&woken)),
            woken,
        };
        assert!(task.poll().is_none(), "the bulkhead is full: it queues");
        task
    }

    /// The same, woken through a waker that panics.
    fn queued_panicking(bulkhead: &'a Bulkhead) -> Self {
        let mut task = Task::queued(bulkhead);
        task.waker = Waker::from(Arc::new(Panics));
        assert!(task.poll().is_none(), "still queued, with the new waker");
        task
    }

    fn poll(&mut self) -> Option<Result<BulkheadPermit<'a>, BulkheadFull>> {
        let mut cx = Context::from_waker(&self.waker);
        match self.future.as_mut().poll(&mut cx) {
            Poll::Ready(result) => Some(result),
            Poll::Pending => None,
        }
    }

    fn woken(&self) -> usize {
        self.woken.0.load(SeqCst)
    }
}

/// Which of `tasks` is ready with a slot now (exactly one must be).
fn served<'a>(tasks: &mut [Task<'a>]) -> (usize, BulkheadPermit<'a>) {
    let mut ready = tasks
        .iter_mut()
        .enumerate()
        .filter(|(_, task)| task.woken() > 0)
        .filter_map(|(i, task)| task.poll().map(|result| (i, result)));
    let (index, result) = ready.next().expect("a task was handed the slot");
    assert!(ready.next().is_none(), "one slot, one task served");
    (index, result.expect("handed a slot"))
}

#[test]
fn lifo_hands_the_slot_to_the_newest_task_once_the_oldest_waited_past_the_target() {
    let clock = ManualClock::new();
    let lifo = bulkhead(&clock, QueueDiscipline::Lifo, None);
    let held = lifo.try_enter().unwrap();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        tasks.push(Task::queued(&lifo));
        clock.advance(MS);
    }
    // At 3 ms the oldest has waited 3 ms: first come, first served.
    drop(held);
    let (first, permit) = served(&mut tasks);
    assert_eq!(first, 0);
    clock.advance(5 * MS);
    // At 8 ms the oldest left (queued at 1 ms) has waited 7 ms: the newest.
    drop(permit);
    let (second, permit) = served(&mut tasks[1..]);
    assert_eq!(second + 1, 2);
    drop(permit);
    let (third, _permit) = served(&mut tasks[1..2]);
    assert_eq!(third + 1, 1);
    assert_eq!(lifo.refused_by_queue(), [0; 4]);
}

#[test]
fn fifo_hands_the_slot_to_the_oldest_task_however_long_it_waited() {
    let clock = ManualClock::new();
    let fifo = bulkhead(&clock, QueueDiscipline::Fifo, None);
    let held = fifo.try_enter().unwrap();
    let mut tasks: Vec<Task<'_>> = Vec::new();
    for _ in 0..2 {
        tasks.push(Task::queued(&fifo));
        clock.advance(MS);
    }
    clock.advance(Duration::from_secs(60));
    drop(held);
    assert_eq!(served(&mut tasks).0, 0);
}

/// Drives a codel bulkhead to overload with two hand-offs an interval
/// apart (the shortest wait of the first interval, 10 ms, above the 5 ms
/// target), leaving its slot held by the permit returned, at 110 ms.
fn overloaded<'a>(clock: &ManualClock, codel: &'a Bulkhead) -> BulkheadPermit<'a> {
    let held = codel.try_enter().unwrap();
    let mut tasks = vec![Task::queued(codel), Task::queued(codel)];
    clock.advance(10 * MS);
    drop(held);
    let (_, first) = served(&mut tasks);
    clock.advance(100 * MS);
    drop(first);
    let (_, second) = served(&mut tasks[1..]);
    second
}

#[test]
fn codel_refuses_tasks_that_waited_past_twice_the_target_once_overloaded() {
    let clock = ManualClock::new();
    let events = EventBus::new(64);
    let mut stream = events.subscribe();
    let codel = bulkhead(&clock, QueueDiscipline::Codel, Some(&events));
    let held = overloaded(&clock, &codel);
    let mut old: Vec<Task<'_>> = (0..2).map(|_| Task::queued(&codel)).collect();
    clock.advance(10 * MS);
    let mut fresh = Task::queued(&codel);
    clock.advance(MS);
    // At 121 ms: the two that waited 11 ms are refused and woken, the one
    // that waited 1 ms is handed the slot.
    drop(held);
    for task in &mut old {
        assert_eq!(task.woken(), 1, "a refused task is woken");
        assert!(task.poll().unwrap().is_err(), "refused: BulkheadFull");
    }
    assert!(fresh.woken() > 0);
    let permit = fresh.poll().unwrap().expect("the fresh task is served");
    assert_eq!(codel.refused_by_queue(), [0, 2, 0, 0]);
    assert_eq!((codel.concurrent_calls(), codel.waiting_calls()), (1, 0));
    drop(permit);
    assert_eq!(codel.concurrent_calls(), 0);
    let waited_rejections = std::iter::from_fn(|| stream.try_recv())
        .filter(|event| {
            matches!(
                event,
                Event::Bulkhead(event)
                    if matches!(event.kind, BulkheadEventKind::Rejected { waited: true, .. })
            )
        })
        .count();
    assert_eq!(waited_rejections, 2, "each refusal is one rejection");
}

#[test]
fn a_refusal_with_nobody_left_frees_the_slot() {
    let clock = ManualClock::new();
    let codel = bulkhead(&clock, QueueDiscipline::Codel, None);
    let held = overloaded(&clock, &codel);
    let mut late = Task::queued(&codel);
    clock.advance(20 * MS);
    drop(held);
    assert!(late.poll().unwrap().is_err());
    assert_eq!(codel.concurrent_calls(), 0);
    assert!(codel.try_enter().is_ok(), "the slot is free for newcomers");
}

#[test]
fn a_panicking_waker_of_a_refused_task_does_not_keep_the_others_asleep() {
    let clock = ManualClock::new();
    let codel = bulkhead(&clock, QueueDiscipline::Codel, None);
    let held = overloaded(&clock, &codel);
    let mut panicking = Task::queued_panicking(&codel);
    let mut other = Task::queued(&codel);
    clock.advance(20 * MS);
    let released = catch_unwind(AssertUnwindSafe(|| drop(held)));
    assert!(released.is_err(), "the waker's panic goes on");
    assert_eq!(other.woken(), 1, "woken despite the panic before it");
    assert!(other.poll().unwrap().is_err());
    assert!(panicking.poll().unwrap().is_err());
    assert_eq!(codel.refused_by_queue(), [0, 2, 0, 0]);
    assert_eq!((codel.concurrent_calls(), codel.waiting_calls()), (0, 0));
}

#[test]
fn a_cancelled_task_is_not_refused_nor_counted() {
    let clock = ManualClock::new();
    let codel = bulkhead(&clock, QueueDiscipline::Codel, None);
    let held = overloaded(&clock, &codel);
    let cancelled = Task::queued(&codel);
    let mut kept = Task::queued(&codel);
    clock.advance(20 * MS);
    drop(cancelled);
    drop(held);
    assert!(kept.poll().unwrap().is_err());
    assert_eq!(codel.refused_by_queue(), [0, 1, 0, 0]);
}

/// A thread waiting in `enter`: it says on `outcomes` (with its `id`)
/// whether it got the slot, and if it did, holds it until told to let go.
fn spawn_blocked<'s>(
    scope: &'s thread::Scope<'s, '_>,
    bulkhead: &'s Bulkhead,
    id: usize,
    outcomes: &mpsc::Sender<(usize, bool)>,
) -> mpsc::Sender<()> {
    let outcomes = outcomes.clone();
    let (release, release_rx) = mpsc::channel::<()>();
    let queued_before = bulkhead.waiting_calls();
    scope.spawn(move || match bulkhead.enter() {
        Ok(permit) => {
            outcomes.send((id, true)).unwrap();
            let _ = release_rx.recv();
            drop(permit);
        }
        Err(_) => outcomes.send((id, false)).unwrap(),
    });
    // In the queue before the test moves the clock on.
    while bulkhead.waiting_calls() <= queued_before {
        thread::yield_now();
    }
    release
}

#[test]
fn lifo_hands_the_slot_to_the_newest_thread_once_the_oldest_waited_past_the_target() {
    let clock = ManualClock::new();
    let lifo = bulkhead(&clock, QueueDiscipline::Lifo, None);
    let (outcomes, received) = mpsc::channel();
    let mut order = Vec::new();
    thread::scope(|s| {
        let held = lifo.try_enter().unwrap();
        let mut releases = Vec::new();
        for id in 0..3 {
            releases.push(spawn_blocked(s, &lifo, id, &outcomes));
            clock.advance(MS);
        }
        clock.advance(7 * MS);
        // At 10 ms the oldest has waited 10 ms: the newest first, then the
        // newest left, each taking the slot as the one before lets go.
        drop(held);
        for _ in 0..3 {
            let (id, got) = received.recv().unwrap();
            assert!(got);
            order.push(id);
            releases[id].send(()).unwrap();
        }
    });
    assert_eq!(order, [2, 1, 0]);
}

#[test]
fn codel_refuses_a_blocked_thread_that_waited_past_twice_the_target() {
    let clock = ManualClock::new();
    let codel = bulkhead(&clock, QueueDiscipline::Codel, None);
    let (outcomes, received) = mpsc::channel();
    thread::scope(|s| {
        let held = overloaded(&clock, &codel);
        let _old = spawn_blocked(s, &codel, 0, &outcomes);
        clock.advance(15 * MS);
        let fresh = spawn_blocked(s, &codel, 1, &outcomes);
        clock.advance(MS);
        // At 126 ms: the thread that waited 16 ms is refused and woken;
        // the one that waited 1 ms gets the slot.
        drop(held);
        let mut answers = [received.recv().unwrap(), received.recv().unwrap()];
        answers.sort_unstable();
        assert_eq!(answers, [(0, false), (1, true)]);
        fresh.send(()).unwrap();
    });
    assert_eq!(codel.refused_by_queue(), [0, 1, 0, 0]);
    assert_eq!((codel.concurrent_calls(), codel.waiting_calls()), (0, 0));
}

#[test]
fn on_a_pool_the_disciplines_hold_for_the_slots_it_serves() {
    let clock = ManualClock::new();
    let pool = SharedPool::new(1);
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let codel = Bulkhead::with_pool("pooled", config(QueueDiscipline::Codel), context, &pool);
    let held = overloaded(&clock, &codel);
    let mut old = Task::queued(&codel);
    clock.advance(20 * MS);
    let mut fresh = Task::queued(&codel);
    clock.advance(MS);
    drop(held);
    assert!(old.poll().unwrap().is_err(), "refused on the pool too");
    let permit = fresh.poll().unwrap().expect("served");
    assert_eq!(codel.refused_by_queue(), [0, 1, 0, 0]);
    drop(permit);
    assert_eq!((codel.concurrent_calls(), pool.borrowed()), (0, 0));

    let lifo = Bulkhead::with_pool(
        "pooled-lifo",
        config(QueueDiscipline::Lifo),
        PolicyContext::new(Arc::new(clock.clone())),
        &SharedPool::new(1),
    );
    let held = lifo.try_enter().unwrap();
    let mut tasks = vec![Task::queued(&lifo)];
    clock.advance(MS);
    tasks.push(Task::queued(&lifo));
    clock.advance(10 * MS);
    drop(held);
    assert_eq!(served(&mut tasks).0, 1, "the newest first");
}

#[test]
fn a_new_discipline_orders_the_waiters_already_queued() {
    let clock = ManualClock::new();
    let bulkhead = bulkhead(&clock, QueueDiscipline::Fifo, None);
    let held = bulkhead.try_enter().unwrap();
    let mut tasks = vec![Task::queued(&bulkhead)];
    clock.advance(MS);
    tasks.push(Task::queued(&bulkhead));
    clock.advance(10 * MS);
    let err = bulkhead
        .set_queue(QueueDiscipline::Lifo, 5 * MS, 5 * MS)
        .unwrap_err();
    assert_eq!(err.code(), "ATR-019");
    assert_eq!(
        bulkhead.config().queue(),
        QueueDiscipline::Fifo,
        "unchanged"
    );
    bulkhead
        .set_queue(QueueDiscipline::Lifo, 5 * MS, 100 * MS)
        .unwrap();
    assert_eq!(bulkhead.config().queue(), QueueDiscipline::Lifo);
    drop(held);
    assert_eq!(served(&mut tasks).0, 1, "the newest first now");
}
