//! The dashboard's JSON against the registry's snapshot, its rates on a
//! manual clock, and its routes.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use bulkhead_core::{CallError, ManualClock, Priority, priority};
use futures_util::StreamExt;
use serde_json::Value;
use tower::ServiceExt;

use super::sample::Sampler;
use super::{Dashboard, PAGE, dashboard};
use crate::{Pipeline, Registry};

fn registry(track_sizing: bool) -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .track_sizing(track_sizing)
        .build();
    (registry, clock)
}

fn sampler(registry: &Registry) -> Sampler {
    Sampler::new(
        registry,
        Arc::new(AtomicU64::new(0)),
        Duration::from_secs(1),
    )
}

fn refused(pipeline: &Pipeline) {
    let outcome: Result<(), CallError<std::io::Error>> = pipeline.execute(|| Ok(()));
    assert!(
        matches!(outcome, Err(CallError::Rejected(_))),
        "{outcome:?}"
    );
}

fn find<'a>(sample: &'a Value, list: &str, instance: &str) -> &'a Value {
    sample[list]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["instance"] == instance))
        .unwrap_or_else(|| panic!("no {instance} in {list}: {sample}"))
}

#[test]
fn the_values_are_the_snapshots() {
    let (registry, _clock) = registry(false);
    let _checkout = Pipeline::builder(&registry, "checkout")
        .bulkhead(|b| b.max_concurrent(3).max_wait(Duration::from_millis(100)))
        .build()
        .expect("a pipeline");
    let _reports = Pipeline::builder(&registry, "reports")
        .circuit_breaker(|c| c)
        .bulkhead(|b| b.max_concurrent(5))
        .build()
        .expect("a pipeline");
    let checkout = registry.bulkhead("checkout").expect("its bulkhead");
    let _held = [
        checkout.bulkhead().try_enter().expect("a free slot"),
        checkout.bulkhead().try_enter().expect("a free slot"),
    ];
    let tenants = registry
        .keyed_bulkhead_builder::<String>("tenants")
        .max_concurrent(10)
        .per_key(4)
        .build()
        .expect("a keyed bulkhead");
    let _tenant = [
        tenants.try_enter("acme").expect("a free slot"),
        tenants.try_enter("acme").expect("a free slot"),
        tenants.try_enter("globex").expect("a free slot"),
    ];

    let sample = sampler(&registry).sample();
    let snapshot = registry.snapshot();

    assert_eq!(sample["bulkheads"].as_array().map(Vec::len), Some(2));
    for b in snapshot.bulkheads() {
        let json = find(&sample, "bulkheads", &b.instance);
        assert_eq!(json["in_flight"], b.concurrent_calls);
        assert_eq!(json["limit"], b.max_concurrent);
        assert_eq!(json["waiting"], b.waiting_calls);
        assert_eq!(json["available"], b.available);
        assert_eq!(json["reserved"], b.reserved);
        assert_eq!(json["enabled"], b.enabled);
        assert_eq!(json["max_wait_ms"], b.max_wait.as_secs_f64() * 1000.0);
        assert_eq!(json["traffic"], Value::Null);
        assert_eq!(json["latency"], Value::Null);
        let classes = json["classes"].as_array().expect("the classes");
        assert_eq!(classes.len(), 4);
        for (json, class) in classes.iter().zip(&b.classes) {
            assert_eq!(json["class"], class.class.name());
            assert_eq!(json["held"], class.held);
            assert_eq!(json["threshold"], class.threshold);
            assert_eq!(json["shed_total"], class.shed);
        }
    }
    let checkout = find(&sample, "bulkheads", "checkout");
    assert_eq!(
        (checkout["in_flight"].as_u64(), checkout["limit"].as_u64()),
        (Some(2), Some(3))
    );

    let keyed = &snapshot.keyed_bulkheads()[0];
    let json = find(&sample, "keyed_bulkheads", "tenants");
    assert_eq!(json["in_flight"], keyed.in_flight);
    assert_eq!(json["limit"], keyed.max_concurrent);
    assert_eq!(json["keys"], keyed.keys);
    assert_eq!(json["top"][0]["key"], "acme");
    assert_eq!(json["top"][0]["in_flight"], 2);
    assert_eq!(json["top"][1]["key"], "globex");

    let breaker = &snapshot.circuit_breakers()[0];
    let json = find(&sample, "circuit_breakers", "reports");
    assert_eq!(json["state"], "closed");
    assert_eq!(json["not_permitted_total"], breaker.not_permitted_calls);
    assert_eq!(
        json["failure_rate_threshold"],
        f64::from(breaker.failure_rate_threshold)
    );
    assert_eq!(sample["fleets"], Value::Array(Vec::new()));
}

