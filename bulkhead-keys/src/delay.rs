//! When a hedge starts: [`HedgeDelay`], a fixed delay or a percentile of
//! the latency observed.

use std::fmt;
use std::time::Duration;

use crate::config::{ConfigError, parse_duration};

/// How long the attempts of a hedged call run before another starts.
///
/// Written as a duration (`"50ms"`), or as a percentile of the latency of
/// the calls' first attempts (`"p90"`, `"p99.9"`), which the hedge
/// estimates as calls go (see the hedge policy, `Hedge`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_keys::HedgeDelay;
///
/// assert_eq!(HedgeDelay::parse("delay", "50ms")?, HedgeDelay::from(Duration::from_millis(50)));
/// assert_eq!(HedgeDelay::parse("delay", "p99.9")?, HedgeDelay::percentile(99.9));
/// assert_eq!(HedgeDelay::percentile(90.0).to_string(), "p90");
/// assert_eq!(HedgeDelay::parse("delay", "p100").unwrap_err().code(), "ATR-001");
/// # Ok::<(), bulkhead_keys::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HedgeDelay {
    /// A fixed delay.
    Fixed(Duration),
    /// A percentile of the latency of the calls' first attempts, in tenths
    /// of a percent (`900` for p90); from 1 to 999.
    Percentile {
        /// The percentile in tenths of a percent.
        tenths: u16,
    },
}

impl HedgeDelay {
    /// The `percent` percentile of the first attempts' latency, rounded to
    /// a tenth of a percent. It must be above 0 and below 100, which the
    /// config builder checks (ATR-008).
    pub fn percentile(percent: f64) -> Self {
        let tenths = (percent * 10.0).round();
        // Out of range (or NaN) becomes 0, which the builder refuses.
        let tenths = if (1.0..=999.0).contains(&tenths) {
            tenths as u16
        } else {
            0
        };
        HedgeDelay::Percentile { tenths }
    }

    /// Reads `text`, given for `key`: a duration (humantime, or `0`), or
    /// `p` followed by a percentile above 0 and below 100 with at most one
    /// decimal.
    ///
    /// # Errors
    ///
    /// ATR-001 naming `key`: [`ConfigError::InvalidDelay`] for a
    /// percentile out of range or badly written, the duration's own error
    /// otherwise.
    pub fn parse(key: &str, text: &str) -> Result<Self, ConfigError> {
        let trimmed = text.trim();
        let Some(number) = trimmed.strip_prefix(['p', 'P']) else {
            return parse_duration(key, text).map(HedgeDelay::Fixed);
        };
        let refused = || ConfigError::InvalidDelay {
            key: key.to_owned(),
            value: text.to_owned(),
        };
        let decimals = number
            .split_once('.')
            .map_or(0, |(_, decimals)| decimals.len());
        let well_written = !number.is_empty()
            && decimals <= 1
            && number.chars().all(|c| c.is_ascii_digit() || c == '.');
        match number.parse::<f64>() {
            Ok(percent) if well_written && percent > 0.0 && percent < 100.0 => {
                Ok(HedgeDelay::percentile(percent))
            }
            _ => Err(refused()),
        }
    }
}

impl From<Duration> for HedgeDelay {
    fn from(delay: Duration) -> Self {
        HedgeDelay::Fixed(delay)
    }
}

impl fmt::Display for HedgeDelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HedgeDelay::Fixed(delay) => write!(f, "{}", humantime::format_duration(delay)),
            HedgeDelay::Percentile { tenths } if tenths % 10 == 0 => write!(f, "p{}", tenths / 10),
            HedgeDelay::Percentile { tenths } => write!(f, "p{}.{}", tenths / 10, tenths % 10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_a_duration_or_a_percentile() {
        let parse = |text| HedgeDelay::parse("delay", text);
        assert_eq!(parse("0"), Ok(HedgeDelay::Fixed(Duration::ZERO)));
        assert_eq!(
            parse(" 1s 500ms"),
            Ok(HedgeDelay::Fixed(Duration::from_millis(1500)))
        );
        assert_eq!(parse("p90"), Ok(HedgeDelay::Percentile { tenths: 900 }));
        assert_eq!(parse("P99.9"), Ok(HedgeDelay::Percentile { tenths: 999 }));
        assert_eq!(parse("p0.1"), Ok(HedgeDelay::Percentile { tenths: 1 }));
        for bad in ["p", "p0", "p100", "p99.99", "p-1", "p9x", "p1e1", "90"] {
            let err = parse(bad).unwrap_err();
            assert_eq!(err.code(), "ATR-001", "{bad}");
            assert_eq!(err.key(), "delay", "{bad}");
        }
        assert!(
            parse("p100")
                .unwrap_err()
                .to_string()
                .contains("such as p90 or p99.9")
        );
        assert!(
            parse("90")
                .unwrap_err()
                .to_string()
                .starts_with("ATR-001: invalid duration"),
            "a number alone is a duration without its unit"
        );
    }

    #[test]
    fn a_delay_reads_as_it_is_written() {
        for text in ["p90", "p99.9", "p0.5", "50ms", "2s"] {
            assert_eq!(HedgeDelay::parse("delay", text).unwrap().to_string(), text);
        }
        assert_eq!(
            HedgeDelay::percentile(100.0),
            HedgeDelay::Percentile { tenths: 0 }
        );
        assert_eq!(
            HedgeDelay::percentile(99.94),
            HedgeDelay::Percentile { tenths: 999 }
        );
    }
}
