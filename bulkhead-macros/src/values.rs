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
//!
//! Each kind's code is the table's (`ValueKind::code`); a duration of zero
//! where it must be positive is ATR-008.

use std::time::Duration;

use bulkhead_keys::{ConfigError, HedgeDelay, RejectionKind};
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
    }
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
                let secs = duration.as_secs();
                let nanos = duration.subsec_nanos();
                quote!(::bulkhead::__private::Duration::new(#secs, #nanos))
            }
            Read::Delay(HedgeDelay::Percentile { tenths }) => {
                quote!(::bulkhead::__private::HedgeDelay::Percentile { tenths: #tenths })
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

/// The variant a choice names: the choice in CamelCase (`count` is
/// `Count`).
fn variant(choice: &str) -> String {
    choice
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars))
                .into_iter()
                .flatten()
        })
        .collect()
}

/// `name`, `config`, `resource`: a non-empty string literal.
fn name(key: &str, expr: &Expr) -> Result<String, String> {
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

/// `max_concurrent`: an integer from 1 to `max` (ATR-003).
fn limit(key: &str, max: u32, expr: &Expr) -> Result<u32, String> {
    let code = codes::LIMIT;
    let max = u64::from(max);
    let out_of_range = |got: &dyn std::fmt::Display| {
        format!("{code}: {key} must be between 1 and {max}, got {got}")
    };
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if !int.suffix().is_empty() => Err(format!(
            "{code}: {key} is written without a type suffix, as in {key} = {}, got {int}",
            int.base10_digits(),
            int = int.token()
        )),
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => match int.base10_parse::<u64>() {
            Ok(value) if (1..=max).contains(&value) => {
                u32::try_from(value).map_err(|_| out_of_range(&value))
            }
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
            "{code}: {key} must be an integer between 1 and {max}, got {}",
            as_written(expr)
        )),
    }
}

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

/// The error of a string, byte string or character literal written with a
/// suffix (`"1s"ms`), which the compiler accepts in an attribute and which
/// means nothing to a key: said with the key's code.
fn suffixed_text(key: &Key, expr: &Expr) -> Option<String> {
    let suffix = match literal(expr)? {
        Lit::Str(s) => s.suffix().to_owned(),
        Lit::ByteStr(s) => s.suffix().to_owned(),
        Lit::CStr(s) => s.suffix().to_owned(),
        Lit::Char(c) => c.suffix().to_owned(),
        Lit::Byte(b) => b.suffix().to_owned(),
        _ => return None,
    };
    (!suffix.is_empty()).then(|| {
        format!(
            "{}: {} is written without a suffix after its literal, as in {}, got {}",
            key.code(),
            key.name(),
            example(key),
            expr.to_token_stream()
        )
    })
}

/// `Err` saying that `key` is written without a type suffix.
fn suffixed(key: &Key, written: &str) -> String {
    format!(
        "{}: {} is written without a type suffix, as in {}, got {written}",
        codes::NUMBER,
        key.name(),
        example(key)
    )
}

/// A count: an integer from `min` to `max` (ATR-008).
fn count(key: &Key, min: u32, max: u32, expr: &Expr) -> Result<u32, String> {
    let (code, name) = (codes::NUMBER, key.name());
    let out_of_range =
        |got: &str| format!("{code}: {name} must be between {min} and {max}, got {got}");
    match number(expr) {
        Number::Literal(digits) if digits.contains(['.', 'e', 'E']) => Err(format!(
            "{code}: {name} must be a whole number between {min} and {max}, got {digits}"
        )),
        Number::Literal(digits) => match digits.parse::<u64>() {
            Ok(value) if (u64::from(min)..=u64::from(max)).contains(&value) => {
                u32::try_from(value).map_err(|_| out_of_range(&digits))
            }
            _ => Err(out_of_range(&digits)),
        },
        Number::Suffixed(written) => Err(suffixed(key, &written)),
        Number::Other => Err(format!(
            "{code}: {name} must be an integer between {min} and {max}, got {}",
            as_written(expr)
        )),
    }
}

