//! Configuration errors and the parsers and checks of configuration values,
//! shared by every policy's builder, by configuration loaded at run time
//! and by the attribute macros.

use std::time::Duration;

mod duration;

/// A configuration value that is out of range or does not parse.
///
/// Every variant names the key it came from (`max_concurrent` in a builder,
/// the full dotted key when loaded from configuration) and the bad value, and
/// its `Display` starts with its code, e.g.
/// `ATR-001: invalid duration "25Oms" for max_wait: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A duration that does not parse (ATR-001).
    #[error(
        "ATR-001: invalid duration {value:?} for {key}: {reason}; expected a number followed by a unit, such as 250ms, 1s or 1m 30s"
    )]
    InvalidDuration {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
        /// What the parser objected to.
        reason: String,
    },
    /// A hedge's `delay` that is neither a duration nor a percentile of the
    /// latency (ATR-001, as for a duration that does not parse).
    #[error(
        "ATR-001: invalid delay {value:?} for {key}: expected a duration, such as 50ms, or a percentile of the first attempts' latency above 0 and below 100, with at most one decimal, such as p90 or p99.9"
    )]
    InvalidDelay {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
    },
    /// A chaos policy's `latency` that is neither a duration nor a range of
    /// durations with its start not after its end (ATR-001, as for a
    /// duration that does not parse).
    #[error(
        "ATR-001: invalid latency {value:?} for {key}: expected a duration, such as 200ms, or a range of durations, its start not after its end, such as 100ms..500ms"
    )]
    InvalidLatency {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
    },
    /// A duration longer than [`Duration::MAX`], about 584.5 billion years
    /// (ATR-001, as for a duration that does not parse).
    #[error(
        "ATR-001: invalid duration {value:?} for {key}: the duration is too large; the longest is 18446744073709551615s 999999999ns, about 584.5 billion years"
    )]
    DurationTooLarge {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
    },
    /// A concurrency limit below 1 or above the largest supported
    /// (ATR-003).
    #[error("ATR-003: {key} must be between 1 and {max}, got {value}")]
    LimitOutOfRange {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
        /// The largest accepted value.
        max: u64,
    },
    /// A boolean that is neither `true` nor `false` (ATR-006).
    #[error("ATR-006: {key} must be true or false, got {value:?}")]
    InvalidBool {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
    },
    /// Any other number outside its range, such as `max_attempts = 0` or
    /// `failure_rate_threshold = 120` (ATR-008).
    #[error("ATR-008: {key} must be {range}, got {value}")]
    NumberOutOfRange {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
        /// The accepted range, in words (`"between 1 and 100"`).
        range: String,
    },
    /// A name in an `abort_on` or `ignore_on` list that is not a rejection
    /// kind (ATR-009).
    #[error(
        "ATR-009: {key} lists {value:?}, which is not a rejection kind; expected BulkheadFull, CircuitOpen, Timeout, RateLimited, Injected or DeadlineExceeded"
    )]
    UnknownRejectionKind {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
    },
    /// A rejection kind listed twice in an `abort_on`, `ignore_on` or `on`
    /// list (ATR-009).
    #[error("ATR-009: {key} lists {value:?} twice; list each rejection kind once")]
    DuplicateRejectionKind {
        /// The key the list was given for.
        key: String,
        /// The kind listed twice, by its name.
        value: String,
    },
    /// A value that is not one of a fixed set of choices, such as
    /// `sliding_window = "counted"` (ATR-010).
    #[error("ATR-010: {key} must be one of {choices}, got {value:?}")]
    InvalidChoice {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
        /// The accepted values, comma-separated.
        choices: String,
    },
    /// A keyed bulkhead's per-key limits that cannot hold together
    /// (ATR-020): a key's `reserved` above its `per_key`, the reservations
    /// of all keys above `max_concurrent`, or more keys with limits of
    /// their own than `max_keys`.
    #[error("ATR-020: {key}: {reason}")]
    KeyedLimits {
        /// The key out of place, such as `keys."tenant-42".reserved`.
        key: String,
        /// What does not hold.
        reason: String,
    },
    /// A bulkhead's `queue_target` zero, or not below its
    /// `queue_interval`, while its `queue` is `lifo` or `codel` (ATR-019):
    /// such a queue would never (or always) count as standing.
    #[error(
        "ATR-019: {key} ({target:?}) must be above zero and below queue_interval ({interval:?}) with queue = {queue:?}"
    )]
    QueueTargetOutOfRange {
        /// The key out of place (`queue_target`).
        key: String,
        /// The discipline, `lifo` or `codel`.
        queue: String,
        /// `queue_target`.
        target: Duration,
        /// `queue_interval`.
        interval: Duration,
    },
    /// An adaptive bulkhead's limits out of order: `min_concurrent` <=
    /// `initial_concurrent` <= `max_concurrent` does not hold (ATR-015).
    /// `key` is the one out of place; a limit not given is `..`.
    #[error(
        "ATR-015: {key} is out of order: min_concurrent ({min}) <= initial_concurrent ({initial}) <= max_concurrent ({max}) must hold"
    )]
    LimitsOutOfOrder {
        /// The key out of place (`min_concurrent` or `initial_concurrent`).
        key: String,
        /// `min_concurrent`.
        min: String,
        /// `initial_concurrent`.
        initial: String,
        /// `max_concurrent`.
        max: String,
    },
    /// A bulkhead's `reserved` above its `max_concurrent` (ATR-016): it
    /// could never use the slots it holds back from the others.
    #[error(
        "ATR-016: {key} ({reserved}) is above max_concurrent ({max_concurrent}): a bulkhead reserves at most its limit"
    )]
    ReservedAboveLimit {
        /// The key the value was given for.
        key: String,
        /// The reservation.
        reserved: u32,
        /// The limit.
        max_concurrent: u32,
    },
    /// A name that is no priority class, as a bulkhead's `priority` or in
    /// its `shed_at` (ATR-017), with the class meant if one is close.
    #[error(
        "ATR-017: {key} names {value:?}, which is no priority class; {hint}expected {expected}"
    )]
    UnknownPriority {
        /// The key the value was given for.
        key: String,
        /// The name as given.
        value: String,
        /// `did you mean "critical"? ` if a class is close, else empty.
        hint: String,
        /// The classes accepted, comma-separated.
        expected: String,
    },
    /// A bulkhead's `shed_at` that does not parse, or with a fraction not
    /// above 0 and at most 1 (ATR-017).
    #[error(
        "ATR-017: invalid shed_at {value:?} for {key}: {reason}; expected fractions of the limit per class below critical, such as \"sheddable=0.5, normal=0.8, high=0.9\""
    )]
    InvalidShedAt {
        /// The key the value was given for.
        key: String,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A bulkhead's `shed_at` whose fractions decrease with the class
    /// (ATR-018): a higher class would be refused while a lower one is
    /// admitted. Classes not named keep their defaults (`sheddable=0.5`).
    #[error(
        "ATR-018: {key} ({value}) must not decrease with the class: sheddable <= normal <= high must hold (a class not named keeps its default, sheddable=0.5, normal=1, high=1)"
    )]
    ShedAtNotMonotone {
        /// The key the value was given for.
        key: String,
        /// The fractions, as given or as they stood.
        value: String,
    },
    /// A key a config builder's `set_key` does not have, or a value not
    /// of the kind its key takes (CFG-001).
    #[error("CFG-001: {key} is not a key of this policy that takes {value}")]
    NoSuchKey {
        /// The key as given.
        key: String,
        /// The value as given.
        value: String,
    },
}

