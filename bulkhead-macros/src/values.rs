//! The values of the policies' keys: for each kind of value, how it is read
//! from the attribute ([`FromExpr`]) and checked exactly as the core crate's
//! config builders check it at run time, so that an attribute that compiles
//! cannot fail in `new` because of one of its own literals, and how it is
//! passed to the builder ([`Argument`], [`Setting`]). Which key takes which
//! value is said by the receivers' tables in `policies.rs`.
//!
//! | value | written as | code |
//! |---|---|---|
//! | [`Id`] | a non-empty string literal | ATR-002 |
//! | [`Limit`] | an integer from 1 to `BulkheadConfig::MAX_CONCURRENT` | ATR-003 |
//! | [`Wait`] | a duration string, `"0"` allowed | ATR-001 |
//! | [`Enabled`] | `true` / `false`, or the same in a string | ATR-006 |
//! | [`Count`] | an integer from 1 to its maximum | ATR-008 |
//! | [`Percent`] | a number in (0, 100] | ATR-008 |
//! | [`Multiplier`] | a finite number of at least 1 | ATR-008 |
//! | [`Fraction`] | a number in [0, 1) | ATR-008 |
//! | [`Positive`] | a duration string, longer than zero | ATR-001, ATR-008 for zero |
//! | [`Window`] | `"count"` or `"time"` | ATR-010 |
//! | [`RejectionKinds`] | rejection kinds, in brackets unless there is one | ATR-009 |
//! | [`Predicate`] | the path of a function `fn(&E) -> bool` | ATR-011 |

use std::time::Duration;

use bulkhead_core::{
    BulkheadConfig, CircuitBreakerConfig, ConfigError, RejectionKind, SlidingWindow,
};
use darling::FromMeta;
use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens as _, quote};
use syn::{Expr, ExprLit, ExprPath, ExprUnary, Lit, Meta, UnOp};

use crate::attr::{Argument, FromExpr, Setting, Value};
use crate::codes;
use crate::tokens::{as_written, literal, ungroup};

/// `name`, `config`, `resource`: a non-empty string literal.
pub(crate) type Id = Value<String>;

impl FromExpr for String {
    const CODE: &'static str = codes::MALFORMED;

    fn example(key: &str) -> String {
        format!("{key} = \"thumbnails\"")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        match literal(expr) {
            Some(Lit::Str(s)) if !s.value().trim().is_empty() => Ok(s.value()),
            Some(Lit::Str(_)) => Err(format!("{}: {key} must not be empty", codes::MALFORMED)),
            _ => Err(format!(
                "{}: {key} must be a string literal such as \"thumbnails\", got {}",
                codes::MALFORMED,
                as_written(expr)
            )),
        }
    }
}

impl Argument for String {
    fn argument(&self) -> TokenStream {
        self.into_token_stream()
    }
}

/// `max_concurrent`: an integer from 1 to the core crate's
/// `BulkheadConfig::MAX_CONCURRENT`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit(pub(crate) u32);

impl Limit {
    /// The largest limit the bulkhead accepts.
    const MAX: u64 = BulkheadConfig::MAX_CONCURRENT as u64;
}

impl FromExpr for Limit {
    const CODE: &'static str = codes::LIMIT;

    fn example(key: &str) -> String {
        format!("{key} = 4")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        let max = Limit::MAX;
        let out_of_range = |got: &dyn std::fmt::Display| {
            format!(
                "{}: {key} must be between 1 and {max}, got {got}",
                codes::LIMIT
            )
        };
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) if !int.suffix().is_empty() => Err(format!(
                "{}: {key} is written without a type suffix, as in {key} = {}, got {int}",
                codes::LIMIT,
                int.base10_digits(),
                int = int.token()
            )),
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => match int.base10_parse::<u64>() {
                Ok(value) if (1..=max).contains(&value) => u32::try_from(value)
                    .map(Limit)
                    .map_err(|_| out_of_range(&value)),
                Ok(value) => Err(out_of_range(&value)),
                Err(_) => Err(out_of_range(&int.base10_digits())),
            },
            Expr::Unary(ExprUnary {
                op: UnOp::Neg(_),
                expr: inner,
                ..
            }) if matches!(literal(inner), Some(Lit::Int(_))) => {
                Err(out_of_range(&format_args!("-{}", as_written(inner))))
            }
            _ => Err(format!(
                "{}: {key} must be an integer between 1 and {max}, got {}",
                codes::LIMIT,
                as_written(expr)
            )),
        }
    }
}

