//! Stress: threads and tokio tasks hammer shared bulkheads with random
//! cancellation, panics in the body and ManualClock deadlines.
//!
//! Inside every body it checks that no more than `max_concurrent` calls are
//! inside; at the end, that every bulkhead is idle with its full capacity and
//! that every attempt had exactly one outcome. Reproduce a run with
//! `STRESS_SEED=<seed printed on failure> cargo test -p bulkhead-registry
//! --test bulkhead stress::`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use bulkhead_core::{CallError, ManualClock};
use bulkhead_registry::{Pipeline, Registry};

const THREADS: usize = 4;
const CALLS_PER_THREAD: usize = 50_000;
const TASKS: usize = 64;
const CALLS_PER_TASK: usize = 2_000;

/// A small deterministic generator (xorshift64*), one per worker.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// One shared bulkhead under test and its books.
struct Target {
    pipeline: Pipeline,
    id: &'static str,
    max: u32,
    inside: AtomicU32,
    violations: AtomicU32,
    attempted: AtomicU64,
    admitted: AtomicU64,
    rejected: AtomicU64,
    /// Async attempts dropped while still waiting for a slot.
    cancelled_waiting: AtomicU64,
    panicked: AtomicU64,
}

impl Target {
    fn new(registry: &Registry, id: &'static str, max: u32, max_wait: Duration) -> Self {
        Target {
            pipeline: Pipeline::builder(registry, id)
                .bulkhead(|b| b.max_concurrent(max).max_wait(max_wait))
                .build()
                .unwrap(),
            id,
            max,
            inside: AtomicU32::new(0),
            violations: AtomicU32::new(0),
            attempted: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            cancelled_waiting: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
        }
    }

    /// Entered the body: record and check the limit.
    fn enter_body(&self, registry: &Registry) {
        self.admitted.fetch_add(1, SeqCst);
        let now = self.inside.fetch_add(1, SeqCst) + 1;
        let reported = registry.bulkhead(self.id).unwrap().concurrent_calls();
        if now > self.max || reported > self.max {
            self.violations.fetch_add(1, SeqCst);
        }
    }

    fn leave_body(&self) {
        self.inside.fetch_sub(1, SeqCst);
    }
}

/// Leaves the body even when it unwinds.
struct InBody<'a>(&'a Target);

impl Drop for InBody<'_> {
    fn drop(&mut self) {
        self.0.leave_body();
    }
}

fn seed() -> u64 {
    std::env::var("STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        })
}

fn sync_worker(registry: &Registry, targets: &[Target], seed: u64) {
    let mut rng = Rng::new(seed);
    for _ in 0..CALLS_PER_THREAD {
        let target = &targets[rng.below(targets.len() as u64) as usize];
        if rng.below(50) == 0 {
            owned_permit_elsewhere(registry, target);
            continue;
        }
        let spin = rng.below(50);
        let panics = rng.below(20) == 0;
        target.attempted.fetch_add(1, SeqCst);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            target.pipeline.execute(|| {
                target.enter_body(registry);
                let _leave = InBody(target);
                for _ in 0..spin {
                    std::hint::spin_loop();
                }
                if spin.is_multiple_of(7) {
                    thread::yield_now();
                }
                if panics {
                    panic!("a body panics");
                }
                Ok::<_, ()>(())
            })
        }));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(CallError::Rejected(_))) => {
                target.rejected.fetch_add(1, SeqCst);
            }
            Ok(Err(CallError::Inner(()))) => unreachable!(),
            Err(_) => {
                target.panicked.fetch_add(1, SeqCst);
            }
        }
    }
}

/// Takes a slot with an owned permit (waiting up to `max_wait`) and gives it
/// back from another thread.
fn owned_permit_elsewhere(registry: &Registry, target: &Target) {
    target.attempted.fetch_add(1, SeqCst);
    let handle = registry.bulkhead(target.id).unwrap();
    match handle.bulkhead().enter_owned() {
        Ok(permit) => {
            target.enter_body(registry);
            thread::scope(|s| {
                s.spawn(move || {
                    target.leave_body();
                    drop(permit);
                });
            });
        }
        Err(_) => {
            target.rejected.fetch_add(1, SeqCst);
        }
    }
}

async fn async_worker(registry: Registry, targets: Arc<Vec<Target>>, seed: u64) {
    let mut rng = Rng::new(seed);
    for _ in 0..CALLS_PER_TASK {
        let target = &targets[rng.below(targets.len() as u64) as usize];
        let yields = rng.below(4);
        let cancel_after = rng.below(8);
        let panics = rng.below(25) == 0;
        let started = AtomicBool::new(false);
        target.attempted.fetch_add(1, SeqCst);
        let call = target.pipeline.execute_async(|| {
            let (registry, started) = (&registry, &started);
            async move {
                started.store(true, SeqCst);
                target.enter_body(registry);
                let _leave = InBody(target);
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
                if panics {
                    panic!("an async body panics");
                }
                Ok::<_, ()>(())
            }
        });
        let outcome = tokio::select! {
            outcome = CatchUnwind(Box::pin(call)) => Some(outcome),
            () = yield_times(cancel_after) => None,
        };
        match outcome {
            Some(Ok(Ok(()))) => {}
            Some(Ok(Err(CallError::Rejected(_)))) => {
                target.rejected.fetch_add(1, SeqCst);
            }
            Some(Ok(Err(CallError::Inner(())))) => unreachable!(),
            Some(Err(())) => {
                target.panicked.fetch_add(1, SeqCst);
            }
            // Dropped: either inside the body (admitted, counted there) or
            // still waiting for a slot.
            None if started.load(SeqCst) => {}
            None => {
                target.cancelled_waiting.fetch_add(1, SeqCst);
            }
        }
    }
}

