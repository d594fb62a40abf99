//! The configuration keys of every policy of the `bulkhead` crate: one
//! table per policy, read by the policies' config builders (generated from
//! it in `bulkhead-core`), by the registry's configuration sources and by
//! the attribute macros, so that a key is described once.
//!
//! ```
//! use bulkhead_keys::{KeyValue, PolicyKind, did_you_mean};
//!
//! let retry = PolicyKind::Retry;
//! let names = retry.keys().iter().map(|key| key.name());
//! assert_eq!(did_you_mean("max_atempts", names), Some("max_attempts"));
//!
//! let key = retry.key("max_attempts").unwrap();
//! assert_eq!((key.default(), key.code()), ("3", "ATR-008"));
//! assert_eq!(key.kind().to_string(), "integer, at least 1");
//! ```
//!
//! [`PolicyKind`] names the policies; [`PolicyKind::keys`] is a policy's
//! table (written in `table/`, one row per key), each row a [`Key`]: its
//! name, the [`ValueKind`] of its value (with its range, which the builder
//! checks and the macros check at compile time, and its error code), its
//! default and what it means. [`KeyValue`] is a value read by its kind;
//! [`ConfigError`] what is wrong with one. [`did_you_mean`] matches a name
//! that names nothing to the key (or policy, or rejection kind) that was
//! meant.
//!
//! This crate is small and depends on no policy, so that the macros (and a
//! user's build) need not wait for the policies to compile.

// No `unsafe` here.
#![forbid(unsafe_code)]

mod config;
mod delay;
mod key;
mod latency;
mod policy;
mod priority;
mod queue;
mod rejection;
mod rows;
mod suggest;
mod table;
mod value;

pub use config::{
    ConfigError, check_limit, check_positive, check_range, parse_bool, parse_duration,
};
pub use delay::HedgeDelay;
pub use key::{BASE_CONFIG, CONFIG, Key, NAME, Origin};
pub use latency::ChaosLatency;
pub use policy::PolicyKind;
pub use priority::{Priority, ShedAt};
pub use queue::QueueDiscipline;
pub use rejection::{RejectionKind, RejectionKinds};
pub use suggest::did_you_mean;
pub use table::bulkhead::MAX_PER_KEY;
pub use value::{Bound, Float, KeyValue, Range, ValueKind};

#[cfg(test)]
mod tests;
