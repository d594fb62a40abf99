//! The thread that keeps a registry's fleet leases: one per registry with
//! a fleet resource (`bulkhead-fleet`), on a Tokio runtime of its own, so
//! that neither a busy application runtime nor its absence (sync-only
//! programs) delays a renewal or a fallback. Each resource is one task:
//! every 10 ms it samples its bulkheads, applies the share, falls back
//! when the lease ran out, and sends a request when one is due. Calls never
//! wait for it.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::Ordering::Release;
use std::time::{Duration, Instant};

use bulkhead_core::{BulkheadEvent, BulkheadEventKind, Event, EventStream, PolicyContext};
use redis::AsyncConnectionConfig;
use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use tokio::sync::mpsc;

use super::failure;
use super::lease::later;
use super::resource::{Resource, Status};
use super::script::{Keys, Scripts};
use super::sentinel::Resolver;
use super::topology::{Addr, Cluster, Sentinels, Topology};

/// How often a resource's task wakes up.
const TICK: Duration = Duration::from_millis(10);

/// The registry's end of the driver: resources are sent to it; dropping it
/// lets the thread end once every resource has left.
#[derive(Debug)]
pub(crate) struct Driver {
    resources: mpsc::UnboundedSender<Arc<Resource>>,
}

impl Driver {
    /// Starts the thread.
    pub(crate) fn start(context: PolicyContext) -> std::io::Result<Driver> {
        if REFUSE_START.get() {
            return Err(std::io::Error::other(
                "refused on this thread for a test (fleet::__testing)",
            ));
        }
        // rustls picks its crypto provider by itself only when one is built
        // in: an application whose other crates bring rustls's default
        // provider (aws-lc-rs) as well as our `ring` would make every TLS
        // connection panic inside redis-rs. Install ours as the process's
        // default unless the application installed one.
        #[cfg(feature = "tls")]
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Another thread may install one meanwhile: theirs stays.
            // rustls 0.23.48 deprecates `ring`'s provider for its lack of
            // post-quantum key exchange; we keep it (see Cargo.toml: the
            // alternative, aws-lc-rs, is a C build with cmake) until the
            // feature can bring aws-lc-rs instead.
            #[allow(deprecated)]
            let provider = rustls::crypto::ring::default_provider();
            let _ = provider.install_default();
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (sender, mut receiver) = mpsc::unbounded_channel::<Arc<Resource>>();
        // The thread logs to the subscriber in force where it starts (a
        // scoped default included), or, if there is none yet, to the global
        // one when it logs, as `observe::trace_events` does.
        #[cfg(feature = "tracing")]
        let dispatch = tracing::dispatcher::get_default(tracing::Dispatch::clone);
        std::thread::Builder::new()
            .name("bulkhead-fleet".to_owned())
            .spawn(move || {
                let drive = move || {
                    runtime.block_on(async move {
                        let mut tasks = Vec::new();
                        while let Some(resource) = receiver.recv().await {
                            tasks.push(tokio::spawn(run(resource, context.clone())));
                        }
                        for task in tasks {
                            let _ = task.await;
                        }
                    });
                };
                #[cfg(feature = "tracing")]
                if dispatch.is::<tracing::subscriber::NoSubscriber>() {
                    drive();
                } else {
                    tracing::dispatcher::with_default(&dispatch, drive);
                }
                #[cfg(not(feature = "tracing"))]
                drive();
            })?;
        Ok(Driver { resources: sender })
    }

    /// Starts keeping `resource`'s lease.
    pub(crate) fn add(&self, resource: Arc<Resource>) {
        resource.driven.store(true, Release);
        // The thread ends only after this end is dropped.
        let _ = self.resources.send(resource);
    }
}

thread_local! {
    /// Whether [`Driver::start`] fails on this thread, for the tests of
    /// what a registry does then.
    static REFUSE_START: Cell<bool> = const { Cell::new(false) };
}

/// Makes [`Driver::start`] fail on this thread (`true`) or work again.
pub(crate) fn refuse_starts_on_this_thread(refuse: bool) {
    REFUSE_START.set(refuse);
}

