//! The values of the policies' keys, read from an attribute by the kind
//! of value each key takes in `bulkhead-keys`' tables
//! (`bulkhead_keys::ValueKind`): [`read`] checks a value exactly as
//! the config builders check it at run time, with the same ranges, so that
//! an attribute that compiles cannot fail in `new` because of one of its
//! own literals, and [`Read::argument`] is how it is passed to the builder.
//!
//! | kind | written as |
//! |---|---|
//! | `Name` | a non-empty string literal |
//! | `Limit` | an integer from 1 to its maximum, without a type suffix |
//! | `Count` | an integer from its minimum to its maximum, without a type suffix |
//! | `Number` | a number in its range, without a type suffix |
//! | `Duration` | a duration string, `"0"` allowed unless it must be positive |
//! | `Bool` | `true` / `false`, or the same in a string |
//! | `Choice` | one of its choices, in a string |
//! | `RejectionKinds` | rejection kinds, in brackets unless there is one |
//! | `Predicate` | the path of a function `fn(&E) -> bool`, or a string holding one |
//! | `Method` | the name of a method, in a string |
//! | `Delay` | a duration string as for `Duration`, or a percentile such as `"p90"` |
//! | `Latency` | a duration string as for `Duration`, or a range such as `"100ms..500ms"` |
//! | `Seed` | an integer from 0 to 2^64 - 1, without a type suffix |
//! | `Priority` | a class in a string: `"sheddable"`, `"normal"`, `"high"` or `"critical"` |
//! | `ShedAt` | fractions per class in a string, such as `"sheddable=0.5, normal=0.8"` |
//!
//! Each kind's code is the table's (`ValueKind::code`); a duration of zero
//! where it must be positive is ATR-008.

mod kinds;

use kinds::*;

use std::time::Duration;

use bulkhead_keys::{ChaosLatency, ConfigError, HedgeDelay, Priority, RejectionKind, ShedAt};
use bulkhead_keys::{Float, Key, Range, ValueKind, did_you_mean};
use darling::ast::MetaNameValueInvalidExpr;
use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens as _, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprPath, ExprUnary, Ident, Lit, Meta, UnOp};

use crate::codes;
use crate::tokens::{as_written, literal, ungroup};

/// A key's value as read from an attribute, checked.
#[derive(Debug, Clone)]
pub(crate) enum Read {
    /// A `Name`.
    Text(String),
    /// A `Limit` or a `Count`.
    Integer(u32),
    /// A `Number`, as the builder takes it.
    Number(f64, Float),
    /// A `Duration`.
    Duration(Duration),
    /// A `Bool`.
    Bool(bool),
    /// A `Choice`: the builder's argument type, and the choice.
    Choice(&'static str, &'static str),
    /// `RejectionKinds`.
    Kinds(Vec<RejectionKind>),
    /// A `Predicate`: the function's path.
    Predicate(ExprPath),
    /// A `Method`: its name.
    Method(Ident),
    /// A `Delay`.
    Delay(HedgeDelay),
    /// A `Latency`.
    Latency(ChaosLatency),
    /// A `Seed`.
    Seed(u64),
    /// A `Priority`.
    Priority(Priority),
    /// A `ShedAt`.
    ShedAt(ShedAt),
}

/// A value with the span of the tokens it was written as.
#[derive(Debug, Clone)]
pub(crate) struct Value<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// The value `meta` (`key = value`) gives `key`, or every error in it,
/// spanned on what is wrong.
pub(crate) fn read(key: &Key, meta: &Meta) -> darling::Result<Value<Read>> {
    let Meta::NameValue(nv) = meta else {
        return Err(darling::Error::custom(format!(
            "{}: {} needs a value, as in {}",
            key.code(),
            key.name(),
            example(key)
        ))
        .with_span(meta));
    };
    let expr = ungroup(&nv.value);
    if let Some(message) = suffixed_text(key, expr) {
        return Err(darling::Error::custom(message).with_span(expr));
    }
    let read = match key.kind() {
        ValueKind::RejectionKinds => rejection_kinds(key.name(), expr).map(Read::Kinds)?,
        _ => from_expr(key, expr)
            .map_err(|message| darling::Error::custom(message).with_span(expr))?,
    };
    Ok(Value {
        value: read,
        span: expr.span(),
    })
}

