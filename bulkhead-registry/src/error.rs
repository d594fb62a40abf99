//! The coded errors of the registry.
//!
//! REG-017 is no [`RegistryError`]: it is the code of a keyed bulkhead's
//! refusal of a new key while `max_keys` keys are live, carried by the
//! `KeyRejected` events whose reason is
//! [`KeyRefusal::TooManyKeys`](bulkhead_core::KeyRefusal::TooManyKeys), and
//! by the `tracing` events and metric labels made of them (the call itself
//! fails with `BulkheadFull`).

use bulkhead_core::ConfigError;

/// Why the registry refused to create or find a policy instance.
///
/// [`code`](RegistryError::code) gives the error's code, and its `Display`
/// starts with it: `REG-008: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A policy names a configuration that does not exist (REG-004).
    #[error(
        "REG-004: {policy} {instance:?} uses config {config:?}, which does not exist; known configs: {known}"
    )]
    UnknownConfig {
        /// The kind of policy, such as `"bulkhead"`.
        policy: &'static str,
        /// The instance id.
        instance: String,
        /// The config name it asked for.
        config: String,
        /// The configs that do exist, comma-separated.
        known: String,
    },
    /// One instance id resolved to two different configurations (REG-008).
    #[error("REG-008: {0}")]
    Conflict(Box<Conflict>),
    /// No instance has this id (REG-009).
    #[error(
        "REG-009: no {policy} with id {instance:?}; it exists once its trait is wrapped or its pipeline built{known}"
    )]
    UnknownInstance {
        /// The kind of policy, such as `"bulkhead"`.
        policy: &'static str,
        /// The id asked for.
        instance: String,
        /// A hint listing the ids that do exist, or empty.
        known: String,
    },
    /// A configuration value is invalid (its code is the `ConfigError`'s,
    /// such as ATR-003).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The bulkheads on a resource would need more slots than its budget
    /// (REG-010).
    #[error(
        "REG-010: resource {resource:?} has a budget of {budget} slots, but its bulkheads would take {needed}: {usage}"
    )]
    OverBudget {
        /// The resource.
        resource: String,
        /// Its budget.
        budget: u32,
        /// The slots its bulkheads would take together.
        needed: u64,
        /// Each bulkhead and its `reserved` (by default its
        /// `max_concurrent`), comma-separated.
        usage: String,
    },
    /// A bulkhead names a resource the registry has no budget for
    /// (REG-011).
    #[error(
        "REG-011: bulkhead {instance:?} uses resource {resource:?}, which has no budget; declare it with registry.resource({resource:?}, budget) first"
    )]
    UnknownResource {
        /// The bulkhead.
        instance: String,
        /// The resource it names.
        resource: String,
    },
    /// A disabled bulkhead names a resource (REG-013): it admits every call,
    /// so its slots cannot be counted against the resource's budget.
    #[error(
        "REG-013: bulkhead {instance:?} is disabled (enabled = false) and admits every call, so it cannot count against the budget of resource {resource:?}; enable it or remove its resource"
    )]
    DisabledOnResource {
        /// The bulkhead.
        instance: String,
        /// The resource it names.
        resource: String,
    },
    /// A fleet resource's configuration cannot be used (REG-014): a Redis
    /// URL that does not parse (shown without its passwords, whatever
    /// characters they hold); a TLS form (`rediss://`,
    /// `rediss+sentinel://`, `rediss+cluster://`) without the feature
    /// `tls` of bulkhead-fleet (`redis-tls` of bulkhead); a user name or
    /// password with a `/`, `?` or `#` not percent-encoded (and, in the
    /// Sentinel and Cluster forms, a `,`); for Sentinel and Cluster, no
    /// address, a port not in 1-65535, an empty master name or one with
    /// a `/`, a database under Cluster, an unknown parameter (a Sentinel
    /// URL takes `sentinel_username` and `sentinel_password`), Cluster
    /// nodes with different user information; a primary's AUTH or
    /// database set in code for one Redis (they belong in its URL), a
    /// negative database; a resource name or key prefix empty or with `{`
    /// or `}`, a lease under 100 ms or over a day, a margin of zero or
    /// above half the lease. From configuration, the message starts with
    /// the key (`resources.db.lease`) or variable.
    #[error("REG-014: invalid fleet configuration: {message}")]
    FleetConfig {
        /// The resource, or empty when the configuration was checked on
        /// its own (`FleetConfig::redis`).
        resource: String,
        /// What is wrong.
        message: String,
    },
    /// A resource already shares its budget with a fleet configured
    /// otherwise (REG-015): another Redis, prefix, lease, margin or
    /// fallback. A process joins one fleet per resource for its life.
    #[error(
        "REG-015: resource {resource:?} already shares its budget as {running}; it cannot share it as {requested} too"
    )]
    FleetConflict {
        /// The resource.
        resource: String,
        /// The fleet it is in (its URL without the password).
        running: String,
        /// The fleet asked for.
        requested: String,
    },
    /// The thread that keeps the fleet leases cannot be started (REG-016).
    #[error("REG-016: cannot start the fleet thread: {message}")]
    FleetStart {
        /// The operating system's reason.
        message: String,
    },
    /// One id asked for as two kinds of bulkhead (REG-018): a bulkhead and
    /// a keyed bulkhead, or keyed bulkheads of two key types. A bulkhead id
    /// names one instance, whose configuration `[bulkhead.instances.<id>]`
    /// gives.
    #[error(
        "REG-018: bulkhead id {instance:?} is already {declared}; it cannot also be {requested}: use another id"
    )]
    KindConflict {
        /// The id.
        instance: String,
        /// What it is: `a bulkhead`, or `a keyed bulkhead with keys of
        /// type ...`.
        declared: String,
        /// What it was asked for as.
        requested: String,
    },
    /// A configuration source (TOML, a file, environment variables) cannot
    /// be read as configuration: CFG-001 to CFG-004, its code and message
    /// the [`ConfigSourceError`]'s.
    #[error(transparent)]
    ConfigSource(#[from] ConfigSourceError),
}

