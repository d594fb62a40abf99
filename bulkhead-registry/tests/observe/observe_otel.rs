//! `observe::export_opentelemetry`: observable instruments read at each
//! collection of an OpenTelemetry SDK (here the in-memory exporter's),
//! named as the module docs' table says.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{CallError, ManualClock, Rejection};
use bulkhead_registry::observe::{ObserverHandle, export_opentelemetry};
use bulkhead_registry::{Pipeline, Registry, RegistryBuilder, RegistryError};
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

/// A registry on a manual clock, exported to an SDK of its own whose
/// collections the test asks for.
struct Exported {
    registry: Registry,
    clock: ManualClock,
    observer: ObserverHandle,
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

/// What one collection exported: each series as `name{attr=value,...}`
/// (attributes sorted) to its value (a histogram's count), each
/// histogram's sum, and each instrument's name to its type and unit
/// (`"Sum<u64> monotonic {call}"`).
struct Collected {
    values: BTreeMap<String, f64>,
    sums: BTreeMap<String, f64>,
    types: BTreeMap<String, String>,
}

impl std::ops::Index<&str> for Collected {
    type Output = f64;

    fn index(&self, series: &str) -> &f64 {
        self.values
            .get(series)
            .unwrap_or_else(|| panic!("no series {series} in {:#?}", self.values))
    }
}

impl Exported {
    fn new(track_sizing: bool) -> Self {
        Exported::with(|builder| builder.track_sizing(track_sizing))
    }

    fn with(configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> Self {
        let clock = ManualClock::new();
        let registry = configure(Registry::builder().clock(clock.clone())).build();
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let observer = export_opentelemetry(&registry, &provider.meter("bulkhead"))
            .expect("the exporter thread starts");
        Exported {
            registry,
            clock,
            observer,
            provider,
            exporter,
        }
    }

    /// Waits until the exporter has handled `n` events in all.
    fn handled(&self, n: u64) {
        eventually(|| self.observer.events() >= n);
    }

    /// Collects (as the SDK's reader would at its interval) and reads what
    /// was exported.
    fn collect(&self) -> Collected {
        self.provider.force_flush().expect("collected and exported");
        let exported = self.exporter.get_finished_metrics().expect("exported");
        self.exporter.reset();
        let last = exported.last().expect("one export");
        read(last)
    }
}

fn read(resource: &ResourceMetrics) -> Collected {
    let mut values = BTreeMap::new();
    let mut sums = BTreeMap::new();
    let mut types = BTreeMap::new();
    for metric in resource.scope_metrics().flat_map(|scope| scope.metrics()) {
        let mut points: Vec<(Vec<String>, f64)> = Vec::new();
        let mut histogram_sums: Vec<(Vec<String>, f64)> = Vec::new();
        macro_rules! points {
            ($data:expr, $ty:literal) => {{
                let kind = match $data {
                    MetricData::Sum(sum) => {
                        for point in sum.data_points() {
                            let attrs = attributes(point.attributes());
                            #[allow(clippy::cast_precision_loss)]
                            points.push((attrs, point.value() as f64));
                        }
                        let monotonic = if sum.is_monotonic() {
                            "monotonic"
                        } else {
                            "up_down"
                        };
                        format!("Sum<{}> {monotonic}", $ty)
                    }
                    MetricData::Gauge(gauge) => {
                        for point in gauge.data_points() {
                            let attrs = attributes(point.attributes());
                            #[allow(clippy::cast_precision_loss)]
                            points.push((attrs, point.value() as f64));
                        }
                        format!("Gauge<{}>", $ty)
                    }
                    MetricData::Histogram(histogram) => {
                        for point in histogram.data_points() {
                            let attrs = attributes(point.attributes());
                            #[allow(clippy::cast_precision_loss)]
                            points.push((attrs.clone(), point.count() as f64));
                            #[allow(clippy::cast_precision_loss)]
                            histogram_sums.push((attrs, point.sum() as f64));
                        }
                        format!("Histogram<{}>", $ty)
                    }
                    other => panic!("unexpected data for {}: {other:?}", metric.name()),
                };
                kind
            }};
        }
        let kind = match metric.data() {
            AggregatedMetrics::U64(data) => points!(data, "u64"),
            AggregatedMetrics::I64(data) => points!(data, "i64"),
            AggregatedMetrics::F64(data) => points!(data, "f64"),
        };
        types.insert(
            metric.name().to_owned(),
            format!("{kind} {}", metric.unit()),
        );
        let series = |mut attrs: Vec<String>| {
            attrs.sort();
            format!("{}{{{}}}", metric.name(), attrs.join(","))
        };
        for (attrs, value) in points {
            values.insert(series(attrs), value);
        }
        for (attrs, sum) in histogram_sums {
            sums.insert(series(attrs), sum);
        }
    }
    Collected {
        values,
        sums,
        types,
    }
}

/// A point's attributes as `key=value`.
fn attributes<'a>(attributes: impl Iterator<Item = &'a KeyValue>) -> Vec<String> {
    attributes
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect()
}

/// Polls `done` until it holds; fails after 10 s.
fn eventually(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting");
        thread::yield_now();
    }
}

