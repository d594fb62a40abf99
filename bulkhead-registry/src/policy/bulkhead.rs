//! Bulkheads in a registry: [`BulkheadHandle`], [`BulkheadSnapshot`], and
//! the registry's methods named after them. A bulkhead's limit changes
//! live, and a bulkhead on a resource counts against its budget.

use std::time::Duration;

use bulkhead_core::{
    AdaptiveSnapshot, Bulkhead, BulkheadConfig, BulkheadConfigBuilder, BulkheadEvent,
    ClassOccupancy, ConfigError, Traffic,
};

use super::{Managed, Policy, inherent_methods, policy_methods};
use crate::budget::Budgets;
use crate::error::RegistryError;
use crate::events::policy_event;
use crate::handle::Handle;
use crate::pipeline::PipelineBuilder;
use crate::registry::Registry;
use crate::registry::builder::RegistryBuilder;
use crate::registry::declare::Declarations;
use crate::snapshot::RegistrySnapshot;
use crate::specs::PolicySpecs;
use crate::store::Store;
use bulkhead_core::keys::PolicyKind;

impl Policy for Bulkhead {
    type Config = BulkheadConfig;
    type Snapshot = BulkheadSnapshot;
    type Event = BulkheadEvent;

    inherent_methods!();

    fn snapshot(&self) -> BulkheadSnapshot {
        let config = Self::config(self);
        // One reading: its fields agree with each other while limits change.
        let now = self.occupancy();
        BulkheadSnapshot {
            instance: Self::instance(self).to_owned(),
            concurrent_calls: now.concurrent_calls,
            waiting_calls: now.waiting_calls,
            max_concurrent: now.max_concurrent,
            available: now.available,
            reserved: now.reserved,
            borrowed: now.borrowed,
            max_wait: config.max_wait(),
            enabled: config.enabled(),
            traffic: self.traffic(),
            adaptive: now.adaptive,
            classes: now.classes,
        }
    }
}

impl Managed for Bulkhead {
    const KIND: PolicyKind = PolicyKind::Bulkhead;
    type Spec = BulkheadConfigBuilder;

    policy_methods!(bulkheads, with_bulkhead);

    fn check(config: &BulkheadConfig, key_prefix: &str) -> Result<(), ConfigError> {
        config.check_limits(key_prefix)
    }

    fn check_overrides(
        specs: &[&BulkheadConfigBuilder],
        key_prefix: &str,
    ) -> Result<(), ConfigError> {
        let written = specs
            .iter()
            .fold(BulkheadConfigBuilder::default(), |lower, spec| {
                spec.over(&lower)
            });
        written.check_together(key_prefix)
    }

    fn reconfigure(&self, old: &BulkheadConfig, new: &BulkheadConfig) {
        if old.max_concurrent() != new.max_concurrent() {
            // In range: it was resolved (and so checked) as a configuration.
            // On an adaptive bulkhead it moves the ceiling.
            let _ = self.set_max_concurrent(new.max_concurrent());
        }
        if old.reserved_set() != new.reserved_set() {
            // Checked with the limit it was resolved with.
            let _ = self.set_reserved(new.reserved_set());
        }
        if old.shed_at() != new.shed_at() || old.priority_set() != new.priority_set() {
            self.set_priorities(new.shed_at(), new.priority_set());
        }
        if (old.queue(), old.queue_target(), old.queue_interval())
            != (new.queue(), new.queue_target(), new.queue_interval())
        {
            // Checked as a configuration when it was resolved.
            let _ = self.set_queue(new.queue(), new.queue_target(), new.queue_interval());
        }
        // The rest is fixed when the bulkhead is made. A new resource is
        // followed by the registry after the reload (`sync_rooms` moves the
        // bulkhead to its pool; its budget and room follow it).
    }

    fn live(&self, declared: &BulkheadConfig) -> BulkheadConfig {
        // The limit (an adaptive bulkhead's ceiling), the wait, the switch
        // and the algorithm are the instance's; the resource is the
        // registry's bookkeeping, as last resolved.
        Self::config(self).on_resource(declared.resource())
    }

    fn check_plan(
        store: &Store<Bulkhead>,
        plan: &[(String, BulkheadConfig)],
        budgets: &Budgets,
    ) -> Result<(), RegistryError> {
        let current = store.declared_configs();
        budgets.check(
            current
                .iter()
                .chain(plan)
                .map(|(id, config)| (id.as_str(), config)),
        )
    }