async fn yield_times(n: u64) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

/// Turns a panic while polling into `Err(())`, so a task goes on after its
/// body panicked.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

/// Keeps the bodies' deliberate panics out of the test output.
fn quiet_expected_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .unwrap_or_default();
        if !message.ends_with("body panics") {
            report(info);
        }
    }));
}

/// A lost slot or wake-up shows as a hang; rather than hang CI, print the
/// state and abort after a generous real-time bound. Dropping the returned
/// sender stops the watchdog.
fn watchdog(seed: u64, registry: Registry, ids: Vec<&'static str>) -> std::sync::mpsc::Sender<()> {
    let (finished, wait) = std::sync::mpsc::channel::<()>();
    thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            wait.recv_timeout(Duration::from_secs(120))
        {
            eprintln!("stress test hung (STRESS_SEED={seed}):");
            for id in ids {
                eprintln!("  {:?}", registry.bulkhead(id).map(|h| h.snapshot()));
            }
            std::process::abort();
        }
    });
    finished
}

#[test]
fn threads_and_tasks_hammering_shared_bulkheads_keep_every_invariant() {
    let seed = seed();
    eprintln!("STRESS_SEED={seed}");
    quiet_expected_panics();
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let targets = Arc::new(vec![
        Target::new(&registry, "stress-reject", 2, Duration::ZERO),
        Target::new(&registry, "stress-short-wait", 3, Duration::from_millis(5)),
        // No deadline at all: a lost wake-up here hangs (and the watchdog
        // reports it) instead of passing as a rejection.
        Target::new(&registry, "stress-long-wait", 4, Duration::MAX),
    ]);
    let done = AtomicBool::new(false);
    let finished = watchdog(
        seed,
        registry.clone(),
        targets.iter().map(|t| t.id).collect(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();

    thread::scope(|s| {
        // The ticker moves the clock so that short waits expire.
        let ticker = s.spawn(|| {
            let mut rng = Rng::new(seed ^ 0xC10C);
            while !done.load(SeqCst) {
                clock.advance(Duration::from_millis(rng.below(3)));
                thread::yield_now();
            }
        });
        // The resizer moves the long-wait limit up and down under load.
        let resizer = s.spawn(|| {
            let mut rng = Rng::new(seed ^ 0x512E);
            let handle = registry.bulkhead("stress-long-wait").unwrap();
            while !done.load(SeqCst) {
                handle.set_max_concurrent(1 + rng.below(4) as u32).unwrap();
                thread::yield_now();
            }
            handle.set_max_concurrent(4).unwrap();
        });
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                runtime.spawn(async_worker(
                    registry.clone(),
                    Arc::clone(&targets),
                    seed + 1000 + i as u64,
                ))
            })
            .collect();
        let workers: Vec<_> = (0..THREADS)
            .map(|i| {
                let (registry, targets) = (&registry, &targets);
                s.spawn(move || sync_worker(registry, targets, seed + i as u64))
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        for task in tasks {
            runtime.block_on(task).unwrap();
        }
        done.store(true, SeqCst);
        ticker.join().unwrap();
        resizer.join().unwrap();
    });
    drop(finished);

    assert_eq!(
        targets[2].rejected.load(SeqCst),
        0,
        "a caller without a deadline was rejected"
    );
    for target in targets.iter() {
        let handle = registry.bulkhead(target.id).unwrap();
        let (attempted, admitted, rejected, cancelled) = (
            target.attempted.load(SeqCst),
            target.admitted.load(SeqCst),
            target.rejected.load(SeqCst),
            target.cancelled_waiting.load(SeqCst),
        );
        eprintln!(
            "{}: attempted {attempted}, admitted {admitted} (panicked {}), rejected {rejected}, cancelled while waiting {cancelled}",
            target.id,
            target.panicked.load(SeqCst)
        );
        assert_eq!(
            target.violations.load(SeqCst),
            0,
            "{}: more than max_concurrent inside (seed {seed})",
            target.id
        );
        assert_eq!(
            admitted + rejected + cancelled,
            attempted,
            "{}: every attempt has one outcome (seed {seed})",
            target.id
        );
        assert!(admitted > 0, "{}: some calls got through", target.id);
        assert_eq!(
            handle.concurrent_calls(),
            0,
            "{}: slots leaked (seed {seed})",
            target.id
        );
        assert_eq!(
            handle.waiting_calls(),
            0,
            "{}: waiters left behind (seed {seed})",
            target.id
        );
        let bulkhead = handle.bulkhead();
        let all: Vec<_> = (0..target.max).map(|_| bulkhead.try_enter()).collect();
        assert!(
            all.iter().all(Result::is_ok),
            "{}: capacity lost (seed {seed})",
            target.id
        );
        assert!(
            bulkhead.try_enter().is_err(),
            "{}: capacity duplicated (seed {seed})",
            target.id
        );
    }
    let rejected_somewhere: u64 = targets.iter().map(|t| t.rejected.load(SeqCst)).sum();
    assert!(rejected_somewhere > 0, "the load was high enough to reject");
}
