//! One configuration key: [`Key`], where it may be written ([`Origin`]),
//! and the keys every policy has ([`NAME`], [`CONFIG`], [`BASE_CONFIG`]).

use crate::value::ValueKind;

/// One key of a policy, as its table describes it: its name, the kind of
/// its value, its default, what it means and the code of a bad value.
///
/// # Examples
///
/// ```
/// use bulkhead_keys::{PolicyKind, ValueKind};
///
/// let key = PolicyKind::Bulkhead.key("max_concurrent").unwrap();
/// assert_eq!(key.kind(), ValueKind::Limit { max: 1_073_741_823 });
/// assert_eq!((key.default(), key.code()), ("25", "ATR-003"));
/// assert!(key.origin().in_attribute() && key.origin().in_configuration());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    name: &'static str,
    kind: ValueKind,
    default: &'static str,
    summary: &'static str,
    origin: Origin,
    code: &'static str,
}

/// Where a key may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// In attributes (and the config builders) and in configuration.
    Both,
    /// Only in attributes: an instance's `name`, its `config`, a
    /// predicate such as `retry_if`.
    Attribute,
    /// Only in configuration: an instance's `base_config`.
    Configuration,
}

impl Origin {
    /// Whether an attribute takes the key.
    pub const fn in_attribute(self) -> bool {
        matches!(self, Origin::Both | Origin::Attribute)
    }

    /// Whether configuration (TOML, environment variables) takes the key.
    pub const fn in_configuration(self) -> bool {
        matches!(self, Origin::Both | Origin::Configuration)
    }
}

/// `name`: the instance id, shared with every method or function that
/// names it (every policy's attribute).
pub const NAME: Key = Key::new(
    "name",
    ValueKind::Name,
    "",
    "the instance id, shared by every method that names it; without it, the method's own id",
)
.only_in(Origin::Attribute);

/// `config`: the named configuration an attribute's values are laid over
/// (every policy's attribute).
pub const CONFIG: Key = Key::new(
    "config",
    ValueKind::Name,
    "\"default\"",
    "the named configuration the attribute's values are laid over (REG-004 at `new` if unknown)",
)
.only_in(Origin::Attribute);

/// `base_config`: the named configuration an instance starts from (every
/// policy's `instances.<id>` in configuration); a value that names no
/// configuration is CFG-002, a configuration that does not exist REG-004.
pub const BASE_CONFIG: Key = Key::new(
    "base_config",
    ValueKind::Name,
    "",
    "in `instances.<id>`: the named configuration the instance starts from, instead of the attribute's `config` (REG-004 if unknown)",
)
.only_in(Origin::Configuration)
.coded("CFG-002");

impl Key {
    /// The key `name`, written everywhere, whose value is of `kind`;
    /// `default` as written in an attribute (empty for none) and `summary`
    /// document it.
    pub(crate) const fn new(
        name: &'static str,
        kind: ValueKind,
        default: &'static str,
        summary: &'static str,
    ) -> Key {
        Key {
            name,
            kind,
            default,
            summary,
            origin: Origin::Both,
            code: kind.code(),
        }
    }

    /// The same key, written only in `origin`.
    pub(crate) const fn only_in(mut self, origin: Origin) -> Key {
        self.origin = origin;
        self
    }

    /// The same key, whose bad values are reported with `code` rather
    /// than its kind's.
    pub(crate) const fn coded(mut self, code: &'static str) -> Key {
        self.code = code;
        self
    }

    /// The key as written: `max_concurrent`.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The kind of its value.
    pub const fn kind(&self) -> ValueKind {
        self.kind
    }

    /// Its default as an attribute would write it (`25`, `"500ms"`,
    /// `[]`), or `""` if it has none (no cap, no resource, every error).
    pub const fn default(&self) -> &'static str {
        self.default
    }

    /// What it means, in a few words.
    pub const fn summary(&self) -> &'static str {
        self.summary
    }

    /// Where it may be written.
    pub const fn origin(&self) -> Origin {
        self.origin
    }

    /// The code of a bad value: its kind's ([`ValueKind::code`]) but for
    /// [`BASE_CONFIG`], which configuration reads (CFG-002). A duration
    /// of zero where it must be positive is ATR-008.
    pub const fn code(&self) -> &'static str {
        self.code
    }
}
