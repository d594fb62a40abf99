//! How the registry keeps one policy: its configuration layers
//! ([`Layers`], which resolve an instance's configuration) and its
//! instances, registered or staged by an open batch of declarations.

mod all;
mod change;
mod layers;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use bulkhead_core::PolicyContext;
use dashmap::DashMap;

use crate::error::{Conflict, RegistryError};
use crate::policy::Managed;
use crate::snapshot::RegistrySnapshot;
use bulkhead_core::keys::PolicyKind;

pub(crate) use all::{AllLayers, Stores};
pub use change::{Change, KeyChange};
pub use layers::DEFAULT_CONFIG;
pub(crate) use layers::{AnyLayers, Layers};

/// An instance and what it was declared with.
#[derive(Clone)]
pub(crate) struct Declared<P: Managed> {
    pub(crate) policy: P,
    pub(crate) config: P::Config,
    /// The values given in code, to resolve it again on a reload.
    pub(crate) spec: P::Spec,
    pub(crate) source: String,
}

/// Which open batch of declarations staged an instance.
pub(crate) type Batch = u64;

/// The configurations and instances of one kind of policy.
pub(crate) struct Store<P: Managed> {
    layers: RwLock<Layers<P>>,
    /// The registered instances, which lookups see.
    instances: DashMap<String, Declared<P>>,
    /// The instances open batches declared and have not committed, each
    /// with its batch. Used only under the registry's serialising lock, by
    /// the thread whose batches they are, so that what it does while a
    /// batch is open (declare in another batch, check a budget, reload)
    /// takes them into account.
    staged: Mutex<Vec<Staged<P>>>,
}

/// An instance declared by an open batch.
struct Staged<P: Managed> {
    batch: Batch,
    id: String,
    declared: Declared<P>,
}

impl<P: Managed> Store<P> {
    pub(crate) fn new(layers: Layers<P>) -> Self {
        Store {
            layers: RwLock::new(layers),
            instances: DashMap::new(),
            staged: Mutex::new(Vec::new()),
        }
    }

    fn layers(&self) -> std::sync::RwLockReadGuard<'_, Layers<P>> {
        self.layers.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn staged(&self) -> MutexGuard<'_, Vec<Staged<P>>> {
        self.staged.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `f` of the current layers.
    pub(crate) fn with_layers<T>(&self, f: impl FnOnce(&Layers<P>) -> T) -> T {
        f(&self.layers())
    }

    /// The registered instance `id`.
    pub(crate) fn get(&self, id: &str) -> Result<P, RegistryError> {
        match self.instances.get(id) {
            Some(declared) => Ok(declared.policy.clone()),
            None => Err(self.unknown_instance(id)),
        }
    }

    /// Whether `id` is registered or staged by an open batch.
    pub(crate) fn is_declared(&self, id: &str) -> bool {
        self.instances.contains_key(id) || self.staged().iter().any(|s| s.id == id)
    }

    /// Resolves instance `id` under the current layers.
    pub(crate) fn resolve(&self, id: &str, spec: &P::Spec) -> Result<P::Config, RegistryError> {
        self.layers().resolve(id, spec)
    }

    /// Every instance, registered or staged by an open batch, with the
    /// configuration it runs with now: what a budget must hold.
    pub(crate) fn declared_configs(&self) -> Vec<(String, P::Config)> {
        self.each_declared(|d| d.policy.live(&d.config))
    }

    /// Every instance, registered or staged by an open batch, with the
    /// configuration it runs with now.
    pub(crate) fn declared_policies(&self) -> Vec<(String, P, P::Config)> {
        self.each_declared(|d| (d.policy.clone(), d.policy.live(&d.config)))
            .into_iter()
            .map(|(id, (policy, config))| (id, policy, config))
            .collect()
    }

    /// Every registered instance with the configuration it runs with now.
    pub(crate) fn registered_policies(&self) -> Vec<(String, P, P::Config)> {
        self.instances
            .iter()
            .map(|d| (d.key().clone(), d.policy.clone(), d.policy.live(&d.config)))
            .collect()
    }

