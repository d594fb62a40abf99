//! The axum example (`examples/axum_service.rs`) served on 127.0.0.1 and
//! driven over real HTTP: a reports backend made slow by chaos
//! (`POST /reports/degrade`) and flooded with requests takes only the
//! reports bulkhead's slots; further reports are answered 503 with
//! `Retry-After` at once, checkout keeps answering 200, `/bulkheads` shows
//! it, and every refusal is a `Rejected` event of the reports bulkhead.
//! Made failing (`POST /reports/fail`), reports are answered 500 at once.
//! The registries run on a `ManualClock`, on which chaos sleeps its
//! latencies: a test ends them by moving the clock.
//! A route whose bulkhead has a `max_wait` serves two concurrent requests on
//! one slot, one after the other, and refuses a request whose wait ran out
//! with a `Retry-After` estimated from the bulkhead's figures.
//!
//! The same flood is checked in the metrics exported by `bulkhead::observe`
//! to a test recorder (the Prometheus scrape of `/metrics` is
//! `tests/grafana_dashboard.rs`'s).
//!
//! With the feature `dashboard` (on in CI, which tests every feature), the
//! example's whole service serves the live page at `/dashboard` and a
//! sample of every policy of its registry at `/dashboard/snapshot.json`.

#[allow(dead_code)]
#[path = "../../examples/axum_service.rs"]
mod example;
mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::Path;
use axum::routing::get;
use bulkhead::chaos::ChaosLatency;
use bulkhead::events::{BulkheadEventKind, Event, EventStream};
use bulkhead::tower::BulkheadLayer;
use bulkhead::{BulkheadConfig, ManualClock, Registry};
use example::{REPORTS_SLOTS, ReportError, Reports, ReportsBackend, ResilientReports};
use reqwest::{Client, StatusCode, header};
use serde_json::Value;
use support::{refused_reports_then_checkouts, wait_until};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tower::ServiceBuilder;

/// The latency `POST /reports/degrade` injects ([`example::DEGRADE`]).
const DEGRADED: Duration = Duration::from_secs(3);

/// Chaos `reports` delaying every report by `latency` (as
/// [`example::DEGRADE`] does, with a latency of the test's choosing).
fn slow(latency: &str) -> String {
    format!(
        "[chaos.instances.reports]\nenabled = true\nlatency_rate = 1.0\nlatency = \"{latency}\"\n"
    )
}

struct Server {
    base: String,
    registry: Registry,
    clock: ManualClock,
    client: Client,
}

async fn serve() -> Server {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    serve_on(registry, clock).await
}

async fn serve_on(registry: Registry, clock: ManualClock) -> Server {
    let app = example::app(&registry).expect("a fresh registry");
    serve_app(registry, clock, app).await
}

async fn serve_app(registry: Registry, clock: ManualClock, app: Router) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Server {
        base,
        registry,
        clock,
        client: Client::new(),
    }
}

impl Server {
    /// `GET <path>` on the server.
    async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("the server answers")
    }

    /// `POST /reports/{action}` (`degrade`, `fail` or `recover`): a reload
    /// of chaos `reports`, answered 204.
    async fn reports_backend(&self, action: &str) {
        let answer = self
            .client
            .post(format!("{}/reports/{action}", self.base))
            .send()
            .await
            .expect("the server answers");
        assert_eq!(answer.status(), StatusCode::NO_CONTENT, "{action}");
    }

    /// Chaos off, then the clock moved by `latency` until no report holds
    /// a slot: the delayed reports finish (a report whose delay began after
    /// a move only finishes at the next).
    async fn recover_and_finish(&self, latency: Duration) {
        self.reports_backend("recover").await;
        wait_until("the delayed reports finish", || {
            if self.reports_in_flight() > 0 {
                self.clock.advance(latency);
            }
            self.reports_in_flight() == 0
        })
        .await;
    }

    fn reports_in_flight(&self) -> u32 {
        self.registry
            .bulkhead("reports")
            .expect("declared by the app")
            .concurrent_calls()
    }

    /// Sends `count` report requests that hang on the degraded backend, and
    /// waits until they hold their slots and sleep their injected latency.
    async fn hang_reports(&self, count: u32) -> JoinSet<reqwest::Result<reqwest::Response>> {
        let mut hanging = JoinSet::new();
        for i in 0..count {
            hanging.spawn(
                self.client
                    .get(format!("{}/reports/slow-{i}", self.base))
                    .send(),
            );
        }
        wait_until("the slow reports hold their slots", || {
            self.reports_in_flight() == count
        })
        .await;
        wait_until("the slow reports sleep", || {
            self.clock.sleepers() >= count as usize
        })
        .await;
        hanging
    }

    async fn bulkheads(&self) -> Value {
        let body = self.get("/bulkheads").await.text().await.expect("a body");
        serde_json::from_str(&body).expect("JSON")
    }
}

