//! The live page of `bulkhead::observe::dashboard` in a real headless
//! Chromium (the Debian package `chromium`), driven over the DevTools
//! protocol, against an axum app served on a free loopback port whose
//! handlers wait behind a gate, so that the load holds still:
//!
//! - (a) with calls held in flight and waiting, the numbers the page shows
//!   for every bulkhead and keyed bulkhead are the registry's snapshot
//!   (but for an adaptive bulkhead under traffic that never stops, whose
//!   limit moves, and is only checked to stay within its bounds);
//! - (b) once the backend stops answering and its bulkhead fills, the page
//!   shows its refusals within 2 s of the first refused request;
//! - (c) when the stream breaks (cut by the server, then refused with 503
//!   for a while), the page says it is reconnecting, then shows live data
//!   again, its charts' history kept;
//! - (d) a screenshot of the page under that load is written to
//!   `docs/dashboard.png` when `BULKHEAD_WRITE_SCREENSHOT=1`, else to
//!   `dashboard.png` in the target's temporary directory.
//!
//! Chromium missing is a failure; `BULKHEAD_SKIP_BROWSER=1` skips the test
//! (and it says so). `BULKHEAD_CHROMIUM` names another binary.

#[path = "support/cdp.rs"]
mod cdp;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use bulkhead::adaptive::Adaptive;
use bulkhead::observe::Dashboard;
use bulkhead::tower::{BulkheadLayer, ServiceError};
use bulkhead::{BulkheadConfig, OwnedBulkheadPermit, Pipeline, Registry};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tower::ServiceBuilder;

use cdp::{Browser, Page};

/// Waits until `condition` holds, or fails after `limit` saying `what`.
fn wait_until<T>(what: &str, limit: Duration, mut condition: impl FnMut() -> Option<T>) -> T {
    let give_up = Instant::now() + limit;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        assert!(Instant::now() < give_up, "gave up waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Cuts the dashboard's streams: each open `/events` response ends when
/// `cut` moves, and new ones are answered 503 while `refusing`.
#[derive(Clone)]
struct Breaker {
    cut: watch::Sender<u64>,
    refusing: Arc<AtomicBool>,
    streams: Arc<AtomicU64>,
}

async fn breakable(State(breaker): State<Breaker>, request: Request, next: Next) -> Response {
    if !request.uri().path().ends_with("/events") {
        return next.run(request).await;
    }
    if breaker.refusing.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    breaker.streams.fetch_add(1, Ordering::SeqCst);
    let mut cut = breaker.cut.subscribe();
    let (parts, body) = next.run(request).await.into_parts();
    let body = body.into_data_stream().take_until(async move {
        let _ = cut.changed().await;
    });
    Response::from_parts(parts, Body::from_stream(body))
}

async fn unavailable(error: ServiceError<Infallible>) -> impl IntoResponse {
    let ServiceError::Unavailable(refused) = error;
    (StatusCode::SERVICE_UNAVAILABLE, refused.to_string())
}

/// A backend that slows down as more calls reach it, under the adaptive
/// bulkhead "search": its limit moves, which the page charts.
async fn search(State(busy): State<Arc<AtomicU64>>) -> &'static str {
    let now = busy.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(10 + now)).await;
    busy.fetch_sub(1, Ordering::SeqCst);
    "found"
}

/// A handler that answers once the gate opens: a backend that hangs.
async fn gated(State(gate): State<watch::Receiver<bool>>) -> &'static str {
    let mut gate = gate.clone();
    let _ = gate.wait_for(|open| *open).await;
    "done"
}

struct App {
    registry: Registry,
    base: String,
    gate: watch::Sender<bool>,
    breaker: Breaker,
    /// Keyed permits held by the test (the tenants' calls in flight).
    _tenants: Vec<OwnedBulkheadPermit>,
}

const INVENTORY_SLOTS: u32 = 6;
const REPORTS_SLOTS: u32 = 2;

