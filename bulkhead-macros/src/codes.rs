//! The codes of the compile errors the macros report. Every message starts
//! with one of them, followed by a colon and a lowercase sentence.
//!
//! | code | meaning |
//! |---|---|
//! | ATR-001 | `max_wait` is not a duration (humantime syntax or `"0"`) |
//! | ATR-002 | a malformed attribute: unknown or duplicate key, a value of the wrong kind for `name` / `config`, arguments given to `#[resilient]` |
//! | ATR-003 | `max_concurrent` is not an integer from 1 to 2^30 - 1 |
//! | ATR-004 | an annotated method does not return `Result<T, E>` (or a future of one), or `E` does not implement `From<Rejection>` |
//! | ATR-005 | `#[bulkhead]` on a trait method of a trait without `#[resilient]` |
//! | ATR-006 | `enabled` is not `true` / `false` (or `"true"` / `"false"`) |
//! | ATR-007 | the item cannot be wrapped (an `unsafe trait`, an unsupported supertrait, a macro among the items, an unsupported receiver, `Self` outside the receiver, `#[bulkhead]` on an associated function or a `const fn`, `#[resilient]` on a non-trait); the message says why |

/// A duration that does not parse.
pub(crate) const DURATION: &str = "ATR-001";
/// A malformed attribute.
pub(crate) const MALFORMED: &str = "ATR-002";
/// A concurrency limit out of range.
pub(crate) const LIMIT: &str = "ATR-003";
/// A return type the policies cannot report a rejection through.
pub(crate) const RETURN_TYPE: &str = "ATR-004";
/// `#[bulkhead]` on a trait method without `#[resilient]` on the trait.
pub(crate) const NOT_RESILIENT: &str = "ATR-005";
/// A boolean that is neither `true` nor `false`.
pub(crate) const BOOL: &str = "ATR-006";
/// An item `#[resilient]` cannot wrap.
pub(crate) const UNWRAPPABLE: &str = "ATR-007";
