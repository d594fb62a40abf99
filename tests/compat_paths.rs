//! The root paths of earlier versions still compile, hidden from the
//! documentation, and name the same items as their documented paths (the
//! module map is `bulkhead::guide::paths`, `docs/paths.md`). Code written
//! against the old root keeps working; new code uses the modules.

use std::time::{Duration, Instant};

use bulkhead::ManualClock;

/// Implemented by a type for itself only: `A: Same<B>` holds when `A` and
/// `B` are one type.
trait Same<T> {}
impl<T> Same<T> for T {}

/// Compiles only if the two paths name one type.
fn same<A: Same<B>, B>() {}

#[test]
fn every_old_root_type_is_the_type_of_its_module_path() {
    // bulkhead::circuit_breaker
    same::<bulkhead::BreakerOutcome, bulkhead::circuit_breaker::BreakerOutcome>();
    same::<bulkhead::BreakerPermit<'static>, bulkhead::circuit_breaker::BreakerPermit<'static>>();
    same::<bulkhead::CircuitBreaker, bulkhead::circuit_breaker::CircuitBreaker>();
    same::<bulkhead::CircuitBreakerConfig, bulkhead::circuit_breaker::CircuitBreakerConfig>();
    same::<
        bulkhead::CircuitBreakerConfigBuilder,
        bulkhead::circuit_breaker::CircuitBreakerConfigBuilder,
    >();
    same::<bulkhead::CircuitBreakerHandle, bulkhead::circuit_breaker::CircuitBreakerHandle>();
    same::<bulkhead::CircuitBreakerMetrics, bulkhead::circuit_breaker::CircuitBreakerMetrics>();
    same::<bulkhead::CircuitBreakerSnapshot, bulkhead::circuit_breaker::CircuitBreakerSnapshot>();
    same::<bulkhead::CircuitState, bulkhead::circuit_breaker::CircuitState>();
    same::<bulkhead::OwnedBreakerPermit, bulkhead::circuit_breaker::OwnedBreakerPermit>();
    same::<bulkhead::SlidingWindow, bulkhead::circuit_breaker::SlidingWindow>();

    // bulkhead::clock
    same::<bulkhead::Sleep, bulkhead::clock::Sleep>();
    same::<bulkhead::SystemClock, bulkhead::clock::SystemClock>();

    // bulkhead::config
    same::<bulkhead::Change, bulkhead::config::Change>();
    same::<bulkhead::ConfigError, bulkhead::config::ConfigError>();

    // bulkhead::events
    same::<bulkhead::BulkheadEvent, bulkhead::events::BulkheadEvent>();
    same::<bulkhead::BulkheadEventKind, bulkhead::events::BulkheadEventKind>();
    same::<bulkhead::CircuitBreakerEvent, bulkhead::events::CircuitBreakerEvent>();
    same::<bulkhead::CircuitBreakerEventKind, bulkhead::events::CircuitBreakerEventKind>();
    same::<bulkhead::Event, bulkhead::events::Event>();
    same::<bulkhead::EventBus, bulkhead::events::EventBus>();
    same::<bulkhead::EventStream, bulkhead::events::EventStream>();
    same::<bulkhead::InstanceEvents, bulkhead::events::InstanceEvents>();
    same::<bulkhead::RateLimiterEvent, bulkhead::events::RateLimiterEvent>();
    same::<bulkhead::RateLimiterEventKind, bulkhead::events::RateLimiterEventKind>();
    same::<bulkhead::RetryEvent, bulkhead::events::RetryEvent>();
    same::<bulkhead::RetryEventKind, bulkhead::events::RetryEventKind>();
    same::<bulkhead::TimeoutEvent, bulkhead::events::TimeoutEvent>();
    same::<bulkhead::TimeoutEventKind, bulkhead::events::TimeoutEventKind>();

    // bulkhead::pipeline
    same::<bulkhead::Classifier<'static, ()>, bulkhead::pipeline::Classifier<'static, ()>>();
    same::<bulkhead::ErrorPredicate<'static, ()>, bulkhead::pipeline::ErrorPredicate<'static, ()>>(
    );
    same::<bulkhead::PipelineBuilder<'static>, bulkhead::pipeline::PipelineBuilder<'static>>();
    same::<bulkhead::Policies, bulkhead::pipeline::Policies>();
    same::<bulkhead::PolicyContext, bulkhead::pipeline::PolicyContext>();

    // bulkhead::rate_limiter
    same::<bulkhead::AcquirePermit<'static>, bulkhead::rate_limiter::AcquirePermit<'static>>();
    same::<bulkhead::RateLimiter, bulkhead::rate_limiter::RateLimiter>();
    same::<bulkhead::RateLimiterConfig, bulkhead::rate_limiter::RateLimiterConfig>();
    same::<bulkhead::RateLimiterConfigBuilder, bulkhead::rate_limiter::RateLimiterConfigBuilder>();
    same::<bulkhead::RateLimiterHandle, bulkhead::rate_limiter::RateLimiterHandle>();
    same::<bulkhead::RateLimiterSnapshot, bulkhead::rate_limiter::RateLimiterSnapshot>();

    // bulkhead::registry
    same::<bulkhead::Conflict, bulkhead::registry::Conflict>();
    same::<bulkhead::Declarations<'static>, bulkhead::registry::Declarations<'static>>();
    same::<bulkhead::PolicySpecs, bulkhead::registry::PolicySpecs>();
    same::<bulkhead::RegistrySnapshot, bulkhead::registry::RegistrySnapshot>();

    // bulkhead::rejection
    same::<bulkhead::BulkheadFull, bulkhead::rejection::BulkheadFull>();
    same::<bulkhead::CallTimeout, bulkhead::rejection::CallTimeout>();
    same::<bulkhead::CircuitOpen, bulkhead::rejection::CircuitOpen>();
    same::<bulkhead::RateLimited, bulkhead::rejection::RateLimited>();
    same::<bulkhead::RejectionKinds, bulkhead::rejection::RejectionKinds>();

    // bulkhead::retry
    same::<bulkhead::Retry, bulkhead::retry::Retry>();
    same::<bulkhead::RetryConfig, bulkhead::retry::RetryConfig>();
    same::<bulkhead::RetryConfigBuilder, bulkhead::retry::RetryConfigBuilder>();
    same::<bulkhead::RetryHandle, bulkhead::retry::RetryHandle>();
    same::<bulkhead::RetrySnapshot, bulkhead::retry::RetrySnapshot>();

    // bulkhead::sizing
    same::<bulkhead::BulkheadSizing, bulkhead::sizing::BulkheadSizing>();
    same::<bulkhead::Diagnosis, bulkhead::sizing::Diagnosis>();
    same::<bulkhead::SizingReport, bulkhead::sizing::SizingReport>();
    same::<bulkhead::Traffic, bulkhead::sizing::Traffic>();

    // bulkhead::timeout
    same::<bulkhead::Timeout, bulkhead::timeout::Timeout>();
    same::<bulkhead::TimeoutConfig, bulkhead::timeout::TimeoutConfig>();
    same::<bulkhead::TimeoutConfigBuilder, bulkhead::timeout::TimeoutConfigBuilder>();
    same::<
        bulkhead::TimeoutFuture<'static, std::future::Ready<()>>,
        bulkhead::timeout::TimeoutFuture<'static, std::future::Ready<()>>,
    >();
    same::<bulkhead::TimeoutHandle, bulkhead::timeout::TimeoutHandle>();
    same::<bulkhead::TimeoutSnapshot, bulkhead::timeout::TimeoutSnapshot>();

    // Internals, with no documented path: the policies' own.
    same::<bulkhead::RetryState<'static>, bulkhead_core::RetryState<'static>>();
    same::<bulkhead::AttemptFailure, bulkhead_core::AttemptFailure>();
}

