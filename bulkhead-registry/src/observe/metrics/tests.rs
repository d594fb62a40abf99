//! What the exporter really emits, against the table of names: every
//! metric of the table, with the kind, unit and labels the table gives
//! it, from every call site (each kind of sample and event), and nothing
//! else.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use bulkhead_core::adaptive::Sampling;
use bulkhead_core::{
    Adaptive, BulkheadConfig, ChaosEvent, ChaosEventKind, Event, FallbackEvent, FallbackEventKind,
    FleetShareChanged, FleetShareReason, HedgeEvent, HedgeEventKind, ManualClock, Priority,
    RejectionKind, priority,
};
use metrics_util::MetricKind;
use metrics_util::debugging::DebuggingRecorder;

use super::names::{self, Metric};
use super::{Exporter, samples};
use crate::fleet::{FleetSnapshot, FleetState};
use crate::observe::observer::Sink;
use crate::{Pipeline, Registry};

const MS: Duration = Duration::from_millis(1);

/// A metric's series as the recorder saw them, or as the table says they
/// are: kind, unit and labels (sorted), e.g. `counter count [instance,
/// outcome]`.
fn shape(kind: &str, unit: Option<::metrics::Unit>, labels: &[&str]) -> String {
    let mut labels = labels.to_vec();
    labels.sort_unstable();
    let unit = unit.map_or("none", |unit| unit.as_str());
    format!("{kind} {unit} [{}]", labels.join(", "))
}

fn expected(metric: &Metric) -> String {
    shape(metric.kind.name(), Some(metric.unit), metric.labels)
}

/// Every policy of a registry sampled (twice: a keyed bulkhead's key
/// leaves its top list in between) and every kind of event visited, on
/// the exporter's own code, into a recorder of the test's own: each
/// metric's name to the shapes of its series.
fn emitted() -> BTreeMap<String, BTreeSet<String>> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, run_every_call_site);
    let mut emitted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, unit, _, _) in snapshotter.snapshot().into_vec() {
        let kind = match key.kind() {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        };
        let labels: Vec<&str> = key.key().labels().map(|label| label.key()).collect();
        emitted
            .entry(key.key().name().to_owned())
            .or_default()
            .insert(shape(kind, unit, &labels));
    }
    emitted
}

