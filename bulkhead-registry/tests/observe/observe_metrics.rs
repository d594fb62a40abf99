//! `observe::export_metrics`: gauges sampled on the registry's clock,
//! counters from the policies' events, as the module docs' table names them.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{CallError, ManualClock, Rejection};
use bulkhead_registry::observe::{ObserverHandle, export_metrics_to};
use bulkhead_registry::{Pipeline, Registry, RegistryBuilder, RegistryError};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

const INTERVAL: Duration = Duration::from_secs(10);

/// A registry on a manual clock, exported to a recorder of its own.
struct Exported {
    registry: Registry,
    clock: ManualClock,
    observer: ObserverHandle,
    snapshotter: Snapshotter,
}

impl Exported {
    fn new(track_sizing: bool) -> Self {
        Exported::with(|builder| builder.track_sizing(track_sizing))
    }

    /// A registry `configure` makes of a builder on a manual clock.
    fn with(configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> Self {
        let clock = ManualClock::new();
        let registry = configure(Registry::builder().clock(clock.clone())).build();
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let observer =
            export_metrics_to(&registry, INTERVAL, recorder).expect("the exporter thread starts");
        // The exporter samples once as it starts: wait for that sample, so
        // that every later one is the one a test's `sample()` asked for.
        eventually(|| observer.samples() >= 1);
        Exported {
            registry,
            clock,
            observer,
            snapshotter,
        }
    }

    /// Moves the clock to the next sample and waits until it was taken.
    fn sample(&self) {
        let taken = self.observer.samples();
        self.clock.advance(INTERVAL);
        eventually(|| self.observer.samples() > taken);
    }

    /// Waits until the exporter has handled `n` events in all.
    fn handled(&self, n: u64) {
        eventually(|| self.observer.events() >= n);
    }

    /// Every metric, as `name{label=value,...}` (labels sorted) to its
    /// value. Reading resets what the debugging recorder holds: counters
    /// read as what was added since the last reading.
    fn read(&self) -> BTreeMap<String, f64> {
        self.snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let name = series(&key);
                #[allow(clippy::cast_precision_loss)]
                let value = match value {
                    DebugValue::Counter(n) => n as f64,
                    DebugValue::Gauge(g) => g.into_inner(),
                    // A histogram reads as the sum of the samples recorded
                    // since the last reading (see `histogram_samples`).
                    DebugValue::Histogram(samples) => samples.iter().map(|s| s.into_inner()).sum(),
                };
                (name, value)
            })
            .collect()
    }
}

/// A series as `name{label=value,...}`, labels sorted.
fn series(key: &metrics_util::CompositeKey) -> String {
    let mut labels: Vec<String> = key
        .key()
        .labels()
        .map(|label| format!("{}={}", label.key(), label.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.key().name(), labels.join(","))
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

#[test]
fn a_full_bulkhead_counts_rejections_and_samples_in_flight() -> Result<(), RegistryError> {
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
    exported.sample();
    let metrics = exported.read();
    assert_eq!(metrics["bulkhead_in_flight{instance=thumbnails}"], 2.0);
    assert_eq!(metrics["bulkhead_max_concurrent{instance=thumbnails}"], 2.0);
    assert_eq!(metrics["bulkhead_waiting{instance=thumbnails}"], 0.0);
    assert_eq!(
        metrics["bulkhead_rejections_total{instance=thumbnails}"],
        3.0
    );
    assert_eq!(
        metrics["bulkhead_limit_changes_total{instance=thumbnails}"],
        0.0
    );
    assert!(
        !metrics.contains_key("bulkhead_admitted_total{instance=thumbnails}"),
        "sizing counters need track_sizing"
    );

    drop(held);
    handle.set_max_concurrent(5).expect("a valid limit");
    exported.handled(4);
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_limit_changes_total{instance=thumbnails}"],
        1.0
    );
    assert_eq!(metrics["bulkhead_max_concurrent{instance=thumbnails}"], 5.0);
    exported.sample();
    let metrics = exported.read();
    assert_eq!(metrics["bulkhead_in_flight{instance=thumbnails}"], 0.0);
    assert_eq!(
        metrics["bulkhead_rejections_total{instance=thumbnails}"],
        0.0
    );
    Ok(())
}

#[test]
fn shed_calls_count_by_class_and_each_class_is_sampled() -> Result<(), RegistryError> {
    use bulkhead_core::{Priority, priority};

    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "search")
        .bulkhead(|b| b.max_concurrent(4))
        .build()?;
    let handle = exported.registry.bulkhead("search")?;
    let sheddable = |n| -> Vec<_> {
        (0..n)
            .map(|_| priority::with(Priority::Sheddable, || handle.bulkhead().try_enter()))
            .collect()
    };
    let held = (sheddable(2), handle.bulkhead().try_enter());
    for _ in 0..2 {
        let shed = priority::with(Priority::Sheddable, || call(&pipeline));
        assert!(matches!(
            shed,
            Err(CallError::Rejected(Rejection::BulkheadFull(_)))
        ));
    }
    exported.handled(2);
    exported.sample();
    let metrics = exported.read();
    let held_by =
        |class: &str| metrics[&format!("bulkhead_held{{instance=search,priority={class}}}")];
    assert_eq!((held_by("sheddable"), held_by("normal")), (2.0, 1.0));
    assert_eq!((held_by("high"), held_by("critical")), (0.0, 0.0));
    assert_eq!(
        metrics["bulkhead_shed_total{instance=search,priority=sheddable}"],
        2.0
    );
    assert_eq!(
        metrics["bulkhead_shed_total{instance=search,priority=normal}"],
        0.0
    );
    assert_eq!(
        metrics["bulkhead_rejections_total{instance=search}"], 2.0,
        "shed calls are rejections too"
    );
    drop(held);
    Ok(())
}

