//! Snapshots under churn: threads declare bulkheads, resize them, reload
//! their configuration (limits, reservations, resources), call through
//! them and take snapshots, all at once, on about 130 bulkheads, some on a
//! resource with a budget (reserving all of their limit, or part of it and
//! borrowing the rest), some adaptive, some on no resource, some capped
//! and uncapped as a fleet resource's share caps them.
//!
//! Every snapshot taken meanwhile must be one reading that agrees with
//! itself (`available <= max_concurrent`, `reserved <= max_concurrent`,
//! `concurrent_calls + available <= max_concurrent` unless `available` is
//! 0, `borrowed` the calls past `reserved` on a pool), and the calls inside the
//! bodies on the resource never exceed its budget. Reproduce a run with
//! `CHURN_SEED=<seed printed on failure> cargo test -p bulkhead-registry
//! --test bulkhead snapshot_churn::`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::BulkheadConfig;
use bulkhead_registry::{BulkheadSnapshot, Pipeline, Registry};

/// How long the threads race (the failures this guards against showed
/// within a second on 2 cores).
const CHURN: Duration = Duration::from_millis(2500);
/// The budget of the resources `db` and `db2` to `db5`.
const BUDGET: u32 = 240;
/// Bulkheads on `db` reserving all of their limit.
const STRICT: usize = 32;
/// Bulkheads on `db` reserving 1 slot and borrowing up to 8.
const BORROWING: usize = 32;
/// Adaptive bulkheads on `db` (ceiling 8).
const ADAPTIVE: usize = 16;
/// Bulkheads on no resource.
const PLAIN: usize = 48;

/// A small deterministic generator (xorshift64*), one per thread.
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

/// What a snapshot must agree with; the first disagreement is kept.
#[derive(Default)]
struct Checks {
    snapshots: AtomicU64,
    failure: std::sync::Mutex<Option<String>>,
}

impl Checks {
    fn check(&self, snapshot: &BulkheadSnapshot) {
        self.snapshots.fetch_add(1, SeqCst);
        let s = snapshot;
        let agrees = s.available <= s.max_concurrent
            && s.reserved <= s.max_concurrent
            && (s.available == 0 || s.concurrent_calls + s.available <= s.max_concurrent)
            // On a pool, the calls past `reserved`; off one (a lowered
            // limit's calls past it included), none.
            && (s.borrowed == 0 || s.borrowed == s.concurrent_calls.saturating_sub(s.reserved));
        if !agrees {
            self.fail(format!("a snapshot disagrees with itself: {s:?}"));
        }
    }

    fn fail(&self, message: String) {
        self.failure.lock().unwrap().get_or_insert(message);
    }
}

struct Fixture {
    registry: Registry,
    /// Every bulkhead's pipeline and whether it is (first) on `db`.
    pipelines: Vec<(String, Pipeline, bool)>,
    /// Calls inside bodies of bulkheads on `db`.
    inside_db: AtomicU32,
    stop: AtomicBool,
    checks: Checks,
}

fn fixture() -> Fixture {
    let registry = Registry::new();
    registry.resource("db", BUDGET).unwrap();
    for other in ["db2", "db3", "db4", "db5"] {
        registry.resource(other, BUDGET).unwrap();
    }
    let mut pipelines = Vec::new();
    let mut add = |id: String, on_db: bool, config: bulkhead_core::BulkheadConfigBuilder| {
        let pipeline = Pipeline::builder(&registry, &id)
            .bulkhead(|_| config)
            .build()
            .unwrap();
        pipelines.push((id, pipeline, on_db));
    };
    for i in 0..STRICT {
        let config = BulkheadConfig::builder().max_concurrent(5).resource("db");
        add(format!("churn-strict-{i}"), true, config);
    }
    for i in 0..BORROWING {
        let config = BulkheadConfig::builder()
            .max_concurrent(8)
            .reserved(1)
            .max_wait(Duration::from_micros(200))
            .resource("db");
        add(format!("churn-borrow-{i}"), true, config);
    }
    for i in 0..ADAPTIVE {
        let config = BulkheadConfig::builder()
            .max_concurrent(8)
            .adaptive(bulkhead_core::Adaptive::Aimd)
            .initial_concurrent(4)
            .resource("db");
        add(format!("churn-adaptive-{i}"), true, config);
    }
    for i in 0..PLAIN {
        let config = BulkheadConfig::builder()
            .max_concurrent(4)
            .max_wait(Duration::from_micros(200));
        add(format!("churn-plain-{i}"), false, config);
    }
    Fixture {
        registry,
        pipelines,
        inside_db: AtomicU32::new(0),
        stop: AtomicBool::new(false),
        checks: Checks::default(),
    }
}

impl Fixture {
    fn running(&self) -> bool {
        !self.stop.load(SeqCst)
    }