fn call(pipeline: &Pipeline) -> Result<(), CallError<std::io::Error>> {
    pipeline.execute(|| Ok(()))
}

fn poll<F: Future>(future: &mut Pin<Box<F>>) -> Poll<F::Output> {
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_full_bulkhead_counts_rejections_and_each_collection_reads_a_new_snapshot()
-> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "thumbnails")
        .bulkhead(|b| b.max_concurrent(2))
        .build()?;
    let handle = exported.registry.bulkhead("thumbnails")?;

    let held = [handle.bulkhead().try_enter(), handle.bulkhead().try_enter()];
    for _ in 0..3 {
        assert!(matches!(
            call(&pipeline),
            Err(CallError::Rejected(Rejection::BulkheadFull(_)))
        ));
    }
    exported.handled(3);
    let otel = exported.collect();
    let id = "resilience.instance=thumbnails";
    assert_eq!(otel[&format!("resilience.bulkhead.in_flight{{{id}}}")], 2.0);
    assert_eq!(otel[&format!("resilience.bulkhead.limit{{{id}}}")], 2.0);
    assert_eq!(otel[&format!("resilience.bulkhead.waiting{{{id}}}")], 0.0);
    assert_eq!(
        otel[&format!("resilience.bulkhead.rejections{{{id}}}")],
        3.0
    );
    assert_eq!(
        otel[&format!("resilience.bulkhead.limit.changes{{{id}}}")],
        0.0,
        "registered at 0"
    );
    assert_eq!(
        otel[&format!("resilience.bulkhead.priority.in_flight{{{id},resilience.priority=normal}}")],
        2.0
    );
    assert!(
        !otel
            .values
            .contains_key(&format!("resilience.bulkhead.admitted{{{id}}}")),
        "sizing counters need track_sizing"
    );
    assert_eq!(
        otel.types["resilience.bulkhead.rejections"],
        "Sum<u64> monotonic {call}"
    );
    assert_eq!(
        otel.types["resilience.bulkhead.in_flight"],
        "Sum<i64> up_down {call}"
    );

    // The next collection reads a new snapshot; counts are cumulative.
    drop(held);
    handle.set_max_concurrent(5).expect("a valid limit");
    exported.handled(4);
    let otel = exported.collect();
    assert_eq!(otel[&format!("resilience.bulkhead.in_flight{{{id}}}")], 0.0);
    assert_eq!(otel[&format!("resilience.bulkhead.limit{{{id}}}")], 5.0);
    assert_eq!(
        otel[&format!("resilience.bulkhead.rejections{{{id}}}")],
        3.0
    );
    assert_eq!(
        otel[&format!("resilience.bulkhead.limit.changes{{{id}}}")],
        1.0
    );
    Ok(())
}

