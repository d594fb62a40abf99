//! An axum service whose checkout and reports routes sit on separate
//! bulkheads: when the reports backend turns slow, reports answer
//! `503 Service Unavailable` with `Retry-After` at once, and checkout keeps
//! answering 200. Checkout's bulkhead has a short `max_wait`: a burst beyond
//! its slots waits for one rather than being refused. The reports backend
//! turns slow or failing through chaos, not through code of its own: its
//! `render` carries `#[chaos(name = "reports")]`, off until configuration
//! turns it on, and a reload of the registry's configuration
//! (`registry.reload_toml`) makes it slow, failing or well again. A users
//! route holds its dependency as handlers usually do, an `Arc<dyn Users>`
//! in the state, which is the `#[resilient]` wrapper of an `#[async_trait]`
//! trait (a bulkhead, a timeout, a circuit breaker and a retry, around a
//! directory that chaos, on from the start, fails a third of the time: a
//! failure the retry hides, and a 502 if both attempts fail). `/metrics`
//! serves every policy's figures in Prometheus's text format, which the
//! Grafana dashboard `docs/grafana/bulkhead.json` reads, and, with the
//! feature `dashboard`, `/dashboard` is the live page of
//! `bulkhead::observe::dashboard`.
//!
//! ```sh
//! cargo run --example axum_service --features tower,metrics          # a demo, then exit
//! cargo run --example axum_service --features tower,metrics -- serve # serve on 127.0.0.1:3000
//! cargo run --example axum_service --features tower,metrics,dashboard -- serve # and /dashboard
//! ```
//!
//! Routes: `POST /checkout`, `GET /reports/{id}`, `GET /users/{id}`,
//! `GET /bulkheads` (every bulkhead's snapshot as JSON), `GET /metrics`
//! (Prometheus), `GET /dashboard` (feature `dashboard`: the live page, and
//! its stream `/dashboard/events`) and `POST /reports/degrade` / `POST /reports/fail` /
//! `POST /reports/recover`, which reload the configuration with
//! [`DEGRADE`], [`FAIL`] or [`RECOVER`] (204; 500 if the reload fails):
//!
//! - degraded, every report is delayed 3 s by chaos (twice the 1.5 s the
//!   reports bulkhead is sized for), holding its reports slot as a slow
//!   backend would, so that once the slots are taken further reports are
//!   refused with 503 and `Retry-After`;
//! - failing, every report fails at once with the injected fault
//!   (`RejectionKind::Injected`), answered `500 Internal Server Error`
//!   with the rejection as its body (`chaos "reports" injected a fault`):
//!   it stands for the backend failing, which the service cannot answer
//!   for, and is kept apart from a refusal, whose 503 and `Retry-After`
//!   tell the client to back off;
//! - recovered, chaos is off again. A report already delayed finishes its
//!   delay (a reload changes the calls that follow it, not a latency
//!   already being slept).
//!
//! A reload replaces the whole TOML configuration: a service configured by
//! TOML as well would reload its whole text (or keep it in a file,
//! `RegistryBuilder::config_file`, and turn chaos on through the
//! environment, `BULKHEAD_CHAOS__INSTANCES__REPORTS__ENABLED=true`, then
//! `registry.reload()`). This one has no other TOML configuration.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
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
use bulkhead::{BulkheadConfig, Registry, RegistryError, Rejection, RejectionKind, resilient};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use serde_json::{Value, json};
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

/// `POST /reports/degrade`: chaos on, every report delayed 3 s.
pub(crate) const DEGRADE: &str = r#"
[chaos.instances.reports]
enabled = true
latency_rate = 1.0
latency = "3s"
"#;

/// `POST /reports/fail`: chaos on, every report fails at once with an
/// injected fault (answered 500).
pub(crate) const FAIL: &str = r#"
[chaos.instances.reports]
enabled = true
fault_rate = 1.0
"#;

/// `POST /reports/recover`: chaos off (its default, spelt out).
pub(crate) const RECOVER: &str = r#"
[chaos.instances.reports]
enabled = false
"#;

