//! What the outer policies make of what chaos injects, composed in the
//! fixed order `... Timeout( Bulkhead( Chaos( call ) ) )`: an injected
//! latency holds the bulkhead slot and is cut by the timeout; an injected
//! fault opens the breaker, is retried, and is answered by the fallback.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{
    Bulkhead, BulkheadConfig, CallError, Chaos, ChaosConfig, ChaosConfigBuilder, CircuitBreaker,
    CircuitBreakerConfig, CircuitState, Classifier, Fallback, FallbackConfig, ManualClock,
    Policies, PolicyContext, RejectionKind, Retry, RetryConfig, Timeout, TimeoutConfig,
};

const LATENCY: Duration = Duration::from_millis(300);

fn context(clock: &ManualClock) -> PolicyContext {
    PolicyContext::new(Arc::new(clock.clone()))
}

fn chaos(clock: &ManualClock, config: ChaosConfigBuilder) -> Chaos {
    let config = config.enabled(true).seed(28).build().unwrap();
    Chaos::with_context("chaos-composed", config, context(clock))
}

fn slow(clock: &ManualClock) -> Chaos {
    chaos(
        clock,
        ChaosConfig::builder().latency_rate(1.0).latency(LATENCY),
    )
}

fn failing(clock: &ManualClock) -> Chaos {
    chaos(clock, ChaosConfig::builder().fault_rate(1.0))
}

fn one_slot(clock: &ManualClock) -> Bulkhead {
    let config = BulkheadConfig::builder().max_concurrent(1).build().unwrap();
    Bulkhead::with_context("chaos-composed", config, context(clock))
}

fn rejected<T: std::fmt::Debug, E: std::fmt::Debug>(
    result: &Result<T, CallError<E>>,
) -> RejectionKind {
    match result {
        Err(CallError::Rejected(rejection)) => rejection.kind(),
        other => panic!("not rejected: {other:?}"),
    }
}

#[test]
fn an_injected_latency_holds_the_bulkhead_slot_of_a_sync_call() {
    let clock = ManualClock::new();
    let bulkhead = one_slot(&clock);
    let policies = Policies::on_clock(Arc::new(clock.clone()))
        .with_bulkhead(bulkhead.clone())
        .with_chaos(slow(&clock));
    let caller = std::thread::spawn({
        let policies = policies.clone();
        move || policies.call(&Classifier::new(), || Ok::<_, ()>(7))
    });
    while clock.sleepers() == 0 {
        std::thread::yield_now();
    }
    assert_eq!(bulkhead.concurrent_calls(), 1);
    let second = policies.call(&Classifier::new(), || Ok::<_, ()>(8));
    assert_eq!(rejected(&second), RejectionKind::BulkheadFull);
    clock.advance(LATENCY);
    assert_eq!(caller.join().unwrap(), Ok(7));
    assert_eq!(bulkhead.concurrent_calls(), 0);
}

#[test]
fn an_injected_latency_holds_the_slot_of_an_async_call_and_the_timeout_cuts_it() {
    let clock = ManualClock::new();
    let bulkhead = one_slot(&clock);
    let timeout = TimeoutConfig::builder()
        .duration(Duration::from_millis(100))
        .build()
        .unwrap();
    let policies = Policies::on_clock(Arc::new(clock.clone()))
        .with_timeout(Timeout::with_context(
            "chaos-composed",
            timeout,
            context(&clock),
        ))
        .with_bulkhead(bulkhead.clone())
        .with_chaos(slow(&clock));
    let ran = AtomicU32::new(0);
    let classify = Classifier::new();
    let mut call = Box::pin(policies.call_async(&classify, || async {
        ran.fetch_add(1, Ordering::Relaxed);
        Ok::<_, ()>(7)
    }));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(call.as_mut().poll(&mut cx).is_pending());
    assert_eq!(bulkhead.concurrent_calls(), 1, "the latency holds the slot");
    clock.advance(Duration::from_millis(100));
    match call.as_mut().poll(&mut cx) {
        Poll::Ready(result) => assert_eq!(rejected(&result), RejectionKind::Timeout),
        Poll::Pending => panic!("the timeout did not cut the latency"),
    }
    assert_eq!(bulkhead.concurrent_calls(), 0);
    assert_eq!(ran.load(Ordering::Relaxed), 0, "the call never ran");
}

#[test]
fn injected_faults_open_the_breaker() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(10)
        .minimum_calls(10)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::with_context("chaos-composed", config, context(&clock));
    let policies = Policies::on_clock(Arc::new(clock.clone()))
        .with_circuit_breaker(breaker.clone())
        .with_chaos(failing(&clock));
    for _ in 0..10 {
        let result = policies.call(&Classifier::new(), || Ok::<_, ()>(7));
        assert_eq!(rejected(&result), RejectionKind::Injected);
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    let result = policies.call(&Classifier::new(), || Ok::<_, ()>(7));
    assert_eq!(rejected(&result), RejectionKind::CircuitOpen);
}

#[test]
fn injected_faults_are_retried_unless_aborted_on() {
    let clock = ManualClock::new();
    let retry = |abort: bool| {
        let mut config = RetryConfig::builder().max_attempts(3).wait(Duration::ZERO);
        if abort {
            config = config.abort_on([RejectionKind::Injected]);
        }
        Retry::with_context("chaos-composed", config.build().unwrap(), context(&clock))
    };
    // Half the calls fail: the retry makes up for most of them.
    let half = chaos(&clock, ChaosConfig::builder().fault_rate(0.5));
    let policies = Policies::on_clock(Arc::new(clock.clone()))
        .with_retry(retry(false))
        .with_chaos(half);
    let ran = AtomicU32::new(0);
    let ok = (0..1000)
        .filter(|_| {
            policies
                .call(&Classifier::new(), || {
                    Ok::<_, ()>(ran.fetch_add(1, Ordering::Relaxed))
                })
                .is_ok()
        })
        .count();
    assert_eq!(
        ran.load(Ordering::Relaxed) as usize,
        ok,
        "a fault took each other attempt's place"
    );
    assert!(
        ok > 800,
        "{ok} of 1000 with three attempts at 0.5 (0.875 expected)"
    );

    let aborting = Policies::on_clock(Arc::new(clock.clone()))
        .with_retry(retry(true))
        .with_chaos(failing(&clock));
    let attempts = AtomicU32::new(0);
    let result = aborting.call(&Classifier::new(), || {
        attempts.fetch_add(1, Ordering::Relaxed);
        Ok::<_, ()>(7)
    });
    assert_eq!(rejected(&result), RejectionKind::Injected);
    assert_eq!(attempts.load(Ordering::Relaxed), 0);
}

#[test]
fn injected_faults_are_answered_by_the_fallback() {
    let clock = ManualClock::new();
    let fallback = Fallback::new("chaos-composed", FallbackConfig::default());
    let policies = Policies::on_clock(Arc::new(clock.clone()))
        .with_fallback(fallback)
        .with_chaos(failing(&clock));
    let result = policies.call(&Classifier::new(), || Ok::<_, ()>(7));
    let fallback = policies.fallback().unwrap();
    assert!(fallback.answers(&result));
    let answered = if fallback.answers(&result) {
        Ok(0)
    } else {
        result
    };
    assert_eq!(answered, Ok(0));
}
