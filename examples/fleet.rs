//! A budget for a whole fleet: three registries, standing for three
//! processes, lease shares of one resource's 12 slots from Redis, and the
//! shares follow their demand.
//!
//! Each registry is a member of the fleet as a process of its own would
//! be: its own Redis connection, its own lease and its own `bulkhead-fleet`
//! thread. `batch` gets busy, then `api-1`, then `batch` leaves; a line
//! every half second shows each member's share, what it asks for, and the
//! calls in flight across the fleet, never above the budget.
//!
//! It needs the feature `redis` and a Redis: the URL in
//! `BULKHEAD_REDIS_URL`, or a `redis-server` on the `PATH`, which the
//! example starts on a free loopback port (without persistence) and stops
//! at the end:
//!
//! ```text
//! cargo run --example fleet --features redis
//! BULKHEAD_REDIS_URL=redis://127.0.0.1:6379/0 cargo run --example fleet --features redis
//! ```
//!
//! With `BULKHEAD_REDIS_URL`, run it in several terminals at once: the
//! copies join one fleet (key prefix `fleet-example`) and share the 12
//! slots among all their members.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead::events::{Event, EventStream, FleetShareChanged};
use bulkhead::fleet::{FleetConfig, OnUnreachable};
use bulkhead::{CallError, Pipeline, Registry};

type Demo = Result<(), Box<dyn std::error::Error>>;

/// The fleet's budget: what the database behind `db` takes at once.
const BUDGET: u32 = 12;
/// Short, so that shares move within seconds (the default is 10 s).
const LEASE: Duration = Duration::from_secs(1);
const MEMBERS: [&str; 3] = ["api-1", "api-2", "batch"];

fn main() -> Demo {
    let Some(redis) = Redis::find()? else {
        println!(
            "This example needs Redis. Either install redis-server (Debian: \
             apt-get install redis-server) and run it again, or start one and \
             give its URL:\n\n    redis-server --port 6379 --save '' &\n    \
             BULKHEAD_REDIS_URL=redis://127.0.0.1:6379/0 cargo run --example fleet --features redis"
        );
        return Ok(());
    };
    println!(
        "Redis at {}; budget {BUDGET} slots, lease {LEASE:?}\n",
        redis.url
    );
    let mut members = MEMBERS
        .iter()
        .map(|name| Member::start(name, &redis.url))
        .collect::<Result<Vec<_>, _>>()?;

    let start = Instant::now();
    let phases = [
        Phase(
            0,
            "every member idle (1 call at a time)",
            &[(0, Busy(1)), (1, Busy(1)), (2, Busy(1))],
        ),
        Phase(4, "batch busy (12 callers)", &[(2, Busy(12))]),
        Phase(8, "api-1 busy too (6 callers)", &[(0, Busy(6))]),
        Phase(12, "batch leaves the fleet", &[(2, Leave)]),
    ];
    let end = Duration::from_secs(15);
    let mut next = 0;
    println!(
        "Each member's share of the {BUDGET} slots (-> the share it moves to) and what it \
         asks for (its demand: calls in flight and waiting, more when it refused some)."
    );
    println!(
        "{:>6}  {:<22}{:<22}{:<22}fleet",
        "t", MEMBERS[0], MEMBERS[1], MEMBERS[2]
    );
    while start.elapsed() < end {
        if let Some(Phase(at, what, actions)) = phases.get(next)
            && start.elapsed() >= Duration::from_secs(*at)
        {
            println!("-- {what}");
            for (member, action) in *actions {
                match action {
                    Busy(callers) => members[*member].busy(*callers),
                    Leave => members[*member].leave(),
                }
            }
            next += 1;
        }
        print_row(start.elapsed(), &members);
        thread::sleep(Duration::from_millis(500));
    }
    for member in &members {
        member.stop.store(true, Relaxed);
    }
    println!();
    for member in &mut members {
        let (admitted, rejected) = (member.admitted.load(Relaxed), member.rejected.load(Relaxed));
        let changes: Vec<String> = member
            .events
            .drain()
            .filter_map(|event| match event {
                Event::FleetShareChanged(FleetShareChanged { reason, to, .. }) => {
                    Some(format!("{reason:?} {to}"))
                }
                _ => None,
            })
            .collect();
        println!(
            "{}: {admitted} calls admitted, {rejected} refused; share changes: {}",
            member.name,
            changes.join(", ")
        );
    }
    Ok(())
}

/// From second `.0` on, `.1` happens: members (by index) do `.2`.
struct Phase(u64, &'static str, &'static [(usize, Action)]);

