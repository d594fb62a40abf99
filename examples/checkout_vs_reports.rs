//! Isolation in action: a slow reports backend cannot take checkout down
//! once each has its own bulkhead.
//!
//! Part 1 replays the pattern document's demo: the same 7 slots, shared by
//! reports and payments, split 3/4, or kept as a resource's budget of 7 that
//! both reserve part of and borrow the rest of (reserved slots and
//! borrowing: every layout side by side), 10 report calls that hang and 4
//! payment calls. Part 2 runs live traffic for a few seconds, checkout on OS threads
//! (sync) and reports on Tokio tasks (async), first through one shared
//! bulkhead and then through two, and prints what each bulkhead admitted,
//! rejected and holds.
//!
//! Run it with `cargo run --example checkout_vs_reports`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead::{CallError, Pipeline, Registry};
use tokio::sync::Notify;

type Demo = Result<(), Box<dyn std::error::Error>>;

#[derive(Default)]
struct Tally {
    admitted: AtomicU64,
    rejected: AtomicU64,
}

impl Tally {
    fn record<T, E>(&self, outcome: &Result<T, CallError<E>>) {
        match outcome {
            Err(CallError::Rejected(_)) => self.rejected.fetch_add(1, Relaxed),
            _ => self.admitted.fetch_add(1, Relaxed),
        };
    }

    fn counts(&self) -> (u64, u64) {
        (self.admitted.load(Relaxed), self.rejected.load(Relaxed))
    }
}

fn main() -> Demo {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;
    println!("Part 1: the same 7 slots, 10 report calls that hang, then 4 payment calls\n");
    runtime.block_on(part_one())?;
    println!("\nPart 2: live traffic, reports degraded to 1 s per call\n");
    part_two(&runtime)
}

async fn part_one() -> Demo {
    let registry = Registry::new();
    let shared = Pipeline::builder(&registry, "shared")
        .bulkhead(|b| b.max_concurrent(7))
        .build()?;
    scenario("One shared bulkhead of 7", &registry, &shared, &shared).await?;

    let reports = Pipeline::builder(&registry, "reports")
        .bulkhead(|b| b.max_concurrent(3))
        .build()?;
    let payments = Pipeline::builder(&registry, "payments")
        .bulkhead(|b| b.max_concurrent(4))
        .build()?;
    scenario(
        "Two bulkheads: reports 3, payments 4",
        &registry,
        &reports,
        &payments,
    )
    .await?;

    // A budget of 7 on a resource. Each bulkhead may use all 7
    // (max_concurrent) but reserves part: reserved slots are always there
    // at once, the rest is borrowed while nobody's reservation needs it.
    registry.resource("db", 7)?;
    registry.resource("db-2-unreserved", 7)?;
    let on_pool = |id: &str, resource: &str, reserved: u32| {
        Pipeline::builder(&registry, id)
            .bulkhead(|b| b.max_concurrent(7).reserved(reserved).resource(resource))
            .build()
    };
    let reports = on_pool("pool-reports", "db", 3)?;
    let payments = on_pool("pool-payments", "db", 4)?;
    scenario(
        "One budget of 7: reports reserve 3, payments 4, each up to 7",
        &registry,
        &reports,
        &payments,
    )
    .await?;

    // The same with 2 of the 7 unreserved: reports borrow them.
    let reports = on_pool("pool2-reports", "db-2-unreserved", 3)?;
    let payments = on_pool("pool2-payments", "db-2-unreserved", 2)?;
    scenario(
        "One budget of 7: reports reserve 3, payments 2, 2 unreserved",
        &registry,
        &reports,
        &payments,
    )
    .await
}

async fn scenario(
    label: &str,
    registry: &Registry,
    reports: &Pipeline,
    payments: &Pipeline,
) -> Demo {
    let gate = Arc::new(Notify::new());
    let report_tally = Arc::new(Tally::default());
    let payment_tally = Tally::default();

    // 10 report calls hang on the gate, holding whatever slots they got.
    let mut hanging = Vec::new();
    for _ in 0..10 {
        let (reports, gate, tally) = (
            reports.clone(),
            Arc::clone(&gate),
            Arc::clone(&report_tally),
        );
        hanging.push(tokio::spawn(async move {
            let outcome = reports
                .execute_async(|| {
                    let gate = Arc::clone(&gate);
                    async move {
                        gate.notified().await;
                        Ok::<_, std::io::Error>("report")
                    }
                })
                .await;
            tally.record(&outcome);
        }));
    }
    // Until each of them holds a slot or was rejected.
    let reports_bulkhead = registry.bulkhead(reports.id())?;
    while u64::from(reports_bulkhead.concurrent_calls()) + report_tally.counts().1 < 10 {
        tokio::task::yield_now().await;
    }

    // Then 4 payment calls that answer at once.
    for _ in 0..4 {
        let outcome = payments
            .execute_async(|| async { Ok::<_, std::io::Error>("paid") })
            .await;
        payment_tally.record(&outcome);
    }

    // Let the hung report calls finish.
    while !hanging.iter().all(|h| h.is_finished()) {
        gate.notify_waiters();
        tokio::task::yield_now().await;
    }
    let ((ra, rr), (pa, pr)) = (report_tally.counts(), payment_tally.counts());
    println!("{label}");
    println!("  reports : sent 10, accepted {ra}, rejected {rr}");
    println!("  payments: sent 4, accepted {pa}, rejected {pr}");
    Ok(())
}