/// Keeps `resource`'s lease until it is told to leave.
async fn run(resource: Arc<Resource>, context: PolicyContext) {
    let mut events = context.events().map(|bus| bus.subscribe());
    let scripts = Scripts::new();
    let keys = Keys::new(resource.config.key_prefix(), resource.name);
    let mut redis = Link::new(&resource);
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The demand window turns every twelfth of the lease.
    let turn = resource.config.lease_duration() / 12;
    let mut turned = Instant::now();
    loop {
        tick.tick().await;
        if resource.leave.load(std::sync::atomic::Ordering::Relaxed) {
            leave(&resource, &context, &scripts, &keys, &mut redis).await;
            return;
        }
        let now = Instant::now();
        let (request, give_up) = {
            let mut members = resource.members();
            count_refusals(&mut events, &mut members);
            if now >= later(turned, turn) {
                members.rotate_window();
                turned = now;
            }
            members.sample();
            members.settle();
            let mut status = resource.status();
            if let Some(change) = status.lease.expire(now) {
                resource.publish(&context, change, &status.lease);
            }
            members.apply(status.lease.grant);
            if redis.switched() {
                status.lease.retry_now(now);
            }
            let bound = members.bound();
            let ceiling = members.ceiling();
            let demand = members.demand().clamp(1, ceiling.max(1));
            if !status.lease.due(now, bound, demand) {
                continue;
            }
            let request = status
                .lease
                .request(now, bound, demand, resource.budget(), ceiling);
            (request, status.lease.give_up_at(now))
        };
        // No lock is held while Redis answers; the bound cannot grow
        // meanwhile: only this task raises limits.
        // F2: under Sentinel, a reply counts only if a majority still names
        // the node that gave it. The confirmation runs within the same
        // time as the request (`give_up` is before the lease's deadline):
        // no wait may keep the process on its grant past the deadline.
        let mut answered = false;
        let result = tokio::time::timeout_at(tokio::time::Instant::from_std(give_up), async {
            let reply = {
                let mut con = redis.connection().await?;
                scripts
                    .acquire(&mut con, &keys, &resource.process_id, &request)
                    .await?
            };
            answered = true;
            Ok::<_, LinkError>((reply, redis.confirm().await))
        })
        .await;
        let (result, confirmed) = match result {
            Ok(Ok((reply, confirmed))) => (Ok(Ok(reply)), confirmed),
            Ok(Err(error)) => (Ok(Err(error)), Ok(())),
            Err(elapsed) => (Err(elapsed), Ok(())),
        };
        let received = Instant::now();
        let mut members = resource.members();
        let mut status = resource.status();
        let change = match (result, confirmed) {
            (Ok(Ok(reply)), Ok(())) => {
                status.last_error = None;
                status.lease.on_reply(now, received, &request, reply)
            }
            (Ok(Ok(_)), Err(reason)) => {
                // REG-019: a reply from a node not confirmed as the
                // primary; its grant is not applied.
                let reason = resource.config.topology().scrub(&reason);
                failed(&resource, &mut status, format!("REG-019: {reason}"));
                redis.drop_connection();
                status.lease.on_error(received)
            }
            (Ok(Err(error)), _) => {
                failed(
                    &resource,
                    &mut status,
                    failure::link_message(&error, resource.config.topology()),
                );
                redis.failed(&error);
                status.lease.on_error(received)
            }
            (Err(_), _) => {
                let waited = give_up.saturating_duration_since(now);
                let message = if answered {
                    // REG-019: the reply came, its confirmation did not.
                    format!("REG-019: no Sentinel confirmed the primary within {waited:?}")
                } else {
                    format!("no reply within {waited:?}")
                };
                failed(&resource, &mut status, message);
                redis.drop_connection();
                status.lease.on_error(received)
            }
        };
        members.apply(status.lease.grant);
        if let Some(change) = change {
            resource.publish(&context, change, &status.lease);
        }
    }
}

