//! Every meaning-level check of the macros, in one place. Each check pushes
//! a coded error, spanned on the whole offending type or path, and carries
//! on, so the user sees every mistake at once. What the checks of a trait
//! decide is recorded on its model (`Trait::wrappable`, `Method::wrapped`),
//! so the expansion reads it instead of checking again.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{
    FnArg, Ident, ReturnType, Signature, TraitItem, TypeImplTrait, TypeParamBound, WherePredicate,
};

use crate::ast::{Flavor, Func, Method, Returns, SelfArg, Trait};
use crate::codes::{self, Errors};
use crate::ids::render;
use crate::policies::{PolicyAttribute, PolicyKind};
use crate::tokens::is_self;

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
        // A method that cannot be run under its policies (reported) only
        // delegates.
        method.wrapped = method.annotations.complete()
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
    }
}

/// Why `#[hedge]` on the method or function of `sig` cannot run its
/// attempts at the same time, if it is there and cannot (ATR-014), spanned
/// on what makes it so: the signature of a sync one, the `&mut self` of
/// one taking it.
fn cannot_hedge(
    sig: &Signature,
    annotations: &crate::annotations::Annotations,
    flavor: Flavor,
    self_arg: &SelfArg,
) -> Option<syn::Error> {
    annotations.tokens_of(PolicyKind::Hedge)?;
    let code = codes::HEDGE;
    let name = &sig.ident;
    let (what, instead) = match self_arg {
        SelfArg::None => ("function", "write it as an `async fn`"),
        _ => (
            "method",
            "hedge an async method (`async fn`, or one returning a future)",
        ),
    };
    if flavor == Flavor::Sync {
        return Some(syn::Error::new_spanned(
            without_where_clause(sig),
            format!(
                "{code}: #[hedge] cannot hedge `{name}`: it is a sync {what}, and a hedge runs a second attempt while the first is still running, which one thread cannot do; {instead}, or use #[retry] (and #[timeout]) here"
            ),
        ));
    }
    if matches!(self_arg, SelfArg::RefMut) {
        return Some(syn::Error::new_spanned(
            sig.receiver()?,
            format!(
                "{code}: #[hedge] cannot hedge `{name}`: it takes `&mut self`, which only one attempt at a time can borrow, and hedged attempts run at the same time; take `&self`"
            ),
        ));
    }
    None
}

/// `sig` from its first token to the end of its return type (or of its
/// parameters), for an error about the signature that does not cover the
/// where clause.
fn without_where_clause(sig: &Signature) -> Signature {
    let mut sig = sig.clone();
    sig.generics.where_clause = None;
    sig
}

/// Why the `#[fallback]` of `method` cannot call the method it names in its
/// place, if it has a fallback and cannot (ATR-013): no `method`, a method
/// the trait does not have, the method itself, or one whose signature
/// differs. Spanned on the name (or the whole attribute without one).
fn cannot_fall_back(model: &Trait, method: &Method) -> Option<syn::Error> {
    let policies = method.annotations.policies();
    policies.get(PolicyKind::Fallback)?;
    let code = codes::FALLBACK;
    let name = &method.sig.ident;
    let Some(named) = policies.fallback_method() else {
        let attribute = method.annotations.tokens_of(PolicyKind::Fallback)?;
        return Some(syn::Error::new_spanned(
            attribute,
            format!(
                "{code}: #[fallback] on `{name}` names no method: add `method = \"..\"`, the method of the trait that answers instead, with the same signature"
            ),
        ));
    };
    let trait_name = &model.item.ident;
    let error = |why: String| Some(syn::Error::new(named.span(), format!("{code}: {why}")));
    if named == name {
        return error(format!(
            "#[fallback] on `{name}` names `{name}` itself; name the method that answers instead (to call `{name}` again, use #[retry])"
        ));
    }
    let Some(fallback) = model.methods.iter().find(|m| m.sig.ident == *named) else {
        let hint = bulkhead_keys::did_you_mean(
            &named.to_string(),
            model
                .methods
                .iter()
                .map(|m| m.sig.ident.to_string())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )
        .map(|meant| format!("; did you mean `{meant}`?"))
        .unwrap_or_default();
        return error(format!(
            "#[fallback] on `{name}` names `{named}`, which is not a method of trait `{trait_name}`{hint}"
        ));
    };
    let (expected, found) = (signature(&method.sig), signature(&fallback.sig));
    if expected != found {
        return error(format!(
            "the fallback `{named}` of `{name}` must have the same signature, as it is called with the same arguments in its place: `{name}` is `{expected}`, `{named}` is `{found}`"
        ));
    }
    None
}

