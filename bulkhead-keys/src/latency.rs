//! The latency a chaos policy injects: [`ChaosLatency`], a duration or a
//! range of durations.

use std::fmt;
use std::time::Duration;

use crate::config::{ConfigError, parse_duration};

/// The latency a chaos policy injects into a delayed call: always the same
/// duration, or one drawn uniformly in a range, both ends included.
///
/// Written as a duration (`"200ms"`) or as two durations around `..`
/// (`"100ms..500ms"`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_keys::ChaosLatency;
///
/// let ms = Duration::from_millis;
/// assert_eq!(ChaosLatency::parse("latency", "200ms")?, ChaosLatency::fixed(ms(200)));
/// let range = ChaosLatency::parse("latency", "100ms..500ms")?;
/// assert_eq!((range.min(), range.max()), (ms(100), ms(500)));
/// assert_eq!(range.to_string(), "100ms..500ms");
/// assert_eq!(ChaosLatency::parse("latency", "500ms..100ms").unwrap_err().code(), "ATR-001");
/// # Ok::<(), bulkhead_keys::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChaosLatency {
    min: Duration,
    max: Duration,
}

impl ChaosLatency {
    /// Always `latency`.
    pub const fn fixed(latency: Duration) -> Self {
        ChaosLatency {
            min: latency,
            max: latency,
        }
    }

    /// A latency drawn uniformly from `min` to `max`, both included. A
    /// `min` after `max` is refused when the configuration is built
    /// (ATR-001).
    pub const fn range(min: Duration, max: Duration) -> Self {
        ChaosLatency { min, max }
    }

    /// The shortest latency.
    pub const fn min(&self) -> Duration {
        self.min
    }

    /// The longest latency.
    pub const fn max(&self) -> Duration {
        self.max
    }

    /// Whether it is one duration, not a range.
    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }

    /// Reads `text`, given for `key`: a duration (humantime, or `0`), or
    /// two around `..`, the first not after the second.
    ///
    /// # Errors
    ///
    /// ATR-001 naming `key`: a duration's own error for a single
    /// duration, [`ConfigError::InvalidLatency`] for a range that does not
    /// parse or whose start is after its end.
    pub fn parse(key: &str, text: &str) -> Result<Self, ConfigError> {
        let Some((min, max)) = text.split_once("..") else {
            return parse_duration(key, text).map(ChaosLatency::fixed);
        };
        let refused = || ConfigError::InvalidLatency {
            key: key.to_owned(),
            value: text.to_owned(),
        };
        let min = parse_duration(key, min).map_err(|_| refused())?;
        let max = parse_duration(key, max).map_err(|_| refused())?;
        ChaosLatency::range(min, max).checked(key)
    }

    /// The latency, if its start is not after its end.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidLatency`] (ATR-001) naming `key`.
    pub fn checked(self, key: &str) -> Result<Self, ConfigError> {
        if self.min <= self.max {
            Ok(self)
        } else {
            Err(ConfigError::InvalidLatency {
                key: key.to_owned(),
                value: self.to_string(),
            })
        }
    }
}

impl From<Duration> for ChaosLatency {
    fn from(latency: Duration) -> Self {
        ChaosLatency::fixed(latency)
    }
}

impl fmt::Display for ChaosLatency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let min = humantime::format_duration(self.min);
        if self.is_fixed() {
            write!(f, "{min}")
        } else {
            write!(f, "{min}..{}", humantime::format_duration(self.max))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_is_a_duration_or_a_range() {
        let ms = Duration::from_millis;
        let parse = |text| ChaosLatency::parse("latency", text);
        assert_eq!(parse("0"), Ok(ChaosLatency::fixed(Duration::ZERO)));
        assert_eq!(parse(" 1s "), Ok(ChaosLatency::fixed(ms(1000))));
        assert_eq!(
            parse("100ms .. 1s"),
            Ok(ChaosLatency::range(ms(100), ms(1000)))
        );
        assert_eq!(parse("5ms..5ms"), Ok(ChaosLatency::fixed(ms(5))));
        for bad in [
            "",
            "1x",
            "..",
            "1s..",
            "..1s",
            "2s..1s",
            "1s..2s..3s",
            "1s...2s",
        ] {
            let err = parse(bad).unwrap_err();
            assert_eq!((err.code(), err.key()), ("ATR-001", "latency"), "{bad:?}");
        }
        assert!(
            parse("2s..1s")
                .unwrap_err()
                .to_string()
                .starts_with("ATR-001: invalid latency \"2s..1s\" for latency"),
        );
    }

    #[test]
    fn a_latency_reads_as_it_is_written() {
        for text in ["200ms", "100ms..500ms", "1s..2m"] {
            assert_eq!(
                ChaosLatency::parse("latency", text).unwrap().to_string(),
                text
            );
        }
    }
}
