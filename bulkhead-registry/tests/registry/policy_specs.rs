//! A set of policies declared with `Declarations::policies`: every policy
//! under its own id, all or nothing.

use std::time::Duration;

use bulkhead_core::{BulkheadConfig, CircuitBreakerConfig, RetryConfig, TimeoutConfig};
use bulkhead_registry::{PolicySpecs, Registry};

fn checkout() -> PolicySpecs {
    PolicySpecs::new("shop::checkout")
        .retry(None, RetryConfig::builder().wait(Duration::ZERO))
        .circuit_breaker(Some("payments-breaker"), CircuitBreakerConfig::builder())
        .timeout(
            None,
            TimeoutConfig::builder().duration(Duration::from_secs(1)),
        )
        .bulkhead(
            Some("payments"),
            BulkheadConfig::builder().max_concurrent(4),
        )
}

#[test]
fn every_policy_of_a_set_is_registered_under_its_own_id() {
    let registry = Registry::new();
    let mut declarations = registry.declare();
    let policies = declarations.policies(&checkout()).unwrap();
    declarations.commit();

    assert_eq!(policies.retry().unwrap().instance(), "shop::checkout");
    assert_eq!(policies.bulkhead().unwrap().instance(), "payments");
    assert!(policies.rate_limiter().is_none());
    assert_eq!(
        registry
            .retry("shop::checkout")
            .unwrap()
            .config()
            .max_attempts(),
        3
    );
    assert_eq!(
        registry
            .circuit_breaker("payments-breaker")
            .unwrap()
            .instance(),
        "payments-breaker"
    );
    assert_eq!(
        registry
            .timeout("shop::checkout")
            .unwrap()
            .config()
            .duration(),
        Duration::from_secs(1)
    );
    assert_eq!(registry.bulkhead("payments").unwrap().max_concurrent(), 4);
}

#[test]
fn a_set_with_one_refused_policy_registers_none() {
    let registry = Registry::new();
    let specs = checkout().bulkhead(
        Some("payments"),
        BulkheadConfig::builder().config("missing"),
    );
    let mut declarations = registry.declare();
    let err = declarations.policies(&specs).unwrap_err();
    drop(declarations);

    assert_eq!(err.code(), "REG-004");
    assert_eq!(
        registry.retry("shop::checkout").unwrap_err().code(),
        "REG-009"
    );
    assert_eq!(
        registry
            .circuit_breaker("payments-breaker")
            .unwrap_err()
            .code(),
        "REG-009"
    );
    assert_eq!(
        registry.timeout("shop::checkout").unwrap_err().code(),
        "REG-009"
    );
    assert!(registry.snapshot().bulkheads().is_empty());
}

#[test]
fn a_conflict_names_who_declared_each_side() {
    let registry = Registry::new();
    let mut declarations = registry.declare();
    declarations.policies(&checkout()).unwrap();
    declarations.commit();

    let other = PolicySpecs::new("shop::refund")
        .declared_by("pipeline \"refund\"")
        .bulkhead(
            Some("payments"),
            BulkheadConfig::builder().max_concurrent(8),
        );
    let err = registry.declare().policies(&other).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(message.contains("shop::checkout resolves to"), "{message}");
    assert!(
        message.contains("pipeline \"refund\" resolves to"),
        "{message}"
    );
    assert_eq!(registry.bulkhead("payments").unwrap().max_concurrent(), 4);
}

#[test]
fn sets_that_name_the_same_policy_alike_share_it() {
    let registry = Registry::new();
    let mut declarations = registry.declare();
    let first = declarations.policies(&checkout()).unwrap();
    let second = declarations
        .policies(&PolicySpecs::new("shop::refund").bulkhead(
            Some("payments"),
            BulkheadConfig::builder().max_concurrent(4),
        ))
        .unwrap();
    declarations.commit();

    let slot = first.bulkhead().unwrap().try_enter().unwrap();
    assert_eq!(second.bulkhead().unwrap().concurrent_calls(), 1);
    drop(slot);
}
