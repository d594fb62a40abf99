//! What a key's value is: [`ValueKind`] (with the [`Range`] of a number),
//! and [`KeyValue`], a value read by its kind.

use std::fmt;
use std::time::Duration;

use crate::delay::HedgeDelay;
use crate::latency::ChaosLatency;
use crate::priority::{Priority, ShedAt};
use crate::rejection::RejectionKinds;

/// The kind of a key's value: how it is written (in an attribute, a TOML
/// file or an environment variable), what it must be, and the code of a
/// value that is not.
///
/// Every key whose value is of one kind is read and checked alike, by the
/// attribute macros at compile time and by the registry's configuration
/// sources at run time, with the ranges given here; the config builders
/// check their values with the same ranges. Not `#[non_exhaustive]`: the
/// crates that read values match on it exhaustively, so that a new kind
/// is handled everywhere it must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueKind {
    /// A concurrency limit: a whole number from 1 to `max` (ATR-003).
    Limit {
        /// The largest limit.
        max: u32,
    },
    /// Any other count: a whole number from `min` to `max` (ATR-008).
    Count {
        /// The smallest count.
        min: u32,
        /// The largest count.
        max: u32,
    },
    /// A number in `range` (ATR-008), which the builder takes as `float`.
    Number {
        /// The numbers accepted.
        range: Range,
        /// The builder's argument type.
        float: Float,
    },
    /// A duration: humantime text such as `250ms` or `1m 30s`, or `0`
    /// (ATR-001); zero is refused if `positive` (ATR-008).
    Duration {
        /// Whether the duration must be longer than zero.
        positive: bool,
    },
    /// `true` or `false` (ATR-006).
    Bool,
    /// One of `choices` (ATR-010), which name the variants of the
    /// builder's argument type `ty` (`"count"` is `SlidingWindow::Count`).
    Choice {
        /// The builder's argument type, an enum of the core crate.
        ty: &'static str,
        /// The values accepted, each its variant's name in snake case.
        choices: &'static [&'static str],
    },
    /// A list of rejection kinds, such as `[BulkheadFull, Timeout]`
    /// (ATR-009).
    RejectionKinds,
    /// A non-empty string: an instance id, or the name of a configuration
    /// or a resource (ATR-002 in an attribute).
    Name,
    /// The path of a function `fn(&E) -> bool` judging a method's errors
    /// `E` (ATR-011); attributes only.
    Predicate,
    /// The name of another method of the same trait, in a string, which
    /// must have the same signature (ATR-013); attributes only.
    Method,
    /// A hedge's delay: a duration as for [`ValueKind::Duration`], or a
    /// percentile of the latency observed, `p` and a number above 0 and
    /// below 100 with at most one decimal, such as `p90` (ATR-001).
    Delay,
    /// An injected latency: a duration as for [`ValueKind::Duration`], or
    /// a range of them, `100ms..500ms`, its start not after its end
    /// (ATR-001).
    Latency,
    /// A seed: a whole number from 0 to 2^64 - 1 (ATR-008).
    Seed,
    /// A priority class: `"sheddable"`, `"normal"`, `"high"` or
    /// `"critical"` (ATR-017).
    Priority,
    /// Fractions of a bulkhead's limit per class below `critical`, such
    /// as `"sheddable=0.5, normal=0.8"` (ATR-017; ATR-018 if they decrease
    /// with the class).
    ShedAt,
}

impl ValueKind {
    /// The code of a value that is not of this kind, or out of its range.
    ///
    /// A positive duration of zero is ATR-008 (see
    /// [`ValueKind::Duration`]).
    pub const fn code(self) -> &'static str {
        match self {
            ValueKind::Duration { .. } | ValueKind::Delay | ValueKind::Latency => "ATR-001",
            ValueKind::Name => "ATR-002",
            ValueKind::Limit { .. } => "ATR-003",
            ValueKind::Bool => "ATR-006",
            ValueKind::Count { .. } | ValueKind::Number { .. } | ValueKind::Seed => "ATR-008",
            ValueKind::RejectionKinds => "ATR-009",
            ValueKind::Choice { .. } => "ATR-010",
            ValueKind::Predicate => "ATR-011",
            ValueKind::Method => "ATR-013",
            ValueKind::Priority | ValueKind::ShedAt => "ATR-017",
        }
    }
}

