//! Every meaning-level check of the macros, in one place. Each check pushes
//! a coded, spanned error and carries on, so the user sees every mistake at
//! once.

use darling::Error;
use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, TraitItem, Type, TypeParamBound, WherePredicate};

use crate::ast::{Func, Method, Receiver, Returns, Trait};
use crate::codes;

/// Supertraits the wrapper implements whenever its delegate does: the auto
/// traits, `Sized`, and `Clone` and `Debug`, which it implements itself.
const SUPERTRAITS: &[&str] = &[
    "Send",
    "Sync",
    "Unpin",
    "Sized",
    "UnwindSafe",
    "RefUnwindSafe",
    "Clone",
    "Debug",
];

/// Checks a `#[resilient]` trait: what makes it impossible to wrap
/// (ATR-007) and what is wrong with each annotated method (ATR-004).
pub(crate) fn check_trait(model: &Trait, errors: &mut Accumulator) {
    for error in unwrappable(model) {
        errors.push(error);
    }
    for method in &model.methods {
        if method.annotation.is_some() {
            if matches!(method.receiver, Receiver::None) {
                errors.push(spanned(
                    method.sig.ident.span(),
                    format!(
                        "{}: #[bulkhead] needs a method that takes `self`: `{}` is an associated function, and the wrapper keeps the bulkhead in itself",
                        codes::UNWRAPPABLE,
                        method.sig.ident
                    ),
                ));
            }
            check_returns(&method.sig.ident, &method.ret, errors);
        }
    }
}

/// Checks a function whose body `#[bulkhead]` wraps.
pub(crate) fn check_fn(func: &Func, errors: &mut Accumulator) {
    let sig = &func.item.sig;
    if let Some(constness) = &sig.constness {
        errors.push(spanned(
            constness.span(),
            format!(
                "{}: #[bulkhead] cannot wrap `const fn {}`: taking a slot is not a const operation",
                codes::UNWRAPPABLE,
                sig.ident
            ),
        ));
    }
    check_returns(&sig.ident, &func.ret, errors);
}

/// Why `#[resilient]` cannot implement the trait for its wrapper, if it
/// cannot (ATR-007). Empty if the wrapper can be generated.
pub(crate) fn unwrappable(model: &Trait) -> Vec<Error> {
    let item = &model.item;
    let name = &item.ident;
    let mut reasons = Vec::new();
    let mut reason = |span: Span, why: String| {
        reasons.push(spanned(
            span,
            format!("{}: cannot wrap trait `{name}`: {why}", codes::UNWRAPPABLE),
        ));
    };
    if let Some(unsafety) = &item.unsafety {
        reason(
            unsafety.span(),
            "it is an `unsafe trait`, and the wrapper cannot promise its safety contract".into(),
        );
    }
    let self_bounds = item
        .generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .filter_map(|predicate| match predicate {
            WherePredicate::Type(p) if is_self(&p.bounded_ty) => Some(&p.bounds),
            _ => None,
        })
        .flatten();
    for bound in item.supertraits.iter().chain(self_bounds) {
        if let Some(why) = unsupported_supertrait(bound) {
            reason(bound.span(), why);
        }
    }
    for trait_item in &item.items {
        match trait_item {
            TraitItem::Fn(_) | TraitItem::Type(_) | TraitItem::Const(_) => {}
            TraitItem::Macro(mac) => reason(
                mac.span(),
                "its items include a macro call, whose expansion `#[resilient]` cannot see; write the items out".into(),
            ),
            other => reason(
                other.span(),
                "it contains an item `#[resilient]` does not understand".into(),
            ),
        }
    }
    for ty in &model.types {
        let bounds = ty.bounds.to_token_stream();
        if let Some(span) = bare_self(bounds) {
            reason(
                span,
                format!(
                    "the bounds of `{}` name `Self`, which is the wrapper in its implementation, not the delegate",
                    ty.ident
                ),
            );
        }
    }
    for constant in &model.consts {
        if let Some(span) = bare_self(constant.ty.to_token_stream()) {
            reason(
                span,
                format!(
                    "the type of `{}` is or contains `Self`, which the wrapper cannot produce from its delegate's",
                    constant.ident
                ),
            );
        }
    }
    for method in &model.methods {
        if let Some(why) = unwrappable_method(method) {
            reason(why.0, why.1);
        }
    }
    reasons
}