#[test]
fn refusals_per_second_come_from_events_without_sizing() {
    let (registry, clock) = registry(false);
    let pipeline = Pipeline::builder(&registry, "full")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .expect("a pipeline");
    let handle = registry.bulkhead("full").expect("its bulkhead");
    let mut sampler = sampler(&registry);
    let first = sampler.sample();
    // The first sample of a stream covers no interval.
    assert_eq!(
        find(&first, "bulkheads", "full")["rejected_per_sec"],
        Value::Null
    );

    let _held = handle.bulkhead().try_enter().expect("a free slot");
    for _ in 0..3 {
        refused(&pipeline);
    }
    clock.advance(Duration::from_secs(2));
    let second = sampler.sample();
    assert_eq!(find(&second, "bulkheads", "full")["rejected_per_sec"], 1.5);
    assert_eq!(
        second["seq"].as_u64(),
        first["seq"].as_u64().map(|seq| seq + 1)
    );

    // No time passed: no rate.
    refused(&pipeline);
    let third = sampler.sample();
    assert_eq!(
        find(&third, "bulkheads", "full")["rejected_per_sec"],
        Value::Null
    );
}

#[test]
fn refusals_per_second_come_from_the_counters_with_sizing() {
    let (registry, clock) = registry(true);
    let pipeline = Pipeline::builder(&registry, "full")
        .circuit_breaker(|c| c)
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .expect("a pipeline");
    let handle = registry.bulkhead("full").expect("its bulkhead");
    let _held = handle.bulkhead().try_enter().expect("a free slot");
    refused(&pipeline);
    let mut sampler = sampler(&registry);
    let first = sampler.sample();
    let bulkhead = find(&first, "bulkheads", "full");
    // The counter's first reading has nothing to be compared with.
    assert_eq!(bulkhead["rejected_per_sec"], Value::Null);
    assert_eq!(bulkhead["traffic"]["rejected"], 1);

    for _ in 0..4 {
        refused(&pipeline);
    }
    registry
        .circuit_breaker("full")
        .expect("its breaker")
        .force_open();
    refused(&pipeline);
    refused(&pipeline);
    clock.advance(Duration::from_secs(4));
    let second = sampler.sample();
    assert_eq!(find(&second, "bulkheads", "full")["rejected_per_sec"], 1.0);
    let breaker = find(&second, "circuit_breakers", "full");
    assert_eq!(breaker["state"], "forced_open");
    assert_eq!(breaker["not_permitted_total"], 2);
    assert_eq!(breaker["rejected_per_sec"], 0.5);
}

#[test]
fn seq_grows_across_clients() {
    let (registry, _clock) = registry(false);
    let seq = Arc::new(AtomicU64::new(0));
    let mut one = Sampler::new(&registry, Arc::clone(&seq), Duration::from_secs(1));
    let mut two = Sampler::new(&registry, seq, Duration::from_secs(1));
    let seqs: Vec<_> = [one.sample(), two.sample(), one.sample()]
        .iter()
        .map(|sample| sample["seq"].as_u64())
        .collect();
    assert_eq!(seqs, [Some(1), Some(2), Some(3)]);
}

#[test]
fn the_page_loads_nothing_from_elsewhere() {
    // The only URL is the SVG namespace, which is a name, not a load.
    let without_namespace = PAGE.replace("http://www.w3.org/2000/svg", "");
    for needle in [
        "http:", "https:", "//cdn", "src=", "href=", "@import", "url(", "fetch(",
    ] {
        assert!(
            !without_namespace.contains(needle),
            "the page has {needle:?}"
        );
    }
    assert!(PAGE.contains("new EventSource(base + \"/events\")"));
    assert!(PAGE.trim_end().ends_with("</html>"));
}

async fn get(router: axum::Router, uri: &str) -> axum::response::Response {
    router
        .oneshot(Request::get(uri).body(Body::empty()).expect("a request"))
        .await
        .expect("an infallible router")
}

