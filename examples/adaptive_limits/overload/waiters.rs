//! Waiting callers: what `simulate.rs` lacks. Real `Bulkhead`s of a
//! registry on a `ManualClock`, entered with `enter_async` futures polled
//! by hand, so that the queue, its order and its deadlines under test are
//! the library's, not a model of them.
//!
//! Each caller arrives at its time, makes its `enter_async` future (wrapped
//! by the arm in whatever per-call scope it adds) and polls it once: a slot
//! starts its call, a refusal ends it, `Pending` leaves it waiting. A
//! waiting caller's waker records its id when the library wakes it; after
//! every event (an arrival, a call ending and dropping its permit, the
//! clock moved to a waiter's `max_wait` or to a caller's patience) the
//! callers woken are polled again, until none is. A caller whose patience
//! runs out while it waits drops its future (the library's cancellation);
//! one whose patience runs out while its call runs is not told, as a
//! dependency is not: its answer comes, too late to count.
//!
//! The dependency is `simulate.rs`'s: capacity `C` (the model's), each call
//! needing its work (uniform within ±10 % of `B`, drawn by `simulate.rs`'s
//! seeded generator) at full speed, processor sharing above `C` calls (each
//! progresses at `C / n`). The arms here never admit more than `C` calls in
//! all, so every call runs at full speed once started.
//!
//! Deterministic: fixed seeds, one thread, the clock moved only here.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use bulkhead::clock::Clock;
use bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit, ManualClock, Registry, RegistryError};

use crate::model;
use crate::scenarios::Service;
use crate::simulate::{Random, secs};

/// A caller's entering future, as the harness polls it: a permit, or
/// `None` for a refusal (whatever the library's reason).
pub(crate) type Entering<'a> = Pin<Box<dyn Future<Output = Option<BulkheadPermit<'a>>> + 'a>>;

/// Who is calling.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Class {
    Critical,
    /// A caller that sets no class.
    Normal,
    Sheddable,
}

/// One caller: when it arrives, its class, and its call's work (seconds at
/// full speed).
#[derive(Clone, Copy)]
pub(crate) struct Caller {
    pub(crate) at: u64,
    pub(crate) class: Class,
    pub(crate) work: f64,
}

pub(crate) fn nanos(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

/// Poisson arrivals of `class` until `end` (ns), at `rate(t)` calls per
/// second at time `t` (the rate at each arrival draws the next gap, as
/// `simulate.rs` does), each with its work drawn from the same generator:
/// `seed` makes the stream.
pub(crate) fn poisson(seed: u64, class: Class, end: u64, rate: impl Fn(u64) -> f64) -> Vec<Caller> {
    let mut random = Random(seed);
    let mut callers = Vec::new();
    let mut at = 0u64;
    loop {
        let gap = -(1.0 - random.unit()).ln() / rate(at);
        at += nanos(gap).max(1);
        if at >= end {
            return callers;
        }
        let work = random.work(model().b, Service::Model);
        callers.push(Caller { at, class, work });
    }
}

/// The streams in order of arrival (a tie: the earlier stream first).
pub(crate) fn merge(streams: Vec<Vec<Caller>>) -> Vec<Caller> {
    let mut all: Vec<Caller> = streams.into_iter().flatten().collect();
    all.sort_by_key(|c| c.at);
    all
}

/// The bulkheads of one arm: instances of a registry on a `ManualClock` of
/// its own, configured from TOML (so an arm adds a key, not code).
pub(crate) struct Lanes {
    pub(crate) clock: ManualClock,
    bulkheads: Vec<Bulkhead>,
    _registry: Registry,
}

impl Lanes {
    /// The bulkheads `ids`, configured by `toml`.
    ///
    /// # Errors
    ///
    /// The registry's, for a key or value it does not know.
    pub(crate) fn new(toml: &str, ids: &[&str]) -> Result<Lanes, RegistryError> {
        let clock = ManualClock::new();
        let registry = Registry::builder()
            .clock(clock.clone())
            .config_toml(toml)?
            .build();
        let bulkheads = ids
            .iter()
            .map(|id| registry.bulkhead_policy(id, "overload", &BulkheadConfig::builder()))
            .collect::<Result<_, _>>()?;
        Ok(Lanes {
            clock,
            bulkheads,
            _registry: registry,
        })
    }

    pub(crate) fn bulkhead(&self, lane: usize) -> &Bulkhead {
        &self.bulkheads[lane]
    }
}

/// How an arm's callers enter: the lane of each class, when the library's
/// own timers need the clock moved (each waiter's `max_wait` after its
/// arrival), each caller's patience, and the scopes its future is polled
/// in: its class's, its deadline's (its arrival plus its patience, on the
/// lanes' clock).
pub(crate) struct Door {
    pub(crate) lane: fn(Class) -> usize,
    pub(crate) max_wait: u64,
    pub(crate) patience: u64,
    pub(crate) class: Option<Scope<Class>>,
    pub(crate) deadline: Option<Scope<Instant>>,
}

/// How a caller's future is put in a scope: its class's, or its
/// deadline's.
pub(crate) type Scope<T> = for<'a> fn(T, Entering<'a>) -> Entering<'a>;

