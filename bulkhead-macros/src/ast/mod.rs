//! The typed model the macros work on: a `#[resilient]` trait with its
//! methods, and a function whose body `#[bulkhead]` wraps. Built from syn's
//! tree, keeping the original tokens (and so their spans); the policy
//! attributes are read here, every error going to one collector. What
//! `valid/` decides is recorded here too ([`Trait::wrappable`],
//! [`Method::wrapped`]), for the expansion to read.

mod conditions;
mod returns;

pub(crate) use conditions::conditions;
use conditions::*;

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident};
use syn::punctuated::Punctuated;
use syn::{
    Attribute, FnArg, GenericArgument, Generics, Ident, ItemFn, ItemTrait, Lifetime, Meta,
    PathArguments, ReceiverKind, ReturnType, Signature, Token, TraitItem, TraitItemConst,
    TraitItemFn, TraitItemType, Type, TypeParamBound, Visibility,
};

use crate::annotations::Annotations;
use crate::attr::Written;
use crate::codes::{self, Errors};
use crate::keyed::KeyArg;
use crate::krate::Krate;
use crate::outlives::Outlives;
use crate::policies::{PolicyAttribute, PolicyKind, PolicySet};
use crate::symbol::{CFG, CFG_ATTR};
use crate::tokens::{is_self, strip};

/// A trait under `#[resilient]`.
pub(crate) struct Trait {
    /// The trait as the user wrote it, minus the policy attributes.
    pub(crate) item: ItemTrait,
    /// `Resilient<Trait>`.
    pub(crate) wrapper: Ident,
    /// The wrapper's type parameter for the delegate: `D`, or a name the
    /// trait does not use.
    pub(crate) delegate: Ident,
    pub(crate) methods: Vec<Method>,
    pub(crate) types: Vec<TraitItemType>,
    pub(crate) consts: Vec<TraitItemConst>,
    /// Whether the wrapper can be generated at all: `valid::check_trait`
    /// found nothing that stops it (ATR-007). `false` until it ran.
    pub(crate) wrappable: bool,
}

/// A method of a `#[resilient]` trait.
pub(crate) struct Method {
    /// The conditions it exists under (see [`conditions`]), repeated on
    /// everything generated for it: its implementation, and for an annotated
    /// method its field, its resolution in `new`, its clone and its `Debug`
    /// entry.
    pub(crate) cfgs: Vec<Attribute>,
    pub(crate) sig: Signature,
    pub(crate) self_arg: SelfArg,
    pub(crate) ret: Returns,
    /// The policy attributes of the method (none for a method that only
    /// delegates).
    pub(crate) annotations: Annotations,
    /// Whether the wrapper runs the method under its policies: it is
    /// annotated, every attribute was read, and `valid::check_trait` found
    /// nothing that stops it. `false` until that ran: the method then only
    /// delegates, as one that cannot be wrapped does (reported), so that one
    /// mistake does not cascade into errors about the wrapper.
    pub(crate) wrapped: bool,
    /// The parameter whose value keys its keyed bulkhead, if its
    /// `#[bulkhead]` names one (`key = tenant`) and `valid::check_trait`
    /// found it.
    pub(crate) keyed: Option<KeyArg>,
}

/// How a method takes `self` (its receiver).
#[derive(Clone)]
pub(crate) enum SelfArg {
    /// No receiver: an associated function.
    None,
    /// `&self`.
    Ref,
    /// `&mut self`.
    RefMut,
    /// `self` (by value).
    Owned,
    /// Another receiver type, such as `self: Box<Self>`, as written.
    Other(TokenStream),
}

