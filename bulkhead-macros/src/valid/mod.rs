//! Every meaning-level check of the macros, in one place. Each check pushes
//! a coded error, spanned on the whole offending type or path, and carries
//! on, so the user sees every mistake at once. What the checks of a trait
//! decide is recorded on its model (`Trait::wrappable`, `Method::wrapped`),
//! so the expansion reads it instead of checking again.

mod function;
mod method;
mod wrappable;

pub(crate) use function::check_fn;

use method::*;
use wrappable::*;

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{
    FnArg, Ident, ReturnType, Signature, TraitItem, TypeImplTrait, TypeParamBound, WherePredicate,
};

use crate::ast::{Flavor, Func, Method, Returns, SelfArg, Trait};
use crate::codes::{self, Errors};
use crate::ids::render;
use crate::policies::{PolicyAttribute, PolicyKind};
use crate::tokens::{closing_angle, is_joint, is_punct, is_self};

/// Supertraits the wrapper implements whenever its delegate does: the auto
/// traits, `Sized`, and `Clone` and `Debug`, which it implements itself.
pub(crate) const SUPERTRAITS: &[&str] = &[
    "Send",
    "Sync",
    "Unpin",
    "Sized",
    "UnwindSafe",
    "RefUnwindSafe",
    "Clone",
    "Debug",
];

/// Whether `path` names one of the [`SUPERTRAITS`] by its absolute path in
/// the standard library (`::std::marker::Send`, `::core::fmt::Debug`):
/// then it is that trait, and needs no check in the user's crate. (The
/// check uses `#[diagnostic::..]` attributes, which a crate under
/// `#![no_implicit_prelude]` cannot name; such a crate writes these paths.)
pub(crate) fn is_standard_path(path: &syn::Path) -> bool {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let plain = path.segments.iter().all(|s| s.arguments.is_none());
    let module = match names.last().map(String::as_str) {
        Some("Send" | "Sync" | "Unpin" | "Sized") => "marker",
        Some("UnwindSafe" | "RefUnwindSafe") => "panic",
        Some("Clone") => "clone",
        Some("Debug") => "fmt",
        _ => return false,
    };
    path.leading_colon.is_some()
        && plain
        && names.len() == 3
        && matches!(names[0].as_str(), "std" | "core")
        && names[1] == module
}

/// The trait bounds of `Self` the trait declares (its supertraits and the
/// `Self: ..` bounds of its where clause), but `?Sized`: those the wrapper
/// must meet, each the path as written.
pub(crate) fn supertraits(item: &syn::ItemTrait) -> impl Iterator<Item = &syn::Path> {
    item.supertraits
        .iter()
        .chain(self_bounds(item))
        .filter_map(|bound| match bound {
            TypeParamBound::Trait(t) if t.maybe.is_none() => Some(&t.path),
            _ => None,
        })
}

/// The bounds of `Self` in the trait's where clause.
fn self_bounds(item: &syn::ItemTrait) -> impl Iterator<Item = &TypeParamBound> {
    item.generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .filter_map(|predicate| match predicate {
            WherePredicate::Type(p) if is_self(&p.bounded_ty) => Some(&p.bounds),
            _ => None,
        })
        .flatten()
}

/// The wrapper's own methods, which would shadow trait methods of the same
/// name for callers (an inherent method wins over a trait's).
const INHERENT: &[(&str, &str)] = &[
    ("delegate", "delegate(&self) -> &D"),
    ("into_inner", "into_inner(self) -> D"),
];

