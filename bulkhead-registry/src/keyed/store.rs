//! The registry's keyed bulkheads ([`KeyedStore`]): each one, of whatever
//! key type, behind [`AnyKeyed`]; how one is resolved from configuration,
//! made, compared with a new declaration, and reconfigured by a reload.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, ConfigError, KeyLimits, KeyedBulkhead,
    PolicyContext,
};

use super::{BulkheadKey, KeyedBulkheadSnapshot, TopKey};
use crate::error::{ConfigSourceError, Conflict, RegistryError};
use crate::source::{KeySetting, KeySettings, max_per_key, quoted};
use crate::store::{AllLayers, Change, KeyChange, Layers};

/// The keyed bulkheads, by id, and the keys' limits the sources give.
pub(crate) struct KeyedStore {
    inner: Mutex<Inner>,
}

struct Inner {
    entries: BTreeMap<String, Box<dyn AnyKeyed>>,
    /// What the sources say of single keys, by instance id.
    settings: KeySettings,
}

impl KeyedStore {
    pub(crate) fn new(settings: KeySettings) -> Self {
        KeyedStore {
            inner: Mutex::new(Inner {
                entries: BTreeMap::new(),
                settings,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many keyed bulkheads there are.
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether `id` is a keyed bulkhead, and of which key type.
    pub(crate) fn key_type(&self, id: &str) -> Option<&'static str> {
        self.lock().entries.get(id).map(|entry| entry.key_type())
    }

    /// Keyed bulkhead `id` of keys `K`: the one there is (checked against
    /// `declared` if given), or one made with `make`, resolved from `spec`
    /// and `code_keys` under `layers`.
    pub(crate) fn get_or_make<K: BulkheadKey>(
        &self,
        id: &str,
        declared: Option<Declared<'_, K>>,
        layers: &Layers<Bulkhead>,
        context: &PolicyContext,
    ) -> Result<KeyedBulkhead<K>, RegistryError> {
        let mut inner = self.lock();
        if let Some(entry) = inner.entries.get(id) {
            let Some(entry) = entry.as_any().downcast_ref::<Entry<K>>() else {
                return Err(RegistryError::KindConflict {
                    instance: id.to_owned(),
                    declared: keyed_of(entry.key_type()),
                    requested: keyed_of(std::any::type_name::<K>()),
                });
            };
            if let Some(declared) = declared {
                let resolved = resolve(
                    id,
                    layers,
                    declared.spec,
                    declared.keys,
                    inner.settings.get(id),
                )?;
                if (&resolved.config, &resolved.keys) != (&entry.config, &entry.keys) {
                    return Err(RegistryError::Conflict(Box::new(Conflict {
                        policy: "keyed bulkhead",
                        instance: id.to_owned(),
                        first_source: entry.source.clone(),
                        first_config: describe(&entry.config, &entry.keys),
                        second_source: declared.source.to_owned(),
                        second_config: describe(&resolved.config, &resolved.keys),
                    })));
                }
            }
            return Ok(entry.keyed.clone());
        }
        let (spec, code_keys, source) = match declared {
            Some(d) => (d.spec.clone(), d.keys.to_vec(), d.source.to_owned()),
            None => (
                BulkheadConfigBuilder::default(),
                Vec::new(),
                "registry.keyed_bulkhead".to_owned(),
            ),
        };
        let resolved = resolve(id, layers, &spec, &code_keys, inner.settings.get(id))?;
        let keyed = KeyedBulkhead::with_keys(
            id,
            resolved.config,
            context.clone(),
            resolved.limits.iter().cloned(),
        )
        .map_err(|e| e.prefixed(&format!("bulkhead.instances.{id}.")))?;
        let pinned = resolved.limits.iter().map(|(k, _)| k.clone()).collect();
        inner.entries.insert(
            id.to_owned(),
            Box::new(Entry {
                keyed: keyed.clone(),
                spec,
                code_keys,
                config: resolved.config,
                keys: resolved.keys,
                pinned,
                source,
            }),
        );
        Ok(keyed)
    }

    /// Resolves every keyed bulkhead again under `layers` and `settings`
    /// without changing anything: what changes, to give to
    /// [`install`](Self::install).
    ///
    /// # Errors
    ///
    /// As for making one: REG-004, CFG-002 for a key that does not parse,
    /// ATR-020 for keys' limits that do not hold together, the ATR code of
    /// a bad value.
    pub(crate) fn plan(
        &self,
        layers: &AllLayers,
        settings: &KeySettings,
    ) -> Result<Plan, RegistryError> {
        let layers = layers.of::<Bulkhead>();
        let inner = self.lock();
        let mut plan = Vec::new();
        for (id, entry) in &inner.entries {
            if let Some(next) = entry.plan(id, layers, settings.get(id))? {
                plan.push((id.clone(), next));
            }
        }
        Ok(plan)
    }

    /// Installs `settings` and applies `plan` (from [`plan`](Self::plan))
    /// to the live keyed bulkheads, adding what changed to `changes`.
    pub(crate) fn install(&self, settings: KeySettings, plan: Plan, changes: &mut Vec<Change>) {
        let mut inner = self.lock();
        inner.settings = settings;
        for (id, next) in plan {
            if let Some(entry) = inner.entries.get_mut(&id) {
                changes.push(entry.install(&id, next));
            }
        }
    }

    /// Every keyed bulkhead's snapshot, by id, each with its `top` keys.
    pub(crate) fn snapshots(&self, top: usize) -> Vec<KeyedBulkheadSnapshot> {
        let inner = self.lock();
        inner
            .entries
            .iter()
            .map(|(id, entry)| entry.snapshot(id, top))
            .collect()
    }
}

/// What a reload would change: the keyed bulkheads that change, each
/// with what it resolved to (of its own key type).
pub(crate) type Plan = Vec<(String, Box<dyn Any + Send>)>;

/// What a declaration in code gives: see [`KeyedStore::get_or_make`].
pub(crate) struct Declared<'a, K> {
    pub(crate) spec: &'a BulkheadConfigBuilder,
    pub(crate) keys: &'a [(K, KeyLimits)],
    pub(crate) source: &'a str,
}

/// A keyed bulkhead of any key type.
trait AnyKeyed: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn key_type(&self) -> &'static str;
    fn plan(
        &self,
        id: &str,
        layers: &Layers<Bulkhead>,
        settings: Option<&BTreeMap<String, KeySetting>>,
    ) -> Result<Option<Box<dyn Any + Send>>, RegistryError>;
    fn install(&mut self, id: &str, next: Box<dyn Any + Send>) -> Change;
    fn snapshot(&self, id: &str, top: usize) -> KeyedBulkheadSnapshot;
}

/// One keyed bulkhead and what it was declared with.
struct Entry<K> {
    keyed: KeyedBulkhead<K>,
    /// The values given in code, to resolve it again on a reload.
    spec: BulkheadConfigBuilder,
    code_keys: Vec<(K, KeyLimits)>,
    /// Its configuration and keys' limits, as last resolved.
    config: BulkheadConfig,
    keys: BTreeMap<String, KeyLimits>,
    /// The keys made with limits of their own.
    pinned: Vec<K>,
    source: String,
}

impl<K: BulkheadKey> Entry<K> {
    /// The limits its keys with limits of their own run with now, by name.
    fn live_keys(&self) -> BTreeMap<String, KeyLimits> {
        self.pinned
            .iter()
            .map(|key| (key.to_string(), self.keyed.limits_of(key)))
            .collect()
    }
}

impl<K: BulkheadKey> AnyKeyed for Entry<K> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn key_type(&self) -> &'static str {
        std::any::type_name::<K>()
    }

    fn plan(
        &self,
        id: &str,
        layers: &Layers<Bulkhead>,
        settings: Option<&BTreeMap<String, KeySetting>>,
    ) -> Result<Option<Box<dyn Any + Send>>, RegistryError> {
        let resolved = resolve(id, layers, &self.spec, &self.code_keys, settings)?;
        let unchanged = resolved.config == self.keyed.config() && resolved.keys == self.live_keys();
        Ok((!unchanged).then(|| Box::new(resolved) as Box<dyn Any + Send>))
    }

    fn install(&mut self, id: &str, next: Box<dyn Any + Send>) -> Change {
        let Ok(next) = next.downcast::<Resolved<K>>() else {
            unreachable!("a keyed bulkhead's plan is of its own key type")
        };
        let keyed = &self.keyed;
        let live = keyed.config();
        let live_keys = self.live_keys();
        let new = &next.config;
        // Each in range: resolved (and so checked) as a configuration. One
        // that does not hold live (a limit below the reservations in force)
        // is left as it is, and shows as not applied.
        let _ = keyed.set_max_concurrent(new.max_concurrent());
        let _ = keyed.set_per_key(new.per_key());
        let _ = keyed.set_max_keys(new.max_keys());
        keyed.set_idle_evict(new.idle_evict());
        keyed.set_max_wait(new.max_wait());
        for key in &self.pinned {
            if let Some(limits) = next.keys.get(&key.to_string()) {
                let _ = keyed.set_key_per_key(key, limits.per_key());
            }
        }
        let now = keyed.config();
        let now_keys = self.live_keys();
        let mut change = Change::of::<Bulkhead>(id, &live, new, &now);
        if live_keys != next.keys {
            let applied = now_keys == next.keys;
            change.keys.push(KeyChange {
                key: "keys",
                from: render_keys(&live_keys),
                to: render_keys(&next.keys),
                applied,
            });
            change.applied &= applied;
            change.from = describe(&live, &live_keys);
            change.to = describe(new, &next.keys);
        }
        self.config = next.config;
        self.keys = next.keys;
        change
    }

    fn snapshot(&self, id: &str, top: usize) -> KeyedBulkheadSnapshot {
        let s = self.keyed.snapshot(top);
        KeyedBulkheadSnapshot {
            instance: id.to_owned(),
            key_type: std::any::type_name::<K>(),
            in_flight: s.in_flight,
            waiting: s.waiting,
            max_concurrent: s.max_concurrent,
            per_key: s.per_key,
            reserved: s.reserved,
            keys: s.keys,
            busy_keys: s.busy_keys,
            max_keys: s.max_keys,
            refused_keys: s.refused_keys,
            top: s
                .top
                .into_iter()
                .map(|key| TopKey {
                    key: key.key.to_string(),
                    in_flight: key.in_flight,
                    waiting: key.waiting,
                    per_key: key.per_key,
                    reserved: key.reserved,
                })
                .collect(),
        }
    }
}