impl RegistryError {
    /// The error's code, such as `"REG-008"`.
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::UnknownConfig { .. } => "REG-004",
            RegistryError::Conflict { .. } => "REG-008",
            RegistryError::UnknownInstance { .. } => "REG-009",
            RegistryError::Config(error) => error.code(),
            RegistryError::OverBudget { .. } => "REG-010",
            RegistryError::UnknownResource { .. } => "REG-011",
            RegistryError::DisabledOnResource { .. } => "REG-013",
            RegistryError::FleetConfig { .. } => "REG-014",
            RegistryError::FleetConflict { .. } => "REG-015",
            RegistryError::FleetStart { .. } => "REG-016",
            RegistryError::KindConflict { .. } => "REG-018",
            RegistryError::ConfigSource(error) => error.code(),
        }
    }
}

/// Why a configuration source (TOML text, a file, environment variables)
/// cannot be read as configuration: CFG-001 to CFG-004.
///
/// [`code`](ConfigSourceError::code) gives the error's code, and its
/// `Display` starts with it: `CFG-001: ...`. The registry returns it inside
/// [`RegistryError::ConfigSource`], whose `code` and `Display` are this error's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigSourceError {
    /// A configuration source names a key that does not exist (CFG-001).
    #[error("CFG-001: unknown configuration key {key}{hint}")]
    UnknownKey {
        /// The full key, as in the source.
        key: String,
        /// `; did you mean ...?` or `; expected one of ...`.
        hint: String,
    },
    /// A configuration source cannot be read as configuration: TOML syntax,
    /// a value of the wrong shape, an environment variable that names no
    /// key (CFG-002).
    #[error("CFG-002: {source_name}: {message}")]
    Malformed {
        /// Which source: `TOML`, a file's path, or an environment variable.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// Environment variables name an id or config name that two of them
    /// normalize to (CFG-004): `thumbnails-async` and `thumbnails.async` are
    /// both `THUMBNAILS_ASYNC`, so the variables cannot say which one they
    /// mean. Raised when the second of the two is declared (or used as a
    /// config), and by a reload that would apply such variables to both.
    #[error(
        "CFG-004: environment variables for {policy}.{section}.{name} match both {first:?} and {second:?}, which normalize alike; set them in TOML or code by their exact names, or rename one"
    )]
    AmbiguousEnvName {
        /// The kind of policy, such as `"bulkhead"`.
        policy: &'static str,
        /// `"instances"` or `"configs"`.
        section: &'static str,
        /// The name in the variables, normalized (`THUMBNAILS_ASYNC`).
        name: String,
        /// The id or config name known first.
        first: String,
        /// The one that met it: the id being declared, or the config it
        /// uses.
        second: String,
    },
    /// A configuration file cannot be read (CFG-003).
    #[error("CFG-003: cannot read configuration file {path}: {message}")]
    Unreadable {
        /// The file's path.
        path: String,
        /// The operating system's reason.
        message: String,
    },
}

impl ConfigSourceError {
    /// The error's code, such as `"CFG-001"`.
    pub fn code(&self) -> &'static str {
        match self {
            ConfigSourceError::UnknownKey { .. } => "CFG-001",
            ConfigSourceError::Malformed { .. } => "CFG-002",
            ConfigSourceError::Unreadable { .. } => "CFG-003",
            ConfigSourceError::AmbiguousEnvName { .. } => "CFG-004",
        }
    }
}

/// The two sides of a REG-008 conflict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{policy} {instance:?} has two different configurations: {first_source} resolves to [{first_config}], but {second_source} resolves to [{second_config}]; give them the same configuration or different names"
)]
#[non_exhaustive]
pub struct Conflict {
    /// The kind of policy, such as `"bulkhead"`.
    pub policy: &'static str,
    /// The shared instance id.
    pub instance: String,
    /// Who declared the instance first (a method or a pipeline).
    pub first_source: String,
    /// The configuration it resolved to.
    pub first_config: String,
    /// Who declared it again.
    pub second_source: String,
    /// The configuration that one resolved to.
    pub second_config: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_source_error_keeps_its_code_and_message_in_a_registry_error() {
        let source = ConfigSourceError::UnknownKey {
            key: "bulkhead.instances.a.max_concurent".to_owned(),
            hint: "; did you mean \"max_concurrent\"?".to_owned(),
        };
        let error = RegistryError::from(source.clone());
        assert_eq!(error.code(), "CFG-001");
        assert_eq!(error.to_string(), source.to_string());
        assert!(
            error
                .to_string()
                .starts_with("CFG-001: unknown configuration key")
        );
        assert!(matches!(
            error,
            RegistryError::ConfigSource(ConfigSourceError::UnknownKey { .. })
        ));
    }
}
