//! An axum service whose checkout and reports routes sit on separate
//! bulkheads: when the reports backend turns slow, reports answer
//! `503 Service Unavailable` with `Retry-After` at once, and checkout keeps
//! answering 200. Checkout's bulkhead has a short `max_wait`: a burst beyond
//! its slots waits for one rather than being refused. A users route holds
//! its dependency as handlers usually do, an `Arc<dyn Users>` in the state,
//! which is the `#[resilient]` wrapper of an `#[async_trait]` trait (a
//! bulkhead, a timeout, a circuit breaker and a retry). `/metrics` serves
//! every policy's figures in Prometheus's text format, which the Grafana
//! dashboard `docs/grafana/bulkhead.json` reads.
//!
//! ```sh
//! cargo run --example axum_service --features tower,metrics          # a demo, then exit
//! cargo run --example axum_service --features tower,metrics -- serve # serve on 127.0.0.1:3000
//! ```
//!
//! Routes: `POST /checkout`, `GET /reports/{id}`, `GET /users/{id}`,
//! `GET /bulkheads` (every bulkhead's snapshot as JSON), `GET /metrics`
//! (Prometheus) and `POST /reports/degrade` / `POST /reports/fail` /
//! `POST /reports/recover` (make the reports backend slow, failing at once
//! with 500, or well again).

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use bulkhead::observe::{ObserverHandle, export_metrics_to};
use bulkhead::tower::{BulkheadLayer, ServiceError};
use bulkhead::{BulkheadConfig, Registry, RegistryError, Rejection, resilient};
use metrics_exporter_prometheus::PrometheusBuilder;
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceBuilder;

/// Slots for checkout: 40 requests/s x 50 ms = 2 by Little's law, with room
/// for bursts.
pub(crate) const CHECKOUT_SLOTS: u32 = 8;
/// How long a checkout waits for a slot when all are taken: a burst is
/// served a little late rather than refused; a checkout that cannot get a
/// slot within two call latencies gets a 503.
pub(crate) const CHECKOUT_MAX_WAIT: Duration = Duration::from_millis(100);
/// Slots for reports: 2 requests/s x 1.5 s = 3 by Little's law.
pub(crate) const REPORTS_SLOTS: u32 = 3;
/// What a refused report tells the client: about one report's latency (the
/// least it tells, when the registry tracks sizing and estimates it).
pub(crate) const REPORTS_RETRY_AFTER: Duration = Duration::from_secs(2);
/// How often the metrics exporter samples the registry: the gauges of
/// `/metrics` are this fresh (Prometheus scrapes every 15 s by default).
pub(crate) const METRICS_INTERVAL: Duration = Duration::from_secs(5);
/// The users directory fails one call in this many, at once.
pub(crate) const DIRECTORY_FAILS_EVERY: u64 = 3;

/// How the reports backend behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Health {
    /// Reports are quick.
    Well,
    /// A report takes the backend's `slow` time (or until it recovers).
    Slow,
    /// Every report fails at once.
    Failing,
}

/// The reports backend: quick when well; while degraded, a report takes
/// `slow` (or until the backend is no longer slow); while failing, a report
/// fails at once.
#[derive(Debug, Clone)]
pub(crate) struct ReportsBackend {
    health: watch::Sender<Health>,
    slow: Duration,
}

impl ReportsBackend {
    /// A backend that is well now, and takes `slow` per report when degraded.
    pub(crate) fn new(slow: Duration) -> Self {
        ReportsBackend {
            health: watch::Sender::new(Health::Well),
            slow,
        }
    }

    /// Makes reports slow (`true`) or well again (`false`).
    pub(crate) fn set_degraded(&self, degraded: bool) {
        self.set_health(if degraded { Health::Slow } else { Health::Well });
    }

    /// Changes how the backend behaves; slow reports already running finish
    /// as soon as it is no longer slow.
    pub(crate) fn set_health(&self, health: Health) {
        self.health.send_replace(health);
    }

    /// Renders the report `id`, or fails if the backend is failing.
    pub(crate) async fn render(&self, id: &str) -> Result<String, &'static str> {
        let mut health = self.health.subscribe();
        let now = *health.borrow_and_update();
        match now {
            Health::Well => {}
            Health::Failing => return Err("the reports backend failed"),
            Health::Slow => tokio::select! {
                () = tokio::time::sleep(self.slow) => {}
                _ = health.wait_for(|health| *health != Health::Slow) => {}
            },
        }
        Ok(format!("report {id}"))
    }
}

#[derive(Clone)]
struct AppState {
    registry: Registry,
    reports: ReportsBackend,
}

