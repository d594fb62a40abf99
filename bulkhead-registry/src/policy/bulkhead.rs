//! Bulkheads: their configuration keys, and a limit that changes live.

use bulkhead_core::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder, ConfigError};

use super::{Key, Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Bulkhead {
    const KIND: PolicyKind = PolicyKind::Bulkhead;
    const KEYS: &'static [Key<BulkheadConfigBuilder>] = &[
        Key::new("max_concurrent", |b, value, key| {
            Ok(b.max_concurrent(value.limit(key, BulkheadConfig::MAX_CONCURRENT)?))
        }),
        Key::new("max_wait", |b, value, key| {
            Ok(b.max_wait(value.duration(key)?))
        }),
        Key::new(
            "enabled",
            |b, value, key| Ok(b.enabled(value.boolean(key)?)),
        ),
        Key::new("resource", |b, value, key| {
            match value.text().filter(|t| !t.is_empty()) {
                Some(name) => Ok(b.resource(name)),
                None => Err(ConfigError::InvalidChoice {
                    key: key.to_owned(),
                    value: value
                        .text()
                        .map_or_else(|| value.to_string(), str::to_owned),
                    choices: "a resource name".to_owned(),
                }),
            }
        }),
    ];
    type Config = BulkheadConfig;
    type Spec = BulkheadConfigBuilder;

    builder_methods!();

    fn reconfigure(&self, old: &BulkheadConfig, new: &BulkheadConfig) -> bool {
        if old.max_concurrent() != new.max_concurrent() {
            // In range: it was resolved (and so checked) as a configuration.
            let _ = self.set_max_concurrent(new.max_concurrent());
        }
        old.max_wait() == new.max_wait() && old.enabled() == new.enabled()
    }

    fn live(&self, declared: &BulkheadConfig) -> BulkheadConfig {
        // The limit, wait and switch are the instance's; the resource is
        // the registry's bookkeeping, as last resolved.
        let running = self.config();
        BulkheadConfig::builder()
            .max_concurrent(running.max_concurrent())
            .max_wait(running.max_wait())
            .enabled(running.enabled())
            .build_on(declared)
            .unwrap_or(running)
    }
}