fn unwrappable_method(method: &Method) -> Option<(Span, String)> {
    let name = &method.sig.ident;
    if let Receiver::Other(span) = method.receiver {
        return Some((
            span,
            format!(
                "method `{name}` takes `self` as a type the wrapper cannot pass on to its delegate; use `self`, `&self` or `&mut self`"
            ),
        ));
    }
    let sig = &method.sig;
    let mut mentions = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => Some(typed.ty.to_token_stream()),
            FnArg::Receiver(_) => None,
        })
        .chain(std::iter::once(sig.output.to_token_stream()))
        .chain(sig.generics.params.iter().map(ToTokens::to_token_stream))
        .chain(
            sig.generics
                .where_clause
                .iter()
                .flat_map(|w| &w.predicates)
                .filter(|predicate| !is_harmless_self_bound(predicate))
                .map(ToTokens::to_token_stream),
        );
    mentions.find_map(bare_self).map(|span| {
        (
            span,
            format!(
                "method `{name}` names `Self` outside its receiver, and in the wrapper `Self` is the wrapper, not the delegate; use an associated type or a generic parameter"
            ),
        )
    })
}

/// `Self: Sized` and `Self: 'a` mean the same for the wrapper as for its
/// delegate.
fn is_harmless_self_bound(predicate: &WherePredicate) -> bool {
    match predicate {
        WherePredicate::Type(p) if is_self(&p.bounded_ty) => {
            p.bounds.iter().all(|bound| match bound {
                TypeParamBound::Lifetime(_) => true,
                TypeParamBound::Trait(t) => t.path.is_ident("Sized"),
                _ => false,
            })
        }
        _ => true,
    }
}

fn unsupported_supertrait(bound: &TypeParamBound) -> Option<String> {
    match bound {
        TypeParamBound::Lifetime(_) => None,
        TypeParamBound::Trait(t) if t.maybe.is_some() => None,
        TypeParamBound::Trait(t) => {
            let last = t.path.segments.last()?;
            if SUPERTRAITS.iter().any(|name| last.ident == name) {
                return None;
            }
            Some(format!(
                "its supertrait `{}` would have to be implemented by the wrapper too; `#[resilient]` supports only {} as supertraits",
                crate::ids::render(t.path.to_token_stream()),
                SUPERTRAITS.join(", ")
            ))
        }
        _ => Some("it has a bound `#[resilient]` does not understand".into()),
    }
}

fn check_returns(name: &syn::Ident, ret: &Returns, errors: &mut Accumulator) {
    if !ret.is_result {
        errors.push(spanned(
            ret.span_range().0,
            format!(
                "{}: `{name}` must return `Result<T, E>` (or a future of one) with `E: From<bulkhead::Rejection>`, so that a rejected call can return its rejection; it returns `{}`",
                codes::RETURN_TYPE,
                crate::ids::render(ret.value.to_token_stream())
            ),
        ));
    }
}