    /// Every registered instance.
    pub(crate) fn policies(&self) -> Vec<P> {
        self.instances.iter().map(|d| d.policy.clone()).collect()
    }

    /// `f` of every instance, registered or staged, once each (an id two
    /// open batches staged, or one staged and registered since, is one
    /// instance).
    fn each_declared<T>(&self, f: impl Fn(&Declared<P>) -> T) -> Vec<(String, T)> {
        let mut all: Vec<(String, T)> = self
            .instances
            .iter()
            .map(|d| (d.key().clone(), f(d.value())))
            .collect();
        let mut seen = HashSet::new();
        for staged in self.staged().iter() {
            if !self.instances.contains_key(&staged.id) && seen.insert(staged.id.as_str()) {
                all.push((staged.id.clone(), f(&staged.declared)));
            }
        }
        all
    }

    /// Every instance, registered or staged, with the values its
    /// declaration gave in code.
    fn specs(&self) -> Vec<(String, P::Spec)> {
        self.each_declared(|d| d.spec.clone())
    }

    /// Resolves `id` for `batch` and returns the instance it names: one
    /// staged earlier by this or another open batch, one already
    /// registered, or a new one, which is staged. An instance staged by
    /// another batch is staged for this one too, so that whichever commits
    /// first registers it.
    pub(crate) fn declare(
        &self,
        batch: Batch,
        context: &PolicyContext,
        id: &str,
        source: &str,
        spec: &P::Spec,
    ) -> Result<P, RegistryError> {
        let layers = self.layers();
        let config = layers.resolve(id, spec)?;
        layers.check_env_names(id, spec, || self.specs())?;
        drop(layers);
        let mut staged = self.staged();
        let own = staged.iter().any(|s| s.batch == batch && s.id == id);
        let existing = match staged.iter().find(|s| s.id == id) {
            Some(other) => Some((!own, other.declared.clone())),
            None => self.instances.get(id).map(|d| (false, d.clone())),
        };
        match existing {
            Some((share, existing)) if existing.config == config => {
                let policy = existing.policy.clone();
                if share {
                    staged.push(Staged {
                        batch,
                        id: id.to_owned(),
                        declared: existing,
                    });
                }
                Ok(policy)
            }
            Some((_, existing)) => Err(RegistryError::Conflict(Box::new(Conflict {
                policy: P::KIND.name(),
                instance: id.to_owned(),
                first_source: existing.source,
                first_config: existing.config.to_string(),
                second_source: source.to_owned(),
                second_config: config.to_string(),
            }))),
            None => {
                let policy = P::create(id, config.clone(), context.clone());
                staged.push(Staged {
                    batch,
                    id: id.to_owned(),
                    declared: Declared {
                        policy: policy.clone(),
                        config,
                        spec: spec.clone(),
                        source: source.to_owned(),
                    },
                });
                Ok(policy)
            }
        }
    }

    /// The instances `batch` staged.
    pub(crate) fn staged_in(&self, batch: Batch) -> Vec<P> {
        self.staged()
            .iter()
            .filter(|s| s.batch == batch)
            .map(|s| s.declared.policy.clone())
            .collect()
    }

    /// Removes what `batch` staged, and returns its instances.
    pub(crate) fn take(&self, batch: Batch) -> Vec<(String, Declared<P>)> {
        let mut staged = self.staged();
        let (taken, kept) = std::mem::take(&mut *staged)
            .into_iter()
            .partition(|s| s.batch == batch);
        *staged = kept;
        taken
            .into_iter()
            .map(|s: Staged<P>| (s.id, s.declared))
            .collect()
    }

    /// Registers instances [`take`](Self::take)n from a batch.
    pub(crate) fn register(&self, declared: Vec<(String, Declared<P>)>) {
        for (id, declared) in declared {
            self.instances.insert(id, declared);
        }
    }