/// A method's signature without its name and the patterns of its
/// parameters, as compared and shown: `async fn<T>(&self, &str, T) ->
/// Result<u8, E>`.
fn signature(sig: &syn::Signature) -> String {
    let mut qualifiers = String::new();
    if sig.constness.is_some() {
        qualifiers.push_str("const ");
    }
    if sig.asyncness.is_some() {
        qualifiers.push_str("async ");
    }
    if matches!(sig.safety, syn::Safety::Unsafe(_)) {
        qualifiers.push_str("unsafe ");
    }
    let generics = &sig.generics;
    let params: Vec<String> = sig
        .inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(receiver) => {
                let mut receiver = receiver.clone();
                receiver.attrs.clear();
                render(receiver.to_token_stream())
            }
            FnArg::Typed(typed) => render(typed.ty.to_token_stream()),
        })
        .collect();
    let output = match &sig.output {
        ReturnType::Default => String::new(),
        ReturnType::Type(_, ty) => format!(" -> {}", render(ty.to_token_stream())),
    };
    let where_clause = generics
        .where_clause
        .as_ref()
        .map(|w| format!(" {}", render(w.to_token_stream())))
        .unwrap_or_default();
    format!(
        "{qualifiers}fn{}({}){output}{where_clause}",
        render(generics.to_token_stream()),
        params.join(", ")
    )
}

/// Why a policy that calls the method again (`#[retry]`, `#[hedge]`) or
/// calls another with its arguments (`#[fallback]`) on a method of a
/// `#[resilient]` trait cannot call the delegate again, if it cannot, with
/// the tokens to span: the receiver taken by value, or the return type
/// whose future cannot call it again.
fn cannot_call_again(method: &Method) -> Option<(TokenStream, String)> {
    let (kind, _) = method.annotations.calling_again()?;
    let attribute = kind.attribute();
    let name = &method.sig.ident;
    let code = codes::UNWRAPPABLE;
    let fallback = method.annotations.policies().fallback_method();
    // What cannot be done, what consumes the delegate, and what calls it
    // from inside the future.
    let (cannot, first, inside) = match (kind, fallback) {
        (PolicyKind::Fallback, Some(fallback)) => (
            format!("cannot call `{fallback}` in place of `{name}`"),
            "the call consumes the delegate",
            "the fallback is called from inside it, after the call,",
        ),
        (PolicyKind::Hedge, _) => (
            format!("cannot run `{name}` more than once"),
            "its first attempt consumes the delegate",
            "each attempt calls the delegate from inside it",
        ),
        _ => (
            format!("cannot run `{name}` again"),
            "its first attempt consumes the delegate",
            "each attempt calls the delegate again from inside it",
        ),
    };
    if let (SelfArg::Owned, Some(receiver)) = (&method.self_arg, method.sig.receiver()) {
        return Some((
            receiver.to_token_stream(),
            format!(
                "{code}: #[{attribute}] {cannot}: it takes `self` by value, so {first}; take `&self` or `&mut self`"
            ),
        ));
    }
    let why = if method.ret.flavor == Flavor::Sync {
        return None;
    } else if method.ret.detached {
        let bound = if method.ret.flavor == Flavor::BoxedFuture {
            "bound the box by the receiver's lifetime (`Pin<Box<dyn Future<Output = ..> + Send + '_>>`, or `fn f<'a>(&'a self, ..) -> Pin<Box<dyn Future<Output = ..> + Send + 'a>>`, as #[async_trait] writes it)"
        } else {
            "bound it by `'_`"
        };
        format!(
            "{code}: #[{attribute}] {cannot}: its future may not borrow the wrapper (it is `'static`, bound by the lifetime of an argument, or `use<..>`), and {inside}; {bound} or write an `async fn`"
        )
    } else if method.ret.outlives && method.has_arguments() {
        let passes = match kind {
            PolicyKind::Fallback => "the fallback is passed them from inside it",
            _ => "each attempt passes them to the delegate again from inside it",
        };
        let instead = if method.ret.flavor == Flavor::BoxedFuture {
            "give the borrowed arguments the box's lifetime (`fn f<'a>(&'a self, key: &'a str) -> Pin<Box<dyn Future<Output = ..> + Send + 'a>>`, as #[async_trait] writes it), take them by value (`String`),"
        } else {
            "remove the lifetime bound, give the borrowed arguments that lifetime too (`fn f<'a>(&'a self, key: &'a str) -> impl Future<Output = ..> + 'a`),"
        };
        format!(
            "{code}: #[{attribute}] {cannot}: its future is bound by a lifetime its arguments may not outlive, and {passes}; {instead} or write an `async fn`"
        )
    } else {
        return None;
    };
    Some((method.ret.written.clone(), why))
}

