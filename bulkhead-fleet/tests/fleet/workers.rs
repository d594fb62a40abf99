//! Worker processes for the multi-process tests: this test binary run
//! again as `fleet_worker`, one registry per process, hammering a
//! loopback "database" through one fleet resource; and [`Fleet`], the
//! test's side: it spawns them, gives them orders, reads what they print
//! and checks what the database saw.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering::*;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bulkhead_core::BulkheadConfig;
use bulkhead_fleet::__scripts::allocate;
use bulkhead_fleet::{FleetConfig, OnUnreachable};
use bulkhead_registry::Registry;

use crate::support::{Database, RedisServer, session, wait_for};

pub(crate) const BUDGET: u32 = 10;
pub(crate) const LEASE: Duration = Duration::from_millis(1000);
pub(crate) const PERIOD: Duration = Duration::from_millis(333);
const WORKER: &str = "BULKHEAD_FLEET_WORKER";

/// A worker process, run by [`Fleet::spawn`]: `tasks` threads enter the
/// bulkhead `work` (on fleet resource `db`) and hold a database session
/// for `HOLD_MS` (5 unless a test says) to 25 ms more, over and over. It reads its orders from a file
/// (`tasks N`, `leave`) and prints its share whenever it changes:
/// `STATE <name> <process id> <share> <target> <state>`, and its count of
/// failed requests whenever it grows: `FAIL <name> <count> <last error>`.
/// With `PROBE=1`, a probe thread times `try_enter` every 2 ms and prints
/// the longest it took when that grows: `PROBE <name> <µs>`.
///
/// Its fleet is `FLEET` (any `fleet` string: `redis+sentinel://..`,
/// `redis+cluster://..`) or else `REDIS`, with a budget of `BUDGET` and a
/// lease of `LEASE_MS` when given ([`BUDGET`], [`LEASE`] otherwise). A
/// configuration it cannot use prints `ERROR <name> <error>` and ends it.
/// It prints its configuration's `Debug` once (`CONFIG <name> ..`), and
/// the snapshot's `redis` once (`REDIS <name> ..`), for the tests of
/// passwords.
#[test]
#[ignore = "a worker process of the multi-process tests, which run it"]
fn fleet_worker() {
    let var = |name: &str| std::env::var(format!("{WORKER}_{name}")).unwrap();
    let optional = |name: &str| std::env::var(format!("{WORKER}_{name}")).ok();
    let name = var("NAME");
    let budget: u32 = optional("BUDGET").map_or(BUDGET, |b| b.parse().unwrap());
    let lease = optional("LEASE_MS").map_or(LEASE, |ms| Duration::from_millis(ms.parse().unwrap()));
    let fleet = optional("FLEET").unwrap_or_else(|| var("REDIS"));
    let orders = var("ORDERS");
    let db: u16 = var("DB").parse().unwrap();
    let active = Arc::new(AtomicU32::new(var("TASKS").parse().unwrap()));
    let registry = Registry::new();
    let config = match FleetConfig::redis(&fleet) {
        Ok(config) => config,
        Err(e) => {
            // (The error shows the URL, without its passwords.)
            println!("ERROR {name} {e}");
            std::process::exit(2);
        }
    };
    let config =
        config
            .prefix("proof")
            .lease(lease)
            .on_unreachable(match var("ON_UNREACHABLE").as_str() {
                "closed" => OnUnreachable::Closed,
                "even_share" => OnUnreachable::EvenShare,
                n => OnUnreachable::Slots(n.parse().unwrap()),
            });
    println!("CONFIG {name} {config:?}");
    if let Err(e) = registry.fleet_resource("db", budget, config) {
        println!("ERROR {name} {e}");
        std::process::exit(2);
    }
    let bulkhead = registry
        .bulkhead_policy(
            "work",
            "worker",
            &BulkheadConfig::builder()
                .max_concurrent(budget)
                .max_wait(Duration::from_secs(5))
                .resource("db"),
        )
        .unwrap();
    let hold: u8 = var("HOLD_MS").parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    for task in 0..budget {
        let (bulkhead, active, stop) = (bulkhead.clone(), active.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut rng = u64::from(task + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            while !stop.load(Acquire) {
                if task >= active.load(Acquire) {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                if let Ok(_permit) = bulkhead.enter() {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    session(db, hold + (rng % 25) as u8);
                }
            }
        });
    }
    // The probe's calls count as demand: only where a test asks for it.
    if var("PROBE") == "1" {
        let (bulkhead, name) = (bulkhead.clone(), name.clone());
        std::thread::spawn(move || {
            let mut longest = Duration::ZERO;
            loop {
                let start = Instant::now();
                drop(bulkhead.try_enter());
                let took = start.elapsed();
                if took > longest {
                    longest = took;
                    println!("PROBE {name} {}", longest.as_micros());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
    }
    let mut last = None;
    let mut failures = 0;
    loop {
        if let Ok(order) = std::fs::read_to_string(&orders) {
            let order = order.trim();
            if order == "leave" {
                registry.leave_fleets();
                println!("LEFT {name}");
                stop.store(true, Release);
                std::process::exit(0);
            }
            if let Some(n) = order.strip_prefix("tasks ").and_then(|n| n.parse().ok()) {
                active.store(n, Release);
            }
        }
        let snapshot = registry.snapshot();
        let fleet = &snapshot.fleets()[0];
        let now = (fleet.share, fleet.target, fleet.state, fleet.fallback);
        if last.is_none() {
            println!("REDIS {name} {}", fleet.redis);
        }
        if last != Some(now) {
            println!(
                "STATE {name} {} {} {} {} fallback {} demand {} in_flight {}",
                fleet.process_id,
                fleet.share,
                fleet.target,
                fleet.state.as_str(),
                fleet.fallback,
                fleet.demand,
                fleet.in_flight,
            );
            last = Some(now);
        }
        if fleet.failures != failures {
            failures = fleet.failures;
            let error = fleet.last_error.as_deref().unwrap_or("").replace('\n', " ");
            println!("FAIL {name} {failures} {error}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A worker's failed requests, as it last said.
#[derive(Debug, Clone)]
pub(crate) struct Failures {
    pub(crate) count: u64,
    pub(crate) last_error: String,
}

/// What a worker last said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) pid: String,
    pub(crate) share: u32,
    pub(crate) target: u32,
    pub(crate) state: String,
    /// The slots it would fall back to, as Redis last said.
    pub(crate) fallback: u32,
}

pub(crate) struct Worker {
    name: String,
    pub(crate) child: Child,
    orders: std::path::PathBuf,
    tasks: u32,
}

/// A fleet of worker processes on one Redis, with the database they use.
pub(crate) struct Fleet {
    pub(crate) redis: RedisServer,
    pub(crate) db: Database,
    pub(crate) seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    /// Whether a worker reported `unreachable` since this was last cleared.
    pub(crate) fell_back: Arc<AtomicBool>,
    /// The longest `try_enter` each worker's probe timed, in µs.
    pub(crate) probes: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Each worker's count of failed requests and its last error.
    pub(crate) failures: Arc<Mutex<BTreeMap<String, Failures>>>,
    /// What workers said they could not start with (`ERROR` lines).
    errors: Arc<Mutex<Vec<String>>>,
    /// Every line the workers printed, on stdout and stderr.
    pub(crate) output: Arc<Mutex<Vec<String>>>,
    /// Environment variables of the workers (`SSL_CERT_FILE`, say: the
    /// test process's own `SSL_CERT_FILE` and `SSL_CERT_DIR` never reach
    /// them).
    pub(crate) env: Vec<(String, String)>,
    /// The workers' `fleet` string (`REDIS`'s URL when none).
    pub(crate) fleet: Option<String>,
    /// The workers' budget and lease.
    pub(crate) budget: u32,
    pub(crate) lease: Duration,
    workers: Vec<Worker>,
    /// The workers' `on_unreachable`: `closed`, `even_share` or a number
    /// of slots.
    on_unreachable: String,
    /// The most sessions the database may see at once: the budget, unless
    /// a test allows more.
    pub(crate) bound: u32,
    /// Whether the workers time `try_enter` (its calls add one to their
    /// demand).
    pub(crate) probe: bool,
    /// The shortest session a worker holds, in ms (fewer sessions, less
    /// load on a shared machine).
    pub(crate) hold_ms: u8,
    dir: std::path::PathBuf,
    pub(crate) start: Instant,
}

impl Fleet {
    /// A Redis and a database of its own; workers fall back to
    /// `on_unreachable` (`"closed"`, `"even_share"` or a number of slots).
    pub(crate) fn new(name: &str, on_unreachable: &str) -> Self {
        Self::on(name, on_unreachable, RedisServer::start())
    }

    /// The same on `redis` (a `valkey-server`, say).
    pub(crate) fn on(name: &str, on_unreachable: &str, redis: RedisServer) -> Self {
        let dir = std::env::temp_dir().join(format!("bulkhead-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        println!("    {name}: server {}", redis.identity());
        Fleet {
            redis,
            db: Database::start(),
            seen: Arc::default(),
            fell_back: Arc::default(),
            probes: Arc::default(),
            failures: Arc::default(),
            errors: Arc::default(),
            output: Arc::default(),
            env: Vec::new(),
            fleet: None,
            budget: BUDGET,
            lease: LEASE,
            workers: Vec::new(),
            on_unreachable: on_unreachable.to_owned(),
            bound: BUDGET,
            probe: false,
            hold_ms: 5,
            dir,
            start: Instant::now(),
        }
    }

    /// Its workers use `fleet` (any `fleet` string: a Sentinel set, a
    /// cluster), budget `budget` and lease `lease`, not `redis`.
    pub(crate) fn topology(mut self, fleet: String, budget: u32, lease: Duration) -> Self {
        self.fleet = Some(fleet);
        self.budget = budget;
        self.bound = budget;
        self.lease = lease;
        self
    }

    /// Starts worker `name` with `tasks` busy threads.
    pub(crate) fn spawn(&mut self, name: &str, tasks: u32) {
        let url = self.redis.url();
        self.spawn_via(name, tasks, &url);
    }

    /// Starts worker `name`, which reaches Redis at `redis` (a proxy).
    pub(crate) fn spawn_via(&mut self, name: &str, tasks: u32, redis: &str) {
        let orders = self.dir.join(name);
        std::fs::write(&orders, format!("tasks {tasks}")).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "workers::fleet_worker",
                "--ignored",
                "--nocapture",
            ])
            .env(format!("{WORKER}_NAME"), name)
            .env(format!("{WORKER}_ORDERS"), &orders)
            .env(format!("{WORKER}_DB"), self.db.port.to_string())
            .env(format!("{WORKER}_TASKS"), tasks.to_string())
            .env(format!("{WORKER}_REDIS"), redis)
            .env(format!("{WORKER}_ON_UNREACHABLE"), &self.on_unreachable)
            .env(
                format!("{WORKER}_PROBE"),
                if self.probe { "1" } else { "0" },
            )
            .env(format!("{WORKER}_HOLD_MS"), self.hold_ms.to_string())
            .env(format!("{WORKER}_BUDGET"), self.budget.to_string())
            .env(
                format!("{WORKER}_LEASE_MS"),
                self.lease.as_millis().to_string(),
            )
            .envs(self.fleet.iter().map(|f| (format!("{WORKER}_FLEET"), f)))
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let (seen, fell_back, probes, failures, errors, output) = (
            self.seen.clone(),
            self.fell_back.clone(),
            self.probes.clone(),
            self.failures.clone(),
            self.errors.clone(),
            self.output.clone(),
        );
        {
            let output = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    eprintln!("{line}");
                    output.lock().unwrap().push(line);
                }
            });
        }
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                output.lock().unwrap().push(line.clone());
                let f: Vec<&str> = line.split_whitespace().collect();
                if std::env::var_os("FLEET_VERBOSE").is_some() {
                    println!("  {line}");
                }
                if f.first() == Some(&"ERROR") {
                    errors.lock().unwrap().push(line.clone());
                }
                if f.first() == Some(&"FAIL") && f.len() >= 3 {
                    let error = line.splitn(4, ' ').nth(3).unwrap_or("").to_owned();
                    failures.lock().unwrap().insert(
                        f[1].to_owned(),
                        Failures {
                            count: f[2].parse().unwrap(),
                            last_error: error,
                        },
                    );
                }
                if f.first() == Some(&"PROBE") && f.len() == 3 {
                    probes
                        .lock()
                        .unwrap()
                        .insert(f[1].to_owned(), f[2].parse().unwrap());
                }
                if f.first() == Some(&"STATE") && f.len() >= 8 {
                    if f[5] == "unreachable" {
                        fell_back.store(true, Release);
                    }
                    seen.lock().unwrap().insert(
                        f[1].to_owned(),
                        Seen {
                            pid: f[2].to_owned(),
                            share: f[3].parse().unwrap(),
                            target: f[4].parse().unwrap(),
                            state: f[5].to_owned(),
                            fallback: f[7].parse().unwrap(),
                        },
                    );
                }
            }
        });
        self.workers.push(Worker {
            name: name.to_owned(),
            child,
            orders,
            tasks,
        });
    }

    pub(crate) fn take(&mut self, name: &str) -> Worker {
        let i = self.workers.iter().position(|w| w.name == name).unwrap();
        self.seen.lock().unwrap().remove(name);
        self.workers.remove(i)
    }

    pub(crate) fn order(&mut self, name: &str, order: &str) {
        let worker = self.workers.iter_mut().find(|w| w.name == name).unwrap();
        if let Some(n) = order.strip_prefix("tasks ") {
            worker.tasks = n.parse().unwrap();
        }
        std::fs::write(&worker.orders, order).unwrap();
    }

    pub(crate) fn signal(&self, name: &str, signal: &str) {
        let worker = self.workers.iter().find(|w| w.name == name).unwrap();
        let status = Command::new("kill")
            .args([signal, &worker.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The shares the allocation gives the live workers for their demands
    /// (their tasks), by name, once every one of them reported its id.
    pub(crate) fn expected(&self) -> Option<BTreeMap<String, u32>> {
        let seen = self.seen.lock().unwrap();
        let pids: Vec<(String, String, u32)> = self
            .workers
            .iter()
            .map(|w| {
                Some((
                    w.name.clone(),
                    seen.get(&w.name)?.pid.clone(),
                    w.tasks.max(1),
                ))
            })
            .collect::<Option<_>>()?;
        let claims: Vec<(&str, u32, u32)> = pids
            .iter()
            .map(|(_, pid, d)| (pid.as_str(), *d, self.budget))
            .collect();
        let targets = allocate(self.budget, &claims);
        Some(pids.iter().map(|(n, ..)| n.clone()).zip(targets).collect())
    }

    /// Waits until every live worker holds the share the allocation gives
    /// it; prints and returns how long that took.
    pub(crate) fn converge(&self, phase: &str, limit: Duration) -> Duration {
        let took = wait_for(limit, || {
            self.no_errors();
            let Some(expected) = self.expected() else {
                return false;
            };
            let seen = self.seen.lock().unwrap();
            expected.iter().all(|(name, &share)| {
                seen.get(name)
                    .is_some_and(|s| s.share == share && s.target == share && s.state == "joined")
            })
        });
        self.report(phase, took);
        took.unwrap_or_else(|| {
            panic!(
                "{phase}: no convergence within {limit:?}: expected {:?}, seen {:?}",
                self.expected(),
                self.seen.lock().unwrap()
            )
        })
    }

    /// Waits until `done` holds of what the workers last said, up to
    /// `limit`; prints and returns how long it took.
    pub(crate) fn until(
        &self,
        phase: &str,
        limit: Duration,
        mut done: impl FnMut(&BTreeMap<String, Seen>) -> bool,
    ) -> Duration {
        let took = wait_for(limit, || {
            self.no_errors();
            done(&self.seen.lock().unwrap())
        });
        self.report(phase, took);
        took.unwrap_or_else(|| panic!("{phase}: {:?}", self.seen.lock().unwrap()))
    }

    /// Waits until every live worker holds `share`.
    pub(crate) fn all_at(&self, phase: &str, share: u32, state: &str, limit: Duration) -> Duration {
        let took = wait_for(limit, || {
            self.no_errors();
            let seen = self.seen.lock().unwrap();
            self.workers.iter().all(|w| {
                seen.get(&w.name)
                    .is_some_and(|s| s.share == share && s.state == state)
            })
        });
        self.report(phase, took);
        took.unwrap_or_else(|| panic!("{phase}: {:?}", self.seen.lock().unwrap()))
    }

    /// Fails the test when a worker could not start with its configuration.
    pub(crate) fn no_errors(&self) {
        let errors = self.errors.lock().unwrap().clone();
        assert!(errors.is_empty(), "a worker could not start: {errors:?}");
    }

    /// Waits (up to 10 s) until every live worker renewed its lease on
    /// `node` after `ms` on its clock ([`Fleet::renewed_on`]); when they
    /// had.
    pub(crate) fn until_renewed_on(&self, phase: &str, node: &RedisServer, ms: u64) -> Instant {
        self.until(phase, Duration::from_secs(10), |seen| {
            self.renewed_on(seen, node, ms)
        });
        Instant::now()
    }

    /// Whether every live worker renewed its lease on `node` after `ms`
    /// on its clock: its record there expires more than a lease later.
    /// (`seen`: what they last said, as [`Fleet::until`] gives it.)
    pub(crate) fn renewed_on(
        &self,
        seen: &BTreeMap<String, Seen>,
        node: &RedisServer,
        ms: u64,
    ) -> bool {
        let pids: Vec<String> = self
            .workers
            .iter()
            .filter_map(|w| Some(seen.get(&w.name)?.pid.clone()))
            .collect();
        let expiries = node.expiries("db");
        let lease = self.lease.as_millis() as u64;
        pids.len() == self.workers.len()
            && pids
                .iter()
                .all(|pid| expiries.get(pid).is_some_and(|&exp| exp > ms + lease))
    }

    pub(crate) fn report(&self, phase: &str, took: Option<Duration>) {
        println!(
            "[{:>6} ms] {phase}: {} (database: max {} at once, {} sessions)",
            self.start.elapsed().as_millis(),
            took.map_or("NOT converged".to_owned(), |t| format!(
                "converged in {} ms",
                t.as_millis()
            )),
            self.db.max.load(Acquire),
            self.db.sessions.load(Relaxed),
        );
        assert!(
            self.db.max.load(Acquire) <= self.bound,
            "{phase}: the fleet exceeded {}",
            self.bound
        );
    }

    pub(crate) fn evalsha_calls(&self) -> u64 {
        let info: String = self.redis.cmd(&["INFO", "commandstats"]);
        info.lines()
            .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
            .filter_map(|l| {
                l.split("calls=")
                    .nth(1)?
                    .split(',')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for worker in &mut self.workers {
            let _ = worker.child.kill();
            let _ = worker.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
