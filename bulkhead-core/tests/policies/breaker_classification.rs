//! What a composed circuit breaker records for each way a call can end,
//! sync and async: `Ok` a success; the call's error a failure, or a success
//! if `record_if` says no; an inner policy's rejection ignored if its kind
//! is in `ignore_on`, else a failure.

use bulkhead_core::{
    Bulkhead, BulkheadConfig, CallError, CircuitBreaker, CircuitBreakerConfig, CircuitState,
    Classifier, Policies, RejectionKind,
};

/// (buffered, failed, state) after one call.
type Seen = (u32, u32, CircuitState);

/// A breaker of one slot (one failure opens it) around a bulkhead of one
/// slot, ignoring a full bulkhead if `ignore`.
fn setup(ignore: bool) -> (Policies, CircuitBreaker, Bulkhead) {
    let mut config = CircuitBreakerConfig::builder();
    config = config.sliding_window_size(1).minimum_calls(1);
    if ignore {
        config = config.ignore_on([RejectionKind::BulkheadFull]);
    }
    let breaker = CircuitBreaker::new("classify", config.build().unwrap());
    let bulkhead = Bulkhead::new(
        "classify",
        BulkheadConfig::builder().max_concurrent(1).build().unwrap(),
    );
    let policies = Policies::new()
        .with_circuit_breaker(breaker.clone())
        .with_bulkhead(bulkhead.clone());
    (policies, breaker, bulkhead)
}

fn seen(breaker: &CircuitBreaker) -> Seen {
    let metrics = breaker.metrics();
    (
        metrics.buffered_calls,
        metrics.failed_calls,
        breaker.state(),
    )
}

const BENIGN: &str = "benign";

fn records(error: &&'static str) -> bool {
    *error != BENIGN
}

/// The cases: (what the call returns, ignore_on BulkheadFull, bulkhead
/// full, what the breaker shows after it).
fn cases() -> Vec<(Result<u32, &'static str>, bool, bool, Seen)> {
    use CircuitState::{Closed, Open};
    vec![
        (Ok(7), false, false, (1, 0, Closed)),
        (Err(BENIGN), false, false, (1, 0, Closed)),
        (Err("bad"), false, false, (1, 1, Open)),
        (Ok(7), true, true, (0, 0, Closed)),
        (Ok(7), false, true, (1, 1, Open)),
    ]
}

fn check(result: Result<u32, CallError<&'static str>>, returned: Result<u32, &str>, full: bool) {
    match (result, full) {
        (Err(CallError::Rejected(rejection)), true) => {
            assert_eq!(rejection.kind(), RejectionKind::BulkheadFull);
        }
        (result, false) => assert_eq!(result, returned.map_err(CallError::Inner)),
        (result, true) => panic!("not rejected: {result:?}"),
    }
}

#[test]
fn sync_calls_are_classified() {
    let classify = Classifier::new().record_if(&records);
    for (returned, ignore, full, expected) in cases() {
        let (policies, breaker, bulkhead) = setup(ignore);
        let held = full.then(|| bulkhead.try_enter().unwrap());
        let result = policies.call(&classify, || returned);
        drop(held);
        check(result, returned, full);
        assert_eq!(
            seen(&breaker),
            expected,
            "{returned:?} ignore {ignore} full {full}"
        );
    }
}

#[tokio::test]
async fn async_calls_are_classified() {
    let classify = Classifier::new().record_if(&records);
    for (returned, ignore, full, expected) in cases() {
        // `call_hedged` without a hedge runs the same attempt.
        for hedged in [false, true] {
            let (policies, breaker, bulkhead) = setup(ignore);
            let held = full.then(|| bulkhead.try_enter().unwrap());
            let call = || async move { returned };
            let result = if hedged {
                policies.call_hedged(&classify, call).await
            } else {
                policies.call_async(&classify, call).await
            };
            drop(held);
            check(result, returned, full);
            let case = format!("{returned:?} ignore {ignore} full {full} hedged {hedged}");
            assert_eq!(seen(&breaker), expected, "{case}");
        }
    }
}