#[test]
fn refused_retried_and_timed_out_calls_through_a_pipeline() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "inventory")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .timeout(|t| t.duration(Duration::from_millis(500)))
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = exported.registry.bulkhead("inventory")?;

    // Refused three times (a slot held elsewhere), retried twice: exhausted.
    let held = handle.bulkhead().try_enter();
    assert!(matches!(
        call(&pipeline),
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    drop(held);
    // Failed once by its own error, then succeeded.
    let mut failures = 0;
    let flaky = pipeline.execute(|| {
        failures += 1;
        if failures == 1 {
            Err(std::io::Error::other("flaky"))
        } else {
            Ok(())
        }
    });
    assert!(flaky.is_ok());
    // Timed out at each of its three attempts.
    let mut slow =
        Box::pin(pipeline.execute_async(std::future::pending::<Result<(), std::io::Error>>));
    for _ in 0..3 {
        assert!(poll(&mut slow).is_pending());
        exported.clock.advance(Duration::from_millis(500));
    }
    assert!(matches!(
        poll(&mut slow),
        Poll::Ready(Err(CallError::Rejected(Rejection::Timeout(_))))
    ));

    // 3 rejections, 2 retries and an exhausted call; a retry and a success;
    // 3 timeouts, 2 retries and an exhausted call.
    exported.handled(14);
    let otel = exported.collect();
    let id = "resilience.instance=inventory";
    assert_eq!(
        otel[&format!("resilience.bulkhead.rejections{{{id}}}")],
        3.0
    );
    assert_eq!(
        otel[&format!("resilience.retry.retries{{{id},resilience.outcome=bulkhead_full}}")],
        2.0
    );
    assert_eq!(
        otel[&format!("resilience.retry.retries{{{id},resilience.outcome=error}}")],
        1.0
    );
    assert_eq!(
        otel[&format!("resilience.retry.retries{{{id},resilience.outcome=timeout}}")],
        2.0
    );
    assert_eq!(
        otel[&format!("resilience.retry.calls{{{id},resilience.retry.result=exhausted}}")],
        2.0
    );
    assert_eq!(
        otel[&format!(
            "resilience.retry.calls{{{id},resilience.retry.result=succeeded_after_retry}}"
        )],
        1.0
    );
    assert_eq!(otel[&format!("resilience.timeout.timeouts{{{id}}}")], 3.0);
    assert_eq!(otel[&format!("resilience.timeout.overruns{{{id}}}")], 0.0);
    assert_eq!(otel[&format!("resilience.bulkhead.in_flight{{{id}}}")], 0.0);
    assert_eq!(
        otel.types["resilience.retry.retries"],
        "Sum<u64> monotonic {retry}"
    );
    Ok(())
}

#[test]
fn circuit_breaker_state_transitions_and_rejections() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "payments")
        .circuit_breaker(|c| c)
        .build()?;
    let breaker = exported.registry.circuit_breaker("payments")?;
    let id = "resilience.instance=payments";
    let state = |otel: &Collected, state: &str| {
        otel[&format!(
            "resilience.circuit_breaker.state{{resilience.circuit_breaker.state={state},{id}}}"
        )]
    };

    let otel = exported.collect();
    assert_eq!((state(&otel, "closed"), state(&otel, "open")), (1.0, 0.0));
    assert_eq!(
        otel[&format!("resilience.circuit_breaker.rejections{{{id}}}")],
        0.0
    );

    breaker.force_open();
    for _ in 0..2 {
        assert!(matches!(
            call(&pipeline),
            Err(CallError::Rejected(Rejection::CircuitOpen(_)))
        ));
    }
    exported.handled(3);
    let otel = exported.collect();
    assert_eq!(
        otel[&format!(
            "resilience.circuit_breaker.transitions{{resilience.circuit_breaker.previous_state=closed,resilience.circuit_breaker.state=forced_open,{id}}}"
        )],
        1.0
    );
    assert_eq!(
        (state(&otel, "forced_open"), state(&otel, "closed")),
        (1.0, 0.0)
    );
    assert_eq!(
        otel[&format!("resilience.circuit_breaker.rejections{{{id}}}")],
        2.0,
        "exact, from the snapshot"
    );
    Ok(())
}

