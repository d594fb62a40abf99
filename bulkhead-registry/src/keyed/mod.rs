//! Keyed bulkheads in a registry (SPEC section 12): a limit per key (a
//! tenant, a user) under one global limit, made on first use from the
//! same configuration as a bulkhead's: [`Registry::keyed_bulkhead`],
//! [`Registry::keyed_bulkhead_builder`], [`KeyedBulkheadSnapshot`].
//!
//! A keyed bulkhead's id is a bulkhead id: it is configured by
//! `[bulkhead.instances.<id>]` over the values given in code over
//! `[bulkhead.configs.<name>]` over `[bulkhead.configs.default]`, and one
//! id is either a bulkhead or a keyed bulkhead (REG-018). Its keys with
//! limits of their own come from code
//! ([`KeyedBulkheadBuilder::key`]) and from
//! `[bulkhead.instances.<id>.keys."<key>"]`, whose `per_key` and
//! `reserved` are laid over code's, field by field.

mod store;

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use bulkhead_core::{BulkheadConfigBuilder, KeyLimits, KeyedBulkhead};

pub(crate) use store::{KeyedStore, keyed_of};

use crate::error::RegistryError;
use crate::registry::Registry;
use crate::snapshot::RegistrySnapshot;

/// How many keys of each keyed bulkhead a snapshot lists unless
/// [`RegistryBuilder::snapshot_top_keys`](crate::RegistryBuilder::snapshot_top_keys)
/// says otherwise.
pub(crate) const DEFAULT_TOP_KEYS: usize = 10;

/// What a registry asks of the keys of a keyed bulkhead: what
/// [`KeyedBulkhead`] asks (`Hash + Eq`, owned, `Send + Sync`), and
/// `Clone` (snapshots copy the busiest keys), `Debug` (errors about a key),
/// [`FromStr`] (keys named in
/// configuration, `[bulkhead.instances.api.keys."tenant-42"]`, are parsed
/// into `K`) and [`Display`](fmt::Display) (snapshots, metric labels and
/// messages show a key as it displays, which for the keys read from
/// configuration is as written there).
///
/// Implemented for every type that has these: `String`, the integers,
/// `Uuid`, `Arc<str>`... A type of your own implements `FromStr` and
/// `Display`, the one the inverse of the other.
pub trait BulkheadKey:
    Hash + Eq + Clone + FromStr + fmt::Display + fmt::Debug + Send + Sync + 'static
{
}

impl<K> BulkheadKey for K where
    K: Hash + Eq + Clone + FromStr + fmt::Display + fmt::Debug + Send + Sync + 'static
{
}

impl Registry {
    /// The keyed bulkhead with this id, made on first use from
    /// configuration: a limit per key (`per_key`) under one global
    /// `max_concurrent`, with the keys of
    /// `[bulkhead.instances.<id>.keys."<key>"]` given limits of their own.
    ///
    /// Returns the [`KeyedBulkhead`] itself (a clone: clones share their
    /// keys and slots), to enter with a key:
    /// [`try_enter`](KeyedBulkhead::try_enter),
    /// [`enter`](KeyedBulkhead::enter),
    /// [`enter_async`](KeyedBulkhead::enter_async). Every call with the
    /// same id and key type returns the same keyed bulkhead, however it was
    /// first made (here or by [`keyed_bulkhead_builder`](Self::keyed_bulkhead_builder)).
    ///
    /// Its configuration is resolved as a bulkhead's
    /// ([`bulkhead_policy`](Self::bulkhead_policy) with no values in code):
    /// `[bulkhead.instances.<id>]`, then its `base_config` or
    /// `[bulkhead.configs.default]`, then the built-in defaults. Of the
    /// bulkhead's keys it uses `max_concurrent` (all keys together),
    /// `per_key`, `max_keys`, `idle_evict`, `max_wait` and `enabled`; the
    /// others (`resource`, `adaptive`, priorities, queues) do nothing on a
    /// keyed bulkhead. Keys given in configuration are parsed into `K`
    /// with its [`FromStr`].
    ///
    /// [`reload`](Self::reload) changes `max_concurrent`, `per_key`,
    /// `max_keys`, `idle_evict`, `max_wait` and a configured key's
    /// `per_key` live. A key's `reserved`, and keys added to or removed
    /// from configuration, do not change in a live keyed bulkhead (the
    /// reload reports them in [`Change::keys`](crate::Change::keys) under
    /// `keys`, not applied), nor does a `max_concurrent` below the
    /// reservations in force.
    ///
    /// A call of a new key refused because `max_keys` keys are live is
    /// REG-017 in its event's and log's terms
    /// ([`KeyRefusal::TooManyKeys`](bulkhead_core::KeyRefusal::TooManyKeys));
    /// the call itself fails with `BulkheadFull`, as when its key or all
    /// keys are full.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_registry::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .config_toml(
    ///         r#"
    ///         [bulkhead.instances.api]
    ///         max_concurrent = 100
    ///         per_key = 4
    ///
    ///         [bulkhead.instances.api.keys."tenant-42"]
    ///         per_key = 10
    ///         reserved = 5
    ///         "#,
    ///     )?
    ///     .build();
    ///
    /// let api = registry.keyed_bulkhead::<String>("api")?;
    /// let permit = api.try_enter("tenant-7")?;
    /// assert_eq!(api.limits_of("tenant-7").per_key(), 4);
    /// assert_eq!(api.limits_of("tenant-42").reserved_slots(), 5);
    /// # drop(permit);
    ///
    /// // The same id, as a plain bulkhead or with another key type: REG-018.
    /// let err = registry.keyed_bulkhead::<u64>("api").unwrap_err();
    /// assert_eq!(err.code(), "REG-018");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// - REG-018 if `id` is a bulkhead, or a keyed bulkhead of another key
    ///   type;
    /// - REG-004 if its configuration names a config that does not exist;
    /// - CFG-002 if a key in configuration does not parse as a `K`;
    /// - ATR-020 if the keys' limits do not hold together (a key's
    ///   `reserved` above its `per_key`, the reservations above
    ///   `max_concurrent`, more keys with limits than `max_keys`), naming
    ///   the full key (`bulkhead.instances.api.keys."tenant-42".reserved`);
    /// - the ATR code of another invalid value.
    pub fn keyed_bulkhead<K: BulkheadKey>(
        &self,
        id: &str,
    ) -> Result<KeyedBulkhead<K>, RegistryError> {
        self.make_keyed(id, None)
    }

