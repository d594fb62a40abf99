//! F2 in the driver against real servers: a registry's fleet resource on
//! a real `redis-server` (or `$BULKHEAD_REDIS_SERVER`, on a free loopback
//! port in a temporary directory, killed at the end) that stub Sentinels
//! name, and whose answers the test changes. It runs with the unit tests
//! and, like `tests/fleet`, fails without `redis-server`.
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
    fn redis(&mut self, port: u16) {
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
        self.children.push((port, command.spawn().unwrap()));
    }
}

fn query(port: u16, cmd: &mut redis::Cmd) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut con = client.get_connection_with_timeout(Duration::from_millis(300))?;
    cmd.query(&mut con)
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

#[test]
fn a_reply_the_sentinels_do_not_confirm_is_not_applied() {
    use std::sync::{Arc, Mutex};

    use crate::sentinel::tests::{master, stub};

    let mut servers = Servers {
        children: Vec::new(),
        dir: dir(),
    };
    let primary = free_port();
    servers.redis(primary);
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
