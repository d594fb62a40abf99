//! `#[chaos]` with the other policies of one `#[resilient]` method, sync
//! and async, on a `ManualClock`: an injected fault is retried (not with
//! `abort_on = [Injected]`), opens the breaker, is answered by the
//! fallback; an injected latency is cut by an async timeout and reported
//! as a sync one's overrun. The seed decides the injections through the
//! wrapper as it does in `Chaos` itself, and a reload turns them on and
//! off and starts a new seed's count again. Also `#[chaos]` with `#[retry]`
//! on functions with a body.

use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use bulkhead::chaos::{Chaos, ChaosConfig};
use bulkhead::circuit_breaker::CircuitState;
use bulkhead::events::{ChaosEventKind, Event, EventStream, TimeoutEventKind};
use bulkhead::{Registry, RejectionKind, chaos, resilient, retry};

use crate::support::{ServiceError, manual, poll, wait_until};

/// Counts the calls that reached the delegate.
#[derive(Debug, Default)]
pub struct Calls(AtomicU32);

impl Calls {
    fn run(&self) -> Result<u32, ServiceError> {
        Ok(self.0.fetch_add(1, SeqCst) + 1)
    }

    fn get(&self) -> u32 {
        self.0.load(SeqCst)
    }
}

/// What the fallback methods answer.
const SPARE: u32 = 1000;

#[resilient]
pub trait Chaotic: Send + Sync {
    #[chaos(enabled = true, fault_rate = 1.0, seed = 1)]
    #[retry(max_attempts = 3, wait = "0")]
    fn retried(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0")]
    #[chaos(enabled = true, fault_rate = 1.0, seed = 1)]
    async fn retried_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, fault_rate = 1.0, seed = 1)]
    #[retry(max_attempts = 3, wait = "0", abort_on = [Injected])]
    fn aborted(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, fault_rate = 1.0, seed = 1)]
    #[retry(max_attempts = 3, wait = "0", abort_on = [Injected])]
    async fn aborted_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    /// Half the attempts fail, which ones the seed says.
    #[chaos(enabled = true, fault_rate = 0.5, seed = 2)]
    #[retry(max_attempts = 3, wait = "0")]
    fn flaky(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, fault_rate = 0.5, seed = 2)]
    #[retry(max_attempts = 3, wait = "0")]
    async fn flaky_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, fault_rate = 1.0)]
    #[circuit_breaker(minimum_calls = 2, sliding_window_size = 2)]
    fn tripped(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[circuit_breaker(minimum_calls = 2, sliding_window_size = 2)]
    #[chaos(enabled = true, fault_rate = 1.0)]
    async fn tripped_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, fault_rate = 1.0)]
    #[fallback(method = "spare")]
    fn answered(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, fault_rate = 1.0)]
    #[fallback(method = "spare_async")]
    async fn answered_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    /// `Injected` is not in `on`: the fault reaches the caller.
    #[chaos(enabled = true, fault_rate = 1.0)]
    #[fallback(method = "spare", on = [BulkheadFull])]
    fn unanswered(&self, calls: &Calls) -> Result<u32, ServiceError>;

    fn spare(&self, calls: &Calls) -> Result<u32, ServiceError>;

    async fn spare_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, latency_rate = 1.0, latency = "2s")]
    #[timeout(duration = "1s")]
    async fn cut(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(enabled = true, latency_rate = 1.0, latency = "2s")]
    #[timeout(duration = "1s")]
    fn overrun(&self, calls: &Calls) -> Result<u32, ServiceError>;

    /// Disabled and without a seed: configuration gives both.
    #[chaos(name = "chaos-seeded", fault_rate = 0.5)]
    fn seeded(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(name = "chaos-seeded-async", fault_rate = 0.5)]
    async fn seeded_async(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(name = "chaos-reloaded", fault_rate = 1.0, seed = 5)]
    fn reloaded(&self, calls: &Calls) -> Result<u32, ServiceError>;

    #[chaos(name = "chaos-reloaded-async", fault_rate = 1.0, seed = 5)]
    async fn reloaded_async(&self, calls: &Calls) -> Result<u32, ServiceError>;
}

/// Runs every call on the counter it is given.
#[derive(Debug, Default)]
pub struct Counter;

