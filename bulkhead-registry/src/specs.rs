//! [`PolicySpecs`]: what is given in code for a set of policies, declared
//! in a registry with [`Declarations::policies`](crate::Declarations::policies)
//! or built on its own with [`PolicySpecs::build_standalone`].

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use bulkhead_core::{Clock, Policies, PolicyContext};

use crate::error::RegistryError;
use crate::policy::{Managed, standalone};
use crate::registry::declare::Declarations;
use bulkhead_core::keys::PolicyKind;

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
    /// Each policy's entry, at its kind's place in [`PolicyKind::ALL`].
    entries: [Option<Box<dyn AnyEntry>>; PolicyKind::COUNT],
}

/// One policy of a set: its own id, if it has one, and its config builder.
#[derive(Debug, Clone)]
struct Entry<P: Managed> {
    name: Option<String>,
    spec: P::Spec,
}

impl PolicySpecs {
    /// No policy yet; `id` is the instance id of every policy added without
    /// a name, and says who declares them in error messages.
    pub fn new(id: impl Into<String>) -> Self {
        PolicySpecs {
            id: id.into(),
            source: None,
            entries: Default::default(),
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
        self.compose(clock, &Maker::Standalone(&context))
    }

    /// Declares every policy in `declarations`, outermost first, and
    /// returns them composed; see
    /// [`Declarations::policies`](crate::Declarations::policies).
    pub(crate) fn declare(
        &self,
        declarations: &Declarations<'_>,
        clock: Arc<dyn Clock>,
    ) -> Result<Policies, RegistryError> {
        self.compose(clock, &Maker::Declared(declarations))
    }

    /// Every policy of the set, made by `maker` outermost first, composed
    /// on `clock`.
    fn compose(
        &self,
        clock: Arc<dyn Clock>,
        maker: &Maker<'_, '_>,
    ) -> Result<Policies, RegistryError> {
        PolicyKind::OUTSIDE_IN
            .into_iter()
            .filter_map(|kind| self.entries[kind as usize].as_deref())
            .try_fold(Policies::on_clock(clock), |policies, entry| {
                entry.compose(self, maker, policies)
            })
    }

    /// Policy `P`'s entry, if the set has it.
    fn entry<P: Managed>(&self) -> Option<&Entry<P>> {
        let entry: &dyn Any = self.entries[P::KIND as usize].as_deref()?;
        Some(
            entry
                .downcast_ref()
                .expect("a kind's place holds its entry"),
        )
    }

    /// Policy `P`'s instance id and spec, if the set has it.
    pub(crate) fn spec<P: Managed>(&self) -> Option<(&str, &P::Spec)> {
        self.entry::<P>()
            .map(|e| (e.name.as_deref().unwrap_or(&self.id), &e.spec))
    }

    /// Sets policy `P`.
    pub(crate) fn with<P: Managed>(mut self, name: Option<&str>, spec: P::Spec) -> Self {
        self.entries[P::KIND as usize] = Some(Box::new(Entry::<P> {
            name: name.map(str::to_owned),
            spec,
        }));
        self
    }

    /// Extends the spec of policy `P` (a default one if it has none yet)
    /// with `f`, keeping its name.
    pub(crate) fn extend<P: Managed>(&mut self, f: impl FnOnce(P::Spec) -> P::Spec) {
        let (name, spec) = match self.entry::<P>() {
            Some(entry) => (entry.name.clone(), entry.spec.clone()),
            None => (None, P::Spec::default()),
        };
        self.entries[P::KIND as usize] = Some(Box::new(Entry::<P> {
            name,
            spec: f(spec),
        }));
    }
}

/// Where a set's policies are made: declared in a registry, or each on its
/// own on a context.
enum Maker<'a, 'r> {
    Declared(&'a Declarations<'r>),
    Standalone(&'a PolicyContext),
}

/// An entry of any policy, for what a set does with each alike.
trait AnyEntry: Any + fmt::Debug + Send + Sync {
    /// A copy.
    fn clone_box(&self) -> Box<dyn AnyEntry>;
    /// `policies` with this policy of `set`, made by `maker`.
    fn compose(
        &self,
        set: &PolicySpecs,
        maker: &Maker<'_, '_>,
        policies: Policies,
    ) -> Result<Policies, RegistryError>;
}

impl Clone for Box<dyn AnyEntry> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

impl<P: Managed> AnyEntry for Entry<P> {
    fn clone_box(&self) -> Box<dyn AnyEntry> {
        Box::new(self.clone())
    }

    fn compose(
        &self,
        set: &PolicySpecs,
        maker: &Maker<'_, '_>,
        policies: Policies,
    ) -> Result<Policies, RegistryError> {
        let id = self.name.as_deref().unwrap_or(&set.id);
        let policy = match maker {
            Maker::Declared(declarations) => {
                P::declare(declarations, id, set.source(), &self.spec)?
            }
            Maker::Standalone(context) => standalone::<P>(id, &self.spec, context)?,
        };
        Ok(policy.compose(policies))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bulkhead_core::{
        Bulkhead, BulkheadConfig, ManualClock, RateLimiterConfig, Retry, RetryConfig, SystemClock,
        Timeout, TimeoutConfig,
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
