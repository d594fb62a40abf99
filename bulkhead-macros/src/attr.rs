//! How attribute keys are read with darling: [`Value`] and [`ValueKind`],
//! the values `#[bulkhead(...)]` takes, its receiver [`BulkheadArgs`], and
//! [`coded`], which gives darling's own errors their code.
//!
//! Each key's value has its own type whose parser reports that key's coded
//! error (ATR-001 for `max_wait`, ATR-003 for `max_concurrent`, ATR-006 for
//! `enabled`, ATR-002 for `name` and `config`), spanned on the value. Errors
//! darling raises itself (unknown or duplicate keys, literals without a key)
//! are reworded with [`coded`] to carry ATR-002 and a did-you-mean. The
//! values of the other policies' keys are in `values.rs`, their receivers in
//! `policies.rs`.

use std::time::Duration;

use bulkhead_core::ConfigError;
use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, ExprUnary, Lit, Meta, UnOp};

use crate::codes;

/// The largest `max_concurrent` the bulkhead accepts, 2^30 - 1 (the core
/// crate's `BulkheadConfig::MAX_CONCURRENT`).
pub(crate) const MAX_CONCURRENT: u64 = (1 << 30) - 1;

/// The keys of `#[bulkhead(...)]`, as written by the user.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct BulkheadArgs {
    /// `name = "..."`: the shared instance id.
    pub(crate) name: Option<Id>,
    /// `config = "..."`: the named configuration to start from.
    pub(crate) config: Option<Id>,
    /// `max_concurrent = N`.
    pub(crate) max_concurrent: Option<Limit>,
    /// `max_wait = "250ms"`.
    pub(crate) max_wait: Option<Wait>,
    /// `enabled = true` or `enabled = "true"`.
    pub(crate) enabled: Option<Enabled>,
    /// `resource = "db"`: the shared resource whose budget the slots count
    /// against.
    pub(crate) resource: Option<Id>,
}

/// The receiver of one policy attribute: its keys, all optional.
pub(crate) trait Receiver: FromMeta + Default {
    /// The attribute's name: `bulkhead`, `retry`, ...
    const ATTRIBUTE: &'static str;

    /// Parses the arguments of the attribute, as a macro call receives them.
    fn from_tokens(args: TokenStream) -> darling::Result<Self> {
        if args.is_empty() {
            return Ok(Self::default());
        }
        let items = NestedMeta::parse_meta_list(args)?;
        Self::from_list(&items)
    }

    /// Parses the attribute written as `#[name]` or `#[name(...)]` on an item.
    fn from_attribute(attr: &Attribute) -> darling::Result<Self> {
        match &attr.meta {
            Meta::Path(_) => Ok(Self::default()),
            Meta::List(list) => Self::from_tokens(list.tokens.clone()),
            Meta::NameValue(nv) => Err(darling::Error::custom(format!(
                "{}: #[{name}] takes a list of keys, as in #[{name}({example})]",
                codes::MALFORMED,
                name = Self::ATTRIBUTE,
                example = crate::policies::Kind::named(Self::ATTRIBUTE)
                    .map_or("..", crate::policies::Kind::example),
            ))
            .with_span(&nv.eq_token)),
        }
    }
}

impl Receiver for BulkheadArgs {
    const ATTRIBUTE: &'static str = "bulkhead";
}

/// A value with the span of the tokens it was written as.
#[derive(Debug, Clone)]
pub(crate) struct Value<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// `name` and `config`: a non-empty string literal.
pub(crate) type Id = Value<String>;
/// `max_concurrent`: an integer from 1 to [`MAX_CONCURRENT`].
pub(crate) type Limit = Value<u32>;
/// `max_wait`: a duration string.
pub(crate) type Wait = Value<Duration>;
/// `enabled`: a boolean.
pub(crate) type Enabled = Value<bool>;