/// Closes the resource's bulkheads, waits up to the margin for their calls
/// in flight, and gives the share back.
async fn leave(
    resource: &Resource,
    context: &PolicyContext,
    scripts: &Scripts,
    keys: &Keys,
    redis: &mut Link,
) {
    let (seq, change) = {
        let mut members = resource.members();
        let mut status = resource.status();
        let (seq, change) = status.lease.leave();
        members.apply(0);
        (seq, change)
    };
    let until = later(Instant::now(), resource.config.margin_duration());
    while resource.members().in_flight() > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let in_flight = resource.members().in_flight();
    let timeout = resource.status().lease.response_timeout();
    let left = tokio::time::timeout(timeout, async {
        let mut con = redis.connection().await?;
        let left = scripts
            .leave(&mut con, keys, &resource.process_id, seq, in_flight)
            .await?;
        Ok::<_, LinkError>(left)
    })
    .await;
    let mut status = resource.status();
    if let Ok(Err(error)) = &left {
        failed(
            resource,
            &mut status,
            failure::link_message(error, resource.config.topology()),
        );
    }
    resource.publish(context, change, &status.lease);
    drop(status);
    resource
        .left
        .store(true, std::sync::atomic::Ordering::Release);
}

/// Keeps `message` as the last error, and traces it (at WARN, with the
/// feature `tracing`) when it differs from the one before: a Redis that
/// stays unreachable is one log line, not one per retry.
fn failed(resource: &Resource, status: &mut Status, message: String) {
    if status.last_error.as_deref() != Some(message.as_str()) {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "bulkhead",
            resource = resource.name,
            error = %message,
            "fleet: a request to Redis failed"
        );
        #[cfg(not(feature = "tracing"))]
        let _ = resource;
    }
    status.last_error = Some(message);
}

/// Counts the refusals of the resource's bulkheads since the last tick.
fn count_refusals(events: &mut Option<EventStream>, members: &mut super::local::Members) {
    let Some(events) = events else { return };
    for event in events.drain() {
        if let Event::Bulkhead(BulkheadEvent {
            instance,
            kind: BulkheadEventKind::Rejected { .. },
            ..
        }) = event
        {
            members.refused(instance);
        }
    }
}

/// Whether `error` means the connection is not to a writable primary any
/// more, or broke: drop it, and look the primary up again (or reconnect,
/// as a managed endpoint's name may point elsewhere by now).
fn must_drop(error: &redis::RedisError) -> bool {
    error.is_unrecoverable_error()
        || error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.code().and_then(failure::not_a_primary).is_some()
}

/// The connection of one request, whatever the topology.
enum Conn<'a> {
    Manager(&'a mut ConnectionManager),
    Multiplexed(&'a mut MultiplexedConnection),
    Cluster(&'a mut ClusterConnection),
}

impl ConnectionLike for Conn<'_> {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Conn::Manager(con) => con.req_packed_command(cmd),
            Conn::Multiplexed(con) => con.req_packed_command(cmd),
            Conn::Cluster(con) => con.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Conn::Manager(con) => con.req_packed_commands(pipeline, offset, count),
            Conn::Multiplexed(con) => con.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(con) => con.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Manager(con) => con.get_db(),
            Conn::Multiplexed(con) => con.get_db(),
            Conn::Cluster(con) => con.get_db(),
        }
    }
}

/// Why a request could not be sent: Redis's error, or no primary to send
/// it to (the Sentinels' reason).
#[derive(Debug)]
pub(crate) enum LinkError {
    Redis(redis::RedisError),
    NoPrimary(String),
}

impl From<redis::RedisError> for LinkError {
    fn from(error: redis::RedisError) -> Self {
        LinkError::Redis(error)
    }
}

