//! The registry's coded errors and configuration as a wrapper with retry,
//! circuit breaker, timeout and rate limiter meets them in `new`: REG-008
//! for a shared name with two configurations (naming both methods), REG-004
//! for an unknown `config`, all-or-nothing declaration, and the precedence
//! of named configurations and instance overrides.

use std::time::Duration;

use bulkhead::{Registry, RejectionKind, resilient};

use crate::support::ServiceError;

#[resilient]
#[allow(dead_code)] // never wrapped: `new` fails
trait Flaky {
    #[bulkhead(max_concurrent = 2)]
    #[retry(name = "flaky-retry", max_attempts = 2)]
    fn read(&self, key: &str) -> Result<String, ServiceError>;

    #[timeout(name = "flaky-timeout")]
    #[retry(name = "flaky-retry", max_attempts = 5)]
    async fn write(&self, key: &str, value: String) -> Result<(), ServiceError>;
}

#[resilient]
#[allow(dead_code)] // never wrapped: `new` fails
trait Tripping {
    #[circuit_breaker(name = "trip", failure_rate_threshold = 20)]
    fn read(&self) -> Result<(), ServiceError>;

    #[circuit_breaker(name = "trip", failure_rate_threshold = 30)]
    fn write(&self) -> Result<(), ServiceError>;
}

#[derive(Debug)]
struct Db;

impl Flaky for Db {
    fn read(&self, key: &str) -> Result<String, ServiceError> {
        Ok(key.to_owned())
    }
    async fn write(&self, _key: &str, _value: String) -> Result<(), ServiceError> {
        Ok(())
    }
}