/// The reports backend. `#[resilient]` generates `ResilientReports`, which
/// runs `render` under the chaos policy `reports` of a registry: inside the
/// route's bulkhead, so that an injected latency holds a reports slot.
#[resilient]
#[async_trait]
pub(crate) trait Reports: Send + Sync {
    /// Renders the report `id`: quick, unless chaos `reports` is on (off
    /// until configuration turns it on; [`DEGRADE`], [`FAIL`]).
    #[chaos(name = "reports")]
    async fn render(&self, id: &str) -> Result<String, ReportError>;
}

/// Why a report did not come: a policy's rejection, which for reports is
/// chaos's injected fault (`RejectionKind::Injected`).
#[derive(Debug)]
pub(crate) struct ReportError(pub(crate) Rejection);

impl From<Rejection> for ReportError {
    fn from(rejection: Rejection) -> Self {
        ReportError(rejection)
    }
}

/// A reports backend that is always quick: its failures are chaos's.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReportsBackend;

#[async_trait]
impl Reports for ReportsBackend {
    async fn render(&self, id: &str) -> Result<String, ReportError> {
        Ok(format!("report {id}"))
    }
}

#[derive(Clone)]
struct AppState {
    registry: Registry,
    reports: Arc<ResilientReports<ReportsBackend>>,
}

/// The application: checkout and reports, each behind its own bulkhead of
/// `registry` (reports under the chaos policy `reports` of `registry`
/// too), the routes that reload chaos `reports`, and `/bulkheads`.
///
/// # Errors
///
/// A registry error if `registry` already has a bulkhead `checkout` or
/// `reports`, or a chaos policy `reports`, with another configuration
/// (REG-008).
pub(crate) fn app(registry: &Registry) -> Result<Router, RegistryError> {
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
        reports: Arc::new(ResilientReports::new(ReportsBackend, registry)?),
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
    /// twice (20 ms apart) when the directory fails. The directory is
    /// flaky by chaos, on from the start (unlike reports'): a third of its
    /// calls fail at once with an injected fault, and the seed makes them
    /// the same calls every run (the 3rd, the 6th, then none up to the
    /// 10th), so that the demo and the tests see the retry hide them.
    #[bulkhead(name = "users", max_concurrent = 4, max_wait = "50ms")]
    #[timeout(name = "users", duration = "2s")]
    #[circuit_breaker(name = "users", minimum_calls = 20, wait_in_open = "5s")]
    #[retry(name = "users", max_attempts = 2, wait = "20ms")]
    #[chaos(name = "users", enabled = true, fault_rate = 0.33, seed = 270)]
    async fn name(&self, id: u64) -> Result<String, UsersError>;
}

/// Why a user's name did not come: a policy refused the call (the
/// bulkhead was full, the breaker open, or the call timed out), or the
/// directory failed both attempts (chaos's injected fault,
/// `RejectionKind::Injected`).
#[derive(Debug)]
pub(crate) struct UsersError(pub(crate) Rejection);

impl From<Rejection> for UsersError {
    fn from(rejection: Rejection) -> Self {
        UsersError(rejection)
    }
}

/// The users directory: it answers at once; its failures are chaos's.
#[derive(Debug, Default)]
pub(crate) struct Directory;

