//! Criterion benchmarks of the bulkhead against the floor and its peers.
//!
//! Every case is one enter + exit (or one rejection) and is compared, in the
//! same run, with the floor (a bare `fetch_add` + `fetch_sub` on one atomic)
//! and with the same operation on `tokio::sync::Semaphore`:
//!
//! | group | what |
//! |---|---|
//! | `enter_exit_free` | sync enter + exit on a free slot |
//! | `rejection` | a refused enter: the only slot is held |
//! | `async_free` | one poll of the async enter with a no-op waker, then drop |
//! | `contended_2_threads` | enter + exit while a second thread does the same on the same object |
//! | `pipeline` | `Pipeline::execute` with a bulkhead against calling the closure directly |
//! | `adaptive_free` | enter + exit on a free slot: the bulkhead alone, alone with two recent clock readings, timed for sizing, adaptive (Gradient2); alone and with a second thread |
//! | `pool` | enter + exit on a shared pool: within the reservation (beside a plain bulkhead), and borrowing a pool slot |
//!
//! Run with `cargo bench --bench bulkhead`, then `python3 benches/report.py`
//! for a table of medians (see `BENCHMARKS.md`).

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead::clock::Clock;
use bulkhead::clock::SystemClock;
use bulkhead::pipeline::PolicyContext;
use bulkhead::sizing::SharedPool;
use bulkhead::{Adaptive, Bulkhead, BulkheadConfig, Pipeline, Registry};
use criterion::{Criterion, criterion_group, criterion_main};
use tokio::sync::Semaphore;

/// Slots of the bulkheads and permits of the semaphores with room to spare:
/// Resilience4j's (and our) default.
const ROOMY: u32 = 25;

fn bulkhead(id: &str, max_concurrent: u32) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(max_concurrent)
        .build()
        .expect("a valid limit");
    Bulkhead::new(id, config)
}

/// The floor: what any counting semaphore must at least do.
#[inline(always)]
fn floor(counter: &AtomicU64) {
    black_box(counter.fetch_add(1, Ordering::Acquire));
    black_box(counter.fetch_sub(1, Ordering::Release));
}

/// Keeps `value` (a permit, a rejection, a result) from being optimised away,
/// then drops it where it lies.
///
/// Criterion's `iter` would `black_box` the returned value instead, which
/// copies it: a wide reload of a value just written by narrower stores
/// stalls on store forwarding, an artefact that would cost the cases with
/// large results a few ns. Escaping its address instead costs no copy.
#[inline(always)]
fn consume<T>(value: T) {
    black_box(&value);
}

/// Polls `future` once with a waker that does nothing and returns what it
/// gave; the future is dropped before returning.
#[inline(always)]
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    pin!(future).poll(&mut cx)
}

fn enter_exit_free(c: &mut Criterion) {
    let mut group = c.benchmark_group("enter_exit_free");

    let counter = AtomicU64::new(0);
    group.bench_function("floor_atomic_add_sub", |b| {
        b.iter(|| floor(black_box(&counter)))
    });

    let ours = bulkhead("bench-free", ROOMY);
    group.bench_function("bulkhead_try_enter", |b| {
        b.iter(|| consume(black_box(&ours).try_enter()))
    });
    group.bench_function("bulkhead_enter", |b| {
        b.iter(|| consume(black_box(&ours).enter()))
    });
    assert_eq!(ours.concurrent_calls(), 0, "every permit was released");

    let tokio = Semaphore::new(ROOMY as usize);
    group.bench_function("tokio_try_acquire", |b| {
        b.iter(|| consume(black_box(&tokio).try_acquire()))
    });
    group.finish();
}

fn rejection(c: &mut Criterion) {
    let mut group = c.benchmark_group("rejection");

    let ours = bulkhead("bench-full", 1);
    let _held = ours.try_enter().expect("the only slot is free");
    assert!(ours.try_enter().is_err() && ours.enter().is_err());
    group.bench_function("bulkhead_try_enter", |b| {
        b.iter(|| consume(black_box(&ours).try_enter()))
    });
    group.bench_function("bulkhead_enter", |b| {
        b.iter(|| consume(black_box(&ours).enter()))
    });
    assert!(matches!(poll_once(ours.enter_async()), Poll::Ready(Err(_))));
    group.bench_function("bulkhead_enter_async", |b| {
        b.iter(|| consume(poll_once(black_box(&ours).enter_async())))
    });

    let tokio = Semaphore::new(1);
    let _held = tokio.try_acquire().expect("the only permit is free");
    assert!(tokio.try_acquire().is_err());
    group.bench_function("tokio_try_acquire", |b| {
        b.iter(|| consume(black_box(&tokio).try_acquire()))
    });
    group.finish();
}