/// Checks a function whose body policy attributes wrap.
pub(crate) fn check_fn(func: &Func, errors: &mut Errors) {
    let sig = &func.item.sig;
    let names = func.annotations.names();
    if let Some(constness) = &sig.constness {
        errors.spanned(
            constness,
            format!(
                "{}: {names} cannot wrap `const fn {}`: running a call under a policy is not a const operation",
                codes::UNWRAPPABLE,
                sig.ident
            ),
        );
    }
    check_returns(&sig.ident, &names, &func.ret, errors);
    let policies = func.policies();
    if let Some(attribute) = func.annotations.tokens_of(PolicyKind::Fallback) {
        errors.push(syn::Error::new_spanned(
            attribute,
            format!(
                "{}: #[fallback] cannot wrap `{}`: a function with a body has no delegate to call its fallback method on; handle the outcome where it is called, with `Result::or_else` (a rejection arrives as the error's `From<Rejection>`), or put the method in a #[resilient] trait",
                codes::FALLBACK,
                sig.ident
            ),
        ));
        return;
    }
    if let Some(error) = cannot_hedge(sig, &func.annotations, func.ret.flavor, &func.self_arg) {
        errors.push(error);
        return;
    }
    if !func.annotations.complete() || policies.bulkhead_alone().is_some() {
        return;
    }
    let code = codes::UNWRAPPABLE;
    let name = &sig.ident;
    let again = policies.calling_again();
    let runs = match again {
        Some(_) => "each attempt runs the body again from a closure",
        None => "the policies run the body from a closure",
    };
    let receiver = || sig.receiver().map(ToTokens::to_token_stream);
    let why = match (&func.self_arg, func.ret.flavor, again) {
        (SelfArg::Owned | SelfArg::Other(_), _, _) => Some((
            receiver(),
            format!(
                "{code}: {names} cannot wrap `{name}` yet: it takes `self` by value (or as a smart pointer), and {runs}, which cannot move it; take `&self` (or `&mut self` in a sync method), use #[bulkhead] alone, or put the method in a #[resilient] trait"
            ),
        )),
        (SelfArg::RefMut, Flavor::AsyncFn, _) => Some((
            receiver(),
            format!(
                "{code}: {names} cannot wrap `{name}` yet: it is an `async fn` taking `&mut self`, and {runs}, whose future would borrow `self` from it; take `&self`, use #[bulkhead] alone, or put the method in a #[resilient] trait, whose wrapper supports it"
            ),
        )),
        (_, Flavor::ImplFuture | Flavor::BoxedFuture, Some(again)) => Some((
            Some(func.ret.written.clone()),
            format!(
                "{code}: {names} cannot wrap `{name}` yet: it returns a future made by its body, which #[{}] would have to run again from inside that future; write it as an `async fn`",
                again.attribute()
            ),
        )),
        _ => None,
    };
    if let Some((tokens, why)) = why {
        match tokens {
            Some(tokens) => errors.spanned(tokens, why),
            None => errors.spanned(&sig.ident, why),
        }
    }
}

