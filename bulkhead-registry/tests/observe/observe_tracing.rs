//! `observe::trace_events`: every policy event becomes a structured
//! `tracing` event, emitted off the call path.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{CallError, ManualClock, Rejection};
use bulkhead_registry::observe::{ObserverHandle, trace_events};
use bulkhead_registry::{Pipeline, Registry, RegistryError};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Level, Metadata, Subscriber};

/// One `tracing` event as the collector saw it.
#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("<absent>", String::as_str)
    }
}

/// A subscriber keeping every event of target `bulkhead`, optionally
/// calling a hook first (to block or panic).
#[derive(Clone, Default)]
struct Collector {
    events: Arc<Mutex<Vec<Captured>>>,
    hook: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl Collector {
    fn with_hook(hook: impl Fn() + Send + Sync + 'static) -> Self {
        Collector {
            hook: Some(Arc::new(hook)),
            ..Collector::default()
        }
    }

    fn events(&self) -> Vec<Captured> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Starts tracing `registry`'s events to this collector.
    fn observe(&self, registry: &Registry) -> ObserverHandle {
        tracing::subscriber::with_default(self.clone(), || trace_events(registry))
            .expect("the observer thread starts")
    }

    /// The first `n` events, once they arrived.
    fn wait_for(&self, n: usize) -> Vec<Captured> {
        eventually(|| self.events().len() >= n);
        self.events()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        if event.metadata().target() != "bulkhead" {
            return;
        }
        if let Some(hook) = &self.hook {
            hook();
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let captured = Captured {
            level: *event.metadata().level(),
            fields,
        };
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(captured);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Polls `done` until it holds; fails after 10 s.
fn eventually(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting");
        thread::yield_now();
    }
}

type Outcome = Result<(), CallError<std::io::Error>>;

fn call(pipeline: &Pipeline) -> Outcome {
    pipeline.execute(|| Ok(()))
}

fn rejected_with(outcome: &Outcome, kind: fn(&Rejection) -> bool) -> bool {
    matches!(outcome, Err(CallError::Rejected(rejection)) if kind(rejection))
}

fn manual_registry() -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    (Registry::builder().clock(clock.clone()).build(), clock)
}

#[test]
fn bulkhead_events_carry_instance_policy_kind_and_their_fields() -> Result<(), RegistryError> {
    let (registry, _clock) = manual_registry();
    let collector = Collector::default();
    let _observer = collector.observe(&registry);
    let pipeline = Pipeline::builder(&registry, "thumbnails")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;

    let handle = registry.bulkhead("thumbnails")?;
    let held = handle.bulkhead().try_enter();
    assert!(rejected_with(&call(&pipeline), |r| matches!(
        r,
        Rejection::BulkheadFull(_)
    )));
    drop(held);
    assert!(call(&pipeline).is_ok(), "admitted calls publish nothing");
    handle.set_max_concurrent(4).expect("a valid limit");

    let events = collector.wait_for(2);
    assert_eq!(events.len(), 2, "{events:?}");
    let (rejected, changed) = (&events[0], &events[1]);
    assert_eq!(rejected.level, Level::DEBUG);
    assert_eq!(rejected.field("instance"), "thumbnails");
    assert_eq!(rejected.field("policy"), "bulkhead");
    assert_eq!(rejected.field("kind"), "rejected");
    assert_eq!(rejected.field("max_concurrent"), "1");
    assert_eq!(rejected.field("waited"), "false");
    assert_eq!(changed.level, Level::INFO);
    assert_eq!(changed.field("kind"), "limit_changed");
    assert_eq!((changed.field("from"), changed.field("to")), ("1", "4"));
    Ok(())
}

#[test]
fn a_keyed_bulkheads_refusals_name_their_reason_and_reg_017()
-> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .config_toml("[bulkhead.instances.api]\nmax_concurrent = 3\nper_key = 2\nmax_keys = 2")?
        .build();
    let collector = Collector::default();
    let _observer = collector.observe(&registry);
    let api = registry.keyed_bulkhead::<String>("api")?;
    let held = [
        api.try_enter("a")?,
        api.try_enter("a")?,
        api.try_enter("b")?,
    ];
    assert!(api.try_enter("a").is_err(), "a holds its 2");
    assert!(api.try_enter("b").is_err(), "3 in flight in all");
    assert!(api.try_enter("c").is_err(), "2 keys live");

    let events = collector.wait_for(3);
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (e.field("kind"), e.field("reason"), e.field("limit")))
        .collect();
    assert_eq!(
        seen,
        [
            ("key_rejected", "key_full", "2"),
            ("key_rejected", "global_full", "3"),
            ("key_rejected", "too_many_keys", "2"),
        ]
    );
    assert!(events.iter().all(|e| e.field("instance") == "api"
        && e.field("policy") == "bulkhead"
        && e.level == Level::DEBUG));
    assert!(
        events[2].field("message").starts_with("REG-017"),
        "{events:?}"
    );
    assert!(!events[0].field("message").contains("REG-017"));
    drop(held);
    Ok(())
}