impl Argument for Limit {
    fn argument(&self) -> TokenStream {
        self.0.into_token_stream()
    }
}

/// `max_wait`, `wait`: a duration string (humantime syntax, or `"0"`).
pub(crate) type Wait = Value<Duration>;

impl FromExpr for Duration {
    const CODE: &'static str = codes::DURATION;

    fn example(key: &str) -> String {
        format!("{key} = \"250ms\"")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        match literal(expr) {
            Some(Lit::Str(s)) => parse_duration(key, &s.value()),
            _ => Err(format!(
                "{}: {key} must be a duration string such as \"250ms\", got {}",
                codes::DURATION,
                as_written(expr)
            )),
        }
    }
}

impl Argument for Duration {
    /// `Duration::new(secs, nanos)`.
    fn argument(&self) -> TokenStream {
        let secs = self.as_secs();
        let nanos = self.subsec_nanos();
        quote!(::bulkhead::__private::Duration::new(#secs, #nanos))
    }
}

/// Parses a duration with the registry's own parser,
/// `bulkhead_core::parse_duration`: humantime syntax, or a bare `0`.
fn parse_duration(key: &str, text: &str) -> Result<Duration, String> {
    bulkhead_core::parse_duration(key, text).map_err(|error| match error {
        ConfigError::InvalidDuration { reason, .. } => {
            // Keep humantime's diagnosis, not its list of every unit.
            let reason = reason.split(", supported units").next().unwrap_or_default();
            format!(
                "{}: invalid duration {text:?}: expected a number followed by a unit such as 250ms ({reason})",
                codes::DURATION
            )
        }
        // Longer than `Duration::MAX`: ATR-001 saying so, and the key.
        other => other.to_string(),
    })
}

/// `enabled`: `true` or `false`, or the same in a string.
pub(crate) type Enabled = Value<bool>;

impl FromExpr for bool {
    const CODE: &'static str = codes::BOOL;

    fn example(key: &str) -> String {
        format!("{key} = false")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        match literal(expr) {
            Some(Lit::Bool(b)) => Ok(b.value),
            Some(Lit::Str(s)) if s.value() == "true" => Ok(true),
            Some(Lit::Str(s)) if s.value() == "false" => Ok(false),
            _ => Err(format!(
                "{}: {key} must be true or false, got {}",
                codes::BOOL,
                as_written(expr)
            )),
        }
    }
}

impl Argument for bool {
    fn argument(&self) -> TokenStream {
        self.into_token_stream()
    }
}

/// An integer from 1 to `MAX`: a count of calls, attempts or permits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Count<const MAX: u32>(pub(crate) u32);

/// `max_attempts`, `minimum_calls`, `permitted_calls_in_half_open`,
/// `limit_for_period`: at least 1.
pub(crate) type AtLeastOne = Count<{ u32::MAX }>;

/// `sliding_window_size`: 1 to the core crate's
/// `CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE`.
pub(crate) type WindowSize = Count<{ CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE }>;

/// A number as written: its value, or why it cannot be one.
enum Number {
    /// An unsuffixed integer or float literal, possibly negated.
    Literal(String),
    /// A literal with a type suffix, such as `4u8` or `2.0f64`.
    Suffixed(String),
    /// Anything else.
    Other,
}

/// Reads `expr` as a number literal, with its sign.
fn number(expr: &Expr) -> Number {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if int.suffix().is_empty() => Number::Literal(int.base10_digits().to_owned()),
        Expr::Lit(ExprLit {
            lit: Lit::Float(float),
            ..
        }) if float.suffix().is_empty() => Number::Literal(float.base10_digits().to_owned()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(_) | Lit::Float(_),
            ..
        }) => Number::Suffixed(as_written(expr)),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => match number(ungroup(inner)) {
            Number::Literal(digits) => Number::Literal(format!("-{digits}")),
            other => other,
        },
        _ => Number::Other,
    }
}

/// `Err` saying that `key` is written without a type suffix.
fn suffixed(key: &str, written: &str, example: &str) -> String {
    format!(
        "{}: {key} is written without a type suffix, as in {example}, got {written}",
        codes::NUMBER
    )
}

impl<const MAX: u32> FromExpr for Count<MAX> {
    const CODE: &'static str = codes::NUMBER;

