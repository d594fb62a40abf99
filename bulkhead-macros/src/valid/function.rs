//! The checks of a function with a body.

use super::*;

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
    if policies.key().is_some() {
        if let Err(refused) = keyed(sig, &syn::Generics::default(), &func.annotations) {
            errors.push(refused);
            return;
        }
        if policies.bulkhead_alone().is_some() {
            return;
        }
    }
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
