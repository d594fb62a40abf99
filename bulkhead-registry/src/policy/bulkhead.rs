//! Bulkheads: a limit that changes live (their keys are `bulkhead_core`'s
//! table).

use bulkhead_core::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder, ConfigError};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Bulkhead {
    const KIND: PolicyKind = PolicyKind::Bulkhead;
    type Config = BulkheadConfig;
    type Spec = BulkheadConfigBuilder;

    builder_methods!();

    fn check(config: &BulkheadConfig, key_prefix: &str) -> Result<(), ConfigError> {
        config.check_limits(key_prefix)
    }

    fn check_overrides(
        specs: &[&BulkheadConfigBuilder],
        key_prefix: &str,
    ) -> Result<(), ConfigError> {
        let written = specs
            .iter()
            .fold(BulkheadConfigBuilder::default(), |lower, spec| {
                spec.over(&lower)
            });
        written.check_together(key_prefix)
    }

    fn reconfigure(&self, old: &BulkheadConfig, new: &BulkheadConfig) {
        if old.max_concurrent() != new.max_concurrent() {
            // In range: it was resolved (and so checked) as a configuration.
            // On an adaptive bulkhead it moves the ceiling.
            let _ = self.set_max_concurrent(new.max_concurrent());
        }
        if old.reserved_set() != new.reserved_set() {
            // Checked with the limit it was resolved with.
            let _ = self.set_reserved(new.reserved_set());
        }
        // The rest is fixed when the bulkhead is made. A new resource is
        // followed by the registry after the reload (`sync_rooms` moves the
        // bulkhead to its pool; its budget and room follow it).
    }

    fn live(&self, declared: &BulkheadConfig) -> BulkheadConfig {
        // The limit (an adaptive bulkhead's ceiling), the wait, the switch
        // and the algorithm are the instance's; the resource is the
        // registry's bookkeeping, as last resolved.
        self.config().on_resource(declared.resource())
    }
}