#[test]
fn waiting_callers_are_sampled() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "reports")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(3600)))
        .build()?;
    let handle = exported.registry.bulkhead("reports")?;
    let held = handle.bulkhead().try_enter();

    thread::scope(|scope| {
        let waiter = scope.spawn(|| call(&pipeline));
        eventually(|| handle.waiting_calls() == 1);
        exported.sample();
        let metrics = exported.read();
        assert_eq!(metrics["bulkhead_waiting{instance=reports}"], 1.0);
        assert_eq!(metrics["bulkhead_in_flight{instance=reports}"], 1.0);
        drop(held);
        assert!(waiter.join().expect("the waiter returns").is_ok());
    });
    Ok(())
}

#[test]
fn retries_count_by_cause_and_outcome() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "inventory")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = exported.registry.bulkhead("inventory")?;

    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    drop(held);
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

    // 3 rejections, 2 retries and an exhausted call; a retry and a success.
    exported.handled(8);
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_rejections_total{instance=inventory}"],
        3.0
    );
    assert_eq!(
        metrics["bulkhead_retries_total{cause=BulkheadFull,instance=inventory}"],
        2.0
    );
    assert_eq!(
        metrics["bulkhead_retries_total{cause=error,instance=inventory}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_retry_calls_total{instance=inventory,outcome=exhausted}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_retry_calls_total{instance=inventory,outcome=succeeded_after_retry}"],
        1.0
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

    exported.sample();
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_circuit_breaker_state{instance=payments,state=closed}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_circuit_breaker_state{instance=payments,state=open}"],
        0.0
    );
    assert_eq!(
        metrics["bulkhead_circuit_breaker_rejections_total{instance=payments}"],
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
    exported.sample();
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_circuit_breaker_transitions_total{from=closed,instance=payments,to=forced_open}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_circuit_breaker_state{instance=payments,state=forced_open}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_circuit_breaker_state{instance=payments,state=closed}"],
        0.0
    );
    assert_eq!(
        metrics["bulkhead_circuit_breaker_rejections_total{instance=payments}"],
        2.0
    );
    Ok(())
}

#[test]
fn timeouts_and_rate_limiters_are_counted_and_sampled() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let _timed = Pipeline::builder(&exported.registry, "search")
        .timeout(|t| t.duration(Duration::from_millis(250)))
        .build()?;
    let limited = Pipeline::builder(&exported.registry, "mail")
        .rate_limiter(|r| {
            r.limit_for_period(2)
                .refresh_period(Duration::from_secs(3600))
                .max_wait(Duration::ZERO)
        })
        .build()?;

    exported.sample();
    let metrics = exported.read();
    assert_eq!(metrics["bulkhead_timeouts_total{instance=search}"], 0.0);
    assert_eq!(
        metrics["bulkhead_timeout_overruns_total{instance=search}"],
        0.0
    );
    assert_eq!(
        metrics["bulkhead_rate_limiter_available_permits{instance=mail}"],
        2.0
    );

    let timeout = exported.registry.timeout("search")?;
    let _rejection = timeout.timeout().timed_out();
    timeout.timeout().overran(Duration::from_millis(300));
    let outcomes: Vec<_> = (0..3).map(|_| call(&limited).is_ok()).collect();
    assert_eq!(outcomes, [true, true, false]);
    exported.handled(3);
    exported.sample();
    let metrics = exported.read();
    assert_eq!(metrics["bulkhead_timeouts_total{instance=search}"], 1.0);
    assert_eq!(
        metrics["bulkhead_timeout_overruns_total{instance=search}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_rate_limiter_rejections_total{instance=mail}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_rate_limiter_available_permits{instance=mail}"],
        0.0
    );
    assert_eq!(metrics["bulkhead_rate_limiter_waiting{instance=mail}"], 0.0);
    Ok(())
}

