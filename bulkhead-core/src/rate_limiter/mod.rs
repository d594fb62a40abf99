//! The rate limiter: at most `limit_for_period` calls per `refresh_period`.

mod config;

pub use config::{RateLimiterConfig, RateLimiterConfigBuilder};
