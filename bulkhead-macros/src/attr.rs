//! How a policy attribute is read, whatever the policy: [`read`] walks its
//! `key = value` pairs (darling's `NestedMeta`), looks each key up in the
//! policy's table of keys in `bulkhead-keys` (`PolicyKind::all_keys`, those
//! an attribute takes), reads its value by the key's kind (`values/`)
//! and gathers what it says into [`Keys`]; [`coded`] gives the errors of
//! darling's parser their code.
//!
//! So a new key of a policy needs nothing here: the table says its name
//! and its kind, the config builder has a method of the same name. Every
//! error is reported at once, spanned on the offending tokens: an unknown
//! key (ATR-002, with the closest key of the table), a key given twice
//! (ATR-002), a bare literal (ATR-002), and each bad value with its kind's
//! code.

use bulkhead_keys::{Key, KeyValue, NAME, PolicyKind, did_you_mean};
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, ExprPath, Ident, Meta, Path, Token};

use crate::codes;
use crate::symbol::{self, Symbol};
use crate::values::{self, Read, Value};

/// What a policy attribute says once it is read, whatever the policy.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    /// `name = "..."`, if the attribute gives one.
    name: Option<Value<String>>,
    /// Every other key written, in the order of the policy's table.
    values: Vec<(&'static Key, Value<Read>)>,
    /// `crate = "..."`: the path of the facade (see `krate.rs`), if given.
    krate: Option<Value<Path>>,
    /// `key = tenant` (a bulkhead's only): the parameter whose value keys
    /// a keyed bulkhead, if given.
    key: Option<KeyParam>,
}

/// `key = tenant` in `#[bulkhead(..)]`: the parameter named, as written
/// (its span for errors about it).
#[derive(Debug, Clone)]
pub(crate) struct KeyParam {
    pub(crate) ident: Ident,
}

impl Keys {
    /// `name = "..."`, if the attribute gives one.
    pub(crate) fn name(&self) -> Option<&Value<String>> {
        self.name.as_ref()
    }

    /// `crate = "..."`, if the attribute gives it.
    pub(crate) fn krate(&self) -> Option<&Value<Path>> {
        self.krate.as_ref()
    }

    /// `key = tenant`, if the attribute gives it: a keyed bulkhead.
    pub(crate) fn key(&self) -> Option<&KeyParam> {
        self.key.as_ref()
    }

    /// `.key(value)` for every key written that sets the policy's config
    /// builder, in the order of the table (`.config(..)` first).
    pub(crate) fn settings(&self) -> TokenStream {
        self.values
            .iter()
            .filter_map(|(key, value)| value.value.setting(key.name(), value.span))
            .collect()
    }

    /// The method the key written names (a fallback's `method`), with the
    /// span of its string.
    pub(crate) fn method(&self) -> Option<&Ident> {
        self.values
            .iter()
            .find_map(|(_, value)| value.value.method())
    }

    /// The functions the keys written name, with their keys, such as
    /// `("retry_if", is_transient)`.
    pub(crate) fn predicates(&self) -> Vec<(&'static str, &ExprPath)> {
        self.values
            .iter()
            .filter_map(|(key, value)| Some((key.name(), value.value.predicate()?)))
            .collect()
    }
}

/// An attribute as written, whose keys are read.
pub(crate) enum Written<'a> {
    /// The arguments of the attribute macro being expanded.
    Args(TokenStream),
    /// An attribute on the item.
    Attribute(&'a Attribute),
}