#[test]
fn a_rate_limiters_refusals_are_counted_and_its_permits_sampled() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let limited = Pipeline::builder(&exported.registry, "mail")
        .rate_limiter(|r| {
            r.limit_for_period(2)
                .refresh_period(Duration::from_secs(3600))
                .max_wait(Duration::ZERO)
        })
        .build()?;
    let outcomes: Vec<_> = (0..3).map(|_| call(&limited).is_ok()).collect();
    assert_eq!(outcomes, [true, true, false]);
    exported.handled(1);
    let otel = exported.collect();
    let id = "resilience.instance=mail";
    assert_eq!(
        otel[&format!("resilience.rate_limiter.rejections{{{id}}}")],
        1.0
    );
    assert_eq!(
        otel[&format!("resilience.rate_limiter.available_permits{{{id}}}")],
        0.0
    );
    assert_eq!(
        otel[&format!("resilience.rate_limiter.waiting{{{id}}}")],
        0.0
    );
    Ok(())
}

#[test]
fn with_sizing_the_hold_time_of_admitted_calls_is_exported_in_seconds() -> Result<(), RegistryError>
{
    let exported = Exported::new(true);
    let pipeline = Pipeline::builder(&exported.registry, "renderer")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    for _ in 0..2 {
        let outcome = pipeline.execute(|| {
            exported.clock.advance(Duration::from_millis(5));
            Ok::<_, std::io::Error>(())
        });
        assert!(outcome.is_ok());
    }
    let otel = exported.collect();
    let id = "resilience.instance=renderer";
    assert_eq!(otel[&format!("resilience.bulkhead.admitted{{{id}}}")], 2.0);
    assert_eq!(otel[&format!("resilience.bulkhead.completed{{{id}}}")], 2.0);
    assert_eq!(otel[&format!("resilience.bulkhead.abandoned{{{id}}}")], 0.0);
    let hold = otel[&format!("resilience.bulkhead.hold_time{{{id}}}")];
    assert!((hold - 0.010).abs() < 1e-9, "{hold}");
    assert_eq!(
        otel.types["resilience.bulkhead.hold_time"],
        "Sum<f64> monotonic s"
    );
    Ok(())
}

#[test]
fn a_keyed_bulkhead_reports_its_busiest_keys_and_the_rest_together()
-> Result<(), Box<dyn std::error::Error>> {
    let exported = Exported::with(|builder| {
        builder
            .snapshot_top_keys(2)
            .config_toml("[bulkhead.instances.api]\nmax_concurrent = 100\nper_key = 10")
            .expect("valid TOML")
    });
    let api = exported.registry.keyed_bulkhead::<u32>("api")?;
    let mut permits = Vec::new();
    for key in 0..20u32 {
        let calls = match key {
            7 => 4,
            9 => 3,
            _ => 1,
        };
        for _ in 0..calls {
            permits.push(api.try_enter(&key)?);
        }
    }
    let otel = exported.collect();
    let keys = |otel: &Collected| -> BTreeMap<String, f64> {
        otel.values
            .iter()
            .filter_map(|(name, value)| {
                let attrs = name.strip_prefix("resilience.keyed_bulkhead.key.in_flight{")?;
                Some((attrs.trim_end_matches('}').to_owned(), *value))
            })
            .collect()
    };
    let key = |k: &str| format!("resilience.instance=api,resilience.keyed_bulkhead.key={k}");
    assert_eq!(
        keys(&otel),
        BTreeMap::from([(key("7"), 4.0), (key("9"), 3.0), (key("_other"), 18.0)])
    );
    assert_eq!(
        otel["resilience.keyed_bulkhead.in_flight{resilience.instance=api}"],
        25.0
    );
    assert_eq!(
        otel["resilience.keyed_bulkhead.keys{resilience.instance=api}"],
        20.0
    );
    assert_eq!(
        otel["resilience.keyed_bulkhead.rejections{resilience.instance=api,resilience.keyed_bulkhead.reason=key_full}"],
        0.0
    );

    // Key 7 goes quiet: it is no longer reported.
    permits.clear();
    permits.push(api.try_enter(&3)?);
    permits.push(api.try_enter(&3)?);
    let otel = exported.collect();
    assert_eq!(
        keys(&otel),
        BTreeMap::from([(key("3"), 2.0), (key("_other"), 0.0)])
    );
    drop(permits);
    Ok(())
}