impl Tripping for Db {
    fn read(&self) -> Result<(), ServiceError> {
        Ok(())
    }
    fn write(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

#[test]
fn a_shared_retry_name_with_two_configurations_is_reg_008_naming_both_methods() {
    let registry = Registry::new();
    let err = ResilientFlaky::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(message.contains("flaky-retry"), "{message}");
    assert!(
        message.contains("macros::policy_registry::Flaky#read(&str)"),
        "{message}"
    );
    assert!(
        message.contains("macros::policy_registry::Flaky#write(&str, String)"),
        "{message}"
    );
    assert!(message.contains("max_attempts = 2"), "{message}");
    assert!(message.contains("max_attempts = 5"), "{message}");
}

#[test]
fn a_shared_breaker_name_with_two_configurations_is_reg_008_naming_both_methods() {
    let registry = Registry::new();
    let err = ResilientTripping::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(
        message.contains("macros::policy_registry::Tripping#read()"),
        "{message}"
    );
    assert!(
        message.contains("macros::policy_registry::Tripping#write()"),
        "{message}"
    );
    assert!(message.contains("failure_rate_threshold = 20"), "{message}");
    assert!(message.contains("failure_rate_threshold = 30"), "{message}");
}

#[test]
fn a_failed_new_registers_none_of_the_wrappers_policies() {
    let registry = Registry::new();
    assert!(ResilientFlaky::new(Db, &registry).is_err());
    let snapshot = registry.snapshot();
    assert!(snapshot.bulkheads().is_empty(), "{snapshot:?}");
    assert_eq!(registry.retry("flaky-retry").unwrap_err().code(), "REG-009");
    assert_eq!(
        registry.timeout("flaky-timeout").unwrap_err().code(),
        "REG-009",
        "declared before the conflict, not registered"
    );
    assert_eq!(
        registry
            .bulkhead("macros::policy_registry::Flaky#read(&str)")
            .unwrap_err()
            .code(),
        "REG-009"
    );
    assert!(ResilientTripping::new(Db, &registry).is_err());
    assert_eq!(
        registry.circuit_breaker("trip").unwrap_err().code(),
        "REG-009"
    );
}

#[resilient]
trait Tuned {
    #[retry(config = "patient", max_attempts = 4)]
    #[circuit_breaker(config = "strict")]
    #[timeout(config = "quick")]
    #[rate_limiter(config = "metered", max_wait = "0")]
    fn call(&self) -> Result<(), ServiceError>;
}

impl Tuned for Db {
    fn call(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

const TUNED: &str = "macros::policy_registry::Tuned#call()";

#[test]
fn named_configs_lie_under_attribute_values_and_instance_overrides_above() {
    let registry = Registry::builder()
        .retry_config("patient", |r| {
            r.max_attempts(9).wait(Duration::from_secs(2))
        })
        .circuit_breaker_config("strict", |c| c.failure_rate_threshold(10.0))
        .timeout_config("quick", |t| t.duration(Duration::from_millis(50)))
        .rate_limiter_config("metered", |r| {
            r.limit_for_period(7).max_wait(Duration::from_secs(1))
        })
        .timeout_instance(TUNED, |t| t.duration(Duration::from_millis(20)))
        .build();
    let tuned = ResilientTuned::new(Db, &registry).unwrap();
    assert!(tuned.call().is_ok());
    let retry = registry.retry(TUNED).unwrap().snapshot();
    assert_eq!(retry.max_attempts, 4, "the attribute wins over the config");
    assert_eq!(
        retry.wait,
        Duration::from_secs(2),
        "from config \"patient\""
    );
    let breaker = registry.circuit_breaker(TUNED).unwrap().snapshot();
    assert_eq!(breaker.failure_rate_threshold, 10.0);
    assert_eq!(
        registry.timeout(TUNED).unwrap().snapshot().duration,
        Duration::from_millis(20),
        "the instance override wins over everything"
    );
    let limiter = registry.rate_limiter(TUNED).unwrap().snapshot();
    assert_eq!(limiter.limit_for_period, 7);
    assert_eq!(limiter.max_wait, Duration::ZERO, "the attribute wins");
}

#[test]
fn an_unknown_config_of_any_policy_is_reg_004_at_new() {
    let registry = Registry::builder()
        .retry_config("patient", |r| r)
        .circuit_breaker_config("strict", |c| c)
        .rate_limiter_config("metered", |r| r)
        .build();
    let err = ResilientTuned::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "REG-004");
    assert!(err.to_string().contains("\"quick\""), "{err}");
    assert_eq!(registry.retry(TUNED).unwrap_err().code(), "REG-009");
}

#[test]
fn a_bad_configured_value_of_another_policy_is_reported_with_its_code() {
    let registry = Registry::builder()
        .retry_config("patient", |r| r.jitter(2.0))
        .circuit_breaker_config("strict", |c| c)
        .timeout_config("quick", |t| t)
        .rate_limiter_config("metered", |r| r)
        .build();
    let err = ResilientTuned::new(Db, &registry).unwrap_err();
    assert_eq!(err.code(), "ATR-008");
    assert!(
        err.to_string().contains("retry.configs.patient.jitter"),
        "{err}"
    );
}

#[resilient]
trait Shared {
    #[circuit_breaker(name = "shared-breaker", minimum_calls = 2, sliding_window_size = 2)]
    fn left(&self) -> Result<(), ServiceError>;

    #[circuit_breaker(name = "shared-breaker", minimum_calls = 2, sliding_window_size = 2)]
    async fn right(&self) -> Result<(), ServiceError>;
}

#[derive(Debug)]
struct Down;

impl Shared for Down {
    fn left(&self) -> Result<(), ServiceError> {
        Err(ServiceError::Backend("down".into()))
    }
    async fn right(&self) -> Result<(), ServiceError> {
        Ok(())
    }
}

#[test]
fn methods_sharing_a_breaker_name_share_its_state() {
    let registry = Registry::new();
    let shared = ResilientShared::new(Down, &registry).unwrap();
    assert!(shared.left().is_err() && shared.left().is_err());
    let right = std::pin::pin!(shared.right());
    match crate::support::poll(right) {
        std::task::Poll::Ready(Err(ServiceError::Rejected(r))) => {
            assert_eq!(r.kind(), RejectionKind::CircuitOpen);
            assert_eq!(r.instance(), "shared-breaker");
        }
        other => panic!("the shared breaker is open: {other:?}"),
    }
}
