//! The coded errors of the registry.

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
}

impl RegistryError {
    /// The error's code, such as `"REG-008"`.
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::UnknownConfig { .. } => "REG-004",
            RegistryError::Conflict { .. } => "REG-008",
            RegistryError::UnknownInstance { .. } => "REG-009",
            RegistryError::Config(error) => error.code(),
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