/// A number in `range`, as the builder will store it (`float`), or the
/// coded error naming the range (ATR-008).
fn number_in(key: &Key, range: Range, float: Float, expr: &Expr) -> Result<f64, String> {
    let (code, name, words) = (codes::NUMBER, key.name(), range.words());
    let out_of_range = |got: &str| format!("{code}: {name} must be {words}, got {got}");
    match number(expr) {
        Number::Literal(digits) => {
            let value = match float {
                Float::F32 => digits.parse::<f32>().map(f64::from),
                Float::F64 => digits.parse::<f64>(),
            };
            match value {
                Ok(value) if range.contains(value) => Ok(value),
                _ => Err(out_of_range(&digits)),
            }
        }
        Number::Suffixed(written) => Err(suffixed(key, &written)),
        Number::Other => {
            // `words` reads "a finite number of at least 1" or "more than
            // 0 and at most 100".
            let number = if words.starts_with("a ") {
                words
            } else {
                format!("a number {words}")
            };
            Err(format!(
                "{code}: {name} must be {number}, got {}",
                as_written(expr)
            ))
        }
    }
}

/// A duration string (humantime syntax, or `"0"`), ATR-001 otherwise.
fn duration(key: &str, expr: &Expr) -> Result<Duration, String> {
    match literal(expr) {
        Some(Lit::Str(s)) => parse_duration(key, &s.value()),
        _ => Err(format!(
            "{}: {key} must be a duration string such as \"250ms\", got {}",
            codes::DURATION,
            as_written(expr)
        )),
    }
}