fn async_free(c: &mut Criterion) {
    let mut group = c.benchmark_group("async_free");

    let ours = bulkhead("bench-async", ROOMY);
    assert!(matches!(poll_once(ours.enter_async()), Poll::Ready(Ok(_))));
    group.bench_function("bulkhead_enter_async", |b| {
        b.iter(|| consume(poll_once(black_box(&ours).enter_async())))
    });
    assert_eq!(ours.concurrent_calls(), 0, "every permit was released");

    let tokio = Semaphore::new(ROOMY as usize);
    assert!(matches!(poll_once(tokio.acquire()), Poll::Ready(Ok(_))));
    group.bench_function("tokio_acquire", |b| {
        b.iter(|| consume(poll_once(black_box(&tokio).acquire())))
    });
    group.finish();
}

/// Samples of the contended cases in which the rival thread could not be
/// made to run alongside (the machine was busy); reported after the group.
static LONE_SAMPLES: AtomicU64 = AtomicU64::new(0);

/// How often a sample is retried when the rival did not run alongside.
const RIVAL_ATTEMPTS: u32 = 10;

/// Times `iters` runs of `op` on this thread while a second thread runs `op`
/// in a loop on the same object; returns this thread's time.
///
/// On a busy machine the scheduler may leave the rival off-CPU, which
/// removes the contention and makes the case look faster than it is: a
/// sample in which the rival did fewer than half as many runs is retried.
fn with_rival<O>(iters: u64, op: impl Fn() -> O + Sync) -> Duration {
    let mut elapsed = Duration::ZERO;
    for _ in 0..RIVAL_ATTEMPTS {
        let rival_runs;
        (elapsed, rival_runs) = race(iters, &op);
        // Too short a sample (criterion's first warm-up rounds) to tell.
        if iters < 1_000 || rival_runs.saturating_mul(2) >= iters {
            return elapsed;
        }
    }
    LONE_SAMPLES.fetch_add(1, Ordering::Relaxed);
    elapsed
}

/// One sample of [`with_rival`]: this thread's time, and how many runs the
/// rival made meanwhile.
fn race<O>(iters: u64, op: &(impl Fn() -> O + Sync)) -> (Duration, u64) {
    let running = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let rival = s.spawn(|| {
            running.store(true, Ordering::Release);
            let mut runs = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                consume(op());
                runs += 1;
            }
            runs
        });
        while !running.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        let start = Instant::now();
        for _ in 0..iters {
            consume(op());
        }
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        (elapsed, rival.join().expect("the rival does not panic"))
    })
}

fn contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("contended_2_threads");

    let counter = AtomicU64::new(0);
    group.bench_function("floor_atomic_add_sub", |b| {
        b.iter_custom(|iters| with_rival(iters, || floor(black_box(&counter))))
    });

    // Room for both threads: every enter succeeds, they contend on the word.
    let ours = bulkhead("bench-contended", ROOMY);
    group.bench_function("bulkhead_try_enter", |b| {
        b.iter_custom(|iters| {
            with_rival(iters, || {
                black_box(&ours)
                    .try_enter()
                    .expect("two callers fit in the bulkhead")
            })
        })
    });
    assert_eq!(ours.concurrent_calls(), 0, "every permit was released");

    let tokio = Semaphore::new(ROOMY as usize);
    group.bench_function("tokio_try_acquire", |b| {
        b.iter_custom(|iters| {
            with_rival(iters, || {
                black_box(&tokio)
                    .try_acquire()
                    .expect("two callers fit in the semaphore")
            })
        })
    });
    group.finish();
    let lone = LONE_SAMPLES.swap(0, Ordering::Relaxed);
    if lone > 0 {
        eprintln!(
            "warning: in {lone} contended samples the rival thread did not run alongside \
             (busy machine?): those samples are too fast"
        );
    }
}

/// What a user's call does in the pipeline cases: next to nothing, so the
/// difference is the pipeline's cost.
#[inline(always)]
fn call() -> Result<u64, Infallible> {
    Ok(black_box(42))
}

fn pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");

    group.bench_function("direct_call", |b| b.iter(|| consume(call())));

    let registry = Registry::new();
    let free = Pipeline::builder(&registry, "bench-pipeline")
        .bulkhead(|b| b.max_concurrent(ROOMY))
        .build()
        .expect("a fresh registry");
    group.bench_function("execute_bulkhead", |b| {
        b.iter(|| consume(black_box(&free).execute(call)))
    });

    let full = Pipeline::builder(&registry, "bench-pipeline-full")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .expect("a fresh registry");
    let handle = registry
        .bulkhead("bench-pipeline-full")
        .expect("built above");
    let _held = handle
        .bulkhead()
        .try_enter()
        .expect("the only slot is free");
    assert!(full.execute(call).is_err());
    group.bench_function("execute_rejected", |b| {
        b.iter(|| consume(black_box(&full).execute(call)))
    });
    group.finish();
}