/// A keyed bulkhead's configuration and keys, resolved.
struct Resolved<K> {
    config: BulkheadConfig,
    /// The keys with limits of their own, in order: code's, then
    /// configuration's others.
    limits: Vec<(K, KeyLimits)>,
    /// The same by name.
    keys: BTreeMap<String, KeyLimits>,
}

/// Resolves keyed bulkhead `id`: its configuration as a bulkhead's
/// (`[bulkhead.instances.<id>]` over `spec` over its named config over
/// `default`), and its keys' limits, configuration's fields over code's.
fn resolve<K: BulkheadKey>(
    id: &str,
    layers: &Layers<Bulkhead>,
    spec: &BulkheadConfigBuilder,
    code_keys: &[(K, KeyLimits)],
    settings: Option<&BTreeMap<String, KeySetting>>,
) -> Result<Resolved<K>, RegistryError> {
    let config = layers.resolve(id, spec)?;
    let prefix = format!("bulkhead.instances.{id}.keys");
    let mut limits: Vec<(K, KeyLimits)> = code_keys.to_vec();
    // The keys configuration names, as written: two spellings of one key
    // ("7" and "07" for a number) would have the later in sort order win.
    let mut written: std::collections::HashMap<K, &str> = std::collections::HashMap::new();
    for (name, setting) in settings.into_iter().flatten() {
        let key: K = name.parse().map_err(|_| ConfigSourceError::Malformed {
            source_name: format!("{prefix}.{}", quoted(name)),
            message: format!(
                "{name:?} is not a key of this keyed bulkhead (of type {})",
                std::any::type_name::<K>()
            ),
        })?;
        if let Some(first) = written.insert(key.clone(), name) {
            return Err(ConfigError::KeyedLimits {
                key: format!("{prefix}.{}", quoted(name)),
                reason: format!("the key is given twice, as {first:?} and {name:?}"),
            }
            .into());
        }
        match limits.iter_mut().find(|(k, _)| *k == key) {
            Some((_, limits)) => {
                let per_key = setting.per_key.unwrap_or(limits.per_key());
                let reserved = setting.reserved.unwrap_or(limits.reserved_slots());
                *limits = KeyLimits::new(per_key).reserved(reserved);
            }
            None => {
                let per_key = setting.per_key.unwrap_or(config.per_key());
                limits.push((
                    key,
                    KeyLimits::new(per_key).reserved(setting.reserved.unwrap_or(0)),
                ));
            }
        }
    }
    let mut keys = BTreeMap::new();
    let mut reserved = 0u64;
    for (key, key_limits) in &limits {
        let name = key.to_string();
        let at = format!("{prefix}.{}", quoted(&name));
        if key_limits.per_key() == 0 || key_limits.per_key() > max_per_key() {
            return Err(ConfigError::LimitOutOfRange {
                key: format!("{at}.per_key"),
                value: key_limits.per_key().to_string(),
                max: max_per_key().into(),
            }
            .into());
        }
        if key_limits.reserved_slots() > key_limits.per_key() {
            return Err(ConfigError::KeyedLimits {
                key: format!("{at}.reserved"),
                reason: format!(
                    "reserved ({}) is above the key's per_key ({})",
                    key_limits.reserved_slots(),
                    key_limits.per_key()
                ),
            }
            .into());
        }
        reserved += u64::from(key_limits.reserved_slots());
        if keys.insert(name, *key_limits).is_some() {
            return Err(ConfigError::KeyedLimits {
                key: at,
                reason: "the key is given twice".to_owned(),
            }
            .into());
        }
    }
    if reserved > u64::from(config.max_concurrent()) {
        return Err(ConfigError::KeyedLimits {
            key: prefix,
            reason: format!(
                "the keys' reservations add up to {reserved}, above max_concurrent ({})",
                config.max_concurrent()
            ),
        }
        .into());
    }
    if keys.len() > config.max_keys() as usize {
        return Err(ConfigError::KeyedLimits {
            key: prefix,
            reason: format!(
                "{} keys have limits of their own, above max_keys ({})",
                keys.len(),
                config.max_keys()
            ),
        }
        .into());
    }
    Ok(Resolved {
        config,
        limits,
        keys,
    })
}

/// `a keyed bulkhead with keys of type <type>`.
pub(crate) fn keyed_of(key_type: &str) -> String {
    format!("a keyed bulkhead with keys of type {key_type}")
}

/// `tenant-42: per_key 10, reserved 5; ...`, or `none`.
fn render_keys(keys: &BTreeMap<String, KeyLimits>) -> String {
    if keys.is_empty() {
        return "none".to_owned();
    }
    let mut out = String::new();
    for (i, (key, limits)) in keys.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(
            out,
            "{}: per_key {}, reserved {}",
            quoted(key),
            limits.per_key(),
            limits.reserved_slots()
        );
    }
    out
}

/// A configuration and its keys, for messages.
fn describe(config: &BulkheadConfig, keys: &BTreeMap<String, KeyLimits>) -> String {
    if keys.is_empty() {
        config.to_string()
    } else {
        format!("{config}, keys {{{}}}", render_keys(keys))
    }
}
