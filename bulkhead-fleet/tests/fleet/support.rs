//! A real `redis-server` for the fleet tests, started on a free loopback
//! port in a directory of its own, without persistence; and a loopback
//! "database" that counts concurrent sessions.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// A `redis-server` of the test's own.
pub(crate) struct RedisServer {
    child: Option<Child>,
    pub(crate) port: u16,
    dir: PathBuf,
}

/// The `redis-server` binary: `$BULKHEAD_REDIS_SERVER`, or the one on the
/// `PATH`. Missing, the tests fail: they never pass without a server.
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BULKHEAD_REDIS_SERVER") {
        return path.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the fleet tests need a real redis-server and found none on the PATH: \
                 install it (Debian: apt-get install -y redis-server; .ci/run does) \
                 or point BULKHEAD_REDIS_SERVER at one"
            )
        })
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl RedisServer {
    pub(crate) fn start() -> Self {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("bulkhead-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer {
            child: None,
            port,
            dir,
        };
        server.restart();
        server
    }

    /// Starts it (again, empty) on its port.
    pub(crate) fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(binary())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot run redis-server");
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.write_all(b"PING\r\n");
                let mut buf = [0u8; 7];
                if stream.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n" {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "redis-server did not answer on port {} within 5 s",
            self.port
        );
    }

    /// Kills it (SIGKILL): what a crash looks like.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Runs one command.
    pub(crate) fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let client = redis::Client::open(self.url()).unwrap();
        let mut con = client.get_connection().unwrap();
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut con).unwrap()
    }

    /// A connection of its own, for scripts.
    pub(crate) fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback server standing in for the database the fleet protects: a
/// session starts with the client's first byte (how long to hold it, in
/// ms) and ends when the server closes it. It records how many sessions
/// were open at once, at most: never more than the clients hold slots.
pub(crate) struct Database {
    pub(crate) port: u16,
    pub(crate) max: Arc<AtomicU32>,
    pub(crate) sessions: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Database {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let current = Arc::new(AtomicU32::new(0));
        let max = Arc::new(AtomicU32::new(0));
        let sessions = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (current, max, sessions, stop) =
                (current.clone(), max.clone(), sessions.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let Ok((mut stream, _)) = listener.accept() else {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    };
                    let (current, max, sessions) = (current.clone(), max.clone(), sessions.clone());
                    std::thread::spawn(move || {
                        let _ = stream.set_nonblocking(false);
                        let mut hold = [0u8; 1];
                        if stream.read_exact(&mut hold).is_ok() {
                            let now = current.fetch_add(1, AcqRel) + 1;
                            max.fetch_max(now, AcqRel);
                            sessions.fetch_add(1, Relaxed);
                            std::thread::sleep(Duration::from_millis(u64::from(hold[0])));
                            current.fetch_sub(1, AcqRel);
                        }
                    });
                }
            });
        }
        Database {
            port,
            max,
            sessions,
            stop,
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

/// One session of `hold_ms` with the database at `port`: returns when the
/// server closed it.
pub(crate) fn session(port: u16, hold_ms: u8) {
    if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
        let _ = stream.write_all(&[hold_ms]);
        let mut buf = [0u8; 1];
        let _ = stream.read(&mut buf);
    }
}

/// Waits until `done` holds, up to `limit`; how long it took.
pub(crate) fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}
