//! A real `redis-server` of the test's own, started on a free loopback
//! port in a directory of its own, without persistence, and killed when
//! dropped (as bulkhead-fleet's tests start theirs).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// The `redis-server` binary: `$BULKHEAD_REDIS_SERVER`, or the one on the
/// `PATH`. Missing, the test fails: it never passes without a server.
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
                "this test needs a real redis-server for its fleet and found none on the PATH: \
                 install it (Debian: apt-get install -y redis-server; .ci/run does) or point \
                 BULKHEAD_REDIS_SERVER at one"
            )
        })
}

impl RedisServer {
    /// A server on a free port, answering `PING`.
    pub(crate) fn start() -> Self {
        let binary = binary();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!(
            "bulkhead-dashboard-redis-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("its directory");
        let child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", binary.display()));
        let server = RedisServer { child, port, dir };
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
                let mut pong = [0u8; 7];
                if stream.write_all(b"PING\r\n").is_ok()
                    && stream.read_exact(&mut pong).is_ok()
                    && &pong == b"+PONG\r\n"
                {
                    return server;
                }
            }
            assert!(
                Instant::now() < give_up,
                "{} did not answer on port {port} within 10 s",
                binary.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
