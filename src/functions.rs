//! Policy attributes on functions with a body: each function keeps its
//! policies in a `static`, resolved from [`Registry::global`] on its first
//! call: a [`Bulkhead`] for `#[bulkhead]` alone, [`Policies`] otherwise.
//!
//! A method keeps one set of policies per `Self` type: a `static` in a
//! generic impl or a trait's default method is shared by every type the
//! method runs for, so [`MethodPolicy`] keeps the first type's policies
//! inline (checked with a pointer and string comparison on each call) and
//! the others in a map.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use bulkhead_core::{
    Bulkhead, BulkheadConfigBuilder, CircuitBreaker, CircuitBreakerConfigBuilder, Policies,
    PolicyContext, RateLimiter, RateLimiterConfigBuilder, Retry, RetryConfigBuilder, Timeout,
    TimeoutConfigBuilder,
};
use bulkhead_registry::{Registry, RegistryError};

/// What a function's attributes declare, resolved into its policy on the
/// function's first call.
#[doc(hidden)]
pub trait Declaration {
    /// What the function runs under.
    type Policy: Send + Sync + 'static;

    /// Resolves the policy from `registry`; if that fails, keeps the error
    /// for [`function_policy_errors`] and builds the policy on its own.
    fn resolve(self, registry: &Registry) -> Self::Policy;
}

/// What a function's `#[bulkhead]` declares when it is the only policy
/// attribute, made only on its first call.
#[doc(hidden)]
#[derive(Debug)]
pub struct FnDecl {
    name: Option<&'static str>,
    source: String,
    spec: BulkheadConfigBuilder,
}

impl FnDecl {
    /// The declaration of the function `source` (its instance id unless
    /// `name` is given), with the attribute's explicit values in `spec`.
    pub fn new(name: Option<&'static str>, source: String, spec: BulkheadConfigBuilder) -> Self {
        FnDecl { name, source, spec }
    }

    /// The declaration of `method` (`name(param types)`) of `self_type`,
    /// whose source is `<self_type>::<method>`, the type written as
    /// [`std::any::type_name`] writes it.
    pub fn method(
        name: Option<&'static str>,
        self_type: &str,
        method: &str,
        spec: BulkheadConfigBuilder,
    ) -> Self {
        FnDecl::new(name, format!("{self_type}::{method}"), spec)
    }
}

impl Declaration for FnDecl {
    type Policy = Bulkhead;

    fn resolve(self, registry: &Registry) -> Bulkhead {
        let id: Cow<'_, str> = match self.name {
            Some(name) => name.into(),
            None => self.source.as_str().into(),
        };
        match registry.bulkhead_policy(&id, &self.source, &self.spec) {
            Ok(bulkhead) => bulkhead,
            Err(error) => {
                errors().push(error);
                // The attribute's own values were checked at compile time,
                // so building them on the defaults cannot fail.
                let config = self.spec.build().unwrap_or_default();
                Bulkhead::new(&id, config)
            }
        }
    }
}