/// Checks a `#[resilient]` trait: what makes it impossible to wrap
/// (ATR-007) and what is wrong with each annotated method (ATR-004,
/// ATR-007). Records on the model whether the wrapper can be generated and
/// which methods it runs under their policies.
pub(crate) fn check_trait(model: &mut Trait, errors: &mut Errors) {
    let reasons = unwrappable(model);
    model.wrappable = reasons.is_empty();
    for error in reasons {
        errors.push(error);
    }
    let fallbacks: Vec<Option<syn::Error>> = model
        .methods
        .iter()
        .map(|method| cannot_fall_back(model, method))
        .collect();
    let generics = model.item.generics.clone();
    for (method, fallback) in model.methods.iter_mut().zip(fallbacks) {
        if !method.is_annotated() {
            continue;
        }
        let names = method.annotations.names();
        if matches!(method.self_arg, SelfArg::None) {
            errors.spanned(
                &method.sig.ident,
                format!(
                    "{}: {names} {needs} a method that takes `self`: `{}` is an associated function, and the wrapper keeps the policies in itself",
                    codes::UNWRAPPABLE,
                    method.sig.ident,
                    needs = method.annotations.verb("needs", "need"),
                ),
            );
        }
        check_returns(&method.sig.ident, &names, &method.ret, errors);
        let again = cannot_call_again(method);
        let hedge = cannot_hedge(
            &method.sig,
            &method.annotations,
            method.ret.flavor,
            &method.self_arg,
        );
        let keyed = keyed(&method.sig, &generics, &method.annotations);
        // A method that cannot be run under its policies (reported) only
        // delegates.
        method.wrapped = method.annotations.complete()
            && keyed.is_ok()
            && again.is_none()
            && hedge.is_none()
            && fallback.is_none()
            && method.ret.is_result
            && method.ret.unpin.is_none()
            && method.ret.other_bound.is_none()
            && matches!(
                method.self_arg,
                SelfArg::Ref | SelfArg::RefMut | SelfArg::Owned
            );
        if let Some((tokens, why)) = again {
            errors.spanned(tokens, why);
        }
        errors.extend(hedge);
        errors.extend(fallback);
        match keyed {
            Ok(keyed) => method.keyed = keyed,
            Err(refused) => errors.push(refused),
        }
    }
}