/// The bulkhead rejections received so far: instance id, and whether the
/// request had waited for a slot.
fn rejections(events: &mut EventStream) -> Vec<(&'static str, bool)> {
    events
        .drain()
        .filter_map(|event| match event {
            Event::Bulkhead(event) => match event.kind {
                BulkheadEventKind::Rejected { waited, .. } => Some((event.instance, waited)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn snapshot<'v>(bulkheads: &'v Value, instance: &str) -> &'v Value {
    bulkheads
        .as_array()
        .expect("an array of snapshots")
        .iter()
        .find(|b| b["instance"] == instance)
        .unwrap_or_else(|| panic!("no snapshot of {instance}: {bulkheads}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_slow_reports_gets_503_with_retry_after_while_checkout_answers_200() {
    let server = serve().await;
    let mut events = server.registry.subscribe();
    let client = &server.client;
    let base = &server.base;

    server.reports_backend("degrade").await;
    let chaos = server.registry.chaos("reports").unwrap().snapshot();
    assert_eq!(chaos.latency, ChaosLatency::fixed(DEGRADED));
    let hanging = server.hang_reports(REPORTS_SLOTS).await;

    // The flood goes on, and checkout traffic arrives at the same time.
    let mut flood = JoinSet::new();
    for i in 0..20 {
        flood.spawn(client.get(format!("{base}/reports/flood-{i}")).send());
    }
    let mut orders = JoinSet::new();
    for _ in 0..20 {
        orders.spawn(client.post(format!("{base}/checkout")).send());
    }
    for refused in flood.join_all().await {
        let refused = refused.expect("the server answers");
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "2");
        let body = refused.text().await.expect("a body");
        assert_eq!(body, r#"service unavailable: bulkhead "reports" is full"#);
    }
    for order in orders.join_all().await {
        let order = order.expect("the server answers");
        assert_eq!(order.status(), StatusCode::OK);
        assert_eq!(order.text().await.expect("a body"), "order placed");
    }

    let bulkheads = server.bulkheads().await;
    let reports = snapshot(&bulkheads, "reports");
    assert_eq!(reports["concurrent_calls"], REPORTS_SLOTS);
    assert_eq!(reports["max_concurrent"], REPORTS_SLOTS);
    assert_eq!(reports["available"], 0);
    let checkout = snapshot(&bulkheads, "checkout");
    assert_eq!(checkout["concurrent_calls"], 0);
    assert_eq!(checkout["max_concurrent"], example::CHECKOUT_SLOTS);

    // Every refusal, and nothing else, was published; with `max_wait` zero,
    // none waited.
    assert_eq!(rejections(&mut events), vec![("reports", false); 20]);

    // The backend recovers: the delayed reports finish and give their slots
    // back.
    server.recover_and_finish(DEGRADED).await;
    for report in hanging.join_all().await {
        assert_eq!(report.expect("the server answers").status(), StatusCode::OK);
    }
    let report = client
        .get(format!("{base}/reports/r-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(report.status(), StatusCode::OK);
    assert_eq!(report.text().await.unwrap(), "report r-1");
    assert!(rejections(&mut events).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_gives_its_report_slot_back() {
    let server = serve().await;
    server.reports_backend("degrade").await;
    let hanging = server.hang_reports(REPORTS_SLOTS).await;
    let full = server
        .client
        .get(format!("{}/reports/late", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);

    // The clients go away: the server drops their handlers, and the response
    // futures give the slots back although no report finished.
    drop(hanging); // aborts the tasks
    wait_until("the abandoned slots are back", || {
        server.reports_in_flight() == 0
    })
    .await;
    // The backend is still slow, but there is room again: a new report is
    // admitted (and hangs) instead of being refused.
    let hanging = server.hang_reports(1).await;
    server.recover_and_finish(DEGRADED).await;
    for report in hanging.join_all().await {
        assert_eq!(report.expect("the server answers").status(), StatusCode::OK);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bulkheads_route_lists_both_bulkheads_idle() {
    let server = serve().await;
    let bulkheads = server.bulkheads().await;
    assert_eq!(bulkheads.as_array().map(Vec::len), Some(2), "{bulkheads}");
    let max_wait_ms = example::CHECKOUT_MAX_WAIT.as_millis();
    for (instance, max_wait_ms) in [("checkout", max_wait_ms), ("reports", 0)] {
        let b = snapshot(&bulkheads, instance);
        assert_eq!(b["concurrent_calls"], 0);
        assert_eq!(b["waiting_calls"], 0);
        assert_eq!(b["available"], b["max_concurrent"]);
        assert_eq!(b["max_wait_ms"], u64::try_from(max_wait_ms).unwrap());
        assert_eq!(b["enabled"], true);
    }
}

/// A slow export that holds the only slot of its bulkhead.
const EXPORT_MAX_WAIT: Duration = Duration::from_secs(10);

/// `GET /exports/{id}`, rendered by the example's reports backend (under
/// its chaos `reports`) behind a bulkhead `exports` of one slot and a
/// `max_wait` of [`EXPORT_MAX_WAIT`], on a registry with a manual clock (a
/// wait and an injected latency end only when the test moves it) that
/// tracks sizing.
async fn serve_exports(clock: &ManualClock) -> Server {
    let registry = Registry::builder()
        .clock(clock.clone())
        .track_sizing(true)
        .build();
    let exports = registry
        .bulkhead_policy(
            "exports",
            "tests/axum_service.rs",
            &BulkheadConfig::builder()
                .max_concurrent(1)
                .max_wait(EXPORT_MAX_WAIT),
        )
        .expect("a fresh registry");
    let renderer = Arc::new(ResilientReports::new(ReportsBackend, &registry).expect("declared"));
    let export = get(move |Path(id): Path<String>| {
        let renderer = Arc::clone(&renderer);
        async move {
            renderer.render(&id).await.map_err(|ReportError(failed)| {
                (StatusCode::INTERNAL_SERVER_ERROR, failed.to_string())
            })
        }
    });
    let app = Router::new().route(
        "/exports/{id}",
        export.layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(example::unavailable))
                .layer(BulkheadLayer::new(exports)),
        ),
    );
    serve_app(registry, clock.clone(), app).await
}

impl Server {
    fn exports(&self) -> (u32, u32) {
        let exports = self.registry.bulkhead("exports").expect("declared");
        (exports.concurrent_calls(), exports.waiting_calls())
    }

    fn export(&self, id: &str) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
        let request = self.client.get(format!("{}/exports/{id}", self.base));
        tokio::spawn(request.send())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_max_wait_two_concurrent_requests_on_one_slot_both_succeed() {
    let clock = ManualClock::new();
    let server = serve_exports(&clock).await;
    let mut events = server.registry.subscribe();

    server.registry.reload_toml(&slow("6s")).unwrap();
    let first = server.export("e-1");
    wait_until("the first export holds the slot", || {
        server.exports() == (1, 0)
    })
    .await;
    wait_until("its latency is slept", || clock.sleepers() == 1).await;
    let second = server.export("e-2");
    wait_until("the second export waits", || {
        server.exports() != (1, 0) || second.is_finished()
    })
    .await;
    assert_eq!(server.exports(), (1, 1), "waiting, not refused");
    // Chaos off: the second export, which has not reached it yet, is not
    // delayed. The first holds its slot for its 6 s on the bulkhead's clock.
    server.registry.reload_toml(example::RECOVER).unwrap();
    clock.advance(Duration::from_secs(6));

    for (export, id) in [(first, "e-1"), (second, "e-2")] {
        let export = export.await.unwrap().expect("the server answers");
        assert_eq!(export.status(), StatusCode::OK);
        assert_eq!(export.text().await.unwrap(), format!("report {id}"));
    }
    wait_until("the slot is back", || server.exports() == (0, 0)).await;
    assert!(rejections(&mut events).is_empty());

    // Two exports completed, after 6 s and 0 s: W = 3 s. A request whose
    // wait runs out is refused with Retry-After ⌈1 × 3 s / 1⌉ = 3.
    server.registry.reload_toml(&slow("600s")).unwrap();
    let holder = server.export("e-3");
    wait_until("the third export holds the slot", || {
        server.exports() == (1, 0)
    })
    .await;
    wait_until("its latency is slept", || clock.sleepers() == 1).await;
    let late = server.export("e-4");
    wait_until("the fourth export waits", || server.exports() == (1, 1)).await;
    clock.advance(EXPORT_MAX_WAIT);
    let refused = late.await.unwrap().expect("the server answers");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()[header::RETRY_AFTER], "3");
    assert_eq!(
        refused.text().await.unwrap(),
        r#"service unavailable: bulkhead "exports" is full"#
    );
    assert_eq!(rejections(&mut events), [("exports", true)]);

    server.registry.reload_toml(example::RECOVER).unwrap();
    clock.advance(Duration::from_secs(600));
    assert_eq!(holder.await.unwrap().unwrap().status(), StatusCode::OK);
}

mod metrics {
    use std::collections::BTreeMap;

    use bulkhead::ManualClock;
    use bulkhead::observe::{ObserverHandle, export_metrics_to};
    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

    use super::*;

    const INTERVAL: Duration = Duration::from_secs(10);

    /// The exporter of a registry on a manual clock, to a recorder of its own.
    struct Exported {
        clock: ManualClock,
        observer: ObserverHandle,
        snapshotter: Snapshotter,
    }

    impl Exported {
        fn new(registry: &Registry, clock: ManualClock) -> Self {
            let recorder = DebuggingRecorder::new();
            let snapshotter = recorder.snapshotter();
            let observer = export_metrics_to(registry, INTERVAL, recorder).expect("started");
            // The exporter samples once as it starts: wait for that sample,
            // so that every later one is the one `sample()` asked for.
            let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while observer.samples() < 1 {
                assert!(
                    std::time::Instant::now() < give_up,
                    "the exporter never sampled"
                );
                std::thread::yield_now();
            }
            Exported {
                clock,
                observer,
                snapshotter,
            }
        }

        /// Moves the clock to the next sample and waits until it was taken.
        async fn sample(&self) {
            let taken = self.observer.samples();
            self.clock.advance(INTERVAL);
            wait_until("a sample", || self.observer.samples() > taken).await;
        }

        /// Every metric as `name{instance}` to its value; counters read as
        /// what was added since the last reading.
        fn read(&self) -> BTreeMap<String, f64> {
            self.snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| {
                    let instance = key
                        .key()
                        .labels()
                        .find(|label| label.key() == "instance")
                        .map_or(String::new(), |label| label.value().to_owned());
                    #[allow(clippy::cast_precision_loss)]
                    let value = match value {
                        DebugValue::Counter(n) => n as f64,
                        DebugValue::Gauge(g) => g.into_inner(),
                        DebugValue::Histogram(_) => f64::NAN,
                    };
                    (format!("{}{{{instance}}}", key.key().name()), value)
                })
                .collect()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_flood_shows_in_the_exported_metrics() {
        let clock = ManualClock::new();
        let registry = Registry::builder()
            .clock(clock.clone())
            .track_sizing(true)
            .build();
        let exported = Exported::new(&registry, clock.clone());
        let server = serve_on(registry, clock).await;
        let (client, base) = (&server.client, &server.base);

        // Delayed 25 s: through the sample below (10 s), not the next two.
        let sleeping = server.clock.sleepers();
        server.registry.reload_toml(&slow("25s")).unwrap();
        let mut hanging = JoinSet::new();
        for i in 0..REPORTS_SLOTS {
            hanging.spawn(client.get(format!("{base}/reports/slow-{i}")).send());
        }
        wait_until("the slow reports sleep", || {
            server.reports_in_flight() == REPORTS_SLOTS
                && server.clock.sleepers() >= sleeping + REPORTS_SLOTS as usize
        })
        .await;
        refused_reports_then_checkouts(client, base).await;
        wait_until("the exporter counted the refusals", || {
            // 3 latencies injected, 5 refusals.
            exported.observer.events() >= u64::from(REPORTS_SLOTS) + 5
        })
        .await;
        exported.sample().await;
        let metrics = exported.read();
        assert_eq!(metrics["bulkhead_rejections_total{reports}"], 5.0);
        let checkout_rejections = metrics.get("bulkhead_rejections_total{checkout}");
        assert_eq!(checkout_rejections.copied().unwrap_or(0.0), 0.0);
        assert_eq!(
            metrics["bulkhead_in_flight{reports}"],
            f64::from(REPORTS_SLOTS)
        );
        assert_eq!(
            metrics["bulkhead_max_concurrent{reports}"],
            f64::from(REPORTS_SLOTS)
        );
        assert_eq!(metrics["bulkhead_in_flight{checkout}"], 0.0);
        assert_eq!(metrics["bulkhead_admitted_total{checkout}"], 4.0);
        assert_eq!(metrics["bulkhead_completed_total{checkout}"], 4.0);
        assert_eq!(
            metrics["bulkhead_admitted_total{reports}"],
            f64::from(REPORTS_SLOTS)
        );
        assert_eq!(metrics["bulkhead_completed_total{reports}"], 0.0);

        assert_eq!(
            metrics["bulkhead_chaos_injections_total{reports}"],
            f64::from(REPORTS_SLOTS)
        );

        // Chaos off; two samples later (20 s) the delays are over.
        server.registry.reload_toml(example::RECOVER).unwrap();
        exported.sample().await;
        exported.sample().await;
        for report in hanging.join_all().await {
            assert_eq!(report.unwrap().status(), StatusCode::OK);
        }
        exported.sample().await;
        let metrics = exported.read();
        assert_eq!(metrics["bulkhead_in_flight{reports}"], 0.0);
        assert_eq!(
            metrics["bulkhead_completed_total{reports}"],
            f64::from(REPORTS_SLOTS)
        );
        assert_eq!(exported.observer.lost(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_reports_backend_answers_500_and_keeps_no_slot() {
    let server = serve().await;
    let mut events = server.registry.subscribe();
    server.reports_backend("fail").await;
    assert!(server.registry.chaos("reports").unwrap().snapshot().enabled);
    for i in 0..2 * REPORTS_SLOTS {
        let failed = server.get(&format!("/reports/f-{i}")).await;
        assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(failed.headers().get(header::RETRY_AFTER).is_none());
        assert_eq!(
            failed.text().await.unwrap(),
            r#"chaos "reports" injected a fault"#
        );
    }
    assert_eq!(
        server.reports_in_flight(),
        0,
        "failures gave their slots back"
    );
    assert!(rejections(&mut events).is_empty(), "none was refused");
    server.reports_backend("recover").await;
    assert!(!server.registry.chaos("reports").unwrap().snapshot().enabled);
    let report = server.get("/reports/ok").await;
    assert_eq!(report.status(), StatusCode::OK);
}

/// The ids of the policies a dashboard sample lists under `list`, sorted.
#[cfg(feature = "dashboard")]
fn listed(sample: &Value, list: &str) -> Vec<String> {
    let mut ids: Vec<String> = sample[list]
        .as_array()
        .unwrap_or_else(|| panic!("no list {list}: {sample}"))
        .iter()
        .map(|policy| policy["instance"].as_str().expect("an id").to_owned())
        .collect();
    ids.sort();
    ids
}

/// The ids of `policies`, sorted.
#[cfg(feature = "dashboard")]
fn ids<'p>(policies: impl IntoIterator<Item = &'p String>) -> Vec<String> {
    let mut ids: Vec<String> = policies.into_iter().cloned().collect();
    ids.sort();
    ids
}

/// The example's whole service (`example::service`, as `serve` runs it)
/// mounts the live page of its registry at `/dashboard` (feature
/// `dashboard`): the page, and one sample of every policy it declared.
#[cfg(feature = "dashboard")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_serves_the_dashboard_of_its_policies() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let (app, _exporter) = example::service(&registry, example::Directory, Duration::from_secs(60))
        .expect("a fresh registry");
    let server = serve_app(registry, clock, app).await;

    let page = server.get("/dashboard").await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(
        page.headers()[header::CONTENT_TYPE],
        "text/html; charset=utf-8"
    );
    let html = page.text().await.expect("a body");
    assert!(
        html.contains("<title>bulkhead dashboard</title>"),
        "not the dashboard: {}",
        html.chars().take(200).collect::<String>()
    );

    let answer = server.get("/dashboard/snapshot.json").await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/json");
    let sample: Value = serde_json::from_str(&answer.text().await.expect("a body")).expect("JSON");
    let policies = server.registry.snapshot();
    let bulkheads = listed(&sample, "bulkheads");
    assert_eq!(bulkheads, ["checkout", "reports", "users"]);
    assert_eq!(
        bulkheads,
        ids(policies.bulkheads().iter().map(|b| &b.instance))
    );
    let breakers = listed(&sample, "circuit_breakers");
    assert_eq!(breakers, ["users"]);
    assert_eq!(
        breakers,
        ids(policies.circuit_breakers().iter().map(|c| &c.instance))
    );
    assert_eq!(
        listed(&sample, "rate_limiters"),
        ids(policies.rate_limiters().iter().map(|r| &r.instance))
    );
}
