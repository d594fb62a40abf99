//! The retry policy: a failed call is tried again, up to `max_attempts`
//! attempts in all, after a delay that can grow and be randomized.
//!
//! - `config.rs`: [`RetryConfig`] and its builder.

mod config;

pub use config::{RetryConfig, RetryConfigBuilder};
