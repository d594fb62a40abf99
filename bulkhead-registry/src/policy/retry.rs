//! Retry policies (their keys are `bulkhead_core`'s table).

use bulkhead_core::{Retry, RetryConfig, RetryConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Retry {
    const KIND: PolicyKind = PolicyKind::Retry;
    type Config = RetryConfig;
    type Spec = RetryConfigBuilder;

    builder_methods!();
}
