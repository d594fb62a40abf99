//! What a fleet resource costs a call (feature `redis`): the same
//! operations on a bulkhead of a registry, plain and on a fleet resource
//! whose share is granted, side by side in one run; and, with
//! `BULKHEAD_FLEET_LOAD=1`, the load the fleet puts on Redis.
//!
//! | group | what |
//! |---|---|
//! | `fleet_free` | `try_enter()` + drop and `Pipeline::execute` with a free slot |
//! | `fleet_rejected` | the same, refused: every slot is held |
//!
//! Needs Redis: `BULKHEAD_REDIS_URL`, or a `redis-server` on the `PATH`,
//! started on a free loopback port for the run. Run with
//! `cargo bench --features redis --bench fleet` (see `BENCHMARKS.md`).

use std::convert::Infallible;
use std::hint::black_box;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bulkhead::fleet::{FleetConfig, FleetState};
use bulkhead::{Bulkhead, BulkheadConfig, Pipeline, Registry};
use criterion::Criterion;

/// Slots of every bulkhead and budget: the default limit.
const ROOMY: u32 = 25;
/// Short, so that the fleet thread renews often while the cases run.
const LEASE: Duration = Duration::from_secs(2);

/// Keeps `value` from being optimised away, then drops it where it lies
/// (see `benches/bulkhead.rs`).
#[inline(always)]
fn consume<T>(value: T) {
    black_box(&value);
}

#[inline(always)]
fn call() -> Result<u64, Infallible> {
    Ok(black_box(42))
}