/// How one key's value is read from its expression.
pub(crate) trait ValueKind: Sized {
    /// The value of `key = expr`, or the coded message saying what is wrong.
    fn parse(key: &str, expr: &Expr) -> Result<Self, String>;
    /// How to write `key` with a value of this kind: `max_wait = "250ms"`.
    fn example(key: &str) -> String;
    /// The code of a value that is not of this kind at all.
    const CODE: &'static str;
}

impl<T: ValueKind> FromMeta for Value<T> {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = darling::util::path_to_string(item.path());
        match item {
            Meta::NameValue(nv) => {
                let expr = ungroup(&nv.value);
                match T::parse(&key, expr) {
                    Ok(value) => Ok(Value {
                        value,
                        span: expr.span(),
                    }),
                    Err(message) => Err(darling::Error::custom(message).with_span(expr)),
                }
            }
            Meta::Path(_) | Meta::List(_) => Err(darling::Error::custom(format!(
                "{}: {key} needs a value, as in {}",
                T::CODE,
                T::example(&key)
            ))
            .with_span(item)),
        }
    }

    fn from_invalid_expr(meta: &darling::ast::MetaNameValueInvalidExpr) -> darling::Result<Self> {
        let key = darling::util::path_to_string(&meta.path);
        Err(darling::Error::custom(format!(
            "{}: {key} must be written as in {}, got `{}`",
            T::CODE,
            T::example(&key),
            meta.value
        ))
        .with_span(&meta.value))
    }
}

/// Looks through the invisible groups `macro_rules!` wraps around fragments.
pub(crate) fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungroup(&group.expr),
        _ => expr,
    }
}

pub(crate) fn literal(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        _ => None,
    }
}

/// The source text of an expression, for error messages.
pub(crate) fn source(expr: &Expr) -> String {
    match literal(expr) {
        Some(Lit::Str(s)) => format!("{:?}", s.value()),
        _ => quote::ToTokens::to_token_stream(expr).to_string(),
    }
}

impl ValueKind for String {
    const CODE: &'static str = codes::MALFORMED;

    fn example(key: &str) -> String {
        format!("{key} = \"thumbnails\"")
    }

    fn parse(key: &str, expr: &Expr) -> Result<Self, String> {
        match literal(expr) {
            Some(Lit::Str(s)) if !s.value().trim().is_empty() => Ok(s.value()),
            Some(Lit::Str(_)) => Err(format!("{}: {key} must not be empty", codes::MALFORMED)),
            _ => Err(format!(
                "{}: {key} must be a string literal such as \"thumbnails\", got {}",
                codes::MALFORMED,
                source(expr)
            )),
        }
    }
}

impl ValueKind for u32 {
    const CODE: &'static str = codes::LIMIT;

    fn example(key: &str) -> String {
        format!("{key} = 4")
    }

    fn parse(key: &str, expr: &Expr) -> Result<Self, String> {
        let out_of_range = |got: &dyn std::fmt::Display| {
            format!(
                "{}: {key} must be between 1 and {MAX_CONCURRENT}, got {got}",
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
                Ok(value) if (1..=MAX_CONCURRENT).contains(&value) => {
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
                Err(out_of_range(&format_args!("-{}", source(inner))))
            }
            _ => Err(format!(
                "{}: {key} must be an integer between 1 and {MAX_CONCURRENT}, got {}",
                codes::LIMIT,
                source(expr)
            )),
        }
    }
}

impl ValueKind for Duration {
    const CODE: &'static str = codes::DURATION;

    fn example(key: &str) -> String {
        format!("{key} = \"250ms\"")
    }