/// What became of one caller (times in ns).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Fate {
    /// When its call started (it got a slot).
    pub(crate) started: Option<u64>,
    /// When its call ended (its answer came, late or not).
    pub(crate) done: Option<u64>,
    /// When it was refused.
    pub(crate) refused: Option<u64>,
    /// Whether it waited (its first poll was `Pending`).
    pub(crate) waited: bool,
    /// Whether it gave up waiting (dropped its future).
    pub(crate) gave_up: bool,
}

/// One arm's run.
pub(crate) struct Outcome {
    pub(crate) fates: Vec<Fate>,
    /// Per second of the run, the slot-seconds the dependency worked (at
    /// most `C` a second).
    pub(crate) busy: Vec<f64>,
    /// Wake-ups the callers' wakers recorded, and those after which the
    /// future was still pending (a wake-up for nothing).
    pub(crate) wakeups: u64,
    pub(crate) idle_wakeups: u64,
}

impl Outcome {
    /// The share of the dependency's capacity left idle from `from` to
    /// `to` (whole seconds).
    pub(crate) fn idle(&self, from: usize, to: usize) -> f64 {
        let to = to.min(self.busy.len());
        if to <= from {
            return f64::NAN;
        }
        let busy: f64 = self.busy[from..to].iter().sum();
        (1.0 - busy / (model().c * (to - from) as f64)).max(0.0)
    }
}

/// A waker that records its caller's id (the keyed scenario's callers'
/// too).
pub(crate) struct Flag {
    pub(crate) id: usize,
    pub(crate) woken: Arc<Mutex<Vec<usize>>>,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.lock().expect("one thread").push(self.id);
    }
}

/// A timer of the harness: a waiter's `max_wait` is over (the clock moves
/// there, the library wakes it), or its caller's patience.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    MaxWait,
    Patience,
}

