//! How a policy attribute is read with darling, whatever the policy: the
//! [`receiver!`] that declares an attribute's receiver from its table of
//! keys, [`Value`] (a key's value with its span) and [`FromExpr`] (how a
//! value is read from its expression), [`read`], and [`coded`], which gives
//! darling's own errors their code. The values themselves are in
//! `values.rs`, the receivers in `policies.rs`.
//!
//! Each key's value has its own type whose parser reports that key's coded
//! error, spanned on the value. Errors darling raises itself (unknown or
//! duplicate keys, literals without a key) are reworded with [`coded`] to
//! carry ATR-002 and a did-you-mean.

use std::fmt;

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprPath, Meta};

use crate::codes;
use crate::symbol::Symbol;
use crate::tokens::ungroup;

/// Declares the receiver of a policy attribute from its table of keys: a
/// darling receiver with `name` and `config` and then every key of the
/// table, each optional, and its [`Keys`], which passes every key written
/// to the policy's config builder under the key's own name (or, for a key
/// naming a function, to the classifier), in the order of the table.
///
/// A key is one line of the table: its name, as written in the attribute
/// and as the builder's method, and the type of its value, which says how
/// it is read and passed on (`values.rs`).
macro_rules! receiver {
    (
        $(#[$meta:meta])*
        struct $receiver:ident {
            $( $(#[$key_meta:meta])* $key:ident: $value:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default, ::darling::FromMeta)]
        pub(crate) struct $receiver {
            /// `name = "..."`: the instance id, shared with every method or
            /// function that names it.
            pub(crate) name: Option<$crate::attr::Value<String>>,
            /// `config = "..."`: the named configuration the attribute's
            /// values are laid over.
            pub(crate) config: Option<$crate::attr::Value<String>>,
            $( $(#[$key_meta])* pub(crate) $key: Option<$value>, )*
        }

        impl $crate::attr::Keys for $receiver {
            fn name(&self) -> Option<&$crate::attr::Value<String>> {
                self.name.as_ref()
            }

            fn settings(&self) -> ::proc_macro2::TokenStream {
                let mut settings = ::proc_macro2::TokenStream::new();
                settings.extend($crate::attr::setting(&self.config, "config"));
                $( settings.extend($crate::attr::setting(&self.$key, stringify!($key))); )*
                settings
            }

            fn predicates(&self) -> Vec<(&'static str, &::syn::ExprPath)> {
                let mut predicates = Vec::new();
                $(
                    if let Some(path) = self.$key.as_ref().and_then($crate::attr::Setting::predicate) {
                        predicates.push((stringify!($key), path));
                    }
                )*
                predicates
            }
        }
    };
}

pub(crate) use receiver;

/// What the later stages need of a policy attribute once it is read,
/// whatever the policy: implemented for each receiver by [`receiver!`].
pub(crate) trait Keys: fmt::Debug {
    /// `name = "..."`, if the attribute gives one.
    fn name(&self) -> Option<&Value<String>>;
    /// `.key(value)` for every key written that sets the policy's config
    /// builder, `.config(..)` first, then in the order of the table.
    fn settings(&self) -> TokenStream;
    /// The functions the keys written name, with their keys, such as
    /// `("retry_if", is_transient)`.
    fn predicates(&self) -> Vec<(&'static str, &ExprPath)>;
}

/// How a key's value reaches the generated code.
pub(crate) trait Setting {
    /// `.key(value)` on the policy's config builder, or `None` for a key
    /// that is not one of the builder's settings.
    fn setting(&self, key: &str) -> Option<TokenStream>;

    /// The function the key names, for a key that names one (`retry_if`):
    /// the classifier calls it, not the builder.
    fn predicate(&self) -> Option<&ExprPath> {
        None
    }
}

/// The setting of an optional key: nothing if it is not written.
pub(crate) fn setting<S: Setting>(value: &Option<S>, key: &str) -> Option<TokenStream> {
    value.as_ref().and_then(|value| value.setting(key))
}

/// A value the config builder takes as it is written: the argument of
/// `.key(..)`.
pub(crate) trait Argument {
    /// The argument's tokens.
    fn argument(&self) -> TokenStream;
}

/// A value with the span of the tokens it was written as.
#[derive(Debug, Clone)]
pub(crate) struct Value<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

impl<T: Argument> Setting for Value<T> {
    /// `.key(value)`, spanned on the value as written.
    fn setting(&self, key: &str) -> Option<TokenStream> {
        let method = syn::Ident::new(key, self.span);
        let argument = self.value.argument();
        Some(quote_spanned!(self.span=> .#method(#argument)))
    }
}

/// How one key's value is read from its expression.
pub(crate) trait FromExpr: Sized {
    /// The code of a value that is not of this kind at all.
    const CODE: &'static str;
    /// The value of `key = expr`, or the coded message saying what is wrong.
    fn from_expr(key: &str, expr: &Expr) -> Result<Self, String>;
    /// How to write `key` with a value of this kind: `max_wait = "250ms"`.
    fn example(key: &str) -> String;
}

impl<T: FromExpr> FromMeta for Value<T> {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = darling::util::path_to_string(item.path());
        match item {
            Meta::NameValue(nv) => {
                let expr = ungroup(&nv.value);
                match T::from_expr(&key, expr) {
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

/// An attribute as written, whose keys are read.
pub(crate) enum Written<'a> {
    /// The arguments of the attribute macro being expanded.
    Args(TokenStream),
    /// An attribute on the item.
    Attribute(&'a Attribute),
}

/// Reads the receiver `A` of the attribute `#[attribute]` as `written`
/// (`#[attribute]` alone gives no keys), or every error, coded; `example`,
/// a key with a value, shows how to write the attribute in messages.
pub(crate) fn read<A: FromMeta + Default>(
    written: Written<'_>,
    attribute: Symbol,
    example: &str,
) -> syn::Result<A> {
    let parsed = match written {
        Written::Args(tokens) => from_tokens(tokens),
        Written::Attribute(attr) => match &attr.meta {
            Meta::Path(_) => Ok(A::default()),
            Meta::List(list) => from_tokens(list.tokens.clone()),
            Meta::NameValue(nv) => Err(darling::Error::custom(format!(
                "{}: #[{attribute}] takes a list of keys, as in #[{attribute}({example})]",
                codes::MALFORMED,
            ))
            .with_span(&nv.eq_token)),
        },
    };
    parsed.map_err(|error| coded(error, attribute, example))
}

/// Parses the arguments of an attribute, as a macro call receives them.
fn from_tokens<A: FromMeta + Default>(args: TokenStream) -> darling::Result<A> {
    if args.is_empty() {
        return Ok(A::default());
    }
    let items = NestedMeta::parse_meta_list(args)?;
    A::from_list(&items)
}

/// Turns darling's errors into syn errors whose message starts with a code.
///
/// Errors made here already carry their code. Darling's own (an unknown or
/// duplicate key, a bare literal) get ATR-002, reworded in lowercase; an
/// unknown key keeps darling's did-you-mean suggestion.
pub(crate) fn coded(error: darling::Error, attribute: Symbol, example: &str) -> syn::Error {
    let mut out: Option<syn::Error> = None;
    for single in error.flatten() {
        let single = syn::Error::from(single);
        let message = single.to_string();
        let message = if message.starts_with("ATR-") {
            message
        } else {
            reword(&message, attribute, example)
        };
        let single = syn::Error::new(single.span(), message);
        match &mut out {
            Some(out) => out.combine(single),
            None => out = Some(single),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(Span::call_site(), codes::MALFORMED))
}

fn reword(message: &str, attribute: Symbol, example: &str) -> String {
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
