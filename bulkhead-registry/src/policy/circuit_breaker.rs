//! Circuit breakers (their keys are `bulkhead_core`'s table).

use bulkhead_core::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for CircuitBreaker {
    const KIND: PolicyKind = PolicyKind::CircuitBreaker;
    type Config = CircuitBreakerConfig;
    type Spec = CircuitBreakerConfigBuilder;

    builder_methods!();
}
