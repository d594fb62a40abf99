//! Configuration from outside the code, and its errors: [`ConfigError`] for
//! a bad value (ATR-001, ATR-003, ATR-006, ATR-008, ...), and
//! [`ConfigSourceError`] for a source that cannot be read as configuration
//! (CFG-001 to CFG-004); [`Change`], what a reload changed in one instance,
//! and its [`KeyChange`]s, key by key;
//! [`DEFAULT_CONFIG`], the name of the configuration every policy starts
//! from.
//!
//! Keys, sources (TOML, files, environment variables), precedence and
//! reloads are described in the [configuration guide](crate::guide::configuration).
//! The registry returns these errors inside a [`RegistryError`]
//! (`RegistryError::Config`, `RegistryError::ConfigSource`), whose `code()`
//! and `Display` are theirs.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Registry, RegistryError};
//! use bulkhead::config::ConfigSourceError;
//!
//! let error = Registry::builder()
//!     .config_toml("[bulkhead.instances.thumbnails]\nmax_concurent = 4")
//!     .unwrap_err();
//! assert_eq!(error.code(), "CFG-001");
//! assert!(error.to_string().starts_with("CFG-001: unknown configuration key"));
//! assert!(matches!(
//!     error,
//!     RegistryError::ConfigSource(ConfigSourceError::UnknownKey { .. })
//! ));
//! ```
//!
//! [`RegistryError`]: crate::RegistryError

pub use bulkhead_core::ConfigError;
pub use bulkhead_registry::{Change, ConfigSourceError, DEFAULT_CONFIG, KeyChange};