    fn example(key: &str) -> String {
        format!("{key} = 10")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        let out_of_range = |got: &str| {
            format!(
                "{}: {key} must be between 1 and {MAX}, got {got}",
                codes::NUMBER
            )
        };
        match number(expr) {
            Number::Literal(digits) if digits.contains(['.', 'e', 'E']) => Err(format!(
                "{}: {key} must be a whole number between 1 and {MAX}, got {digits}",
                codes::NUMBER
            )),
            Number::Literal(digits) => match digits.parse::<u64>() {
                Ok(value) if (1..=u64::from(MAX)).contains(&value) => u32::try_from(value)
                    .map(Count)
                    .map_err(|_| out_of_range(&digits)),
                _ => Err(out_of_range(&digits)),
            },
            Number::Suffixed(written) => Err(suffixed(key, &written, &Self::example(key))),
            Number::Other => Err(format!(
                "{}: {key} must be an integer between 1 and {MAX}, got {}",
                codes::NUMBER,
                as_written(expr)
            )),
        }
    }
}

impl<const MAX: u32> Argument for Count<MAX> {
    fn argument(&self) -> TokenStream {
        self.0.into_token_stream()
    }
}

/// Reads a float key: an unsuffixed integer or float literal, checked by
/// `accept` (which sees the value as the builder will store it), or the
/// coded error naming `range`.
fn float<T: std::str::FromStr>(
    key: &str,
    expr: &Expr,
    range: &str,
    example: &str,
    accept: impl Fn(&T) -> bool,
) -> Result<T, String> {
    let out_of_range = |got: &str| format!("{}: {key} must be {range}, got {got}", codes::NUMBER);
    match number(expr) {
        Number::Literal(digits) => match digits.parse::<T>() {
            Ok(value) if accept(&value) => Ok(value),
            _ => Err(out_of_range(&digits)),
        },
        Number::Suffixed(written) => Err(suffixed(key, &written, example)),
        Number::Other => Err(format!(
            "{}: {key} must be a number {range}, got {}",
            codes::NUMBER,
            as_written(expr)
        )),
    }
}

/// `failure_rate_threshold`, `slow_call_rate_threshold`: a percentage, more
/// than 0 and at most 100.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Percent(pub(crate) f32);

impl FromExpr for Percent {
    const CODE: &'static str = codes::NUMBER;

    fn example(key: &str) -> String {
        format!("{key} = 50")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        float(
            key,
            expr,
            "more than 0 and at most 100",
            &Self::example(key),
            |v: &f32| *v > 0.0 && *v <= 100.0,
        )
        .map(Percent)
    }
}

impl Argument for Percent {
    fn argument(&self) -> TokenStream {
        Literal::f32_suffixed(self.0).into_token_stream()
    }
}

/// `backoff_multiplier`: a finite number of at least 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Multiplier(pub(crate) f64);

impl FromExpr for Multiplier {
    const CODE: &'static str = codes::NUMBER;

    fn example(key: &str) -> String {
        format!("{key} = 2.0")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        float(
            key,
            expr,
            "a finite number of at least 1",
            &Self::example(key),
            |v: &f64| *v >= 1.0 && v.is_finite(),
        )
        .map(Multiplier)
    }
}

impl Argument for Multiplier {
    fn argument(&self) -> TokenStream {
        Literal::f64_suffixed(self.0).into_token_stream()
    }
}

/// `jitter`: a number from 0 up to, not including, 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fraction(pub(crate) f64);

impl FromExpr for Fraction {
    const CODE: &'static str = codes::NUMBER;

    fn example(key: &str) -> String {
        format!("{key} = 0.5")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        float(
            key,
            expr,
            "at least 0 and less than 1",
            &Self::example(key),
            |v: &f64| (0.0..1.0).contains(v),
        )
        .map(Fraction)
    }
}

impl Argument for Fraction {
    fn argument(&self) -> TokenStream {
        Literal::f64_suffixed(self.0).into_token_stream()
    }
}

/// `duration` (of a timeout), `refresh_period`, `wait_in_open`,
/// `slow_call_threshold`, `max_wait_interval`: a duration longer than zero.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Positive(pub(crate) Duration);

impl FromExpr for Positive {
    const CODE: &'static str = codes::DURATION;

    fn example(key: &str) -> String {
        format!("{key} = \"1s\"")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        let duration = <Duration as FromExpr>::from_expr(key, expr)?;
        if duration.is_zero() {
            return Err(format!(
                "{}: {key} must be longer than zero, got {}",
                codes::NUMBER,
                as_written(expr)
            ));
        }
        Ok(Positive(duration))
    }
}

