//! A flaky, slow dependency behind five policies, what each of them did
//! about it, and a retry storm with and without a retry budget.
//!
//! An inventory service goes through three phases: healthy, then degraded
//! (slow and failing), then recovered. Twelve async clients call it through
//! one pipeline with a retry, a circuit breaker, a rate limiter, a timeout
//! and a bulkhead. Breaker transitions are printed as they happen; at the end
//! every policy's events are counted and every call's outcome tallied.
//!
//! Then the dependency goes down for good, and 8 threads and 64 tasks keep
//! calling it through a retry of 3 attempts: without a budget it sees three
//! times the load it would without retries, exactly when it can least take
//! it; with `budget_ratio = 0.2` it sees at most 1.2 times that, plus the
//! budget's minimum.
//!
//! Run it with `cargo run --example flaky_dependency`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bulkhead::events::{CircuitBreakerEventKind, Event, RetryEventKind, TimeoutEventKind};
use bulkhead::{CallError, Pipeline, Registry, RejectionKind};

const PHASE: Duration = Duration::from_millis(1500);

/// How often each client of the retry storm makes a call.
const ARRIVALS: Duration = Duration::from_millis(2);

#[derive(Debug)]
enum InventoryError {
    Unavailable,
}

/// The dependency: fine, then slow and failing, then fine again.
struct Inventory {
    started: Instant,
    calls: AtomicU64,
}

