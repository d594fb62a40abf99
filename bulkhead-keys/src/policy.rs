//! [`PolicyKind`]: the policies, from one line each.

use std::fmt;

use crate::key::{BASE_CONFIG, CONFIG, Key, NAME};
use crate::{ConfigError, KeyValue, table};

/// Defines [`PolicyKind`], its [`ALL`](PolicyKind::ALL) and the methods
/// that read its table, from one line per policy: its name, the name of its
/// instances in a listing, its config type (in `bulkhead-core`), its table
/// of keys (in `table/`) and an example key.
macro_rules! policy_kinds {
    ($(
        $(#[$doc:meta])*
        $kind:ident = $name:literal, $plural:literal, $config:ident, $table:ident, $example:literal;
    )*) => {
        /// One of the policies: what its attribute and its configuration
        /// are called, where it runs in a composition, and its keys.
        ///
        /// Not `#[non_exhaustive]`: the registry and the macros match on it
        /// exhaustively, so that the compiler lists every place a new
        /// policy needs.
        ///
        /// # Examples
        ///
        /// ```
        /// use bulkhead_keys::PolicyKind;
        ///
        /// assert_eq!(PolicyKind::CircuitBreaker.name(), "circuit_breaker");
        /// assert_eq!(PolicyKind::OUTSIDE_IN[0], PolicyKind::Fallback);
        /// assert!(PolicyKind::Timeout.keys().iter().any(|key| key.name() == "duration"));
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum PolicyKind {
            $($(#[$doc])* $kind,)*
        }

        impl PolicyKind {
            /// How many policies there are.
            pub const COUNT: usize = [$($name),*].len();

            /// Every policy, in the order configuration and messages list
            /// them (bulkhead first).
            pub const ALL: [PolicyKind; PolicyKind::COUNT] = [$(PolicyKind::$kind),*];

            /// The policy's name: its attribute (`#[circuit_breaker]`), its
            /// section in configuration and its word in messages.
            pub const fn name(self) -> &'static str {
                match self {
                    $(PolicyKind::$kind => $name,)*
                }
            }

            /// Its instances, in a listing (`bulkheads`, `retries`).
            pub const fn plural(self) -> &'static str {
                match self {
                    $(PolicyKind::$kind => $plural,)*
                }
            }

            /// The name of its resolved configuration type in
            /// `bulkhead-core` (`RetryConfig`), whose `builder()` takes its
            /// keys.
            pub const fn config_type(self) -> &'static str {
                match self {
                    $(PolicyKind::$kind => stringify!($config),)*
                }
            }

            /// A key of the policy with a value, to show how its attribute
            /// is written (`max_attempts = 3`).
            pub const fn example(self) -> &'static str {
                match self {
                    $(PolicyKind::$kind => $example,)*
                }
            }

            /// The policy's own keys, in the order its documentation lists
            /// them: its config builder's settings, and the predicates its
            /// attribute takes. The keys every policy has are
            /// [`NAME`], [`CONFIG`] and [`BASE_CONFIG`] (see
            /// [`all_keys`](Self::all_keys)).
            pub const fn keys(self) -> &'static [Key] {
                match self {
                    $(PolicyKind::$kind => table::$table::KEYS,)*
                }
            }
        }
    };
}

policy_kinds! {
    /// The bulkhead (`Bulkhead`): a share of concurrency.
    Bulkhead = "bulkhead", "bulkheads", BulkheadConfig, bulkhead, "max_concurrent = 4";
    /// The retry policy (`Retry`).
    Retry = "retry", "retries", RetryConfig, retry, "max_attempts = 3";
    /// The circuit breaker (`CircuitBreaker`).
    CircuitBreaker = "circuit_breaker", "circuit_breakers", CircuitBreakerConfig,
        circuit_breaker, "failure_rate_threshold = 50";
    /// The timeout (`Timeout`).
    Timeout = "timeout", "timeouts", TimeoutConfig, timeout, "duration = \"1s\"";
    /// The rate limiter (`RateLimiter`).
    RateLimiter = "rate_limiter", "rate_limiters", RateLimiterConfig, rate_limiter,
        "limit_for_period = 50";
    /// The hedge (`Hedge`).
    Hedge = "hedge", "hedges", HedgeConfig, hedge, "delay = \"50ms\"";
    /// The fallback (`Fallback`).
    Fallback = "fallback", "fallbacks", FallbackConfig, fallback, "method = \"cached\"";
    /// The chaos policy (`Chaos`): injected faults and latency.
    Chaos = "chaos", "chaos", ChaosConfig, chaos, "fault_rate = 0.1";
}

