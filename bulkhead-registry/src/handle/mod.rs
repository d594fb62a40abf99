//! Handles to live policy instances, and the registry's lookups that
//! return them: `registry.bulkhead(id)`, `registry.retry(id)`, ...

mod bulkhead;
mod circuit_breaker;
mod fallback;
mod hedge;
mod rate_limiter;
mod retry;
mod timeout;

use crate::error::RegistryError;
use crate::registry::Registry;

pub use bulkhead::BulkheadHandle;
pub use circuit_breaker::CircuitBreakerHandle;
pub use fallback::FallbackHandle;
pub use hedge::HedgeHandle;
pub use rate_limiter::RateLimiterHandle;
pub use retry::RetryHandle;
pub use timeout::TimeoutHandle;

impl Registry {
    /// The bulkhead with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no bulkhead has this id (a bulkhead exists once its trait
    /// was wrapped or its pipeline built).
    pub fn bulkhead(&self, id: &str) -> Result<BulkheadHandle, RegistryError> {
        self.stores()
            .bulkheads
            .get(id)
            .map(|policy| BulkheadHandle::new(policy, self.clone()))
    }

    /// The retry policy with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no retry policy has this id.
    pub fn retry(&self, id: &str) -> Result<RetryHandle, RegistryError> {
        self.stores()
            .retries
            .get(id)
            .map(|policy| RetryHandle::new(policy).with_events(self.events()))
    }

    /// The timeout policy with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no timeout policy has this id.
    pub fn timeout(&self, id: &str) -> Result<TimeoutHandle, RegistryError> {
        self.stores()
            .timeouts
            .get(id)
            .map(|policy| TimeoutHandle::new(policy).with_events(self.events()))
    }

    /// The circuit breaker with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no circuit breaker has this id.
    pub fn circuit_breaker(&self, id: &str) -> Result<CircuitBreakerHandle, RegistryError> {
        self.stores()
            .circuit_breakers
            .get(id)
            .map(|policy| CircuitBreakerHandle::new(policy).with_events(self.events()))
    }

    /// The rate limiter with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no rate limiter has this id.
    pub fn rate_limiter(&self, id: &str) -> Result<RateLimiterHandle, RegistryError> {
        self.stores()
            .rate_limiters
            .get(id)
            .map(|policy| RateLimiterHandle::new(policy).with_events(self.events()))
    }

    /// The hedge policy with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no hedge policy has this id.
    pub fn hedge(&self, id: &str) -> Result<HedgeHandle, RegistryError> {
        self.stores()
            .hedges
            .get(id)
            .map(|policy| HedgeHandle::new(policy).with_events(self.events()))
    }

    /// The fallback policy with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no fallback policy has this id.
    pub fn fallback(&self, id: &str) -> Result<FallbackHandle, RegistryError> {
        self.stores()
            .fallbacks
            .get(id)
            .map(|policy| FallbackHandle::new(policy).with_events(self.events()))
    }
}