/// The error of `key = value` where `value` is no expression at all: how
/// to write the key, or, for a list of kinds, syn's own error (which
/// `attr::coded` rewords).
pub(crate) fn not_an_expression(key: &Key, invalid: &MetaNameValueInvalidExpr) -> darling::Error {
    let (invalid_path, invalid_eq) = (&invalid.path, &invalid.eq_token);
    match key.kind() {
        // `key = ` and nothing after: spanned on the key and its `=`.
        _ if invalid.value.is_empty() => darling::Error::custom(format!(
            "{}: {} needs a value after its `=`, as in {}",
            key.code(),
            key.name(),
            example(key)
        ))
        .with_span(&quote!(#invalid_path #invalid_eq)),
        ValueKind::RejectionKinds => invalid.error.clone(),
        _ => darling::Error::custom(format!(
            "{}: {} must be written as in {}, got `{}`",
            key.code(),
            key.name(),
            example(key),
            invalid.value
        ))
        .with_span(&invalid.value),
    }
}

/// How to write `key` with a value of its kind: `max_wait = "250ms"`.
pub(crate) fn example(key: &Key) -> String {
    let name = key.name();
    match key.kind() {
        ValueKind::Name => format!("{name} = \"thumbnails\""),
        ValueKind::Limit { .. } => format!("{name} = 4"),
        ValueKind::Count { .. } => format!("{name} = 10"),
        ValueKind::Number { range, float } => format!("{name} = {}", number_example(range, float)),
        ValueKind::Duration { positive: false } => format!("{name} = \"250ms\""),
        ValueKind::Duration { positive: true } => format!("{name} = \"1s\""),
        ValueKind::Bool => format!("{name} = false"),
        ValueKind::Choice { choices, .. } => format!("{name} = {:?}", choices[0]),
        ValueKind::RejectionKinds => format!("{name} = [{}]", RejectionKind::ALL[0].name()),
        ValueKind::Predicate => format!("{name} = is_transient"),
        ValueKind::Method => format!("{name} = \"cached_thumbnail\""),
        ValueKind::Delay => format!("{name} = \"50ms\""),
        ValueKind::Latency => format!("{name} = \"100ms..500ms\""),
        ValueKind::Seed => format!("{name} = 42"),
        ValueKind::Priority => format!("{name} = \"critical\""),
        ValueKind::ShedAt => format!("{name} = \"sheddable=0.5, normal=0.8\""),
    }
}

/// A number in `range` as a literal of the builder's type: a percentage
/// (`f32`) as a whole number, `50`; an `f64` as a float, `2.0`.
fn number_example(range: Range, float: Float) -> String {
    let example = range.example();
    match float {
        Float::F32 => format!("{}", example as f32),
        Float::F64 => format!("{example:?}"),
    }
}

/// The value of `key = expr`, for any kind but `RejectionKinds`, or the
/// coded message saying what is wrong.
pub(crate) fn from_expr(key: &Key, expr: &Expr) -> Result<Read, String> {
    let name = key.name();
    match key.kind() {
        ValueKind::Name => self::name(name, expr).map(Read::Text),
        ValueKind::Limit { max } => limit(name, max, expr).map(Read::Integer),
        ValueKind::Count { min, max } => count(key, min, max, expr).map(Read::Integer),
        ValueKind::Number { range, float } => {
            number_in(key, range, float, expr).map(|x| Read::Number(x, float))
        }
        ValueKind::Duration { positive } => {
            let duration = duration(name, expr)?;
            if positive && duration.is_zero() {
                return Err(format!(
                    "{}: {name} must be longer than zero, got {}",
                    codes::NUMBER,
                    as_written(expr)
                ));
            }
            Ok(Read::Duration(duration))
        }
        ValueKind::Bool => boolean(name, expr).map(Read::Bool),
        ValueKind::Choice { ty, choices } => {
            choice(name, choices, expr).map(|c| Read::Choice(ty, c))
        }
        ValueKind::RejectionKinds => Err(format!(
            "{}: {name} lists rejection kinds, as in {name} = [BulkheadFull, Timeout], got {}",
            codes::REJECTION_KIND,
            as_written(expr)
        )),
        ValueKind::Predicate => predicate(key, expr).map(Read::Predicate),
        ValueKind::Method => method(key, expr).map(Read::Method),
        ValueKind::Delay => delay(name, expr).map(Read::Delay),
        ValueKind::Latency => latency(name, expr).map(Read::Latency),
        ValueKind::Seed => seed(key, expr).map(Read::Seed),
        ValueKind::Priority => priority(name, expr).map(Read::Priority),
        ValueKind::ShedAt => shed_at(name, expr).map(Read::ShedAt),
    }
}

/// `duration` as generated code writes it, exactly: `Duration::new(secs,
/// nanos)`.
fn duration_tokens(duration: Duration) -> TokenStream {
    let (secs, nanos) = (duration.as_secs(), duration.subsec_nanos());
    quote!(::bulkhead::__private::Duration::new(#secs, #nanos))
}

impl Read {
    /// `.key(value)` on the policy's config builder, spanned on the value
    /// as written (`span`), or `None` for a function, which the classifier
    /// calls, not the builder.
    pub(crate) fn setting(&self, key: &str, span: Span) -> Option<TokenStream> {
        let argument = match self {
            Read::Predicate(_) | Read::Method(_) => return None,
            Read::Kinds(kinds) => {
                let method = Ident::new(key, Span::call_site());
                let kinds = kinds
                    .iter()
                    .map(|kind| Ident::new(kind.name(), Span::call_site()));
                return Some(quote!(.#method([#(::bulkhead::__private::RejectionKind::#kinds),*])));
            }
            Read::Text(text) => text.into_token_stream(),
            Read::Integer(n) => n.into_token_stream(),
            // The `f32` a percentage was read as, exactly.
            Read::Number(x, Float::F32) => Literal::f32_suffixed(*x as f32).into_token_stream(),
            Read::Number(x, Float::F64) => Literal::f64_suffixed(*x).into_token_stream(),
            Read::Duration(duration) | Read::Delay(HedgeDelay::Fixed(duration)) => {
                duration_tokens(*duration)
            }
            Read::Delay(HedgeDelay::Percentile { tenths }) => {
                quote!(::bulkhead::__private::HedgeDelay::Percentile { tenths: #tenths })
            }
            Read::Latency(latency) => {
                let [min, max] = [latency.min(), latency.max()].map(duration_tokens);
                if latency.is_fixed() {
                    min
                } else {
                    quote!(::bulkhead::__private::ChaosLatency::range(#min, #max))
                }
            }
            Read::Seed(seed) => Literal::u64_suffixed(*seed).into_token_stream(),
            Read::Priority(class) => {
                let variant = Ident::new(&variant(class.name()), Span::call_site());
                quote!(::bulkhead::__private::Priority::#variant)
            }
            Read::ShedAt(shed_at) => {
                let bits = Literal::u64_suffixed(shed_at.to_bits());
                quote!(::bulkhead::__private::ShedAt::from_bits(#bits))
            }
            Read::Bool(b) => b.into_token_stream(),
            Read::Choice(ty, choice) => {
                let ty = Ident::new(ty, Span::call_site());
                let variant = Ident::new(&variant(choice), Span::call_site());
                quote!(::bulkhead::__private::#ty::#variant)
            }
        };
        let method = Ident::new(key, span);
        Some(quote_spanned!(span=> .#method(#argument)))
    }

    /// The function a `Predicate` names.
    pub(crate) fn predicate(&self) -> Option<&ExprPath> {
        match self {
            Read::Predicate(path) => Some(path),
            _ => None,
        }
    }

    /// The method a `Method` names.
    pub(crate) fn method(&self) -> Option<&Ident> {
        match self {
            Read::Method(name) => Some(name),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use bulkhead_keys::PolicyKind;
    use syn::parse_quote;

    use super::*;

    fn key(kind: PolicyKind, name: &str) -> &'static Key {
        kind.key(name).unwrap()
    }

    /// `key = expr` of `kind`, read.
    fn value(kind: PolicyKind, name: &str, expr: Expr) -> Result<Read, String> {
        from_expr(key(kind, name), &expr)
    }

    fn count(expr: Expr) -> Result<u32, String> {
        match value(PolicyKind::Retry, "max_attempts", expr)? {
            Read::Integer(n) => Ok(n),
            other => panic!("{other:?}"),
        }
    }

    fn float(kind: PolicyKind, name: &str) -> impl Fn(Expr) -> Result<f64, String> {
        move |expr| match value(kind, name, expr)? {
            Read::Number(x, _) => Ok(x),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_kind_is_reported_with_the_code_of_the_core_table() {
        let kinds = [
            (ValueKind::Name, codes::MALFORMED),
            (ValueKind::Limit { max: 1 }, codes::LIMIT),
            (ValueKind::Count { min: 1, max: 1 }, codes::NUMBER),
            (ValueKind::Duration { positive: true }, codes::DURATION),
            (ValueKind::Bool, codes::BOOL),
            (ValueKind::RejectionKinds, codes::REJECTION_KIND),
            (ValueKind::Predicate, codes::PREDICATE),
            (ValueKind::Method, codes::FALLBACK),
        ];
        for (kind, code) in kinds {
            assert_eq!(kind.code(), code, "{kind}");
        }
        let window = key(PolicyKind::CircuitBreaker, "sliding_window");
        assert_eq!(window.code(), codes::CHOICE);
        let jitter = key(PolicyKind::Retry, "jitter");
        assert_eq!(jitter.code(), codes::NUMBER);
    }

    #[test]
    fn counts_are_whole_numbers_of_at_least_one() {
        assert_eq!(count(parse_quote!(3)), Ok(3));
        assert_eq!(count(parse_quote!(4294967295)), Ok(u32::MAX));
        assert_eq!(
            count(parse_quote!(0)),
            Err("ATR-008: max_attempts must be between 1 and 4294967295, got 0".into())
        );
        assert_eq!(
            count(parse_quote!(-2)),
            Err("ATR-008: max_attempts must be between 1 and 4294967295, got -2".into())
        );
        assert_eq!(
            count(parse_quote!(4294967296)),
            Err("ATR-008: max_attempts must be between 1 and 4294967295, got 4294967296".into())
        );
        assert!(
            count(parse_quote!(2.5))
                .unwrap_err()
                .contains("whole number")
        );
        assert!(
            count(parse_quote!(3u8))
                .unwrap_err()
                .contains("without a type suffix")
        );
        assert_eq!(
            count(parse_quote!("3")),
            Err(
                "ATR-008: max_attempts must be an integer between 1 and 4294967295, got \"3\""
                    .into()
            )
        );
        assert_eq!(
            value(
                PolicyKind::CircuitBreaker,
                "sliding_window_size",
                parse_quote!(1000001)
            )
            .unwrap_err(),
            "ATR-008: sliding_window_size must be between 1 and 1000000, got 1000001"
        );
    }

    #[test]
    fn floats_mirror_the_builders_checks() {
        let percent = float(PolicyKind::CircuitBreaker, "failure_rate_threshold");
        assert_eq!(percent(parse_quote!(50)), Ok(50.0));
        assert_eq!(percent(parse_quote!(100.0)), Ok(100.0));
        assert_eq!(percent(parse_quote!(0.5)), Ok(0.5));
        assert_eq!(
            percent(parse_quote!(0)),
            Err(
                "ATR-008: failure_rate_threshold must be more than 0 and at most 100, got 0".into()
            )
        );
        assert!(percent(parse_quote!(100.5)).is_err());
        assert!(percent(parse_quote!(-5)).is_err());
        assert!(percent(parse_quote!(1e-50)).is_err(), "zero as an f32");

        let multiplier = float(PolicyKind::Retry, "backoff_multiplier");
        assert_eq!(multiplier(parse_quote!(2)), Ok(2.0));
        assert_eq!(multiplier(parse_quote!(1.5)), Ok(1.5));
        assert_eq!(
            multiplier(parse_quote!(0.5)),
            Err(
                "ATR-008: backoff_multiplier must be a finite number of at least 1, got 0.5".into()
            )
        );
        assert!(multiplier(parse_quote!(1e400)).is_err(), "not finite");
        assert_eq!(
            multiplier(parse_quote!("2")),
            Err(
                "ATR-008: backoff_multiplier must be a finite number of at least 1, got \"2\""
                    .into()
            )
        );
        assert_eq!(
            percent(parse_quote!(x)),
            Err("ATR-008: failure_rate_threshold must be a number more than 0 and at most 100, got x".into())
        );

        let jitter = float(PolicyKind::Retry, "jitter");
        assert_eq!(jitter(parse_quote!(0)), Ok(0.0));
        assert_eq!(jitter(parse_quote!(0.999)), Ok(0.999));
        assert_eq!(
            jitter(parse_quote!(1)),
            Err("ATR-008: jitter must be at least 0 and less than 1, got 1".into())
        );
        assert_eq!(
            jitter(parse_quote!(1.0)),
            Err("ATR-008: jitter must be at least 0 and less than 1, got 1.0".into())
        );
        assert_eq!(
            jitter(parse_quote!(1.5)),
            Err("ATR-008: jitter must be at least 0 and less than 1, got 1.5".into())
        );
        assert_eq!(
            jitter(parse_quote!(0.5f64)),
            Err(
                "ATR-008: jitter is written without a type suffix, as in jitter = 0.5, got 0.5f64"
                    .into()
            )
        );
    }

    #[test]
    fn each_kind_shows_how_to_write_it() {
        let examples = [
            (PolicyKind::Bulkhead, "name", "name = \"thumbnails\""),
            (PolicyKind::Bulkhead, "max_concurrent", "max_concurrent = 4"),
            (PolicyKind::Bulkhead, "max_wait", "max_wait = \"250ms\""),
            (PolicyKind::Bulkhead, "enabled", "enabled = false"),
            (PolicyKind::Retry, "max_attempts", "max_attempts = 10"),
            (
                PolicyKind::Retry,
                "backoff_multiplier",
                "backoff_multiplier = 2.0",
            ),
            (PolicyKind::Retry, "jitter", "jitter = 0.5"),
            (PolicyKind::Retry, "retry_if", "retry_if = is_transient"),
            (PolicyKind::Retry, "abort_on", "abort_on = [BulkheadFull]"),
            (
                PolicyKind::CircuitBreaker,
                "failure_rate_threshold",
                "failure_rate_threshold = 50",
            ),
            (
                PolicyKind::CircuitBreaker,
                "sliding_window",
                "sliding_window = \"count\"",
            ),
            (PolicyKind::Timeout, "duration", "duration = \"1s\""),
        ];
        for (kind, name, written) in examples {
            assert_eq!(example(key(kind, name)), written);
        }
    }

    #[test]
    fn positive_durations_refuse_zero_with_atr_008_and_garbage_with_atr_001() {
        let positive = |e: Expr| -> Result<Duration, String> {
            match value(PolicyKind::Timeout, "duration", e)? {
                Read::Duration(duration) => Ok(duration),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(positive(parse_quote!("1s")), Ok(Duration::from_secs(1)));
        assert_eq!(
            positive(parse_quote!("0ms")),
            Err("ATR-008: duration must be longer than zero, got \"0ms\"".into())
        );
        assert!(
            positive(parse_quote!("1 parsec"))
                .unwrap_err()
                .starts_with("ATR-001")
        );
    }

    #[test]
    fn the_window_is_count_or_time() {
        let window = |e: Expr| -> Result<(&str, &str), String> {
            match value(PolicyKind::CircuitBreaker, "sliding_window", e)? {
                Read::Choice(ty, choice) => Ok((ty, choice)),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(window(parse_quote!("time")), Ok(("SlidingWindow", "time")));
        assert_eq!(
            window(parse_quote!("counted")),
            Err("ATR-010: sliding_window must be \"count\" or \"time\", got \"counted\"".into())
        );
        assert_eq!(
            Read::Choice("SlidingWindow", "time")
                .setting("sliding_window", Span::call_site())
                .unwrap()
                .to_string(),
            ". sliding_window (:: bulkhead :: __private :: SlidingWindow :: Time)"
        );
        assert_eq!(variant("count_based"), "CountBased");
    }

    #[test]
    fn predicates_are_paths() {
        let predicate = |e: Expr| -> Result<String, String> {
            match value(PolicyKind::Retry, "retry_if", e)? {
                Read::Predicate(path) => Ok(path.to_token_stream().to_string()),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            predicate(parse_quote!(errors::is_transient)),
            Ok("errors :: is_transient".into())
        );
        assert_eq!(
            predicate(parse_quote!("errors::is_transient")),
            Ok("errors :: is_transient".into())
        );
        assert!(
            predicate(parse_quote!(|e| true))
                .unwrap_err()
                .starts_with("ATR-011: retry_if must name a function `fn(&E) -> bool` by its path")
        );
    }

    #[test]
    fn unknown_kinds_are_atr_009_with_a_suggestion() {
        let kind = |key: &str, expr: &Expr| rejection_kind(key, expr).map(RejectionKind::name);
        assert_eq!(
            kind("abort_on", &parse_quote!(BulkheadFull)),
            Ok("BulkheadFull")
        );
        assert_eq!(kind("abort_on", &parse_quote!("Timeout")), Ok("Timeout"));
        assert_eq!(
            kind("abort_on", &parse_quote!(RejectionKind::Timeout)),
            Ok("Timeout")
        );
        assert_eq!(
            kind("abort_on", &parse_quote!(BulkheadFul)),
            Err("ATR-009: abort_on lists `BulkheadFul`, which is not a rejection kind; did you mean `BulkheadFull`? expected BulkheadFull, CircuitOpen, Timeout, RateLimited, Injected or DeadlineExceeded".into())
        );
        for path in [
            parse_quote!(Foo::Timeout),
            parse_quote!(Timeout::<u8>),
            parse_quote!(::Timeout),
        ] {
            assert!(
                kind("abort_on", &path)
                    .unwrap_err()
                    .starts_with("ATR-009: abort_on lists rejection kinds, as in"),
                "{}",
                path.to_token_stream()
            );
        }
        assert_eq!(
            kind("abort_on", &parse_quote!(bulkhead::RejectionKind::Timeout)),
            Ok("Timeout")
        );
        assert_eq!(
            kind("abort_on", &parse_quote!("RejectionKind::Timeout")),
            Ok("Timeout")
        );
        assert_eq!(
            kind("ignore_on", &parse_quote!(Slow)),
            Err("ATR-009: ignore_on lists `Slow`, which is not a rejection kind; expected BulkheadFull, CircuitOpen, Timeout, RateLimited, Injected or DeadlineExceeded".into())
        );
    }

    #[test]
    fn every_unknown_kind_of_a_list_is_reported() {
        let list = |expr: Expr| rejection_kinds("abort_on", &expr);
        let errors = list(parse_quote!([Timeout, Busy, circuitopen])).unwrap_err();
        assert_eq!(errors.len(), 2);
        assert_eq!(
            list(parse_quote!(Timeout)).unwrap(),
            [RejectionKind::Timeout]
        );
        assert!(list(parse_quote!([])).unwrap().is_empty());
        let twice = list(parse_quote!([Timeout, RejectionKind::Timeout])).unwrap_err();
        assert_eq!(twice.to_string(), "ATR-009: abort_on lists `Timeout` twice");
    }
}