    fn declare(
        declarations: &Declarations<'_>,
        id: &str,
        source: &str,
        spec: &BulkheadConfigBuilder,
    ) -> Result<Bulkhead, RegistryError> {
        let registry = declarations.registry();
        if let Some(key_type) = registry.keyed_store().key_type(id) {
            return Err(RegistryError::KindConflict {
                instance: id.to_owned(),
                declared: crate::keyed::keyed_of(key_type),
                requested: "a bulkhead".to_owned(),
            });
        }
        let bulkheads = registry.stores().of::<Bulkhead>();
        let config = bulkheads.resolve(id, spec)?;
        // A bulkhead already declared (registered, or staged by an open
        // batch) is shared or refused with REG-008: its slots were counted
        // when it was created.
        let new = !bulkheads.is_declared(id);
        if config.resource().is_some() && new {
            registry.check_budgets([(id, &config)])?;
        }
        let bulkhead = declarations.stage(id, source, spec)?;
        if config.resource().is_some() {
            // What it reserves comes out of the room the adaptive
            // bulkheads on the resource grow into; an adaptive one gets it.
            registry.sync_rooms();
        }
        // A new bulkhead on a fleet resource admits nothing the fleet has
        // not granted: it is closed before anyone can call it.
        if let Some(resource) = config.resource().filter(|_| new) {
            registry.adopt_on_fleet(resource, &bulkhead);
        }
        Ok(bulkhead)
    }
}

policy_event!(BulkheadEvent => Bulkhead);

/// A view of one bulkhead of a registry, from [`Registry::bulkhead`]: its
/// state, its limit, and the bulkhead itself.
pub type BulkheadHandle = Handle<Bulkhead>;

impl Handle<Bulkhead> {
    /// Calls holding a slot now.
    pub fn concurrent_calls(&self) -> u32 {
        self.policy.concurrent_calls()
    }

    /// Calls waiting for a slot now (0 when `max_wait` is zero). For
    /// monitoring only: by the time you read it, it may have changed.
    pub fn waiting_calls(&self) -> u32 {
        self.policy.waiting_calls()
    }

    /// The current limit.
    pub fn max_concurrent(&self) -> u32 {
        self.policy.max_concurrent()
    }

    /// Changes the limit at once; see [`Bulkhead::set_max_concurrent`] for
    /// what happens to calls in flight and to waiters. A `LimitChanged`
    /// event is published.
    ///
    /// The change lasts until the next [`Registry::reload`], which puts
    /// every limit back to what the configuration says. A bulkhead on a
    /// resource stays within the resource's budget: unlike
    /// [`Bulkhead::set_max_concurrent`] on [`bulkhead`](Self::bulkhead),
    /// which knows nothing of budgets, this checks it.
    ///
    /// A `reserved` above the new limit is kept at most it (the
    /// reservation in force never exceeds the limit in force), and an
    /// adaptive bulkhead's `initial_concurrent`, which only mattered when
    /// it started, is no bound.
    ///
    /// # Errors
    ///
    /// - ATR-003 if `max_concurrent` is out of range;
    /// - ATR-015 if it is below an adaptive bulkhead's `min_concurrent`;
    /// - REG-010 if the bulkheads on its resource would then need more
    ///   slots than the resource's budget.
    ///
    /// The limit is then unchanged.
    ///
    /// It is serialised with declarations and reloads: it waits while
    /// another thread has a [`Registry::declare`] batch open. On the thread
    /// that holds the batch it runs at once, and the bulkheads the batch
    /// declared count against the budget.
    pub fn set_max_concurrent(&self, max_concurrent: u32) -> Result<(), RegistryError> {
        self.registry
            .set_max_concurrent(&self.policy, max_concurrent)
    }

    /// The bulkhead itself, to enter it directly.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.policy
    }
}

/// A bulkhead's state at one moment.
///
/// Its slot fields (`concurrent_calls` to `borrowed`, and `adaptive`) are
/// one reading ([`Bulkhead::occupancy`](bulkhead_core::Bulkhead::occupancy)):
/// they agree with each other whatever changes the limits at the time, so
/// `available <= max_concurrent`, `reserved <= max_concurrent` and
/// `concurrent_calls + available <= max_concurrent` unless `available` is
/// 0. `traffic` is read just after.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkheadSnapshot {
    /// The instance id.
    pub instance: String,
    /// Calls holding a slot.
    pub concurrent_calls: u32,
    /// Calls waiting for a slot (0 when `max_wait` is zero).
    pub waiting_calls: u32,
    /// The limit in force: the configured `max_concurrent` (for an
    /// adaptive bulkhead, the limit its algorithm set last; its ceiling is
    /// `adaptive.ceiling`), or less while a fleet resource's share holds it
    /// lower (down to 0).
    pub max_concurrent: u32,
    /// Slots free right now: `max_concurrent - concurrent_calls`, or 0 while
    /// more calls are in flight than a lowered limit allows or while callers
    /// queue on the bulkhead. On a resource whose bulkheads borrow, the
    /// slots beyond `reserved` count only as far as the resource's
    /// unreserved slots are free and nobody queues for them
    /// ([`Bulkhead::available`](bulkhead_core::Bulkhead::available)).
    pub available: u32,
    /// The slots of its resource's budget kept for it now (its `reserved`,
    /// at most `max_concurrent`); off a resource, `max_concurrent`.
    pub reserved: u32,
    /// Calls in flight on borrowed slots: beyond `reserved`, on the
    /// resource's unreserved slots (0 off a resource).
    pub borrowed: u32,
    /// How long a caller may wait for a slot.
    pub max_wait: Duration,
    /// Whether the bulkhead limits anything.
    pub enabled: bool,
    /// Arrivals, admissions, rejections and hold times since the bulkhead
    /// was created, when the registry tracks sizing
    /// (`Registry::builder().track_sizing(true)`); see `Registry::sizing`.
    pub traffic: Option<Traffic>,
    /// What an adaptive bulkhead's algorithm knows (its bounds, its
    /// estimates of the no-load and recent latency, its counts); `None`
    /// unless `adaptive` is on.
    pub adaptive: Option<AdaptiveSnapshot>,
    /// Each priority class, lowest first, at the same instant as the slot
    /// fields: its threshold under `max_concurrent` (its `shed_at` share),
    /// the calls it holds (calls nobody gave a class count for the
    /// bulkhead's `priority`), those beyond its share after a limit was
    /// lowered, and the calls it had shed.
    pub classes: [ClassOccupancy; 4],
}

