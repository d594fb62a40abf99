//! How a generated builder reads a key's value ([`Read`], from a
//! [`KeyValue`]), checks it against its row when it builds ([`Check`]),
//! and how the config writes it ([`Written`], in `Display` and `values`).

use std::fmt;
use std::time::Duration;

use bulkhead_keys::{
    ChaosLatency, ConfigError, HedgeDelay, Key, KeyValue, PolicyKind, Priority, RejectionKinds,
    ShedAt, ValueKind, check_limit, check_positive, check_range,
};

use crate::intern::intern;

/// The key of `kind` named `name`, for generated code to check a value
/// against its row; evaluated at compile time, where a name without a row
/// fails the build.
pub(crate) const fn key_of(kind: PolicyKind, name: &str) -> &'static Key {
    let keys = kind.keys();
    let mut i = 0;
    while i < keys.len() {
        let (a, b) = (keys[i].name().as_bytes(), name.as_bytes());
        let mut same = a.len() == b.len();
        let mut j = 0;
        while same && j < a.len() {
            same = a[j] == b[j];
            j += 1;
        }
        if same {
            return &keys[i];
        }
        i += 1;
    }
    panic!("generated code names a key its policy's table does not have")
}

/// CFG-001: a builder's `set_key` was given `key`, which it does not have,
/// or `value`, which `key` does not take.
pub(crate) fn no_such_key(key: &str, value: &KeyValue) -> ConfigError {
    ConfigError::NoSuchKey {
        key: key.to_owned(),
        value: value.to_string(),
    }
}

/// An enum one of whose names a [`ValueKind::Choice`] key takes
/// (`Adaptive`, `SlidingWindow`, `ChaosFault`), written by [`choice_names!`].
pub(crate) trait Choice: Copy + fmt::Display {
    /// The variant named `text`, given for `key` (ATR-010 otherwise).
    fn parse(key: &str, text: &str) -> Result<Self, ConfigError>;
}

/// The `name`, `parse`, `Display` and [`Choice`] of an enum whose variants
/// a [`ValueKind::Choice`] key names, from each variant's name; the docs of
/// `name` and `parse` are given.
macro_rules! choice_names {
    (
        $ty:ident { $($variant:ident => $name:literal),+ $(,)? }
        $(#[$name_doc:meta])* fn name;
        $(#[$parse_doc:meta])* fn parse;
    ) => {
        impl $ty {
            $(#[$name_doc])*
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            $(#[$parse_doc])*
            pub fn parse(key: &str, value: &str) -> Result<Self, $crate::config::ConfigError> {
                match value.trim() {
                    $($name => Ok($ty::$variant),)+
                    _ => Err($crate::config::ConfigError::InvalidChoice {
                        key: key.to_owned(),
                        value: value.to_owned(),
                        choices: [$($name),+].join(", "),
                    }),
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl $crate::config::Choice for $ty {
            fn parse(key: &str, text: &str) -> Result<Self, $crate::config::ConfigError> {
                $ty::parse(key, text)
            }
        }
    };
}

pub(crate) use choice_names;

/// A value a builder holds, read from a [`KeyValue`] given for `key` by
/// `set_key`.
pub(crate) trait Read: Sized {
    /// The value, or CFG-001 for a value not of the key's kind.
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError>;
}

macro_rules! read {
    ($($ty:ty: $variant:ident($value:ident) => $read:expr;)*) => {$(
        impl Read for $ty {
            fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
                match value {
                    KeyValue::$variant($value) => Ok($read),
                    value => Err(no_such_key(key, &value)),
                }
            }
        }
    )*};
}

read! {
    u32: Integer(n) => n;
    f64: Number(x) => x;
    // A rate is held as an `f32`, a percentage.
    f32: Number(x) => x as f32;
    Duration: Duration(duration) => duration;
    bool: Bool(b) => b;
    String: Text(text) => text;
    RejectionKinds: RejectionKinds(kinds) => kinds;
    u64: Seed(seed) => seed;
}

impl Read for ChaosLatency {
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        match value {
            KeyValue::Duration(latency) => Ok(ChaosLatency::fixed(latency)),
            KeyValue::Latency(latency) => Ok(latency),
            value => Err(no_such_key(key, &value)),
        }
    }
}

/// A class by its name (as an attribute passes it through a source's
/// text) or as read.
impl Read for Priority {
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        match value {
            KeyValue::Priority(class) => Ok(class),
            KeyValue::Text(text) => Priority::parse(key, &text),
            value => Err(no_such_key(key, &value)),
        }
    }
}

/// Fractions as written (`"sheddable=0.5"`) or as read.
impl Read for ShedAt {
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        match value {
            KeyValue::ShedAt(shed_at) => Ok(shed_at),
            KeyValue::Text(text) => ShedAt::parse(key, &text),
            value => Err(no_such_key(key, &value)),
        }
    }
}

impl Read for HedgeDelay {
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        match value {
            KeyValue::Duration(delay) => Ok(HedgeDelay::Fixed(delay)),
            KeyValue::Delay(delay) => Ok(delay),
            value => Err(no_such_key(key, &value)),
        }
    }
}

impl<T: Choice> Read for T {
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        match value {
            KeyValue::Text(text) => T::parse(key, &text),
            value => Err(no_such_key(key, &value)),
        }
    }
}

impl<T: Read> Read for Option<T> {
    fn read(key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        T::read(key, value).map(Some)
    }
}

/// A value a builder holds, checked against its key's row (its range) as
/// the builder resolves it into a `T` of the config.
pub(crate) trait Check<T> {
    /// The value the config holds, or the code of a value out of range.
    fn check(&self, key: &Key) -> Result<T, ConfigError>;
}

impl Check<u32> for u32 {
    fn check(&self, key: &Key) -> Result<u32, ConfigError> {
        match key.kind() {
            ValueKind::Limit { max } => check_limit(key.name(), (*self).into(), max.into()),
            ValueKind::Count { min, max } => check_range(key.name(), *self, min, max),
            _ => not_of_kind(key),
        }
    }
}

macro_rules! check_number {
    ($($ty:ty),*) => {$(
        impl Check<$ty> for $ty {
            fn check(&self, key: &Key) -> Result<$ty, ConfigError> {
                match key.kind() {
                    ValueKind::Number { range, .. } if range.contains((*self).into()) => Ok(*self),
                    ValueKind::Number { range, .. } => Err(ConfigError::NumberOutOfRange {
                        key: key.name().to_owned(),
                        value: self.to_string(),
                        range: range.words(),
                    }),
                    _ => not_of_kind(key),
                }
            }
        }
    )*};
}

check_number!(f32, f64);

impl Check<Duration> for Duration {
    fn check(&self, key: &Key) -> Result<Duration, ConfigError> {
        match key.kind() {
            ValueKind::Duration { positive: true } => check_positive(key.name(), *self),
            ValueKind::Duration { positive: false } => Ok(*self),
            _ => not_of_kind(key),
        }
    }
}

impl Check<HedgeDelay> for HedgeDelay {
    fn check(&self, key: &Key) -> Result<HedgeDelay, ConfigError> {
        match *self {
            HedgeDelay::Percentile { tenths } if !(1..=999).contains(&tenths) => {
                Err(ConfigError::NumberOutOfRange {
                    key: key.name().to_owned(),
                    value: format!("p{}", f64::from(tenths) / 10.0),
                    range: "a percentile above 0 and below 100".to_owned(),
                })
            }
            delay => Ok(delay),
        }
    }
}

impl Check<ChaosLatency> for ChaosLatency {
    fn check(&self, key: &Key) -> Result<ChaosLatency, ConfigError> {
        self.checked(key.name())
    }
}

/// A resource's name, interned.
impl Check<&'static str> for String {
    fn check(&self, _: &Key) -> Result<&'static str, ConfigError> {
        Ok(intern(self))
    }
}

