//! The live page of `bulkhead::observe::dashboard` in a real headless
//! Chromium (the Debian package `chromium`), driven over the DevTools
//! protocol, against an axum app served on a free loopback port whose
//! handlers wait behind a gate, so that the load holds still, and whose
//! registry shares a fleet resource with a second registry on a real
//! `redis-server` the test starts:
//!
//! - (a) with calls held in flight and waiting, the numbers the page shows
//!   for every bulkhead, keyed bulkhead and fleet resource are the
//!   registry's snapshot, per priority class too (but for an adaptive
//!   bulkhead under traffic that never stops, whose limit moves, and is
//!   checked in (f));
//! - (b) once the backend stops answering and its bulkhead fills, the page
//!   shows its refusals within 2 s of the first refused request; calls of
//!   the lowest class shed while the page runs show as that class's
//!   refusals, equal to the snapshot's;
//! - (c) when the stream breaks (cut by the server, then refused with 503
//!   for a while), the page says it is reconnecting, then shows live data
//!   again, its charts' history kept;
//! - (d) when the stream stays open but sends nothing, the page says it is
//!   reconnecting, opens a new stream and is live again on it;
//! - (e) the page loads nothing but its own origin's page and stream (every
//!   request the browser sent for it, as the DevTools `Network` domain saw
//!   it), its Content-Security-Policy refused nothing, and its script
//!   threw nothing;
//! - (f) the adaptive bulkhead's chart shows its limit moving, each point a
//!   limit the registry reported (its `LimitChanged` events);
//! - (g) a screenshot of the page under that load is written to
//!   `docs/dashboard.png` when `BULKHEAD_WRITE_SCREENSHOT=1`, else to
//!   `dashboard.png` in the target's temporary directory.
//!
//! Chromium or redis-server missing is a failure; `BULKHEAD_SKIP_BROWSER=1`
//! skips the test (and says so on the terminal, even without
//! `--nocapture`). `BULKHEAD_CHROMIUM` names another browser binary,
//! `BULKHEAD_REDIS_SERVER` another server.

#[path = "support/cdp.rs"]
mod cdp;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use bulkhead::adaptive::Adaptive;
use bulkhead::events::{BulkheadEvent, BulkheadEventKind, Event};
use bulkhead::fleet::{FleetConfig, FleetState};
use bulkhead::observe::Dashboard;
use bulkhead::tower::{BulkheadLayer, PriorityLayer, ServiceError};
use bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, OwnedBulkheadPermit, Pipeline, Priority,
    Registry,
};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tower::ServiceBuilder;

use cdp::{Browser, Page};
use redis_server::RedisServer;

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

/// Breaks the dashboard's streams: each open `/events` response ends when
/// `cut` moves; new ones are answered 503 while `refusing`; the next
/// `silent` ones are held open with nothing sent.
#[derive(Clone)]
struct Breaker {
    cut: watch::Sender<u64>,
    refusing: Arc<AtomicBool>,
    silent: Arc<AtomicU64>,
    /// The streams served (silent ones included).
    streams: Arc<AtomicU64>,
    /// The streams served silent.
    silenced: Arc<AtomicU64>,
}

async fn breakable(State(breaker): State<Breaker>, request: Request, next: Next) -> Response {
    if !request.uri().path().ends_with("/events") {
        return next.run(request).await;
    }
    if breaker.refusing.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    breaker.streams.fetch_add(1, Ordering::SeqCst);
    let silent = breaker
        .silent
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let mut cut = breaker.cut.subscribe();
    let (parts, body) = next.run(request).await.into_parts();
    if silent {
        // The stream's headers, then nothing, for as long as the browser
        // keeps it open.
        breaker.silenced.fetch_add(1, Ordering::SeqCst);
        drop(body);
        let nothing = futures_util::stream::pending::<Result<Bytes, Infallible>>();
        return Response::from_parts(parts, Body::from_stream(nothing));
    }
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
    /// Every limit the adaptive bulkhead "search" had: its first, and each
    /// `LimitChanged` since (read from the registry's events by a task).
    search_limits: Arc<Mutex<BTreeSet<u32>>>,
    /// Events that task lost by falling behind (then `search_limits` may
    /// lack some).
    search_missed: Arc<AtomicU64>,
    /// Keyed permits held by the test (the tenants' calls in flight).
    _tenants: Vec<OwnedBulkheadPermit>,
}