/// The resource's connection to Redis, made when first needed and again
/// after it broke, per topology.
enum Link {
    /// One server: a connection manager (it reconnects after an I/O
    /// error; dropped on the errors of [`must_drop`]).
    Single {
        client: Result<redis::Client, String>,
        config: ConnectionManagerConfig,
        connection: Option<ConnectionManager>,
    },
    /// The primary the Sentinels name: looked up afresh for every new
    /// connection, never from a cached address.
    Sentinel {
        resolver: Box<Resolver>,
        sentinels: Sentinels,
        config: AsyncConnectionConfig,
        connection: Option<(Addr, MultiplexedConnection)>,
    },
    /// A Cluster client: it follows `MOVED` and `ASK` itself.
    Cluster {
        client: Result<ClusterClient, String>,
        connection: Option<ClusterConnection>,
    },
}

impl Link {
    fn new(resource: &Resource) -> Self {
        let topology = resource.config.topology();
        let lease = resource.config.lease_duration();
        let timeout = (lease / 10).min(Duration::from_secs(1));
        match topology {
            Topology::Single { url, .. } => Link::Single {
                client: redis::Client::open(url.expose())
                    .map_err(|e| failure::message(&e, topology)),
                config: ConnectionManagerConfig::new()
                    .set_response_timeout(Some(timeout))
                    .set_connection_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(10))
                    .set_max_delay(lease / 3),
                connection: None,
            },
            Topology::Sentinel(sentinels) => Link::Sentinel {
                // A third of the request's time for each Sentinel (to
                // connect and answer): a Sentinel that does not answer,
                // on a host gone without a reset, must not use up the
                // request's whole time.
                resolver: Box::new(Resolver::new(sentinels, timeout / 3)),
                sentinels: sentinels.clone(),
                config: AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout)),
                connection: None,
            },
            Topology::Cluster(cluster) => Link::Cluster {
                client: cluster_client(cluster, timeout)
                    .map_err(|e| failure::message(&e, topology)),
                connection: None,
            },
        }
    }

    /// The connection, made if there is none (under Sentinel: after a
    /// fresh lookup, and a check that the node named says it is a master).
    async fn connection(&mut self) -> Result<Conn<'_>, LinkError> {
        match self {
            Link::Single {
                client,
                config,
                connection,
            } => {
                let manager = match connection.take() {
                    Some(manager) => manager,
                    None => {
                        let client = client.clone().map_err(invalid)?;
                        ConnectionManager::new_with_config(client, config.clone()).await?
                    }
                };
                Ok(Conn::Manager(connection.insert(manager)))
            }
            Link::Sentinel {
                resolver,
                sentinels,
                config,
                connection,
            } => {
                let (addr, con) = match connection.take() {
                    Some(made) => made,
                    None => {
                        let (addr, _) = resolver.resolve().await.map_err(LinkError::NoPrimary)?;
                        let info =
                            addr.connection_info(sentinels.tls, &sentinels.primary, sentinels.db)?;
                        let mut con = redis::Client::open(info)?
                            .get_multiplexed_async_connection_with_config(config)
                            .await?;
                        let role: redis::Role = redis::cmd("ROLE").query_async(&mut con).await?;
                        if !matches!(role, redis::Role::Primary { .. }) {
                            return Err(LinkError::NoPrimary(format!(
                                "{addr}, which a Sentinel majority names, says it is not a master ({})",
                                role_name(&role)
                            )));
                        }
                        (addr, con)
                    }
                };
                let (_, con) = connection.insert((addr, con));
                Ok(Conn::Multiplexed(con))
            }
            Link::Cluster { client, connection } => {
                let con = match connection.take() {
                    Some(con) => con,
                    None => {
                        client
                            .as_ref()
                            .map_err(|e| invalid(e.clone()))?
                            .get_async_connection()
                            .await?
                    }
                };
                Ok(Conn::Cluster(connection.insert(con)))
            }
        }
    }

    /// F2: under Sentinel, whether a fresh lookup still names, by a
    /// majority and at an epoch not below the highest seen, the node the
    /// last request went to; the reason if not. Nothing to confirm on one
    /// server or a Cluster.
    async fn confirm(&mut self) -> Result<(), String> {
        match self {
            Link::Sentinel {
                resolver,
                connection,
                ..
            } => match connection {
                Some((addr, _)) => {
                    let addr = addr.clone();
                    resolver.confirm(&addr).await
                }
                None => Err(
                    "the connection to the primary was lost before its reply was confirmed"
                        .to_owned(),
                ),
            },
            Link::Single { .. } | Link::Cluster { .. } => Ok(()),
        }
    }

    /// Whether a `+switch-master` for the name came since the last call
    /// (Sentinel only); if so the connection is dropped, so that the next
    /// request looks the primary up again.
    fn switched(&mut self) -> bool {
        match self {
            Link::Sentinel {
                resolver,
                connection,
                ..
            } if resolver.switched() => {
                *connection = None;
                true
            }
            _ => false,
        }
    }

    /// Drops the connection: the next request connects again (under
    /// Sentinel, after a fresh lookup).
    fn drop_connection(&mut self) {
        match self {
            Link::Single { connection, .. } => *connection = None,
            Link::Sentinel { connection, .. } => *connection = None,
            Link::Cluster { connection, .. } => *connection = None,
        }
    }

    /// After `error`: drops a connection that cannot be trusted or recover.
    fn failed(&mut self, error: &LinkError) {
        match error {
            LinkError::Redis(error) if !must_drop(error) => {}
            _ => self.drop_connection(),
        }
    }
}