fn is_self(ty: &Type) -> bool {
    matches!(crate::ast::strip(ty), Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

/// The span of a `Self` in `tokens` that is not the start of a path such as
/// `Self::Item`.
fn bare_self(tokens: TokenStream) -> Option<Span> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if ident == "Self" => {
                let path_follows = matches!(
                    (tokens.get(i + 1), tokens.get(i + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':'
                );
                if !path_follows {
                    return Some(ident.span());
                }
            }
            TokenTree::Group(group) => {
                if let Some(span) = bare_self(group.stream()) {
                    return Some(span);
                }
            }
            _ => {}
        }
    }
    None
}

fn spanned(span: Span, message: String) -> Error {
    Error::custom(message).with_span(&span)
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn messages(item: syn::ItemTrait) -> Vec<String> {
        let mut errors = darling::Error::accumulator();
        let model = Trait::from_syn(item, &mut errors);
        check_trait(&model, &mut errors);
        match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => crate::attr::coded(e, "bulkhead")
                .into_iter()
                .map(|e| e.to_string())
                .collect(),
        }
    }

    #[test]
    fn a_plain_trait_passes() {
        let errors = messages(parse_quote! {
            pub trait Shop: Send + Sync + 'static {
                type Item: Clone;
                const LIMIT: usize;
                #[bulkhead(max_concurrent = 2)]
                fn buy(&self, item: Self::Item) -> Result<(), E> where Self: Sized;
                #[bulkhead]
                async fn buy_async(&mut self) -> io::Result<()>;
                fn name(&self) -> String;
                fn make() -> u8;
            }
        });
        assert_eq!(errors, Vec::<String>::new());
    }

    #[test]
    fn non_result_returns_are_atr_004() {
        let errors = messages(parse_quote! {
            trait Shop {
                #[bulkhead]
                fn count(&self) -> &u32;
                #[bulkhead]
                fn touch(&self);
            }
        });
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("ATR-004: `count` must return `Result<T, E>`"));
        assert!(errors[0].ends_with("it returns `&u32`"), "{}", errors[0]);
        assert!(errors[1].ends_with("it returns `()`"), "{}", errors[1]);
    }

    #[test]
    fn what_cannot_be_wrapped_is_atr_007_with_the_reason() {
        let errors = messages(parse_quote! {
            unsafe trait Shop: Iterator {
                fn boxed(self: Box<Self>);
                fn same(&self, other: &Self) -> bool;
                fn make() -> Self;
                my_macro!();
                #[bulkhead]
                fn assoc() -> Result<(), E>;
            }
        });
        let expected = [
            "ATR-007: cannot wrap trait `Shop`: it is an `unsafe trait`",
            "ATR-007: cannot wrap trait `Shop`: its supertrait `Iterator`",
            "ATR-007: cannot wrap trait `Shop`: its items include a macro call",
            "ATR-007: cannot wrap trait `Shop`: method `boxed` takes `self` as a type",
            "ATR-007: cannot wrap trait `Shop`: method `same` names `Self`",
            "ATR-007: cannot wrap trait `Shop`: method `make` names `Self`",
            "ATR-007: #[bulkhead] needs a method that takes `self`",
        ];
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        for (error, start) in errors.iter().zip(expected) {
            assert!(
                error.starts_with(start),
                "{error}\ndoes not start with\n{start}"
            );
        }
    }

    #[test]
    fn a_second_bulkhead_on_one_method_is_atr_002() {
        let errors = messages(parse_quote! {
            trait Shop {
                #[bulkhead(max_concurrent = 1)]
                #[bulkhead(max_wait = "1s")]
                fn buy(&self) -> Result<(), E>;
            }
        });
        assert_eq!(
            errors,
            ["ATR-002: #[bulkhead] is given twice on `buy`; merge the keys into one attribute"]
        );
    }

    #[test]
    fn a_const_fn_cannot_be_wrapped() {
        let func = Func::new(
            parse_quote!(
                const fn f() -> Result<(), E> {
                    Ok(())
                }
            ),
            crate::attr::BulkheadArgs::default(),
        );
        let mut errors = darling::Error::accumulator();
        check_fn(&func, &mut errors);
        let error = errors.finish().unwrap_err().to_string();
        assert!(
            error.starts_with("ATR-007: #[bulkhead] cannot wrap `const fn f`"),
            "{error}"
        );
    }

    #[test]
    fn self_paths_are_fine_but_bare_self_is_not() {
        assert!(bare_self(parse_quote!(Vec<Self::Item>)).is_none());
        assert!(bare_self(parse_quote!(Vec<Self>)).is_some());
        assert!(bare_self(parse_quote!(<Self as Other>::Item)).is_some());
    }
}
