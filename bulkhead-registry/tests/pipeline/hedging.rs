//! Hedging through `Pipeline::execute_async` (docs/attributes/hedge.md), on
//! a `ManualClock`, polling each call by hand: a hedge starts only after
//! `delay`; the first `Ok` wins and the other attempts are dropped at once,
//! freeing their slots; a hedge refused by a full bulkhead, an open breaker
//! or the rate limiter is skipped; the breaker sees each finished attempt
//! once; hedges draw on the retry budget; sync calls are not hedged; a
//! percentile delay stays close to the percentile of the latencies seen.

use crate::support;

use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use bulkhead_core::{CallError, Event, HedgeEventKind, ManualClock, RejectionKind};
use bulkhead_registry::{Pipeline, PipelineBuilder, Registry};
use support::poll_noop;
use tokio::sync::oneshot;

const DELAY: Duration = Duration::from_millis(50);
const NS: Duration = Duration::from_nanos(1);

type Outcome = Result<&'static str, &'static str>;

/// The attempts a call made, each finished by hand: `finish(i, ..)` makes
/// attempt `i` return, and `dropped(i)` tells whether its future is gone.
#[derive(Clone, Default)]
struct Attempts(Arc<Mutex<Vec<oneshot::Sender<Outcome>>>>);

impl Attempts {
    /// The future of a new attempt.
    fn make(&self) -> impl Future<Output = Outcome> + Send + use<> {
        let (tx, rx) = oneshot::channel();
        self.0.lock().unwrap().push(tx);
        async move { rx.await.unwrap_or(Err("the test dropped its sender")) }
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn finish(&self, i: usize, outcome: Outcome) {
        let tx = std::mem::replace(&mut self.0.lock().unwrap()[i], oneshot::channel().0);
        tx.send(outcome).unwrap();
    }

    fn dropped(&self, i: usize) -> bool {
        self.0.lock().unwrap()[i].is_closed()
    }
}

fn registry(clock: &ManualClock) -> Registry {
    Registry::builder().clock(clock.clone()).build()
}

/// A pipeline `id` hedging after `DELAY` up to `max_hedged` times, with
/// whatever else `more` adds.
fn hedged(
    registry: &Registry,
    id: &str,
    max_hedged: u32,
    more: impl FnOnce(PipelineBuilder<'_>) -> PipelineBuilder<'_>,
) -> Pipeline {
    let builder = Pipeline::builder(registry, id).hedge(|h| h.max_hedged(max_hedged).delay(DELAY));
    more(builder).build().unwrap()
}

fn hedge_events(events: &mut bulkhead_core::EventStream) -> Vec<HedgeEventKind> {
    events
        .drain()
        .filter_map(|event| match event {
            Event::Hedge(event) => Some(event.kind),
            _ => None,
        })
        .collect()
}

#[test]
fn a_hedge_starts_only_after_delay_on_the_registrys_clock() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-delay", 2, |p| p);
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY - NS);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 1, "nothing before the delay");
    clock.advance(NS);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 2, "the first hedge at the delay");
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 3, "the second a delay later");
    clock.advance(100 * DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 3, "max_hedged = 2");
    attempts.finish(2, Ok("third"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("third")));
}

#[test]
fn the_first_ok_wins_and_the_other_attempts_free_their_slots_at_once() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-wins", 1, |p| {
        p.bulkhead(|b| b.max_concurrent(2))
    });
    let slots = registry.bulkhead("hedge-wins").unwrap();
    let mut events = registry.subscribe();
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(slots.concurrent_calls(), 2, "each attempt holds its slot");

    attempts.finish(1, Ok("hedge"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("hedge")));
    assert_eq!(
        slots.concurrent_calls(),
        0,
        "the slow attempt's slot is free"
    );
    assert!(attempts.dropped(0), "the slow attempt was dropped");
    assert_eq!(
        hedge_events(&mut events),
        [
            HedgeEventKind::Started { hedge: 1 },
            HedgeEventKind::Won { hedge: 1 }
        ]
    );
}

