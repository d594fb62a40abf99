//! Checks by hand against real servers (`cargo test -p bulkhead-fleet
//! --lib live -- --ignored --nocapture`), on free loopback ports in a
//! temporary directory (`redis-server`, or `$BULKHEAD_REDIS_SERVER`;
//! `redis-cli` for the Cluster), each killed at the end:
//!
//! - a primary, a replica and three Sentinels; a registry's fleet
//!   resource on `redis+sentinel://`; the primary SIGKILLed, then
//!   restarted empty at its address;
//! - three Cluster primaries; a fleet resource on `redis+cluster://`.
//!
//! One runs with the unit tests, as it needs only `redis-server` (like
//! `tests/fleet`, it fails without one): F2 in the driver, against stub
//! Sentinels.
//!
//! The multi-process proofs are in `tests/fleet/` (sentinel.rs,
//! cluster.rs; with passwords on the nodes and the Sentinels,
//! sentinel_auth.rs; over TLS, tls.rs).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bulkhead_registry::Registry;
use bulkhead_registry::fleet::FleetState;

use crate::{FleetConfig, OnUnreachable};

/// The processes started, killed when dropped.
struct Servers {
    children: Vec<(u16, Child)>,
    dir: PathBuf,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn binary() -> String {
    std::env::var("BULKHEAD_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Servers {
    fn redis(&mut self, port: u16, replica_of: Option<u16>) {
        let dir = self.dir.join(format!("r{port}-{}", self.children.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(binary());
        command
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--repl-diskless-sync-delay", "0", "--dir"])
            .arg(&dir)
            .stdout(Stdio::null());
        if let Some(primary) = replica_of {
            command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        self.children.push((port, command.spawn().unwrap()));
    }

    fn sentinel(&mut self, port: u16, primary: u16) {
        let conf = self.dir.join(format!("sentinel{port}.conf"));
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {primary} 2\n\
                 sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 3000\n",
                self.dir.display()
            ),
        )
        .unwrap();
        let child = Command::new(binary())
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.children.push((port, child));
    }

    fn kill(&mut self, port: u16) {
        if let Some(i) = self.children.iter().position(|(p, _)| *p == port) {
            let (_, mut child) = self.children.remove(i);
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

fn query(port: u16, cmd: &mut redis::Cmd) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut con = client.get_connection_with_timeout(Duration::from_millis(300))?;
    cmd.query(&mut con)
}

fn info(port: u16, section: &str) -> String {
    match query(port, redis::cmd("INFO").arg(section)) {
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::VerbatimString { text, .. }) => text,
        _ => String::new(),
    }
}

fn wait(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bulkhead-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn evals(port: u16) -> u64 {
    let stats = info(port, "commandstats");
    ["cmdstat_evalsha:calls=", "cmdstat_eval:calls="]
        .iter()
        .filter_map(|key| {
            let at = stats.find(key)? + key.len();
            stats[at..].split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
#[ignore = "starts redis-server and three Sentinels; run by hand"]
fn live_sentinel_failover_is_followed() {
    let mut servers = Servers {
        children: Vec::new(),
        dir: dir(),
    };
    let (primary, replica) = (free_port(), free_port());
    servers.redis(primary, None);
    wait("the primary", Duration::from_secs(5), || {
        query(primary, &mut redis::cmd("PING")).is_ok()
    });
    servers.redis(replica, Some(primary));
    wait("the replica's link", Duration::from_secs(10), || {
        info(replica, "replication").contains("master_link_status:up")
    });
    let sentinels: Vec<u16> = (0..3).map(|_| free_port()).collect();
    for &port in &sentinels {
        servers.sentinel(port, primary);
    }
    wait("the Sentinels", Duration::from_secs(15), || {
        sentinels.iter().all(|&port| {
            let info = info(port, "sentinel");
            info.contains("slaves=1") && info.contains("sentinels=3")
        })
    });
    let url = format!(
        "redis+sentinel://{}/mymaster",
        sentinels
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let registry = Registry::new();
    let config = FleetConfig::redis(&url)
        .unwrap()
        .lease(Duration::from_secs(2))
        .on_unreachable(OnUnreachable::Closed);
    registry.fleet_resource("db", 12, config).unwrap();
    let fleet = || registry.snapshot().fleets()[0].clone();
    wait("joined", Duration::from_secs(5), || {
        fleet().state == FleetState::Joined
    });
    println!("joined on {primary}: {:?}", fleet().share);

    let killed = Instant::now();
    servers.kill(primary);
    let mut last = String::new();
    let mut switched = None;
    wait(
        "the fleet on the promoted replica",
        Duration::from_secs(20),
        || {
            let f = fleet();
            let now = format!("{:?} share {} error {:?}", f.state, f.share, f.last_error);
            if now != last {
                println!("{:>6} ms: {now}", killed.elapsed().as_millis());
                last = now;
            }
            if switched.is_none() && info(replica, "replication").contains("role:master") {
                switched = Some(killed.elapsed());
                println!(
                    "{:>6} ms: the replica says role:master",
                    killed.elapsed().as_millis()
                );
            }
            switched.is_some()
                && f.state == FleetState::Joined
                && f.last_error.is_none()
                && evals(replica) > 0
        },
    );
    println!(
        "{:>6} ms: joined on the promoted replica ({} scripts run there)",
        killed.elapsed().as_millis(),
        evals(replica)
    );

    // The old primary, restarted empty at its address: never trusted.
    servers.redis(primary, None);
    let restarted = Instant::now();
    while restarted.elapsed() < Duration::from_secs(4) {
        let f = fleet();
        let now = format!("{:?} share {} error {:?}", f.state, f.share, f.last_error);
        if now != last {
            println!(
                "{:>6} ms after the restart: {now}",
                restarted.elapsed().as_millis()
            );
            last = now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        evals(primary),
        0,
        "a script ran on the restarted old primary"
    );
    assert_eq!(fleet().state, FleetState::Joined);
    println!("no script ran on the restarted old primary; the fleet stayed joined");
    drop(registry);
}

#[test]
#[ignore = "starts three redis-server Cluster nodes; run by hand"]
fn live_cluster_is_joined() {
    let mut servers = Servers {
        children: Vec::new(),
        dir: dir(),
    };
    let ports: Vec<u16> = (0..3).map(|_| free_port()).filter(|p| *p < 55535).collect();
    assert_eq!(ports.len(), 3, "ports for the cluster bus (+10000)");
    for &port in &ports {
        let dir = servers.dir.join(format!("c{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(binary())
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        servers.children.push((port, child));
    }
    for &port in &ports {
        wait("a node", Duration::from_secs(5), || {
            query(port, &mut redis::cmd("PING")).is_ok()
        });
    }
    let status = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(ports.iter().map(|p| format!("127.0.0.1:{p}")))
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    wait("cluster_state:ok", Duration::from_secs(10), || {
        ports
            .iter()
            .all(|&p| info_cluster(p).contains("cluster_state:ok"))
    });
    let url = format!("redis+cluster://127.0.0.1:{}", ports[0]);
    let registry = Registry::new();
    registry
        .fleet_resource(
            "db",
            12,
            FleetConfig::redis(&url)
                .unwrap()
                .lease(Duration::from_secs(2))
                .on_unreachable(OnUnreachable::Closed),
        )
        .unwrap();
    let fleet = || registry.snapshot().fleets()[0].clone();
    wait("joined", Duration::from_secs(5), || {
        fleet().state == FleetState::Joined
    });
    let f = fleet();
    println!("joined {}: {:?} {:?}", f.redis, f.state, f.last_error);
    let owner: Vec<u16> = ports.iter().copied().filter(|&p| evals(p) > 0).collect();
    println!("scripts ran on {owner:?}");
    assert_eq!(
        owner.len(),
        1,
        "the resource's keys are in one slot, on one node"
    );
    drop(registry);
}

fn info_cluster(port: u16) -> String {
    match query(port, redis::cmd("CLUSTER").arg("INFO")) {
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::VerbatimString { text, .. }) => text,
        _ => String::new(),
    }
}

/// F2 through the driver: one real primary, three stub Sentinels whose
/// answers the test changes. A reply from a node the Sentinels no longer
/// name by a majority, or named at an epoch that went back, is not
/// applied: REG-019 in `last_error`, no renewal counted, the share falls
/// back at its deadline; the fleet rejoins once they name it again.
#[test]
fn a_reply_the_sentinels_do_not_confirm_is_not_applied() {
    use std::sync::{Arc, Mutex};

    use crate::sentinel::tests::{master, stub};

    let mut servers = Servers {
        children: Vec::new(),
        dir: dir(),
    };
    let primary = free_port();
    servers.redis(primary, None);
    wait("the primary", Duration::from_secs(5), || {
        query(primary, &mut redis::cmd("PING")).is_ok()
    });
    let stubs = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let answers: Vec<_> = (0..3)
        .map(|_| Arc::new(Mutex::new(master(primary, 1, "master"))))
        .collect();
    let addrs: Vec<String> = answers
        .iter()
        .map(|answer| stubs.block_on(stub(Arc::clone(answer))).to_string())
        .collect();
    let set = |port: u16, epoch: u64, flags: &str, how_many: usize| {
        for answer in &answers[..how_many] {
            *answer.lock().unwrap() = master(port, epoch, flags);
        }
    };
    let registry = Registry::new();
    let config = FleetConfig::sentinel("mymaster", &addrs)
        .unwrap()
        .lease(Duration::from_millis(600))
        .on_unreachable(OnUnreachable::Closed);
    registry.fleet_resource("db", 12, config).unwrap();
    let fleet = || registry.snapshot().fleets()[0].clone();
    wait("joined", Duration::from_secs(5), || {
        fleet().state == FleetState::Joined && fleet().renewals >= 2
    });
    // Every error seen while `done` does not hold.
    let errors_until = |what: &str, done: &dyn Fn() -> bool| {
        let mut seen: Vec<String> = Vec::new();
        wait(what, Duration::from_secs(5), || {
            if let Some(error) = fleet().last_error
                && seen.last() != Some(&error)
            {
                seen.push(error);
            }
            done()
        });
        seen
    };

    // Two of three Sentinels name another node at a higher epoch.
    let gone = free_port();
    set(gone, 2, "master", 2);
    let renewals = fleet().renewals;
    let seen = errors_until("unreachable", &|| fleet().state == FleetState::Unreachable);
    let expected = format!("REG-019: no Sentinel majority names 127.0.0.1:{primary}");
    assert!(
        seen.iter().any(|e| e.starts_with(&expected)),
        "{expected} in {seen:#?}"
    );
    assert!(fleet().renewals <= renewals + 1, "a grant was applied");
    assert_eq!(fleet().share, 0);

    // They name it again, at the new epoch: rejoined.
    set(primary, 2, "master", 3);
    wait("rejoined", Duration::from_secs(5), || {
        fleet().state == FleetState::Joined
    });

    // An epoch that went back confirms nothing (two Sentinels at the old
    // epoch, the third one down)...
    set(primary, 1, "master", 3);
    *answers[2].lock().unwrap() = master(primary, 1, "master,s_down");
    let seen = errors_until("unreachable", &|| fleet().state == FleetState::Unreachable);
    assert!(
        seen.iter()
            .any(|e| e.starts_with("REG-019: Sentinel config-epoch went back: 1 after 2")),
        "{seen:#?}"
    );
    // ... unless the whole set went back together (redeployed without its
    // sentinel.conf): followed, not refused until a restart.
    set(primary, 1, "master", 3);
    wait(
        "rejoined after the set's reset",
        Duration::from_secs(5),
        || fleet().state == FleetState::Joined,
    );
    drop(registry);
    drop(stubs);
}