/// A registry with bulkhead `id` of `max` slots (and a pipeline around
/// it), on fleet resource `db` (budget `max`, granted in full) when
/// `redis` is given.
fn member(redis: Option<&str>, id: &str, max: u32) -> (Registry, Bulkhead, Pipeline) {
    let registry = Registry::new();
    if let Some(url) = redis {
        let config = FleetConfig::redis(url)
            .expect("a Redis URL")
            .prefix(id)
            .lease(LEASE);
        registry
            .fleet_resource("db", max, config)
            .expect("a fleet resource");
    }
    let pipeline = Pipeline::builder(&registry, id)
        .bulkhead(|b| match redis {
            Some(_) => b.max_concurrent(max).resource("db"),
            None => b.max_concurrent(max),
        })
        .build()
        .expect("a fresh registry");
    let bulkhead = registry
        .bulkhead(id)
        .expect("declared by the pipeline")
        .bulkhead()
        .clone();
    if redis.is_some() {
        let started = Instant::now();
        while bulkhead.max_concurrent() < max
            || registry.snapshot().fleets()[0].state != FleetState::Joined
        {
            assert!(started.elapsed() < 3 * LEASE, "no share from Redis");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    (registry, bulkhead, pipeline)
}

fn free(c: &mut Criterion, url: &str) {
    let mut group = c.benchmark_group("fleet_free");
    for (label, redis) in [("plain", None), ("fleet", Some(url))] {
        let (_registry, bulkhead, pipeline) = member(redis, &format!("free-{label}"), ROOMY);
        group.bench_function(format!("{label}_try_enter"), |b| {
            b.iter(|| consume(black_box(&bulkhead).try_enter()))
        });
        group.bench_function(format!("{label}_execute"), |b| {
            b.iter(|| consume(black_box(&pipeline).execute(call)))
        });
    }
    group.finish();
}

fn rejected(c: &mut Criterion, url: &str) {
    let mut group = c.benchmark_group("fleet_rejected");
    for (label, redis) in [("plain", None), ("fleet", Some(url))] {
        let (_registry, bulkhead, pipeline) = member(redis, &format!("full-{label}"), 1);
        let _held = bulkhead.try_enter().expect("the only slot is free");
        group.bench_function(format!("{label}_try_enter"), |b| {
            b.iter(|| consume(black_box(&bulkhead).try_enter()))
        });
        group.bench_function(format!("{label}_execute"), |b| {
            b.iter(|| consume(black_box(&pipeline).execute(call)))
        });
    }
    group.finish();
}

/// Script calls on Redis per process per second, and Redis's time per
/// call, for fleets of 1, 10 and 50 idle processes (registries), then for
/// 10 whose demand moves every lease.
fn redis_load(redis: &RedisServer) {
    let lease = Duration::from_secs(1);
    println!("Redis load, lease {lease:?} (the load scales with 1 / lease):");
    for (processes, moving) in [(1, false), (10, false), (50, false), (10, true)] {
        let prefix = format!("load-{processes}-{moving}");
        let members: Vec<(Registry, Bulkhead)> = (0..processes)
            .map(|i| {
                let registry = Registry::new();
                let config = FleetConfig::redis(&redis.url())
                    .expect("a Redis URL")
                    .prefix(&prefix)
                    .lease(lease);
                registry
                    .fleet_resource("db", 100, config)
                    .expect("a fleet resource");
                let bulkhead = registry
                    .bulkhead_policy(
                        &format!("{prefix}-{i}"),
                        "bench",
                        &BulkheadConfig::builder().max_concurrent(100).resource("db"),
                    )
                    .expect("a bulkhead");
                (registry, bulkhead)
            })
            .collect();
        // Past the hold of a new resource and the first rebalancing.
        std::thread::sleep(3 * lease);
        let (calls, usec) = redis.script_stats();
        let started = Instant::now();
        let mut held = Vec::new();
        while started.elapsed() < 10 * lease {
            if moving {
                // Every lease, half of them take 5 slots each or give them back.
                if held.is_empty() {
                    for (_, bulkhead) in members.iter().step_by(2) {
                        for _ in 0..5 {
                            if let Ok(permit) = bulkhead.try_enter_owned() {
                                held.push(permit);
                            }
                        }
                    }
                } else {
                    held.clear();
                }
            }
            std::thread::sleep(lease);
        }
        held.clear();
        let elapsed = started.elapsed().as_secs_f64();
        let (calls_after, usec_after) = redis.script_stats();
        let calls = calls_after - calls;
        let per_call = (usec_after - usec) / calls.max(1) as f64;
        println!(
            "  {processes:>2} processes{}: {:.2} script calls per process per second, {per_call:.1} µs of Redis per call",
            if moving { ", demand moving" } else { ", idle" },
            calls as f64 / elapsed / f64::from(processes),
        );
        drop(members);
    }
}

fn main() {
    let redis = RedisServer::start();
    let url = redis.url();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(100)
        .configure_from_args();
    free(&mut criterion, &url);
    rejected(&mut criterion, &url);
    criterion.final_summary();
    if std::env::var_os("BULKHEAD_FLEET_LOAD").is_some() {
        redis_load(&redis);
    }
}

/// The Redis of the run: given in `BULKHEAD_REDIS_URL`, or started here.
struct RedisServer {
    url: String,
    child: Option<Child>,
}

impl RedisServer {
    fn start() -> Self {
        if let Ok(url) = std::env::var("BULKHEAD_REDIS_URL") {
            return RedisServer { url, child: None };
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("this benchmark needs redis-server on the PATH, or BULKHEAD_REDIS_URL");
        let server = RedisServer {
            url: format!("redis://127.0.0.1:{port}/0"),
            child: Some(child),
        };
        let started = Instant::now();
        while server.connection().is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        server
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    fn connection(&self) -> Option<redis::Connection> {
        let mut connection = redis::Client::open(self.url.as_str())
            .ok()?
            .get_connection()
            .ok()?;
        redis::cmd("PING")
            .query::<String>(&mut connection)
            .ok()
            .map(|_| connection)
    }

    /// Script calls so far (EVALSHA and EVAL), and Redis's µs in them.
    fn script_stats(&self) -> (u64, f64) {
        let info: String = self
            .connection()
            .and_then(|mut c| redis::cmd("INFO").arg("commandstats").query(&mut c).ok())
            .unwrap_or_default();
        info.lines()
            .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
            .fold((0, 0.0), |(calls, usec), line| {
                let field = |name: &str| {
                    line.split(&format!("{name}="))
                        .nth(1)
                        .and_then(|rest| rest.split(',').next())
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(0.0)
                };
                (calls + field("calls") as u64, usec + field("usec"))
            })
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