const SOURCE: &str = "extras/tests/dashboard_browser.rs";
const INVENTORY_SLOTS: u32 = 6;
const REPORTS_SLOTS: u32 = 2;
/// Checkout's slots; the lowest class, `Sheddable`, is shed from half of
/// them on (its default `shed_at`), while the bulkhead is not full (a call
/// refused by a full bulkhead is not shed, whatever its class).
const CHECKOUT_SLOTS: u32 = 6;
/// The fleet resource "db": the budget its members share, and the limit
/// configured for the bulkhead "ledger" on it, which its share caps.
const FLEET_BUDGET: u32 = 10;
const LEDGER_SLOTS: u32 = 8;
const PRIORITY: HeaderName = HeaderName::from_static("x-priority");

/// A member of the fleet on `redis`: its resource "db" with the budget.
fn join_fleet(registry: &Registry, redis: &RedisServer) {
    let fleet = FleetConfig::redis(&redis.url())
        .expect("a Redis URL")
        .prefix("dashboard")
        .lease(Duration::from_secs(1));
    registry
        .fleet_resource("db", FLEET_BUDGET, fleet)
        .expect("a fleet resource");
}

/// A registry of another process on the same fleet resource, with its own
/// "ledger": the app's share is half the budget.
fn neighbour(redis: &RedisServer) -> (Registry, Bulkhead) {
    let registry = Registry::new();
    join_fleet(&registry, redis);
    let ledger = registry
        .bulkhead_policy(
            "ledger",
            SOURCE,
            &BulkheadConfig::builder()
                .max_concurrent(LEDGER_SLOTS)
                .resource("db"),
        )
        .expect("a bulkhead on the fleet resource");
    (registry, ledger)
}

fn serve(runtime: &Runtime, redis: &RedisServer) -> App {
    // Room for every event the limits' task reads, however late it runs.
    let registry = Registry::builder().event_capacity(1 << 16).build();
    let mut limit_events = registry.subscribe();
    let bulkhead = |id: &str, config: BulkheadConfigBuilder| {
        registry
            .bulkhead_policy(id, SOURCE, &config)
            .expect("a bulkhead")
    };
    let slots = |slots: u32, max_wait: Duration| {
        BulkheadConfig::builder()
            .max_concurrent(slots)
            .max_wait(max_wait)
    };
    let inventory = bulkhead("inventory", slots(INVENTORY_SLOTS, Duration::ZERO));
    let adaptive = bulkhead(
        "search",
        BulkheadConfig::builder()
            .max_concurrent(24)
            .min_concurrent(2)
            .initial_concurrent(4)
            .adaptive(Adaptive::Aimd),
    );
    // No call yet: its first limit.
    let search_limits = Arc::new(Mutex::new(BTreeSet::from([adaptive.max_concurrent()])));
    let search_missed = Arc::new(AtomicU64::new(0));
    {
        let (limits, missed) = (Arc::clone(&search_limits), Arc::clone(&search_missed));
        runtime.spawn(async move {
            while let Some(event) = limit_events.recv().await {
                if let Event::Bulkhead(BulkheadEvent {
                    instance: "search",
                    kind: BulkheadEventKind::LimitChanged { from, to },
                    ..
                }) = event
                {
                    limits.lock().expect("the limits").extend([from, to]);
                }
                missed.store(limit_events.missed(), Ordering::SeqCst);
            }
        });
    }
    let reports = bulkhead("reports", slots(REPORTS_SLOTS, Duration::from_secs(600)));
    let checkout = bulkhead("checkout", slots(CHECKOUT_SLOTS, Duration::ZERO));
    join_fleet(&registry, redis);
    let ledger = bulkhead(
        "ledger",
        BulkheadConfig::builder()
            .max_concurrent(LEDGER_SLOTS)
            .resource("db"),
    );
    let (gate, open) = watch::channel(false);
    let guarded = |bulkhead| {
        get(gated).layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(unavailable))
                .layer(BulkheadLayer::new(bulkhead)),
        )
    };
    // A request's class from its header `x-priority`.
    let classed = get(gated).layer(
        ServiceBuilder::new()
            .layer(HandleErrorLayer::new(unavailable))
            .layer(PriorityLayer::header(PRIORITY))
            .layer(BulkheadLayer::new(checkout)),
    );
    let breaker = Breaker {
        cut: watch::channel(0).0,
        refusing: Arc::new(AtomicBool::new(false)),
        silent: Arc::new(AtomicU64::new(0)),
        streams: Arc::new(AtomicU64::new(0)),
        silenced: Arc::new(AtomicU64::new(0)),
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
        .route("/ledger", guarded(ledger))
        .route("/checkout", classed)
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
        search_limits,
        search_missed,
        _tenants: held,
    }
}