/// What a method or function returns, and when its work happens.
pub(crate) struct Returns {
    pub(crate) flavor: Flavor,
    /// The value the call produces: the return type of a sync function, the
    /// `Output` of a future.
    pub(crate) value: Type,
    /// Whether `value` can be a `Result`: whether it is a path. Any alias
    /// may name one, so the type checker has the last word, through the
    /// `CallResult` bound of the generated code (also ATR-004).
    pub(crate) is_result: bool,
    /// The return type as written (`()` at the closing parenthesis of the
    /// parameters if there is none), for error spans covering all of it.
    pub(crate) written: TokenStream,
    /// Whether a returned future may not borrow the wrapper: its bounds
    /// name a lifetime other than `'_` that the receiver's is not known to
    /// outlive (`'static`, or the lifetime of an argument; the receiver's
    /// own, or one it is declared to outlive, as in `#[async_trait]`'s
    /// `'life0: 'async_trait`, is fine), or `use<..>`, or it is a boxed
    /// `dyn Future` without a lifetime (so `'static`). The wrapper then
    /// gives the future its own handle on the bulkhead instead of a borrow.
    pub(crate) detached: bool,
    /// The `Send` bound of a returned future declared `Send`, as written
    /// (`Send`, `std::marker::Send`).
    pub(crate) send: Option<TokenStream>,
    /// Whether a returned future is bound by a lifetime (`+ '_`, `+ 'a`, a
    /// boxed `dyn Future`, `use<..>`) that an argument is not known to
    /// outlive (see `outlives.rs`): then it cannot hold the arguments of the
    /// call. `String`, or `&'a str` under `+ 'a`, it can.
    pub(crate) outlives: bool,
    /// The `Unpin` bound of a future declared `+ Unpin`, which the wrapper's
    /// future cannot meet (ATR-007).
    pub(crate) unpin: Option<TokenStream>,
    /// The first other trait bound of a returned future (`+ Debug`, `+
    /// Sync`), which the future that runs it under its policies, an `async`
    /// block, does not promise (ATR-007): only `Future<..>`, `Send`,
    /// `Unpin` (reported as such), lifetimes and `use<..>` are understood.
    pub(crate) other_bound: Option<TokenStream>,
}

/// Whether a call runs on the spot or returns a future, and which.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flavor {
    /// A plain function.
    Sync,
    /// `async fn`.
    AsyncFn,
    /// `fn ... -> impl Future<Output = ...>`.
    ImplFuture,
    /// `fn ... -> Pin<Box<dyn Future<Output = ...>>>`.
    BoxedFuture,
}

/// A function with a body under policy attributes: a free function, or a
/// method in an impl block (or a trait's default method).
pub(crate) struct Func {
    /// The function, without its policy attributes.
    pub(crate) item: ItemFn,
    pub(crate) self_arg: SelfArg,
    pub(crate) ret: Returns,
    pub(crate) annotations: Annotations,
    /// The paths of the other policy attributes, as written, taken off the
    /// function: the expansion puts them back as `#[path(__bulkhead_applied)]`,
    /// which expands to the function unchanged, so that their imports are
    /// used (see [`crate::symbol::APPLIED`]).
    pub(crate) applied: Vec<syn::Path>,
    /// The facade's path: the `crate = ".."` of one of the attributes, or
    /// the one found.
    pub(crate) krate: Krate,
}

impl Trait {
    /// Builds the model, reading every policy attribute; attribute errors go
    /// to `errors` and leave that method unwrapped.
    pub(crate) fn from_syn(mut item: ItemTrait, krate: &Krate, errors: &mut Errors) -> Self {
        let wrapper = format_ident!("Resilient{}", item.ident);
        let delegate = free_ident(&item.to_token_stream());
        let mut methods = Vec::new();
        let mut types = Vec::new();
        let mut consts = Vec::new();
        let generics = item.generics.clone();
        for trait_item in &mut item.items {
            match trait_item {
                TraitItem::Fn(method) => {
                    methods.push(Method::from_syn(method, &generics, krate, errors));
                }
                TraitItem::Type(ty) => types.push(ty.clone()),
                TraitItem::Const(constant) => consts.push(constant.clone()),
                _ => {}
            }
        }
        Trait {
            item,
            wrapper,
            delegate,
            methods,
            types,
            consts,
            wrappable: false,
        }
    }
}

impl Method {
    /// Reads the method, taking its policy attributes off it (and those
    /// written inside `#[cfg_attr]`, which are an error).
    fn from_syn(
        method: &mut TraitItemFn,
        generics: &Generics,
        krate: &Krate,
        errors: &mut Errors,
    ) -> Self {
        let mut annotations = Annotations::default();
        let mut kept = Vec::with_capacity(method.attrs.len());
        for attr in method.attrs.drain(..) {
            if attr.path() == CFG_ATTR {
                kept.extend(without_conditional_policy(attr, krate, errors));
                continue;
            }
            match PolicyKind::of(&attr.meta, krate) {
                Some(kind) => annotations.add(
                    kind,
                    &attr,
                    Written::Attribute(&attr),
                    &method.sig.ident,
                    errors,
                ),
                None => kept.push(attr),
            }
        }
        method.attrs = kept;
        if let Some(path) = annotations.krate() {
            errors.spanned(
                path,
                format!(
                    "{}: `crate` is given on #[resilient], which writes every path of the wrapper: #[resilient(crate = \"..\")]",
                    codes::MALFORMED
                ),
            );
        }
        Method {
            cfgs: conditions(&method.attrs),
            self_arg: SelfArg::of(&method.sig),
            ret: Returns::of(&method.sig, generics),
            sig: method.sig.clone(),
            annotations,
            wrapped: false,
            keyed: None,
        }
    }

