//! Who is calling: [`Priority`], the class of a call, and [`ShedAt`], the
//! share of a bulkhead's limit above which each class below `Critical` is
//! refused.

use std::fmt;

use crate::config::ConfigError;
use crate::suggest::did_you_mean;

/// The class of a call, by which a bulkhead that fills up refuses the lower
/// classes first (see [`ShedAt`]) and serves its waiters.
///
/// Ordered lowest first: `Sheddable < Normal < High < Critical`. A call
/// nobody gave a class is `Normal`.
///
/// # Examples
///
/// ```
/// use bulkhead_keys::Priority;
///
/// assert!(Priority::Sheddable < Priority::Critical);
/// assert_eq!(Priority::default(), Priority::Normal);
/// assert_eq!(Priority::parse("priority", "critical")?, Priority::Critical);
/// let error = Priority::parse("priority", "critcal").unwrap_err();
/// assert_eq!(error.code(), "ATR-017");
/// assert!(error.to_string().contains("did you mean \"critical\""));
/// # Ok::<(), bulkhead_keys::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(u8)]
#[non_exhaustive]
pub enum Priority {
    /// Refused first: by default once half the limit is taken.
    Sheddable = 0,
    /// The class of a call nobody gave one: by default refused only when
    /// the bulkhead is full.
    #[default]
    Normal = 1,
    /// Above `Normal`: by default refused only when the bulkhead is full.
    High = 2,
    /// May always use the whole limit.
    Critical = 3,
}