    /// Calls through random bulkheads; bodies on `db` are counted.
    fn call(&self, rng: &mut Rng) {
        while self.running() {
            let (_, pipeline, on_db) =
                &self.pipelines[rng.below(self.pipelines.len() as u64) as usize];
            let spin = rng.below(200);
            let _ = pipeline.execute(|| {
                if *on_db {
                    let now = self.inside_db.fetch_add(1, SeqCst) + 1;
                    if now > BUDGET {
                        self.checks
                            .fail(format!("{now} calls inside on db, over its budget"));
                    }
                }
                for _ in 0..spin {
                    std::hint::spin_loop();
                }
                if *on_db {
                    self.inside_db.fetch_sub(1, SeqCst);
                }
                Ok::<(), ()>(())
            });
        }
    }

    /// Moves the limits of random bulkheads by hand, as an operator would
    /// (a change the budget refuses is left out), and caps them as a fleet
    /// resource's share does.
    fn resize(&self, rng: &mut Rng) {
        while self.running() {
            let (id, _, _) = &self.pipelines[rng.below(self.pipelines.len() as u64) as usize];
            let handle = self.registry.bulkhead(id).unwrap();
            match rng.below(4) {
                0 => {
                    let cap = (rng.below(2) == 0).then(|| rng.below(6) as u32);
                    handle.bulkhead().set_limit_cap(cap);
                }
                _ => {
                    let _ = handle.set_max_concurrent(1 + rng.below(8) as u32);
                }
            }
        }
    }

    /// Reloads: limits, reservations, and resources of strict bulkheads
    /// (among `db` to `db5`: more pools than a bulkhead has link fields).
    fn reload(&self, rng: &mut Rng) {
        while self.running() {
            let mut toml = String::new();
            for _ in 0..4 {
                let i = rng.below((STRICT + BORROWING) as u64) as usize;
                let (id, _, _) = &self.pipelines[i];
                let max = 1 + rng.below(8);
                toml.push_str(&format!(
                    "[bulkhead.instances.\"{id}\"]\nmax_concurrent = {max}\n"
                ));
                if i >= STRICT {
                    toml.push_str(&format!("reserved = {}\n", rng.below(max + 1)));
                }
                // Only the strict ones leave db: the bodies counted on db
                // are those of bulkheads that never do.
                if i < STRICT {
                    let resource = ["db", "db2", "db3", "db4", "db5", "db"][rng.below(6) as usize];
                    toml.push_str(&format!("resource = \"{resource}\"\n"));
                }
            }
            // A reload the budget refuses changes nothing: fine.
            let _ = self.registry.reload_toml(&toml);
        }
    }

    /// Declares and drops pipelines on `db` meanwhile.
    fn declare(&self, rng: &mut Rng) {
        let mut n = 0;
        while self.running() {
            n += 1;
            let id = format!("churn-new-{}", n % 8);
            let reserved = rng.below(3) as u32;
            let built = Pipeline::builder(&self.registry, &id)
                .bulkhead(|b| b.max_concurrent(2).reserved(reserved).resource("db2"))
                .build();
            if let Ok(pipeline) = built {
                let _ = pipeline.execute(|| Ok::<(), ()>(()));
            }
        }
    }

    /// Takes snapshots, of the whole registry and of single handles.
    fn snapshot(&self, rng: &mut Rng) {
        while self.running() {
            if rng.below(4) == 0 {
                for snapshot in self.registry.snapshot().bulkheads() {
                    self.checks.check(snapshot);
                }
            } else {
                let (id, _, _) = &self.pipelines[rng.below(self.pipelines.len() as u64) as usize];
                self.checks
                    .check(&self.registry.bulkhead(id).unwrap().snapshot());
            }
        }
    }
}

#[test]
fn every_snapshot_taken_under_churn_agrees_with_itself() {
    let seed = std::env::var("CHURN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let fixture = Arc::new(fixture());
    type Work = fn(&Fixture, &mut Rng);
    let work: [(Work, usize); 5] = [
        (Fixture::call, 3),
        (Fixture::resize, 1),
        (Fixture::reload, 1),
        (Fixture::declare, 1),
        (Fixture::snapshot, 2),
    ];
    let mut threads = Vec::new();
    for (n, (job, count)) in work.into_iter().enumerate() {
        for k in 0..count {
            let fixture = Arc::clone(&fixture);
            let mut rng = Rng::new(seed ^ ((n as u64) << 32 | k as u64));
            threads.push(thread::spawn(move || job(&fixture, &mut rng)));
        }
    }
    let start = Instant::now();
    while start.elapsed() < CHURN && fixture.checks.failure.lock().unwrap().is_none() {
        thread::sleep(Duration::from_millis(10));
    }
    fixture.stop.store(true, SeqCst);
    for thread in threads {
        thread.join().unwrap();
    }
    if let Some(failure) = fixture.checks.failure.lock().unwrap().take() {
        panic!("{failure} (CHURN_SEED={seed})");
    }
    assert!(
        fixture.checks.snapshots.load(SeqCst) > 1000,
        "too few snapshots to say anything"
    );
    // Everything idle again: nothing in flight, the budget whole.
    for snapshot in fixture.registry.snapshot().bulkheads() {
        assert_eq!(snapshot.concurrent_calls, 0, "{snapshot:?}");
        assert_eq!(snapshot.waiting_calls, 0, "{snapshot:?}");
    }
}