/// One bulkhead's view during the live run.
struct Lane {
    name: &'static str,
    pipeline: Pipeline,
    tally: Arc<Tally>,
}

fn part_two(runtime: &tokio::runtime::Runtime) -> Demo {
    let registry = Registry::new();
    // Sizing from Little's law (see the pattern document): checkout needs
    // 40/s x 0.05 s = 2 slots, reports 2/s x 1.5 s = 3; with headroom 6 and 4,
    // inside a budget of 10. The shared layout gives both the same 10.
    let shared = Pipeline::builder(&registry, "live-shared")
        .bulkhead(|b| b.max_concurrent(10))
        .build()?;
    let checkout = Pipeline::builder(&registry, "live-checkout")
        .bulkhead(|b| b.max_concurrent(6))
        .build()?;
    let reports = Pipeline::builder(&registry, "live-reports")
        .bulkhead(|b| b.max_concurrent(4))
        .build()?;

    live(
        "One shared bulkhead of 10",
        runtime,
        &registry,
        shared.clone(),
        shared,
    )?;
    live(
        "Checkout 6, reports 4",
        runtime,
        &registry,
        checkout,
        reports,
    )
}

fn live(
    label: &str,
    runtime: &tokio::runtime::Runtime,
    registry: &Registry,
    checkout: Pipeline,
    reports: Pipeline,
) -> Demo {
    println!("{label}");
    let lanes = [
        Lane {
            name: "checkout",
            pipeline: checkout,
            tally: Arc::default(),
        },
        Lane {
            name: "reports",
            pipeline: reports,
            tally: Arc::default(),
        },
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let run_for = Duration::from_secs(2);

    // Reports: the degraded query now takes 1 s; a new request every 50 ms,
    // each on its own task. Never blocks a thread while it runs or waits.
    let reports_driver = {
        let (pipeline, tally, stop) = (
            lanes[1].pipeline.clone(),
            Arc::clone(&lanes[1].tally),
            Arc::clone(&stop),
        );
        runtime.spawn(async move {
            let mut calls = Vec::new();
            while !stop.load(Relaxed) {
                let (pipeline, tally) = (pipeline.clone(), Arc::clone(&tally));
                calls.push(tokio::spawn(async move {
                    let outcome = pipeline
                        .execute_async(|| async {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            Ok::<_, std::io::Error>(())
                        })
                        .await;
                    tally.record(&outcome);
                }));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            for call in calls {
                let _ = call.await;
            }
        })
    };

    // Checkout: 3 threads, each a 5 ms call every 20 ms, blocking as sync code does.
    let checkout_threads: Vec<_> = (0..3)
        .map(|_| {
            let (pipeline, tally, stop) = (
                lanes[0].pipeline.clone(),
                Arc::clone(&lanes[0].tally),
                Arc::clone(&stop),
            );
            thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let outcome = pipeline.execute(|| {
                        thread::sleep(Duration::from_millis(5));
                        Ok::<_, std::io::Error>(())
                    });
                    tally.record(&outcome);
                    thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();

    let started = Instant::now();
    while started.elapsed() < run_for {
        thread::sleep(Duration::from_millis(500));
        let line: Vec<String> = lanes
            .iter()
            .map(|lane| {
                let bulkhead = registry.bulkhead(lane.pipeline.id()).map(|h| h.snapshot());
                let (admitted, rejected) = lane.tally.counts();
                match bulkhead {
                    Ok(s) => format!(
                        "{:<8} in flight {:>2}/{:<2} completed {:>3} rejected {:>3}",
                        lane.name, s.concurrent_calls, s.max_concurrent, admitted, rejected
                    ),
                    Err(e) => e.to_string(),
                }
            })
            .collect();
        println!(
            "  t={:>4.1}s  {}",
            started.elapsed().as_secs_f32(),
            line.join("  |  ")
        );
    }
    stop.store(true, Relaxed);
    for thread in checkout_threads {
        thread.join().map_err(|_| "a checkout thread panicked")?;
    }
    runtime.block_on(reports_driver)?;
    let (admitted, rejected) = lanes[0].tally.counts();
    let share = 100.0 * rejected as f64 / (admitted + rejected).max(1) as f64;
    println!(
        "  => checkout rejected {rejected} of {} calls ({share:.0}%)\n",
        admitted + rejected
    );
    Ok(())
}