    /// Whether the method has a policy attribute.
    pub(crate) fn is_annotated(&self) -> bool {
        !self.annotations.is_empty()
    }

    /// The policies the wrapper runs the method under, if it is
    /// [`Method::wrapped`].
    pub(crate) fn policies(&self) -> Option<&PolicySet> {
        self.wrapped.then(|| self.annotations.policies())
    }

    /// Whether the method takes arguments besides `self`.
    pub(crate) fn has_arguments(&self) -> bool {
        self.sig
            .inputs
            .iter()
            .any(|input| matches!(input, FnArg::Typed(_)))
    }
}

impl Func {
    /// Reads the function under the attribute `kind` with the arguments
    /// `args`, taking its other policy attributes off it.
    pub(crate) fn from_syn(
        kind: PolicyKind,
        args: TokenStream,
        mut item: ItemFn,
        krate: &Krate,
        errors: &mut Errors,
    ) -> Self {
        let mut annotations = Annotations::default();
        let name = item.sig.ident.clone();
        let here = proc_macro2::Ident::new(kind.attribute().as_str(), Span::call_site());
        annotations.add(kind, &here, Written::Args(args), &name, errors);
        let mut kept = Vec::with_capacity(item.attrs.len());
        let mut applied = Vec::new();
        for attr in item.attrs.drain(..) {
            match PolicyKind::of(&attr.meta, krate) {
                Some(kind) => {
                    annotations.add(kind, &attr, Written::Attribute(&attr), &name, errors);
                    applied.push(attr.path().clone());
                }
                None => kept.push(attr),
            }
        }
        item.attrs = kept;
        let krate = match annotations.krate() {
            Some(path) => Krate::new(Some(path)),
            None => krate.clone(),
        };
        Func {
            krate,
            self_arg: SelfArg::of(&item.sig),
            ret: Returns::of(&item.sig, &Generics::default()),
            item,
            annotations,
            applied,
        }
    }

    /// The policies the function runs under (all of its attributes once
    /// none of them is in error).
    pub(crate) fn policies(&self) -> &PolicySet {
        self.annotations.policies()
    }

    pub(crate) fn vis(&self) -> &Visibility {
        &self.item.vis
    }
}

type Bounds = Vec<TypeParamBound>;

/// `D`, or `D1`, `D2`, ... : the first of these that no identifier in
/// `tokens` already is, so the wrapper's type parameter shadows nothing the
/// trait refers to.
fn free_ident(tokens: &TokenStream) -> Ident {
    let mut used = HashSet::new();
    collect_idents(tokens.clone(), &mut used);
    let mut candidate = String::from("D");
    let mut n = 0;
    while used.contains(&candidate) {
        n += 1;
        candidate = format!("D{n}");
    }
    Ident::new(&candidate, Span::call_site())
}

