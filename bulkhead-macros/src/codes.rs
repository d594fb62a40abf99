//! The codes of the compile errors the macros report, and [`Errors`], which
//! collects them. Every message starts with a code, followed by a colon and a
//! lowercase sentence.
//!
//! | code | meaning |
//! |---|---|
//! | ATR-001 | `max_wait` is not a duration (humantime syntax or `"0"`) |
//! | ATR-002 | a malformed attribute: unknown or duplicate key, a value of the wrong kind for `name` / `config`, arguments given to `#[resilient]`, two `#[bulkhead]` on one method, `#[bulkhead]` inside `#[cfg_attr]` on a trait method |
//! | ATR-003 | `max_concurrent` is not an unsuffixed integer from 1 to 2^30 - 1 |
//! | ATR-004 | an annotated method does not return `Result<T, E>` (or a future of one), or `E` does not implement `From<Rejection>` |
//! | ATR-005 | `#[bulkhead]` on a trait method of a trait without `#[resilient]` |
//! | ATR-006 | `enabled` is not `true` / `false` (or `"true"` / `"false"`) |
//! | ATR-007 | the item cannot be wrapped (an `unsafe trait`, an unsupported supertrait, a macro among the items, an unsupported receiver, `Self` outside the receiver, an attribute on a parameter, a method named `delegate` or `into_inner`, `#[bulkhead]` on an associated function, a `const fn` or a future declared `Unpin`, `#[resilient]` on a non-trait); the message says why |

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

/// The errors of one expansion, all reported at once.
///
/// Errors built here cover the whole offending type or path
/// ([`syn::Error::new_spanned`]), not only its first token; darling's
/// attribute errors join them through [`Errors::attribute`].
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// An error covering all of `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl quote::ToTokens, message: String) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// The value of a darling parse, or `None` with its errors, reworded to
    /// carry their codes, kept here.
    pub(crate) fn attribute<T>(&mut self, parsed: darling::Result<T>) -> Option<T> {
        match parsed {
            Ok(value) => Some(value),
            Err(error) => {
                self.push(crate::attr::coded(error, "bulkhead"));
                None
            }
        }
    }

    /// `Err` with every error, if there is one.
    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