/// What the page shows, read from its `data-*` attributes: per card its
/// fields, its chart's number of points, and per priority class its cells.
fn shown(page: &mut Page) -> Value {
    let script = r#"(() => {
        if (!document.getElementById("status")) return JSON.stringify({status: "loading"});
        const cards = (kind) => Object.fromEntries(
            [...document.querySelectorAll(`.card[data-kind="${kind}"]`)].map((card) => {
                const instance = card.dataset.instance;
                const fields = {classes: {}};
                for (const el of card.querySelectorAll("[data-field][data-value]")) {
                    const class_ = el.dataset.class;
                    if (!class_) fields[el.dataset.field] = el.dataset.value;
                    else (fields.classes[class_] ||= {})[el.dataset.field] = el.dataset.value;
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
            fleets: cards("fleet"),
        });
    })()"#;
    let text = page.eval(script);
    serde_json::from_str(text.as_str().expect("a JSON string")).expect("JSON")
}

/// The limits a bulkhead's chart draws, point by point, read back from
/// its line: `y = 68 - limit / top * 58`, `top` the chart's scale
/// ("(max N)"), `y` drawn to a tenth (exact to well under one slot).
fn charted_limits(page: &mut Page, instance: &str) -> Vec<u32> {
    let script = format!(
        r#"(() => {{
            const card = document.querySelector('.card[data-kind="bulkhead"][data-instance="{instance}"]');
            return JSON.stringify({{
                points: card.querySelector("svg.chart .limit").getAttribute("points"),
                scale: card.querySelector('[data-field="scale"]').textContent,
            }});
        }})()"#
    );
    let text = page.eval(&script);
    let chart: Value = serde_json::from_str(text.as_str().expect("a JSON string")).expect("JSON");
    let scale = chart["scale"].as_str().expect("a scale");
    let top: f64 = scale
        .trim_start_matches("(max ")
        .trim_end_matches(')')
        .parse()
        .unwrap_or_else(|_| panic!("a scale: {scale}"));
    chart["points"]
        .as_str()
        .expect("points")
        .split_whitespace()
        .map(|point| {
            let (_, y) = point.split_once(',').expect("x,y");
            let y: f64 = y.parse().expect("a number");
            let limit = (68.0 - y) / 58.0 * top;
            assert!(
                (limit - limit.round()).abs() < 0.1,
                "{point} on a scale of {top} is no whole limit"
            );
            limit.round() as u32
        })
        .collect()
}

fn number(value: &Value) -> Option<f64> {
    value.as_str().and_then(|text| text.parse().ok())
}

fn seq(shown: &Value) -> u64 {
    number(&shown["seq"]).map_or(0, |seq| seq as u64)
}

