//! # Implementation details
//!
//! How long a duration text is, read the way humantime reads it, so that
//! [`parse_duration`](super::parse_duration) can refuse one longer than
//! [`Duration::MAX`] before humantime sees it.
//!
//! humantime 2.4 adds the parts of a text such as `1m 30s` one at a time,
//! checking every sum for overflow but one: when the seconds have reached
//! `u64::MAX` and the sub-second parts add up to exactly one second
//! (`"18446744073709551615s 1000ms"`, `"18446744073709551615s 999999999ns
//! 1ns"`), it leaves the carry to `Duration::new`, which panics. Its running
//! total is then one nanosecond past [`Duration::MAX`], and it has reported
//! no error before, so [`exceeds_max`], which totals the parts humantime
//! would add in the same order, in nanoseconds, gets at least as far and
//! finds the total past [`Duration::MAX`]: the text is refused before
//! humantime sees it. Any text humantime accepts totals no more than
//! [`Duration::MAX`], so none that parsed is refused.
//!
//! The reading follows humantime's grammar: a number (digits, whitespace
//! among them ignored), an optional fraction after a `.`, then a unit (ASCII
//! letters and `µ`) that ends at whitespace or at the next number's first
//! digit. It stops at humantime's syntax errors (an unknown or missing unit,
//! a missing number, a stray character), having counted what humantime
//! would have added by then, so that a mistake written before the overflow
//! is reported in humantime's words. Numbers humantime cannot hold (above
//! `u64::MAX`, or above about 584 years in a sub-second unit) count at
//! their value: humantime refuses them, in its words unless the total is
//! past [`Duration::MAX`]. The length of a unit is asked of humantime itself
//! (`1` followed by the unit), so the two never disagree on which units
//! exist.
//!
//! [`Duration::MAX`]: std::time::Duration::MAX

use std::iter::Peekable;
use std::str::Chars;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// One nanosecond more than [`Duration::MAX`](std::time::Duration::MAX).
const PAST_MAX: u128 = (u64::MAX as u128 + 1) * NANOS_PER_SEC;

/// Whether the parts of `text` that humantime would add before its first
/// error, if any, total more than [`Duration::MAX`](std::time::Duration::MAX).
pub(super) fn exceeds_max(text: &str) -> bool {
    let mut chars = text.chars().peekable();
    let mut total: u128 = 0;
    while let Some(part) = next_part(&mut chars) {
        total = total.saturating_add(part);
        if total >= PAST_MAX {
            return true;
        }
    }
    false
}

/// The next part, such as `1m` or `1.5 s`, in nanoseconds (saturating);
/// `None` at the end of the text or where humantime would report an error.
fn next_part(chars: &mut Peekable<Chars<'_>>) -> Option<u128> {
    while chars.next_if(|c| c.is_whitespace()).is_some() {}
    let mut whole = digit(chars.next()?)?;
    let mut fraction = None;
    loop {
        match *chars.peek()? {
            c if c.is_ascii_digit() => whole = whole.saturating_mul(10).saturating_add(digit(c)?),
            c if c.is_whitespace() => {}
            '.' => {
                chars.next();
                fraction = Some(fraction_digits(chars)?);
                break;
            }
            c if is_unit_char(c) => break,
            _ => return None,
        }
        chars.next();
    }
    let mut unit = String::new();
    while let Some(c) = chars.next_if(|&c| is_unit_char(c)) {
        unit.push(c);
    }
    // The unit ends at whitespace (humantime consumes it), the next
    // number's first digit (left for the next part), or the end; any other
    // character is an error.
    match chars.peek() {
        Some(c) if c.is_whitespace() => {
            chars.next();
        }
        Some(c) if !c.is_ascii_digit() => return None,
        _ => {}
    }
    let unit = unit_nanos(&unit)?;
    let mut nanos = whole.saturating_mul(unit);
    if let Some((numerator, denominator)) = fraction {
        // Exact whenever humantime accepts the fraction; it refuses one
        // that does not come out in whole nanoseconds (or whole seconds, for
        // hours and longer), which may be counted here rounded down.
        nanos = nanos.saturating_add(numerator.saturating_mul(unit) / denominator);
    }
    Some(nanos)
}

/// The digits after a `.`, whitespace among them ignored, as a fraction;
/// `None` when there are none or when humantime would report an error.
fn fraction_digits(chars: &mut Peekable<Chars<'_>>) -> Option<(u128, u128)> {
    let (mut numerator, mut denominator) = (0u128, 1u128);
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_ascii_digit() => {
                numerator = numerator.checked_mul(10)?.checked_add(digit(c)?)?;
                denominator = denominator.checked_mul(10)?;
            }
            c if c.is_whitespace() => {}
            c if is_unit_char(c) => break,
            _ => return None,
        }
        chars.next();
    }
    (denominator > 1).then_some((numerator, denominator))
}

fn digit(c: char) -> Option<u128> {
    c.to_digit(10).map(u128::from)
}

/// The characters humantime takes for a unit's.
fn is_unit_char(c: char) -> bool {
    c.is_ascii_alphabetic() || c == 'µ'
}

/// The length of one `unit` in nanoseconds, as humantime reads it; `None`
/// for a unit it does not know, or no unit at all.
fn unit_nanos(unit: &str) -> Option<u128> {
    if unit.is_empty() {
        return None;
    }
    humantime::parse_duration(&format!("1{unit}"))
        .ok()
        .map(|one| one.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_that_fit_are_not_refused() {
        for text in [
            "0",
            "250ms",
            "1m 30s",
            "1h30m",
            "1 2 s",
            "1.5h",
            "99999999999y",
            "18446744073709551615s",
            "18446744073709551615s 999999999ns",
            "18446744073709551614s 999999999ns 1ns",
            "18446744073709551614s 1000ms",
            "18446744073709551615.999999999s",
        ] {
            assert!(humantime::parse_duration(text).is_ok(), "{text:?}");
            assert!(!exceeds_max(text), "{text:?}");
        }
    }

    #[test]
    fn totals_past_duration_max_are_refused() {
        for text in [
            "18446744073709551615s 1000ms",
            "18446744073709551615s 1000000000ns",
            "18446744073709551615s 999999999ns 1ns",
            "18446744073709551615s 1s",
            "18446744073709551615.5s 0.5s",
            "18446744073709551615 s 1000000us",
            "1ns 18446744073709551615s 999999999ns",
            "307445734561825861m",
            "584542046091y",
            "99999999999999999999999s",
        ] {
            assert!(exceeds_max(text), "{text:?}");
        }
    }

    #[test]
    fn reading_stops_at_humantimes_first_error() {
        // An error before the overflow is humantime's to report.
        for text in [
            "1x 18446744073709551615s 1s",
            "1 ; 18446744073709551615s 1s",
            "1s, 18446744073709551615s 1s",
            "1.s 18446744073709551615s 1s",
            "1s s 18446744073709551615s 1s",
        ] {
            assert!(humantime::parse_duration(text).is_err(), "{text:?}");
            assert!(!exceeds_max(text), "{text:?}");
        }
    }

    #[test]
    fn units_are_humantimes() {
        assert_eq!(unit_nanos("µs"), Some(1_000));
        assert_eq!(unit_nanos("M"), Some(2_630_016 * NANOS_PER_SEC));
        assert_eq!(unit_nanos("y"), Some(31_557_600 * NANOS_PER_SEC));
        assert_eq!(unit_nanos("parsec"), None);
        assert_eq!(unit_nanos(""), None);
    }
}
