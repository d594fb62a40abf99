//! Fallback policies (their keys are `bulkhead_core`'s table).

use bulkhead_core::{Fallback, FallbackConfig, FallbackConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Fallback {
    const KIND: PolicyKind = PolicyKind::Fallback;
    type Config = FallbackConfig;
    type Spec = FallbackConfigBuilder;

    builder_methods!();
}