/// Why `#[resilient]` cannot implement the trait for its wrapper, if it
/// cannot (ATR-007). Empty if the wrapper can be generated.
fn unwrappable(model: &Trait) -> Vec<syn::Error> {
    let item = &model.item;
    let name = &item.ident;
    let mut reasons = Vec::new();
    let mut reason = |tokens: &dyn ToTokens, why: String| {
        reasons.push(syn::Error::new_spanned(
            tokens,
            format!("{}: cannot wrap trait `{name}`: {why}", codes::UNWRAPPABLE),
        ));
    };
    if let Some(unsafety) = &item.unsafety {
        reason(
            unsafety,
            "it is an `unsafe trait`, and the wrapper cannot promise its safety contract".into(),
        );
    }
    for bound in item.supertraits.iter().chain(self_bounds(item)) {
        if let Some(why) = unsupported_supertrait(bound) {
            reason(bound, why);
        }
    }
    let selves = SelfPaths::of(model);
    for predicate in item
        .generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
    {
        let WherePredicate::Type(p) = predicate else {
            continue;
        };
        if is_self(&p.bounded_ty) {
            continue;
        }
        if let Some(tokens) = selves.bare(p.bounded_ty.to_token_stream()) {
            reason(
                &tokens,
                format!(
                    "its where clause bounds `{}`, a type made of `Self`, which the wrapper cannot promise from its delegate's bounds; bound `Self` itself (for `&Self: Send`, a `Sync` supertrait)",
                    crate::ids::render(p.bounded_ty.to_token_stream())
                ),
            );
        }
    }
    for trait_item in &item.items {
        match trait_item {
            TraitItem::Fn(_) | TraitItem::Type(_) | TraitItem::Const(_) => {}
            TraitItem::Macro(mac) => reason(
                mac,
                "its items include a macro call, whose expansion `#[resilient]` cannot see; write the items out".into(),
            ),
            other => reason(
                other,
                "it contains an item `#[resilient]` does not understand".into(),
            ),
        }
    }
    for ty in &model.types {
        if let Some(tokens) = selves.bare(ty.bounds.to_token_stream()) {
            reason(
                &tokens,
                format!(
                    "the bounds of `{}` name `Self`, which is the wrapper in its implementation, not the delegate",
                    ty.ident
                ),
            );
        }
    }
    for constant in &model.consts {
        if let Some(tokens) = selves.bare(constant.ty.to_token_stream()) {
            reason(
                &tokens,
                format!(
                    "the type of `{}` is or contains `Self`, which the wrapper cannot produce from its delegate's",
                    constant.ident
                ),
            );
        }
    }
    for method in &model.methods {
        for (tokens, why) in unwrappable_method(method, &selves) {
            reason(&tokens, why);
        }
    }
    reasons
}

/// Why the wrapper cannot implement `method`, each with the tokens to span.
fn unwrappable_method(method: &Method, selves: &SelfPaths<'_>) -> Vec<(TokenStream, String)> {
    let name = &method.sig.ident;
    let mut reasons = Vec::new();
    if let Some((_, signature)) = INHERENT.iter().find(|(inherent, _)| name == inherent) {
        reasons.push((
            name.to_token_stream(),
            format!(
                "its method `{name}` would be shadowed by the wrapper's own `{signature}`: a call `wrapper.{name}(..)` picks the inherent method over the trait's; rename the trait's method"
            ),
        ));
    }
    for input in &method.sig.inputs {
        let attrs = match input {
            FnArg::Typed(typed) => &typed.attrs,
            FnArg::Receiver(receiver) => &receiver.attrs,
        };
        for attr in attrs {
            reasons.push((
                attr.to_token_stream(),
                format!(
                    "a parameter of `{name}` has an attribute, which the wrapper cannot carry over to its call of the delegate; remove it (to make the method conditional, put #[cfg(..)] on the whole method)"
                ),
            ));
        }
    }
    if let SelfArg::Other(receiver) = &method.self_arg {
        reasons.push((
            receiver.clone(),
            format!(
                "method `{name}` takes `self` as a type the wrapper cannot pass on to its delegate; use `self`, `&self` or `&mut self`"
            ),
        ));
    }
    let sig = &method.sig;
    let self_bounds: Vec<&syn::PredicateType> = sig
        .generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .filter_map(|predicate| match predicate {
            WherePredicate::Type(p)
                if is_self(&p.bounded_ty) && !is_harmless_self_bound(predicate) =>
            {
                Some(p)
            }
            _ => None,
        })
        .collect();
    // `#[async_trait]` writes its bounds at its own attribute: the method's
    // name says more.
    let by_async_trait = sig
        .generics
        .lifetimes()
        .any(|param| param.lifetime.ident == crate::symbol::ASYNC_TRAIT);
    for bound in &self_bounds {
        let tokens = if by_async_trait {
            name.to_token_stream()
        } else {
            bound.to_token_stream()
        };
        reasons.push((tokens, self_bound(name, selves.trait_name, bound)));
    }
    let mut mentions = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => Some(typed.ty.to_token_stream()),
            FnArg::Receiver(_) => None,
        })
        .chain(std::iter::once(without_captures(&sig.output)))
        .chain(sig.generics.params.iter().map(ToTokens::to_token_stream))
        .chain(
            sig.generics
                .where_clause
                .iter()
                .flat_map(|w| &w.predicates)
                .filter(|predicate| {
                    !is_harmless_self_bound(predicate)
                        && !matches!(predicate, WherePredicate::Type(p) if is_self(&p.bounded_ty))
                })
                .map(ToTokens::to_token_stream),
        );
    if let Some(tokens) = mentions.find_map(|tokens| selves.bare(tokens)) {
        reasons.push((
            tokens,
            format!(
                "method `{name}` names `Self` outside its receiver, and in the wrapper `Self` is the wrapper, not the delegate; use an associated type (`Self::Item`) or a generic parameter"
            ),
        ));
    }
    reasons
}

