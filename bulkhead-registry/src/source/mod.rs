//! Configuration from outside the code: TOML and environment variables,
//! turned into [`Setting`]s, one per key.
//!
//! Keys are `<policy>.configs.<name>.<key>` and `<policy>.instances.<id>.<key>`
//! for each policy by its `PolicyKind::name` (`bulkhead`, `retry`,
//! `circuit_breaker`, `timeout`, `rate_limiter`). Instances also take
//! `base_config`, the named configuration they start from.

mod env;
mod resources;
mod setting;
mod toml;
mod value;

pub(crate) use env::from_env;
pub(crate) use resources::ResourceSpec;
pub(crate) use setting::{Setting, Target, env_name, normalize};
pub(crate) use toml::from_toml;
pub(crate) use value::Value;

use crate::error::{ConfigSourceError, RegistryError};

/// The resources `sources` declare, a later source's declaration of a
/// name replacing an earlier one's.
///
/// # Errors
///
/// The first error of any source.
pub(crate) fn resources(sources: &[Source]) -> Result<Vec<ResourceSpec>, RegistryError> {
    let mut merged: Vec<ResourceSpec> = Vec::new();
    for source in sources {
        for spec in source.resources()? {
            merged.retain(|known| known.name != spec.name);
            merged.push(spec);
        }
    }
    Ok(merged)
}

/// A configuration source, as given to the registry builder; kept so that
/// [`Registry::reload`](crate::Registry::reload) can read it again.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Toml(String),
    File(std::path::PathBuf),
    /// The process's environment, read at each load.
    Env(String),
    /// Variables given explicitly, with their prefix.
    Vars(String, Vec<(String, String)>),
}

impl Source {
    /// The resources the source declares (`[resources.<name>]` in TOML;
    /// none in the environment).
    pub(crate) fn resources(&self) -> Result<Vec<ResourceSpec>, RegistryError> {
        match self {
            Source::Toml(text) => toml::resources_from_toml(text, "TOML"),
            Source::File(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| ConfigSourceError::Unreadable {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
                toml::resources_from_toml(&text, &path.display().to_string())
            }
            Source::Env(_) | Source::Vars(..) => Ok(Vec::new()),
        }
    }

    /// Reads and parses the source.
    pub(crate) fn settings(&self) -> Result<Vec<Setting>, ConfigSourceError> {
        match self {
            Source::Toml(text) => from_toml(text, "TOML"),
            Source::File(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| ConfigSourceError::Unreadable {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
                from_toml(&text, &path.display().to_string())
            }
            Source::Env(prefix) => from_env(prefix, std::env::vars_os()),
            Source::Vars(prefix, vars) => {
                from_env(prefix, vars.iter().map(|(k, v)| (k.into(), v.into())))
            }
        }
    }
}