/// The key of a [`ConfigError`] (every variant has one), by reference as
/// `$error` is.
macro_rules! key_of {
    ($error:expr) => {
        match $error {
            ConfigError::InvalidDuration { key, .. }
            | ConfigError::InvalidDelay { key, .. }
            | ConfigError::InvalidLatency { key, .. }
            | ConfigError::DurationTooLarge { key, .. }
            | ConfigError::LimitOutOfRange { key, .. }
            | ConfigError::InvalidBool { key, .. }
            | ConfigError::NumberOutOfRange { key, .. }
            | ConfigError::UnknownRejectionKind { key, .. }
            | ConfigError::DuplicateRejectionKind { key, .. }
            | ConfigError::InvalidChoice { key, .. }
            | ConfigError::QueueTargetOutOfRange { key, .. }
            | ConfigError::LimitsOutOfOrder { key, .. }
            | ConfigError::ReservedAboveLimit { key, .. }
            | ConfigError::UnknownPriority { key, .. }
            | ConfigError::InvalidShedAt { key, .. }
            | ConfigError::ShedAtNotMonotone { key, .. }
            | ConfigError::KeyedLimits { key, .. }
            | ConfigError::NoSuchKey { key, .. } => key,
        }
    };
}

impl ConfigError {
    /// The error's code, such as `"ATR-001"`.
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::InvalidDuration { .. }
            | ConfigError::InvalidDelay { .. }
            | ConfigError::InvalidLatency { .. }
            | ConfigError::DurationTooLarge { .. } => "ATR-001",
            ConfigError::LimitOutOfRange { .. } => "ATR-003",
            ConfigError::InvalidBool { .. } => "ATR-006",
            ConfigError::NumberOutOfRange { .. } => "ATR-008",
            ConfigError::UnknownRejectionKind { .. }
            | ConfigError::DuplicateRejectionKind { .. } => "ATR-009",
            ConfigError::InvalidChoice { .. } => "ATR-010",
            ConfigError::QueueTargetOutOfRange { .. } => "ATR-019",
            ConfigError::KeyedLimits { .. } => "ATR-020",
            ConfigError::LimitsOutOfOrder { .. } => "ATR-015",
            ConfigError::ReservedAboveLimit { .. } => "ATR-016",
            ConfigError::UnknownPriority { .. } | ConfigError::InvalidShedAt { .. } => "ATR-017",
            ConfigError::ShedAtNotMonotone { .. } => "ATR-018",
            ConfigError::NoSuchKey { .. } => "CFG-001",
        }
    }

    /// The key the bad value was given for.
    pub fn key(&self) -> &str {
        key_of!(self)
    }

    /// The same error about the key `key` instead (as a configuration
    /// source wrote it, such as an environment variable's name).
    #[must_use]
    pub fn with_key(mut self, new_key: &str) -> Self {
        new_key.clone_into(key_of!(&mut self));
        self
    }

    /// The same error with `prefix` put before its key, e.g. turning
    /// `max_wait` into `bulkhead.configs.slow.max_wait`.
    #[must_use]
    pub fn prefixed(mut self, prefix: &str) -> Self {
        if !prefix.is_empty() {
            key_of!(&mut self).insert_str(0, prefix);
        }
        self
    }
}