/// The application: checkout and reports, each behind its own bulkhead of
/// `registry`, and `/bulkheads`.
///
/// # Errors
///
/// A registry error if `registry` already has a bulkhead `checkout` or
/// `reports` with another configuration (REG-008).
pub(crate) fn app(registry: &Registry, reports: ReportsBackend) -> Result<Router, RegistryError> {
    let checkout = registry.bulkhead_policy(
        "checkout",
        "examples/axum_service.rs",
        &BulkheadConfig::builder()
            .max_concurrent(CHECKOUT_SLOTS)
            .max_wait(CHECKOUT_MAX_WAIT),
    )?;
    let reports_bulkhead = registry.bulkhead_policy(
        "reports",
        "examples/axum_service.rs",
        &BulkheadConfig::builder().max_concurrent(REPORTS_SLOTS),
    )?;
    let state = AppState {
        registry: registry.clone(),
        reports,
    };
    Ok(Router::new()
        .route(
            "/checkout",
            post(place_order).layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(unavailable))
                    .layer(BulkheadLayer::new(checkout)),
            ),
        )
        .route(
            "/reports/{id}",
            get(report).layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(unavailable))
                    .layer(BulkheadLayer::new(reports_bulkhead).retry_after(REPORTS_RETRY_AFTER)),
            ),
        )
        .route("/reports/degrade", post(degrade))
        .route("/reports/fail", post(fail))
        .route("/reports/recover", post(recover))
        .route("/bulkheads", get(bulkheads))
        .with_state(state))
}

/// The users directory, as the app's handlers hold it: an `Arc<dyn Users>`.
/// `#[async_trait]` makes the trait `dyn`-compatible; `#[resilient]` (in
/// either order with it) generates `ResilientUsers`, itself a `dyn Users`.
#[resilient]
#[async_trait]
pub(crate) trait Users: Send + Sync {
    /// The name of user `id`: on the `users` bulkhead (4 slots, waiting up
    /// to 50 ms for one), within 2 s, behind a circuit breaker, and tried
    /// twice (20 ms apart) when the directory fails.
    #[bulkhead(name = "users", max_concurrent = 4, max_wait = "50ms")]
    #[timeout(name = "users", duration = "2s")]
    #[circuit_breaker(name = "users", minimum_calls = 20, wait_in_open = "5s")]
    #[retry(name = "users", max_attempts = 2, wait = "20ms")]
    async fn name(&self, id: u64) -> Result<String, UsersError>;
}

/// Why a user's name did not come.
#[derive(Debug)]
pub(crate) enum UsersError {
    /// A policy refused the call: the bulkhead was full, the breaker open,
    /// or the call timed out.
    Refused(Rejection),
    /// The directory failed.
    Directory(&'static str),
}

impl From<Rejection> for UsersError {
    fn from(rejection: Rejection) -> Self {
        UsersError::Refused(rejection)
    }
}

/// A users directory that fails one call in [`DIRECTORY_FAILS_EVERY`].
#[derive(Debug, Default)]
pub(crate) struct Directory {
    calls: AtomicU64,
}

#[async_trait]
impl Users for Directory {
    async fn name(&self, id: u64) -> Result<String, UsersError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if call.is_multiple_of(DIRECTORY_FAILS_EVERY) {
            return Err(UsersError::Directory("the directory did not answer"));
        }
        Ok(format!("user {id}"))
    }
}

/// `GET /users/{id}` over `directory`, wrapped with the policies of
/// [`Users`] from `registry`.
///
/// # Errors
///
/// A registry error if `registry` already has a policy `users` with another
/// configuration (REG-008).
pub(crate) fn users(registry: &Registry, directory: Directory) -> Result<Router, RegistryError> {
    let users: Arc<dyn Users> = Arc::new(ResilientUsers::new(directory, registry)?);
    Ok(Router::new()
        .route("/users/{id}", get(user))
        .with_state(users))
}

async fn user(
    State(users): State<Arc<dyn Users>>,
    Path(id): Path<u64>,
) -> Result<String, (StatusCode, String)> {
    users.name(id).await.map_err(|error| match error {
        UsersError::Refused(rejection) => (StatusCode::SERVICE_UNAVAILABLE, rejection.to_string()),
        UsersError::Directory(failed) => (StatusCode::BAD_GATEWAY, failed.to_owned()),
    })
}

/// `GET /metrics`: the state and events of every policy of `registry` in
/// Prometheus's text format, through metrics-exporter-prometheus. The
/// exporter samples the registry every `interval` until the returned handle
/// is dropped. (A service that keeps other metrics too installs the
/// recorder globally instead, `PrometheusBuilder::new().install_recorder()`,
/// and exports with `bulkhead::observe::export_metrics`.)
///
/// # Errors
///
/// If the exporter's thread cannot be started.
pub(crate) fn metrics(
    registry: &Registry,
    interval: Duration,
) -> io::Result<(Router, ObserverHandle)> {
    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    let exporter = export_metrics_to(registry, interval, recorder)?;
    let route = Router::new().route(
        "/metrics",
        get(move || {
            let body = scrape.render();
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    body,
                )
            }
        }),
    );
    Ok((route, exporter))
}

