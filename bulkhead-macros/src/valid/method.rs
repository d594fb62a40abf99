//! What a trait's methods may not do: hedges, fallbacks, calls made again, and
//! what their results must be.

use super::*;

/// Why `#[hedge]` on the method or function of `sig` cannot run its
/// attempts at the same time, if it is there and cannot (ATR-014), spanned
/// on what makes it so: the signature of a sync one, the `&mut self` of
/// one taking it.
pub(super) fn cannot_hedge(
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
pub(super) fn without_where_clause(sig: &Signature) -> Signature {
    let mut sig = sig.clone();
    sig.generics.where_clause = None;
    sig
}

/// Why the `#[fallback]` of `method` cannot call the method it names in its
/// place, if it has a fallback and cannot (ATR-013): no `method`, a method
/// the trait does not have, the method itself, or one whose signature
/// differs. Spanned on the name (or the whole attribute without one).
pub(super) fn cannot_fall_back(model: &Trait, method: &Method) -> Option<syn::Error> {
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
pub(super) fn signature(sig: &syn::Signature) -> String {
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
pub(super) fn cannot_call_again(method: &Method) -> Option<(TokenStream, String)> {
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

/// ATR-004 for a return type that cannot be a `Result`, and ATR-007 for a
/// future declared `Unpin` or with another bound the policies' future does
/// not promise.
pub(super) fn check_returns(name: &Ident, names: &str, ret: &Returns, errors: &mut Errors) {
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
