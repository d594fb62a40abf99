//! The one place that names the policies a registry keeps: [`PolicyKind`].
//!
//! Code that must do something for every policy matches on it
//! exhaustively, so that the compiler lists every place a new policy
//! needs; configuration sources parse policy names with
//! [`PolicyKind::parse`].

use std::fmt;

use crate::error::ConfigSourceError;
use crate::suggest::suggest;

/// Defines [`PolicyKind`], its [`ALL`](PolicyKind::ALL), its
/// [`name`](PolicyKind::name) and [`plural`](PolicyKind::plural) from one
/// line per policy.
macro_rules! policy_kinds {
    ($($(#[$doc:meta])* $kind:ident = $name:literal, $plural:literal;)*) => {
        /// One of the policies a registry keeps.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub(crate) enum PolicyKind {
            $($(#[$doc])* $kind,)*
        }

        impl PolicyKind {
            /// How many policies there are.
            pub(crate) const COUNT: usize = [$($name),*].len();

            /// Every policy, in the order configuration lists them.
            pub(crate) const ALL: [PolicyKind; PolicyKind::COUNT] = [$(PolicyKind::$kind),*];

            /// The policy's name in configuration keys and messages
            /// (`bulkhead`, `circuit_breaker`).
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(PolicyKind::$kind => $name,)*
                }
            }

            /// Its instances, in a debug listing (`bulkheads`, `retries`).
            pub(crate) const fn plural(self) -> &'static str {
                match self {
                    $(PolicyKind::$kind => $plural,)*
                }
            }
        }
    };
}

policy_kinds! {
    /// [`Bulkhead`](bulkhead_core::Bulkhead).
    Bulkhead = "bulkhead", "bulkheads";
    /// [`Retry`](bulkhead_core::Retry).
    Retry = "retry", "retries";
    /// [`CircuitBreaker`](bulkhead_core::CircuitBreaker).
    CircuitBreaker = "circuit_breaker", "circuit_breakers";
    /// [`Timeout`](bulkhead_core::Timeout).
    Timeout = "timeout", "timeouts";
    /// [`RateLimiter`](bulkhead_core::RateLimiter).
    RateLimiter = "rate_limiter", "rate_limiters";
}

impl PolicyKind {
    /// Every policy in the fixed order they compose in, outermost first:
    /// `Retry( CircuitBreaker( RateLimiter( Timeout( Bulkhead( call ) ) ) ) )`.
    /// A set of policies is declared in this order, so that the error of
    /// the outermost is the one reported. (Its length is
    /// [`COUNT`](Self::COUNT): a new policy does not compile until it has
    /// its place here.)
    pub(crate) const OUTSIDE_IN: [PolicyKind; PolicyKind::COUNT] = [
        PolicyKind::Retry,
        PolicyKind::CircuitBreaker,
        PolicyKind::RateLimiter,
        PolicyKind::Timeout,
        PolicyKind::Bulkhead,
    ];

    /// The policy named `name` exactly, if any.
    pub(crate) fn from_name(name: &str) -> Option<PolicyKind> {
        PolicyKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

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
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_composition_order_lists_every_policy_once() {
        let mut sorted = PolicyKind::OUTSIDE_IN;
        sorted.sort();
        assert_eq!(sorted, PolicyKind::ALL);
    }

    #[test]
    fn a_name_parses_back_to_its_policy() {
        for kind in PolicyKind::ALL {
            assert_eq!(PolicyKind::parse(kind.name(), "k"), Ok(kind));
            assert_eq!(kind.to_string(), kind.name());
        }
    }

    #[test]
    fn an_unknown_policy_is_cfg_001_with_the_closest_name() {
        let err = PolicyKind::parse("circuit_braker", "circuit_braker").unwrap_err();
        assert_eq!(err.code(), "CFG-001");
        assert_eq!(
            err.to_string(),
            "CFG-001: unknown configuration key circuit_braker; did you mean \"circuit_breaker\"?"
        );
        let err = PolicyKind::parse("cache", "cache").unwrap_err();
        assert!(
            err.to_string().ends_with(
                "expected one of bulkhead, retry, circuit_breaker, timeout, rate_limiter"
            ),
            "{err}"
        );
    }
}