/// Why the wrapper cannot implement a method whose where clause bounds
/// `Self` by a trait (`Self: Sync`): in the wrapper `Self` is the wrapper,
/// which meets the bound only when its delegate does, and a method's where
/// clause cannot say that of the delegate. A supertrait can.
fn self_bound(name: &Ident, trait_name: &Ident, bound: &syn::PredicateType) -> String {
    let traits: Vec<String> = bound
        .bounds
        .iter()
        .filter_map(|bound| match bound {
            TypeParamBound::Trait(t) => t
                .path
                .segments
                .last()
                .map(|last| render(last.to_token_stream())),
            _ => None,
        })
        .collect();
    let traits = traits.join(" + ");
    format!(
        "method `{name}` requires `Self: {traits}`, which the wrapper cannot promise for its delegate in a method's where clause; make it a supertrait instead (`trait {trait_name}: {traits}`). (`#[async_trait]` adds `Self: Sync` to a default `async fn` taking `&self`, and `Self: Send` to one taking `&mut self` or `self`, when the trait does not have that supertrait)"
    )
}

/// The return type without its `use<..>` bounds: the `Self` a trait's
/// `use<..>` must list is the wrapper in the wrapper's signature, whose
/// future does capture it.
fn without_captures(output: &ReturnType) -> TokenStream {
    struct Captures;
    impl VisitMut for Captures {
        fn visit_type_impl_trait_mut(&mut self, imp: &mut TypeImplTrait) {
            imp.bounds = std::mem::take(&mut imp.bounds)
                .into_iter()
                .filter(|bound| !matches!(bound, TypeParamBound::PreciseCapture(_)))
                .collect();
            syn::visit_mut::visit_type_impl_trait_mut(self, imp);
        }
    }
    let mut output = output.clone();
    Captures.visit_return_type_mut(&mut output);
    output.to_token_stream()
}

