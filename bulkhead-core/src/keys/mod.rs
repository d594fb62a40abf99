//! The configuration keys of every policy: one table per policy, read by
//! the policies' config builders (generated from it), by the registry's
//! configuration sources and by the attribute macros, so that a key is
//! described once. (They are `bulkhead-keys`', which the macros depend on
//! without this crate.)
//!
//! [`PolicyKind`] names the policies; [`PolicyKind::keys`] is a policy's
//! table, each row a [`Key`]: its name,
//! the [`ValueKind`] of its value (with its range, which the builder checks
//! and the macros check at compile time, and its error code), its default
//! and what it means. [`did_you_mean`] matches a name that names nothing to
//! the key (or policy, or rejection kind) that was meant.
//!
//! A builder takes a value for any of its keys with `set_key` (such as
//! [`BulkheadConfigBuilder::set_key`](crate::BulkheadConfigBuilder::set_key)),
//! which is how configuration from outside the code reaches it.
//!
//! # Examples
//!
//! ```
//! use bulkhead_core::keys::{KeyValue, PolicyKind, did_you_mean};
//! use bulkhead_core::RetryConfig;
//!
//! let retry = PolicyKind::Retry;
//! let names = retry.keys().iter().map(|key| key.name());
//! assert_eq!(did_you_mean("max_atempts", names), Some("max_attempts"));
//!
//! let key = retry.key("max_attempts").unwrap();
//! assert_eq!((key.default(), key.code()), ("3", "ATR-008"));
//! let config = RetryConfig::builder()
//!     .set_key(key.name(), KeyValue::Integer(5))?
//!     .build()?;
//! assert_eq!(config.max_attempts(), 5);
//! # Ok::<(), bulkhead_core::ConfigError>(())
//! ```

pub use bulkhead_keys::{
    BASE_CONFIG, Bound, CONFIG, Float, Key, KeyValue, NAME, Origin, PolicyKind, Range, ValueKind,
    did_you_mean,
};

#[cfg(test)]
mod tests;
