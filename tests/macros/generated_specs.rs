//! What the generators emit to declare a method's or a function's policies
//! as one `PolicySpecs` (bulkhead-macros' `declare.rs`), written by hand
//! through `::bulkhead::__private_0_1_0` as generated code names it: a wrapper's
//! `new` declares each method's set with `Declarations::policies`, a
//! function's `static` takes the `PolicySpecs` directly.

use std::time::Duration;

use bulkhead::{Rejection, RejectionKind};

/// A wrapper's `new`, one method with a retry and a bulkhead: the set is
/// declared in the wrapper's batch, all or nothing.
fn new(
    registry: &::bulkhead::__private_0_1_0::Registry,
) -> ::bulkhead::__private_0_1_0::Result<
    ::bulkhead::__private_0_1_0::Policies,
    ::bulkhead::__private_0_1_0::RegistryError,
> {
    let mut declarations = registry.declare();
    let policies = declarations.policies(
        &::bulkhead::__private_0_1_0::PolicySpecs::new(::bulkhead::__private_0_1_0::concat!(
            ::bulkhead::__private_0_1_0::module_path!(),
            "::Inventory#reserve(u32)"
        ))
        .retry(
            ::bulkhead::__private_0_1_0::None,
            ::bulkhead::__private_0_1_0::RetryConfig::builder()
                .max_attempts(2u32)
                .wait(::bulkhead::__private_0_1_0::Duration::new(0u64, 0u32)),
        )
        .bulkhead(
            ::bulkhead::__private_0_1_0::Some("inventory"),
            ::bulkhead::__private_0_1_0::BulkheadConfig::builder().max_concurrent(1u32),
        ),
    )?;
    declarations.commit();
    ::bulkhead::__private_0_1_0::Ok(policies)
}

#[test]
fn a_wrapper_declares_each_methods_set_in_its_batch() {
    let registry = bulkhead::Registry::new();
    let policies = new(&registry).unwrap();
    assert_eq!(policies.bulkhead().unwrap().instance(), "inventory");
    let retry = registry
        .retry(concat!(module_path!(), "::Inventory#reserve(u32)"))
        .unwrap();
    assert_eq!(retry.config().max_attempts(), 2);
    assert_eq!(retry.config().wait(), Duration::ZERO);
}

/// A function's body with a rate limiter: its `static` and its set.
fn geocode() -> Result<(), Rejection> {
    static POLICY: ::bulkhead::__private_0_1_0::FnPolicy<::bulkhead::__private_0_1_0::Policies> =
        ::bulkhead::__private_0_1_0::FnPolicy::new();
    let policies = POLICY.get(|| {
        ::bulkhead::__private_0_1_0::PolicySpecs::new(::bulkhead::__private_0_1_0::concat!(
            ::bulkhead::__private_0_1_0::module_path!(),
            "::geocode()"
        ))
        .rate_limiter(
            ::bulkhead::__private_0_1_0::Some("generated-geocoder"),
            ::bulkhead::__private_0_1_0::RateLimiterConfig::builder()
                .limit_for_period(1u32)
                .refresh_period(::bulkhead::__private_0_1_0::Duration::new(3600u64, 0u32))
                .max_wait(::bulkhead::__private_0_1_0::Duration::new(0u64, 0u32)),
        )
    });
    policies.rate_limiter().unwrap().try_acquire()?;
    Ok(())
}

/// A method's body with a bulkhead alone: one `static` for every `Self`.
struct Report;

impl Report {
    fn render(&self) -> Result<(), Rejection> {
        static POLICY: ::bulkhead::__private_0_1_0::MethodPolicy<
            ::bulkhead::__private_0_1_0::Bulkhead,
        > = ::bulkhead::__private_0_1_0::MethodPolicy::new();
        let bulkhead = POLICY.get(
            ::bulkhead::__private_0_1_0::type_name::<Self>(),
            |self_type| {
                ::bulkhead::__private_0_1_0::PolicySpecs::method(self_type, "render()").bulkhead(
                    ::bulkhead::__private_0_1_0::None,
                    ::bulkhead::__private_0_1_0::BulkheadConfig::builder().max_concurrent(3u32),
                )
            },
        );
        let _permit = bulkhead.try_enter()?;
        Ok(())
    }
}

#[test]
fn a_function_keeps_the_set_it_declared_in_the_global_registry() {
    assert!(geocode().is_ok());
    assert_eq!(geocode().unwrap_err().kind(), RejectionKind::RateLimited);
    let limiter = bulkhead::Registry::global()
        .rate_limiter("generated-geocoder")
        .unwrap();
    assert_eq!(limiter.snapshot().limit_for_period, 1);

    assert!(Report.render().is_ok());
    let id = format!("{}::render()", std::any::type_name::<Report>());
    let bulkhead = bulkhead::Registry::global().bulkhead(&id).unwrap();
    assert_eq!(bulkhead.max_concurrent(), 3);
}