#[test]
fn with_sizing_the_hold_time_of_admitted_calls_is_exported() -> Result<(), RegistryError> {
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
    let handle = exported.registry.bulkhead("renderer")?;
    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    // A wait cut short by an outer deadline is abandoned, not rejected.
    let waits = exported.registry.bulkhead_policy(
        "waits",
        "test",
        &bulkhead_core::BulkheadConfig::builder()
            .max_concurrent(1)
            .max_wait(Duration::from_secs(1)),
    )?;
    let taken = waits.try_enter();
    let now = exported.registry.clock().now();
    assert!(waits.enter_until(Some(now)).is_err());
    drop(taken);
    exported.handled(1);
    exported.sample();
    drop(held);
    let metrics = exported.read();
    assert_eq!(metrics["bulkhead_admitted_total{instance=renderer}"], 3.0);
    assert_eq!(metrics["bulkhead_abandoned_total{instance=renderer}"], 0.0);
    assert_eq!(metrics["bulkhead_abandoned_total{instance=waits}"], 1.0);
    assert_eq!(metrics["bulkhead_completed_total{instance=renderer}"], 2.0);
    assert_eq!(
        metrics["bulkhead_hold_microseconds_total{instance=renderer}"],
        10_000.0
    );
    assert_eq!(metrics["bulkhead_rejections_total{instance=renderer}"], 1.0);
    Ok(())
}

#[test]
fn the_exporter_stops_when_its_handle_is_dropped() -> Result<(), RegistryError> {
    let Exported {
        registry,
        clock,
        observer,
        snapshotter,
    } = Exported::new(false);
    let pipeline = Pipeline::builder(&registry, "short-lived")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("short-lived")?;
    let held = handle.bulkhead().try_enter();

    assert!(call(&pipeline).is_err());
    eventually(|| observer.events() == 1);
    let samples = observer.samples();
    drop(observer);
    assert!(call(&pipeline).is_err());
    clock.advance(INTERVAL);
    drop(held);

    let rejections: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "bulkhead_rejections_total")
        .map(|(.., value)| value)
        .collect();
    assert_eq!(rejections, [DebugValue::Counter(1)]);
    assert!(samples >= 1);
    Ok(())
}

#[test]
fn an_interval_too_long_to_add_samples_once_and_keeps_counting() -> Result<(), RegistryError> {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let observer = export_metrics_to(&registry, Duration::MAX, recorder).expect("it starts");
    eventually(|| observer.samples() >= 1);
    let pipeline = Pipeline::builder(&registry, "forever")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("forever")?;
    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    eventually(|| observer.events() == 1);
    assert!(observer.is_running(), "the exporter thread is alive");
    assert_eq!(observer.samples(), 1, "no second sample");
    let rejections = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "bulkhead_rejections_total")
        .count();
    assert_eq!(rejections, 1);
    drop(held);
    Ok(())
}

#[test]
fn hedges_fallbacks_and_the_retry_budget_are_counted() -> Result<(), RegistryError> {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

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
    let mut call = pin!(hedged.execute_async(|| {
        let first = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        async move {
            if first {
                std::future::pending::<()>().await;
            }
            Ok::<_, std::io::Error>(())
        }
    }));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(call.as_mut().poll(&mut cx).is_pending());
    exported.clock.advance(Duration::from_millis(10));
    assert!(matches!(call.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));

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

    // Exhausted budget, hedge started and won, fallback used.
    exported.handled(4);
    exported.sample();
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_retry_calls_total{instance=budgeted,outcome=budget_exhausted}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_retry_budget_available{instance=budgeted}"],
        0.0
    );
    assert_eq!(
        metrics["bulkhead_hedges_total{instance=hedged,outcome=started}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_hedges_total{instance=hedged,outcome=won}"],
        1.0
    );
    assert_eq!(
        metrics["bulkhead_fallbacks_total{cause=BulkheadFull,instance=fallen-back}"],
        1.0
    );
    Ok(())
}