/// The whole service on `registry`: [`app`], [`users`] and [`metrics`]
/// (sampled every `interval`), and the exporter's handle, which must be
/// kept as long as `/metrics` is served.
///
/// # Errors
///
/// A registry error as [`app`] and [`users`] have them, or the exporter's.
pub(crate) fn service(
    registry: &Registry,
    reports: ReportsBackend,
    directory: Directory,
    interval: Duration,
) -> Result<(Router, ObserverHandle), Box<dyn std::error::Error>> {
    let router = app(registry, reports)?.merge(users(registry, directory)?);
    // After the routes, so that the exporter's first sample, taken as it
    // starts, has every policy.
    let (metrics, exporter) = metrics(registry, interval)?;
    Ok((router.merge(metrics), exporter))
}

/// A refused request: 503, with the refusal's hint as `Retry-After` (the
/// layer's, or estimated from the bulkhead's figures when the registry
/// tracks sizing).
pub(crate) async fn unavailable(error: ServiceError<Infallible>) -> impl IntoResponse {
    let ServiceError::Unavailable(refused) = error;
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, refused.retry_after_secs().to_string())],
        refused.to_string(),
    )
}

async fn place_order() -> &'static str {
    "order placed"
}

async fn report(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<String, (StatusCode, &'static str)> {
    state
        .reports
        .render(&id)
        .await
        .map_err(|failed| (StatusCode::INTERNAL_SERVER_ERROR, failed))
}

async fn degrade(State(state): State<AppState>) -> StatusCode {
    state.reports.set_health(Health::Slow);
    StatusCode::NO_CONTENT
}

async fn fail(State(state): State<AppState>) -> StatusCode {
    state.reports.set_health(Health::Failing);
    StatusCode::NO_CONTENT
}

async fn recover(State(state): State<AppState>) -> StatusCode {
    state.reports.set_health(Health::Well);
    StatusCode::NO_CONTENT
}

/// Every bulkhead's snapshot, as a JSON array.
async fn bulkheads(State(state): State<AppState>) -> Json<Value> {
    let snapshot = state.registry.snapshot();
    let bulkheads = snapshot.bulkheads().iter().map(|b| {
        json!({
            "instance": b.instance,
            "concurrent_calls": b.concurrent_calls,
            "waiting_calls": b.waiting_calls,
            "max_concurrent": b.max_concurrent,
            "available": b.available,
            "max_wait_ms": b.max_wait.as_millis(),
            "enabled": b.enabled,
        })
    });
    Json(Value::Array(bulkheads.collect()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Tracking sizing adds the latency and Little's-law figures to
    // `/metrics` (and lets refusals estimate their `Retry-After`).
    let registry = Registry::builder().track_sizing(true).build();
    let backend = ReportsBackend::new(Duration::from_secs(30));
    let (app, _exporter) = service(
        &registry,
        backend.clone(),
        Directory::default(),
        METRICS_INTERVAL,
    )?;

    if std::env::args().nth(1).as_deref() == Some("serve") {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
        let address = listener.local_addr()?;
        println!("serving on http://{address} (Prometheus: http://{address}/metrics)");
        axum::serve(listener, app).await?;
        return Ok(());
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();

    println!("The reports backend degrades: a report now takes 30 s.");
    backend.set_degraded(true);
    let floods: Vec<_> = (0..10)
        .map(|i| {
            let request = client.get(format!("{base}/reports/r-{i}")).send();
            tokio::spawn(request)
        })
        .collect();
    // Wait until the flood has taken every report slot.
    let reports = registry.bulkhead("reports")?;
    while reports.concurrent_calls() < REPORTS_SLOTS {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let refused = client.get(format!("{base}/reports/late")).send().await?;
    println!(
        "GET /reports/late   -> {} (Retry-After: {})",
        refused.status(),
        refused.headers()[header::RETRY_AFTER].to_str()?
    );
    for _ in 0..3 {
        let order = client.post(format!("{base}/checkout")).send().await?;
        println!("POST /checkout      -> {}", order.status());
    }
    let snapshots: Value = serde_json::from_str(
        &client
            .get(format!("{base}/bulkheads"))
            .send()
            .await?
            .text()
            .await?,
    )?;
    println!("GET /bulkheads      -> {snapshots:#}");

    println!("The backend recovers: the slow reports finish, and their slots come back.");
    backend.set_degraded(false);
    let mut statuses = Vec::new();
    for flood in floods {
        statuses.push(flood.await??.status().as_u16());
    }
    println!("the flood's answers: {statuses:?}");
    let again = client.get(format!("{base}/reports/r-11")).send().await?;
    println!("GET /reports/r-11   -> {}", again.status());

    println!(
        "Users, through an Arc<dyn Users>: the directory fails one call in three, the retry hides it."
    );
    for id in 1..=4 {
        let user = client.get(format!("{base}/users/{id}")).send().await?;
        println!(
            "GET /users/{id}       -> {} {}",
            user.status(),
            user.text().await?
        );
    }
    // The exporter counts events from a thread of its own: give it a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let scrape = client
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    println!("GET /metrics (a few lines):");
    for line in scrape.lines().filter(|line| {
        line.starts_with("bulkhead_rejections_total")
            || line.starts_with("bulkhead_retries_total")
            || line.starts_with("bulkhead_max_concurrent")
    }) {
        println!("  {line}");
    }
    Ok(())
}