/// Parses a duration as written in attributes and configuration: humantime
/// syntax (`250ms`, `1s`, `1m 30s`), or a bare `0`.
///
/// No text makes it panic.
///
/// # Errors
///
/// ATR-001 naming `key`: [`ConfigError::InvalidDuration`] when `value`
/// does not parse, [`ConfigError::DurationTooLarge`] when its parts add up
/// to more than [`Duration::MAX`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_keys::parse_duration;
///
/// assert_eq!(parse_duration("max_wait", "250ms"), Ok(Duration::from_millis(250)));
/// assert_eq!(parse_duration("max_wait", "0"), Ok(Duration::ZERO));
/// assert_eq!(parse_duration("max_wait", "25Oms").unwrap_err().code(), "ATR-001");
/// let too_large = parse_duration("max_wait", "18446744073709551615s 1000ms");
/// assert!(too_large.unwrap_err().to_string().contains("too large"));
/// ```
pub fn parse_duration(key: &str, value: &str) -> Result<Duration, ConfigError> {
    let text = value.trim();
    // humantime panics on some texts past `Duration::MAX`: see `duration`.
    if duration::exceeds_max(text) {
        return Err(ConfigError::DurationTooLarge {
            key: key.to_owned(),
            value: value.to_owned(),
        });
    }
    humantime::parse_duration(text).map_err(|e| ConfigError::InvalidDuration {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: e.to_string(),
    })
}