#[tokio::test]
async fn the_routes_nest() {
    let (registry, _clock) = registry(false);
    let _pipeline = Pipeline::builder(&registry, "nested")
        .bulkhead(|b| b.max_concurrent(2))
        .build()
        .expect("a pipeline");
    let app = axum::Router::new().nest("/dashboard", dashboard(&registry));

    let page = get(app.clone(), "/dashboard").await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(
        page.headers()[header::CONTENT_TYPE],
        "text/html; charset=utf-8"
    );
    let body = axum::body::to_bytes(page.into_body(), usize::MAX)
        .await
        .expect("the page");
    assert_eq!(body, PAGE.as_bytes());

    let snapshot = get(app.clone(), "/dashboard/snapshot.json").await;
    assert_eq!(snapshot.status(), StatusCode::OK);
    let body = axum::body::to_bytes(snapshot.into_body(), usize::MAX)
        .await
        .expect("the snapshot");
    let json: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(find(&json, "bulkheads", "nested")["limit"], 2);
}

/// The SHA-256 of the page's script, base64: what its
/// `Content-Security-Policy` must name (`script-src`).
fn script_hash() -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(super::SCRIPT))
}

/// The page holds its script exactly as the hash is taken of it.
#[test]
fn the_page_holds_the_script_its_policy_names() {
    assert!(super::PAGE.contains(&format!("<script>{}</script>", super::SCRIPT)));
    assert!(
        super::CONTENT_SECURITY_POLICY.contains(&format!("'sha256-{}'", script_hash())),
        "page.js changed: put 'sha256-{}' in CONTENT_SECURITY_POLICY's script-src",
        script_hash()
    );
}

/// The page's `Content-Security-Policy` lets its inline script and styles
/// run and its stream connect on its own origin, and forbids every other
/// load (extras/tests/dashboard_browser.rs checks in a browser that the
/// page works under it and loads nothing elsewhere).
#[tokio::test]
async fn the_page_forbids_the_browser_every_load_but_its_stream() {
    let (registry, _clock) = registry(false);
    let app = axum::Router::new().nest("/dashboard", dashboard(&registry));
    let page = get(app, "/dashboard").await;
    assert_eq!(page.status(), StatusCode::OK);
    let policy = page
        .headers()
        .get(header::CONTENT_SECURITY_POLICY)
        .expect("a Content-Security-Policy")
        .to_str()
        .expect("ASCII");
    let directives: Vec<&str> = policy.split(';').map(str::trim).collect();
    assert_eq!(
        directives,
        [
            "default-src 'none'",
            &*format!("script-src 'sha256-{}'", script_hash()),
            "style-src 'unsafe-inline'",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
        ],
        "{policy}"
    );
}

#[tokio::test]
async fn the_stream_sends_a_sample_each_interval_and_the_retry_first() {
    let (registry, _clock) = registry(false);
    let _pipeline = Pipeline::builder(&registry, "streamed")
        .bulkhead(|b| b.max_concurrent(2))
        .build()
        .expect("a pipeline");
    let app = Dashboard::new(&registry)
        .interval(Duration::from_millis(20))
        .retry(Duration::from_millis(1500))
        .router();
    let events = get(app, "/events").await;
    assert_eq!(events.status(), StatusCode::OK);
    assert_eq!(events.headers()[header::CONTENT_TYPE], "text/event-stream");
    assert_eq!(events.headers()["x-accel-buffering"], "no");
    let mut body = events.into_body().into_data_stream();
    let mut next = async || {
        let chunk = body.next().await.expect("an event").expect("its bytes");
        String::from_utf8(chunk.to_vec()).expect("UTF-8")
    };
    let first = next().await;
    assert!(first.starts_with("event: snapshot\n"), "{first}");
    assert!(first.contains("\nid: 1\n"), "{first}");
    assert!(first.contains("\nretry: 1500\n"), "{first}");
    let data = first
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .expect("a data line");
    let json: Value = serde_json::from_str(data).expect("JSON");
    assert_eq!(json["interval_ms"], 20.0);
    assert_eq!(find(&json, "bulkheads", "streamed")["limit"], 2);
    let second = next().await;
    assert!(second.contains("\nid: 2\n"), "{second}");
    assert!(!second.contains("retry:"), "{second}");
}