impl Argument for Positive {
    fn argument(&self) -> TokenStream {
        self.0.argument()
    }
}

/// `sliding_window`: `"count"` or `"time"`, the core crate's
/// `SlidingWindow`.
pub(crate) type Window = SlidingWindow;

impl FromExpr for Window {
    const CODE: &'static str = codes::CHOICE;

    fn example(key: &str) -> String {
        format!("{key} = \"count\"")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        let written = match literal(expr) {
            Some(Lit::Str(s)) => Some(s.value()),
            _ => None,
        };
        // Exactly a window's name: the core parser also takes it with spaces.
        match written.map(|written| (SlidingWindow::parse(key, &written), written)) {
            Some((Ok(window), written)) if window.name() == written => Ok(window),
            _ => Err(format!(
                "{}: {key} must be \"count\" or \"time\", got {}",
                codes::CHOICE,
                as_written(expr)
            )),
        }
    }
}

impl Argument for Window {
    fn argument(&self) -> TokenStream {
        match self {
            SlidingWindow::Count => quote!(::bulkhead::__private::SlidingWindow::Count),
            SlidingWindow::Time => quote!(::bulkhead::__private::SlidingWindow::Time),
        }
    }
}

/// `retry_if`, `record_if`: the path of a function `fn(&E) -> bool`, written
/// as a path or as a string holding one.
#[derive(Debug, Clone)]
pub(crate) struct Predicate(pub(crate) ExprPath);

impl FromExpr for Predicate {
    const CODE: &'static str = codes::PREDICATE;

    fn example(key: &str) -> String {
        format!("{key} = is_transient")
    }

    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String> {
        let refused = || {
            format!(
                "{}: {key} must name a function `fn(&E) -> bool` by its path, as in {}, got {}",
                codes::PREDICATE,
                Self::example(key),
                as_written(expr)
            )
        };
        match expr {
            Expr::Path(path) => Ok(Predicate(path.clone())),
            // Every token of the parsed path has the string's span.
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => s.parse().map(Predicate).map_err(|_| refused()),
            _ => Err(refused()),
        }
    }
}

impl Setting for Value<Predicate> {
    /// Not a setting of the builder: the classifier calls the function.
    fn setting(&self, _key: &str) -> Option<TokenStream> {
        None
    }

    fn predicate(&self) -> Option<&ExprPath> {
        Some(&self.value.0)
    }
}

/// `abort_on = [BulkheadFull, Timeout]`, `ignore_on = [..]`: rejection
/// kinds (the core crate's `RejectionKind`, by its `name`), written as
/// identifiers (or strings), in brackets unless there is one. Every unknown
/// kind is reported, each on its own token.
#[derive(Debug, Clone, Default)]
pub(crate) struct RejectionKinds(pub(crate) Vec<RejectionKind>);

impl FromMeta for RejectionKinds {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = darling::util::path_to_string(item.path());
        let Meta::NameValue(nv) = item else {
            return Err(darling::Error::custom(format!(
                "{}: {key} needs a value, as in {key} = [BulkheadFull]",
                codes::REJECTION_KIND
            ))
            .with_span(item));
        };
        let expr = ungroup(&nv.value);
        let elements: Vec<&Expr> = match expr {
            Expr::Array(array) => array.elems.iter().map(ungroup).collect(),
            other => vec![other],
        };
        let mut kinds = Vec::new();
        let mut errors = Vec::new();
        for element in elements {
            match rejection_kind(&key, element) {
                Ok(kind) => kinds.push(kind),
                Err(message) => errors.push(darling::Error::custom(message).with_span(element)),
            }
        }
        if errors.is_empty() {
            Ok(RejectionKinds(kinds))
        } else {
            Err(darling::Error::multiple(errors))
        }
    }
}