/// Parses `true` or `false` (nothing else: not `yes`, `1` or `TRUE`).
///
/// # Errors
///
/// [`ConfigError::InvalidBool`] (ATR-006) naming `key`.
pub fn parse_bool(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError::InvalidBool {
            key: key.to_owned(),
            value: value.to_owned(),
        }),
    }
}

/// Checks a concurrency limit: at least 1, at most `max`.
///
/// # Errors
///
/// [`ConfigError::LimitOutOfRange`] (ATR-003) naming `key`.
pub fn check_limit(key: &str, value: u64, max: u64) -> Result<u32, ConfigError> {
    match u32::try_from(value) {
        Ok(limit) if value >= 1 && value <= max => Ok(limit),
        _ => Err(ConfigError::LimitOutOfRange {
            key: key.to_owned(),
            value: value.to_string(),
            max,
        }),
    }
}

/// Checks that a number lies in `min..=max`.
///
/// # Errors
///
/// [`ConfigError::NumberOutOfRange`] (ATR-008) naming `key`.
pub fn check_range<T>(key: &str, value: T, min: T, max: T) -> Result<T, ConfigError>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    // Written so that NaN, which compares false with everything, is refused.
    if value >= min && value <= max {
        Ok(value)
    } else {
        Err(ConfigError::NumberOutOfRange {
            key: key.to_owned(),
            value: value.to_string(),
            range: format!("between {min} and {max}"),
        })
    }
}

