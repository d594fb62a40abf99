//! One key's value from a configuration source, and where it applies.

use super::value::Value;
use bulkhead_core::keys::PolicyKind;

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
    /// The policy it configures.
    pub(crate) policy: PolicyKind,
    pub(crate) target: Target,
    /// The key inside the policy, such as `max_concurrent`.
    pub(crate) key: String,
    pub(crate) value: Value,
    /// The full key as the source wrote it, for messages.
    pub(crate) full_key: String,
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
}
