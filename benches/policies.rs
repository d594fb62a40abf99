//! Criterion benchmarks of the other policies' untriggered fast paths:
//! what a retry that does not retry, a closed circuit breaker, a rate limiter
//! with permits left and a timeout that does not fire cost on top of a call,
//! against the floor (a bare `fetch_add` + `fetch_sub`) and a bare call, in
//! one run.
//!
//! | group | what |
//! |---|---|
//! | `policies_sync` | `Pipeline::execute` with one policy at a time, then all five; a retry with a budget, a hedge (which a sync call does not use) |
//! | `policies_async` | `Pipeline::execute_async` polled once (ready at once), one policy at a time, then all five; a retry with a budget, a hedge whose first attempt answers at once, both, and all six; none and a retry with a closure that captures three references |
//! | `policies_failing` | `Pipeline::execute` through a closed count-window breaker whose calls fail one in 8 (under its 50 % threshold): every outcome is written into the window, the path a healthy breaker skips |
//! | `policies_clock` | the readings the policies take: `Instant::now()`, the `SystemClock`'s `now` and `recent` through `Arc<dyn Clock>` as a registry holds it, and its `RecentTime::nanos()` (what a composition reads) |
//!
//! Run with `cargo bench --bench policies`; `python3 benches/report.py`
//! prints the medians (see `BENCHMARKS.md`).

use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bulkhead::circuit_breaker::SlidingWindow;
use bulkhead::clock::{Clock, SystemClock};
use bulkhead::hedge::HedgeDelay;
use bulkhead::pipeline::PipelineBuilder;
use bulkhead::{Pipeline, Registry};
use criterion::{Criterion, criterion_group, criterion_main};