fn run_every_call_site() {
    // As the exporter's thread starts, with a fleet crate linked.
    names::describe_these(true);
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .track_sizing(true)
        .config_toml("[bulkhead.instances.tenants]\nmax_concurrent = 10\nper_key = 1")
        .expect("valid TOML")
        .build();
    registry.telemetry().record();
    let mut events = registry.subscribe();
    let mut exporter = Exporter {
        registry: registry.clone(),
        keys_shown: HashMap::new(),
        histograms: HashMap::new(),
    };
    let ok = || Ok::<_, std::io::Error>(());
    let failing = || Err::<(), _>(std::io::Error::other("down"));

    // A bulkhead: rejected, shed, resized.
    let search = Pipeline::builder(&registry, "search")
        .bulkhead(|b| b.max_concurrent(4))
        .build()
        .expect("built");
    let handle = registry.bulkhead("search").expect("declared");
    let sheddable = || priority::with(Priority::Sheddable, || handle.bulkhead().try_enter());
    let held = [sheddable(), sheddable(), handle.bulkhead().try_enter()];
    assert!(priority::with(Priority::Sheddable, || search.execute(ok)).is_err());
    let last = handle.bulkhead().try_enter();
    assert!(search.execute(ok).is_err());
    drop((held, last));
    handle.set_max_concurrent(5).expect("a valid limit");

    // An adaptive bulkhead that measured its latencies.
    let adaptive = Pipeline::builder(&registry, "adaptive")
        .bulkhead(|_| {
            BulkheadConfig::builder()
                .max_concurrent(8)
                .min_concurrent(1)
                .initial_concurrent(4)
                .adaptive(Adaptive::Gradient2)
                .sampling(Sampling::builder().min_samples(4).build().expect("valid"))
        })
        .build()
        .expect("built");
    for _ in 0..400 {
        clock.advance(MS);
        let took = adaptive.execute(|| {
            clock.advance(MS);
            ok()
        });
        assert!(took.is_ok());
    }
    let measured = registry.bulkhead("adaptive").expect("declared").snapshot();
    let measured = measured.adaptive.expect("adaptive");
    assert!(
        measured.no_load.is_some() && measured.recent.is_some(),
        "{measured:?}"
    );

    // A keyed bulkhead that refuses a key.
    let tenants = registry.keyed_bulkhead::<u32>("tenants").expect("declared");
    let first = tenants.try_enter(&1).expect("a free slot");
    assert!(tenants.try_enter(&1).is_err());

    // A retry with a budget, exhausted; a circuit breaker forced open; a
    // timeout that timed out and overran; a rate limiter out of permits.
    let retried = Pipeline::builder(&registry, "retried")
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO).budget_ratio(0.5))
        .build()
        .expect("built");
    assert!(retried.execute(failing).is_err());
    let _breaker = Pipeline::builder(&registry, "breaker")
        .circuit_breaker(|c| c)
        .build()
        .expect("built");
    registry
        .circuit_breaker("breaker")
        .expect("declared")
        .force_open();
    let _timed = Pipeline::builder(&registry, "timed")
        .timeout(|t| t.duration(Duration::from_millis(250)))
        .build()
        .expect("built");
    let timeout = registry.timeout("timed").expect("declared");
    let _rejection = timeout.timeout().timed_out();
    timeout.timeout().overran(Duration::from_millis(300));
    let limited = Pipeline::builder(&registry, "limited")
        .rate_limiter(|r| {
            r.limit_for_period(1)
                .refresh_period(Duration::from_secs(3600))
                .max_wait(Duration::ZERO)
        })
        .build()
        .expect("built");
    assert!(limited.execute(ok).is_ok());
    assert!(limited.execute(ok).is_err());
    let _chaos = Pipeline::builder(&registry, "chaos")
        .chaos(|c| c)
        .build()
        .expect("built");

    exporter.sample();
    drop(first);
    let _second = tenants.try_enter(&2).expect("a free slot");
    exporter.sample();
    samples::fleet(&FleetSnapshot::new("db", FleetState::Joined));

    // The events of the policies above, and those of a hedge, a fallback,
    // a chaos policy and a fleet (which take an async call or a fleet
    // crate to make), as their policies publish them.
    let at = registry.clock().now();
    let made = [
        Event::Hedge(HedgeEvent::new(
            "hedged",
            HedgeEventKind::Started { hedge: 1 },
            at,
        )),
        Event::Fallback(FallbackEvent::new(
            "fallen-back",
            FallbackEventKind::Used {
                rejection: Some(RejectionKind::BulkheadFull),
            },
            at,
        )),
        Event::Chaos(ChaosEvent::new(
            "chaos",
            ChaosEventKind::LatencyInjected { latency: MS },
            at,
        )),
        Event::Chaos(ChaosEvent::new("chaos", ChaosEventKind::FaultInjected, at)),
        Event::FleetShareChanged(FleetShareChanged::new(
            "db",
            FleetShareReason::Joined,
            0,
            4,
            at,
        )),
    ];
    let published: Vec<Event> = events.drain().collect();
    assert_eq!(events.missed(), 0, "the bus kept every event");
    for event in published.into_iter().chain(made) {
        exporter.event(event);
    }
    exporter.lost(1);
}

/// The metrics of every sample and event, with a test recorder in place of
/// the exporter's thread, each compared with the table (and so with the
/// module docs, which `names` checks against the table).
#[test]
fn the_exporter_emits_every_metric_as_the_table_of_names_says() {
    let mut emitted = emitted();
    let mut wrong: Vec<String> = names::all()
        .filter_map(|metric| {
            let table = BTreeSet::from([expected(metric)]);
            let seen = emitted.remove(metric.name).unwrap_or_default();
            (seen != table).then(|| format!("{}: emitted {seen:?}, table {table:?}", metric.name))
        })
        .collect();
    wrong.extend(
        emitted
            .into_iter()
            .map(|(name, seen)| format!("{name}: emitted {seen:?}, not in the table")),
    );
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}
