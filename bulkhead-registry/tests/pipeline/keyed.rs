//! A pipeline whose bulkhead is keyed: a key's refusal is a full
//! bulkhead's to the other policies, the slot is held innermost, and the
//! registry knows the keyed bulkhead by the pipeline's id.

use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::{
    CallError, CircuitState, Event, ManualClock, Rejection, RejectionKind, RetryEvent,
    RetryEventKind,
};
use bulkhead_registry::{Pipeline, Registry};

fn registry(clock: &ManualClock) -> Registry {
    Registry::builder().clock(Arc::new(clock.clone())).build()
}

#[test]
fn a_key_at_its_limit_is_refused_and_others_run_holding_their_slot() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let api = Pipeline::builder(&registry, "api")
        .keyed_bulkhead::<String>(|b| b.max_concurrent(4).per_key(1))
        .build()
        .unwrap();
    assert_eq!(api.id(), "api");
    let same = registry.keyed_bulkhead::<String>("api").unwrap();
    let busy = same.try_enter("acme").unwrap();
    let refused = api.execute("acme", || Ok::<_, ()>(()));
    assert!(matches!(
        refused,
        Err(CallError::Rejected(Rejection::BulkheadFull(b))) if b.instance() == "api"
    ));
    let inside = api.execute("globex", || Ok::<_, ()>(same.in_flight("globex")));
    assert_eq!(inside, Ok(1), "the slot is held while the call runs");
    assert_eq!(same.in_flight("globex"), 0, "and given back after");
    assert_eq!(
        api.execute("globex", || Err::<(), _>("boom")),
        Err(CallError::Inner("boom"))
    );
    drop(busy);
}

#[test]
fn the_breaker_records_a_key_refusal_as_a_failure_unless_ignored() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    for (id, ignore) in [("recorded", false), ("ignored", true)] {
        let api = Pipeline::builder(&registry, id)
            .circuit_breaker(|c| {
                let c = c
                    .minimum_calls(2)
                    .sliding_window_size(2)
                    .failure_rate_threshold(50.0);
                if ignore {
                    c.ignore_on([RejectionKind::BulkheadFull])
                } else {
                    c
                }
            })
            .keyed_bulkhead::<u64>(|b| b.per_key(1))
            .build()
            .unwrap();
        let held = api.keyed_bulkhead().try_enter(&7).unwrap();
        for _ in 0..2 {
            assert!(api.execute(&7, || Ok::<_, ()>(())).is_err());
        }
        drop(held);
        let expected = if ignore {
            CircuitState::Closed
        } else {
            CircuitState::Open
        };
        assert_eq!(
            registry.circuit_breaker(id).unwrap().state(),
            expected,
            "{id}"
        );
    }
}

#[test]
fn the_retry_tries_a_key_refusal_again_unless_abort_on_says_no() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    for (id, abort) in [("retried", false), ("aborted", true)] {
        let api = Pipeline::builder(&registry, id)
            .retry(|r| {
                let r = r.max_attempts(3).wait(Duration::ZERO);
                if abort {
                    r.abort_on([RejectionKind::BulkheadFull])
                } else {
                    r
                }
            })
            .keyed_bulkhead::<u64>(|b| b.per_key(1))
            .build()
            .unwrap();
        let mut events = registry.subscribe();
        let held = api.keyed_bulkhead().try_enter(&7).unwrap();
        let result = api.execute(&7, || Ok::<_, ()>(()));
        assert!(
            matches!(result, Err(CallError::Rejected(Rejection::BulkheadFull(_)))),
            "{id}"
        );
        let mut retried = 0;
        while let Some(event) = events.try_recv() {
            // (A keyed refusal reaches the retry from inside the call: its
            // event names no rejection kind.)
            if let Event::Retry(RetryEvent {
                kind: RetryEventKind::Retrying { .. },
                ..
            }) = event
            {
                retried += 1;
            }
        }
        assert_eq!(retried, if abort { 0 } else { 2 }, "{id}");
        drop(held);
        assert!(api.execute(&7, || Ok::<_, ()>(())).is_ok());
    }
}

#[test]
fn an_async_call_waits_for_its_key_and_a_timeout_ends_the_wait() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let api = Pipeline::builder(&registry, "async")
        .keyed_bulkhead::<String>(|b| b.per_key(1).max_wait(Duration::from_secs(60)))
        .build()
        .unwrap();
    let keyed = api.keyed_bulkhead().clone();
    let held = keyed.try_enter_owned("acme").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let call = api.execute_async("acme", || async { Ok::<_, ()>("done") });
        let mut call = std::pin::pin!(call);
        assert!(futures_poll(call.as_mut()).is_pending());
        assert_eq!(keyed.waiting_calls(), 1);
        drop(held);
        assert_eq!(call.await, Ok("done"));
    });
    assert_eq!(keyed.concurrent_calls(), 0);
}

fn futures_poll<F: std::future::Future>(
    future: std::pin::Pin<&mut F>,
) -> std::task::Poll<F::Output> {
    future.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}