impl PolicyKind {
    /// Every policy in the fixed order they compose in, outermost first:
    /// `Fallback( Retry( Hedge( CircuitBreaker( RateLimiter( Timeout(
    /// Bulkhead( Chaos( call ) ) ) ) ) ) ) )`.
    /// (Its length is [`COUNT`](Self::COUNT): a new policy does not compile
    /// until it has its place here.)
    pub const OUTSIDE_IN: [PolicyKind; PolicyKind::COUNT] = [
        PolicyKind::Fallback,
        PolicyKind::Retry,
        PolicyKind::Hedge,
        PolicyKind::CircuitBreaker,
        PolicyKind::RateLimiter,
        PolicyKind::Timeout,
        PolicyKind::Bulkhead,
        PolicyKind::Chaos,
    ];

    /// Where the policy runs in a composition: its index in
    /// [`OUTSIDE_IN`](Self::OUTSIDE_IN), 0 for the outermost.
    pub const fn depth(self) -> usize {
        let mut depth = 0;
        while PolicyKind::OUTSIDE_IN[depth] as usize != self as usize {
            depth += 1;
        }
        depth
    }

    /// Whether the policy may call the operation, or another method with
    /// the same arguments, more than once in a call (a retry and a hedge
    /// call it again, a fallback calls its own method after it): each call
    /// then needs its own copy of the arguments.
    pub const fn calls_again(self) -> bool {
        match self {
            PolicyKind::Retry | PolicyKind::Hedge | PolicyKind::Fallback => true,
            PolicyKind::Bulkhead
            | PolicyKind::CircuitBreaker
            | PolicyKind::Timeout
            | PolicyKind::RateLimiter
            | PolicyKind::Chaos => false,
        }
    }

    /// The policy named `name` exactly, if any.
    pub fn from_name(name: &str) -> Option<PolicyKind> {
        PolicyKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Every key of the policy, as its documentation lists them: [`NAME`]
    /// and [`CONFIG`], its own [`keys`](Self::keys), then
    /// [`BASE_CONFIG`].
    pub fn all_keys(self) -> impl Iterator<Item = &'static Key> + Clone {
        [&NAME, &CONFIG]
            .into_iter()
            .chain(self.keys())
            .chain([&BASE_CONFIG])
    }

    /// Checks keys written together (in one attribute, one layer of
    /// configuration) against each other, beyond each key's own range
    /// (each value alone already checked): the bulkhead's
    /// `min_concurrent` <= `initial_concurrent` <= `max_concurrent` among
    /// those written (ATR-015), its `reserved` <= `max_concurrent`
    /// (ATR-016), and, with `queue` `lifo` or `codel`, its `queue_target`
    /// above zero and below the `queue_interval` written (ATR-019). The
    /// error names the key out of place.
    ///
    /// # Errors
    ///
    /// The first rule the values break.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_keys::{KeyValue, PolicyKind};
    ///
    /// let written = [
    ///     ("min_concurrent", KeyValue::Integer(10)),
    ///     ("max_concurrent", KeyValue::Integer(4)),
    /// ];
    /// let pairs: Vec<_> = written.iter().map(|(k, v)| (*k, v)).collect();
    /// let err = PolicyKind::Bulkhead.check_together(&pairs).unwrap_err();
    /// assert_eq!((err.code(), err.key()), ("ATR-015", "min_concurrent"));
    ///
    /// let written = [
    ///     ("max_concurrent", KeyValue::Integer(4)),
    ///     ("reserved", KeyValue::Integer(5)),
    /// ];
    /// let pairs: Vec<_> = written.iter().map(|(k, v)| (*k, v)).collect();
    /// let err = PolicyKind::Bulkhead.check_together(&pairs).unwrap_err();
    /// assert_eq!((err.code(), err.key()), ("ATR-016", "reserved"));
    ///
    /// let written = [
    ///     ("queue", KeyValue::Text("codel".to_owned())),
    ///     ("queue_target", KeyValue::Duration(Duration::from_millis(100))),
    ///     ("queue_interval", KeyValue::Duration(Duration::from_millis(100))),
    /// ];
    /// let pairs: Vec<_> = written.iter().map(|(k, v)| (*k, v)).collect();
    /// let err = PolicyKind::Bulkhead.check_together(&pairs).unwrap_err();
    /// assert_eq!((err.code(), err.key()), ("ATR-019", "queue_target"));
    /// ```
    pub fn check_together(self, values: &[(&str, &KeyValue)]) -> Result<(), ConfigError> {
        match self {
            PolicyKind::Bulkhead => table::bulkhead::check_together(values),
            PolicyKind::Retry
            | PolicyKind::CircuitBreaker
            | PolicyKind::Timeout
            | PolicyKind::RateLimiter
            | PolicyKind::Hedge
            | PolicyKind::Fallback
            | PolicyKind::Chaos => Ok(()),
        }
    }

    /// The key of the policy named `name`, among [`all_keys`](Self::all_keys).
    pub fn key(self, name: &str) -> Option<&'static Key> {
        self.all_keys().find(|key| key.name() == name)
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