impl Setting for RejectionKinds {
    /// `.key([RejectionKind::A, ..])`.
    fn setting(&self, key: &str) -> Option<TokenStream> {
        let method = syn::Ident::new(key, Span::call_site());
        let kinds = self
            .0
            .iter()
            .map(|kind| syn::Ident::new(kind.name(), Span::call_site()));
        Some(quote!(.#method([#(::bulkhead::__private::RejectionKind::#kinds),*])))
    }
}

/// One kind of a list.
fn rejection_kind(key: &str, expr: &Expr) -> Result<RejectionKind, String> {
    let written = match expr {
        Expr::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .map(|segment| segment.ident.to_string()),
        _ => match literal(expr) {
            Some(Lit::Str(s)) => Some(s.value()),
            _ => None,
        },
    };
    let Some(written) = written else {
        return Err(format!(
            "{}: {key} lists rejection kinds, as in {key} = [BulkheadFull, Timeout], got {}",
            codes::REJECTION_KIND,
            as_written(expr)
        ));
    };
    if let Some(kind) = RejectionKind::ALL
        .into_iter()
        .find(|kind| kind.name() == written)
    {
        return Ok(kind);
    }
    let names = RejectionKind::ALL.map(RejectionKind::name);
    let hint = closest(&written, &names)
        .map(|kind| format!("did you mean `{kind}`? "))
        .unwrap_or_default();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    Err(format!(
        "{}: {key} lists `{written}`, which is not a rejection kind; {hint}expected {expected}",
        codes::REJECTION_KIND
    ))
}

/// The candidate closest to `written`, if one is close enough to be what
/// was meant: ignoring case, at most a third of its letters differ.
fn closest(written: &str, candidates: &[&'static str]) -> Option<&'static str> {
    let written = written.to_lowercase();
    candidates
        .iter()
        .map(|candidate| (distance(&written, &candidate.to_lowercase()), *candidate))
        .filter(|(distance, candidate)| *distance <= candidate.len() / 3)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// The Levenshtein distance between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn count(expr: Expr) -> Result<u32, String> {
        AtLeastOne::from_expr("max_attempts", &expr).map(|c| c.0)
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
            WindowSize::from_expr("sliding_window_size", &parse_quote!(1000001)).unwrap_err(),
            "ATR-008: sliding_window_size must be between 1 and 1000000, got 1000001"
        );
    }

    #[test]
    fn floats_mirror_the_builders_checks() {
        let percent = |e: Expr| Percent::from_expr("failure_rate_threshold", &e).map(|p| p.0);
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

        let multiplier = |e: Expr| Multiplier::from_expr("backoff_multiplier", &e).map(|m| m.0);
        assert_eq!(multiplier(parse_quote!(2)), Ok(2.0));
        assert_eq!(multiplier(parse_quote!(1.5)), Ok(1.5));
        assert_eq!(
            multiplier(parse_quote!(0.5)),
            Err(
                "ATR-008: backoff_multiplier must be a finite number of at least 1, got 0.5".into()
            )
        );
        assert!(multiplier(parse_quote!(1e400)).is_err(), "not finite");

        let jitter = |e: Expr| Fraction::from_expr("jitter", &e).map(|f| f.0);
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
        assert!(
            jitter(parse_quote!(0.5f64))
                .unwrap_err()
                .contains("type suffix")
        );
    }

    #[test]
    fn positive_durations_refuse_zero_with_atr_008_and_garbage_with_atr_001() {
        let positive = |e: Expr| Positive::from_expr("duration", &e).map(|p| p.0);
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
        let window = |e: Expr| Window::from_expr("sliding_window", &e);
        assert_eq!(window(parse_quote!("time")), Ok(Window::Time));
        assert_eq!(
            window(parse_quote!("counted")),
            Err("ATR-010: sliding_window must be \"count\" or \"time\", got \"counted\"".into())
        );
    }

    #[test]
    fn predicates_are_paths() {
        let predicate = |e: Expr| {
            Predicate::from_expr("retry_if", &e)
                .map(|p| quote::ToTokens::to_token_stream(&p.0).to_string())
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
            Err("ATR-009: abort_on lists `BulkheadFul`, which is not a rejection kind; did you mean `BulkheadFull`? expected BulkheadFull, CircuitOpen, Timeout or RateLimited".into())
        );
        assert_eq!(
            kind("ignore_on", &parse_quote!(Slow)),
            Err("ATR-009: ignore_on lists `Slow`, which is not a rejection kind; expected BulkheadFull, CircuitOpen, Timeout or RateLimited".into())
        );
    }

    #[test]
    fn every_unknown_kind_of_a_list_is_reported() {
        let meta: Meta = parse_quote!(abort_on = [Timeout, Busy, circuitopen]);
        let errors = RejectionKinds::from_meta(&meta).unwrap_err();
        assert_eq!(errors.len(), 2);
        let meta: Meta = parse_quote!(abort_on = Timeout);
        assert_eq!(
            RejectionKinds::from_meta(&meta).unwrap().0,
            [RejectionKind::Timeout]
        );
        let meta: Meta = parse_quote!(abort_on = []);
        assert!(RejectionKinds::from_meta(&meta).unwrap().0.is_empty());
    }
}