/// The parameter the keyed bulkhead of a method or function with `sig`
/// is keyed by, if its `#[bulkhead]` names one, or why it cannot be
/// (ATR-021 for a `key` that names no parameter that can key it). The
/// method's other policy attributes compose with it.
pub(crate) fn keyed(
    sig: &Signature,
    generics: &syn::Generics,
    annotations: &crate::annotations::Annotations,
) -> Result<Option<crate::keyed::KeyArg>, syn::Error> {
    match annotations.policies().key() {
        Some(key) => crate::keyed::KeyArg::find(sig, generics, key).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::PolicyKind;
    use syn::parse_quote;

    #[test]
    fn only_absolute_standard_paths_skip_the_supertrait_check() {
        let standard = |path: syn::Path| is_standard_path(&path);
        assert!(standard(parse_quote!(::std::marker::Send)));
        assert!(standard(parse_quote!(::core::fmt::Debug)));
        assert!(standard(parse_quote!(::std::panic::RefUnwindSafe)));
        assert!(!standard(parse_quote!(std::marker::Send)), "a local `std`");
        assert!(!standard(parse_quote!(Send)));
        assert!(!standard(parse_quote!(::std::fmt::Send)), "wrong module");
        assert!(!standard(parse_quote!(::mycrate::marker::Send)));
        assert!(!standard(parse_quote!(::std::marker::Send<u8>)));
    }

    fn messages(item: syn::ItemTrait) -> Vec<String> {
        let mut errors = Errors::default();
        let mut model = Trait::from_syn(item, &crate::krate::Krate::plain(), &mut errors);
        check_trait(&mut model, &mut errors);
        match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
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
    fn a_fallback_must_name_another_method_of_the_same_signature() {
        let errors = messages(parse_quote! {
            trait Shop {
                #[fallback]
                #[bulkhead]
                fn none(&self) -> Result<u8, E>;
                #[fallback(method = "cahced")]
                fn unknown(&self, id: &str) -> Result<u8, E>;
                #[fallback(method = "itself")]
                fn itself(&self) -> Result<u8, E>;
                #[fallback(method = "cached")]
                fn other(&self, id: &str, width: u32) -> Result<u8, E>;
                #[fallback(method = "cached")]
                fn fine(&self, id: &str) -> Result<u8, E>;
                fn cached(&self, id: &str) -> Result<u8, E>;
            }
        });
        let expected = [
            "ATR-013: #[fallback] on `none` names no method",
            "ATR-013: #[fallback] on `unknown` names `cahced`, which is not a method of trait `Shop`; did you mean `cached`?",
            "ATR-013: #[fallback] on `itself` names `itself` itself",
            "ATR-013: the fallback `cached` of `other` must have the same signature, as it is called with the same arguments in its place: `other` is `fn(&self, &str, u32) -> Result<u8, E>`, `cached` is `fn(&self, &str) -> Result<u8, E>`",
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
    fn signatures_compare_everything_but_names_and_patterns() {
        let sig = |sig: syn::Signature| signature(&sig);
        assert_eq!(
            sig(
                parse_quote!(async fn f<T: Clone>(&self, (a, b): (u8, u8), t: T) -> Result<T, E> where T: Send)
            ),
            "async fn<T:Clone>(&self, (u8, u8), T) -> Result<T, E> where T:Send"
        );
        assert_eq!(
            sig(parse_quote!(fn f(&mut self, mut x: u8))),
            sig(parse_quote!(fn g(&mut self, y: u8)))
        );
        assert_ne!(
            sig(parse_quote!(fn f(&mut self, x: u8))),
            sig(parse_quote!(fn f(&self, x: u8)))
        );
        assert_ne!(
            sig(parse_quote!(unsafe fn f(&self))),
            sig(parse_quote!(fn f(&self)))
        );
    }

    #[test]
    fn a_hedge_needs_an_async_method_taking_a_shared_self() {
        let errors = messages(parse_quote! {
            trait Search {
                #[hedge]
                fn sync(&self) -> Result<u8, E>;
                #[hedge]
                async fn exclusive(&mut self) -> Result<u8, E>;
                #[hedge]
                async fn fine(&self) -> Result<u8, E>;
                #[hedge]
                fn future(&self) -> impl Future<Output = Result<u8, E>> + Send;
            }
        });
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with("ATR-014: #[hedge] cannot hedge `sync`: it is a sync method")
        );
        assert!(
            errors[1]
                .starts_with("ATR-014: #[hedge] cannot hedge `exclusive`: it takes `&mut self`")
        );
        let function = function_errors(
            PolicyKind::Hedge,
            TokenStream::new(),
            parse_quote!(
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert!(
            function[0].starts_with("ATR-014: #[hedge] cannot hedge `f`: it is a sync function"),
            "{function:?}"
        );
        let fallback = function_errors(
            PolicyKind::Fallback,
            quote::quote!(method = "g"),
            parse_quote!(
                async fn f() -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert!(
            fallback[0].starts_with(
                "ATR-013: #[fallback] cannot wrap `f`: a function with a body has no delegate"
            ),
            "{fallback:?}"
        );
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
        let mut errors = Errors::default();
        let func = Func::from_syn(
            PolicyKind::Bulkhead,
            TokenStream::new(),
            parse_quote!(
                const fn f() -> Result<(), E> {
                    Ok(())
                }
            ),
            &crate::krate::Krate::plain(),
            &mut errors,
        );
        check_fn(&func, &mut errors);
        let error = errors.finish().unwrap_err().to_string();
        assert!(
            error.starts_with("ATR-007: #[bulkhead] cannot wrap `const fn f`"),
            "{error}"
        );
    }

    fn function_errors(kind: PolicyKind, args: TokenStream, item: syn::ItemFn) -> Vec<String> {
        let mut errors = Errors::default();
        let func = Func::from_syn(kind, args, item, &crate::krate::Krate::plain(), &mut errors);
        check_fn(&func, &mut errors);
        match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn bodies_that_cannot_run_per_attempt_are_atr_007() {
        let by_value = function_errors(
            PolicyKind::Timeout,
            TokenStream::new(),
            parse_quote!(
                fn f(self) -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert_eq!(by_value.len(), 1, "{by_value:?}");
        assert!(
            by_value[0]
                .starts_with("ATR-007: #[timeout] cannot wrap `f` yet: it takes `self` by value")
        );
        let async_mut = function_errors(
            PolicyKind::Retry,
            TokenStream::new(),
            parse_quote!(
                #[bulkhead]
                async fn f(&mut self) -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert_eq!(async_mut.len(), 1, "{async_mut:?}");
        assert!(async_mut[0].starts_with(
            "ATR-007: #[retry] and #[bulkhead] cannot wrap `f` yet: it is an `async fn` taking `&mut self`"
        ));
        let future = function_errors(
            PolicyKind::Retry,
            TokenStream::new(),
            parse_quote!(
                fn f() -> impl Future<Output = Result<(), E>> {
                    async { Ok(()) }
                }
            ),
        );
        assert!(
            future[0].starts_with("ATR-007: #[retry] cannot wrap `f` yet: it returns a future")
        );
        let hedged_future = function_errors(
            PolicyKind::Hedge,
            TokenStream::new(),
            parse_quote!(
                fn f() -> impl Future<Output = Result<(), E>> {
                    async { Ok(()) }
                }
            ),
        );
        assert!(
            hedged_future[0].starts_with(
                "ATR-007: #[hedge] cannot wrap `f` yet: it returns a future made by its body, which #[hedge] would have to run again"
            ),
            "{hedged_future:?}"
        );
        let by_value_once = function_errors(
            PolicyKind::Timeout,
            TokenStream::new(),
            parse_quote!(
                #[circuit_breaker]
                fn f(self) -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert!(
            by_value_once[0]
                .contains("and the policies run the body from a closure, which cannot move it"),
            "{by_value_once:?}"
        );
        let fine = function_errors(
            PolicyKind::Retry,
            TokenStream::new(),
            parse_quote!(
                #[bulkhead]
                fn f(&mut self, x: u8) -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert_eq!(fine, Vec::<String>::new());
        let only_bulkhead = function_errors(
            PolicyKind::Bulkhead,
            TokenStream::new(),
            parse_quote!(
                async fn f(self) -> Result<(), E> {
                    Ok(())
                }
            ),
        );
        assert_eq!(only_bulkhead, Vec::<String>::new());
    }

    #[test]
    fn retry_where_the_delegate_cannot_be_called_again_is_atr_007() {
        let errors = messages(parse_quote! {
            trait Shop {
                #[retry]
                fn consume(self) -> Result<(), E> where Self: Sized;
                #[retry]
                fn detached(&self) -> impl Future<Output = Result<(), E>> + 'static;
                #[retry]
                fn bounded(&self, key: &str) -> impl Future<Output = Result<(), E>> + '_;
                #[retry]
                #[bulkhead]
                fn fine(&mut self, key: &str) -> impl Future<Output = Result<(), E>>;
                #[timeout]
                fn consume_once(self) -> Result<(), E> where Self: Sized;
            }
        });
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[0].starts_with(
                "ATR-007: #[retry] cannot run `consume` again: it takes `self` by value"
            )
        );
        assert!(errors[1].starts_with(
            "ATR-007: #[retry] cannot run `detached` again: its future may not borrow the wrapper"
        ));
        assert!(errors[2].starts_with(
            "ATR-007: #[retry] cannot run `bounded` again: its future is bound by a lifetime"
        ));
    }

    #[test]
    fn self_paths_and_the_traits_own_qualified_self_are_fine_but_bare_self_is_not() {
        let item: syn::ItemTrait = parse_quote! {
            trait Repo<K> {}
        };
        let model = Trait::from_syn(item, &crate::krate::Krate::plain(), &mut Errors::default());
        let selves = SelfPaths::of(&model);
        let bare = |tokens: TokenStream| selves.bare(tokens).map(|t| t.to_string());
        assert_eq!(bare(parse_quote!(Vec<Self::Item>)), None);
        assert_eq!(bare(parse_quote!(<Self as Repo<K>>::Item)), None);
        assert_eq!(bare(parse_quote!(<Self as crate::Repo<K>>::Item)), None);
        assert_eq!(bare(parse_quote!(Vec<Self>)).as_deref(), Some("Self"));
        assert_eq!(
            bare(parse_quote!(<Self as Other>::Item)).as_deref(),
            Some("< Self as Other >")
        );
        assert_eq!(
            bare(parse_quote!(<Self as Repo<u8>>::Item)).as_deref(),
            Some("< Self as Repo < u8 >>"),
            "another instance of the trait is not the delegate's"
        );
        assert_eq!(
            bare(parse_quote!(<Self as Repo<fn() -> K>>::Item)).as_deref(),
            Some("< Self as Repo < fn () -> K >>")
        );
    }

    #[test]
    fn methods_named_like_the_wrappers_own_are_atr_007() {
        let errors = messages(parse_quote! {
            trait Proxy {
                #[bulkhead]
                fn delegate(&self) -> Result<u8, E>;
                fn into_inner(self) -> u8 where Self: Sized;
                fn new(&self) -> u8;
            }
        });
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with("ATR-007: cannot wrap trait `Proxy`: its method `delegate` would be shadowed by the wrapper's own `delegate(&self) -> &D`"),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].ends_with("rename the trait's method"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].contains("`into_inner(self) -> D`"),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn parameter_attributes_are_atr_007() {
        let errors = messages(parse_quote! {
            trait Shop {
                #[bulkhead]
                fn buy(&self, #[cfg(debug_assertions)] trace: u8, id: u8) -> Result<u8, E>;
                fn plain(&self, #[allow(unused)] x: u8);
            }
        });
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors[0].starts_with(
            "ATR-007: cannot wrap trait `Shop`: a parameter of `buy` has an attribute"
        ));
        assert!(
            errors[1].contains("a parameter of `plain`"),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn unpin_futures_are_atr_007() {
        let errors = messages(parse_quote! {
            trait Shop {
                #[bulkhead]
                fn buy(&self) -> impl Future<Output = Result<u8, E>> + Unpin + Send;
                #[bulkhead]
                fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<u8, E>> + Unpin>>;
                fn plain(&self) -> impl Future<Output = u8> + Unpin;
                #[bulkhead]
                fn debug(&self) -> impl Future<Output = Result<u8, E>> + Send + std::fmt::Debug;
            }
        });
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[2].starts_with(
                "ATR-007: #[bulkhead] cannot wrap `debug`: its future is declared `std::fmt::Debug`"
            ),
            "{}",
            errors[2]
        );
        assert!(
            errors[0].starts_with(
                "ATR-007: #[bulkhead] cannot wrap `buy`: its future is declared `Unpin`"
            )
        );
        assert!(
            errors[1].ends_with("the box is `Unpin` without it"),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn a_bulkhead_inside_cfg_attr_is_atr_002_and_taken_off() {
        let mut errors = Errors::default();
        let model = Trait::from_syn(
            parse_quote! {
                trait Shop {
                    #[cfg_attr(unix, bulkhead(max_concurrent = 2), doc = "unix")]
                    fn buy(&self) -> Result<u8, E>;
                    #[cfg_attr(unix, cfg_attr(test, bulkhead))]
                    fn sell(&self) -> Result<u8, E>;
                }
            },
            &crate::krate::Krate::plain(),
            &mut errors,
        );
        let errors: Vec<String> = errors
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with("ATR-002: #[bulkhead] cannot be applied through #[cfg_attr]")
        );
        let emitted = model.item.to_token_stream().to_string();
        assert!(!emitted.contains("bulkhead"), "{emitted}");
        assert!(
            emitted.contains("cfg_attr (unix , doc = \"unix\")"),
            "{emitted}"
        );
        assert!(model.methods.iter().all(|m| !m.is_annotated()));
    }
}