    /// Starts declaring keyed bulkhead `id` with values in code: see
    /// [`KeyedBulkheadBuilder`].
    pub fn keyed_bulkhead_builder<K: BulkheadKey>(&self, id: &str) -> KeyedBulkheadBuilder<'_, K> {
        KeyedBulkheadBuilder {
            registry: self,
            id: id.to_owned(),
            source: "registry.keyed_bulkhead_builder".to_owned(),
            spec: BulkheadConfigBuilder::default(),
            keys: Vec::new(),
            _keys: PhantomData,
        }
    }

    fn make_keyed<K: BulkheadKey>(
        &self,
        id: &str,
        declared: Option<store::Declared<'_, K>>,
    ) -> Result<KeyedBulkhead<K>, RegistryError> {
        // Serialised with declarations and reloads.
        let _serialised = self.lock_declaring();
        let bulkheads = self.stores().of::<bulkhead_core::Bulkhead>();
        if bulkheads.is_declared(id) {
            return Err(RegistryError::KindConflict {
                instance: id.to_owned(),
                declared: "a bulkhead".to_owned(),
                requested: store::keyed_of(std::any::type_name::<K>()),
            });
        }
        bulkheads.with_layers(|layers| {
            self.keyed_store()
                .get_or_make(id, declared, layers, self.context())
        })
    }
}