impl fmt::Display for ValueKind {
    /// What a value of the kind is, in words: `integer from 1 to 100`,
    /// `duration, longer than zero`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ValueKind::Limit { max } => write!(f, "integer from 1 to {max}"),
            ValueKind::Count { min, max: u32::MAX } => write!(f, "integer, at least {min}"),
            ValueKind::Count { min, max } => write!(f, "integer from {min} to {max}"),
            ValueKind::Number { range, .. } => write!(f, "number, {}", range.bounds()),
            ValueKind::Duration { positive: false } => f.write_str("duration"),
            ValueKind::Duration { positive: true } => f.write_str("duration, longer than zero"),
            ValueKind::Bool => f.write_str("`true` or `false`"),
            ValueKind::Choice { choices, .. } => {
                for (i, choice) in choices.iter().enumerate() {
                    match i {
                        0 => {}
                        i if i + 1 == choices.len() => f.write_str(" or ")?,
                        _ => f.write_str(", ")?,
                    }
                    write!(f, "`{choice:?}`")?;
                }
                Ok(())
            }
            ValueKind::RejectionKinds => f.write_str("list of rejection kinds"),
            ValueKind::Name => f.write_str("string"),
            ValueKind::Predicate => f.write_str("path of a `fn(&E) -> bool`"),
            ValueKind::Method => f.write_str("name of a method of the trait, in a string"),
            ValueKind::Delay => f.write_str("duration, or a percentile of the latency (`\"p90\"`)"),
            ValueKind::Latency => f.write_str("duration, or a range of them (`\"100ms..500ms\"`)"),
            ValueKind::Seed => f.write_str("integer from 0 to 2^64 - 1"),
            ValueKind::Priority => {
                f.write_str("`\"sheddable\"`, `\"normal\"`, `\"high\"` or `\"critical\"`")
            }
            ValueKind::ShedAt => f.write_str(
                "fractions of the limit per class below critical (`\"sheddable=0.5, normal=0.8\"`)",
            ),
        }
    }
}

/// The type a builder takes a number as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Float {
    /// `f32` (a rate threshold, in percent).
    F32,
    /// `f64`.
    F64,
}

/// The numbers a [`ValueKind::Number`] key accepts: finite numbers between
/// two bounds. NaN and the infinities are never in a range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    min: Bound,
    max: Bound,
}

/// One end of a [`Range`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// The number itself is in the range.
    Included(f64),
    /// Only numbers beyond it are.
    Excluded(f64),
    /// No bound but that the number is finite.
    Unbounded,
}

impl Range {
    /// The finite numbers from `min` to `max`.
    pub const fn new(min: Bound, max: Bound) -> Range {
        Range { min, max }
    }

    /// Whether `value` is in the range.
    pub fn contains(&self, value: f64) -> bool {
        let above = match self.min {
            Bound::Included(min) => value >= min,
            Bound::Excluded(min) => value > min,
            Bound::Unbounded => true,
        };
        let below = match self.max {
            Bound::Included(max) => value <= max,
            Bound::Excluded(max) => value < max,
            Bound::Unbounded => true,
        };
        value.is_finite() && above && below
    }

    /// What the range accepts, as error messages say it: `more than 0 and
    /// at most 100`, or `a finite number of at least 1` when it has no
    /// upper bound.
    pub fn words(&self) -> String {
        match self.max {
            Bound::Unbounded => format!("a finite number of {}", self.bounds()),
            _ => self.bounds(),
        }
    }

    /// Its bounds in words: `more than 0 and at most 100`, `at least 1`.
    fn bounds(&self) -> String {
        let min = match self.min {
            Bound::Included(min) => Some(format!("at least {min}")),
            Bound::Excluded(min) => Some(format!("more than {min}")),
            Bound::Unbounded => None,
        };
        let max = match self.max {
            Bound::Included(max) => Some(format!("at most {max}")),
            Bound::Excluded(max) => Some(format!("less than {max}")),
            Bound::Unbounded => None,
        };
        match (min, max) {
            (Some(min), Some(max)) => format!("{min} and {max}"),
            (Some(bound), None) | (None, Some(bound)) => bound,
            (None, None) => "finite".to_owned(),
        }
    }

    /// A number in the range, to show how to write one: the middle of a
    /// range with two bounds, one past the bound of a range with one.
    pub fn example(&self) -> f64 {
        let value = |bound| match bound {
            Bound::Included(x) | Bound::Excluded(x) => Some(x),
            Bound::Unbounded => None,
        };
        match (value(self.min), value(self.max)) {
            (Some(min), Some(max)) => (min + max) / 2.0,
            (Some(min), None) => min + 1.0,
            (None, Some(max)) => max - 1.0,
            (None, None) => 0.0,
        }
    }
}