#[test]
fn a_hedge_refused_by_a_full_bulkhead_is_skipped_not_an_error() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-full", 1, |p| {
        p.bulkhead(|b| b.max_concurrent(1))
    });
    let mut events = registry.subscribe();
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(
        poll_noop(&mut call).is_pending(),
        "the skipped hedge is no failure"
    );
    assert_eq!(attempts.count(), 1, "the hedge never reached the method");
    attempts.finish(0, Ok("first"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("first")));
    assert!(
        hedge_events(&mut events).contains(&HedgeEventKind::Skipped {
            hedge: 1,
            rejection: RejectionKind::BulkheadFull
        })
    );
}

#[test]
fn the_breaker_does_not_record_a_skipped_hedge() {
    // A window of 2 that opens at 50 %: were the hedge's refusal recorded,
    // one call answered by its first attempt would open it.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let breaker =
        |c: bulkhead_core::CircuitBreakerConfigBuilder| c.sliding_window_size(2).minimum_calls(2);
    let full = hedged(&registry, "skip-full", 1, |p| {
        p.bulkhead(|b| b.max_concurrent(1)).circuit_breaker(breaker)
    });
    let limited = hedged(&registry, "skip-limited", 1, |p| {
        p.rate_limiter(|r| {
            r.limit_for_period(1)
                .refresh_period(Duration::from_secs(3600))
                .max_wait(Duration::ZERO)
        })
        .circuit_breaker(breaker)
    });
    for (pipeline, id) in [(&full, "skip-full"), (&limited, "skip-limited")] {
        let attempts = Attempts::default();
        let mut call = pin!(pipeline.execute_async(|| attempts.make()));
        assert!(poll_noop(&mut call).is_pending());
        clock.advance(DELAY);
        assert!(poll_noop(&mut call).is_pending(), "{id}: skipped");
        attempts.finish(0, Ok("first"));
        assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("first")), "{id}");
        let breaker = registry.circuit_breaker(id).unwrap();
        let metrics = breaker.metrics();
        assert_eq!(
            (metrics.buffered_calls, metrics.failed_calls),
            (1, 0),
            "{id}: the first attempt's success alone"
        );
        assert_eq!(breaker.state(), bulkhead_core::CircuitState::Closed, "{id}");
    }
}

#[test]
fn a_hedge_refused_by_an_open_breaker_or_the_rate_limiter_is_skipped() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let breaker = hedged(&registry, "hedge-open", 1, |p| {
        p.circuit_breaker(|c| c.minimum_calls(10))
    });
    let limited = hedged(&registry, "hedge-limited", 1, |p| {
        p.rate_limiter(|r| {
            r.limit_for_period(1)
                .refresh_period(Duration::from_secs(3600))
                .max_wait(Duration::ZERO)
        })
    });
    let mut events = registry.subscribe();
    for (pipeline, refused) in [
        (&breaker, RejectionKind::CircuitOpen),
        (&limited, RejectionKind::RateLimited),
    ] {
        let attempts = Attempts::default();
        let mut call = pin!(pipeline.execute_async(|| attempts.make()));
        assert!(poll_noop(&mut call).is_pending());
        if refused == RejectionKind::CircuitOpen {
            registry.circuit_breaker("hedge-open").unwrap().force_open();
        }
        clock.advance(DELAY);
        assert!(poll_noop(&mut call).is_pending(), "{refused}");
        attempts.finish(0, Ok("first"));
        assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("first")), "{refused}");
        assert_eq!(
            hedge_events(&mut events),
            [
                HedgeEventKind::Started { hedge: 1 },
                HedgeEventKind::Skipped {
                    hedge: 1,
                    rejection: refused
                }
            ]
        );
    }
}

#[test]
fn the_breaker_sees_each_finished_attempt_once_and_no_dropped_one() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-breaker", 1, |p| {
        p.circuit_breaker(|c| c.minimum_calls(100))
    });
    let breaker = registry.circuit_breaker("hedge-breaker").unwrap();

    // The first attempt fails after the hedge started; the hedge succeeds.
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    attempts.finish(0, Err("first failed"));
    assert!(poll_noop(&mut call).is_pending(), "the hedge still runs");
    attempts.finish(1, Ok("hedge"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("hedge")));
    let metrics = breaker.metrics();
    assert_eq!((metrics.buffered_calls, metrics.failed_calls), (2, 1));

    // The hedge wins while the first attempt still runs: it is dropped, and
    // recorded nowhere.
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    attempts.finish(1, Ok("hedge"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("hedge")));
    let metrics = breaker.metrics();
    assert_eq!((metrics.buffered_calls, metrics.failed_calls), (3, 1));
}

