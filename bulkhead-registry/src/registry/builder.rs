//! Making a [`Registry`]: [`RegistryBuilder`], with its clock, named
//! configurations, per-instance overrides and configuration sources.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use bulkhead_core::{Clock, EventBus, PolicyContext, Pools, SystemClock};

use super::{Inner, Registry};
use crate::budget::Budgets;
use crate::error::RegistryError;
use crate::policy::Managed;
use crate::registry::lock::Serial;
use crate::sizing::Windows;
use crate::source::{ResourceSetting, ResourceSpec, Setting, Source};
use crate::store::{AllLayers, Stores};

impl Registry {
    /// A registry on the system clock, with the built-in defaults.
    pub fn new() -> Self {
        Registry::builder().build()
    }

    /// Starts configuring a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

/// Configures a [`Registry`]: its clock, named configurations and per-instance
/// overrides, in code or from configuration sources.
#[derive(Debug)]
#[must_use]
pub struct RegistryBuilder {
    clock: Arc<dyn Clock>,
    event_capacity: usize,
    /// What was given in code.
    programmatic: AllLayers,
    /// The sources, in the order given, with the settings they held.
    sources: Vec<Given>,
    track_sizing: bool,
    top_keys: usize,
}

/// A source as it was given, and what it held then.
#[derive(Debug)]
struct Given {
    source: Source,
    settings: Vec<Setting>,
    resources: Vec<ResourceSetting>,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            clock: Arc::new(SystemClock),
            event_capacity: EventBus::DEFAULT_CAPACITY,
            programmatic: AllLayers::default(),
            sources: Vec::new(),
            track_sizing: false,
            top_keys: crate::keyed::DEFAULT_TOP_KEYS,
        }
    }
}

impl RegistryBuilder {
    /// Measures every wait and deadline on `clock` (the system clock by
    /// default; a [`ManualClock`](bulkhead_core::ManualClock) in tests).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Makes every bulkhead count its traffic (arrivals, admissions,
    /// rejections, hold times) for [`Registry::sizing`] and snapshots. Off by
    /// default: it costs two clock reads and two atomic additions per
    /// admitted call, and one addition per rejection.
    pub fn track_sizing(mut self, track: bool) -> Self {
        self.track_sizing = track;
        self
    }

    /// How many keys of each keyed bulkhead a
    /// [`snapshot`](Registry::snapshot) lists (those holding the most
    /// slots; 10 by default), and so how many the metrics exporter labels
    /// one by one.
    pub fn snapshot_top_keys(mut self, top: usize) -> Self {
        self.top_keys = top;
        self
    }