/// `Self: Sized` and `Self: 'a` mean the same for the wrapper as for its
/// delegate.
fn is_harmless_self_bound(predicate: &WherePredicate) -> bool {
    match predicate {
        WherePredicate::Type(p) if is_self(&p.bounded_ty) => {
            p.bounds.iter().all(|bound| match bound {
                TypeParamBound::Lifetime(_) => true,
                // `Sized`, `::std::marker::Sized`.
                TypeParamBound::Trait(t) => {
                    t.path.segments.last().is_some_and(|s| s.ident == "Sized")
                }
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

/// ATR-004 for a return type that cannot be a `Result`, and ATR-007 for a
/// future declared `Unpin` or with another bound the policies' future does
/// not promise.
fn check_returns(name: &Ident, names: &str, ret: &Returns, errors: &mut Errors) {
    if !ret.is_result {
        errors.spanned(
            &ret.written,
            format!(
                "{}: `{name}` must return `Result<T, E>` (or a future of one) with `E: From<bulkhead::Rejection>`, so that a rejected call can return its rejection; it returns `{}`",
                codes::RETURN_TYPE,
                crate::ids::render(ret.value.to_token_stream())
            ),
        );
    }
    if let Some(unpin) = &ret.unpin {
        let hint = if ret.flavor == Flavor::BoxedFuture {
            "remove the bound: the box is `Unpin` without it"
        } else {
            "remove the bound (a caller that needs `Unpin` can pin the future with `Box::pin` or `std::pin::pin!`), or return `Pin<Box<dyn Future<Output = ..>>>`, which is `Unpin`"
        };
        errors.spanned(
            unpin,
            format!(
                "{}: {names} cannot wrap `{name}`: its future is declared `Unpin`, and the future that runs it under its policies is not; {hint}",
                codes::UNWRAPPABLE
            ),
        );
    }
    if let Some(bound) = &ret.other_bound {
        errors.spanned(
            bound,
            format!(
                "{}: {names} cannot wrap `{name}`: its future is declared `{}`, which the future that runs it under its policies (an `async` block) does not promise; a wrapped future may be bound by `Send`, lifetimes and `use<..>` only: remove the bound",
                codes::UNWRAPPABLE,
                crate::ids::render(bound.clone())
            ),
        );
    }
}

/// Finds `Self` where the wrapper cannot keep it: anywhere but at the start
/// of a path (`Self::Item`) or as the trait's own qualified self
/// (`<Self as ThisTrait<..>>::Item`), both of which mean the delegate's
/// associated items in the wrapper too.
struct SelfPaths<'a> {
    trait_name: &'a Ident,
    /// The trait's own generic arguments, rendered: `<K, V>`, or empty.
    trait_args: String,
}

impl<'a> SelfPaths<'a> {
    fn of(model: &'a Trait) -> Self {
        let (_, args, _) = model.item.generics.split_for_impl();
        SelfPaths {
            trait_name: &model.item.ident,
            trait_args: crate::ids::render(args.to_token_stream()),
        }
    }

    /// The first `Self` in `tokens` the wrapper cannot keep, with the
    /// qualified path around it if it has one.
    fn bare(&self, tokens: TokenStream) -> Option<TokenStream> {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Ident(ident) if ident == "Self" => {
                    // `Self::Item`, not `Self: ::core::marker::Sync`.
                    if is_joint(tokens.get(i + 1), ':') && is_punct(tokens.get(i + 2), ':') {
                        i += 1;
                        continue;
                    }
                    let qualified = i > 0
                        && is_punct(tokens.get(i - 1), '<')
                        && matches!(tokens.get(i + 1), Some(TokenTree::Ident(a)) if a == "as");
                    if !qualified {
                        return Some(tokens[i].to_token_stream());
                    }
                    let close = closing_angle(&tokens, i + 2)?;
                    if !self.is_own_trait(&tokens[i + 2..close]) {
                        return Some(tokens[i - 1..=close].iter().cloned().collect());
                    }
                    i = close + 1;
                    continue;
                }
                TokenTree::Group(group) => {
                    if let Some(found) = self.bare(group.stream()) {
                        return Some(found);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// Whether `path` is the trait itself with its own generic arguments.
    fn is_own_trait(&self, path: &[TokenTree]) -> bool {
        let path: TokenStream = path.iter().cloned().collect();
        let Ok(path) = syn::parse2::<syn::Path>(path) else {
            return false;
        };
        path.segments.last().is_some_and(|last| {
            last.ident == *self.trait_name
                && crate::ids::render(last.arguments.to_token_stream()) == self.trait_args
        })
    }
}

fn is_punct(token: Option<&TokenTree>, c: char) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

/// Whether `token` is `c` joined to the next one, as the first `:` of `::`.
fn is_joint(token: Option<&TokenTree>, c: char) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == c && p.spacing() == Spacing::Joint)
}

/// The index of the `>` that closes an angle bracket opened before `from`,
/// skipping nested `<..>` and the `>` of `->`.
fn closing_angle(tokens: &[TokenTree], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(from) {
        let TokenTree::Punct(punct) = token else {
            continue;
        };
        match punct.as_char() {
            '<' => depth += 1,
            '>' => {
                let arrow = matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '-' && p.spacing() == Spacing::Joint);
                if arrow {
                    continue;
                }
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    None
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