#[test]
fn a_keyed_bulkhead_labels_its_busiest_keys_only() -> Result<(), Box<dyn std::error::Error>> {
    let exported = Exported::with(|builder| {
        builder
            .snapshot_top_keys(2)
            .config_toml("[bulkhead.instances.api]\nmax_concurrent = 100\nper_key = 10")
            .expect("valid TOML")
    });
    let api = exported.registry.keyed_bulkhead::<u32>("api")?;
    // 50 keys, 1 to 4 calls each: one label per key would be 50 series.
    let mut permits = Vec::new();
    for key in 0..50u32 {
        let calls = match key {
            7 => 4,
            9 => 3,
            _ => 1,
        };
        for _ in 0..calls {
            permits.push(api.try_enter(&key)?);
        }
    }
    exported.sample();
    let metrics = exported.read();
    let keys: BTreeMap<&str, f64> = metrics
        .iter()
        .filter_map(|(name, value)| {
            let labels = name.strip_prefix("bulkhead_keyed_key_in_flight{")?;
            Some((labels.trim_end_matches('}'), *value))
        })
        .collect();
    assert_eq!(
        keys,
        BTreeMap::from([
            ("instance=api,key=7", 4.0),
            ("instance=api,key=9", 3.0),
            ("instance=api,key=_other", 48.0),
        ])
    );
    assert_eq!(metrics["bulkhead_keyed_in_flight{instance=api}"], 55.0);
    assert_eq!(metrics["bulkhead_keyed_keys{instance=api}"], 50.0);
    assert_eq!(
        metrics["bulkhead_keyed_max_concurrent{instance=api}"],
        100.0
    );
    assert_eq!(metrics["bulkhead_keyed_waiting{instance=api}"], 0.0);
    assert!(
        !metrics
            .keys()
            .any(|name| name.starts_with("bulkhead_in_flight")),
        "not a plain bulkhead"
    );

    // Key 7 goes quiet and leaves the top list: its series reads 0.
    permits.retain(|_| false);
    for _ in 0..2 {
        permits.push(api.try_enter(&3)?);
    }
    exported.sample();
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_keyed_key_in_flight{instance=api,key=7}"],
        0.0
    );
    assert_eq!(
        metrics["bulkhead_keyed_key_in_flight{instance=api,key=3}"],
        2.0
    );
    assert_eq!(
        metrics["bulkhead_keyed_key_in_flight{instance=api,key=_other}"],
        0.0
    );
    let series = metrics
        .keys()
        .filter(|name| name.starts_with("bulkhead_keyed_key_in_flight"))
        .count();
    assert!(
        series <= 2 + 1 + 2,
        "top, _other, and those set to 0: {series}"
    );
    drop(permits);
    Ok(())
}

#[test]
fn tenants_coming_and_going_never_grow_the_key_series_past_the_cap()
-> Result<(), Box<dyn std::error::Error>> {
    let exported = Exported::with(|builder| {
        builder
            .snapshot_top_keys(2)
            .config_toml("[bulkhead.instances.api]\nmax_concurrent = 100\nper_key = 10")
            .expect("valid TOML")
    });
    let api = exported.registry.keyed_bulkhead::<u32>("api")?;
    // 300 tenants, two at a time the busiest: 300 labels without a cap.
    for tenant in 0..300u32 {
        let permits = [api.try_enter(&tenant)?, api.try_enter(&tenant)?];
        exported.sample();
        drop(permits);
    }
    let metrics = exported.read();
    let labelled: Vec<&String> = metrics
        .keys()
        .filter(|name| name.starts_with("bulkhead_keyed_key_in_flight{"))
        .filter(|name| !name.contains("key=_other"))
        .collect();
    assert_eq!(labelled.len(), 100, "at most 100 keys ever labelled");
    // The last tenant is busy but past the cap: summed into _other.
    let permits = [api.try_enter(&299)?, api.try_enter(&299)?];
    exported.sample();
    let metrics = exported.read();
    assert_eq!(
        metrics["bulkhead_keyed_key_in_flight{instance=api,key=_other}"],
        2.0
    );
    drop(permits);
    Ok(())
}