/// Reads the attribute of policy `kind` as `written` (`#[attribute]` alone
/// gives no keys), or every error, coded.
pub(crate) fn read(kind: PolicyKind, written: Written<'_>) -> syn::Result<Keys> {
    let attribute = symbol::policy(kind);
    let parsed = match written {
        Written::Args(tokens) => from_tokens(kind, tokens),
        Written::Attribute(attr) => match &attr.meta {
            Meta::Path(_) => Ok(Keys::default()),
            // Parsed within its parentheses, so that an error at the end
            // of the arguments (`max_concurrent = `) is spanned on them.
            Meta::List(list) => list
                .parse_args_with(Punctuated::<NestedMeta, Token![,]>::parse_terminated)
                .map_err(darling::Error::from)
                .and_then(|items| from_items(kind, &items.into_iter().collect::<Vec<_>>())),
            // Spanned on `= value`, which the list replaces (a darling
            // error would cover its first token only).
            Meta::NameValue(nv) => {
                let (eq, value) = (&nv.eq_token, &nv.value);
                return Err(syn::Error::new_spanned(
                    quote::quote!(#eq #value),
                    format!(
                        "{}: #[{attribute}] takes a list of keys, as in #[{attribute}({})]",
                        codes::MALFORMED,
                        kind.example(),
                    ),
                ));
            }
        },
    };
    parsed.map_err(|error| coded(error, attribute))
}

/// Parses the arguments of an attribute, as a macro call receives them.
fn from_tokens(kind: PolicyKind, args: TokenStream) -> darling::Result<Keys> {
    if args.is_empty() {
        return Ok(Keys::default());
    }
    from_items(kind, &NestedMeta::parse_meta_list(args)?)
}

/// Reads each `key = value` of `items` with the key's row of `kind`'s
/// table, in the order written, and keeps them in the order of the table.
fn from_items(kind: PolicyKind, items: &[NestedMeta]) -> darling::Result<Keys> {
    let attribute = symbol::policy(kind);
    let table: Vec<&'static Key> = kind
        .all_keys()
        .filter(|key| key.origin().in_attribute())
        .collect();
    let mut seen = vec![false; table.len()];
    let mut read: Vec<(usize, Value<Read>)> = Vec::new();
    let mut errors = darling::Error::accumulator();
    let mut krate: Option<Value<Path>> = None;
    let mut key: Option<KeyParam> = None;
    for item in items {
        let path = match item {
            NestedMeta::Meta(meta) => meta.path(),
            NestedMeta::NameValueInvalidExpr(invalid) => &invalid.path,
            NestedMeta::Lit(lit) => {
                errors.push(
                    darling::Error::custom(format!(
                        "{}: #[{attribute}] takes `key = value` pairs, not bare literals, as in #[{attribute}({})]",
                        codes::MALFORMED,
                        kind.example(),
                    ))
                    .with_span(lit),
                );
                continue;
            }
        };
        let written = darling::util::path_to_string(path);
        if written == CRATE_KEY {
            if krate.is_some() {
                errors.push(
                    darling::Error::custom(format!(
                        "{}: duplicate key `crate` in #[{attribute}]",
                        codes::MALFORMED
                    ))
                    .with_span(item),
                );
            } else if let Some(path) = errors.handle(crate_path(attribute, item)) {
                krate = Some(path);
            }
            continue;
        }
        if written == KEY_KEY {
            if key.is_some() {
                errors.push(
                    darling::Error::custom(format!(
                        "{}: duplicate key `key` in #[{attribute}]: a keyed bulkhead has one key, the value of one parameter",
                        codes::MALFORMED
                    ))
                    .with_span(item),
                );
            } else if let Some(param) = errors.handle(key_param(kind, item)) {
                key = Some(param);
            }
            continue;
        }
        let Some(at) = table.iter().position(|key| key.name() == written) else {
            errors
                .push(darling::Error::custom(unknown(&written, &table, attribute)).with_span(item));
            continue;
        };
        if std::mem::replace(&mut seen[at], true) {
            errors.push(
                darling::Error::custom(format!(
                    "{}: duplicate key `{written}` in #[{attribute}]",
                    codes::MALFORMED
                ))
                .with_span(item),
            );
            continue;
        }
        let value = match item {
            NestedMeta::Meta(meta) => values::read(table[at], meta),
            NestedMeta::NameValueInvalidExpr(invalid) => {
                Err(values::not_an_expression(table[at], invalid))
            }
            NestedMeta::Lit(_) => continue,
        };
        if let Some(value) = errors.handle(value) {
            read.push((at, value));
        }
    }
    errors.finish()?;
    read.sort_by_key(|(at, _)| *at);
    check_together(kind, &table, &read)?;
    check_keyed(&table, &read, key.as_ref())?;
    let mut keys = Keys {
        krate,
        key,
        ..Keys::default()
    };
    for (at, value) in read {
        match (table[at], value.value) {
            (key, Read::Text(name)) if *key == NAME => {
                keys.name = Some(Value {
                    value: name,
                    span: value.span,
                });
            }
            (key, read) => keys.values.push((
                key,
                Value {
                    value: read,
                    span: value.span,
                },
            )),
        }
    }
    Ok(keys)
}

/// The rules between keys written together (a bulkhead's `min_concurrent`
/// <= `initial_concurrent` <= `max_concurrent`, `reserved` <=
/// `max_concurrent`, and a `lifo` or `codel` queue's `queue_target` above
/// zero and below `queue_interval`), from `PolicyKind::check_together`,
/// for the values written: its error is spanned on the value of the key it
/// names.
fn check_together(
    kind: PolicyKind,
    table: &[&'static Key],
    read: &[(usize, Value<Read>)],
) -> darling::Result<()> {
    let integers: Vec<(&str, KeyValue, Span)> = read
        .iter()
        .filter_map(|(at, value)| match value.value {
            Read::Integer(n) => Some((table[*at].name(), KeyValue::Integer(n), value.span)),
            Read::Duration(d) => Some((table[*at].name(), KeyValue::Duration(d), value.span)),
            Read::Choice(_, choice) => Some((
                table[*at].name(),
                KeyValue::Text(choice.to_owned()),
                value.span,
            )),
            _ => None,
        })
        .collect();
    let pairs: Vec<(&str, &KeyValue)> = integers.iter().map(|(k, v, _)| (*k, v)).collect();
    match kind.check_together(&pairs) {
        Ok(()) => Ok(()),
        Err(error) => {
            let span = integers
                .iter()
                .find(|(key, ..)| *key == error.key())
                .map_or_else(Span::call_site, |(.., span)| *span);
            Err(darling::Error::custom(error.to_string()).with_span(&span))
        }
    }
}

/// The key of `#[bulkhead]` that names the parameter whose value keys a
/// keyed bulkhead: not a row of the table, as its value names a parameter
/// of the method, not a setting.
pub(crate) const KEY_KEY: &str = "key";

/// The keys of the bulkhead's table that a keyed bulkhead does not
/// support (ATR-022 with `key`): it has its own fairness instead of a
/// queue discipline and priority classes, a fixed global limit, and no
/// resource's budget.
pub(crate) const NOT_KEYED: &[&str] = &[
    "adaptive",
    "min_concurrent",
    "initial_concurrent",
    "resource",
    "reserved",
    "priority",
    "shed_at",
    "queue",
    "queue_target",
    "queue_interval",
];

/// `key = tenant`: a bare parameter name, on `#[bulkhead]` only (ATR-021).
fn key_param(kind: PolicyKind, item: &NestedMeta) -> darling::Result<KeyParam> {
    let attribute = symbol::policy(kind);
    if kind != PolicyKind::Bulkhead {
        return Err(darling::Error::custom(format!(
            "{}: `key` is a key of #[bulkhead] alone, which names the parameter whose value keys a keyed bulkhead, as in #[bulkhead(per_key = 4, key = tenant)]; #[{attribute}] has no limit per key",
            codes::KEY
        ))
        .with_span(item));
    }
    let refused = || {
        darling::Error::custom(format!(
            "{}: `key` names a parameter of the method, written bare, as in #[bulkhead(per_key = 4, key = tenant)]",
            codes::KEY
        ))
        .with_span(item)
    };
    let NestedMeta::Meta(Meta::NameValue(nv)) = item else {
        return Err(refused());
    };
    let expr = crate::tokens::ungroup(&nv.value);
    let syn::Expr::Path(path) = expr else {
        return Err(refused());
    };
    if path.qself.is_some() || !path.attrs.is_empty() {
        return Err(refused());
    }
    match path.path.get_ident() {
        Some(ident) => Ok(KeyParam {
            ident: ident.clone(),
        }),
        None => Err(refused()),
    }
}

/// The keys written that a keyed bulkhead does not support, with `key`
/// (ATR-022, spanned on each). Its own keys (`per_key`, `max_keys`,
/// `idle_evict`) are allowed without `key`, and do nothing there, as
/// in configuration (a named configuration may give them to every
/// bulkhead).
fn check_keyed(
    table: &[&'static Key],
    read: &[(usize, Value<Read>)],
    key: Option<&KeyParam>,
) -> darling::Result<()> {
    let Some(key) = key else {
        return Ok(());
    };
    let mut errors = darling::Error::accumulator();
    for (at, value) in read {
        let name = table[*at].name();
        if NOT_KEYED.contains(&name) {
            errors.push(
                darling::Error::custom(format!(
                    "{}: {name} does not apply to a keyed bulkhead (`key = {}`): its calls share the global `max_concurrent` max-min fair among the keys, without {}; remove it, or `key` for a bulkhead without keys",
                    codes::NOT_KEYED,
                    key.ident,
                    unsupported(name),
                ))
                .with_span(&value.span),
            );
        }
    }
    errors.finish()
}

/// What a keyed bulkhead does without, for ATR-022's message.
fn unsupported(name: &str) -> &'static str {
    match name {
        "adaptive" | "min_concurrent" | "initial_concurrent" => "an adaptive limit",
        "resource" | "reserved" => "a resource's budget",
        "priority" | "shed_at" => "priority classes",
        _ => "a queue discipline",
    }
}

/// The key that names the facade's path, as serde's `#[serde(crate =
/// "...")]` does.
pub(crate) const CRATE_KEY: &str = "crate";

/// `crate = "path"`: the path of the facade, written in a string.
pub(crate) fn crate_path(attribute: Symbol, item: &NestedMeta) -> darling::Result<Value<Path>> {
    let refused = || {
        darling::Error::custom(format!(
            "{}: `crate` names the path of the bulkhead crate in a string, as in #[{attribute}(crate = \"::my_deps::bulkhead\")]",
            codes::MALFORMED
        ))
        .with_span(item)
    };
    let NestedMeta::Meta(Meta::NameValue(nv)) = item else {
        return Err(refused());
    };
    let expr = crate::tokens::ungroup(&nv.value);
    match crate::tokens::literal(expr) {
        Some(syn::Lit::Str(s)) if s.suffix().is_empty() => s
            .parse_with(Path::parse_mod_style)
            .map(|path| Value {
                value: path,
                span: s.span(),
            })
            .map_err(|_| refused()),
        _ => Err(refused()),
    }
}

/// The message of an unknown key `written`: the key of the table it
/// differs from only in case, the closest key of `table`, the other
/// attribute that takes it, or all of the table's keys.
fn unknown(written: &str, table: &[&'static Key], attribute: Symbol) -> String {
    // `key`, a bulkhead's key outside its table, is suggested too.
    let keyed = (attribute == symbol::policy(PolicyKind::Bulkhead)).then_some(KEY_KEY);
    let names = table.iter().map(|key| key.name()).chain(keyed);
    let lowered = written.to_lowercase();
    let same_but_case = names.clone().find(|name| *name == lowered);
    let elsewhere = || {
        PolicyKind::ALL.into_iter().find(|kind| {
            symbol::policy(*kind) != attribute
                && kind
                    .all_keys()
                    .any(|key| key.origin().in_attribute() && key.name() == written)
        })
    };
    let hint = match same_but_case.or_else(|| did_you_mean(written, names.clone())) {
        Some(key) => format!("; did you mean `{key}`?"),
        None if elsewhere().is_some() => {
            let other = elsewhere().map(symbol::policy).unwrap_or(attribute);
            format!(
                "; `{written}` is a key of #[{other}], a policy of its own: add #[{other}({written} = ..)] to the method or function"
            )
        }
        None => {
            let mut names: Vec<&str> = names.collect();
            names.sort_unstable();
            let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
            format!("; expected one of {}", names.join(", "))
        }
    };
    format!(
        "{}: unknown key `{written}` in #[{attribute}]{hint}",
        codes::MALFORMED
    )
}

/// Turns darling's errors into syn errors whose message starts with a code.
///
/// Errors made here and in `values/` already carry their code. Those of
/// the parser (syn's, through darling) get ATR-002, in lowercase.
pub(crate) fn coded(error: darling::Error, attribute: Symbol) -> syn::Error {
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

fn reword(message: &str, attribute: Symbol) -> String {
    let mut chars = message.chars();
    let lowered: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{}: {lowered} in #[{attribute}]", codes::MALFORMED)
}