/// Checks that a duration is longer than zero, for the keys where zero
/// makes no sense (a timeout, a refresh period, an open breaker's wait, ...).
///
/// # Errors
///
/// [`ConfigError::NumberOutOfRange`] (ATR-008) naming `key`.
pub fn check_positive(key: &str, value: Duration) -> Result<Duration, ConfigError> {
    if value.is_zero() {
        Err(ConfigError::NumberOutOfRange {
            key: key.to_owned(),
            value: humantime::format_duration(value).to_string(),
            range: "longer than zero".to_owned(),
        })
    } else {
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_duration_is_atr_001_naming_key_and_value() {
        let err = parse_duration("bulkhead.instances.x.max_wait", "25Oms").unwrap_err();
        assert_eq!(err.code(), "ATR-001");
        assert_eq!(err.key(), "bulkhead.instances.x.max_wait");
        let message = err.to_string();
        assert!(
            message.starts_with(
                r#"ATR-001: invalid duration "25Oms" for bulkhead.instances.x.max_wait"#
            ),
            "{message}"
        );
    }

    #[test]
    fn durations_accept_humantime_and_a_bare_zero() {
        assert_eq!(parse_duration("k", "0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("k", " 1m 30s "), Ok(Duration::from_secs(90)));
        for bad in ["", "-1s", "1 parsec", "ms"] {
            assert_eq!(
                parse_duration("k", bad).unwrap_err().code(),
                "ATR-001",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_duration_past_duration_max_is_atr_001_too_large_not_a_panic() {
        let max = Duration::MAX;
        let longest = format!("{}s {}ns", max.as_secs(), max.subsec_nanos());
        assert_eq!(parse_duration("k", &longest), Ok(max));
        let cases = [
            // The nanoseconds carry exactly one second onto u64::MAX seconds.
            "18446744073709551615s 1000ms",
            "18446744073709551615s 1000000000ns",
            "18446744073709551615s 999999999ns 1ns",
            "18446744073709551615s 1000000us",
            "18446744073709551615s 0.5s 0.5s",
            "18446744073709551615.5s 500ms",
            "18446744073709551615 s 1 0 0 0 ms",
            " 18446744073709551615s1000ms ",
            "18446744073709551614s 1s 1000ms",
            "18446744073709551615s 1000ms 1x",
            // Past u64::MAX seconds in one part or in several.
            "18446744073709551615s 1s",
            "9223372036854775808s 9223372036854775808s",
            "307445734561825861m",
            "5124095576030432h",
            "213503982334602d",
            "30500568904944w",
            "7013928460401M",
            "584542046091y",
            "99999999999999999999999s",
            "584542046090y 1y",
        ];
        for text in cases {
            let err = parse_duration("bulkhead.configs.x.max_wait", text).unwrap_err();
            assert_eq!(err.code(), "ATR-001", "{text:?}");
            assert_eq!(err.key(), "bulkhead.configs.x.max_wait");
            let message = err.to_string();
            assert!(
                message.starts_with(&format!(
                    "ATR-001: invalid duration {text:?} for bulkhead.configs.x.max_wait: the duration is too large; the longest is {longest}, "
                )),
                "{message}"
            );
        }
    }

    #[test]
    fn a_mistake_before_a_total_past_duration_max_is_reported_as_such() {
        let err = parse_duration("k", "1x 18446744073709551615s 1000ms").unwrap_err();
        assert!(
            matches!(&err, ConfigError::InvalidDuration { reason, .. } if reason.contains("\"x\"")),
            "{err}"
        );
    }

    #[test]
    fn a_bad_boolean_is_atr_006() {
        assert_eq!(parse_bool("enabled", "true"), Ok(true));
        assert_eq!(parse_bool("enabled", "false"), Ok(false));
        for bad in ["yes", "1", "TRUE", ""] {
            let err = parse_bool("enabled", bad).unwrap_err();
            assert_eq!(err.code(), "ATR-006");
            assert!(
                err.to_string()
                    .starts_with("ATR-006: enabled must be true or false"),
                "{err}"
            );
        }
    }

    #[test]
    fn limits_are_checked_at_both_ends() {
        assert_eq!(check_limit("n", 1, 10), Ok(1));
        assert_eq!(check_limit("n", 10, 10), Ok(10));
        assert_eq!(check_limit("n", 0, 10).unwrap_err().code(), "ATR-003");
        assert_eq!(check_limit("n", 11, 10).unwrap_err().code(), "ATR-003");
        assert_eq!(
            check_limit("n", u64::MAX, u64::MAX).unwrap_err().code(),
            "ATR-003"
        );
    }

    #[test]
    fn other_numbers_out_of_range_are_atr_008_and_nan_is_refused() {
        assert_eq!(check_range("multiplier", 1.5, 1.0, 100.0), Ok(1.5));
        let err = check_range("failure_rate_threshold", 120.0, 0.0, 100.0).unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(
            err.to_string(),
            "ATR-008: failure_rate_threshold must be between 0 and 100, got 120"
        );
        assert_eq!(
            check_range("x", f64::NAN, 0.0, 1.0).unwrap_err().code(),
            "ATR-008"
        );
    }

    #[test]
    fn a_zero_duration_where_one_is_needed_is_atr_008() {
        assert_eq!(
            check_positive("wait_in_open", Duration::from_nanos(1)),
            Ok(Duration::from_nanos(1))
        );
        let err = check_positive("wait_in_open", Duration::ZERO).unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(
            err.to_string(),
            "ATR-008: wait_in_open must be longer than zero, got 0s"
        );
    }

    #[test]
    fn a_prefix_names_the_full_key() {
        let err = check_limit("max_concurrent", 0, 10)
            .unwrap_err()
            .prefixed("bulkhead.configs.slow.");
        assert_eq!(err.key(), "bulkhead.configs.slow.max_concurrent");
    }
}