struct Run<'a, 'c> {
    lanes: &'a Lanes,
    door: &'c Door,
    callers: &'c [Caller],
    now: u64,
    virtual_time: f64,
    in_service: BinaryHeap<Reverse<(u64, usize)>>,
    permits: BTreeMap<usize, BulkheadPermit<'a>>,
    waiting: BTreeMap<usize, (Entering<'a>, Waker)>,
    timers: BinaryHeap<Reverse<(u64, Timer, usize)>>,
    woken: Arc<Mutex<Vec<usize>>>,
    outcome: Outcome,
}

/// Runs `callers` (in order of arrival) through `door` into `lanes` until
/// `end` (ns).
pub(crate) fn run(lanes: &Lanes, door: &Door, callers: &[Caller], end: u64) -> Outcome {
    let seconds = end.div_ceil(1_000_000_000) as usize;
    let mut run = Run {
        lanes,
        door,
        callers,
        now: 0,
        virtual_time: 0.0,
        in_service: BinaryHeap::new(),
        permits: BTreeMap::new(),
        waiting: BTreeMap::new(),
        timers: BinaryHeap::new(),
        woken: Arc::new(Mutex::new(Vec::new())),
        outcome: Outcome {
            fates: vec![Fate::default(); callers.len()],
            busy: vec![0.0; seconds],
            wakeups: 0,
            idle_wakeups: 0,
        },
    };
    let mut next = 0;
    loop {
        let c = model().c;
        let n = run.in_service.len() as f64;
        let speed = if n > c { c / n } else { 1.0 };
        let next_departure = run
            .in_service
            .peek()
            .map_or(u64::MAX, |Reverse((finish, _))| {
                let left = (f64::from_bits(*finish) - run.virtual_time).max(0.0);
                run.now + nanos(left / speed).max(1)
            });
        let next_timer = run.timers.peek().map_or(u64::MAX, |Reverse((at, ..))| *at);
        let next_arrival = callers.get(next).map_or(u64::MAX, |c| c.at);
        let t = next_departure.min(next_timer).min(next_arrival);
        if t >= end {
            break;
        }
        run.work(t, n.min(c));
        run.virtual_time += secs(t - run.now) * speed;
        run.now = t;
        let elapsed = lanes.clock.elapsed();
        let target = Duration::from_nanos(t);
        if target > elapsed {
            // Wakes the waiters whose `max_wait` (or deadline) is over.
            lanes.clock.advance(target - elapsed);
        }
        run.poll_woken();
        if t == next_departure {
            let Reverse((_, id)) = run.in_service.pop().expect("a call in service");
            run.outcome.fates[id].done = Some(t);
            // Releases the slot: the library hands it on and wakes its taker.
            drop(run.permits.remove(&id));
        } else if t == next_timer {
            let Reverse((_, timer, id)) = run.timers.pop().expect("a timer");
            if timer == Timer::Patience && run.waiting.remove(&id).is_some() {
                // The caller gives up: its future is dropped, which leaves
                // the queue (and passes on a slot handed to it meanwhile).
                run.outcome.fates[id].gave_up = true;
            }
        } else {
            run.arrive(next);
            next += 1;
        }
        run.poll_woken();
    }
    // What is still waiting or running at the end is dropped here, before
    // the lanes.
    let Run { outcome, .. } = run;
    outcome
}

impl<'a> Run<'a, '_> {
    /// Adds the dependency's work from `self.now` to `t`, `n` slots busy,
    /// to the seconds it spans.
    fn work(&mut self, t: u64, n: f64) {
        let mut from = self.now;
        while from < t {
            let second = (from / 1_000_000_000) as usize;
            let until = t.min((second as u64 + 1) * 1_000_000_000);
            if let Some(busy) = self.outcome.busy.get_mut(second) {
                *busy += n * secs(until - from);
            }
            from = until;
        }
    }

