//! Configuration from outside the code: TOML and environment variables,
//! turned into [`Setting`]s, one per key.
//!
//! Keys are `<policy>.configs.<name>.<key>` and `<policy>.instances.<id>.<key>`
//! for each policy by its `PolicyKind::name` (`bulkhead`, `retry`,
//! `circuit_breaker`, `timeout`, `rate_limiter`). Instances also take
//! `base_config`, the named configuration they start from.

mod env;
mod keys;
mod names;
mod resources;
mod setting;
mod toml;
mod value;

pub(crate) use env::from_env;
pub(crate) use keys::{KeySetting, KeySettings, max_per_key, quoted};
pub(crate) use names::{parse_policy, suggest};
pub(crate) use resources::{ResourceSetting, ResourceSpec};
pub(crate) use setting::{Setting, Target, env_name, normalize};
pub(crate) use toml::from_toml;
pub(crate) use value::Value;

use std::ffi::OsString;

use crate::error::{ConfigSourceError, RegistryError};

/// The resources `sources` declare; see [`resource_specs`].
///
/// # Errors
///
/// The first error of any source.
pub(crate) fn resources(sources: &[Source]) -> Result<Vec<ResourceSpec>, RegistryError> {
    let settings = sources
        .iter()
        .map(|source| Ok((source, source.resource_settings()?)))
        .collect::<Result<Vec<_>, RegistryError>>()?;
    resource_specs(settings.iter().map(|(source, s)| (*source, s.as_slice())))
}

/// The resources the settings of each source declare, merged key by key:
/// the environment's over TOML's whatever their order, and a later
/// source's over an earlier one's.
///
/// # Errors
///
/// A resource without a budget (CFG-002), a fleet that cannot be used
/// (REG-014).
pub(crate) fn resource_specs<'a>(
    sources: impl IntoIterator<Item = (&'a Source, &'a [ResourceSetting])>,
) -> Result<Vec<ResourceSpec>, RegistryError> {
    let (env, toml): (Vec<_>, Vec<_>) =
        sources.into_iter().partition(|(source, _)| source.is_env());
    let settings: Vec<&ResourceSetting> = toml
        .into_iter()
        .chain(env)
        .flat_map(|(_, settings)| settings)
        .collect();
    resources::specs(&settings)
}

/// The limits of single keys of keyed bulkheads `sources` give (TOML
/// only: see `keys.rs`), a later source's fields over an earlier one's.
///
/// # Errors
///
/// The first error of any source.
pub(crate) fn key_settings(sources: &[Source]) -> Result<KeySettings, RegistryError> {
    let mut settings = KeySettings::new();
    for source in sources {
        keys::merge(&mut settings, source.key_settings()?);
    }
    Ok(settings)
}

/// A configuration source, as given to the registry builder; kept so that
/// [`Registry::reload`](crate::Registry::reload) can read it again. Its
/// `Debug` shows no text or value: they may hold a secret (a fleet's Redis
/// URL).
#[derive(Clone)]
pub(crate) enum Source {
    Toml(String),
    File(std::path::PathBuf),
    /// The process's environment, read at each load.
    Env(String),
    /// Variables given explicitly, with their prefix.
    Vars(String, Vec<(String, String)>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Toml(text) => write!(f, "Toml({} bytes)", text.len()),
            Source::File(path) => f.debug_tuple("File").field(path).finish(),
            Source::Env(prefix) => f.debug_tuple("Env").field(prefix).finish(),
            Source::Vars(prefix, vars) => {
                let names: Vec<&str> = vars.iter().map(|(name, _)| name.as_str()).collect();
                f.debug_tuple("Vars").field(prefix).field(&names).finish()
            }
        }
    }
}

impl Source {
    /// The settings of the resources the source declares
    /// (`[resources.<name>]` in TOML, `RESOURCES__<NAME>__<KEY>` in the
    /// environment), each value checked.
    pub(crate) fn resource_settings(&self) -> Result<Vec<ResourceSetting>, RegistryError> {
        self.read(toml::resources_from_toml, |prefix, vars| {
            env::resources_from_env(prefix, vars)
        })
    }

    /// The limits of single keys of keyed bulkheads the source gives
    /// (`[bulkhead.instances.<id>.keys."<key>"]`; none from the
    /// environment).
    pub(crate) fn key_settings(&self) -> Result<KeySettings, RegistryError> {
        self.read(keys::from_toml, |_, _| Ok(KeySettings::new()))
    }

    /// Whether the source is environment variables.
    pub(crate) fn is_env(&self) -> bool {
        matches!(self, Source::Env(_) | Source::Vars(..))
    }

    /// Reads and parses the source.
    pub(crate) fn settings(&self) -> Result<Vec<Setting>, ConfigSourceError> {
        self.read(from_toml, |prefix, vars| from_env(prefix, vars))
    }

    /// The source's text read by `toml` (with the source's name), or its
    /// variables by `env` (with their prefix).
    fn read<T, E: From<ConfigSourceError>>(
        &self,
        toml: impl FnOnce(&str, &str) -> Result<T, E>,
        env: impl FnOnce(&str, Box<dyn Iterator<Item = (OsString, OsString)> + '_>) -> Result<T, E>,
    ) -> Result<T, E> {
        match self {
            Source::Toml(text) => toml(text, "TOML"),
            Source::File(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| ConfigSourceError::Unreadable {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
                toml(&text, &path.display().to_string())
            }
            Source::Env(prefix) => env(prefix, Box::new(std::env::vars_os())),
            Source::Vars(prefix, vars) => env(
                prefix,
                Box::new(vars.iter().map(|(k, v)| (k.into(), v.into()))),
            ),
        }
    }
}