fn collect_idents(tokens: TokenStream, used: &mut HashSet<String>) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                used.insert(ident.to_string());
            }
            TokenTree::Group(group) => collect_idents(group.stream(), used),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse_quote;

    fn returns(sig: Signature) -> (Flavor, String, bool) {
        let ret = Returns::of(&sig, &Generics::default());
        (
            ret.flavor,
            crate::ids::render(ret.value.to_token_stream()),
            ret.is_result,
        )
    }

    #[test]
    fn return_types_are_classified() {
        assert_eq!(
            returns(parse_quote!(fn f(&self) -> Result<u8, E>)),
            (Flavor::Sync, "Result<u8, E>".into(), true)
        );
        assert_eq!(
            returns(parse_quote!(async fn f(&self) -> io::Result<u8>)),
            (Flavor::AsyncFn, "io::Result<u8>".into(), true)
        );
        assert_eq!(
            returns(parse_quote!(fn f(&self) -> impl Future<Output = Result<u8, E>> + Send)),
            (Flavor::ImplFuture, "Result<u8, E>".into(), true)
        );
        assert_eq!(
            returns(
                parse_quote!(fn f(&self) -> Pin<Box<dyn Future<Output = Result<u8, E>> + Send + '_>>)
            ),
            (Flavor::BoxedFuture, "Result<u8, E>".into(), true)
        );
        assert_eq!(
            returns(parse_quote!(fn f(&self) -> &u8)),
            (Flavor::Sync, "&u8".into(), false)
        );
        assert_eq!(
            returns(parse_quote!(fn f(&self))),
            (Flavor::Sync, "()".into(), false)
        );
        assert_eq!(
            returns(parse_quote!(fn f(&self) -> Outcome)),
            (Flavor::Sync, "Outcome".into(), true),
            "an alias may name a Result: the type checker decides"
        );
        assert_eq!(
            returns(parse_quote!(fn f(&self) -> outcome!(u8))),
            (Flavor::Sync, "outcome!(u8)".into(), true),
            "so may a type macro"
        );
        assert_eq!(
            returns(parse_quote!(fn f(&self) -> (u8, E))),
            (Flavor::Sync, "(u8, E)".into(), false)
        );
    }

    #[test]
    fn conditions_are_cfgs_and_the_cfgs_inside_cfg_attr() {
        let attrs: Vec<Attribute> = vec![
            parse_quote!(#[cfg(unix)]),
            parse_quote!(#[doc = "docs"]),
            parse_quote!(#[cfg_attr(feature = "x", cfg(test), must_use)]),
            parse_quote!(#[cfg_attr(feature = "y", must_use)]),
            parse_quote!(#[cfg_attr(a, cfg_attr(b, cfg(c), inline))]),
        ];
        let kept: Vec<String> = conditions(&attrs)
            .iter()
            .map(|a| a.to_token_stream().to_string())
            .collect();
        assert_eq!(
            kept,
            [
                "# [cfg (unix)]",
                "# [cfg_attr (feature = \"x\" , cfg (test))]",
                "# [cfg_attr (a , cfg_attr (b , cfg (c)))]",
            ]
        );
    }

    #[test]
    fn futures_that_may_not_borrow_are_detached() {
        let detached = |sig: Signature| Returns::of(&sig, &Generics::default()).detached;
        assert!(detached(
            parse_quote!(fn f(&self) -> impl Future<Output = R> + Send + 'static)
        ));
        assert!(detached(
            parse_quote!(fn f(&self) -> impl Future<Output = R> + use<Self>)
        ));
        assert!(
            !detached(parse_quote!(fn f(&self) -> impl Future<Output = R> + use<'_, Self>)),
            "it may borrow the receiver"
        );
        assert!(detached(
            parse_quote!(fn f(&self) -> Pin<Box<dyn Future<Output = R> + Send>>)
        ));
        assert!(!detached(
            parse_quote!(fn f(&self) -> Pin<Box<dyn Future<Output = R> + '_>>)
        ));
        assert!(!detached(
            parse_quote!(fn f(&self) -> impl Future<Output = R> + Send)
        ));
        assert!(!detached(parse_quote!(async fn f(&self) -> R)));
        assert!(
            detached(
                parse_quote!(fn f<'a>(&self, key: &'a str) -> impl Future<Output = R> + Send + 'a)
            ),
            "the lifetime of an argument"
        );
        assert!(detached(
            parse_quote!(fn f<'a>(&self, key: &'a str) -> Pin<Box<dyn Future<Output = R> + 'a>>)
        ));
        assert!(
            !detached(
                parse_quote!(fn f<'a>(&'a self, key: &'a str) -> impl Future<Output = R> + 'a)
            ),
            "the receiver's own lifetime"
        );
        assert!(!detached(
            parse_quote!(fn f<'a>(self: &'a Self) -> Pin<Box<dyn Future<Output = R> + 'a>>)
        ));
    }

    #[test]
    fn futures_bounded_by_a_lifetime_or_declared_send_are_marked() {
        let of = |sig: Signature| {
            let ret = Returns::of(&sig, &Generics::default());
            (ret.outlives, ret.send.is_some(), ret.unpin.is_some())
        };
        assert_eq!(
            of(parse_quote!(fn f(&self, k: &str) -> impl Future<Output = R> + Send)),
            (false, true, false)
        );
        assert_eq!(
            of(parse_quote!(fn f(&self, k: &str) -> impl Future<Output = R> + '_)),
            (true, false, false)
        );
        assert_eq!(
            of(parse_quote!(fn f(&self, k: &str) -> Pin<Box<dyn Future<Output = R> + Send + '_>>)),
            (true, true, false)
        );
        assert_eq!(
            of(parse_quote!(fn f(&self, k: &str) -> impl Future<Output = R> + Unpin)),
            (false, false, true)
        );
        assert_eq!(
            of(parse_quote!(async fn f(&self, k: &str) -> R)),
            (false, false, false)
        );
    }

    #[test]
    fn a_future_may_hold_the_arguments_that_outlive_its_bound() {
        let outlives = |sig: Signature| Returns::of(&sig, &Generics::default()).outlives;
        assert!(
            !outlives(
                parse_quote!(fn f(&self, k: String) -> Pin<Box<dyn Future<Output = R> + Send + '_>>)
            ),
            "an owned argument outlives any lifetime"
        );
        assert!(!outlives(
            parse_quote!(fn f<'a>(&'a self, k: &'a str) -> Pin<Box<dyn Future<Output = R> + Send + 'a>>)
        ));
        assert!(outlives(
            parse_quote!(fn f<'a, 'b>(&'a self, k: &'b str) -> Pin<Box<dyn Future<Output = R> + Send + 'a>>)
        ));
        assert!(
            outlives(
                parse_quote!(fn f(&self, k: String) -> Pin<Box<dyn Future<Output = R> + Send>>)
            ),
            "a boxed future without a lifetime is 'static: detached"
        );
        let async_trait: Signature = parse_quote!(
            fn f<'life0, 'life1, 'async_trait>(&'life0 self, k: &'life1 str)
                -> Pin<Box<dyn Future<Output = R> + Send + 'async_trait>>
            where 'life0: 'async_trait, 'life1: 'async_trait, Self: 'async_trait
        );
        let ret = Returns::of(&async_trait, &Generics::default());
        assert!(
            !ret.outlives && !ret.detached,
            "#[async_trait]'s shape holds all"
        );
    }

    #[test]
    fn receivers_are_classified() {
        let of = |sig: Signature| SelfArg::of(&sig);
        assert!(matches!(of(parse_quote!(fn f(&self))), SelfArg::Ref));
        assert!(matches!(
            of(parse_quote!(fn f(&'a mut self))),
            SelfArg::RefMut
        ));
        assert!(matches!(of(parse_quote!(fn f(mut self))), SelfArg::Owned));
        assert!(matches!(of(parse_quote!(fn f(self: &Self))), SelfArg::Ref));
        assert!(matches!(of(parse_quote!(fn f(x: u8))), SelfArg::None));
        assert!(matches!(
            of(parse_quote!(fn f(self: Box<Self>))),
            SelfArg::Other(_)
        ));
    }

    #[test]
    fn the_delegate_parameter_avoids_names_the_trait_uses() {
        assert_eq!(
            free_ident(&quote!(
                trait T {
                    fn f(&self);
                }
            )),
            "D"
        );
        assert_eq!(
            free_ident(&quote!(
                trait T<D> {
                    fn f(&self, d: D1);
                }
            )),
            "D2"
        );
    }

    #[test]
    fn policy_attributes_are_taken_off_the_trait() {
        let mut errors = Errors::default();
        let model = Trait::from_syn(
            parse_quote! {
                pub trait Shop {
                    /// Docs stay.
                    #[bulkhead(max_concurrent = 2)]
                    #[retry(max_attempts = 2)]
                    #[timeout]
                    fn buy(&self) -> Result<(), E>;
                    fn name(&self) -> String;
                }
            },
            &crate::krate::Krate::plain(),
            &mut errors,
        );
        errors.finish().unwrap();
        assert_eq!(model.wrapper, "ResilientShop");
        assert_eq!(model.methods.len(), 2);
        assert!(model.methods[0].annotations.complete());
        assert!(!model.methods[1].is_annotated());
        let emitted = model.item.to_token_stream().to_string();
        assert!(!emitted.contains("bulkhead"), "{emitted}");
        assert!(
            !emitted.contains("retry") && !emitted.contains("timeout"),
            "{emitted}"
        );
        assert!(emitted.contains("Docs stay"), "{emitted}");
    }
}
