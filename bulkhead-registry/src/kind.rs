//! The policies a registry keeps: `bulkhead_core`'s [`PolicyKind`], which
//! names them, orders them and holds their tables of keys. Code that must
//! do something for every policy matches on it exhaustively, so that the
//! compiler lists every place a new policy needs; configuration sources
//! parse policy names with [`parse`].

pub(crate) use bulkhead_core::keys::PolicyKind;

use crate::error::ConfigSourceError;
use crate::suggest::suggest;

/// The policy named `name`, which the source wrote as `key`.
///
/// # Errors
///
/// CFG-001 naming `key`, with the closest policy name.
pub(crate) fn parse(name: &str, key: &str) -> Result<PolicyKind, ConfigSourceError> {
    PolicyKind::from_name(name).ok_or_else(|| ConfigSourceError::UnknownKey {
        key: key.to_owned(),
        hint: suggest(name, &PolicyKind::ALL.map(PolicyKind::name)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_parses_back_to_its_policy() {
        for kind in PolicyKind::ALL {
            assert_eq!(parse(kind.name(), "k"), Ok(kind));
        }
    }

    #[test]
    fn an_unknown_policy_is_cfg_001_with_the_closest_name() {
        let err = parse("circuit_braker", "circuit_braker").unwrap_err();
        assert_eq!(err.code(), "CFG-001");
        assert_eq!(
            err.to_string(),
            "CFG-001: unknown configuration key circuit_braker; did you mean \"circuit_breaker\"?"
        );
        let err = parse("cache", "cache").unwrap_err();
        assert!(
            err.to_string().ends_with(
                "expected one of bulkhead, retry, circuit_breaker, timeout, rate_limiter, hedge, fallback"
            ),
            "{err}"
        );
    }
}
