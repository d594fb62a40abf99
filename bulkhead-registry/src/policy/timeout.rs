//! Timeouts (their keys are `bulkhead_core`'s table).

use bulkhead_core::{Timeout, TimeoutConfig, TimeoutConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Timeout {
    const KIND: PolicyKind = PolicyKind::Timeout;
    type Config = TimeoutConfig;
    type Spec = TimeoutConfigBuilder;

    builder_methods!();
}