fn serve(runtime: &Runtime) -> App {
    let registry = Registry::new();
    let bulkhead = |id: &str, slots: u32, max_wait: Duration| {
        registry
            .bulkhead_policy(
                id,
                "extras/tests/dashboard_browser.rs",
                &BulkheadConfig::builder()
                    .max_concurrent(slots)
                    .max_wait(max_wait),
            )
            .expect("a bulkhead")
    };
    let inventory = bulkhead("inventory", INVENTORY_SLOTS, Duration::ZERO);
    let adaptive = registry
        .bulkhead_policy(
            "search",
            "extras/tests/dashboard_browser.rs",
            &BulkheadConfig::builder()
                .max_concurrent(24)
                .min_concurrent(2)
                .initial_concurrent(4)
                .adaptive(Adaptive::Aimd),
        )
        .expect("an adaptive bulkhead");
    let reports = bulkhead("reports", REPORTS_SLOTS, Duration::from_secs(600));
    let (gate, open) = watch::channel(false);
    let guarded = |bulkhead| {
        get(gated).layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(unavailable))
                .layer(BulkheadLayer::new(bulkhead)),
        )
    };
    let breaker = Breaker {
        cut: watch::channel(0).0,
        refusing: Arc::new(AtomicBool::new(false)),
        streams: Arc::new(AtomicU64::new(0)),
    };
    let page = Dashboard::new(&registry)
        .router()
        .layer(middleware::from_fn_with_state(breaker.clone(), breakable));
    let searches = Router::new()
        .route(
            "/search",
            get(search).layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(unavailable))
                    .layer(BulkheadLayer::new(adaptive)),
            ),
        )
        .with_state(Arc::new(AtomicU64::new(0)));
    let app = Router::new()
        .route("/inventory", guarded(inventory))
        .route("/reports", guarded(reports))
        .with_state(open)
        .merge(searches)
        .nest("/dashboard", page);

    let tenants = registry
        .keyed_bulkhead_builder::<String>("tenants")
        .max_concurrent(16)
        .per_key(4)
        .build()
        .expect("a keyed bulkhead");
    let held = ["acme", "acme", "acme", "globex", "initech"]
        .iter()
        .map(|key| tenants.try_enter_owned(*key).expect("a free slot"))
        .collect();

    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("a free port");
    let base = format!("http://{}", listener.local_addr().expect("its address"));
    runtime.spawn(async move { axum::serve(listener, app).await });
    App {
        registry,
        base,
        gate,
        breaker,
        _tenants: held,
    }
}

/// What the page shows, read from its `data-*` attributes.
fn shown(page: &mut Page) -> Value {
    let script = r#"(() => {
        if (!document.getElementById("status")) return JSON.stringify({status: "loading"});
        const value = (kind, instance, field) => {
            const el = document.querySelector(
                `[data-kind="${kind}"][data-instance="${instance}"][data-field="${field}"]`);
            return el ? el.dataset.value : null;
        };
        const cards = (kind) => Object.fromEntries(
            [...document.querySelectorAll(`.card[data-kind="${kind}"]`)].map((card) => {
                const instance = card.dataset.instance;
                const fields = {};
                for (const el of card.querySelectorAll("[data-field][data-value]")) {
                    if (!el.dataset.class) fields[el.dataset.field] = el.dataset.value;
                }
                const chart = card.querySelector('svg[data-field="history"]');
                fields.points = chart ? chart.dataset.points : null;
                return [instance, fields];
            }));
        return JSON.stringify({
            status: document.getElementById("status").dataset.state,
            seq: document.getElementById("seq").dataset.value,
            connections: document.getElementById("connections").dataset.value,
            bulkheads: cards("bulkhead"),
            keyed: cards("keyed"),
        });
    })()"#;
    let text = page.eval(script);
    serde_json::from_str(text.as_str().expect("a JSON string")).expect("JSON")
}

fn number(value: &Value) -> Option<f64> {
    value.as_str().and_then(|text| text.parse().ok())
}

fn seq(shown: &Value) -> u64 {
    number(&shown["seq"]).map_or(0, |seq| seq as u64)
}

