//! Subscriptions to one instance's events, and subscribers that fall behind
//! or panic: callers never notice them.

use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{
    BulkheadEvent, BulkheadEventKind, CallError, CircuitBreakerEvent, CircuitBreakerEventKind,
    CircuitState, Event, Rejection, RejectionKind, RetryEvent, RetryEventKind,
};
use bulkhead_registry::{InstanceEvents, Pipeline, Registry, RegistryError};

type Outcome = Result<&'static str, CallError<std::io::Error>>;

fn ok(pipeline: &Pipeline) -> Outcome {
    pipeline.execute(|| Ok("done"))
}

fn is_bulkhead_full(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    )
}

#[test]
fn instance_events_keep_only_their_instance_and_policy() -> Result<(), RegistryError> {
    let registry = Registry::new();
    let retried = Pipeline::builder(&registry, "retried")
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let other = Pipeline::builder(&registry, "other")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let mut bulkhead = InstanceEvents::<BulkheadEvent>::new(registry.subscribe(), "retried");
    let mut retry = InstanceEvents::<RetryEvent>::new(registry.subscribe(), "retried");
    let mut all = InstanceEvents::<Event>::new(registry.subscribe(), "retried");

    let retried_slots = registry.bulkhead("retried")?;
    let other_slots = registry.bulkhead("other")?;
    let _held = (
        retried_slots.bulkhead().try_enter(),
        other_slots.bulkhead().try_enter(),
    );
    assert!(is_bulkhead_full(&ok(&retried)));
    assert!(is_bulkhead_full(&ok(&other)));
    retried_slots.set_max_concurrent(3).expect("a valid limit");

    let bulkhead: Vec<_> = bulkhead.drain().map(|event| event.kind).collect();
    assert_eq!(
        bulkhead,
        [
            BulkheadEventKind::Rejected {
                max_concurrent: 1,
                waited: false
            },
            BulkheadEventKind::Rejected {
                max_concurrent: 1,
                waited: false
            },
            BulkheadEventKind::LimitChanged { from: 1, to: 3 },
        ]
    );
    let retry: Vec<_> = retry.drain().map(|event| event.kind).collect();
    assert!(matches!(
        retry[..],
        [
            RetryEventKind::Retrying {
                attempt: 1,
                rejection: Some(RejectionKind::BulkheadFull),
                ..
            },
            RetryEventKind::Exhausted {
                attempts: 2,
                rejection: Some(RejectionKind::BulkheadFull)
            },
        ]
    ));
    let all: Vec<_> = all.drain().collect();
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(all.iter().all(|event| event.instance() == "retried"));
    Ok(())
}

#[test]
fn a_subscriber_that_never_reads_does_not_slow_callers() -> Result<(), RegistryError> {
    let registry = Registry::builder().event_capacity(8).build();
    let pipeline = Pipeline::builder(&registry, "busy")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let mut idle = InstanceEvents::<BulkheadEvent>::new(registry.subscribe(), "busy");

    let handle = registry.bulkhead("busy")?;
    let held = handle.bulkhead().try_enter();
    let rejected = (0..1000)
        .filter(|_| is_bulkhead_full(&ok(&pipeline)))
        .count();
    drop(held);
    let admitted = (0..1000).filter(|_| ok(&pipeline).is_ok()).count();

    assert_eq!((rejected, admitted), (1000, 1000));
    let kept = idle.drain().count();
    assert!((1..=8).contains(&kept), "kept {kept}");
    assert_eq!(idle.missed(), 1000 - kept as u64);
    Ok(())
}

#[tokio::test]
async fn a_subscriber_that_panics_does_not_affect_callers() -> Result<(), RegistryError> {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "fragile")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let mut doomed = InstanceEvents::<BulkheadEvent>::new(registry.subscribe(), "fragile");
    let mut survivor = InstanceEvents::<BulkheadEvent>::new(registry.subscribe(), "fragile");
    let subscriber = tokio::spawn(async move {
        let event = doomed.recv().await;
        panic!("the subscriber failed on {event:?}");
    });

    let handle = registry.bulkhead("fragile")?;
    let held = handle.bulkhead().try_enter();
    assert!(is_bulkhead_full(&ok(&pipeline)));
    assert!(subscriber.await.is_err_and(|error| error.is_panic()));

    assert!(is_bulkhead_full(&ok(&pipeline)));
    drop(held);
    assert_eq!(ok(&pipeline).ok(), Some("done"));
    assert_eq!(survivor.drain().count(), 2);
    Ok(())
}

#[test]
fn a_subscriber_thread_that_panics_does_not_affect_callers() -> Result<(), RegistryError> {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "fragile-thread")
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let handle = registry.bulkhead("fragile-thread")?;
    let held = handle.bulkhead().try_enter();
    assert!(is_bulkhead_full(&ok(&pipeline)));

    let mut doomed = InstanceEvents::<BulkheadEvent>::new(registry.subscribe(), "fragile-thread");
    let subscriber = thread::spawn(move || {
        // Polls until the rejection made below arrives, then fails on it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(event) = doomed.try_recv() {
                panic!("the subscriber failed on {event:?}");
            }
            thread::yield_now();
        }
    });
    assert!(is_bulkhead_full(&ok(&pipeline)));
    assert!(subscriber.join().is_err());

    assert!(is_bulkhead_full(&ok(&pipeline)));
    drop(held);
    assert_eq!(ok(&pipeline).ok(), Some("done"));
    Ok(())
}

#[test]
fn a_handle_subscribes_to_its_own_instance() -> Result<(), RegistryError> {
    let registry = Registry::new();
    let guarded = Pipeline::builder(&registry, "guarded")
        .circuit_breaker(|c| c)
        .bulkhead(|b| b.max_concurrent(1))
        .build()?;
    let _bystander = Pipeline::builder(&registry, "bystander")
        .circuit_breaker(|c| c)
        .build()?;
    let bulkhead = registry.bulkhead("guarded")?;
    let breaker = registry.circuit_breaker("guarded")?;
    let mut bulkhead_events = bulkhead.subscribe();
    let mut breaker_events = breaker.subscribe();
    assert_eq!(bulkhead_events.instance(), "guarded");

    registry.circuit_breaker("bystander")?.force_open();
    let held = bulkhead.bulkhead().try_enter();
    assert!(is_bulkhead_full(&ok(&guarded)));
    drop(held);
    breaker.force_open();

    let bulkhead_kinds: Vec<_> = bulkhead_events.drain().map(|e| e.kind).collect();
    assert_eq!(
        bulkhead_kinds,
        [BulkheadEventKind::Rejected {
            max_concurrent: 1,
            waited: false
        }]
    );
    let breaker_events: Vec<CircuitBreakerEvent> = breaker_events.drain().collect();
    assert_eq!(breaker_events.len(), 1, "{breaker_events:?}");
    assert_eq!(breaker_events[0].instance, "guarded");
    assert_eq!(
        breaker_events[0].kind,
        CircuitBreakerEventKind::StateTransition {
            from: CircuitState::Closed,
            to: CircuitState::ForcedOpen
        }
    );
    Ok(())
}
