//! Applying new configuration to a live registry: [`Registry::reload`] and
//! [`Registry::reload_toml`].

use std::sync::{MutexGuard, PoisonError};

use super::Registry;
use crate::error::RegistryError;
use crate::registry::lock::SerialGuard;
use crate::source::Source;
use crate::store::Change;

impl Registry {
    /// Reads the configuration files and environment variables the registry
    /// was built with again, and applies the result.
    ///
    /// Every instance is resolved again under the new configuration (the
    /// values its declaration gave in code still sit between the named
    /// configs and the per-instance overrides). A bulkhead whose
    /// `max_concurrent` changes gets its new limit at once, without blocking
    /// callers: see
    /// [`Bulkhead::set_max_concurrent`](bulkhead_core::Bulkhead::set_max_concurrent)
    /// for what happens to calls in flight and to waiters; a `LimitChanged`
    /// event is published. A changed `reserved` takes effect as
    /// [`Bulkhead::set_reserved`](bulkhead_core::Bulkhead::set_reserved)
    /// says, and a changed `resource` moves the bulkhead, its calls in
    /// flight and its waiters to the new resource's pool (see
    /// [`Bulkhead::move_to_pool`](bulkhead_core::Bulkhead::move_to_pool)).
    /// Other keys cannot change in a live instance: it keeps their old
    /// values, and they take effect for instances created later.
    /// With a fleet crate (see [`crate::fleet`]), a resource given a
    /// `fleet` it did not have
    /// joins that fleet (listed as applied); one whose fleet changed or was
    /// removed stays in the fleet it is in (listed as not applied).
    ///
    /// Returns a [`Change`] per instance whose configuration changed, with
    /// each changed key in [`Change::keys`] saying whether it took effect
    /// live; the change is `applied` only if every key did. A reload that
    /// changes an adaptive bulkhead's `max_concurrent` and its `adaptive`
    /// applies the new ceiling and reports the algorithm as not applied.
    ///
    /// On a thread that holds an open [`declare`](Self::declare) batch, the
    /// instances the batch declared are resolved and reconfigured with the
    /// registered ones (see there).
    ///
    /// # Errors
    ///
    /// The first error of any source, REG-004 for an unknown config, REG-010
    /// if a bulkhead's new limit does not fit its resource's budget, CFG-004
    /// if environment variables would match two live ids (or two config
    /// names) that normalize alike, or the ATR code of a bad value; then
    /// nothing changes.
    pub fn reload(&self) -> Result<Vec<Change>, RegistryError> {
        // Serialised from the reading of the sources on, so that a
        // concurrent `reload_toml` cannot be undone by an older list.
        let serialised = self.lock_declaring();
        let sources = self.lock_sources().clone();
        self.reload_from(sources, serialised)
    }

    /// Replaces the TOML text and files the registry was built with by
    /// `toml` (environment sources stay, and are read again), and applies the
    /// result as [`reload`](Self::reload) does.
    ///
    /// # Errors
    ///
    /// As for [`reload`](Self::reload); then nothing changes.
    pub fn reload_toml(&self, toml: &str) -> Result<Vec<Change>, RegistryError> {
        let serialised = self.lock_declaring();
        let mut sources = vec![Source::Toml(toml.to_owned())];
        sources.extend(
            self.lock_sources()
                .iter()
                .filter(|source| matches!(source, Source::Env(_) | Source::Vars(..)))
                .cloned(),
        );
        self.reload_from(sources, serialised)
    }

    /// Applies `sources`, under `_serialised`, the lock that serialises
    /// declarations and reloads.
    fn reload_from(
        &self,
        sources: Vec<Source>,
        _serialised: SerialGuard<'_>,
    ) -> Result<Vec<Change>, RegistryError> {
        let mut layers = self.inner.programmatic.clone();
        for source in &sources {
            layers.apply(&source.settings()?)?;
        }
        // As `try_build` does: an override of an instance nobody declared
        // yet must be valid too, not fail only when it is declared.
        layers.validate()?;
        let resources = crate::source::resources(&sources)?;
        // The keyed bulkheads, resolved under the new layers before any is
        // installed: all or nothing with the others.
        let key_settings = crate::source::key_settings(&sources)?;
        let keyed = self.keyed_store().plan(&layers, &key_settings)?;
        let mut budgets = self
            .inner
            .budgets
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The budgets the sources give count for the new plan; all or
        // nothing.
        let previous = budgets.clone();
        for spec in &resources {
            budgets.set(&spec.name, spec.budget);
        }
        let mut changes = match layers.install(&self.inner.stores, &budgets) {
            Ok(changes) => changes,
            Err(error) => {
                *budgets = previous;
                return Err(error);
            }
        };
        drop(budgets);
        self.keyed_store()
            .install(key_settings, keyed, &mut changes);
        self.declare_resources(&resources, &mut changes, false)?;
        *self.lock_sources() = sources;
        self.sync_rooms();
        self.refresh_fleets();
        Ok(changes)
    }

    fn lock_sources(&self) -> MutexGuard<'_, Vec<Source>> {
        self.inner
            .sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
