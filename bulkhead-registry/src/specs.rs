//! [`PolicySpecs`]: what is given in code for a set of policies, declared
//! in a registry with [`Declarations::policies`](crate::Declarations::policies)
//! or built on its own with [`PolicySpecs::build_standalone`].

use std::sync::Arc;

use bulkhead_core::{
    Bulkhead, BulkheadConfigBuilder, CircuitBreaker, CircuitBreakerConfigBuilder, Clock, Fallback,
    FallbackConfigBuilder, Hedge, HedgeConfigBuilder, Policies, PolicyContext, RateLimiter,
    RateLimiterConfigBuilder, Retry, RetryConfigBuilder, Timeout, TimeoutConfigBuilder,
};

use crate::error::RegistryError;
use crate::kind::PolicyKind;
use crate::policy::{Policy, standalone};

/// The specs of a set of policies that run around the same calls: for each
/// policy, the values given in code (its config builder) and, if it has
/// one, its own instance id.
///
/// A policy without a name of its own has the set's id. A `#[resilient]`
/// method, a function with policy attributes and a
/// [`Pipeline`](crate::Pipeline) each hold one set; the registry declares
/// it with [`Declarations::policies`](crate::Declarations::policies), all or
/// nothing, and [`build_standalone`](Self::build_standalone) builds it
/// outside any registry.
///
/// Adding a policy twice replaces the first.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use bulkhead_registry::{PolicySpecs, Registry};
/// use bulkhead_core::{BulkheadConfig, ManualClock, TimeoutConfig};
///
/// let specs = PolicySpecs::new("shop::Thumbs#resize(u32)")
///     .timeout(None, TimeoutConfig::builder().duration(Duration::from_secs(1)))
///     .bulkhead(Some("thumbnails"), BulkheadConfig::builder().max_concurrent(4));
///
/// // In a registry, all or nothing:
/// let registry = Registry::new();
/// let mut declarations = registry.declare();
/// let policies = declarations.policies(&specs)?;
/// declarations.commit();
/// assert_eq!(registry.bulkhead("thumbnails")?.max_concurrent(), 4);
/// assert_eq!(policies.timeout().unwrap().instance(), "shop::Thumbs#resize(u32)");
///
/// // Or on their own, on a clock:
/// let policies = specs.build_standalone(Arc::new(ManualClock::new()))?;
/// assert_eq!(policies.bulkhead().unwrap().max_concurrent(), 4);
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PolicySpecs {
    id: String,
    source: Option<String>,
    bulkhead: Option<Entry<BulkheadConfigBuilder>>,
    retry: Option<Entry<RetryConfigBuilder>>,
    circuit_breaker: Option<Entry<CircuitBreakerConfigBuilder>>,
    timeout: Option<Entry<TimeoutConfigBuilder>>,
    rate_limiter: Option<Entry<RateLimiterConfigBuilder>>,
    hedge: Option<Entry<HedgeConfigBuilder>>,
    fallback: Option<Entry<FallbackConfigBuilder>>,
}

/// One policy of a set: its own id, if it has one, and its config builder.
#[derive(Debug, Clone)]
pub(crate) struct Entry<S> {
    name: Option<String>,
    spec: S,
}

impl PolicySpecs {
    /// No policy yet; `id` is the instance id of every policy added without
    /// a name, and says who declares them in error messages.
    pub fn new(id: impl Into<String>) -> Self {
        PolicySpecs {
            id: id.into(),
            source: None,
            bulkhead: None,
            retry: None,
            circuit_breaker: None,
            timeout: None,
            rate_limiter: None,
            hedge: None,
            fallback: None,
        }
    }

    /// No policy yet for a method with a body: `method` (`name(param
    /// types)`) of `self_type` (as [`std::any::type_name`] writes it), whose
    /// id is `<self_type>::<method>`.
    pub fn method(self_type: &str, method: &str) -> Self {
        PolicySpecs::new(format!("{self_type}::{method}"))
    }