#[test]
fn retry_events_name_their_cause() -> Result<(), RegistryError> {
    let (registry, _clock) = manual_registry();
    let collector = Collector::default();
    let _observer = collector.observe(&registry);
    let pipeline = Pipeline::builder(&registry, "inventory")
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;

    let handle = registry.bulkhead("inventory")?;
    let held = handle.bulkhead().try_enter();
    assert!(call(&pipeline).is_err());
    drop(held);

    let retry: Vec<_> = collector
        .wait_for(4)
        .into_iter()
        .filter(|event| event.field("policy") == "retry")
        .collect();
    assert_eq!(retry.len(), 2, "{retry:?}");
    assert_eq!(retry[0].field("kind"), "retrying");
    assert_eq!(retry[0].field("attempt"), "1");
    assert_eq!(retry[0].field("delay"), "0ns");
    assert_eq!(retry[0].field("cause"), "BulkheadFull");
    assert_eq!(retry[1].field("kind"), "exhausted");
    assert_eq!(retry[1].field("attempts"), "2");
    assert_eq!(retry[1].field("cause"), "BulkheadFull");
    assert!(retry.iter().all(|event| event.level == Level::DEBUG));
    Ok(())
}

#[test]
fn a_circuit_breaker_opening_is_a_warning() -> Result<(), RegistryError> {
    let (registry, _clock) = manual_registry();
    let collector = Collector::default();
    let _observer = collector.observe(&registry);
    let pipeline = Pipeline::builder(&registry, "payments")
        .circuit_breaker(|c| c)
        .build()?;

    let breaker = registry.circuit_breaker("payments")?;
    breaker.force_open();
    assert!(rejected_with(&call(&pipeline), |r| matches!(
        r,
        Rejection::CircuitOpen(_)
    )));
    breaker.reset();

    let events = collector.wait_for(3);
    let fields = |event: &Captured| {
        let names = ["policy", "kind", "from", "to", "state"];
        names.map(|name| event.field(name).to_owned())
    };
    assert_eq!(events[0].level, Level::WARN);
    assert_eq!(
        fields(&events[0]),
        [
            "circuit_breaker",
            "state_transition",
            "closed",
            "forced_open",
            "<absent>"
        ]
    );
    assert_eq!(events[1].level, Level::DEBUG);
    assert_eq!(
        fields(&events[1]),
        [
            "circuit_breaker",
            "rejected",
            "<absent>",
            "<absent>",
            "forced_open"
        ]
    );
    assert_eq!(events[2].level, Level::INFO);
    assert_eq!(
        fields(&events[2]),
        [
            "circuit_breaker",
            "state_transition",
            "forced_open",
            "closed",
            "<absent>"
        ]
    );
    Ok(())
}

#[test]
fn timeouts_and_rate_limiter_rejections_are_traced() -> Result<(), RegistryError> {
    let (registry, _clock) = manual_registry();
    let collector = Collector::default();
    let _observer = collector.observe(&registry);
    let _timed = Pipeline::builder(&registry, "search")
        .timeout(|t| t.duration(Duration::from_millis(250)))
        .build()?;
    let limited = Pipeline::builder(&registry, "mail")
        .rate_limiter(|r| {
            r.limit_for_period(1)
                .refresh_period(Duration::from_secs(60))
                .max_wait(Duration::ZERO)
        })
        .build()?;

    let timeout = registry.timeout("search")?;
    let _rejection = timeout.timeout().timed_out();
    timeout.timeout().overran(Duration::from_millis(400));
    assert!(call(&limited).is_ok());
    assert!(rejected_with(&call(&limited), |r| matches!(
        r,
        Rejection::RateLimited(_)
    )));

    let events = collector.wait_for(3);
    let [timed_out, overrun, limited] = &events[..] else {
        panic!("{events:?}");
    };
    assert_eq!(timed_out.field("instance"), "search");
    assert_eq!(timed_out.field("kind"), "timed_out");
    assert_eq!(timed_out.field("timeout"), "250ms");
    assert_eq!(overrun.field("kind"), "overrun");
    assert_eq!(overrun.field("took"), "400ms");
    assert_eq!(limited.field("instance"), "mail");
    assert_eq!(limited.field("policy"), "rate_limiter");
    assert_eq!(limited.field("kind"), "rejected");
    assert_eq!(limited.field("limit_for_period"), "1");
    Ok(())
}