/// The page's cells of `instance`'s priority classes are the snapshot's:
/// per class its calls held, its threshold and its calls shed.
fn assert_classes_shown(
    shown: &Value,
    snapshot: &bulkhead::registry::RegistrySnapshot,
    instance: &str,
) {
    let b = snapshot
        .bulkheads()
        .iter()
        .find(|b| b.instance == instance)
        .expect("the bulkhead");
    let classes = &shown["bulkheads"][instance]["classes"];
    for class in &b.classes {
        let cells = &classes[class.class.name()];
        assert_eq!(
            number(&cells["held"]),
            Some(f64::from(class.held)),
            "{classes}"
        );
        assert_eq!(
            number(&cells["threshold"]),
            Some(f64::from(class.threshold)),
            "{classes}"
        );
        assert_eq!(
            number(&cells["shed_total"]),
            Some(class.shed as f64),
            "{classes}"
        );
    }
}

/// Writes to the terminal even when libtest captures the test's output
/// (it captures `print!` and `eprint!`, not the process's stderr itself).
fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// One browser at a time: the tests of this file would otherwise run
/// side by side on a 2-core machine, and the first bounds what the page
/// shows within 2 s.
fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Chromium, or `None` (said on the terminal) when `BULKHEAD_SKIP_BROWSER=1`.
fn chromium() -> Option<std::path::PathBuf> {
    if std::env::var_os("BULKHEAD_SKIP_BROWSER").is_some_and(|skip| skip == "1") {
        say("SKIPPED: the dashboard's browser test, as BULKHEAD_SKIP_BROWSER=1 asks");
        return None;
    }
    Some(cdp::find_chromium().unwrap_or_else(|| {
        panic!(
            "no chromium on PATH (the Debian package `chromium`; or set BULKHEAD_CHROMIUM): \
             set BULKHEAD_SKIP_BROWSER=1 to skip this test"
        )
    }))
}