    /// Says who declares these policies in error messages (a REG-008
    /// names both sides), when it is not the id: `pipeline "renderer"`.
    pub fn declared_by(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The instance id of the policies without a name of their own.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Who declares these policies, in error messages.
    pub fn source(&self) -> &str {
        self.source.as_deref().unwrap_or(&self.id)
    }

    /// Adds the bulkhead, with instance id `name` if given.
    pub fn bulkhead(self, name: Option<&str>, spec: BulkheadConfigBuilder) -> Self {
        self.with::<Bulkhead>(name, spec)
    }

    /// Adds the retry policy, with instance id `name` if given.
    pub fn retry(self, name: Option<&str>, spec: RetryConfigBuilder) -> Self {
        self.with::<Retry>(name, spec)
    }

    /// Adds the circuit breaker, with instance id `name` if given.
    pub fn circuit_breaker(self, name: Option<&str>, spec: CircuitBreakerConfigBuilder) -> Self {
        self.with::<CircuitBreaker>(name, spec)
    }

    /// Adds the timeout, with instance id `name` if given.
    pub fn timeout(self, name: Option<&str>, spec: TimeoutConfigBuilder) -> Self {
        self.with::<Timeout>(name, spec)
    }

    /// Adds the rate limiter, with instance id `name` if given.
    pub fn rate_limiter(self, name: Option<&str>, spec: RateLimiterConfigBuilder) -> Self {
        self.with::<RateLimiter>(name, spec)
    }

    /// Adds the hedge, with instance id `name` if given.
    pub fn hedge(self, name: Option<&str>, spec: HedgeConfigBuilder) -> Self {
        self.with::<Hedge>(name, spec)
    }

    /// Adds the fallback, with instance id `name` if given. (Its method is
    /// the caller's to call: see [`Fallback`].)
    pub fn fallback(self, name: Option<&str>, spec: FallbackConfigBuilder) -> Self {
        self.with::<Fallback>(name, spec)
    }

    /// Builds every policy on its own, outside any registry: from the
    /// values given here over the built-in defaults (no named config, no
    /// override applies), on `clock`, publishing no events.
    ///
    /// # Errors
    ///
    /// The ATR code of an invalid value given here (values an attribute
    /// gives were checked when it compiled).
    pub fn build_standalone(&self, clock: Arc<dyn Clock>) -> Result<Policies, RegistryError> {
        let context = PolicyContext::new(Arc::clone(&clock));
        let mut policies = Policies::on_clock(clock);
        for kind in PolicyKind::OUTSIDE_IN {
            policies = match kind {
                PolicyKind::Retry => self.add::<Retry>(policies, &context, Policies::with_retry),
                PolicyKind::CircuitBreaker => {
                    self.add::<CircuitBreaker>(policies, &context, Policies::with_circuit_breaker)
                }
                PolicyKind::RateLimiter => {
                    self.add::<RateLimiter>(policies, &context, Policies::with_rate_limiter)
                }
                PolicyKind::Timeout => {
                    self.add::<Timeout>(policies, &context, Policies::with_timeout)
                }
                PolicyKind::Bulkhead => {
                    self.add::<Bulkhead>(policies, &context, Policies::with_bulkhead)
                }
                PolicyKind::Hedge => self.add::<Hedge>(policies, &context, Policies::with_hedge),
                PolicyKind::Fallback => {
                    self.add::<Fallback>(policies, &context, Policies::with_fallback)
                }
            }?;
        }
        Ok(policies)
    }

    /// `policies` with `P` built on its own, if there is one.
    fn add<P: Slot>(
        &self,
        policies: Policies,
        context: &PolicyContext,
        with: fn(Policies, P) -> Policies,
    ) -> Result<Policies, RegistryError> {
        Ok(match self.spec::<P>() {
            Some((id, spec)) => with(policies, standalone::<P>(id, spec, context)?),
            None => policies,
        })
    }

    /// Policy `P`'s instance id and spec, if the set has it.
    pub(crate) fn spec<P: Slot>(&self) -> Option<(&str, &P::Spec)> {
        P::slot(self)
            .as_ref()
            .map(|s| (s.name.as_deref().unwrap_or(&self.id), &s.spec))
    }

    /// Sets policy `P`.
    fn with<P: Slot>(mut self, name: Option<&str>, spec: P::Spec) -> Self {
        *P::slot_mut(&mut self) = Some(Entry {
            name: name.map(str::to_owned),
            spec,
        });
        self
    }

    /// Extends the spec of policy `P` (a default one if it has none yet)
    /// with `f`, keeping its name.
    pub(crate) fn extend<P: Slot>(&mut self, f: impl FnOnce(P::Spec) -> P::Spec) {
        let slot = P::slot_mut(self);
        let (name, spec) = match slot.take() {
            Some(Entry { name, spec }) => (name, spec),
            None => (None, P::Spec::default()),
        };
        *slot = Some(Entry {
            name,
            spec: f(spec),
        });
    }
}

/// Where a [`PolicySpecs`] keeps the spec of policy `Self`.
pub(crate) trait Slot: Policy {
    fn slot(specs: &PolicySpecs) -> &Option<Entry<Self::Spec>>;
    fn slot_mut(specs: &mut PolicySpecs) -> &mut Option<Entry<Self::Spec>>;
}

macro_rules! slot {
    ($($policy:ty => $field:ident),* $(,)?) => {$(
        impl Slot for $policy {
            fn slot(specs: &PolicySpecs) -> &Option<Entry<Self::Spec>> {
                &specs.$field
            }

            fn slot_mut(specs: &mut PolicySpecs) -> &mut Option<Entry<Self::Spec>> {
                &mut specs.$field
            }
        }
    )*};
}

slot!(
    Bulkhead => bulkhead,
    Retry => retry,
    CircuitBreaker => circuit_breaker,
    Timeout => timeout,
    RateLimiter => rate_limiter,
    Hedge => hedge,
    Fallback => fallback,
);

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bulkhead_core::{
        BulkheadConfig, ManualClock, RateLimiterConfig, RetryConfig, SystemClock, TimeoutConfig,
    };

