//! Guides: how the library behaves, one page each. They are the Markdown
//! files of the repository's `docs/` folder, readable there too; each
//! attribute's page (its keys, errors and examples) is the attribute's own
//! documentation.
//!
//! - [`bulkhead`]: how a bulkhead behaves, the rules B1 to B14;
//! - [`adaptive`]: limits that an algorithm moves (AIMD, Vegas,
//!   Gradient2), and what they were measured to do;
//! - [`composition`]: the fixed order of the policies and what follows from
//!   it;
//! - [`configuration`]: keys, sources, precedence and reloads;
//! - `fleet` (feature `redis`): a resource's budget shared by a fleet of
//!   processes on Redis;
//! - [`paths`]: where each name lives.

// As for the attributes' pages (see the crate's root): the link definitions
// above a page win over the page's own, which point to docs.rs and to the
// other pages for readers of `docs/`.

/// [attr-resilient]: macro@crate::resilient
/// [attr-bulkhead]: macro@crate::bulkhead
/// [`Pipeline`]: crate::Pipeline
/// [`Bulkhead`]: crate::Bulkhead
/// [`Bulkhead::move_to_pool`]: crate::Bulkhead::move_to_pool
/// [`Bulkhead::occupancy`]: crate::Bulkhead::occupancy
/// [`ManualClock`]: crate::ManualClock
/// [`Registry::bulkhead`]: crate::Registry::bulkhead
/// [`BulkheadHandle`]: crate::BulkheadHandle
/// [`BulkheadSnapshot`]: crate::BulkheadSnapshot
/// [`Priority`]: crate::Priority
/// [`priority::scope`]: crate::priority::scope
/// [`priority::with`]: crate::priority::with
/// [`KeyedBulkhead`]: crate::KeyedBulkhead
/// [`KeyLimits`]: crate::KeyLimits
/// [`BulkheadPermit`]: crate::BulkheadPermit
#[doc = include_str!("../docs/bulkhead.md")]
pub mod bulkhead {}

/// [attr-bulkhead]: macro@crate::bulkhead
/// [`Aimd`]: crate::adaptive::Aimd
/// [`Vegas`]: crate::adaptive::Vegas
/// [`Gradient2`]: crate::adaptive::Gradient2
/// [`Sampling`]: crate::adaptive::Sampling
/// [`CallOutcome`]: crate::CallOutcome
/// [`BulkheadPermit::set_outcome`]: crate::BulkheadPermit::set_outcome
/// [`Room`]: crate::adaptive::Room
/// [`AdaptiveSnapshot`]: crate::adaptive::AdaptiveSnapshot
/// [figure]: https://raw.githubusercontent.com/bulkhead-rs/bulkhead/main/docs/adaptive_limits.svg
/// [figure-lognormal]: https://raw.githubusercontent.com/bulkhead-rs/bulkhead/main/docs/adaptive_lognormal.svg
/// [figure-pareto]: https://raw.githubusercontent.com/bulkhead-rs/bulkhead/main/docs/adaptive_pareto.svg
#[doc = include_str!("../docs/adaptive.md")]
pub mod adaptive {}

/// [attr-resilient]: macro@crate::resilient
/// [guide-bulkhead]: mod@crate::guide::bulkhead
/// [`Pipeline`]: crate::Pipeline
/// [`ManualClock`]: crate::ManualClock
#[doc = include_str!("../docs/composition.md")]
pub mod composition {}

/// [attr-bulkhead]: macro@crate::bulkhead
/// [attr-retry]: macro@crate::retry
/// [attr-circuit_breaker]: macro@crate::circuit_breaker
/// [attr-timeout]: macro@crate::timeout
/// [attr-rate_limiter]: macro@crate::rate_limiter
/// [attr-hedge]: macro@crate::hedge
/// [attr-fallback]: macro@crate::fallback
/// [attr-chaos]: macro@crate::chaos
/// [`RegistryBuilder`]: crate::RegistryBuilder
/// [`RegistryBuilder::try_build`]: crate::RegistryBuilder::try_build
/// [`ConfigError`]: crate::config::ConfigError
/// [`ConfigSourceError`]: crate::config::ConfigSourceError
/// [`RegistryError`]: crate::RegistryError
/// [`BulkheadHandle::set_max_concurrent`]: crate::BulkheadHandle::set_max_concurrent
/// [`Registry::reload`]: crate::Registry::reload
/// [`Change`]: crate::config::Change
/// [`KeyChange`]: crate::config::KeyChange
/// [guide-fleet]: crate::guide
#[doc = include_str!("../docs/configuration.md")]
pub mod configuration {}

#[doc = include_str!("../docs/paths.md")]
pub mod paths {}

#[cfg(feature = "redis")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "redis")))]
/// [guide-configuration]: mod@crate::guide::configuration
/// [`Registry::fleet_resource`]: crate::Registry::fleet_resource
/// [`Registry::leave_fleets`]: crate::Registry::leave_fleets
/// [`Registry::fleet_errors`]: crate::Registry::fleet_errors
/// [`Registry::declare`]: crate::Registry::declare
/// [`FleetConfig`]: crate::fleet::FleetConfig
/// [`FleetSnapshot`]: crate::fleet::FleetSnapshot
/// [`OnUnreachable`]: crate::fleet::OnUnreachable
/// [`FleetShareChanged`]: crate::events::FleetShareChanged
#[doc = include_str!("../docs/fleet.md")]
pub mod fleet {}