/// A bulkhead on the system clock that times its calls for sizing, or
/// adapts its limit: Gradient2 with its floor at its ceiling, so that it
/// samples every call, closes its windows and probes as ever, but never
/// moves the limit away from the room these cases need (a limit that a
/// probe cut would turn some calls into rejections, another case).
fn timed(id: &str, adaptive: Option<Adaptive>) -> Bulkhead {
    let config = match adaptive {
        None => BulkheadConfig::builder().max_concurrent(ROOMY),
        Some(adaptive) => BulkheadConfig::builder()
            .max_concurrent(ROOMY)
            .min_concurrent(ROOMY)
            .adaptive(adaptive),
    };
    let context = PolicyContext::default().with_sizing(adaptive.is_none());
    Bulkhead::with_context(id, config.build().expect("valid"), context)
}

fn adaptive_free(c: &mut Criterion) {
    let mut group = c.benchmark_group("adaptive_free");

    let alone = bulkhead("bench-adaptive-alone", ROOMY);
    group.bench_function("bulkhead_try_enter", |b| {
        b.iter(|| consume(black_box(&alone).try_enter()))
    });
    // The floor the issue sets for adaptive: the bulkhead alone plus the
    // two recent clock readings an adaptive call takes (one inline load
    // each on the system clock).
    let recent = SystemClock
        .recent_time()
        .expect("the system clock keeps a recent reading");
    group.bench_function("bulkhead_try_enter_two_readings", |b| {
        b.iter(|| {
            let started = black_box(recent).nanos();
            consume(black_box(&alone).try_enter());
            black_box(black_box(recent).nanos().saturating_sub(started));
        })
    });
    // Two recent clock readings and two atomic additions per call.
    let sized = timed("bench-adaptive-sized", None);
    group.bench_function("sized_try_enter", |b| {
        b.iter(|| consume(black_box(&sized).try_enter()))
    });
    // Two recent clock readings, one atomic addition per call (the sample),
    // and the window's closer once per window.
    let adaptive = timed("bench-adaptive", Some(Adaptive::Gradient2));
    let ran = std::cell::Cell::new(false);
    group.bench_function("adaptive_try_enter", |b| {
        ran.set(true);
        b.iter(|| consume(black_box(&adaptive).try_enter()))
    });
    // Unless a filter left the case out.
    assert!(
        !ran.get() || adaptive.adaptive().expect("adaptive").windows > 0,
        "windows closed"
    );

    for (name, bulkhead) in [
        ("bulkhead_try_enter_2_threads", &alone),
        ("adaptive_try_enter_2_threads", &adaptive),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                with_rival(iters, || {
                    black_box(bulkhead)
                        .try_enter()
                        .expect("two callers fit in the bulkhead")
                })
            })
        });
    }
    group.finish();
    LONE_SAMPLES.swap(0, Ordering::Relaxed);
}

fn config() -> Criterion {
    // About 4 s per case, 16 cases: the whole run takes about two minutes.
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(100)
}

/// A bulkhead on a pool of `budget` slots reserving `reserved` of them, up
/// to `ROOMY`.
fn pooled(pool: &SharedPool, id: &str, reserved: u32) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(ROOMY)
        .reserved(reserved)
        .build()
        .expect("a valid limit");
    Bulkhead::with_pool(id, config, PolicyContext::default(), pool)
}

fn pool(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool");
    let plain = bulkhead("bench-pool-plain", ROOMY);
    group.bench_function("plain_try_enter", |b| {
        b.iter(|| consume(black_box(&plain).try_enter()))
    });
    let shared = SharedPool::new(2 * ROOMY);
    let reserving = pooled(&shared, "bench-pool-reserved", ROOMY);
    group.bench_function("within_reservation_try_enter", |b| {
        b.iter(|| consume(black_box(&reserving).try_enter()))
    });
    // Reservation 1, held: every call borrows a pool slot and gives it
    // back.
    let borrowing = pooled(&shared, "bench-pool-borrowing", 1);
    let held = borrowing.try_enter().expect("its reserved slot");
    group.bench_function("borrowing_try_enter", |b| {
        b.iter(|| consume(black_box(&borrowing).try_enter()))
    });
    assert_eq!(
        borrowing.borrowed(),
        0,
        "every borrowed slot was given back"
    );
    drop(held);
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = enter_exit_free, rejection, async_free, contended, pipeline, adaptive_free, pool
}
criterion_main!(benches);