macro_rules! every_value {
    ($($ty:ty),*) => {$(
        impl Check<$ty> for $ty {
            fn check(&self, _: &Key) -> Result<$ty, ConfigError> {
                Ok(*self)
            }
        }
    )*};
}

every_value!(bool, u64, RejectionKinds, Priority, ShedAt);

impl<T: Choice> Check<T> for T {
    fn check(&self, _: &Key) -> Result<T, ConfigError> {
        Ok(*self)
    }
}

impl<T: Check<U>, U> Check<Option<U>> for Option<T> {
    fn check(&self, key: &Key) -> Result<Option<U>, ConfigError> {
        self.as_ref().map(|value| value.check(key)).transpose()
    }
}

/// A builder checks its own keys, as the tables' tests show.
#[cold]
fn not_of_kind(key: &Key) -> ! {
    panic!("the key {} does not take a value of this type", key.name())
}

/// A config's value as configuration writes it: `250ms`, `none` for a key
/// left without one.
pub(crate) trait Written {
    /// Writes it.
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

macro_rules! written_as_displayed {
    ($($ty:ty),*) => {$(
        impl Written for $ty {
            fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    )*};
}

written_as_displayed!(
    u32,
    u64,
    f32,
    f64,
    bool,
    &str,
    RejectionKinds,
    HedgeDelay,
    ChaosLatency,
    Priority
);

/// Quoted, as its commas are part of it: `"sheddable=0.5, normal=1, high=1"`.
impl Written for ShedAt {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl<T: Choice> Written for T {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Written for Duration {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&humantime::format_duration(*self), f)
    }
}

impl<T: Written> Written for Option<T> {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Some(value) => value.write(f),
            None => f.write_str("none"),
        }
    }
}

/// `value` as configuration writes it, for a config's `values`.
pub(crate) fn written(value: &dyn Written) -> String {
    struct Shown<'a>(&'a dyn Written);
    impl fmt::Display for Shown<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.write(f)
        }
    }
    Shown(value).to_string()
}

/// A config's `Display`: `key = value` entries, separated by commas.
pub(crate) struct Entries<'a, 'f> {
    f: &'a mut fmt::Formatter<'f>,
    first: bool,
}

impl<'a, 'f> Entries<'a, 'f> {
    pub(crate) fn new(f: &'a mut fmt::Formatter<'f>) -> Self {
        Entries { f, first: true }
    }

    /// Writes `name = value`.
    pub(crate) fn entry(&mut self, name: &str, value: &dyn Written) -> fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.f.write_str(", ")?;
        }
        write!(self.f, "{name} = ")?;
        value.write(self.f)
    }
}
