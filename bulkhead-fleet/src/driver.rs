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
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;

use super::failure;
use super::lease::later;
use super::resource::{Resource, Status};
use super::script::{Keys, Scripts};

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
    let mut redis = Redis::new(&resource);
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
        let result = tokio::time::timeout_at(tokio::time::Instant::from_std(give_up), async {
            let con = redis.connection().await?;
            scripts
                .acquire(con, &keys, &resource.process_id, &request)
                .await
        })
        .await;
        let received = Instant::now();
        let mut members = resource.members();
        let mut status = resource.status();
        let change = match result {
            Ok(Ok(reply)) => {
                status.last_error = None;
                status.lease.on_reply(now, received, &request, reply)
            }
            Ok(Err(error)) => {
                failed(
                    &resource,
                    &mut status,
                    failure::message(&error, resource.config.topology()),
                );
                redis.failed(&error);
                status.lease.on_error(received)
            }
            Err(_) => {
                let waited = give_up.saturating_duration_since(now);
                failed(
                    &resource,
                    &mut status,
                    format!("no reply within {waited:?}"),
                );
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
    redis: &mut Redis,
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
        let con = redis.connection().await?;
        scripts
            .leave(con, keys, &resource.process_id, seq, in_flight)
            .await
    })
    .await;
    let mut status = resource.status();
    if let Ok(Err(error)) = &left {
        failed(
            resource,
            &mut status,
            failure::message(error, resource.config.topology()),
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

/// The resource's connection to Redis, made when first needed and again
/// after it broke.
struct Redis {
    client: Result<redis::Client, String>,
    config: ConnectionManagerConfig,
    connection: Option<ConnectionManager>,
}

impl Redis {
    fn new(resource: &Resource) -> Self {
        let url = resource.config.topology();
        let lease = resource.config.lease_duration();
        let timeout = (lease / 10).min(Duration::from_secs(1));
        Redis {
            client: match url {
                super::topology::Topology::Single { url: u, .. } => {
                    redis::Client::open(u.expose()).map_err(|e| failure::message(&e, url))
                }
                _ => Err("todo".to_owned()),
            },
            config: ConnectionManagerConfig::new()
                .set_response_timeout(Some(timeout))
                .set_connection_timeout(Some(timeout))
                .set_number_of_retries(1)
                .set_min_delay(Duration::from_millis(10))
                .set_max_delay(lease / 3),
            connection: None,
        }
    }

    async fn connection(&mut self) -> redis::RedisResult<&mut ConnectionManager> {
        let manager = match self.connection.take() {
            Some(manager) => manager,
            None => {
                let client = match &self.client {
                    Ok(client) => client.clone(),
                    Err(message) => {
                        return Err(redis::RedisError::from((
                            redis::ErrorKind::InvalidClientConfig,
                            "invalid Redis URL",
                            message.clone(),
                        )));
                    }
                };
                ConnectionManager::new_with_config(client, self.config.clone()).await?
            }
        };
        Ok(self.connection.insert(manager))
    }

    /// Drops a connection that cannot recover by itself.
    fn failed(&mut self, error: &redis::RedisError) {
        if error.is_unrecoverable_error() {
            self.connection = None;
        }
    }
}