type Build = fn(PipelineBuilder<'_>) -> PipelineBuilder<'_>;

/// The pipelines compared, each with one policy (or all) on generous
/// settings, so that nothing is ever triggered.
fn cases() -> Vec<(&'static str, Build)> {
    vec![
        ("none", |p| p),
        ("bulkhead", |p| p.bulkhead(|b| b.max_concurrent(25))),
        ("retry", |p| p.retry(|r| r.max_attempts(3))),
        ("circuit_breaker_count", |p| p.circuit_breaker(|c| c)),
        ("circuit_breaker_count_untimed", |p| {
            p.circuit_breaker(|c| c.slow_call_threshold(Duration::MAX))
        }),
        ("circuit_breaker_time", |p| {
            p.circuit_breaker(|c| {
                c.sliding_window(SlidingWindow::Time)
                    .sliding_window_size(60)
            })
        }),
        ("rate_limiter", |p| {
            p.rate_limiter(|r| {
                r.limit_for_period(u32::MAX)
                    .refresh_period(Duration::from_secs(3600))
            })
        }),
        ("timeout", |p| {
            p.timeout(|t| t.duration(Duration::from_secs(60)))
        }),
        ("all_five", |p| {
            p.bulkhead(|b| b.max_concurrent(25))
                .retry(|r| r.max_attempts(3))
                .circuit_breaker(|c| c)
                .rate_limiter(|r| {
                    r.limit_for_period(u32::MAX)
                        .refresh_period(Duration::from_secs(3600))
                })
                .timeout(|t| t.duration(Duration::from_secs(60)))
        }),
        ("retry_budget", |p| {
            p.retry(|r| r.max_attempts(3).budget_ratio(0.2))
        }),
        ("hedge", |p| p.hedge(|h| h.delay(Duration::from_secs(1)))),
        ("hedge_p90", |p| {
            p.hedge(|h| h.delay(HedgeDelay::percentile(90.0)))
        }),
        ("hedge_retry_budget", |p| {
            p.hedge(|h| h.delay(Duration::from_secs(1)))
                .retry(|r| r.max_attempts(3).budget_ratio(0.2))
        }),
        ("all_six", |p| {
            p.bulkhead(|b| b.max_concurrent(25))
                .retry(|r| r.max_attempts(3).budget_ratio(0.2))
                .hedge(|h| h.delay(Duration::from_secs(1)))
                .circuit_breaker(|c| c)
                .rate_limiter(|r| {
                    r.limit_for_period(u32::MAX)
                        .refresh_period(Duration::from_secs(3600))
                })
                .timeout(|t| t.duration(Duration::from_secs(60)))
        }),
    ]
}

fn pipeline(registry: &Registry, id: &str, build: Build) -> Pipeline {
    build(Pipeline::builder(registry, id))
        .build()
        .expect("valid policies")
}

fn floor(c: &mut Criterion) -> AtomicU64 {
    let counter = AtomicU64::new(0);
    c.bench_function("policies_floor/atomic_add_sub", |b| {
        b.iter(|| {
            black_box(counter.fetch_add(1, Ordering::Acquire));
            black_box(counter.fetch_sub(1, Ordering::Release));
        })
    });
    c.bench_function("policies_floor/direct_call", |b| {
        b.iter(|| black_box(Ok::<u64, ()>(black_box(7))))
    });
    counter
}

fn sync(c: &mut Criterion) {
    floor(c);
    let registry = Registry::new();
    let mut group = c.benchmark_group("policies_sync");
    for (name, build) in cases() {
        let pipeline = pipeline(&registry, &format!("sync-{name}"), build);
        group.bench_function(name, |b| {
            b.iter(|| {
                let result = pipeline.execute(|| Ok::<u64, ()>(black_box(7)));
                black_box(&result);
            })
        });
    }
    group.finish();
}

fn asynchronous(c: &mut Criterion) {
    let registry = Registry::new();
    let mut group = c.benchmark_group("policies_async");
    let mut cx = Context::from_waker(Waker::noop());
    for (name, build) in cases() {
        let pipeline = pipeline(&registry, &format!("async-{name}"), build);
        group.bench_function(name, |b| {
            b.iter(|| {
                let call = pin!(pipeline.execute_async(|| async { Ok::<u64, ()>(black_box(7)) }));
                let result = call.poll(&mut cx);
                debug_assert!(matches!(result, Poll::Ready(Ok(7))));
                black_box(&result);
            })
        });
    }
    // A call whose closure captures three references, as a caller's often
    // does (a client, a request, a key): what moving it costs.
    let (a, b, k) = (7_u64, 8_u64, 9_u64);
    for (name, build) in [("none", (|p| p) as Build), ("retry", |p| p.retry(|r| r))] {
        let pipeline = pipeline(&registry, &format!("async-captures-{name}"), build);
        group.bench_function(format!("{name}_three_captures"), |bench| {
            bench.iter(|| {
                let (a, b, k) = (black_box(&a), black_box(&b), black_box(&k));
                let call = pin!(pipeline.execute_async(|| async { Ok::<u64, ()>(*a + *b + *k) }));
                let result = call.poll(&mut cx);
                debug_assert!(matches!(result, Poll::Ready(Ok(24))));
                black_box(&result);
            })
        });
    }
    group.finish();
}

fn failing(c: &mut Criterion) {
    let registry = Registry::new();
    let mut group = c.benchmark_group("policies_failing");
    let pipeline = pipeline(&registry, "failing-count", |p| {
        p.circuit_breaker(|c| c.slow_call_threshold(Duration::MAX))
    });
    let mut n = 0_u64;
    group.bench_function("circuit_breaker_count_1_in_8", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            let result = pipeline.execute(|| if n.is_multiple_of(8) { Err(()) } else { Ok(n) });
            black_box(&result);
        })
    });
    let breaker = registry.circuit_breaker("failing-count").expect("built");
    assert_eq!(
        breaker.circuit_breaker().state(),
        bulkhead::circuit_breaker::CircuitState::Closed,
        "one failure in 8 stays under the threshold"
    );
    group.finish();
}

fn clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("policies_clock");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    group.bench_function("instant_now", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("system_now", |b| {
        b.iter(|| black_box(black_box(&clock).now()))
    });
    group.bench_function("system_recent", |b| {
        b.iter(|| black_box(black_box(&clock).recent()))
    });
    // What a composition reads: the recent reading in nanoseconds, inline.
    let recent = clock.recent_time().expect("the system clock keeps one");
    group.bench_function("system_recent_time_nanos", |b| {
        b.iter(|| black_box(black_box(recent).nanos()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = sync, asynchronous, failing, clock
}
criterion_main!(benches);