/// A value for a key, read according to its [`ValueKind`], as a
/// configuration source gives it to a config builder's `set_key`.
///
/// Only a value's kind is checked when it is read; its range is checked
/// when the configuration is built, as for the builder's own setters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KeyValue {
    /// For a [`ValueKind::Limit`] or [`ValueKind::Count`] key.
    Integer(u32),
    /// For a [`ValueKind::Number`] key.
    Number(f64),
    /// For a [`ValueKind::Duration`] key.
    Duration(Duration),
    /// For a [`ValueKind::Bool`] key.
    Bool(bool),
    /// For a [`ValueKind::Choice`] key (one of its choices) or a
    /// [`ValueKind::Name`] key.
    Text(String),
    /// For a [`ValueKind::RejectionKinds`] key.
    RejectionKinds(RejectionKinds),
    /// For a [`ValueKind::Delay`] key.
    Delay(HedgeDelay),
    /// For a [`ValueKind::Latency`] key (a duration alone may also be a
    /// [`KeyValue::Duration`]).
    Latency(ChaosLatency),
    /// For a [`ValueKind::Seed`] key.
    Seed(u64),
    /// For a [`ValueKind::Priority`] key.
    Priority(Priority),
    /// For a [`ValueKind::ShedAt`] key.
    ShedAt(ShedAt),
}

impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Integer(n) => write!(f, "{n}"),
            KeyValue::Number(x) => write!(f, "{x}"),
            KeyValue::Duration(d) => write!(f, "{}", humantime::format_duration(*d)),
            KeyValue::Bool(b) => write!(f, "{b}"),
            KeyValue::Text(text) => write!(f, "{text:?}"),
            KeyValue::RejectionKinds(kinds) => write!(f, "{kinds}"),
            KeyValue::Delay(delay) => write!(f, "{delay}"),
            KeyValue::Latency(latency) => write!(f, "{latency}"),
            KeyValue::Seed(seed) => write!(f, "{seed}"),
            KeyValue::Priority(class) => write!(f, "{:?}", class.name()),
            KeyValue::ShedAt(shed_at) => write!(f, "{:?}", shed_at.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERCENT: Range = Range::new(Bound::Excluded(0.0), Bound::Included(100.0));
    const AT_LEAST_ONE: Range = Range::new(Bound::Included(1.0), Bound::Unbounded);
    const FRACTION: Range = Range::new(Bound::Included(0.0), Bound::Excluded(1.0));

    #[test]
    fn ranges_hold_finite_numbers_between_their_bounds() {
        assert!(PERCENT.contains(100.0) && PERCENT.contains(0.001));
        assert!(!PERCENT.contains(0.0) && !PERCENT.contains(100.5));
        assert!(AT_LEAST_ONE.contains(1.0) && AT_LEAST_ONE.contains(1e300));
        assert!(!AT_LEAST_ONE.contains(f64::INFINITY) && !AT_LEAST_ONE.contains(0.99));
        assert!(FRACTION.contains(0.0) && !FRACTION.contains(1.0));
        for range in [PERCENT, AT_LEAST_ONE, FRACTION] {
            assert!(!range.contains(f64::NAN));
            assert!(range.contains(range.example()), "{range:?}");
        }
    }

    #[test]
    fn ranges_say_what_they_hold_as_messages_do() {
        assert_eq!(PERCENT.words(), "more than 0 and at most 100");
        assert_eq!(AT_LEAST_ONE.words(), "a finite number of at least 1");
        assert_eq!(FRACTION.words(), "at least 0 and less than 1");
        assert_eq!((PERCENT.example(), AT_LEAST_ONE.example()), (50.0, 2.0));
    }

    #[test]
    fn kinds_say_what_they_take() {
        let kinds = [
            (
                ValueKind::Limit { max: 9 },
                "integer from 1 to 9",
                "ATR-003",
            ),
            (
                ValueKind::Count {
                    min: 1,
                    max: u32::MAX,
                },
                "integer, at least 1",
                "ATR-008",
            ),
            (
                ValueKind::Number {
                    range: AT_LEAST_ONE,
                    float: Float::F64,
                },
                "number, at least 1",
                "ATR-008",
            ),
            (
                ValueKind::Duration { positive: true },
                "duration, longer than zero",
                "ATR-001",
            ),
            (
                ValueKind::Choice {
                    ty: "SlidingWindow",
                    choices: &["count", "time"],
                },
                "`\"count\"` or `\"time\"`",
                "ATR-010",
            ),
        ];
        for (kind, words, code) in kinds {
            assert_eq!((kind.to_string().as_str(), kind.code()), (words, code));
        }
    }
}
