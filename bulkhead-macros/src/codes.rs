//! The codes of the compile errors the macros report, and [`Errors`], which
//! collects them. Every message starts with a code, followed by a colon and a
//! lowercase sentence.
//!
//! | code | meaning |
//! |---|---|
//! | ATR-001 | a duration key (`max_wait`, `wait`, `duration`, ...) is not a duration (humantime syntax or `"0"`), or is longer than `Duration::MAX` |
//! | ATR-002 | a malformed attribute: unknown or duplicate key, a value of the wrong kind for `name` / `config`, arguments other than `crate = ".."` given to `#[resilient]`, `#[resilient]` twice, `crate` on a method's attribute, a suffix after a string literal, one policy attribute given twice on one method or function, a policy attribute inside `#[cfg_attr]` on a trait method |
//! | ATR-003 | a concurrency limit (`max_concurrent`) is not an unsuffixed integer from 1 to the core crate's `BulkheadConfig::MAX_CONCURRENT` (2^30 - 1) |
//! | ATR-004 | an annotated method does not return `Result<T, E>` (or a future of one), or `E` does not implement `From<Rejection>` (the type checker's error for a path, coded by `__private::ResultForRetry` / `ErrorForRetry` and the like: one pair for each attribute and one for several, so that the message names the method's attribute, or its policy attributes) |
//! | ATR-005 | a policy attribute on a trait method of a trait without `#[resilient]` |
//! | ATR-006 | a boolean (`enabled`) is not `true` / `false` (or `"true"` / `"false"`) |
//! | ATR-007 | the item cannot be wrapped (an `unsafe trait`, a method whose where clause bounds `Self` by a trait (`Self: Sync`, as `#[async_trait]` writes on a default method of a trait without that supertrait), an unsupported supertrait, a macro among the items, an unsupported receiver, `Self` outside the receiver, an attribute on a parameter, a method named `delegate` or `into_inner`, a policy attribute on an associated function, a `const fn`, a foreign function, a future declared `Unpin` or with another bound than `Send`, lifetimes and `use<..>`, a supertrait that is not the standard library's trait of its name (checked in the generated code), a where clause bounding a type made of `Self`, `#[retry]`, `#[hedge]` or `#[fallback]` on a `Send` future holding what is not `Send` (checked in the generated code, spanned on the `Send` bound, `__private::HeldByRetry` and the like: one for each attribute and one for several, so that the message names it), `#[resilient]` on a non-trait, `#[retry]`, `#[hedge]` or `#[fallback]` where the delegate cannot be called again (spanned on `self` taken by value, or on the return type), policies other than `#[bulkhead]` on a function body they cannot run more than once or from a closure); the message says why |
//! | ATR-008 | a number out of the range the policy's builder accepts (a count below 1, a rate threshold outside (0, 100], `backoff_multiplier` below 1, `jitter` outside [0, 1), `sliding_window_size` above the core crate's `CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE`, a zero duration where the builder refuses one), or a number with a type suffix; `values/` lists the value of each kind |
//! | ATR-009 | a list of rejection kinds (`abort_on`, `ignore_on`, `on`) names something that is not one (`bulkhead-keys`' `RejectionKind`), or one kind twice |
//! | ATR-010 | a choice (`sliding_window`, `adaptive`, `queue`) is not one of its values (`"count"`, `"time"`; `"off"`, `"aimd"`, `"vegas"`, `"gradient2"`; `"fifo"`, `"lifo"`, `"codel"`) |
//! | ATR-011 | `retry_if` / `record_if` is not the path of a function (here), or names something that is not a `Fn(&E) -> bool + Send + Sync` for the method's error type `E`, whatever its arity, argument or return type (the type checker's error, coded by `__private::ErrorPredicateFn`, which `__private::Judge` asks for instead of E0593 / E0271 / E0631) |
//! | ATR-012 | an argument of a method or function with `#[retry]`, `#[hedge]` or `#[fallback]` is not `Clone` (each attempt, and the fallback, gets its own copy; the type checker's error, coded by `__private::CalledAgainByRetry` and the like, one for each of these attributes and one for several, so that the message names it; their blanket impls are `do_not_recommend` so that a `Vec<T>` of what is not `Clone` is reported as itself) |
//! | ATR-013 | `#[fallback]` cannot call its method: `method` is missing or not a method's name, names no method of the trait (with a did-you-mean) or the method itself, names a method whose signature differs, or `#[fallback]` is on a function with a body, which has no delegate to call it on; spanned on the name, or on the whole attribute |
//! | ATR-014 | `#[hedge]` on a method or function whose attempts cannot run at the same time: a sync one (its thread runs one attempt at a time), or one taking `&mut self` (which one attempt at a time can borrow); spanned on the sync signature, or on `&mut self` |
//! | ATR-015 | a bulkhead's limits written out of order: `min_concurrent` <= `initial_concurrent` <= `max_concurrent` does not hold among those the attribute writes (`PolicyKind::check_together`), spanned on the key out of place |
//! | ATR-016 | a bulkhead's `reserved` above its `max_concurrent`, both written in the attribute (`PolicyKind::check_together`), spanned on `reserved` |
//! | ATR-017 | a bulkhead's `priority` names no class (with the class meant if one is close), or its `shed_at` names no class below `critical` or gives a fraction not above 0 and at most 1, or is not a string |
//! | ATR-018 | a bulkhead's `shed_at` whose fractions decrease with the class (`sheddable <= normal <= high` must hold, a class not named keeping its default) |
//! | ATR-019 | a bulkhead's `queue = "lifo"` or `"codel"` written with a `queue_target` of zero, or with one not below the `queue_interval` written beside it (`PolicyKind::check_together`), spanned on `queue_target` |
//! | ATR-021 | a keyed bulkhead's `key` that cannot key it: not a bare parameter name, on an attribute other than `#[bulkhead]`, naming no parameter of the method or function (with a did-you-mean) or naming `self`, a parameter borrowed mutably or whose type names a type parameter, `Self` or a lifetime other than its reference's (the wrapper keeps the keyed bulkhead in a field of one type); or the key's type is not the registry's `BulkheadKey` (`Hash + Eq + Clone + FromStr + Display + Debug + Send + Sync + 'static`) (the type checker's error, coded by `__private::KeyType` and `KeyOf`, spanned on the parameter's type) |
//! | ATR-022 | `key` written with what a keyed bulkhead does not support: `adaptive` (and its `min_concurrent`, `initial_concurrent`), `resource` and `reserved`, `priority` and `shed_at`, `queue` (and its `queue_target`, `queue_interval`), each spanned on its value |

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
/// A number out of the range its policy's builder accepts.
pub(crate) const NUMBER: &str = "ATR-008";
/// An unknown rejection kind in `abort_on` / `ignore_on`.
pub(crate) const REJECTION_KIND: &str = "ATR-009";
/// A value that is not one of a fixed set of choices.
pub(crate) const CHOICE: &str = "ATR-010";
/// A `retry_if` / `record_if` that is not the path of a function.
pub(crate) const PREDICATE: &str = "ATR-011";
/// A `#[fallback]` whose method cannot be called in its place.
pub(crate) const FALLBACK: &str = "ATR-013";
/// A `#[hedge]` whose attempts cannot run at the same time.
pub(crate) const HEDGE: &str = "ATR-014";
/// A priority class, or a bulkhead's `shed_at`, that is none.
pub(crate) const PRIORITY: &str = "ATR-017";
/// A keyed bulkhead's `key` that cannot key it.
pub(crate) const KEY: &str = "ATR-021";
/// `key` with what a keyed bulkhead does not support.
pub(crate) const NOT_KEYED: &str = "ATR-022";

/// The errors of one expansion, all reported at once.
///
/// Errors built here cover the whole offending type or path
/// ([`syn::Error::new_spanned`]), not only its first token; darling's
/// attribute errors join them once `attr::coded` has given them their code.
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

    /// Adds `error`, if there is one.
    pub(crate) fn extend(&mut self, error: Option<syn::Error>) {
        if let Some(error) = error {
            self.push(error);
        }
    }

    /// `Err` with every error, if there is one.
    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