#[test]
fn the_dashboard_in_a_real_browser() {
    let Some(chromium) = chromium() else {
        return;
    };
    let _one = one_browser();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let redis = RedisServer::start();
    let app = serve(&runtime, &redis);
    let _neighbour = neighbour(&redis);
    let client = reqwest::Client::new();

    // The load: 3 of inventory's 6 slots held, reports' 2 slots held and 3
    // calls waiting for them; a breaker forced open, refusing payments.
    let request = |path: &str, class: Option<Priority>| {
        let mut request = client.get(format!("{}{path}", app.base));
        if let Some(class) = class {
            request = request.header(PRIORITY, class.name());
        }
        let request = request.send();
        runtime.spawn(async move { request.await.map(|response| response.status()) })
    };
    let mut held: Vec<_> = (0..3).map(|_| request("/inventory", None)).collect();
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
    held.extend((0..5).map(|_| request("/reports", None)));
    let payments = Pipeline::builder(&app.registry, "payments")
        .circuit_breaker(|c| c)
        .build()
        .expect("a pipeline");
    app.registry
        .circuit_breaker("payments")
        .expect("its breaker")
        .force_open();
    let in_checkout = |count: u32| {
        wait_until("checkout's calls are in", Duration::from_secs(30), || {
            let snapshot = app.registry.snapshot();
            let checkout = snapshot
                .bulkheads()
                .iter()
                .find(|b| b.instance == "checkout")?;
            (checkout.concurrent_calls == count).then_some(())
        });
    };
    let answered = |requests: Vec<tokio::task::JoinHandle<reqwest::Result<StatusCode>>>| {
        runtime.block_on(async {
            let mut statuses = Vec::new();
            for request in requests {
                statuses.push(request.await.expect("a request").expect("an answer"));
            }
            statuses
        })
    };
    // Checkout's classes: two calls of no class (Normal) and one Critical
    // held; then three Sheddable calls, past their class's half of the
    // slots, shed.
    held.extend([None, None, Some(Priority::Critical)].map(|class| request("/checkout", class)));
    in_checkout(3);
    let shed = (0..3)
        .map(|_| request("/checkout", Some(Priority::Sheddable)))
        .collect();
    assert!(
        answered(shed)
            .iter()
            .all(|status| *status == StatusCode::SERVICE_UNAVAILABLE)
    );
    wait_until("the load holds still", Duration::from_secs(30), || {
        let snapshot = app.registry.snapshot();
        let of = |id: &str| {
            snapshot
                .bulkheads()
                .iter()
                .find(|b| b.instance == id)
                .map(|b| (b.concurrent_calls, b.waiting_calls))
        };
        // The idle fleet of two splits its budget evenly.
        let fleet = snapshot
            .fleets()
            .first()
            .map(|f| (f.state, f.share, f.processes));
        (of("inventory") == Some((3, 0))
            && of("reports") == Some((2, 3))
            && of("checkout") == Some((3, 0))
            && fleet == Some((FleetState::Joined, FLEET_BUDGET / 2, 2)))
        .then_some(())
    });

    // The browser starts on a blank page, so that every request of the
    // dashboard's is seen from the first (e).
    let browser = Browser::launch(&chromium, "about:blank");
    let mut page = browser.page();
    for domain in ["Network.enable", "Log.enable", "Runtime.enable"] {
        page.call(domain, json!({}));
    }
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
    );
    page.call(
        "Page.navigate",
        json!({"url": format!("{}/dashboard", app.base)}),
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
    // Search moves all the time: (f) checks its chart.
    let card = &later["bulkheads"]["search"];
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
    assert_eq!(snapshot.bulkheads().len(), 5);
    // Ledger's limit is its share of the fleet's budget, not its own 8.
    assert_eq!(
        number(&later["bulkheads"]["ledger"]["limit"]),
        Some(f64::from(FLEET_BUDGET / 2))
    );
    // Per class: 2 Normal and 1 Critical held, 3 Sheddable shed.
    assert_classes_shown(&later, &snapshot, "checkout");
    let classes = &later["bulkheads"]["checkout"]["classes"];
    assert_eq!(
        number(&classes["sheddable"]["shed_total"]),
        Some(3.0),
        "{classes}"
    );
    assert_eq!(number(&classes["normal"]["held"]), Some(2.0), "{classes}");
    assert_eq!(number(&classes["critical"]["held"]), Some(1.0), "{classes}");
    // The fleet resource: its share of the budget, as the snapshot says.
    let fleet = &snapshot.fleets()[0];
    let card = &later["fleets"]["db"];
    assert_eq!(card["badge"], fleet.state.as_str(), "{card}");
    for (field, value) in [
        ("share", fleet.share),
        ("target", fleet.target),
        ("budget", fleet.budget),
        ("processes", fleet.processes),
    ] {
        assert_eq!(
            number(&card[field]),
            Some(f64::from(value)),
            "{field}: {card}"
        );
    }
    assert_eq!(number(&card["share"]), Some(f64::from(FLEET_BUDGET / 2)));
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
    // Sheddable checkouts while the page runs: its class's refusals per
    // second show, then its count is the snapshot's.
    let shed = (0..4)
        .map(|_| request("/checkout", Some(Priority::Sheddable)))
        .collect();
    assert!(
        answered(shed)
            .iter()
            .all(|status| *status == StatusCode::SERVICE_UNAVAILABLE)
    );
    wait_until(
        "the page shows Sheddable's calls shed per second",
        Duration::from_secs(30),
        || {
            let shown = shown(&mut page);
            let rate =
                number(&shown["bulkheads"]["checkout"]["classes"]["sheddable"]["shed_per_sec"])?;
            (rate > 0.0).then_some(())
        },
    );
    let snapshot = app.registry.snapshot();
    let shed_now = snapshot
        .bulkheads()
        .iter()
        .find(|b| b.instance == "checkout")
        .map(|b| b.classes[Priority::Sheddable.index()].shed);
    assert_eq!(shed_now, Some(7));
    let shown_shed = wait_until(
        "the page shows every Sheddable call shed",
        Duration::from_secs(30),
        || {
            let shown = shown(&mut page);
            let classes = &shown["bulkheads"]["checkout"]["classes"];
            (number(&classes["sheddable"]["shed_total"]) == Some(7.0)).then_some(shown)
        },
    );
    assert_classes_shown(&shown_shed, &snapshot, "checkout");

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

    // (d) The stream is cut, and the next one the browser opens stays open
    // but says nothing: the page says it is reconnecting, gives up on it,
    // and is live again on a stream of its own opening.
    let before = after;
    let streams = app.breaker.streams.load(Ordering::SeqCst);
    app.breaker.silent.store(1, Ordering::SeqCst);
    app.breaker.cut.send_modify(|generation| *generation += 1);
    wait_until(
        "the browser opens a silent stream",
        Duration::from_secs(30),
        || (app.breaker.silenced.load(Ordering::SeqCst) == 1).then_some(()),
    );
    wait_until(
        "the page says it is reconnecting",
        Duration::from_secs(30),
        || (shown(&mut page)["status"] == "reconnecting").then_some(()),
    );
    let after = wait_until(
        "the page is live again after a silent stream",
        Duration::from_secs(30),
        || {
            let shown = shown(&mut page);
            (shown["status"] == "live" && seq(&shown) > seq(&before)).then_some(shown)
        },
    );
    // The silent stream and the one the page opened after it.
    assert!(app.breaker.streams.load(Ordering::SeqCst) >= streams + 2);
    assert!(
        number(&after["connections"]).unwrap_or(0.0)
            >= number(&before["connections"]).unwrap_or(0.0) + 2.0,
        "{} streams opened before, {} after",
        before["connections"],
        after["connections"]
    );

    // (f) Search's chart: its limit moved over the run, and each limit it
    // drew is one the registry reported.
    let write = std::env::var_os("BULKHEAD_WRITE_SCREENSHOT").is_some_and(|write| write == "1");
    let more = if write { 20 } else { 3 };
    wait_until("a few more samples", Duration::from_secs(60), || {
        (seq(&shown(&mut page)) >= seq(&after) + more).then_some(())
    });
    // (A bound on the wait, not a timing: under this load the limit moves
    // within seconds.)
    let charted = wait_until(
        "search's chart shows its limit moving",
        Duration::from_secs(30),
        || {
            let charted = charted_limits(&mut page, "search");
            let distinct: BTreeSet<u32> = charted.iter().copied().collect();
            (distinct.len() > 1).then_some(charted)
        },
    );
    let distinct: BTreeSet<u32> = charted.iter().copied().collect();
    let shown_limit = number(&shown(&mut page)["bulkheads"]["search"]["limit"])
        .map(|limit| limit as u32)
        .expect("search's limit");
    // A limit is published just after it is in force: the task that reads
    // the events is given a moment to catch up with the page.
    let give_up = Instant::now() + Duration::from_secs(5);
    let reported = loop {
        let reported = app.search_limits.lock().expect("the limits").clone();
        let all = distinct.is_subset(&reported) && reported.contains(&shown_limit);
        if all || Instant::now() > give_up {
            break reported;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        app.search_missed.load(Ordering::SeqCst),
        0,
        "the registry's events were not all read: the limits reported are not known"
    );
    assert!(
        distinct.is_subset(&reported),
        "the chart drew limits {distinct:?}, the registry reported {reported:?}"
    );
    assert!(
        reported.contains(&shown_limit),
        "the page shows a limit of {shown_limit}, the registry reported {reported:?}"
    );

    // (e) Every request the browser sent for the page was to the app's
    // origin, for the page and its stream; nothing broke its
    // Content-Security-Policy; its script threw nothing.
    // A round trip: the events sent before it are read.
    page.eval("0");
    let origin = format!("{}/", app.base);
    let urls: Vec<String> = page
        .take_events("Network.requestWillBeSent")
        .iter()
        .map(|event| {
            event["params"]["request"]["url"]
                .as_str()
                .expect("a URL")
                .to_owned()
        })
        .collect();
    let elsewhere: Vec<&String> = urls
        .iter()
        .filter(|url| !url.starts_with(&origin))
        .collect();
    assert!(elsewhere.is_empty(), "the page loaded {elsewhere:?}");
    for own in ["/dashboard", "/dashboard/events"] {
        let url = format!("{}{own}", app.base);
        assert!(urls.contains(&url), "no request for {url} in {urls:?}");
    }
    // Chromium says so in the console, as the `Log` domain reports it.
    let refused: BTreeSet<String> = page
        .take_events("Log.entryAdded")
        .iter()
        .filter_map(|entry| entry["params"]["entry"]["text"].as_str())
        .filter(|text| text.contains("Content Security Policy"))
        .map(str::to_owned)
        .collect();
    assert!(
        refused.is_empty(),
        "the page's policy refused: {refused:#?}"
    );
    let thrown = page.take_events("Runtime.exceptionThrown");
    assert!(thrown.is_empty(), "the page's script threw: {thrown:?}");

    // (g) A screenshot of the whole page, with the history of a few more
    // samples (more for the docs' picture).
    let height = page
        .eval("document.documentElement.scrollHeight")
        .as_u64()
        .expect("the page's height");
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false}),
    );
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
    // Inventory's 3, reports' 5 and checkout's 3 held calls.
    assert!(
        statuses
            .iter()
            .take(11)
            .all(|status| *status == StatusCode::OK)
    );
    assert!(statuses.contains(&StatusCode::SERVICE_UNAVAILABLE));
}