    /// Resolves every instance, registered or staged, under `layers`
    /// without changing anything: the new configuration of each instance
    /// that does not run with it (compared with what it runs with now, so
    /// that a reload also puts back a limit changed by
    /// `set_max_concurrent`).
    pub(crate) fn plan(
        &self,
        layers: &Layers<P>,
    ) -> Result<Vec<(String, P::Config)>, RegistryError> {
        let declared = self.each_declared(Declared::clone);
        let specs = || {
            declared
                .iter()
                .map(|(id, d)| (id.clone(), d.spec.clone()))
                .collect()
        };
        let mut changes = Vec::new();
        for (id, declared) in &declared {
            let config = layers.resolve(id, &declared.spec)?;
            layers.check_env_names(id, &declared.spec, specs)?;
            if config != declared.policy.live(&declared.config) {
                changes.push((id.clone(), config));
            }
        }
        Ok(changes)
    }

    /// Installs `layers` and reconfigures the instances `plan` found,
    /// registered or staged.
    pub(crate) fn install(
        &self,
        layers: Layers<P>,
        plan: Vec<(String, P::Config)>,
        changes: &mut Vec<Change>,
    ) {
        *self.layers.write().unwrap_or_else(PoisonError::into_inner) = layers;
        let mut staged = self.staged();
        for (id, config) in plan {
            let declared = match self.instances.get(&id) {
                Some(declared) => declared.clone(),
                None => match staged.iter().find(|s| s.id == id) {
                    Some(staged) => staged.declared.clone(),
                    None => continue,
                },
            };
            let live = declared.policy.live(&declared.config);
            declared.policy.reconfigure(&live, &config);
            // What it runs with now tells what it took, key by key.
            let now = declared.policy.live(&config);
            changes.push(Change::of::<P>(&id, &live, &config, &now));
            for staged in staged.iter_mut().filter(|s| s.id == id) {
                staged.declared.config = config.clone();
            }
            if let Some(mut registered) = self.instances.get_mut(&id) {
                registered.config = config;
            }
        }
    }

    fn unknown_instance(&self, id: &str) -> RegistryError {
        let mut ids: Vec<String> = self.instances.iter().map(|e| e.key().clone()).collect();
        let known = match ids.len() {
            0 => String::new(),
            1..=20 => {
                ids.sort_unstable();
                format!("; known: {}", ids.join(", "))
            }
            n => format!("; {n} exist, see registry.snapshot()"),
        };
        RegistryError::UnknownInstance {
            policy: P::KIND.name(),
            instance: id.to_owned(),
            known,
        }
    }
}

/// A store of any policy, for what the registry does to every policy alike.
pub(crate) trait AnyStore: Any + Send + Sync {
    /// Which policy it keeps.
    fn kind(&self) -> PolicyKind;
    /// How many instances are registered.
    fn len(&self) -> usize;
    /// The ids `batch` staged.
    fn staged_ids(&self, batch: Batch) -> Vec<String>;
    /// Registers what `batch` staged.
    fn commit(&self, batch: Batch);
    /// Forgets what `batch` staged.
    fn discard(&self, batch: Batch);
    /// Puts a snapshot of every registered instance, sorted by instance id,
    /// in its list of `snapshot`.
    fn snapshot_into(&self, snapshot: &mut RegistrySnapshot);
}

impl<P: Managed> AnyStore for Store<P> {
    fn kind(&self) -> PolicyKind {
        P::KIND
    }

    fn len(&self) -> usize {
        self.instances.len()
    }

    fn staged_ids(&self, batch: Batch) -> Vec<String> {
        self.staged()
            .iter()
            .filter(|s| s.batch == batch)
            .map(|s| s.id.clone())
            .collect()
    }

    fn commit(&self, batch: Batch) {
        self.register(self.take(batch));
    }

    fn discard(&self, batch: Batch) {
        self.take(batch);
    }

    fn snapshot_into(&self, snapshot: &mut RegistrySnapshot) {
        let mut policies = self.policies();
        policies.sort_by(|a, b| a.instance().cmp(b.instance()));
        *P::snapshots(snapshot) = policies.iter().map(P::snapshot).collect();
    }
}
