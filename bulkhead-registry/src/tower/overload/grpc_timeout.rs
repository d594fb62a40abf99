//! The `grpc-timeout` header: [`parse()`] and [`format()`] (gRPC over HTTP/2,
//! `Timeout → "grpc-timeout" TimeoutValue TimeoutUnit`: at most 8 ASCII
//! digits, then `H` hours, `M` minutes, `S` seconds, `m` milliseconds, `u`
//! microseconds or `n` nanoseconds).

use std::time::Duration;

use http::HeaderValue;

/// The most digits a `grpc-timeout` value may have.
const MAX_DIGITS: usize = 8;
/// The largest value 8 digits hold.
const MAX_VALUE: u64 = 99_999_999;

/// The units, finest first, with their length in nanoseconds.
const UNITS: [(u8, u64); 6] = [
    (b'n', 1),
    (b'u', 1_000),
    (b'm', 1_000_000),
    (b'S', 1_000_000_000),
    (b'M', 60 * 1_000_000_000),
    (b'H', 3_600 * 1_000_000_000),
];

/// The time a `grpc-timeout` header gives, or `None` when it is not one
/// (no digits, more than 8, an unknown unit, anything after the unit):
/// the request then runs with no deadline of its own, as tonic's server
/// does with such a header.
///
/// Units are case-sensitive: `M` is minutes, `m` milliseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_registry::tower::grpc_timeout;
/// use http::HeaderValue;
///
/// let parse = |text| grpc_timeout::parse(&HeaderValue::from_static(text));
/// assert_eq!(parse("300m"), Some(Duration::from_millis(300)));
/// assert_eq!(parse("2M"), Some(Duration::from_secs(120)));
/// assert_eq!(parse("123456789n"), None); // 9 digits
/// assert_eq!(parse("5s"), None); // seconds are `S`
/// ```
pub fn parse(value: &HeaderValue) -> Option<Duration> {
    let (&unit, count) = value.as_bytes().split_last()?;
    if count.len() > MAX_DIGITS {
        return None;
    }
    let nanos_per = UNITS.iter().find(|(u, _)| *u == unit)?.1;
    let count = super::digits(count)?;
    // At most 99_999_999 hours: about 3.6e20 ns, beyond u64, hence u128.
    let nanos = u128::from(count) * u128::from(nanos_per);
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// `timeout` as a `grpc-timeout` value: in the finest unit whose count
/// fits in 8 digits, rounded **down** (the callee never believes it has
/// more time than it has), and at least `1n` (the header has no zero).
/// Beyond 99,999,999 hours it says that many hours.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_registry::tower::grpc_timeout;
///
/// assert_eq!(grpc_timeout::format(Duration::from_millis(300)), "300000u");
/// assert_eq!(grpc_timeout::format(Duration::from_secs(3600)), "3600000m");
/// assert_eq!(grpc_timeout::format(Duration::from_nanos(123_456_789_999)), "123456m");
/// assert_eq!(grpc_timeout::format(Duration::ZERO), "1n");
/// ```
pub fn format(timeout: Duration) -> HeaderValue {
    let nanos = timeout.as_nanos().max(1);
    let (unit, count) = UNITS
        .iter()
        .map(|&(unit, per)| (unit, nanos / u128::from(per)))
        .find(|&(_, count)| count <= u128::from(MAX_VALUE))
        .unwrap_or((b'H', u128::from(MAX_VALUE)));
    let mut text = count.to_string();
    text.push(char::from(unit));
    // Digits and one ASCII letter: always a valid header value.
    HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("1n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &'static str) -> Option<Duration> {
        parse(&HeaderValue::from_static(text))
    }

    #[test]
    fn every_unit_parses_to_its_length() {
        assert_eq!(parsed("7H"), Some(Duration::from_secs(7 * 3600)));
        assert_eq!(parsed("7M"), Some(Duration::from_secs(7 * 60)));
        assert_eq!(parsed("7S"), Some(Duration::from_secs(7)));
        assert_eq!(parsed("7m"), Some(Duration::from_millis(7)));
        assert_eq!(parsed("7u"), Some(Duration::from_micros(7)));
        assert_eq!(parsed("7n"), Some(Duration::from_nanos(7)));
        assert_eq!(
            parsed("99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
    }

    #[test]
    fn minutes_are_upper_case_and_milliseconds_lower_case() {
        assert_eq!(parsed("5M"), Some(Duration::from_secs(300)));
        assert_eq!(parsed("5m"), Some(Duration::from_millis(5)));
        assert_ne!(parsed("5M"), parsed("5m"));
    }

    #[test]
    fn anything_but_one_to_eight_digits_and_a_unit_is_ignored() {
        for text in [
            "",
            "S",
            "123456789S",
            "1s",
            "1h",
            "1x",
            "-1S",
            "+1S",
            " 1S",
            "1S ",
            "1.5S",
            "1SS",
        ] {
            assert_eq!(
                parse(&HeaderValue::from_str(text).unwrap()),
                None,
                "{text:?}"
            );
        }
        assert_eq!(parsed("12345678n"), Some(Duration::from_nanos(12_345_678)));
    }

    #[test]
    fn format_takes_the_finest_unit_that_fits_in_eight_digits() {
        assert_eq!(format(Duration::from_nanos(99_999_999)), "99999999n");
        assert_eq!(format(Duration::from_nanos(100_000_000)), "100000u");
        assert_eq!(format(Duration::from_secs(100_000)), "100000S");
        assert_eq!(format(Duration::from_secs(100_000_000)), "1666666M");
        assert_eq!(
            format(Duration::from_secs(99_999_999 * 60 + 59)),
            "99999999M"
        );
        assert_eq!(format(Duration::from_secs(6_000_000_000)), "1666666H");
        assert_eq!(format(Duration::MAX), "99999999H");
        assert_eq!(format(Duration::ZERO), "1n");
    }

    #[test]
    fn a_round_trip_never_gives_more_time() {
        let mut nanos: u64 = 1;
        while nanos < u64::MAX / 8 {
            for t in [nanos, nanos + 1, nanos * 2 + 1, nanos * 3 - 1] {
                let timeout = Duration::from_nanos(t);
                let back = parsed_value(format(timeout));
                assert!(back <= timeout, "{timeout:?} came back as {back:?}");
                // At least 100,000 of the unit are kept: off by 1e-5 at most.
                assert!(
                    (timeout - back).as_nanos() * 100_000 <= timeout.as_nanos(),
                    "{timeout:?}"
                );
            }
            nanos = nanos * 7 + 3;
        }
    }

    fn parsed_value(value: HeaderValue) -> Duration {
        parse(&value).unwrap_or(Duration::MAX)
    }
}