    fn parse(key: &str, expr: &Expr) -> Result<Self, String> {
        match literal(expr) {
            Some(Lit::Str(s)) => parse_duration(key, &s.value()),
            _ => Err(format!(
                "{}: {key} must be a duration string such as \"250ms\", got {}",
                codes::DURATION,
                source(expr)
            )),
        }
    }
}

/// Parses a duration with the registry's own parser,
/// `bulkhead_core::parse_duration`: humantime syntax, or a bare `0`.
pub(crate) fn parse_duration(key: &str, text: &str) -> Result<Duration, String> {
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

impl ValueKind for bool {
    const CODE: &'static str = codes::BOOL;

    fn example(key: &str) -> String {
        format!("{key} = false")
    }

    fn parse(key: &str, expr: &Expr) -> Result<Self, String> {
        match literal(expr) {
            Some(Lit::Bool(b)) => Ok(b.value),
            Some(Lit::Str(s)) if s.value() == "true" => Ok(true),
            Some(Lit::Str(s)) if s.value() == "false" => Ok(false),
            _ => Err(format!(
                "{}: {key} must be true or false, got {}",
                codes::BOOL,
                source(expr)
            )),
        }
    }
}

/// Turns darling's errors into syn errors whose message starts with a code.
///
/// Errors made here already carry their code. Darling's own (an unknown or
/// duplicate key, a bare literal) get ATR-002, reworded in lowercase; an
/// unknown key keeps darling's did-you-mean suggestion.
pub(crate) fn coded(error: darling::Error, attribute: &str) -> syn::Error {
    let mut out: Option<syn::Error> = None;
    for single in error.flatten() {
        let single = syn::Error::from(single);
        let message = single.to_string();
        let message = if message.starts_with("ATR-") {
            message
        } else {
            reword(&message, attribute)
        };
        let single = syn::Error::new(single.span(), message);
        match &mut out {
            Some(out) => out.combine(single),
            None => out = Some(single),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(Span::call_site(), codes::MALFORMED))
}

fn reword(message: &str, attribute: &str) -> String {
    let code = codes::MALFORMED;
    if let Some(rest) = message.strip_prefix("Unknown field: ") {
        let (key, hint) = rest.split_once(". ").unwrap_or((rest, ""));
        let hint = if let Some(suggestion) = hint.strip_prefix("Did you mean ") {
            format!("; did you mean {suggestion}")
        } else if let Some(keys) = hint.strip_prefix("Available values: ") {
            format!("; expected one of {keys}")
        } else {
            String::new()
        };
        return format!("{code}: unknown key {key} in #[{attribute}]{hint}");
    }
    if let Some(key) = message.strip_prefix("Duplicate field ") {
        return format!("{code}: duplicate key {key} in #[{attribute}]");
    }
    if message.starts_with("Unexpected meta-item format `literal`") {
        let example = crate::policies::Kind::named(attribute).map_or("..", |k| k.example());
        return format!(
            "{code}: #[{attribute}] takes `key = value` pairs, not bare literals, as in #[{attribute}({example})]"
        );
    }
    let mut chars = message.chars();
    let lowered: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{code}: {lowered} in #[{attribute}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(tokens: TokenStream) -> Result<BulkheadArgs, Vec<String>> {
        BulkheadArgs::from_tokens(tokens).map_err(|e| {
            coded(e, "bulkhead")
                .into_iter()
                .map(|e| e.to_string())
                .collect()
        })
    }

    #[test]
    fn every_key_parses() {
        let args = parse(quote!(
            name = "thumbnails",
            config = "slow",
            max_concurrent = 4,
            max_wait = "250ms",
            enabled = "false"
        ))
        .unwrap();
        assert_eq!(args.name.unwrap().value, "thumbnails");
        assert_eq!(args.config.unwrap().value, "slow");
        assert_eq!(args.max_concurrent.unwrap().value, 4);
        assert_eq!(args.max_wait.unwrap().value, Duration::from_millis(250));
        assert!(!args.enabled.unwrap().value);
    }

    #[test]
    fn no_arguments_means_no_explicit_values() {
        let args = parse(TokenStream::new()).unwrap();
        assert!(args.name.is_none() && args.max_concurrent.is_none());
    }

    #[test]
    fn a_bare_zero_is_a_duration() {
        let args = parse(quote!(max_wait = "0")).unwrap();
        assert_eq!(args.max_wait.unwrap().value, Duration::ZERO);
    }

    #[test]
    fn a_duration_past_duration_max_is_atr_001_too_large() {
        for text in [
            "18446744073709551615s 1000ms",
            "18446744073709551615s 999999999ns 1ns",
            "584542046091y",
        ] {
            let errors = parse(quote!(max_wait = #text)).unwrap_err();
            assert_eq!(
                errors,
                [format!(
                    "ATR-001: invalid duration {text:?} for max_wait: the duration is too large; the longest is 18446744073709551615s 999999999ns, about 584.5 billion years"
                )]
            );
        }
    }

    #[test]
    fn every_error_is_reported_at_once_with_its_code() {
        let errors = parse(quote!(
            max_wait = "25Oms",
            max_concurrent = 0,
            enabled = "yes",
            max_concurent = 4
        ))
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].starts_with("ATR-001: invalid duration \"25Oms\": expected a number"),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            "ATR-003: max_concurrent must be between 1 and 1073741823, got 0"
        );
        assert_eq!(
            errors[2],
            "ATR-006: enabled must be true or false, got \"yes\""
        );
        assert_eq!(
            errors[3],
            "ATR-002: unknown key `max_concurent` in #[bulkhead]; did you mean `max_concurrent`?"
        );
    }

    #[test]
    fn wrong_kinds_of_values_name_their_key() {
        let errors = parse(quote!(
            name = 4,
            max_concurrent = "4",
            max_concurrent = -1,
            max_wait = 250,
            enabled = 1
        ))
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "ATR-002: name must be a string literal such as \"thumbnails\", got 4",
                "ATR-003: max_concurrent must be an integer between 1 and 1073741823, got \"4\"",
                "ATR-002: duplicate key `max_concurrent` in #[bulkhead]",
                "ATR-001: max_wait must be a duration string such as \"250ms\", got 250",
                "ATR-006: enabled must be true or false, got 1",
            ]
        );
    }