#[test]
fn once_the_exporter_stops_its_counters_report_nothing() -> Result<(), RegistryError> {
    let Exported {
        registry,
        observer,
        provider,
        exporter,
        ..
    } = Exported::new(false);
    let pipeline = Pipeline::builder(&registry, "short-lived")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("short-lived")?;
    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    eventually(|| observer.events() == 1);
    drop(observer);
    assert!(call(&pipeline).is_err(), "callers carry on");
    drop(held);

    provider.force_flush().expect("collected");
    // Nothing observed: the SDK exports nothing at all, or no such series.
    let exported = exporter.get_finished_metrics().expect("exported");
    let series: Vec<String> = exported
        .iter()
        .flat_map(|resource| read(resource).values.into_keys())
        .filter(|name| name.starts_with("resilience.bulkhead."))
        .collect();
    assert!(series.is_empty(), "{series:?}");
    Ok(())
}

#[test]
fn hedges_fallbacks_chaos_and_the_retry_budget() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let registry = &exported.registry;

    // A retry whose budget has no room: the failed call ends, counted.
    let budgeted = Pipeline::builder(registry, "budgeted")
        .retry(|r| r.budget_ratio(0.0).budget_min_per_second(0))
        .build()?;
    assert!(
        budgeted
            .execute(|| Err::<(), _>(std::io::Error::other("down")))
            .is_err()
    );

    // A hedge that starts 10 ms in, and wins.
    let hedged = Pipeline::builder(registry, "hedged")
        .hedge(|h| h.delay(Duration::from_millis(10)))
        .build()?;
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let mut hedged_call = Box::pin(hedged.execute_async(|| {
        let first = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        async move {
            if first {
                std::future::pending::<()>().await;
            }
            Ok::<_, std::io::Error>(())
        }
    }));
    assert!(poll(&mut hedged_call).is_pending());
    exported.clock.advance(Duration::from_millis(10));
    assert!(matches!(poll(&mut hedged_call), Poll::Ready(Ok(()))));

    // A fallback that answers a full bulkhead.
    let mut declarations = registry.declare();
    let policies = declarations.policies(
        &bulkhead_registry::PolicySpecs::new("fallen-back")
            .fallback(None, bulkhead_core::FallbackConfig::builder()),
    )?;
    declarations.commit();
    let full: Result<(), CallError<()>> =
        Err(Rejection::from(bulkhead_core::BulkheadFull::new("fallen-back")).into());
    assert!(policies.fallback().expect("declared").answers(&full));

    // A chaos policy that injects a fault into every call.
    let chaotic = Pipeline::builder(registry, "chaotic")
        .chaos(|c| c.enabled(true).fault_rate(1.0).seed(7))
        .build()?;
    for _ in 0..2 {
        assert!(matches!(
            call(&chaotic),
            Err(CallError::Rejected(Rejection::Injected(_)))
        ));
    }

    // Exhausted budget, hedge started and won, fallback used, two faults.
    exported.handled(6);
    let otel = exported.collect();
    assert_eq!(
        otel["resilience.retry.calls{resilience.instance=budgeted,resilience.retry.result=budget_exhausted}"],
        1.0
    );
    assert_eq!(
        otel["resilience.retry.budget.available{resilience.instance=budgeted}"],
        0.0
    );
    assert_eq!(
        otel["resilience.hedge.hedges{resilience.hedge.result=started,resilience.instance=hedged}"],
        1.0
    );
    assert_eq!(
        otel["resilience.hedge.hedges{resilience.hedge.result=won,resilience.instance=hedged}"],
        1.0
    );
    assert_eq!(
        otel["resilience.fallback.calls{resilience.instance=fallen-back,resilience.outcome=bulkhead_full}"],
        1.0
    );
    assert_eq!(
        otel["resilience.chaos.injections{resilience.chaos.injection=fault,resilience.instance=chaotic}"],
        2.0
    );
    assert_eq!(
        otel["resilience.chaos.enabled{resilience.instance=chaotic}"],
        1.0
    );
    assert_eq!(
        otel["resilience.chaos.injected_latency{resilience.instance=chaotic}"],
        0.0
    );
    assert_eq!(otel.types["resilience.chaos.enabled"], "Gauge<f64> 1");
    Ok(())
}