#[test]
fn a_stuck_tracing_subscriber_loses_events_but_never_blocks_callers() -> Result<(), RegistryError> {
    let registry = Registry::builder().event_capacity(4).build();
    // The subscriber blocks on its first event until the gate opens.
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let entered = Arc::new(Mutex::new(0_usize));
    let collector = Collector::with_hook({
        let (gate, entered) = (Arc::clone(&gate), Arc::clone(&entered));
        move || {
            *entered.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            let (open, opened) = &*gate;
            let open = open.lock().unwrap_or_else(PoisonError::into_inner);
            drop(opened.wait_while(open, |open| !*open));
        }
    });
    let observer = collector.observe(&registry);
    let pipeline = Pipeline::builder(&registry, "reports")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("reports")?;
    let held = handle.bulkhead().try_enter();

    assert!(call(&pipeline).is_err());
    eventually(|| *entered.lock().unwrap_or_else(PoisonError::into_inner) == 1);
    // The subscriber is stuck: every call still completes.
    let rejected = (0..100).filter(|_| call(&pipeline).is_err()).count();
    assert_eq!(rejected, 100);
    drop(held);
    assert!(call(&pipeline).is_ok());

    *gate.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
    gate.1.notify_all();
    let lost = collector
        .wait_for(6)
        .into_iter()
        .find(|event| event.field("kind") == "events_lost")
        .expect("an events_lost event");
    assert_eq!(lost.level, Level::WARN);
    eventually(|| observer.events() + observer.lost() == 101);
    assert_eq!(lost.field("lost"), observer.lost().to_string());
    assert!(observer.lost() >= 100 - 4);
    Ok(())
}

#[test]
fn a_tracing_subscriber_that_panics_stops_the_observer_not_the_callers() -> Result<(), RegistryError>
{
    let registry = Registry::new();
    let collector = Collector::with_hook(|| panic!("the subscriber failed"));
    let observer = collector.observe(&registry);
    let pipeline = Pipeline::builder(&registry, "fragile")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("fragile")?;
    let held = handle.bulkhead().try_enter();

    assert!(call(&pipeline).is_err());
    eventually(|| !observer.is_running());
    assert!(call(&pipeline).is_err());
    drop(held);
    assert!(call(&pipeline).is_ok());
    Ok(())
}

#[test]
fn the_observer_stops_when_its_handle_is_dropped() -> Result<(), RegistryError> {
    let registry = Registry::new();
    let collector = Collector::default();
    let observer = collector.observe(&registry);
    let pipeline = Pipeline::builder(&registry, "short-lived")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("short-lived")?;
    let held = handle.bulkhead().try_enter();

    assert!(call(&pipeline).is_err());
    collector.wait_for(1);
    observer.stop();
    assert!(call(&pipeline).is_err());
    drop(held);
    assert_eq!(collector.events().len(), 1);
    Ok(())
}

#[test]
fn the_observer_ends_with_its_registry() -> Result<(), RegistryError> {
    let registry = Registry::new();
    let observer = Collector::default().observe(&registry);
    let pipeline = Pipeline::builder(&registry, "gone")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    assert!(observer.is_running());
    drop((pipeline, registry));
    eventually(|| !observer.is_running());
    Ok(())
}

#[test]
fn budget_hedge_and_fallback_events_carry_their_fields() -> Result<(), RegistryError> {
    let (registry, _clock) = manual_registry();
    let collector = Collector::default();
    let _observer = collector.observe(&registry);
    let budgeted = Pipeline::builder(&registry, "budgeted")
        .retry(|r| r.budget_ratio(0.0).budget_min_per_second(0))
        .build()?;
    assert!(
        budgeted
            .execute(|| Err::<(), _>(std::io::Error::other("down")))
            .is_err()
    );
    let mut declarations = registry.declare();
    let policies = declarations.policies(
        &bulkhead_registry::PolicySpecs::new("answered")
            .hedge(None, bulkhead_core::HedgeConfig::builder())
            .fallback(
                None,
                bulkhead_core::FallbackConfig::builder().on_error(true),
            ),
    )?;
    declarations.commit();
    let failed: Outcome = Err(CallError::Inner(std::io::Error::other("down")));
    assert!(policies.fallback().expect("declared").answers(&failed));

    let events = collector.wait_for(2);
    assert_eq!(events.len(), 2, "{events:?}");
    let (budget, fallback) = (&events[0], &events[1]);
    assert_eq!(budget.field("policy"), "retry");
    assert_eq!(budget.field("kind"), "budget_exhausted");
    assert_eq!(
        (budget.field("attempts"), budget.field("cause")),
        ("1", "error")
    );
    assert_eq!(fallback.field("policy"), "fallback");
    assert_eq!(fallback.field("kind"), "used");
    assert_eq!(fallback.field("cause"), "error");
    assert_eq!(fallback.level, Level::DEBUG);
    Ok(())
}