/// The client of `cluster`: each node's requests within `timeout`, a few
/// retries (within the request's own deadline).
fn cluster_client(cluster: &Cluster, timeout: Duration) -> redis::RedisResult<ClusterClient> {
    let nodes = cluster
        .nodes
        .iter()
        .map(|addr| addr.connection_info(cluster.tls, &Default::default(), 0))
        .collect::<redis::RedisResult<Vec<_>>>()?;
    let mut builder = ClusterClientBuilder::new(nodes)
        .connection_timeout(timeout)
        .response_timeout(timeout)
        .retries(2)
        .min_retry_wait(10)
        .max_retry_wait(u64::try_from(timeout.as_millis()).unwrap_or(1000));
    if let Some(user) = &cluster.auth.user {
        builder = builder.username(user);
    }
    if let Some(password) = &cluster.auth.password {
        builder = builder.password(password.expose());
    }
    builder.build()
}

/// The error of a client that could not be built (its message already
/// without passwords).
fn invalid(message: String) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::InvalidClientConfig,
        "invalid Redis URL",
        message,
    ))
}

/// `role:master`, `role:slave`, `role:sentinel`.
fn role_name(role: &redis::Role) -> &'static str {
    match role {
        redis::Role::Primary { .. } => "role:master",
        redis::Role::Replica { .. } => "role:slave",
        _ => "role:sentinel",
    }
}

#[cfg(test)]
mod tests {
    use super::must_drop;

    fn server(reply: &str) -> redis::RedisError {
        let value = redis::parse_redis_value(format!("{reply}\r\n").as_bytes()).unwrap();
        value.extract_error().unwrap_err()
    }

    /// A connection to a node that is not (or no longer) a writable
    /// primary is dropped, so the next request looks it up again (or, for
    /// a managed endpoint, resolves its name again); other replies keep
    /// it.
    #[test]
    fn replies_from_a_node_that_is_no_writable_primary_drop_the_connection() {
        for reply in [
            "-READONLY You can't write against a read only replica.",
            "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            "-LOADING Redis is loading the dataset in memory",
            "-NOREPLICAS Not enough good replicas to write.",
            "-CLUSTERDOWN The cluster is down",
            "-TRYAGAIN Multiple keys request during rehashing of slot",
        ] {
            assert!(must_drop(&server(reply)), "{reply}");
        }
        for reply in [
            "-NOSCRIPT No matching script.",
            "-ERR Error running script",
            "-NOPERM User app has no permissions",
        ] {
            assert!(!must_drop(&server(reply)), "{reply}");
        }
        let io = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(must_drop(&io));
        let replica = redis::RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
            "the node is a replica",
            "the node answered role:slave to the script".to_owned(),
        ));
        assert!(must_drop(&replica));
    }
}