/// A stream that breaks is the browser's to reopen, after the `retry` the
/// server gave (`Dashboard::retry`): the page says it is reconnecting and
/// opens no stream of its own meanwhile, even once the stream has been
/// silent for longer than its bound for a silent open stream (three
/// intervals and a second, 1.6 s here), and is live again once the
/// browser has reopened it.
#[test]
fn a_broken_stream_is_reopened_after_the_server_s_retry() {
    let Some(chromium) = chromium() else {
        return;
    };
    let _one = one_browser();
    const RETRY: Duration = Duration::from_secs(12);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let registry = Registry::new();
    let _inventory = registry
        .bulkhead_policy(
            "inventory",
            SOURCE,
            &BulkheadConfig::builder().max_concurrent(INVENTORY_SLOTS),
        )
        .expect("a bulkhead");
    let breaker = Breaker {
        cut: watch::channel(0).0,
        refusing: Arc::new(AtomicBool::new(false)),
        silent: Arc::new(AtomicU64::new(0)),
        streams: Arc::new(AtomicU64::new(0)),
        silenced: Arc::new(AtomicU64::new(0)),
    };
    let page = Dashboard::new(&registry)
        .interval(Duration::from_millis(200))
        .retry(RETRY)
        .router()
        .layer(middleware::from_fn_with_state(breaker.clone(), breakable));
    let app: Router = Router::new().nest("/dashboard", page);
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("a free port");
    let base = format!("http://{}", listener.local_addr().expect("its address"));
    runtime.spawn(async move { axum::serve(listener, app).await });

    let browser = Browser::launch(&chromium, &format!("{base}/dashboard"));
    let mut page = browser.page();
    let mut status = || {
        page.eval(
            r#"(() => { const s = document.getElementById("status");
                        return s ? s.dataset.state : "loading"; })()"#,
        )
    };
    wait_until("the page is live", Duration::from_secs(60), || {
        (status() == "live").then_some(())
    });
    let streams = breaker.streams.load(Ordering::SeqCst);
    let cut = Instant::now();
    breaker.cut.send_modify(|generation| *generation += 1);
    wait_until(
        "the page says it is reconnecting",
        Duration::from_secs(10),
        || (status() == "reconnecting").then_some(()),
    );
    // Past the page's bound for a silent open stream, within the retry.
    std::thread::sleep(Duration::from_secs(5).saturating_sub(cut.elapsed()));
    assert!(cut.elapsed() < RETRY, "the test itself was too slow");
    assert_eq!(
        breaker.streams.load(Ordering::SeqCst),
        streams,
        "the page opened a stream of its own within {:?} of the cut, before the browser's \
         retry ({RETRY:?})",
        cut.elapsed()
    );
    assert_eq!(status(), "reconnecting");
    // The browser reopens it.
    wait_until(
        "the page is live again after the retry",
        RETRY + Duration::from_secs(30),
        || (status() == "live").then_some(()),
    );
    assert_eq!(breaker.streams.load(Ordering::SeqCst), streams + 1);
}
