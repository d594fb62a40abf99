//! Timeouts: their configuration keys.

use bulkhead_core::{Timeout, TimeoutConfig, TimeoutConfigBuilder};

use super::{Key, Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Timeout {
    const KIND: PolicyKind = PolicyKind::Timeout;
    const KEYS: &'static [Key<TimeoutConfigBuilder>] = &[Key::new("duration", |t, value, key| {
        Ok(t.duration(value.duration(key)?))
    })];
    type Config = TimeoutConfig;
    type Spec = TimeoutConfigBuilder;

    builder_methods!();
}
