//! The timeout policy: a call that takes longer than `duration` ends with
//! a `CallTimeout`.
//!
//! - `config.rs`: [`TimeoutConfig`] and its builder.

mod config;

pub use config::{TimeoutConfig, TimeoutConfigBuilder};
