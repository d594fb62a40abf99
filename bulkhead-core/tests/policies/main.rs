//! The policies on their own, without a registry: bounded barging of the
//! bulkhead (`barging`), several bulkheads on one pool under load
//! (`pool_stress`), what a composed circuit breaker records
//! (`breaker_classification`), what the outer policies make of injected
//! faults and latency (`chaos`), the rate limiter under contention
//! (`rate_limiter_races`), policies on recent readings of the clock
//! (`recent_readings`), a call's deadline through every policy
//! (`deadline`) and errors that say when to try again (`pushback`).
//!
//! The loom model of the slot accounting is a binary of its own,
//! `loom_bulkhead.rs`, built only under `--cfg loom`.

mod barging;
mod breaker_classification;
mod chaos;
mod deadline;
mod pool_stress;
mod pushback;
mod rate_limiter_races;
mod recent_readings;