impl Priority {
    /// Every class, lowest first.
    pub const ALL: [Priority; 4] = [
        Priority::Sheddable,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// Its name as configuration writes it: `"sheddable"`, `"normal"`,
    /// `"high"`, `"critical"`.
    pub const fn name(self) -> &'static str {
        match self {
            Priority::Sheddable => "sheddable",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }

    /// Its index, 0 (`Sheddable`) to 3 (`Critical`).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The class of index `index` (0 to 3), as [`index`](Self::index)
    /// gives it; `None` past 3.
    pub const fn from_index(index: usize) -> Option<Priority> {
        match index {
            0 => Some(Priority::Sheddable),
            1 => Some(Priority::Normal),
            2 => Some(Priority::High),
            3 => Some(Priority::Critical),
            _ => None,
        }
    }

    /// The class named `value` (its name, any case, spaces around it
    /// ignored), given for `key`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnknownPriority`] (ATR-017), with the class meant if
    /// one is close.
    pub fn parse(key: &str, value: &str) -> Result<Self, ConfigError> {
        let written = value.trim();
        Priority::ALL
            .into_iter()
            .find(|class| class.name().eq_ignore_ascii_case(written))
            .ok_or_else(|| unknown_class(key, written, Priority::ALL.map(Priority::name)))
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// ATR-017: `written` names no class of `names`.
fn unknown_class<const N: usize>(key: &str, written: &str, names: [&str; N]) -> ConfigError {
    let hint = did_you_mean(written, names)
        .map(|name| format!("did you mean {name:?}? "))
        .unwrap_or_default();
    ConfigError::UnknownPriority {
        key: key.to_owned(),
        value: written.to_owned(),
        hint,
        expected: names.join(", "),
    }
}

/// Millionths: a fraction as [`ShedAt`] holds it, exactly for decimals of
/// up to six digits.
const ONE: u32 = 1_000_000;

/// Per class below `Critical`, the fraction of a bulkhead's limit above
/// which a call of that class is refused (shed): a call of class `c` is
/// admitted only while fewer than [`threshold(c, limit)`](Self::threshold)
/// calls are in flight. `Critical` always has the whole limit.
///
/// Defaults: `sheddable = 0.5`, `normal = 1.0`, `high = 1.0`: a call nobody
/// gave a class is refused only when the bulkhead is full, as without
/// classes, and a flood of `Sheddable` calls never takes more than half the
/// slots. Each fraction is above 0 and at most 1, and they do not decrease
/// with the class: `sheddable <= normal <= high`.
///
/// Written as `"sheddable=0.5, normal=0.8, high=0.9"`; a class not named
/// keeps its default.
///
/// # Examples
///
/// ```
/// use bulkhead_keys::{Priority, ShedAt};
///
/// let shed_at = ShedAt::parse("shed_at", "normal=0.8, high=0.9")?;
/// assert_eq!(shed_at.threshold(Priority::Sheddable, 10), 5);
/// assert_eq!(shed_at.threshold(Priority::Normal, 10), 8);
/// assert_eq!(shed_at.threshold(Priority::Critical, 10), 10);
/// assert_eq!(shed_at.to_string(), "sheddable=0.5, normal=0.8, high=0.9");
/// // Never below one slot, but none of no limit.
/// assert_eq!((shed_at.threshold(Priority::Sheddable, 1), shed_at.threshold(Priority::High, 0)), (1, 0));
/// assert_eq!(ShedAt::parse("shed_at", "normal=0.4").unwrap_err().code(), "ATR-018");
/// # Ok::<(), bulkhead_keys::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShedAt {
    /// Millionths of the limit, lowest class first.
    fractions: [u32; 3],
}

impl Default for ShedAt {
    fn default() -> Self {
        ShedAt::DEFAULT
    }
}

impl ShedAt {
    /// `sheddable = 0.5`, `normal = 1.0`, `high = 1.0`.
    pub const DEFAULT: ShedAt = ShedAt {
        fractions: [ONE / 2, ONE, ONE],
    };

    /// The fractions of the three classes below `Critical`.
    ///
    /// # Errors
    ///
    /// ATR-017 for a fraction not above 0 and at most 1, ATR-018 unless
    /// `sheddable <= normal <= high`.
    pub fn new(sheddable: f64, normal: f64, high: f64) -> Result<Self, ConfigError> {
        let key = "shed_at";
        let fractions = [
            millionths(key, Priority::Sheddable, sheddable)?,
            millionths(key, Priority::Normal, normal)?,
            millionths(key, Priority::High, high)?,
        ];
        ShedAt { fractions }.checked(key)
    }

    /// The fractions written as `"sheddable=0.5, normal=0.8"` (`:` may
    /// stand for `=`, commas or semicolons separate them, spaces around
    /// each part are ignored), given for `key`; a class not named keeps its
    /// default, an empty text is the default.
    ///
    /// # Errors
    ///
    /// ATR-017 for a name that is no class below `critical`, or a
    /// fraction not above 0 and at most 1; ATR-018 unless the fractions
    /// do not decrease with the class.
    pub fn parse(key: &str, value: &str) -> Result<Self, ConfigError> {
        let mut shed_at = ShedAt::DEFAULT;
        let names = [Priority::Sheddable, Priority::Normal, Priority::High].map(Priority::name);
        for entry in value
            .split([',', ';'])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let Some((name, number)) = entry.split_once(['=', ':']) else {
                return Err(invalid(
                    key,
                    value,
                    &format!("{entry:?} is not `class=fraction`"),
                ));
            };
            let name = name.trim().trim_matches('"');
            let Some(index) = names.iter().position(|n| n.eq_ignore_ascii_case(name)) else {
                if name.eq_ignore_ascii_case("critical") {
                    return Err(invalid(
                        key,
                        value,
                        "critical always has the whole limit and takes no fraction",
                    ));
                }
                return Err(unknown_class(key, name, names));
            };
            let number: f64 = number.trim().parse().map_err(|_| {
                invalid(key, value, &format!("{:?} is not a number", number.trim()))
            })?;
            shed_at.fractions[index] = millionths(key, Priority::ALL[index], number)
                .map_err(|_| invalid(key, value, &fraction_words(name, number)))?;
        }
        shed_at.checked(key).map_err(|error| match error {
            ConfigError::ShedAtNotMonotone { key, .. } => ConfigError::ShedAtNotMonotone {
                key,
                value: value.trim().to_owned(),
            },
            other => other,
        })
    }

    /// Itself if its fractions do not decrease with the class, else
    /// ATR-018 naming `key`.
    fn checked(self, key: &str) -> Result<Self, ConfigError> {
        let [sheddable, normal, high] = self.fractions;
        if sheddable <= normal && normal <= high {
            Ok(self)
        } else {
            Err(ConfigError::ShedAtNotMonotone {
                key: key.to_owned(),
                value: self.to_string(),
            })
        }
    }

    /// The fraction of `class`, as a float (`Critical`: 1).
    pub fn fraction(self, class: Priority) -> f64 {
        f64::from(self.millionths(class)) / f64::from(ONE)
    }

    /// The fraction of `class` in millionths (`Critical`: 1,000,000).
    pub const fn millionths(self, class: Priority) -> u32 {
        match class {
            Priority::Critical => ONE,
            class => self.fractions[class as usize],
        }
    }

    /// Whether `class` may use the whole limit (`Critical`, or a fraction
    /// of 1).
    pub const fn is_whole(self, class: Priority) -> bool {
        self.millionths(class) == ONE
    }

    /// The calls in flight at which `class` is refused under `limit`:
    /// `max(1, floor(limit * fraction))`, and 0 when `limit` is 0. Never
    /// above `limit`, and never lower for a higher class.
    pub const fn threshold(self, class: Priority, limit: u32) -> u32 {
        if limit == 0 {
            return 0;
        }
        let slots = (limit as u64 * self.millionths(class) as u64) / ONE as u64;
        if slots == 0 { 1 } else { slots as u32 }
    }

    /// The fractions packed in one word (20 bits each, lowest class in the
    /// low bits), for a live bulkhead to swap them atomically.
    pub const fn to_bits(self) -> u64 {
        let [a, b, c] = self.fractions;
        a as u64 | (b as u64) << 20 | (c as u64) << 40
    }

    /// The fractions [`to_bits`](Self::to_bits) packed, unchecked.
    pub const fn from_bits(bits: u64) -> ShedAt {
        const MASK: u64 = (1 << 20) - 1;
        ShedAt {
            fractions: [
                (bits & MASK) as u32,
                ((bits >> 20) & MASK) as u32,
                ((bits >> 40) & MASK) as u32,
            ],
        }
    }
}

/// `x` (a fraction of `class`) in millionths, if above 0 and at most 1
/// (ATR-017 otherwise).
fn millionths(key: &str, class: Priority, x: f64) -> Result<u32, ConfigError> {
    if x.is_finite() && x > 0.0 && x <= 1.0 {
        // At least one millionth: a fraction above 0 never rounds to none.
        Ok(((x * f64::from(ONE)).round() as u32).max(1))
    } else {
        Err(invalid(
            key,
            &format!("{}={x}", class.name()),
            &fraction_words(class.name(), x),
        ))
    }
}

fn fraction_words(name: &str, x: f64) -> String {
    format!("the fraction of {name} must be above 0 and at most 1, got {x}")
}

fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError::InvalidShedAt {
        key: key.to_owned(),
        value: value.trim().to_owned(),
        reason: reason.to_owned(),
    }
}