/// What a function's policy attributes declare when there are others than
/// `#[bulkhead]`: each policy with its `name` and the attribute's explicit
/// values, made only on its first call.
#[doc(hidden)]
#[derive(Debug)]
pub struct PoliciesDecl {
    source: String,
    bulkhead: Option<(Option<&'static str>, BulkheadConfigBuilder)>,
    retry: Option<(Option<&'static str>, RetryConfigBuilder)>,
    circuit_breaker: Option<(Option<&'static str>, CircuitBreakerConfigBuilder)>,
    timeout: Option<(Option<&'static str>, TimeoutConfigBuilder)>,
    rate_limiter: Option<(Option<&'static str>, RateLimiterConfigBuilder)>,
}

impl PoliciesDecl {
    /// No policy yet for the function `source`, which is also the
    /// instance id of each policy without a `name`.
    pub fn new(source: String) -> Self {
        PoliciesDecl {
            source,
            bulkhead: None,
            retry: None,
            circuit_breaker: None,
            timeout: None,
            rate_limiter: None,
        }
    }

    /// No policy yet for `method` (`name(param types)`) of `self_type`; see
    /// [`FnDecl::method`].
    pub fn method(self_type: &str, method: &str) -> Self {
        PoliciesDecl::new(format!("{self_type}::{method}"))
    }

    /// Adds the bulkhead.
    #[must_use]
    pub fn bulkhead(mut self, name: Option<&'static str>, spec: BulkheadConfigBuilder) -> Self {
        self.bulkhead = Some((name, spec));
        self
    }

    /// Adds the retry.
    #[must_use]
    pub fn retry(mut self, name: Option<&'static str>, spec: RetryConfigBuilder) -> Self {
        self.retry = Some((name, spec));
        self
    }

    /// Adds the circuit breaker.
    #[must_use]
    pub fn circuit_breaker(
        mut self,
        name: Option<&'static str>,
        spec: CircuitBreakerConfigBuilder,
    ) -> Self {
        self.circuit_breaker = Some((name, spec));
        self
    }

    /// Adds the timeout.
    #[must_use]
    pub fn timeout(mut self, name: Option<&'static str>, spec: TimeoutConfigBuilder) -> Self {
        self.timeout = Some((name, spec));
        self
    }

    /// Adds the rate limiter.
    #[must_use]
    pub fn rate_limiter(
        mut self,
        name: Option<&'static str>,
        spec: RateLimiterConfigBuilder,
    ) -> Self {
        self.rate_limiter = Some((name, spec));
        self
    }

    fn id<'a>(&'a self, name: &Option<&'static str>) -> &'a str {
        name.unwrap_or(&self.source)
    }

    /// Every policy, declared in one batch: all or none are registered.
    fn declare(&self, registry: &Registry) -> Result<Policies, RegistryError> {
        let source = self.source.as_str();
        let mut declare = registry.declare();
        let mut policies = Policies::on_clock(Arc::clone(registry.clock()));
        if let Some((name, spec)) = &self.retry {
            policies = policies.with_retry(declare.retry(self.id(name), source, spec)?);
        }
        if let Some((name, spec)) = &self.circuit_breaker {
            let breaker = declare.circuit_breaker(self.id(name), source, spec)?;
            policies = policies.with_circuit_breaker(breaker);
        }
        if let Some((name, spec)) = &self.rate_limiter {
            let limiter = declare.rate_limiter(self.id(name), source, spec)?;
            policies = policies.with_rate_limiter(limiter);
        }
        if let Some((name, spec)) = &self.timeout {
            policies = policies.with_timeout(declare.timeout(self.id(name), source, spec)?);
        }
        if let Some((name, spec)) = &self.bulkhead {
            policies = policies.with_bulkhead(declare.bulkhead(self.id(name), source, spec)?);
        }
        declare.commit();
        Ok(policies)
    }

    /// The policies built from the attributes' values over the built-in
    /// defaults, outside the registry, on its clock.
    fn fallback(&self, registry: &Registry) -> Policies {
        // The attributes' own values were checked at compile time, so
        // building them on the defaults cannot fail.
        let context = PolicyContext::new(Arc::clone(registry.clock()));
        let mut policies = Policies::on_clock(Arc::clone(registry.clock()));
        if let Some((name, spec)) = &self.retry {
            let config = spec.build().unwrap_or_default();
            policies =
                policies.with_retry(Retry::with_context(self.id(name), config, context.clone()));
        }
        if let Some((name, spec)) = &self.circuit_breaker {
            let config = spec.build().unwrap_or_default();
            let breaker = CircuitBreaker::with_context(self.id(name), config, context.clone());
            policies = policies.with_circuit_breaker(breaker);
        }
        if let Some((name, spec)) = &self.rate_limiter {
            let config = spec.build().unwrap_or_default();
            let limiter = RateLimiter::with_context(self.id(name), config, context.clone());
            policies = policies.with_rate_limiter(limiter);
        }
        if let Some((name, spec)) = &self.timeout {
            let config = spec.build().unwrap_or_default();
            let timeout = Timeout::with_context(self.id(name), config, context.clone());
            policies = policies.with_timeout(timeout);
        }
        if let Some((name, spec)) = &self.bulkhead {
            let config = spec.build().unwrap_or_default();
            let bulkhead = Bulkhead::with_context(self.id(name), config, context);
            policies = policies.with_bulkhead(bulkhead);
        }
        policies
    }
}

impl Declaration for PoliciesDecl {
    type Policy = Policies;

    fn resolve(self, registry: &Registry) -> Policies {
        match self.declare(registry) {
            Ok(policies) => policies,
            Err(error) => {
                errors().push(error);
                self.fallback(registry)
            }
        }
    }
}

/// The policy of one function, in a `static` the macro declares in it.
#[doc(hidden)]
pub struct FnPolicy<P> {
    policy: OnceLock<P>,
}

impl<P> FnPolicy<P> {
    /// Not resolved yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        FnPolicy {
            policy: OnceLock::new(),
        }
    }

    /// The policy, resolving `declare()` on the first call.
    #[inline]
    pub fn get<D>(&'static self, declare: impl FnOnce() -> D) -> &'static P
    where
        D: Declaration<Policy = P>,
    {
        match self.policy.get() {
            Some(policy) => policy,
            None => self.init(declare),
        }
    }

    #[cold]
    #[inline(never)]
    fn init<D>(&'static self, declare: impl FnOnce() -> D) -> &'static P
    where
        D: Declaration<Policy = P>,
    {
        self.policy
            .get_or_init(|| declare().resolve(Registry::global()))
    }
}

impl<P: fmt::Debug> fmt::Debug for FnPolicy<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnPolicy")
            .field("policy", &self.policy.get())
            .finish()
    }
}

/// The policies of one method with a body, one per `Self` type, in a
/// `static` the macro declares in it.
///
/// A method of a non-generic impl only ever runs for one type: its calls
/// load the resolved type name and compare it with `type_name::<Self>()`
/// (equal pointers, or else equal strings), and use the policy next to it.
/// Only a method of a generic impl, or a trait's default method, runs for
/// several types, and only it ever takes the map: each further type is
/// resolved once, under a lock, and looked up in the map (under a read lock)
/// on each call for that type.
#[doc(hidden)]
pub struct MethodPolicy<P: 'static> {
    first: OnceLock<ForType<P>>,
    others: RwLock<BTreeMap<&'static str, &'static P>>,
}

#[derive(Debug)]
struct ForType<P> {
    type_name: &'static str,
    policy: P,
}

impl<P> ForType<P> {
    #[inline]
    fn is(&self, type_name: &'static str) -> bool {
        std::ptr::eq(self.type_name, type_name) || self.type_name == type_name
    }
}

impl<P: 'static> MethodPolicy<P> {
    /// Not resolved for any type yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        MethodPolicy {
            first: OnceLock::new(),
            others: RwLock::new(BTreeMap::new()),
        }
    }

    /// The policy of the method for the type `type_name`, resolving
    /// `declare(type_name)` on the first call for that type.
    #[inline]
    pub fn get<D>(
        &'static self,
        type_name: &'static str,
        declare: impl Fn(&'static str) -> D,
    ) -> &'static P
    where
        D: Declaration<Policy = P>,
    {
        match self.first.get() {
            Some(first) if first.is(type_name) => &first.policy,
            _ => self.slow(type_name, declare),
        }
    }

    #[cold]
    #[inline(never)]
    fn slow<D>(
        &'static self,
        type_name: &'static str,
        declare: impl Fn(&'static str) -> D,
    ) -> &'static P
    where
        D: Declaration<Policy = P>,
    {
        let first = self.first.get_or_init(|| ForType {
            type_name,
            policy: declare(type_name).resolve(Registry::global()),
        });
        if first.is(type_name) {
            return &first.policy;
        }
        let found = self
            .others
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(type_name)
            .copied();
        if let Some(policy) = found {
            return policy;
        }
        let mut others = self.others.write().unwrap_or_else(PoisonError::into_inner);
        others.entry(type_name).or_insert_with(|| {
            // One per type the method runs for, kept for the program's
            // life like the `static` that holds the first.
            Box::leak(Box::new(declare(type_name).resolve(Registry::global())))
        })
    }
}

impl<P: fmt::Debug> fmt::Debug for MethodPolicy<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodPolicy")
            .field("first", &self.first.get())
            .field("others", &self.others.read().map(|m| m.len()).ok())
            .finish()
    }
}

