//! Configuration: the errors and parsers of values (from `bulkhead-keys`,
//! re-exported), and what generates each policy's config and builder from
//! its rows of keys ([`policy_config!`](generate)): how a key's value is
//! read, checked and written ([`value`]).

mod generate;
mod value;

pub(crate) use bulkhead_keys::check_positive;
pub(crate) use bulkhead_keys::{ConfigError, check_limit, check_range};

pub(crate) use generate::{checked, entry, getter, policy_config, setter, stored};
pub(crate) use value::{Check, Choice, Entries, Read, choice_names, key_of, no_such_key, written};