    #[test]
    fn a_negative_limit_is_atr_003() {
        let errors = parse(quote!(max_concurrent = -1)).unwrap_err();
        assert_eq!(
            errors,
            ["ATR-003: max_concurrent must be between 1 and 1073741823, got -1"]
        );
    }

    #[test]
    fn a_limit_above_the_largest_is_atr_003() {
        let errors = parse(quote!(max_concurrent = 1073741824)).unwrap_err();
        assert_eq!(
            errors,
            ["ATR-003: max_concurrent must be between 1 and 1073741823, got 1073741824"]
        );
    }

    #[test]
    fn a_suffixed_limit_is_atr_003() {
        let errors = parse(quote!(max_concurrent = 4u8)).unwrap_err();
        assert_eq!(
            errors,
            [
                "ATR-003: max_concurrent is written without a type suffix, as in max_concurrent = 4, got 4u8"
            ]
        );
        let errors = parse(quote!(max_concurrent = 300u8)).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn an_unknown_key_far_from_any_lists_the_keys() {
        let errors = parse(quote!(colour = "red")).unwrap_err();
        assert_eq!(
            errors,
            [
                "ATR-002: unknown key `colour` in #[bulkhead]; expected one of `config`, `enabled`, `max_concurrent`, `max_wait`, `name`, `resource`"
            ]
        );
    }

    #[test]
    fn a_key_without_value_says_how_to_write_it() {
        let errors = parse(quote!(max_wait)).unwrap_err();
        assert_eq!(
            errors,
            ["ATR-001: max_wait needs a value, as in max_wait = \"250ms\""]
        );
    }

    #[test]
    fn an_empty_name_is_refused() {
        let errors = parse(quote!(name = "")).unwrap_err();
        assert_eq!(errors, ["ATR-002: name must not be empty"]);
    }
}