static ERRORS: Mutex<Vec<RegistryError>> = Mutex::new(Vec::new());

fn errors() -> std::sync::MutexGuard<'static, Vec<RegistryError>> {
    ERRORS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The errors met so far resolving the policies of functions with a body
/// (policy attributes outside a `#[resilient]` trait) from
/// [`Registry::global`].
///
/// Such a function resolves its policies on its first call and cannot
/// return a registry error from it. If resolution fails (REG-004: a `config`
/// is not defined in the global registry; REG-008: it shares a `name` with a
/// differently configured policy), the function still runs, under policies
/// of its own built from the attributes' values over the built-in defaults
/// and left out of the registry (none of its policies is registered), and
/// the error is kept here. Check this list at startup after a first call,
/// or in a test.
///
/// # Examples
///
/// ```
/// use bulkhead::{bulkhead, Rejection};
///
/// #[bulkhead(config = "no-such-config")]
/// fn render() -> Result<(), Rejection> {
///     Ok(())
/// }
///
/// assert!(render().is_ok()); // runs, on a fallback bulkhead
/// let errors = bulkhead::function_policy_errors();
/// assert_eq!(errors[0].code(), "REG-004");
/// ```
pub fn function_policy_errors() -> Vec<RegistryError> {
    errors().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    static POLICY: MethodPolicy<Bulkhead> = MethodPolicy::new();

    fn declare(type_name: &'static str) -> FnDecl {
        FnDecl::method(
            None,
            type_name,
            "render()",
            BulkheadConfigBuilder::default(),
        )
    }

    #[test]
    fn a_method_has_one_bulkhead_per_self_type() {
        let a = POLICY.get("tests::A", declare);
        let b = POLICY.get("tests::B<(u8, u16)>", declare);
        assert_eq!(a.instance(), "tests::A::render()");
        assert_eq!(b.instance(), "tests::B<(u8, u16)>::render()");
        // The same type, named by another string: compared by value.
        let again = POLICY.get(String::from("tests::B<(u8, u16)>").leak(), declare);
        assert!(std::ptr::eq(b, again));
        assert!(std::ptr::eq(a, POLICY.get("tests::A", declare)));
    }
}