#[async_trait]
impl Users for Directory {
    async fn name(&self, id: u64) -> Result<String, UsersError> {
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
    users.name(id).await.map_err(|UsersError(rejection)| {
        let status = match rejection.kind() {
            // The directory failed: a dependency's failure.
            RejectionKind::Injected => StatusCode::BAD_GATEWAY,
            // The caller's deadline (`bulkhead::deadline`) left no time.
            RejectionKind::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        (status, rejection.to_string())
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
    // Buckets for the call, attempt and slot-wait histograms, so that
    // Prometheus gets `_bucket` series for `histogram_quantile` (without
    // them the exporter renders summaries).
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Suffix("_seconds".to_owned()),
            &[
                0.000_1, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                2.5, 5.0, 10.0,
            ],
        )
        .map_err(io::Error::other)?
        .build_recorder();
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

/// The whole service on `registry`: [`app`], [`users`], [`metrics`]
/// (sampled every `interval`) and, with the feature `dashboard`, the live
/// page at `/dashboard`; and the exporter's handle, which must be kept as
/// long as `/metrics` is served.
///
/// # Errors
///
/// A registry error as [`app`] and [`users`] have them, or the exporter's.
pub(crate) fn service(
    registry: &Registry,
    directory: Directory,
    interval: Duration,
) -> Result<(Router, ObserverHandle), Box<dyn std::error::Error>> {
    let router = app(registry)?.merge(users(registry, directory)?);
    // After the routes, so that the exporter's first sample, taken as it
    // starts, has every policy.
    let (metrics, exporter) = metrics(registry, interval)?;
    // The live page of every policy, and the stream it reads (feature
    // `dashboard`).
    #[cfg(feature = "dashboard")]
    let router = router.nest("/dashboard", bulkhead::observe::dashboard(registry));
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

/// `GET /reports/{id}`: an injected fault is a 500 (the backend failed),
/// a call its deadline left no time a 504, any other rejection a 503.
async fn report(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<String, (StatusCode, String)> {
    state
        .reports
        .render(&id)
        .await
        .map_err(|ReportError(rejection)| {
            let status = match rejection.kind() {
                RejectionKind::Injected => StatusCode::INTERNAL_SERVER_ERROR,
                RejectionKind::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            (status, rejection.to_string())
        })
}

/// Reloads `registry`'s configuration with `toml`: 204, or 500 with the
/// error.
fn reload(registry: &Registry, toml: &str) -> (StatusCode, String) {
    match registry.reload_toml(toml) {
        Ok(_) => (StatusCode::NO_CONTENT, String::new()),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()),
    }
}

async fn degrade(State(state): State<AppState>) -> (StatusCode, String) {
    reload(&state.registry, DEGRADE)
}

async fn fail(State(state): State<AppState>) -> (StatusCode, String) {
    reload(&state.registry, FAIL)
}

async fn recover(State(state): State<AppState>) -> (StatusCode, String) {
    reload(&state.registry, RECOVER)
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
    let (app, _exporter) = service(&registry, Directory, METRICS_INTERVAL)?;

    if std::env::args().nth(1).as_deref() == Some("serve") {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
        let address = listener.local_addr()?;
        println!(
            "serving on http://{address} (dashboard: http://{address}/dashboard, Prometheus: http://{address}/metrics)"
        );
        axum::serve(listener, app).await?;
        return Ok(());
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();

    let post = |path: &str| {
        let request = client.post(format!("{base}{path}")).send();
        async move { request.await?.error_for_status() }
    };

    println!("POST /reports/degrade: chaos delays every report 3 s.");
    post("/reports/degrade").await?;
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

    println!(
        "POST /reports/recover: chaos is off; the delayed reports finish their 3 s and give their slots back."
    );
    post("/reports/recover").await?;
    let mut statuses = Vec::new();
    for flood in floods {
        statuses.push(flood.await??.status().as_u16());
    }
    println!("the flood's answers: {statuses:?}");
    let again = client.get(format!("{base}/reports/r-11")).send().await?;
    println!("GET /reports/r-11   -> {}", again.status());

    println!("POST /reports/fail: chaos fails every report at once.");
    post("/reports/fail").await?;
    let failed = client.get(format!("{base}/reports/r-12")).send().await?;
    println!(
        "GET /reports/r-12   -> {} {}",
        failed.status(),
        failed.text().await?
    );
    post("/reports/recover").await?;

    println!(
        "Users, through an Arc<dyn Users>: chaos fails a third of the directory's calls, the retry hides them."
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
            || line.starts_with("bulkhead_chaos_injections_total")
            || line.starts_with("bulkhead_retries_total")
            || line.starts_with("bulkhead_max_concurrent")
    }) {
        println!("  {line}");
    }
    Ok(())
}