#[test]
fn when_every_attempt_fails_the_last_failure_is_returned_and_retried() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-retried", 1, |p| {
        p.retry(|r| r.max_attempts(2).wait(Duration::ZERO))
    });
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    attempts.finish(1, Err("hedge failed"));
    attempts.finish(0, Err("first failed"));
    // The retry's second attempt is hedged anew.
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 3);
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 4);
    attempts.finish(3, Err("second hedge failed"));
    assert!(poll_noop(&mut call).is_pending(), "the other still runs");
    attempts.finish(2, Err("second try failed"));
    assert_eq!(
        poll_noop(&mut call),
        Poll::Ready(Err(CallError::Inner("second try failed"))),
        "the last to finish"
    );
}

#[test]
fn hedges_draw_on_the_retry_budget() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-budget", 1, |p| {
        p.retry(|r| r.budget_ratio(0.5).budget_min_per_second(0))
    });
    let retry = registry.retry("hedge-budget").unwrap();
    let mut events = registry.subscribe();

    // One first attempt earns half a hedge: not enough.
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 1, "the budget refused the hedge");
    assert_eq!(
        hedge_events(&mut events),
        [HedgeEventKind::BudgetExhausted { hedge: 1 }]
    );
    attempts.finish(0, Ok("first"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("first")));

    // Two earn one.
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 2);
    assert_eq!(
        hedge_events(&mut events),
        [HedgeEventKind::Started { hedge: 1 }]
    );
    let budget = retry.snapshot().budget.unwrap();
    assert_eq!(
        (budget.first_attempts, budget.retries, budget.available),
        (2, 1, 0)
    );
}

#[test]
fn a_sync_call_through_a_hedged_pipeline_makes_one_attempt_at_a_time() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-sync", 1, |p| p);
    let mut events = registry.subscribe();
    let mut attempts = 0;
    let out = pipeline.execute(|| {
        attempts += 1;
        clock.advance(10 * DELAY);
        Ok::<_, ()>("slow")
    });
    assert_eq!(out, Ok("slow"));
    assert_eq!(attempts, 1);
    assert_eq!(hedge_events(&mut events), []);
}

#[test]
fn the_attempts_share_an_fn_mut_call_and_the_call_can_move_between_threads() {
    fn send<T: Send>(value: T) -> T {
        value
    }
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-fn-mut", 1, |p| p);
    // The caller's state, changed by each attempt: the first hangs, the
    // hedge answers.
    let mut made = 0;
    let call = send(pipeline.execute_async(|| {
        made += 1;
        let attempt = made;
        async move {
            if attempt == 1 {
                std::future::pending::<()>().await;
            }
            Ok::<_, ()>(attempt)
        }
    }));
    let mut call = Box::pin(call);
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    let polled = std::thread::scope(|s| s.spawn(|| poll_noop(&mut call)).join().unwrap());
    assert_eq!(polled, Poll::Ready(Ok(2)), "the hedge answered");
    drop(call);
    assert_eq!(made, 2);
}

#[test]
fn a_call_answered_within_the_delay_sets_no_timer_and_publishes_nothing() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-quiet", 3, |p| {
        p.bulkhead(|b| b.max_concurrent(4))
    });
    let mut events = registry.subscribe();
    for _ in 0..10 {
        let mut call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(1) }));
        assert_eq!(poll_noop(&mut call), Poll::Ready(Ok(1)));
    }
    assert_eq!(clock.sleepers(), 0);
    assert_eq!(events.drain().count(), 0);
    let snapshot = registry.hedge("hedge-quiet").unwrap().snapshot();
    assert_eq!(
        (snapshot.max_hedged, snapshot.current_delay),
        (3, Some(DELAY))
    );
}