    use super::*;

    #[test]
    fn bounds() {
        fn send_sync<T: Send + Sync + Clone + 'static>() {}
        send_sync::<PolicySpecs>();
    }

    #[test]
    fn a_policy_without_a_name_has_the_sets_id() {
        let specs = PolicySpecs::new("f")
            .retry(None, RetryConfig::builder())
            .bulkhead(Some("db"), BulkheadConfig::builder());
        assert_eq!(specs.spec::<Retry>().map(|(id, _)| id), Some("f"));
        assert_eq!(specs.spec::<Bulkhead>().map(|(id, _)| id), Some("db"));
        assert!(specs.spec::<Timeout>().is_none());
        assert_eq!(specs.source(), "f");
        assert_eq!(
            specs.declared_by("pipeline \"f\"").source(),
            "pipeline \"f\""
        );
        assert_eq!(PolicySpecs::method("a::B", "f(u8)").id(), "a::B::f(u8)");
    }

    #[test]
    fn extending_a_spec_keeps_what_it_had() {
        let mut specs =
            PolicySpecs::new("f").bulkhead(Some("db"), BulkheadConfig::builder().max_concurrent(3));
        specs.extend::<Bulkhead>(|b| b.max_wait(Duration::from_secs(1)));
        specs.extend::<Retry>(|r| r.max_attempts(2));
        let (id, bulkhead) = specs.spec::<Bulkhead>().unwrap();
        assert_eq!(id, "db");
        let config = bulkhead.build().unwrap();
        assert_eq!(config.max_concurrent(), 3);
        assert_eq!(config.max_wait(), Duration::from_secs(1));
        let (_, retry) = specs.spec::<Retry>().unwrap();
        assert_eq!(retry.build().unwrap().max_attempts(), 2);
    }

    #[test]
    fn a_standalone_set_is_built_over_the_built_in_defaults_on_the_given_clock() {
        let clock = ManualClock::new();
        let specs = PolicySpecs::new("f")
            .timeout(
                None,
                TimeoutConfig::builder().duration(Duration::from_secs(2)),
            )
            .rate_limiter(
                None,
                RateLimiterConfig::builder()
                    .limit_for_period(1)
                    .refresh_period(Duration::from_secs(60))
                    .max_wait(Duration::ZERO),
            )
            .bulkhead(Some("db"), BulkheadConfig::builder().config("nowhere"));
        let policies = specs.build_standalone(Arc::new(clock.clone())).unwrap();
        let timeout = policies.timeout().unwrap();
        assert_eq!(timeout.instance(), "f");
        assert_eq!(timeout.config().duration(), Duration::from_secs(2));
        // A named config means nothing outside a registry.
        let bulkhead = policies.bulkhead().unwrap();
        assert_eq!(bulkhead.instance(), "db");
        assert_eq!(bulkhead.config(), BulkheadConfig::default());
        assert!(policies.retry().is_none());
        // The limiter's period turns on the given clock, not the system's.
        let limiter = policies.rate_limiter().unwrap();
        assert!(limiter.try_acquire().is_ok());
        assert!(limiter.try_acquire().is_err());
        clock.advance(Duration::from_secs(60));
        assert!(limiter.try_acquire().is_ok());
    }

    #[test]
    fn a_standalone_set_with_an_invalid_value_is_its_code() {
        let specs =
            PolicySpecs::new("f").bulkhead(None, BulkheadConfig::builder().max_concurrent(0));
        let err = specs.build_standalone(Arc::new(SystemClock)).unwrap_err();
        assert_eq!(err.code(), "ATR-003");
    }
}
