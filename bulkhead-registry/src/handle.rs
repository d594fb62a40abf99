//! [`Handle`]: one policy instance of a registry, from the registry's
//! getter named after its policy (`registry.bulkhead(id)`, ...). What
//! each policy's handle has of its own is in its file of `policy/`.

use crate::error::RegistryError;
use crate::events::InstanceEvents;
use crate::policy::{Managed, Policy};
use crate::registry::Registry;

/// A view of one policy instance of a registry: its configuration, its
/// state and its events, and the policy itself.
///
/// Each policy's handle has a name and methods of its own beside these:
/// [`BulkheadHandle`](crate::BulkheadHandle) (from
/// [`Registry::bulkhead`]) reads and changes the limit,
/// [`CircuitBreakerHandle`](crate::CircuitBreakerHandle) has the
/// operator's controls, and each lends its policy under the policy's name
/// ([`BulkheadHandle::bulkhead`](crate::BulkheadHandle::bulkhead),
/// [`RetryHandle::retry`](crate::RetryHandle::retry), ...).
///
/// Cheap to clone; reads are lock-free. A handle keeps its registry.
///
/// # Examples
///
/// Code written once for the handle of any policy:
///
/// ```
/// use bulkhead_registry::{Handle, Pipeline, Policy, Registry};
///
/// fn describe<P: Policy>(handle: &Handle<P>) -> String {
///     format!("{}: {}", handle.instance(), handle.config())
/// }
///
/// let registry = Registry::new();
/// Pipeline::builder(&registry, "renderer")
///     .bulkhead(|b| b.max_concurrent(4))
///     .retry(|r| r.max_attempts(2))
///     .build()?;
/// assert!(describe(&registry.bulkhead("renderer")?).starts_with("renderer: "));
/// assert!(describe(&registry.retry("renderer")?).contains("max_attempts"));
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Handle<P> {
    pub(crate) policy: P,
    /// Its registry: its bus, and its budgets for a bulkhead's
    /// `set_max_concurrent`.
    pub(crate) registry: Registry,
}

impl<P: Policy> Handle<P> {
    /// Starts receiving this instance's events (of its policy's event type:
    /// `BulkheadEvent` for a bulkhead, ...): its rejections and changes of
    /// state, each policy's listed on its event type. Admitted calls
    /// publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<P::Event> {
        InstanceEvents::new(self.registry.subscribe(), self.policy.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.policy.instance()
    }

    /// The configuration it runs with.
    pub fn config(&self) -> P::Config {
        self.policy.config()
    }

    /// Its state now.
    pub fn snapshot(&self) -> P::Snapshot {
        self.policy.snapshot()
    }
}

impl Registry {
    /// The handle of `P`'s instance `id`.
    ///
    /// # Errors
    ///
    /// REG-009 if `P` has no instance `id`.
    pub(crate) fn handle<P: Managed>(&self, id: &str) -> Result<Handle<P>, RegistryError> {
        let policy = self.stores().of::<P>().get(id)?;
        Ok(Handle {
            policy,
            registry: self.clone(),
        })
    }
}
