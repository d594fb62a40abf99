//! Configuration from outside the code: TOML and environment variables,
//! turned into [`Setting`]s, one per key.
//!
//! Keys are `<policy>.configs.<name>.<key>` and `<policy>.instances.<id>.<key>`
//! for the policies `bulkhead`, `retry`, `circuit_breaker`, `timeout` and
//! `rate_limiter`. Instances also take `base_config`, the named configuration
//! they start from.

mod env;
mod toml;
mod value;

pub(crate) use env::from_env;
pub(crate) use toml::from_toml;
pub(crate) use value::Value;

use crate::error::RegistryError;

/// The policies, by their name in keys.
pub(crate) const POLICIES: [&str; 5] = [
    "bulkhead",
    "retry",
    "circuit_breaker",
    "timeout",
    "rate_limiter",
];

/// Where a setting applies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// A named configuration.
    Config(String),
    /// One instance, by id.
    Instance(String),
    /// A named configuration given by an environment variable, whose name
    /// is matched in [`normalize`]d form.
    EnvConfig(String),
    /// One instance given by an environment variable, matched the same way.
    EnvInstance(String),
}

/// One key's value from a source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting {
    /// One of [`POLICIES`].
    pub(crate) policy: &'static str,
    pub(crate) target: Target,
    /// The key inside the policy, such as `max_concurrent`.
    pub(crate) key: String,
    pub(crate) value: Value,
    /// The full key as the source wrote it, for messages.
    pub(crate) full_key: String,
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
    /// Reads and parses the source.
    pub(crate) fn settings(&self) -> Result<Vec<Setting>, RegistryError> {
        match self {
            Source::Toml(text) => from_toml(text, "TOML"),
            Source::File(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| RegistryError::Unreadable {
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

/// The form in which ids and config names are matched against environment
/// variables: ASCII letters and digits upper-cased, every run of other
/// characters one `_`, none at either end. `shop::Thumbs#resize(&str, u32)`
/// becomes `SHOP_THUMBS_RESIZE_STR_U32`, `thumbnails-async` becomes
/// `THUMBNAILS_ASYNC`.
pub(crate) fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The [`normalize`]d form of `name` when it has one: a name with no ASCII
/// letter or digit (`日本`) has none, and no environment variable names it.
pub(crate) fn env_name(name: &str) -> Option<String> {
    Some(normalize(name)).filter(|n| !n.is_empty())
}

/// `; did you mean "x"?` for the known name closest to `given`, or the list
/// of known names when none is close.
pub(crate) fn suggest(given: &str, known: &[&str]) -> String {
    let closest = known
        .iter()
        .map(|k| (distance(given, k), *k))
        .min_by_key(|(d, _)| *d);
    match closest {
        Some((d, k)) if d <= 2.max(given.len() / 3) => format!("; did you mean {k:?}?"),
        _ => format!("; expected one of {}", known.join(", ")),
    }
}

/// Levenshtein distance, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_normalize_to_environment_variable_names() {
        assert_eq!(
            normalize("shop::Thumbs#resize(&str, u32)"),
            "SHOP_THUMBS_RESIZE_STR_U32"
        );
        assert_eq!(normalize("thumbnails-async"), "THUMBNAILS_ASYNC");
        assert_eq!(normalize("a.b.c"), "A_B_C");
        assert_eq!(normalize("--x--"), "X");
        assert_eq!(normalize("É"), "");
    }

    #[test]
    fn suggestions_name_the_closest_key_or_list_them_all() {
        let keys = ["max_concurrent", "max_wait", "enabled"];
        assert_eq!(
            suggest("max_concurent", &keys),
            "; did you mean \"max_concurrent\"?"
        );
        assert_eq!(
            suggest("colour", &keys),
            "; expected one of max_concurrent, max_wait, enabled"
        );
    }
}