/// Parses a duration with the registry's own parser,
/// `bulkhead_keys::parse_duration`: humantime syntax, or a bare `0`.
fn parse_duration(key: &str, text: &str) -> Result<Duration, String> {
    bulkhead_keys::parse_duration(key, text).map_err(|error| match error {
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

/// A hedge's `delay`: a duration string, or a percentile such as `"p90"`
/// (ATR-001).
fn delay(key: &str, expr: &Expr) -> Result<HedgeDelay, String> {
    match literal(expr) {
        Some(Lit::Str(s)) if s.value().trim_start().starts_with(['p', 'P']) => {
            HedgeDelay::parse(key, &s.value()).map_err(|error| error.to_string())
        }
        Some(Lit::Str(_)) => duration(key, expr).map(HedgeDelay::Fixed),
        _ => Err(format!(
            "{}: {key} must be a duration string such as \"50ms\", or a percentile such as \"p90\", got {}",
            codes::DURATION,
            as_written(expr)
        )),
    }
}

/// `true` or `false`, or the same in a string (ATR-006).
fn boolean(key: &str, expr: &Expr) -> Result<bool, String> {
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

/// Exactly one of `choices`, in a string (ATR-010).
fn choice(
    key: &str,
    choices: &'static [&'static str],
    expr: &Expr,
) -> Result<&'static str, String> {
    let written = match literal(expr) {
        Some(Lit::Str(s)) => Some(s.value()),
        _ => None,
    };
    if let Some(choice) = written.and_then(|written| choices.iter().find(|c| **c == written)) {
        return Ok(choice);
    }
    let quoted: Vec<String> = choices.iter().map(|choice| format!("{choice:?}")).collect();
    let expected = match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    };
    Err(format!(
        "{}: {key} must be {expected}, got {}",
        codes::CHOICE,
        as_written(expr)
    ))
}

/// `retry_if`, `record_if`: the path of a function `fn(&E) -> bool`, written
/// as a path or as a string holding one (ATR-011).
fn predicate(key: &Key, expr: &Expr) -> Result<ExprPath, String> {
    let refused = || {
        format!(
            "{}: {} must name a function `fn(&E) -> bool` by its path, as in {}, got {}",
            codes::PREDICATE,
            key.name(),
            example(key),
            as_written(expr)
        )
    };
    match expr {
        Expr::Path(path) => Ok(path.clone()),
        // Every token of the parsed path has the string's span.
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse().map_err(|_| refused()),
        _ => Err(refused()),
    }
}

/// `method = "cached_thumbnail"`: the name of a method, in a string
/// (ATR-013), spanned on the string.
fn method(key: &Key, expr: &Expr) -> Result<Ident, String> {
    match literal(expr) {
        Some(Lit::Str(s)) => match syn::parse_str::<Ident>(&s.value()) {
            Ok(name) => Ok(Ident::new(&name.to_string(), s.span())),
            Err(_) => Err(format!(
                "{}: {} names a method of the trait by its name alone, as in {}, got {}",
                codes::FALLBACK,
                key.name(),
                example(key),
                as_written(expr)
            )),
        },
        _ => Err(format!(
            "{}: {} names a method of the trait in a string, as in {}, got {}",
            codes::FALLBACK,
            key.name(),
            example(key),
            as_written(expr)
        )),
    }
}

/// `abort_on = [BulkheadFull, Timeout]`, `ignore_on = [..]`: rejection
/// kinds (`bulkhead-keys`' `RejectionKind`, by its `name`), written as
/// identifiers (or strings), in brackets unless there is one. Every unknown
/// kind is reported, each on its own token.
fn rejection_kinds(key: &str, expr: &Expr) -> darling::Result<Vec<RejectionKind>> {
    let elements: Vec<&Expr> = match expr {
        Expr::Array(array) => array.elems.iter().map(ungroup).collect(),
        other => vec![other],
    };
    let mut kinds = Vec::new();
    let mut errors = Vec::new();
    for element in elements {
        match rejection_kind(key, element) {
            Ok(kind) if kinds.contains(&kind) => errors.push(
                darling::Error::custom(format!(
                    "{}: {key} lists `{}` twice",
                    codes::REJECTION_KIND,
                    kind.name()
                ))
                .with_span(element),
            ),
            Ok(kind) => kinds.push(kind),
            Err(message) => errors.push(darling::Error::custom(message).with_span(element)),
        }
    }
    if errors.is_empty() {
        Ok(kinds)
    } else {
        Err(darling::Error::multiple(errors))
    }
}

/// One kind of a list.
fn rejection_kind(key: &str, expr: &Expr) -> Result<RejectionKind, String> {
    let code = codes::REJECTION_KIND;
    let written = match expr {
        Expr::Path(path) if path.qself.is_none() => kind_path(&path.path),
        _ => match literal(expr) {
            Some(Lit::Str(s)) if s.suffix().is_empty() => Some(s.value()),
            _ => None,
        },
    };
    let Some(written) = written else {
        return Err(format!(
            "{code}: {key} lists rejection kinds, as in {key} = [BulkheadFull, Timeout], got {}",
            as_written(expr)
        ));
    };
    // A string as configuration reads it: `"Timeout"` or
    // `"RejectionKind::Timeout"`.
    if let Ok(kind) = RejectionKind::parse(key, &written) {
        return Ok(kind);
    }
    let names = RejectionKind::ALL.map(RejectionKind::name);
    let hint = did_you_mean(&written, names)
        .map(|kind| format!("did you mean `{kind}`? "))
        .unwrap_or_default();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    Err(format!(
        "{code}: {key} lists `{written}`, which is not a rejection kind; {hint}expected {expected}"
    ))
}

/// The kind a path names: `Timeout`, or `RejectionKind::Timeout` (with any
/// path before `RejectionKind`, such as `bulkhead::RejectionKind::Timeout`);
/// `None` for any other path (`Foo::Timeout`, `Timeout::<u8>`), which is
/// no rejection kind.
fn kind_path(path: &syn::Path) -> Option<String> {
    if path
        .segments
        .iter()
        .any(|segment| !segment.arguments.is_none())
    {
        return None;
    }
    let mut segments = path.segments.iter().rev();
    let last = segments.next()?;
    match segments.next() {
        None if path.leading_colon.is_none() => Some(last.ident.to_string()),
        Some(parent) if parent.ident == "RejectionKind" => Some(last.ident.to_string()),
        _ => None,
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
            Err("ATR-009: abort_on lists `BulkheadFul`, which is not a rejection kind; did you mean `BulkheadFull`? expected BulkheadFull, CircuitOpen, Timeout or RateLimited".into())
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
            Err("ATR-009: ignore_on lists `Slow`, which is not a rejection kind; expected BulkheadFull, CircuitOpen, Timeout or RateLimited".into())
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