#[test]
fn call_and_attempt_durations_and_slot_waits_are_histograms_in_seconds() -> Result<(), RegistryError>
{
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "render")
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    // Two calls of 5 ms each.
    for _ in 0..2 {
        let outcome = pipeline.execute(|| {
            exported.clock.advance(Duration::from_millis(5));
            Ok::<_, std::io::Error>(())
        });
        assert!(outcome.is_ok());
    }
    // A call refused at both attempts: its slot is held elsewhere.
    let handle = exported.registry.bulkhead("render")?;
    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    drop(held);

    let otel = exported.collect();
    let id = "resilience.instance=render";
    let calls = format!("resilience.call.duration{{{id},resilience.outcome=success}}");
    assert_eq!(otel[&calls], 2.0);
    assert!(
        (otel.sums[&calls] - 0.010).abs() < 1e-9,
        "{}",
        otel.sums[&calls]
    );
    assert_eq!(
        otel[&format!("resilience.call.duration{{{id},resilience.outcome=bulkhead_full}}")],
        1.0
    );
    assert_eq!(
        otel[&format!("resilience.attempt.duration{{{id},resilience.outcome=success}}")],
        2.0
    );
    assert_eq!(
        otel[&format!("resilience.attempt.duration{{{id},resilience.outcome=bulkhead_full}}")],
        2.0
    );
    assert_eq!(
        otel[&format!("resilience.bulkhead.slot.wait{{{id},resilience.outcome=admitted}}")],
        2.0
    );
    assert_eq!(
        otel[&format!("resilience.bulkhead.slot.wait{{{id},resilience.outcome=rejected}}")],
        2.0
    );
    assert_eq!(otel.types["resilience.call.duration"], "Histogram<f64> s");

    // The next collection adds only what happened since.
    let outcome = pipeline.execute(|| {
        exported.clock.advance(Duration::from_millis(20));
        Ok::<_, std::io::Error>(())
    });
    assert!(outcome.is_ok());
    let otel = exported.collect();
    assert_eq!(otel[&calls], 3.0, "cumulative");
    assert!(
        (otel.sums[&calls] - 0.030).abs() < 1e-9,
        "{}",
        otel.sums[&calls]
    );
    Ok(())
}

#[test]
fn each_attempt_is_a_span_that_says_why_it_was_refused() -> Result<(), RegistryError> {
    use opentelemetry::trace::{Status, TracerProvider as _};
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let spans =
        bulkhead_registry::observe::export_attempt_spans(&registry, provider.tracer("test"));
    let pipeline = Pipeline::builder(&registry, "orders")
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;

    // Refused twice (its slot held elsewhere), then a 5 ms success.
    let handle = registry.bulkhead("orders")?;
    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    drop(held);
    let outcome = pipeline.execute(|| {
        clock.advance(Duration::from_millis(5));
        Ok::<_, std::io::Error>(())
    });
    assert!(outcome.is_ok());

    let finished = exporter.get_finished_spans().expect("exported");
    let described: Vec<(String, Vec<String>, Status)> = finished
        .iter()
        .map(|span| {
            let mut attributes = attributes(span.attributes.iter());
            attributes.sort();
            (span.name.to_string(), attributes, span.status.clone())
        })
        .collect();
    let refused = |number: u32| {
        (
            "resilience.attempt".to_owned(),
            vec![
                "error.type=bulkhead_full".to_owned(),
                format!("resilience.attempt.number={number}"),
                "resilience.instance=orders".to_owned(),
                "resilience.outcome=bulkhead_full".to_owned(),
                "resilience.rejection.kind=bulkhead_full".to_owned(),
            ],
            Status::error("bulkhead_full"),
        )
    };
    let succeeded = (
        "resilience.attempt".to_owned(),
        vec![
            "resilience.attempt.number=1".to_owned(),
            "resilience.instance=orders".to_owned(),
            "resilience.outcome=success".to_owned(),
        ],
        Status::Unset,
    );
    assert_eq!(described, [refused(1), refused(2), succeeded]);
    let took = finished[2]
        .end_time
        .duration_since(finished[2].start_time)
        .expect("ends after it starts");
    assert_eq!(
        took,
        Duration::from_millis(5),
        "timed on the registry's clock"
    );

    // Once the handle is dropped, attempts make no span.
    drop(spans);
    exporter.reset();
    assert!(call(&pipeline).is_ok());
    assert!(exporter.get_finished_spans().expect("read").is_empty());
    Ok(())
}
