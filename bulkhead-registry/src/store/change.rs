//! What a reload changed in one instance, key by key: [`Change`] and
//! [`KeyChange`].

use crate::policy::Managed;

/// What a reload changed in one instance.
///
/// `keys` says, for each key whose value changed, whether the live
/// instance took it: a key applied is in effect now; a key not applied
/// keeps its old value in the live instance, and takes effect only for an
/// instance created from now on (a new registry, or a new id). One reload
/// may do both, as when it lowers an adaptive bulkhead's ceiling (live)
/// and changes its algorithm (not live).
///
/// # Examples
///
/// ```
/// use bulkhead_core::BulkheadConfig;
/// use bulkhead_registry::Registry;
///
/// let registry = Registry::builder()
///     .config_toml("[bulkhead.instances.search]\nmax_concurrent = 20\nmax_wait = \"1s\"")?
///     .build();
/// registry.bulkhead_policy("search", "t", &BulkheadConfig::builder())?;
/// let changes = registry
///     .reload_toml("[bulkhead.instances.search]\nmax_concurrent = 10\nmax_wait = \"2s\"")?;
/// let change = &changes[0];
/// assert!(!change.applied, "not all of it took effect");
/// assert!(change.key("max_concurrent").unwrap().applied, "the limit is 10 now");
/// let pending: Vec<&str> = change.pending_keys().map(|k| k.key).collect();
/// assert_eq!(pending, ["max_wait"], "still 1s until the bulkhead is made again");
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The kind of policy, such as `"bulkhead"`; `"resource"` for a
    /// resource whose fleet changed (see `crate::fleet`): applied when it
    /// joins a fleet it was not in (`from` is `"no fleet"`), never when
    /// the fleet it is in changes or goes (`to` is `"no fleet"`).
    pub policy: &'static str,
    /// The instance id (the resource's name).
    pub instance: String,
    /// The configuration the live instance ran with before.
    pub from: String,
    /// The configuration resolved now.
    pub to: String,
    /// Whether the live instance now works with the whole new
    /// configuration: every key of `keys` applied. Only a bulkhead's
    /// `max_concurrent`, `reserved` and `resource` change live, and a
    /// resource joins a fleet (it never changes or leaves the one it is
    /// in). While a key is not applied, every later reload lists the
    /// instance again, with that key.
    pub applied: bool,
    /// Each key whose value changed, in the order of the policy's keys
    /// (the resource's `fleet` for a resource), and whether it took effect
    /// live.
    pub keys: Vec<KeyChange>,
}

/// One key a reload changed in one instance: part of a [`Change`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyChange {
    /// The key, as configuration writes it: `max_concurrent`.
    pub key: &'static str,
    /// Its value in the live instance before, as configuration writes it
    /// (`none` for a key left without one).
    pub from: String,
    /// Its value resolved now.
    pub to: String,
    /// Whether the live instance now runs with `to`; if not, it keeps
    /// `from`, and `to` applies to instances created from now on.
    pub applied: bool,
}

impl Change {
    /// The change of `policy` instance `id` from the configuration `live`
    /// it ran with to `resolved`, given what it runs with `now` that it
    /// took what it could.
    pub(crate) fn of<P: Managed>(
        id: &str,
        live: &P::Config,
        resolved: &P::Config,
        now: &P::Config,
    ) -> Change {
        let (before, after, now_values) = (P::values(live), P::values(resolved), P::values(now));
        let keys = before
            .into_iter()
            .zip(after)
            .zip(now_values)
            .filter(|(((_, from), (_, to)), _)| from != to)
            .map(|(((key, from), (_, to)), (_, now))| KeyChange {
                key,
                applied: now == to,
                from,
                to,
            })
            .collect();
        Change {
            policy: P::KIND.name(),
            instance: id.to_owned(),
            from: live.to_string(),
            to: resolved.to_string(),
            applied: now == resolved,
            keys,
        }
    }

    /// A change of one `key`, from `from` to `to` as a whole.
    pub(crate) fn of_key(
        policy: &'static str,
        instance: &str,
        key: &'static str,
        from: String,
        to: String,
        applied: bool,
    ) -> Change {
        Change {
            policy,
            instance: instance.to_owned(),
            keys: vec![KeyChange {
                key,
                from: from.clone(),
                to: to.clone(),
                applied,
            }],
            from,
            to,
            applied,
        }
    }

    /// The change of `key`, if its value changed.
    pub fn key(&self, key: &str) -> Option<&KeyChange> {
        self.keys.iter().find(|change| change.key == key)
    }

    /// The keys that did not take effect live: the live instance keeps
    /// their old values.
    pub fn pending_keys(&self) -> impl Iterator<Item = &KeyChange> {
        self.keys.iter().filter(|change| !change.applied)
    }
}