    /// How many events a subscriber may fall behind before it loses the
    /// oldest (1024 by default).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity;
        self
    }

    /// Defines (or extends) `P`'s named configuration `name`: what
    /// `bulkhead_config` and its kin do.
    pub(crate) fn policy_config<P: Managed>(
        mut self,
        name: impl Into<String>,
        f: impl FnOnce(P::Spec) -> P::Spec,
    ) -> Self {
        self.programmatic.of_mut::<P>().config(name.into(), f);
        self
    }

    /// Overrides values of `P`'s instance `id`: what `bulkhead_instance`
    /// and its kin do.
    pub(crate) fn policy_instance<P: Managed>(
        mut self,
        id: impl Into<String>,
        f: impl FnOnce(P::Spec) -> P::Spec,
    ) -> Self {
        self.programmatic.of_mut::<P>().instance(id.into(), f);
        self
    }

    /// Loads configuration from TOML text (see the crate docs for the keys).
    /// Later sources override earlier ones key by key, and environment
    /// variables override TOML.
    ///
    /// # Errors
    ///
    /// CFG-002 if it is not TOML of the expected shape (an empty id or
    /// config name included), CFG-001 for an
    /// unknown key (with a did-you-mean), the ATR code of a bad value, each
    /// naming the full key.
    pub fn config_toml(self, toml: &str) -> Result<Self, RegistryError> {
        self.source(Source::Toml(toml.to_owned()))
    }

    /// Loads configuration from a TOML file, read again by
    /// [`Registry::reload`].
    ///
    /// # Errors
    ///
    /// CFG-003 if it cannot be read; otherwise as for
    /// [`config_toml`](Self::config_toml).
    pub fn config_file(self, path: impl Into<PathBuf>) -> Result<Self, RegistryError> {
        self.source(Source::File(path.into()))
    }

    /// Loads configuration from the environment variables named
    /// `BULKHEAD_<POLICY>__<CONFIGS|INSTANCES>__<NAME>__<KEY>`; see
    /// [`config_env_prefix`](Self::config_env_prefix).
    ///
    /// # Errors
    ///
    /// As for [`config_env_prefix`](Self::config_env_prefix).
    pub fn config_env(self) -> Result<Self, RegistryError> {
        self.config_env_prefix("BULKHEAD_")
    }

    /// Loads configuration from the environment variables whose names start
    /// with `prefix`, read again by [`Registry::reload`]:
    /// `<prefix><POLICY>__<CONFIGS|INSTANCES>__<NAME>__<KEY>=<value>`, the
    /// parts separated by two underscores, for example
    /// `BULKHEAD_BULKHEAD__INSTANCES__THUMBNAILS_ASYNC__MAX_WAIT=2s`.
    /// Resources are `<prefix>RESOURCES__<NAME>__<KEY>=<value>`
    /// (`BULKHEAD_RESOURCES__DB__BUDGET=100`): `<NAME>` names the resource
    /// a TOML source declares in that normalized form, or else the
    /// resource named by `<NAME>` in lower case; their keys override
    /// TOML's.
    ///
    /// `<NAME>` is matched against ids and config names after both are
    /// normalized: ASCII letters and digits upper-cased, every run of other
    /// characters (dots, dashes, `#`, `::`, spaces, parentheses) replaced by
    /// one `_`, none at either end; so `shop::Thumbs#resize(&str, u32)` is
    /// `SHOP_THUMBS_RESIZE_STR_U32`. Keys are matched without regard to case;
    /// lists (`abort_on`) are comma-separated.
    ///
    /// A variable names one id or config. An id or config name with no
    /// ASCII letter or digit (`日本`) normalizes to nothing and no variable
    /// matches it: set it in TOML or code by its exact name. When two ids of
    /// one policy normalize alike (`thumbnails-async`, `thumbnails.async`)
    /// and variables name that form, the variables apply to the first one
    /// declared, and the declaration of the second fails with CFG-004
    /// naming both; the same for two config names, one of them used by a
    /// declaration (two given in TOML or code fail
    /// [`try_build`](Self::try_build)), and for a
    /// [`Registry::reload`] that would match two live ids or names.
    ///
    /// # Errors
    ///
    /// CFG-002 for a variable with the prefix and a `__` that does not have
    /// that shape, or whose `<NAME>` normalizes to nothing; CFG-001 for an
    /// unknown policy, section or key; the ATR code of a bad value; each
    /// naming the variable. Variables with the prefix, no `__` and no
    /// policy's name after it (`BULKHEAD_LOG`) are not ours and are
    /// ignored.
    pub fn config_env_prefix(self, prefix: &str) -> Result<Self, RegistryError> {
        self.source(Source::Env(prefix.to_owned()))
    }

    /// Loads configuration from the given variables as if they were the
    /// environment (see [`config_env_prefix`](Self::config_env_prefix)):
    /// for tests, or variables read from elsewhere. A reload keeps them as
    /// given.
    ///
    /// # Errors
    ///
    /// As for [`config_env_prefix`](Self::config_env_prefix).
    pub fn config_vars<K, V>(
        self,
        prefix: &str,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, RegistryError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let vars = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.source(Source::Vars(prefix.to_owned(), vars))
    }

    fn source(mut self, source: Source) -> Result<Self, RegistryError> {
        let settings = source.settings()?;
        let resources = source.resource_settings()?;
        // Keyed bulkheads' keys: read now so that a bad one names this source.
        source.key_settings()?;
        // Checked against a scratch copy now, so that errors name this source.
        AllLayers::default().apply(&settings)?;
        self.sources.push(Given {
            source,
            settings,
            resources,
        });
        // The resources of every source so far, merged, must make sense.
        if let Err(error) = self.resources() {
            self.sources.pop();
            return Err(error);
        }
        Ok(self)
    }

    fn layers(&self) -> Result<AllLayers, RegistryError> {
        let mut layers = self.programmatic.clone();
        for given in &self.sources {
            layers.apply(&given.settings)?;
        }
        Ok(layers)
    }

    /// The resources the sources declared when they were given.
    fn resources(&self) -> Result<Vec<ResourceSpec>, RegistryError> {
        crate::source::resource_specs(
            self.sources
                .iter()
                .map(|given| (&given.source, given.resources.as_slice())),
        )
    }

    /// Builds the registry, checking every configuration it was given
    /// first: each named config and per-instance override must build (the
    /// limits an instance's overrides write in order among themselves: no
    /// layer is above them), and each `base_config` must name a config.
    ///
    /// # Errors
    ///
    /// REG-004 for a `base_config` that names no config, CFG-004 for two
    /// config names that normalize alike under an environment variable, or
    /// the ATR code of an invalid value, naming its full key.
    pub fn try_build(self) -> Result<Registry, RegistryError> {
        self.layers()?.validate()?;
        let resources = self.resources()?;
        let registry = self.registry();
        registry.declare_resources(&resources, &mut Vec::new(), false)?;
        Ok(registry)
    }

    /// Builds the registry. Configuration values are checked when an instance
    /// uses them, so a bad value is reported with its key by the wrapper or
    /// pipeline that needs it; [`try_build`](Self::try_build) checks them all
    /// now.
    ///
    /// If a source declares a fleet resource (with a fleet crate, see
    /// [`crate::fleet`]) and the
    /// thread that keeps its lease cannot be started, the resource is
    /// declared with the share `on_unreachable` gives a process that never
    /// reached Redis, and the error (REG-016) is kept:
    /// `Registry::fleet_errors` and the resource's snapshot show it.
    /// [`try_build`](Self::try_build) returns it instead.
    pub fn build(self) -> Registry {
        // Checked as each source was given.
        let resources = self.resources().unwrap_or_default();
        let registry = self.registry();
        // On a registry without bulkheads, declaring resources checked
        // before fails only to start the fleet thread, which falls back.
        let _ = registry.declare_resources(&resources, &mut Vec::new(), true);
        registry
    }

    fn registry(self) -> Registry {
        let events = EventBus::new(self.event_capacity);
        // Each source was applied on its own when it was given; together
        // they cannot fail.
        let layers = self.layers().unwrap_or_else(|_| self.programmatic.clone());
        let sources: Vec<Source> = self.sources.into_iter().map(|given| given.source).collect();
        // Read when each source was given.
        let keys = crate::source::key_settings(&sources).unwrap_or_default();
        let telemetry = bulkhead_core::TelemetryHub::new();
        Registry {
            inner: Arc::new(Inner {
                context: PolicyContext::new(self.clock)
                    .with_pools(Arc::new(Pools::new()))
                    .with_events(events.clone())
                    .with_sizing(self.track_sizing)
                    .with_telemetry(telemetry.clone()),
                events,
                stores: Stores::new(layers),
                programmatic: self.programmatic,
                sources: Mutex::new(sources),
                declaring: Serial::default(),
                next_batch: AtomicU64::new(0),
                windows: Mutex::new(Windows::default()),
                budgets: Mutex::new(Budgets::default()),
                function_errors: Mutex::new(Vec::new()),
                fleets: super::fleet::Fleets::default(),
                keyed: crate::keyed::KeyedStore::new(keys),
                telemetry,
                top_keys: self.top_keys,
            }),
        }
    }
}
