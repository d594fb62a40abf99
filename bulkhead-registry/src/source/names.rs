//! Names that name nothing, in configuration: the policy a source names
//! ([`parse_policy`]), and did-you-mean hints for a policy, a section or a
//! key ([`suggest`]). Which name was meant is `bulkhead_core`'s
//! [`did_you_mean`], as for the attributes' messages.

use bulkhead_core::keys::{PolicyKind, did_you_mean};

use crate::error::ConfigSourceError;

/// `; did you mean "x"?` for the known name closest to `given`, or the list
/// of known names when none is close.
pub(crate) fn suggest(given: &str, known: &[&str]) -> String {
    match did_you_mean(given, known.iter().copied()) {
        Some(closest) => format!("; did you mean {closest:?}?"),
        None => format!("; expected one of {}", known.join(", ")),
    }
}

/// The policy named `name`, which the source wrote as `key`.
///
/// # Errors
///
/// CFG-001 naming `key`, with the closest policy name.
pub(crate) fn parse_policy(name: &str, key: &str) -> Result<PolicyKind, ConfigSourceError> {
    PolicyKind::from_name(name).ok_or_else(|| ConfigSourceError::UnknownKey {
        key: key.to_owned(),
        hint: suggest(name, &PolicyKind::ALL.map(PolicyKind::name)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_name_parses_back_to_its_policy() {
        for kind in PolicyKind::ALL {
            assert_eq!(parse_policy(kind.name(), "k"), Ok(kind));
        }
    }

    #[test]
    fn an_unknown_policy_is_cfg_001_with_the_closest_name() {
        let err = parse_policy("circuit_braker", "circuit_braker").unwrap_err();
        assert_eq!(err.code(), "CFG-001");
        assert_eq!(
            err.to_string(),
            "CFG-001: unknown configuration key circuit_braker; did you mean \"circuit_breaker\"?"
        );
        let err = parse_policy("cache", "cache").unwrap_err();
        assert!(
            err.to_string().ends_with(
                "expected one of bulkhead, retry, circuit_breaker, timeout, rate_limiter, hedge, fallback, chaos"
            ),
            "{err}"
        );
    }
}