    fn arrive(&mut self, id: usize) {
        let caller = self.callers[id];
        let bulkhead = self.lanes.bulkhead((self.door.lane)(caller.class));
        let entering: Entering<'a> = Box::pin(async move { bulkhead.enter_async().await.ok() });
        let entering = match self.door.class {
            Some(scope) => scope(caller.class, entering),
            None => entering,
        };
        let deadline = self.lanes.clock.now() + Duration::from_nanos(self.door.patience);
        let mut entering = match self.door.deadline {
            Some(scope) => scope(deadline, entering),
            None => entering,
        };
        let waker = Waker::from(Arc::new(Flag {
            id,
            woken: Arc::clone(&self.woken),
        }));
        match entering.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(entered) => self.entered(id, entered),
            Poll::Pending => {
                self.outcome.fates[id].waited = true;
                self.waiting.insert(id, (entering, waker));
                self.timers.push(Reverse((
                    self.now + self.door.patience,
                    Timer::Patience,
                    id,
                )));
                if self.door.max_wait < self.door.patience {
                    self.timers
                        .push(Reverse((self.now + self.door.max_wait, Timer::MaxWait, id)));
                }
            }
        }
    }

    fn entered(&mut self, id: usize, entered: Option<BulkheadPermit<'a>>) {
        let fate = &mut self.outcome.fates[id];
        match entered {
            Some(permit) => {
                fate.started = Some(self.now);
                let finish = self.virtual_time + self.callers[id].work;
                self.in_service.push(Reverse((finish.to_bits(), id)));
                self.permits.insert(id, permit);
            }
            None => fate.refused = Some(self.now),
        }
    }

    /// Polls the callers woken, in the order they were woken, until no
    /// more are.
    fn poll_woken(&mut self) {
        loop {
            let woken = std::mem::take(&mut *self.woken.lock().expect("one thread"));
            if woken.is_empty() {
                return;
            }
            for id in woken {
                self.outcome.wakeups += 1;
                let Some((mut entering, waker)) = self.waiting.remove(&id) else {
                    // Woken twice, or after it gave up.
                    continue;
                };
                match entering.as_mut().poll(&mut Context::from_waker(&waker)) {
                    Poll::Ready(entered) => self.entered(id, entered),
                    Poll::Pending => {
                        self.outcome.idle_wakeups += 1;
                        self.waiting.insert(id, (entering, waker));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(limit: u32, max_wait_ms: u64) -> Lanes {
        let toml = format!(
            "[bulkhead.instances.dependency]\nmax_concurrent = {limit}\nmax_wait = \"{max_wait_ms}ms\"\n"
        );
        Lanes::new(&toml, &["dependency"]).expect("a valid bulkhead")
    }

    fn caller(at_ms: u64, work_ms: u64) -> Caller {
        Caller {
            at: at_ms * 1_000_000,
            class: Class::Normal,
            work: work_ms as f64 / 1000.0,
        }
    }

    fn door(max_wait_ms: u64, patience_ms: u64) -> Door {
        Door {
            lane: |_| 0,
            max_wait: max_wait_ms * 1_000_000,
            patience: patience_ms * 1_000_000,
            class: None,
            deadline: None,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn a_released_slot_goes_to_the_oldest_waiter_which_its_waker_announces() {
        let lanes = lanes(1, 1000);
        // One slot: the first runs 0-100 ms, the second and third wait.
        let callers = [caller(0, 100), caller(10, 100), caller(20, 100)];
        let out = run(&lanes, &door(1000, 1000), &callers, 1000 * MS);
        let started: Vec<Option<u64>> = out.fates.iter().map(|f| f.started).collect();
        assert_eq!(started, [Some(0), Some(100 * MS), Some(200 * MS)]);
        assert_eq!(out.fates[2].done, Some(300 * MS));
        assert!(out.fates[1].waited && out.fates[2].waited && !out.fates[0].waited);
        assert_eq!((out.wakeups, out.idle_wakeups), (2, 0));
        // 300 ms of one slot's work in the first second, C slots possible.
        assert!((out.idle(0, 1) - (1.0 - 0.3 / model().c)).abs() < 1e-9);
    }

    #[test]
    fn max_wait_refuses_on_the_clock_and_patience_drops_the_future() {
        // max_wait 50 ms: the second caller is refused at 60 ms.
        let lanes1 = lanes(1, 50);
        let callers = [caller(0, 100), caller(10, 100)];
        let out = run(&lanes1, &door(50, 1000), &callers, 1000 * MS);
        assert_eq!(out.fates[1].refused, Some(60 * MS));
        assert!(!out.fates[1].gave_up);
        // Patience 30 ms under a max_wait of 1 s: the second gives up at
        // 40 ms, the third at 50 ms, and nobody takes the slot at 100 ms.
        let callers = [caller(0, 100), caller(10, 100), caller(20, 100)];
        let out = run(&lanes(1, 1000), &door(1000, 30), &callers, 1000 * MS);
        assert!(out.fates[1].gave_up && out.fates[2].gave_up);
        assert_eq!((out.fates[1].started, out.fates[2].started), (None, None));
        // Patience 150 ms: the second takes the slot at 100 ms, the third
        // gives up at 170 ms.
        let out = run(&lanes(1, 1000), &door(1000, 150), &callers, 1000 * MS);
        assert_eq!(out.fates[1].started, Some(100 * MS));
        assert!(out.fates[2].gave_up && !out.fates[1].gave_up);
    }

    std::thread_local! {
        /// What the scopes of the test below saw.
        static SEEN: std::cell::RefCell<Vec<(Class, Option<Instant>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }

    #[test]
    fn the_scopes_wrap_every_caller_s_future_with_its_class_and_deadline() {
        let lanes = lanes(1, 1000);
        let callers = [
            Caller {
                class: Class::Critical,
                ..caller(0, 100)
            },
            Caller {
                class: Class::Sheddable,
                ..caller(10, 100)
            },
        ];
        let door = Door {
            class: Some(|class, entering| {
                SEEN.with_borrow_mut(|seen| seen.push((class, None)));
                entering
            }),
            deadline: Some(|deadline, entering| {
                SEEN.with_borrow_mut(|seen| {
                    seen.last_mut().expect("classed first").1 = Some(deadline)
                });
                entering
            }),
            ..door(1000, 30)
        };
        let start = lanes.clock.now();
        let out = run(&lanes, &door, &callers, 1000 * MS);
        let ms = |n| Some(start + Duration::from_millis(n));
        assert_eq!(
            SEEN.take(),
            [(Class::Critical, ms(30)), (Class::Sheddable, ms(40))]
        );
        assert!(out.fates[1].gave_up);
    }
}