impl Registry {
    /// The bulkhead with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no bulkhead has this id (a bulkhead exists once its trait
    /// was wrapped or its pipeline built).
    pub fn bulkhead(&self, id: &str) -> Result<BulkheadHandle, RegistryError> {
        self.handle(id)
    }

    /// Resolves the configuration of bulkhead `id` and returns its instance,
    /// creating it on first use.
    ///
    /// `source` says who declares it (a method's id, a pipeline), for error
    /// messages; `spec` holds the values given in code. The configuration is
    /// resolved, highest precedence first, from: the registry's overrides for
    /// this id; `spec`'s values; the named config `spec` (or the override)
    /// chooses; the `default` config; the built-in defaults.
    ///
    /// To declare several instances all-or-nothing (as a wrapper's `new`
    /// does), use [`declare`](Self::declare).
    ///
    /// # Errors
    ///
    /// - REG-004 if a named config does not exist;
    /// - REG-008 if the instance exists with a different configuration;
    /// - CFG-004 if environment variables name the normalized form of `id`
    ///   (or of a config it uses) and another declared id (or config name)
    ///   has that form too;
    /// - the ATR code of an invalid value.
    pub fn bulkhead_policy(
        &self,
        id: &str,
        source: &str,
        spec: &BulkheadConfigBuilder,
    ) -> Result<Bulkhead, RegistryError> {
        let mut declarations = self.declare();
        let bulkhead = declarations.bulkhead(id, source, spec)?;
        declarations.commit();
        Ok(bulkhead)
    }
}

impl RegistryBuilder {
    /// Defines (or extends) the named bulkhead configuration `name`, which
    /// attributes choose with `config = "name"` and builders with
    /// `.config("name")`. The one named `default` is the base of all others.
    pub fn bulkhead_config(
        self,
        name: impl Into<String>,
        f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
    ) -> Self {
        self.policy_config::<Bulkhead>(name, f)
    }

    /// Overrides values of the bulkhead instance `id`, above whatever its
    /// declaration says (`.config("name")` here replaces its base config).
    pub fn bulkhead_instance(
        self,
        id: impl Into<String>,
        f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
    ) -> Self {
        self.policy_instance::<Bulkhead>(id, f)
    }
}

impl Declarations<'_> {
    /// Declares bulkhead `id`; see [`Registry::bulkhead_policy`].
    ///
    /// # Errors
    ///
    /// - REG-004 if a named config does not exist;
    /// - REG-008 if the registry or this batch has the instance with a
    ///   different configuration;
    /// - REG-010, REG-011 or REG-013 if it names a resource whose budget
    ///   it does not fit;
    /// - CFG-004 if environment variables name the normalized form of `id`
    ///   (or of a config it uses) and another declared id (or config name)
    ///   has that form too;
    /// - the ATR code of an invalid value.
    pub fn bulkhead(
        &mut self,
        id: &str,
        source: &str,
        spec: &BulkheadConfigBuilder,
    ) -> Result<Bulkhead, RegistryError> {
        Bulkhead::declare(self, id, source, spec)
    }
}

impl PolicySpecs {
    /// Adds the bulkhead, with instance id `name` if given.
    pub fn bulkhead(self, name: Option<&str>, spec: BulkheadConfigBuilder) -> Self {
        self.with::<Bulkhead>(name, spec)
    }
}

impl PipelineBuilder<'_> {
    /// Adds a bulkhead (innermost, right around the call).
    pub fn bulkhead(self, f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder) -> Self {
        self.with::<Bulkhead>(f)
    }
}

impl RegistrySnapshot {
    /// The bulkheads, sorted by instance id.
    pub fn bulkheads(&self) -> &[BulkheadSnapshot] {
        &self.bulkheads
    }
}