impl Inventory {
    async fn stock(&self, item: u64) -> Result<u64, InventoryError> {
        let n = self.calls.fetch_add(1, Relaxed);
        let degraded = (PHASE..2 * PHASE).contains(&self.started.elapsed());
        if degraded {
            // Every other call fails fast, and one in three hangs well past
            // the timeout.
            if n.is_multiple_of(2) {
                return Err(InventoryError::Unavailable);
            }
            if n.is_multiple_of(3) {
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok(item * 10)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let inventory = Pipeline::builder(&registry, "inventory")
        .retry(|r| {
            r.max_attempts(3)
                .wait(Duration::from_millis(20))
                .backoff_multiplier(2.0)
                .jitter(0.2)
                .abort_on([RejectionKind::CircuitOpen, RejectionKind::RateLimited])
        })
        .circuit_breaker(|c| {
            c.sliding_window_size(20)
                .minimum_calls(10)
                .failure_rate_threshold(50.0)
                .wait_in_open(Duration::from_millis(400))
                .permitted_calls_in_half_open(4)
                // Being rate limited says nothing about the dependency's
                // health: only its own failures and timeouts count.
                .ignore_on([RejectionKind::RateLimited])
        })
        .rate_limiter(|r| {
            r.limit_for_period(50)
                .refresh_period(Duration::from_millis(100))
                .max_wait(Duration::from_millis(10))
        })
        .timeout(|t| t.duration(Duration::from_millis(100)))
        .bulkhead(|b| b.max_concurrent(4).max_wait(Duration::from_millis(10)))
        .build()?;
    let service = Arc::new(Inventory {
        started: Instant::now(),
        calls: AtomicU64::new(0),
    });
    println!(
        "phases: healthy 0-1.5 s, degraded 1.5-3 s (failing, some calls hang), recovered 3-4.5 s\n"
    );

    // The breaker's transitions, as they happen.
    let started = service.started;
    let watcher = tokio::spawn(async move {
        let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
        while let Some(event) = events.recv().await {
            let name = match &event {
                Event::CircuitBreaker(e) => match e.kind {
                    CircuitBreakerEventKind::StateTransition { from, to } => {
                        let t = e.at.saturating_duration_since(started).as_secs_f32();
                        println!("  t={t:>4.2}s  circuit breaker: {from:?} -> {to:?}");
                        "circuit breaker: state transitions"
                    }
                    _ => "circuit breaker: calls not permitted",
                },
                Event::Retry(e) => match e.kind {
                    RetryEventKind::Retrying { .. } => "retry: attempts retried",
                    RetryEventKind::Succeeded { .. } => {
                        "retry: calls that succeeded after retrying"
                    }
                    RetryEventKind::Exhausted { .. } => "retry: calls that ran out of attempts",
                    RetryEventKind::BudgetExhausted { .. } => {
                        "retry: retries the retry budget refused"
                    }
                    _ => "retry: calls not retried (abort_on: CircuitOpen, RateLimited)",
                },
                Event::Timeout(e) => match e.kind {
                    TimeoutEventKind::TimedOut { .. } => "timeout: attempts cut off at 100 ms",
                    _ => "timeout: sync overruns",
                },
                Event::RateLimiter(_) => "rate limiter: attempts without a permit",
                Event::Bulkhead(_) => "bulkhead: attempts that found it full",
                _ => "other",
            };
            *counts.entry(name).or_default() += 1;
        }
        counts
    });

    // Twelve clients, each calling as fast as answers come back.
    let outcomes: Arc<std::sync::Mutex<BTreeMap<String, u64>>> = Arc::default();
    let clients: Vec<_> = (0..12)
        .map(|client| {
            let (inventory, service, outcomes) = (
                inventory.clone(),
                Arc::clone(&service),
                Arc::clone(&outcomes),
            );
            tokio::spawn(async move {
                let mut item = client;
                while service.started.elapsed() < 3 * PHASE {
                    item += 12;
                    let outcome = inventory.execute_async(|| service.stock(item)).await;
                    let label = match &outcome {
                        Ok(_) => "ok".to_owned(),
                        Err(CallError::Inner(e)) => format!("failed: {e:?}"),
                        Err(CallError::Rejected(r)) => format!("rejected: {:?}", r.kind()),
                    };
                    *outcomes.lock().unwrap().entry(label).or_default() += 1;
                    if let Err(CallError::Rejected(_)) = outcome {
                        // Back off a little instead of hammering an open
                        // breaker or an exhausted rate limiter.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await?;
    }
    drop(inventory);
    drop(registry);
    let counts = watcher.await?;

    println!("\nwhat each policy did:");
    for (what, n) in &counts {
        println!("  {n:>6}  {what}");
    }
    println!("\nhow the calls ended (after retries):");
    for (what, n) in outcomes.lock().unwrap().iter() {
        println!("  {n:>6}  {what}");
    }
    println!(
        "\nthe dependency itself was called {} times",
        service.calls.load(Relaxed)
    );

    println!(
        "\na retry storm: the dependency fails every call; 8 threads and 64 tasks call it every 2 ms for 2 s"
    );
    println!(
        "  {:<28} {:>9} {:>9} {:>17} {:>16}",
        "", "calls", "attempts", "attempts / call", "budget refused"
    );
    for (label, ratio) in [
        ("no budget (the default)", None),
        ("budget_ratio = 0.2", Some(0.2)),
    ] {
        let storm = storm(ratio, Duration::from_secs(2)).await?;
        println!(
            "  {label:<28} {:>9} {:>9} {:>17.2} {:>16}",
            storm.calls,
            storm.attempts,
            storm.attempts as f64 / storm.calls as f64,
            storm.refused
        );
    }
    Ok(())
}

/// What a storm did: calls made, attempts the dependency saw, retries the
/// budget refused.
struct Storm {
    calls: u64,
    attempts: u64,
    refused: u64,
}

/// 8 threads and 64 tasks each calling a dependency that is down (each
/// attempt fails at once) every 2 ms, as requests keep arriving
/// whatever happens to them, through a retry of 3 attempts with no wait,
/// with a budget of `ratio` if given, for `length`.
async fn storm(ratio: Option<f64>, length: Duration) -> Result<Storm, Box<dyn std::error::Error>> {
    let registry = Registry::builder().event_capacity(1 << 16).build();
    let mut events = registry.subscribe();
    // Counted as they come, so that none is lost.
    let refused = tokio::spawn(async move {
        let mut refused = 0u64;
        while let Some(event) = events.recv().await {
            if let Event::Retry(e) = event
                && let RetryEventKind::BudgetExhausted { .. } = e.kind
            {
                refused += 1;
            }
        }
        refused
    });
    let pipeline = Pipeline::builder(&registry, "storm")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO).budget_ratio(ratio))
        .build()?;
    let (calls, attempts) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let until = Instant::now() + length;
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (pipeline, calls, attempts) =
                (pipeline.clone(), Arc::clone(&calls), Arc::clone(&attempts));
            std::thread::spawn(move || {
                let mut next = Instant::now();
                while next < until {
                    calls.fetch_add(1, Relaxed);
                    let _ = pipeline.execute(|| {
                        attempts.fetch_add(1, Relaxed);
                        Err::<(), _>(InventoryError::Unavailable)
                    });
                    next += ARRIVALS;
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            })
        })
        .collect();
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let (pipeline, calls, attempts) =
                (pipeline.clone(), Arc::clone(&calls), Arc::clone(&attempts));
            tokio::spawn(async move {
                let mut arrivals = tokio::time::interval(ARRIVALS);
                while Instant::now() < until {
                    arrivals.tick().await;
                    calls.fetch_add(1, Relaxed);
                    let _ = pipeline
                        .execute_async(|| {
                            attempts.fetch_add(1, Relaxed);
                            async { Err::<(), _>(InventoryError::Unavailable) }
                        })
                        .await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    for thread in threads {
        thread.join().map_err(|_| "a storm thread panicked")?;
    }
    drop((pipeline, registry));
    Ok(Storm {
        calls: calls.load(Relaxed),
        attempts: attempts.load(Relaxed),
        refused: refused.await?,
    })
}