#[test]
fn the_dashboard_in_a_real_browser() {
    if std::env::var_os("BULKHEAD_SKIP_BROWSER").is_some_and(|skip| skip == "1") {
        eprintln!("SKIPPED: the dashboard's browser test, as BULKHEAD_SKIP_BROWSER=1 asks");
        return;
    }
    let chromium = cdp::find_chromium().unwrap_or_else(|| {
        panic!(
            "no chromium on PATH (the Debian package `chromium`; or set BULKHEAD_CHROMIUM): \
             set BULKHEAD_SKIP_BROWSER=1 to skip this test"
        )
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let app = serve(&runtime);
    let client = reqwest::Client::new();

    // The load: 3 of inventory's 6 slots held, reports' 2 slots held and 3
    // calls waiting for them; a breaker forced open, refusing payments.
    let request = |path: &str| {
        let request = client.get(format!("{}{path}", app.base)).send();
        runtime.spawn(async move { request.await.map(|response| response.status()) })
    };
    let mut held: Vec<_> = (0..3).map(|_| request("/inventory")).collect();
    // And traffic that never stops on search, whose adaptive limit moves.
    let stop = Arc::new(AtomicBool::new(false));
    let searching: Vec<_> = (0..12)
        .map(|_| {
            let (client, url, stop) = (
                client.clone(),
                format!("{}/search", app.base),
                Arc::clone(&stop),
            );
            runtime.spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let _ = client.get(&url).send().await;
                    tokio::time::sleep(Duration::from_millis(15)).await;
                }
            })
        })
        .collect();
    held.extend((0..5).map(|_| request("/reports")));
    let payments = Pipeline::builder(&app.registry, "payments")
        .circuit_breaker(|c| c)
        .build()
        .expect("a pipeline");
    app.registry
        .circuit_breaker("payments")
        .expect("its breaker")
        .force_open();
    wait_until("the load holds still", Duration::from_secs(30), || {
        let snapshot = app.registry.snapshot();
        let of = |id: &str| {
            snapshot
                .bulkheads()
                .iter()
                .find(|b| b.instance == id)
                .map(|b| (b.concurrent_calls, b.waiting_calls))
        };
        (of("inventory") == Some((3, 0)) && of("reports") == Some((2, 3))).then_some(())
    });

    let browser = Browser::launch(&chromium, &format!("{}/dashboard", app.base));
    let mut page = browser.page();
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
    );

    // (a) The page's numbers are the snapshot's, once it shows a sample
    // taken after the load held still (the load was still before the
    // browser started, so any sample will do).
    let first = wait_until("the page shows a sample", Duration::from_secs(30), || {
        let shown = shown(&mut page);
        (shown["status"] == "live" && seq(&shown) >= 1).then_some(shown)
    });
    let later = wait_until(
        "the page shows a later sample",
        Duration::from_secs(30),
        || {
            let shown = shown(&mut page);
            (seq(&shown) > seq(&first)).then_some(shown)
        },
    );
    let snapshot = app.registry.snapshot();
    // Search moves all the time: its limit within its bounds will do.
    let card = &later["bulkheads"]["search"];
    let limit = number(&card["limit"]).expect("search's limit");
    assert!((2.0..=24.0).contains(&limit), "{card}");
    assert!(
        number(&card["in_flight"]).is_some_and(|in_flight| in_flight <= 24.0),
        "{card}"
    );
    for b in snapshot
        .bulkheads()
        .iter()
        .filter(|b| b.instance != "search")
    {
        let card = &later["bulkheads"][&b.instance];
        assert_eq!(
            number(&card["in_flight"]),
            Some(f64::from(b.concurrent_calls)),
            "{card}"
        );
        assert_eq!(
            number(&card["limit"]),
            Some(f64::from(b.max_concurrent)),
            "{card}"
        );
        assert_eq!(
            number(&card["waiting"]),
            Some(f64::from(b.waiting_calls)),
            "{card}"
        );
        // No refusal yet, over an interval the page has seen.
        assert_eq!(number(&card["rejected_per_sec"]), Some(0.0), "{card}");
    }
    assert_eq!(snapshot.bulkheads().len(), 3);
    let keyed = &snapshot.keyed_bulkheads()[0];
    let card = &later["keyed"]["tenants"];
    assert_eq!(
        number(&card["in_flight"]),
        Some(f64::from(keyed.in_flight)),
        "{card}"
    );
    assert_eq!(
        number(&card["limit"]),
        Some(f64::from(keyed.max_concurrent)),
        "{card}"
    );
    assert_eq!(number(&card["keys"]), Some(keyed.keys as f64), "{card}");
    assert_eq!(
        page.eval(r#"document.querySelector('[data-kind="circuit_breaker"][data-instance="payments"][data-field="badge"]').dataset.value"#),
        "forced_open"
    );

    // (b) The backend hangs and traffic keeps coming: inventory's free
    // slots fill, then every request is refused. The page shows refusals
    // per second within 2 s of the first refusal.
    let first_refusal = Arc::new(std::sync::OnceLock::<Instant>::new());
    let load = {
        let (client, base) = (client.clone(), app.base.clone());
        let (first_refusal, stop) = (Arc::clone(&first_refusal), Arc::clone(&stop));
        runtime.spawn(async move {
            let mut requests = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let request = client.get(format!("{base}/inventory")).send();
                let first_refusal = Arc::clone(&first_refusal);
                requests.push(tokio::spawn(async move {
                    let status = request.await.map(|response| response.status());
                    if matches!(status, Ok(StatusCode::SERVICE_UNAVAILABLE)) {
                        first_refusal.get_or_init(Instant::now);
                    }
                    status
                }));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            requests
        })
    };
    let refused_at = wait_until("a request is refused", Duration::from_secs(30), || {
        first_refusal.get().copied()
    });
    let _ = payments.execute(|| Ok::<_, std::io::Error>(()));
    let refusing = wait_until("the page shows refusals", Duration::from_secs(30), || {
        let shown = shown(&mut page);
        let rate = number(&shown["bulkheads"]["inventory"]["rejected_per_sec"])?;
        (rate > 0.0).then(|| (Instant::now(), shown))
    });
    let delay = refusing.0.duration_since(refused_at);
    eprintln!("the page showed the refusals {delay:?} after the first one");
    assert!(
        delay <= Duration::from_secs(2),
        "the page showed inventory's refusals {delay:?} after the first one"
    );
    let card = &refusing.1["bulkheads"]["inventory"];
    assert_eq!(
        number(&card["in_flight"]),
        Some(f64::from(INVENTORY_SLOTS)),
        "{card}"
    );

    // (c) The stream is cut, and refused for a while: the page says it is
    // reconnecting; then it is served again, and the page is live again,
    // on a new stream, its history kept.
    let before = shown(&mut page);
    let points_before = number(&before["bulkheads"]["inventory"]["points"]).unwrap_or(0.0);
    let streams = app.breaker.streams.load(Ordering::SeqCst);
    app.breaker.refusing.store(true, Ordering::SeqCst);
    app.breaker.cut.send_modify(|generation| *generation += 1);
    wait_until(
        "the page says it is reconnecting",
        Duration::from_secs(30),
        || (shown(&mut page)["status"] == "reconnecting").then_some(()),
    );
    app.breaker.refusing.store(false, Ordering::SeqCst);
    let after = wait_until("the page is live again", Duration::from_secs(30), || {
        let shown = shown(&mut page);
        (shown["status"] == "live" && seq(&shown) > seq(&before)).then_some(shown)
    });
    assert!(app.breaker.streams.load(Ordering::SeqCst) > streams);
    assert!(number(&after["connections"]) > number(&before["connections"]));
    let points_after = number(&after["bulkheads"]["inventory"]["points"]).unwrap_or(0.0);
    assert!(
        points_after > points_before,
        "the chart lost its history: {points_before} points before, {points_after} after"
    );

    // (d) A screenshot, with the history of a few more samples (more for
    // the docs' picture).
    let write = std::env::var_os("BULKHEAD_WRITE_SCREENSHOT").is_some_and(|write| write == "1");
    let more = if write { 20 } else { 3 };
    wait_until("a few more samples", Duration::from_secs(60), || {
        (seq(&shown(&mut page)) >= seq(&after) + more).then_some(())
    });
    let screenshot = page.call("Page.captureScreenshot", json!({"format": "png"}));
    let png = base64::engine::general_purpose::STANDARD
        .decode(screenshot["data"].as_str().expect("base64 data"))
        .expect("a PNG");
    assert!(png.starts_with(b"\x89PNG"));
    let path = if write {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/dashboard.png")
    } else {
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png")
    };
    std::fs::write(&path, &png).expect("the screenshot written");
    eprintln!("screenshot: {}", path.display());

    // The end: the browser killed, the gate opened, every request answered.
    drop(page);
    drop(browser);
    stop.store(true, Ordering::SeqCst);
    app.gate.send_replace(true);
    let statuses = runtime.block_on(async {
        let mut statuses = Vec::new();
        for searching in searching {
            searching.await.expect("a search loop");
        }
        for request in held.into_iter().chain(load.await.expect("the load")) {
            statuses.push(request.await.expect("a request").expect("an answer"));
        }
        statuses
    });
    assert!(
        statuses
            .iter()
            .take(8)
            .all(|status| *status == StatusCode::OK)
    );
    assert!(statuses.contains(&StatusCode::SERVICE_UNAVAILABLE));
}
