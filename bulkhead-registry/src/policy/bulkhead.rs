//! Bulkheads: a limit that changes live (their keys are `bulkhead_core`'s
//! table).

use bulkhead_core::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Bulkhead {
    const KIND: PolicyKind = PolicyKind::Bulkhead;
    type Config = BulkheadConfig;
    type Spec = BulkheadConfigBuilder;

    builder_methods!();

    fn reconfigure(&self, old: &BulkheadConfig, new: &BulkheadConfig) -> bool {
        if old.max_concurrent() != new.max_concurrent() {
            // In range: it was resolved (and so checked) as a configuration.
            let _ = self.set_max_concurrent(new.max_concurrent());
        }
        if old.reserved_set() != new.reserved_set() {
            // Checked with the limit it was resolved with.
            let _ = self.set_reserved(new.reserved_set());
        }
        old.max_wait() == new.max_wait() && old.enabled() == new.enabled()
    }

    fn live(&self, declared: &BulkheadConfig) -> BulkheadConfig {
        // The limit, wait and switch are the instance's; the resource is
        // the registry's bookkeeping, as last resolved.
        let running = self.config();
        let mut live = BulkheadConfig::builder()
            .max_concurrent(running.max_concurrent())
            .max_wait(running.max_wait())
            .enabled(running.enabled());
        if let Some(reserved) = running.reserved_set() {
            live = live.reserved(reserved);
        }
        live.build_on(declared).unwrap_or(running)
    }
}
