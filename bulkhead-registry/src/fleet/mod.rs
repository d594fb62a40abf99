//! Fleets: the extension point through which a resource's budget is shared
//! beyond this process. The registry keeps no fleet itself: a crate that
//! does (`bulkhead-fleet`, on Redis, which the `bulkhead` facade brings
//! with its feature `redis`) plugs in here.
//!
//! ```
//! use bulkhead_registry::Registry;
//!
//! let registry = Registry::new();
//! // Without a fleet resource (or without a fleet crate) there is nothing
//! // to show, and nothing to leave.
//! assert!(registry.snapshot().fleets().is_empty());
//! assert!(registry.fleet_errors().is_empty());
//! registry.leave_fleets();
//! ```
//!
//! # The seam
//!
//! The registry decides *which* bulkheads are on a resource and what its
//! budget is; a fleet decides how many of those slots this process may
//! use now, and applies it to the bulkheads as caps over their limits
//! (`Bulkhead::set_limit_cap`, the live-resize path). Three traits carry
//! that:
//!
//! - [`FleetSpec`]: one resource's fleet as configured (the fleet crate's
//!   `FleetConfig`), given to [`Registry::fleet_resource`] or read from
//!   configuration. The registry checks it, compares it with the fleet a
//!   resource is already in (REG-015), shows it (its `Debug`, which must
//!   not show secrets), and hands it to its kind's backend.
//! - [`FleetKind`]: a kind of fleet, one per fleet crate, a `&'static`:
//!   the keys it reads in `[resources.<name>]` (and
//!   `<PREFIX>RESOURCES__<NAME>__<KEY>`), how it checks them and builds a
//!   spec from them, and the backend it gives a registry. A kind is found
//!   two ways: a spec names its own ([`FleetSpec::kind`]), and
//!   configuration sources find every kind linked into the program
//!   ([`LinkedKind`], registered with `inventory::submit!`), so that a
//!   fleet in TOML needs no line of code.
//! - [`FleetBackend`]: one registry's fleets of one kind (for the Redis
//!   fleet, its resources and the thread that keeps their leases),
//!   created by the kind at the registry's first fleet resource of that
//!   kind and dropped with the registry (which is when it leaves its
//!   fleets). The registry calls it, under the lock that serialises its
//!   declarations, when a fleet resource is declared, when a bulkhead is
//!   declared on a resource, when a reload or a dropped batch moves
//!   bulkheads, when a budget changes, on [`Registry::leave_fleets`] and for
//!   snapshots.
//!
//! What the registry keeps of its own: the errors a fleet backend could
//! not return ([`Registry::fleet_errors`]), the snapshots' type
//! ([`FleetSnapshot`]), and the codes REG-014 to REG-016
//! ([`RegistryError`]).

mod snapshot;
mod value;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use bulkhead_core::{Bulkhead, PolicyContext};

use crate::error::RegistryError;

pub use snapshot::{FleetSnapshot, FleetState};
pub use value::{ResourceKeys, SettingValue};

#[cfg(doc)]
use crate::Registry;

/// One resource's fleet as configured: which kind keeps it, and its
/// settings (the fleet crate's `FleetConfig`). Given to
/// [`Registry::fleet_resource`], or built by a [`FleetKind`] from
/// configuration.
///
/// Its `Debug` is how the registry shows it in errors (REG-015) and in
/// the changes of a reload: it must not show a secret.
pub trait FleetSpec: fmt::Debug + Send + Sync + 'static {
    /// The kind that keeps fleets of this spec.
    fn kind(&self) -> &'static dyn FleetKind;

    /// Checks that the spec can be used for `resource`.
    ///
    /// # Errors
    ///
    /// REG-014 ([`RegistryError::FleetConfig`]) naming what is wrong.
    fn check(&self, resource: &str) -> Result<(), RegistryError>;

    /// Whether `other` is the same fleet: a process joins one fleet per
    /// resource for its life, and another is REG-015.
    fn same(&self, other: &dyn FleetSpec) -> bool;

    /// The spec itself, for its kind's backend to read its settings.
    fn as_any(&self) -> &dyn Any;
}