#[test]
fn classes_shed_per_second() {
    let (registry, clock) = registry(false);
    let _pipeline = Pipeline::builder(&registry, "classy")
        .bulkhead(|b| b.max_concurrent(4))
        .build()
        .expect("a pipeline");
    let handle = registry.bulkhead("classy").expect("its bulkhead");
    let mut sampler = sampler(&registry);
    let first = sampler.sample();
    let sheddable = &find(&first, "bulkheads", "classy")["classes"][0];
    assert_eq!(sheddable["class"], "sheddable");
    assert_eq!(sheddable["shed_per_sec"], Value::Null);

    let _held = [
        handle.bulkhead().try_enter().expect("a free slot"),
        handle.bulkhead().try_enter().expect("a free slot"),
    ];
    for _ in 0..3 {
        let shed = priority::with(Priority::Sheddable, || handle.bulkhead().try_enter());
        assert!(shed.is_err(), "a sheddable call past its share");
    }
    clock.advance(Duration::from_secs(3));
    let second = sampler.sample();
    let bulkhead = find(&second, "bulkheads", "classy");
    let snapshot = registry.snapshot();
    let classes = &snapshot.bulkheads()[0].classes;
    assert_eq!(bulkhead["classes"][0]["shed_total"], classes[0].shed);
    assert_eq!(bulkhead["classes"][0]["shed_total"], 3);
    assert_eq!(bulkhead["classes"][0]["shed_per_sec"], 1.0);
    assert_eq!(bulkhead["classes"][1]["class"], "normal");
    assert_eq!(bulkhead["classes"][1]["held"], 2);
    assert_eq!(bulkhead["classes"][1]["shed_per_sec"], 0.0);
    // Shed calls are refusals of the bulkhead too.
    assert_eq!(bulkhead["rejected_per_sec"], 1.0);
}

#[test]
fn keyed_and_rate_limiter_refusals_per_second_come_from_events() {
    let (registry, clock) = registry(false);
    let tenants = registry
        .keyed_bulkhead_builder::<String>("tenants")
        .max_concurrent(10)
        .per_key(1)
        .build()
        .expect("a keyed bulkhead");
    let limited = Pipeline::builder(&registry, "limited")
        .rate_limiter(|r| {
            r.limit_for_period(1)
                .refresh_period(Duration::from_secs(3600))
        })
        .build()
        .expect("a pipeline");
    let mut sampler = sampler(&registry);
    sampler.sample();

    let _held = tenants.try_enter("acme").expect("a free slot");
    for _ in 0..4 {
        assert!(tenants.try_enter("acme").is_err());
    }
    let admitted: Result<(), CallError<std::io::Error>> = limited.execute(|| Ok(()));
    assert!(admitted.is_ok());
    refused(&limited);
    refused(&limited);
    clock.advance(Duration::from_secs(2));
    let sample = sampler.sample();
    assert_eq!(
        find(&sample, "keyed_bulkheads", "tenants")["rejected_per_sec"],
        2.0
    );
    let limiter = find(&sample, "rate_limiters", "limited");
    assert_eq!(limiter["rejected_per_sec"], 1.0);
    let snapshot = registry.snapshot();
    let r = &snapshot.rate_limiters()[0];
    assert_eq!(limiter["available_permits"], r.available_permits);
    assert_eq!(limiter["limit_for_period"], r.limit_for_period);
    assert_eq!(limiter["waiting"], r.waiting_calls);
}

/// The latency of the calls since the previous sample, from the registry's
/// histograms, which the dashboard's router turns on.
#[test]
fn latency_is_the_quantiles_of_the_calls_since_the_previous_sample() {
    let (registry, clock) = registry(false);
    let pipeline = Pipeline::builder(&registry, "search")
        .bulkhead(|b| b.max_concurrent(4))
        .build()
        .expect("a pipeline");
    let _router = dashboard(&registry);
    assert!(registry.telemetry().recording());
    let mut sampler = sampler(&registry);
    let call = |took: Duration| {
        let result: Result<(), CallError<()>> = pipeline.execute(|| {
            clock.advance(took);
            Ok(())
        });
        assert_eq!(result, Ok(()));
    };
    call(Duration::from_millis(50));
    // The first sample of a stream has no interval.
    assert_eq!(
        find(&sampler.sample(), "bulkheads", "search")["latency"],
        Value::Null
    );

    // 99 calls of 2 ms and one of 40 ms, in 1 s (with the calls' own time).
    for _ in 0..99 {
        call(Duration::from_millis(2));
    }
    call(Duration::from_millis(40));
    clock.advance(Duration::from_secs(1) - Duration::from_millis(238));
    let sample = sampler.sample();
    let latency = &find(&sample, "bulkheads", "search")["latency"];
    let p50 = latency["p50_ms"].as_f64().expect("a median");
    let p99 = latency["p99_ms"].as_f64().expect("a 99th percentile");
    // Within a bucket (a factor of 1.5) of the calls' times.
    assert!((2.0 / 1.5..=2.0 * 1.5).contains(&p50), "{latency}");
    assert!((2.0 / 1.5..=40.0 * 1.5).contains(&p99), "{latency}");
    assert_eq!(latency["calls_per_sec"], 100.0);

    // No call since: no latency.
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        find(&sampler.sample(), "bulkheads", "search")["latency"],
        Value::Null
    );
}