enum Action {
    /// This many callers call, one call at a time each.
    Busy(u32),
    /// The member leaves the fleet.
    Leave,
}
use Action::{Busy, Leave};

/// One line: each member's share (its target when it differs), what it
/// asks for, and the calls in flight across the fleet.
fn print_row(elapsed: Duration, members: &[Member]) {
    let mut line = format!("{:>5.1}s  ", elapsed.as_secs_f64());
    let mut in_flight = 0;
    let mut budget = 0;
    for member in members {
        let snapshot = member.registry.snapshot();
        let fleet = &snapshot.fleets()[0];
        in_flight += fleet.in_flight;
        budget = budget.max(fleet.budget);
        let cell = match fleet.state.as_str() {
            "joined" if fleet.target != fleet.share => format!(
                "{:>2} -> {:<2} asks {:>2}",
                fleet.share, fleet.target, fleet.demand
            ),
            "joined" => format!("{:>2}       asks {:>2}", fleet.share, fleet.demand),
            state => format!("{:>2} {state}", fleet.share),
        };
        line.push_str(&format!("{cell:<22}"));
    }
    line.push_str(&format!("{in_flight:>2} in flight / {budget}"));
    println!("{line}");
}

/// A registry on the fleet resource `db`, and callers that keep some of
/// its slots busy.
struct Member {
    name: &'static str,
    registry: Registry,
    /// How many callers call now.
    callers: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    admitted: Arc<AtomicU64>,
    rejected: Arc<AtomicU64>,
    /// Its registry's events, for the share changes.
    events: EventStream,
}

impl Member {
    fn start(name: &'static str, url: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let registry = Registry::new();
        let events = registry.subscribe();
        registry.fleet_resource(
            "db",
            BUDGET,
            FleetConfig::redis(url)?
                .prefix("fleet-example")
                .lease(LEASE)
                .on_unreachable(OnUnreachable::Closed),
        )?;
        // Each member may take the whole budget when nobody else wants it.
        let queries = Pipeline::builder(&registry, "queries")
            .bulkhead(|b| {
                b.max_concurrent(BUDGET)
                    .max_wait(Duration::from_millis(20))
                    .resource("db")
            })
            .build()?;
        let member = Member {
            name,
            registry,
            callers: Arc::new(AtomicU32::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            admitted: Arc::default(),
            rejected: Arc::default(),
            events,
        };
        for caller in 0..BUDGET {
            let queries = queries.clone();
            let (callers, stop) = (member.callers.clone(), member.stop.clone());
            let (admitted, rejected) = (member.admitted.clone(), member.rejected.clone());
            thread::spawn(move || {
                while !stop.load(Relaxed) {
                    if caller >= callers.load(Relaxed) {
                        thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                    // A query of 20 ms.
                    let outcome = queries.execute(|| {
                        thread::sleep(Duration::from_millis(20));
                        Ok::<(), std::io::Error>(())
                    });
                    match outcome {
                        Err(CallError::Rejected(_)) => {
                            rejected.fetch_add(1, Relaxed);
                            thread::sleep(Duration::from_millis(5));
                        }
                        _ => {
                            admitted.fetch_add(1, Relaxed);
                        }
                    }
                }
            });
        }
        Ok(member)
    }

    fn busy(&self, callers: u32) {
        self.callers.store(callers, Relaxed);
    }

    /// Leaves the fleet as a process shutting down would: its share goes
    /// back at once instead of when its lease runs out.
    fn leave(&self) {
        self.callers.store(0, Relaxed);
        self.registry.leave_fleets();
    }
}

/// The Redis the example uses: given, or started here.
struct Redis {
    url: String,
    server: Option<(Child, std::path::PathBuf)>,
}

impl Redis {
    fn find() -> Result<Option<Self>, Box<dyn std::error::Error>> {
        if let Ok(url) = std::env::var("BULKHEAD_REDIS_URL") {
            return Ok(Some(Redis { url, server: None }));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let Some(binary) = std::env::split_paths(&path)
            .map(|dir| dir.join("redis-server"))
            .find(|candidate| candidate.is_file())
        else {
            return Ok(None);
        };
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!("bulkhead-fleet-example-{port}"));
        std::fs::create_dir_all(&dir)?;
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let redis = Redis {
            url: format!("redis://127.0.0.1:{port}/0"),
            server: Some((child, dir)),
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if ping(port) {
                println!("Started redis-server on port {port} for this run.");
                return Ok(Some(redis));
            }
            thread::sleep(Duration::from_millis(20));
        }
        Err(format!("redis-server did not answer on port {port}").into())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some((child, dir)) = &mut self.server {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}