/// Declares a keyed bulkhead with values in code, from
/// [`Registry::keyed_bulkhead_builder`].
///
/// The values given here sit where a wrapper's attribute values do:
/// above the named configs, below `[bulkhead.instances.<id>]`; the keys'
/// limits given here are below the fields of
/// `[bulkhead.instances.<id>.keys."<key>"]`. Building again with the same
/// id gives the same keyed bulkhead if everything resolves alike, and
/// REG-008 if not.
///
/// # Examples
///
/// ```
/// use bulkhead_core::KeyLimits;
/// use bulkhead_registry::Registry;
///
/// let registry = Registry::new();
/// let api = registry
///     .keyed_bulkhead_builder::<u64>("api")
///     .max_concurrent(100)
///     .per_key(4)
///     .key(42, KeyLimits::new(10).reserved(5))
///     .build()?;
/// assert_eq!(api.limits_of(&42).per_key(), 10);
/// assert_eq!(api.limits_of(&7).per_key(), 4);
///
/// // Declared again otherwise: REG-008.
/// let err = registry
///     .keyed_bulkhead_builder::<u64>("api")
///     .per_key(8)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.code(), "REG-008");
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[must_use = "nothing is declared until `build`"]
pub struct KeyedBulkheadBuilder<'r, K> {
    registry: &'r Registry,
    id: String,
    source: String,
    spec: BulkheadConfigBuilder,
    keys: Vec<(K, KeyLimits)>,
    _keys: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for KeyedBulkheadBuilder<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBulkheadBuilder")
            .field("id", &self.id)
            .field("source", &self.source)
            .field("spec", &self.spec)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl<K: BulkheadKey> KeyedBulkheadBuilder<'_, K> {
    /// The most calls of all keys together.
    pub fn max_concurrent(self, max_concurrent: u32) -> Self {
        self.configure(|b| b.max_concurrent(max_concurrent))
    }

    /// The most calls of one key without limits of its own.
    pub fn per_key(self, per_key: u32) -> Self {
        self.configure(|b| b.per_key(per_key))
    }

    /// The most live keys.
    pub fn max_keys(self, max_keys: u32) -> Self {
        self.configure(|b| b.max_keys(max_keys))
    }

    /// How long a key stays without calls before it is evicted.
    pub fn idle_evict(self, idle_evict: Duration) -> Self {
        self.configure(|b| b.idle_evict(idle_evict))
    }

    /// How long a call may wait for a slot.
    pub fn max_wait(self, max_wait: Duration) -> Self {
        self.configure(|b| b.max_wait(max_wait))
    }

    /// Starts from the named bulkhead configuration `name`
    /// (`[bulkhead.configs.<name>]`) instead of `default`.
    pub fn config(self, name: &str) -> Self {
        self.configure(|b| b.config(name))
    }

    /// Any other value of the bulkhead's configuration builder.
    pub fn configure(
        mut self,
        f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
    ) -> Self {
        self.spec = f(self.spec);
        self
    }

    /// Gives `key` limits of its own: its `per_key`, and `reserved` slots
    /// always free for it (taken from `max_concurrent` at once). A key
    /// given twice keeps the last limits.
    pub fn key(mut self, key: K, limits: KeyLimits) -> Self {
        match self.keys.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = limits,
            None => self.keys.push((key, limits)),
        }
        self
    }

    /// Who declares it (a module, a service), for REG-008 messages.
    pub fn source(mut self, source: &str) -> Self {
        source.clone_into(&mut self.source);
        self
    }

    /// The keyed bulkhead: made now, or the one the registry has if it
    /// resolves alike.
    ///
    /// # Errors
    ///
    /// REG-008 if the registry has keyed bulkhead `id` with another
    /// configuration or other keys' limits; otherwise as
    /// [`Registry::keyed_bulkhead`].
    pub fn build(self) -> Result<KeyedBulkhead<K>, RegistryError> {
        self.registry.make_keyed(
            &self.id,
            Some(store::Declared {
                spec: &self.spec,
                keys: &self.keys,
                source: &self.source,
            }),
        )
    }
}

/// A keyed bulkhead's state at one moment, in a [`RegistrySnapshot`]:
/// totals, and the keys holding the most slots, shown as their
/// [`Display`](fmt::Display) writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyedBulkheadSnapshot {
    /// The instance id.
    pub instance: String,
    /// The type of its keys, as [`std::any::type_name`] writes it.
    pub key_type: &'static str,
    /// Calls holding a slot, all keys together.
    pub in_flight: u32,
    /// Calls waiting for a slot.
    pub waiting: u32,
    /// The global limit.
    pub max_concurrent: u32,
    /// The limit of a key without one of its own.
    pub per_key: u32,
    /// The keys' reservations, in all.
    pub reserved: u32,
    /// Live keys.
    pub keys: usize,
    /// Live keys with calls holding or waiting for a slot.
    pub busy_keys: usize,
    /// The most live keys.
    pub max_keys: usize,
    /// New keys refused at `max_keys` since it was made (REG-017).
    pub refused_keys: u64,
    /// The keys holding the most slots (then with the most waiters), most
    /// first, at most the registry's `snapshot_top_keys` (10 by default);
    /// keys with neither are left out.
    pub top: Vec<TopKey>,
}

/// One of the busiest keys of a [`KeyedBulkheadSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopKey {
    /// The key, as its `Display` writes it.
    pub key: String,
    /// Its calls holding a slot.
    pub in_flight: u32,
    /// Its calls waiting.
    pub waiting: u32,
    /// Its limit.
    pub per_key: u32,
    /// Its reservation.
    pub reserved: u32,
}

impl RegistrySnapshot {
    /// The keyed bulkheads, sorted by instance id.
    pub fn keyed_bulkheads(&self) -> &[KeyedBulkheadSnapshot] {
        &self.keyed_bulkheads
    }
}