#[test]
fn old_root_traits_are_the_traits_of_their_module_paths() {
    fn clock(clock: &dyn bulkhead::Clock) -> &dyn bulkhead::clock::Clock {
        clock
    }
    fn policy_event<E: bulkhead::PolicyEvent>() {
        fn module_path<E: bulkhead::events::PolicyEvent>() {}
        module_path::<E>();
    }
    let manual = ManualClock::new();
    assert_eq!(clock(&manual).now(), bulkhead::clock::Clock::now(&manual));
    policy_event::<bulkhead::events::BulkheadEvent>();
}

#[test]
fn old_root_constants_and_functions_still_work() {
    assert_eq!(bulkhead::DEFAULT_CONFIG, bulkhead::config::DEFAULT_CONFIG);
    assert_eq!(
        bulkhead::DEFAULT_HEADROOM,
        bulkhead::sizing::DEFAULT_HEADROOM
    );

    assert_eq!(
        bulkhead::parse_duration("max_wait", "250ms"),
        Ok(Duration::from_millis(250))
    );
    assert_eq!(bulkhead::parse_bool("enabled", "false"), Ok(false));
    assert_eq!(bulkhead::check_limit("max_concurrent", 4, 10), Ok(4));
    assert_eq!(
        bulkhead::check_range("jitter", 2.0, 0.0, 1.0)
            .unwrap_err()
            .code(),
        "ATR-008"
    );
    let clock = ManualClock::new();
    let now: Instant = bulkhead::clock::Clock::now(&clock);
    bulkhead::sleep_blocking(&clock, now); // already due: returns at once
}

/// `use bulkhead::retry;` imports the `#[retry]` attribute, as it did before
/// the `retry` module existed, and the module too (another namespace).
mod attribute_and_module_of_one_name {
    use bulkhead::{Rejection, circuit_breaker, rate_limiter, retry, timeout};

    #[retry(name = "compat-retry", max_attempts = 2, wait = "1ms")]
    #[circuit_breaker(name = "compat-breaker")]
    #[rate_limiter(name = "compat-limiter")]
    #[timeout(name = "compat-timeout")]
    pub(super) fn lookup() -> Result<u32, Rejection> {
        Ok(7)
    }

    pub(super) fn configs() -> (
        retry::RetryConfig,
        circuit_breaker::CircuitBreakerConfig,
        rate_limiter::RateLimiterConfig,
        timeout::TimeoutConfig,
    ) {
        Default::default()
    }
}

#[test]
fn use_of_a_policy_name_imports_both_its_attribute_and_its_module() {
    assert_eq!(attribute_and_module_of_one_name::lookup(), Ok(7));
    let (retry, ..) = attribute_and_module_of_one_name::configs();
    assert_eq!(retry.max_attempts(), 3);
    let handle = bulkhead::Registry::global().retry("compat-retry").unwrap();
    assert_eq!(handle.snapshot().max_attempts, 2);
}