impl Chaotic for Counter {
    fn retried(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn retried_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn aborted(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn aborted_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn flaky(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn flaky_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn tripped(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn tripped_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn answered(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn answered_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn unanswered(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn spare(&self, _: &Calls) -> Result<u32, ServiceError> {
        Ok(SPARE)
    }
    async fn spare_async(&self, _: &Calls) -> Result<u32, ServiceError> {
        Ok(SPARE)
    }
    async fn cut(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn overrun(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn seeded(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn seeded_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    fn reloaded(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
    async fn reloaded_async(&self, calls: &Calls) -> Result<u32, ServiceError> {
        calls.run()
    }
}

/// The id of an unnamed method of [`Chaotic`], the same for each of its
/// policies.
fn id(method: &str) -> String {
    format!("macros::chaos_composed::Chaotic#{method}(&Calls)")
}

fn wrapped(registry: &Registry) -> ResilientChaotic<Counter> {
    ResilientChaotic::new(Counter, registry).expect("the policies resolve")
}

/// Polls `future` to completion, which the test expects at once.
fn ready<F: std::future::Future>(future: F) -> F::Output {
    match poll(pin!(future)) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the call did not complete at once"),
    }
}

/// What a call ended with: the delegate's count, or the rejection's kind
/// (`None` for the method's own error, which no delegate here returns).
type Outcome = Result<u32, Option<RejectionKind>>;

fn outcome(result: Result<u32, ServiceError>) -> Outcome {
    result.map_err(|error| match error {
        ServiceError::Rejected(rejection) => Some(rejection.kind()),
        ServiceError::Backend(_) => None,
    })
}

/// Whether each call was injected a fault.
fn faulted(outcomes: &[Outcome]) -> Vec<bool> {
    outcomes
        .iter()
        .map(|o| *o == Err(Some(RejectionKind::Injected)))
        .collect()
}

/// The faults injected by the chaos policy `instance`, as published.
fn faults_of(events: &mut EventStream, instance: &str) -> usize {
    events
        .drain()
        .filter(|e| {
            matches!(e, Event::Chaos(c)
                if c.instance == instance && c.kind == ChaosEventKind::FaultInjected)
        })
        .count()
}

/// The faults `Chaos` itself draws for its first `calls` calls under
/// `seed` at `fault_rate`.
fn expected_faults(seed: u64, fault_rate: f64, calls: usize) -> Vec<bool> {
    let config = ChaosConfig::builder()
        .enabled(true)
        .fault_rate(fault_rate)
        .seed(seed)
        .build()
        .unwrap();
    let chaos = Chaos::new("macros::chaos_composed::expected", config);
    (0..calls).map(|_| chaos.inject().is_err()).collect()
}

#[test]
fn an_injected_fault_is_retried_unless_abort_on_lists_injected() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    for (method, attempts) in [
        ("retried", 3),
        ("retried_async", 3),
        ("aborted", 1),
        ("aborted_async", 1),
    ] {
        let mut events = registry.subscribe();
        let calls = Calls::default();
        let out = match method {
            "retried" => service.retried(&calls),
            "retried_async" => ready(service.retried_async(&calls)),
            "aborted" => service.aborted(&calls),
            _ => ready(service.aborted_async(&calls)),
        };
        assert_eq!(outcome(out), Err(Some(RejectionKind::Injected)), "{method}");
        assert_eq!(calls.get(), 0, "{method}: the delegate never ran");
        assert_eq!(faults_of(&mut events, &id(method)), attempts, "{method}");
    }
}

#[test]
fn a_seeded_fault_rate_is_retried_attempt_by_attempt_as_the_seed_draws() {
    const CALLS: usize = 40;
    const ATTEMPTS: usize = 3;
    // Each wrapper call draws once per attempt, in order: replay the
    // seed's draws through the retry to know what each call ends with.
    let draws = expected_faults(2, 0.5, CALLS * ATTEMPTS);
    let mut draws = draws.into_iter();
    let mut expected = Vec::new();
    let (mut ran, mut faults) = (0, 0);
    for _ in 0..CALLS {
        let failed = (0..ATTEMPTS)
            .map_while(|_| draws.next().filter(|&fault| fault))
            .count();
        faults += failed;
        if failed < ATTEMPTS {
            ran += 1;
            expected.push(Ok(ran));
        } else {
            expected.push(Err(Some(RejectionKind::Injected)));
        }
    }
    assert!(
        faults > CALLS / 2 && expected.iter().any(Result::is_err),
        "the seed retries some calls and exhausts the attempts of others"
    );

    let (_, registry) = manual();
    let service = wrapped(&registry);
    for method in ["flaky", "flaky_async"] {
        let mut events = registry.subscribe();
        let calls = Calls::default();
        let got: Vec<Outcome> = (0..CALLS)
            .map(|_| {
                outcome(if method == "flaky" {
                    service.flaky(&calls)
                } else {
                    ready(service.flaky_async(&calls))
                })
            })
            .collect();
        assert_eq!(got, expected, "{method}");
        assert_eq!(calls.get(), ran, "{method}: the attempts that ran");
        assert_eq!(faults_of(&mut events, &id(method)), faults, "{method}");
    }
}

#[test]
fn injected_faults_open_the_breaker_which_then_refuses_the_calls() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    for method in ["tripped", "tripped_async"] {
        let calls = Calls::default();
        let call = || {
            outcome(if method == "tripped" {
                service.tripped(&calls)
            } else {
                ready(service.tripped_async(&calls))
            })
        };
        let breaker = registry.circuit_breaker(&id(method)).unwrap();
        for _ in 0..2 {
            assert_eq!(call(), Err(Some(RejectionKind::Injected)), "{method}");
        }
        assert_eq!(breaker.state(), CircuitState::Open, "{method}");
        assert_eq!(breaker.snapshot().failed_calls, 2, "{method}");
        let mut events = registry.subscribe();
        assert_eq!(call(), Err(Some(RejectionKind::CircuitOpen)), "{method}");
        assert_eq!(
            faults_of(&mut events, &id(method)),
            0,
            "{method}: refused before chaos drew for it"
        );
        assert_eq!(calls.get(), 0, "{method}");
    }
}

#[test]
fn an_injected_fault_is_answered_by_the_fallback_method_if_on_lists_it() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let calls = Calls::default();
    assert_eq!(service.answered(&calls).unwrap(), SPARE);
    assert_eq!(ready(service.answered_async(&calls)).unwrap(), SPARE);
    assert_eq!(
        outcome(service.unanswered(&calls)),
        Err(Some(RejectionKind::Injected))
    );
    assert_eq!(calls.get(), 0, "the chaos took the delegate's place");
    let mut events = registry.subscribe();
    assert_eq!(service.answered(&calls).unwrap(), SPARE);
    assert_eq!(faults_of(&mut events, &id("answered")), 1);
}

#[test]
fn an_async_timeout_cuts_an_injected_latency_longer_than_it() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let mut events = registry.subscribe();
    let calls = Calls::default();
    let mut call = pin!(service.cut(&calls));
    assert!(poll(call.as_mut()).is_pending(), "the latency is slept");
    clock.advance(Duration::from_millis(999));
    assert!(poll(call.as_mut()).is_pending());
    clock.advance(Duration::from_millis(1));
    match poll(call.as_mut()) {
        Poll::Ready(out) => assert_eq!(outcome(out), Err(Some(RejectionKind::Timeout))),
        Poll::Pending => panic!("the timeout's deadline passed"),
    }
    assert_eq!(calls.get(), 0, "cut before the delegate ran");
    let latency = events.drain().find_map(|e| match e {
        Event::Chaos(c) => Some(c.kind),
        _ => None,
    });
    assert_eq!(
        latency,
        Some(ChaosEventKind::LatencyInjected {
            latency: Duration::from_secs(2)
        })
    );
}

#[test]
fn a_sync_timeout_reports_an_injected_latency_as_an_overrun() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let mut events = registry.subscribe();
    let calls = Calls::default();
    thread::scope(|s| {
        let call = s.spawn(|| service.overrun(&calls));
        wait_until("the latency is slept", || clock.sleepers() == 1);
        assert_eq!(calls.get(), 0, "the latency comes before the call");
        clock.advance(Duration::from_secs(2));
        assert_eq!(call.join().unwrap().unwrap(), 1, "late but kept");
    });
    let overrun = events.drain().find_map(|e| match e {
        Event::Timeout(t) => Some(t.kind),
        _ => None,
    });
    assert_eq!(
        overrun,
        Some(TimeoutEventKind::Overrun {
            timeout: Duration::from_secs(1),
            took: Duration::from_secs(2)
        })
    );
}

/// The outcomes of `n` calls of `seeded` (or `seeded_async`) on a fresh
/// registry whose configuration enables it with `seed`.
fn seeded_outcomes(seed: u64, n: usize, sync: bool) -> Vec<Outcome> {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let instance = if sync {
        "chaos-seeded"
    } else {
        "chaos-seeded-async"
    };
    registry
        .reload_toml(&format!(
            "[chaos.instances.{instance}]\nenabled = true\nseed = {seed}"
        ))
        .unwrap();
    let calls = Calls::default();
    (0..n)
        .map(|_| {
            outcome(if sync {
                service.seeded(&calls)
            } else {
                ready(service.seeded_async(&calls))
            })
        })
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_injections_through_the_wrapper() {
    const CALLS: usize = 64;
    for sync in [true, false] {
        let first = seeded_outcomes(11, CALLS, sync);
        assert_eq!(first, seeded_outcomes(11, CALLS, sync), "sync: {sync}");
        let faults = faulted(&first);
        assert!(faults.contains(&true) && faults.contains(&false));
        assert_eq!(faults, expected_faults(11, 0.5, CALLS), "as Chaos draws");
        let other = seeded_outcomes(12, CALLS, sync);
        assert_ne!(faulted(&other), faults, "sync: {sync}: another seed");
    }
}

#[test]
fn a_reload_turns_a_methods_injections_on_and_off() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let calls = Calls::default();
    let call = || outcome(service.reloaded(&calls));
    let call_async = || outcome(ready(service.reloaded_async(&calls)));
    let reload = |toml: &str| {
        registry
            .reload_toml(&format!(
                "[chaos.instances.chaos-reloaded]\n{toml}\n\
                 [chaos.instances.chaos-reloaded-async]\n{toml}"
            ))
            .unwrap();
    };
    assert_eq!((call(), call_async()), (Ok(1), Ok(2)), "off by default");

    reload("enabled = true");
    let injected = Err(Some(RejectionKind::Injected));
    assert_eq!((call(), call_async()), (injected, injected));
    assert!(registry.chaos("chaos-reloaded").unwrap().snapshot().enabled);

    reload("enabled = true\nfault_rate = 0.0");
    assert_eq!((call(), call_async()), (Ok(3), Ok(4)), "enabled, rate 0");

    registry.reload_toml("").unwrap();
    assert_eq!((call(), call_async()), (Ok(5), Ok(6)), "off again");
    assert!(!registry.chaos("chaos-reloaded").unwrap().snapshot().enabled);
}

#[test]
fn a_reloaded_seed_draws_from_its_first_call_and_disabled_calls_are_not_counted() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let calls = Calls::default();
    let faults = |n: usize| {
        faulted(
            &(0..n)
                .map(|_| outcome(service.reloaded(&calls)))
                .collect::<Vec<_>>(),
        )
    };
    let reload = |toml: &str| {
        let toml = format!("[chaos.instances.chaos-reloaded]\nfault_rate = 0.5\n{toml}");
        registry.reload_toml(&toml).unwrap();
    };
    let expected = expected_faults(9, 0.5, 16);

    reload("enabled = true\nseed = 9");
    assert_eq!(faults(8), expected[..8]);
    reload("enabled = false\nseed = 9");
    assert_eq!(faults(5), [false; 5], "disabled");
    reload("enabled = true\nseed = 9");
    assert_eq!(faults(8), expected[8..], "the count went on where it was");

    reload("enabled = true\nseed = 10");
    assert_eq!(
        faults(16),
        expected_faults(10, 0.5, 16),
        "from seed 10's first"
    );
    reload("enabled = true\nseed = 9");
    assert_eq!(faults(16), expected, "and seed 9's again from its first");
}

#[chaos(name = "chaos-fn-retried", enabled = true, fault_rate = 1.0, seed = 3)]
#[retry(max_attempts = 3, wait = "0")]
fn retried_fn(calls: &Calls) -> Result<u32, ServiceError> {
    calls.run()
}

#[retry(max_attempts = 3, wait = "0", abort_on = [Injected])]
#[chaos(name = "chaos-fn-aborted", enabled = true, fault_rate = 1.0, seed = 3)]
fn aborted_fn(calls: &Calls) -> Result<u32, ServiceError> {
    calls.run()
}

#[chaos(
    name = "chaos-fn-retried-async",
    enabled = true,
    fault_rate = 1.0,
    seed = 3
)]
#[retry(max_attempts = 2, wait = "0")]
async fn retried_fn_async(calls: &Calls) -> Result<u32, ServiceError> {
    calls.run()
}

#[test]
fn a_function_with_a_body_under_chaos_and_retry_is_retried_unless_aborted() {
    // The global registry is shared by the binary's tests: the events are
    // told apart by these functions' own instance ids.
    let registry = Registry::global();
    let mut events = registry.subscribe();
    let calls = Calls::default();
    let injected = Err(Some(RejectionKind::Injected));
    assert_eq!(outcome(retried_fn(&calls)), injected);
    assert_eq!(faults_of(&mut events, "chaos-fn-retried"), 3);
    assert_eq!(outcome(aborted_fn(&calls)), injected);
    assert_eq!(faults_of(&mut events, "chaos-fn-aborted"), 1);
    assert_eq!(outcome(ready(retried_fn_async(&calls))), injected);
    assert_eq!(faults_of(&mut events, "chaos-fn-retried-async"), 2);
    assert_eq!(calls.get(), 0, "no body ran");
    assert_eq!(
        registry
            .retry("macros::chaos_composed::retried_fn(&Calls)")
            .unwrap()
            .snapshot()
            .max_attempts,
        3
    );
}