#[test]
fn a_keyed_bulkheads_rejections_are_counted_by_reason() -> Result<(), Box<dyn std::error::Error>> {
    let exported = Exported::with(|builder| {
        builder
            .config_toml("[bulkhead.instances.api]\nmax_concurrent = 3\nper_key = 2\nmax_keys = 2")
            .expect("valid TOML")
    });
    let api = exported.registry.keyed_bulkhead::<String>("api")?;
    exported.sample();
    let registered = exported.read();
    for reason in ["key_full", "global_full", "too_many_keys"] {
        let name = format!("bulkhead_keyed_rejections_total{{instance=api,reason={reason}}}");
        assert_eq!(registered.get(&name), Some(&0.0), "{name} registered at 0");
    }
    let held = [
        api.try_enter("a")?,
        api.try_enter("a")?,
        api.try_enter("b")?,
    ];
    assert!(api.try_enter("a").is_err());
    assert!(api.try_enter("a").is_err());
    assert!(api.try_enter("b").is_err());
    assert!(api.try_enter("c").is_err());
    exported.handled(4);
    let metrics = exported.read();
    let count = |reason: &str| {
        metrics[&format!("bulkhead_keyed_rejections_total{{instance=api,reason={reason}}}")]
    };
    assert_eq!(
        (
            count("key_full"),
            count("global_full"),
            count("too_many_keys")
        ),
        (2.0, 1.0, 1.0)
    );
    assert!(!metrics.contains_key("bulkhead_rejections_total{instance=api}"));
    drop(held);
    Ok(())
}

/// Calls through a pipeline on the manual clock, each attempt taking the
/// time the test gives it: the histograms replayed into the recorder hold
/// one sample per call, attempt and wait, each within a bucket's
/// representative factor (1.23) of the time taken.
#[test]
fn histograms_hold_each_call_attempt_and_wait_with_its_outcome() -> Result<(), RegistryError> {
    let exported = Exported::new(false);
    let pipeline = Pipeline::builder(&exported.registry, "render")
        .bulkhead(|b| b.max_concurrent(1))
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .build()?;
    let clock = exported.clock.clone();
    let mut attempts = 0;
    // Two failed attempts of 5 ms, then one of 20 ms that succeeds.
    let result: Result<u32, CallError<&str>> = pipeline.execute(|| {
        attempts += 1;
        if attempts < 3 {
            clock.advance(Duration::from_millis(5));
            Err("flaky")
        } else {
            clock.advance(Duration::from_millis(20));
            Ok(7)
        }
    });
    assert_eq!(result, Ok(7));
    // A call refused at once by the full bulkhead, three times (the retry
    // tries a full bulkhead again).
    let handle = exported.registry.bulkhead("render")?;
    let held = handle.bulkhead().try_enter();
    assert!(matches!(
        call(&pipeline),
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    drop(held);
    // Samples are taken by the exporter's sample on the clock, which the
    // calls above moved past: take one more to be sure it saw them all.
    exported.sample();
    let samples = exported.histogram_samples();
    let close = |values: &[f64], expected: f64| {
        values
            .iter()
            .all(|v| *v >= expected / 1.23 && *v <= expected * 1.23)
    };
    let call_ok = &samples["bulkhead_call_duration_seconds{instance=render,outcome=success}"];
    assert_eq!(call_ok.len(), 1);
    assert!(close(call_ok, 0.030), "{call_ok:?}");
    let errors = &samples["bulkhead_attempt_duration_seconds{instance=render,outcome=error}"];
    assert_eq!(errors.len(), 2);
    assert!(close(errors, 0.005), "{errors:?}");
    let ok = &samples["bulkhead_attempt_duration_seconds{instance=render,outcome=success}"];
    assert_eq!(ok.len(), 1);
    assert!(close(ok, 0.020), "{ok:?}");
    let full = &samples["bulkhead_call_duration_seconds{instance=render,outcome=bulkhead_full}"];
    assert_eq!(full.len(), 1);
    let refused =
        &samples["bulkhead_attempt_duration_seconds{instance=render,outcome=bulkhead_full}"];
    assert_eq!(refused.len(), 3);
    // Admitted at once three times, refused at once three times: samples in
    // the first bucket (up to 1 µs).
    let admitted = &samples["bulkhead_slot_wait_seconds{instance=render,outcome=admitted}"];
    assert_eq!(admitted.len(), 3);
    assert!(admitted.iter().all(|v| *v <= 1.1e-6), "{admitted:?}");
    let rejected = &samples["bulkhead_slot_wait_seconds{instance=render,outcome=rejected}"];
    assert_eq!(rejected.len(), 3);

    // Nothing new: the next sample replays nothing again.
    exported.sample();
    assert!(exported.histogram_samples().is_empty());
    Ok(())
}

impl Exported {
    /// Every histogram's samples recorded since the last reading, as
    /// `name{label=value,...}` to the values.
    fn histogram_samples(&self) -> BTreeMap<String, Vec<f64>> {
        self.snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Histogram(samples) if !samples.is_empty() => Some((
                    series(&key),
                    samples.iter().map(|s| s.into_inner()).collect(),
                )),
                _ => None,
            })
            .collect()
    }
}
