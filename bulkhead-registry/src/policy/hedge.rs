//! Hedge policies (their keys are `bulkhead_core`'s table).

use bulkhead_core::{Hedge, HedgeConfig, HedgeConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Hedge {
    const KIND: PolicyKind = PolicyKind::Hedge;
    type Config = HedgeConfig;
    type Spec = HedgeConfigBuilder;

    builder_methods!();
}