impl fmt::Display for ShedAt {
    /// `sheddable=0.5, normal=1, high=1`: each fraction with at most six
    /// decimals, as [`ShedAt::parse`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, class) in [Priority::Sheddable, Priority::Normal, Priority::High]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}={}", class.name(), self.fraction(class))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_read_by_name_in_any_case() {
        for class in Priority::ALL {
            assert_eq!(Priority::parse("priority", class.name()), Ok(class));
            let upper = class.name().to_uppercase();
            assert_eq!(
                Priority::parse("priority", &format!(" {upper} ")),
                Ok(class)
            );
            assert_eq!(Priority::from_index(class.index()), Some(class));
        }
        assert_eq!(Priority::from_index(4), None);
        let error = Priority::parse("bulkhead.instances.db.priority", "urgent").unwrap_err();
        assert_eq!(error.code(), "ATR-017");
        assert_eq!(error.key(), "bulkhead.instances.db.priority");
        assert_eq!(
            error.to_string(),
            "ATR-017: bulkhead.instances.db.priority names \"urgent\", which is no priority class; \
             expected sheddable, normal, high, critical"
        );
        let error = Priority::parse("priority", "hihg").unwrap_err();
        assert!(
            error.to_string().contains("did you mean \"high\"? "),
            "{error}"
        );
    }

    #[test]
    fn shed_at_reads_what_it_writes() {
        for text in [
            "sheddable=0.5, normal=1, high=1",
            "sheddable=0.25, normal=0.8, high=0.9",
            "sheddable=0.000001, normal=0.333333, high=1",
        ] {
            let shed_at = ShedAt::parse("shed_at", text).unwrap();
            assert_eq!(shed_at.to_string(), text);
        }
        assert_eq!(ShedAt::parse("shed_at", ""), Ok(ShedAt::DEFAULT));
        assert_eq!(
            ShedAt::parse("shed_at", "High: 0.9; Normal = 0.9"),
            ShedAt::new(0.5, 0.9, 0.9)
        );
        // Spaces alone do not separate two fractions.
        let error = ShedAt::parse("shed_at", "sheddable=0.5 normal=0.8").unwrap_err();
        assert_eq!(error.code(), "ATR-017");
        assert_eq!(ShedAt::DEFAULT, ShedAt::new(0.5, 1.0, 1.0).unwrap());
        let bits = ShedAt::new(0.1, 0.7, 0.95).unwrap();
        assert_eq!(ShedAt::from_bits(bits.to_bits()), bits);
    }

    #[test]
    fn shed_at_refuses_what_is_no_fraction_of_a_class() {
        let code = |text| ShedAt::parse("shed_at", text).unwrap_err().code();
        for bad in [
            "urgent=0.5",
            "normal=0",
            "normal=1.5",
            "normal=-0.1",
            "normal=NaN",
            "normal=inf",
            "normal",
            "normal=abc",
            "critical=0.9",
        ] {
            assert_eq!(code(bad), "ATR-017", "{bad}");
        }
        assert_eq!(code("normal=0.4"), "ATR-018");
        assert_eq!(code("sheddable=0.9, normal=0.8"), "ATR-018");
        assert_eq!(code("high=0.5, normal=0.6"), "ATR-018");
        let error = ShedAt::parse("shed_at", "sheddable=0.5, nromal=0.9").unwrap_err();
        assert!(
            error.to_string().contains("did you mean \"normal\""),
            "{error}"
        );
        assert_eq!(ShedAt::new(0.5, 0.4, 1.0).unwrap_err().code(), "ATR-018");
        assert_eq!(ShedAt::new(0.0, 0.4, 1.0).unwrap_err().code(), "ATR-017");
    }

    #[test]
    fn thresholds_are_a_share_of_the_limit_at_least_one_slot() {
        let shed_at = ShedAt::parse("shed_at", "sheddable=0.5, normal=0.9, high=0.95").unwrap();
        for limit in 0..=1000 {
            let mut previous = 0;
            for class in Priority::ALL {
                let threshold = shed_at.threshold(class, limit);
                let exact = (f64::from(limit) * shed_at.fraction(class)).floor() as u32;
                let expected = if limit == 0 { 0 } else { exact.max(1) };
                assert_eq!(threshold, expected, "{class} of {limit}");
                assert!(threshold <= limit && threshold >= previous);
                previous = threshold;
            }
            assert_eq!(shed_at.threshold(Priority::Critical, limit), limit);
        }
        // Exact for decimals: 10 * 0.9 is 9, not 8.
        assert_eq!(shed_at.threshold(Priority::Normal, 10), 9);
        let max = (1 << 30) - 1;
        assert_eq!(ShedAt::DEFAULT.threshold(Priority::High, max), max);
    }
}