/// A kind of fleet: the keys it reads in configuration, and the backend it
/// gives each registry. One `&'static` per fleet crate.
pub trait FleetKind: Send + Sync + 'static {
    /// Its name, such as `"redis"`: one backend per registry per name.
    fn name(&self) -> &'static str;

    /// The keys of `[resources.<name>]` it reads besides `budget`, such as
    /// `fleet` and `lease`: a resource's fleet is configured by these keys
    /// alone.
    fn keys(&self) -> &'static [&'static str];

    /// Checks the value of one of its keys on its own, as a source gives
    /// it (the registry checks each value when the source is given, and
    /// whole resources, through [`spec`](Self::spec), when it builds or
    /// reloads).
    ///
    /// # Errors
    ///
    /// REG-014, or the code of a value of the wrong type (ATR-001 for a
    /// duration that does not parse), naming [`SettingValue::full_key`].
    fn check_key(
        &self,
        resource: &str,
        key: &str,
        value: SettingValue<'_>,
    ) -> Result<(), RegistryError>;

    /// The value of one of its keys as a `Debug` output may show it: a URL
    /// without its password. `None` shows it as given.
    fn shown(&self, key: &str, value: SettingValue<'_>) -> Option<String>;

    /// The fleet of `resource` that its keys configure, `None` if they do
    /// not configure one of this kind.
    ///
    /// # Errors
    ///
    /// REG-014 for a fleet that cannot be used (a key of the fleet given
    /// without the one that selects it, a lease out of range, ...),
    /// naming the key.
    fn spec(
        &self,
        resource: &str,
        keys: &ResourceKeys<'_>,
    ) -> Result<Option<Arc<dyn FleetSpec>>, RegistryError>;

    /// A new backend for the registry whose policies use `context` (their
    /// clock and event bus): one per registry, created with its first fleet
    /// resource of this kind.
    fn backend(&'static self, context: &PolicyContext) -> Arc<dyn FleetBackend>;
}

/// A fleet kind linked into the program, found by configuration sources:
/// a fleet crate registers its kind with
/// `inventory::submit! { LinkedKind(&KIND) }`.
///
/// Registration happens before `main` on the platforms `inventory`
/// supports (Linux, macOS, Windows, the BSDs, WebAssembly, ...); elsewhere
/// configuration finds no fleet kind, and a fleet key is CFG-001 (a
/// [`FleetSpec`] given in code works everywhere). A crate that depends
/// on a fleet crate only for its configuration keys, without naming any
/// of its items, must still link it: `use bulkhead_fleet as _;`.
#[derive(Clone, Copy)]
pub struct LinkedKind(pub &'static dyn FleetKind);

impl fmt::Debug for LinkedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LinkedKind").field(&self.0.name()).finish()
    }
}

inventory::collect!(LinkedKind);

/// The fleet kinds linked into the program, each once.
pub(crate) fn linked_kinds() -> Vec<&'static dyn FleetKind> {
    let mut kinds: Vec<&'static dyn FleetKind> = Vec::new();
    for LinkedKind(kind) in inventory::iter::<LinkedKind> {
        if !kinds.iter().any(|k| k.name() == kind.name()) {
            kinds.push(*kind);
        }
    }
    kinds.sort_by_key(|k| k.name());
    kinds
}

/// A bulkhead declared in the registry, and the resource it names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Declared {
    /// The bulkhead.
    pub bulkhead: Bulkhead,
    /// The resource its configuration names, if any.
    pub resource: Option<String>,
}

/// One registry's fleets of one [`FleetKind`]: its fleet resources, and
/// whatever keeps their shares (the Redis fleet's thread). The registry
/// calls it under the lock that serialises its declarations, reloads and
/// budget changes, so that calls come one at a time and in order.
///
/// It owns the share of each of its resources and applies it to their
/// bulkheads (`Bulkhead::set_limit_cap`): a bulkhead on a fleet resource
/// admits nothing the fleet has not granted. Dropped with the registry:
/// then it leaves its fleets without waiting.
pub trait FleetBackend: fmt::Debug + Send + Sync {
    /// Starts what keeps the shares, if it is not running; called before
    /// each new fleet resource, so that a failure is tried again.
    ///
    /// # Errors
    ///
    /// REG-016 ([`RegistryError::FleetStart`]) if it cannot be started.
    fn start(&self) -> Result<(), RegistryError>;

    /// The fleet resource `resource` is in, if it is one of this
    /// backend's.
    fn spec(&self, resource: &str) -> Option<Arc<dyn FleetSpec>>;

    /// Adds `resource`, with this process's `budget`, to fleet `spec`:
    /// its bulkheads among `declared` come under its share (closed until
    /// the first one). With `unstarted` ([`start`](Self::start) failed and
    /// the registry declares the resource all the same), it runs on the
    /// share of a process that never reached the fleet, shows the error in
    /// its snapshot, and joins once started.
    fn join(
        &self,
        resource: &str,
        budget: u32,
        spec: Arc<dyn FleetSpec>,
        unstarted: Option<&RegistryError>,
        declared: &[Declared],
    );

    /// The declared bulkheads after a reload or a new fleet resource: those
    /// on a fleet resource come under its share; those that left one (for
    /// another resource, or none) stay closed and counted until their
    /// calls in flight have finished.
    fn refresh(&self, declared: &[Declared]);

    /// `bulkhead` was just declared on `resource` (before anyone can call
    /// it): if that is a fleet resource, it is closed until its part of
    /// the share reaches it.
    fn adopt(&self, resource: &str, bulkhead: &Bulkhead);

    /// The bulkheads of a dropped batch that no other batch declared: they
    /// leave for good (their calls in flight, if any, drain first).
    fn discard(&self, bulkheads: &[Bulkhead]);

    /// The budget this process configured for `resource`, if it is a fleet
    /// resource, changed.
    fn set_budget(&self, resource: &str, budget: u32);

    /// Leaves every fleet, for a graceful shutdown: closes the bulkheads,
    /// lets their calls in flight finish within a bound of the kind's,
    /// hands the shares back, and returns once done (or the bound passed).
    fn leave(&self);

    /// Each fleet resource's share now.
    fn snapshots(&self) -> Vec<FleetSnapshot>;
}