#[test]
fn a_percentile_delay_waits_for_the_estimate_of_the_latency_seen() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "hedge-p90")
        .hedge(|h| h.delay(bulkhead_core::HedgeDelay::percentile(90.0)))
        .build()
        .unwrap();
    let handle = registry.hedge("hedge-p90").unwrap();
    // Twenty calls of 30 ms: no hedge while the estimate warms up.
    for _ in 0..20 {
        let attempts = Attempts::default();
        let mut call = pin!(pipeline.execute_async(|| attempts.make()));
        assert!(poll_noop(&mut call).is_pending());
        clock.advance(30 * DELAY / 50);
        assert!(poll_noop(&mut call).is_pending());
        attempts.finish(0, Ok("done"));
        assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("done")));
        assert_eq!(attempts.count(), 1);
    }
    let estimate = handle.snapshot().current_delay.expect("warmed up");
    assert!(
        estimate.abs_diff(Duration::from_millis(30)) < Duration::from_millis(1),
        "{estimate:?}"
    );
    // Then a call still running at the estimate is hedged.
    let attempts = Attempts::default();
    let mut call = pin!(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(estimate);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 2);
    attempts.finish(1, Ok("hedge"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("hedge")));
}

#[test]
fn an_attempt_a_hedge_beat_is_no_drop_for_an_adaptive_bulkhead() {
    use bulkhead_core::{Adaptive, adaptive::Sampling};

    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = hedged(&registry, "hedge-adaptive", 1, |p| {
        p.bulkhead(|b| {
            b.max_concurrent(8)
                .initial_concurrent(4)
                .adaptive(Adaptive::Gradient2)
                .sampling(Sampling::builder().min_samples(1).build().unwrap())
        })
    });
    let bulkhead = registry.bulkhead("hedge-adaptive").unwrap();
    // Calls that close the windows so far, each a success.
    let close_windows = || {
        for _ in 0..3 {
            clock.advance(Duration::from_secs(1));
            assert_eq!(pipeline.execute(|| Ok::<_, &str>("sync")), Ok("sync"));
        }
    };
    let drops = || bulkhead.snapshot().adaptive.unwrap().drops;

    // The hedge wins: the first attempt, beaten, is dropped by the race.
    let attempts = Attempts::default();
    let mut call = Box::pin(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    attempts.finish(1, Ok("hedge"));
    assert_eq!(poll_noop(&mut call), Poll::Ready(Ok("hedge")));
    assert!(attempts.dropped(0));
    close_windows();
    assert_eq!(drops(), 0, "a beaten attempt is no congestion");

    // The caller drops the call: both attempts are drops.
    let attempts = Attempts::default();
    let mut call = Box::pin(pipeline.execute_async(|| attempts.make()));
    assert!(poll_noop(&mut call).is_pending());
    clock.advance(DELAY);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(attempts.count(), 2);
    drop(call);
    close_windows();
    assert_eq!(drops(), 2, "a cancelled call's attempts are drops");
}

#[test]
fn a_p50_delay_stays_within_15_percent_of_the_median_of_the_latencies_seen() {
    // Latencies spread evenly from 10 ms to 100 ms (splitmix64, seeded):
    // the median is 55 ms. Every call's first attempt answers after its
    // latency; one still running at the delay gets its hedge, which never
    // answers first.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "hedge-p50")
        .hedge(|h| h.delay(bulkhead_core::HedgeDelay::percentile(50.0)))
        .build()
        .unwrap();
    let handle = registry.hedge("hedge-p50").unwrap();
    let mut seed = 11u64;
    let mut latency = move || {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Duration::from_micros(10_000 + z % 90_001)
    };
    let (mut low, mut high) = (0.0f64, 0.0f64);
    for call in 0..20_000 {
        let took = latency();
        let attempts = Attempts::default();
        let mut run = pin!(pipeline.execute_async(|| attempts.make()));
        assert!(poll_noop(&mut run).is_pending());
        if let Some(delay) = handle.snapshot().current_delay.filter(|d| *d < took) {
            clock.advance(delay);
            assert!(poll_noop(&mut run).is_pending());
            assert_eq!(attempts.count(), 2, "hedged at the delay");
            clock.advance(took - delay);
        } else {
            clock.advance(took);
        }
        attempts.finish(0, Ok("first"));
        assert_eq!(poll_noop(&mut run), Poll::Ready(Ok("first")));
        if call >= 2_000 {
            let delay = handle.snapshot().current_delay.unwrap();
            let error = delay.as_secs_f64() / 0.055 - 1.0;
            (low, high) = (low.min(error), high.max(error));
        }
    }
    let strayed = format!("{:+.1}% to {:+.1}%", low * 100.0, high * 100.0);
    println!("p50 delay from the 2,000th call on: {strayed} of 55 ms");
    assert!(low > -0.15 && high < 0.15, "{strayed}");
}
