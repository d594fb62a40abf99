//! Every policy's store ([`Stores`]) and every policy's configuration
//! layers ([`AllLayers`]), each an array with one entry per
//! [`PolicyKind`], at the kind's place in [`PolicyKind::ALL`].

use std::any::Any;
use std::fmt;

use crate::budget::Budgets;
use crate::error::RegistryError;
use crate::policy::{ForKind, Managed, for_kind};
use crate::source::Setting;
use crate::store::{AnyLayers, AnyStore, Change, Layers, Store};
use bulkhead_core::keys::PolicyKind;

/// The configurations and instances of every policy.
pub(crate) struct Stores([Box<dyn AnyStore>; PolicyKind::COUNT]);

impl Stores {
    pub(crate) fn new(layers: AllLayers) -> Self {
        Stores(layers.0.map(AnyLayers::into_store))
    }

    /// The store of `kind`.
    pub(crate) fn get(&self, kind: PolicyKind) -> &dyn AnyStore {
        &*self.0[kind as usize]
    }

    /// The store of `P`.
    pub(crate) fn of<P: Managed>(&self) -> &Store<P> {
        let store: &dyn Any = self.get(P::KIND);
        store
            .downcast_ref()
            .expect("a kind's place holds its store")
    }

    /// Every policy's store, in the order of [`PolicyKind::ALL`].
    pub(crate) fn all(&self) -> impl Iterator<Item = &dyn AnyStore> {
        self.0.iter().map(|store| &**store)
    }
}

/// Every policy's named configurations and overrides.
pub(crate) struct AllLayers([Box<dyn AnyLayers>; PolicyKind::COUNT]);

impl Default for AllLayers {
    fn default() -> Self {
        /// No layer of `P`.
        struct Empty;

        impl ForKind for Empty {
            type Output = Box<dyn AnyLayers>;

            fn run<P: Managed>(self) -> Box<dyn AnyLayers> {
                Box::new(Layers::<P>::default())
            }
        }

        AllLayers(PolicyKind::ALL.map(|kind| for_kind(kind, Empty)))
    }
}

impl Clone for AllLayers {
    fn clone(&self) -> Self {
        AllLayers(self.0.each_ref().map(|layers| layers.clone_box()))
    }
}

impl fmt::Debug for AllLayers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                PolicyKind::ALL
                    .iter()
                    .map(|kind| kind.plural())
                    .zip(&self.0),
            )
            .finish()
    }
}

impl AllLayers {
    /// The layers of `P`.
    pub(crate) fn of<P: Managed>(&self) -> &Layers<P> {
        let layers: &dyn Any = &*self.0[P::KIND as usize];
        layers
            .downcast_ref()
            .expect("a kind's place holds its layers")
    }

    /// The layers of `P`, to change them.
    pub(crate) fn of_mut<P: Managed>(&mut self) -> &mut Layers<P> {
        let layers: &mut dyn Any = &mut *self.0[P::KIND as usize];
        layers
            .downcast_mut()
            .expect("a kind's place holds its layers")
    }

    /// Applies `settings` in order; nothing changes if one is bad.
    pub(crate) fn apply(&mut self, settings: &[Setting]) -> Result<(), RegistryError> {
        let mut next = self.clone();
        for setting in settings {
            next.0[setting.policy as usize].apply(setting)?;
        }
        *self = next;
        Ok(())
    }

    /// Checks every named config and override, and every `base_config`.
    pub(crate) fn validate(&self) -> Result<(), RegistryError> {
        self.0.iter().try_for_each(|layers| layers.validate())
    }

    /// Puts these layers in place of `stores`' and reconfigures the live
    /// instances whose configuration they change; all or nothing: every
    /// policy's plan is made and checked (a bulkhead's against `budgets`)
    /// before anything is installed.
    pub(crate) fn install(
        self,
        stores: &Stores,
        budgets: &Budgets,
    ) -> Result<Vec<Change>, RegistryError> {
        let plans = self
            .0
            .into_iter()
            .map(|layers| layers.plan(stores, budgets))
            .collect::<Result<Vec<_>, _>>()?;
        let mut changes = Vec::new();
        for install in plans {
            install(&mut changes);
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_place_and_its_own_types_there() {
        struct Kind;

        impl ForKind for Kind {
            type Output = PolicyKind;

            fn run<P: Managed>(self) -> PolicyKind {
                let mut layers = AllLayers::default();
                layers.of_mut::<P>();
                Stores::new(layers).of::<P>();
                P::KIND
            }
        }

        for (place, kind) in PolicyKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, place);
            assert_eq!(for_kind(kind, Kind), kind);
        }
    }
}
