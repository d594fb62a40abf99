//! [`FunctionPolicy`]: a function's policy made from its
//! [`PolicySpecs`], declared in a registry or, if the registry refuses it,
//! built on its own.

use std::sync::Arc;

use bulkhead_core::{Bulkhead, BulkheadConfigBuilder, Policies, PolicyContext};

use crate::policy::standalone;
use crate::registry::Registry;
use crate::specs::PolicySpecs;

/// What a function with a body runs under: its [`Bulkhead`] when that is
/// its only policy, its [`Policies`] otherwise.
pub trait FunctionPolicy: Send + Sync + Sized + 'static {
    /// The policy `specs` declare, from `registry`; if the registry refuses
    /// it, keeps the error for [`Registry::function_policy_errors`] and
    /// builds the policy on its own, on the registry's clock.
    fn of_function(specs: &PolicySpecs, registry: &Registry) -> Self;
}

impl FunctionPolicy for Bulkhead {
    /// The bulkhead of `specs`, or one with the built-in defaults if
    /// `specs` has none.
    fn of_function(specs: &PolicySpecs, registry: &Registry) -> Self {
        let default = BulkheadConfigBuilder::default();
        let (id, spec) = specs.spec::<Bulkhead>().unwrap_or((specs.id(), &default));
        registry
            .bulkhead_policy(id, specs.source(), spec)
            .unwrap_or_else(|error| {
                registry.keep_function_error(error);
                let context = PolicyContext::new(Arc::clone(registry.clock()));
                // An attribute's values were checked when it compiled.
                standalone(id, spec, &context)
                    .unwrap_or_else(|_| Bulkhead::with_context(id, Default::default(), context))
            })
    }
}

impl FunctionPolicy for Policies {
    fn of_function(specs: &PolicySpecs, registry: &Registry) -> Self {
        let mut declarations = registry.declare();
        match declarations.policies(specs) {
            Ok(policies) => {
                declarations.commit();
                policies
            }
            Err(error) => {
                drop(declarations);
                registry.keep_function_error(error);
                let clock = registry.clock();
                specs
                    .build_standalone(Arc::clone(clock))
                    // An attribute's values were checked when it compiled.
                    .unwrap_or_else(|_| Policies::on_clock(Arc::clone(clock)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bulkhead_core::{BulkheadConfig, RetryConfig};

    use super::*;

    #[test]
    fn a_refused_function_policy_runs_standalone_and_its_error_stays_on_its_registry() {
        let registry = Registry::new();
        let other = Registry::new();
        let specs = PolicySpecs::new("app::render()")
            .retry(None, RetryConfig::builder().max_attempts(2))
            .bulkhead(
                None,
                BulkheadConfig::builder()
                    .config("missing")
                    .max_concurrent(3),
            );

        let policies = Policies::of_function(&specs, &registry);
        assert_eq!(policies.bulkhead().unwrap().max_concurrent(), 3);
        assert_eq!(policies.retry().unwrap().config().max_attempts(), 2);
        let bulkhead = Bulkhead::of_function(&specs, &registry);
        assert_eq!(bulkhead.max_concurrent(), 3);

        let errors = registry.function_policy_errors();
        assert_eq!(errors.len(), 2);
        assert!(errors.iter().all(|e| e.code() == "REG-004"), "{errors:?}");
        assert!(other.function_policy_errors().is_empty());
        // None of the standalone policies is in the registry.
        assert!(registry.retry("app::render()").is_err());
        assert!(registry.snapshot().bulkheads().is_empty());
    }

    #[test]
    fn an_accepted_function_policy_is_the_registrys() {
        let registry = Registry::new();
        let specs =
            PolicySpecs::new("app::render()").bulkhead(Some("render"), BulkheadConfig::builder());
        let bulkhead = Bulkhead::of_function(&specs, &registry);
        let _slot = bulkhead.try_enter().unwrap();
        assert_eq!(registry.bulkhead("render").unwrap().concurrent_calls(), 1);
        assert!(registry.function_policy_errors().is_empty());
    }
}
